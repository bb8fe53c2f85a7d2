/*
 * internal.h — the allocator's private data structures, shared by the files
 * of allocator/ (not API).
 *
 * The model follows PyTorch's DeviceCachingAllocator: a segment is one device
 * allocation (or one expandable VA range) cut into a doubly linked list of
 * blocks; free mapped blocks live in their pool's size-ordered set, unmapped
 * ranges of expandable segments in the pool's address-ordered set, and live
 * blocks in a hash from address to block. Every function here expects the
 * allocator's mutex to be held.
 */
#ifndef FSC_ALLOCATOR_INTERNAL_H
#define FSC_ALLOCATOR_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <bsd/sys/tree.h>

#include "backend.h"
#include "fragscope/allocator.h"
#include "fsc/slab.h"
#include "fsc/u64map.h"
#include "rules.h"

typedef struct fsc__segment fsc__segment_t;

typedef struct fsc__block {
    RB_ENTRY(fsc__block) node; /* in the pool's free set or unmapped set */
    uint64_t addr;
    uint64_t size;
    uint64_t requested;
    uint64_t stream;
    struct fsc__block *prev, *next; /* neighbours in the segment */
    fsc__segment_t *seg;
    int64_t gc_base;    /* pool's lookup count when last inserted in the free set */
    uint64_t *uses;     /* record_stream streams (malloc'd only when used) */
    uint32_t nuses;
    uint32_t pool;      /* index in fsc_allocator.pools */
    size_t uses_cap;
    int32_t event_count; /* outstanding stream uses after a free */
    uint8_t allocated;
    uint8_t mapped;
    uint8_t in_set; /* 1 = free set, 2 = unmapped set */
} fsc__block_t;

struct fsc__segment {
    fsc__segment_t *prev_seg, *next_seg; /* all segments, for walk and destroy */
    fsc__block_t *head;
    uint64_t base;
    uint64_t size;   /* bytes of the device allocation, or of the VA range */
    uint64_t mapped; /* expandable: bytes mapped now */
    uint64_t page;   /* expandable: page size */
    uint64_t stream;
    void *vseg;      /* expandable: the backend's handle */
    uint32_t pool;
    uint8_t expandable;
};

RB_HEAD(fsc__free_tree, fsc__block);
RB_HEAD(fsc__unmapped_tree, fsc__block);
RB_PROTOTYPE(fsc__free_tree, fsc__block, node, fsc__cmp_size)
RB_PROTOTYPE(fsc__unmapped_tree, fsc__block, node, fsc__cmp_addr)

typedef struct fsc__pool {
    struct fsc__free_tree blocks;
    struct fsc__unmapped_tree unmapped;
    int64_t lookups; /* get_free_block calls while GC is armed */
    uint64_t free_bytes; /* bytes of the blocks in `blocks` */
    uint8_t id;      /* fsc_pool_t: small or large */
    uint32_t index;  /* in fsc_allocator.pools: 2 * slot + id; slot 0 = default */
} fsc__pool_t;

/* Private pools (CUDA graph pools, MemPools) an allocator keeps apart from
 * its default pool: each has its own small and large pool, blocks never
 * move between them, and their segments stay until the pool is released.
 * Block and segment `pool` fields hold the pool's index; & 1 is its kind. */
typedef struct fsc__private {
    uint64_t id;      /* the pool's id (PyTorch's MempoolId_t packed) */
    uint8_t released; /* fsc_allocator_release_pool was called */
    uint8_t flags;    /* FSC_POOL_USE_ON_OOM, FSC_POOL_NO_SPLIT */
} fsc__private_t;

/* A free whose block was used on other streams, waiting for them. */
typedef struct fsc__pending {
    fsc__block_t *block;
    uint64_t stream;
    void *event; /* backend event, NULL on backends without events */
} fsc__pending_t;

struct fsc_allocator {
    pthread_mutex_t mu;
    fsc_alloc_config_t cfg;
    uint64_t max_split;      /* cfg.max_split_size, 0 -> UINT64_MAX */
    uint64_t non_split_tol;  /* max_non_split_rounding, 0 -> 20 MiB */
    fsc_backend_t *be;
    uint64_t capacity;       /* allowed bytes; the backend's total when unset */
    int set_fraction;        /* capacity given: enforce it and arm GC */
    int gc_armed;
    fsc_event_sink_fn sink;
    void *sink_ud;
    int sample_device;             /* device_sample.c */
    uint64_t sample_interval_ns, last_sample_ns;

    /* pools[2 * slot + kind]: slot 0 the default pool, slot i >= 1 the
     * private pool priv[i - 1]; as many as the program creates. Each pool
     * is allocated on its own, so that a pointer to it stays valid while
     * the arrays grow. */
    fsc__pool_t **pools;
    fsc__private_t *priv;
    size_t nprivate, cap_private;
    fsc__u64map_t private_slot; /* pool id -> slot */
    fsc__u64map_t live;      /* live block address -> fsc__block_t * */
    fsc__segment_t *segments;
    uint64_t reserved; /* PyTorch's total_allocated_memory */
    fsc_alloc_stats_t st;

    fsc__pending_t *pending;
    size_t npending, pending_cap;

    fsc__slab_t blocks;      /* block structs, recycled */

    fsc_err_t err;
};

/* allocator.c: the private pool id of a pool index (0 = default). */
uint64_t fsc__pool_id_of(const fsc_allocator_t *a, uint32_t index);
/* The slot of pool_id (0 for the default pool; created on first use); -1
 * when out of host memory. */
int fsc__private_slot(fsc_allocator_t *a, uint64_t pool_id);

/* blocks.c */
fsc__block_t *fsc__block_new(fsc_allocator_t *a);
void fsc__block_release(fsc_allocator_t *a, fsc__block_t *b);
void fsc__set_insert(fsc_allocator_t *a, fsc__pool_t *p, fsc__block_t *b);
void fsc__set_remove(fsc__pool_t *p, fsc__block_t *b);
void fsc__unmapped_insert(fsc__pool_t *p, fsc__block_t *b);
void fsc__unmapped_remove(fsc__pool_t *p, fsc__block_t *b);
void fsc__segment_link(fsc_allocator_t *a, fsc__segment_t *s);
void fsc__segment_unlink(fsc_allocator_t *a, fsc__segment_t *s);

/* core.c */
void fsc__emit_event(fsc_allocator_t *a, int type, const fsc__block_t *b, uint64_t addr,
                     uint64_t size, uint64_t requested, uint64_t other);

/* Report one event about block b, if anyone listens. */
static inline void fsc__emit(fsc_allocator_t *a, int type, const fsc__block_t *b, uint64_t addr,
                             uint64_t size, uint64_t requested, uint64_t other)
{
    if (a->sink != NULL)
        fsc__emit_event(a, type, b, addr, size, requested, other);
}

static inline int fsc__is_split(const fsc__block_t *b)
{
    return b->prev != NULL || b->next != NULL;
}

/* device_sample.c: a DEVICE_MEMORY sample to the sink (when enabled);
 * fsc__device_sample_due samples when the interval has passed. */
void fsc__device_sample(fsc_allocator_t *a);
void fsc__device_sample_due(fsc_allocator_t *a);

/* core.c */
fsc__block_t *fsc__get_free_block(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream,
                                  uint64_t size);
int fsc__alloc_block(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream, uint64_t size,
                     uint64_t alloc_size, int retry, fsc__block_t **out);
/* A segment at [addr, addr + alloc_size) the backend gave, as one block
 * (not in the free set), counted and reported. */
int fsc__segment_new(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream, uint64_t addr,
                     uint64_t alloc_size, fsc__block_t **out);
fsc__block_t *fsc__alloc_found_block(fsc_allocator_t *a, fsc__block_t *b, uint64_t size,
                                     uint64_t orig_size, int split);
void fsc__free_block(fsc_allocator_t *a, fsc__block_t *b);
/* Merge src into dst (neighbours); returns the bytes absorbed, 0 if not. */
uint64_t fsc__try_merge(fsc_allocator_t *a, fsc__block_t *dst, fsc__block_t *src, int emit);

/* expandable.c */
/* A new expandable segment of pool p on stream: its address space reserved
 * (at exactly base through the backend's va_adopt when adopt is set), one
 * unmapped block. */
int fsc__expandable_segment(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream, int adopt,
                            uint64_t base, fsc__block_t **out);
/* Map the pages under [to_map->addr, +size) of an unmapped block: 1 mapped,
 * 0 no device memory, < 0 error. */
int fsc__map_block(fsc_allocator_t *a, fsc__block_t *to_map, uint64_t size);
int fsc__try_allocate_expandable(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream,
                                 uint64_t size, fsc__block_t **out);
void fsc__unmap_block(fsc_allocator_t *a, fsc__block_t *b);
void fsc__release_expandable_segment(fsc_allocator_t *a, fsc__block_t *b);

/* release.c */
void fsc__release_block(fsc_allocator_t *a, fsc__block_t *b);
void fsc__garbage_collect(fsc_allocator_t *a);
int fsc__release_available_cached_blocks(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream,
                                         uint64_t size);
void fsc__release_cached_blocks(fsc_allocator_t *a);
/* PyTorch's emptyCache(pool): a released private pool's (slot >= 1)
 * pending frees completed and its unsplit cached blocks released; the
 * default pool and the other pools are left alone. */
void fsc__release_private_pool(fsc_allocator_t *a, size_t slot);
void fsc__process_events(fsc_allocator_t *a);
void fsc__sync_and_free_events(fsc_allocator_t *a);
/* The same for the pending frees of one private pool only. */
void fsc__sync_pool_events(fsc_allocator_t *a, uint32_t small_index);
void fsc__stream_done(fsc_allocator_t *a, uint64_t stream);
int fsc__insert_events(fsc_allocator_t *a, fsc__block_t *b);

/* Statistics are updated on every malloc and free: inline. */
static inline void fsc__stat_inc(fsc_stat_t *s, int64_t amount)
{
    s->current += amount;
    if (s->current > s->peak)
        s->peak = s->current;
    s->allocated += amount;
}

static inline void fsc__stat_dec(fsc_stat_t *s, int64_t amount)
{
    s->current -= amount;
    s->freed += amount;
}

/* Apply to [ALL] and to the pool's entry. */
static inline void fsc__stat2_inc(fsc_stat_t *arr, int pool, int64_t amount)
{
    fsc__stat_inc(&arr[FSC_STAT_ALL], amount);
    fsc__stat_inc(&arr[(pool & 1) == FSC_POOL_SMALL ? FSC_STAT_SMALL : FSC_STAT_LARGE], amount);
}

static inline void fsc__stat2_dec(fsc_stat_t *arr, int pool, int64_t amount)
{
    fsc__stat_dec(&arr[FSC_STAT_ALL], amount);
    fsc__stat_dec(&arr[(pool & 1) == FSC_POOL_SMALL ? FSC_STAT_SMALL : FSC_STAT_LARGE], amount);
}

#endif
