/*
 * test_job_report.c — report, check and diff of job databases (several
 * runs): simulated ranks with known, different peaks and capacities, one of
 * unknown capacity, two that run out of memory at known times, put into one
 * database run by run. The job figures must name the least-headroom rank,
 * the rank that ran out of memory first (by wall clock, and by time since
 * start when a clock is unknown), each rank's peaks as its own single-run
 * report gives them, check lines that name the rank, and diff pairs by rank.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/analyzer.h"
#include "fragscope/recorder.h"
#include "fsc_test.h"

#define MiB (1024ull * 1024ull)
#define S1 0x10000000ull
#define T0 1800000000000000000ull /* a wall-clock origin (ns since the epoch) */

/* One simulated rank: a segment of seg MiB holding one block of seg MiB,
 * then (oom > 0) a request of oom MiB that fails. cap 0: capacity unknown. */
typedef struct spec {
    int rank;
    uint64_t cap, seg, oom; /* MiB */
    uint64_t origin_ns;     /* clock origin; 0 = unknown */
    uint64_t t0_ns;         /* time of the first event */
} spec_t;

static void feed(fsc_analysis_t *a, uint64_t *seq, uint64_t t0, fsc_event_t ev)
{
    ev.time_ns = t0 + (*seq)++ * 10;
    CU_ASSERT_EQUAL(fsc_analysis_feed(a, &ev), 0);
}

static void build(const char *path, const spec_t *s)
{
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.producer = "test";
    h.config = "";
    h.backend = "sim";
    h.capacity = s->cap * MiB;
    h.flags = s->cap == 0 ? FSC_TRACE_F_CAPACITY_UNKNOWN : 0;
    h.clock_origin_ns = s->origin_ns;
    h.rank = s->rank;
    fsc_analysis_t *a = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_analysis_create(path, &h, NULL, &a, &err), 0);
    uint64_t seq = 0, sz = s->seg * MiB;
    feed(a, &seq, s->t0_ns, (fsc_event_t){.type = FSC_EV_SEGMENT_ALLOC, .pool = 1, .addr = S1,
                                          .size = sz});
    feed(a, &seq, s->t0_ns, (fsc_event_t){.type = FSC_EV_ALLOC, .pool = 1, .addr = S1,
                                          .size = sz, .requested = sz, .segment = S1});
    if (s->oom) {
        fsc_event_t ev = {.type = FSC_EV_OOM, .pool = 1, .size = s->oom * MiB,
                          .requested = s->oom * MiB};
        ev.oom.device_free = UINT64_MAX;
        ev.oom.segment_size = s->oom * MiB;
        feed(a, &seq, s->t0_ns, ev);
    }
    CU_ASSERT_EQUAL(fsc_analysis_finish(a, NULL), 0);
    fsc_analysis_destroy(a);
}

/* One database holding the runs of the given single-run databases, in that
 * order, renumbered from 0: every table's rows copied with SQLite's own
 * ATTACH and INSERT ... SELECT, the run column set to the new number. */
static void merge_sql(const char *out, const char *const *in, int n)
{
    remove(out);
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(out, &h), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_exec(h, fsc_rundb_schema(), NULL, NULL, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    for (int k = 0; k < n; k++) {
        char *sql = sqlite3_mprintf("ATTACH %Q AS src", in[k]);
        CU_ASSERT_EQUAL_FATAL(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_free(sql);
        sqlite3_stmt *t = NULL;
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "SELECT name FROM src.sqlite_master WHERE "
                                                    "type = 'table' AND name IN (SELECT name "
                                                    "FROM main.sqlite_master WHERE type = "
                                                    "'table')", -1, &t, NULL), SQLITE_OK);
        while (sqlite3_step(t) == SQLITE_ROW) {
            const char *table = (const char *)sqlite3_column_text(t, 0);
            char cols[4096] = "", vals[4096] = "";
            size_t lc = 0, lv = 0;
            sqlite3_stmt *c = NULL;
            sql = sqlite3_mprintf("SELECT name FROM pragma_table_info(%Q, 'main')", table);
            CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, sql, -1, &c, NULL), SQLITE_OK);
            sqlite3_free(sql);
            while (sqlite3_step(c) == SQLITE_ROW) {
                const char *col = (const char *)sqlite3_column_text(c, 0);
                int is_run = strcmp(col, "run") == 0;
                lc += (size_t)snprintf(cols + lc, sizeof cols - lc, "%s\"%s\"", lc ? ", " : "",
                                       col);
                if (is_run)
                    lv += (size_t)snprintf(vals + lv, sizeof vals - lv, "%s%d", lv ? ", " : "", k);
                else
                    lv += (size_t)snprintf(vals + lv, sizeof vals - lv, "%s\"%s\"",
                                           lv ? ", " : "", col);
            }
            sqlite3_finalize(c);
            sql = sqlite3_mprintf("INSERT INTO main.\"%w\" (%s) SELECT %s FROM src.\"%w\"", table,
                                  cols, vals, table);
            int rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
            if (rc != SQLITE_OK)
                fprintf(stderr, "merge %s: %s\n", table, sqlite3_errmsg(h));
            CU_ASSERT_EQUAL(rc, SQLITE_OK);
            sqlite3_free(sql);
        }
        sqlite3_finalize(t);
        CU_ASSERT_EQUAL(sqlite3_exec(h, "COMMIT; DETACH src; BEGIN", NULL, NULL, NULL), SQLITE_OK);
    }
    CU_ASSERT_EQUAL(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
}

/*
 * The job: four ranks, merged in the order 2, 0, 3, 1 (so run ≠ rank).
 *   rank 0: capacity 64 MiB, peak 40 MiB: headroom 24 MiB
 *   rank 1: capacity 72 MiB, peak 56 MiB: headroom 16 MiB (the least)
 *   rank 2: capacity 64 MiB, peak 32 MiB: headroom 32 MiB; asks 40 MiB and
 *           fails (32 + 40 > 64: capacity) at T0 + 1 s + 20 ns
 *   rank 3: capacity unknown, peak 24 MiB, asks 12 MiB and fails at T0 +
 *           20 ns: the first OOM; bounds [24, 36) MiB, so its headroom is
 *           below 12 MiB: it may have less than rank 1
 * Peaks reserved 24, 32, 40, 56 MiB: median 36 MiB, max/min 7/3.
 */
static const spec_t k_ranks[4] = {
    {2, 64, 32, 40, T0 + 1000000000ull, 0},
    {0, 64, 40, 0, T0, 0},
    {3, 0, 24, 12, T0, 0},
    {1, 72, 56, 0, T0, 0},
};

static char g_single[4][1024], g_job[1024];

static void make_job(void)
{
    if (g_job[0])
        return;
    const char *in[4];
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "rank%d.db", k_ranks[i].rank);
        snprintf(g_single[i], sizeof g_single[i], "%s", fsc_test_path(name));
        build(g_single[i], &k_ranks[i]);
        in[i] = g_single[i];
    }
    snprintf(g_job, sizeof g_job, "%s", fsc_test_path("job.db"));
    merge_sql(g_job, in, 4);
}

/* The label every message uses for run `run` of db. */
typedef struct label_ctx {
    int64_t run;
    char *buf;
    size_t cap;
} label_ctx_t;

static int label_row(const fsc_rundb_run_t *r, void *ud)
{
    label_ctx_t *c = ud;
    if (r->run == c->run)
        fsc_rundb_run_label(r, c->buf, c->cap);
    return 0;
}

static const char *label_of(const char *db, int64_t run, char *buf, size_t cap)
{
    fsc_rundb_t *h = NULL;
    fsc_err_t err = {0};
    buf[0] = '\0';
    CU_ASSERT_EQUAL_FATAL(fsc_rundb_open(db, &h, &err), 0);
    label_ctx_t c = {run, buf, cap};
    CU_ASSERT_EQUAL(fsc_rundb_each_run(h, label_row, &c), 0);
    fsc_rundb_close(h);
    return buf;
}

static char *report_str(const char *db, fsc_report_format_t fmt, const fsc_job_opts_t *o)
{
    const char *path = fsc_test_path("report.out");
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL(fsc_report_write_job_file(db, fmt, o, path, &err), 0);
    return fsc_test_slurp(path, NULL);
}

static cJSON *report_json(const char *db, const fsc_job_opts_t *o)
{
    char *s = report_str(db, FSC_REPORT_JSON, o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    cJSON *j = cJSON_Parse(s);
    free(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : -1.0;
}

static int jnull(const cJSON *o, const char *k)
{
    return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, k));
}

static const char *js(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return s ? s : "";
}

/* ---- report ------------------------------------------------------------- */

static void test_job_json(void)
{
    make_job();
    cJSON *j = report_json(g_job, NULL);
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(j, "ranks");
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(ranks), 4);
    static const char *const keys[] = {"run", "rank", "device", "host", "source", "kind",
                                       "peak_allocated_bytes", "peak_reserved_bytes",
                                       "capacity_bytes", "headroom_bytes", "ooms",
                                       "first_oom_time_ns", "first_oom_cause"};
    for (int i = 0; i < 4; i++) {
        const cJSON *r = cJSON_GetArrayItem(ranks, i);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            CU_ASSERT_PTR_NOT_NULL(cJSON_GetObjectItemCaseSensitive(r, keys[k]));
        CU_ASSERT_EQUAL(jnum(r, "run"), i);
        CU_ASSERT_EQUAL(jnum(r, "rank"), k_ranks[i].rank);
        CU_ASSERT_EQUAL(jnum(r, "peak_reserved_bytes"), (double)(k_ranks[i].seg * MiB));
        CU_ASSERT_EQUAL(jnum(r, "ooms"), k_ranks[i].oom ? 1 : 0);
        if (k_ranks[i].cap) {
            CU_ASSERT_EQUAL(jnum(r, "capacity_bytes"), (double)(k_ranks[i].cap * MiB));
            CU_ASSERT_EQUAL(jnum(r, "headroom_bytes"),
                            (double)((k_ranks[i].cap - k_ranks[i].seg) * MiB));
        } else {
            CU_ASSERT_TRUE(jnull(r, "capacity_bytes"));
            CU_ASSERT_TRUE(jnull(r, "headroom_bytes"));
            CU_ASSERT_EQUAL(jnum(r, "capacity_lower_bytes"), 24.0 * MiB);
            CU_ASSERT_EQUAL(jnum(r, "capacity_upper_bytes"), 36.0 * MiB);
        }
        if (k_ranks[i].oom) {
            CU_ASSERT_STRING_EQUAL(js(r, "first_oom_cause"), "capacity");
        } else {
            CU_ASSERT_TRUE(jnull(r, "first_oom_cause"));
        }
    }
    /* rank 3 (run 2) first by the wall clock: T0 + 20 ns */
    const cJSON *r2 = cJSON_GetArrayItem(ranks, 2);
    CU_ASSERT_STRING_EQUAL(js(r2, "first_oom_clock"), "wall");
    CU_ASSERT_EQUAL(jnum(r2, "first_oom_time_ns"), (double)(T0 + 20));
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(j, "job");
    CU_ASSERT_EQUAL(jnum(job, "runs"), 4);
    CU_ASSERT_EQUAL(jnum(job, "runs_with_oom"), 2);
    CU_ASSERT_EQUAL(jnum(job, "runs_capacity_known"), 3);
    CU_ASSERT_EQUAL(jnum(job, "least_headroom_run"), 3); /* rank 1 */
    CU_ASSERT_EQUAL(jnum(job, "first_oom_run"), 2);      /* rank 3 */
    CU_ASSERT_STRING_EQUAL(js(job, "first_oom_order"), "wall_clock");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(job, "spread");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(sp, "peak_reserved_bytes");
    CU_ASSERT_EQUAL(jnum(res, "min"), 24.0 * MiB);
    CU_ASSERT_EQUAL(jnum(res, "min_run"), 2);
    CU_ASSERT_EQUAL(jnum(res, "max"), 56.0 * MiB);
    CU_ASSERT_EQUAL(jnum(res, "max_run"), 3);
    CU_ASSERT_EQUAL(jnum(res, "median"), 36.0 * MiB);
    CU_ASSERT_DOUBLE_EQUAL(jnum(res, "max_over_min"), 56.0 / 24.0, 1e-12);
    CU_ASSERT_PTR_NOT_NULL(cJSON_GetObjectItemCaseSensitive(sp, "peak_allocated_bytes"));
    /* the detail is about the first OOM's run by default */
    CU_ASSERT_EQUAL(jnum(j, "detail_run"), 2);
    CU_ASSERT_EQUAL(jnum(cJSON_GetObjectItemCaseSensitive(j, "summary"), "peak_reserved_bytes"),
                    24.0 * MiB);
    cJSON_Delete(j);
}

/* Each run's figures are those of its own single-run report: the ranks[]
 * peaks, and the whole detail when --run picks it. */
static void test_job_matches_single_runs(void)
{
    make_job();
    cJSON *job = report_json(g_job, NULL);
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(job, "ranks");
    for (int i = 0; i < 4; i++) {
        cJSON *one = report_json(g_single[i], NULL);
        const cJSON *sum = cJSON_GetObjectItemCaseSensitive(one, "summary");
        const cJSON *r = cJSON_GetArrayItem(ranks, i);
        CU_ASSERT_EQUAL(jnum(r, "peak_allocated_bytes"), jnum(sum, "peak_allocated_bytes"));
        CU_ASSERT_EQUAL(jnum(r, "peak_reserved_bytes"), jnum(sum, "peak_reserved_bytes"));
        fsc_job_opts_t o = {.has_run = 1, .run = i};
        cJSON *d = report_json(g_job, &o);
        CU_ASSERT_EQUAL(jnum(d, "detail_run"), i);
        static const char *const same[] = {"summary", "fragmentation", "ooms", "bins"};
        for (size_t k = 0; k < sizeof same / sizeof same[0]; k++)
            CU_ASSERT_TRUE(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(d, same[k]),
                                         cJSON_GetObjectItemCaseSensitive(one, same[k]), 1));
        /* --rank picks the same run */
        fsc_job_opts_t r2 = {.has_rank = 1, .rank = k_ranks[i].rank};
        cJSON *e = report_json(g_job, &r2);
        CU_ASSERT_EQUAL(jnum(e, "detail_run"), i);
        cJSON_Delete(e);
        cJSON_Delete(d);
        cJSON_Delete(one);
    }
    cJSON_Delete(job);
}

static void test_job_text(void)
{
    make_job();
    char l1[256], l2[256], l3[256], want[1024];
    label_of(g_job, 3, l1, sizeof l1); /* rank 1 */
    label_of(g_job, 0, l2, sizeof l2); /* rank 2 */
    label_of(g_job, 2, l3, sizeof l3); /* rank 3 */
    char *t = report_str(g_job, FSC_REPORT_TEXT, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "fragscope job report: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "4 runs (ranks 0-3); 2 ran out of memory; capacity known "
                                     "for 3\n"));
    snprintf(want, sizeof want, "  least headroom   %s: 16.00 MiB under its 72.00 MiB capacity "
             "(peak reserved 56.00 MiB)\n"
             "                   among the 3 runs whose capacity is known (1 not ranked: "
             "capacity unknown)\n"
             "                   %s has less than 12.00 MiB headroom by its bounds: it may have "
             "less\n", l1, l3);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, want));
    snprintf(want, sizeof want, "  first OOM        %s at ", l3);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, want));
    snprintf(want, sizeof want, "capacity (requested 12.00 MiB with 24.00 MiB reserved)\n"
             "                   2 runs ran out of memory, the next: %s, 1.000 s later\n"
             "                   ordered by wall-clock time", l2);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, want));
    snprintf(want, sizeof want, "%s: capacity unknown: at least 24.00 MiB (the most it "
             "reserved), below 36.00 MiB (reserved at its OOM + the segment that did not fit)\n",
             l3);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "  spread of peaks  allocated: min 24.00 MiB"));
    snprintf(want, sizeof want, "reserved:  min 24.00 MiB on %s, median 36.00 MiB, max 56.00 MiB "
             "on %s, max/min 2.33\n", l3, l1);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, want));
    snprintf(want, sizeof want, "detail below: %s, the run that ran out of memory first", l3);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, want));
    /* then the run's own report, naming the run */
    snprintf(want, sizeof want, "  run         %s\n", l3);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "  peak reserved              24.00 MiB"));
    free(t);
    char *m = report_str(g_job, FSC_REPORT_MARKDOWN, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "## fragscope job report\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "- **Least headroom:** "));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "| 3 | 1 | "));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "## fragscope report\n"));
    free(m);
    /* a database of one run: no job section */
    t = report_str(g_single[1], FSC_REPORT_TEXT, NULL);
    CU_ASSERT_PTR_NULL(strstr(t, "job report"));
    CU_ASSERT_PTR_NULL(strstr(t, "detail below"));
    free(t);
}

/* Without the wall clock of rank 3 the OOMs are ordered by time since each
 * run began (rank 3 at 5 020 ns, rank 2 at 20 ns), and the report says so. */
static void test_job_clocks_unknown(void)
{
    spec_t s[2] = {k_ranks[0], k_ranks[2]};
    s[1].origin_ns = 0;
    s[1].t0_ns = 5000;
    const char *in[2] = {fsc_test_path("c_rank2.db"), NULL};
    char a[1024];
    snprintf(a, sizeof a, "%s", in[0]);
    in[0] = a;
    in[1] = fsc_test_path("c_rank3.db");
    build(in[0], &s[0]);
    build(in[1], &s[1]);
    const char *db = fsc_test_path("clocks.db");
    merge_sql(db, in, 2);
    cJSON *j = report_json(db, NULL);
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(j, "job");
    CU_ASSERT_EQUAL(jnum(job, "first_oom_run"), 0); /* rank 2 */
    CU_ASSERT_STRING_EQUAL(js(job, "first_oom_order"), "since_start");
    char l3[256], want[512];
    label_of(db, 1, l3, sizeof l3);
    snprintf(want, sizeof want, "the clocks are not comparable (%s: no wall-clock origin "
             "recorded", l3);
    CU_ASSERT_PTR_NOT_NULL(strstr(js(job, "first_oom_order_note"), want));
    const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ranks"), 1);
    CU_ASSERT_STRING_EQUAL(js(r, "first_oom_clock"), "since_start");
    CU_ASSERT_EQUAL(jnum(r, "first_oom_time_ns"), 5020.0);
    /* the detail is about the run that ran out of memory first */
    CU_ASSERT_EQUAL(jnum(j, "detail_run"), 0);
    cJSON_Delete(j);
}

/* Beyond 20 runs the table lists the runs the figures name and counts the
 * rest; --all-ranks lists them all. */
static void test_job_many_runs(void)
{
    enum { N = 30 };
    static char paths[N][1024];
    const char *in[N];
    for (int i = 0; i < N; i++) {
        spec_t s = {i, 128, 8 + (uint64_t)i, i == 17 ? 200 : 0, T0, 0};
        char name[32];
        snprintf(name, sizeof name, "many%d.db", i);
        snprintf(paths[i], sizeof paths[i], "%s", fsc_test_path(name));
        build(paths[i], &s);
        in[i] = paths[i];
    }
    const char *db = fsc_test_path("many.db");
    merge_sql(db, in, N);
    char out[65536];
    const char *fs = fsc_test_fragscope();
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s | grep -cE '^ +[0-9]+ +[0-9]+ +-'",
                                fs, db), 0);
    /* least headroom: ranks 29..25; first OOM: rank 17; min peak: rank 0 */
    CU_ASSERT_EQUAL(atoi(out), 7);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s", fs, db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "... 23 more runs not listed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "least headroom, max reserved, max allocated"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                "%s report %s --all-ranks | grep -cE '^ +[0-9]+ +[0-9]+ +-'", fs,
                                db), 0);
    CU_ASSERT_EQUAL(atoi(out), N);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s --rank 40", fs, db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "no run of rank 40"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s --run 30", fs, db), 2);
}

/* ---- check -------------------------------------------------------------- */

static void test_job_check(void)
{
    make_job();
    const char *fs = fsc_test_fragscope();
    char out[8192], want[1024], l[4][256];
    for (int i = 0; i < 4; i++)
        label_of(g_job, i, l[i], sizeof l[i]);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --max-peak-reserved 50MiB --no-oom",
                                fs, g_job), 1);
    /* in run order: rank 2's OOM, rank 3's OOM, rank 1's peak */
    snprintf(want, sizeof want,
             "%s: 1 OOM (the first: capacity, at event 2) but --no-oom\n"
             "%s: 1 OOM (the first: capacity, at event 2) but --no-oom\n"
             "%s: peak reserved 56.00 MiB (58720256 bytes) exceeds --max-peak-reserved 50.00 MiB\n",
             l[0], l[2], l[3]);
    CU_ASSERT_STRING_EQUAL(out, want);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --max-peak-reserved 50MiB --rank 0",
                                fs, g_job), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "ok: "));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --max-peak-reserved 60MiB", fs,
                                g_job), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "every one of its 4 runs meets 1 threshold\n"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --max-peak-reserved 50MiB "
                                "--no-oom --format json", fs, g_job), 1);
    cJSON *j = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(jnum(j, "runs_checked"), 4);
    CU_ASSERT_TRUE(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "ok")));
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "failures");
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(f), 3);
    const cJSON *x = cJSON_GetArrayItem(f, 2);
    CU_ASSERT_EQUAL(jnum(x, "run"), 3);
    CU_ASSERT_EQUAL(jnum(x, "rank"), 1);
    CU_ASSERT_STRING_EQUAL(js(x, "label"), l[3]);
    CU_ASSERT_STRING_EQUAL(js(x, "option"), "--max-peak-reserved");
    CU_ASSERT_EQUAL(jnum(x, "value"), 56.0 * MiB);
    CU_ASSERT_EQUAL(jnum(x, "limit"), 50.0 * MiB);
    CU_ASSERT_EQUAL(jnum(cJSON_GetArrayItem(f, 0), "rank"), 2);
    CU_ASSERT_STRING_EQUAL(js(cJSON_GetArrayItem(f, 0), "option"), "--no-oom");
    cJSON_Delete(j);
    /* one run's database: the lines as before, without a label */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --max-peak-reserved 50MiB", fs,
                                g_single[3]), 1);
    CU_ASSERT_STRING_EQUAL(out, "peak reserved 56.00 MiB (58720256 bytes) exceeds "
                                "--max-peak-reserved 50.00 MiB\n");
}

/* ---- diff --------------------------------------------------------------- */

/* base: the job (ranks 2, 0, 3, 1); new: ranks 1 (peak 60 MiB now), 3, 2, 4. */
static void test_job_diff(void)
{
    make_job();
    spec_t s1 = k_ranks[3], s4 = {4, 64, 16, 0, T0, 0};
    s1.seg = 60;
    const char *p1 = fsc_test_path("new_rank1.db");
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s", p1);
    snprintf(b, sizeof b, "%s", fsc_test_path("new_rank4.db"));
    build(a, &s1);
    build(b, &s4);
    const char *in[4] = {a, g_single[2], g_single[0], b};
    const char *nb = fsc_test_path("job_new.db");
    char newdb[1024];
    snprintf(newdb, sizeof newdb, "%s", nb);
    merge_sql(newdb, in, 4);
    char out[16384], want[1024], l0[256], l1[256], l4[256];
    label_of(g_job, 1, l0, sizeof l0);  /* rank 0: only in base */
    label_of(g_job, 3, l1, sizeof l1);  /* rank 1 */
    label_of(newdb, 3, l4, sizeof l4);  /* rank 4: only in new */
    const char *fs = fsc_test_fragscope();
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on-worse", fs, g_job,
                                newdb), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, ": 3 pairs by rank, then device\n"));
    snprintf(want, sizeof want, "  only in base: %s\n", l0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    snprintf(want, sizeof want, "  only in new:  %s\n", l4);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "56.00 MiB → 60.00 MiB (+7.1%)"));
    snprintf(want, sizeof want, "verdict: worse — worse in 1 pair: %s: peak allocated 56.00 MiB "
             "→ 60.00 MiB, peak reserved 56.00 MiB → 60.00 MiB (2 runs without a partner, not "
             "judged)\n", l1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    /* the pairs that did not move read "same" */
    CU_ASSERT_EQUAL(fsc_test_count(out, " same"), 2);
    /* --rank adds the pair's full table */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --rank 1", fs, g_job, newdb), 0);
    snprintf(want, sizeof want, "\ndetail: %s → ", l1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "verdict: worse — peak allocated 56.00 MiB → 60.00 MiB"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --rank 0", fs, g_job, newdb), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "has no partner in"));
    /* the same job against itself */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on-worse", fs, g_job,
                                g_job), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "verdict: same — no pair moved by more than 1%\n"));
}


/* ---- real jobs ---------------------------------------------------------- */

/* The H200 three-rank job (tests/data/gpu/ranks, test_gpu_ranks.c): one
 * `analyze` of the three traces. The caps (peak + 2 GiB, + 512 MiB, + 16 GiB)
 * make rank 1 the least headroom although rank 0 has the largest peak, and
 * rank 2 alone runs out of memory, diagnosed external. Each rank's peaks are
 * its process's own allocator statistics (pipe.run.rN.json). */
static void test_h200_ranks(void)
{
    char out[8192], cmd[2048];
    const char *db = fsc_test_path("pipe.db");
    char dbp[1024];
    snprintf(dbp, sizeof dbp, "%s", db);
    snprintf(cmd, sizeof cmd, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s %s %s -o %s --no-suggest",
             fsc_test_fragscope(), fsc_test_data("gpu/ranks/pipe.r2.fstrace"),
             fsc_test_data("gpu/ranks/pipe.r0.fstrace"), fsc_test_data("gpu/ranks/pipe.r1.fstrace"),
             dbp);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s", cmd), 0);
    cJSON *j = report_json(dbp, NULL);
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(j, "ranks");
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(ranks), 3);
    static const int order[3] = {2, 0, 1}; /* the input order */
    for (int i = 0; i < 3; i++) {
        const cJSON *r = cJSON_GetArrayItem(ranks, i);
        CU_ASSERT_EQUAL(jnum(r, "rank"), order[i]);
        CU_ASSERT_EQUAL(jnum(r, "device"), 0);
        char rel[64];
        snprintf(rel, sizeof rel, "gpu/ranks/pipe.run.r%d.json", order[i]);
        char *text = fsc_test_slurp(fsc_test_data(rel), NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        cJSON *facts = cJSON_Parse(text);
        free(text);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(facts, "memory_stats");
        CU_ASSERT_EQUAL(jnum(r, "peak_allocated_bytes"), jnum(st, "allocated_bytes.all.peak"));
        CU_ASSERT_EQUAL(jnum(r, "peak_reserved_bytes"), jnum(st, "reserved_bytes.all.peak"));
        CU_ASSERT_EQUAL(jnum(r, "capacity_bytes"), jnum(facts, "cap_bytes"));
        CU_ASSERT_EQUAL(jnum(r, "ooms"), jnum(st, "num_ooms"));
        cJSON_Delete(facts);
    }
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(j, "job");
    CU_ASSERT_EQUAL(jnum(job, "least_headroom_run"), 2); /* rank 1 */
    CU_ASSERT_EQUAL(jnum(cJSON_GetArrayItem(ranks, 2), "headroom_bytes"), 512.0 * MiB);
    CU_ASSERT_EQUAL(jnum(job, "first_oom_run"), 0); /* rank 2 */
    CU_ASSERT_STRING_EQUAL(js(job, "first_oom_order"), "only");
    CU_ASSERT_STRING_EQUAL(js(cJSON_GetArrayItem(ranks, 0), "first_oom_cause"), "external");
    /* the memory outside the allocator at rank 2's first OOM, as its own report gives it */
    const cJSON *o0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ooms"), 0);
    CU_ASSERT_EQUAL(jnum(cJSON_GetArrayItem(ranks, 0), "first_oom_external_bytes"),
                    jnum(o0, "external_bytes"));
    CU_ASSERT(jnum(o0, "external_bytes") > 0);
    CU_ASSERT_TRUE(jnull(cJSON_GetArrayItem(ranks, 1), "first_oom_external_bytes"));
    CU_ASSERT_EQUAL(jnum(j, "detail_run"), 0);
    cJSON_Delete(j);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s", fsc_test_fragscope(), dbp), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "  least headroom   rank 1 (device 0): 512.00 MiB under its "
                                       "9.47 GiB capacity (peak reserved 8.97 GiB)\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "  first OOM        rank 2 (device 0) at 2026-12-01 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " UTC: external (requested 16.00 MiB with 1.58 GiB "
                                       "reserved, "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "detail below: rank 2 (device 0), the only run that ran "
                                       "out of memory"));
}

/* A snapshot of two devices: one run per device, the section per device;
 * capacities unknown, so no least headroom, and the detail is the device
 * with the highest peak reserved. */
static void test_two_devices(void)
{
    char out[16384], dbp[1024];
    snprintf(dbp, sizeof dbp, "%s", fsc_test_path("two.db"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o "
                                      "%s --no-suggest", fsc_test_fragscope(),
                                      fsc_test_data("gpu/two_devices.pickle"), dbp), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s", fsc_test_fragscope(), dbp), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "2 runs, one per device of "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "  least headroom   unknown: no run's capacity is known\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "    device 1: capacity unknown: at least 42.00 MiB (the "
                                       "most it reserved), no upper bound recorded\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "reserved:  min 42.00 MiB on device 1, median 3.22 GiB, "
                                       "max 6.40 GiB on device 0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "detail below: device 0, "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the run with the highest peak reserved (no run ran out of "
                                       "memory and no run's capacity is known)"));
    cJSON *j = report_json(dbp, NULL);
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(j, "job");
    CU_ASSERT_TRUE(jnull(job, "least_headroom_run"));
    CU_ASSERT_TRUE(jnull(job, "first_oom_run"));
    CU_ASSERT_EQUAL(jnum(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ranks"), 1),
                         "peak_reserved_bytes"), 42.0 * MiB);
    cJSON_Delete(j);
}

static const fsc_test_case_t k_tests[] = {
    {"job report JSON", test_job_json},
    {"job figures are the runs' own", test_job_matches_single_runs},
    {"job report text and Markdown", test_job_text},
    {"first OOM without comparable clocks", test_job_clocks_unknown},
    {"a job of many runs", test_job_many_runs},
    {"check names the rank", test_job_check},
    {"diff pairs ranks", test_job_diff},
    {"the H200 three-rank job", test_h200_ranks},
    {"a snapshot of two devices", test_two_devices},
    {NULL, NULL},
};

FSC_TEST_MAIN("job_report", k_tests)
