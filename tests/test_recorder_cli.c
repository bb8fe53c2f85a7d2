/*
 * test_recorder_cli.c — `fragscope info` and `fragscope record`.
 *
 * For `record`, this test program is also the recorded command: started
 * with FSC_TEST_RECORD_CHILD=N in its environment, it opens a recorder from
 * FRAGSCOPE_TRACE (before CUnit starts), emits N events and exits with the
 * status in FSC_TEST_RECORD_EXIT, without closing the recorder.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/recorder.h"
#include "fsc_test.h"
#include "test_recorder_util.h"

__attribute__((constructor)) static void record_child(void)
{
    const char *n = getenv("FSC_TEST_RECORD_CHILD");
    if (n == NULL)
        return;
    fsc_recorder_t *r = NULL;
    fsc_err_t err;
    if (fsc_recorder_from_env(NULL, &r, &err) != 0 || r == NULL) {
        fprintf(stderr, "child: %s\n", err.msg);
        _exit(99);
    }
    fsc_tag_push("child");
    long count = atol(n);
    for (long i = 0; i < count; i++) {
        fsc_event_t e;
        memset(&e, 0, sizeof e);
        e.type = i % 2 ? FSC_EV_FREE_REQUESTED : FSC_EV_ALLOC;
        e.addr = 0x7f0000000000ull + (uint64_t)(i / 2) * 512;
        e.size = 512;
        fsc_recorder_sink(r, &e);
    }
    const char *code = getenv("FSC_TEST_RECORD_EXIT");
    exit(code ? atoi(code) : 0);
}

static const char *self_exe(void)
{
    static char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void golden_copy(const char *dst)
{
    size_t n = 0;
    char *g = fsc_test_slurp(fsc_test_data("recorder_golden.fstrace"), &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL_FATAL(rt_write_file(dst, g, n), 0);
    free(g);
}

static void test_info_text(void)
{
    static char out[8192];
    int rc = fsc_test_sh(out, sizeof out, "%s info %s", fsc_test_fragscope(),
                         fsc_test_data("recorder_golden.fstrace"));
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nevents       18\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  oom              2\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  marker           2\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  producer   fragscope test\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  capacity   80.00 GiB\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  rank       3\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ntags         3 nodes\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  forward                  3 events (16.7%)\n"
                                       "    layer.0                2 events (11.1%)\n"
                                       "  backward                 3 events (16.7%)\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  (untagged)               12 events\n"));
    /* the golden trace's SKIPPED record (2.4): the trace is not said complete */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nintegrity    clean close; but 3 recorded entries left "
                                       "out of the trace: 1 unknown action, 2 free of an "
                                       "unknown address\n"
                                       "  first: free_completed at 0x7f0000100000, 512 bytes "
                                       "(device 0, entry 5): free of an unknown address\n"
                                       "         action 42 at 0x0, 0 bytes (device 1, entry 9): "
                                       "unknown action\n"));
    CU_ASSERT_PTR_NULL(strstr(out, "truncated"));
}

static void test_info_json(void)
{
    static char out[16384];
    int rc = fsc_test_sh(out, sizeof out, "%s info --format json %s", fsc_test_fragscope(),
                         fsc_test_data("recorder_golden.fstrace"));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    cJSON *o = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(o, "events")->valuedouble, 18);
    cJSON *bt = cJSON_GetObjectItem(o, "events_by_type");
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(bt, "alloc")->valuedouble, 3);
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(bt, "oom")->valuedouble, 2);
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(bt, "segment_map")->valuedouble, 1);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(bt), 14);
    cJSON *tags = cJSON_GetObjectItem(o, "tags");
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(tags, "count")->valuedouble, 3);
    cJSON *top = cJSON_GetObjectItem(tags, "top");
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(top), 2);
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(cJSON_GetArrayItem(top, 0), "name")->valuestring,
                           "forward");
    cJSON *kids = cJSON_GetObjectItem(cJSON_GetArrayItem(top, 0), "children");
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(kids), 1);
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(cJSON_GetArrayItem(kids, 0), "name")->valuestring,
                           "forward/layer.0");
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(cJSON_GetArrayItem(kids, 0), "events")->valuedouble, 2);
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(o, "format")->valuestring, "2.4");
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(o, "backend")->valuestring, "sim");
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(o, "chunks")->valuedouble, 5);
    /* Above 2^53: written as an exact integer. */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"clock_origin_ns\":\t1764400000123456789"));
    cJSON *ig = cJSON_GetObjectItem(o, "integrity");
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(ig, "status")->valuestring, "clean");
    cJSON *sk = cJSON_GetObjectItem(ig, "skipped");
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(sk, "total")->valuedouble, 3);
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(cJSON_GetObjectItem(sk, "by_kind"), "free_unknown")
                        ->valuedouble,
                    2);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(sk, "first")), 2);
    CU_ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(ig, "clean_close")));
    cJSON_Delete(o);
}

static void test_info_truncated(void)
{
    const char *full = fsc_test_path("g.fstrace");
    golden_copy(full);
    size_t n = 0;
    char *g = fsc_test_slurp(full, &n);
    const char *cut = fsc_test_path("g_cut.fstrace");
    CU_ASSERT_EQUAL_FATAL(rt_write_file(cut, g, n - 100), 0);
    uint64_t expect = rt_events_before((uint8_t *)g, n, n - 100);
    free(g);
    static char out[16384];
    int rc = fsc_test_sh(out, sizeof out, "%s info %s", fsc_test_fragscope(), cut);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "integrity    truncated"));
    char want[64];
    snprintf(want, sizeof want, "\nevents       %llu\n", (unsigned long long)expect);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    rc = fsc_test_sh(out, sizeof out, "%s info --format json %s", fsc_test_fragscope(), cut);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    cJSON *o = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    cJSON *ig = cJSON_GetObjectItem(o, "integrity");
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(ig, "status")->valuestring, "truncated");
    CU_ASSERT(cJSON_GetObjectItem(ig, "bytes_lost")->valuedouble > 0);
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(o, "events")->valuedouble, (double)expect);
    cJSON_Delete(o);
}

static void test_info_errors(void)
{
    static char out[4096];
    const char *missing = fsc_test_path("absent.fstrace");
    int rc = fsc_test_sh(out, sizeof out, "%s info %s", fsc_test_fragscope(), missing);
    CU_ASSERT_EQUAL(rc, 2);
    char want[1200];
    snprintf(want, sizeof want, "fragscope: %s: cannot open: No such file or directory\n", missing);
    CU_ASSERT_STRING_EQUAL(out, want);
    const char *txt = fsc_test_path("plain.txt");
    CU_ASSERT_EQUAL_FATAL(rt_write_file(txt, "not a trace at all\n", 19), 0);
    rc = fsc_test_sh(out, sizeof out, "%s info --format json %s", fsc_test_fragscope(), txt);
    CU_ASSERT_EQUAL(rc, 2);
    snprintf(want, sizeof want, "fragscope: %s: not a fragscope trace\n", txt);
    CU_ASSERT_STRING_EQUAL(out, want);
    rc = fsc_test_sh(out, sizeof out, "%s info --format xml %s", fsc_test_fragscope(), txt);
    CU_ASSERT_EQUAL(rc, 2);
    rc = fsc_test_sh(out, sizeof out, "%s info", fsc_test_fragscope());
    CU_ASSERT_EQUAL(rc, 2);
}

static void test_record_runs_command(void)
{
    const char *trace = fsc_test_path("recorded.fstrace");
    static char out[8192];
    int rc = fsc_test_sh(out, sizeof out,
                         "FSC_TEST_RECORD_CHILD=1000 FSC_TEST_RECORD_EXIT=7 %s record --shim -o %s -- %s",
                         fsc_test_fragscope(), trace, self_exe());
    CU_ASSERT_EQUAL(rc, 7); /* the command's exit status */
    char want[1200];
    snprintf(want, sizeof want, "fragscope record: %s: 1000 events in ", trace);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "clean close\n"));
    fsc_event_t *got = NULL;
    fsc_trace_integrity_t in;
    int r2;
    long k = rt_read_all(trace, &got, &in, &r2);
    CU_ASSERT_EQUAL(k, 1000);
    CU_ASSERT_EQUAL(in.clean_close, 1);
    if (k == 1000) {
        CU_ASSERT_EQUAL(got[999].type, FSC_EV_FREE_REQUESTED);
        CU_ASSERT_EQUAL(got[999].addr, 0x7f0000000000ull + 499 * 512);
    }
    free(got);

    rc = fsc_test_sh(out, sizeof out,
                     "FSC_TEST_RECORD_CHILD=1000 %s record --shim -o %s --ring 10 -- %s",
                     fsc_test_fragscope(), trace, self_exe());
    CU_ASSERT_EQUAL(rc, 0);
    snprintf(want, sizeof want, "fragscope record: %s: 10 events in 1 chunks", trace);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    k = rt_read_all(trace, &got, &in, &r2);
    CU_ASSERT_EQUAL(k, 10);
    CU_ASSERT_EQUAL(in.events_dropped, 990);
    free(got);
}

static void test_record_errors(void)
{
    static char out[4096];
    const char *trace = fsc_test_path("none.fstrace");
    int rc = fsc_test_sh(out, sizeof out, "%s record --shim -o %s -- sh -c 'exit 3'",
                         fsc_test_fragscope(), trace);
    CU_ASSERT_EQUAL(rc, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "wrote no trace"));
    rc = fsc_test_sh(out, sizeof out, "%s record --shim -o %s -- /no/such/program", fsc_test_fragscope(),
                     trace);
    CU_ASSERT_EQUAL(rc, 127);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cannot run '/no/such/program'"));
    rc = fsc_test_sh(out, sizeof out, "%s record -- true", fsc_test_fragscope());
    CU_ASSERT_EQUAL(rc, 2);
    rc = fsc_test_sh(out, sizeof out, "%s record -o %s --ring 0 -- true", fsc_test_fragscope(),
                     trace);
    CU_ASSERT_EQUAL(rc, 2);
    rc = fsc_test_sh(out, sizeof out, "%s record -o %s", fsc_test_fragscope(), trace);
    CU_ASSERT_EQUAL(rc, 2);
    rc = fsc_test_sh(out, sizeof out, "%s record --shim -o %s -- sh -c 'kill -9 $$'",
                     fsc_test_fragscope(), trace);
    CU_ASSERT_EQUAL(rc, 128 + 9);
}

static void test_record_distributed(void)
{
    /* Two ranks of one job, one environment: one trace each, both summarized. */
    const char *trace = fsc_test_path("dist.fstrace");
    static char out[8192];
    const char *exe = self_exe();
    int rc = fsc_test_sh(out, sizeof out,
                         "%s record --shim -o %s -- sh -c 'for r in 0 1; do RANK=$r WORLD_SIZE=2 "
                         "FSC_TEST_RECORD_CHILD=$((10 + r)) %s & done; wait'",
                         fsc_test_fragscope(), trace, exe);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_FALSE(fsc_test_file_exists(trace));
    for (int r = 0; r < 2; r++) {
        char p[1100], want[1200];
        snprintf(p, sizeof p, "%s/dist.rank%d.fstrace", fsc_test_tmpdir(), r);
        snprintf(want, sizeof want, "fragscope record: %s: %d events in 1 chunks", p, 10 + r);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
        fsc_trace_reader_t *rd = NULL;
        fsc_err_t err;
        CU_ASSERT_EQUAL_FATAL(fsc_trace_open(p, &rd, &err), 0);
        CU_ASSERT_EQUAL(fsc_trace_header(rd)->rank, r);
        fsc_trace_close(rd);
    }
}

static void test_simulate_records_env_rank(void)
{
    /* A program that writes its own header and leaves the rank unknown
     * (simulate -o) records the rank its launcher gave it; the name of the
     * file says none, so the rank analyze stores comes from the header. */
    const char *trace = fsc_test_path("envrank.fstrace");
    const char *db = fsc_test_path("envrank.db");
    static char out[8192];
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out,
                                      "RANK=1 WORLD_SIZE=2 %s simulate --workload resnet "
                                      "--steps 1 -o %s && %s info %s",
                                      fsc_test_fragscope(), trace, fsc_test_fragscope(), trace),
                          0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  rank       1\n"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s",
                                      fsc_test_fragscope(), trace, db), 0);
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "SELECT count(*), min(rank) FROM runs", -1, &st,
                                             NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 0), 1);
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 1), 1);
    sqlite3_finalize(st);
    sqlite3_close(h);
    /* without RANK the rank stays unknown */
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out,
                                      "unset RANK; %s simulate --workload resnet --steps 1 -o %s "
                                      "&& %s info %s", fsc_test_fragscope(), trace,
                                      fsc_test_fragscope(), trace), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  rank       -1\n"));
}

static const fsc_test_case_t k_tests[] = {
    {"info_text", test_info_text},
    {"info_json", test_info_json},
    {"info_truncated", test_info_truncated},
    {"info_errors", test_info_errors},
    {"record_runs_command", test_record_runs_command},
    {"record_errors", test_record_errors},
    {"record_distributed", test_record_distributed},
    {"simulate_records_env_rank", test_simulate_records_env_rank},
    {NULL, NULL},
};

FSC_TEST_MAIN("recorder_cli", k_tests)
