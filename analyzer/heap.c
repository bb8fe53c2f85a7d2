/*
 * heap.c — indexed max-heap of free blocks by size, one per pool, so the
 * largest free block (external fragmentation's numerator) is known at any
 * moment without scanning. Each block remembers its position (heap_idx),
 * which makes removal of an arbitrary block O(log n).
 */
#include <stdlib.h>

#include "fsc/vec.h"
#include "replay.h"

static inline void place(fsc__heap_t *h, size_t i, fsc__blk_t *b)
{
    h->v[i] = b;
    b->heap_idx = (int32_t)i;
}

static void sift_up(fsc__heap_t *h, size_t i)
{
    fsc__blk_t *b = h->v[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->v[p]->size >= b->size)
            break;
        place(h, i, h->v[p]);
        i = p;
    }
    place(h, i, b);
}

static void sift_down(fsc__heap_t *h, size_t i)
{
    fsc__blk_t *b = h->v[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        uint64_t ms = b->size;
        if (l < h->n && h->v[l]->size > ms) {
            m = l;
            ms = h->v[l]->size;
        }
        if (r < h->n && h->v[r]->size > ms)
            m = r;
        if (m == i)
            break;
        place(h, i, h->v[m]);
        i = m;
    }
    place(h, i, b);
}

int fsc__heap_push(fsc__heap_t *h, fsc__blk_t *b)
{
    if (FSC__VEC_RESERVE(h->v, h->cap, h->n + 1) != 0)
        return FSC_ENOMEM;
    place(h, h->n++, b);
    sift_up(h, h->n - 1);
    h->bytes += b->size;
    return 0;
}

void fsc__heap_remove(fsc__heap_t *h, fsc__blk_t *b)
{
    size_t i = (size_t)b->heap_idx;
    h->bytes -= b->size;
    b->heap_idx = -1;
    h->n--;
    if (i == h->n)
        return;
    fsc__blk_t *last = h->v[h->n];
    place(h, i, last);
    sift_up(h, i);
    sift_down(h, (size_t)last->heap_idx);
}

void fsc__heap_update(fsc__heap_t *h, fsc__blk_t *b, uint64_t old_size)
{
    h->bytes = h->bytes - old_size + b->size;
    if (b->size > old_size)
        sift_up(h, (size_t)b->heap_idx);
    else
        sift_down(h, (size_t)b->heap_idx);
}

void fsc__heap_free(fsc__heap_t *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
    h->bytes = 0;
}

uint64_t fsc__largest_free(const fsc__replay_t *r, int pool)
{
    uint64_t m = 0;
    for (int p = 0; p < 2; p++)
        if ((pool < 0 || pool == p) && r->heap[p].n > 0 && r->heap[p].v[0]->size > m)
            m = r->heap[p].v[0]->size;
    return m;
}
