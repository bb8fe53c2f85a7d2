/*
 * test_rundb_runs.c — the run dimension of the run database: the runs of a
 * database (table runs, or the one run of a schema-1 file made up from its
 * meta), the choice of one (every reader call then reads only that run),
 * the words that name a run, the rank a file name says, and the runs row
 * that analyze writes.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/rundb.h"
#include "fsc_test.h"

/* Two runs with the same ids and different contents: run 0 rank 0 on
 * node1, run 1 without a rank (a snapshot's device 1). */
static const char k_two_runs[] =
    "INSERT INTO runs VALUES (0, 0, 0, 'node1', 41, 'a.fstrace', 'trace'),"
    " (1, NULL, 1, NULL, NULL, 'b.pickle', 'snapshot');"
    "INSERT INTO meta(run, key, value) VALUES (0, 'schema_version', 2), (0, 'producer', 'p0'),"
    " (1, 'schema_version', 2), (1, 'zeta', 'z'), (1, 'producer', 'p1');"
    "INSERT INTO summary VALUES (0, 'peak_reserved_bytes', 1000, 'bytes'),"
    " (1, 'peak_reserved_bytes', 2000, 'bytes'), (1, 'num_ooms', 2, 'count');"
    "INSERT INTO tags VALUES (0, 0, NULL, ''), (0, 1, 0, 'fwd'), (0, 2, 1, 'attn'),"
    " (1, 0, NULL, ''), (1, 1, 0, 'bwd'), (1, 2, 1, 'mlp'), (1, 3, 2, 'gelu');"
    "INSERT INTO ooms(run, id, seq, requested, cause) VALUES (1, 0, 10, 4096, 'capacity'),"
    " (1, 1, 20, 8192, 'fragmentation');"
    "INSERT INTO suggestions(run, oom_id, config) VALUES (1, 0, 'second'), (0, NULL, 'only'),"
    " (1, 0, 'first');";

static const char *two_run_db(void)
{
    const char *path = fsc_test_path("two_runs.db");
    remove(path);
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, fsc_rundb_schema(), NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, k_two_runs, NULL, NULL, &msg) != SQLITE_OK)
        fprintf(stderr, "\n%s\n", msg);
    CU_ASSERT_PTR_NULL_FATAL(msg);
    sqlite3_close(db);
    return path;
}

typedef struct seen {
    char s[1024];
    int64_t select; /* >= 0: select this run from inside the callback */
    fsc_rundb_t *db;
} seen_t;

static int label_row(const fsc_rundb_run_t *r, void *ud)
{
    seen_t *s = ud;
    char buf[128];
    snprintf(s->s + strlen(s->s), sizeof s->s - strlen(s->s), "%lld:%s:%s|", (long long)r->run,
             fsc_rundb_run_label(r, buf, sizeof buf), r->kind);
    if (s->select >= 0 && fsc_rundb_select_run(s->db, s->select) != 0)
        return FSC_EFORMAT;
    return 0;
}

static int kv_row(void *ud, const fsc_rundb_kv_t *kv)
{
    seen_t *s = ud;
    snprintf(s->s + strlen(s->s), sizeof s->s - strlen(s->s), "%s|", kv->key);
    return 0;
}

static int sugg_row(void *ud, const fsc_rundb_suggestion_t *g)
{
    seen_t *s = ud;
    snprintf(s->s + strlen(s->s), sizeof s->s - strlen(s->s), "%s|", g->config);
    return 0;
}

static int64_t count(fsc_rundb_t *db, const char *table)
{
    int64_t n = -1;
    CU_ASSERT_EQUAL(fsc_rundb_count(db, table, &n), 0);
    return n;
}

static void test_select(void)
{
    const char *path = two_run_db();
    fsc_rundb_t *db = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_rundb_open(path, &db, &err), 0);
    int64_t n = 0, v = 0;
    CU_ASSERT_EQUAL(fsc_rundb_run_count(db, &n), 0);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(fsc_rundb_selected_run(db), 0);
    seen_t s = {"", -1, db};
    CU_ASSERT_EQUAL(fsc_rundb_each_run(db, label_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "0:rank 0 (device 0, host node1):trace|"
                                "1:run 1 (snapshot b.pickle, device 1):snapshot|");

    /* run 0, selected at open */
    CU_ASSERT_EQUAL(fsc_rundb_summary_int(db, "peak_reserved_bytes", 0, &v), 0);
    CU_ASSERT_EQUAL(v, 1000);
    CU_ASSERT_EQUAL(count(db, "tags"), 3);
    CU_ASSERT_EQUAL(count(db, "tag_paths"), 3);
    CU_ASSERT_EQUAL(count(db, "ooms"), 0);
    char *p = NULL;
    CU_ASSERT_EQUAL(fsc_rundb_tag_path(db, 2, 0, &p), 0);
    CU_ASSERT_STRING_EQUAL(p, "fwd/attn");
    free(p);
    memset(s.s, 0, sizeof s.s);
    CU_ASSERT_EQUAL(fsc_rundb_suggestions(db, FSC_RUNDB_NULL, sugg_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "only|");

    /* run 1: same ids, its own rows, in the order they were written */
    CU_ASSERT_EQUAL(fsc_rundb_select_run(db, 1), 0);
    CU_ASSERT_EQUAL(fsc_rundb_selected_run(db), 1);
    CU_ASSERT_EQUAL(fsc_rundb_summary_int(db, "peak_reserved_bytes", 0, &v), 0);
    CU_ASSERT_EQUAL(v, 2000);
    CU_ASSERT_EQUAL(count(db, "tags"), 4);
    CU_ASSERT_EQUAL(count(db, "tag_paths"), 4);
    CU_ASSERT_EQUAL(count(db, "ooms"), 2);
    CU_ASSERT_EQUAL(fsc_rundb_tag_path(db, 3, 0, &p), 0);
    CU_ASSERT_STRING_EQUAL(p, "bwd/mlp/gelu");
    free(p);
    memset(s.s, 0, sizeof s.s);
    CU_ASSERT_EQUAL(fsc_rundb_meta(db, kv_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "schema_version|zeta|producer|");
    memset(s.s, 0, sizeof s.s);
    CU_ASSERT_EQUAL(fsc_rundb_suggestions(db, 0, sugg_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "second|first|");
    int have = 0;
    CU_ASSERT_EQUAL(fsc_rundb_has_table(db, "runs", &have), 0);
    CU_ASSERT_EQUAL(have, 1);

    /* no such run: the selection stays */
    CU_ASSERT_EQUAL(fsc_rundb_select_run(db, 7), FSC_ENOENT);
    char want[1200];
    snprintf(want, sizeof want, "%s: no run 7 (the database holds 2 runs)", path);
    CU_ASSERT_STRING_EQUAL(fsc_rundb_error(db)->msg, want);
    CU_ASSERT_EQUAL(fsc_rundb_selected_run(db), 1);
    CU_ASSERT_EQUAL(count(db, "ooms"), 2);

    /* a callback may select the run it is given */
    memset(s.s, 0, sizeof s.s);
    s.select = 0;
    CU_ASSERT_EQUAL(fsc_rundb_each_run(db, label_row, &s), 0);
    CU_ASSERT_EQUAL(fsc_rundb_selected_run(db), 0);
    CU_ASSERT_EQUAL(fsc_rundb_summary_int(db, "num_ooms", -1, &v), 0);
    CU_ASSERT_EQUAL(v, -1);
    fsc_rundb_close(db);
}

/* A schema-1 file is run 0, described from its meta. */
static void test_schema1(void)
{
    const char *path = fsc_test_viewer_db("v1.db", "small.sql");
    fsc_rundb_t *db = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_rundb_open(path, &db, &err), 0);
    int64_t n = 0;
    CU_ASSERT_EQUAL(fsc_rundb_run_count(db, &n), 0);
    CU_ASSERT_EQUAL(n, 1);
    seen_t s = {"", -1, db};
    CU_ASSERT_EQUAL(fsc_rundb_each_run(db, label_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "0:run 0 (trace fixture.fstrace):trace|");
    CU_ASSERT_EQUAL(fsc_rundb_select_run(db, 0), 0);
    CU_ASSERT_EQUAL(fsc_rundb_select_run(db, 1), FSC_ENOENT);
    CU_ASSERT_EQUAL(count(db, "ooms"), 1);
    fsc_rundb_close(db);
}

static void test_labels_and_names(void)
{
    char buf[96];
    fsc_rundb_run_t r = {3, 5, FSC_RUNDB_NULL, FSC_RUNDB_NULL, NULL, "x.fstrace", "trace"};
    CU_ASSERT_STRING_EQUAL(fsc_rundb_run_label(&r, buf, sizeof buf), "rank 5");
    r.host = "n7";
    CU_ASSERT_STRING_EQUAL(fsc_rundb_run_label(&r, buf, sizeof buf), "rank 5 (host n7)");
    r.device = 2;
    r.host = NULL;
    CU_ASSERT_STRING_EQUAL(fsc_rundb_run_label(&r, buf, sizeof buf), "rank 5 (device 2)");
    r.rank = FSC_RUNDB_NULL;
    CU_ASSERT_STRING_EQUAL(fsc_rundb_run_label(&r, buf, sizeof buf),
                           "run 3 (trace x.fstrace, device 2)");

    static const struct {
        const char *name;
        int found;
        int64_t rank;
    } k[] = {
        {"traces/rank3.fstrace", 1, 3},   {"job_rank_12.db", 1, 12},
        {"RANK-7.pickle", 1, 7},          {"gpt.r15.fstrace", 1, 15},
        {"rank3/trace.fstrace", 0, 0},    {"frank3.fstrace", 0, 0},
        {"run.r3x.fstrace", 0, 0},        {"ranks.fstrace", 0, 0},
        {"a/b/node2_rank001.fstrace", 1, 1},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        int64_t rank = -1;
        int found = fsc_rundb_rank_from_name(k[i].name, &rank);
        if (found != k[i].found || (found && rank != k[i].rank)) {
            fprintf(stderr, "\n%s: found %d rank %lld\n", k[i].name, found, (long long)rank);
            CU_FAIL("rank from the file name");
        }
    }
}

/* analyze writes run 0 and its runs row: the rank from the file name when
 * the trace header has none. */
static void test_analyze_writes_run(void)
{
    char trace[1024], db[1024], out[4096];
    snprintf(trace, sizeof trace, "%s", fsc_test_path("train_rank3.fstrace"));
    snprintf(db, sizeof db, "%s", fsc_test_path("r3.db"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "cp '%s/sample_traces/resnet_sim.fstrace' '%s'"
                                      " && '%s' analyze '%s' -o '%s' --no-suggest",
                                      FSC_SOURCE_DIR, trace, fsc_test_fragscope(), trace, db),
                          0);
    fsc_rundb_t *h = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_rundb_open(db, &h, &err), 0);
    seen_t s = {"", -1, h};
    CU_ASSERT_EQUAL(fsc_rundb_each_run(h, label_row, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.s, "0:rank 3:trace|");
    char src[64];
    CU_ASSERT_EQUAL(fsc_rundb_meta_text(h, "rank_source", src, sizeof src), 0);
    CU_ASSERT_STRING_EQUAL(src, "file name");
    int64_t v = 0;
    CU_ASSERT_EQUAL(fsc_rundb_meta_int(h, "schema_version", 0, &v), 0);
    CU_ASSERT_EQUAL(v, FSC_RUNDB_SCHEMA_VERSION);
    fsc_rundb_close(h);
    sqlite3 *q = NULL;
    sqlite3_stmt *st = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &q, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(q, "SELECT run, device IS NULL, host IS NULL, pid > 0,"
                                                " source = ?1 FROM runs", -1, &st, NULL),
                          SQLITE_OK);
    sqlite3_bind_text(st, 1, trace, -1, SQLITE_STATIC);
    CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(sqlite3_column_int(st, i), i == 0 ? 0 : 1);
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(q);
}

static const fsc_test_case_t k_tests[] = {
    {"select a run: every reader call reads only it", test_select},
    {"a schema-1 database is one run", test_schema1},
    {"run labels and ranks from file names", test_labels_and_names},
    {"analyze writes run 0 and its runs row", test_analyze_writes_run},
    {NULL, NULL},
};

FSC_TEST_MAIN("rundb_runs", k_tests)
