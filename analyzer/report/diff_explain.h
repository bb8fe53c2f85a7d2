/*
 * diff_explain.h — what `fragscope diff` reads of two runs to explain the
 * change of peak reserved (diff_explain.c) and how it writes it out
 * (diff_explain_out.c: text, Markdown, JSON, JUnit, annotations). Internal
 * to the report part.
 */
#ifndef FSC_ANALYZER_DIFF_EXPLAIN_H
#define FSC_ANALYZER_DIFF_EXPLAIN_H

#include <stdint.h>
#include <stdio.h>

#include "fragscope/rundb.h"

/* One call site: the live bytes of one run at its allocated peak. */
typedef struct dx_site {
    char *name;          /* as `report` names the tag (depth 2) */
    int64_t bytes[2];    /* block bytes live at A's / B's allocated peak */
    int64_t req[2];      /* requested bytes of those blocks */
    int64_t blocks[2];
    char *files;         /* its frames with a file, "FILE:LINE\n" innermost first */
} dx_site_t;

/* What the explanation needs of one run. */
typedef struct dx_run {
    const char *name;     /* the input as given */
    int64_t peak_alloc, peak_alloc_seq, peak_res, peak_res_seq;
    int has_layout;       /* the blocks live at the allocated peak are stored */
    int64_t live_bytes, live_req; /* their sums (= peak_alloc when stored) */
    int has_classes;      /* the split at the reserved peak is stored */
    int64_t res_at_res, alloc_at_res; /* reserved, allocated at the reserved peak */
    int64_t cls[5];       /* soft, hard, stream, private pool, pending there */
    int64_t ooms;
    char config[256];
    int64_t capacity;     /* 0 = unknown */
    int capacity_inferred;
    int64_t device_total; /* 0 = unknown */
    int window;           /* a snapshot's history that starts mid-run */
    /* steps: the peaks between step markers (docs/metrics.md) */
    int nsteps;
    int64_t *step_alloc, *step_res;
    int steps_res_sampled; /* the reserved step peaks come from timeline buckets
                              wider than one event */
} dx_run_t;

enum { DX_SOFT, DX_HARD, DX_STREAM, DX_POOL, DX_PENDING, DX_NCLS };

typedef struct dx {
    dx_run_t run[2];
    dx_site_t *sites;
    size_t nsites;
    /* the parts (B − A), adding up as rundb.h says: program + rounding +
     * frag + moment = d_res */
    int64_t d_res, d_alloc, program, rounding, cls[DX_NCLS], frag, moment, allocator;
    int exact;            /* both runs have layout and classes: the split holds */
    int first_step_diff;  /* 1-based; 0 none; -1 steps not comparable */
    /* thresholds */
    size_t nthr;
    const fsc_diff_threshold_t *thr;
    int64_t *thr_base, *thr_new; /* the figures each threshold compared */
    int *thr_failed;
    int failed;
    const fsc_diff_settings_t *settings;
} dx_t;

extern const char *const fsc__dx_class_names[DX_NCLS];

/* Sums and differences of figures read from a database saturate instead of
 * overflowing: a damaged file may hold any value. */
static inline int64_t fsc__dx_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t fsc__dx_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* |v| as unsigned, defined for INT64_MIN too */
static inline uint64_t fsc__dx_abs(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* The figure a threshold is about, for run k. */
int64_t fsc__dx_metric(const dx_t *d, int k, fsc_diff_metric_t m);
const char *fsc__dx_metric_name(fsc_diff_metric_t m);
/* "grown", "shrunk", "new", "gone" or "same". */
const char *fsc__dx_site_status(const dx_site_t *s);

/* Write d in o->format to out. */
int fsc__dx_write(const dx_t *d, const fsc_diff_opts_t *o, FILE *out);
/* The compare page (diff_explain_html.c). */
void fsc__dx_html(const dx_t *d, const fsc_diff_opts_t *o, FILE *out);
/* The annotation lines for the sites that grew, whose file exists under
 * root. */
void fsc__dx_annotations(const dx_t *d, const char *root, FILE *out);

#endif
