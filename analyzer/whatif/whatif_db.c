/*
 * whatif_db.c — writing suggestions into a run database's `suggestions`
 * table, so that reports and the viewer can say which settings would have
 * avoided each OOM.
 *
 * The OOMs are read through the run database reader (fragscope/rundb.h),
 * which also checks the file; only the writing is done here. In a job
 * database (several runs) the caller names the run the input recorded.
 *
 * OOMs are matched to the replay by event index: ooms.seq counts the events
 * fed to the analysis, and the request stream numbers the same events of
 * the same source the same way.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/rundb.h"
#include "whatif_internal.h"

typedef struct oom_row {
    int64_t id;
    uint64_t seq;
    uint64_t capacity;
    int external; /* cause external: no setting is offered for it */
} oom_row_t;

static int db_fail(sqlite3 *db, const char *path, fsc_err_t *err)
{
    return fsc_err_set(err, FSC_ESQLITE, "%s: %s", path, sqlite3_errmsg(db));
}

typedef struct oom_list {
    oom_row_t *v;
    size_t n, cap;
} oom_list_t;

static int oom_read(void *ud, const fsc_rundb_oom_t *o)
{
    oom_list_t *l = ud;
    if (FSC__VEC_RESERVE(l->v, l->cap, l->n + 1) != 0)
        return FSC_ENOMEM;
    oom_row_t *r = &l->v[l->n++];
    r->id = o->id;
    r->seq = o->seq == FSC_RUNDB_NULL ? 0 : (uint64_t)o->seq;
    r->capacity = o->capacity == FSC_RUNDB_NULL ? 0 : (uint64_t)o->capacity;
    r->external = o->cause != NULL && strcmp(o->cause, "external") == 0;
    return 0;
}

/* The run of a job database the suggestions are for (fsc_job_opts_t, as
 * report/check/diff pick one; messages as theirs). A database of several
 * runs without --rank/--run is refused: the input is one recording, and its
 * suggestions belong to its own run only. */
typedef struct pick {
    const fsc_job_opts_t *o;
    const char *path;
    int64_t n, found, count, first, last, other_rank;
    char runs[256];
    size_t len;
} pick_t;

static int pick_each(const fsc_rundb_run_t *r, void *ud)
{
    pick_t *p = ud;
    if (p->n++ == 0)
        p->first = r->run;
    p->last = r->run;
    char label[160];
    if (p->o == NULL || (!p->o->has_run && !p->o->has_rank)) {
        if (p->n <= 4 && p->len < sizeof p->runs)
            p->len += (size_t)snprintf(p->runs + p->len, sizeof p->runs - p->len, "%s%s",
                                       p->n > 1 ? ", " : "",
                                       fsc_rundb_run_label(r, label, sizeof label));
        return 0;
    }
    if (p->o->has_run) {
        if (r->run == p->o->run) {
            p->found = r->run;
            p->other_rank = p->o->has_rank && r->rank != p->o->rank;
            if (p->other_rank)
                snprintf(p->runs, sizeof p->runs, "%s",
                         fsc_rundb_run_label(r, label, sizeof label));
        }
        return 0;
    }
    if (r->rank != p->o->rank)
        return 0;
    if (p->count == 0)
        p->found = r->run;
    if (p->count < 4 && p->len < sizeof p->runs)
        p->len += (size_t)snprintf(p->runs + p->len, sizeof p->runs - p->len, "%srun %lld",
                                   p->count ? ", " : "", (long long)r->run);
    p->count++;
    return 0;
}

static int pick_run(fsc_rundb_t *db, const char *path, const fsc_job_opts_t *o, int64_t *run,
                    fsc_err_t *err)
{
    pick_t p = {o, path, 0, -1, 0, 0, 0, 0, "", 0};
    int rc = fsc_rundb_each_run(db, pick_each, &p);
    if (rc != 0) {
        fsc_err_copy(err, fsc_rundb_error(db));
        return rc;
    }
    if (o == NULL || (!o->has_run && !o->has_rank)) {
        if (p.n > 1)
            return fsc_err_set(err, FSC_EINVAL, "%s: the database holds %lld runs (%s%s): pick "
                               "the one this input recorded with --rank R or --run N", path,
                               (long long)p.n, p.runs, p.n > 4 ? ", ..." : "");
        *run = p.first;
        return 0;
    }
    if (o->has_run) {
        if (p.found < 0)
            return fsc_err_set(err, FSC_ENOENT, "%s: no run %lld (the database holds runs %lld "
                               "to %lld)", path, (long long)o->run, (long long)p.first,
                               (long long)p.last);
        if (p.other_rank)
            return fsc_err_set(err, FSC_EINVAL, "%s: run %lld is %s, not rank %lld", path,
                               (long long)o->run, p.runs, (long long)o->rank);
        *run = p.found;
        return 0;
    }
    if (p.count == 0)
        return fsc_err_set(err, FSC_ENOENT, "%s: no run of rank %lld", path,
                           (long long)o->rank);
    if (p.count > 1)
        return fsc_err_set(err, FSC_EINVAL, "%s: rank %lld has %lld runs (%s%s): pick one with "
                           "--run N", path, (long long)o->rank, (long long)p.count, p.runs,
                           p.count > 4 ? ", ..." : "");
    *run = p.found;
    return 0;
}

/* The picked run's OOMs, read (and the database checked) by the run
 * database reader before anything is written; *run is the run they belong
 * to, -1 for a schema-1 database (no run column). */
static int read_ooms(const char *path, const fsc_job_opts_t *job, oom_row_t **out, size_t *n,
                     int64_t *run, fsc_err_t *err)
{
    fsc_rundb_t *db = NULL;
    oom_list_t l = {NULL, 0, 0};
    int has_runs = 0;
    int64_t picked = 0;
    int rc = fsc_rundb_open(path, &db, err);
    if (rc == 0 && (rc = fsc_rundb_has_table(db, "runs", &has_runs)) != 0)
        fsc_err_copy(err, fsc_rundb_error(db));
    if (rc == 0)
        rc = pick_run(db, path, job, &picked, err);
    if (rc == 0 && (rc = fsc_rundb_select_run(db, picked)) != 0)
        fsc_err_copy(err, fsc_rundb_error(db));
    *run = rc == 0 && has_runs ? fsc_rundb_selected_run(db) : -1;
    if (rc == 0 && (rc = fsc_rundb_ooms(db, oom_read, &l)) != 0) {
        if (rc == FSC_ENOMEM)
            fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
        else
            fsc_err_copy(err, fsc_rundb_error(db));
    }
    fsc_rundb_close(db);
    if (rc != 0) {
        free(l.v);
        l.v = NULL;
        l.n = 0;
    }
    *out = l.v;
    *n = l.n;
    return rc;
}

static int insert_rows(sqlite3 *db, const char *path, int64_t run, const oom_row_t *ooms,
                       size_t nooms, const fsc_suggestion_t *s, size_t ns, size_t *rows,
                       fsc_err_t *err)
{
    sqlite3_stmt *st = NULL;
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO suggestions(%soom_id, config, capacity, needed_capacity,"
             " avoids_oom, peak_reserved, peak_allocated, note) VALUES(%s?1,?2,?3,?4,?5,?6,?7,?8)",
             run >= 0 ? "run, " : "", run >= 0 ? "?9," : "");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return fsc_err_set(err, FSC_EFORMAT, "%s: no usable suggestions table (%s)", path,
                           sqlite3_errmsg(db));
    int rc = 0;
    size_t groups = nooms ? nooms : 1;
    for (size_t g = 0; g < groups && rc == 0; g++) {
        /* memory outside the allocator: no allocator setting avoids it */
        if (nooms && ooms[g].external)
            continue;
        for (size_t i = 0; i < ns && rc == 0; i++) {
            const fsc_suggestion_t *x = &s[i];
            /* A config gets past this OOM when its own first OOM (if any)
             * comes at a later request. */
            int avoids = x->avoids_oom || (nooms && x->first_oom_event > ooms[g].seq);
            if (!x->helps && !avoids)
                continue; /* it fails here too: not a suggestion */
            sqlite3_reset(st);
            if (nooms)
                sqlite3_bind_int64(st, 1, ooms[g].id);
            else
                sqlite3_bind_null(st, 1);
            sqlite3_bind_text(st, 2, x->config, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)x->capacity);
            if (x->needed_capacity)
                sqlite3_bind_int64(st, 4, (sqlite3_int64)x->needed_capacity);
            else
                sqlite3_bind_null(st, 4);
            sqlite3_bind_int(st, 5, avoids);
            sqlite3_bind_int64(st, 6, (sqlite3_int64)x->peak_reserved);
            sqlite3_bind_int64(st, 7, (sqlite3_int64)x->peak_allocated);
            sqlite3_bind_text(st, 8, x->note, -1, SQLITE_STATIC);
            if (run >= 0)
                sqlite3_bind_int64(st, 9, run);
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = db_fail(db, path, err);
            else
                (*rows)++;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

int fsc_whatif_fill_db(const char *db_path, const fsc_request_stream_t *rs, uint64_t capacity,
                       size_t *rows_out, fsc_err_t *err)
{
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = capacity;
    return fsc_whatif_fill_db_opts(db_path, rs, &o, rows_out, err);
}

int fsc_whatif_fill_db_opts(const char *db_path, const fsc_request_stream_t *rs,
                            const fsc_whatif_opts_t *opts, size_t *rows_out, fsc_err_t *err)
{
    return fsc_whatif_fill_db_job(db_path, rs, opts, NULL, rows_out, err);
}

int fsc_whatif_fill_db_job(const char *db_path, const fsc_request_stream_t *rs,
                           const fsc_whatif_opts_t *opts, const fsc_job_opts_t *job,
                           size_t *rows_out, fsc_err_t *err)
{
    if (db_path == NULL || rs == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no database or stream");
    if (rows_out != NULL)
        *rows_out = 0;
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    if (opts != NULL)
        o = *opts;
    oom_row_t *ooms = NULL;
    size_t nooms = 0;
    int64_t run = -1;
    int rc = read_ooms(db_path, job, &ooms, &nooms, &run, err);
    if (rc != 0)
        return rc;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        rc = fsc_err_set(err, FSC_ENOENT, "%s: cannot open the database (%s)", db_path,
                         db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        free(ooms);
        return rc;
    }
    sqlite3_busy_timeout(db, 5000);
    /* A snapshot does not record its cap; the analyzer's lower bound on it
     * (ooms.capacity) is the most the run is known to have been allowed. */
    if (rc == 0 && o.capacity == 0 && rs->capacity == 0 && nooms > 0) {
        /* the stream's own bounds on it, [lower, upper), where it has them:
         * a suggestion must serve the failed request at both ends */
        fsc_request_stream_info_t info;
        fsc_request_stream_info(rs, &info);
        if (info.capacity_lower == 0)
            o.capacity = ooms[0].capacity;
    }
    fsc_suggestion_t *s = NULL;
    size_t ns = 0, rows = 0;
    if (rc == 0)
        rc = fsc_whatif_suggest_opts(rs, &o, &s, &ns, err);
    /* a job database: only this run's suggestions are replaced */
    char del[128] = "BEGIN IMMEDIATE; DELETE FROM suggestions;";
    if (run >= 0)
        snprintf(del, sizeof del, "BEGIN IMMEDIATE; DELETE FROM suggestions WHERE run = %lld;",
                 (long long)run);
    if (rc == 0 && sqlite3_exec(db, del, NULL, NULL, NULL) != SQLITE_OK)
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: no usable suggestions table (%s)", db_path,
                         sqlite3_errmsg(db));
    if (rc == 0)
        rc = insert_rows(db, db_path, run, ooms, nooms, s, ns, &rows, err);
    /* What the suggestions cover, for the reports: a recording that ended
     * at an OOM only shows that the failed request would have been served. */
    if (rc == 0) {
        char sql[128];
        if (run >= 0)
            snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta(run, key, value)"
                     " VALUES(%lld, 'run_complete', %d)", (long long)run,
                     fsc__wstream_run_complete(rs));
        else
            snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta(key, value)"
                     " VALUES('run_complete', %d)", fsc__wstream_run_complete(rs));
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            rc = db_fail(db, db_path, err);
    }
    if (rc == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = db_fail(db, db_path, err);
    if (rc != 0)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    if (rc == 0 && rows_out != NULL)
        *rows_out = rows;
    fsc_suggestions_free(s);
    free(ooms);
    sqlite3_close(db);
    return rc;
}
