/*
 * fragscope/analyzer.h — replay an event stream into a run database
 * (docs/schema.md) and diagnose OOMs. Reading the database back (reports,
 * CI checks, run-to-run comparisons, the viewer) is fragscope/rundb.h.
 *
 * Analysis is streaming: memory is bounded by what is live at one moment
 * (segments and blocks), not by the length of the trace. The database is
 * written in one transaction to a temporary file that is renamed over the
 * final path only by fsc_analysis_finish, so a failure never leaves a
 * half-written database. Metric definitions are in docs/metrics.md.
 *
 * An analysis handle is used from one thread at a time. It starts one
 * thread of its own that writes the bulk rows while the replay goes on; the
 * thread ends in fsc_analysis_finish or fsc_analysis_destroy.
 */
#ifndef FRAGSCOPE_ANALYZER_H
#define FRAGSCOPE_ANALYZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fragscope/common.h"
#include "fragscope/events.h"
#include "fragscope/recorder.h"
#include "fragscope/rundb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version the analyzer writes (defined with the schema). */
#define FSC_DB_SCHEMA_VERSION FSC_RUNDB_SCHEMA_VERSION

/* ---- OOM causes -------------------------------------------------------- */

#define FSC_OOM_CAUSE_MAP(X)                \
    X(CAPACITY, 0, "capacity")              \
    X(FRAGMENTATION, 1, "fragmentation")    \
    X(EXTERNAL, 2, "external")              \
    X(OVERSIZE, 3, "oversize")              \
    X(UNDETERMINED, 4, "undetermined")

typedef enum fsc_oom_cause {
#define FSC__OOM_ENUM(name, val, str) FSC_OOM_##name = (val),
    FSC_OOM_CAUSE_MAP(FSC__OOM_ENUM)
#undef FSC__OOM_ENUM
} fsc_oom_cause_t;

/* "capacity", ...; "unknown" for anything else. */
const char *fsc_oom_cause_name(int cause);

/* The rule of cause `external` (docs/metrics.md, "Memory outside the
 * allocator"), shared by the analyzer and whatif. st holds the figures at
 * the failure: reserved, capacity (meaningful when capacity_known),
 * device_free (UINT64_MAX = unknown), device_total (0 = unknown) and
 * segment_size (the segment the miss tried to create). When the device had
 * less free memory than that segment, *device_limited says no recorded cap
 * refused first, and with the total known *external_known = 1 and
 * *external = total − free − reserved; all three are left alone otherwise.
 * Returns 1 when the cause is `external`: the device itself refused and
 * this allocator's reserved bytes do not explain the shortfall. */
int fsc_oom_external(const fsc_oom_state_t *st, int capacity_known, int *device_limited,
                     uint64_t *external, int *external_known);

/* ---- metric formulas (docs/metrics.md) ------------------------------- */

/* num / den; 0 when den is 0. */
double fsc_metric_ratio(uint64_t num, uint64_t den);
/* External fragmentation: 1 − largest free block / free bytes, over the
 * free blocks of reserved segments; 0 when nothing is free. */
double fsc_metric_external_frag(uint64_t largest_free, uint64_t free_bytes);
/* Reserved bytes not allocated (0 if allocated exceeds reserved). */
uint64_t fsc_metric_unallocated(uint64_t reserved, uint64_t allocated);
/* Size bin of table bins: bin k > 0 holds [512·2^k, 512·2^(k+1)), bin 0
 * everything below 1 KiB, the last bin everything above. */
#define FSC_METRIC_BINS 48 /* 512 B · 2^47 covers any 64-bit size */
int fsc_metric_bin(uint64_t size);

/* ---- analysis: events in, database out --------------------------------- */

typedef struct fsc_analysis fsc_analysis_t;

struct fsc_analysis_summary;

typedef struct fsc_analysis_opts {
    /* 0: an event that contradicts the replayed state (ALLOC of a block that
     * is not free, FREE of an unknown block, overlapping segments, SPLIT of a
     * non-free block, ...) fails feed() with FSC_ESTATE naming the event.
     * 1: such an event is skipped, counted (meta.warnings) and kept in the
     * database's events. Ring traces (header flag FSC_TRACE_F_RING: only the
     * last events before each write were kept) are always replayed
     * leniently, and their OOMs use the allocator's own allocated/reserved
     * figures from the OOM event. */
    int lenient;
    uint32_t timeline_samples; /* most rows in table timeline; 0 = 2000 */
    const char *source_path;   /* meta.source_path; NULL = "" */
    const char *source_kind;   /* meta.source_kind; NULL = "api" */
    /* Called by fsc_analysis_finish once the database is complete and
     * closed, with its temporary name, before it is fsynced and renamed
     * into place: what a caller derives from the finished database (the
     * what-if suggestions) goes into the same file, which appears complete
     * or not at all; sum is what finish will return. A negative return
     * fails the finish and nothing is put in place. NULL = none. */
    int (*before_commit)(void *ud, const char *tmp_db_path,
                         const struct fsc_analysis_summary *sum, fsc_err_t *err);
    void *before_commit_ud;
    /* The run's rank (table runs), when has_rank: it overrides the trace
     * header's. Without it: the header's rank, else the one the file name
     * of source_path says (fsc_rundb_rank_from_name), else unknown. */
    int has_rank;
    int64_t rank;
    /* The run's host (runs.host, meta.host), when not NULL: it overrides the
     * trace header's (PyTorch snapshots record none). Copied. */
    const char *host;
    /* The database is an intermediate one (a worker's, merged and removed):
     * put in place without fsync. */
    int no_sync;
} fsc_analysis_opts_t;

#define FSC_ANALYSIS_OPTS_DEFAULT {0, 0, NULL, NULL, NULL, NULL, 0, 0, NULL, 0}

/* Headline figures, also stored in table summary. */
typedef struct fsc_analysis_summary {
    uint64_t events;
    uint64_t peak_allocated, peak_reserved, peak_active, peak_requested;
    uint64_t peak_allocated_seq, peak_reserved_seq;
    uint64_t final_allocated, final_reserved;
    uint64_t internal_frag_at_peak;      /* bytes */
    double internal_frag_ratio_at_peak;
    double external_frag_at_peak;
    double utilization;                  /* peak allocated / peak reserved */
    uint64_t segments_created;
    uint64_t num_ooms;
    int first_oom_cause;                 /* fsc_oom_cause_t; -1 when no OOM */
    uint64_t warnings;                   /* lenient runs */
    uint64_t leaked_blocks, leaked_bytes;
    /* Settings of the run that can change placement and that fragscope
     * does not model, comma-separated ("" = none): the replay cannot follow
     * them (meta key settings.not_modelled). */
    char settings_not_modelled[256];
} fsc_analysis_summary_t;

/* Start an analysis writing db_path (through a temporary file). hdr gives
 * the run's facts (meta table; capacity and FSC_TRACE_F_CAPACITY_UNKNOWN
 * drive OOM diagnosis); its strings are copied. opts may be NULL. On error
 * *out is NULL and err says why. */
int fsc_analysis_create(const char *db_path, const fsc_trace_header_t *hdr,
                        const fsc_analysis_opts_t *opts, fsc_analysis_t **out,
                        fsc_err_t *err);

/* Define tag node `node` = (parent, name). Nodes must be defined before an
 * event uses them and parents before children; redefining a node with the
 * same values is a no-op. An event with an undefined tag gets a placeholder
 * node named "#<id>" under the root. */
int fsc_analysis_define_tag(fsc_analysis_t *a, uint32_t node, uint32_t parent,
                            const char *name, size_t len);

/* Replay one event (seq = number of events fed before it). Returns 0,
 * FSC_ESTATE (strict mode, message "event 1234 (free_requested at 0x...):
 * no live block at this address"), or FSC_ESQLITE/FSC_ENOMEM. After an
 * error the analysis can only be destroyed. */
int fsc_analysis_feed(fsc_analysis_t *a, const fsc_event_t *ev);

/* Extra meta rows (e.g. the reader's integrity report). Later values for
 * the same key replace earlier ones. */
int fsc_analysis_set_meta_int(fsc_analysis_t *a, const char *key, int64_t value);
int fsc_analysis_set_meta_text(fsc_analysis_t *a, const char *key, const char *value);

/* Write every derived table, commit, close and rename the database into
 * place; fills *out (may be NULL). The analysis must still be destroyed. */
int fsc_analysis_finish(fsc_analysis_t *a, fsc_analysis_summary_t *out);

/* Free everything; removes the temporary file if finish did not succeed.
 * NULL is a no-op. */
void fsc_analysis_destroy(fsc_analysis_t *a);

/* ---- a file in, a database out ----------------------------------------- */

/* A zeroed struct holds the defaults. */
typedef struct fsc_analyze_opts {
    fsc_analysis_opts_t analysis; /* source_path and source_kind come from the file */
    uint64_t capacity;            /* the bytes the run was allowed to reserve, for
                                     inputs that do not record it; 0 = the input's */
    void (*progress)(void *ud, uint64_t done, uint64_t total); /* fragscope/source.h */
    void *progress_ud;
    int pick_device, device;      /* snapshots: 1 = analyze `device` (else the only
                                     device with history) */
    uint64_t device_memory;       /* the device's total memory, for inputs that do
                                     not record it (PyTorch snapshots): makes the
                                     memory outside the allocator exact; 0 = the
                                     input's */
    uint64_t skip_entries;        /* snapshots: leave out the first N history
                                     entries, as a ring would have (fragscope/source.h) */
    const struct fsc_import_size *sizes; /* snapshots: settled block sizes */
    size_t nsizes;                       /* (fragscope/source.h) */
} fsc_analyze_opts_t;

struct fsc_source_info;

/* Read the trace or snapshot at in_path (fragscope/source.h) into a new run
 * database at out_path: what `fragscope analyze` does. A trace's integrity
 * and a snapshot's import figures go into meta. *sum and *info (either may
 * be NULL) get the headline figures and what reading found. Every error's
 * message starts with the file it is about, info->error_file: the input,
 * or the output when writing it failed. */
int fsc_analyze_file(const char *in_path, const char *out_path, const fsc_analyze_opts_t *opts,
                     fsc_analysis_summary_t *sum, struct fsc_source_info *info, fsc_err_t *err);

const char *fsc_analysis_last_error(const fsc_analysis_t *a);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_ANALYZER_H */
