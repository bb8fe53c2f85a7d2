/*
 * test_gpu_ranks.c — a job of three ranks recorded at once on one H200
 * (bench/gpu/run.sh ranks, bench/gpu/ranks.py; tests/data/gpu/ranks/), from
 * its three traces to run databases and their reports, against what each
 * process measured itself (pipe.run.rN.json beside each trace):
 *   - every rank's peak allocated and reserved bytes are the process's own
 *     allocator statistics (fragscope_torch.memory_stats(), the keys of
 *     torch.cuda.memory_stats()), exactly: the trace holds every event the
 *     allocator that kept those statistics made;
 *   - the caps make rank 1 the least headroom: each cap is the rank's
 *     calibrated peak reserved plus a margin (2 GiB, 512 MiB, 16 GiB), so
 *     rank 1 has the least headroom although stage 0 has the largest peak
 *     and rank 2 runs out of memory;
 *   - rank 2, after a raw cudaMalloc behind the allocator's back, runs out
 *     of memory first, diagnosed `external`, with the memory outside the
 *     allocator within one 2 MiB page (the CUDA driver's and the
 *     allocator's large-segment granularity, the page docs/metrics.md and
 *     test_external.c use) of the raw allocation plus what the process
 *     itself measured outside its allocator just before it
 *     (total − free − reserved from torch.cuda.mem_get_info());
 *   - `fragscope analyze r0 r1 r2 -o job.db` holds the same figures per run,
 *     its report (`report --format json`: ranks[], job) and its page
 *     (`fragscope view`) name rank 1 for the least headroom and rank 2,
 *     cause external, for the first OOM.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc_test.h"
#include "fsc_test_gpu.h"

#define MiB (1024ll * 1024)
#define PAGE (2 * MiB)
#define NRANKS 3

/* What one process wrote beside its trace. */
typedef struct rank_facts {
    int64_t cap, peak_allocated, peak_reserved, ooms;
    /* rank 2 only (-1 elsewhere) */
    int64_t raw_bytes, outside_before, outside_after_raw, external_at_end;
} rank_facts_t;

static int64_t num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static rank_facts_t read_facts(int rank)
{
    char rel[64];
    snprintf(rel, sizeof rel, "gpu/ranks/pipe.run.r%d.json", rank);
    cJSON *j = fsc_test_data_json(rel);
    CU_ASSERT_EQUAL(num(j, "rank"), rank);
    CU_ASSERT_EQUAL(num(j, "world_size"), NRANKS);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "memory_stats");
    rank_facts_t f = {num(j, "cap_bytes"), num(st, "allocated_bytes.all.peak"),
                      num(st, "reserved_bytes.all.peak"), num(st, "num_ooms"), -1, -1, -1, -1};
    const cJSON *raw = cJSON_GetObjectItemCaseSensitive(j, "raw_cudamalloc");
    if (raw != NULL) {
        CU_ASSERT_EQUAL(num(raw, "rc"), 0);
        f.raw_bytes = num(raw, "bytes");
        f.outside_before = num(raw, "outside_before");
        f.outside_after_raw = num(raw, "outside_after_raw");
        f.external_at_end = num(raw, "external_at_end");
    }
    cJSON_Delete(j);
    CU_ASSERT(f.cap > 0 && f.peak_allocated > 0 && f.peak_reserved >= f.peak_allocated);
    return f;
}

/* pipe.rN.fstrace analyzed alone into tmpdir/rN.db (made once per rank). */
static const char *rank_db(int r)
{
    static char done[NRANKS][512];
    if (done[r][0] != '\0')
        return done[r];
    char name[32], trace[64], out[8192];
    snprintf(name, sizeof name, "r%d.db", r);
    snprintf(trace, sizeof trace, "gpu/ranks/pipe.r%d.fstrace", r);
    snprintf(done[r], sizeof done[r], "%s", fsc_test_path(name));
    int rc = fsc_test_sh(out, sizeof out, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s",
                         fsc_test_fragscope(), fsc_test_data(trace), done[r]);
    if (rc != 0)
        fprintf(stderr, "%s\n", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return done[r];
}

static cJSON *report_json(const char *db, const char *extra)
{
    static char js[1 << 21];
    int rc = fsc_test_sh(js, sizeof js, "%s report --format json %s %s", fsc_test_fragscope(),
                         extra, db);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    cJSON *j = cJSON_Parse(js);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static int64_t q_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void test_peaks_are_each_process_stats(void)
{
    for (int r = 0; r < NRANKS; r++) {
        rank_facts_t f = read_facts(r);
        const char *db = rank_db(r);
        /* the rank the shim read from RANK into the trace header */
        CU_ASSERT_EQUAL(q_int(db, "SELECT rank FROM runs"), r);
        CU_ASSERT_EQUAL(q_int(db, "SELECT device FROM runs"), 0);
        cJSON *j = report_json(db, "");
        const cJSON *sum = cJSON_GetObjectItemCaseSensitive(j, "summary");
        const cJSON *run = cJSON_GetObjectItemCaseSensitive(j, "run");
        CU_ASSERT_EQUAL(num(sum, "peak_allocated_bytes"), f.peak_allocated);
        CU_ASSERT_EQUAL(num(sum, "peak_reserved_bytes"), f.peak_reserved);
        CU_ASSERT_EQUAL(num(run, "capacity_bytes"), f.cap); /* the shim's cap, in the header */
        CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "ooms")), f.ooms);
        cJSON_Delete(j);
    }
}

static void test_caps_make_rank1_least_headroom(void)
{
    cJSON *caps = fsc_test_data_json("gpu/ranks/caps.json");
    CU_ASSERT_EQUAL(num(caps, "least_headroom_rank"), 1);
    cJSON_Delete(caps);
    rank_facts_t f[NRANKS];
    for (int r = 0; r < NRANKS; r++)
        f[r] = read_facts(r);
    /* stage 0 holds the most activations, the last stage the fewest */
    CU_ASSERT(f[0].peak_reserved > f[1].peak_reserved && f[1].peak_reserved > f[2].peak_reserved);
    /* margins of 2 GiB, 512 MiB and 16 GiB over the calibrated peaks, which the recorded run
     * reached exactly */
    CU_ASSERT_EQUAL(f[0].cap - f[0].peak_reserved, 2048 * MiB);
    CU_ASSERT_EQUAL(f[1].cap - f[1].peak_reserved, 512 * MiB);
    CU_ASSERT_EQUAL(f[2].cap - f[2].peak_reserved, 16384 * MiB);
    /* the sum of the caps fits the device */
    CU_ASSERT(f[0].cap + f[1].cap + f[2].cap < 150109880320ll);
}

static void test_rank2_external_oom(void)
{
    rank_facts_t f = read_facts(2);
    CU_ASSERT_FATAL(f.raw_bytes > 0);
    CU_ASSERT_EQUAL(f.ooms, 2); /* two requests failed before PyTorch gave up the step */
    const char *db = rank_db(2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM ooms"), f.ooms);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM ooms WHERE cause <> 'external'"), 0);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM suggestions"), 0);
    cJSON *j = report_json(db, "");
    const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ooms"), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItemCaseSensitive(o, "cause")->valuestring, "external");
    int64_t ext = num(o, "external_bytes");
    /* the raw allocation plus what the process measured outside its allocator before it */
    int64_t want = f.raw_bytes + f.outside_before;
    CU_ASSERT(ext >= want - PAGE && ext <= want + PAGE);
    /* the same figure measured by the process once the allocation was made, and after the
     * OOM (the other ranks held still meanwhile: they waited for rank 2); on this run all
     * three agree to the byte */
    CU_ASSERT(ext >= f.outside_after_raw - PAGE && ext <= f.outside_after_raw + PAGE);
    CU_ASSERT(ext >= f.external_at_end - PAGE && ext <= f.external_at_end + PAGE);
    CU_ASSERT_EQUAL(ext, want);
    cJSON_Delete(j);
    /* ranks 0 and 1 never ran out of memory */
    CU_ASSERT_EQUAL(q_int(rank_db(0), "SELECT count(*) FROM ooms"), 0);
    CU_ASSERT_EQUAL(q_int(rank_db(1), "SELECT count(*) FROM ooms"), 0);
}

/* The three traces analyzed into one job database (made once). */
static const char *job_db(void)
{
    static char path[512];
    if (path[0] != '\0')
        return path;
    char out[8192];
    snprintf(path, sizeof path, "%s", fsc_test_path("ranks_job.db"));
    int rc = fsc_test_sh(out, sizeof out,
                         "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s %s %s -o %s -j 2",
                         fsc_test_fragscope(), fsc_test_data("gpu/ranks/pipe.r0.fstrace"),
                         fsc_test_data("gpu/ranks/pipe.r1.fstrace"),
                         fsc_test_data("gpu/ranks/pipe.r2.fstrace"), path);
    if (rc != 0)
        fprintf(stderr, "%s\n", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return path;
}

static void test_job_database(void)
{
    const char *db = job_db();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs"), NRANKS);
    char sql[256];
    for (int r = 0; r < NRANKS; r++) {
        rank_facts_t f = read_facts(r);
        /* run r is input r; its rank comes from the trace header */
        snprintf(sql, sizeof sql, "SELECT rank FROM runs WHERE run = %d", r);
        CU_ASSERT_EQUAL(q_int(db, sql), r);
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM meta WHERE run = %d AND key = 'rank_source' AND "
                 "value = 'trace header'", r);
        CU_ASSERT_EQUAL(q_int(db, sql), 1);
        snprintf(sql, sizeof sql,
                 "SELECT value FROM summary WHERE run = %d AND key = 'peak_allocated_bytes'", r);
        CU_ASSERT_EQUAL(q_int(db, sql), f.peak_allocated);
        snprintf(sql, sizeof sql,
                 "SELECT value FROM summary WHERE run = %d AND key = 'peak_reserved_bytes'", r);
        CU_ASSERT_EQUAL(q_int(db, sql), f.peak_reserved);
        snprintf(sql, sizeof sql, "SELECT value FROM meta WHERE run = %d AND key = 'capacity'", r);
        CU_ASSERT_EQUAL(q_int(db, sql), f.cap);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM ooms WHERE run = %d", r);
        CU_ASSERT_EQUAL(q_int(db, sql), f.ooms);
    }
    /* rank 2's OOMs, in the job as alone */
    rank_facts_t f2 = read_facts(2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM ooms WHERE run = 2 AND cause = 'external' "
                              "AND external_bytes = (SELECT external_bytes FROM ooms WHERE "
                              "run = 2 AND id = 0)"),
                    f2.ooms);
    CU_ASSERT_EQUAL(q_int(db, "SELECT external_bytes FROM ooms WHERE run = 2 AND id = 0"),
                    f2.raw_bytes + f2.outside_before);
}

static void test_job_view(void)
{
    const char *html = fsc_test_path("ranks_job.html");
    char out[4096];
    CU_ASSERT_EQUAL_FATAL(
        fsc_test_sh(out, sizeof out, "%s view %s -o %s", fsc_test_fragscope(), job_db(), html), 0);
    char *page = fsc_test_slurp(html, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    /* the overview names rank 1 for the least headroom, rank 2 for the first OOM */
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "Least headroom: <a href=\"#run-1\">rank 1 "));
    const char *first = strstr(page, "First to run out of memory: <a href=\"#run-2\">rank 2 ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    const char *eol = strchr(first, '\n');
    CU_ASSERT_PTR_NOT_NULL_FATAL(eol);
    const char *cause = strstr(first, "cause external");
    CU_ASSERT(cause != NULL && cause < eol);
    free(page);
}

/* The ranks[] entry of run r (run r is rank r: input order). */
static const cJSON *rank_entry(const cJSON *report, int r)
{
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(report, "ranks");
    CU_ASSERT_FATAL(cJSON_IsArray(ranks));
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(ranks), NRANKS);
    const cJSON *e = cJSON_GetArrayItem(ranks, r);
    CU_ASSERT_EQUAL(num(e, "run"), r);
    CU_ASSERT_EQUAL(num(e, "rank"), r);
    CU_ASSERT_EQUAL(num(e, "device"), 0);
    return e;
}

static void test_job_report(void)
{
    cJSON *j = report_json(job_db(), "");
    for (int r = 0; r < NRANKS; r++) {
        rank_facts_t f = read_facts(r);
        const cJSON *e = rank_entry(j, r);
        CU_ASSERT_EQUAL(num(e, "peak_allocated_bytes"), f.peak_allocated);
        CU_ASSERT_EQUAL(num(e, "peak_reserved_bytes"), f.peak_reserved);
        CU_ASSERT_EQUAL(num(e, "capacity_bytes"), f.cap);
        CU_ASSERT_EQUAL(num(e, "headroom_bytes"), f.cap - f.peak_reserved);
        CU_ASSERT_EQUAL(num(e, "ooms"), f.ooms);
        const cJSON *cause = cJSON_GetObjectItemCaseSensitive(e, "first_oom_cause");
        if (r == 2) {
            CU_ASSERT(cJSON_IsString(cause) && strcmp(cause->valuestring, "external") == 0);
        } else {
            CU_ASSERT(cJSON_IsNull(cause));
        }
    }
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(j, "job");
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    CU_ASSERT_EQUAL(num(job, "least_headroom_run"), 1);
    CU_ASSERT_EQUAL(num(job, "first_oom_run"), 2);
    cJSON_Delete(j);

    /* the text says the same, one line each */
    static char text[1 << 18];
    CU_ASSERT_EQUAL_FATAL(
        fsc_test_sh(text, sizeof text, "%s report %s", fsc_test_fragscope(), job_db()), 0);
    const char *lines[][3] = {{"\n  least headroom ", "rank 1 (device 0)", "512.00 MiB"},
                              {"\n  first OOM ", "rank 2 (device 0)", "external"}};
    for (size_t i = 0; i < 2; i++) {
        const char *at = strstr(text, lines[i][0]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(at);
        const char *eol = strchr(at + 1, '\n');
        CU_ASSERT_PTR_NOT_NULL_FATAL(eol);
        for (int k = 1; k < 3; k++) {
            const char *w = strstr(at, lines[i][k]);
            CU_ASSERT(w != NULL && w < eol);
        }
    }

    /* rank 2 in detail: its OOM's external bytes */
    rank_facts_t f = read_facts(2);
    j = report_json(job_db(), "--rank 2");
    CU_ASSERT_EQUAL(num(j, "detail_run"), 2);
    const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ooms"), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItemCaseSensitive(o, "cause")->valuestring, "external");
    CU_ASSERT_EQUAL(num(o, "external_bytes"), f.raw_bytes + f.outside_before);
    cJSON_Delete(j);
}

static const fsc_test_case_t k_tests[] = {
    {"every rank's peaks are its process's own statistics", test_peaks_are_each_process_stats},
    {"the caps make rank 1 the least headroom", test_caps_make_rank1_least_headroom},
    {"rank 2's OOM is external, within a page of the raw cudaMalloc", test_rank2_external_oom},
    {"the three traces in one job database", test_job_database},
    {"the job's page names the least-headroom and first-OOM ranks", test_job_view},
    {"the job report: every rank's figures, least headroom, first OOM", test_job_report},
    {NULL, NULL},
};

FSC_TEST_MAIN("gpu_ranks", k_tests)
