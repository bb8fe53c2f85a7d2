/*
 * ptrmap.c — live blocks by address: open addressing with linear probing and
 * backward-shift deletion (no tombstones), so lookups on the free path stay
 * one or two cache lines however long the run.
 */
#include <stdlib.h>

#include "internal.h"

static inline size_t slot_of(const fsc__ptrmap_t *m, uint64_t key)
{
    /* Block addresses are multiples of 512: drop those bits, then mix. */
    uint64_t h = (key >> 9) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (m->cap - 1);
}

static int grow(fsc__ptrmap_t *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    uint64_t *keys = calloc(ncap, sizeof *keys);
    fsc__block_t **vals = malloc(ncap * sizeof *vals);
    if (keys == NULL || vals == NULL) {
        free(keys);
        free(vals);
        return FSC_ENOMEM;
    }
    fsc__ptrmap_t n = {keys, vals, ncap, 0};
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] != 0) {
            size_t j = slot_of(&n, m->keys[i]);
            while (n.keys[j] != 0)
                j = (j + 1) & (ncap - 1);
            n.keys[j] = m->keys[i];
            n.vals[j] = m->vals[i];
        }
    }
    n.n = m->n;
    free(m->keys);
    free(m->vals);
    *m = n;
    return 0;
}

int fsc__ptrmap_reserve(fsc__ptrmap_t *m)
{
    if ((m->n + 1) * 2 > m->cap)
        return grow(m);
    return 0;
}

int fsc__ptrmap_put(fsc__ptrmap_t *m, uint64_t key, fsc__block_t *b)
{
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
        return FSC_ENOMEM;
    size_t i = slot_of(m, key);
    while (m->keys[i] != 0 && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == 0)
        m->n++;
    m->keys[i] = key;
    m->vals[i] = b;
    return 0;
}

fsc__block_t *fsc__ptrmap_get(const fsc__ptrmap_t *m, uint64_t key)
{
    if (m->cap == 0 || key == 0)
        return NULL;
    size_t i = slot_of(m, key);
    while (m->keys[i] != 0) {
        if (m->keys[i] == key)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

fsc__block_t *fsc__ptrmap_del(fsc__ptrmap_t *m, uint64_t key)
{
    if (m->cap == 0 || key == 0)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = slot_of(m, key);
    while (m->keys[i] != key) {
        if (m->keys[i] == 0)
            return NULL;
        i = (i + 1) & mask;
    }
    fsc__block_t *v = m->vals[i];
    /* Shift later members of the probe run back over the hole. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (m->keys[j] == 0)
            break;
        size_t home = slot_of(m, m->keys[j]);
        /* Move j into i unless its home lies cyclically in (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->n--;
    return v;
}

void fsc__ptrmap_free(fsc__ptrmap_t *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}
