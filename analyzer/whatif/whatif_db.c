/*
 * whatif_db.c — writing suggestions into a run database's `suggestions`
 * table, so that reports and the viewer can say which settings would have
 * avoided each OOM.
 *
 * OOMs are matched to the replay by event index: ooms.seq counts the events
 * fed to the analysis, and the request stream numbers the same events of
 * the same source the same way.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "whatif_internal.h"

typedef struct oom_row {
    int64_t id;
    uint64_t seq;
    uint64_t capacity;
} oom_row_t;

static int db_fail(sqlite3 *db, const char *path, fsc_err_t *err)
{
    return fsc_err_set(err, FSC_ESQLITE, "%s: %s", path, sqlite3_errmsg(db));
}

static int read_ooms(sqlite3 *db, const char *path, oom_row_t **out, size_t *n, fsc_err_t *err)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, "SELECT id, seq, capacity FROM ooms ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return fsc_err_set(err, FSC_EFORMAT, "%s: not a fragscope run database (%s)", path,
                           sqlite3_errmsg(db));
    size_t cap = 0;
    int rc = 0, s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            oom_row_t *v = realloc(*out, cap * sizeof *v);
            if (v == NULL) {
                rc = fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
                break;
            }
            *out = v;
        }
        oom_row_t *r = &(*out)[(*n)++];
        r->id = sqlite3_column_int64(st, 0);
        r->seq = (uint64_t)sqlite3_column_int64(st, 1);
        r->capacity = (uint64_t)sqlite3_column_int64(st, 2);
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_fail(db, path, err);
    sqlite3_finalize(st);
    return rc;
}

static int insert_rows(sqlite3 *db, const char *path, const oom_row_t *ooms, size_t nooms,
                       const fsc_suggestion_t *s, size_t ns, size_t *rows, fsc_err_t *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO suggestions(oom_id, config, capacity, needed_capacity,"
                           " avoids_oom, peak_reserved, peak_allocated, note)"
                           " VALUES(?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return fsc_err_set(err, FSC_EFORMAT, "%s: no usable suggestions table (%s)", path,
                           sqlite3_errmsg(db));
    int rc = 0;
    size_t groups = nooms ? nooms : 1;
    for (size_t g = 0; g < groups && rc == 0; g++) {
        for (size_t i = 0; i < ns && rc == 0; i++) {
            const fsc_suggestion_t *x = &s[i];
            /* A config gets past this OOM when its own first OOM (if any)
             * comes at a later request. */
            int avoids = x->avoids_oom || (nooms && x->first_oom_event > ooms[g].seq);
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
    if (db_path == NULL || rs == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no database or stream");
    if (rows_out != NULL)
        *rows_out = 0;
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    if (opts != NULL)
        o = *opts;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        int rc = fsc_err_set(err, FSC_ENOENT, "%s: cannot open the database (%s)", db_path,
                             db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return rc;
    }
    sqlite3_busy_timeout(db, 5000);
    oom_row_t *ooms = NULL;
    size_t nooms = 0;
    int rc = read_ooms(db, db_path, &ooms, &nooms, err);
    /* A snapshot does not record its cap; the analyzer's lower bound on it
     * (ooms.capacity) is the most the run is known to have been allowed. */
    if (rc == 0 && o.capacity == 0 && rs->capacity == 0 && nooms > 0)
        o.capacity = ooms[0].capacity;
    fsc_suggestion_t *s = NULL;
    size_t ns = 0, rows = 0;
    if (rc == 0)
        rc = fsc_whatif_suggest_opts(rs, &o, &s, &ns, err);
    if (rc == 0 && sqlite3_exec(db, "BEGIN IMMEDIATE; DELETE FROM suggestions;", NULL, NULL,
                                NULL) != SQLITE_OK)
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: no usable suggestions table (%s)", db_path,
                         sqlite3_errmsg(db));
    if (rc == 0)
        rc = insert_rows(db, db_path, ooms, nooms, s, ns, &rows, err);
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
