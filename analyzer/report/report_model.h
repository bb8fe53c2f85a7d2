/*
 * report_model.h — the run report as one model read from the database
 * (report_load.c), so the text, Markdown and JSON printers (report.c) say
 * the same things. Internal to the analyzer.
 */
#ifndef FSC_ANALYZER_REPORT_MODEL_H
#define FSC_ANALYZER_REPORT_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "fragscope/rundb.h"

#define MAX_SUM 96
#define TOP_N 10

typedef struct rep_sum {
    char key[64], unit[8];
    double v;
    int is_real;
} rep_sum_t;

#define REP_SEGS 3
#define REP_PINS 3
#define REP_OOMS_DETAILED 16 /* OOMs whose segments are read */

/* A segment holding free space at an OOM and the live blocks pinning it. */
typedef struct rep_pin {
    int64_t addr, size, age_events, age_ns;
    char tag[256];     /* what the report calls its tag (fsc_rundb_tag_label) */
    char context[256]; /* compile_context / user_metadata of its allocation */
} rep_pin_t;

typedef struct rep_seg {
    int64_t segment, size, free_bytes, largest_free, live_blocks, live_bytes;
    rep_pin_t pins[REP_PINS];
    int npins;
} rep_seg_t;

/* reserved − allocated split into classes at one moment (report_frag.c). */
typedef struct rep_cls {
    int valid;
    int64_t seq, ask, reserved, allocated, gap, soft, hard, stream, private_pool, pending;
} rep_cls_t;

#define REP_HARD_TAGS 5
#define REP_HARD_BLOCKS 3

typedef struct rep_hard_tag {
    char tag[256];
    int64_t hard, blocks, bytes;
    int64_t id; /* tags.id */
} rep_hard_tag_t;

typedef struct rep_hard_block {
    char tag[256];
    int64_t addr, size, hard, age_events;
    int pending;
} rep_hard_block_t;

typedef struct rep_frag {
    rep_cls_t pool[3]; /* small, large, all */
    rep_hard_tag_t tags[REP_HARD_TAGS];
    int ntags;
    rep_hard_block_t blocks[REP_HARD_BLOCKS];
    int nblocks;
} rep_frag_t;

typedef struct rep_oom {
    int64_t id, seq, requested, rounded, allocated, reserved, capacity, lower, upper;
    int64_t free_in_reserved, largest_free, largest_usable;
    int inferred;
    double ext;
    /* memory outside the allocator, device_total − device_free − reserved
     * (-1 = unknown) */
    int64_t external;
    char cause[24];
    char *explanation;
    char top_tag[4096];
    int64_t top_tag_bytes;
    char site[1024];    /* the OOM's own call site (its tag) */
    char context[256];  /* compile_context / user_metadata of the failing request */
    int64_t device_free, device_total, segment_size; /* FSC_RUNDB_NULL = unknown */
    char *fixes; /* configs that would have avoided it, "; "-separated (what-if) */
    /* the first REP_FIX_NOTES of them with their notes (the verdict) */
#define REP_FIX_NOTES 3
    char fix_cfg[REP_FIX_NOTES][256], fix_note[REP_FIX_NOTES][640];
    int nfix;
    rep_seg_t segs[REP_SEGS];
    int nsegs;
    rep_frag_t frag;
} rep_oom_t;

typedef struct rep_bin {
    int64_t bin, lo, hi, requests, requested, allocated, waste, hits, misses, splits, merges;
    int64_t peak_blocks, peak_bytes, free_at_peak;
    double hit_rate;
} rep_bin_t;

typedef struct rep_tag {
    char path[4096]; /* what the report calls the tag (fsc_rundb_tag_label) */
    int64_t tag, bytes, blocks;
} rep_tag_t;

/* report_pools.c: one pool's peaks and fragmentation. */
typedef struct rep_pool {
    int64_t id; /* 0 default, else PyTorch's (a, b) as a << 32 | b */
    int64_t segments, segments_end, peak_reserved, final_reserved, peak_allocated,
        final_allocated, free_at_peak, largest_free_at_peak;
} rep_pool_t;

/* report_window.c: a run that began mid-run (a ring snapshot). */
#define REP_WINDOW_LISTED 8
typedef struct rep_window {
    int on, have_record;
    /* No recorded history at all (a snapshot whose device_traces are empty,
     * or a list of segments): the rebuilt state is the whole run, and every
     * figure is the state at the moment of the snapshot. */
    int no_history;
    int64_t first_seq, start_reserved, start_allocated;
    uint64_t entries, first_time_us, segments, blocks, guessed, settled, uncertain;
    uint64_t listed[REP_WINDOW_LISTED];
    size_t nlisted;
} rep_window_t;

/* report_sites.c: live bytes by line of code at one moment. */
#define REP_SITES_SHOWN 10
#define REP_MINE_SHOWN 5
typedef struct rep_sites {
    const char *what; /* "the allocated peak" or "OOM #N" */
    int64_t seq, oom_id, total, blocks; /* oom_id -1 for the peak */
    fsc_rundb_site_t *line, *mine;      /* every site, most bytes first */
    size_t nline, nmine;
} rep_sites_t;

typedef struct rep {
    const char *db_path;
    const char *run_label; /* the run of a job database this is about; NULL: say nothing */
    char producer[256], config[512], backend[256], source[1024];
    int64_t capacity, device_total, warnings;
    int64_t device_samples, external_max, external_max_seq; /* report_external.c; -1 = none */
    int capacity_inferred;
    int64_t run_complete; /* meta.run_complete: 0 = the recording ended at an OOM, -1 unknown */
    rep_sum_t sum[MAX_SUM];
    int nsum;
    rep_oom_t *ooms;
    int nooms;
    rep_bin_t bins[64];
    int nbins;
    rep_tag_t peak_tags[TOP_N], leaks[TOP_N];
    int npeak_tags, nleaks;
    rep_frag_t at_peak, at_peak_reserved;
    int all_frames; /* name tags without the frame filter */
    /* imported snapshots: entries skipped, kept but not understood */
    int64_t import_warnings, unknown_actions, unknown_keys, import_devices;
    char not_understood[512];
    /* native traces: recorded entries the recorder left out (meta
     * recorder.skipped*, from the trace's SKIPPED record), by kind */
    int64_t rec_skipped;
    char rec_skipped_text[1024], rec_skipped_first[2048];
    struct {
        char kind[32];
        int64_t n;
    } rec_skipped_kind[16];
    int nrec_skipped_kind;
    /* settings of the run fragscope does not model (meta settings.not_modelled) */
    char settings_not_modelled[256];
    char keys_not_modelled[512]; /* meta import.keys_not_modelled */
    char torch_inferred[256];    /* meta import.torch_inferred */
    rep_pool_t *pools; /* report_pools.c: none when the run has no private pool */
    int npools;
    rep_window_t window;
    rep_sites_t *sites; /* [0] the allocated peak, then the first detailed OOMs */
    int nsites;
} rep_t;

/* Read the report of db into r. */
int fsc__report_load(fsc_rundb_t *db, rep_t *r, fsc_err_t *err);
void fsc__report_free(rep_t *r);

/* The innermost part of a tag path, about `keep` bytes, into buf. */
const char *fsc__report_tail(const char *path, size_t keep, char *buf, size_t cap);

/* report_frag.c: the split of reserved − allocated, read and printed. */
int fsc__report_load_frag(fsc_rundb_t *db, rep_t *r);
void fsc__report_frag_text(const rep_t *r, FILE *f);
void fsc__report_frag_oom_text(const rep_oom_t *o, FILE *f);

/* report_external.c: the device's memory outside the allocator at an OOM. */
void fsc__report_external_fill(rep_oom_t *o);
struct cJSON;
/* The run's DEVICE_MEMORY samples: read from meta, printed under memory. */
int fsc__report_external_load(rep_t *r, fsc_rundb_t *db);
void fsc__report_external_run_text(const rep_t *r, FILE *f);
void fsc__report_external_run_markdown(const rep_t *r, FILE *f);
void fsc__report_external_run_json(const rep_t *r, struct cJSON *meta);
void fsc__report_external_json(const rep_oom_t *o, struct cJSON *j);

/* report_sites.c: live bytes by line of code at the peak and each OOM. */
int fsc__report_sites_load(fsc_rundb_t *db, rep_t *r);
void fsc__report_sites_free(rep_t *r);
void fsc__report_sites_text(const rep_t *r, FILE *f);
void fsc__report_sites_markdown(const rep_t *r, FILE *f);
void fsc__report_sites_json(const rep_t *r, struct cJSON *root);

/* report_window.c */
int fsc__report_window_load(fsc_rundb_t *db, rep_t *r);
void fsc__report_window_text(const rep_t *r, FILE *f);
void fsc__report_window_markdown(const rep_t *r, FILE *f);
void fsc__report_window_json(const rep_t *r, struct cJSON *root);

void fsc__report_frag_markdown(const rep_t *r, FILE *f);
/* report_pools.c: peaks and fragmentation per pool. */
int fsc__report_pools_load(fsc_rundb_t *db, rep_t *r);
void fsc__report_pools_free(rep_t *r);
void fsc__report_pools_text(const rep_t *r, FILE *f);
void fsc__report_pools_markdown(const rep_t *r, FILE *f);
void fsc__report_pools_json(const rep_t *r, struct cJSON *root);
struct cJSON;
/* Add the keys of a split (reserved_unallocated_bytes, soft_bytes, ...) to obj. */
void fsc__report_frag_json(const rep_frag_t *x, struct cJSON *obj);

#endif
