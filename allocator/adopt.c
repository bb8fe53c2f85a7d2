/*
 * adopt.c — starting from a recorded layout instead of an empty device.
 *
 * A recording that begins mid-run (a PyTorch snapshot whose history ring
 * had wrapped) is replayed from the state it began in: the segments that
 * already existed, at their addresses, and the blocks live in them. The
 * what-if replay adopts that state here before its first request, so that
 * the allocator's later decisions (best fit among those free blocks, merges
 * with those neighbours) are PyTorch's. Each adopted piece is counted and
 * reported as the allocator would have counted its own (SEGMENT_ALLOC or
 * SEGMENT_MAP, SPLIT, ALLOC), so peaks and statistics include it.
 */
#include <stdlib.h>

#include "internal.h"

static int pool_of(fsc_allocator_t *a, fsc_pool_t kind, uint64_t pool_id, fsc__pool_t **out)
{
    int slot = fsc__private_slot(a, pool_id);
    if (slot < 0)
        return fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
    *out = a->pools[2 * slot + (kind == FSC_POOL_SMALL ? 0 : 1)];
    return 0;
}

int fsc_allocator_adopt_segment(fsc_allocator_t *a, uint64_t base, uint64_t size,
                                uint64_t stream, fsc_pool_t kind, uint64_t pool_id)
{
    if (a == NULL || size == 0 || base + size < base)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    fsc__pool_t *p = NULL;
    int rc = pool_of(a, kind, pool_id, &p);
    if (rc == 0 && a->be->ops->seg_adopt == NULL)
        rc = fsc_err_set(&a->err, FSC_EUNSUPPORTED,
                         "allocator: the %s backend cannot adopt a segment", a->be->name);
    if (rc == 0)
        rc = a->be->ops->seg_adopt(a->be, base, size, &a->err);
    if (rc == 0) {
        fsc__block_t *b;
        rc = fsc__segment_new(a, p, stream, base, size, &b);
        if (rc == 0)
            fsc__set_insert(a, p, b);
        else
            a->be->ops->seg_free(a->be, base, size);
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

static fsc__segment_t *segment_at(fsc_allocator_t *a, uint64_t addr)
{
    for (fsc__segment_t *s = a->segments; s != NULL; s = s->next_seg)
        if (s->base <= addr && addr - s->base < s->size)
            return s;
    return NULL;
}

int fsc_allocator_adopt_mapping(fsc_allocator_t *a, uint64_t base, uint64_t addr, uint64_t size,
                                uint64_t stream, fsc_pool_t kind, uint64_t pool_id)
{
    if (a == NULL || size == 0 || addr < base || addr + size < addr)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    fsc__pool_t *p = NULL;
    int rc = pool_of(a, kind, pool_id, &p);
    fsc__segment_t *s = NULL;
    for (s = a->segments; rc == 0 && s != NULL; s = s->next_seg)
        if (s->base == base)
            break;
    if (rc == 0 && s == NULL) {
        fsc__block_t *head;
        rc = fsc__expandable_segment(a, p, stream, 1, base, &head);
        s = rc == 0 ? head->seg : NULL;
    }
    if (rc == 0 && (!s->expandable || s->pool != p->index || s->stream != stream))
        rc = fsc_err_set(&a->err, FSC_ESTATE,
                         "allocator: the segment at 0x%llx is not that pool's expandable one",
                         (unsigned long long)base);
    if (rc == 0 && ((addr - base) % s->page != 0 || size % s->page != 0 ||
                    addr - base + size > s->size))
        rc = fsc_err_set(&a->err, FSC_EINVAL,
                         "allocator: pages 0x%llx+%llu do not fit the segment's %llu-byte pages",
                         (unsigned long long)addr, (unsigned long long)size,
                         (unsigned long long)s->page);
    fsc__block_t *b = NULL;
    if (rc == 0) {
        for (b = s->head; b != NULL; b = b->next)
            if (b->addr <= addr && addr - b->addr < b->size)
                break;
        if (b == NULL || b->mapped || addr + size > b->addr + b->size)
            rc = fsc_err_set(&a->err, FSC_ESTATE,
                             "allocator: pages 0x%llx+%llu are mapped already",
                             (unsigned long long)addr, (unsigned long long)size);
    }
    if (rc == 0 && b->addr < addr) {
        /* the unmapped range below stays unmapped, as a block of its own */
        fsc__block_t *lo = fsc__block_new(a);
        if (lo == NULL) {
            rc = fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
        } else {
            fsc__unmapped_remove(p, b);
            lo->addr = b->addr;
            lo->size = addr - b->addr;
            lo->stream = b->stream;
            lo->pool = b->pool;
            lo->seg = s;
            lo->mapped = 0;
            lo->prev = b->prev;
            if (lo->prev != NULL)
                lo->prev->next = lo;
            else
                s->head = lo;
            lo->next = b;
            b->prev = lo;
            b->size -= lo->size;
            b->addr = addr;
            fsc__unmapped_insert(p, lo);
            fsc__unmapped_insert(p, b);
        }
    }
    if (rc == 0) {
        rc = fsc__map_block(a, b, size);
        if (rc == 0)
            rc = fsc_err_set(&a->err, FSC_EOOM, "allocator: no device memory for adopted pages");
        else if (rc > 0)
            rc = 0;
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* Cut free block b at addr: b keeps [b->addr, addr), a new free block
 * [addr, end) follows it (returned, in the free set). Statistics count
 * both as inactive split blocks, as fsc__alloc_found_block expects. */
static fsc__block_t *cut_at(fsc_allocator_t *a, fsc__block_t *b, uint64_t addr)
{
    fsc__pool_t *p = a->pools[b->pool];
    fsc__block_t *hi = fsc__block_new(a);
    if (hi == NULL)
        return NULL;
    int was_split = fsc__is_split(b);
    uint64_t total = b->size;
    fsc__set_remove(p, b);
    fsc__emit(a, FSC_EV_SPLIT, b, b->addr, b->size, addr - b->addr, 0);
    hi->addr = addr;
    hi->size = b->addr + b->size - addr;
    hi->stream = b->stream;
    hi->pool = b->pool;
    hi->seg = b->seg;
    hi->prev = b;
    hi->next = b->next;
    if (hi->next != NULL)
        hi->next->prev = hi;
    b->next = hi;
    b->size = addr - b->addr;
    fsc__set_insert(a, p, b);
    fsc__set_insert(a, p, hi);
    if (!b->seg->expandable) {
        fsc__stat2_inc(a->st.inactive_split, p->id, was_split ? 1 : 2);
        if (!was_split)
            fsc__stat2_inc(a->st.inactive_split_bytes, p->id, (int64_t)total);
    }
    return hi;
}

int fsc_allocator_adopt_block(fsc_allocator_t *a, uint64_t addr, uint64_t size,
                              uint64_t requested)
{
    if (a == NULL || size == 0 || addr + size < addr)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    int rc = fsc__u64map_reserve(&a->live);
    if (rc != 0)
        rc = fsc_err_set(&a->err, rc, "allocator: out of host memory");
    fsc__segment_t *s = rc == 0 ? segment_at(a, addr) : NULL;
    fsc__block_t *b = NULL;
    if (s != NULL) {
        /* blocks are adopted in address order: the free block holding addr
         * is usually the segment's last */
        for (b = s->head; b != NULL; b = b->next)
            if (b->addr <= addr && addr - b->addr < b->size)
                break;
    }
    if (rc == 0 && (b == NULL || b->allocated || !b->mapped || b->in_set != 1 ||
                    addr + size > b->addr + b->size))
        rc = fsc_err_set(&a->err, FSC_ESTATE,
                         "allocator: block 0x%llx+%llu does not fit the free space of an "
                         "adopted segment",
                         (unsigned long long)addr, (unsigned long long)size);
    if (rc == 0 && b->addr < addr && (b = cut_at(a, b, addr)) == NULL)
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
    if (rc == 0) {
        fsc__set_remove(a->pools[b->pool], b);
        if (fsc__alloc_found_block(a, b, size, requested, b->size > size) == NULL)
            rc = fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}
