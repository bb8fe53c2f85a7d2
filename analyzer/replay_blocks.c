/*
 * replay_blocks.c — the block events: SPLIT, ALLOC, FREE_REQUESTED,
 * FREE_COMPLETED and MERGE, with the per-bin and per-tag counters they move.
 */
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

int fsc__on_split(fsc__replay_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *b = fsc__u64map_getp(&a->blocks, ev->addr);
    if (b == NULL)
        return fsc__skip(a, "no block at this address");
    if (b->state != FSC__FREE)
        return fsc__skip(a, "the block is not free");
    if (ev->size != b->size)
        return fsc__skip(a, "split of %llu bytes but the free block has %llu",
                                 U(ev->size), U(b->size));
    if (ev->requested == 0 || ev->requested >= b->size)
        return fsc__skip(a, "split point %llu is outside the block",
                                 U(ev->requested));
    fsc__seg_t *s = b->seg;
    fsc__seg_begin(a, s);
    int rc = fsc__peak_touch(a, b, 1);
    if (rc == 0) {
        uint64_t rest = b->size - ev->requested;
        fsc__blk_resize_free(a, b, ev->requested);
        rc = fsc__blk_create_free(a, s, b, b->addr + b->size, rest, NULL);
    }
    fsc__seg_end(a, s);
    if (rc != 0)
        return rc < 0 ? rc : ENOMEM_OUT();
    int k = fsc_metric_bin(ev->requested);
    a->bins[k].splits++;
    if (k > a->max_bin)
        a->max_bin = k;
    if (a->pending_miss_seg != s->base)
        a->pending_miss_seg = 0; /* only a split of the new segment keeps the miss pending */
    return 0;
}

int fsc__on_alloc(fsc__replay_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *b = fsc__u64map_getp(&a->blocks, ev->addr);
    if (b == NULL)
        return fsc__skip(a, "no free block at this address");
    if (b->state != FSC__FREE)
        return fsc__skip(a, "the block is %s",
                                 b->state == FSC__ALLOCATED ? "already allocated" : "pending free");
    if (ev->size != b->size)
        return fsc__skip(a, "alloc of %llu bytes but the free block has %llu",
                                 U(ev->size), U(b->size));
    if (ev->requested > ev->size)
        return fsc__skip(a, "requested %llu bytes exceed the block size",
                                 U(ev->requested));
    if (fsc__tag_reserve(a, ev->tag) != 0)
        return ENOMEM_OUT();
    if (fsc__peak_touch(a, b, 1) != 0)
        return ENOMEM_OUT();
    fsc__seg_t *s = b->seg;
    fsc__seg_begin(a, s);
    fsc__free_remove(a, b);
    fsc__seg_end(a, s);
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

    int k = fsc_metric_bin(b->size);
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

int fsc__on_free_requested(fsc__replay_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *b = fsc__u64map_getp(&a->blocks, ev->addr);
    if (b == NULL || b->state == FSC__FREE)
        return fsc__skip(a, "no live block at this address");
    if (b->state == FSC__PENDING)
        return fsc__skip(a, "the block was already freed");
    if (ev->size != 0 && ev->size != b->size)
        return fsc__skip(a, "free of %llu bytes but the block has %llu",
                                 U(ev->size), U(b->size));
    if (fsc__peak_touch(a, b, 1) != 0)
        return ENOMEM_OUT();
    b->state = FSC__PENDING;
    fsc__frag_pending_add(a, b->seg, b->size);
    b->freereq_seq = a->seq;
    b->freereq_time = ev->time_ns;
    b->free_tag = ev->tag;
    a->allocated -= b->size;
    a->internal -= b->size - b->requested;
    a->live_blocks--;
    fsc__bin_t *bn = &a->bins[fsc_metric_bin(b->size)];
    bn->live_blocks--;
    bn->live_bytes -= b->size;
    fsc__tag_t *t = &a->tags[b->tag];
    t->live_blocks--;
    t->live_bytes -= b->size;
    return 0;
}

int fsc__on_free_completed(fsc__replay_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *b = fsc__u64map_getp(&a->blocks, ev->addr);
    if (b == NULL || b->state == FSC__FREE)
        return fsc__skip(a, "no block waiting for its free at this address");
    if (b->state == FSC__ALLOCATED)
        return fsc__skip(a, "the block's free was never requested");
    int rc = fsc__peak_touch(a, b, 1);
    if (rc != 0)
        return ENOMEM_OUT();
    /* The finished row goes out; it waits for the MERGEs that follow
     * (rows.c). */
    fsc__outcome_t *out = fsc__outcome(a);
    fsc__brow_of(b, &out->row);
    out->row.fc_seq = a->seq;
    out->row.fc_time = ev->time_ns;
    out->row.completed = 1;
    out->has_row = 1;
    fsc__seg_begin(a, b->seg);
    rc = fsc__free_insert(a, b);
    fsc__seg_end(a, b->seg);
    if (rc != 0)
        return ENOMEM_OUT();
    /* PyTorch's requested_bytes, like active, drops when the free completes */
    a->active -= b->size;
    a->requested -= b->requested;
    a->last_free_bin = fsc_metric_bin(b->size);
    return 0;
}

int fsc__on_merge(fsc__replay_t *a, const fsc_event_t *ev)
{
    fsc__blk_t *lo = fsc__u64map_getp(&a->blocks, ev->addr);
    if (lo == NULL)
        return fsc__skip(a, "no block at this address");
    if (lo->state != FSC__FREE)
        return fsc__skip(a, "the block is not free");
    fsc__blk_t *hi = fsc__u64map_getp(&a->blocks, ev->other);
    if (hi == NULL && lo->size == ev->size && ev->other > lo->addr &&
        ev->other < lo->addr + lo->size)
        return 0; /* already coalesced when its pages were mapped */
    if (hi == NULL)
        return fsc__skip(a, "no block at 0x%llx to absorb", U(ev->other));
    if (hi->state != FSC__FREE)
        return fsc__skip(a, "the absorbed block 0x%llx is not free", U(hi->addr));
    if (hi->seg != lo->seg || lo->addr + lo->size != hi->addr)
        return fsc__skip(a, "0x%llx is not the next block", U(hi->addr));
    if (ev->size != 0 && lo->size + hi->size != ev->size)
        return fsc__skip(a, "merged size %llu is not %llu + %llu", U(ev->size),
                                 U(lo->size), U(hi->size));
    fsc__seg_t *s = lo->seg;
    fsc__seg_begin(a, s);
    uint64_t add = hi->size;
    int rc = fsc__peak_touch(a, lo, 1);
    if (rc == 0)
        rc = fsc__blk_destroy_free(a, hi);
    if (rc == 0)
        fsc__blk_resize_free(a, lo, lo->size + add);
    fsc__seg_end(a, s);
    if (rc != 0)
        return rc;
    int k = a->last_free_bin >= 0 ? a->last_free_bin : fsc_metric_bin(lo->size);
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