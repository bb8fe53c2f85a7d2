/*
 * blocks.c — block structs (from a slab, fsc/slab.h, recycled so the hot
 * path does not call malloc), the two ordered sets of a pool, and the
 * segment list.
 *
 * The free set orders blocks by (stream, size, address) like PyTorch's
 * BlockComparatorSize: a lookup for (stream, size, 0) lands on the smallest
 * block of that stream that fits, lowest address first among equal sizes.
 * The unmapped set orders expandable-segment holes by (stream, address).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static inline int cmp_u64(uint64_t x, uint64_t y)
{
    return (x > y) - (x < y);
}

static int fsc__cmp_size(const fsc__block_t *x, const fsc__block_t *y)
{
    if (x->stream != y->stream)
        return cmp_u64(x->stream, y->stream);
    if (x->size != y->size)
        return cmp_u64(x->size, y->size);
    return cmp_u64(x->addr, y->addr);
}

static int fsc__cmp_addr(const fsc__block_t *x, const fsc__block_t *y)
{
    if (x->stream != y->stream)
        return cmp_u64(x->stream, y->stream);
    return cmp_u64(x->addr, y->addr);
}

RB_GENERATE(fsc__free_tree, fsc__block, node, fsc__cmp_size)
RB_GENERATE(fsc__unmapped_tree, fsc__block, node, fsc__cmp_addr)

fsc__block_t *fsc__block_new(fsc_allocator_t *a)
{
    fsc__block_t *b = fsc__slab_alloc(&a->blocks);
    if (b == NULL)
        return NULL;
    b->mapped = 1;
    return b;
}

void fsc__block_release(fsc_allocator_t *a, fsc__block_t *b)
{
    free(b->uses);
    b->uses = NULL;
    fsc__slab_release(&a->blocks, b);
}

void fsc__set_insert(fsc_allocator_t *a, fsc__pool_t *p, fsc__block_t *b)
{
    (void)a;
    b->gc_base = p->lookups;
    b->in_set = 1;
    p->free_bytes += b->size;
    RB_INSERT(fsc__free_tree, &p->blocks, b);
}

void fsc__set_remove(fsc__pool_t *p, fsc__block_t *b)
{
    RB_REMOVE(fsc__free_tree, &p->blocks, b);
    p->free_bytes -= b->size;
    b->in_set = 0;
}

void fsc__unmapped_insert(fsc__pool_t *p, fsc__block_t *b)
{
    b->in_set = 2;
    RB_INSERT(fsc__unmapped_tree, &p->unmapped, b);
}

void fsc__unmapped_remove(fsc__pool_t *p, fsc__block_t *b)
{
    RB_REMOVE(fsc__unmapped_tree, &p->unmapped, b);
    b->in_set = 0;
}

void fsc__segment_link(fsc_allocator_t *a, fsc__segment_t *s)
{
    s->prev_seg = NULL;
    s->next_seg = a->segments;
    if (a->segments != NULL)
        a->segments->prev_seg = s;
    a->segments = s;
}

void fsc__segment_unlink(fsc_allocator_t *a, fsc__segment_t *s)
{
    if (s->prev_seg != NULL)
        s->prev_seg->next_seg = s->next_seg;
    else
        a->segments = s->next_seg;
    if (s->next_seg != NULL)
        s->next_seg->prev_seg = s->prev_seg;
}
