/*
 * rundb_select.c — the runs of a run database and the choice of one.
 *
 * A schema-2 database holds runs 0..N-1 (table runs), every other table
 * with a run column. The reader shows one run at a time without any of its
 * queries knowing: for the selected run K it creates, in the connection's
 * temp schema, a view named like each table,
 *     CREATE TEMP VIEW blocks AS SELECT <every column but run> FROM main.blocks
 *                                WHERE run = K
 * (rowid tables expose their rowid too, for the readers that order by it).
 * SQLite resolves an unqualified name to the temp schema first, and a
 * read-only connection may still create temp objects, so every statement
 * the reader prepares reads that run, through the tables' (run, ...) keys.
 * The views of the schema (events, tag_paths) are re-created in temp from
 * their per-run bodies over those views, so that the recursive tag_paths
 * walks one run's tags only. Selecting another run drops and re-creates the
 * views, and the cached statements are prepared again.
 *
 * A schema-1 database (no runs table, no run column) is one run, run 0,
 * described from its meta table; nothing is created for it.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "run_facts.h"
#include "rundb_internal.h"

/* ---- facts shared with the analyzer ------------------------------------ */

const char *fsc__run_kind(const char *source_kind)
{
    if (source_kind != NULL && strcmp(source_kind, "trace") == 0)
        return "trace";
    if (source_kind != NULL && strcmp(source_kind, "pytorch_snapshot") == 0)
        return "snapshot";
    return "simulation";
}

int64_t fsc__run_device_from_backend(const char *backend)
{
    if (backend == NULL || strncmp(backend, "cuda:", 5) != 0 || !isdigit((unsigned char)backend[5]))
        return FSC_RUNDB_NULL;
    int64_t v = 0;
    for (const char *p = backend + 5; isdigit((unsigned char)*p) && v < 1000000; p++)
        v = v * 10 + (*p - '0');
    return v;
}

int fsc_rundb_rank_from_name(const char *path, int64_t *rank)
{
    if (path == NULL)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = base; *p != '\0'; p++) {
        const char *d = NULL;
        if (strncasecmp(p, "rank", 4) == 0 && (p == base || !isalpha((unsigned char)p[-1]))) {
            d = p + 4;
            if (*d == '_' || *d == '-')
                d++;
        } else if (p[0] == '.' && (p[1] == 'r' || p[1] == 'R') && isdigit((unsigned char)p[2])) {
            d = p + 2;
            const char *e = d;
            while (isdigit((unsigned char)*e))
                e++;
            if (*e != '.')
                d = NULL;
        }
        if (d == NULL || !isdigit((unsigned char)*d))
            continue;
        int64_t v = 0;
        for (; isdigit((unsigned char)*d); d++) {
            if (v > (INT64_MAX - 9) / 10)
                return 0;
            v = v * 10 + (*d - '0');
        }
        *rank = v;
        return 1;
    }
    return 0;
}

const char *fsc_rundb_run_label(const fsc_rundb_run_t *r, char *buf, size_t n)
{
    if (n == 0)
        return buf;
    if (r->rank != FSC_RUNDB_NULL) {
        char dev[32] = "";
        if (r->device != FSC_RUNDB_NULL)
            snprintf(dev, sizeof dev, "device %lld", (long long)r->device);
        int host = r->host != NULL && r->host[0] != '\0';
        if (dev[0] && host)
            snprintf(buf, n, "rank %lld (%s, host %s)", (long long)r->rank, dev, r->host);
        else if (dev[0] || host)
            snprintf(buf, n, "rank %lld (%s%s%s)", (long long)r->rank, dev, host ? "host " : "",
                     host ? r->host : "");
        else
            snprintf(buf, n, "rank %lld", (long long)r->rank);
        return buf;
    }
    char dev[40] = "";
    if (r->device != FSC_RUNDB_NULL)
        snprintf(dev, sizeof dev, ", device %lld", (long long)r->device);
    snprintf(buf, n, "run %lld (%s %s%s)", (long long)r->run, r->kind ? r->kind : "trace",
             r->source && r->source[0] ? r->source : "?", dev);
    return buf;
}

/* ---- the per-run views ------------------------------------------------- */

static int fail(fsc_rundb_t *db, const char *what)
{
    return fsc_err_set(&db->err, FSC_ESQLITE, "%s: cannot select a run: %s (%s)", db->path,
                       sqlite3_errmsg(db->h), what);
}

typedef struct names {
    char **v;
    size_t n, cap;
} names_t;

static void names_free(names_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* The first column of every row of sql, copied. */
static int collect(fsc_rundb_t *db, const char *sql, names_t *out)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK)
        return fail(db, "the table list");
    int s, rc = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW && rc == 0) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (t == NULL)
            continue;
        if (out->n == out->cap) {
            size_t nc = out->cap ? out->cap * 2 : 32;
            char **nv = realloc(out->v, nc * sizeof *nv);
            if (nv == NULL) {
                rc = fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
                break;
            }
            out->v = nv;
            out->cap = nc;
        }
        if ((out->v[out->n] = strdup(t)) == NULL)
            rc = fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
        else
            out->n++;
    }
    if (rc == 0 && s != SQLITE_DONE && s != SQLITE_ROW)
        rc = fsc__rundb_fail(db, "the table list");
    sqlite3_finalize(st);
    return rc;
}

static int exec(fsc_rundb_t *db, const char *sql, const char *what)
{
    return sqlite3_exec(db->h, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail(db, what);
}

/* The temp view of one table for run k; a table without a run column (not
 * one of fragscope's) is left visible as it is. */
static int table_view(fsc_rundb_t *db, const char *table, int64_t k)
{
    char *sql = sqlite3_mprintf("SELECT name FROM main.pragma_table_info(%Q)", table);
    names_t cols = {NULL, 0, 0};
    int rc = sql ? collect(db, sql, &cols)
                 : fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    sqlite3_free(sql);
    int has_run = 0;
    for (size_t i = 0; i < cols.n; i++)
        has_run |= strcmp(cols.v[i], "run") == 0;
    if (rc != 0 || !has_run) {
        names_free(&cols);
        return rc;
    }
    /* a rowid table keeps its rowid visible (readers order by it) */
    sqlite3_stmt *probe = NULL;
    char *q = sqlite3_mprintf("SELECT rowid FROM main.\"%w\"", table);
    int rowid = q != NULL && sqlite3_prepare_v2(db->h, q, -1, &probe, NULL) == SQLITE_OK;
    sqlite3_finalize(probe);
    sqlite3_free(q);
    sqlite3_str *b = sqlite3_str_new(db->h);
    sqlite3_str_appendf(b, "CREATE TEMP VIEW \"%w\" AS SELECT %s", table,
                        rowid ? "rowid AS rowid" : "");
    int first = !rowid;
    for (size_t i = 0; i < cols.n; i++) {
        if (strcmp(cols.v[i], "run") == 0)
            continue;
        sqlite3_str_appendf(b, "%s\"%w\"", first ? "" : ", ", cols.v[i]);
        first = 0;
    }
    sqlite3_str_appendf(b, " FROM main.\"%w\" WHERE run = %lld", table, (long long)k);
    char *view = sqlite3_str_finish(b);
    rc = view ? exec(db, view, table)
              : fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    sqlite3_free(view);
    names_free(&cols);
    return rc;
}

static int make_views(fsc_rundb_t *db, int64_t k)
{
    /* the cached statements were prepared over the previous views */
    for (int i = 0; i < FSC__RQ_COUNT; i++) {
        sqlite3_finalize(db->cache[i]);
        db->cache[i] = NULL;
    }
    names_t old = {NULL, 0, 0}, tables = {NULL, 0, 0}, views = {NULL, 0, 0};
    int rc = collect(db, "SELECT name FROM temp.sqlite_master WHERE type = 'view'", &old);
    for (size_t i = 0; i < old.n && rc == 0; i++) {
        char *sql = sqlite3_mprintf("DROP VIEW temp.\"%w\"", old.v[i]);
        rc = sql ? exec(db, sql, old.v[i])
                 : fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
        sqlite3_free(sql);
    }
    if (rc == 0)
        rc = collect(db,
                     "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name <> 'runs'"
                     " AND name NOT LIKE 'sqlite^_%' ESCAPE '^' ORDER BY name",
                     &tables);
    for (size_t i = 0; i < tables.n && rc == 0; i++)
        rc = table_view(db, tables.v[i], k);
    if (rc == 0)
        rc = collect(db, "SELECT name FROM main.sqlite_master WHERE type = 'view' ORDER BY name",
                     &views);
    for (size_t i = 0; i < views.n && rc == 0; i++) {
        const char *sql = fsc__rundb_run_view(views.v[i]);
        if (sql != NULL)
            rc = exec(db, sql, views.v[i]);
    }
    names_free(&old);
    names_free(&tables);
    names_free(&views);
    if (rc == 0)
        db->selected = k;
    return rc;
}

int fsc__rundb_select_first(fsc_rundb_t *db)
{
    int have = 0;
    db->selected = 0;
    int rc = fsc_rundb_has_table(db, "runs", &have);
    db->has_runs = have;
    if (rc != 0 || !have)
        return rc;
    sqlite3_stmt *st = NULL;
    int64_t first = 0;
    if (sqlite3_prepare_v2(db->h, "SELECT min(run) FROM main.runs", -1, &st, NULL) != SQLITE_OK)
        return fsc__rundb_fail(db, "runs");
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        first = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return make_views(db, first);
}

int64_t fsc_rundb_selected_run(const fsc_rundb_t *db)
{
    return db->selected;
}

int fsc_rundb_run_count(fsc_rundb_t *db, int64_t *out)
{
    *out = 1;
    if (!db->has_runs)
        return 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM main.runs", -1, &st, NULL) != SQLITE_OK)
        return fsc__rundb_fail(db, "runs");
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else
        rc = fsc__rundb_fail(db, "runs");
    sqlite3_finalize(st);
    return rc;
}

int fsc_rundb_select_run(fsc_rundb_t *db, int64_t run)
{
    int64_t n = 1;
    int rc = fsc_rundb_run_count(db, &n);
    if (rc != 0)
        return rc;
    int found = 0;
    if (!db->has_runs) {
        found = run == 0;
    } else {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db->h, "SELECT 1 FROM main.runs WHERE run = ?1", -1, &st, NULL) !=
            SQLITE_OK)
            return fsc__rundb_fail(db, "runs");
        sqlite3_bind_int64(st, 1, run);
        found = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    if (!found)
        return fsc_err_set(&db->err, FSC_ENOENT, "%s: no run %lld (the database holds %lld run%s)",
                           db->path, (long long)run, (long long)n, n == 1 ? "" : "s");
    if (!db->has_runs || run == db->selected)
        return 0;
    return make_views(db, run);
}

/* ---- listing the runs -------------------------------------------------- */

typedef struct run_copy {
    fsc_rundb_run_t r;
    char *host, *source, *kind;
} run_copy_t;

static char *dup_col(sqlite3_stmt *st, int i, int *oom)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    if (t == NULL)
        return NULL;
    char *c = strdup(t);
    if (c == NULL)
        *oom = 1;
    return c;
}

static int64_t int_col(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? FSC_RUNDB_NULL : sqlite3_column_int64(st, i);
}

/* The one run of a schema-1 database, from its meta. */
static int synthesised(fsc_rundb_t *db, run_copy_t *c)
{
    char kind[64], backend[256], source[4096];
    int64_t rank = -1, pid = 0, device = -1;
    int rc = fsc_rundb_meta_int(db, "rank", -1, &rank);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "pid", 0, &pid);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "import.device", -1, &device);
    if (rc == 0)
        rc = fsc_rundb_meta_text(db, "source_kind", kind, sizeof kind);
    if (rc == 0)
        rc = fsc_rundb_meta_text(db, "backend", backend, sizeof backend);
    if (rc == 0)
        rc = fsc_rundb_meta_text(db, "source_path", source, sizeof source);
    if (rc != 0)
        return rc;
    c->r.run = 0;
    c->r.rank = rank >= 0 ? rank : FSC_RUNDB_NULL;
    c->r.pid = pid > 0 ? pid : FSC_RUNDB_NULL;
    c->r.device = device >= 0 ? device : fsc__run_device_from_backend(backend);
    c->source = strdup(source);
    c->kind = strdup(fsc__run_kind(kind));
    if (c->source == NULL || c->kind == NULL)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    return 0;
}

int fsc_rundb_each_run(fsc_rundb_t *db, int (*cb)(const fsc_rundb_run_t *run, void *ctx),
                       void *ctx)
{
    run_copy_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0, oom = 0;
    if (!db->has_runs) {
        if ((v = calloc(1, sizeof *v)) == NULL)
            return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
        n = 1;
        rc = synthesised(db, &v[0]);
    } else {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db->h,
                               "SELECT run, rank, device, pid, host, source, kind FROM main.runs"
                               " ORDER BY run",
                               -1, &st, NULL) != SQLITE_OK)
            return fsc__rundb_fail(db, "runs");
        int s;
        while ((s = sqlite3_step(st)) == SQLITE_ROW) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                run_copy_t *nv = realloc(v, nc * sizeof *nv);
                if (nv == NULL) {
                    oom = 1;
                    break;
                }
                v = nv;
                cap = nc;
            }
            run_copy_t *c = &v[n++];
            memset(c, 0, sizeof *c);
            c->r.run = sqlite3_column_int64(st, 0);
            c->r.rank = int_col(st, 1);
            c->r.device = int_col(st, 2);
            c->r.pid = int_col(st, 3);
            c->host = dup_col(st, 4, &oom);
            c->source = dup_col(st, 5, &oom);
            c->kind = dup_col(st, 6, &oom);
        }
        if (!oom && s != SQLITE_DONE)
            rc = fsc__rundb_fail(db, "runs");
        sqlite3_finalize(st);
    }
    if (oom && rc == 0)
        rc = fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    for (size_t i = 0; i < n && rc == 0; i++) {
        run_copy_t *c = &v[i];
        c->r.host = c->host;
        c->r.source = c->source ? c->source : "";
        c->r.kind = c->kind ? c->kind : "trace";
        int r = cb(&c->r, ctx);
        if (r == FSC_RUNDB_STOP)
            break;
        if (r < 0)
            rc = r;
    }
    for (size_t i = 0; i < n; i++) {
        free(v[i].host);
        free(v[i].source);
        free(v[i].kind);
    }
    free(v);
    return rc;
}
