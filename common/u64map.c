/*
 * u64map.c — the uint64_t → uint64_t hash map (see fsc/u64map.h for why it
 * is written here).
 */
#include "fsc/u64map.h"

#include <stdlib.h>
#include <string.h>

#include "fragscope/common.h"

static inline size_t slot_of(uint64_t key, size_t mask)
{
    /* Addresses share low zero bits (512 B alignment) and high bits; a
     * multiplicative mix spreads them over the table. */
    key ^= key >> 29;
    key *= 0xbf58476d1ce4e5b9ull;
    key ^= key >> 32;
    return (size_t)key & mask;
}

void fsc__u64map_init(fsc__u64map_t *m)
{
    memset(m, 0, sizeof *m);
}

void fsc__u64map_free(fsc__u64map_t *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

void fsc__u64map_clear(fsc__u64map_t *m)
{
    if (m->slots != NULL)
        memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
    m->count = 0;
}

static long find(const fsc__u64map_t *m, uint64_t key)
{
    if (m->slots == NULL || key == 0)
        return -1;
    for (size_t i = slot_of(key, m->mask);; i = (i + 1) & m->mask) {
        if (m->slots[i].key == key)
            return (long)i;
        if (m->slots[i].key == 0)
            return -1;
    }
}

int fsc__u64map_get(const fsc__u64map_t *m, uint64_t key, uint64_t *val)
{
    long i = find(m, key);
    if (i < 0)
        return 0;
    if (val != NULL)
        *val = m->slots[i].val;
    return 1;
}

static int grow(fsc__u64map_t *m)
{
    size_t ncap = m->slots == NULL ? 1024 : (m->mask + 1) * 2;
    fsc__u64map_slot_t *ns = calloc(ncap, sizeof *ns);
    if (ns == NULL)
        return FSC_ENOMEM;
    if (m->slots != NULL) {
        for (size_t j = 0; j <= m->mask; j++) {
            if (m->slots[j].key == 0)
                continue;
            size_t i = slot_of(m->slots[j].key, ncap - 1);
            while (ns[i].key != 0)
                i = (i + 1) & (ncap - 1);
            ns[i] = m->slots[j];
        }
        free(m->slots);
    }
    m->slots = ns;
    m->mask = ncap - 1;
    return 0;
}

int fsc__u64map_reserve(fsc__u64map_t *m)
{
    /* Keep the load under 1/2 so probe runs stay short. */
    if (m->slots == NULL || (m->count + 1) * 2 > m->mask + 1)
        return grow(m);
    return 0;
}

int fsc__u64map_put(fsc__u64map_t *m, uint64_t key, uint64_t val)
{
    if (key == 0)
        return 0; /* never stored: a later get finds nothing, as documented */
    int rc = fsc__u64map_reserve(m);
    if (rc != 0)
        return rc;
    size_t i = slot_of(key, m->mask);
    while (m->slots[i].key != 0 && m->slots[i].key != key)
        i = (i + 1) & m->mask;
    if (m->slots[i].key == 0)
        m->count++;
    m->slots[i].key = key;
    m->slots[i].val = val;
    return 0;
}

int fsc__u64map_del(fsc__u64map_t *m, uint64_t key, uint64_t *val)
{
    long f = find(m, key);
    if (f < 0)
        return 0;
    size_t i = (size_t)f;
    if (val != NULL)
        *val = m->slots[i].val;
    /* Backward-shift: move later members of the probe run into the hole when
     * their home slot is not cyclically between the hole and their position. */
    size_t hole = i;
    for (size_t j = (i + 1) & m->mask; m->slots[j].key != 0; j = (j + 1) & m->mask) {
        size_t home = slot_of(m->slots[j].key, m->mask);
        int movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].key = 0;
    m->slots[hole].val = 0;
    m->count--;
    return 1;
}
