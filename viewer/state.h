/*
 * state.h — the allocator state at any event, and the allocations drawn as
 * bands over time (internal to the viewer).
 *
 * The page cannot carry every event of a long run, so it carries exact
 * windows: each window starts at a keyframe (the blocks and segments live
 * there) and holds every change up to its end (each allocation, free
 * request and free completion, as the lifetimes of the blocks involved).
 * Any event inside a window is rebuilt exactly; one outside is shown at the
 * nearest window edge, and the page says so. When every lifetime of the run
 * fits the budget, one window covers the whole run.
 *
 * Windows are kept in priority order (the allocated peak, the OOMs, then
 * evenly spread points in an order whose every prefix is spread evenly), so
 * a smaller size level keeps a prefix of them and the blocks they need
 * (each block records the windows it is live in, as a bit mask).
 *
 * The active memory timeline shows the largest allocations (by size times
 * lifetime in events) one band each, and the others summed per tag at
 * evenly spaced sample events.
 */
#ifndef FSC_VIEWER_STATE_H
#define FSC_VIEWER_STATE_H

#include <stddef.h>
#include <stdint.h>

#define FSC__VS_MAX_WINDOWS 48
#define FSC__VS_BLOCKS 36000      /* lifetimes carried for the state view at level 0 */
#define FSC__VS_BANDS_DEFAULT 2000 /* allocations drawn as their own band */
#define FSC__VS_BANDS_MAX 20000
#define FSC__VS_SAMPLES 2000      /* sample events of the summed bands */
#define FSC__VS_AGG_SLOTS 256     /* tags summed separately while reading */
#define FSC__VS_AGG_SHOWN 11      /* tags with a summed band of their own */
#define FSC__VS_MAX_SEGS 200000   /* segment lifetimes read */
#define FSC__VS_MAX_TREE 200000   /* tag tree nodes read */

typedef struct fsc__vlife {
    int64_t a, r, c;    /* seq of alloc, free request, free completion; -1 = never */
    int64_t ta, tr, tc; /* their times (-1 = never) */
    int64_t addr, size, requested, tag, stream, pool;
    int64_t seg;        /* index into segs; -1 when its segment is unknown */
    uint64_t mask;      /* the windows it is live in */
} fsc__vlife_t;

typedef struct fsc__vseg {
    int64_t addr, size, pool, stream, created, freed; /* freed -1 = never */
    int expandable;
    uint64_t mask;
} fsc__vseg_t;

typedef struct fsc__vtnode {
    int64_t id, parent; /* parent -1 for the root */
    char *name;
} fsc__vtnode_t;

typedef struct fsc__vwin {
    int64_t lo, hi;   /* events lo..hi inclusive are exact */
    int64_t center;
    char why[8];      /* "run", "peak", "oom", "even" */
} fsc__vwin_t;

typedef struct fsc__vstate {
    int64_t events;       /* events of the run (seq 0 .. events-1) */
    int64_t blocks_total; /* rows of the blocks table */
    int64_t segs_total;
    int exact_all;        /* one window covers the whole run */
    int segs_truncated;   /* more segments than FSC__VS_MAX_SEGS */
    fsc__vwin_t win[FSC__VS_MAX_WINDOWS];
    size_t nwin;
    fsc__vseg_t *segs;    /* every segment live in some window, by creation */
    size_t nsegs;
    fsc__vlife_t *blocks; /* every block live in some window, by alloc seq */
    size_t nblocks;
    fsc__vlife_t *top;    /* the band allocations, by alloc seq */
    size_t ntop, want_top;
    size_t nsamples;
    int64_t *sample_seq;  /* the summed bands' sample events */
    size_t nagg;
    int64_t *agg_tag;     /* tag of each summed band; -2 = all other tags */
    int64_t *agg;         /* nagg x nsamples live bytes */
    fsc__vtnode_t *tree;  /* the tag tree, by id (empty when too large) */
    size_t ntree;
} fsc__vstate_t;

/* Index of tag node id in s->tree (sorted by id), or -1. */
long fsc__vstate_tree_find(const fsc__vstate_t *s, int64_t id);

#endif
