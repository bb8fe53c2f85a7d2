/*
 * fragscope/rundb.h — the run database (`run.db`, layout in docs/schema.md):
 * its schema, the one reader of it, and what is built on that reader
 * (the run report, the CI check and the run-to-run diff).
 *
 * The schema is defined here once: the analyzer creates its tables from
 * fsc_rundb_schema(), and tests build their fixture databases from it.
 *
 * Every program part that reads a finished database (report, check, diff,
 * the HTML viewer, `whatif --db`) goes through fsc_rundb_open, so they all
 * accept and refuse the same files with the same errors:
 *
 *   missing file                         FSC_ENOENT   "PATH: No such file or directory"
 *   a directory, a device, ...           FSC_EFORMAT  "PATH: not a regular file"
 *   empty, not SQLite, no meta table,
 *   no schema_version                    FSC_EFORMAT  "PATH: not a fragscope run database (...)"
 *   a newer schema                       FSC_EVERSION "PATH: run database schema version N is
 *                                                      newer than this fragscope reads (1); ..."
 *   no summary table, a column missing,
 *   a damaged page                       FSC_EFORMAT  "PATH: damaged run database: ... (reading T)"
 *
 * Each message is one line naming the file. Tables other than meta and
 * summary are optional: an iterator over a missing table yields no rows.
 *
 * The reader hands out rows as plain structs whose fields are the table's
 * columns (docs/schema.md says what each means). An INTEGER column holding
 * SQL NULL reads as FSC_RUNDB_NULL, a REAL one as 0.0, a TEXT one as NULL.
 * Row pointers and their strings are valid only during the callback.
 *
 * A handle is used from one thread at a time.
 */
#ifndef FRAGSCOPE_RUNDB_H
#define FRAGSCOPE_RUNDB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fragscope/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the schema --------------------------------------------------------- */

/* meta.schema_version of the databases this fragscope writes; it reads
 * every version from 1 up to this one. */
#define FSC_RUNDB_SCHEMA_VERSION 2

/* The CREATE TABLE and CREATE VIEW statements of every table, ';'-separated,
 * ready for sqlite3_exec on an empty database (docs/schema.md documents
 * each column). Static storage. */
const char *fsc_rundb_schema(void);

/* The same for schema 1 (one run per file, no run column, no runs table),
 * for tests and tools that build schema-1 files; every reader reads them. */
const char *fsc_rundb_schema_v1(void);

/* ---- opening ------------------------------------------------------------ */

typedef struct fsc_rundb fsc_rundb_t;

/* Open the run database at path read-only and check it (see the top of this
 * file). On error *out is NULL and err holds the one-line message. */
int fsc_rundb_open(const char *path, fsc_rundb_t **out, fsc_err_t *err);

/* NULL is a no-op. */
void fsc_rundb_close(fsc_rundb_t *db);

/* The path given to fsc_rundb_open. */
const char *fsc_rundb_path(const fsc_rundb_t *db);

/* The last error of a reading function on db (its message names the file). */
const fsc_err_t *fsc_rundb_error(const fsc_rundb_t *db);

/* *out = 1 when the database has a table or view of that name. */
int fsc_rundb_has_table(fsc_rundb_t *db, const char *table, int *out);

/* *out = number of rows of table (0 when the table is missing). */
int fsc_rundb_count(fsc_rundb_t *db, const char *table, int64_t *out);

/* An INTEGER column that holds SQL NULL. */
#define FSC_RUNDB_NULL INT64_MIN

/* ---- runs --------------------------------------------------------------- */

/* A database holds one or more runs (one input stream of one device of one
 * process: a trace, or one device of a snapshot), numbered from 0 (table
 * runs, docs/schema.md). A schema-1 database is one run, run 0, described
 * from its meta table. */
typedef struct fsc_rundb_run {
    int64_t run;        /* runs.run */
    int64_t rank;       /* FSC_RUNDB_NULL when unknown */
    int64_t device;     /* FSC_RUNDB_NULL when unknown */
    int64_t pid;        /* FSC_RUNDB_NULL when unknown */
    const char *host;   /* NULL when unknown */
    const char *source; /* the input file as given to analyze */
    const char *kind;   /* "trace", "snapshot" or "simulation" */
} fsc_rundb_run_t;

/* *out = number of runs (1 for a schema-1 database). */
int fsc_rundb_run_count(fsc_rundb_t *db, int64_t *out);

/* Calls cb for every run in run order; cb returns as for the other
 * iterators (0, FSC_RUNDB_STOP or a negative code). The runs are read
 * before the first call, so cb may select a run. */
int fsc_rundb_each_run(fsc_rundb_t *db, int (*cb)(const fsc_rundb_run_t *run, void *ctx),
                       void *ctx);

/* Scope every other reader function on db (every iterator, fsc_rundb_count,
 * has_table, the single values) to one run: afterwards the database reads
 * as if it held only that run. fsc_rundb_open selects the lowest run, so
 * code written for one run works unchanged. FSC_ENOENT with a message
 * naming the file when there is no such run. */
int fsc_rundb_select_run(fsc_rundb_t *db, int64_t run);
int64_t fsc_rundb_selected_run(const fsc_rundb_t *db);

/* "rank 3 (device 0, host node17)", or "run 2 (trace a.fstrace)" when the
 * rank is unknown: the words every message about one run uses. Returns
 * buf. */
const char *fsc_rundb_run_label(const fsc_rundb_run_t *run, char *buf, size_t n);

/* The rank a file name says (docs/jobs.md): "rank3", "rank_3", "rank-3"
 * (any case) or ".r3." in its last component. 1 and *rank when it says
 * one, else 0. */
int fsc_rundb_rank_from_name(const char *path, int64_t *rank);

/* ---- rows --------------------------------------------------------------- */

/* What a row callback returns: 0 for the next row, FSC_RUNDB_STOP to end the
 * iteration early (the iterator then returns 0), or a negative FSC_E* code,
 * which the iterator returns as it is. The iterators return 0 or a negative
 * FSC_E* code of their own (message in fsc_rundb_error). */
#define FSC_RUNDB_STOP 1

typedef enum fsc_rundb_type {
    FSC_RUNDB_T_NULL = 0,
    FSC_RUNDB_T_INT = 1,
    FSC_RUNDB_T_REAL = 2,
    FSC_RUNDB_T_TEXT = 3 /* TEXT, or a BLOB read as text */
} fsc_rundb_type_t;

/* A row of meta or summary: the value as SQLite stored it (type), and as
 * SQLite converts it to an integer and a real. */
typedef struct fsc_rundb_kv {
    const char *key;  /* NULL only in a damaged file */
    fsc_rundb_type_t type;
    int64_t i;
    double d;
    const char *text; /* type FSC_RUNDB_T_TEXT, else NULL */
    const char *unit; /* summary.unit; NULL for meta */
} fsc_rundb_kv_t;

typedef struct fsc_rundb_timeline {
    int64_t id, seq_first, seq_last, time_first_ns, time_last_ns;
    int64_t allocated, requested, active, reserved, internal_frag;
    double internal_frag_ratio;
    int64_t free_in_reserved, largest_free;
    double external_frag;
    int64_t reserved_unallocated, inactive_split_bytes, segments, live_blocks;
    int64_t allocated_min, allocated_max, allocated_max_seq;
    int64_t reserved_min, reserved_max, reserved_max_seq, reserved_unallocated_max;
} fsc_rundb_timeline_t;

typedef struct fsc_rundb_marker {
    int64_t seq, time_ns;
    const char *text;
} fsc_rundb_marker_t;

typedef struct fsc_rundb_oom {
    int64_t id, seq, time_ns, requested, rounded, stream, pool, tag;
    int64_t allocated, reserved, capacity, capacity_inferred;
    int64_t capacity_lower, capacity_upper, segment_size, device_free, device_total;
    int64_t free_in_reserved, largest_free, largest_free_usable;
    double external_frag;
    const char *cause, *explanation;
    int64_t layout_snapshot;
} fsc_rundb_oom_t;

typedef struct fsc_rundb_oom_segment {
    int64_t oom_id, rank, segment, size, pool, stream;
    int64_t free_bytes, largest_free, free_blocks, live_blocks, live_bytes;
} fsc_rundb_oom_segment_t;

typedef struct fsc_rundb_pin { /* a row of oom_pinning_blocks */
    int64_t oom_id, segment, addr, size, requested;
    const char *state;
    int64_t alloc_seq, age_events, age_ns, tag;
} fsc_rundb_pin_t;

typedef struct fsc_rundb_oom_tag {
    int64_t oom_id, rank, tag, live_bytes, live_blocks;
} fsc_rundb_oom_tag_t;

typedef struct fsc_rundb_suggestion {
    int64_t oom_id;
    const char *config;
    int64_t capacity, needed_capacity, avoids_oom, peak_reserved, peak_allocated;
    const char *note;
} fsc_rundb_suggestion_t;

typedef struct fsc_rundb_bin {
    int64_t bin, lo, hi, requests, requested_bytes, allocated_bytes, internal_waste;
    int64_t cache_hits, cache_misses;
    double hit_rate;
    int64_t splits, merges, peak_live_blocks, peak_live_bytes;
    int64_t live_blocks_at_peak, live_bytes_at_peak, free_blocks_at_peak, free_bytes_at_peak;
} fsc_rundb_bin_t;

typedef struct fsc_rundb_tag_stat {
    int64_t tag, allocs, alloc_bytes;
    int64_t live_blocks_at_peak, live_bytes_at_peak, live_blocks_end, live_bytes_end;
} fsc_rundb_tag_stat_t;

typedef struct fsc_rundb_snapshot { /* a row of layout_snapshots */
    int64_t id;
    const char *kind;
    int64_t seq, time_ns, oom_id, allocated, reserved;
} fsc_rundb_snapshot_t;

typedef struct fsc_rundb_block { /* a row of layout */
    int64_t snapshot, segment, addr, size, requested;
    const char *state;
    int64_t stream, pool, tag, alloc_seq, age_events, age_ns;
} fsc_rundb_block_t;

typedef struct fsc_rundb_alloc { /* a row of blocks: one allocation lifetime */
    int64_t alloc_seq, alloc_time_ns, addr, size, requested, stream, pool, segment, tag;
    int64_t free_requested_seq, free_requested_time_ns; /* FSC_RUNDB_NULL: never */
    int64_t free_completed_seq, free_completed_time_ns; /* FSC_RUNDB_NULL: never */
} fsc_rundb_alloc_t;

typedef struct fsc_rundb_segment { /* a row of segments: one segment lifetime */
    int64_t id, addr, size, pool, stream, expandable;
    int64_t created_seq, created_time_ns, freed_seq, freed_time_ns; /* freed: NULL = never */
    int64_t tag;
} fsc_rundb_segment_t;

typedef struct fsc_rundb_tag { /* a node of the tag tree */
    int64_t id, parent; /* parent FSC_RUNDB_NULL for the root */
    const char *name;
} fsc_rundb_tag_t;

/* A row of frag_classes: reserved − allocated split into classes at one
 * moment (docs/metrics.md) for one pool ("all", "small", "large"). */
typedef struct fsc_rundb_frag_class {
    const char *point; /* "peak_allocated", "peak_reserved" or "oom" */
    int64_t oom_id;
    const char *pool;
    int64_t seq, time_ns, asking_stream, reserved, allocated, reserved_unallocated;
    int64_t soft, hard, stream, private_pool, pending;
} fsc_rundb_frag_class_t;

typedef struct fsc_rundb_frag_hard_block { /* a row of frag_hard_blocks */
    const char *point;
    int64_t oom_id, rank, segment, addr, size;
    const char *state;
    int64_t tag, hard_bytes, alloc_seq, age_events;
} fsc_rundb_frag_hard_block_t;

typedef struct fsc_rundb_frag_hard_tag { /* a row of frag_hard_tags */
    const char *point;
    int64_t oom_id, rank, tag, hard_bytes, blocks, live_bytes;
} fsc_rundb_frag_hard_tag_t;

typedef struct fsc_rundb_timeline_frag { /* a row of timeline_frag */
    int64_t id;
    const char *pool; /* "all", "small", "large" */
    int64_t asking_stream, soft, hard, stream, private_pool, pending;
} fsc_rundb_timeline_frag_t;

typedef struct fsc_rundb_timeline_external { /* a row of timeline_external */
    int64_t id;
    double external_frag_max;
    int64_t external_frag_max_seq;
} fsc_rundb_timeline_external_t;

typedef int (*fsc_rundb_kv_fn)(void *ud, const fsc_rundb_kv_t *row);
typedef int (*fsc_rundb_timeline_fn)(void *ud, const fsc_rundb_timeline_t *row);
typedef int (*fsc_rundb_marker_fn)(void *ud, const fsc_rundb_marker_t *row);
typedef int (*fsc_rundb_oom_fn)(void *ud, const fsc_rundb_oom_t *row);
typedef int (*fsc_rundb_oom_segment_fn)(void *ud, const fsc_rundb_oom_segment_t *row);
typedef int (*fsc_rundb_pin_fn)(void *ud, const fsc_rundb_pin_t *row);
typedef int (*fsc_rundb_oom_tag_fn)(void *ud, const fsc_rundb_oom_tag_t *row);
typedef int (*fsc_rundb_suggestion_fn)(void *ud, const fsc_rundb_suggestion_t *row);
typedef int (*fsc_rundb_bin_fn)(void *ud, const fsc_rundb_bin_t *row);
typedef int (*fsc_rundb_tag_stat_fn)(void *ud, const fsc_rundb_tag_stat_t *row);
typedef int (*fsc_rundb_snapshot_fn)(void *ud, const fsc_rundb_snapshot_t *row);
typedef int (*fsc_rundb_block_fn)(void *ud, const fsc_rundb_block_t *row);
typedef int (*fsc_rundb_timeline_external_fn)(void *ud,
                                              const fsc_rundb_timeline_external_t *row);
typedef int (*fsc_rundb_alloc_fn)(void *ud, const fsc_rundb_alloc_t *row);
typedef int (*fsc_rundb_segment_fn)(void *ud, const fsc_rundb_segment_t *row);
typedef int (*fsc_rundb_tag_fn)(void *ud, const fsc_rundb_tag_t *row);
typedef int (*fsc_rundb_frag_class_fn)(void *ud, const fsc_rundb_frag_class_t *row);
typedef int (*fsc_rundb_frag_hard_block_fn)(void *ud, const fsc_rundb_frag_hard_block_t *row);
typedef int (*fsc_rundb_frag_hard_tag_fn)(void *ud, const fsc_rundb_frag_hard_tag_t *row);
typedef int (*fsc_rundb_timeline_frag_fn)(void *ud, const fsc_rundb_timeline_frag_t *row);

/* meta and summary rows, in the order they were written. */
int fsc_rundb_meta(fsc_rundb_t *db, fsc_rundb_kv_fn fn, void *ud);
int fsc_rundb_summary(fsc_rundb_t *db, fsc_rundb_kv_fn fn, void *ud);

/* One meta or summary value: *out = the value, or dflt when the key is
 * absent or its value is NULL. meta_text copies the text (numbers in
 * SQLite's text form) into buf, "" when absent or NULL. */
int fsc_rundb_meta_int(fsc_rundb_t *db, const char *key, int64_t dflt, int64_t *out);
int fsc_rundb_meta_text(fsc_rundb_t *db, const char *key, char *buf, size_t cap);
int fsc_rundb_summary_int(fsc_rundb_t *db, const char *key, int64_t dflt, int64_t *out);
int fsc_rundb_summary_real(fsc_rundb_t *db, const char *key, double dflt, double *out);

/* Timeline buckets in event order (by seq_first). */
int fsc_rundb_timeline(fsc_rundb_t *db, fsc_rundb_timeline_fn fn, void *ud);
/* Markers by seq. */
int fsc_rundb_markers(fsc_rundb_t *db, fsc_rundb_marker_fn fn, void *ud);
/* OOMs by id. */
int fsc_rundb_ooms(fsc_rundb_t *db, fsc_rundb_oom_fn fn, void *ud);
/* The segments holding the most free space at OOM oom_id, by rank. */
int fsc_rundb_oom_segments(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_oom_segment_fn fn,
                           void *ud);
/* The live blocks pinning one of those segments, largest first, then by
 * address. */
int fsc_rundb_oom_pins(fsc_rundb_t *db, int64_t oom_id, int64_t segment, fsc_rundb_pin_fn fn,
                       void *ud);
/* The tags holding the most live bytes at OOM oom_id, by rank. */
int fsc_rundb_oom_tags(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_oom_tag_fn fn, void *ud);
/* What-if's suggestions for OOM oom_id and those about the whole run
 * (oom_id NULL), in the order what-if wrote them; every suggestion when
 * oom_id is FSC_RUNDB_NULL. */
int fsc_rundb_suggestions(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_suggestion_fn fn, void *ud);
/* Every bin, by bin. */
int fsc_rundb_bins(fsc_rundb_t *db, fsc_rundb_bin_fn fn, void *ud);

typedef enum fsc_rundb_when {
    FSC_RUNDB_AT_PEAK = 0, /* live_bytes_at_peak */
    FSC_RUNDB_AT_END = 1   /* live_bytes_end: still allocated at the end */
} fsc_rundb_when_t;

/* The tags with live bytes at that moment, most bytes first (ties by tag
 * id). */
int fsc_rundb_tag_stats(fsc_rundb_t *db, fsc_rundb_when_t when, fsc_rundb_tag_stat_fn fn,
                        void *ud);
/* Layout snapshots: the allocated peak first, then the OOMs by OOM id. */
int fsc_rundb_snapshots(fsc_rundb_t *db, fsc_rundb_snapshot_fn fn, void *ud);
/* The blocks of the n snapshots listed, by snapshot, segment and address,
 * in one pass over the layout table (it has no index to seek by). */
int fsc_rundb_layout(fsc_rundb_t *db, const int64_t *snapshots, size_t n, fsc_rundb_block_fn fn,
                     void *ud);

/* The maximum of external fragmentation in each timeline bucket, by id
 * (none in a database written before the table existed). */
int fsc_rundb_timeline_external(fsc_rundb_t *db, fsc_rundb_timeline_external_fn fn, void *ud);
/* Every allocation lifetime (table blocks), by alloc_seq: one pass over the
 * table, for readers that rebuild the block set at any event. */
int fsc_rundb_allocs(fsc_rundb_t *db, fsc_rundb_alloc_fn fn, void *ud);
/* Every segment lifetime, in order of creation. */
int fsc_rundb_segments(fsc_rundb_t *db, fsc_rundb_segment_fn fn, void *ud);
/* Every node of the tag tree, by id (the root first). */
int fsc_rundb_tags(fsc_rundb_t *db, fsc_rundb_tag_fn fn, void *ud);

/* The split of reserved − allocated at the peaks and OOMs, in the order
 * written (a database from before the split has none). */
int fsc_rundb_frag_classes(fsc_rundb_t *db, fsc_rundb_frag_class_fn fn, void *ud);
/* The blocks / tags pinning the hard bytes at OOM oom_id (FSC_RUNDB_NULL:
 * at the allocated peak), by rank. */
int fsc_rundb_frag_hard_blocks(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_frag_hard_block_fn fn,
                               void *ud);
int fsc_rundb_frag_hard_tags(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_frag_hard_tag_fn fn,
                             void *ud);
/* The split over time: for each timeline bucket (by id) its rows for the
 * pools "all", "small" and "large", in that order. */
int fsc_rundb_timeline_frag(fsc_rundb_t *db, fsc_rundb_timeline_frag_fn fn, void *ud);

/* *out = a malloc'd copy of the path of tag id (its last tail_chars
 * characters when tail_chars > 0), or NULL when the tag is unknown or has
 * no path. The caller frees it. */
int fsc_rundb_tag_path(fsc_rundb_t *db, int64_t id, size_t tail_chars, char **out);

/* What a report calls tag id: its innermost user frame (a Python frame or a
 * plain tag; else the innermost C++ frame the filter keeps) as "file.py:12
 * fn", then up to depth - 1 calling frames (" ← caller.py:3 main"), file
 * names shortened to their last component. The frame filter of
 * fragscope/frames.h drops interpreter, unwinder, dispatcher and allocator
 * frames; all_frames = 1 turns it off (the innermost frames as recorded).
 * "(untagged)" for the root, "#id" for an unknown tag. */
int fsc_rundb_tag_label(fsc_rundb_t *db, int64_t id, int all_frames, int depth, char *buf,
                        size_t cap);
/* (A tag whose path holds no frame at all, as the tag-stack API makes, is
 * named by its path from the root, "step/forward/layer.3".) */
/* The same name (depth 2) followed by " … ← FRAME", FRAME being where the
 * paths of id and other part from the root down: for two tags that would
 * otherwise read alike. */
int fsc_rundb_tag_label_apart(fsc_rundb_t *db, int64_t id, int64_t other, int all_frames,
                              char *buf, size_t cap);

/* Live bytes by call site right after event seq: every allocation of
 * `blocks` made at or before seq and not completely freed by then (so
 * pending frees count, as allocated bytes count them), grouped by the call
 * site fsc_frame_site names its tag with `mode` (FSC_SITE_LINE: the
 * allocating line; FSC_SITE_MINE: the first frame in the program's own
 * code), sites of the same label merged. The sites' bytes add up to the
 * allocated bytes after seq. *out (free() it) holds *n sites, most bytes
 * first (ties by label); mine = 1 when the label is a frame of the
 * program's own code. */
typedef struct fsc_rundb_site {
    char label[512];
    int64_t bytes, blocks;
    int mine;
} fsc_rundb_site_t;
int fsc_rundb_sites_at(fsc_rundb_t *db, int64_t seq, int mode, fsc_rundb_site_t **out,
                       size_t *n);
/* The call site of one tag (fsc_frame_site over its node names; "(untagged)"
 * for the root). */
int fsc_rundb_tag_site(fsc_rundb_t *db, int64_t id, int mode, char *buf, size_t cap, int *mine);

/* What is still live at the end of the recording, split in two: allocated
 * before event `first_step` (persistent: weights, optimizer state, buffers
 * made before the first step) and at or after it (growth). first_step < 0:
 * the run's first free request stands for the first step (before it the
 * program only allocated); *boundary is the event used (-1 when nothing was
 * ever freed: everything counts as persistent). Bytes and blocks of both. */
typedef struct fsc_rundb_end_split {
    int64_t boundary, persistent_bytes, persistent_blocks, growth_bytes, growth_blocks;
} fsc_rundb_end_split_t;
int fsc_rundb_end_split(fsc_rundb_t *db, int64_t first_step, fsc_rundb_end_split_t *out);

/* The history entry behind each event of an imported PyTorch snapshot.
 * The import turns every entry of device_traces[device] into one event, in
 * order, and the replay adds its own splits and merges; when the counts say
 * exactly that (meta import.entries + events.split + events.merge =
 * events_total, nothing reconstructed), *ok is 1 and *seqs (free() it)
 * lists the replay's own events ascending: event s that is not one of them
 * is entry s − (how many of them are below s). *ok 0 otherwise (not a
 * snapshot, a history that began mid-run, entries skipped). */
int fsc_rundb_trace_derived(fsc_rundb_t *db, int *ok, int64_t *device, int64_t **seqs,
                            size_t *n);

/* Reserved bytes of each private pool (segments.pool_id != 0: CUDA graph
 * pools, MemPools) over n buckets of events, bucket i holding events lo[i]
 * to hi[i] (ascending, not overlapping): the most the pool had reserved
 * right after any event of the bucket. At most max_pools pools, those that
 * reserved the most at their peak, by pool id; *pools (free() it) their
 * ids, *vals (free() it) npools × n values, pool by pool; *dropped the
 * pools left out. A segment freed before a snapshot was taken reads as the
 * default pool's (docs/schema.md, segments.pool_id), so for imported
 * snapshots these are what the pools are known to have reserved. */
int fsc_rundb_pool_reserved(fsc_rundb_t *db, const int64_t *lo, const int64_t *hi, size_t n,
                            size_t max_pools, int64_t **pools, size_t *npools, int64_t **vals,
                            size_t *dropped);

/* A string field of the PyTorch history entry behind event seq (its
 * pytorch.entry record, else the value every entry had): e.g.
 * "compile_context" or "user_metadata". buf is "" when there is none (not
 * an imported snapshot, or PyTorch did not record it). */
int fsc_rundb_entry_text(fsc_rundb_t *db, int64_t seq, const char *key, char *buf, size_t cap);

/* ---- job databases: merging runs ---------------------------------------- */

/* A merge writes a job database (docs/jobs.md): the runs of every input, in
 * input order, renumbered from the output's next run. It is streaming (each
 * input is ATTACHed and copied table by table with INSERT ... SELECT, in
 * key order) and idempotent: a run already in the output (same source,
 * kind, rank, device and host in table runs, and the same summary table)
 * is skipped. The output is written under a temporary name beside it and
 * renamed when complete; an existing output is copied in first, as the
 * first input (docs/decisions.md says why not in place). */
typedef struct fsc_rundb_merger fsc_rundb_merger_t;

typedef struct fsc_rundb_merge_stats {
    uint64_t inputs;       /* databases added (an existing output not counted) */
    uint64_t runs;         /* runs in the output */
    uint64_t runs_existing; /* of them: the existing output's, copied first */
    uint64_t runs_added;   /* of the inputs' runs: copied */
    uint64_t runs_skipped; /* already in the output */
    uint64_t rows;         /* rows copied from the inputs (all tables) */
    uint64_t bytes_in;     /* size of the inputs */
    /* Runs added that claim the rank and device of a run already in the
     * output (two files of "rank 0 on device 0": a launcher's mistake, or
     * the same run under two names). Both are kept; each such run gets
     * meta merge.duplicate_rank, the message naming both input files; the
     * first FSC_RUNDB_MERGE_WARNINGS messages are here too. */
    uint64_t duplicate_ranks;
#define FSC_RUNDB_MERGE_WARNINGS 4
    char warnings[FSC_RUNDB_MERGE_WARNINGS][512];
} fsc_rundb_merge_stats_t;

/* Start a merge into out_path. keep_existing = 1: an existing out_path is
 * the first input (fragscope merge); 0: it is replaced (analyze). */
int fsc_rundb_merger_open(const char *out_path, int keep_existing, fsc_rundb_merger_t **out,
                          fsc_err_t *err);
/* Add the runs of one database (schema 1 or 2, checked as fsc_rundb_open
 * does). On error the message names the file it is about; the merger can
 * then only be aborted. */
int fsc_rundb_merger_add(fsc_rundb_merger_t *m, const char *db_path, fsc_err_t *err);
/* Put the output in place and free m; *st (may be NULL) gets the figures. */
int fsc_rundb_merger_commit(fsc_rundb_merger_t *m, fsc_rundb_merge_stats_t *st, fsc_err_t *err);
/* Remove the temporary and free m. NULL is a no-op. */
void fsc_rundb_merger_abort(fsc_rundb_merger_t *m);

/* Everything above in one call: inputs[0..n) into out_path (an existing
 * out_path kept as the first input). */
int fsc_rundb_merge(const char *const *inputs, size_t n, const char *out_path,
                    fsc_rundb_merge_stats_t *st, fsc_err_t *err);

/* ---- export ------------------------------------------------------------ */

/* Write table or view `table` of the database at db_path to out as CSV
 * (RFC 4180: header line, CRLF, quoted fields where needed), every run's
 * rows with the run column first (0 for a schema-1 file); *rows (may be
 * NULL) = the rows written. An unknown name: FSC_EUSAGE, "PATH: no table or
 * view 'x' (there are: blocks, events, ...)". */
int fsc_rundb_export_csv(const char *db_path, const char *table, FILE *out, uint64_t *rows,
                         fsc_err_t *err);

/* ---- the run report --------------------------------------------------- */

typedef enum fsc_report_format {
    FSC_REPORT_TEXT = 0,     /* for a terminal */
    FSC_REPORT_JSON = 1,     /* machine-readable; keys in docs/metrics.md */
    FSC_REPORT_MARKDOWN = 2, /* for a CI job summary or report.md */
    FSC_REPORT_VERDICT = 3   /* a few lines on the run's last OOM, each
                                starting "fragscope: ": cause, bytes, call
                                site, the settings that would have served
                                it (the native recorder prints it at the
                                OOM); nothing when the run had none */
} fsc_report_format_t;

/* Or'ed into the format: name tags by their innermost frames as recorded,
 * without the frame filter (report --all-frames). */
#define FSC_REPORT_F_ALL_FRAMES 0x100

/* Parse "text" / "json" / "markdown" (also "md") / "verdict"; FSC_EINVAL
 * otherwise. */
int fsc_report_format_parse(const char *s, fsc_report_format_t *out);

/* Which run of a job database (several runs: docs/metrics.md, "Jobs") a
 * report, check or diff is about: --rank R / --run N. All zero: the
 * default (the report's detail is about the run that ran out of memory
 * first, else the one with the least headroom; check and diff take every
 * run). */
typedef struct fsc_job_opts {
    int has_rank;
    int64_t rank;  /* --rank R */
    int has_run;
    int64_t run;   /* --run N */
    int all_ranks; /* report --all-ranks: every run in the job table */
} fsc_job_opts_t;

/* Write the report of db_path to out: for a database of several runs the
 * job section, then the report of one run (o may be NULL: the default). */
int fsc_report_write_job(const char *db_path, fsc_report_format_t fmt, const fsc_job_opts_t *o,
                         FILE *out, fsc_err_t *err);
/* Same, into out_path (temporary file renamed on success). */
int fsc_report_write_job_file(const char *db_path, fsc_report_format_t fmt,
                              const fsc_job_opts_t *o, const char *out_path, fsc_err_t *err);
/* fsc_report_write_job with the default options. */
int fsc_report_write(const char *db_path, fsc_report_format_t fmt, FILE *out,
                     fsc_err_t *err);
int fsc_report_write_file(const char *db_path, fsc_report_format_t fmt,
                          const char *out_path, fsc_err_t *err);

/* ---- the CI check ------------------------------------------------------- */

/* CI thresholds; a field is checked only when its has_* flag is set. */
typedef struct fsc_check_limits {
    int has_max_peak_reserved;
    uint64_t max_peak_reserved;     /* bytes: summary.peak_reserved_bytes */
    int has_max_external_frag;
    double max_external_frag;       /* summary.external_frag_at_peak */
    int has_max_internal_frag;
    double max_internal_frag;       /* summary.internal_frag_ratio_at_peak */
    int has_min_utilization;
    double min_utilization;         /* summary.utilization */
    int no_oom;                     /* summary.num_ooms must be 0 */
    /* The split of reserved − allocated (docs/metrics.md); a database
     * written before the split existed fails these with FSC_EFORMAT. */
    int has_max_frag_ratio;
    double max_frag_ratio;          /* summary.frag_ratio_at_peak_reserved */
    int has_max_hard;
    uint64_t max_hard;              /* bytes: summary.hard_bytes_at_peak */
    int has_max_hard_at_oom;
    uint64_t max_hard_at_oom;       /* bytes: summary.max_hard_bytes_at_oom */
    int has_max_stream;
    uint64_t max_stream;            /* bytes: summary.stream_bytes_at_peak */
    int has_max_pending;
    uint64_t max_pending;           /* bytes: summary.pending_bytes_at_peak */
} fsc_check_limits_t;

/* Check db_path against lim: writes one line per violated threshold to out
 * (may be NULL) and sets *violations. Returns 0 when the database could be
 * read (whatever the verdict), negative on error. */
int fsc_check_run(const char *db_path, const fsc_check_limits_t *lim, FILE *out,
                  int *violations, fsc_err_t *err);
/* The same over a job database: every threshold applies to every run (or to
 * the one o picks), each line prefixed with the run's label when the
 * database holds several; json: one JSON object instead of lines
 * ({database, runs_checked, ok, failures[]: run, rank, device, label,
 * option, summary_key, value, limit, message}). *runs_checked (may be
 * NULL) = the runs checked. */
int fsc_check_job(const char *db_path, const fsc_check_limits_t *lim, const fsc_job_opts_t *o,
                  int json, FILE *out, int *violations, int *runs_checked, fsc_err_t *err);

/* ---- two runs side by side ---------------------------------------------- */

/* Both runs side by side with deltas and a final "verdict: ..." line.
 * *verdict (may be NULL): -1 new is better, 0 same, 1 new is worse,
 * 2 mixed. */
int fsc_diff_write(const char *base_db, const char *new_db, FILE *out,
                   int *verdict, fsc_err_t *err);
/* The same for job databases: when either holds several runs, the runs are
 * paired rank by rank (then by device), each pair judged on one line, runs
 * without a partner listed, and the verdict is the job's (mixed when pairs
 * disagree); o's --rank / --run adds the full table of that pair (o may be
 * NULL). Two databases of one run each diff as fsc_diff_write. */
int fsc_diff_write_job(const char *base_db, const char *new_db, const fsc_job_opts_t *o,
                       FILE *out, int *verdict, fsc_err_t *err);

/* ---- what changed between two runs, and why ------------------------------ */

/* The change of peak reserved from a base run A to a new run B, split so
 * that the parts add up to it exactly (docs/metrics.md, "What changed"):
 *
 *   Δ peak reserved = program + allocator
 *   program   = Δ requested bytes live at each run's allocated peak, by call
 *               site (named as `report` names tags); the sites' live block
 *               bytes add up to Δ peak allocated
 *   allocator = rounding  (Δ block − requested bytes at the allocated peak)
 *             + Δ reserved − allocated at each run's reserved peak, split
 *               into soft, hard, stream, private pool and pending
 *             + Δ moment (allocated at the reserved peak − allocated at the
 *               allocated peak: the live bytes that differ between the two
 *               moments, 0 or less in each run)
 *
 * plus, where both runs carry step markers, each step's peaks side by side
 * and the first step that differs, and (from the caller, who can replay)
 * what A's requests reserve under B's settings. */

typedef enum fsc_diff_format {
    FSC_DIFF_TEXT = 0,
    FSC_DIFF_MARKDOWN = 1, /* a CI job summary / pull-request comment */
    FSC_DIFF_JSON = 2,     /* keys in docs/metrics.md, "What changed" */
    FSC_DIFF_JUNIT = 3,    /* one testcase per --fail-on threshold */
    FSC_DIFF_HTML = 4      /* the compare page: one self-contained file */
} fsc_diff_format_t;

/* "text", "markdown" ("md"), "json", "junit", "html"; FSC_EINVAL otherwise. */
int fsc_diff_format_parse(const char *s, fsc_diff_format_t *out);

/* What a threshold is about; every figure is the new run's against the
 * base's. */
typedef enum fsc_diff_metric {
    FSC_DIFF_M_PEAK_RESERVED = 0,
    FSC_DIFF_M_PEAK_ALLOCATED,
    FSC_DIFF_M_FRAG,     /* reserved − allocated at the reserved peak */
    FSC_DIFF_M_SOFT,     /* its classes, at the reserved peak */
    FSC_DIFF_M_HARD,
    FSC_DIFF_M_STREAM,
    FSC_DIFF_M_POOL,
    FSC_DIFF_M_PENDING,
    FSC_DIFF_M_ROUNDING, /* block − requested bytes at the allocated peak */
    FSC_DIFF_M_OOM       /* the new run has more OOMs than the base */
} fsc_diff_metric_t;

/* One --fail-on threshold: "peak-reserved:+2%" (fails when the figure grows
 * by more than 2% of the base's), "hard:+256MiB" (by more than 256 MiB),
 * "oom" (any OOM the base did not have). */
typedef struct fsc_diff_threshold {
    fsc_diff_metric_t metric;
    int relative;   /* 1: limit is a percentage of the base's figure */
    double limit;   /* bytes, or percent when relative */
    char spec[64];  /* as given */
} fsc_diff_threshold_t;

/* Parse one threshold; FSC_EINVAL with a message saying what is wrong. */
int fsc_diff_threshold_parse(const char *spec, fsc_diff_threshold_t *out, fsc_err_t *err);

/* What the settings alone explain, measured by the caller (tools/), which
 * can replay: A's requests under A's own settings and under B's
 * (fragscope/whatif.h). */
typedef struct fsc_diff_settings {
    int differ;             /* the runs' configs or caps differ */
    char base_config[256], new_config[256];
    uint64_t base_capacity, new_capacity; /* 0 = unknown or none */
    int replayed;           /* 1: the figures below hold; else note says why not */
    uint64_t base_peak_reserved, new_peak_reserved;   /* A's requests, A's / B's settings */
    uint64_t base_peak_allocated, new_peak_allocated;
    int base_oom, new_oom;  /* the replay ran out of memory */
    uint64_t capacity;      /* the cap both replays ran under (0 = none) */
    int run_complete;       /* A's stream is the whole run (else a prefix) */
    char note[512];         /* what the replay covers, or why there is none */
} fsc_diff_settings_t;

typedef struct fsc_diff_opts {
    fsc_diff_format_t format;
    const fsc_diff_threshold_t *fail_on; /* thresholds, checked in order */
    size_t nfail_on;
    int thresholds_only;    /* text: only the thresholds' lines (check --baseline) */
    FILE *annotations;      /* non-NULL: GitHub Actions "::warning file=F,line=L::"
                               lines for the sites that grew, written here */
    const char *source_root; /* where the files frames name are looked for
                                (NULL: the current directory) */
    const char *base_name, *new_name; /* the inputs as given (NULL: the paths) */
    const fsc_diff_settings_t *settings; /* NULL: not measured */
    int max_sites;          /* sites listed in text/Markdown (0: 15; JSON: all) */
    int after_table;        /* text: fsc_diff_write's table came first; leave out the
                               headline figures it already showed */
} fsc_diff_opts_t;

/* Explain the change from the run in base_db to the run in new_db, in
 * o->format, to out. Both must hold one run each (a job database:
 * FSC_EINVAL naming both; two jobs compare with fsc_diff_write_job) of comparable devices (two
 * known, different device totals: FSC_EINVAL). *failed (may be
 * NULL) = the number of thresholds that failed. */
int fsc_diff_explain(const char *base_db, const char *new_db, const fsc_diff_opts_t *o,
                     FILE *out, int *failed, fsc_err_t *err);

/* The frames of tag id that name a file and a line, innermost first, one
 * "FILE:LINE\n" each, into buf (whole lines only; "" when none): where an
 * annotation can point. */
int fsc_rundb_tag_files(fsc_rundb_t *db, int64_t id, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_RUNDB_H */
