/*
 * job.c — reads every run of a job database into the job model
 * (report_job.h) and derives what the job report says about them as a whole:
 * the least headroom under a known capacity, the run that ran out of memory
 * first and the clock that order rests on, and the spread of the peaks. A
 * figure that depends on something unknown (a capacity PyTorch did not
 * record, a clock a snapshot did not keep) is left out of the ranking and
 * the report says so; nothing is guessed. docs/metrics.md ("Jobs") defines
 * each figure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report_job.h"
#include "rundb_internal.h"

static int nomem(fsc_err_t *err)
{
    return fsc_err_set(err, FSC_ENOMEM, "out of memory");
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

typedef struct collect {
    job_t *j;
    int cap;
    fsc_err_t *err;
} collect_t;

static int run_row(const fsc_rundb_run_t *r, void *ud)
{
    collect_t *c = ud;
    job_t *j = c->j;
    if (j->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 16;
        job_run_t *nr = realloc(j->runs, (size_t)nc * sizeof *nr);
        if (nr == NULL)
            return nomem(c->err);
        j->runs = nr;
        c->cap = nc;
    }
    job_run_t *x = &j->runs[j->n++];
    memset(x, 0, sizeof *x);
    x->run = r->run;
    x->rank = r->rank;
    x->device = r->device;
    x->pid = r->pid;
    x->host = dup_or_null(r->host);
    x->source = strdup(r->source ? r->source : "");
    x->kind = strdup(r->kind ? r->kind : "");
    fsc_rundb_run_label(r, x->label, sizeof x->label);
    if ((r->host && !x->host) || !x->source || !x->kind)
        return nomem(c->err);
    return 0;
}

typedef struct oom_ctx {
    job_run_t *r;
    int seen;
} oom_ctx_t;

/* The first OOM (by id, which is event order) and the tightest upper bound
 * the OOMs put on an unknown capacity. */
static int oom_row(void *ud, const fsc_rundb_oom_t *o)
{
    oom_ctx_t *c = ud;
    job_run_t *r = c->r;
    if (!c->seen) {
        c->seen = 1;
        r->oom_id = o->id;
        r->oom_seq = o->seq;
        r->oom_time_ns = o->time_ns;
        r->oom_requested = o->requested;
        r->oom_reserved = o->reserved;
        r->oom_external = -1;
        if (o->device_free != FSC_RUNDB_NULL && o->device_free >= 0 &&
            o->device_total != FSC_RUNDB_NULL && o->device_total > 0) {
            int64_t x = o->device_total - o->device_free - o->reserved;
            r->oom_external = x > 0 ? x : 0;
        }
        snprintf(r->oom_cause, sizeof r->oom_cause, "%s", o->cause ? o->cause : "");
    }
    if (!r->capacity_known && o->capacity_upper != FSC_RUNDB_NULL && o->capacity_upper > 0 &&
        (r->cap_upper == FSC_RUNDB_NULL || !r->cap_upper_exclusive ||
         o->capacity_upper < r->cap_upper)) {
        r->cap_upper = o->capacity_upper;
        r->cap_upper_exclusive = 1;
    }
    if (!r->capacity_known && o->capacity_lower != FSC_RUNDB_NULL && o->capacity_lower > r->cap_lower)
        r->cap_lower = o->capacity_lower;
    return 0;
}

/* What a run's figures say once read: capacity known or bounded, headroom. */
static void settle(job_run_t *r, int64_t cap, int64_t inferred)
{
    r->capacity_known = cap > 0 && inferred == 0;
    r->capacity = r->capacity_known ? cap : 0;
    r->headroom = r->capacity_known ? cap - r->peak_reserved : 0;
    r->cap_lower = r->peak_reserved;
    r->cap_upper = FSC_RUNDB_NULL;
    r->cap_upper_exclusive = 0;
    if (!r->capacity_known && r->device_total > 0 && r->device_total >= r->peak_reserved)
        r->cap_upper = r->device_total;
    r->oom_id = r->oom_seq = r->oom_time_ns = FSC_RUNDB_NULL;
    r->oom_requested = r->oom_reserved = 0;
    r->oom_external = -1;
}

/* One run through the reader's selection (a schema-1 database). */
static int read_run(fsc_rundb_t *db, job_run_t *r)
{
    int64_t cap = 0, inferred = 0;
    int rc;
    if ((rc = fsc_rundb_select_run(db, r->run)) != 0 ||
        (rc = fsc_rundb_summary_int(db, "peak_allocated_bytes", 0, &r->peak_allocated)) != 0 ||
        (rc = fsc_rundb_summary_int(db, "peak_reserved_bytes", 0, &r->peak_reserved)) != 0 ||
        (rc = fsc_rundb_summary_int(db, "num_ooms", 0, &r->ooms)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "capacity", 0, &cap)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "capacity_inferred", 0, &inferred)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "device_total", 0, &r->device_total)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "clock_origin_ns", 0, &r->clock_origin_ns)) != 0)
        return rc;
    settle(r, cap, inferred);
    oom_ctx_t c = {r, 0};
    if ((rc = fsc_rundb_ooms(db, oom_row, &c)) != 0)
        return rc;
    if (c.seen && r->ooms == 0)
        r->ooms = 1; /* a summary without num_ooms: the table says there was one */
    return 0;
}

/* ---- every run at once (schema 2) ----------------------------------------- */

/* The index of run `run` in j->runs (in run order), -1 when none. */
static int run_index(const job_t *j, int64_t run)
{
    int lo = 0, hi = j->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (j->runs[mid].run == run)
            return mid;
        if (j->runs[mid].run < run)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int64_t col_i64(sqlite3_stmt *st, int c)
{
    return sqlite3_column_type(st, c) == SQLITE_NULL ? FSC_RUNDB_NULL : sqlite3_column_int64(st, c);
}

int fsc__report_job_values(fsc_rundb_t *db, const job_t *j, const char *const *keys, int nkeys,
                           double *v, unsigned char *have)
{
    memset(have, 0, (size_t)j->n * (size_t)nkeys);
    for (int i = 0; i < j->n * nkeys; i++)
        v[i] = 0.0;
    if (!db->has_runs) {
        /* one run: the reader's own lookups */
        for (int i = 0; i < j->n; i++) {
            int rc = fsc_rundb_select_run(db, j->runs[i].run);
            for (int k = 0; rc == 0 && k < nkeys; k++) {
                int64_t probe = 0;
                rc = fsc_rundb_summary_int(db, keys[k], INT64_MIN, &probe);
                have[i * nkeys + k] = rc == 0 && probe != INT64_MIN;
                if (rc == 0)
                    rc = fsc_rundb_summary_real(db, keys[k], 0.0, &v[i * nkeys + k]);
            }
            if (rc != 0)
                return rc;
        }
        return 0;
    }
    /* every run in one pass over main.summary: selecting each run in turn
     * would rebuild the reader's per-run views once per run */
    char *in = sqlite3_mprintf("%s", "");
    for (int k = 0; in != NULL && k < nkeys; k++) {
        char *n2 = sqlite3_mprintf("%s%s%Q", in, k ? ", " : "", keys[k]);
        sqlite3_free(in);
        in = n2;
    }
    char *sql = in ? sqlite3_mprintf("SELECT run, key, value FROM main.summary WHERE key IN (%s)",
                                     in)
                   : NULL;
    sqlite3_free(in);
    if (sql == NULL)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    sqlite3_stmt *st = NULL;
    int rc = fsc__rundb_prepare(db, "summary", sql, &st);
    sqlite3_free(sql);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        int i = run_index(j, sqlite3_column_int64(st, 0));
        const char *key = (const char *)sqlite3_column_text(st, 1);
        if (i < 0 || key == NULL || sqlite3_column_type(st, 2) == SQLITE_NULL)
            continue;
        for (int k = 0; k < nkeys; k++)
            if (strcmp(key, keys[k]) == 0) {
                v[i * nkeys + k] = sqlite3_column_double(st, 2);
                have[i * nkeys + k] = 1;
            }
    }
    rc = s == SQLITE_DONE ? 0 : fsc__rundb_fail(db, "summary");
    sqlite3_finalize(st);
    return rc;
}

static int bulk_meta(fsc_rundb_t *db, job_t *j, int64_t *cap, int64_t *inferred)
{
    sqlite3_stmt *st = NULL;
    int rc = fsc__rundb_prepare(db, "meta",
                                "SELECT run, key, value FROM main.meta WHERE key IN ('capacity', "
                                "'capacity_inferred', 'device_total', 'clock_origin_ns')", &st);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        int i = run_index(j, sqlite3_column_int64(st, 0));
        const char *key = (const char *)sqlite3_column_text(st, 1);
        if (i < 0 || key == NULL || sqlite3_column_type(st, 2) == SQLITE_NULL)
            continue;
        int64_t x = sqlite3_column_int64(st, 2);
        if (strcmp(key, "capacity") == 0)
            cap[i] = x;
        else if (strcmp(key, "capacity_inferred") == 0)
            inferred[i] = x;
        else if (strcmp(key, "device_total") == 0)
            j->runs[i].device_total = x;
        else
            j->runs[i].clock_origin_ns = x;
    }
    rc = s == SQLITE_DONE ? 0 : fsc__rundb_fail(db, "meta");
    sqlite3_finalize(st);
    return rc;
}

static int bulk_ooms(fsc_rundb_t *db, job_t *j)
{
    sqlite3_stmt *st = NULL;
    int rc = fsc__rundb_prepare(db, "ooms",
                                "SELECT run, id, seq, time_ns, requested, reserved, cause, "
                                "capacity_lower, capacity_upper, device_free, device_total FROM "
                                "main.ooms ORDER BY run, id", &st);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        int i = run_index(j, sqlite3_column_int64(st, 0));
        if (i < 0)
            continue;
        fsc_rundb_oom_t o;
        memset(&o, 0, sizeof o);
        o.id = col_i64(st, 1);
        o.seq = col_i64(st, 2);
        o.time_ns = col_i64(st, 3);
        o.requested = col_i64(st, 4);
        o.reserved = col_i64(st, 5);
        o.cause = (const char *)sqlite3_column_text(st, 6);
        o.capacity_lower = col_i64(st, 7);
        o.capacity_upper = col_i64(st, 8);
        o.device_free = col_i64(st, 9);
        o.device_total = col_i64(st, 10);
        if (o.requested == FSC_RUNDB_NULL)
            o.requested = 0;
        if (o.reserved == FSC_RUNDB_NULL)
            o.reserved = 0;
        oom_ctx_t c = {&j->runs[i], j->runs[i].oom_id != FSC_RUNDB_NULL};
        oom_row(&c, &o);
        if (j->runs[i].ooms == 0)
            j->runs[i].ooms = 1;
    }
    rc = s == SQLITE_DONE ? 0 : fsc__rundb_fail(db, "ooms");
    sqlite3_finalize(st);
    return rc;
}

/* Every run's figures with one query per table. */
static int read_bulk(fsc_rundb_t *db, job_t *j)
{
    static const char *const keys[] = {"peak_allocated_bytes", "peak_reserved_bytes", "num_ooms"};
    size_t n = (size_t)j->n;
    double *v = malloc(n * 3 * sizeof *v);
    unsigned char *have = malloc(n * 3);
    int64_t *cap = calloc(n, sizeof *cap), *inf = calloc(n, sizeof *inf);
    int rc = v && have && cap && inf ? 0 : fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory",
                                                     db->path);
    if (rc == 0)
        rc = fsc__report_job_values(db, j, keys, 3, v, have);
    if (rc == 0)
        rc = bulk_meta(db, j, cap, inf);
    for (int i = 0; rc == 0 && i < j->n; i++) {
        job_run_t *r = &j->runs[i];
        r->peak_allocated = (int64_t)v[i * 3];
        r->peak_reserved = (int64_t)v[i * 3 + 1];
        r->ooms = (int64_t)v[i * 3 + 2];
        settle(r, cap[i], inf[i]);
    }
    if (rc == 0)
        rc = bulk_ooms(db, j);
    free(v);
    free(have);
    free(cap);
    free(inf);
    return rc;
}

/* ---- over the job -------------------------------------------------------- */

typedef struct oom_key {
    int64_t key, run;
    int idx;
} oom_key_t;

static int by_oom(const void *a, const void *b)
{
    const oom_key_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->run < y->run ? -1 : x->run > y->run;
}

/* Sort j->oom_order by the time of each run's first OOM: wall-clock time,
 * or time since the run's own start. */
static int sort_ooms(job_t *j, int wall)
{
    oom_key_t *k = malloc((size_t)j->noom * sizeof *k);
    if (k == NULL)
        return FSC_ENOMEM;
    for (int i = 0; i < j->noom; i++) {
        const job_run_t *r = &j->runs[j->oom_order[i]];
        int64_t t = r->oom_time_ns == FSC_RUNDB_NULL ? 0 : r->oom_time_ns;
        k[i] = (oom_key_t){wall ? r->clock_origin_ns + t : t, r->run, j->oom_order[i]};
    }
    qsort(k, (size_t)j->noom, sizeof *k, by_oom);
    for (int i = 0; i < j->noom; i++)
        j->oom_order[i] = k[i].idx;
    free(k);
    return 0;
}

static void list_unknown_clocks(job_t *j, char *buf, size_t cap)
{
    size_t len = 0;
    int shown = 0, more = 0;
    buf[0] = '\0';
    for (int k = 0; k < j->noom; k++) {
        const job_run_t *r = &j->runs[j->oom_order[k]];
        if (r->clock_origin_ns > 0)
            continue;
        if (shown == 3) {
            more++;
            continue;
        }
        len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s", shown ? ", " : "",
                                r->name);
        shown++;
    }
    if (more && len < cap)
        snprintf(buf + len, cap - len, " and %d more", more);
}

static int order_ooms(job_t *j)
{
    j->noom = 0;
    int all_wall = 1;
    for (int i = 0; i < j->n; i++)
        if (j->runs[i].oom_id != FSC_RUNDB_NULL) {
            j->oom_order[j->noom++] = i;
            all_wall &= j->runs[i].clock_origin_ns > 0;
        }
    if (j->noom == 0) {
        j->order = JOB_ORDER_NONE;
        snprintf(j->order_note, sizeof j->order_note, "no run ran out of memory");
        return 0;
    }
    if (j->noom == 1) {
        j->order = JOB_ORDER_ONLY;
        snprintf(j->order_note, sizeof j->order_note, "the only run that ran out of memory");
        return 0;
    }
    j->order = all_wall ? JOB_ORDER_WALL : JOB_ORDER_SINCE_START;
    if (sort_ooms(j, all_wall) != 0)
        return FSC_ENOMEM;
    if (all_wall) {
        snprintf(j->order_note, sizeof j->order_note,
                 "by wall-clock time (every run's clock origin is recorded%s)",
                 j->nhosts > 1 ? "; runs on different hosts agree only as far as their clocks "
                                 "are synchronized"
                               : "");
    } else {
        char who[300];
        list_unknown_clocks(j, who, sizeof who);
        snprintf(j->order_note, sizeof j->order_note,
                 "the clocks are not comparable (%s: no wall-clock origin recorded, as in a "
                 "snapshot without history times): ordered by time since each run's "
                 "recording began, which holds only if they began together", who);
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int spread(job_t *j, int reserved, job_spread_t *s)
{
    int64_t *v = malloc((size_t)j->n * sizeof *v);
    if (v == NULL)
        return FSC_ENOMEM;
    s->min_i = s->max_i = 0;
    for (int i = 0; i < j->n; i++) {
        const job_run_t *r = &j->runs[i];
        v[i] = reserved ? r->peak_reserved : r->peak_allocated;
        if (v[i] < v[s->min_i])
            s->min_i = i;
        if (v[i] > v[s->max_i])
            s->max_i = i;
    }
    qsort(v, (size_t)j->n, sizeof *v, cmp_i64);
    s->min = v[0];
    s->max = v[j->n - 1];
    s->median = j->n % 2 ? (double)v[j->n / 2]
                         : ((double)v[j->n / 2 - 1] + (double)v[j->n / 2]) / 2.0;
    s->max_over_min = s->min > 0 ? (double)s->max / (double)s->min : 0.0;
    free(v);
    return 0;
}

static int count_hosts(const job_t *j)
{
    int n = 0;
    for (int i = 0; i < j->n; i++) {
        const char *h = j->runs[i].host;
        if (h == NULL || h[0] == '\0')
            continue;
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = j->runs[k].host && strcmp(j->runs[k].host, h) == 0;
        n += !seen;
        if (n > 1)
            return n; /* only "one" or "several" is used */
    }
    return n;
}

/* The job section's names: a run without a rank is named by its device
 * when all runs come from one input (the devices of one snapshot), else
 * by its number and file name, not the whole path. */
static void name_runs(job_t *j)
{
    int one_source = 1;
    for (int i = 1; i < j->n; i++)
        one_source &= strcmp(j->runs[i].source, j->runs[0].source) == 0;
    for (int i = 0; i < j->n; i++) {
        job_run_t *r = &j->runs[i];
        const char *base = strrchr(r->source, '/');
        base = base ? base + 1 : r->source;
        char dev[40] = "";
        if (r->device != FSC_RUNDB_NULL)
            snprintf(dev, sizeof dev, "device %lld", (long long)r->device);
        if (r->rank != FSC_RUNDB_NULL)
            snprintf(r->name, sizeof r->name, "%s", r->label);
        else if (one_source && j->n > 1 && dev[0])
            snprintf(r->name, sizeof r->name, "%s", dev);
        else
            snprintf(r->name, sizeof r->name, "run %lld (%s%s%s)", (long long)r->run,
                     base[0] ? base : "?", dev[0] ? ", " : "", dev);
    }
}

int fsc__report_job_load(fsc_rundb_t *db, job_t *j, fsc_err_t *err)
{
    fsc_err_t mine = {0};
    collect_t c = {j, 0, &mine};
    j->db_path = fsc_rundb_path(db);
    j->least = j->detail = -1;
    int rc = fsc_rundb_each_run(db, run_row, &c);
    if (rc == 0 && db->has_runs && j->n > 0) {
        for (int i = 0; i < j->n; i++)
            j->runs[i].device_total = j->runs[i].clock_origin_ns = 0;
        rc = read_bulk(db, j);
    } else {
        for (int i = 0; rc == 0 && i < j->n; i++)
            rc = read_run(db, &j->runs[i]);
    }
    if (rc == 0 && j->n == 0)
        rc = fsc_err_set(&mine, FSC_EFORMAT, "%s: the database holds no run", j->db_path);
    if (rc != 0) {
        fsc_err_copy(err, mine.code != 0 ? &mine : fsc_rundb_error(db));
        return rc;
    }
    j->nhosts = count_hosts(j);
    name_runs(j);
    for (int i = 0; i < j->n; i++) {
        const job_run_t *r = &j->runs[i];
        if (!r->capacity_known)
            continue;
        j->nknown++;
        if (j->least < 0 || r->headroom < j->runs[j->least].headroom)
            j->least = i;
    }
    j->oom_order = malloc((size_t)j->n * sizeof *j->oom_order);
    if (j->oom_order == NULL || spread(j, 0, &j->alloc) != 0 ||
        spread(j, 1, &j->reserved) != 0 || order_ooms(j) != 0)
        return nomem(err);
    return 0;
}

int fsc__report_job_find(const job_t *j, const fsc_job_opts_t *o, int *idx, fsc_err_t *err)
{
    *idx = -1;
    if (o == NULL || (!o->has_run && !o->has_rank))
        return 0;
    if (o->has_run) {
        for (int i = 0; i < j->n; i++)
            if (j->runs[i].run == o->run) {
                if (o->has_rank && j->runs[i].rank != o->rank)
                    return fsc_err_set(err, FSC_EINVAL, "%s: run %lld is %s, not rank %lld",
                                       j->db_path, (long long)o->run, j->runs[i].label,
                                       (long long)o->rank);
                *idx = i;
                return 0;
            }
        return fsc_err_set(err, FSC_ENOENT, "%s: no run %lld (the database holds runs %lld to "
                           "%lld)", j->db_path, (long long)o->run, (long long)j->runs[0].run,
                           (long long)j->runs[j->n - 1].run);
    }
    int found = -1, count = 0;
    char runs[256] = "";
    size_t len = 0;
    for (int i = 0; i < j->n; i++) {
        if (j->runs[i].rank != o->rank)
            continue;
        if (found < 0)
            found = i;
        if (count < 4 && len < sizeof runs)
            len += (size_t)snprintf(runs + len, sizeof runs - len, "%srun %lld",
                                    count ? ", " : "", (long long)j->runs[i].run);
        count++;
    }
    if (count == 0)
        return fsc_err_set(err, FSC_ENOENT, "%s: no run of rank %lld", j->db_path,
                           (long long)o->rank);
    if (count > 1)
        return fsc_err_set(err, FSC_EINVAL, "%s: rank %lld has %d runs (%s%s): pick one with "
                           "--run N", j->db_path, (long long)o->rank, count, runs,
                           count > 4 ? ", ..." : "");
    *idx = found;
    return 0;
}

int fsc__report_job_pick(job_t *j, const fsc_job_opts_t *o, fsc_err_t *err)
{
    int idx;
    int rc = fsc__report_job_find(j, o, &idx, err);
    if (rc != 0)
        return rc;
    if (idx >= 0) {
        j->detail = idx;
        snprintf(j->detail_why, sizeof j->detail_why, "picked with %s",
                 o->has_run ? "--run" : "--rank");
    } else if (j->noom > 0) {
        j->detail = j->oom_order[0];
        snprintf(j->detail_why, sizeof j->detail_why, "%s",
                 j->noom == 1 ? "the only run that ran out of memory"
                              : "the run that ran out of memory first");
    } else if (j->least >= 0) {
        j->detail = j->least;
        snprintf(j->detail_why, sizeof j->detail_why,
                 "the run with the least headroom (no run ran out of memory)");
    } else {
        j->detail = j->reserved.max_i;
        snprintf(j->detail_why, sizeof j->detail_why,
                 "the run with the highest peak reserved (no run ran out of memory and no "
                 "run's capacity is known)");
    }
    return 0;
}

void fsc__report_job_oom_when(const job_t *j, const job_run_t *r, char *buf, size_t cap)
{
    int64_t t = r->oom_time_ns == FSC_RUNDB_NULL ? 0 : r->oom_time_ns;
    if (r->clock_origin_ns > 0 && j->order != JOB_ORDER_SINCE_START) {
        int64_t abs_ns = r->clock_origin_ns + t;
        time_t secs = (time_t)(abs_ns / 1000000000);
        struct tm tm;
        char day[40];
        gmtime_r(&secs, &tm);
        strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
        snprintf(buf, cap, "%s.%03d UTC", day, (int)((abs_ns / 1000000) % 1000));
    } else {
        snprintf(buf, cap, "%.3f s after its recording began", (double)t / 1e9);
    }
}

void fsc__report_job_free(job_t *j)
{
    for (int i = 0; i < j->n; i++) {
        free(j->runs[i].host);
        free(j->runs[i].source);
        free(j->runs[i].kind);
    }
    free(j->runs);
    free(j->oom_order);
    memset(j, 0, sizeof *j);
}
