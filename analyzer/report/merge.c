/*
 * merge.c — run databases into one job database (fragscope merge, and
 * analyze of several inputs): every run of every input, renumbered in
 * input order after the runs already there.
 *
 * Streaming, in SQLite: each input is ATTACHed to the output's connection
 * and copied with one INSERT ... SELECT per table and run, in key order
 * (rowid tables by rowid, the order their rows were written), so memory
 * does not grow with the inputs and no row passes through C. The columns
 * are matched by name: a schema-1 input (no run column) gets its run
 * number as a literal, a column the input lacks (an older fragscope) reads
 * NULL, pytorch_meta.id is renumbered (a global rowid).
 *
 * Idempotent: a run whose description (source, kind, rank, device, host)
 * and summary table equal those of a run already in the output is skipped,
 * so merging the same databases twice, or one per node and then all of
 * them, gives each run once. A run that claims the rank and device of
 * another is kept and flagged (check_duplicate).
 *
 * Atomic: the output is written under a temporary name beside it and
 * renamed when complete (common/outfile.c); an existing output is copied in
 * as the first input. One SQLite transaction over all the inputs is not
 * possible with ATTACH: a database read in a transaction cannot be
 * DETACHed before it ends, and a connection attaches at most 10
 * (docs/decisions.md). Each input is one transaction of the temporary
 * database (journal off: the temporary is thrown away on any failure).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rundb_internal.h"

struct fsc_rundb_merger {
    fsc_outfile_t out;
    sqlite3 *db;
    char **tables; /* the output's tables but runs */
    size_t ntables;
    int64_t next_run;
    int failed;
    fsc_rundb_merge_stats_t st;
    char **files; /* files[run]: the input database run came from */
    size_t nfiles;
    int temporaries; /* the inputs are analyze's own temporaries: name sources only */
};

typedef struct src_run {
    fsc_rundb_run_t r;
    char *host, *source, *kind;
} src_run_t;

typedef struct src_runs {
    src_run_t *v;
    size_t n, cap;
} src_runs_t;

static void runs_free(src_runs_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].host);
        free(l->v[i].source);
        free(l->v[i].kind);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

static char *dup_opt(const char *s, int *oom)
{
    if (s == NULL)
        return NULL;
    char *c = strdup(s);
    if (c == NULL)
        *oom = 1;
    return c;
}

static int keep_run(const fsc_rundb_run_t *r, void *ud)
{
    src_runs_t *l = ud;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        src_run_t *nv = realloc(l->v, nc * sizeof *nv);
        if (nv == NULL)
            return FSC_ENOMEM;
        l->v = nv;
        l->cap = nc;
    }
    src_run_t *c = &l->v[l->n++];
    int oom = 0;
    c->r = *r;
    c->host = dup_opt(r->host, &oom);
    c->source = dup_opt(r->source, &oom);
    c->kind = dup_opt(r->kind, &oom);
    c->r.host = c->host;
    c->r.source = c->source;
    c->r.kind = c->kind;
    return oom ? FSC_ENOMEM : 0;
}

/* ---- SQL helpers ------------------------------------------------------- */

static int out_fail(fsc_rundb_merger_t *m, fsc_err_t *err, const char *what)
{
    m->failed = 1;
    int code = sqlite3_errcode(m->db);
    return fsc_err_set(err, code == SQLITE_FULL || code == SQLITE_IOERR ? FSC_EIO : FSC_ESQLITE,
                       "%s: cannot write the job database: %s (%s)", m->out.path,
                       sqlite3_errmsg(m->db), what);
}

/* A failure while copying from an input: the output's disk (named as the
 * output) or the input's content (named as the input). */
static int copy_fail(fsc_rundb_merger_t *m, const char *in, fsc_err_t *err, const char *table)
{
    int code = sqlite3_errcode(m->db);
    if (code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_NOMEM)
        return out_fail(m, err, table);
    m->failed = 1;
    return fsc_err_set(err, FSC_EFORMAT, "%s: cannot merge: %s (reading %s)", in,
                       sqlite3_errmsg(m->db), table);
}

static int exec(fsc_rundb_merger_t *m, const char *sql, fsc_err_t *err, const char *what)
{
    return sqlite3_exec(m->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : out_fail(m, err, what);
}

/* The names of the first column of every row of sql; *n = 0 when none. */
static int names(sqlite3 *db, const char *sql, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return FSC_ESQLITE;
    size_t cap = 0;
    int rc = 0, s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (t == NULL)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            char **nv = realloc(*out, cap * sizeof *nv);
            if (nv == NULL) {
                rc = FSC_ENOMEM;
                break;
            }
            *out = nv;
        }
        if (((*out)[*n] = strdup(t)) == NULL) {
            rc = FSC_ENOMEM;
            break;
        }
        (*n)++;
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = FSC_ESQLITE;
    sqlite3_finalize(st);
    return rc;
}

static void names_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int has(char *const *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0)
            return 1;
    return 0;
}

/* ---- opening ----------------------------------------------------------- */

int fsc_rundb_merger_open(const char *out_path, int keep_existing, fsc_rundb_merger_t **out,
                          fsc_err_t *err)
{
    *out = NULL;
    fsc_rundb_merger_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    m->temporaries = !keep_existing;
    int rc = fsc_outfile_init(&m->out, out_path, err);
    if (rc != 0) {
        free(m);
        return rc;
    }
    unlink(m->out.tmp_path);
    if (sqlite3_open_v2(m->out.tmp_path, &m->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        rc = fsc_err_set(err, FSC_EIO, "%s: cannot create the job database: %s", out_path,
                         m->db ? sqlite3_errmsg(m->db) : "out of memory");
    if (rc == 0)
        rc = exec(m,
                  "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                  "PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY;",
                  err, "pragmas");
    if (rc == 0)
        rc = exec(m, fsc_rundb_schema(), err, "the tables");
    if (rc == 0 &&
        names(m->db,
              "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name <> 'runs'"
              " AND name NOT LIKE 'sqlite^_%' ESCAPE '^' ORDER BY name",
              &m->tables, &m->ntables) != 0)
        rc = out_fail(m, err, "the table list");
    struct stat sb;
    if (rc == 0 && keep_existing && stat(out_path, &sb) == 0) {
        rc = fsc_rundb_merger_add(m, out_path, err);
        memset(&m->st, 0, sizeof m->st);
        m->st.runs_existing = (uint64_t)m->next_run;
    }
    if (rc != 0) {
        fsc_rundb_merger_abort(m);
        return rc;
    }
    *out = m;
    return 0;
}

void fsc_rundb_merger_abort(fsc_rundb_merger_t *m)
{
    if (m == NULL)
        return;
    if (m->db != NULL)
        sqlite3_close(m->db);
    fsc_outfile_abort(&m->out);
    names_free(m->tables, m->ntables);
    names_free(m->files, m->nfiles);
    free(m);
}

/* ---- one input --------------------------------------------------------- */

static void bind_opt_int(sqlite3_stmt *st, int i, int64_t v)
{
    if (v == FSC_RUNDB_NULL)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

static void bind_opt_text(sqlite3_stmt *st, int i, const char *t)
{
    if (t == NULL)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_text(st, i, t, -1, SQLITE_TRANSIENT);
}

/* The summary of run `run` of schema `db` ("main" or "src") as one string:
 * the content a skipped run must have in common with the one kept. NULL
 * schema_run (< 0): a schema-1 input, no run column. */
static char *summary_print(sqlite3 *db, const char *schema, int64_t run)
{
    char *sql = sqlite3_mprintf("SELECT group_concat(key || '=' || quote(value), ';') FROM"
                                " (SELECT key, value FROM %s.summary %s ORDER BY key)",
                                schema, run >= 0 ? "WHERE run = ?1" : "");
    sqlite3_stmt *st = NULL;
    char *out = NULL;
    if (sql != NULL && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (run >= 0)
            sqlite3_bind_int64(st, 1, run);
        if (sqlite3_step(st) == SQLITE_ROW) {
            const char *t = (const char *)sqlite3_column_text(st, 0);
            out = strdup(t ? t : "");
        }
    }
    sqlite3_finalize(st);
    sqlite3_free(sql);
    return out;
}

/* 1 when the output already holds run r of the input (src_run: its number
 * there, -1 for a schema-1 input). */
static int already_there(fsc_rundb_merger_t *m, const fsc_rundb_run_t *r, int64_t src_run)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT run FROM main.runs WHERE source IS ?1 AND kind IS ?2"
                           " AND rank IS ?3 AND device IS ?4 AND host IS ?5",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    bind_opt_text(st, 1, r->source);
    bind_opt_text(st, 2, r->kind);
    bind_opt_int(st, 3, r->rank);
    bind_opt_int(st, 4, r->device);
    bind_opt_text(st, 5, r->host);
    int found = 0;
    char *want = NULL;
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
        if (want == NULL && (want = summary_print(m->db, "src", src_run)) == NULL)
            break;
        char *have = summary_print(m->db, "main", sqlite3_column_int64(st, 0));
        found = have != NULL && strcmp(have, want) == 0;
        free(have);
    }
    free(want);
    sqlite3_finalize(st);
    return found;
}

/* The input database each output run came from, for the messages. */
static int note_file(fsc_rundb_merger_t *m, int64_t run, const char *path)
{
    if (run < 0)
        return 0;
    if ((size_t)run >= m->nfiles) {
        size_t n = (size_t)run + 16;
        char **v = realloc(m->files, n * sizeof *v);
        if (v == NULL)
            return FSC_ENOMEM;
        memset(v + m->nfiles, 0, (n - m->nfiles) * sizeof *v);
        m->files = v;
        m->nfiles = n;
    }
    free(m->files[run]);
    m->files[run] = strdup(path);
    return m->files[run] ? 0 : FSC_ENOMEM;
}

/* A run of a job is one process on one device: a second run claiming the
 * rank and device of one already in the output is a launcher's mistake
 * (RANK unset, every process rank 0) or the same run under two names.
 * Both are kept, the new one flagged in meta (merge.duplicate_rank) and
 * counted, with a message naming both input files. */
static int check_duplicate(fsc_rundb_merger_t *m, const char *in, const src_run_t *s,
                           int64_t new_run, fsc_err_t *err)
{
    if (s->r.rank == FSC_RUNDB_NULL)
        return 0; /* unknown ranks are told apart by run number */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(m->db, "SELECT run, source FROM main.runs WHERE rank = ?1"
                                  " AND device IS ?2 AND run != ?3 ORDER BY run LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return out_fail(m, err, "runs");
    sqlite3_bind_int64(st, 1, s->r.rank);
    bind_opt_int(st, 2, s->r.device);
    sqlite3_bind_int64(st, 3, new_run);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        int64_t other = sqlite3_column_int64(st, 0);
        const char *osrc = (const char *)sqlite3_column_text(st, 1);
        const char *ofile = other >= 0 && (size_t)other < m->nfiles && m->files[other]
                                ? m->files[other]
                                : m->out.path;
        char dev[32] = "unknown device";
        if (s->r.device != FSC_RUNDB_NULL)
            snprintf(dev, sizeof dev, "device %lld", (long long)s->r.device);
        const char *nsrc = s->r.source ? s->r.source : "source unknown";
        if (osrc == NULL)
            osrc = "source unknown";
        char *msg = m->temporaries
                        ? sqlite3_mprintf("rank %lld on %s twice: run %lld (%s) and run %lld "
                                          "(%s); both kept (give each process its own RANK, "
                                          "or each input its --rank)",
                                          (long long)s->r.rank, dev, (long long)other, osrc,
                                          (long long)new_run, nsrc)
                        : sqlite3_mprintf("rank %lld on %s twice: run %lld from %s (%s) and run "
                                          "%lld from %s (%s); both kept (give each process its "
                                          "own RANK, or each input its --rank to analyze)",
                                          (long long)s->r.rank, dev, (long long)other, ofile,
                                          osrc, (long long)new_run, in, nsrc);
        sqlite3_finalize(st);
        st = NULL;
        if (msg == NULL)
            return fsc_err_set(err, FSC_ENOMEM, "out of memory");
        if (m->st.duplicate_ranks < FSC_RUNDB_MERGE_WARNINGS)
            snprintf(m->st.warnings[m->st.duplicate_ranks], sizeof m->st.warnings[0], "%s", msg);
        m->st.duplicate_ranks++;
        if (sqlite3_prepare_v2(m->db, "INSERT OR REPLACE INTO main.meta(run, key, value)"
                                      " VALUES(?1, 'merge.duplicate_rank', ?2)",
                               -1, &st, NULL) != SQLITE_OK)
            rc = out_fail(m, err, "meta");
        else {
            sqlite3_bind_int64(st, 1, new_run);
            sqlite3_bind_text(st, 2, msg, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = out_fail(m, err, "meta");
        }
        sqlite3_free(msg);
    }
    sqlite3_finalize(st);
    return rc;
}

/* INSERT INTO main.T(<its columns>) SELECT ... FROM src.T for one run. */
static int copy_table(fsc_rundb_merger_t *m, const char *in, const char *table, int64_t src_run,
                      int64_t new_run, fsc_err_t *err)
{
    char **mc = NULL, **sc = NULL;
    size_t nm = 0, ns = 0;
    char *q1 = sqlite3_mprintf("SELECT name FROM main.pragma_table_info(%Q)", table);
    char *q2 = sqlite3_mprintf("SELECT name FROM src.pragma_table_info(%Q)", table);
    int rc = q1 && q2 ? 0 : FSC_ENOMEM;
    if (rc == 0 && (names(m->db, q1, &mc, &nm) != 0 || names(m->db, q2, &sc, &ns) != 0))
        rc = copy_fail(m, in, err, table);
    sqlite3_free(q1);
    sqlite3_free(q2);
    if (rc == FSC_ENOMEM)
        rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
    if (rc != 0 || ns == 0) { /* the input has no such table: no rows */
        names_free(mc, nm);
        names_free(sc, ns);
        return rc;
    }
    /* the input's rowid, when it has one: the order its rows were written */
    sqlite3_stmt *probe = NULL;
    char *p = sqlite3_mprintf("SELECT rowid FROM src.\"%w\"", table);
    int rowid = p != NULL && sqlite3_prepare_v2(m->db, p, -1, &probe, NULL) == SQLITE_OK;
    sqlite3_finalize(probe);
    sqlite3_free(p);
    int renumber_id = strcmp(table, "pytorch_meta") == 0;
    sqlite3_str *b = sqlite3_str_new(m->db);
    sqlite3_str_appendf(b, "INSERT INTO main.\"%w\"(", table);
    for (size_t i = 0; i < nm; i++)
        sqlite3_str_appendf(b, "%s\"%w\"", i ? ", " : "", mc[i]);
    sqlite3_str_appendall(b, ") SELECT ");
    for (size_t i = 0; i < nm; i++) {
        const char *sep = i ? ", " : "";
        if (strcmp(mc[i], "run") == 0)
            sqlite3_str_appendf(b, "%s%lld", sep, (long long)new_run);
        else if (renumber_id && strcmp(mc[i], "id") == 0)
            sqlite3_str_appendf(b, "%sNULL", sep);
        else if (has(sc, ns, mc[i]))
            sqlite3_str_appendf(b, "%s\"%w\"", sep, mc[i]);
        else
            sqlite3_str_appendf(b, "%sNULL", sep);
    }
    sqlite3_str_appendf(b, " FROM src.\"%w\"", table);
    if (src_run >= 0 && has(sc, ns, "run"))
        sqlite3_str_appendf(b, " WHERE run = %lld", (long long)src_run);
    if (rowid)
        sqlite3_str_appendall(b, " ORDER BY rowid");
    char *sql = sqlite3_str_finish(b);
    names_free(mc, nm);
    names_free(sc, ns);
    if (sql == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    if (sqlite3_exec(m->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        rc = copy_fail(m, in, err, table);
    else
        m->st.rows += (uint64_t)sqlite3_changes64(m->db);
    sqlite3_free(sql);
    return rc;
}

static int copy_run(fsc_rundb_merger_t *m, const char *in, const src_run_t *s, int64_t src_run,
                    fsc_err_t *err)
{
    if (already_there(m, &s->r, src_run)) {
        m->st.runs_skipped++;
        return 0;
    }
    int64_t new_run = m->next_run;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(m->db, "INSERT INTO main.runs VALUES(?1,?2,?3,?4,?5,?6,?7)", -1, &st,
                           NULL) != SQLITE_OK)
        return out_fail(m, err, "runs");
    sqlite3_bind_int64(st, 1, new_run);
    bind_opt_int(st, 2, s->r.rank);
    bind_opt_int(st, 3, s->r.device);
    bind_opt_text(st, 4, s->r.host);
    bind_opt_int(st, 5, s->r.pid);
    bind_opt_text(st, 6, s->r.source);
    bind_opt_text(st, 7, s->r.kind);
    int ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    if (!ok)
        return out_fail(m, err, "runs");
    for (size_t i = 0; i < m->ntables; i++) {
        int rc = copy_table(m, in, m->tables[i], src_run, new_run, err);
        if (rc != 0)
            return rc;
    }
    /* every run of the job says the schema it is stored in */
    char sql[160];
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO main.meta(run, key, value) VALUES(%lld, 'schema_version', %d)",
             (long long)new_run, FSC_RUNDB_SCHEMA_VERSION);
    int rc = exec(m, sql, err, "meta");
    if (rc == 0)
        rc = check_duplicate(m, in, s, new_run, err);
    if (rc == 0 && note_file(m, new_run, in) != 0)
        rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
    if (rc == 0) {
        m->next_run++;
        m->st.runs_added++;
    }
    return rc;
}

int fsc_rundb_merger_add(fsc_rundb_merger_t *m, const char *db_path, fsc_err_t *err)
{
    if (m == NULL || db_path == NULL)
        return fsc_err_set(err, FSC_EINVAL, "no merge or no input");
    if (m->failed)
        return fsc_err_set(err, FSC_EINVAL, "%s: the merge failed before", m->out.path);
    /* the one check every reader makes, and the runs it holds */
    fsc_rundb_t *rd = NULL;
    src_runs_t runs = {NULL, 0, 0, };
    int rc = fsc_rundb_open(db_path, &rd, err);
    int v2 = 0;
    if (rc == 0 && (rc = fsc_rundb_has_table(rd, "runs", &v2)) != 0)
        fsc_err_copy(err, fsc_rundb_error(rd));
    if (rc == 0 && (rc = fsc_rundb_each_run(rd, keep_run, &runs)) != 0) {
        if (rc == FSC_ENOMEM)
            fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", db_path);
        else
            fsc_err_copy(err, fsc_rundb_error(rd));
    }
    fsc_rundb_close(rd);
    if (rc != 0) {
        m->failed = 1;
        runs_free(&runs);
        return rc;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(m->db, "ATTACH ?1 AS src", -1, &st, NULL) != SQLITE_OK)
        rc = out_fail(m, err, "attach");
    if (rc == 0) {
        sqlite3_bind_text(st, 1, db_path, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = copy_fail(m, db_path, err, "the file");
    }
    sqlite3_finalize(st);
    if (rc == 0)
        rc = exec(m, "BEGIN", err, "BEGIN");
    for (size_t i = 0; i < runs.n && rc == 0; i++)
        rc = copy_run(m, db_path, &runs.v[i], v2 ? runs.v[i].r.run : -1, err);
    if (rc == 0)
        rc = exec(m, "COMMIT", err, "COMMIT");
    if (rc == 0)
        rc = exec(m, "DETACH src", err, "detach");
    runs_free(&runs);
    if (rc != 0)
        return rc;
    struct stat sb;
    if (stat(db_path, &sb) == 0)
        m->st.bytes_in += (uint64_t)sb.st_size;
    m->st.inputs++;
    return 0;
}

int fsc_rundb_merger_commit(fsc_rundb_merger_t *m, fsc_rundb_merge_stats_t *st, fsc_err_t *err)
{
    if (m == NULL)
        return fsc_err_set(err, FSC_EINVAL, "no merge");
    int rc = m->failed ? fsc_err_set(err, FSC_EINVAL, "%s: the merge failed", m->out.path) : 0;
    m->st.runs = (uint64_t)m->next_run;
    if (rc == 0 && sqlite3_close(m->db) != SQLITE_OK)
        rc = fsc_err_set(err, FSC_EIO, "%s: cannot close the job database: %s", m->out.path,
                         sqlite3_errmsg(m->db));
    if (rc == 0)
        m->db = NULL;
    if (rc == 0)
        rc = fsc_outfile_commit(&m->out, err);
    if (rc == 0 && st != NULL)
        *st = m->st;
    if (rc == 0) {
        names_free(m->tables, m->ntables);
        names_free(m->files, m->nfiles);
        free(m);
        return 0;
    }
    fsc_rundb_merger_abort(m);
    return rc;
}

int fsc_rundb_merge(const char *const *inputs, size_t n, const char *out_path,
                    fsc_rundb_merge_stats_t *st, fsc_err_t *err)
{
    fsc_rundb_merger_t *m = NULL;
    int rc = fsc_rundb_merger_open(out_path, 1, &m, err);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = fsc_rundb_merger_add(m, inputs[i], err);
    if (rc != 0) {
        fsc_rundb_merger_abort(m);
        return rc;
    }
    return fsc_rundb_merger_commit(m, st, err);
}
