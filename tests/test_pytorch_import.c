/*
 * test_pytorch_import.c — the PyTorch snapshot importer: exact event
 * streams for hand-made snapshots (worked out by hand from PyTorch's rules,
 * see tests/data/make_fixtures.py), identical results across pickle
 * protocols and JSON, the rebuilt starting state of a wrapped history, the
 * three real snapshots against PyTorch's own statistics, and clean errors
 * for bad input.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/allocator.h"
#include "fsc_test.h"
#include "test_pytorch_common.h"

#define MiB 1048576ull

typedef struct want {
    int type;
    uint64_t addr, size, requested, other;
    int pool; /* -1 = don't care */
    uint64_t segment;
    uint64_t time_ns;
} want_t;

enum { S = FSC_POOL_SMALL, L = FSC_POOL_LARGE, X = -1 };

static void check_stream(const tp_col_t *c, const want_t *w, size_t n)
{
    CU_ASSERT_EQUAL_FATAL(c->n, n);
    for (size_t i = 0; i < n; i++) {
        const fsc_event_t *e = &c->r[i].ev;
        if (e->type != w[i].type || e->addr != w[i].addr || e->size != w[i].size ||
            e->requested != w[i].requested || e->other != w[i].other ||
            (w[i].pool >= 0 && e->pool != w[i].pool) ||
            (w[i].segment != 0 && e->segment != w[i].segment) || e->time_ns != w[i].time_ns) {
            fprintf(stderr,
                    "\nevent %zu: got %s addr 0x%llx size %llu req %llu other 0x%llx pool %d "
                    "seg 0x%llx t %llu\n",
                    i, fsc_event_type_name(e->type), (unsigned long long)e->addr,
                    (unsigned long long)e->size, (unsigned long long)e->requested,
                    (unsigned long long)e->other, e->pool, (unsigned long long)e->segment,
                    (unsigned long long)e->time_ns);
            CU_FAIL("event differs");
            return;
        }
    }
}

/* ---- the hand-made snapshots ------------------------------------------ */

#define A 0x10000000ull
#define B 0x20000000ull

static const want_t k_tiny[] = {
    {FSC_EV_SEGMENT_ALLOC, A, 2 * MiB, 0, 0, S, A, 0},
    {FSC_EV_SPLIT, A, 2 * MiB, 1024, 0, S, A, 1000},
    {FSC_EV_ALLOC, A, 1024, 1000, 0, S, A, 1000},
    {FSC_EV_SPLIT, A + 1024, 2096128, 512, 0, S, A, 2000},
    {FSC_EV_ALLOC, A + 1024, 512, 512, 0, S, A, 2000},
    {FSC_EV_SEGMENT_ALLOC, B, 20 * MiB, 0, 0, L, B, 3000},
    {FSC_EV_SPLIT, B, 20 * MiB, 3000320, 0, L, B, 4000},
    {FSC_EV_ALLOC, B, 3000320, 3000000, 0, L, B, 4000},
    /* external annotation at the same microsecond: before the entry */
    {FSC_EV_MARKER, 0, 0, 0, 0, X, 0, 5000},
    /* remainder 970752 <= 1 MiB: the large block is taken whole */
    {FSC_EV_ALLOC, B + 3000320, 17971200, 17000000, 0, L, B, 5000},
    {FSC_EV_FREE_REQUESTED, A, 1024, 1000, 0, S, A, 6000},
    {FSC_EV_FREE_COMPLETED, A, 1024, 1000, 0, S, A, 7000},
    {FSC_EV_FREE_REQUESTED, A + 1024, 512, 512, 0, S, A, 8000},
    {FSC_EV_FREE_COMPLETED, A + 1024, 512, 512, 0, S, A, 9000},
    {FSC_EV_MERGE, A, 1536, 0, A + 1024, S, A, 9000},
    {FSC_EV_MERGE, A, 2 * MiB, 0, A + 1536, S, A, 9000},
    {FSC_EV_SEGMENT_FREE, A, 2 * MiB, 0, 0, S, A, 10000},
    /* PyTorch writes the OOM size rounded already: kept as written, never rounded again. */
    {FSC_EV_OOM, 0, 30000000, 30000000, 0, L, 0, 11000},
    {FSC_EV_MARKER, 0, 0, 0, 0, X, 0, 12000},
    {FSC_EV_FREE_REQUESTED, B, 3000320, 3000000, 0, L, B, 12000},
    {FSC_EV_FREE_COMPLETED, B, 3000320, 3000000, 0, L, B, 13000},
};

static void test_tiny_exact(void)
{
    tp_col_t c;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    int rc = tp_import(fsc_test_data("pytorch/tiny.p4.pickle"), -1, 0, &c, &st, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_stream(&c, k_tiny, sizeof k_tiny / sizeof k_tiny[0]);
    CU_ASSERT_EQUAL(c.headers, 1);
    CU_ASSERT_STRING_EQUAL(c.producer, "pytorch snapshot import");
    CU_ASSERT_STRING_EQUAL(c.config, "");
    CU_ASSERT_STRING_EQUAL(c.backend, "cuda:0");
    CU_ASSERT_EQUAL(c.flags, FSC_TRACE_F_CAPACITY_UNKNOWN);
    CU_ASSERT_EQUAL(c.capacity, 0);
    CU_ASSERT_EQUAL(c.clock_origin_ns, 1000000ull);
    /* frames: outermost at the root, one node per distinct path */
    CU_ASSERT_STRING_EQUAL(tp_path_of(&c, 2), "train.py:5:main/model.py:10:forward");
    CU_ASSERT_STRING_EQUAL(tp_path_of(&c, 4), "train.py:5:main/model.py:11:forward");
    CU_ASSERT_STRING_EQUAL(tp_path_of(&c, 10), "train.py:5:main");
    CU_ASSERT_STRING_EQUAL(tp_path_of(&c, 17), "train.py:5:main/model.py:10:forward");
    CU_ASSERT_EQUAL(c.ntags, 3);
    CU_ASSERT_EQUAL(c.r[2].ev.tag, c.r[17].ev.tag);
    /* annotations of this device only, as "STAGE name" markers */
    CU_ASSERT_STRING_EQUAL(c.r[8].text, "START Optimizer.step#SGD.step");
    CU_ASSERT_STRING_EQUAL(c.r[18].text, "END Optimizer.step#SGD.step");
    CU_ASSERT_EQUAL(st.annotations, 2);
    /* the OOM carries the state at the failure */
    const fsc_event_t *oom = &c.r[17].ev;
    CU_ASSERT_EQUAL(oom->oom.allocated, 20971520ull);
    CU_ASSERT_EQUAL(oom->oom.reserved, 20971520ull);
    CU_ASSERT_EQUAL(oom->oom.device_free, 123456ull);
    CU_ASSERT_EQUAL(oom->oom.capacity, 0);
    CU_ASSERT_EQUAL(oom->oom.segment_size, 30 * MiB);
    /* statistics */
    CU_ASSERT_EQUAL(st.format, FSC_SNAP_PICKLE);
    CU_ASSERT_EQUAL(st.entries, 14);
    CU_ASSERT_EQUAL(st.events, 21);
    CU_ASSERT_EQUAL(st.allocs, 4);
    CU_ASSERT_EQUAL(st.frees, 3);
    CU_ASSERT_EQUAL(st.segment_allocs, 2);
    CU_ASSERT_EQUAL(st.segment_frees, 1);
    CU_ASSERT_EQUAL(st.ooms, 1);
    CU_ASSERT_EQUAL(st.splits, 3);
    CU_ASSERT_EQUAL(st.merges, 2);
    CU_ASSERT_EQUAL(st.reconstructed, 0);
    CU_ASSERT_EQUAL(st.peak_allocated, 1024 + 512 + 3000320 + 17971200);
    CU_ASSERT_EQUAL(st.peak_reserved, 22 * MiB);
    CU_ASSERT_EQUAL(c.peak_alloc, 1024 + 512 + 3000320 + 17971200);
    CU_ASSERT_EQUAL(c.peak_res, 22 * MiB);
    tp_free(&c);
}

/* A segment at address 0 (only crafted files have one; the analyzer then
 * refuses the trace, but import and export model it): its blocks are
 * split, taken, freed and merged as anywhere else. The block model keys
 * blocks by address in a table that holds no key 0, so the block at 0 is
 * kept apart: every step here touches it. */
static const want_t k_addr0[] = {
    {FSC_EV_SEGMENT_ALLOC, 0, 2 * MiB, 0, 0, S, 0, 0},
    {FSC_EV_SPLIT, 0, 2 * MiB, 512, 0, S, 0, 1000},
    {FSC_EV_ALLOC, 0, 512, 512, 0, S, 0, 1000},
    {FSC_EV_SPLIT, 512, 2 * MiB - 512, 1024, 0, S, 0, 2000},
    {FSC_EV_ALLOC, 512, 1024, 1024, 0, S, 0, 2000},
    {FSC_EV_FREE_REQUESTED, 0, 512, 512, 0, S, 0, 3000},
    {FSC_EV_FREE_COMPLETED, 0, 512, 512, 0, S, 0, 4000},
    {FSC_EV_ALLOC, 0, 512, 256, 0, S, 0, 5000},
    {FSC_EV_FREE_REQUESTED, 512, 1024, 1024, 0, S, 0, 6000},
    {FSC_EV_FREE_COMPLETED, 512, 1024, 1024, 0, S, 0, 7000},
    {FSC_EV_MERGE, 512, 2 * MiB - 512, 0, 1536, S, 0, 7000},
    {FSC_EV_FREE_REQUESTED, 0, 512, 256, 0, S, 0, 8000},
    {FSC_EV_FREE_COMPLETED, 0, 512, 256, 0, S, 0, 9000},
    {FSC_EV_MERGE, 0, 2 * MiB, 0, 512, S, 0, 9000},
    {FSC_EV_SEGMENT_FREE, 0, 2 * MiB, 0, 0, S, 0, 10000},
};

static void test_segment_at_zero(void)
{
    static const struct {
        const char *act;
        unsigned long long addr, size;
    } h[] = {{"segment_alloc", 0, 2 * MiB}, {"alloc", 0, 512},          {"alloc", 512, 1024},
             {"free_requested", 0, 512},    {"free_completed", 0, 512}, {"alloc", 0, 256},
             {"free_requested", 512, 1024}, {"free_completed", 512, 1024},
             {"free_requested", 0, 256},    {"free_completed", 0, 256},
             {"segment_free", 0, 2 * MiB}};
    const char *path = fsc_test_path("addr0.json");
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("{\"segments\": [], \"device_traces\": [[", f);
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
        fprintf(f, "%s{\"action\": \"%s\", \"addr\": %llu, \"size\": %llu, \"stream\": 0,"
                   " \"time_us\": %zu, \"frames\": []}",
                i ? ", " : "", h[i].act, h[i].addr, h[i].size, 1000 + i);
    fputs("]]}", f);
    CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
    tp_col_t c;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    int rc = tp_import(path, -1, 0, &c, &st, &err);
    if (rc != 0)
        fprintf(stderr, "\n  %s", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_stream(&c, k_addr0, sizeof k_addr0 / sizeof k_addr0[0]);
    CU_ASSERT_EQUAL(st.splits, 2);
    CU_ASSERT_EQUAL(st.merges, 2);
    CU_ASSERT_EQUAL(st.peak_allocated, 1536);
    tp_free(&c);
}

static void test_formats_agree(void)
{
    static const char *files[] = {"pytorch/tiny.p2.pickle", "pytorch/tiny.p5.pickle",
                                  "pytorch/tiny.p0.pickle", "pytorch/tiny.p1.pickle",
                                  "pytorch/tiny.json"};
    tp_col_t ref;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(tp_import(fsc_test_data("pytorch/tiny.p4.pickle"), -1, 0, &ref, &st,
                                    &err), 0);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        tp_col_t c;
        int rc = tp_import(fsc_test_data(files[i]), -1, 0, &c, &st, &err);
        CU_ASSERT_EQUAL(rc, 0);
        const char *why;
        long at = tp_diff(&ref, &c, 0, 0, &why);
        if (at >= 0)
            fprintf(stderr, "\n%s differs at event %ld (%s)\n", files[i], at, why);
        CU_ASSERT_EQUAL(at, -1);
        CU_ASSERT_STRING_EQUAL(c.config, ref.config);
        CU_ASSERT_EQUAL(c.clock_origin_ns, ref.clock_origin_ns);
        CU_ASSERT_EQUAL(st.format, i == 4 ? FSC_SNAP_JSON : FSC_SNAP_PICKLE);
        tp_free(&c);
    }
    tp_free(&ref);
}

#define LB 0x30000000ull
#define P2 0x40000000ull

static const want_t k_midrun[] = {
    /* starting state, rebuilt at time 0 */
    {FSC_EV_SEGMENT_ALLOC, LB, 20 * MiB, 0, 0, L, LB, 0},
    {FSC_EV_SPLIT, LB, 20 * MiB, 4 * MiB, 0, L, LB, 0},
    {FSC_EV_ALLOC, LB, 4 * MiB, 4 * MiB, 0, L, LB, 0},
    {FSC_EV_SPLIT, LB + 4 * MiB, 16 * MiB, 2 * MiB, 0, L, LB, 0},
    {FSC_EV_ALLOC, LB + 4 * MiB, 2 * MiB, 2000000, 0, L, LB, 0},
    {FSC_EV_SPLIT, LB + 6 * MiB, 14 * MiB, 12 * MiB, 0, L, LB, 0},
    /* sized from its request (1.5 MiB) plus the 0.5 MiB PyTorch would not
     * have split off */
    {FSC_EV_ALLOC, LB + 18 * MiB, 2 * MiB, 1572864, 0, L, LB, 0},
    {FSC_EV_FREE_REQUESTED, LB + 18 * MiB, 2 * MiB, 1572864, 0, L, LB, 0},
    {FSC_EV_SEGMENT_ALLOC, P2, 2 * MiB, 0, 0, S, P2, 0},
    {FSC_EV_SPLIT, P2, 2 * MiB, 1024, 0, S, P2, 0},
    {FSC_EV_ALLOC, P2, 1024, 800, 0, S, P2, 0},
    {FSC_EV_MARKER, 0, 0, 0, 0, X, 0, 0},
    /* the history */
    {FSC_EV_FREE_REQUESTED, LB, 4 * MiB, 4 * MiB, 0, L, LB, 0},
    {FSC_EV_FREE_COMPLETED, LB, 4 * MiB, 4 * MiB, 0, L, LB, 1000},
    {FSC_EV_SPLIT, LB, 4 * MiB, 1049088, 0, L, LB, 2000},
    {FSC_EV_ALLOC, LB, 1049088, 1048577, 0, L, LB, 2000},
    {FSC_EV_SPLIT, LB + 6 * MiB, 12 * MiB, 5000192, 0, L, LB, 3000},
    {FSC_EV_ALLOC, LB + 6 * MiB, 5000192, 5000000, 0, L, LB, 3000},
    {FSC_EV_FREE_COMPLETED, LB + 18 * MiB, 2 * MiB, 1572864, 0, L, LB, 4000},
    {FSC_EV_MERGE, LB + 6 * MiB + 5000192, 9679872, 0, LB + 18 * MiB, L, LB, 4000},
    {FSC_EV_FREE_REQUESTED, P2, 1024, 800, 0, S, P2, 5000},
    {FSC_EV_FREE_COMPLETED, P2, 1024, 800, 0, S, P2, 6000},
    {FSC_EV_MERGE, P2, 2 * MiB, 0, P2 + 1024, S, P2, 6000},
    {FSC_EV_SEGMENT_FREE, P2, 2 * MiB, 0, 0, S, P2, 7000},
};

static void test_midrun_reconstructed(void)
{
    tp_col_t c;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    int rc = tp_import(fsc_test_data("pytorch/midrun.pickle"), -1, 0, &c, &st, &err);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_stream(&c, k_midrun, sizeof k_midrun / sizeof k_midrun[0]);
    CU_ASSERT_EQUAL(c.flags, FSC_TRACE_F_CAPACITY_UNKNOWN | FSC_TRACE_F_RECONSTRUCTED);
    CU_ASSERT_EQUAL(st.reconstructed, 1);
    CU_ASSERT_EQUAL(st.reconstructed_segments, 2);
    CU_ASSERT_EQUAL(st.reconstructed_blocks, 4);
    CU_ASSERT_STRING_EQUAL(c.r[11].text, "pytorch history begins");
    /* the surviving block keeps the frames of the final snapshot */
    CU_ASSERT_STRING_EQUAL(tp_path_of(&c, 4), "train.py:5:main/model.py:20:weights");
    CU_ASSERT_EQUAL(st.peak_allocated, 8 * MiB);
    CU_ASSERT_EQUAL(st.peak_reserved, 22 * MiB);
    tp_free(&c);
}

#define E 0x50000000ull

static const want_t k_expandable[] = {
    {FSC_EV_SEGMENT_MAP, E, 20 * MiB, 0, 0, L, E, 0},
    {FSC_EV_SPLIT, E, 20 * MiB, 10 * MiB, 0, L, E, 1000},
    {FSC_EV_ALLOC, E, 10 * MiB, 10 * MiB, 0, L, E, 1000},
    {FSC_EV_SEGMENT_MAP, E + 20 * MiB, 20 * MiB, 0, 0, L, E, 2000},
    /* the new pages joined the free tail: 10 + 20 MiB */
    {FSC_EV_SPLIT, E + 10 * MiB, 30 * MiB, 15 * MiB, 0, L, E, 3000},
    {FSC_EV_ALLOC, E + 10 * MiB, 15 * MiB, 15 * MiB, 0, L, E, 3000},
    {FSC_EV_FREE_REQUESTED, E, 10 * MiB, 10 * MiB, 0, L, E, 4000},
    {FSC_EV_FREE_COMPLETED, E, 10 * MiB, 10 * MiB, 0, L, E, 5000},
    {FSC_EV_SEGMENT_UNMAP, E, 10 * MiB, 0, 0, L, E, 6000},
};

static void test_expandable(void)
{
    tp_col_t c;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    int rc = tp_import(fsc_test_data("pytorch/expandable.pickle"), -1, 0, &c, &st, &err);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_stream(&c, k_expandable, sizeof k_expandable / sizeof k_expandable[0]);
    CU_ASSERT_STRING_EQUAL(c.config, "expandable_segments:True");
    CU_ASSERT_EQUAL(st.maps, 2);
    CU_ASSERT_EQUAL(st.unmaps, 1);
    CU_ASSERT_EQUAL(c.peak_res, 40 * MiB);
    CU_ASSERT_EQUAL(c.res, 30 * MiB);
    CU_ASSERT_EQUAL(st.reconstructed, 0);
    tp_free(&c);
}

#define SS 0x60000000ull
#define ST 0x70000000ull

static const want_t k_segments_only[] = {
    {FSC_EV_SEGMENT_ALLOC, SS, 20 * MiB, 0, 0, L, SS, 0},
    {FSC_EV_SPLIT, SS, 20 * MiB, 3 * MiB, 0, L, SS, 0},
    {FSC_EV_ALLOC, SS, 3 * MiB, 3000000, 0, L, SS, 0},
    {FSC_EV_SEGMENT_ALLOC, ST, 2 * MiB, 0, 0, S, ST, 0},
    {FSC_EV_SPLIT, ST, 2 * MiB, 512, 0, S, ST, 0},
    {FSC_EV_SPLIT, ST + 512, 2 * MiB - 512, 1024, 0, S, ST, 0},
    {FSC_EV_ALLOC, ST + 512, 1024, 1000, 0, S, ST, 0},
    {FSC_EV_FREE_REQUESTED, ST + 512, 1024, 1000, 0, S, ST, 0},
};

static void test_segments_only(void)
{
    static const char *files[] = {"pytorch/segments_only.json", "pytorch/segments_only.pickle"};
    for (size_t i = 0; i < 2; i++) {
        tp_col_t c;
        fsc_import_stats_t st;
        fsc_err_t err = {0};
        int rc = tp_import(fsc_test_data(files[i]), -1, 0, &c, &st, &err);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        check_stream(&c, k_segments_only, sizeof k_segments_only / sizeof k_segments_only[0]);
        CU_ASSERT_EQUAL(st.segments_only, 1);
        CU_ASSERT_EQUAL(st.entries, 0);
        CU_ASSERT_EQUAL(st.reconstructed_segments, 2);
        CU_ASSERT_EQUAL(st.reconstructed_blocks, 2);
        CU_ASSERT(c.flags & FSC_TRACE_F_RECONSTRUCTED);
        CU_ASSERT_STRING_EQUAL(tp_path_of(&c, 2), "train.py:5:main/model.py:30:embed");
        tp_free(&c);
    }
}

static void test_devices(void)
{
    tp_col_t c;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    const char *p = fsc_test_data("pytorch/multidev.pickle");
    CU_ASSERT_EQUAL(tp_import(p, -1, 0, &c, &st, &err), FSC_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "devices 0, 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--device"));
    CU_ASSERT_EQUAL(c.n, 0);
    tp_free(&c);

    CU_ASSERT_EQUAL_FATAL(tp_import(p, 1, 0, &c, &st, &err), 0);
    static const want_t w[] = {
        {FSC_EV_SEGMENT_ALLOC, 0x90000000ull, 20 * MiB, 0, 0, L, 0x90000000ull, 0},
        {FSC_EV_SPLIT, 0x90000000ull, 20 * MiB, 2 * MiB, 0, L, 0x90000000ull, 1000},
        {FSC_EV_ALLOC, 0x90000000ull, 2 * MiB, 2 * MiB, 0, L, 0x90000000ull, 1000},
    };
    check_stream(&c, w, 3);
    CU_ASSERT_STRING_EQUAL(c.backend, "cuda:1");
    CU_ASSERT_EQUAL(st.devices, 2);
    CU_ASSERT_EQUAL(st.device, 1);
    tp_free(&c);

    CU_ASSERT_EQUAL(tp_import(p, 5, 0, &c, &st, &err), FSC_ENOENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no device 5"));
    tp_free(&c);
}

static void test_contradiction_strict_and_lenient(void)
{
    tp_col_t c;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    const char *p = fsc_test_data("pytorch/unknown_free.pickle");
    CU_ASSERT_EQUAL(tp_import(p, -1, 0, &c, &st, &err), FSC_ESTATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "unknown_free.pickle: device_traces[0][1] "
                                           "(free_requested at 0xb0000000, 512 bytes)"));
    tp_free(&c);
    CU_ASSERT_EQUAL(tp_import(p, -1, 1, &c, &st, &err), 0);
    CU_ASSERT_EQUAL(st.warnings, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.first_warning, "device_traces[0][1]"));
    /* the rest of the history still comes through */
    CU_ASSERT_EQUAL(c.n, 3); /* SEGMENT_ALLOC, SPLIT, ALLOC */
    CU_ASSERT_EQUAL(c.r[2].ev.type, FSC_EV_ALLOC);
    tp_free(&c);
}

/* ---- the block model on a thread of its own ------------------------------ */

/* Import with FRAGSCOPE_THREADS set to threads ("" : unset), keeping the
 * pytorch.* records as analyze does. */
static int import_threads(const char *path, const char *threads, int lenient, tp_col_t *c,
                          fsc_import_stats_t *st, fsc_err_t *err)
{
    char *env = getenv("FRAGSCOPE_THREADS") ? strdup(getenv("FRAGSCOPE_THREADS")) : NULL;
    if (*threads)
        setenv("FRAGSCOPE_THREADS", threads, 1);
    else
        unsetenv("FRAGSCOPE_THREADS");
    memset(c, 0, sizeof *c);
    fsc_import_opts_t o = FSC_IMPORT_OPTS_DEFAULT;
    o.lenient = lenient;
    o.keep_records = 1;
    fsc_import_sink_t s = tp_sink(c);
    fsc_err_clear(err);
    int rc = fsc_pytorch_import(path, &o, &s, st, err);
    if (env != NULL) {
        setenv("FRAGSCOPE_THREADS", env, 1);
        free(env);
    } else {
        unsetenv("FRAGSCOPE_THREADS");
    }
    return rc;
}

/* Same events with the same tag paths and texts, the tags defined at the
 * same places among them, same stats. */
static void check_same_import(const tp_col_t *a, const fsc_import_stats_t *sa, const tp_col_t *b,
                              const fsc_import_stats_t *sb)
{
    CU_ASSERT_EQUAL_FATAL(a->n, b->n);
    CU_ASSERT_EQUAL(a->ntags, b->ntags);
    CU_ASSERT_EQUAL(a->tag_calls, b->tag_calls);
    size_t bad = 0;
    for (size_t i = 0; i < a->n && bad < 3; i++) {
        const fsc_event_t *x = &a->r[i].ev, *y = &b->r[i].ev;
        char px[8192];
        snprintf(px, sizeof px, "%s", tp_path_of(a, i));
        if (x->type != y->type || x->addr != y->addr || x->size != y->size ||
            x->requested != y->requested || x->other != y->other || x->pool != y->pool ||
            x->segment != y->segment || x->time_ns != y->time_ns ||
            strcmp(a->r[i].text, b->r[i].text) != 0 || strcmp(px, tp_path_of(b, i)) != 0 ||
            a->r[i].tags_before != b->r[i].tags_before) {
            fprintf(stderr, "\nevent %zu differs: %s against %s\n", i, fsc_event_type_name(x->type),
                    fsc_event_type_name(y->type));
            bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(sa->events, sb->events);
    CU_ASSERT_EQUAL(sa->entries, sb->entries);
    CU_ASSERT_EQUAL(sa->meta_records, sb->meta_records);
    CU_ASSERT_EQUAL(sa->unknown_keys, sb->unknown_keys);
    CU_ASSERT_EQUAL(sa->unknown_lines, sb->unknown_lines);
    CU_ASSERT_EQUAL(sa->annotations, sb->annotations);
    CU_ASSERT_EQUAL(sa->warnings, sb->warnings);
    CU_ASSERT_STRING_EQUAL(sa->first_warning, sb->first_warning);
    CU_ASSERT_EQUAL(sa->peak_allocated, sb->peak_allocated);
    CU_ASSERT_EQUAL(sa->splits, sb->splits);
    CU_ASSERT_EQUAL(sa->merges, sb->merges);
}

static void test_block_thread_real(void)
{
    static const char *files[] = {"pytorch/gpt2_varlen.pickle", "pytorch/resnet50_varbatch.pickle",
                                  "pytorch/gpt2m_oom_12g.pickle", "pytorch/compile_ro.pickle"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        tp_col_t one, many;
        fsc_import_stats_t s1, sn;
        fsc_err_t err = {0};
        CU_ASSERT_EQUAL_FATAL(import_threads(fsc_test_data(files[f]), "1", 0, &one, &s1, &err), 0);
        CU_ASSERT_EQUAL_FATAL(import_threads(fsc_test_data(files[f]), "", 0, &many, &sn, &err), 0);
        CU_ASSERT(s1.entries > 1000);
        check_same_import(&one, &s1, &many, &sn);
        tp_free(&one);
        tp_free(&many);
    }
}

/* A JSON history of n entries: a segment, then alloc / free_requested /
 * free_completed of one block over and over; entry bad_free frees an
 * address never allocated, entry bad_frame has a frame that is not a dict
 * (0: none). Each block's frames name the step, so new tags come now and
 * then among usual entries. */
static const char *write_history(const char *name, unsigned n, unsigned bad_free,
                                 unsigned bad_frame)
{
    const char *path = fsc_test_path(name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("{\"segments\": [], \"device_traces\": [[", f);
    fprintf(f, "{\"action\": \"segment_alloc\", \"addr\": %llu, \"size\": %llu, \"stream\": 0,"
               " \"time_us\": 1000, \"frames\": []}", A, 20 * MiB);
    static const char *acts[] = {"alloc", "free_requested", "free_completed"};
    for (unsigned i = 1; i < n; i++) {
        unsigned long long addr = i == bad_free ? 0xdead000ull : A;
        const char *act = i == bad_free ? "free_requested" : acts[(i - 1) % 3];
        fprintf(f, ", {\"action\": \"%s\", \"addr\": %llu, \"size\": %u, \"stream\": 0,"
                   " \"time_us\": %u, \"frames\": [",
                act, addr, 4096u, 1000 + i);
        if (i == bad_frame)
            fputs("7", f);
        else
            fprintf(f, "{\"filename\": \"train.py\", \"line\": %u, \"name\": \"step\"}, "
                       "{\"filename\": \"main.py\", \"line\": 1, \"name\": \"main\"}",
                    (i - 1) / 300);
        fputs("]}", f);
    }
    fputs("]]}", f);
    CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
    return path;
}

static void test_block_thread_errors(void)
{
    tp_col_t one, many;
    fsc_import_stats_t s1, sn;
    fsc_err_t e1 = {0}, en = {0};
    /* a clean history: the same stream */
    const char *p = write_history("rq_clean.json", 12001, 0, 0);
    CU_ASSERT_EQUAL_FATAL(import_threads(p, "1", 0, &one, &s1, &e1), 0);
    CU_ASSERT_EQUAL_FATAL(import_threads(p, "", 0, &many, &sn, &en), 0);
    CU_ASSERT_EQUAL(s1.allocs, 4000);
    check_same_import(&one, &s1, &many, &sn);
    tp_free(&one);
    tp_free(&many);
    /* the block model fails at entry 4, a frame is bad at entry 9000: the
     * first is reported, as on one thread */
    p = write_history("rq_free_first.json", 12001, 4, 9000);
    CU_ASSERT_EQUAL(import_threads(p, "1", 0, &one, &s1, &e1), FSC_ESTATE);
    CU_ASSERT_EQUAL(import_threads(p, "", 0, &many, &sn, &en), FSC_ESTATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(en.msg, "device_traces[0][4] (free_requested at 0xdead000"));
    CU_ASSERT_STRING_EQUAL(e1.msg, en.msg);
    CU_ASSERT_EQUAL(one.n, many.n); /* what came before, delivered */
    tp_free(&one);
    tp_free(&many);
    /* and the other way round */
    p = write_history("rq_frame_first.json", 12001, 9000, 4);
    CU_ASSERT_EQUAL(import_threads(p, "1", 0, &one, &s1, &e1), FSC_EFORMAT);
    CU_ASSERT_EQUAL(import_threads(p, "", 0, &many, &sn, &en), FSC_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(en.msg, "a Python frame is not a dict"));
    CU_ASSERT_STRING_EQUAL(e1.msg, en.msg);
    CU_ASSERT_EQUAL(one.n, many.n);
    tp_free(&one);
    tp_free(&many);
    /* lenient: the bad free late in the history is a warning, the rest
     * comes through the same */
    p = write_history("rq_lenient.json", 12001, 11000, 0);
    CU_ASSERT_EQUAL_FATAL(import_threads(p, "1", 1, &one, &s1, &e1), 0);
    CU_ASSERT_EQUAL_FATAL(import_threads(p, "", 1, &many, &sn, &en), 0);
    CU_ASSERT_EQUAL(sn.warnings, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(sn.first_warning, "device_traces[0][11000]"));
    check_same_import(&one, &s1, &many, &sn);
    tp_free(&one);
    tp_free(&many);
}

static void count_progress(void *ud, uint64_t done, uint64_t total)
{
    uint64_t *calls = ud;
    calls[0]++;
    calls[1] = done;
    calls[2] = total;
}

static void test_progress(void)
{
    uint64_t calls[3] = {0, 0, 0};
    fsc_import_opts_t o = FSC_IMPORT_OPTS_DEFAULT;
    o.progress = count_progress;
    o.progress_ud = calls;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_pytorch_import(fsc_test_data("pytorch/frames_bomb.pickle"), &o,
                                             NULL, NULL, &err), 0);
    /* entries 0, 4096, 8192, 12288, 16384 and the final call */
    CU_ASSERT_EQUAL(calls[0], 6);
    CU_ASSERT_EQUAL(calls[1], 20001);
    CU_ASSERT_EQUAL(calls[2], 20001);
}

static void test_shared_frames_are_cheap(void)
{
    /* 20001 entries share one 2000-frame list: tags are built once */
    tp_col_t c;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    int rc = tp_import(fsc_test_data("pytorch/frames_bomb.pickle"), -1, 0, &c, &st, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(c.tag_calls, 2000);
    CU_ASSERT_EQUAL(c.ntags, 2000);
    CU_ASSERT_EQUAL(st.allocs, 10000);
    CU_ASSERT_EQUAL(st.merges, 10000);
    tp_free(&c);
}

/* ---- the real snapshots ------------------------------------------------ */

static int64_t stat_of(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    return (int64_t)v->valuedouble;
}

static void check_real(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "pytorch/%s.stats.json", name);
    size_t len = 0;
    char *txt = fsc_test_slurp(fsc_test_data(path), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(txt);
    cJSON *stats = cJSON_Parse(txt);
    free(txt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stats);

    snprintf(path, sizeof path, "pytorch/%s.pickle", name);
    tp_col_t c;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    int rc = tp_import(fsc_test_data(path), -1, 0, &c, &st, &err);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(c.peak_alloc, stat_of(stats, "allocated_bytes.all.peak"));
    CU_ASSERT_EQUAL(c.peak_res, stat_of(stats, "reserved_bytes.all.peak"));
    CU_ASSERT_EQUAL(c.alloc, stat_of(stats, "allocated_bytes.all.current"));
    CU_ASSERT_EQUAL(c.res, stat_of(stats, "reserved_bytes.all.current"));
    CU_ASSERT_EQUAL((int64_t)st.peak_allocated, stat_of(stats, "allocated_bytes.all.peak"));
    CU_ASSERT_EQUAL((int64_t)st.peak_reserved, stat_of(stats, "reserved_bytes.all.peak"));
    CU_ASSERT_EQUAL((int64_t)st.allocs, stat_of(stats, "allocation.all.allocated"));
    CU_ASSERT_EQUAL((int64_t)st.frees, stat_of(stats, "allocation.all.freed"));
    CU_ASSERT_EQUAL((int64_t)st.segment_allocs, stat_of(stats, "segment.all.allocated"));
    CU_ASSERT_EQUAL((int64_t)st.segment_allocs, stat_of(stats, "num_device_alloc"));
    CU_ASSERT_EQUAL((int64_t)st.segment_frees, stat_of(stats, "num_device_free"));
    CU_ASSERT_EQUAL((int64_t)st.ooms, stat_of(stats, "num_ooms"));
    CU_ASSERT_EQUAL(st.reconstructed, 0);
    CU_ASSERT_EQUAL(st.warnings, 0);
    CU_ASSERT_STRING_EQUAL(c.config, "");
    /* large/small split of allocations, from the pool of each ALLOC */
    int64_t large = 0, small = 0;
    for (size_t i = 0; i < c.n; i++)
        if (c.r[i].ev.type == FSC_EV_ALLOC)
            *(c.r[i].ev.pool == FSC_POOL_LARGE ? &large : &small) += 1;
    CU_ASSERT_EQUAL(large, stat_of(stats, "allocation.large_pool.allocated"));
    CU_ASSERT_EQUAL(small, stat_of(stats, "allocation.small_pool.allocated"));
    if (st.ooms > 0) {
        for (size_t i = 0; i < c.n; i++) {
            if (c.r[i].ev.type != FSC_EV_OOM)
                continue;
            /* PyTorch: "Tried to allocate 96.00 MiB" */
            CU_ASSERT_EQUAL(c.r[i].ev.requested, 100663296ull);
            CU_ASSERT_EQUAL(c.r[i].ev.oom.reserved, 12851347456ull);
            CU_ASSERT_EQUAL(c.r[i].ev.oom.allocated, 12829982720ull);
        }
    }
    cJSON_Delete(stats);
    tp_free(&c);
}

static void test_real_gpt2(void) { check_real("gpt2_varlen"); }
static void test_real_resnet50(void) { check_real("resnet50_varbatch"); }
static void test_real_oom(void) { check_real("gpt2m_oom_12g"); }

/* torch.compile (reduce-overhead) writes line 2^64-1 for frames without a
 * line, as a 9-byte LONG1: the file imports, the frame is tagged "?". */
static void test_real_compile(void)
{
    check_real("compile_ro");
    fsc_import_stats_t st;
    tp_col_t c;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(tp_import(fsc_test_data("pytorch/compile_ro.pickle"), -1, 0, &c, &st,
                                    &err), 0);
    CU_ASSERT_EQUAL(st.unknown_lines, 1);
    CU_ASSERT_EQUAL(st.entries, 1284);
    tp_free(&c);
}

/* ---- detection and bad input ------------------------------------------- */

static void test_detect(void)
{
    CU_ASSERT_EQUAL(fsc_pytorch_detect(fsc_test_data("pytorch/tiny.p2.pickle")), FSC_SNAP_PICKLE);
    CU_ASSERT_EQUAL(fsc_pytorch_detect(fsc_test_data("pytorch/tiny.p5.pickle")), FSC_SNAP_PICKLE);
    CU_ASSERT_EQUAL(fsc_pytorch_detect(fsc_test_data("pytorch/tiny.json")), FSC_SNAP_JSON);
    CU_ASSERT_EQUAL(fsc_pytorch_detect(fsc_test_data("pytorch/segments_only.json")),
                    FSC_SNAP_JSON);
    CU_ASSERT_EQUAL(fsc_pytorch_detect(fsc_test_data("pytorch/hostile/garbage.bin")), 0);
    CU_ASSERT_EQUAL(fsc_pytorch_detect(fsc_test_data("pytorch/hostile/bad_proto.pickle")), 0);
    CU_ASSERT_EQUAL(fsc_pytorch_detect(fsc_test_path("does-not-exist.pickle")), FSC_ENOENT);
}

static void test_bad_inputs(void)
{
    static const struct {
        const char *file;
        int code;
        const char *msg;
    } cases[] = {
        {"garbage.bin", FSC_EFORMAT, "not a PyTorch memory snapshot"},
        {"torch_save.zip", FSC_EFORMAT, "a zip archive (torch.save?), not a memory snapshot"},
        {"bad_proto.pickle", FSC_EFORMAT, "not a PyTorch memory snapshot"},
        {"bad.json", FSC_EFORMAT, "invalid JSON"},
        {"notsnap.pickle", FSC_EFORMAT, "not a memory snapshot"},
        {"memo_bomb.pickle", FSC_EFORMAT, "segments[0] is not a dict"},
        {"deep.pickle", FSC_ELIMIT, "nesting deeper than 64"},
        {"huge_len.pickle", FSC_EFORMAT, "offset 2: BINUNICODE length 2147483647 goes past"},
        {"memo_oob.pickle", FSC_EFORMAT, "offset 2: BINGET: memo reference 5 out of range"},
        {"global.pickle", FSC_EFORMAT, "opcode 0x63 not supported"},
        {"no_stop.pickle", FSC_EFORMAT, "truncated"},
        {"deep.json", FSC_ELIMIT, "JSON nested deeper than 64 levels"},
        {"negative_size.json", FSC_EFORMAT,
         "device_traces[0][1] (alloc) lacks a non-negative 'addr' or 'size'"},
        {"huge_size.pickle", FSC_EFORMAT, "size 4611686018427387904 is not plausible"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "pytorch/hostile/%s", cases[i].file);
        const char *p = fsc_test_data(rel);
        tp_col_t c;
        fsc_err_t err = {0};
        int rc = tp_import(p, -1, 0, &c, NULL, &err);
        if (rc != cases[i].code || strstr(err.msg, cases[i].msg) == NULL ||
            strncmp(err.msg, p, strlen(p)) != 0)
            fprintf(stderr, "\n%s: rc %d, '%s'\n", cases[i].file, rc, err.msg);
        CU_ASSERT_EQUAL(rc, cases[i].code);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, cases[i].msg));
        CU_ASSERT_EQUAL(strncmp(err.msg, p, strlen(p)), 0); /* names the file */
        CU_ASSERT_EQUAL(c.n, 0);
        CU_ASSERT_EQUAL(c.headers, 0);
        tp_free(&c);
    }
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL(fsc_pytorch_import(fsc_test_path("missing.pickle"), NULL, NULL, NULL, &err),
                    FSC_ENOENT);
}

static void test_truncated_snapshots(void)
{
    /* every cut of a real snapshot is rejected cleanly */
    size_t len = 0;
    char *data = fsc_test_slurp(fsc_test_data("pytorch/tiny.p2.pickle"), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    const char *cut = fsc_test_path("cut.pickle");
    for (size_t n = 0; n < len; n += 7) {
        unlink(cut);
        FILE *f = fopen(cut, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fwrite(data, 1, n, f);
        fclose(f);
        fsc_err_t err = {0};
        int rc = fsc_pytorch_import(cut, NULL, NULL, NULL, &err);
        CU_ASSERT_EQUAL(rc, FSC_EFORMAT);
    }
    free(data);
}

static void test_corrupted_snapshots(void)
{
    /* every byte of a snapshot replaced by a few values: the import either
     * succeeds or fails with a message naming the file; never crashes
     * (this suite also runs under ASan/UBSan) */
    static const char *files[] = {"pytorch/tiny.p4.pickle", "pytorch/midrun.pickle"};
    static const unsigned char subst[] = {0x00, 0xff, 'K', 'h'};
    const char *mut = fsc_test_path("mutated.pickle");
    for (size_t fi = 0; fi < 2; fi++) {
        size_t len = 0;
        char *data = fsc_test_slurp(fsc_test_data(files[fi]), &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(data);
        int ok = 0, failed = 0;
        size_t tried = 0;
        for (size_t i = 2; i < len; i++) {
            for (size_t k = 0; k < sizeof subst; k++) {
                char saved = data[i];
                data[i] = (char)subst[k];
                /* a new file each time: rewriting one in place makes ext4
                 * flush it on close (auto_da_alloc), which is slow */
                unlink(mut);
                FILE *f = fopen(mut, "wb");
                CU_ASSERT_PTR_NOT_NULL_FATAL(f);
                fwrite(data, 1, len, f);
                fclose(f);
                data[i] = saved;
                tried++;
                fsc_err_t err = {0};
                int rc = fsc_pytorch_import(mut, NULL, NULL, NULL, &err);
                if (rc == 0) {
                    ok++;
                } else {
                    failed++;
                    CU_ASSERT_EQUAL(strncmp(err.msg, mut, strlen(mut)), 0);
                }
            }
        }
        CU_ASSERT_EQUAL((size_t)(ok + failed), tried);
        CU_ASSERT_EQUAL(tried, (len - 2) * sizeof subst);
        CU_ASSERT(failed > 0);
        CU_ASSERT(ok > 0); /* e.g. a changed digit of a time stamp */
        free(data);
    }
}

static const fsc_test_case_t k_tests[] = {
    {"tiny snapshot: exact events, tags, header", test_tiny_exact},
    {"protocols 0/1/2/4/5 and JSON give one stream", test_formats_agree},
    {"wrapped history: starting state rebuilt", test_midrun_reconstructed},
    {"expandable segments: map/unmap", test_expandable},
    {"segments-only snapshot", test_segments_only},
    {"device selection", test_devices},
    {"contradicting entry: strict and lenient", test_contradiction_strict_and_lenient},
    {"shared frame lists are interned once", test_shared_frames_are_cheap},
    {"a segment at address 0: its blocks modelled as any other", test_segment_at_zero},
    {"progress callback", test_progress},
    {"block model's thread: real snapshots as on one thread", test_block_thread_real},
    {"block model's thread: first error in entry order, lenient", test_block_thread_errors},
    {"real: gpt2_varlen matches PyTorch's stats", test_real_gpt2},
    {"real: resnet50_varbatch matches PyTorch's stats", test_real_resnet50},
    {"real: gpt2m_oom_12g matches PyTorch's stats and OOM", test_real_oom},
    {"real: compile_ro (line 2^64-1) matches PyTorch's stats", test_real_compile},
    {"format detection", test_detect},
    {"bad inputs give one clear error", test_bad_inputs},
    {"truncated snapshots", test_truncated_snapshots},
    {"corrupted snapshots", test_corrupted_snapshots},
    {NULL, NULL},
};

FSC_TEST_MAIN("pytorch_import", k_tests)
