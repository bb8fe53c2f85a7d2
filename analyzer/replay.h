/*
 * replay.h — the replayed allocator state and the calls that move it: one
 * event in, "applied, or skipped and why" out, plus the rows an event
 * finished (a freed block waiting for its MERGEs, a freed segment). The
 * replay computes only: it never writes the database and never decides
 * whether a skipped event is an error (analysis.c does, from the options).
 * Internal to the analyzer.
 *
 * Figures that every timeline sample needs (allocated, reserved, free
 * bytes, inactive split) are kept incrementally; the layout at the
 * allocated peak is tracked by layout.c; everything else is derived by
 * oom.c and finish.c from this state.
 */
#ifndef FSC_ANALYZER_REPLAY_H
#define FSC_ANALYZER_REPLAY_H

#include "fragscope/analyzer.h"
#include "fsc/slab.h"
#include "frag_classes.h"
#include "fsc/u64map.h"
#include "model.h"

#define FSC__SKIP_MAX 384

/* What one event did. */
typedef struct fsc__outcome {
    int applied;                /* 0: skipped; why says what contradicted it */
    char why[FSC__SKIP_MAX];
    int has_row;                /* FREE_COMPLETED: the freed block's row */
    fsc__brow_t row;
    int has_seg;                /* SEGMENT_FREE: the freed segment's row */
    fsc__segrow_t seg;
} fsc__outcome_t;

typedef struct fsc__replay {
    fsc_err_t err;                /* out of memory while replaying */
    fsc__outcome_t *out;          /* during fsc__replay_apply */
    uint64_t seq;                 /* seq of the event being replayed */
    uint64_t last_time;           /* its time */

    /* layout */
    fsc__u64map_t blocks;         /* addr → fsc__blk_t* */
    fsc__u64map_t segs;           /* base → fsc__seg_t* */
    fsc__seg_t **seg_sorted;      /* live segments by base */
    size_t nseg, seg_cap;
    fsc__heap_t heap[2];          /* free blocks per pool */
    fsc__slab_t blk_slab;         /* block structs */

    /* figures now and their peaks */
    uint64_t allocated, requested, active, reserved;
    uint64_t internal;            /* Σ size − requested over allocated blocks */
    uint64_t live_blocks;
    uint64_t inactive_split_bytes, inactive_split_blocks;
    uint64_t peak_allocated, peak_allocated_seq, peak_allocated_time;
    uint64_t peak_reserved, peak_reserved_seq, peak_reserved_time;
    uint64_t peak_active, peak_requested, peak_internal, peak_resunalloc;
    uint64_t peak_inactive_split, peak_segments;
    /* private pools (CUDA graph pools, MemPools): Σ reserved and its peak,
     * and the distinct pools seen (up to 64) */
    uint64_t private_reserved, peak_private_reserved;
    uint64_t private_ids[64];
    size_t nprivate;
    uint64_t inactive_split_pending;  /* value after the last event */
    int last_type;                    /* type of the last applied event */
    uint64_t pending_miss_seg;    /* segment just created, 0 = none */
    int last_free_bin;            /* bin of the last FREE_COMPLETED, -1 */

    /* counters */
    uint64_t segments_created, segments_freed;
    uint64_t hits, misses;
    fsc__bin_t bins[FSC__NBINS];
    int max_bin;
    fsc__tag_t *tags;             /* per tag node, grown on first use */
    size_t ntags;

    /* Layout at the allocated peak (layout.c): after a new peak, the first
     * change to each block records its before-image (peak_delta), so the
     * peak layout is the current layout with those images put back. When
     * the delta grows past the live set it is materialized into
     * peak_layout. */
    int peak_tracking;            /* delta being recorded */
    int peak_materialized;        /* peak_layout is the peak */
    fsc__u64map_t peak_delta;     /* addr → index+1 in peak_imgs */
    fsc__imgvec_t peak_imgs;
    fsc__imgvec_t peak_layout;

    fsc__frag_state_t frag;       /* frag_classes.c */
} fsc__replay_t;

/* ---- replay.c ---------------------------------------------------------- */
void fsc__replay_init(fsc__replay_t *r);
void fsc__replay_free(fsc__replay_t *r);
/* Apply event number r->seq. Returns 0 with *out filled (applied or
 * skipped), or a negative FSC_E* with r->err set. */
int fsc__replay_apply(fsc__replay_t *r, const fsc_event_t *ev, fsc__outcome_t *out);
void fsc__replay_end(fsc__replay_t *r); /* the stream is over */
/* Whether an event of this type continues the allocator step of the last
 * one (SPLIT → ALLOC, FREE_COMPLETED → MERGE → MERGE). */
int fsc__step_continues(const fsc__replay_t *r, int type);
/* The block at addr, or NULL. */
fsc__blk_t *fsc__replay_block(const fsc__replay_t *r, uint64_t addr);
/* The row of a live block. */
void fsc__brow_of(const fsc__blk_t *b, fsc__brow_t *row);

/* ---- heap.c ------------------------------------------------------------ */
int fsc__heap_push(fsc__heap_t *h, fsc__blk_t *b);
void fsc__heap_remove(fsc__heap_t *h, fsc__blk_t *b);
/* The block changed size while in the heap. */
void fsc__heap_update(fsc__heap_t *h, fsc__blk_t *b, uint64_t old_size);
void fsc__heap_free(fsc__heap_t *h);
/* Largest free block of a pool (-1 = either). */
uint64_t fsc__largest_free(const fsc__replay_t *r, int pool);

/* ---- layout.c ---------------------------------------------------------- */
/* Before a block is changed, created (b->addr set, not yet in the map) or
 * destroyed. `existed` = it was part of the layout before this change. */
int fsc__peak_touch(fsc__replay_t *r, const fsc__blk_t *b, int existed);
void fsc__peak_new(fsc__replay_t *r);   /* allocated reached a new maximum */
int fsc__peak_materialize(fsc__replay_t *r);
int fsc__layout_current(fsc__replay_t *r, fsc__imgvec_t *out);
int fsc__imgvec_push(fsc__imgvec_t *v, const fsc__img_t *img);
void fsc__imgvec_free(fsc__imgvec_t *v);

#endif
