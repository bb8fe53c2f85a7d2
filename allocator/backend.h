/*
 * backend.h — the device primitives under the caching allocator (not API):
 * whole allocations (cudaMalloc/cudaFree), virtual ranges with pages mapped
 * on demand (cuMemAddressReserve/cuMemCreate/cuMemMap), and stream events
 * for frees that wait on other streams. `sim` and `cuda` implement it.
 */
#ifndef FSC_ALLOCATOR_BACKEND_H
#define FSC_ALLOCATOR_BACKEND_H

#include <stdint.h>

#include "fragscope/allocator.h"

typedef struct fsc_backend_ops {
    /* FSC_EOOM when the device has no room (any CUDA error state cleared). */
    int (*seg_alloc)(fsc_backend_t *b, uint64_t size, uint64_t *addr, fsc_err_t *err);
    void (*seg_free)(fsc_backend_t *b, uint64_t addr, uint64_t size);
    /* Reserve size bytes of address space in pages of `page` bytes. */
    int (*va_reserve)(fsc_backend_t *b, uint64_t size, uint64_t page, void **vseg,
                      uint64_t *base, fsc_err_t *err);
    /* Map [off, off+len) (page multiples): all or nothing; FSC_EOOM when the
     * device has no room. */
    int (*va_map)(fsc_backend_t *b, void *vseg, uint64_t off, uint64_t len, fsc_err_t *err);
    void (*va_unmap)(fsc_backend_t *b, void *vseg, uint64_t off, uint64_t len);
    void (*va_release)(fsc_backend_t *b, void *vseg);
    /* Starting from a recorded layout (fsc_allocator_adopt_*): the exact
     * range [addr, addr+size) as a device allocation, and an address
     * space at exactly base of at most *size bytes (*size: what it got,
     * less where other ranges begin above base). NULL where a backend cannot
     * (cuda); FSC_ESTATE when the range is taken. */
    int (*seg_adopt)(fsc_backend_t *b, uint64_t addr, uint64_t size, fsc_err_t *err);
    int (*va_adopt)(fsc_backend_t *b, uint64_t base, uint64_t *size, void **vseg, fsc_err_t *err);
    /* Free and total device bytes. */
    void (*mem_info)(fsc_backend_t *b, uint64_t *free_bytes, uint64_t *total);
    /* Stream events; NULL on backends where streams finish only when told
     * (sim: fsc_allocator_stream_done). event_query: 1 done, 0 not yet. */
    int (*event_record)(fsc_backend_t *b, uint64_t stream, void **ev, fsc_err_t *err);
    int (*event_query)(fsc_backend_t *b, void *ev);
    void (*event_sync)(fsc_backend_t *b, void *ev);
    void (*event_destroy)(fsc_backend_t *b, void *ev);
    void (*destroy)(fsc_backend_t *b);
} fsc_backend_ops_t;

struct fsc_backend {
    const fsc_backend_ops_t *ops;
    uint64_t total;
    char name[128];
};

#endif
