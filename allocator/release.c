/*
 * release.c — giving memory back: one cached segment, the garbage
 * collector, the oversize-block release of the miss path, the full release
 * of every unsplit cached block (OOM retry and empty_cache), and the stream
 * events that hold back frees of blocks used on other streams.
 */
#include <stdlib.h>

#include "internal.h"
#include "fsc/vec.h"

void fsc__release_block(fsc_allocator_t *a, fsc__block_t *b)
{
    fsc__segment_t *s = b->seg;
    fsc__pool_t *p = a->pools[b->pool];
    a->st.num_device_free++;
    fsc__emit(a, FSC_EV_SEGMENT_FREE, b, b->addr, b->size, 0, 0);
    a->be->ops->seg_free(a->be, b->addr, b->size);
    a->reserved -= b->size;
    fsc__stat2_dec(a->st.segment, p->id, 1);
    fsc__stat2_dec(a->st.reserved_bytes, p->id, (int64_t)b->size);
    if (b->size >= a->max_split)
        fsc__stat_dec(&a->st.oversize_segments, 1);
    fsc__set_remove(p, b);
    fsc__segment_unlink(a, s);
    free(s);
    fsc__block_release(a, b);
}

static int releasable(const fsc__block_t *b)
{
    return !fsc__is_split(b) && !b->seg->expandable;
}

/* Ticks since the block last entered the free set (PyTorch's gc_count). */
static uint64_t age_of(const fsc_allocator_t *a, const fsc__block_t *b)
{
    return (uint64_t)(a->pools[FSC_POOL_LARGE]->lookups - b->gc_base);
}

void fsc__garbage_collect(fsc_allocator_t *a)
{
    uint64_t threshold =
        (uint64_t)(a->cfg.garbage_collection_threshold * (double)a->capacity);
    if (a->reserved <= threshold)
        return;
    uint64_t target = a->reserved - threshold;
    uint64_t reclaimed = 0;
    fsc__pool_t *p = a->pools[FSC_POOL_LARGE];
    uint64_t total_age = 0;
    int64_t count = 0;
    fsc__block_t *b;
    RB_FOREACH(b, fsc__free_tree, &p->blocks) {
        if (releasable(b)) {
            total_age += age_of(a, b);
            count++;
        }
    }
    if (count == 0)
        return;
    int freed = 1;
    /* Each pass frees every block at or above the average age, and does
     * not stop at the target: GC should not run again soon. */
    while (reclaimed < target && freed && count > 0) {
        double age_threshold = (double)total_age / (double)count;
        freed = 0;
        fsc__block_t *it = RB_MIN(fsc__free_tree, &p->blocks);
        while (it != NULL) {
            fsc__block_t *next = RB_NEXT(fsc__free_tree, &p->blocks, it);
            if (releasable(it) && (double)age_of(a, it) >= age_threshold) {
                freed = 1;
                reclaimed += it->size;
                total_age -= age_of(a, it);
                count--;
                fsc__release_block(a, it);
            }
            it = next;
        }
    }
    if (a->sink != NULL) {
        fsc_event_t ev = {0};
        ev.type = FSC_EV_GC;
        ev.size = reclaimed;
        ev.requested = target;
        a->sink(a->sink_ud, &ev);
    }
}

int fsc__release_available_cached_blocks(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream,
                                         uint64_t size)
{
    if (a->max_split == UINT64_MAX)
        return 0;
    fsc__block_t key;
    key.stream = stream;
    key.size = size < a->max_split ? a->max_split : size;
    key.addr = 0;
    fsc__block_t *it = RB_NFIND(fsc__free_tree, &p->blocks, &key);
    if (it == NULL || it->stream != stream) {
        /* No single block is large enough: free oversize blocks from the
         * largest down until their total covers the request. */
        it = it == NULL ? RB_MAX(fsc__free_tree, &p->blocks)
                        : RB_PREV(fsc__free_tree, &p->blocks, it);
        if (it == NULL)
            return 0;
        uint64_t released = 0;
        while (it != NULL && released < key.size && it->size >= a->max_split &&
               it->stream == stream) {
            fsc__block_t *prev = RB_PREV(fsc__free_tree, &p->blocks, it);
            if (!releasable(it))
                break;
            released += it->size;
            fsc__release_block(a, it);
            it = prev;
        }
        return released >= key.size;
    }
    if (!releasable(it))
        return 0;
    fsc__release_block(a, it);
    return 1;
}

static void release_blocks(fsc_allocator_t *a, fsc__pool_t *p)
{
    fsc__block_t **to_unmap = NULL;
    size_t n = 0, cap = 0;
    fsc__block_t *it = RB_MIN(fsc__free_tree, &p->blocks);
    while (it != NULL) {
        fsc__block_t *next = RB_NEXT(fsc__free_tree, &p->blocks, it);
        if (it->seg->expandable) {
            if (FSC__VEC_RESERVE(to_unmap, cap, n + 1) != 0)
                break; /* out of host memory: unmap what was gathered */
            to_unmap[n++] = it;
        } else if (!fsc__is_split(it)) {
            fsc__release_block(a, it);
        }
        it = next;
    }
    /* Unmapping merges unmapped neighbours, never free mapped blocks, so
     * every gathered block is still alive when its turn comes. */
    for (size_t i = 0; i < n; i++) {
        fsc__block_t *b = to_unmap[i];
        fsc__unmap_block(a, b);
        if (!b->mapped && !fsc__is_split(b))
            fsc__release_expandable_segment(a, b);
    }
    free(to_unmap);
}

void fsc__release_cached_blocks(fsc_allocator_t *a)
{
    fsc__sync_and_free_events(a);
    release_blocks(a, a->pools[FSC_POOL_LARGE]);
    release_blocks(a, a->pools[FSC_POOL_SMALL]);
    /* A private pool keeps its segments while it is in use (a CUDA graph
     * may replay into them); once released, they go like any others. */
    for (size_t i = 0; i < a->nprivate; i++) {
        if (!a->priv[i].released)
            continue;
        release_blocks(a, a->pools[2 * (i + 1) + FSC_POOL_LARGE]);
        release_blocks(a, a->pools[2 * (i + 1) + FSC_POOL_SMALL]);
    }
}

void fsc__release_private_pool(fsc_allocator_t *a, size_t slot)
{
    if (slot == 0 || slot > a->nprivate || !a->priv[slot - 1].released)
        return;
    fsc__sync_pool_events(a, (uint32_t)(2 * slot));
    release_blocks(a, a->pools[2 * slot + FSC_POOL_LARGE]);
    release_blocks(a, a->pools[2 * slot + FSC_POOL_SMALL]);
}

/* ---- frees that wait on other streams ---------------------------------- */

static void complete_use(fsc_allocator_t *a, fsc__pending_t *e)
{
    if (e->event != NULL)
        a->be->ops->event_destroy(a->be, e->event);
    fsc__block_t *b = e->block;
    if (--b->event_count == 0)
        fsc__free_block(a, b);
}

int fsc__insert_events(fsc_allocator_t *a, fsc__block_t *b)
{
    if (a->npending + b->nuses > a->pending_cap) {
        size_t ncap = a->pending_cap ? a->pending_cap : 16;
        while (ncap < a->npending + b->nuses)
            ncap *= 2;
        fsc__pending_t *n = realloc(a->pending, ncap * sizeof *n);
        if (n == NULL)
            return fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
        a->pending = n;
        a->pending_cap = ncap;
    }
    for (uint32_t i = 0; i < b->nuses; i++) {
        void *ev = NULL;
        if (a->be->ops->event_record != NULL) {
            int rc = a->be->ops->event_record(a->be, b->uses[i], &ev, &a->err);
            if (rc != 0)
                return rc;
        }
        fsc__pending_t *e = &a->pending[a->npending++];
        e->block = b;
        e->stream = b->uses[i];
        e->event = ev;
        b->event_count++;
    }
    b->nuses = 0;
    return 0;
}

/* Complete the pending uses selected by keep() == 0, in recording order. */
static void sweep(fsc_allocator_t *a, int (*done)(fsc_allocator_t *, fsc__pending_t *, uint64_t),
                  uint64_t arg)
{
    size_t w = 0;
    /* complete_use may free blocks but never adds pending uses, so the
     * array is stable while it is compacted. */
    for (size_t r = 0; r < a->npending; r++) {
        fsc__pending_t e = a->pending[r];
        if (done(a, &e, arg))
            complete_use(a, &e);
        else
            a->pending[w++] = e;
    }
    a->npending = w;
}

static int event_done(fsc_allocator_t *a, fsc__pending_t *e, uint64_t arg)
{
    (void)arg;
    return e->event != NULL && a->be->ops->event_query(a->be, e->event) == 1;
}

/* Only uses without a backend event: real streams finish on their own. */
static int on_stream(fsc_allocator_t *a, fsc__pending_t *e, uint64_t stream)
{
    (void)a;
    return e->event == NULL && e->stream == stream;
}

static int sync_all(fsc_allocator_t *a, fsc__pending_t *e, uint64_t arg)
{
    (void)arg;
    if (e->event != NULL)
        a->be->ops->event_sync(a->be, e->event);
    return 1;
}

void fsc__process_events(fsc_allocator_t *a)
{
    if (a->npending > 0 && a->be->ops->event_query != NULL)
        sweep(a, event_done, 0);
}

void fsc__stream_done(fsc_allocator_t *a, uint64_t stream)
{
    if (a->npending > 0)
        sweep(a, on_stream, stream);
}

/* Pending uses of blocks of one private pool (its small pool index). */
static int in_pool(fsc_allocator_t *a, fsc__pending_t *e, uint64_t small_index)
{
    if ((e->block->pool & ~1u) != small_index)
        return 0;
    if (e->event != NULL)
        a->be->ops->event_sync(a->be, e->event);
    return 1;
}

void fsc__sync_pool_events(fsc_allocator_t *a, uint32_t small_index)
{
    a->st.num_sync_all_streams++;
    if (a->npending > 0)
        sweep(a, in_pool, small_index);
}

void fsc__sync_and_free_events(fsc_allocator_t *a)
{
    a->st.num_sync_all_streams++;
    if (a->npending > 0)
        sweep(a, sync_all, 0);
}
