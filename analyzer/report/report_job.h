/*
 * report_job.h — a job database (several runs: ranks, devices) read into one
 * model (job.c): per run its peaks, capacity and headroom, its first OOM;
 * over the job the least-headroom run, the run that ran out of memory first
 * and on what clock that order rests, the spread of the peaks, and which
 * run the report's detail is about. The report (report.c, job_print.c),
 * check (check.c), diff (diff_job.c) and the viewer's job page
 * (viewer/job_model.c, which links this part) read runs the same way
 * through it, so they name the same runs. Internal to the report part and
 * the viewer.
 */
#ifndef FSC_ANALYZER_REPORT_JOB_H
#define FSC_ANALYZER_REPORT_JOB_H

#include <stdint.h>
#include <stdio.h>

#include "fragscope/rundb.h"

typedef struct job_run {
    int64_t run, rank, device, pid; /* FSC_RUNDB_NULL = unknown */
    char *host, *source, *kind;     /* owned; host NULL when unknown */
    char label[256];                /* fsc_rundb_run_label */
    char name[256]; /* what the job section calls it: the label, shorter without a rank
                       ("device 1" of one snapshot, "run 2 (a.fstrace)") */
    int64_t peak_allocated, peak_reserved;
    int capacity_known;
    int64_t capacity, headroom; /* valid when capacity_known */
    /* capacity unknown: what the run proves about it. lower: the most it
     * reserved (inclusive); upper: reserved + the segment that did not fit
     * at its OOMs (exclusive), else the device's total (inclusive);
     * FSC_RUNDB_NULL = no bound. */
    int64_t cap_lower, cap_upper;
    int cap_upper_exclusive;
    int64_t device_total;    /* 0 = unknown */
    int64_t clock_origin_ns; /* wall-clock ns of the run's time 0; 0 = unknown */
    int64_t ooms;
    /* the run's first OOM (FSC_RUNDB_NULL: none) */
    int64_t oom_id, oom_seq, oom_time_ns, oom_requested, oom_reserved;
    int64_t oom_external; /* device total − free − reserved at it; -1 unknown */
    char oom_cause[24];
} job_run_t;

typedef struct job_spread {
    int64_t min, max;
    double median, max_over_min; /* max_over_min 0 when min is 0 */
    int min_i, max_i;            /* indices into runs */
} job_spread_t;

enum {
    JOB_ORDER_NONE = 0, /* no run ran out of memory */
    JOB_ORDER_ONLY,     /* one run did: no order needed */
    JOB_ORDER_WALL,     /* every OOM run's clock is wall time */
    JOB_ORDER_SINCE_START /* some clock unknown: time since each run began */
};

typedef struct job {
    const char *db_path;
    job_run_t *runs;
    int n;
    int nknown;    /* runs whose capacity is known */
    int least;     /* index of the least-headroom run; -1 when no capacity is known */
    int *oom_order; /* indices of the runs with an OOM, first first */
    int noom;
    int order;           /* JOB_ORDER_* */
    char order_note[512]; /* what the order rests on, in words */
    int nhosts;          /* distinct known hosts */
    job_spread_t alloc, reserved;
    int detail;            /* index of the run the detail is about */
    char detail_why[256];  /* why, in words */
} job_t;

/* Read every run of db into j (the selected run is left unspecified). */
int fsc__report_job_load(fsc_rundb_t *db, job_t *j, fsc_err_t *err);
/* The run o asks for (--rank / --run) into *idx, FSC_ENOENT / FSC_EINVAL
 * with a message naming the database when there is none or the rank names
 * several runs; without either, *idx = -1. */
int fsc__report_job_find(const job_t *j, const fsc_job_opts_t *o, int *idx, fsc_err_t *err);
/* Pick the run the report's detail is about (j->detail, j->detail_why). */
int fsc__report_job_pick(job_t *j, const fsc_job_opts_t *o, fsc_err_t *err);
void fsc__report_job_free(job_t *j);
/* The summary values keys[0..nkeys) of every run, v[i * nkeys + k] (0 when
 * absent; have[] says which are present): one pass over the summary table
 * of a job database. */
int fsc__report_job_values(fsc_rundb_t *db, const job_t *j, const char *const *keys, int nkeys,
                           double *v, unsigned char *have);

/* "12.345 s after its recording began" / "2026-12-01 23:01:02.123 UTC". */
void fsc__report_job_oom_when(const job_t *j, const job_run_t *r, char *buf, size_t cap);

/* job_print.c: the job section. */
void fsc__report_job_text(const job_t *j, int all_ranks, FILE *f);
void fsc__report_job_markdown(const job_t *j, int all_ranks, FILE *f);
struct cJSON;
/* "ranks", "job" and "detail_run" into root. */
void fsc__report_job_json(const job_t *j, struct cJSON *root);

#endif
