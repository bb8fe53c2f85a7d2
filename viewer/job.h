/*
 * job.h — the report of a job database (several runs: ranks, devices,
 * inputs) (internal).
 *
 * A job page is the page of one run (the run shown first) with two things
 * added: an overview of every run as small multiples, and the detail of a
 * bounded set of other runs (their static summary in a <template>, their
 * data block as `data-run-N`), which the rank picker swaps in. The overview
 * is read for every run in one pass over the database, a fixed number of
 * points per run; the detail is loaded one run at a time, so memory is that
 * of one run's model plus the overview.
 */
#ifndef FSC_VIEWER_JOB_H
#define FSC_VIEWER_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/viewer.h"
#include "sbuf.h"

#define FSC__VJOB_POINTS 120        /* overview points per run (bucket maxima) */
#define FSC__VJOB_OOM_MARKS 16      /* OOM marks drawn per run (the first ones) */
#define FSC__VJOB_DETAIL_DEFAULT 8  /* runs carried whole up to this many */
#define FSC__VJOB_DRAWN_DEFAULT 256 /* runs drawn as a chart each up to this many */
#define FSC__VJOB_EXTREMES 8        /* beyond it: the largest and smallest peaks drawn (at most; limit / 32, at least 1) */

/* Why a run's detail is in the page. */
enum {
    FSC__VJOB_ALL = 1,            /* the job has at most the limit of runs */
    FSC__VJOB_FIRST_OOM = 2,      /* its first OOM is the job's earliest */
    FSC__VJOB_LEAST_HEADROOM = 4, /* capacity − peak reserved is the least */
    FSC__VJOB_HIGHEST_PEAK = 8,   /* no capacity known: the highest peak reserved */
    FSC__VJOB_NAMED = 16,         /* --runs, --run or --rank */
    FSC__VJOB_FIRST = 32          /* none of the above: the first run by rank */
};

typedef struct fsc__vrun {
    int64_t run, rank, device;
    char label[224];            /* fsc_rundb_run_label's words */
    int64_t peak_alloc, peak_res; /* -1 = unknown */
    int64_t capacity;           /* -1 = unknown (0 in meta, or inferred) */
    int64_t cap_lower, cap_upper; /* unknown capacity: what the run proves; -1 = no bound */
    int64_t nooms, first_oom_t, first_oom_seq; /* -1 = none */
    int64_t clock_origin;       /* meta.clock_origin_ns: wall clock of time 0; 0 = unknown */
    char first_cause[24];
    int64_t seq0, seq_end;      /* the events the chart spans */
    size_t npts;                /* overview points: bucket maxima */
    int64_t alloc[FSC__VJOB_POINTS], res[FSC__VJOB_POINTS];
    size_t nmarks;
    int64_t mark_seq[FSC__VJOB_OOM_MARKS];
    int detail;                 /* FSC__VJOB_* flags; 0 = no detail in the page */
    int marks;                  /* FSC__VJOB_FIRST_OOM / LEAST_HEADROOM / HIGHEST_PEAK */
    int drawn;                  /* a chart of its own in the overview (else in the aggregate) */
} fsc__vrun_t;

typedef struct fsc__vjob {
    fsc__vrun_t *runs;          /* in run order */
    size_t n;
    size_t *order;              /* indices by rank (unknown ranks last, by run) */
    long first_oom, least_headroom, highest_peak; /* indices, -1 = none */
    int oom_wall_clock;         /* first OOMs compared by wall clock (else by time
                                 * since each run's start: a run lacks its origin) */
    long open;                  /* the run shown first */
    size_t ndetail, limit;
    size_t ndrawn, olimit;      /* runs drawn as a chart each; the overview limit */
    int64_t ymax;               /* shared y scale of the small charts */
    char *db_name;              /* the file name, for the hint to get more detail */
} fsc__vjob_t;

/* Read the runs of db_path. When the database holds one run, job->n is 1
 * and nothing else is read (the caller renders the one-run page). Else
 * reads every run's overview and picks the runs with detail from opts
 * (runs, detail_limit, open_run / open_rank). Errors name the file. */
int fsc__job_load(const char *db_path, const fsc_view_opts_t *opts, fsc__vjob_t *job,
                  fsc_err_t *err);
void fsc__job_free(fsc__vjob_t *job);

/* The overview section (<section id="runs">) with the picker. */
void fsc__job_emit_overview(fsc__sb_t *sb, const fsc__vjob_t *job);
/* The header link to it. */
void fsc__job_emit_nav(fsc__sb_t *sb);

#endif
