/*
 * test_gpu_ranks.c — a job of three ranks recorded at once on one H200
 * (bench/gpu/run.sh ranks, bench/gpu/ranks.py; tests/data/gpu/ranks/), from
 * its three traces to one job database and its report, against what each
 * process measured itself (pipe.run.rN.json beside each trace):
 *   - every rank's peak allocated and reserved bytes are the process's own
 *     allocator statistics (fragscope_torch.memory_stats(), the keys of
 *     torch.cuda.memory_stats()), exactly: the trace holds every event the
 *     allocator that kept those statistics made;
 *   - the least-headroom rank is rank 1, as the caps make it: each cap is
 *     the rank's calibrated peak reserved plus a margin (2 GiB, 512 MiB,
 *     16 GiB), so rank 1 has the least headroom although stage 0 has the
 *     largest peak and rank 2 runs out of memory;
 *   - rank 2, after a raw cudaMalloc behind the allocator's back, runs out
 *     of memory first, diagnosed `external`, with the memory outside the
 *     allocator within one 2 MiB page (the CUDA driver's and the
 *     allocator's large-segment granularity, the page docs/metrics.md and
 *     test_external.c use) of the raw allocation plus what the process
 *     itself measured outside its allocator just before it
 *     (total − free − reserved from torch.cuda.mem_get_info()).
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc_test.h"

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

static cJSON *read_json(const char *rel)
{
    char *text = fsc_test_slurp(fsc_test_data(rel), NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static rank_facts_t read_facts(int rank)
{
    char rel[64];
    snprintf(rel, sizeof rel, "gpu/ranks/pipe.run.r%d.json", rank);
    cJSON *j = read_json(rel);
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

static const char *g_job; /* the job database, made once */

static const char *job_db(void)
{
    if (g_job != NULL)
        return g_job;
    const char *db = fsc_test_path("ranks_job.db");
    char out[8192];
    int rc = fsc_test_sh(out, sizeof out,
                         "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s %s %s -o %s -j 2",
                         fsc_test_fragscope(), fsc_test_data("gpu/ranks/pipe.r0.fstrace"),
                         fsc_test_data("gpu/ranks/pipe.r1.fstrace"),
                         fsc_test_data("gpu/ranks/pipe.r2.fstrace"), db);
    if (rc != 0)
        fprintf(stderr, "%s\n", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    g_job = db;
    return g_job;
}

static cJSON *report_json(const char *extra)
{
    static char js[1 << 21];
    int rc = fsc_test_sh(js, sizeof js, "%s report --format json %s %s", fsc_test_fragscope(),
                         extra, job_db());
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    cJSON *j = cJSON_Parse(js);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

/* The ranks[] entry of rank r (the runs are in input order: run r is rank r). */
static const cJSON *rank_entry(const cJSON *report, int r)
{
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(report, "ranks");
    CU_ASSERT_FATAL(cJSON_IsArray(ranks));
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(ranks), NRANKS);
    const cJSON *e = cJSON_GetArrayItem(ranks, r);
    CU_ASSERT_EQUAL(num(e, "run"), r);
    CU_ASSERT_EQUAL(num(e, "rank"), r); /* from the trace header: the shim read RANK */
    CU_ASSERT_EQUAL(num(e, "device"), 0);
    return e;
}

static void test_peaks_are_each_process_stats(void)
{
    cJSON *j = report_json("");
    for (int r = 0; r < NRANKS; r++) {
        rank_facts_t f = read_facts(r);
        const cJSON *e = rank_entry(j, r);
        CU_ASSERT_EQUAL(num(e, "peak_allocated_bytes"), f.peak_allocated);
        CU_ASSERT_EQUAL(num(e, "peak_reserved_bytes"), f.peak_reserved);
        CU_ASSERT_EQUAL(num(e, "capacity_bytes"), f.cap); /* the shim's cap, in the header */
        CU_ASSERT_EQUAL(num(e, "headroom_bytes"), f.cap - f.peak_reserved);
        CU_ASSERT_EQUAL(num(e, "ooms"), f.ooms);
    }
    cJSON_Delete(j);
}

static void test_least_headroom_rank(void)
{
    cJSON *caps = read_json("gpu/ranks/caps.json");
    int64_t want = num(caps, "least_headroom_rank");
    cJSON_Delete(caps);
    CU_ASSERT_EQUAL_FATAL(want, 1);
    rank_facts_t f[NRANKS];
    for (int r = 0; r < NRANKS; r++)
        f[r] = read_facts(r);
    /* not the largest stage, not the rank that runs out of memory */
    CU_ASSERT(f[0].peak_reserved > f[1].peak_reserved && f[1].peak_reserved > f[2].peak_reserved);
    CU_ASSERT(f[1].cap - f[1].peak_reserved < f[0].cap - f[0].peak_reserved);
    CU_ASSERT(f[1].cap - f[1].peak_reserved < f[2].cap - f[2].peak_reserved);

    cJSON *j = report_json("");
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(j, "job");
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    CU_ASSERT_EQUAL(num(job, "least_headroom_run"), want);
    CU_ASSERT_EQUAL(num(job, "first_oom_run"), 2);
    cJSON_Delete(j);

    char out[1 << 14];
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s", fsc_test_fragscope(), job_db()),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "rank 1"));
}

static void test_rank2_external_oom(void)
{
    rank_facts_t f = read_facts(2);
    CU_ASSERT_FATAL(f.raw_bytes > 0);
    CU_ASSERT(f.ooms >= 1);
    cJSON *j = report_json("--rank 2");
    const cJSON *e = rank_entry(j, 2);
    const cJSON *cause = cJSON_GetObjectItemCaseSensitive(e, "first_oom_cause");
    CU_ASSERT_FATAL(cJSON_IsString(cause));
    CU_ASSERT_STRING_EQUAL(cause->valuestring, "external");
    CU_ASSERT_EQUAL(num(j, "detail_run"), 2);
    const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ooms"), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItemCaseSensitive(o, "cause")->valuestring, "external");
    int64_t ext = num(o, "external_bytes");
    /* the raw allocation plus what the process measured outside its allocator before it */
    int64_t want = f.raw_bytes + f.outside_before;
    CU_ASSERT(ext >= want - PAGE && ext <= want + PAGE);
    /* and the same figure measured by the process once the allocation was made, and after
     * the OOM (the other ranks held still meanwhile: they waited for rank 2) */
    CU_ASSERT(ext >= f.outside_after_raw - PAGE && ext <= f.outside_after_raw + PAGE);
    CU_ASSERT(ext >= f.external_at_end - PAGE && ext <= f.external_at_end + PAGE);
    cJSON_Delete(j);

    /* ranks 0 and 1 never ran out of memory */
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(job_db(), &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CU_ASSERT_EQUAL_FATAL(
        sqlite3_prepare_v2(db, "SELECT run, count(*) FROM main.ooms GROUP BY run", -1, &st, NULL),
        SQLITE_OK);
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        CU_ASSERT_EQUAL(sqlite3_column_int64(st, 0), 2);
        rows++;
    }
    CU_ASSERT_EQUAL(rows, 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static const fsc_test_case_t k_tests[] = {
    {"every rank's peaks are its process's own statistics", test_peaks_are_each_process_stats},
    {"the least-headroom rank is the one the caps make it", test_least_headroom_rank},
    {"rank 2's OOM is external, within a page of the raw cudaMalloc", test_rank2_external_oom},
    {NULL, NULL},
};

FSC_TEST_MAIN("gpu_ranks", k_tests)
