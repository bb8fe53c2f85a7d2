/*
 * core.c — the heart of the caching allocator: best-fit lookup in the free
 * set, new segments, splitting a found block, and returning a block to the
 * free set with its neighbours merged. Each function mirrors the PyTorch
 * step of the same name (get_free_block, alloc_block, alloc_found_block,
 * free_block, try_merge_blocks), including its statistics.
 */
#include <stdlib.h>

#include "internal.h"

void fsc__emit_event(fsc_allocator_t *a, int type, const fsc__block_t *b, uint64_t addr,
                     uint64_t size, uint64_t requested, uint64_t other)
{
    fsc_event_t ev = {0};
    ev.type = (uint8_t)type;
    ev.addr = addr;
    ev.size = size;
    ev.requested = requested;
    ev.other = other;
    if (b != NULL) {
        ev.pool = b->pool & 1;
        ev.pool_id = fsc__pool_id_of(a, b->pool);
        ev.stream = b->stream;
        ev.segment = b->seg != NULL ? b->seg->base : 0;
    }
    a->sink(a->sink_ud, &ev);
}

/* Best-fit size of an expandable block: it can grow into the unmapped range
 * right after it. */
static uint64_t expandable_size(const fsc__block_t *b)
{
    return b->size + (b->next != NULL && !b->next->mapped ? b->next->size : 0);
}

fsc__block_t *fsc__get_free_block(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream,
                                  uint64_t size)
{
    if (a->gc_armed)
        p->lookups++;
    fsc__block_t key;
    key.stream = stream;
    key.size = size;
    key.addr = 0;
    fsc__block_t *it = RB_NFIND(fsc__free_tree, &p->blocks, &key);
    if (it == NULL || it->stream != stream)
        return NULL;
    if (it->seg->expandable) {
        if (a->cfg.expandable_segments) {
            fsc__block_t *next = RB_NEXT(fsc__free_tree, &p->blocks, it);
            while (it->seg->expandable && next != NULL && next->stream == stream &&
                   expandable_size(next) < expandable_size(it)) {
                it = next;
                next = RB_NEXT(fsc__free_tree, &p->blocks, it);
            }
        } else {
            /* Expandable segments were switched off: only plain blocks. */
            do {
                it = RB_NEXT(fsc__free_tree, &p->blocks, it);
            } while (it != NULL && it->seg->expandable && it->stream == stream);
            if (it == NULL || it->stream != stream)
                return NULL;
        }
    }
    /* Requests below max_split_size never take an oversize block, and an
     * oversize request takes one only within the rounding tolerance. */
    if (size < a->max_split && it->size >= a->max_split)
        return NULL;
    if (size >= a->max_split && it->size >= size + a->non_split_tol)
        return NULL;
    fsc__set_remove(p, it);
    return it;
}

int fsc__alloc_block(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream, uint64_t size,
                     uint64_t alloc_size, int retry, fsc__block_t **out)
{
    *out = NULL;
    if (retry)
        a->st.num_alloc_retries++;
    /* The cap counts the request's segment size, also for expandable
     * segments, whose mapping may be smaller. */
    if (a->set_fraction && a->reserved + alloc_size > a->capacity)
        return 0;
    if (a->cfg.expandable_segments)
        return fsc__try_allocate_expandable(a, p, stream, size, out);

    uint64_t addr;
    int rc = a->be->ops->seg_alloc(a->be, alloc_size, &addr, &a->err);
    if (rc == FSC_EOOM)
        return 0;
    if (rc != 0)
        return rc;
    rc = fsc__segment_new(a, p, stream, addr, alloc_size, out);
    if (rc != 0)
        a->be->ops->seg_free(a->be, addr, alloc_size);
    return rc;
}

int fsc__segment_new(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream, uint64_t addr,
                     uint64_t alloc_size, fsc__block_t **out)
{
    fsc__segment_t *s = calloc(1, sizeof *s);
    fsc__block_t *b = s != NULL ? fsc__block_new(a) : NULL;
    if (b == NULL) {
        free(s);
        return fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
    }
    s->base = addr;
    s->size = alloc_size;
    s->stream = stream;
    s->pool = p->index;
    s->head = b;
    fsc__segment_link(a, s);
    b->addr = addr;
    b->size = alloc_size;
    b->stream = stream;
    b->pool = p->index;
    b->seg = s;

    a->reserved += alloc_size;
    fsc__stat2_inc(a->st.segment, p->id, 1);
    fsc__stat2_inc(a->st.reserved_bytes, p->id, (int64_t)alloc_size);
    if (alloc_size >= a->max_split)
        fsc__stat_inc(&a->st.oversize_segments, 1);
    a->st.num_device_alloc++;
    fsc__emit(a, FSC_EV_SEGMENT_ALLOC, b, addr, alloc_size, 0, 0);
    fsc__device_sample(a);
    *out = b;
    return 0;
}

fsc__block_t *fsc__alloc_found_block(fsc_allocator_t *a, fsc__block_t *b, uint64_t size,
                                     uint64_t orig_size, int split)
{
    fsc__pool_t *p = a->pools[b->pool];
    int expandable = b->seg->expandable;
    int already_split = fsc__is_split(b);
    if (split) {
        fsc__block_t *rest = b;
        b = fsc__block_new(a);
        if (b == NULL) {
            fsc__set_insert(a, p, rest);
            return NULL;
        }
        fsc__emit(a, FSC_EV_SPLIT, rest, rest->addr, rest->size, size, 0);
        b->addr = rest->addr;
        b->size = size;
        b->stream = rest->stream;
        b->pool = rest->pool;
        b->seg = rest->seg;
        b->prev = rest->prev;
        if (b->prev != NULL)
            b->prev->next = b;
        else
            b->seg->head = b;
        b->next = rest;
        rest->prev = b;
        rest->addr += size;
        rest->size -= size;
        fsc__set_insert(a, p, rest);
        if (!expandable) {
            if (already_split) {
                fsc__stat2_dec(a->st.inactive_split_bytes, p->id, (int64_t)size);
            } else {
                fsc__stat2_inc(a->st.inactive_split_bytes, p->id, (int64_t)rest->size);
                fsc__stat2_inc(a->st.inactive_split, p->id, 1);
            }
        }
    } else if (already_split && !expandable) {
        fsc__stat2_dec(a->st.inactive_split_bytes, p->id, (int64_t)b->size);
        fsc__stat2_dec(a->st.inactive_split, p->id, 1);
    }
    b->allocated = 1;
    b->requested = orig_size;
    /* Cannot fail: malloc reserved room in the map before starting. */
    (void)fsc__u64map_putp(&a->live, b->addr, b);
    fsc__stat2_inc(a->st.allocation, p->id, 1);
    fsc__stat2_inc(a->st.allocated_bytes, p->id, (int64_t)b->size);
    fsc__stat2_inc(a->st.active, p->id, 1);
    fsc__stat2_inc(a->st.active_bytes, p->id, (int64_t)b->size);
    fsc__stat2_inc(a->st.requested_bytes, p->id, (int64_t)orig_size);
    if (b->size >= a->max_split)
        fsc__stat_inc(&a->st.oversize_allocations, 1);
    fsc__emit(a, FSC_EV_ALLOC, b, b->addr, b->size, orig_size, 0);
    return b;
}

uint64_t fsc__try_merge(fsc_allocator_t *a, fsc__block_t *dst, fsc__block_t *src, int emit)
{
    if (src == NULL || src->allocated || src->event_count > 0 || src->nuses > 0 ||
        dst->mapped != src->mapped)
        return 0;
    fsc__pool_t *p = a->pools[src->pool];
    if (src->mapped)
        fsc__set_remove(p, src);
    else
        fsc__unmapped_remove(p, src);
    uint64_t lower = dst->prev == src ? src->addr : dst->addr;
    uint64_t higher = dst->prev == src ? dst->addr : src->addr;
    if (dst->prev == src) {
        dst->addr = src->addr;
        dst->prev = src->prev;
        if (dst->prev != NULL)
            dst->prev->next = dst;
        else
            dst->seg->head = dst;
    } else {
        dst->next = src->next;
        if (dst->next != NULL)
            dst->next->prev = dst;
    }
    uint64_t absorbed = src->size;
    dst->size += absorbed;
    if (emit)
        fsc__emit(a, FSC_EV_MERGE, dst, lower, dst->size, 0, higher);
    fsc__block_release(a, src);
    return absorbed;
}

void fsc__free_block(fsc_allocator_t *a, fsc__block_t *b)
{
    fsc__pool_t *p = a->pools[b->pool];
    fsc__emit(a, FSC_EV_FREE_COMPLETED, b, b->addr, b->size, b->requested, 0);
    uint64_t orig_size = b->size;
    uint64_t requested = b->requested;
    int64_t d_count = 0, d_bytes = 0;
    fsc__block_t *cands[2] = {b->prev, b->next};
    for (int i = 0; i < 2; i++) {
        uint64_t absorbed = fsc__try_merge(a, b, cands[i], 1);
        if (absorbed > 0) {
            d_count -= 1;
            d_bytes -= (int64_t)absorbed;
        }
    }
    b->requested = 0;
    fsc__set_insert(a, p, b);
    if (fsc__is_split(b)) {
        d_count += 1;
        d_bytes += (int64_t)b->size;
    }
    /* PyTorch leaves expandable segments out of inactive_split: their free
     * pages can always be given back. */
    if (!b->seg->expandable) {
        if (d_count > 0)
            fsc__stat2_inc(a->st.inactive_split, p->id, d_count);
        else if (d_count < 0)
            fsc__stat2_dec(a->st.inactive_split, p->id, -d_count);
        if (d_bytes > 0)
            fsc__stat2_inc(a->st.inactive_split_bytes, p->id, d_bytes);
        else if (d_bytes < 0)
            fsc__stat2_dec(a->st.inactive_split_bytes, p->id, -d_bytes);
    }
    fsc__stat2_dec(a->st.active, p->id, 1);
    fsc__stat2_dec(a->st.active_bytes, p->id, (int64_t)orig_size);
    fsc__stat2_dec(a->st.requested_bytes, p->id, (int64_t)requested);
}
