/*
 * test_torch_module.c — fragscope_torch.py, the Python side of the PyTorch
 * shim: module tags relative to the calling module, backward tags, optimizer
 * tags and step markers, record()'s late devices and stop()'s words on the
 * entries left out (tests/torch/check_fragscope_torch.py, with
 * stand-ins for torch and the library, so it runs without a GPU).
 */
#include <string.h>

#include "fsc_test.h"

static void test_watch_tags_and_markers(void)
{
    char out[4096];
    int rc = fsc_test_sh(out, sizeof out, "command -v python3 >/dev/null || exit 77; python3 %s %s",
                         FSC_SOURCE_DIR "/tests/torch/check_fragscope_torch.py",
                         FSC_SOURCE_DIR "/tools/torch/fragscope_torch.py");
    if (rc == 77) {
        printf("\n    python3 not found: skipped\n");
        return;
    }
    if (rc != 0)
        printf("\n%s\n", out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "tags and markers ok"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "late devices left to their first entry, entries left out reported"));
}

static const fsc_test_case_t k_tests[] = {
    {"watch_tags_and_markers", test_watch_tags_and_markers},
    {NULL, NULL},
};

FSC_TEST_MAIN("torch_module", k_tests)
