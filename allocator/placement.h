/*
 * placement.h — where the CUDA driver puts a new cudaMalloc segment (not
 * API): the model the simulated device follows for the segments a recording
 * did not give an address to. docs/allocator.md, "Where the driver places
 * segments", gives the rules and the evidence; bench/placement_learn.py
 * measures them on real recordings.
 *
 * The model keeps the driver's address-space chunks: each segment that did
 * not fit in a chunk starts one, of its size rounded up to 32 MiB (2 MiB for
 * segments of 2 MiB and less). It knows nothing of the device's ranges in
 * use: the caller answers through fsc__place_space_t.
 */
#ifndef FSC_ALLOCATOR_PLACEMENT_H
#define FSC_ALLOCATOR_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

typedef struct fsc__place_space {
    void *ctx;
    /* The range in use with the lowest start among those ending above
     * `from` (it may begin below `from`): 1 and its [*start, *end), or 0. */
    int (*next)(void *ctx, uint64_t from, uint64_t *start, uint64_t *end);
    /* 1 when no range in use overlaps [addr, addr + size). */
    int (*is_free)(void *ctx, uint64_t addr, uint64_t size);
} fsc__place_space_t;

typedef struct fsc__place fsc__place_t;

int fsc__place_create(fsc__place_t **out);
void fsc__place_destroy(fsc__place_t *p); /* NULL: no-op */
/* Which gap a new chunk takes after chunks were given back, the rule the
 * recordings leave least certain: FSC_SIM_PLACE_* of allocator.h. */
int fsc__place_set_variant(fsc__place_t *p, int variant);
/* New chunks placed while a given-back chunk's range could have held them:
 * where the variants may differ. */
uint64_t fsc__place_uncertain(const fsc__place_t *p);

/* The address for a new segment of `size` bytes: 0 and *addr, free in
 * `sp`; FSC_ENOENT when the model has nothing to go by (no chunk yet, or
 * every rule lands on a range in use): the caller decides. */
int fsc__place_predict(fsc__place_t *p, const fsc__place_space_t *sp, uint64_t size,
                       uint64_t *addr);
/* The driver put a segment of size at addr (a recorded address, before it
 * is added to `sp` and passed to fsc__place_placed): where the model would
 * have used a chunk's room and the driver did not, that chunk takes no more
 * segments. 0 or FSC_EINVAL. */
int fsc__place_observed(fsc__place_t *p, const fsc__place_space_t *sp, uint64_t addr,
                        uint64_t size);
/* A segment now lies at [addr, addr + size) (predicted, scripted or
 * adopted). 0 or FSC_ENOMEM. */
int fsc__place_placed(fsc__place_t *p, uint64_t addr, uint64_t size);
/* The segment at addr was freed (already gone from `sp`). 0 or FSC_ENOMEM. */
int fsc__place_released(fsc__place_t *p, const fsc__place_space_t *sp, uint64_t addr);

#endif
