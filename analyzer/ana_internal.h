/*
 * ana_internal.h — the analyzer's replay state, shared by the files of
 * analyzer/ and by nobody else.
 *
 * The replayed layout mirrors the allocator's: segments partitioned into
 * blocks kept in address order (a doubly linked list per segment), every
 * block findable by address (u64map), free blocks in one max-heap per pool
 * so the largest free block is O(1). Figures that every timeline sample
 * needs (allocated, reserved, free bytes, inactive split) are maintained
 * incrementally; everything else is derived at an OOM, at the peak and at
 * the end.
 */
#ifndef FSC_ANALYZER_INTERNAL_H
#define FSC_ANALYZER_INTERNAL_H

#include <sqlite3.h>
#include <stdint.h>

#include "fragscope/analyzer.h"
#include "fsc/slab.h"
#include "fsc/u64map.h"
#include "frag_classes.h"

enum { FSC__FREE = 0, FSC__ALLOCATED = 1, FSC__PENDING = 2 };

#define FSC__NBINS 48         /* 512 B · 2^47 covers any 64-bit size */
#define FSC__OOM_LAYOUTS 64   /* OOMs that get a full layout snapshot */
#define FSC__MAX_WARNINGS_STORED 1000

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

typedef struct fsc__bucket {
    uint64_t seq_first, seq_last, time_first, time_last;
    uint64_t allocated, requested, active, reserved, internal;
    uint64_t free_in_reserved, largest_free, inactive_split_bytes;
    uint64_t segments, live_blocks;
    uint64_t alloc_min, alloc_max, alloc_max_seq;
    uint64_t res_min, res_max, res_max_seq;
    uint64_t resunalloc_max;
    double ext_max;       /* largest external fragmentation at a step boundary */
    uint64_t ext_max_seq; /* its event */
    int has_ext;
    fsc__frag_sample_t frag;
    uint64_t n; /* events in it */
} fsc__bucket_t;

typedef struct fsc__timeline {
    fsc__bucket_t *rows;
    size_t n, cap;       /* cap = most rows (even) */
    uint64_t width;      /* events per bucket */
    fsc__bucket_t cur;
} fsc__timeline_t;

typedef struct fsc__bin {
    uint64_t requests, requested_bytes, allocated_bytes;
    uint64_t hits, misses, splits, merges;
    uint64_t live_blocks, live_bytes, peak_live_blocks, peak_live_bytes;
} fsc__bin_t;

typedef struct fsc__tag {
    uint32_t parent;
    uint8_t defined;
    char *path;          /* malloc'd; "" for the root */
    uint64_t allocs, alloc_bytes;
    uint64_t live_blocks, live_bytes;
} fsc__tag_t;

/* One row of table blocks: an allocation's lifetime plus the SPLIT that
 * carved it and the MERGEs that followed its free (see db.c). */
typedef struct fsc__brow {
    uint64_t alloc_seq, alloc_time, addr, size, requested, stream, segment;
    uint64_t freereq_seq, freereq_time, fc_seq, fc_time;
    uint64_t split_size, split_time;
    uint64_t m_addr[2], m_size[2], m_other[2], m_time[2];
    uint32_t tag, free_tag;
    uint8_t pool, cache_hit, freed, completed, nmerges, valid;
} fsc__brow_t;

/* A SPLIT waiting for the next event: folded into the ALLOC it serves. */
typedef struct fsc__pending_split {
    fsc_event_t ev;
    uint64_t seq;
    int valid;
} fsc__pending_split_t;

/* One row for the writer (writer.c): a block, a segment or another event. */
typedef struct fsc__segrow {
    fsc__seg_t seg;
    uint64_t freed_seq, freed_time;
    int freed;
} fsc__segrow_t;

enum { FSC__OP_BLOCK = 1, FSC__OP_SEGMENT = 2, FSC__OP_OTHER = 3 };

typedef struct fsc__op {
    int kind;
    union {
        fsc__brow_t row;
        fsc__segrow_t seg;
        struct {
            fsc_event_t ev;
            uint64_t seq;
        } other;
    } u;
} fsc__op_t;

typedef struct fsc__writer fsc__writer_t;

typedef struct fsc__kv {
    struct fsc__kv *next;
    char *key;
    char *text;          /* NULL: integer */
    int64_t ival;
} fsc__kv_t;

/* Prepared statements, all used inside the one transaction. */
enum {
    FSC__ST_OTHER, FSC__ST_BLOCK, FSC__ST_SEGMENT, FSC__ST_TAG, FSC__ST_MARKER,
    FSC__ST_WARNING, FSC__ST_META, FSC__ST_SUMMARY, FSC__ST_TIMELINE, FSC__ST_OOM,
    FSC__ST_OOM_SEG, FSC__ST_OOM_PIN, FSC__ST_OOM_TAG, FSC__ST_SNAP, FSC__ST_LAYOUT,
    FSC__ST_BIN, FSC__ST_TAGSTAT,
    FSC__ST_COUNT
};

struct fsc_analysis {
    fsc_err_t err;
    int failed, finished;
    fsc_analysis_opts_t opts;
    fsc_outfile_t out;
    sqlite3 *db;
    sqlite3_stmt *st[FSC__ST_COUNT];
    fsc__writer_t *writer;        /* thread writing the bulk rows, or NULL */

    /* run facts */
    char *producer, *config, *backend, *source_path, *source_kind;
    fsc_trace_header_t hdr;
    int capacity_unknown;
    int ring;                     /* ring trace: replayed leniently */

    /* replay state */
    uint64_t seq;                 /* seq of the event being replayed */
    uint64_t first_time, max_time; /* smallest and largest event time */
    uint64_t last_time;            /* time of the event being replayed */
    fsc__u64map_t blocks;         /* addr → fsc__blk_t* */
    fsc__u64map_t segs;           /* base → fsc__seg_t* */
    fsc__seg_t **seg_sorted;      /* live segments by base */
    size_t nseg, seg_cap;
    fsc__heap_t heap[2];          /* free blocks per pool */
    fsc__slab_t blk_slab;         /* block structs */

    uint64_t allocated, requested, active, reserved;
    uint64_t internal;            /* Σ size − requested over allocated blocks */
    uint64_t live_blocks;
    uint64_t inactive_split_bytes, inactive_split_blocks;
    uint64_t peak_allocated, peak_allocated_seq, peak_allocated_time;
    uint64_t peak_reserved, peak_reserved_seq, peak_reserved_time;
    uint64_t peak_active, peak_requested, peak_internal, peak_resunalloc;
    uint64_t peak_inactive_split, peak_segments;
    uint64_t inactive_split_pending;  /* value after the last event */
    int last_type;                    /* type of the last applied event */
    uint64_t pending_miss_seg;    /* segment just created, 0 = none */
    int last_free_bin;            /* bin of the last FREE_COMPLETED, -1 */

    /* counters */
    uint64_t type_count[FSC_EV__COUNT];
    uint64_t segments_created, segments_freed;
    uint64_t hits, misses;
    uint64_t warnings;
    uint64_t num_ooms;
    int first_oom_cause;

    fsc__bin_t bins[FSC__NBINS];
    int max_bin;
    fsc__tag_t *tags;
    size_t ntags;                 /* entries allocated in tags[] */

    fsc__timeline_t tl;
    fsc__frag_state_t frag;       /* frag_classes.c */

    /* Layout at the allocated peak: after a new peak, the first change to
     * each block records its before-image (peak_delta), so the peak layout
     * is the current layout with those images put back. When the delta
     * grows past the live set it is materialized into peak_layout. */
    int peak_tracking;            /* delta being recorded */
    int peak_materialized;        /* peak_layout is the peak */
    fsc__u64map_t peak_delta;     /* addr → index+1 in peak_imgs */
    fsc__imgvec_t peak_imgs;
    fsc__imgvec_t peak_layout;

    fsc__kv_t *meta;
    uint64_t snapshots;           /* layout_snapshots rows written */

    /* Row folding (db.c): the bulk of SPLIT and MERGE events live in the
     * blocks row they belong to instead of rows of their own. */
    fsc__pending_split_t split_pending;
    fsc__brow_t row_pending;      /* freed block, waiting for its MERGEs */
};

/* ---- replay.c ---------------------------------------------------------- */
int fsc__replay_apply(fsc_analysis_t *a, const fsc_event_t *ev, int *applied);
void fsc__replay_free(fsc_analysis_t *a);
void fsc__replay_end(fsc_analysis_t *a); /* the stream is over */
/* Whether an event of this type continues the allocator step of the last
 * one (SPLIT → ALLOC, FREE_COMPLETED → MERGE → MERGE). */
int fsc__step_continues(const fsc_analysis_t *a, int type);
int fsc__bin_of(uint64_t size);
uint64_t fsc__largest_free(const fsc_analysis_t *a, int pool); /* pool -1 = all */

/* ---- heap.c ------------------------------------------------------------ */
int fsc__heap_push(fsc__heap_t *h, fsc__blk_t *b);
void fsc__heap_remove(fsc__heap_t *h, fsc__blk_t *b);
/* The block changed size while in the heap. */
void fsc__heap_update(fsc__heap_t *h, fsc__blk_t *b, uint64_t old_size);
void fsc__heap_free(fsc__heap_t *h);

/* ---- layout.c ---------------------------------------------------------- */
/* Before a block is changed, created (b->addr set, not yet in the map) or
 * destroyed. `existed` = it was part of the layout before this change. */
int fsc__peak_touch(fsc_analysis_t *a, const fsc__blk_t *b, int existed);
void fsc__peak_new(fsc_analysis_t *a);   /* allocated reached a new maximum */
int fsc__peak_materialize(fsc_analysis_t *a);
int fsc__layout_current(fsc_analysis_t *a, fsc__imgvec_t *out);
int fsc__imgvec_push(fsc__imgvec_t *v, const fsc__img_t *img);
void fsc__imgvec_free(fsc__imgvec_t *v);
/* Write a layout_snapshots row and its layout rows; *id gets the id. */
int fsc__layout_write(fsc_analysis_t *a, const char *kind, uint64_t seq, uint64_t time,
                      int64_t oom_id, uint64_t allocated, uint64_t reserved,
                      const fsc__imgvec_t *v, uint64_t *id);

/* ---- timeline.c -------------------------------------------------------- */
int fsc__timeline_init(fsc__timeline_t *t, uint32_t samples);
/* Before an event is applied: close a full bucket at a step boundary. */
void fsc__timeline_before(fsc_analysis_t *a, int type);
void fsc__timeline_event(fsc_analysis_t *a, uint64_t time);
int fsc__timeline_write(fsc_analysis_t *a);
void fsc__timeline_free(fsc__timeline_t *t);

/* ---- oom.c ------------------------------------------------------------- */
int fsc__oom_diagnose(fsc_analysis_t *a, const fsc_event_t *ev);

/* ---- db.c, fold.c ------------------------------------------------------ */
int fsc__db_open(fsc_analysis_t *a);
void fsc__db_close(fsc_analysis_t *a);
int fsc__db_err(fsc_analysis_t *a, const char *what);
/* Bind helpers: value or NULL. */
void fsc__bind_u64(sqlite3_stmt *s, int i, uint64_t v);
void fsc__bind_opt(sqlite3_stmt *s, int i, int present, uint64_t v);
int fsc__step(fsc_analysis_t *a, sqlite3_stmt *s, const char *what);
void fsc__brow_of(const fsc__blk_t *b, fsc__brow_t *r);
int fsc__db_block_row(fsc_analysis_t *a, const fsc__brow_t *r);
/* Route one applied (or skipped) event to the database, folding SPLIT and
 * MERGE events into block rows where that is exact. */
int fsc__db_event(fsc_analysis_t *a, const fsc_event_t *ev, int applied);
int fsc__db_flush_pending(fsc_analysis_t *a);
int fsc__db_other_row(fsc_analysis_t *a, const fsc_event_t *ev, uint64_t seq);
/* Bind and step one bulk row on its statement; returns SQLite's code. */
int fsc__db_exec_op(sqlite3_stmt *const *st, const fsc__op_t *op);
const char *fsc__op_table(int kind);
/* Before an event is applied: write what it cannot fold into. */
int fsc__db_before(fsc_analysis_t *a, const fsc_event_t *ev);
int fsc__db_segment_row(fsc_analysis_t *a, const fsc__seg_t *s, int freed,
                        uint64_t freed_seq, uint64_t freed_time);

/* ---- finish.c ---------------------------------------------------------- */
int fsc__finish_tables(fsc_analysis_t *a, fsc_analysis_summary_t *sum);

/* ---- util -------------------------------------------------------------- */
int fsc__warn_or_fail(fsc_analysis_t *a, const fsc_event_t *ev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int fsc__tag_ensure(fsc_analysis_t *a, uint32_t tag);
double fsc__ratio(uint64_t num, uint64_t den);

#endif
