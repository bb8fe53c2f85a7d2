/*
 * job_model.c — what the overview of a job database shows, read through
 * the run database reader one run at a time (fsc_rundb_select_run): each
 * run's timeline folded into a fixed number of points (the maxima of
 * allocated and reserved per point, so no peak is lost) with its first OOM
 * marks, and which runs the page carries in detail.
 *
 * The per-run figures (peaks, capacity, OOMs) and the job's marks (the run
 * that ran out of memory first and the clock that order rests on, the run
 * with the least headroom, the spread of the peaks) are the report's job
 * model (analyzer/report/job.c, fsc__report_job_load): one definition, so
 * the page and `fragscope report` name the same runs (ties: the lower run,
 * docs/metrics.md "Jobs"). When no run's capacity is known there is no
 * headroom to compare, and the run with the highest peak reserved is marked
 * instead, under that name.
 */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/rundb.h"
#include "fsc/vec.h"
#include "report_job.h"

typedef struct lister {
    fsc__vjob_t *job;
    size_t cap;
    int nomem;
} lister_t;

static int run_row(const fsc_rundb_run_t *r, void *ctx)
{
    lister_t *ls = ctx;
    fsc__vjob_t *job = ls->job;
    if (fsc__vec_reserve_zero((void **)&job->runs, &ls->cap, job->n + 1, sizeof *job->runs) != 0) {
        ls->nomem = 1;
        return FSC_ENOMEM;
    }
    fsc__vrun_t *v = &job->runs[job->n++];
    v->run = r->run;
    v->rank = r->rank;
    v->device = r->device;
    fsc_rundb_run_label(r, v->label, sizeof v->label);
    return 0;
}

/* ---- one run's overview ------------------------------------------------ */

typedef struct fold {
    fsc__vrun_t *v;
    int64_t rows, row;
} fold_t;

static int tl_row(void *ud, const fsc_rundb_timeline_t *x)
{
    fold_t *f = ud;
    fsc__vrun_t *v = f->v;
    size_t n = f->rows > FSC__VJOB_POINTS ? FSC__VJOB_POINTS : (size_t)f->rows;
    size_t b = (size_t)((uint64_t)f->row * n / (uint64_t)f->rows);
    if (b >= n)
        b = n - 1;
    int64_t a = x->allocated_max != FSC_RUNDB_NULL ? x->allocated_max : x->allocated;
    int64_t r = x->reserved_max != FSC_RUNDB_NULL ? x->reserved_max : x->reserved;
    if (f->row == 0)
        v->seq0 = x->seq_first != FSC_RUNDB_NULL ? x->seq_first : 0;
    if (x->seq_last != FSC_RUNDB_NULL && x->seq_last > v->seq_end)
        v->seq_end = x->seq_last;
    if (b >= v->npts) {
        v->npts = b + 1;
        v->alloc[b] = a == FSC_RUNDB_NULL ? 0 : a;
        v->res[b] = r == FSC_RUNDB_NULL ? 0 : r;
    } else {
        if (a != FSC_RUNDB_NULL && a > v->alloc[b])
            v->alloc[b] = a;
        if (r != FSC_RUNDB_NULL && r > v->res[b])
            v->res[b] = r;
    }
    f->row++;
    return 0;
}

static int oom_row(void *ud, const fsc_rundb_oom_t *o)
{
    fsc__vrun_t *v = ud;
    if (v->nmarks < FSC__VJOB_OOM_MARKS && o->seq != FSC_RUNDB_NULL)
        v->mark_seq[v->nmarks++] = o->seq;
    return 0;
}

/* The run's figures from the report's job model. */
static void take_figures(fsc__vrun_t *v, const job_run_t *r)
{
    v->peak_alloc = r->peak_allocated;
    v->peak_res = r->peak_reserved;
    v->capacity = r->capacity_known ? r->capacity : -1;
    v->cap_lower = !r->capacity_known && r->cap_lower != FSC_RUNDB_NULL ? r->cap_lower : -1;
    v->cap_upper = !r->capacity_known && r->cap_upper != FSC_RUNDB_NULL ? r->cap_upper : -1;
    v->clock_origin = r->clock_origin_ns > 0 ? r->clock_origin_ns : 0;
    v->nooms = r->ooms;
    v->first_oom_t = v->first_oom_seq = -1;
    if (r->oom_id != FSC_RUNDB_NULL) {
        v->first_oom_t = r->oom_time_ns != FSC_RUNDB_NULL ? r->oom_time_ns : 0;
        v->first_oom_seq = r->oom_seq != FSC_RUNDB_NULL ? r->oom_seq : 0;
        snprintf(v->first_cause, sizeof v->first_cause, "%s",
                 r->oom_cause[0] ? r->oom_cause : "unknown");
    }
}

static int load_run(fsc_rundb_t *db, fsc__vrun_t *v)
{
    int rc = fsc_rundb_select_run(db, v->run);
    fold_t f = {v, 0, 0};
    if (rc == 0)
        rc = fsc_rundb_count(db, "timeline", &f.rows);
    if (rc == 0 && f.rows > 0)
        rc = fsc_rundb_timeline(db, tl_row, &f);
    if (rc == 0)
        rc = fsc_rundb_ooms(db, oom_row, v);
    if (rc == 0 && v->seq_end <= v->seq0) {
        int64_t events = 0;
        rc = fsc_rundb_summary_int(db, "events", 0, &events);
        v->seq_end = v->seq0 + (events > 0 ? events : 1);
    }
    return rc;
}

/* ---- the marks and the runs with detail -------------------------------- */

static const fsc__vjob_t *g_sort_job; /* qsort has no context argument */

static int by_rank(const void *pa, const void *pb)
{
    const fsc__vrun_t *a = &g_sort_job->runs[*(const size_t *)pa];
    const fsc__vrun_t *b = &g_sort_job->runs[*(const size_t *)pb];
    int ua = a->rank == FSC_RUNDB_NULL, ub = b->rank == FSC_RUNDB_NULL;
    if (ua != ub)
        return ua - ub;
    if (!ua && a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->run > b->run) - (a->run < b->run);
}

/* The job's marks, as the report's job model ranks them. */
static void pick_marks(fsc__vjob_t *job, const job_t *j)
{
    job->first_oom = j->noom > 0 ? j->oom_order[0] : -1;
    job->least_headroom = j->least;
    job->highest_peak = -1;
    if (j->least < 0 && j->reserved.max > 0)
        job->highest_peak = j->reserved.max_i;
    /* wall clock unless the order rests on the time since each start */
    job->oom_wall_clock = j->order == JOB_ORDER_WALL || j->order == JOB_ORDER_NONE ||
                          (j->order == JOB_ORDER_ONLY && job->runs[job->first_oom].clock_origin > 0);
    for (size_t i = 0; i < job->n; i++) {
        const fsc__vrun_t *v = &job->runs[i];
        if (v->peak_res > job->ymax)
            job->ymax = v->peak_res;
        if (v->capacity > job->ymax)
            job->ymax = v->capacity;
    }
    if (job->first_oom >= 0)
        job->runs[job->first_oom].marks |= FSC__VJOB_FIRST_OOM;
    if (job->least_headroom >= 0)
        job->runs[job->least_headroom].marks |= FSC__VJOB_LEAST_HEADROOM;
    if (job->highest_peak >= 0)
        job->runs[job->highest_peak].marks |= FSC__VJOB_HIGHEST_PEAK;
    if (job->ymax <= 0)
        job->ymax = 1;
}

static long find_run(const fsc__vjob_t *job, int64_t run)
{
    for (size_t i = 0; i < job->n; i++)
        if (job->runs[i].run == run)
            return (long)i;
    return -1;
}

static long find_rank(const fsc__vjob_t *job, int64_t rank)
{
    for (size_t k = 0; k < job->n; k++)
        if (job->runs[job->order[k]].rank == rank)
            return (long)job->order[k];
    return -1;
}

static int by_peak(const void *pa, const void *pb)
{
    const fsc__vrun_t *a = &g_sort_job->runs[*(const size_t *)pa];
    const fsc__vrun_t *b = &g_sort_job->runs[*(const size_t *)pb];
    if (a->peak_res != b->peak_res)
        return a->peak_res < b->peak_res ? -1 : 1;
    return (a->run > b->run) - (a->run < b->run);
}

/* Which runs get a chart of their own: all up to the overview limit;
 * beyond it the marked and carried runs, the largest and smallest peaks
 * reserved, then the runs with OOMs in rank order while fewer than the
 * limit are drawn. The page stays near limit x 3 KB however many runs. */
static void pick_drawn(fsc__vjob_t *job, const fsc_view_opts_t *o)
{
    job->olimit = o->overview_limit ? o->overview_limit : FSC__VJOB_DRAWN_DEFAULT;
    job->ndrawn = 0;
    if (job->n <= job->olimit || job->order == NULL) {
        for (size_t i = 0; i < job->n; i++)
            job->runs[i].drawn = 1;
        job->ndrawn = job->n;
        return;
    }
    for (size_t i = 0; i < job->n; i++) {
        fsc__vrun_t *v = &job->runs[i];
        v->drawn = v->marks != 0 || v->detail != 0;
    }
    size_t *byp = malloc(job->n * sizeof *byp);
    if (byp != NULL) {
        for (size_t i = 0; i < job->n; i++)
            byp[i] = i;
        g_sort_job = job;
        qsort(byp, job->n, sizeof *byp, by_peak);
        g_sort_job = NULL;
        size_t ext = job->olimit / 32;
        ext = ext < 1 ? 1 : ext > FSC__VJOB_EXTREMES ? FSC__VJOB_EXTREMES : ext;
        for (size_t k = 0; k < ext && k < job->n; k++) {
            job->runs[byp[k]].drawn = 1;
            job->runs[byp[job->n - 1 - k]].drawn = 1;
        }
        free(byp);
    }
    for (size_t i = 0; i < job->n; i++)
        job->ndrawn += job->runs[i].drawn;
    for (size_t k = 0; k < job->n && job->ndrawn < job->olimit; k++) {
        fsc__vrun_t *v = &job->runs[job->order[k]];
        if (!v->drawn && v->nooms > 0) {
            v->drawn = 1;
            job->ndrawn++;
        }
    }
}

static int pick_detail(const char *path, fsc__vjob_t *job, const fsc_view_opts_t *o, fsc_err_t *err)
{
    if (job->n == 0)
        return fsc_err_set(err, FSC_EFORMAT, "%s: the database lists no run", path);
    job->limit = o->detail_limit ? o->detail_limit : FSC__VJOB_DETAIL_DEFAULT;
    for (size_t k = 0; k < o->nruns; k++) {
        long i = find_run(job, o->runs[k]);
        if (i < 0)
            return fsc_err_set(err, FSC_ENOENT, "%s: no run %lld (the runs are %lld to %lld)", path,
                               (long long)o->runs[k], (long long)job->runs[0].run,
                               (long long)job->runs[job->n - 1].run);
        job->runs[i].detail |= FSC__VJOB_NAMED;
    }
    job->open = -1;
    if (o->open_by == FSC_VIEW_OPEN_RUN || o->open_by == FSC_VIEW_OPEN_RANK) {
        int rank = o->open_by == FSC_VIEW_OPEN_RANK;
        job->open = rank ? find_rank(job, o->open_value) : find_run(job, o->open_value);
        if (job->open < 0)
            return fsc_err_set(err, FSC_ENOENT, "%s: no %s %lld in this database", path,
                               rank ? "rank" : "run", (long long)o->open_value);
        job->runs[job->open].detail |= FSC__VJOB_NAMED;
    }
    for (size_t i = 0; i < job->n; i++) {
        fsc__vrun_t *v = &job->runs[i];
        if (job->n <= job->limit)
            v->detail |= FSC__VJOB_ALL;
        v->detail |= v->marks;
    }
    if (job->open < 0)
        job->open = job->first_oom >= 0        ? job->first_oom
                    : job->least_headroom >= 0 ? job->least_headroom
                                               : -1;
    if (job->open < 0) {
        /* The lowest rank carried, else the lowest rank. */
        for (size_t k = 0; k < job->n && job->open < 0; k++)
            if (job->runs[job->order[k]].detail)
                job->open = (long)job->order[k];
        if (job->open < 0) {
            job->open = (long)job->order[0];
            job->runs[job->open].detail |= FSC__VJOB_FIRST;
        }
    }
    job->ndetail = 0;
    for (size_t i = 0; i < job->n; i++)
        job->ndetail += job->runs[i].detail != 0;
    pick_drawn(job, o);
    return 0;
}

int fsc__job_load(const char *db_path, const fsc_view_opts_t *opts, fsc__vjob_t *job,
                  fsc_err_t *err)
{
    memset(job, 0, sizeof *job);
    fsc_rundb_t *db = NULL;
    int rc = fsc_rundb_open(db_path, &db, err);
    if (rc != 0)
        return rc;
    int64_t count = 0;
    lister_t ls = {job, 0, 0};
    if ((rc = fsc_rundb_run_count(db, &count)) == 0)
        rc = fsc_rundb_each_run(db, run_row, &ls);
    if (rc == 0 && count <= 1 && job->n == 1) {
        /* One run: the page of today; the options may only name it. */
        job->order = &(size_t){0};
        rc = pick_detail(db_path, job, opts, err);
        job->order = NULL;
        fsc_rundb_close(db);
        fsc__job_free(job);
        job->n = 1;
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < job->n; i++)
        rc = load_run(db, &job->runs[i]);
    if (rc != 0) {
        if (ls.nomem)
            fsc_err_set(err, FSC_ENOMEM, "%s: out of memory while reading the runs", db_path);
        else
            fsc_err_copy(err, fsc_rundb_error(db));
    }
    job_t rj;
    memset(&rj, 0, sizeof rj);
    if (rc == 0 && job->n > 1) {
        rc = fsc__report_job_load(db, &rj, err);
        if (rc == 0 && (size_t)rj.n != job->n)
            rc = fsc_err_set(err, FSC_EFORMAT, "%s: the runs changed while being read", db_path);
        for (size_t i = 0; rc == 0 && i < job->n; i++)
            take_figures(&job->runs[i], &rj.runs[i]);
    }
    fsc_rundb_close(db);
    if (rc != 0 || job->n <= 1) {
        size_t n = job->n;
        fsc__report_job_free(&rj);
        fsc__job_free(job);
        job->n = rc == 0 ? n : 0;
        return rc;
    }
    const char *base = strrchr(db_path, '/');
    job->db_name = malloc(strlen(base ? base + 1 : db_path) + 1);
    job->order = malloc(job->n * sizeof *job->order);
    if (job->db_name == NULL || job->order == NULL) {
        fsc__report_job_free(&rj);
        fsc__job_free(job);
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory while reading the runs", db_path);
    }
    strcpy(job->db_name, base ? base + 1 : db_path);
    for (size_t i = 0; i < job->n; i++)
        job->order[i] = i;
    g_sort_job = job;
    qsort(job->order, job->n, sizeof *job->order, by_rank);
    g_sort_job = NULL;
    pick_marks(job, &rj);
    fsc__report_job_free(&rj);
    if ((rc = pick_detail(db_path, job, opts, err)) != 0)
        fsc__job_free(job);
    return rc;
}

void fsc__job_free(fsc__vjob_t *job)
{
    free(job->runs);
    free(job->order);
    free(job->db_name);
    memset(job, 0, sizeof *job);
}
