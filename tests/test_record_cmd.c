/*
 * test_record_cmd.c — `fragscope record -- python PROGRAM` without torch or
 * a GPU (tests/torch/check_record_cmd.py, with the stand-in torch of
 * tests/torch/fake): the bootstrap runs the environment's own
 * sitecustomize, the recorder attaches once `import torch` has finished and
 * initializes nothing of CUDA, the memory fraction and the OOM's Python call
 * site reach it, subprocesses inherit it and forked children stop, the
 * summary names the traces the processes began and the command that comes
 * next, `python -m fragscope_torch record` does the same, and a program that
 * cannot be recorded (no torch, a torch without CUDA, an extension that does
 * not build, the recorder's files missing) gets one line and exit 2.
 */
#include <string.h>

#include "fsc_test.h"

static void test_record_cmd(void)
{
    static char out[16384];
    int rc = fsc_test_sh(out, sizeof out,
                         "command -v python3 >/dev/null || exit 77; python3 %s %s %s",
                         FSC_SOURCE_DIR "/tests/torch/check_record_cmd.py", fsc_test_fragscope(),
                         fsc_test_path("record_cmd"));
    if (rc == 77) {
        printf("\n    python3 not found: skipped\n");
        return;
    }
    if (rc != 0)
        printf("\n%s\n", out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "record cmd ok"));
}

static const fsc_test_case_t k_tests[] = {
    {"record_cmd", test_record_cmd},
    {NULL, NULL},
};

FSC_TEST_MAIN("record_cmd", k_tests)
