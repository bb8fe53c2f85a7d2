/*
 * settings_extra.c — the settings table with one made-up entry, test_knob_mb
 * (allocator/settings.c under FSC_SETTINGS_TEST_EXTRA, built into this
 * program only, tests/CMakeLists.txt): the parser, the printer, the
 * range check, the "not modelled" list and the documentation take it with
 * no other edit. Its own main (not fsc_testlib, which links the ordinary
 * allocator library).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "fragscope/allocator.h"

static void test_made_up_setting(void)
{
    size_t idx = 0, n = 0;
    const fsc_alloc_setting_t *s = fsc_alloc_setting_find("test_knob_mb", &idx);
    fsc_alloc_settings(&n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(idx, n - 1);

    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    char buf[512];
    CU_ASSERT_EQUAL_FATAL(
        fsc_alloc_config_parse("max_split_size_mb:64, test_knob_mb:16", &c, &e), 0);
    CU_ASSERT_TRUE(fsc_alloc_config_is_set(&c, idx));
    CU_ASSERT_DOUBLE_EQUAL(c.extra[idx], 16.0, 0.0);
    CU_ASSERT_EQUAL(fsc_alloc_config_format(&c, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "max_split_size_mb:64,test_knob_mb:16");
    /* what-if's validation is the parser: out of range and bad values fail */
    CU_ASSERT_EQUAL(fsc_alloc_config_parse("test_knob_mb:2", &c, &e), FSC_ECONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "bad value '2' for test_knob_mb"));
    CU_ASSERT_EQUAL(fsc_alloc_config_parse("test_knob_mb:x", &c, &e), FSC_ECONFIG);
    /* it can change placement and nothing models it: named */
    CU_ASSERT_EQUAL(fsc_alloc_config_unmodelled_str("test_knob_mb:8", buf, sizeof buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "test_knob_mb");
    /* and documented */
    static char doc[1 << 16];
    CU_ASSERT_EQUAL(fsc_alloc_settings_doc(doc, sizeof doc), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(doc, "| `test_knob_mb` | integer 4..64 | after 2.11 ¹ |"));
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("settings_extra", NULL, NULL);
    if (s == NULL || CU_add_test(s, "made_up_setting", test_made_up_setting) == NULL) {
        CU_cleanup_registry();
        return 1;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed != 0;
}
