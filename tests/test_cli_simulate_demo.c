/*
 * test_cli_simulate_demo.c — `fragscope demo`: the whole pipeline on the
 * simulated fragmentation OOM (gpt2, 17 GiB cap, default settings; see
 * docs/workloads.md): every output file is there, the OOM is diagnosed as
 * fragmentation, and the what-if replay found settings that avoid it.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc_test.h"

static char g_out[1 << 16];

static void test_demo_pipeline(void)
{
    const char *dir = fsc_test_path("demo");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s demo -o %s", fsc_test_fragscope(), dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "OOM at step 1 (step/backward/loss): tried to allocate 1.53 GiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "diagnosis: fragmentation"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "serves it:  expandable_segments:True — serves the "
                                         "request that failed at 17.00 GiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "expandable_segments:True"));

    static const char *files[] = {"run.fstrace", "run.db", "report.md", "report.html"};
    for (int i = 0; i < 4; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        CU_ASSERT_TRUE(fsc_test_file_exists(p));
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, p)); /* the paths are printed */
    }

    /* the database agrees with the simulation */
    char db[1024];
    snprintf(db, sizeof db, "%s/run.db", dir);
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "SELECT cause, requested, allocated FROM ooms", -1, &st, NULL),
                          SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(st, 0), "fragmentation");
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 1), 1646821376); /* 8 x 1024 x 50257 x 4 */
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 2), 16310773248); /* 15.19 GiB at the OOM */
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h,
                                             "SELECT count(*) FROM suggestions WHERE avoids_oom = 1 "
                                             "AND config LIKE '%expandable_segments:True%'",
                                             -1, &st, NULL),
                          SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT(sqlite3_column_int64(st, 0) >= 1);
    sqlite3_finalize(st);
    sqlite3_close(h);

    /* running it again replaces the files */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "%s demo -o %s", fsc_test_fragscope(), dir), 0);
    char ls[4096];
    CU_ASSERT_EQUAL(fsc_test_sh(ls, sizeof ls, "ls %s", dir), 0);
    CU_ASSERT_PTR_NULL(strstr(ls, ".tmp"));
}

static void test_demo_bad_options(void)
{
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "%s demo --bogus", fsc_test_fragscope()), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "unknown option '--bogus'"));
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "%s demo -o", fsc_test_fragscope()), 2);
    /* a directory that cannot be created */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "%s demo -o %s", fsc_test_fragscope(),
                                fsc_test_path("missing/parent/dir")),
                    2);
}

static const fsc_test_case_t k_tests[] = {
    {"demo pipeline", test_demo_pipeline},
    {"demo bad options", test_demo_bad_options},
    {NULL, NULL},
};

FSC_TEST_MAIN("cli_demo", k_tests)
