/*
 * replay_segments.c — the segment events: SEGMENT_ALLOC/FREE and, for
 * expandable segments, SEGMENT_MAP/UNMAP. Live segments are kept sorted by
 * base (a sorted array: segments are few and change rarely) for overlap
 * checks and for walking the layout in address order.
 *
 * Expandable segments: SEGMENT_MAP adds its page range as a free block and
 * coalesces it with free neighbours of the same segment, as PyTorch does
 * when it maps pages; a later MERGE that describes the same coalescing is
 * accepted as already applied (replay_blocks.c). SEGMENT_UNMAP cuts its
 * pages out of the free blocks covering them.
 */
#include <stdlib.h>
#include <string.h>

#include "fsc/vec.h"
#include "replay_internal.h"

static size_t seg_lower_bound(const fsc__replay_t *a, uint64_t addr)
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
static fsc__seg_t *seg_overlap(const fsc__replay_t *a, uint64_t lo, uint64_t hi,
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

/* Σ reserved in private pools, for the per-pool figures. */
static void private_reserved(fsc__replay_t *a, const fsc__seg_t *s, int64_t delta)
{
    if (s->pool_id == 0)
        return;
    size_t k = 0;
    while (k < a->nprivate && a->private_ids[k] != s->pool_id)
        k++;
    if (k == a->nprivate && a->nprivate < sizeof a->private_ids / sizeof a->private_ids[0])
        a->private_ids[a->nprivate++] = s->pool_id;
    a->private_reserved += (uint64_t)delta;
    if (a->private_reserved > a->peak_private_reserved)
        a->peak_private_reserved = a->private_reserved;
}

static fsc__seg_t *seg_create(fsc__replay_t *a, const fsc_event_t *ev, uint64_t base,
                              int expandable)
{
    fsc__seg_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->base = base;
    s->stream = ev->stream;
    s->pool = ev->pool ? 1 : 0;
    s->pool_id = ev->pool_id; /* private pool; 0 = the default pool */
    s->expandable = (uint8_t)expandable;
    s->id = a->segments_created++;
    s->created_seq = a->seq;
    s->created_time = ev->time_ns;
    s->tag = ev->tag;
    if (fsc__frag_seg_new(a, s) != 0) {
        free(s);
        return NULL;
    }
    if (FSC__VEC_RESERVE(a->seg_sorted, a->seg_cap, a->nseg + 1) != 0) {
        free(s);
        return NULL;
    }
    if (fsc__u64map_putp(&a->segs, base, s) != 0) {
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

static void seg_destroy(fsc__replay_t *a, fsc__seg_t *s)
{
    size_t i = seg_lower_bound(a, s->base);
    memmove(&a->seg_sorted[i], &a->seg_sorted[i + 1], (a->nseg - i - 1) * sizeof *a->seg_sorted);
    a->nseg--;
    fsc__u64map_delp(&a->segs, s->base);
    free(s);
}

/* ---- handlers: each returns 0 applied, >0 skipped (lenient), <0 error -- */

int fsc__on_segment_alloc(fsc__replay_t *a, const fsc_event_t *ev)
{
    if (ev->addr == 0 || ev->size == 0)
        return fsc__skip(a, "segment with a zero address or size");
    if (fsc__u64map_getp(&a->segs, ev->addr) != NULL)
        return fsc__skip(a, "a segment already exists at this address");
    fsc__seg_t *o = seg_overlap(a, ev->addr, ev->addr + ev->size, NULL);
    if (o != NULL)
        return fsc__skip(a, "overlaps the segment at 0x%llx", U(o->base));
    fsc__seg_t *s = seg_create(a, ev, ev->addr, 0);
    if (s == NULL)
        return ENOMEM_OUT();
    s->size = s->peak_size = s->extent = ev->size;
    fsc__seg_begin(a, s);
    int rc = fsc__blk_create_free(a, s, NULL, ev->addr, ev->size, NULL);
    fsc__seg_end(a, s);
    if (rc != 0)
        return rc;
    fsc__reserved_add(a, ev->size);
    private_reserved(a, s, (int64_t)ev->size);
    a->pending_miss_seg = s->base;
    return 0;
}

int fsc__on_segment_free(fsc__replay_t *a, const fsc_event_t *ev)
{
    fsc__seg_t *s = fsc__u64map_getp(&a->segs, ev->addr);
    if (s == NULL)
        return fsc__skip(a, "no segment at this address");
    fsc__blk_t *b = s->head;
    if (s->nblocks != 1 || b->state != FSC__FREE || b->size != s->size)
        return fsc__skip(a, "segment still holds %s",
                                 s->nblocks == 0 ? "no mapped pages" :
                                 s->nblocks > 1 ? "more than one block" : "a live block");
    if (ev->size != 0 && ev->size != s->size)
        return fsc__skip(a, "size %llu differs from the segment's %llu",
                                 U(ev->size), U(s->size));
    fsc__seg_begin(a, s);
    int rc = fsc__blk_destroy_free(a, b);
    fsc__seg_end(a, s);
    if (rc != 0)
        return rc;
    a->reserved -= s->size;
    private_reserved(a, s, -(int64_t)s->size);
    fsc__outcome_t *out = fsc__outcome(a);
    out->seg.seg = *s;
    out->seg.freed = 1;
    out->seg.freed_seq = a->seq;
    out->seg.freed_time = ev->time_ns;
    out->has_seg = 1;
    a->segments_freed++;
    seg_destroy(a, s);
    return 0;
}

/* Segment that an expandable-segment event refers to. */
static fsc__seg_t *seg_of_event(fsc__replay_t *a, const fsc_event_t *ev)
{
    if (ev->segment != 0)
        return fsc__u64map_getp(&a->segs, ev->segment);
    size_t i = seg_lower_bound(a, ev->addr + 1);
    if (i == 0)
        return NULL;
    fsc__seg_t *s = a->seg_sorted[i - 1];
    return ev->addr < s->base + (s->extent > s->size ? s->extent : s->size) ? s : NULL;
}

int fsc__on_segment_map(fsc__replay_t *a, const fsc_event_t *ev)
{
    uint64_t base = ev->segment ? ev->segment : ev->addr;
    uint64_t lo = ev->addr, hi = ev->addr + ev->size;
    if (ev->addr == 0 || ev->size == 0)
        return fsc__skip(a, "mapping with a zero address or size");
    if (lo < base)
        return fsc__skip(a, "pages below their segment base 0x%llx", U(base));
    fsc__seg_t *s = fsc__u64map_getp(&a->segs, base);
    if (s != NULL && !s->expandable)
        return fsc__skip(a, "segment_map into the non-expandable segment 0x%llx",
                                 U(base));
    fsc__seg_t *o = seg_overlap(a, s ? lo : base, hi, s);
    if (o != NULL)
        return fsc__skip(a, "overlaps the segment at 0x%llx", U(o->base));
    /* Insertion point among the mapped blocks. */
    fsc__blk_t *prev = NULL, *next = s ? s->head : NULL;
    while (next != NULL && next->addr < lo) {
        prev = next;
        next = next->next;
    }
    if ((prev && prev->addr + prev->size > lo) || (next && next->addr < hi))
        return fsc__skip(a, "pages already mapped");
    if (s == NULL) {
        s = seg_create(a, ev, base, 1);
        if (s == NULL)
            return ENOMEM_OUT();
    }
    fsc__seg_begin(a, s);
    int rc = 0;
    if (prev && prev->state == FSC__FREE && prev->addr + prev->size == lo) {
        if ((rc = fsc__peak_touch(a, prev, 1)) != 0)
            goto out;
        fsc__blk_resize_free(a, prev, prev->size + ev->size);
    } else {
        if ((rc = fsc__blk_create_free(a, s, prev, lo, ev->size, &prev)) != 0)
            goto out;
    }
    if (next && next->state == FSC__FREE && next->addr == hi) {
        uint64_t add = next->size;
        if ((rc = fsc__peak_touch(a, prev, 1)) != 0 || (rc = fsc__blk_destroy_free(a, next)) != 0)
            goto out;
        fsc__blk_resize_free(a, prev, prev->size + add);
    }
    s->size += ev->size;
    if (s->size > s->peak_size)
        s->peak_size = s->size;
    if (hi - base > s->extent)
        s->extent = hi - base;
    fsc__reserved_add(a, ev->size);
    private_reserved(a, s, (int64_t)ev->size);
    a->pending_miss_seg = s->base;
out:
    fsc__seg_end(a, s);
    return rc;
}

int fsc__on_segment_unmap(fsc__replay_t *a, const fsc_event_t *ev)
{
    uint64_t lo = ev->addr, hi = ev->addr + ev->size;
    fsc__seg_t *s = seg_of_event(a, ev);
    if (s == NULL || ev->size == 0)
        return fsc__skip(a, "no mapped segment here");
    /* Validate: [lo, hi) covered, without gaps, by free blocks. */
    fsc__blk_t *first = s->head;
    while (first != NULL && first->addr + first->size <= lo)
        first = first->next;
    uint64_t at = lo;
    for (fsc__blk_t *b = first; b != NULL && at < hi; b = b->next) {
        if (b->addr > at)
            break;
        if (b->state != FSC__FREE)
            return fsc__skip(a, "pages hold the live block 0x%llx", U(b->addr));
        at = b->addr + b->size;
    }
    if (at < hi)
        return fsc__skip(a, "pages at 0x%llx are not mapped", U(at));
    fsc__seg_begin(a, s);
    int rc = 0;
    fsc__blk_t *b = first;
    while (rc == 0 && b != NULL && b->addr < hi) {
        fsc__blk_t *next = b->next, *prev = b->prev;
        uint64_t bend = b->addr + b->size;
        if (b->addr < lo) {
            /* keep the left part; the right remnant becomes its own block */
            if ((rc = fsc__peak_touch(a, b, 1)) != 0)
                break;
            fsc__blk_resize_free(a, b, lo - b->addr);
            if (bend > hi)
                rc = fsc__blk_create_free(a, s, b, hi, bend - hi, NULL);
        } else {
            rc = fsc__blk_destroy_free(a, b);
            if (rc == 0 && bend > hi)
                rc = fsc__blk_create_free(a, s, prev, hi, bend - hi, NULL);
        }
        b = next;
    }
    s->size -= ev->size;
    a->reserved -= ev->size;
    private_reserved(a, s, -(int64_t)ev->size);
    fsc__seg_end(a, s);
    return rc;
}
