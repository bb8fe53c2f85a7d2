/*
 * test_fsc_test.c — the shared test helpers themselves: a suite that passes
 * leaves nothing under the temporary directory, one that fails keeps its
 * scratch directory and names it (docs/TESTING.md).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsc_test.h"

/* Entries of dir other than . and .., and the first one's name. */
static int entries(const char *dir, char *first, size_t cap)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n++ == 0 && first != NULL)
            snprintf(first, cap, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

static void test_pass_removes_scratch(void)
{
    const char *base = fsc_test_path("pass");
    CU_ASSERT_EQUAL_FATAL(mkdir(base, 0700), 0);
    char out[4096];
    int rc = fsc_test_sh(out, sizeof out, "TMPDIR='%s' '%s/tests/fsc_scratch_probe' 2>&1",
                         base, FSC_BINARY_DIR);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(entries(base, NULL, 0), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "scratch directory kept"));
}

static void test_failure_keeps_scratch(void)
{
    const char *base = fsc_test_path("fail");
    CU_ASSERT_EQUAL_FATAL(mkdir(base, 0700), 0);
    char out[4096];
    int rc = fsc_test_sh(out, sizeof out,
                         "FSC_PROBE_FAIL=1 TMPDIR='%s' '%s/tests/fsc_scratch_probe' 2>&1", base,
                         FSC_BINARY_DIR);
    CU_ASSERT_EQUAL(rc, 1);
    char name[256] = "";
    CU_ASSERT_EQUAL_FATAL(entries(base, name, sizeof name), 1);
    CU_ASSERT_EQUAL(strncmp(name, "fsc-test-", 9), 0);
    char kept[1024];
    snprintf(kept, sizeof kept, "%s/%s", base, name);
    char msg[1200];
    snprintf(msg, sizeof msg, "scratch directory kept for inspection: %s\n", kept);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, msg));
    char file[1100];
    snprintf(file, sizeof file, "%s/left.txt", kept);
    CU_ASSERT(fsc_test_file_exists(file));
}

static const fsc_test_case_t tests[] = {
    {"pass_removes_scratch", test_pass_removes_scratch},
    {"failure_keeps_scratch", test_failure_keeps_scratch},
    {NULL, NULL},
};

FSC_TEST_MAIN("fsc_test", tests)
