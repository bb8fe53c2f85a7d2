/*
 * scratch_probe.c — a one-test suite that writes a file into its scratch
 * directory and passes, or fails when FSC_PROBE_FAIL is set: what
 * test_fsc_test.c runs to see that a passing suite removes its scratch
 * directory and a failing one keeps it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fsc_test.h"

static void test_write_scratch(void)
{
    FILE *f = fopen(fsc_test_path("left.txt"), "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("scratch\n", f);
    fclose(f);
    CU_ASSERT_PTR_NULL(getenv("FSC_PROBE_FAIL"));
}

static const fsc_test_case_t tests[] = {
    {"write_scratch", test_write_scratch},
    {NULL, NULL},
};

FSC_TEST_MAIN("scratch_probe", tests)
