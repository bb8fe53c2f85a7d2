/*
 * replay.c — applies one event to the replayed layout, after checking that
 * it is consistent with it (events.h is the contract): the dispatch, the
 * block and free-set bookkeeping shared by the handlers, and the allocator
 * "step" logic. The handlers live in replay_segments.c (segment events) and
 * replay_blocks.c (block events).
 *
 * The replay does not re-run allocator policy: SPLIT, MERGE and the segment
 * events say exactly what changed, so each handler validates the event
 * against the state and applies it. An inconsistent event is skipped
 * through fsc__skip before anything is changed, so a skipped event leaves
 * the state as it was; whether a skip is an error is the caller's choice.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc/vec.h"
#include "replay_internal.h"

/* ---- block structs: from a slab (fsc/slab.h), recycled ----------------- */

static fsc__blk_t *blk_new(fsc__replay_t *a)
{
    fsc__blk_t *b = fsc__slab_alloc(&a->blk_slab);
    if (b != NULL)
        b->heap_idx = -1;
    return b;
}

static void blk_release(fsc__replay_t *a, fsc__blk_t *b)
{
    fsc__slab_release(&a->blk_slab, b);
}

int fsc__skip(fsc__replay_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->out->why, sizeof a->out->why, fmt, ap);
    va_end(ap);
    return 1;
}

fsc__outcome_t *fsc__outcome(fsc__replay_t *a)
{
    return a->out;
}

int fsc__tag_reserve(fsc__replay_t *a, uint32_t tag)
{
    if (tag < a->ntags)
        return 0;
    return fsc__vec_reserve_zero(&a->tags, &a->ntags, (size_t)tag + 1, sizeof *a->tags);
}

fsc__blk_t *fsc__replay_block(const fsc__replay_t *a, uint64_t addr)
{
    return fsc__u64map_getp(&a->blocks, addr);
}

void fsc__brow_of(const fsc__blk_t *b, fsc__brow_t *r)
{
    memset(r, 0, sizeof *r);
    r->alloc_seq = b->alloc_seq;
    r->alloc_time = b->alloc_time;
    r->addr = b->addr;
    r->size = b->size;
    r->requested = b->requested;
    r->stream = b->seg->stream;
    r->segment = b->seg->base;
    r->pool = b->seg->pool;
    r->tag = b->tag;
    r->cache_hit = b->cache_hit;
    r->freed = b->state == FSC__PENDING;
    r->freereq_seq = b->freereq_seq;
    r->freereq_time = b->freereq_time;
    r->free_tag = b->free_tag;
    r->split_size = b->split_size;
    r->split_time = b->split_time;
    r->valid = 1;
}

void fsc__replay_init(fsc__replay_t *a)
{
    memset(a, 0, sizeof *a);
    a->last_free_bin = -1;
    fsc__u64map_init(&a->blocks);
    fsc__u64map_init(&a->segs);
    fsc__u64map_init(&a->peak_delta);
    fsc__slab_init(&a->blk_slab, sizeof(fsc__blk_t), 4096);
    fsc__frag_init(&a->frag);
}

/* ---- segment bookkeeping ----------------------------------------------- */

/* inactive_split counts the free blocks of segments that hold more than one
 * block; bracket every change to a segment's blocks with begin/end so the
 * totals follow. */
void fsc__seg_begin(fsc__replay_t *a, fsc__seg_t *s)
{
    fsc__frag_seg_out(a, s);
    if (s->nblocks > 1) {
        a->inactive_split_bytes -= s->free_bytes;
        a->inactive_split_blocks -= s->nfree;
    }
}

void fsc__seg_end(fsc__replay_t *a, fsc__seg_t *s)
{
    if (s->nblocks > 1) {
        a->inactive_split_bytes += s->free_bytes;
        a->inactive_split_blocks += s->nfree;
    }
    fsc__frag_seg_in(a, s);
}

int fsc__free_insert(fsc__replay_t *a, fsc__blk_t *b)
{
    if (b->state == FSC__PENDING)
        b->seg->pending_bytes -= b->size;
    b->state = FSC__FREE;
    b->seg->nfree++;
    b->seg->free_bytes += b->size;
    fsc__frag_free_add(b->seg, b);
    return fsc__heap_push(&a->heap[b->seg->pool], b);
}

void fsc__free_remove(fsc__replay_t *a, fsc__blk_t *b)
{
    b->seg->nfree--;
    b->seg->free_bytes -= b->size;
    fsc__frag_free_sub(b->seg, b);
    fsc__heap_remove(&a->heap[b->seg->pool], b);
}

/* A new free block [addr, addr+size) of s, linked after prev (NULL = first). */
int fsc__blk_create_free(fsc__replay_t *a, fsc__seg_t *s, fsc__blk_t *prev, uint64_t addr,
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
        rc = fsc__u64map_putp(&a->blocks, addr, b);
    if (rc == 0)
        rc = fsc__free_insert(a, b);
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
int fsc__blk_destroy_free(fsc__replay_t *a, fsc__blk_t *b)
{
    int rc = fsc__peak_touch(a, b, 1);
    if (rc != 0)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    fsc__free_remove(a, b);
    fsc__u64map_delp(&a->blocks, b->addr);
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

void fsc__blk_resize_free(fsc__replay_t *a, fsc__blk_t *b, uint64_t nsize)
{
    uint64_t old = b->size;
    b->seg->free_bytes = b->seg->free_bytes - old + nsize;
    fsc__frag_free_sub(b->seg, b);
    b->size = nsize;
    fsc__frag_free_add(b->seg, b);
    fsc__heap_update(&a->heap[b->seg->pool], b, old);
}

/* Index of the first live segment with base >= addr. */
void fsc__reserved_add(fsc__replay_t *a, uint64_t n)
{
    a->reserved += n;
    if (a->reserved > a->peak_reserved) {
        a->peak_reserved = a->reserved;
        a->peak_reserved_seq = a->seq;
        a->peak_reserved_time = a->last_time;
    }
}

int fsc__step_continues(const fsc__replay_t *a, int type)
{
    return (a->last_type == FSC_EV_SPLIT && type == FSC_EV_ALLOC) ||
           ((a->last_type == FSC_EV_FREE_COMPLETED || a->last_type == FSC_EV_MERGE) &&
            type == FSC_EV_MERGE);
}

static void inactive_split_step(fsc__replay_t *a, int type)
{
    int continues = fsc__step_continues(a, type);
    if (!continues && a->inactive_split_pending > a->peak_inactive_split)
        a->peak_inactive_split = a->inactive_split_pending;
}

void fsc__replay_end(fsc__replay_t *a)
{
    inactive_split_step(a, 0);
}

int fsc__replay_apply(fsc__replay_t *a, const fsc_event_t *ev, fsc__outcome_t *out)
{
    int rc;
    a->last_time = ev->time_ns;
    out->has_row = 0;
    out->has_seg = 0;
    a->out = out;
    inactive_split_step(a, ev->type);
    switch (ev->type) {
    case FSC_EV_SEGMENT_ALLOC: rc = fsc__on_segment_alloc(a, ev); break;
    case FSC_EV_SEGMENT_FREE: rc = fsc__on_segment_free(a, ev); break;
    case FSC_EV_SEGMENT_MAP: rc = fsc__on_segment_map(a, ev); break;
    case FSC_EV_SEGMENT_UNMAP: rc = fsc__on_segment_unmap(a, ev); break;
    case FSC_EV_ALLOC: rc = fsc__on_alloc(a, ev); break;
    case FSC_EV_FREE_REQUESTED: rc = fsc__on_free_requested(a, ev); break;
    case FSC_EV_FREE_COMPLETED: rc = fsc__on_free_completed(a, ev); break;
    case FSC_EV_SPLIT: rc = fsc__on_split(a, ev); break;
    case FSC_EV_MERGE: rc = fsc__on_merge(a, ev); break;
    case FSC_EV_OOM: /* changes nothing; diagnosed by the caller (oom.c) */
    case FSC_EV_EMPTY_CACHE:
    case FSC_EV_GC:
    case FSC_EV_MARKER:
    case FSC_EV_DEVICE_MEMORY: rc = 0; break; /* the device, not the allocator */
    default: rc = fsc__skip(a, "unknown event type %d", ev->type); break;
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
    if (rc == 0)
        fsc__frag_event(a, ev->type, ev->stream, ev->addr);
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
    out->applied = rc == 0;
    a->out = NULL;
    return 0;
}

void fsc__replay_free(fsc__replay_t *a)
{
    for (size_t i = 0; i < a->nseg; i++)
        free(a->seg_sorted[i]);
    free(a->seg_sorted);
    a->seg_sorted = NULL;
    a->nseg = 0;
    fsc__slab_free(&a->blk_slab);
    fsc__u64map_free(&a->blocks);
    fsc__u64map_free(&a->segs);
    fsc__u64map_free(&a->peak_delta);
    fsc__heap_free(&a->heap[0]);
    fsc__heap_free(&a->heap[1]);
    fsc__imgvec_free(&a->peak_imgs);
    fsc__imgvec_free(&a->peak_layout);
    free(a->tags);
    a->tags = NULL;
    a->ntags = 0;
    fsc__frag_free(&a->frag);
}
