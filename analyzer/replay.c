/*
 * replay.c — applies one event to the replayed layout, after checking that
 * it is consistent with it (events.h is the contract): the dispatch, the
 * block and free-set bookkeeping shared by the handlers, and the allocator
 * "step" logic. The handlers live in replay_segments.c (segment events) and
 * replay_blocks.c (block events).
 *
 * The replay does not re-run allocator policy: SPLIT, MERGE and the segment
 * events say exactly what changed, so each handler validates the event
 * against the state and applies it. An inconsistent event is reported
 * through fsc__warn_or_fail before anything is changed, so in lenient mode a
 * skipped event leaves the state as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "replay.h"

/* ---- block structs: from a slab (fsc/slab.h), recycled ----------------- */

static fsc__blk_t *blk_new(fsc_analysis_t *a)
{
    fsc__blk_t *b = fsc__slab_alloc(&a->blk_slab);
    if (b != NULL)
        b->heap_idx = -1;
    return b;
}

static void blk_release(fsc_analysis_t *a, fsc__blk_t *b)
{
    fsc__slab_release(&a->blk_slab, b);
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
void fsc__seg_begin(fsc_analysis_t *a, fsc__seg_t *s)
{
    fsc__frag_seg_out(a, s);
    if (s->nblocks > 1) {
        a->inactive_split_bytes -= s->free_bytes;
        a->inactive_split_blocks -= s->nfree;
    }
}

void fsc__seg_end(fsc_analysis_t *a, fsc__seg_t *s)
{
    if (s->nblocks > 1) {
        a->inactive_split_bytes += s->free_bytes;
        a->inactive_split_blocks += s->nfree;
    }
    fsc__frag_seg_in(a, s);
}

int fsc__free_insert(fsc_analysis_t *a, fsc__blk_t *b)
{
    if (b->state == FSC__PENDING)
        b->seg->pending_bytes -= b->size;
    b->state = FSC__FREE;
    b->seg->nfree++;
    b->seg->free_bytes += b->size;
    fsc__frag_free_add(b->seg, b);
    return fsc__heap_push(&a->heap[b->seg->pool], b);
}

void fsc__free_remove(fsc_analysis_t *a, fsc__blk_t *b)
{
    b->seg->nfree--;
    b->seg->free_bytes -= b->size;
    fsc__frag_free_sub(b->seg, b);
    fsc__heap_remove(&a->heap[b->seg->pool], b);
}

/* A new free block [addr, addr+size) of s, linked after prev (NULL = first). */
int fsc__blk_create_free(fsc_analysis_t *a, fsc__seg_t *s, fsc__blk_t *prev, uint64_t addr,
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
int fsc__blk_destroy_free(fsc_analysis_t *a, fsc__blk_t *b)
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

void fsc__blk_resize_free(fsc_analysis_t *a, fsc__blk_t *b, uint64_t nsize)
{
    uint64_t old = b->size;
    b->seg->free_bytes = b->seg->free_bytes - old + nsize;
    fsc__frag_free_sub(b->seg, b);
    b->size = nsize;
    fsc__frag_free_add(b->seg, b);
    fsc__heap_update(&a->heap[b->seg->pool], b, old);
}

/* Index of the first live segment with base >= addr. */
void fsc__reserved_add(fsc_analysis_t *a, uint64_t n)
{
    a->reserved += n;
    if (a->reserved > a->peak_reserved) {
        a->peak_reserved = a->reserved;
        a->peak_reserved_seq = a->seq;
        a->peak_reserved_time = a->last_time;
    }
}

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
    case FSC_EV_SEGMENT_ALLOC: rc = fsc__on_segment_alloc(a, ev); break;
    case FSC_EV_SEGMENT_FREE: rc = fsc__on_segment_free(a, ev); break;
    case FSC_EV_SEGMENT_MAP: rc = fsc__on_segment_map(a, ev); break;
    case FSC_EV_SEGMENT_UNMAP: rc = fsc__on_segment_unmap(a, ev); break;
    case FSC_EV_ALLOC: rc = fsc__on_alloc(a, ev); break;
    case FSC_EV_FREE_REQUESTED: rc = fsc__on_free_requested(a, ev); break;
    case FSC_EV_FREE_COMPLETED: rc = fsc__on_free_completed(a, ev); break;
    case FSC_EV_SPLIT: rc = fsc__on_split(a, ev); break;
    case FSC_EV_MERGE: rc = fsc__on_merge(a, ev); break;
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
    fsc__slab_free(&a->blk_slab);
    fsc__u64map_free(&a->blocks);
    fsc__u64map_free(&a->segs);
    fsc__heap_free(&a->heap[0]);
    fsc__heap_free(&a->heap[1]);
}
