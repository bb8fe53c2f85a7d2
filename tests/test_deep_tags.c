/*
 * test_deep_tags.c — tag trees of Python frames 20 000 deep stay linear in
 * the input: a snapshot of 20 allocations with distinct 20 000-frame
 * stacks (6.7 MB) and a trace whose tags are one 20 000-deep chain go
 * through `fragscope import` and `fragscope analyze` within explicit bounds
 * on peak RSS (the child's, from wait4) and on the database's size. Before
 * tags were stored as parent links, the trace needed 4.6 GB of RAM and a
 * 4.9 GB database, and the snapshot went past 24 GB. The inputs are
 * generated here, not committed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fragscope/rundb.h"
#include "fsc_test.h"
#include "pickle.h"

/* Sanitizer builds keep shadow memory and quarantines: allow them more. */
#ifdef FSC_TEST_SANITIZED
#define RSS_SNAP_KB (2048L * 1024)
#define RSS_TRACE_KB (512L * 1024)
#else
/* measured: 203 MB and 14 MB (they were > 24 GB and 4.6 GB) */
#define RSS_SNAP_KB (320L * 1024)
#define RSS_TRACE_KB (48L * 1024)
#endif

#define DEPTH 20000
#define MiB (1024ull * 1024)

static long long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* Stack limit for the next run_measured child in KiB (0: inherited). */
static long g_stack_kb;

/* Run fragscope with args (NULL-terminated): exit status, peak RSS. */
static int run_measured(const char *const *args, long *maxrss_kb)
{
    return fsc_test_run_fragscope(args, NULL, g_stack_kb, maxrss_kb);
}

/* A snapshot: one 1 GiB segment, then nallocs allocations of 1 MiB, each
 * with its own DEPTH-frame stack (innermost first). Frame j of allocation
 * k is deep.py:(k * DEPTH + j):f<j>, so no two stacks share a frame and
 * the tag tree has nallocs * DEPTH nodes in nallocs chains. */
static void write_deep_snapshot(const char *path, int nallocs)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fsc__pw_t *w = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc__pw_open(f, &w), 0);
    const uint64_t base = 0x7f0000000000ull;
    fsc__pw_dict_open(w);
    fsc__pw_cstr(w, "segments");
    fsc__pw_list_open(w);
    fsc__pw_list_close(w);
    fsc__pw_cstr(w, "device_traces");
    fsc__pw_list_open(w);
    fsc__pw_list_open(w);
    fsc__pw_dict_open(w);
    fsc__pw_cstr(w, "action");
    fsc__pw_cstr(w, "segment_alloc");
    fsc__pw_cstr(w, "addr");
    fsc__pw_uint(w, base);
    fsc__pw_cstr(w, "size");
    fsc__pw_uint(w, 1024 * MiB);
    fsc__pw_cstr(w, "stream");
    fsc__pw_int(w, 0);
    fsc__pw_cstr(w, "time_us");
    fsc__pw_int(w, 1);
    fsc__pw_dict_close(w);
    char name[32];
    for (int k = 0; k < nallocs; k++) {
        fsc__pw_dict_open(w);
        fsc__pw_cstr(w, "action");
        fsc__pw_cstr(w, "alloc");
        fsc__pw_cstr(w, "addr");
        fsc__pw_uint(w, base + (uint64_t)k * MiB);
        fsc__pw_cstr(w, "size");
        fsc__pw_uint(w, MiB);
        fsc__pw_cstr(w, "stream");
        fsc__pw_int(w, 0);
        fsc__pw_cstr(w, "time_us");
        fsc__pw_int(w, 2 + k);
        fsc__pw_cstr(w, "frames");
        fsc__pw_list_open(w);
        for (int j = 0; j < DEPTH; j++) {
            fsc__pw_dict_open(w);
            fsc__pw_cstr(w, "filename");
            fsc__pw_cstr(w, "deep.py");
            fsc__pw_cstr(w, "line");
            fsc__pw_int(w, (int64_t)k * DEPTH + j);
            fsc__pw_cstr(w, "name");
            snprintf(name, sizeof name, "f%d", j);
            fsc__pw_cstr(w, name);
            fsc__pw_dict_close(w);
            if (j % 1000 == 999)
                fsc__pw_list_batch(w);
        }
        fsc__pw_list_close(w);
        fsc__pw_dict_close(w);
    }
    fsc__pw_list_close(w);
    fsc__pw_list_close(w);
    fsc__pw_dict_close(w);
    CU_ASSERT_EQUAL_FATAL(fsc__pw_finish(w), 0);
    CU_ASSERT_EQUAL(fclose(f), 0);
}

/* Path of the deepest tag (the last one): DEPTH frames, outermost first. */
static void check_paths(const char *db_path, int64_t tags_expected)
{
    fsc_rundb_t *db = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_rundb_open(db_path, &db, &err), 0);
    int64_t n = 0;
    CU_ASSERT_EQUAL(fsc_rundb_count(db, "tags", &n), 0);
    CU_ASSERT_EQUAL(n, tags_expected + 1); /* and the root */
    char *path = NULL;
    CU_ASSERT_EQUAL(fsc_rundb_tag_path(db, tags_expected, 40, &path), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    /* the tail: ".../deep.py:<line>:f1/deep.py:<line>:f0" */
    CU_ASSERT_EQUAL(strlen(path), 40);
    CU_ASSERT_PTR_NOT_NULL(strstr(path, ":f1/deep.py:"));
    CU_ASSERT_EQUAL(strcmp(path + strlen(path) - 3, ":f0"), 0);
    free(path);
    CU_ASSERT_EQUAL(fsc_rundb_tag_path(db, tags_expected, 0, &path), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    size_t slashes = 0;
    for (const char *p = path; *p; p++)
        slashes += *p == '/';
    CU_ASSERT_EQUAL(slashes, DEPTH - 1);
    CU_ASSERT_EQUAL(strncmp(path, "deep.py:", 8), 0);
    free(path);
    fsc_rundb_close(db);
}

static void test_deep_snapshot(void)
{
    const char *snap = fsc_test_path("deep20.pickle");
    const char *db = fsc_test_path("deep20.db");
    write_deep_snapshot(snap, 20);
    long long in = file_size(snap);
    CU_ASSERT(in > 6000000 && in < 10000000);
    long rss = 0;
    unlink(db);
    const char *args[] = {"analyze", snap, "-o", db, "--no-suggest", NULL};
    CU_ASSERT_EQUAL_FATAL(run_measured(args, &rss), 0);
    long long out = file_size(db);
    fprintf(stderr, "\n  deep snapshot: %lld bytes in, analyze %ld KiB peak RSS, %lld-byte db\n",
            in, rss, out);
    CU_ASSERT(rss < RSS_SNAP_KB);
    /* measured: 3.9x with schema 1, 4.5x with schema 2 (tags and tag_frames
     * keyed by (run, id) hold the id in the row) */
    CU_ASSERT(out > 0 && out < 5 * in);
    check_paths(db, 20 * DEPTH);
    unlink(snap);
    unlink(db);
}

static void test_deep_trace(void)
{
    const char *snap = fsc_test_path("deep1.pickle");
    const char *trace = fsc_test_path("deep1.fstrace");
    const char *db = fsc_test_path("deep1.db");
    write_deep_snapshot(snap, 1);
    long rss = 0;
    unlink(trace);
    const char *imp[] = {"import", snap, "-o", trace, NULL};
    CU_ASSERT_EQUAL_FATAL(run_measured(imp, &rss), 0);
    CU_ASSERT(rss < RSS_TRACE_KB);
    long long in = file_size(trace);
    CU_ASSERT(in > 0 && in < 400000);
    unlink(db);
    const char *args[] = {"analyze", trace, "-o", db, "--no-suggest", NULL};
    /* A tag path as deep as the input is long must not cost stack per
     * level: under a 512 KiB stack, 20 000 levels of recursion would not
     * fit. */
    g_stack_kb = 512;
    CU_ASSERT_EQUAL_FATAL(run_measured(args, &rss), 0);
    g_stack_kb = 0;
    long long out = file_size(db);
    fprintf(stderr, "  deep trace: %lld bytes in, analyze %ld KiB peak RSS, %lld-byte db\n", in,
            rss, out);
    CU_ASSERT(rss < RSS_TRACE_KB);
    /* measured: 2.8 MB, most of it what every database holds */
    CU_ASSERT(out > 0 && out < 4 * 1024 * 1024);
    check_paths(db, DEPTH);
    unlink(snap);
    unlink(trace);
    unlink(db);
}

static const fsc_test_case_t k_tests[] = {
    {"snapshot, 20 stacks 20 000 deep: bounded RSS and db", test_deep_snapshot},
    {"trace, tags 20 000 deep: bounded RSS and db", test_deep_trace},
    {NULL, NULL},
};

FSC_TEST_MAIN("deep_tags", k_tests)
