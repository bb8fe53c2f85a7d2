/*
 * test_ring_cuts.c — snapshots whose history starts mid-run, as PyTorch's
 * ring buffer leaves them (_record_memory_history(max_entries=...)).
 *
 * Cutting a complete history at entry k and keeping the rest, with the
 * final segments as they are, is exactly what a ring of the last N - k
 * entries gives (fsc_import_opts_t.skip_entries does the cut). Every real
 * snapshot the project has (the shared runs, the GPU recordings of
 * tests/data/gpu, sample_traces) is cut at 50 points, and the one with
 * steps at every step boundary: each window must import, and a what-if
 * replay with the recording's own settings, from the starting state the
 * importer rebuilt, must reproduce every block address of the window and
 * both of its peaks. Some cuts are also analyzed, and the report must say
 * that its figures cover a window. A snapshot with no history at all is
 * the state at its moment, and is reported as that.
 *
 * Two crafted fixtures are left out: frames_bomb.pickle (its final
 * segments contradict its own history: a segment the history never frees
 * is missing) and unknown_free.pickle (made to fail).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "fragscope/analyzer.h"
#include "fragscope/pytorch.h"
#include "fragscope/rundb.h"
#include "fragscope/whatif.h"
#include "fsc_test.h"

#define CUTS 50
#define BIG_CUTS 6

/* History entries of the snapshot's only device with history (or device
 * 0 of a snapshot with several). */
static uint64_t entries_of(const char *path, int *device)
{
    fsc_import_opts_t o = FSC_IMPORT_OPTS_DEFAULT;
    fsc_import_stats_t st;
    fsc_err_t err = {0, ""};
    int rc = fsc_pytorch_import(path, &o, NULL, &st, &err);
    *device = -1;
    if (rc != 0 && st.devices > 1) {
        o.pick_device = 1;
        o.device = *device = 0;
        rc = fsc_pytorch_import(path, &o, NULL, &st, &err);
    }
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", path, fsc_err_msg(&err));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return st.entries;
}

/* The window from entry k on: it loads, and the replay with the
 * recording's own settings reproduces it. 1 when it did. */
static int check_cut(const char *path, int device, uint64_t k, uint64_t n)
{
    fsc_source_opts_t so;
    memset(&so, 0, sizeof so);
    so.pick_device = device >= 0;
    so.device = device;
    so.skip_entries = k;
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    int rc = fsc_request_stream_load_source(path, &so, &rs, &err);
    if (rc != 0) {
        fprintf(stderr, "%s cut at %llu of %llu: %s\n", path, (unsigned long long)k,
                (unsigned long long)n, fsc_err_msg(&err));
        CU_FAIL("a window does not load");
        return 0;
    }
    fsc_request_stream_info_t in;
    fsc_request_stream_info(rs, &in);
    fsc_whatif_verify_t v;
    rc = fsc_whatif_verify(rs, NULL, &v, &err);
    int ok = rc == 0 && v.match && v.alloc_addr_matches == v.allocs_compared &&
             v.peak_reserved_got == v.peak_reserved_expected &&
             v.peak_allocated_got == v.peak_allocated_expected;
    if (!ok)
        fprintf(stderr,
                "%s cut at %llu of %llu: %s; addresses %llu of %llu (first differing request "
                "%ld), peak reserved %llu / %llu, allocated %llu / %llu, segments %llu / %llu\n",
                path, (unsigned long long)k, (unsigned long long)n,
                rc ? fsc_err_msg(&err) : "replayed", (unsigned long long)v.alloc_addr_matches,
                (unsigned long long)v.allocs_compared, v.first_addr_mismatch,
                (unsigned long long)v.peak_reserved_got,
                (unsigned long long)v.peak_reserved_expected,
                (unsigned long long)v.peak_allocated_got,
                (unsigned long long)v.peak_allocated_expected, (unsigned long long)v.segments_got,
                (unsigned long long)v.segments_expected);
    CU_ASSERT_TRUE(ok);
    /* A window says so: never a complete run, and what it began with. */
    CU_ASSERT_TRUE(in.window || in.start_blocks == 0);
    CU_ASSERT_FALSE(in.run_complete);
    CU_ASSERT_EQUAL(in.window_entries, n - k);
    fsc_request_stream_destroy(rs);
    return ok;
}

static int skip_file(const char *name)
{
    static const char *const skip[] = {"frames_bomb.pickle", "unknown_free.pickle",
                                       "segments_only.pickle"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strcmp(name, skip[i]) == 0)
            return 1;
    size_t l = strlen(name);
    return l < 7 || strcmp(name + l - 7, ".pickle") != 0;
}

/* One snapshot cut at CUTS points (every entry of a short history); one of
 * more than 8 MiB (the default ring's 100 000 entries) at BIG_CUTS points,
 * to keep the suite's time. Adds to *cuts and *good. */
static void cut_file(const char *path, size_t *files, size_t *cuts, size_t *good)
{
    int device;
    uint64_t n = entries_of(path, &device);
    if (n < 2)
        return;
    (*files)++;
    struct stat sb;
    uint64_t cuts_here = stat(path, &sb) == 0 && sb.st_size > (8 << 20) ? BIG_CUTS : CUTS;
    uint64_t m = n - 1 < cuts_here ? n - 1 : cuts_here;
    for (uint64_t i = 1; i <= m; i++) {
        uint64_t k = m == n - 1 ? i : n * i / (m + 1);
        (*cuts)++;
        *good += (size_t)check_cut(path, device, k, n);
    }
}

/* Every snapshot of a folder, and `extra` (NULL: none), cut. */
static void cut_folder_and(const char *dir, const char *extra)
{
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    size_t files = 0, cuts = 0, good = 0;
    while ((e = readdir(d)) != NULL) {
        if (skip_file(e->d_name))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        cut_file(path, &files, &cuts, &good);
    }
    closedir(d);
    if (extra != NULL)
        cut_file(extra, &files, &cuts, &good);
    printf("\n  %s: %zu snapshots, %zu windows, %zu reproduced ", dir, files, cuts, good);
    CU_ASSERT_TRUE(files > 0);
    CU_ASSERT_EQUAL(good, cuts);
}

static void cut_folder(const char *dir)
{
    cut_folder_and(dir, NULL);
}

static void test_shared_runs(void)
{
    cut_folder(FSC_TEST_DATA "/pytorch");
}

static void test_gpu_recordings(void)
{
    cut_folder(FSC_TEST_DATA "/gpu");
}

/* A ring as it came: a window, and what-if reproduces every address. */
static void check_ring(const char *path)
{
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_request_stream_load(path, &rs, &err), 0);
    fsc_request_stream_info_t in;
    fsc_request_stream_info(rs, &in);
    CU_ASSERT_TRUE(in.window); /* every one of them wrapped */
    fsc_whatif_verify_t v;
    CU_ASSERT_EQUAL(fsc_whatif_verify(rs, NULL, &v, &err), 0);
    CU_ASSERT_TRUE(v.match);
    CU_ASSERT_EQUAL(v.alloc_addr_matches, v.allocs_compared);
    if (!v.match)
        fprintf(stderr, "%s: addresses %llu of %llu\n", path,
                (unsigned long long)v.alloc_addr_matches, (unsigned long long)v.allocs_compared);
    fsc_request_stream_destroy(rs);
}

/* PyTorch's own rings (bench/gpu/record_all.py ring; seven on an H100,
 * ring_fsdp2 and the default-size ring on an H200): each snapshot as it
 * is, then cut further. The default ring (GPT-2 for 80 steps under
 * max_entries 100 000, 9 MB) is kept compressed. */
static void test_gpu_rings(void)
{
    const char *dir = FSC_TEST_DATA "/gpu/ring";
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        if (skip_file(e->d_name))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        check_ring(path);
        n++;
    }
    closedir(d);
    CU_ASSERT_EQUAL(n, 8);
    const char *big = fsc_test_data_unzstd("gpu/ring/ring_default_80steps.pickle");
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    check_ring(big);
    /* the window's peaks are the run's: the ring kept the entries of its
     * peak (memory_stats(): 33 908 850 688 B reserved, 10 616 827 392 B
     * allocated) */
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_request_stream_load(big, &rs, &err), 0);
    fsc_whatif_verify_t v;
    CU_ASSERT_EQUAL(fsc_whatif_verify(rs, NULL, &v, &err), 0);
    CU_ASSERT_EQUAL(v.peak_reserved_got, 33908850688ull);
    CU_ASSERT_EQUAL(v.peak_allocated_got, 10616827392ull);
    fsc_request_stream_destroy(rs);
    cut_folder_and(dir, big);
}

static void test_native_snapshots(void)
{
    cut_folder(FSC_TEST_DATA "/gpu/native");
}

static void test_sample_traces(void)
{
    cut_folder(FSC_SOURCE_DIR "/sample_traces");
}

/* gpt2_varlen at each of its 24 optimizer steps: the first entry at or
 * after each "END Optimizer.step" annotation (gpt2_varlen.steps.json,
 * written by tests/data/make_ring_steps.py). */
static void test_step_boundaries(void)
{
    const char *path = fsc_test_data("pytorch/gpt2_varlen.pickle");
    char *js = fsc_test_slurp(fsc_test_data("pytorch/gpt2_varlen.steps.json"), NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(js);
    cJSON *o = cJSON_Parse(js);
    free(js);
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(o, "step_end_entries"), *it;
    CU_ASSERT_EQUAL(cJSON_GetArraySize(steps), 24);
    int device;
    uint64_t n = entries_of(path, &device);
    CU_ASSERT_EQUAL(n, 78062);
    int good = 0, all = 0;
    cJSON_ArrayForEach(it, steps)
    {
        uint64_t k = (uint64_t)it->valuedouble;
        if (k == 0 || k >= n)
            continue;
        all++;
        good += check_cut(path, device, k, n);
    }
    cJSON_Delete(o);
    CU_ASSERT_EQUAL(all, 24);
    CU_ASSERT_EQUAL(good, all);
}

/* A window analyzed: the report says what its figures cover, with the
 * rebuilt state's reserved bytes, and never calls the window's peaks the
 * run's. */
static void test_analyze_window(void)
{
    const char *db = fsc_test_path("window.db");
    static char out[1 << 20];
    /* the last 30 000 entries of gpt2_varlen, as max_entries=30000 keeps */
    const char *snap = fsc_test_data("pytorch/gpt2_varlen.pickle");
    fsc_analyze_opts_t ao;
    memset(&ao, 0, sizeof ao);
    fsc_err_t err = {0, ""};
    /* through the C API: the command line has no cut */
    ao.skip_entries = 78062 - 30000;
    int rc = fsc_analyze_file(snap, db, &ao, NULL, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", fsc_err_msg(&err));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s --format json",
                                fsc_test_fragscope(), db),
                    0);
    cJSON *j = cJSON_Parse(out);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "window");
    CU_ASSERT_TRUE_FATAL(cJSON_IsObject(w));
    CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(w, "entries")->valuedouble, 30000);
    CU_ASSERT_TRUE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "peaks_cover_window_only")));
    CU_ASSERT_TRUE(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(w, "no_history")));
    /* gpt2_varlen reserves its 20.51 GiB early and keeps it: the window
     * begins with all of it */
    CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(w, "start_reserved_bytes")->valuedouble,
                    22020096000.0);
    cJSON_Delete(j);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s", fsc_test_fragscope(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the recording began mid-run: the snapshot kept the last "
                                       "30000 history entries"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "memory (in the window)"));
    /* a complete run says nothing of the kind */
    const char *db2 = fsc_test_path("whole.db");
    ao.skip_entries = 0;
    CU_ASSERT_EQUAL_FATAL(fsc_analyze_file(snap, db2, &ao, NULL, NULL, &err), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s", fsc_test_fragscope(), db2), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "mid-run"));
}

/* whatif --verify on a window: text and JSON say what it covers. */
static void test_whatif_window_output(void)
{
    fsc_source_opts_t so;
    memset(&so, 0, sizeof so);
    so.skip_entries = 78062 - 20000;
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(
        fsc_request_stream_load_source(fsc_test_data("pytorch/gpt2_varlen.pickle"), &so, &rs, &err),
        0);
    fsc_request_stream_info_t in;
    fsc_request_stream_info(rs, &in);
    CU_ASSERT_TRUE(in.window);
    CU_ASSERT_EQUAL(in.window_entries, 20000);
    CU_ASSERT_EQUAL(in.start_reserved, 22020096000ull);
    CU_ASSERT_TRUE(in.start_blocks > 0);
    CU_ASSERT_TRUE(in.start_settled <= in.start_guessed);
    /* what-if from a window: results say they are not the whole run */
    fsc_whatif_result_t r;
    CU_ASSERT_EQUAL(fsc_whatif_replay(rs, "expandable_segments:True", NULL, &r, &err), 0);
    CU_ASSERT_FALSE(r.run_complete);
    fsc_request_stream_destroy(rs);
}

/* A snapshot with no history (device_traces of empty lists, as _snapshot()
 * gives without _record_memory_history) is what it is: analyze and report
 * show the state at the moment of the snapshot and say so, never "mid-run";
 * import says so; what-if, with no request to replay, refuses with how to
 * record one. */
static void test_empty_history(void)
{
    static char out[1 << 16];
    const char *bin = fsc_test_fragscope();
    static const char *const k_in[] = {"pytorch/empty_history.pickle",
                                       "pytorch/empty_history.json", "pytorch/segments_only.json"};
    for (size_t i = 0; i < sizeof k_in / sizeof k_in[0]; i++) {
        char in[1024], db[1024];
        snprintf(in, sizeof in, "%s", fsc_test_data(k_in[i]));
        snprintf(db, sizeof db, "%s", fsc_test_path("empty.db"));
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", bin, in, db), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "no history: the snapshot's device_traces are empty"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "_record_memory_history() before the run"));
        CU_ASSERT_PTR_NULL(strstr(out, "mid-run"));
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s", bin, db), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nno history\n  the snapshot holds no recorded "
                                           "history"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "every figure is the state at the moment of the "
                                           "snapshot"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "memory (at the snapshot)"));
        CU_ASSERT_PTR_NULL(strstr(out, "mid-run"));
        CU_ASSERT_PTR_NULL(strstr(out, "window"));
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s --format json", bin, db), 0);
        cJSON *j = cJSON_Parse(out);
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "window");
        CU_ASSERT_TRUE_FATAL(cJSON_IsObject(w));
        CU_ASSERT_TRUE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "no_history")));
        /* each: a 2 MiB segment holding a 1 KiB block, a 20 MiB one
         * holding a 3 MiB block; segments_only's 1 KiB block is freed but
         * pending (active, not allocated) */
        CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(w, "start_reserved_bytes")->valuedouble,
                        22.0 * 1048576);
        CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(w, "start_allocated_bytes")->valuedouble,
                        3.0 * 1048576 + (i < 2 ? 1024 : 0));
        cJSON_Delete(j);
        /* the page too */
        char html[1100];
        snprintf(html, sizeof html, "%s.html", db);
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s view %s -o %s", bin, db, html), 0);
        char *page = fsc_test_slurp(html, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(page);
        CU_ASSERT_PTR_NOT_NULL(strstr(page, "none recorded (the snapshot&#39;s device_traces are "
                                            "empty): every figure is the state at the moment of "
                                            "the snapshot"));
        CU_ASSERT_PTR_NULL(strstr(page, "mid-run"));
        free(page);
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s import %s -o %s", bin, in,
                                    fsc_test_path("empty.fstrace")), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "no history: the snapshot's device_traces are empty"));
        CU_ASSERT_PTR_NULL(strstr(out, "mid-run"));
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s whatif %s --config '' 2>&1", bin, in), 2);
        CU_ASSERT_EQUAL(fsc_test_count(out, "\n"), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "the snapshot holds no recorded history"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "_record_memory_history() before the run"));
    }
}

static const fsc_test_case_t tests[] = {
    {"shared runs (tests/data/pytorch) cut at 50 points: every window reproduced",
     test_shared_runs},
    {"GPU recordings (tests/data/gpu) cut at 50 points: every window reproduced",
     test_gpu_recordings},
    {"sample_traces snapshots cut at 50 points: every window reproduced", test_sample_traces},
    {"PyTorch's own rings (H100, H200): each reproduced, and cut further", test_gpu_rings},
    {"the native recordings' snapshots (H100) cut at 50 points", test_native_snapshots},
    {"gpt2_varlen cut at every step boundary", test_step_boundaries},
    {"a window analyzed: the report says its figures cover the window", test_analyze_window},
    {"what-if on a window: its starting state and scope", test_whatif_window_output},
    {"no history at all: the snapshot's state, said so; what-if refuses", test_empty_history},
    {NULL, NULL},
};

FSC_TEST_MAIN("ring_cuts", tests)
