/*
 * fsc/u64map.h — the one hash map from uint64_t keys (device addresses,
 * ids) to uint64_t values, used by the allocator, the analyzer's replay
 * and the what-if replay. Pointers are stored as their integer value
 * (fsc__u64map_getp/putp/delp).
 *
 * Addresses are looked up on every replayed event and on every free, so
 * this is a hot path: open addressing with linear probing over a
 * power-of-two table kept under half full, backward-shift deletion (no
 * tombstones), key 0 never stored (0 is never a device address or an id).
 * uthash, the Debian package the project already uses for string keys,
 * chains heap-allocated entries through a handle inside each entry; for
 * millions of 64-bit keys a flat table is several times faster and needs
 * no allocation per key, hence this file.
 *
 * Internal to fragscope (fsc__ names): shared by the parts through
 * fsc_common. A zeroed struct is an empty map.
 */
#ifndef FSC_U64MAP_H
#define FSC_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct fsc__u64map_slot {
    uint64_t key; /* 0 = empty */
    uint64_t val;
} fsc__u64map_slot_t;

typedef struct fsc__u64map {
    fsc__u64map_slot_t *slots;
    size_t mask;  /* capacity − 1; meaningless while slots is NULL */
    size_t count;
} fsc__u64map_t;

void fsc__u64map_init(fsc__u64map_t *m);
void fsc__u64map_free(fsc__u64map_t *m);
void fsc__u64map_clear(fsc__u64map_t *m);
/* Make room for one more key, so that the next put cannot fail. */
int fsc__u64map_reserve(fsc__u64map_t *m);
/* 1 and *val when present (val may be NULL), 0 when absent. */
int fsc__u64map_get(const fsc__u64map_t *m, uint64_t key, uint64_t *val);
/* Insert or replace; returns 0 or FSC_ENOMEM. A put of key 0 is ignored
 * (returns 0; get and del never find key 0). */
int fsc__u64map_put(fsc__u64map_t *m, uint64_t key, uint64_t val);
/* Remove; 1 and *val (may be NULL) when it was present, 0 when absent. */
int fsc__u64map_del(fsc__u64map_t *m, uint64_t key, uint64_t *val);

/* Pointer values: NULL when absent. */
static inline void *fsc__u64map_getp(const fsc__u64map_t *m, uint64_t key)
{
    uint64_t v = 0;
    return fsc__u64map_get(m, key, &v) ? (void *)(uintptr_t)v : NULL;
}

static inline int fsc__u64map_putp(fsc__u64map_t *m, uint64_t key, const void *p)
{
    return fsc__u64map_put(m, key, (uint64_t)(uintptr_t)p);
}

static inline void *fsc__u64map_delp(fsc__u64map_t *m, uint64_t key)
{
    uint64_t v = 0;
    return fsc__u64map_del(m, key, &v) ? (void *)(uintptr_t)v : NULL;
}

#endif
