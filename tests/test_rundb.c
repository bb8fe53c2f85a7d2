/*
 * test_rundb.c — the run database's schema and its one reader
 * (fragscope/rundb.h): the schema against its documentation (docs/schema.md),
 * the errors every reading command shares, and the rows the iterators hand
 * out for the hand-built run of tests/viewer/small.sql.
 */
#include <ctype.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/rundb.h"
#include "fsc_test.h"

/* ---- the schema and docs/schema.md ---------------------------------------- */

#define MAX_DOC 512

typedef struct doc_col {
    char table[64], column[64], type[64];
    int shared; /* the column table documents more than one table */
} doc_col_t;

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (isspace((unsigned char)s[n - 1]) || s[n - 1] == '`'))
        s[--n] = '\0';
    size_t k = strspn(s, " `");
    memmove(s, s + k, strlen(s + k) + 1);
}

/* Table names a heading ("## layout_snapshots and layout — ...") or a
 * label line ("`layout` — every block ...", "`layout_snapshots`:") puts
 * the next column table under. */
static int names_of(const char *text, char out[4][64])
{
    char buf[256], names[4][64];
    snprintf(buf, sizeof buf, "%s", text);
    char *dash = strstr(buf, " — ");
    if (dash == NULL)
        dash = strchr(buf, ':');
    if (dash == NULL)
        return 0;
    *dash = '\0';
    int n = 0;
    for (char *p = buf, *e; p != NULL && n < 4; p = e) {
        e = strstr(p, " and ");
        if (e != NULL) {
            *e = '\0';
            e += 5;
        }
        snprintf(names[n], 64, "%.63s", p);
        trim(names[n]);
        int word = names[n][0] != '\0';
        for (const char *c = names[n]; *c; c++)
            word &= isalnum((unsigned char)*c) || *c == '_';
        if (!word)
            return 0;
        n++;
    }
    memcpy(out, names, sizeof names);
    return n;
}

static size_t parse_doc(doc_col_t *out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/schema.md", FSC_SOURCE_DIR);
    char *md = fsc_test_slurp(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    char names[4][64];
    int nnames = 0, in_table = 0;
    size_t n = 0;
    for (char *line = md, *next; line != NULL; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (strncmp(line, "## ", 3) == 0) {
            nnames = names_of(line + 3, names);
            in_table = 0;
        } else if (line[0] == '`') {
            int k = names_of(line, names);
            if (k > 0)
                nnames = k;
        } else if (strcmp(line, "| column | type | meaning |") == 0) {
            in_table = 1;
        } else if (in_table && strncmp(line, "|---", 4) == 0) {
            continue;
        } else if (in_table && line[0] == '|') {
            /* | created_seq, created_time_ns | INTEGER | ... |: one row, two columns */
            char *c2 = strchr(line + 1, '|'), *c3 = c2 ? strchr(c2 + 1, '|') : NULL;
            CU_ASSERT_PTR_NOT_NULL_FATAL(c3);
            *c2 = *c3 = '\0';
            char type[64];
            snprintf(type, sizeof type, "%s", c2 + 1);
            trim(type);
            char *rest = NULL;
            for (char *one = strtok_r(line + 1, ",", &rest); one != NULL;
                 one = strtok_r(NULL, ",", &rest)) {
                for (int k = 0; k < nnames; k++) {
                    CU_ASSERT_FATAL(n < MAX_DOC);
                    doc_col_t *d = &out[n++];
                    snprintf(d->table, sizeof d->table, "%.63s", names[k]);
                    snprintf(d->column, sizeof d->column, "%s", one);
                    trim(d->column);
                    snprintf(d->type, sizeof d->type, "%s", type);
                    d->shared = nnames > 1;
                }
            }
        } else {
            in_table = 0;
        }
    }
    free(md);
    return n;
}

/* "a, b, c" from the documented columns of table, in their order. */
static void doc_columns(const doc_col_t *d, size_t n, const char *table, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(d[i].table, table) == 0)
            snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? ", " : "",
                     d[i].column);
}

/* Every table and view of fsc_rundb_schema() is documented with exactly its
 * columns, in order, and with their types; nothing else is documented. */
static void test_schema_matches_docs(void)
{
    static doc_col_t doc[MAX_DOC];
    size_t ndoc = parse_doc(doc);
    CU_ASSERT(ndoc > 150);

    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(":memory:", &db), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_exec(db, fsc_rundb_schema(), NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *tables = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db,
                                             "SELECT name, type FROM sqlite_master WHERE type IN"
                                             " ('table', 'view') ORDER BY name",
                                             -1, &tables, NULL),
                          SQLITE_OK);
    int ntables = 0;
    char in_schema[2048] = "";
    while (sqlite3_step(tables) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(tables, 0);
        int view = strcmp((const char *)sqlite3_column_text(tables, 1), "view") == 0;
        ntables++;
        snprintf(in_schema + strlen(in_schema), sizeof in_schema - strlen(in_schema), " %s ",
                 name);
        char sql[128], want[2048] = "", got[2048];
        snprintf(sql, sizeof sql, "SELECT name, type, pk FROM pragma_table_info('%s')", name);
        sqlite3_stmt *cols = NULL;
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, sql, -1, &cols, NULL), SQLITE_OK);
        int npk = 0;
        while (sqlite3_step(cols) == SQLITE_ROW)
            npk += sqlite3_column_int(cols, 2) > 0;
        sqlite3_reset(cols);
        while (sqlite3_step(cols) == SQLITE_ROW) {
            const char *col = (const char *)sqlite3_column_text(cols, 0);
            const char *type = (const char *)sqlite3_column_text(cols, 1);
            int pk = sqlite3_column_int(cols, 2);
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", want[0] ? ", " : "",
                     col);
            for (size_t i = 0; i < ndoc; i++) {
                if (strcmp(doc[i].table, name) != 0 || strcmp(doc[i].column, col) != 0 ||
                    view || doc[i].shared)
                    continue;
                /* An untyped column is documented by what it holds. */
                const char *dt = doc[i].type;
                int untyped = strcmp(dt, "any") == 0 || strcmp(dt, "INTEGER or REAL") == 0;
                /* a key of one column: "INTEGER PRIMARY KEY"; each column of
                 * a key of several, (run, id): "INTEGER KEY" */
                char have[64];
                snprintf(have, sizeof have, "%s%s", type,
                         pk ? (npk > 1 ? " KEY" : " PRIMARY KEY") : "");
                if (untyped ? type[0] != '\0' : strcmp(have, dt) != 0) {
                    fprintf(stderr, "\n%s.%s: docs/schema.md says %s, the schema %s\n", name,
                            col, dt, have[0] ? have : "(no type)");
                    CU_FAIL("column type");
                }
            }
        }
        sqlite3_finalize(cols);
        doc_columns(doc, ndoc, name, got, sizeof got);
        if (strcmp(want, got) != 0) {
            fprintf(stderr, "\n%s: the schema has (%s)\n  docs/schema.md documents (%s)\n", name,
                    want, got);
            CU_FAIL("documented columns");
        }
    }
    sqlite3_finalize(tables);
    sqlite3_close(db);
    CU_ASSERT_EQUAL(ntables, 30);
    for (size_t i = 0; i < ndoc; i++) {
        char key[80];
        snprintf(key, sizeof key, " %.63s ", doc[i].table);
        if (strstr(in_schema, key) == NULL) {
            fprintf(stderr, "\ndocs/schema.md documents table %s, which the schema lacks\n",
                    doc[i].table);
            CU_FAIL("documented table");
        }
    }
}

/* The schema is what the analyzer writes: schema_version and a database
 * made from it read back. */
static void test_schema_version(void)
{
    CU_ASSERT_EQUAL(FSC_RUNDB_SCHEMA_VERSION, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_rundb_schema(), "CREATE TABLE meta(run INTEGER NOT NULL "
                                                      "DEFAULT 0, key TEXT, value, "
                                                      "PRIMARY KEY(run, key));"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_rundb_schema(), "CREATE VIEW events AS"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_rundb_schema_v1(), "CREATE TABLE meta(key TEXT PRIMARY "
                                                         "KEY, value);"));
}

/* ---- opening: one check, one set of errors ------------------------------------- */

static const char *make_db(const char *name, const char *sql)
{
    const char *path = fsc_test_path(name);
    remove(path);
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fprintf(stderr, "\n%s: %s\n", name, msg);
    CU_ASSERT_PTR_NULL_FATAL(msg);
    sqlite3_close(db);
    return path;
}

static const char *make_file(const char *name, const char *text)
{
    const char *path = fsc_test_path(name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
    return path;
}

typedef struct bad_case {
    char path[1024]; /* fsc_test_path's buffer is reused: a copy */
    int code;
    char msg[1200]; /* the whole message */
} bad_case_t;

static size_t bad_cases(bad_case_t *c)
{
    size_t n = 0;
    static char schema_v[16384];
    const char *p;
#define BAD(path_, code_, fmt)                                              \
    do {                                                                    \
        snprintf(c[n].path, sizeof c[n].path, "%s", (path_));               \
        c[n].code = (code_);                                                \
        snprintf(c[n].msg, sizeof c[n].msg, fmt, c[n].path);                \
        n++;                                                                \
    } while (0)
    BAD(fsc_test_path("missing.db"), FSC_ENOENT, "%s: No such file or directory");
    BAD(fsc_test_tmpdir(), FSC_EFORMAT, "%s: not a regular file");
    BAD(make_file("empty.db", ""), FSC_EFORMAT, "%s: not a fragscope run database (empty file)");
    BAD(make_file("notes.db", "these are notes, long enough to look like a header of a file\n"),
        FSC_EFORMAT, "%s: not a fragscope run database (not an SQLite database)");
    BAD(make_db("foreign.db", "CREATE TABLE t(x); INSERT INTO t VALUES(1);"), FSC_EFORMAT,
        "%s: not a fragscope run database (no meta table)");
    BAD(make_db("unversioned.db", "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
                                  "INSERT INTO meta VALUES('schema_version', 'one');"),
        FSC_EFORMAT, "%s: not a fragscope run database (no schema version)");
    CU_ASSERT_FATAL(strlen(fsc_rundb_schema()) + 64 < sizeof schema_v);
    snprintf(schema_v, sizeof schema_v,
             "%s INSERT INTO meta(key, value) VALUES('schema_version', 3);", fsc_rundb_schema());
    BAD(make_db("future.db", schema_v), FSC_EVERSION,
        "%s: run database schema version 3 is newer than this fragscope reads (2); upgrade "
        "fragscope");
    p = make_db("husk.db", "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
                           "INSERT INTO meta VALUES('schema_version', 1);");
    BAD(p, FSC_EFORMAT, "%s: damaged run database: no such table: summary (reading summary)");
#undef BAD
    return n;
}

static void test_open_errors(void)
{
    bad_case_t c[16];
    size_t n = bad_cases(c);
    for (size_t i = 0; i < n; i++) {
        fsc_rundb_t *db = (fsc_rundb_t *)1;
        fsc_err_t err = {0, ""};
        CU_ASSERT_EQUAL(fsc_rundb_open(c[i].path, &db, &err), c[i].code);
        CU_ASSERT_PTR_NULL(db);
        if (strcmp(err.msg, c[i].msg) != 0) {
            fprintf(stderr, "\nwant: %s\n got: %s\n", c[i].msg, err.msg);
            CU_FAIL("error message");
        }
    }
    fsc_rundb_t *db = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL(fsc_rundb_open(NULL, &db, &err), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_rundb_open("", &db, &err), FSC_EINVAL);
    fsc_rundb_close(NULL);
}

/* report, check, diff, view and whatif --db refuse each bad file with the
 * same message (after their "fragscope: [command: ]" prefix) and exit 2. */
static void test_same_errors_everywhere(void)
{
    bad_case_t c[16];
    size_t n = bad_cases(c);
    char good[1024], input[1024], html[1024];
    snprintf(good, sizeof good, "%s", fsc_test_viewer_db("good.db", "small.sql"));
    snprintf(input, sizeof input, "%s", fsc_test_data("pytorch/tiny.p4.pickle"));
    snprintf(html, sizeof html, "%s", fsc_test_path("bad.html"));
    const char *bin = fsc_test_fragscope();
    for (size_t i = 0; i < n; i++) {
        char cmd[5][4400];
        const char *p = c[i].path;
        snprintf(cmd[0], sizeof cmd[0], "'%.1000s' report '%.1000s'", bin, p);
        snprintf(cmd[1], sizeof cmd[1], "'%.1000s' check '%.1000s' --no-oom", bin, p);
        snprintf(cmd[2], sizeof cmd[2], "'%.1000s' diff '%.1000s' '%.1000s'", bin, good, p);
        snprintf(cmd[3], sizeof cmd[3], "'%.1000s' view '%.1000s' -o '%.1000s'", bin, p, html);
        snprintf(cmd[4], sizeof cmd[4], "'%.1000s' whatif '%.1000s' --db '%.1000s'", bin, input, p);
        for (int k = 0; k < 5; k++) {
            char out[4096], want[1300];
            int rc = fsc_test_sh(out, sizeof out, "%s", cmd[k]);
            snprintf(want, sizeof want, "%s\n", c[i].msg);
            size_t lo = strlen(out), lw = strlen(want);
            int ok = rc == 2 && fsc_test_count(out, "\n") == 1 && lo >= lw &&
                     strcmp(out + lo - lw, want) == 0 && strncmp(out, "fragscope: ", 11) == 0;
            if (!ok) {
                fprintf(stderr, "\n%s\n  exit %d, printed: %s  want exit 2 and: %s", cmd[k], rc,
                        out, want);
                CU_FAIL("one message for every command");
            }
        }
    }
    CU_ASSERT_FALSE(fsc_test_file_exists(html));
}

/* ---- the rows ---------------------------------------------------------------- */

static fsc_rundb_t *open_small(void)
{
    const char *path = fsc_test_viewer_db("rows.db", "small.sql");
    fsc_rundb_t *db = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_rundb_open(path, &db, &err), 0);
    CU_ASSERT_STRING_EQUAL(fsc_rundb_path(db), path);
    return db;
}

static int count_kv(void *ud, const fsc_rundb_kv_t *kv)
{
    int *n = ud;
    if (strcmp(kv->key, "schema_version") == 0) {
        CU_ASSERT_EQUAL(kv->type, FSC_RUNDB_T_INT);
        CU_ASSERT_EQUAL(kv->i, 1);
        CU_ASSERT_PTR_NULL(kv->text);
        CU_ASSERT_PTR_NULL(kv->unit);
    }
    if (strcmp(kv->key, "utilization") == 0) {
        CU_ASSERT_EQUAL(kv->type, FSC_RUNDB_T_REAL);
        CU_ASSERT_DOUBLE_EQUAL(kv->d, 35653632.0 / 44040192.0, 1e-12);
        CU_ASSERT_STRING_EQUAL(kv->unit, "ratio");
    }
    if (strcmp(kv->key, "backend") == 0) {
        CU_ASSERT_EQUAL(kv->type, FSC_RUNDB_T_TEXT);
        CU_ASSERT_STRING_EQUAL(kv->text, "sim");
    }
    (*n)++;
    return 0;
}

static void test_values(void)
{
    fsc_rundb_t *db = open_small();
    int64_t i = 0;
    double d = 0;
    char buf[16];
    CU_ASSERT_EQUAL(fsc_rundb_meta_int(db, "capacity", 7, &i), 0);
    CU_ASSERT_EQUAL(i, 66 * 1048576);
    CU_ASSERT_EQUAL(fsc_rundb_meta_int(db, "no such key", 7, &i), 0);
    CU_ASSERT_EQUAL(i, 7);
    CU_ASSERT_EQUAL(fsc_rundb_meta_text(db, "producer", buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "fragscope test"); /* 14 characters and the NUL fit */
    CU_ASSERT_EQUAL(fsc_rundb_meta_text(db, "source_kind", buf, 4), 0);
    CU_ASSERT_STRING_EQUAL(buf, "tra");
    CU_ASSERT_EQUAL(fsc_rundb_meta_text(db, "capacity", buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "69206016");
    CU_ASSERT_EQUAL(fsc_rundb_meta_text(db, "nothing", buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "");
    CU_ASSERT_EQUAL(fsc_rundb_summary_int(db, "peak_reserved_bytes", 0, &i), 0);
    CU_ASSERT_EQUAL(i, 44040192);
    CU_ASSERT_EQUAL(fsc_rundb_summary_real(db, "utilization", 0, &d), 0);
    CU_ASSERT_DOUBLE_EQUAL(d, 35653632.0 / 44040192.0, 1e-12);
    CU_ASSERT_EQUAL(fsc_rundb_summary_real(db, "nothing", 2.5, &d), 0);
    CU_ASSERT_EQUAL(d, 2.5);
    int n = 0;
    CU_ASSERT_EQUAL(fsc_rundb_meta(db, count_kv, &n), 0);
    CU_ASSERT_EQUAL(n, 21);
    n = 0;
    CU_ASSERT_EQUAL(fsc_rundb_summary(db, count_kv, &n), 0);
    CU_ASSERT_EQUAL(n, 23);
    char *path = NULL;
    CU_ASSERT_EQUAL(fsc_rundb_tag_path(db, 2, 0, &path), 0);
    CU_ASSERT_STRING_EQUAL(path, "step/<img src=x onerror=alert(1)>");
    free(path);
    CU_ASSERT_EQUAL(fsc_rundb_tag_path(db, 2, 9, &path), 0);
    CU_ASSERT_STRING_EQUAL(path, "alert(1)>");
    free(path);
    CU_ASSERT_EQUAL(fsc_rundb_tag_path(db, 99, 0, &path), 0);
    CU_ASSERT_PTR_NULL(path);
    int have = 0;
    CU_ASSERT_EQUAL(fsc_rundb_has_table(db, "events", &have), 0);
    CU_ASSERT_EQUAL(have, 1);
    CU_ASSERT_EQUAL(fsc_rundb_has_table(db, "people", &have), 0);
    CU_ASSERT_EQUAL(have, 0);
    CU_ASSERT_EQUAL(fsc_rundb_count(db, "timeline", &i), 0);
    CU_ASSERT_EQUAL(i, 10);
    CU_ASSERT_EQUAL(fsc_rundb_count(db, "people", &i), 0);
    CU_ASSERT_EQUAL(i, 0);
    fsc_rundb_close(db);
}

static int oom_row(void *ud, const fsc_rundb_oom_t *o)
{
    fsc_rundb_oom_t *out = ud;
    *out = *o;
    out->cause = out->explanation = NULL; /* valid only during the call */
    CU_ASSERT_STRING_EQUAL(o->cause, "fragmentation");
    CU_ASSERT_PTR_NOT_NULL(strstr(o->explanation, "pinned it."));
    return 0;
}

typedef struct seen {
    char s[512];
} seen_t;

#define SEEN(ud, ...)                                                                       \
    do {                                                                                    \
        seen_t *s_ = (ud);                                                                  \
        snprintf(s_->s + strlen(s_->s), sizeof s_->s - strlen(s_->s), __VA_ARGS__);         \
    } while (0)

static int seg_row(void *ud, const fsc_rundb_oom_segment_t *g)
{
    SEEN(ud, "%lld:%llx/%lld ", (long long)g->rank, (unsigned long long)g->segment,
         (long long)g->free_blocks);
    return 0;
}

static int pin_row(void *ud, const fsc_rundb_pin_t *p)
{
    SEEN(ud, "%llx:%lld:%s:%lld ", (unsigned long long)p->addr, (long long)p->size, p->state,
         (long long)p->tag);
    return 0;
}

static int oom_tag_row(void *ud, const fsc_rundb_oom_tag_t *t)
{
    SEEN(ud, "%lld=%lld ", (long long)t->tag, (long long)t->live_bytes);
    return t->rank == 1 ? FSC_RUNDB_STOP : 0;
}

static int sugg_row(void *ud, const fsc_rundb_suggestion_t *g)
{
    SEEN(ud, "%s/%lld ", g->config,
         g->needed_capacity == FSC_RUNDB_NULL ? -1LL : (long long)g->needed_capacity);
    return 0;
}

static int bin_row(void *ud, const fsc_rundb_bin_t *b)
{
    if (b->requests > 0)
        SEEN(ud, "%lld:%lld:%.2f ", (long long)b->bin, (long long)b->requests, b->hit_rate);
    return 0;
}

static int tag_stat_row(void *ud, const fsc_rundb_tag_stat_t *t)
{
    SEEN(ud, "%lld:%lld:%lld ", (long long)t->tag, (long long)t->live_bytes_at_peak,
         (long long)t->live_bytes_end);
    return 0;
}

static int snap_row(void *ud, const fsc_rundb_snapshot_t *s)
{
    SEEN(ud, "%lld:%s:%lld ", (long long)s->id, s->kind,
         s->oom_id == FSC_RUNDB_NULL ? -1LL : (long long)s->oom_id);
    return 0;
}

static int block_row(void *ud, const fsc_rundb_block_t *b)
{
    seen_t *s = ud;
    if (b->state[0] == 'f') {
        CU_ASSERT_EQUAL(b->requested, FSC_RUNDB_NULL);
        CU_ASSERT_EQUAL(b->tag, FSC_RUNDB_NULL);
    }
    if (strlen(s->s) < 400)
        SEEN(ud, "%lld:%llx ", (long long)b->snapshot, (unsigned long long)b->addr & 0xfffffff);
    return 0;
}

static int timeline_row(void *ud, const fsc_rundb_timeline_t *t)
{
    if (t->id == 5)
        SEEN(ud, "%lld..%lld max %lld ext %.4f", (long long)t->seq_first, (long long)t->seq_last,
             (long long)t->allocated_max, t->external_frag);
    return 0;
}

static int marker_row(void *ud, const fsc_rundb_marker_t *m)
{
    SEEN(ud, "%lld:%s|", (long long)m->seq, m->text);
    return 0;
}

static int fail_row(void *ud, const fsc_rundb_marker_t *m)
{
    (void)ud;
    (void)m;
    return FSC_ENOMEM;
}

/* Each iterator on the hand-built run: the rows, their order, NULLs, early
 * stops and a callback's error. */
static void test_rows(void)
{
    fsc_rundb_t *db = open_small();
    fsc_rundb_oom_t o;
    memset(&o, 0, sizeof o);
    CU_ASSERT_EQUAL(fsc_rundb_ooms(db, oom_row, &o), 0);
    CU_ASSERT_EQUAL(o.id, 0);
    CU_ASSERT_EQUAL(o.seq, 38);
    CU_ASSERT_EQUAL(o.time_ns, 2400000000);
    CU_ASSERT_EQUAL(o.requested, 31457275);
    CU_ASSERT_EQUAL(o.rounded, 31457280);
    CU_ASSERT_EQUAL(o.capacity, 69206016);
    CU_ASSERT_EQUAL(o.segment_size, 31457280);
    CU_ASSERT_EQUAL(o.device_free, FSC_RUNDB_NULL);
    CU_ASSERT_EQUAL(o.device_total, 85899345920);
    CU_ASSERT_EQUAL(o.largest_free_usable, 4194304);
    CU_ASSERT_DOUBLE_EQUAL(o.external_frag, 0.4999, 1e-12);
    CU_ASSERT_EQUAL(o.layout_snapshot, 1);

    seen_t s = {""};
    CU_ASSERT_EQUAL(fsc_rundb_oom_segments(db, 0, seg_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "0:7f0000000000/2 1:7f0001400000/1 ");
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_oom_pins(db, 0, 0x7f0000000000, pin_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "7f0000000000:8388608:allocated:2 7f0000c00000:6291456:allocated:3 ");
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_oom_pins(db, 0, 0x7f0001400000, pin_row, &s), 0);
    CU_ASSERT_EQUAL(fsc_test_count(s.s, ":512:allocated:2 "), 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.s, "7f0001400000:512"));
    CU_ASSERT(strstr(s.s, "7f0001400000:") < strstr(s.s, "7f0001400600:"));
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_oom_tags(db, 0, oom_tag_row, &s), 0); /* stops after rank 1 */
    CU_ASSERT_STRING_EQUAL(s.s, "1=20971520 2=8390656 ");
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_suggestions(db, 0, sugg_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "max_split_size_mb:64/69206016 expandable_segments:True/-1 ");
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_suggestions(db, 5, sugg_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "");
    CU_ASSERT_EQUAL(fsc_rundb_suggestions(db, FSC_RUNDB_NULL, sugg_row, &s), 0);
    CU_ASSERT_EQUAL(fsc_test_count(s.s, "/"), 2);
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_bins(db, bin_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "0:4:0.75 13:1:0.00 14:1:0.00 15:2:0.50 ");
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_tag_stats(db, FSC_RUNDB_AT_PEAK, tag_stat_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "1:20971520:0 2:8390656:2048 3:6291456:0 ");
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_tag_stats(db, FSC_RUNDB_AT_END, tag_stat_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "2:8390656:2048 ");
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_snapshots(db, snap_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "0:peak_allocated:-1 1:oom:0 ");
    memset(&s, 0, sizeof s);
    int64_t only[1] = {1};
    CU_ASSERT_EQUAL(fsc_rundb_layout(db, only, 1, block_row, &s), 0);
    CU_ASSERT_EQUAL(fsc_test_count(s.s, "1:"), 10);
    CU_ASSERT_EQUAL(fsc_test_count(s.s, "0:"), 0);
    CU_ASSERT(strncmp(s.s, "1:0 1:800000 1:c00000 1:1200000 1:1400000 ", 41) == 0);
    memset(&s, 0, sizeof s);
    int64_t both[2] = {1, 0};
    CU_ASSERT_EQUAL(fsc_rundb_layout(db, both, 2, block_row, &s), 0);
    CU_ASSERT(strncmp(s.s, "0:0 0:800000 ", 13) == 0); /* by snapshot first */
    CU_ASSERT_EQUAL(fsc_test_count(s.s, " "), 20);
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_timeline(db, timeline_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "20..23 max 35653632 ext 0.4999");
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(fsc_rundb_markers(db, marker_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "0:step 1|24:step 2|30:</script><img src=x onerror=alert(1)>|");
    CU_ASSERT_EQUAL(fsc_rundb_markers(db, fail_row, NULL), FSC_ENOMEM);
    fsc_rundb_close(db);
}

/* Only meta and summary are required: the other tables may be missing
 * (no rows), but one that is there with a column missing is damaged. */
static void test_optional_and_damaged_tables(void)
{
    const char *path = make_db("minimal.db", "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
                                             "CREATE TABLE summary(key TEXT PRIMARY KEY, value,"
                                             " unit TEXT);"
                                             "INSERT INTO meta VALUES('schema_version', '1');"
                                             "CREATE TABLE ooms(id INTEGER, what TEXT);");
    fsc_rundb_t *db = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_rundb_open(path, &db, &err), 0);
    seen_t s = {""};
    CU_ASSERT_EQUAL(fsc_rundb_markers(db, marker_row, &s), 0);
    CU_ASSERT_EQUAL(fsc_rundb_bins(db, bin_row, &s), 0);
    CU_ASSERT_EQUAL(fsc_rundb_suggestions(db, 0, sugg_row, &s), 0);
    int64_t one = 0;
    CU_ASSERT_EQUAL(fsc_rundb_layout(db, &one, 1, block_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "");
    char *p = (char *)1;
    CU_ASSERT_EQUAL(fsc_rundb_tag_path(db, 0, 0, &p), 0);
    CU_ASSERT_PTR_NULL(p);
    fsc_rundb_oom_t o;
    CU_ASSERT_EQUAL(fsc_rundb_ooms(db, oom_row, &o), FSC_EFORMAT);
    char want[1200];
    snprintf(want, sizeof want, "%s: damaged run database: no such column: seq (reading ooms)",
             path);
    CU_ASSERT_STRING_EQUAL(fsc_rundb_error(db)->msg, want);
    fsc_rundb_close(db);
}

static const fsc_test_case_t k_tests[] = {
    {"the schema matches docs/schema.md", test_schema_matches_docs},
    {"schema version and statements", test_schema_version},
    {"open: one check, one message per problem", test_open_errors},
    {"every reading command gives the same errors", test_same_errors_everywhere},
    {"meta, summary, tag paths, counts", test_values},
    {"row iterators", test_rows},
    {"optional tables and damaged ones", test_optional_and_damaged_tables},
    {NULL, NULL},
};

FSC_TEST_MAIN("rundb", k_tests)
