/*
 * model.h — the analyzer's data: the replayed blocks and segments, the free
 * heaps, layout images, bins, per-tag counters and the finished rows the
 * replay hands out. Plain types only; what computes on them is declared in
 * replay.h and the headers beside it. Internal to the analyzer.
 *
 * The replayed layout mirrors the allocator's: segments partitioned into
 * blocks kept in address order (a doubly linked list per segment), every
 * block findable by address, free blocks in one max-heap per pool so the
 * largest free block is O(1).
 */
#ifndef FSC_ANALYZER_MODEL_H
#define FSC_ANALYZER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/analyzer.h"

enum { FSC__FREE = 0, FSC__ALLOCATED = 1, FSC__PENDING = 2 };

#define FSC__NBINS FSC_METRIC_BINS

typedef struct fsc__seg fsc__seg_t;

typedef struct fsc__blk {
    uint64_t addr, size, requested;
    uint64_t alloc_seq, alloc_time;
    uint64_t freereq_seq, freereq_time;
    uint64_t split_size, split_time; /* the SPLIT folded into its row; 0 = none */
    fsc__seg_t *seg;
    struct fsc__blk *prev, *next; /* neighbours in the segment, by address */
    uint32_t tag, free_tag;
    int32_t heap_idx;             /* position in the pool's free heap, -1 */
    uint8_t state;                /* FSC__FREE / ALLOCATED / PENDING */
    uint8_t cache_hit;
} fsc__blk_t;

struct fsc__seg {
    uint64_t base;
    uint64_t size;       /* bytes reserved now (mapped bytes if expandable) */
    uint64_t peak_size;
    uint64_t extent;     /* highest end ever mapped − base (overlap checks) */
    uint64_t stream;
    uint64_t id, created_seq, created_time;
    uint32_t tag;
    uint8_t pool, expandable;
    fsc__blk_t *head;    /* lowest block */
    uint32_t nblocks, nfree;
    uint64_t free_bytes;
    uint64_t pool_id;    /* private pool (CUDA graph, MemPool); 0 = default pool */
    uint64_t paged_free; /* free bytes in whole pages (expandable segments) */
    uint64_t pending_bytes; /* blocks whose free has not completed */
    uint32_t frag_si;    /* frag_classes.c: index + 1 of its stream */
};

/* Indexed binary max-heap of free blocks by size. */
typedef struct fsc__heap {
    fsc__blk_t **v;
    size_t n, cap;
    uint64_t bytes; /* Σ size of the members */
} fsc__heap_t;

/* One block as a layout snapshot stores it. */
typedef struct fsc__img {
    uint64_t addr, size, requested, segment, stream, alloc_seq, alloc_time;
    uint64_t pool_id;
    uint32_t tag;
    uint8_t state, pool, present, expandable;
} fsc__img_t;

typedef struct fsc__imgvec {
    fsc__img_t *v;
    size_t n, cap;
} fsc__imgvec_t;

typedef struct fsc__bin {
    uint64_t requests, requested_bytes, allocated_bytes;
    uint64_t hits, misses, splits, merges;
    uint64_t live_blocks, live_bytes, peak_live_blocks, peak_live_bytes;
} fsc__bin_t;

/* What the replay counts per tag node (names are analysis.c's). */
typedef struct fsc__tag {
    uint64_t allocs, alloc_bytes;
    uint64_t live_blocks, live_bytes;
} fsc__tag_t;

/* One row of table blocks: an allocation's lifetime plus the SPLIT that
 * carved it and the MERGEs that followed its free (see rows.c). */
typedef struct fsc__brow {
    uint64_t alloc_seq, alloc_time, addr, size, requested, stream, segment;
    uint64_t freereq_seq, freereq_time, fc_seq, fc_time;
    uint64_t split_size, split_time;
    uint64_t m_addr[2], m_size[2], m_other[2], m_time[2];
    uint32_t tag, free_tag;
    uint8_t pool, cache_hit, freed, completed, nmerges, valid;
} fsc__brow_t;

/* A segment's row: the segment as it was when freed, or still live. */
typedef struct fsc__segrow {
    fsc__seg_t seg;
    uint64_t freed_seq, freed_time;
    int freed;
} fsc__segrow_t;

#endif
