/*
 * expandable.c — expandable segments (PyTorch's expandable_segments:True):
 * one virtual range per pool and stream, 1.125 × device memory, backed by
 * pages (2 MiB small pool, 20 MiB large pool) mapped on demand at the lowest
 * address that fits and unmapped when an OOM retry or empty_cache frees
 * them. Unmapped ranges are blocks with mapped = 0 kept in the pool's
 * unmapped set, so a segment stays one linked list of blocks end to end.
 */
#include <stdlib.h>

#include "internal.h"

static int allocatable(const fsc__block_t *b)
{
    return b != NULL && !b->allocated && b->event_count == 0 && b->nuses == 0;
}

static int has_space(const fsc__block_t *b, uint64_t size)
{
    uint64_t bytes = 0;
    while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
    }
    return bytes >= size;
}

int fsc__expandable_segment(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream, int adopt,
                            uint64_t base, fsc__block_t **out)
{
    uint64_t page = p->id == FSC_POOL_SMALL ? FSC__SMALL_BUFFER : fsc__large_segment(&a->cfg);
    uint64_t total = a->be->total;
    uint64_t va = (total + total / 8 + page - 1) / page * page;
    fsc__segment_t *s = calloc(1, sizeof *s);
    fsc__block_t *b = s != NULL ? fsc__block_new(a) : NULL;
    if (b == NULL) {
        free(s);
        return fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
    }
    int rc;
    if (adopt) {
        s->base = base;
        rc = a->be->ops->va_adopt != NULL
                 ? a->be->ops->va_adopt(a->be, base, &va, &s->vseg, &a->err)
                 : fsc_err_set(&a->err, FSC_EUNSUPPORTED,
                               "allocator: the %s backend cannot adopt an address space",
                               a->be->name);
    } else {
        rc = a->be->ops->va_reserve(a->be, va, page, &s->vseg, &s->base, &a->err);
    }
    if (rc != 0) {
        free(s);
        fsc__block_release(a, b);
        return rc;
    }
    va = va / page * page; /* an adopted space may have been cut short */
    if (va == 0) {
        a->be->ops->va_release(a->be, s->vseg);
        free(s);
        fsc__block_release(a, b);
        return fsc_err_set(&a->err, FSC_ESTATE, "allocator: no room for an address space at 0x%llx",
                           (unsigned long long)base);
    }
    s->size = va;
    s->page = page;
    s->stream = stream;
    s->pool = p->index;
    s->expandable = 1;
    s->head = b;
    fsc__segment_link(a, s);
    b->addr = s->base;
    b->size = va;
    b->stream = stream;
    b->pool = p->index;
    b->seg = s;
    b->mapped = 0;
    fsc__unmapped_insert(p, b);
    *out = b;
    return 0;
}

/* The lowest-address run of free and unmapped blocks of this stream with
 * room for size bytes, or a new segment. */
static int find_expandable_block(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream,
                                 uint64_t size, fsc__block_t **out)
{
    fsc__block_t key;
    key.stream = stream;
    key.addr = 0;
    for (fsc__block_t *it = RB_NFIND(fsc__unmapped_tree, &p->unmapped, &key);
         it != NULL && it->stream == stream; it = RB_NEXT(fsc__unmapped_tree, &p->unmapped, it)) {
        fsc__block_t *c = it;
        if (allocatable(c->prev))
            c = c->prev;
        if (has_space(c, size)) {
            *out = c;
            return 0;
        }
    }
    return fsc__expandable_segment(a, p, stream, 0, 0, out);
}

int fsc__map_block(fsc_allocator_t *a, fsc__block_t *to_map, uint64_t size)
{
    fsc__segment_t *s = to_map->seg;
    fsc__pool_t *p = a->pools[to_map->pool];
    uint64_t off = to_map->addr - s->base;
    uint64_t end = (off + size + s->page - 1) / s->page * s->page;
    uint64_t len = end - off;
    int rc = a->be->ops->va_map(a->be, s->vseg, off, len, &a->err);
    if (rc == FSC_EOOM)
        return 0;
    if (rc != 0)
        return rc;
    fsc__block_t *rest = NULL;
    if (len < to_map->size) {
        rest = fsc__block_new(a);
        if (rest == NULL) {
            a->be->ops->va_unmap(a->be, s->vseg, off, len);
            return fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
        }
    }
    fsc__unmapped_remove(p, to_map);
    to_map->mapped = 1;
    if (rest != NULL) {
        rest->addr = to_map->addr + len;
        rest->size = to_map->size - len;
        rest->stream = to_map->stream;
        rest->pool = to_map->pool;
        rest->seg = s;
        rest->mapped = 0;
        rest->prev = to_map;
        rest->next = to_map->next;
        if (rest->next != NULL)
            rest->next->prev = rest;
        to_map->next = rest;
        fsc__unmapped_insert(p, rest);
        to_map->size = len;
    }
    fsc__try_merge(a, to_map, to_map->prev, 0);
    fsc__try_merge(a, to_map, to_map->next, 0);
    fsc__set_insert(a, p, to_map);

    a->reserved += len;
    s->mapped += len;
    fsc__stat2_inc(a->st.reserved_bytes, p->id, (int64_t)len);
    a->st.num_device_alloc++;
    fsc__emit(a, FSC_EV_SEGMENT_MAP, to_map, s->base + off, len, 0, 0);
    fsc__device_sample(a);
    return 1;
}

int fsc__try_allocate_expandable(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream,
                                 uint64_t size, fsc__block_t **out)
{
    *out = NULL;
    fsc__block_t *c = NULL;
    int rc = find_expandable_block(a, p, stream, size, &c);
    if (rc != 0)
        return rc;
    if (!c->mapped) {
        rc = fsc__map_block(a, c, c->size < size ? c->size : size);
        if (rc <= 0)
            return rc;
    }
    while (c->size < size) {
        /* c is free and mapped, the next block unmapped: mapping it merges
         * the two into the next block. */
        fsc__block_t *n = c->next;
        uint64_t remaining = size - c->size;
        rc = fsc__map_block(a, n, remaining < n->size ? remaining : n->size);
        if (rc <= 0)
            return rc;
        c = n;
    }
    fsc__set_remove(p, c);
    *out = c;
    return 0;
}

void fsc__unmap_block(fsc_allocator_t *a, fsc__block_t *b)
{
    fsc__segment_t *s = b->seg;
    fsc__pool_t *p = a->pools[b->pool];
    uint64_t rel = b->addr - s->base;
    uint64_t begin = (rel + s->page - 1) / s->page;
    uint64_t end = (rel + b->size) / s->page;
    if (begin >= end)
        return;
    uint64_t ustart = s->base + begin * s->page;
    uint64_t ulen = (end - begin) * s->page;
    uint64_t before = ustart - b->addr;
    uint64_t after = b->size - before - ulen;
    fsc__block_t *bf = before > 0 ? fsc__block_new(a) : NULL;
    fsc__block_t *af = after > 0 ? fsc__block_new(a) : NULL;
    if ((before > 0 && bf == NULL) || (after > 0 && af == NULL)) {
        /* Out of host memory: keep the pages mapped; nothing changes. */
        if (bf != NULL)
            fsc__block_release(a, bf);
        if (af != NULL)
            fsc__block_release(a, af);
        return;
    }
    fsc__set_remove(p, b);
    if (bf != NULL) {
        bf->addr = b->addr;
        bf->size = before;
        bf->stream = b->stream;
        bf->pool = b->pool;
        bf->seg = s;
        bf->prev = b->prev;
        if (bf->prev != NULL)
            bf->prev->next = bf;
        else
            s->head = bf;
        bf->next = b;
        b->prev = bf;
        fsc__set_insert(a, p, bf);
    }
    if (af != NULL) {
        af->addr = ustart + ulen;
        af->size = after;
        af->stream = b->stream;
        af->pool = b->pool;
        af->seg = s;
        af->next = b->next;
        if (af->next != NULL)
            af->next->prev = af;
        af->prev = b;
        b->next = af;
        fsc__set_insert(a, p, af);
    }
    b->addr = ustart;
    b->size = ulen;
    b->mapped = 0;
    fsc__try_merge(a, b, b->prev, 0);
    fsc__try_merge(a, b, b->next, 0);
    fsc__unmapped_insert(p, b);

    a->be->ops->va_unmap(a->be, s->vseg, begin * s->page, ulen);
    a->reserved -= ulen;
    s->mapped -= ulen;
    fsc__stat2_dec(a->st.reserved_bytes, p->id, (int64_t)ulen);
    a->st.num_device_free++;
    fsc__emit(a, FSC_EV_SEGMENT_UNMAP, b, ustart, ulen, 0, 0);
}

void fsc__release_expandable_segment(fsc_allocator_t *a, fsc__block_t *b)
{
    fsc__segment_t *s = b->seg;
    fsc__unmapped_remove(a->pools[b->pool], b);
    a->be->ops->va_release(a->be, s->vseg);
    fsc__segment_unlink(a, s);
    free(s);
    fsc__block_release(a, b);
}
