/*
 * replay.c — applies one event to the replayed layout, after checking that
 * it is consistent with it (events.h is the contract).
 *
 * The replay does not re-run allocator policy: SPLIT, MERGE and the segment
 * events say exactly what changed, so each handler validates the event
 * against the state and applies it. An inconsistent event is reported
 * through fsc__warn_or_fail before anything is changed, so in lenient mode a
 * skipped event leaves the state as it was.
 *
 * Expandable segments: SEGMENT_MAP adds its page range as a free block and
 * coalesces it with free neighbours of the same segment, as PyTorch does
 * when it maps pages; a later MERGE that describes the same coalescing is
 * accepted as already applied.
 */
#include <stdlib.h>
#include <string.h>

#include "ana_internal.h"

/* ---- block structs: recycled from slabs (one malloc per 4096) ---------- */

#define SLAB_BLOCKS 4096

static fsc__blk_t *blk_new(fsc_analysis_t *a)
{
    if (a->blk_freelist == NULL) {
        if (a->nslabs == a->slab_cap) {
            size_t nc = a->slab_cap ? a->slab_cap * 2 : 16;
            void **ns = realloc(a->slabs, nc * sizeof *ns);
            if (ns == NULL)
                return NULL;
            a->slabs = ns;
            a->slab_cap = nc;
        }
        fsc__blk_t *slab = malloc(SLAB_BLOCKS * sizeof *slab);
        if (slab == NULL)
            return NULL;
        a->slabs[a->nslabs++] = slab;
        for (size_t i = 0; i < SLAB_BLOCKS; i++) {
            slab[i].next = a->blk_freelist;
            a->blk_freelist = &slab[i];
        }
    }
    fsc__blk_t *b = a->blk_freelist;
    a->blk_freelist = b->next;
    memset(b, 0, sizeof *b);
    b->heap_idx = -1;
    return b;
}

static void blk_release(fsc_analysis_t *a, fsc__blk_t *b)
{
    b->next = a->blk_freelist;
    a->blk_freelist = b;
}

int fsc__bin_of(uint64_t size)
{
    int k = 0;
    for (uint64_t s = size >> 10; s != 0 && k < FSC__NBINS - 1; s >>= 1)
        k++;
    return k;
}

uint64_t fsc__largest_free(const fsc_analysis_t *a, int pool)
{
    uint64_t m = 0;
    for (int p = 0; p < 2; p++)
        if ((pool < 0 || pool == p) && a->heap[p].n > 0 && a->heap[p].v[0]->size > m)
            m = a->heap[p].v[0]->size;
    return m;
}

/* ---- segment bookkeeping ----------------------------------------------- */

/* inactive_split counts the free blocks of segments that hold more than one
 * block; bracket every change to a segment's blocks with begin/end so the
 * totals follow. */
static void seg_begin(fsc_analysis_t *a, fsc__seg_t *s)
{
    if (s->nblocks > 1) {
        a->inactive_split_bytes -= s->free_bytes;
        a->inactive_split_blocks -= s->nfree;
    }
}

static void seg_end(fsc_analysis_t *a, fsc__seg_t *s)
{
    if (s->nblocks > 1) {
        a->inactive_split_bytes += s->free_bytes;
        a->inactive_split_blocks += s->nfree;
    }
}

static int free_insert(fsc_analysis_t *a, fsc__blk_t *b)
{
    b->state = FSC__FREE;
    b->seg->nfree++;
    b->seg->free_bytes += b->size;
    return fsc__heap_push(&a->heap[b->seg->pool], b);
}

static void free_remove(fsc_analysis_t *a, fsc__blk_t *b)
{
    b->seg->nfree--;
    b->seg->free_bytes -= b->size;
    fsc__heap_remove(&a->heap[b->seg->pool], b);
}

/* A new free block [addr, addr+size) of s, linked after prev (NULL = first). */
static int blk_create_free(fsc_analysis_t *a, fsc__seg_t *s, fsc__blk_t *prev, uint64_t addr,
                           uint64_t size, fsc__blk_t **out)
{
    fsc__blk_t *b = blk_new(a);
    if (b == NULL)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory replaying event %llu",
                           (unsigned long long)a->seq);
    b->addr = addr;
    b->size = size;
    b->seg = s;
    int rc = fsc__peak_touch(a, b, 0);
    if (rc == 0)
        rc = fsc__u64map_put(&a->blocks, addr, b);
    if (rc == 0)
        rc = free_insert(a, b);
    if (rc != 0) {
        blk_release(a, b);
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory replaying event %llu",
                           (unsigned long long)a->seq);
    }
    b->prev = prev;
    b->next = prev ? prev->next : s->head;
    if (b->next)
        b->next->prev = b;
    if (prev)
        prev->next = b;
    else
        s->head = b;
    s->nblocks++;
    if (out)
        *out = b;
    return 0;
}

/* Remove a free block from everything and recycle it. */
static int blk_destroy_free(fsc_analysis_t *a, fsc__blk_t *b)
{
    int rc = fsc__peak_touch(a, b, 1);
    if (rc != 0)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    free_remove(a, b);
    fsc__u64map_del(&a->blocks, b->addr);
    if (b->prev)
        b->prev->next = b->next;
    else
        b->seg->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->seg->nblocks--;
    blk_release(a, b);
    return 0;
}

static void blk_resize_free(fsc_analysis_t *a, fsc__blk_t *b, uint64_t nsize)
{
    uint64_t old = b->size;
    b->seg->free_bytes = b->seg->free_bytes - old + nsize;
    b->size = nsize;
    fsc__heap_update(&a->heap[b->seg->pool], b, old);
}

/* Index of the first live segment with base >= addr. */
static size_t seg_lower_bound(const fsc_analysis_t *a, uint64_t addr)
{
    size_t lo = 0, hi = a->nseg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a->seg_sorted[mid]->base < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A segment other than self that overlaps [lo, hi), or NULL. */
static fsc__seg_t *seg_overlap(const fsc_analysis_t *a, uint64_t lo, uint64_t hi,
                               const fsc__seg_t *self)
{
    size_t i = seg_lower_bound(a, lo);
    if (i < a->nseg && a->seg_sorted[i]->base < hi && a->seg_sorted[i] != self)
        return a->seg_sorted[i];
    if (i > 0) {
        fsc__seg_t *p = a->seg_sorted[i - 1];
        if (p != self && p->base + (p->extent > p->size ? p->extent : p->size) > lo)
            return p;
    }
    return NULL;
}

static fsc__seg_t *seg_create(fsc_analysis_t *a, const fsc_event_t *ev, uint64_t base,
                              int expandable)
{
    fsc__seg_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->base = base;
    s->stream = ev->stream;
    s->pool = ev->pool ? 1 : 0;
    s->expandable = (uint8_t)expandable;
    s->id = a->segments_created++;
    s->created_seq = a->seq;
    s->created_time = ev->time_ns;
    s->tag = ev->tag;
    if (a->nseg == a->seg_cap) {
        size_t nc = a->seg_cap ? a->seg_cap * 2 : 64;
        fsc__seg_t **nv = realloc(a->seg_sorted, nc * sizeof *nv);
        if (nv == NULL) {
            free(s);
            return NULL;
        }
        a->seg_sorted = nv;
        a->seg_cap = nc;
    }
    if (fsc__u64map_put(&a->segs, base, s) != 0) {
        free(s);
        return NULL;
    }
    size_t i = seg_lower_bound(a, base);
    memmove(&a->seg_sorted[i + 1], &a->seg_sorted[i], (a->nseg - i) * sizeof *a->seg_sorted);
    a->seg_sorted[i] = s;
    a->nseg++;
    if (a->nseg > a->peak_segments)
        a->peak_segments = a->nseg;
    return s;
}

static void seg_destroy(fsc_analysis_t *a, fsc__seg_t *s)
{
    size_t i = seg_lower_bound(a, s->base);
    memmove(&a->seg_sorted[i], &a->seg_sorted[i + 1], (a->nseg - i - 1) * sizeof *a->seg_sorted);
    a->nseg--;
    fsc__u64map_del(&a->segs, s->base);
    free(s);
}

static void reserved_add(fsc_analysis_t *a, uint64_t n)
{
    a->reserved += n;
    if (a->reserved > a->peak_reserved) {
        a->peak_reserved = a->reserved;
        a->peak_reserved_seq = a->seq;
        a->peak_reserved_time = a->last_time;
    }
}

#define U(x) ((unsigned long long)(x))
#define ENOMEM_OUT() fsc_err_set(&a->err, FSC_ENOMEM, "out of memory replaying event %llu", U(a->seq))

/* ---- handlers: each returns 0 applied, >0 skipped (lenient), <0 error -- */

static int on_segment_alloc(fsc_analysis_t *a, const fsc_event_t *ev)
{
    if (ev->addr == 0 || ev->size == 0)
        return fsc__warn_or_fail(a, ev, "segment with a zero address or size");
    if (fsc__u64map_get(&a->segs, ev->addr) != NULL)
        return fsc__warn_or_fail(a, ev, "a segment already exists at this address");
    fsc__seg_t *o = seg_overlap(a, ev->addr, ev->addr + ev->size, NULL);
    if (o != NULL)
        return fsc__warn_or_fail(a, ev, "overlaps the segment at 0x%llx", U(o->base));
    fsc__seg_t *s = seg_create(a, ev, ev->addr, 0);
    if (s == NULL)
        return ENOMEM_OUT();
    s->size = s->peak_size = s->extent = ev->size;
    seg_begin(a, s);
    int rc = blk_create_free(a, s, NULL, ev->addr, ev->size, NULL);
    seg_end(a, s);
    if (rc != 0)
        return rc;
    reserved_add(a, ev->size);
    a->pending_miss_seg = s->base;
    return 0;
}

static int on_segment_free(fsc_analysis_t *a, const fsc_event_t *ev)
{
    fsc__seg_t *s = fsc__u64map_get(&a->segs, ev->addr);
    if (s == NULL)
        return fsc__warn_or_fail(a, ev, "no segment at this address");
    fsc__blk_t *b = s->head;
    if (s->nblocks != 1 || b->state != FSC__FREE || b->size != s->size)
        return fsc__warn_or_fail(a, ev, "segment still holds %s",
                                 s->nblocks == 0 ? "no mapped pages" :
                                 s->nblocks > 1 ? "more than one block" : "a live block");
    if (ev->size != 0 && ev->size != s->size)
        return fsc__warn_or_fail(a, ev, "size %llu differs from the segment's %llu",
                                 U(ev->size), U(s->size));
    seg_begin(a, s);
    int rc = blk_destroy_free(a, b);
    seg_end(a, s);
    if (rc != 0)
        return rc;
    a->reserved -= s->size;
    rc = fsc__db_segment_row(a, s, 1, a->seq, ev->time_ns);
    a->segments_freed++;
    seg_destroy(a, s);
    return rc;
}

/* Segment that an expandable-segment event refers to. */
static fsc__seg_t *seg_of_event(fsc_analysis_t *a, const fsc_event_t *ev)
{
    if (ev->segment != 0)
        return fsc__u64map_get(&a->segs, ev->segment);
    size_t i = seg_lower_bound(a, ev->addr + 1);
    if (i == 0)
        return NULL;
    fsc__seg_t *s = a->seg_sorted[i - 1];
    return ev->addr < s->base + (s->extent > s->size ? s->extent : s->size) ? s : NULL;
}

static int on_segment_map(fsc_analysis_t *a, const fsc_event_t *ev)
{
    uint64_t base = ev->segment ? ev->segment : ev->addr;
    uint64_t lo = ev->addr, hi = ev->addr + ev->size;
    if (ev->addr == 0 || ev->size == 0)
        return fsc__warn_or_fail(a, ev, "mapping with a zero address or size");
    if (lo < base)
        return fsc__warn_or_fail(a, ev, "pages below their segment base 0x%llx", U(base));
    fsc__seg_t *s = fsc__u64map_get(&a->segs, base);
    if (s != NULL && !s->expandable)
        return fsc__warn_or_fail(a, ev, "segment_map into the non-expandable segment 0x%llx",
                                 U(base));
    fsc__seg_t *o = seg_overlap(a, s ? lo : base, hi, s);
    if (o != NULL)
        return fsc__warn_or_fail(a, ev, "overlaps the segment at 0x%llx", U(o->base));
    /* Insertion point among the mapped blocks. */
    fsc__blk_t *prev = NULL, *next = s ? s->head : NULL;
    while (next != NULL && next->addr < lo) {
        prev = next;
        next = next->next;
    }
    if ((prev && prev->addr + prev->size > lo) || (next && next->addr < hi))
        return fsc__warn_or_fail(a, ev, "pages already mapped");
    if (s == NULL) {
        s = seg_create(a, ev, base, 1);
        if (s == NULL)
            return ENOMEM_OUT();
    }
    seg_begin(a, s);
    int rc = 0;
    if (prev && prev->state == FSC__FREE && prev->addr + prev->size == lo) {
        if ((rc = fsc__peak_touch(a, prev, 1)) != 0)
            goto out;
        blk_resize_free(a, prev, prev->size + ev->size);
    } else {
        if ((rc = blk_create_free(a, s, prev, lo, ev->size, &prev)) != 0)
            goto out;
    }
    if (next && next->state == FSC__FREE && next->addr == hi) {
        uint64_t add = next->size;
        if ((rc = fsc__peak_touch(a, prev, 1)) != 0 || (rc = blk_destroy_free(a, next)) != 0)
            goto out;
        blk_resize_free(a, prev, prev->size + add);
    }
    s->size += ev->size;
    if (s->size > s->peak_size)
        s->peak_size = s->size;
    if (hi - base > s->extent)
        s->extent = hi - base;
    reserved_add(a, ev->size);
    a->pending_miss_seg = s->base;
out:
    seg_end(a, s);
    return rc;
}

static int on_segment_unmap(fsc_analysis_t *a, const fsc_event_t *ev)
{
    uint64_t lo = ev->addr, hi = ev->addr + ev->size;
    fsc__seg_t *s = seg_of_event(a, ev);
    if (s == NULL || ev->size == 0)
        return fsc__warn_or_fail(a, ev, "no mapped segment here");
    /* Validate: [lo, hi) covered, without gaps, by free blocks. */
    fsc__blk_t *first = s->head;
    while (first != NULL && first->addr + first->size <= lo)
        first = first->next;
    uint64_t at = lo;
    for (fsc__blk_t *b = first; b != NULL && at < hi; b = b->next) {
        if (b->addr > at)
            break;
        if (b->state != FSC__FREE)
            return fsc__warn_or_fail(a, ev, "pages hold the live block 0x%llx", U(b->addr));
        at = b->addr + b->size;
    }
    if (at < hi)
        return fsc__warn_or_fail(a, ev, "pages at 0x%llx are not mapped", U(at));
    seg_begin(a, s);
    int rc = 0;
    fsc__blk_t *b = first;
    while (rc == 0 && b != NULL && b->addr < hi) {
        fsc__blk_t *next = b->next, *prev = b->prev;
        uint64_t bend = b->addr + b->size;
        if (b->addr < lo) {
            /* keep the left part; the right remnant becomes its own block */
            if ((rc = fsc__peak_touch(a, b, 1)) != 0)
                break;
            blk_resize_free(a, b, lo - b->addr);
            if (bend > hi)
                rc = blk_create_free(a, s, b, hi, bend - hi, NULL);
        } else {
            rc = blk_destroy_free(a, b);
            if (rc == 0 && bend > hi)
                rc = blk_create_free(a, s, prev, hi, bend - hi, NULL);
        }
        b = next;
    }
    s->size -= ev->size;
    a->reserved -= ev->size;
    seg_end(a, s);
    return rc;
}

static int on_split(fsc_analysis_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *b = fsc__u64map_get(&a->blocks, ev->addr);
    if (b == NULL)
        return fsc__warn_or_fail(a, ev, "no block at this address");
    if (b->state != FSC__FREE)
        return fsc__warn_or_fail(a, ev, "the block is not free");
    if (ev->size != b->size)
        return fsc__warn_or_fail(a, ev, "split of %llu bytes but the free block has %llu",
                                 U(ev->size), U(b->size));
    if (ev->requested == 0 || ev->requested >= b->size)
        return fsc__warn_or_fail(a, ev, "split point %llu is outside the block",
                                 U(ev->requested));
    fsc__seg_t *s = b->seg;
    seg_begin(a, s);
    int rc = fsc__peak_touch(a, b, 1);
    if (rc == 0) {
        uint64_t rest = b->size - ev->requested;
        blk_resize_free(a, b, ev->requested);
        rc = blk_create_free(a, s, b, b->addr + b->size, rest, NULL);
    }
    seg_end(a, s);
    if (rc != 0)
        return rc < 0 ? rc : ENOMEM_OUT();
    int k = fsc__bin_of(ev->requested);
    a->bins[k].splits++;
    if (k > a->max_bin)
        a->max_bin = k;
    if (a->pending_miss_seg != s->base)
        a->pending_miss_seg = 0; /* only a split of the new segment keeps the miss pending */
    return 0;
}

static int on_alloc(fsc_analysis_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *b = fsc__u64map_get(&a->blocks, ev->addr);
    if (b == NULL)
        return fsc__warn_or_fail(a, ev, "no free block at this address");
    if (b->state != FSC__FREE)
        return fsc__warn_or_fail(a, ev, "the block is %s",
                                 b->state == FSC__ALLOCATED ? "already allocated" : "pending free");
    if (ev->size != b->size)
        return fsc__warn_or_fail(a, ev, "alloc of %llu bytes but the free block has %llu",
                                 U(ev->size), U(b->size));
    if (ev->requested > ev->size)
        return fsc__warn_or_fail(a, ev, "requested %llu bytes exceed the block size",
                                 U(ev->requested));
    if (fsc__tag_ensure(a, ev->tag) != 0)
        return ENOMEM_OUT();
    if (fsc__peak_touch(a, b, 1) != 0)
        return ENOMEM_OUT();
    fsc__seg_t *s = b->seg;
    seg_begin(a, s);
    free_remove(a, b);
    seg_end(a, s);
    b->state = FSC__ALLOCATED;
    b->requested = ev->requested;
    b->tag = ev->tag;
    b->alloc_seq = a->seq;
    b->alloc_time = ev->time_ns;
    b->cache_hit = a->pending_miss_seg != s->base;
    a->allocated += b->size;
    a->active += b->size;
    a->requested += b->requested;
    a->internal += b->size - b->requested;
    a->live_blocks++;
    if (b->cache_hit)
        a->hits++;
    else
        a->misses++;

    int k = fsc__bin_of(b->size);
    fsc__bin_t *bn = &a->bins[k];
    if (k > a->max_bin)
        a->max_bin = k;
    bn->requests++;
    bn->requested_bytes += b->requested;
    bn->allocated_bytes += b->size;
    if (b->cache_hit)
        bn->hits++;
    else
        bn->misses++;
    bn->live_blocks++;
    bn->live_bytes += b->size;
    if (bn->live_blocks > bn->peak_live_blocks)
        bn->peak_live_blocks = bn->live_blocks;
    if (bn->live_bytes > bn->peak_live_bytes)
        bn->peak_live_bytes = bn->live_bytes;

    fsc__tag_t *t = &a->tags[b->tag];
    t->allocs++;
    t->alloc_bytes += b->size;
    t->live_blocks++;
    t->live_bytes += b->size;
    return 0;
}

static int on_free_requested(fsc_analysis_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *b = fsc__u64map_get(&a->blocks, ev->addr);
    if (b == NULL || b->state == FSC__FREE)
        return fsc__warn_or_fail(a, ev, "no live block at this address");
    if (b->state == FSC__PENDING)
        return fsc__warn_or_fail(a, ev, "the block was already freed");
    if (ev->size != 0 && ev->size != b->size)
        return fsc__warn_or_fail(a, ev, "free of %llu bytes but the block has %llu",
                                 U(ev->size), U(b->size));
    if (fsc__tag_ensure(a, ev->tag) != 0 || fsc__peak_touch(a, b, 1) != 0)
        return ENOMEM_OUT();
    b->state = FSC__PENDING;
    b->freereq_seq = a->seq;
    b->freereq_time = ev->time_ns;
    b->free_tag = ev->tag;
    a->allocated -= b->size;
    a->internal -= b->size - b->requested;
    a->live_blocks--;
    fsc__bin_t *bn = &a->bins[fsc__bin_of(b->size)];
    bn->live_blocks--;
    bn->live_bytes -= b->size;
    fsc__tag_t *t = &a->tags[b->tag];
    t->live_blocks--;
    t->live_bytes -= b->size;
    return 0;
}

static int on_free_completed(fsc_analysis_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *b = fsc__u64map_get(&a->blocks, ev->addr);
    if (b == NULL || b->state == FSC__FREE)
        return fsc__warn_or_fail(a, ev, "no block waiting for its free at this address");
    if (b->state == FSC__ALLOCATED)
        return fsc__warn_or_fail(a, ev, "the block's free was never requested");
    int rc = fsc__peak_touch(a, b, 1);
    if (rc != 0)
        return ENOMEM_OUT();
    /* The row waits for the MERGEs that follow (fsc__db_event). */
    fsc__brow_of(b, &a->row_pending);
    a->row_pending.fc_seq = a->seq;
    a->row_pending.fc_time = ev->time_ns;
    a->row_pending.completed = 1;
    seg_begin(a, b->seg);
    rc = free_insert(a, b);
    seg_end(a, b->seg);
    if (rc != 0)
        return ENOMEM_OUT();
    /* PyTorch's requested_bytes, like active, drops when the free completes */
    a->active -= b->size;
    a->requested -= b->requested;
    a->last_free_bin = fsc__bin_of(b->size);
    return 0;
}

static int on_merge(fsc_analysis_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *lo = fsc__u64map_get(&a->blocks, ev->addr);
    if (lo == NULL)
        return fsc__warn_or_fail(a, ev, "no block at this address");
    if (lo->state != FSC__FREE)
        return fsc__warn_or_fail(a, ev, "the block is not free");
    fsc__blk_t *hi = fsc__u64map_get(&a->blocks, ev->other);
    if (hi == NULL && lo->size == ev->size && ev->other > lo->addr &&
        ev->other < lo->addr + lo->size)
        return 0; /* already coalesced when its pages were mapped */
    if (hi == NULL)
        return fsc__warn_or_fail(a, ev, "no block at 0x%llx to absorb", U(ev->other));
    if (hi->state != FSC__FREE)
        return fsc__warn_or_fail(a, ev, "the absorbed block 0x%llx is not free", U(hi->addr));
    if (hi->seg != lo->seg || lo->addr + lo->size != hi->addr)
        return fsc__warn_or_fail(a, ev, "0x%llx is not the next block", U(hi->addr));
    if (ev->size != 0 && lo->size + hi->size != ev->size)
        return fsc__warn_or_fail(a, ev, "merged size %llu is not %llu + %llu", U(ev->size),
                                 U(lo->size), U(hi->size));
    fsc__seg_t *s = lo->seg;
    seg_begin(a, s);
    uint64_t add = hi->size;
    int rc = fsc__peak_touch(a, lo, 1);
    if (rc == 0)
        rc = blk_destroy_free(a, hi);
    if (rc == 0)
        blk_resize_free(a, lo, lo->size + add);
    seg_end(a, s);
    if (rc != 0)
        return rc;
    int k = a->last_free_bin >= 0 ? a->last_free_bin : fsc__bin_of(lo->size);
    a->bins[k].merges++;
    if (k > a->max_bin)
        a->max_bin = k;
    return 0;
}

/* A SPLIT and its ALLOC, or a FREE_COMPLETED and its MERGEs, are one step
 * of the allocator; the state between them (the part about to be allocated
 * sitting free, a freed block not yet merged) never exists in the
 * allocator, so figures taken there would overstate inactive_split. The
 * value after an event becomes a peak candidate only once the next event
 * shows the step is over. */
int fsc__step_continues(const fsc_analysis_t *a, int type)
{
    return (a->last_type == FSC_EV_SPLIT && type == FSC_EV_ALLOC) ||
           ((a->last_type == FSC_EV_FREE_COMPLETED || a->last_type == FSC_EV_MERGE) &&
            type == FSC_EV_MERGE);
}

static void inactive_split_step(fsc_analysis_t *a, int type)
{
    int continues = fsc__step_continues(a, type);
    if (!continues && a->inactive_split_pending > a->peak_inactive_split)
        a->peak_inactive_split = a->inactive_split_pending;
}

void fsc__replay_end(fsc_analysis_t *a)
{
    inactive_split_step(a, 0);
}

int fsc__replay_apply(fsc_analysis_t *a, const fsc_event_t *ev, int *applied)
{
    int rc;
    inactive_split_step(a, ev->type);
    switch (ev->type) {
    case FSC_EV_SEGMENT_ALLOC: rc = on_segment_alloc(a, ev); break;
    case FSC_EV_SEGMENT_FREE: rc = on_segment_free(a, ev); break;
    case FSC_EV_SEGMENT_MAP: rc = on_segment_map(a, ev); break;
    case FSC_EV_SEGMENT_UNMAP: rc = on_segment_unmap(a, ev); break;
    case FSC_EV_ALLOC: rc = on_alloc(a, ev); break;
    case FSC_EV_FREE_REQUESTED: rc = on_free_requested(a, ev); break;
    case FSC_EV_FREE_COMPLETED: rc = on_free_completed(a, ev); break;
    case FSC_EV_SPLIT: rc = on_split(a, ev); break;
    case FSC_EV_MERGE: rc = on_merge(a, ev); break;
    case FSC_EV_OOM: rc = fsc__oom_diagnose(a, ev); break;
    case FSC_EV_EMPTY_CACHE:
    case FSC_EV_GC:
    case FSC_EV_MARKER: rc = 0; break;
    default: rc = fsc__warn_or_fail(a, ev, "unknown event type %d", ev->type); break;
    }
    /* A miss is an ALLOC right after its segment appeared, with at most a
     * SPLIT of that segment in between; anything else ends the window. */
    if (rc == 0 && ev->type != FSC_EV_SEGMENT_ALLOC && ev->type != FSC_EV_SEGMENT_MAP &&
        ev->type != FSC_EV_SPLIT)
        a->pending_miss_seg = 0;
    if (rc == 0 && a->allocated > a->peak_allocated) {
        a->peak_allocated = a->allocated;
        a->peak_allocated_seq = a->seq;
        a->peak_allocated_time = ev->time_ns;
        fsc__peak_new(a);
    }
    if (a->active > a->peak_active)
        a->peak_active = a->active;
    if (a->requested > a->peak_requested)
        a->peak_requested = a->requested;
    if (a->internal > a->peak_internal)
        a->peak_internal = a->internal;
    if (a->reserved >= a->allocated && a->reserved - a->allocated > a->peak_resunalloc)
        a->peak_resunalloc = a->reserved - a->allocated;
    if (rc < 0)
        return rc;
    if (rc == 0) {
        a->last_type = ev->type;
        a->inactive_split_pending = a->inactive_split_bytes;
    }
    *applied = rc == 0;
    return 0;
}

void fsc__replay_free(fsc_analysis_t *a)
{
    for (size_t i = 0; i < a->nseg; i++)
        free(a->seg_sorted[i]);
    free(a->seg_sorted);
    a->seg_sorted = NULL;
    a->nseg = 0;
    for (size_t i = 0; i < a->nslabs; i++)
        free(a->slabs[i]);
    free(a->slabs);
    a->slabs = NULL;
    a->nslabs = 0;
    a->blk_freelist = NULL;
    fsc__u64map_free(&a->blocks);
    fsc__u64map_free(&a->segs);
    fsc__heap_free(&a->heap[0]);
    fsc__heap_free(&a->heap[1]);
}
