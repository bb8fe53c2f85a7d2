/*
 * fragscope/whatif.h — what another allocator configuration or capacity
 * would have done with a recorded run.
 *
 * A request stream is what the program asked of its allocator, in order:
 * allocations (requested size, stream, tag), frees, frees whose completion
 * waited on other streams (record_stream), empty_cache calls and markers.
 * It is extracted from a trace (ALLOC.requested, FREE_REQUESTED,
 * FREE_COMPLETED, EMPTY_CACHE, MARKER and OOM events) or from a PyTorch
 * snapshot through the importer, and kept with what the recording itself
 * did (its segments, block addresses and peaks) so that a replay with the
 * run's own settings can be checked against it.
 *
 * A replay feeds the stream to a fresh allocator (fragscope/allocator.h) on
 * the sim backend, scripted with the recorded segment addresses so that
 * address ties break as they did in the recording. Replays share nothing:
 * fsc_whatif_run replays several configurations at once on threads.
 *
 * The replay assumes the program's requests do not depend on the allocator
 * (true for training loops; not for code that retries after catching an
 * OOM). docs/whatif.md lists the other approximations.
 */
#ifndef FRAGSCOPE_WHATIF_H
#define FRAGSCOPE_WHATIF_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/allocator.h"
#include "fragscope/common.h"
#include "fragscope/events.h"
#include "fragscope/recorder.h"
#include "fragscope/rundb.h"
#include "fragscope/source.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- request streams ----------------------------------------------------- */

typedef struct fsc_request_stream fsc_request_stream_t;

/* An empty stream to be filled with fsc_request_stream_add (tests, tools
 * that produce events themselves). */
int fsc_request_stream_create(fsc_request_stream_t **out, fsc_err_t *err);
void fsc_request_stream_destroy(fsc_request_stream_t *rs); /* NULL ok */

/* The run's facts: the config string (the replay's "own settings"), the
 * capacity and the device total. Strings are copied. Optional. */
int fsc_request_stream_set_header(fsc_request_stream_t *rs, const fsc_trace_header_t *hdr,
                                  fsc_err_t *err);
/* Tag node `node` = (parent, name), as in the trace; parents first. */
int fsc_request_stream_define_tag(fsc_request_stream_t *rs, uint32_t node, uint32_t parent,
                                  const char *name, size_t len, fsc_err_t *err);
/* What `report` calls tag node `node` (fsc_frame_label, docs/pytorch.md
 * "Frames"): the innermost `depth` frames the filter keeps (all_frames:
 * every frame), shortened; a path of plain tags reads "a/b/c". When other
 * is not node and not 0, the frame where the two paths part is appended
 * (fsc_frame_label_apart) so that two sites that read alike are told
 * apart. "" for node 0. Returns 0 or FSC_ENOMEM. */
int fsc_request_stream_tag_label(const fsc_request_stream_t *rs, uint32_t node, uint32_t other,
                                 int all_frames, int depth, char *buf, size_t cap);
/* Depth of an OOM call site's name, as the report's "call site". */
#define FSC_WHATIF_SITE_DEPTH 3
/* One recorded event, in order. Allocator-internal events (SPLIT, MERGE,
 * GC, SEGMENT_FREE, SEGMENT_UNMAP) only feed the recorded figures. A free
 * of an address that is not live is skipped and counted in `skipped`. */
int fsc_request_stream_add(fsc_request_stream_t *rs, const fsc_event_t *ev, fsc_err_t *err);

/* Load a .fstrace or a PyTorch snapshot (detected from the content). Bad
 * input: FSC_EFORMAT and friends with "PATH: what" in err. */
int fsc_request_stream_load(const char *path, fsc_request_stream_t **out, fsc_err_t *err);
/* Same, choosing the CUDA device of a snapshot that holds several (-1 = the
 * only device with history, as fsc_pytorch_import). Traces ignore it. */
int fsc_request_stream_load_device(const char *path, int device, fsc_request_stream_t **out,
                                   fsc_err_t *err);
/* Same, with lenient = 1 skipping (and counting) the history entries of a
 * snapshot that contradict the importer's block model, as `import
 * --lenient` does. Traces ignore both. */
int fsc_request_stream_load_opts(const char *path, int device, int lenient,
                                 fsc_request_stream_t **out, fsc_err_t *err);
/* Same with the way in's options (fragscope/source.h; NULL = defaults):
 * device, lenient, and skip_entries, a window of a snapshot's history as a
 * ring keeps it. keep_records is ignored. */
int fsc_request_stream_load_source(const char *path, const fsc_source_opts_t *opts,
                                   fsc_request_stream_t **out, fsc_err_t *err);
/* A window's block sizes that the load settled (the importer had guessed
 * them; docs/whatif.md, "A window of the run"), for an import or analysis
 * of the same snapshot to use (fsc_source_opts_t.sizes): *out is malloc'd
 * (free it), NULL with *n 0 when none. 0 or FSC_ENOMEM. */
int fsc_request_stream_settled(const fsc_request_stream_t *rs, fsc_import_size_t **out,
                               size_t *n);

typedef struct fsc_request_stream_info {
    uint64_t events;        /* recorded events fed */
    uint64_t ops;           /* replayable operations (allocs, frees, ...) */
    uint64_t allocs;        /* allocation requests, recorded OOMs included */
    uint64_t frees;
    uint64_t delayed_frees; /* frees completed only later (record_stream) */
    uint64_t recorded_ooms; /* OOM events, replayed as allocations */
    uint64_t markers;
    uint64_t empty_caches;
    uint64_t skipped;       /* frees of unknown addresses, skipped */
    uint64_t streams;       /* distinct allocation streams */
    /* What the recording did. */
    uint64_t recorded_peak_allocated;
    uint64_t recorded_peak_reserved;
    uint64_t recorded_segments;      /* SEGMENT_ALLOC + SEGMENT_MAP events */
    uint64_t peak_requested;         /* peak of Σ requested of live blocks */
    const char *config;              /* header config ("" when none) */
    uint64_t capacity;               /* header capacity; 0 = unknown */
    uint64_t device_total;           /* header device total; 0 = unknown */
    uint32_t flags;                  /* header FSC_TRACE_F_* */
    /* What the stream covers. ends_at_oom: the last allocation request the
     * recording holds failed (every PyTorch OOM snapshot: the process
     * stopped there). truncated: the trace lost its end or was a ring. A
     * replay of such a stream is a prefix of the run: run_complete is 1
     * only when neither holds. */
    int ends_at_oom;
    int truncated;
    int run_complete;
    /* Entries the recorder left out of the trace (its SKIPPED record: the
     * native recorder's entries its block model could not place or that it
     * could not keep). The stream lacks them, so a replay of it is never
     * called faithful to the run (fsc_whatif_verify's caller says so). */
    fsc_trace_skips_t recorder_skipped;
    /* Program actions recognised from the recording (docs/whatif.md): a
     * burst of segment releases that the allocator did not make itself,
     * replayed as an empty_cache() at the same point. */
    uint64_t inferred_empty_caches;
    /* A recording with OOMs and no recorded capacity (PyTorch snapshots):
     * the cap it ran under lies in [capacity_lower, capacity_upper): at
     * least the highest reserved figure reached, below reserved at the last
     * OOM plus the segment it could not get. Both 0 otherwise. A replay at
     * capacity_lower fails where the recording failed. */
    uint64_t capacity_lower, capacity_upper;
    /* Recorded OOMs whose cause is `external` by the analyzer's rule
     * (fsc_oom_external): the device refused and memory outside this
     * allocator, not its own reserved bytes, explains it. No allocator
     * setting avoids them. first_external_oom: the first one's number
     * (ooms.id), -1 when none; external_bytes at it (device total − free −
     * reserved) when external_bytes_known (the total was recorded). */
    uint64_t external_ooms;
    int64_t first_external_oom;
    int external_bytes_known;
    uint64_t external_bytes;
    /* Private pools the snapshot no longer names (released before it was
     * taken), inferred from the recorded placements (docs/whatif.md): how
     * many pools, their segments, and the allocations replayed into them. */
    uint64_t inferred_pools, inferred_pool_segments, inferred_pool_allocs;
    /* Points where the program released a private pool (replayed there). */
    uint64_t pool_releases;
    /* MemPools recognised as created with use_on_oom, and the default-pool
     * requests they served when the cap refused a new segment (replayed as
     * default-pool requests that fall back to them). */
    uint64_t use_on_oom_pools, use_on_oom_allocs;
    /* Pools seen handing out whole blocks the split rule would split
     * (MemPool(no_split=True)): replayed that way. */
    uint64_t no_split_pools;
    /* The pool inference stopped collecting evidence at its bound on time
     * or memory (docs/whatif.md "Private pools"): an input whose requests
     * each skipped a great many free blocks. The pools inferred may then
     * be fewer than the recording's, and the replay may differ. */
    int pool_inference_capped;
    /* A recording that began mid-run (header FSC_TRACE_F_RECONSTRUCTED: a
     * snapshot whose history ring had wrapped, as PyTorch's
     * _record_memory_history(max_entries=...) keeps only the last
     * entries). Every figure covers the recorded window, replayed from the
     * state it began in, rebuilt (docs/whatif.md, "A window of the run"):
     * window_entries history entries (0 = unknown), the first at
     * window_first_time_us (µs since the epoch, 0 = unknown), the first
     * request at window_first_event among the events fed. start_*: that
     * state: segments (expandable ones: mapped ranges), live blocks, the
     * bytes they reserve and hold; the run reserved at least
     * start_reserved before the window, and its earlier peaks are unknown.
     * start_guessed: blocks of that state whose size the window does not
     * prove; start_settled: those the window's best-fit choices fixed
     * (whatif_seed.c); guessed_blocks: the first FSC_IMPORT_GUESSED_MAX
     * still guessed (n_guessed_listed of them). */
    int window;
    uint64_t window_entries, window_first_time_us, window_first_event;
    uint64_t start_segments, start_blocks, start_reserved, start_allocated;
    uint64_t start_guessed, start_settled;
    /* The most the still guessed blocks' sizes may be off, in all (each
     * by what the rules let PyTorch leave unsplit): allocated bytes of the
     * window, its peak among them, are known to within this. */
    uint64_t start_uncertain_bytes;
    uint64_t guessed_blocks[FSC_IMPORT_GUESSED_MAX];
    size_t n_guessed_listed;
} fsc_request_stream_info_t;

int fsc_request_stream_info(const fsc_request_stream_t *rs, fsc_request_stream_info_t *out);

/* ---- one replay ------------------------------------------------------------ */

#define FSC_WHATIF_TEXT_MAX 256
#define FSC_WHATIF_NOTE_MAX 640

typedef struct fsc_whatif_oom {
    uint64_t request;   /* index among the stream's allocation requests */
    uint64_t event;     /* index of the recorded event that made the request */
    uint64_t requested; /* bytes asked for */
    uint64_t stream;
    int has_marker;
    char marker[FSC_WHATIF_TEXT_MAX]; /* last MARKER before it */
    /* The request's call site as `report` names it (frame filter on,
     * FSC_WHATIF_SITE_DEPTH frames; "" = no tag); tag_node its tag node,
     * for fsc_request_stream_tag_label with other options. */
    char tag[FSC_WHATIF_TEXT_MAX];
    uint32_t tag_node;
    /* The recording's OOM number (ooms.id of `fragscope analyze`, from 0)
     * when the recording failed this very request too; -1 when it did not. */
    int64_t recorded_oom;
} fsc_whatif_oom_t;

typedef struct fsc_whatif_result {
    char config[FSC_WHATIF_TEXT_MAX]; /* as given */
    int rc;                           /* 0, or why this replay failed */
    char error[FSC_ERR_MSG_MAX];
    uint64_t capacity;                /* 0 = unlimited */
    uint64_t peak_allocated, peak_reserved;
    double utilization;               /* peak allocated / peak reserved */
    double external_frag_at_peak;     /* 1 - largest free / free, when the
                                         reserved peak was first reached */
    uint64_t segments;                /* segments created (expandable: one
                                         per segment, not per mapping) */
    uint64_t segment_maps;            /* SEGMENT_MAP events */
    int64_t num_alloc_retries;
    int64_t num_ooms;
    int oom;                          /* 1 when some request failed */
    fsc_whatif_oom_t first_oom;
    uint64_t ops_replayed;
    uint64_t elapsed_ns;
    /* What the result covers: 1 when the replayed stream is the whole run,
     * 0 when the recording ended at an OOM or lost its end; then "no OOM"
     * means the replay served the request that failed and everything
     * recorded before it, and nothing is known of the rest of the run. */
    int run_complete;
    /* When the recording ended at an OOM, the replay served that request
     * and a capacity was set: bytes left under the capacity right after
     * the failed request was served (capacity - reserved then). */
    int has_margin;
    uint64_t margin;
    /* Where the CUDA driver would have put a segment is settled by a model
     * (docs/allocator.md, "Where the driver places segments"); its least
     * certain rule picks the gap for a new chunk once chunks were given
     * back. placement_uncertain counts the segments placed by that rule;
     * when it is not 0 the replay is repeated under each variant of it
     * (FSC_SIM_PLACE_*), placement_variants replays in all, and the figures
     * below span them: placement_decides is 1 when they differ (a peak or
     * the outcome), and the peaks and OOM above are the model's own. With
     * no uncertain segment, *_lo = *_hi = the peaks above and variants 1. */
    uint64_t placement_uncertain;
    int placement_variants;
    int placement_decides;
    uint64_t peak_reserved_lo, peak_reserved_hi;
    uint64_t peak_allocated_lo, peak_allocated_hi;
    int oom_variants; /* how many of the variants ran out of memory */
} fsc_whatif_result_t;

/* Progress of a multi-replay call: `done` of `total` settings finished.
 * Called from worker threads, one call at a time. */
typedef void (*fsc_whatif_progress_fn)(void *ud, uint64_t done, uint64_t total);

typedef struct fsc_whatif_opts {
    /* Bytes the allocator may reserve (set_per_process_memory_fraction ×
     * total; arms garbage_collection_threshold). 0 = unlimited: the sim
     * device's total (the recorded device total, else 1 TiB or twice the
     * recording's peak reserved, the larger). */
    uint64_t capacity;
    /* 0 (default): stop at the first failed request, since the program
     * would have died there and peaks measured past it describe a run that
     * could not happen. 1 goes on, counting every failure. */
    int past_oom;
    int threads;       /* fsc_whatif_run / _suggest: 0 = one per online core */
    fsc_whatif_progress_fn progress; /* may be NULL */
    void *progress_ud;
    /* The cap the recording itself ran under, where the input does not
     * record it (0 = what the input says or implies). It only decides which
     * recorded segment releases were the allocator's (an OOM retry under
     * the cap) and which the program's (empty_cache); fsc_whatif_verify
     * takes `capacity` for it. */
    uint64_t recorded_capacity;
    /* Suggestions: the cap is not known but lies in [capacity,
     * capacity_upper); a setting is said to serve the failed request only
     * if it does so at both ends (0 = the cap is known). */
    uint64_t capacity_upper;
} fsc_whatif_opts_t;

/* A zeroed struct holds the defaults; the macro spells them out. */
#define FSC_WHATIF_OPTS_DEFAULT {0, 0, 0, NULL, NULL, 0, 0}

/* Replay rs with config string `config` ("" = PyTorch's defaults). A bad
 * config string gives FSC_ECONFIG naming it. An allocation the replay
 * cannot serve is an outcome (out->oom), not an error. */
int fsc_whatif_replay(const fsc_request_stream_t *rs, const char *config,
                      const fsc_whatif_opts_t *opts, fsc_whatif_result_t *out, fsc_err_t *err);

/* Replay every config of configs[0..n) on threads; out has n entries. Every
 * config string is parsed first: a bad one fails the call before anything
 * runs, with FSC_ECONFIG and the string in err. */
int fsc_whatif_run(const fsc_request_stream_t *rs, const char *const *configs, size_t n,
                   const fsc_whatif_opts_t *opts, fsc_whatif_result_t *out, fsc_err_t *err);

/* ---- fidelity --------------------------------------------------------------- */

typedef struct fsc_whatif_verify {
    int match;                    /* segments, both peaks all equal */
    uint64_t segments_expected, segments_got;
    long first_divergence;        /* index in the segment sequence; -1 none */
    uint8_t expected_type, got_type;  /* FSC_EV_SEGMENT_ALLOC / _MAP; 0 = none */
    uint64_t expected_size, got_size;
    uint64_t expected_addr, got_addr;
    uint64_t peak_reserved_expected, peak_reserved_got;
    uint64_t peak_allocated_expected, peak_allocated_got;
    uint64_t allocs_compared;     /* recorded allocations (not OOMs) */
    uint64_t alloc_addr_matches;  /* replayed at the recorded address */
    long first_addr_mismatch;     /* request index; -1 none */
    uint64_t mismatch_event;      /* that request's recorded event index */
    uint64_t mismatch_expected_addr, mismatch_got_addr; /* recorded / replayed (0: failed) */
    int oom_expected, oom_got;    /* recorded OOM events / replay OOM */
    fsc_whatif_result_t replay;
    /* The first address that differs: bytes asked for, and the size the
     * replay's settings round them to. */
    uint64_t mismatch_requested, mismatch_rounded;
    /* fsc_whatif_verify_against only: the two recordings asked for
     * different bytes at request first_request_diff (-1 none), so they are
     * not the same job past it and the comparison stopped there; the
     * requests each recording made and those compared (up to where either
     * ends, or that one). */
    long first_request_diff;
    uint64_t diff_requested_a, diff_requested_b;
    uint64_t requests_a, requests_b, requests_compared;
} fsc_whatif_verify_t;

/* Replay rs with its own config and capacity (opts->capacity overrides when
 * not 0; a recording that ran out of memory under a cap it does not record
 * is replayed at info.capacity_lower, which fails where it failed) and
 * compare with the recording: the sequence of SEGMENT_ALLOC /
 * SEGMENT_MAP sizes, peak reserved, peak allocated, block addresses. */
int fsc_whatif_verify(const fsc_request_stream_t *rs, const fsc_whatif_opts_t *opts,
                      fsc_whatif_verify_t *out, fsc_err_t *err);

/* Cross-setting check: replay recording `a` under `config` (NULL = the
 * settings `b` records) at b's cap (opts->capacity overrides; else b's
 * recorded cap, or the lowest cap b is consistent with when it ran out of
 * memory under one it does not record), and compare with recording `b`,
 * the same job run under those settings: b's segment sequence, both of
 * b's peaks, and b's block address for each request, in order. Both must
 * be whole runs (no window of a ring): FSC_EINVAL otherwise. The replay
 * stops where either recording's requests end, or where the two first ask
 * for different bytes (first_request_diff): past it they are not the same
 * job. match: every compared address, segments and peaks equal, and b's
 * OOM (or none) reproduced. */
int fsc_whatif_verify_against(const fsc_request_stream_t *a, const fsc_request_stream_t *b,
                              const char *config, const fsc_whatif_opts_t *opts,
                              fsc_whatif_verify_t *out, fsc_err_t *err);

/* ---- suggestions ------------------------------------------------------------ */

typedef struct fsc_suggestion {
    char config[FSC_WHATIF_TEXT_MAX];
    uint64_t capacity;         /* capacity of the replay below; 0 = unlimited */
    int avoids_oom;            /* the replay at `capacity` did not OOM */
    uint64_t first_oom_event;  /* when it did OOM: its recorded event index */
    uint64_t peak_reserved, peak_allocated;
    uint64_t needed_capacity;  /* smallest capacity without OOM (to 2 MiB);
                                  0 = none up to the search's limit */
    uint64_t baseline_needed;  /* the same for the baseline config */
    uint64_t baseline_peak_reserved; /* baseline at `capacity` */
    int baseline_oom;
    int run_complete;          /* as fsc_whatif_result_t.run_complete */
    int has_margin;            /* margin: as fsc_whatif_result_t, at `capacity` */
    uint64_t margin;
    char note[FSC_WHATIF_NOTE_MAX]; /* "needs 17.43 GiB instead of 20.51 GiB" */
    /* 1: does better than the baseline (the list); 0: the baseline ran out
     * of memory at `capacity` and this setting does too, at one end of the
     * cap's range at least: it does not help, and follows the list. */
    int helps;
    /* The cap was not recorded but inferred to lie in [capacity,
     * capacity_upper) (0: known). Then avoids_oom means served at both
     * ends (capacity and capacity_upper - 1), and margin is the smaller of
     * the two margins, at the end margin_at_upper says. */
    uint64_t capacity_upper;
    int avoids_at_lower, avoids_at_upper;
    int margin_at_upper;
    /* Whether it serves the failed request depends on where the driver
     * places segments (fsc_whatif_result_t.placement_decides): some of the
     * placements tried run out of memory, others do not. Such a setting is
     * never claimed to help. */
    int placement_decides;
} fsc_suggestion_t;

/* Bisection precision of the needed capacity. */
#define FSC_WHATIF_CAPACITY_STEP (2 * FSC_MiB)

/* Smallest capacity (a multiple of FSC_WHATIF_CAPACITY_STEP) with which
 * `config` replays rs without an OOM, by bisection (the outcome is assumed
 * monotonic in the capacity). *out = 0 when even `limit` bytes (0 = 4× the
 * unlimited replay's peak reserved) are not enough. */
int fsc_whatif_needed_capacity(const fsc_request_stream_t *rs, const char *config,
                               uint64_t limit, uint64_t *out, fsc_err_t *err);

/* Try the grid of settings (docs/whatif.md) against the baseline (rs's own
 * config) at `capacity` (0 = the stream's capacity, else unlimited) and
 * return, best first, those that do better (helps = 1): where the baseline
 * runs out of memory there, those that avoid it (at both ends of the cap's
 * range when it is inferred); else those that need less capacity or
 * reserve less at the peak. After them (helps = 0) the settings that do
 * not avoid the baseline's OOM. *out is malloc'd (free with
 * fsc_suggestions_free); *n may be 0. */
int fsc_whatif_suggest(const fsc_request_stream_t *rs, uint64_t capacity,
                       fsc_suggestion_t **out, size_t *n, fsc_err_t *err);
/* Same with threads and progress from opts (opts->capacity is the capacity;
 * past_oom is ignored). */
int fsc_whatif_suggest_opts(const fsc_request_stream_t *rs, const fsc_whatif_opts_t *opts,
                            fsc_suggestion_t **out, size_t *n, fsc_err_t *err);
void fsc_suggestions_free(fsc_suggestion_t *s); /* NULL ok */

/* Fill table `suggestions` of the run database at db_path (docs/schema.md)
 * from rs, the request stream of the same run: one row per suggested config
 * for every row of `ooms` (oom_id set; avoids_oom says whether the config
 * gets past that OOM's request), or rows with oom_id NULL when the run had
 * no OOM. Replaces the table's previous rows in one transaction.
 * *rows_out (may be NULL) receives the number of rows written. */
int fsc_whatif_fill_db(const char *db_path, const fsc_request_stream_t *rs, uint64_t capacity,
                       size_t *rows_out, fsc_err_t *err);
/* Same with threads and progress from opts (opts->capacity as above). */
int fsc_whatif_fill_db_opts(const char *db_path, const fsc_request_stream_t *rs,
                            const fsc_whatif_opts_t *opts, size_t *rows_out, fsc_err_t *err);
/* Same for the run of a job database that job picks (--rank R / --run N,
 * with the errors of report/check/diff; job may be NULL). A database of
 * several runs without a pick is FSC_EINVAL with a message listing them:
 * rs is one recording, and its suggestions belong to its own run only.
 * Only that run's rows of `suggestions` are replaced. */
int fsc_whatif_fill_db_job(const char *db_path, const fsc_request_stream_t *rs,
                           const fsc_whatif_opts_t *opts, const fsc_job_opts_t *job,
                           size_t *rows_out, fsc_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_WHATIF_H */
