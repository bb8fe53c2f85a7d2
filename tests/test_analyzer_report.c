/*
 * test_analyzer_report.c — reading run databases back: report (JSON keys,
 * text, Markdown), check exit codes, diff verdicts, bad database files; and
 * `fragscope analyze` on the real PyTorch snapshots in tests/data/pytorch,
 * whose figures must match the stats PyTorch printed for the same runs.
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

/* ---- two small runs ------------------------------------------------------ */

static void feed(fsc_analysis_t *a, uint64_t *seq, fsc_event_t ev)
{
    ev.time_ns = (*seq)++ * 10;
    CU_ASSERT_EQUAL(fsc_analysis_feed(a, &ev), 0);
}

/*
 * base: one 8M segment split 6M | 2M, the 6M block allocated (asked 5M) and
 *       freed, then a 2M block allocated: peak allocated 6M, reserved 8M,
 *       utilization 0.75, internal at the peak 1M (ratio 1/6), at the peak
 *       one free 2M block → external 0.
 * worse (oom = 1): the same, then the 2M block stays and an 8M request
 *       fails under an 8M cap: allocated 2M, 8M − 2M = 6M < 8M → capacity.
 */
static void build(const char *path, int oom)
{
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.producer = "test";
    h.config = "";
    h.backend = "sim";
    h.capacity = 8 * MiB;
    h.rank = -1;
    fsc_analysis_t *a = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_analysis_create(path, &h, NULL, &a, &err), 0);
    CU_ASSERT_EQUAL(fsc_analysis_define_tag(a, 1, 0, "weights", 7), 0);
    uint64_t seq = 0;
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_SEGMENT_ALLOC, .pool = 1, .addr = S1,
                                .size = 8 * MiB});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_SPLIT, .pool = 1, .addr = S1, .size = 8 * MiB,
                                .requested = 6 * MiB, .segment = S1});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_ALLOC, .pool = 1, .addr = S1, .size = 6 * MiB,
                                .requested = 5 * MiB, .segment = S1, .tag = 1});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_FREE_REQUESTED, .pool = 1, .addr = S1,
                                .size = 6 * MiB, .segment = S1});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_FREE_COMPLETED, .pool = 1, .addr = S1,
                                .size = 6 * MiB, .segment = S1});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_MERGE, .pool = 1, .addr = S1, .size = 8 * MiB,
                                .other = S1 + 6 * MiB, .segment = S1});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_SPLIT, .pool = 1, .addr = S1, .size = 8 * MiB,
                                .requested = 2 * MiB, .segment = S1});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_ALLOC, .pool = 1, .addr = S1, .size = 2 * MiB,
                                .requested = 2 * MiB, .segment = S1, .tag = 1});
    if (oom) {
        fsc_event_t ev = {.type = FSC_EV_OOM, .pool = 1, .size = 8 * MiB,
                          .requested = 8 * MiB};
        ev.oom.device_free = UINT64_MAX;
        feed(a, &seq, ev);
    }
    CU_ASSERT_EQUAL(fsc_analysis_finish(a, NULL), 0);
    fsc_analysis_destroy(a);
}

static const char *g_base, *g_worse;

static void make_runs(void)
{
    static char base[1024], worse[1024];
    if (g_base != NULL)
        return;
    snprintf(base, sizeof base, "%s", fsc_test_path("base.db"));
    snprintf(worse, sizeof worse, "%s", fsc_test_path("worse.db"));
    build(base, 0);
    build(worse, 1);
    g_base = base;
    g_worse = worse;
}

static long long db_summary(const char *db, const char *key);

static char *report_to_string(const char *db, fsc_report_format_t fmt)
{
    const char *path = fsc_test_path("report.out");
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL(fsc_report_write_file(db, fmt, path, &err), 0);
    return fsc_test_slurp(path, NULL);
}

static double jnum(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b != NULL)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : -1.0;
}

static void test_report_json(void)
{
    make_runs();
    char *s = report_to_string(g_worse, FSC_REPORT_JSON);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    cJSON *j = cJSON_Parse(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(jnum(j, "summary", "peak_allocated_bytes"), 6.0 * MiB);
    CU_ASSERT_EQUAL(jnum(j, "summary", "peak_reserved_bytes"), 8.0 * MiB);
    CU_ASSERT_EQUAL(jnum(j, "summary", "num_ooms"), 1.0);
    CU_ASSERT_DOUBLE_EQUAL(jnum(j, "fragmentation", "utilization"), 0.75, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(jnum(j, "fragmentation", "internal_ratio_at_peak"), 1.0 / 6.0,
                           1e-12);
    CU_ASSERT_EQUAL(jnum(j, "fragmentation", "internal_bytes_at_peak"), 1.0 * MiB);
    CU_ASSERT_DOUBLE_EQUAL(jnum(j, "fragmentation", "external_at_peak"), 0.0, 1e-12);
    CU_ASSERT_EQUAL(jnum(j, "fragmentation", "reserved_unallocated_at_peak"), 2.0 * MiB);
    const cJSON *ooms = cJSON_GetObjectItemCaseSensitive(j, "ooms");
    CU_ASSERT_EQUAL(cJSON_GetArraySize(ooms), 1);
    const cJSON *o = cJSON_GetArrayItem(ooms, 0);
    CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "cause")),
                           "capacity");
    CU_ASSERT_EQUAL(jnum(o, "requested_bytes", NULL), 8.0 * MiB);
    CU_ASSERT_EQUAL(jnum(o, "allocated_bytes", NULL), 2.0 * MiB);
    CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "top_tag")),
                           "weights");
    /* the 8M segment: 6M free, pinned by the 2M block allocated one event earlier */
    const cJSON *sg = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "segments"), 0);
    CU_ASSERT_EQUAL(jnum(sg, "segment", NULL), (double)S1);
    CU_ASSERT_EQUAL(jnum(sg, "free_bytes", NULL), 6.0 * MiB);
    const cJSON *pin = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sg, "pinning_blocks"), 0);
    CU_ASSERT_EQUAL(jnum(pin, "size_bytes", NULL), 2.0 * MiB);
    CU_ASSERT_EQUAL(jnum(pin, "age_events", NULL), 1.0);
    CU_ASSERT_EQUAL(jnum(pin, "age_ns", NULL), 10.0);
    CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pin, "tag")),
                           "weights");
    /* bins: 2M → bin 12, 6M → bin 13 = [4M, 8M), one request each */
    const cJSON *bins = cJSON_GetObjectItemCaseSensitive(j, "bins");
    CU_ASSERT_EQUAL(cJSON_GetArraySize(bins), 2);
    CU_ASSERT_EQUAL(jnum(cJSON_GetArrayItem(bins, 0), "bin", NULL), 12.0);
    CU_ASSERT_EQUAL(jnum(cJSON_GetArrayItem(bins, 1), "bin", NULL), 13.0);
    CU_ASSERT_EQUAL(jnum(cJSON_GetArrayItem(bins, 1), "internal_waste_bytes", NULL), 1.0 * MiB);
    const cJSON *leaks = cJSON_GetObjectItemCaseSensitive(j, "leaks");
    CU_ASSERT_EQUAL(cJSON_GetArraySize(leaks), 1);
    cJSON_Delete(j);
    free(s);
}

/* What-if's suggestions show up under the OOM they avoid. */
static void test_report_suggestions(void)
{
    make_runs();
    char out[256];
    const char *db = fsc_test_path("sugg.db");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cp %s %s", g_worse, db), 0);
    sqlite3 *h = NULL;
    sqlite3_open(db, &h);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "INSERT INTO suggestions(oom_id, config, avoids_oom) VALUES"
                                    " (0, 'expandable_segments:True', 1),"
                                    " (0, 'max_split_size_mb:128', 0)", NULL, NULL, NULL),
                    SQLITE_OK);
    sqlite3_close(h);
    char *js = report_to_string(db, FSC_REPORT_JSON);
    cJSON *j = cJSON_Parse(js);
    const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ooms"), 0);
    const cJSON *fx = cJSON_GetObjectItemCaseSensitive(o, "avoided_by");
    CU_ASSERT_EQUAL(cJSON_GetArraySize(fx), 1);
    CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetArrayItem(fx, 0)),
                           "expandable_segments:True");
    cJSON_Delete(j);
    free(js);
    char *t = report_to_string(db, FSC_REPORT_TEXT);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "would have been avoided with: expandable_segments:True\n"));
    free(t);
}

static void test_report_text_markdown(void)
{
    make_runs();
    char *t = report_to_string(g_worse, FSC_REPORT_TEXT);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "peak allocated              6.00 MiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "#0 at event 8: capacity"));
    free(t);
    char *m = report_to_string(g_worse, FSC_REPORT_MARKDOWN);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "| peak reserved | 8.00 MiB |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "| 0 | 8 | **capacity** |"));
    free(m);
    fsc_report_format_t f;
    CU_ASSERT_EQUAL(fsc_report_format_parse("md", &f), 0);
    CU_ASSERT_EQUAL(f, FSC_REPORT_MARKDOWN);
    CU_ASSERT_EQUAL(fsc_report_format_parse("xml", &f), FSC_EINVAL);
}

static void test_check_exit_codes(void)
{
    make_runs();
    const char *fs = fsc_test_fragscope();
    char out[4096];
    /* peak reserved 8M ≤ 8MiB, utilization 0.75 ≥ 0.7, internal 1/6 ≤ 0.2 */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --max-peak-reserved 8MiB "
                                "--min-utilization 0.7 --max-internal-frag 20%% --no-oom",
                                fs, g_base), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "ok:"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --max-peak-reserved 7MiB "
                                "--min-utilization 0.8 --max-internal-frag 0.1 "
                                "--max-external-frag 0.5 --no-oom", fs, g_worse), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "peak reserved 8.00 MiB (8388608 bytes) exceeds "
                                       "--max-peak-reserved 7.00 MiB\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "utilization 0.7500 is below --min-utilization 0.8000\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "internal fragmentation at the peak 0.1667 exceeds"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "1 OOM (the first: capacity, at event 8) but --no-oom\n"));
    CU_ASSERT_PTR_NULL(strstr(out, "external"));
    /* one line per violation: four */
    int lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    CU_ASSERT_EQUAL(lines, 4);
    /* usage errors */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s", fs, g_base), 2);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --max-external-frag 2", fs,
                                g_base), 2);
}

static void test_diff(void)
{
    make_runs();
    fsc_err_t err = {0};
    const char *path = fsc_test_path("diff.out");
    FILE *f = fopen(path, "w");
    int verdict = 99;
    CU_ASSERT_EQUAL(fsc_diff_write(g_base, g_worse, f, &verdict, &err), 0);
    fclose(f);
    CU_ASSERT_EQUAL(verdict, 1);
    char *s = fsc_test_slurp(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "verdict: worse — hard at an OOM 0 B → 6.00 MiB, OOMs 0 → 1\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "first OOM                    none → capacity at event 8\n"));
    free(s);
    f = fopen(path, "w");
    CU_ASSERT_EQUAL(fsc_diff_write(g_worse, g_base, f, &verdict, &err), 0);
    fclose(f);
    CU_ASSERT_EQUAL(verdict, -1);
    f = fopen(path, "w");
    CU_ASSERT_EQUAL(fsc_diff_write(g_base, g_base, f, &verdict, &err), 0);
    fclose(f);
    CU_ASSERT_EQUAL(verdict, 0);
    s = fsc_test_slurp(path, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "verdict: same"));
    free(s);
    char out[4096];
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on-worse",
                                fsc_test_fragscope(), g_base, g_worse), 1);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s", fsc_test_fragscope(), g_base,
                                g_worse), 0);
}

/* A text file, a foreign SQLite database and a missing file: exit 2 with one
 * line naming the file. */
static void test_bad_databases(void)
{
    make_runs();
    const char *fs = fsc_test_fragscope();
    const char *txt = fsc_test_path("notes.txt");
    FILE *f = fopen(txt, "w");
    fputs("this is not a database, it is some notes that are long enough\n", f);
    fclose(f);
    const char *foreign = fsc_test_path("foreign.db");
    sqlite3 *db = NULL;
    sqlite3_open(foreign, &db);
    sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", NULL, NULL, NULL);
    sqlite3_close(db);
    char out[4096], want[2048];
    /* a meta table claiming the schema, and nothing else */
    const char *husk = fsc_test_path("husk.db");
    sqlite3_open(husk, &db);
    sqlite3_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
                     "INSERT INTO meta VALUES('schema_version', 1);", NULL, NULL, NULL);
    sqlite3_close(db);
    const char *cases[][2] = {{txt, "not a fragscope run database"},
                              {foreign, "not a fragscope run database"},
                              {fsc_test_path("missing.db"), "No such file"},
                              {husk, "damaged run database: no such table: summary"}};
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s", fs, cases[i][0]), 2);
        snprintf(want, sizeof want, "fragscope: %s: ", cases[i][0]);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i][1]));
        CU_ASSERT_PTR_NULL(strchr(strchr(out, '\n') + 1, '\n'));
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --no-oom", fs, cases[i][0]),
                        2);
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s", fs, g_base, cases[i][0]),
                        2);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i][0]));
    }
}

/* ---- fragscope analyze on .fstrace files -------------------------------------- */

/* A trace written with the recorder: one 4M segment, a 3M block with tag
 * forward/attn, freed; then, when `bad`, a free of an unknown address. */
static const char *write_trace(const char *name, int bad)
{
    const char *path = fsc_test_path(name);
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.producer = "test";
    h.config = "";
    h.backend = "sim";
    h.capacity = 16 * MiB;
    h.rank = -1;
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = 1;
    fsc_recorder_t *r = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(path, &h, &o, &r, &err), 0);
    uint32_t fwd = 0, attn = 0;
    CU_ASSERT_EQUAL(fsc_recorder_tag_node(r, 0, "forward", 7, &fwd), 0);
    CU_ASSERT_EQUAL(fsc_recorder_tag_node(r, fwd, "attn", 4, &attn), 0);
    fsc_event_t evs[] = {
        {.type = FSC_EV_SEGMENT_ALLOC, .pool = 1, .addr = S1, .size = 4 * MiB},
        {.type = FSC_EV_SPLIT, .pool = 1, .addr = S1, .size = 4 * MiB, .requested = 3 * MiB,
         .segment = S1, .tag = attn},
        {.type = FSC_EV_ALLOC, .pool = 1, .addr = S1, .size = 3 * MiB, .requested = 3 * MiB,
         .segment = S1, .tag = attn},
        {.type = FSC_EV_FREE_REQUESTED, .pool = 1, .addr = S1, .size = 3 * MiB,
         .requested = 3 * MiB, .segment = S1, .tag = attn},
        {.type = FSC_EV_FREE_COMPLETED, .pool = 1, .addr = S1, .size = 3 * MiB,
         .requested = 3 * MiB, .segment = S1, .tag = attn},
        {.type = FSC_EV_MERGE, .pool = 1, .addr = S1, .size = 4 * MiB, .other = S1 + 3 * MiB,
         .segment = S1, .tag = attn},
        {.type = FSC_EV_FREE_REQUESTED, .pool = 1, .addr = S1 + 512, .size = 512},
    };
    size_t n = sizeof evs / sizeof evs[0] - (bad ? 0 : 1);
    for (size_t i = 0; i < n; i++) {
        evs[i].time_ns = 1000 * (i + 1);
        CU_ASSERT_EQUAL(fsc_recorder_write(r, &evs[i]), 0);
    }
    CU_ASSERT_EQUAL(fsc_recorder_close(r), 0);
    return path;
}

static void test_analyze_trace(void)
{
    const char *trace = write_trace("ok.fstrace", 0);
    const char *db = fsc_test_path("ok.db");
    char out[4096];
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", fsc_test_fragscope(),
                                trace, db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "6 events, peak allocated 3.00 MiB, peak reserved "
                                       "4.00 MiB, 0 OOMs"));
    CU_ASSERT_EQUAL(db_summary(db, "peak_allocated_bytes"), 3 * MiB);
    CU_ASSERT_EQUAL(db_summary(db, "internal_frag_bytes_at_peak"), 0);
    sqlite3 *h = NULL;
    sqlite3_stmt *s = NULL;
    sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "SELECT t.path FROM tag_stats s JOIN tag_paths t"
                                             " ON t.id = s.tag", -1, &s, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_step(s), SQLITE_ROW);
    CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(s, 0), "forward/attn");
    sqlite3_finalize(s);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "SELECT (SELECT value FROM meta WHERE"
                                             " key='integrity.clean_close'), (SELECT value"
                                             " FROM meta WHERE key='source_kind')",
                                             -1, &s, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_step(s), SQLITE_ROW);
    CU_ASSERT_EQUAL(sqlite3_column_int(s, 0), 1);
    CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(s, 1), "trace");
    sqlite3_finalize(s);
    sqlite3_close(h);
}

static void test_analyze_bad_input(void)
{
    const char *fs = fsc_test_fragscope();
    char out[4096], want[1024];
    /* an event that contradicts the replay: exit 2, the event named, no db */
    const char *trace = write_trace("bad.fstrace", 1);
    const char *db = fsc_test_path("bad.db");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", fs, trace, db), 2);
    snprintf(want, sizeof want, "fragscope: %s: event 6 (free_requested at 0x10000200): no "
                                "live block at this address (rerun with --lenient to skip such "
                                "entries)\n", trace);
    CU_ASSERT_STRING_EQUAL(out, want);
    CU_ASSERT_FALSE(fsc_test_file_exists(db));
    /* nor its temporary file: grep finds no line (exit 1) */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "ls %s | grep -c 'bad.db'", fsc_test_tmpdir()),
                    1);
    /* leniently: a warning, a database */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s --lenient", fs, trace,
                                db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "1 events contradicted the replay"));
    CU_ASSERT_EQUAL(db_summary(db, "events"), 7);
    /* not a trace at all */
    const char *txt = fsc_test_path("junk.fstrace");
    FILE *f = fopen(txt, "w");
    fputs("definitely not a trace\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", fs, txt,
                                fsc_test_path("junk.db")), 2);
    snprintf(want, sizeof want, "fragscope: %s", txt);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT_FALSE(fsc_test_file_exists(fsc_test_path("junk.db")));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze %s", fs, txt), 2);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze -o x.db", fs), 2);
}

/* ---- the real snapshots ---------------------------------------------------- */

static double stat_of(const char *name, const char *key)
{
    char path[512];
    snprintf(path, sizeof path, "pytorch/%s.stats.json", name);
    char *s = fsc_test_slurp(fsc_test_data(path), NULL);
    if (s == NULL)
        return -1;
    cJSON *j = cJSON_Parse(s);
    free(s);
    double v = jnum(j, key, NULL);
    cJSON_Delete(j);
    return v;
}

static long long db_summary(const char *db, const char *key)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *s = NULL;
    long long v = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT value FROM summary WHERE key=?", -1, &s, NULL) ==
            SQLITE_OK) {
        sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
    sqlite3_close(h);
    return v;
}

static const char *analyze_snapshot(const char *name)
{
    char in[512], out[8192];
    snprintf(in, sizeof in, "pytorch/%s.pickle", name);
    snprintf(out, sizeof out, "%s.db", name);
    const char *db = fsc_test_path(out);
    int rc = fsc_test_sh(out, sizeof out, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s",
                         fsc_test_fragscope(), fsc_test_data(in), db);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0)
        fprintf(stderr, "%s\n", out);
    return db;
}

/* Peak allocated, reserved, active, requested and inactive_split, and the
 * segment count, exactly as PyTorch's memory_stats() gave them. */
static void check_stats(const char *name)
{
    const char *db = analyze_snapshot(name);
    static const char *const pairs[][2] = {
        {"peak_allocated_bytes", "allocated_bytes.all.peak"},
        {"peak_reserved_bytes", "reserved_bytes.all.peak"},
        {"peak_active_bytes", "active_bytes.all.peak"},
        {"peak_requested_bytes", "requested_bytes.all.peak"},
        {"peak_inactive_split_bytes", "inactive_split_bytes.all.peak"},
        {"segments_created", "segment.all.allocated"},
        {"num_ooms", "num_ooms"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        long long got = db_summary(db, pairs[i][0]);
        double want = stat_of(name, pairs[i][1]);
        if ((double)got != want)
            fprintf(stderr, "%s: %s = %lld, PyTorch %s = %.0f\n", name, pairs[i][0], got,
                    pairs[i][1], want);
        CU_ASSERT_EQUAL((double)got, want);
    }
}

static void test_snapshot_gpt2_varlen(void)
{
    check_stats("gpt2_varlen");
    /* the README's figure, spelled out */
    CU_ASSERT_EQUAL(db_summary(fsc_test_path("gpt2_varlen.db"), "peak_reserved_bytes"),
                    22020096000ll);
    CU_ASSERT_EQUAL(db_summary(fsc_test_path("gpt2_varlen.db"), "peak_allocated_bytes"),
                    17426674688ll);
}

static void test_snapshot_resnet50(void)
{
    check_stats("resnet50_varbatch");
}

static void test_snapshot_gpt2m_oom(void)
{
    check_stats("gpt2m_oom_12g");
    const char *db = fsc_test_path("gpt2m_oom_12g.db");
    sqlite3 *h = NULL;
    sqlite3_stmt *s = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "SELECT cause, requested, capacity_inferred,"
                                             " allocated, reserved - allocated FROM ooms",
                                             -1, &s, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_step(s), SQLITE_ROW);
    /* PyTorch: "Tried to allocate 96.00 MiB ... 11.95 GiB is allocated by
     * PyTorch, and 20.38 MiB is reserved by PyTorch but unallocated". The
     * snapshot does not record the cap: the run allows [11.97, 12.06) GiB,
     * and a perfect allocator needs 11.95 GiB + 96 MiB = 12.04 GiB, so the
     * cause depends on the cap. */
    CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(s, 0), "undetermined");
    CU_ASSERT_EQUAL(sqlite3_column_int64(s, 1), 96 * MiB);
    CU_ASSERT_EQUAL(sqlite3_column_int(s, 2), 1);
    CU_ASSERT_EQUAL(sqlite3_column_int64(s, 3), 12829982720ll);
    char b[32];
    CU_ASSERT_STRING_EQUAL(fsc_size_format((uint64_t)sqlite3_column_int64(s, 4), b, sizeof b),
                           "20.38 MiB");
    sqlite3_finalize(s);
    sqlite3_close(h);
    /* With the cap PyTorch's message names (12.00 GiB allowed), it is firm. */
    char out[4096];
    const char *db2 = fsc_test_path("gpt2m_oom_12g_cap.db");
    int st = fsc_test_sh(out, sizeof out, "%s analyze %s -o %s --capacity 12GiB --no-suggest 2>&1",
                         fsc_test_fragscope(), fsc_test_data("pytorch/gpt2m_oom_12g.pickle"), db2);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "(first: capacity)"));
}

static const fsc_test_case_t k_tests[] = {
    {"report JSON keys", test_report_json},
    {"report text and Markdown", test_report_text_markdown},
    {"report shows what-if suggestions", test_report_suggestions},
    {"analyze a trace", test_analyze_trace},
    {"analyze: bad input leaves nothing", test_analyze_bad_input},
    {"check exit codes", test_check_exit_codes},
    {"diff verdicts", test_diff},
    {"bad database files", test_bad_databases},
    {"snapshot gpt2_varlen", test_snapshot_gpt2_varlen},
    {"snapshot resnet50_varbatch", test_snapshot_resnet50},
    {"snapshot gpt2m_oom_12g", test_snapshot_gpt2m_oom},
    {NULL, NULL},
};

FSC_TEST_MAIN("analyzer_report", k_tests)
