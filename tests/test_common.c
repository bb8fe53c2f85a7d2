/*
 * test_common.c — the common base: size parsing and formatting, the error
 * model, output files.
 */
#include <stdio.h>
#include <string.h>

#include "fragscope/common.h"
#include "fragscope/events.h"
#include "fsc_test.h"

static void test_size_parse_units(void)
{
    static const struct { const char *s; uint64_t v; } ok[] = {
        {"512", 512},
        {"0", 0},
        {"4KiB", 4096},
        {"4k", 4096},
        {"4KB", 4000},
        {"1.5GiB", 1610612736ull},
        {"18GB", 18000000000ull},
        {"18GiB", 19327352832ull},
        {"512MiB", 536870912ull},
        {"512 mib", 536870912ull},
        {"2TiB", 2199023255552ull},
        {"100B", 100},
        {" 7 ", 7},
        {".5KiB", 512},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 1234567;
        CU_ASSERT_EQUAL_FATAL(fsc_size_parse(ok[i].s, &v), 0);
        CU_ASSERT_EQUAL(v, ok[i].v);
    }
}

static void test_size_parse_rejects(void)
{
    static const char *bad[] = {"", "GiB", "-1", "1.2.3", "12XB", "inf", "nan", "0x10",
                                "1e3", "99999999999TiB", "5 GiB extra", "1KiBB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 0;
        CU_ASSERT_EQUAL(fsc_size_parse(bad[i], &v), FSC_EINVAL);
    }
    uint64_t v;
    CU_ASSERT_EQUAL(fsc_size_parse(NULL, &v), FSC_EINVAL);
}

static void test_size_format(void)
{
    char b[32];
    CU_ASSERT_STRING_EQUAL(fsc_size_format(0, b, sizeof b), "0 B");
    CU_ASSERT_STRING_EQUAL(fsc_size_format(1023, b, sizeof b), "1023 B");
    CU_ASSERT_STRING_EQUAL(fsc_size_format(1024, b, sizeof b), "1.00 KiB");
    CU_ASSERT_STRING_EQUAL(fsc_size_format(22020096000ull, b, sizeof b), "20.51 GiB");
    CU_ASSERT_STRING_EQUAL(fsc_size_format(20971520, b, sizeof b), "20.00 MiB");
}

static void test_error_model(void)
{
    CU_ASSERT_STRING_EQUAL(fsc_err_name(FSC_EFORMAT), "EFORMAT");
    CU_ASSERT_STRING_EQUAL(fsc_strerror(FSC_EOOM), "out of device memory");
    CU_ASSERT_STRING_EQUAL(fsc_err_name(-999), "EUNKNOWN");
    fsc_err_t e;
    fsc_err_clear(&e);
    CU_ASSERT_EQUAL(e.code, 0);
    CU_ASSERT_EQUAL(fsc_err_set(&e, FSC_EIO, "%s: cannot read", "x.fstrace"), FSC_EIO);
    CU_ASSERT_STRING_EQUAL(fsc_err_msg(&e), "x.fstrace: cannot read");
    fsc_err_t f;
    CU_ASSERT_EQUAL(fsc_err_copy(&f, &e), FSC_EIO);
    CU_ASSERT_STRING_EQUAL(f.msg, e.msg);
    fsc_err_set(&e, FSC_ECONFIG, NULL);
    CU_ASSERT_STRING_EQUAL(fsc_err_msg(&e), "bad allocator configuration");
    CU_ASSERT_EQUAL(fsc_err_set(NULL, FSC_EINVAL, "ignored"), FSC_EINVAL);
}

static void test_event_names(void)
{
    CU_ASSERT_STRING_EQUAL(fsc_event_type_name(FSC_EV_ALLOC), "alloc");
    CU_ASSERT_STRING_EQUAL(fsc_event_type_name(FSC_EV_SEGMENT_UNMAP), "segment_unmap");
    CU_ASSERT_STRING_EQUAL(fsc_event_type_name(99), "unknown");
    for (int t = 1; t < FSC_EV__COUNT; t++)
        CU_ASSERT_EQUAL(fsc_event_type_from_name(fsc_event_type_name(t)), t);
    CU_ASSERT_EQUAL(fsc_event_type_from_name("nope"), 0);
}

static void test_outfile_commit_and_abort(void)
{
    fsc_outfile_t o;
    fsc_err_t e;
    const char *p = fsc_test_path("out.txt");
    CU_ASSERT_EQUAL_FATAL(fsc_outfile_init(&o, p, &e), 0);
    FILE *f = fopen(o.tmp_path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("hello", f);
    fclose(f);
    CU_ASSERT_FALSE(fsc_test_file_exists(p));
    CU_ASSERT_EQUAL(fsc_outfile_commit(&o, &e), 0);
    CU_ASSERT_TRUE(fsc_test_file_exists(p));
    CU_ASSERT_FALSE(fsc_test_file_exists(o.tmp_path));

    fsc_outfile_t o2;
    CU_ASSERT_EQUAL_FATAL(fsc_outfile_init(&o2, fsc_test_path("never.txt"), &e), 0);
    f = fopen(o2.tmp_path, "w");
    fclose(f);
    fsc_outfile_abort(&o2);
    CU_ASSERT_FALSE(fsc_test_file_exists(o2.tmp_path));
    CU_ASSERT_FALSE(fsc_test_file_exists(o2.path));
    CU_ASSERT_EQUAL(fsc_outfile_init(&o2, "", &e), FSC_EINVAL);
}

static const fsc_test_case_t k_tests[] = {
    {"size_parse_units", test_size_parse_units},
    {"size_parse_rejects", test_size_parse_rejects},
    {"size_format", test_size_format},
    {"error_model", test_error_model},
    {"event_names", test_event_names},
    {"outfile_commit_and_abort", test_outfile_commit_and_abort},
    {NULL, NULL},
};

FSC_TEST_MAIN("common", k_tests)
