/*
 * finish.h — the figures derived once the stream has ended (finish.c): the
 * state at the allocated peak (from its layout), the bins, the tag
 * statistics and the headline summary, as rows for the store. Internal to
 * the analyzer.
 */
#ifndef FSC_ANALYZER_FINISH_H
#define FSC_ANALYZER_FINISH_H

#include "replay.h"

/* Figures at the allocated peak, from its layout. */
typedef struct fsc__peak {
    uint64_t reserved, internal, free_bytes[2], largest[2];
    uint64_t inactive_blocks, inactive_bytes;
    uint64_t *tag_blocks, *tag_bytes; /* [ntags + 1] */
    uint64_t bin_live_blocks[FSC__NBINS], bin_live_bytes[FSC__NBINS];
    uint64_t bin_free_blocks[FSC__NBINS], bin_free_bytes[FSC__NBINS];
} fsc__peak_t;

/* What the run counted outside the replay. */
typedef struct fsc__run_counts {
    uint64_t events, first_time, max_time, warnings, num_ooms;
    int first_oom_cause;
    const uint64_t *type_count; /* [FSC_EV__COUNT] */
    uint64_t leaked_blocks, leaked_bytes;
} fsc__run_counts_t;

/* One row of table summary. */
typedef struct fsc__sumrow {
    const char *key, *unit;
    double value;
    int is_real;
} fsc__sumrow_t;

#define FSC__SUMMARY_MAX 96

typedef struct fsc__binrow {
    int bin;
    uint64_t lo, hi, requests, requested_bytes, allocated_bytes, waste;
    uint64_t hits, misses;
    double hit_rate;
    uint64_t splits, merges, peak_live_blocks, peak_live_bytes;
    uint64_t live_at_peak_blocks, live_at_peak_bytes, free_at_peak_blocks, free_at_peak_bytes;
} fsc__binrow_t;

typedef struct fsc__tagstat {
    uint64_t tag, allocs, alloc_bytes, peak_blocks, peak_bytes, live_blocks, live_bytes;
} fsc__tagstat_t;

/* Returns 0 or FSC_ENOMEM; free with fsc__peak_free either way. */
int fsc__peak_facts(const fsc__replay_t *r, fsc__peak_t *p);
void fsc__peak_free(fsc__peak_t *p);
/* The rows of table bins (*n of them, at most FSC__NBINS). */
void fsc__bin_rows(const fsc__replay_t *r, const fsc__peak_t *p, fsc__binrow_t *rows, size_t *n);
/* The tag_stats row of tag t; 0 when the tag has none. */
int fsc__tagstat_row(const fsc__replay_t *r, const fsc__peak_t *p, size_t t, fsc__tagstat_t *row);
/* The summary rows (*n, at most FSC__SUMMARY_MAX) and the headline figures. */
void fsc__summary_rows(const fsc__replay_t *r, const fsc__peak_t *p, const fsc__run_counts_t *c,
                       fsc__sumrow_t *rows, size_t *n, fsc_analysis_summary_t *o);

#endif
