/*
 * oom.c — diagnosis of each OOM event: one cause with its evidence
 * (docs/metrics.md, "OOM diagnosis").
 *
 * The cause answers "would anything but more memory have helped?":
 * oversize (no device could), external (the device refused although our cap
 * allowed it: someone else holds the memory), fragmentation (a perfect
 * allocator, one with no waste between blocks, would have served it), or
 * capacity (it would not). When the cap was not recorded (PyTorch
 * snapshots) it is bounded from the run: at least the highest reserved
 * figure ever reached, below reserved-at-OOM + the failing segment; only the
 * lower bound may prove fragmentation.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "oom.h"

#define TOP_TAGS FSC__OOM_TOP_TAGS

const char *fsc_oom_cause_name(int cause)
{
    switch (cause) {
#define FSC__OOM_NAME(name, val, str) case val: return str;
        FSC_OOM_CAUSE_MAP(FSC__OOM_NAME)
#undef FSC__OOM_NAME
    default: return "unknown";
    }
}

#define SZ(i, v) fsc_size_format((v), buf[i], sizeof buf[i])

static void explain(const fsc__oom_t *f, char *out, size_t cap)
{
    char buf[9][32];
    size_t n = 0;
    uint64_t avail = f->known ? f->capacity : f->lower;
    uint64_t headroom = avail > f->allocated ? avail - f->allocated : 0;
    switch (f->cause) {
    case FSC_OOM_OVERSIZE:
        n = (size_t)snprintf(out, cap,
                             "The request for %s (rounded to %s) is larger than the %s the "
                             "allocator may use at all: no allocator could serve it.",
                             SZ(0, f->requested), SZ(1, f->rounded),
                             SZ(2, f->known ? f->capacity : f->device_total));
        break;
    case FSC_OOM_EXTERNAL:
        if (f->external_known)
            n = (size_t)snprintf(out, cap,
                                 "The device refused a %s segment: only %s of it was free while "
                                 "this allocator held %s, so %s of the %s device was taken "
                                 "outside this allocator, more than the %s the segment lacked.",
                                 SZ(0, f->segment_size), SZ(1, f->device_free),
                                 SZ(2, f->reserved), SZ(3, f->external), SZ(4, f->device_total),
                                 SZ(5, f->segment_size - f->device_free));
        else
            n = (size_t)snprintf(out, cap,
                                 "The device refused a %s segment: only %s of it was free while "
                                 "this allocator held %s. The device's total memory was not "
                                 "recorded, so the memory taken outside this allocator is "
                                 "unknown: it is the device's total less %s (free + reserved), "
                                 "more than the %s the segment lacked on any device of %s or "
                                 "more. --device-memory SIZE (PyTorch's message: \"total "
                                 "capacity of X\") makes it exact.",
                                 SZ(0, f->segment_size), SZ(1, f->device_free),
                                 SZ(2, f->reserved), SZ(3, f->device_free + f->reserved),
                                 SZ(4, f->segment_size - f->device_free),
                                 SZ(5, f->reserved + f->segment_size));
        if (n < cap)
            snprintf(out + n, cap - n,
                     " No allocator setting can avoid this: the memory is held outside the "
                     "allocator. Find the other user of the device and free it or make room: "
                     "other processes on the GPU (nvidia-smi), NCCL buffers, raw cudaMalloc "
                     "calls (extensions, libraries), the CUDA context and library workspaces "
                     "(cuBLAS, cuDNN).");
        return; /* no cap is involved */
    case FSC_OOM_FRAGMENTATION:
        n = (size_t)snprintf(out, cap,
                             "%s was requested (rounded to %s) with %s allocated of %s: a "
                             "perfect allocator had %s left and could have served it, but the "
                             "largest usable free block was %s while %s was free inside "
                             "reserved segments, and the %s not yet reserved was less than "
                             "the %s segment a new block needed. The segments listed hold "
                             "that free space and the live blocks listed keep them from being "
                             "released.",
                             SZ(0, f->requested), SZ(1, f->rounded), SZ(2, f->allocated),
                             SZ(3, avail), SZ(4, headroom), SZ(5, f->largest_usable),
                             SZ(6, f->free_in_reserved),
                             SZ(7, avail > f->reserved ? avail - f->reserved : 0),
                             SZ(8, f->segment_size));
        break;
    case FSC_OOM_UNDETERMINED:
        n = (size_t)snprintf(out, cap,
                             "%s was requested (rounded to %s) with %s allocated. The cap was "
                             "not recorded: the run shows it was at least %s and below %s. "
                             "Under a cap below %s even a perfect allocator would have failed "
                             "(capacity: more memory or less live data is needed); at %s or "
                             "more a perfect allocator would have served it (fragmentation: "
                             "other settings could help). PyTorch's own OOM message states the "
                             "cap (\"... X GiB allowed\"); give it with --capacity for a firm "
                             "answer.",
                             SZ(0, f->requested), SZ(1, f->rounded), SZ(2, f->allocated),
                             SZ(3, f->lower), SZ(4, f->upper), SZ(5, f->threshold),
                             SZ(6, f->threshold));
        return; /* the bounds are the explanation */
    default:
        n = (size_t)snprintf(out, cap,
                             "%s was requested (rounded to %s) with %s already allocated; "
                             "the allocator may reserve %s, which leaves %s: not enough even "
                             "for a perfect allocator, so this run needs more memory or less "
                             "live data, not different allocator settings. %s was reserved "
                             "but unallocated; the largest free block was %s.",
                             SZ(0, f->requested), SZ(1, f->rounded), SZ(2, f->allocated),
                             SZ(3, avail), SZ(4, headroom),
                             SZ(5, f->reserved > f->allocated ? f->reserved - f->allocated : 0),
                             SZ(6, f->largest_free));
        break;
    }
    if (f->private_free > 0 && n < cap) {
        int w = snprintf(out + n, cap - n,
                         " %s of the free bytes lie in private pools, which serve only their "
                         "own requests; private pool (%llu, %llu) (a CUDA graph pool or a "
                         "MemPool) holds %s of them.",
                         SZ(0, f->private_free), (unsigned long long)(f->top_pool_id >> 32),
                         (unsigned long long)(f->top_pool_id & 0xffffffffu),
                         SZ(1, f->top_pool_free));
        if (w > 0)
            n += (size_t)w;
    }
    if (f->inferred && n < cap)
        snprintf(out + n, cap - n,
                 " The capacity was not recorded; it was inferred from the run to be at least "
                 "%s (the highest reserved figure reached) and below %s (reserved at the OOM "
                 "plus the %s segment that could not be created); the cause holds for every "
                 "cap in that range. PyTorch's own OOM message states the cap (\"... X GiB "
                 "allowed\"); --capacity makes the answer firm.",
                 SZ(0, f->lower), SZ(1, f->upper), SZ(2, f->segment_size));
}

static int classify(fsc__oom_t *f)
{
    uint64_t limit = f->known ? f->capacity : f->device_total;
    if ((limit != 0 && f->rounded > limit) ||
        (f->device_total != 0 && f->rounded > f->device_total))
        return FSC_OOM_OVERSIZE;
    fsc_oom_state_t st = {
        .allocated = f->allocated,
        .reserved = f->reserved,
        .capacity = f->capacity,
        .device_free = f->device_free_known ? f->device_free : UINT64_MAX,
        .device_total = f->device_total,
        .segment_size = f->segment_size,
    };
    if (fsc_oom_external(&st, f->known, &f->device_limited, &f->external, &f->external_known))
        return FSC_OOM_EXTERNAL;
    /* A perfect allocator (no waste between blocks) under cap C serves the
     * request when C >= allocated + rounded. */
    uint64_t need = f->allocated + f->rounded;
    if (f->known)
        return f->capacity >= need ? FSC_OOM_FRAGMENTATION : FSC_OOM_CAPACITY;
    /* Unknown cap in [lower, upper): a cause must hold for all of them. */
    if (f->lower >= need)
        return FSC_OOM_FRAGMENTATION;
    if (f->upper <= need) /* even the highest possible cap, upper - 1, fails */
        return FSC_OOM_CAPACITY;
    f->threshold = need;
    return FSC_OOM_UNDETERMINED;
}

static int cmp_seg_free(const void *x, const void *y)
{
    const fsc__seg_t *p = *(fsc__seg_t *const *)x, *q = *(fsc__seg_t *const *)y;
    if (p->free_bytes != q->free_bytes)
        return p->free_bytes > q->free_bytes ? -1 : 1;
    return p->base < q->base ? -1 : p->base > q->base;
}

static int cmp_blk_size(const void *x, const void *y)
{
    const fsc__blk_t *p = *(fsc__blk_t *const *)x, *q = *(fsc__blk_t *const *)y;
    if (p->size != q->size)
        return p->size > q->size ? -1 : 1;
    return p->addr < q->addr ? -1 : p->addr > q->addr;
}

static int collect_segments(const fsc__replay_t *a, const fsc_event_t *ev, fsc__oom_t *f)
{
    size_t n = 0;
    fsc__seg_t **v = malloc((a->nseg + 1) * sizeof *v);
    fsc__blk_t **live = NULL;
    if (v == NULL)
        return FSC_ENOMEM;
    for (size_t i = 0; i < a->nseg; i++)
        if (a->seg_sorted[i]->free_bytes > 0)
            v[n++] = a->seg_sorted[i];
    qsort(v, n, sizeof *v, cmp_seg_free);
    if (n > FSC__OOM_TOP_SEGMENTS)
        n = FSC__OOM_TOP_SEGMENTS;
    int rc = 0;
    f->nsegs = 0;
    for (size_t i = 0; i < n; i++) {
        fsc__seg_t *g = v[i];
        size_t nl = 0;
        uint64_t largest = 0, live_bytes = 0;
        free(live);
        live = malloc((g->nblocks + 1) * sizeof *live);
        if (live == NULL) {
            rc = FSC_ENOMEM;
            break;
        }
        for (fsc__blk_t *b = g->head; b != NULL; b = b->next) {
            if (b->state == FSC__FREE) {
                if (b->size > largest)
                    largest = b->size;
            } else {
                live[nl++] = b;
                live_bytes += b->size;
            }
        }
        fsc__oom_seg_t *o = &f->segs[f->nsegs++];
        o->base = g->base;
        o->size = g->size;
        o->pool = g->pool;
        o->stream = g->stream;
        o->free_bytes = g->free_bytes;
        o->largest_free = largest;
        o->nfree = g->nfree;
        o->nlive = nl;
        o->live_bytes = live_bytes;
        qsort(live, nl, sizeof *live, cmp_blk_size);
        o->npins = 0;
        for (size_t j = 0; j < nl && j < FSC__OOM_TOP_PINNING; j++) {
            const fsc__blk_t *b = live[j];
            fsc__oom_pin_t *p = &o->pins[o->npins++];
            p->addr = b->addr;
            p->size = b->size;
            p->requested = b->requested;
            p->pending = b->state == FSC__PENDING;
            p->alloc_seq = b->alloc_seq;
            p->age_events = a->seq - b->alloc_seq;
            p->age_ns = ev->time_ns >= b->alloc_time ? ev->time_ns - b->alloc_time : 0;
            p->tag = b->tag;
        }
    }
    free(live);
    free(v);
    return rc;
}

static void collect_tags(const fsc__replay_t *a, fsc__oom_t *f)
{
    uint32_t top[TOP_TAGS];
    size_t n = 0;
    /* Insertion into a short sorted list: the tag tree can be large, the
     * list is 20 long. */
    for (size_t t = 0; t < a->ntags; t++) {
        uint64_t lb = a->tags[t].live_bytes;
        if (lb == 0)
            continue;
        size_t i = n < TOP_TAGS ? n : TOP_TAGS;
        if (i == TOP_TAGS && a->tags[top[TOP_TAGS - 1]].live_bytes >= lb)
            continue;
        if (i == TOP_TAGS)
            i--;
        else
            n++;
        while (i > 0 && a->tags[top[i - 1]].live_bytes < lb) {
            top[i] = top[i - 1];
            i--;
        }
        top[i] = (uint32_t)t;
    }
    f->ntags = n;
    for (size_t i = 0; i < n; i++) {
        f->tags[i].tag = top[i];
        f->tags[i].live_bytes = a->tags[top[i]].live_bytes;
        f->tags[i].live_blocks = a->tags[top[i]].live_blocks;
    }
}

int fsc__oom_diagnose(const fsc__replay_t *a, const fsc__oom_run_t *run, const fsc_event_t *ev,
                      uint64_t id, fsc__oom_t *out)
{
    fsc__oom_t *f = out;
    memset(f, 0, offsetof(fsc__oom_t, text));
    f->id = id;
    f->seq = a->seq;
    f->time = ev->time_ns;
    f->stream = ev->stream;
    f->pool = ev->pool;
    f->tag = ev->tag;
    f->requested = ev->requested;
    f->rounded = ev->size ? ev->size : ev->requested;
    f->allocated = f->allocated_now = a->allocated;
    f->reserved = f->reserved_now = a->reserved;
    if (run->ring && ev->oom.reserved != 0) {
        /* the replay of a ring trace misses what came before its window; the
         * allocator's own figures are the ones to trust */
        f->allocated = ev->oom.allocated;
        f->reserved = ev->oom.reserved;
    }
    f->segment_size = ev->oom.segment_size ? ev->oom.segment_size
                                          : fsc_alloc_segment_size(f->rounded);
    f->device_total = ev->oom.device_total ? ev->oom.device_total : run->device_total;
    f->device_free_known = ev->oom.device_free != UINT64_MAX;
    f->device_free = ev->oom.device_free;
    f->capacity = ev->oom.capacity ? ev->oom.capacity : run->capacity;
    f->known = !run->capacity_unknown && f->capacity != 0;
    if (f->known) {
        f->lower = f->upper = f->capacity;
    } else {
        f->inferred = 1;
        f->lower = a->peak_reserved;
        f->upper = f->reserved + f->segment_size;
        f->capacity = f->lower;
    }
    f->free_in_reserved = a->heap[0].bytes + a->heap[1].bytes;
    f->largest_free = fsc__largest_free(a, -1);
    const fsc__heap_t *h = &a->heap[ev->pool ? 1 : 0];
    for (size_t i = 0; i < h->n; i++)
        if (h->v[i]->seg->stream == ev->stream && h->v[i]->seg->pool_id == ev->pool_id &&
            h->v[i]->size > f->largest_usable)
            f->largest_usable = h->v[i]->size;
    /* Free space in private pools, by pool (a few pools: a short list). */
    uint64_t ids[16], bytes[16];
    size_t np = 0;
    for (size_t i = 0; i < a->nseg; i++) {
        const fsc__seg_t *g = a->seg_sorted[i];
        if (g->pool_id == 0 || g->free_bytes == 0)
            continue;
        f->private_free += g->free_bytes;
        size_t k = 0;
        while (k < np && ids[k] != g->pool_id)
            k++;
        if (k == np && np < 16) {
            ids[np] = g->pool_id;
            bytes[np++] = 0;
        }
        if (k < np)
            bytes[k] += g->free_bytes;
    }
    for (size_t k = 0; k < np; k++)
        if (bytes[k] > f->top_pool_free) {
            f->top_pool_free = bytes[k];
            f->top_pool_id = ids[k];
        }
    f->external_frag = fsc_metric_external_frag(f->largest_free, f->free_in_reserved);
    f->cause = classify(f);
    explain(f, f->text, sizeof f->text);
    f->has_snapshot = id < FSC__OOM_LAYOUTS;
    f->snapshot = 0;
    collect_tags(a, f);
    return collect_segments(a, ev, f);
}
