/*
 * test_gpu_runs.c — the runs recorded on an H200 (sample_traces/, made by
 * bench/gpu/run.sh) through the command line, against what PyTorch
 * itself reported in their .stats.json files and training logs:
 *   - a GPT-2 run under a 14.04 GiB cap that PyTorch failed with 1.66 GiB
 *     "reserved but unallocated" is diagnosed `fragmentation`, with the
 *     segments and the live blocks pinning them named;
 *   - what-if, given only the uncapped run, predicts capped runs' outcome
 *     and peak reserved exactly (bench/gpu/results/cap*.json).
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "fragscope/common.h"
#include "fsc_test.h"

#define SAMPLES FSC_SOURCE_DIR "/sample_traces/"

static sqlite3 *open_db(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static int64_t q_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void q_text(sqlite3 *db, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_text(st, 0) != NULL)
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

static void test_h200_fragmentation_oom(void)
{
    const char *db_path = fsc_test_path("cap14g.db");
    char out[8192];
    int rc = fsc_test_sh(out, sizeof out, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s",
                         fsc_test_fragscope(), SAMPLES "gpt2_h200_cap14g.pickle", db_path);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    sqlite3 *db = open_db(db_path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    /* gpt2_h200_cap14g.stats.json: allocated_bytes.all.peak, reserved_bytes.all.peak */
    CU_ASSERT_EQUAL(q_int(db, "select value from summary where key = 'peak_allocated_bytes'"),
                    14438628352LL);
    CU_ASSERT_EQUAL(q_int(db, "select value from summary where key = 'peak_reserved_bytes'"),
                    14562623488LL);
    CU_ASSERT_EQUAL(q_int(db, "select count(*) from ooms"), 1);
    char cause[64];
    q_text(db, "select cause from ooms", cause, sizeof cause);
    CU_ASSERT_STRING_EQUAL(cause, "fragmentation");
    /* PyTorch's message: "Of the allocated memory 11.80 GiB is allocated by
     * PyTorch, and 1.66 GiB is reserved by PyTorch but unallocated." and
     * "Tried to allocate 1.36 GiB" (the segment it could not create). */
    char b[32];
    int64_t alloc = q_int(db, "select allocated from ooms");
    int64_t resv = q_int(db, "select reserved from ooms");
    CU_ASSERT_STRING_EQUAL(fsc_size_format((uint64_t)alloc, b, sizeof b), "11.80 GiB");
    CU_ASSERT_STRING_EQUAL(fsc_size_format((uint64_t)(resv - alloc), b, sizeof b), "1.66 GiB");
    CU_ASSERT_STRING_EQUAL(fsc_size_format((uint64_t)q_int(db, "select segment_size from ooms"), b,
                                           sizeof b), "1.36 GiB");
    CU_ASSERT_EQUAL(q_int(db, "select capacity_inferred from ooms"), 1);
    /* The evidence: segments holding free space, and the live blocks pinning them. */
    CU_ASSERT(q_int(db, "select count(*) from oom_segments") >= 1);
    CU_ASSERT(q_int(db, "select count(*) from oom_pinning_blocks") >= 1);
    CU_ASSERT(q_int(db, "select count(*) from oom_pinning_blocks p join tag_paths t on t.id = p.tag "
                        "where t.path like '%adam.py%'") >= 1);
    /* analyze asked what-if: expandable segments avoid it even under the
     * capacity's lower bound, as they did on the H200 at 14.04 GiB
     * (bench/gpu/results/cap0.94_expandable_segments_True.json). */
    CU_ASSERT_EQUAL(q_int(db, "select avoids_oom from suggestions "
                              "where config = 'expandable_segments:True'"), 1);
    sqlite3_close(db);

    rc = fsc_test_sh(out, sizeof out, "%s report %s", fsc_test_fragscope(), db_path);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fragmentation"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "pinned by"));
}

static void test_h200_whatif_verify(void)
{
    char out[4096];
    int rc = fsc_test_sh(out, sizeof out, "%s whatif %s --verify", fsc_test_fragscope(),
                         SAMPLES "gpt2_h200_uncapped.pickle");
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "16039018496 recorded, 16039018496 replayed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "8977 of 8977"));
}

/* Replay the uncapped run at a capacity and check each setting's outcome
 * and peak reserved against the capped run PyTorch really made. */
typedef struct capped_run {
    const char *config;
    int oom;
    long long peak_reserved;
} capped_run_t;

static void check_capped(double cap_gib, const capped_run_t *runs, size_t n)
{
    char cmd[2048], out[16384];
    int len = snprintf(cmd, sizeof cmd, "%s whatif %s --capacity %llu --format json",
                       fsc_test_fragscope(), SAMPLES "gpt2_h200_uncapped.pickle",
                       (unsigned long long)(cap_gib * 1073741824.0));
    for (size_t i = 0; i < n; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --config '%s'", runs[i].config);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s", cmd), 0);
    cJSON *root = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(root), (int)n);
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_GetArrayItem(root, (int)i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(o, "config")->valuestring, runs[i].config);
        CU_ASSERT_EQUAL(cJSON_IsTrue(cJSON_GetObjectItem(o, "oom")), runs[i].oom);
        CU_ASSERT_EQUAL((long long)cJSON_GetObjectItem(o, "peak_reserved_bytes")->valuedouble,
                        runs[i].peak_reserved);
    }
    cJSON_Delete(root);
}

/* Figures from bench/gpu/results/cap0.94_*.json and cap0.97_*.json. */
static void test_h200_whatif_predicts_capped_runs(void)
{
    static const capped_run_t at_094[] = {
        {"", 1, 14562623488LL},
        {"expandable_segments:True", 0, 14355005440LL},
        {"max_split_size_mb:128", 1, 15074328576LL},
        {"garbage_collection_threshold:0.6", 1, 14818476032LL},
        {"roundup_power2_divisions:4", 1, 14881390592LL},
    };
    static const capped_run_t at_097[] = {
        {"", 1, 14562623488LL},
        {"max_split_size_mb:128", 0, 15556673536LL},
    };
    check_capped(14.041, at_094, sizeof at_094 / sizeof at_094[0]);
    check_capped(14.489, at_097, sizeof at_097 / sizeof at_097[0]);
}

static const fsc_test_case_t k_tests[] = {
    {"h200_fragmentation_oom", test_h200_fragmentation_oom},
    {"h200_whatif_verify", test_h200_whatif_verify},
    {"h200_whatif_predicts_capped_runs", test_h200_whatif_predicts_capped_runs},
    {NULL, NULL},
};

FSC_TEST_MAIN("gpu_runs", k_tests)
