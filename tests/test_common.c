/*
 * test_common.c — the common base: size parsing and formatting, the error
 * model, output files, the UTF-8 sanitiser.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/common.h"
#include "fragscope/events.h"
#include "fsc/utf8.h"
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

/* An input is recognised by identity under every name; others pass. */
static void test_outfile_guards_inputs(void)
{
    fsc_err_t e;
    const char *in = fsc_test_path("guarded.in");
    FILE *f = fopen(in, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("input", f);
    fclose(f);
    char hard[1100], sym[1100];
    snprintf(hard, sizeof hard, "%s.hard", in);
    snprintf(sym, sizeof sym, "%s.sym", in);
    unlink(hard);
    unlink(sym);
    CU_ASSERT_EQUAL_FATAL(link(in, hard), 0);
    CU_ASSERT_EQUAL_FATAL(symlink(in, sym), 0);
    fsc_outfile_t o;
    CU_ASSERT_EQUAL(fsc_outfile_init(&o, in, &e), 0); /* not guarded yet */
    fsc_outfile_abort(&o);
    CU_ASSERT_EQUAL(fsc_outfile_guard_input(in), 0);
    CU_ASSERT_EQUAL(fsc_outfile_init(&o, in, &e), FSC_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "the output is the input"));
    CU_ASSERT_EQUAL(fsc_outfile_init(&o, hard, &e), FSC_EUSAGE);
    CU_ASSERT_EQUAL(fsc_outfile_init(&o, sym, &e), FSC_EUSAGE);
    CU_ASSERT_EQUAL(fsc_outfile_check(fsc_test_path("other.out"), &e), 0);
    CU_ASSERT_EQUAL(fsc_outfile_guard_input(fsc_test_path("does-not-exist")), 0);
    fsc_outfile_guard_clear();
    CU_ASSERT_EQUAL(fsc_outfile_check(in, &e), 0);
}

/* What an interrupting signal's handler calls: every live temporary goes,
 * committed outputs stay. */
static void test_outfile_remove_all(void)
{
    fsc_err_t e;
    fsc_outfile_t a, b, c;
    CU_ASSERT_EQUAL_FATAL(fsc_outfile_init(&a, fsc_test_path("ra.out"), &e), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_outfile_init(&b, fsc_test_path("rb.out"), &e), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_outfile_init(&c, fsc_test_path("rc.out"), &e), 0);
    const fsc_outfile_t *all[] = {&a, &b, &c};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(all[i]->tmp_path, "w");
        fputs("x", f);
        fclose(f);
    }
    CU_ASSERT_EQUAL(fsc_outfile_commit(&b, &e), 0);
    const char *first = fsc_outfile_remove_all();
    CU_ASSERT_PTR_NOT_NULL(first);
    CU_ASSERT_FALSE(fsc_test_file_exists(a.tmp_path));
    CU_ASSERT_FALSE(fsc_test_file_exists(c.tmp_path));
    CU_ASSERT_TRUE(fsc_test_file_exists(b.path));
    CU_ASSERT_PTR_NULL(fsc_outfile_remove_all()); /* nothing left */
    fsc_outfile_abort(&a);
    fsc_outfile_abort(&c);
}

/* A recording's file under its name at once, and only one writer. */
static void test_outfile_claim(void)
{
    fsc_err_t e;
    const char *p = fsc_test_path("claimed.rec");
    fsc_outfile_t o1, o2, o3;
    CU_ASSERT_EQUAL_FATAL(fsc_outfile_init(&o1, p, &e), 0);
    int fd1 = open(o1.tmp_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_TRUE_FATAL(fd1 >= 0);
    CU_ASSERT_EQUAL(write(fd1, "one", 3), 3);
    CU_ASSERT_EQUAL_FATAL(fsc_outfile_claim(&o1, fd1, &e), 0);
    CU_ASSERT_TRUE(fsc_test_file_exists(p));
    CU_ASSERT_FALSE(fsc_test_file_exists(o1.tmp_path));

    CU_ASSERT_EQUAL_FATAL(fsc_outfile_init(&o2, p, &e), 0);
    int fd2 = open(o2.tmp_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_TRUE_FATAL(fd2 >= 0);
    CU_ASSERT_EQUAL(fsc_outfile_claim(&o2, fd2, &e), FSC_EBUSY);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "another process is recording"));
    CU_ASSERT_FALSE(fsc_test_file_exists(o2.tmp_path));
    close(fd2);
    size_t n = 0;
    char *txt = fsc_test_slurp(p, &n);
    CU_ASSERT_TRUE(txt != NULL && n == 3 && memcmp(txt, "one", 3) == 0);
    free(txt);

    /* once the first writer is gone, the path is free again */
    close(fd1);
    CU_ASSERT_EQUAL_FATAL(fsc_outfile_init(&o3, p, &e), 0);
    int fd3 = open(o3.tmp_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_EQUAL(write(fd3, "three", 5), 5);
    CU_ASSERT_EQUAL(fsc_outfile_claim(&o3, fd3, &e), 0);
    close(fd3);
    txt = fsc_test_slurp(p, &n);
    CU_ASSERT_TRUE(txt != NULL && n == 5 && memcmp(txt, "three", 5) == 0);
    free(txt);
}

/* The sanitiser against Python's bytes.decode("utf-8", "replace") (the
 * expected outputs and counts were taken from it): maximal subparts, so a
 * cut sequence is one U+FFFD, a surrogate or an overlong form one per
 * byte. */
static void test_utf8_sanitize(void)
{
#define R "\xef\xbf\xbd"
    static const struct {
        const char *in;
        size_t n;
        const char *out;
        size_t replaced;
    } cases[] = {
        {"plain ascii", 11, "plain ascii", 0},
        {"h\xc3\xa9llo \xf0\x9f\x99\x82", 11, "h\xc3\xa9llo \xf0\x9f\x99\x82", 0},
        {"bad \xff byte", 10, "bad " R " byte", 1},
        {"cut \xe2\x82", 6, "cut " R, 1},
        {"cut \xe2\x82(x", 8, "cut " R "(x", 1},
        {"\xed\xa0\x80", 3, R R R, 3},         /* a lone surrogate, U+D800 */
        {"\xed\x9f\xbf", 3, "\xed\x9f\xbf", 0}, /* U+D7FF, just below */
        {"\xc0\xaf", 2, R R, 2},                /* overlong '/' */
        {"\xe0\x80\xaf", 3, R R R, 3},
        {"\xf0\x8f\xbf\xbf", 4, R R R R, 4},
        {"\xf4\x90\x80\x80", 4, R R R R, 4},    /* above U+10FFFF */
        {"\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf", 0},
        {"\xf0\x9f\x99", 3, R, 1},
        {"\x80\xbf", 2, R R, 2},
        {"\xf5", 1, R, 1},
        {"a\0b", 3, "a\0b", 0},                 /* NUL is a character */
        {"", 0, "", 0},
    };
#undef R
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        size_t n = 99, replaced = 99;
        CU_ASSERT_EQUAL_FATAL(
            fsc__utf8_sanitize(cases[i].in, cases[i].n, &out, &n, &replaced), 0);
        /* the lengths: strlen, except past the NUL of "a\0b" */
        size_t want = cases[i].replaced == 0 ? cases[i].n : strlen(cases[i].out);
        CU_ASSERT_EQUAL(n, want);
        CU_ASSERT_TRUE(n == want && memcmp(out, cases[i].out, want) == 0 && out[n] == '\0');
        CU_ASSERT_EQUAL(replaced, cases[i].replaced);
        CU_ASSERT_EQUAL(fsc__utf8_invalid(cases[i].in, cases[i].n), cases[i].replaced);
        CU_ASSERT_EQUAL(fsc__utf8_invalid(out, n), 0);
        free(out);
    }
    /* a sequence cut by the length given, not by a NUL */
    CU_ASSERT_EQUAL(fsc__utf8_seq((const unsigned char *)"\xc3\xa9", 1), -1);
    CU_ASSERT_EQUAL(fsc__utf8_seq((const unsigned char *)"\xc3\xa9", 2), 2);
    CU_ASSERT_EQUAL(fsc__utf8_seq((const unsigned char *)"", 0), 0);
}

/* Paths that cannot be read or written are bad input (FSC_ENOENT,
 * FSC_EINVAL: exit 2), each with a message naming the path. */
static void test_path_checks(void)
{
    fsc_err_t e = {0};
    const char *dir = fsc_test_tmpdir();
    const char *file = fsc_test_path("exists.txt");
    FILE *f = fopen(file, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
    CU_ASSERT_EQUAL(fsc_infile_check(file, &e), 0);
    CU_ASSERT_EQUAL(fsc_infile_check("/dev/null", &e), 0); /* a device: read as a stream */
    CU_ASSERT_EQUAL(fsc_infile_check(fsc_test_path("nope.txt"), &e), FSC_ENOENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&e), "nope.txt: no such file"));
    CU_ASSERT_EQUAL(fsc_infile_check(dir, &e), FSC_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&e), "is a directory, not a file"));
    CU_ASSERT_EQUAL(fsc_outfile_check_dest(fsc_test_path("new.db"), &e), 0);
    CU_ASSERT_EQUAL(fsc_outfile_check_dest(file, &e), 0); /* replaced when written */
    CU_ASSERT_EQUAL(fsc_outfile_check_dest("plain-name-here.db", &e), 0); /* in "." */
    CU_ASSERT_EQUAL(fsc_outfile_check_dest(dir, &e), FSC_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&e), "is a directory; name a file to write"));
    CU_ASSERT_EQUAL(fsc_outfile_check_dest(fsc_test_path("nodir/x.db"), &e), FSC_ENOENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&e), "/nodir does not exist"));
    char under_file[1200];
    snprintf(under_file, sizeof under_file, "%s/x.db", file);
    CU_ASSERT_EQUAL(fsc_outfile_check_dest(under_file, &e), FSC_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&e), "exists.txt is not a folder"));
    /* fsc_outfile_init refuses them too, creating nothing */
    fsc_outfile_t o;
    CU_ASSERT_EQUAL(fsc_outfile_init(&o, dir, &e), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_outfile_remove_all(), NULL);
}

static const fsc_test_case_t k_tests[] = {
    {"size_parse_units", test_size_parse_units},
    {"size_parse_rejects", test_size_parse_rejects},
    {"size_format", test_size_format},
    {"error_model", test_error_model},
    {"event_names", test_event_names},
    {"outfile_commit_and_abort", test_outfile_commit_and_abort},
    {"outfile_guards_inputs", test_outfile_guards_inputs},
    {"outfile_remove_all", test_outfile_remove_all},
    {"outfile_claim", test_outfile_claim},
    {"utf8_sanitize", test_utf8_sanitize},
    {"path_checks", test_path_checks},
    {NULL, NULL},
};

FSC_TEST_MAIN("common", k_tests)
