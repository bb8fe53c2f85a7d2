/*
 * test_external.c — memory of the device outside the caching allocator
 * (docs/metrics.md, "Memory outside the allocator"):
 *   - the H200 run of tests/data/gpu/external_oom (raw cudaMalloc took most
 *     of the device, then GPT-2 ran out) is diagnosed `external` with the
 *     byte count its stats file gives, and no allocator setting is offered;
 *   - without the device's total the cause holds and the count is unknown;
 *   - when this allocator's own reserved bytes explain the shortfall the
 *     cause is not `external`.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fragscope/analyzer.h"
#include "fragscope/common.h"
#include "fragscope/recorder.h"
#include "fragscope/whatif.h"
#include "fsc_test.h"

#define MiB (1024ull * 1024)
#define PAGE (2 * MiB) /* the allocator's large-segment granularity */

static sqlite3 *g_db;

static int64_t qi(const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(g_db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static const char *qt(const char *sql)
{
    static char buf[4096];
    sqlite3_stmt *st = NULL;
    buf[0] = '\0';
    if (sqlite3_prepare_v2(g_db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
        snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

static void db_open(const char *path)
{
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &g_db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
}

static void db_close(void)
{
    sqlite3_close(g_db);
    g_db = NULL;
}

/* The figures of external_oom.stats.json (torch.cuda.memory_stats() and
 * torch.cuda.mem_get_info() after the OOM). */
typedef struct stats {
    int64_t device_total, device_free, reserved, raw_cudamalloc;
} stats_t;

static stats_t read_stats(void)
{
    stats_t s = {-1, -1, -1, -1};
    char *text = fsc_test_slurp(fsc_test_data("gpu/external_oom.stats.json"), NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    s.device_total = (int64_t)cJSON_GetObjectItem(j, "device_total")->valuedouble;
    s.device_free =
        (int64_t)cJSON_GetArrayItem(cJSON_GetObjectItem(j, "mem_get_info_end"), 0)->valuedouble;
    s.reserved = (int64_t)cJSON_GetObjectItem(j, "reserved_bytes.all.current")->valuedouble;
    s.raw_cudamalloc = (int64_t)cJSON_GetObjectItem(
        cJSON_GetObjectItem(j, "raw_cudamalloc"), "bytes")->valuedouble;
    cJSON_Delete(j);
    return s;
}

static void test_h200_external_with_device_memory(void)
{
    stats_t s = read_stats();
    const char *db = fsc_test_path("ext_total.db");
    char out[8192];
    int rc = fsc_test_sh(out, sizeof out,
                         "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s --device-memory %lld",
                         fsc_test_fragscope(), fsc_test_data("gpu/external_oom.pickle"), db,
                         (long long)s.device_total);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "what-if: not run"));
    db_open(db);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM ooms"), 1);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "external");
    /* the snapshot's OOM entry: device_free; PyTorch: "197.12 MiB is free" */
    CU_ASSERT_EQUAL(qi("SELECT device_free FROM ooms"), s.device_free);
    CU_ASSERT_EQUAL(qi("SELECT device_total FROM ooms"), s.device_total);
    int64_t want = s.device_total - s.device_free - s.reserved;
    int64_t got = qi("SELECT external_bytes FROM ooms");
    CU_ASSERT(got >= want - (int64_t)PAGE && got <= want + (int64_t)PAGE);
    /* the raw cudaMalloc is part of it; the rest is the CUDA context and
     * library workspaces (under 1 GiB) */
    CU_ASSERT(got >= s.raw_cudamalloc && got - s.raw_cudamalloc < 1024 * (int64_t)MiB);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM suggestions"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(qt("SELECT explanation FROM ooms"),
                                  "No allocator setting can avoid this"));
    db_close();

    static char js[1 << 20];
    rc = fsc_test_sh(js, sizeof js, "%s report --format json %s", fsc_test_fragscope(), db);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    cJSON *j = cJSON_Parse(js);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ooms"), 0);
    CU_ASSERT_EQUAL((int64_t)cJSON_GetObjectItem(o, "external_bytes")->valuedouble, got);
    cJSON_Delete(j);
    rc = fsc_test_sh(out, sizeof out, "%s report %s", fsc_test_fragscope(), db);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "memory used outside this allocator: 134.96 GiB"));
    const char *html = fsc_test_path("ext_total.html");
    rc = fsc_test_sh(out, sizeof out, "%s view %s -o %s", fsc_test_fragscope(), db, html);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char *page = fsc_test_slurp(html, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "outside the allocator</th><td>134.96 GiB at OOM #0"));
    free(page);

    /* whatif takes the device's total the same way, and counts the same bytes */
    rc = fsc_test_sh(js, sizeof js, "%s whatif %s --suggest --format json --device-memory %lld",
                     fsc_test_fragscope(), fsc_test_data("gpu/external_oom.pickle"),
                     (long long)s.device_total);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    j = cJSON_Parse(js);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    o = cJSON_GetArrayItem(j, 0);
    CU_ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(o, "external")));
    CU_ASSERT_EQUAL((int64_t)cJSON_GetObjectItem(o, "external_bytes")->valuedouble, got);
    cJSON_Delete(j);
    rc = fsc_test_sh(out, sizeof out, "%s whatif %s --suggest --device-memory %lld",
                     fsc_test_fragscope(), fsc_test_data("gpu/external_oom.pickle"),
                     (long long)s.device_total);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "request needed (134.96 GiB: the device's total less"));
    /* without it: unknown, and the option named */
    rc = fsc_test_sh(out, sizeof out, "%s whatif %s --suggest", fsc_test_fragscope(),
                     fsc_test_data("gpu/external_oom.pickle"));
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "give --device-memory SIZE to measure it"));
    rc = fsc_test_sh(out, sizeof out, "%s whatif %s --suggest --device-memory 0 2>&1",
                     fsc_test_fragscope(), fsc_test_data("gpu/external_oom.pickle"));
    CU_ASSERT_EQUAL(rc, 2);
}

static void test_h200_external_total_unknown(void)
{
    const char *db = fsc_test_path("ext_unknown.db");
    char out[8192];
    int rc = fsc_test_sh(out, sizeof out, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s",
                         fsc_test_fragscope(), fsc_test_data("gpu/external_oom.pickle"), db);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    db_open(db);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "external");
    CU_ASSERT_EQUAL(qi("SELECT external_bytes FROM ooms"), -2); /* NULL */
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM suggestions"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(qt("SELECT explanation FROM ooms"), "--device-memory"));
    db_close();
    static char js[1 << 20];
    rc = fsc_test_sh(js, sizeof js, "%s report --format json %s", fsc_test_fragscope(), db);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    cJSON *j = cJSON_Parse(js);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ooms"), 0);
    CU_ASSERT(cJSON_IsNull(cJSON_GetObjectItem(o, "external_bytes")));
    cJSON_Delete(j);
}

/* One 4 MiB segment, fully allocated, then a 4 MiB request whose segment the
 * device refuses with 2 MiB free; the cap is not recorded. */
static void run_device(const char *db, uint64_t device_total)
{
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.producer = "test";
    h.config = "";
    h.backend = "sim";
    h.rank = -1;
    h.flags = FSC_TRACE_F_CAPACITY_UNKNOWN;
    h.device_total = device_total;
    fsc_analysis_opts_t o = FSC_ANALYSIS_OPTS_DEFAULT;
    fsc_analysis_t *a = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_analysis_create(db, &h, &o, &a, &err), 0);
    uint64_t s1 = 0x7f0000000000ull;
    fsc_event_t ev[3] = {
        {.type = FSC_EV_SEGMENT_ALLOC, .pool = 1, .addr = s1, .size = 4 * MiB},
        {.type = FSC_EV_ALLOC, .pool = 1, .addr = s1, .size = 4 * MiB, .requested = 4 * MiB,
         .segment = s1},
        {.type = FSC_EV_OOM, .pool = 1, .size = 4 * MiB, .requested = 4 * MiB},
    };
    ev[2].oom.device_free = 2 * MiB;
    ev[2].oom.segment_size = 4 * MiB;
    for (int i = 0; i < 3; i++) {
        ev[i].time_ns = (uint64_t)i * 1000;
        CU_ASSERT_EQUAL(fsc_analysis_feed(a, &ev[i]), 0);
    }
    CU_ASSERT_EQUAL(fsc_analysis_finish(a, NULL), 0);
    fsc_analysis_destroy(a);
}

static void test_reserved_explains_shortfall(void)
{
    /* 7 MiB device: 4 reserved + 2 free leaves 1 MiB outside, less than the
     * 2 MiB the segment lacked: the allocator itself filled the device. */
    const char *db = fsc_test_path("dev7.db");
    run_device(db, 7 * MiB);
    db_open(db);
    CU_ASSERT_STRING_NOT_EQUAL(qt("SELECT cause FROM ooms"), "external");
    CU_ASSERT_EQUAL(qi("SELECT external_bytes FROM ooms"), (int64_t)MiB);
    db_close();
    /* 80 GiB device: 80 GiB − 6 MiB outside. */
    db = fsc_test_path("dev80.db");
    run_device(db, 80 * 1024 * MiB);
    db_open(db);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "external");
    CU_ASSERT_EQUAL(qi("SELECT external_bytes FROM ooms"), (int64_t)(80 * 1024 * MiB - 6 * MiB));
    db_close();
    /* exactly reserved + segment (8 MiB): 2 MiB outside is what it lacked */
    db = fsc_test_path("dev8.db");
    run_device(db, 8 * MiB);
    db_open(db);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "external");
    db_close();
}

/* A recorded sim run on a 1 GiB device of which others took 700 MiB: the
 * trace carries DEVICE_MEMORY samples (format 2.1), the analyzer turns them
 * into device_memory rows, and the OOM of a 300 MiB request that the
 * 1 GiB cap allowed is `external` with 700 MiB outside. */
static void test_sim_recorded_samples(void)
{
    const char *trace = fsc_test_path("taken.fstrace"), *db = fsc_test_path("taken.db");
    fsc_trace_header_t hdr = {0};
    hdr.producer = "test_external";
    hdr.config = "";
    hdr.backend = "sim";
    hdr.capacity = 1024 * MiB;
    hdr.device_total = 1024 * MiB;
    hdr.rank = -1;
    fsc_recorder_opts_t ro = FSC_RECORDER_OPTS_DEFAULT;
    ro.synchronous = 1;
    fsc_recorder_t *rec = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_FATAL(fsc_recorder_open(trace, &hdr, &ro, &rec, &err) == 0);
    fsc_backend_t *be = NULL;
    CU_ASSERT_FATAL(fsc_backend_sim_create(1024 * MiB, 0, &be) == 0);
    CU_ASSERT_EQUAL(fsc_backend_sim_set_taken(be, 700 * MiB), 0);
    fsc_allocator_opts_t ao;
    memset(&ao, 0, sizeof ao);
    fsc_alloc_config_t defaults = FSC_ALLOC_CONFIG_DEFAULT;
    ao.config = defaults;
    ao.backend = be;
    ao.sink = fsc_recorder_sink;
    ao.sink_ud = rec;
    fsc_allocator_t *a = NULL;
    CU_ASSERT_FATAL(fsc_allocator_create(&ao, &a, &err) == 0);
    CU_ASSERT_EQUAL(fsc_allocator_sample_device(a, 1, 0), 0);
    uint64_t p1 = 0, p2 = 0;
    CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 100 * MiB, 0, &p1), 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 300 * MiB, 0, &p2), FSC_EOOM);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    CU_ASSERT_FATAL(fsc_recorder_close(rec) == 0);

    char out[8192];
    int rc = fsc_test_sh(out, sizeof out, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s",
                         fsc_test_fragscope(), trace, db);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    db_open(db);
    /* one sample after the segment, one at the OOM */
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM device_memory"), 2);
    CU_ASSERT_EQUAL(qi("SELECT external_bytes FROM device_memory ORDER BY seq LIMIT 1"),
                    (int64_t)(700 * MiB));
    CU_ASSERT_EQUAL(qi("SELECT device_free FROM device_memory ORDER BY seq LIMIT 1"),
                    (int64_t)(224 * MiB));
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key = 'external_max_bytes'"),
                    (int64_t)(700 * MiB));
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key = 'device_samples'"), 2);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "external");
    CU_ASSERT_EQUAL(qi("SELECT external_bytes FROM ooms"), (int64_t)(700 * MiB));
    /* the samples are extension records: the chunk's event count is the
     * events' (what a 2.0 reader, which skips them, counts) */
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key = 'integrity.events_lost'"), 0);
    db_close();
    rc = fsc_test_sh(out, sizeof out, "%s report %s", fsc_test_fragscope(), db);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "outside the allocator     700.00 MiB  (most at a device "
                                       "sample, event 1; 2 samples"));
    const char *html = fsc_test_path("taken.html");
    rc = fsc_test_sh(out, sizeof out, "%s view %s -o %s", fsc_test_fragscope(), db, html);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char *page = fsc_test_slurp(html, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "700.00 MiB at most (event 1; 2 device samples)"));
    free(page);
    rc = fsc_test_sh(out, sizeof out, "%s info %s", fsc_test_fragscope(), trace);
    CU_ASSERT_EQUAL(rc, 0);
    /* whatif --suggest offers no setting, with the count (the trace has the
     * device's total) */
    rc = fsc_test_sh(out, sizeof out, "%s whatif %s --suggest", fsc_test_fragscope(), trace);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the recording's OOM #0 was external: memory outside this "
                                       "allocator took what the\nrequest needed (700.00 MiB: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "No allocator setting can avoid it, so none is listed."));
    CU_ASSERT_PTR_NULL(strstr(out, "settings that do better"));
    static char js[1 << 16];
    rc = fsc_test_sh(js, sizeof js, "%s whatif %s --suggest --format json", fsc_test_fragscope(),
                     trace);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    cJSON *j = cJSON_Parse(js);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(j), 1);
    cJSON *x = cJSON_GetArrayItem(j, 0);
    CU_ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(x, "external")));
    CU_ASSERT_EQUAL((int64_t)cJSON_GetObjectItem(x, "external_bytes")->valuedouble,
                    (int64_t)(700 * MiB));
    CU_ASSERT_EQUAL((int)cJSON_GetObjectItem(x, "recorded_oom")->valuedouble, 0);
    CU_ASSERT(cJSON_IsFalse(cJSON_GetObjectItem(x, "avoids_oom")));
    cJSON_Delete(j);
}

/* whatif --suggest on the H200 external OOM: said so, no setting listed
 * (it listed expandable_segments:True, which could not have helped). */
static void test_h200_whatif_suggest(void)
{
    static char out[1 << 16];
    const char *snap = fsc_test_data("gpu/external_oom.pickle");
    int rc = fsc_test_sh(out, sizeof out, "%s whatif %s --suggest 2>&1", fsc_test_fragscope(),
                         snap);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the recording's OOM #0 was external: memory outside this "
                                       "allocator took what the\nrequest needed (how much is "
                                       "unknown: the device's total was not recorded; "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "No allocator setting can avoid it, so none is listed.\n"
                                       "What would help: find the other user of the device"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "NCCL buffers, raw cudaMalloc calls"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the CUDA context"));
    CU_ASSERT_PTR_NULL(strstr(out, "expandable_segments"));
    CU_ASSERT_PTR_NULL(strstr(out, "replaying at"));
    /* replays of other settings say which recorded OOM was external */
    rc = fsc_test_sh(out, sizeof out, "%s whatif %s --config expandable_segments:True 2>&1",
                     fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the recording's OOM #0 failed there too (external)\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nThe recording's OOM #0 was external: memory outside "
                                       "this allocator took what the\nrequest needed. On that "
                                       "device no allocator setting avoids it"));
    rc = fsc_test_sh(out, sizeof out, "%s whatif %s --config '' --format json 2>/dev/null",
                     fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"recorded_oom\": 0, \"recorded_oom_external\": true"));
    rc = fsc_test_sh(out, sizeof out, "%s whatif %s --suggest --format json 2>/dev/null",
                     fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    cJSON *j = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(j), 1);
    cJSON *x = cJSON_GetArrayItem(j, 0);
    CU_ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(x, "external")));
    CU_ASSERT(cJSON_IsNull(cJSON_GetObjectItem(x, "external_bytes")));
    CU_ASSERT(cJSON_IsNull(cJSON_GetObjectItem(x, "config")));
    cJSON_Delete(j);
}

/* The stream's reading of recorded OOMs follows the analyzer's rule
 * (run_device's figures): 80 GiB device external, 7 MiB device not. */
static void stream_device(uint64_t device_total, fsc_request_stream_info_t *in)
{
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_FATAL(fsc_request_stream_create(&rs, &err) == 0);
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.config = "";
    h.flags = FSC_TRACE_F_CAPACITY_UNKNOWN;
    h.device_total = device_total;
    CU_ASSERT_EQUAL(fsc_request_stream_set_header(rs, &h, &err), 0);
    uint64_t s1 = 0x7f0000000000ull;
    fsc_event_t ev[3] = {
        {.type = FSC_EV_SEGMENT_ALLOC, .pool = 1, .addr = s1, .size = 4 * MiB},
        {.type = FSC_EV_ALLOC, .pool = 1, .addr = s1, .size = 4 * MiB, .requested = 4 * MiB,
         .segment = s1},
        {.type = FSC_EV_OOM, .pool = 1, .size = 4 * MiB, .requested = 4 * MiB},
    };
    ev[2].oom.device_free = 2 * MiB;
    ev[2].oom.segment_size = 4 * MiB;
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(fsc_request_stream_add(rs, &ev[i], &err), 0);
    fsc_request_stream_info(rs, in);
    fsc_request_stream_destroy(rs);
}

static void test_stream_external(void)
{
    fsc_request_stream_info_t in;
    stream_device(80 * 1024 * MiB, &in);
    CU_ASSERT_EQUAL(in.external_ooms, 1);
    CU_ASSERT_EQUAL(in.first_external_oom, 0);
    CU_ASSERT_EQUAL(in.external_bytes_known, 1);
    CU_ASSERT_EQUAL(in.external_bytes, 80 * 1024 * MiB - 6 * MiB);
    stream_device(7 * MiB, &in);
    CU_ASSERT_EQUAL(in.external_ooms, 0);
    CU_ASSERT_EQUAL(in.first_external_oom, -1);
    stream_device(0, &in); /* total unknown: external, count unknown */
    CU_ASSERT_EQUAL(in.external_ooms, 1);
    CU_ASSERT_EQUAL(in.external_bytes_known, 0);
}

static void test_device_samples_parse(void)
{
    int on = -1;
    uint64_t every = 1;
    CU_ASSERT_EQUAL(fsc_device_samples_parse(NULL, &on, &every), 0);
    CU_ASSERT(on == 1 && every == 0);
    CU_ASSERT_EQUAL(fsc_device_samples_parse("off", &on, &every), 0);
    CU_ASSERT(on == 0 && every == 0);
    CU_ASSERT_EQUAL(fsc_device_samples_parse("250", &on, &every), 0);
    CU_ASSERT(on == 1 && every == 250000000ull);
    CU_ASSERT_EQUAL(fsc_device_samples_parse("0", &on, &every), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_device_samples_parse("5ms", &on, &every), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_device_samples_parse("-3", &on, &every), FSC_EINVAL);
}

static const fsc_test_case_t k_tests[] = {
    {"sim_recorded_samples", test_sim_recorded_samples},
    {"device_samples_parse", test_device_samples_parse},
    {"h200_external_with_device_memory", test_h200_external_with_device_memory},
    {"h200_external_total_unknown", test_h200_external_total_unknown},
    {"reserved_explains_shortfall", test_reserved_explains_shortfall},
    {"h200_whatif_suggest", test_h200_whatif_suggest},
    {"stream_external", test_stream_external},
    {NULL, NULL},
};

FSC_TEST_MAIN("external", k_tests)
