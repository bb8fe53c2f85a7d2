/*
 * u64map.h — an open-addressing hash map from uint64_t keys (device
 * addresses) to pointers, internal to the analyzer. Addresses are looked up
 * on every replayed event, so this is the hot path: linear probing over a
 * power-of-two table, backward-shift deletion (no tombstones), key 0 never
 * stored (callers never need it: 0 is not a device address).
 */
#ifndef FSC_ANALYZER_U64MAP_H
#define FSC_ANALYZER_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct fsc__u64map_slot {
    uint64_t key; /* 0 = empty */
    void *val;
} fsc__u64map_slot_t;

typedef struct fsc__u64map {
    fsc__u64map_slot_t *slots;
    size_t mask;  /* capacity - 1 */
    size_t count;
} fsc__u64map_t;

void fsc__u64map_init(fsc__u64map_t *m);
void fsc__u64map_free(fsc__u64map_t *m);
void fsc__u64map_clear(fsc__u64map_t *m);
/* NULL when absent. */
void *fsc__u64map_get(const fsc__u64map_t *m, uint64_t key);
/* Insert or replace; returns 0 or FSC_ENOMEM. key must not be 0. */
int fsc__u64map_put(fsc__u64map_t *m, uint64_t key, void *val);
/* Remove; returns the value that was stored, or NULL. */
void *fsc__u64map_del(fsc__u64map_t *m, uint64_t key);

#endif
