/*
 * model.h — what the report shows, loaded from a run database (internal).
 *
 * fsc__model_load reads the bounded tables of docs/schema.md (summary, meta,
 * timeline, markers, OOM diagnosis, bins, tag_stats, layouts) into plain
 * arrays, with generous caps; the emitter then applies the tighter caps of
 * the current size level. Tables other than meta and summary are optional:
 * a database without them gives empty views, not an error.
 */
#ifndef FSC_VIEWER_MODEL_H
#define FSC_VIEWER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/common.h"
#include "fragscope/rundb.h"

/* Hard caps on what is loaded (the emitter embeds at most this much). */
#define FSC__V_MAX_TIMELINE 20000 /* longer timelines are folded while read */
#define FSC__V_MAX_MARKERS 20000  /* more markers are thinned evenly */
#define FSC__V_MAX_OOMS 1000
#define FSC__V_MAX_OOM_DETAIL 16 /* OOMs loaded with segments, pins and tags */
#define FSC__V_MAX_LAYOUTS 9      /* the peak and the first 8 OOM layouts */
#define FSC__V_MAX_LAYOUT_BLOCKS 1000000 /* over all layouts loaded */
#define FSC__V_MAX_TAG_ROWS 200
/* Characters of text loaded: one more than the page ever shows, so the
 * emitter still sees that a string was longer and marks the cut. */
#define FSC__V_STR_CHARS 200   /* tag paths (their tail), markers, config */
#define FSC__V_TEXT_CHARS 1500 /* OOM explanations */

typedef struct fsc__vkv {
    char *key;
    char *text;      /* TEXT value, or NULL for a number */
    double num;
    int is_int;
    int64_t i;
} fsc__vkv_t;

typedef struct fsc__vsample {
    int64_t t, t_last, seq, seq_last;
    int64_t allocated, requested, reserved, internal, rbu;
    double external;
    double external_max; /* largest at a step boundary in the bucket; -1 = unknown */
} fsc__vsample_t;

typedef struct fsc__vmarker {
    int64_t t, seq;
    char *text;
} fsc__vmarker_t;

typedef struct fsc__vpin {
    int64_t addr, size, requested, age_events, age_ns, tag;
    int pending;
} fsc__vpin_t;

typedef struct fsc__vooseg {
    int64_t addr, size, free, largest_free, free_blocks, live_blocks, live_bytes;
    fsc__vpin_t *pins;
    size_t npins;
} fsc__vooseg_t;

typedef struct fsc__vtagrow {
    int64_t tag, bytes, blocks;
} fsc__vtagrow_t;

typedef struct fsc__vsugg {
    char *config, *note;
    int64_t needed_capacity; /* -1 = not searched */
    int avoids;
} fsc__vsugg_t;

typedef struct fsc__voom {
    int64_t id, seq, t, requested, rounded, pool, tag, allocated, reserved, capacity;
    int capacity_inferred;
    int64_t cap_lo, cap_hi;       /* -1 = unknown */
    int64_t device_free;          /* -1 = unknown */
    int64_t free_reserved, largest_free;
    char *cause, *explanation;
    int64_t layout_snapshot;      /* -1 = none */
    fsc__vooseg_t *segs;
    size_t nsegs;
    fsc__vtagrow_t *tags;
    size_t ntags;
    fsc__vsugg_t *suggs;
    size_t nsuggs;
} fsc__voom_t;

typedef struct fsc__vbin {
    int64_t bin, lo, hi, requests, requested, allocated, waste, hits, misses, splits, merges;
    int64_t peak_blocks, peak_bytes, live_bytes_at_peak, free_bytes_at_peak;
} fsc__vbin_t;

enum { FSC__BLK_FREE = 0, FSC__BLK_ALLOC = 1, FSC__BLK_PENDING = 2 };

typedef struct fsc__vblock {
    int64_t addr, size, requested, tag, age_events, age_ns; /* tag/ages -1 for free */
    int state, pool;
} fsc__vblock_t;

typedef struct fsc__vlayout {
    int64_t id, seq, t, oom_id; /* oom_id -1 for the peak */
    int64_t allocated, reserved;
    char kind[32];
    fsc__vblock_t *blocks;      /* ordered by segment, then address */
    int64_t *block_seg;         /* segment base of each block */
    size_t nblocks;
    int truncated;              /* rows left unread: FSC__V_MAX_LAYOUT_BLOCKS reached */
} fsc__vlayout_t;

typedef struct fsc__vtag {
    int64_t id;
    char *path;
    /* What report calls it (fsc_rundb_tag_label, depth 2) and its call
     * sites (fsc_rundb_tag_site: the allocating line, the first frame in the
     * program's own code; mine_found 0 when that fell back to the line). */
    char *label, *site, *mine;
    int mine_found;
    int site_is_path; /* site (and mine) read as the path: plain tags */
} fsc__vtag_t;

struct fsc__vstate; /* state.h */

typedef struct fsc__model {
    char *db_name;          /* file name of the database (for the footer) */
    fsc__vkv_t *meta, *summary;
    size_t nmeta, nsummary;
    fsc__vsample_t *timeline;
    size_t ntimeline;
    int64_t bucket_events;
    fsc__vmarker_t *markers;
    size_t nmarkers;
    int64_t markers_total;
    fsc__voom_t *ooms;
    size_t nooms;
    int64_t ooms_total;
    fsc__vbin_t *bins;
    size_t nbins;
    fsc__vtagrow_t *top_tags, *leaks;
    size_t ntop_tags, nleaks;
    fsc__vlayout_t *layouts; /* [0] is the peak when present */
    size_t nlayouts;
    fsc__vtag_t *tags;       /* only the tags referenced above, sorted by id */
    size_t ntags;
    struct fsc__vstate *state; /* the state at any event and the bands (state.h) */
    struct fsc__vsplit *split; /* where reserved − allocated sits (split_view.h) */
    size_t nsplit;
    /* For the verdict (model.c): the lines of code holding the most at the
     * first OOM (at the allocated peak when there is none), their total and
     * the event; what is still live at the end, split at the first step
     * (step_why says what stood for the first step). */
    fsc_rundb_site_t *vsites;
    size_t nvsites;
    int64_t vsites_total, vsites_seq;
    fsc_rundb_end_split_t end;
    char step_why[160];
    /* imported snapshots: the replay's own events, so that every other
     * event names its device_traces entry (fsc_rundb_trace_derived) */
    /* reserved per private pool (the 8 largest) at each timeline sample,
     * the most in the sample's events: npools × ntimeline */
    int64_t *pool_ids, *pool_res;
    size_t npools, pools_dropped;
    int trace_ok;
    int64_t trace_device;
    int64_t *trace_derived;
    size_t ntrace_derived;
} fsc__model_t;

/* The device_traces index of event seq, or -1 when unknown or the event is
 * one of the replay's own (a split or merge). */
int64_t fsc__model_trace_entry(const fsc__model_t *m, int64_t seq);

/* Open db_path with the run database reader (which checks it) and load the
 * model. Errors name the file (see fsc_view_render in viewer.h). */
int fsc__model_load(const char *db_path, fsc__model_t *m, fsc_err_t *err);
/* The same with the number of allocations drawn as bands (0 = default). */
int fsc__model_load_opts(const char *db_path, size_t bands, fsc__model_t *m, fsc_err_t *err);
/* The same for one run of a job database (run < 0: the run selected when
 * the database is opened, its lowest). */
int fsc__model_load_run(const char *db_path, int64_t run, size_t bands, fsc__model_t *m,
                        fsc_err_t *err);
void fsc__model_free_state(struct fsc__vstate *s);
void fsc__model_free(fsc__model_t *m);

/* Lookups in meta / summary; NULL when absent. */
const fsc__vkv_t *fsc__model_meta(const fsc__model_t *m, const char *key);
const fsc__vkv_t *fsc__model_sum(const fsc__model_t *m, const char *key);
/* Integer value of a summary/meta key, or dflt when absent or not a number. */
int64_t fsc__model_sum_i(const fsc__model_t *m, const char *key, int64_t dflt);
double fsc__model_sum_d(const fsc__model_t *m, const char *key, double dflt);
int64_t fsc__model_meta_i(const fsc__model_t *m, const char *key, int64_t dflt);
/* Text of a meta key ("" when absent; numbers are formatted). */
const char *fsc__model_meta_s(const fsc__model_t *m, const char *key, char *buf, size_t cap);
/* Path of a tag id ("" for the root, NULL when unknown). */
const char *fsc__model_tag_path(const fsc__model_t *m, int64_t id);
/* What report calls a tag (fsc__vtag_t.label); NULL when unknown. */
const char *fsc__model_tag_label(const fsc__model_t *m, int64_t id);

#endif
