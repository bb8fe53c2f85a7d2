/*
 * test_allocator_analyzer.c — the allocator's event stream honours the
 * contract of fragscope/events.h as the analyzer enforces it: random
 * operation sequences (splits, merges, record_stream, GC, OOM retries,
 * expandable segments) fed to a strict analysis replay without a single
 * contradiction, and the analysis finds the allocator's own peaks.
 */
#include <string.h>

#include "alloc_props.h"
#include "fragscope/allocator.h"
#include "fragscope/analyzer.h"
#include "fsc_test.h"

#define MiB FSC_MiB
#define GiB FSC_GiB

typedef struct feed {
    fsc_analysis_t *an;
    int rc;
    char msg[512];
    int64_t alloc, reserved, peak_alloc, peak_reserved;
} feed_t;

static void feed_sink(void *ud, const fsc_event_t *ev)
{
    feed_t *f = ud;
    if (f->rc != 0)
        return;
    /* the peaks the analysis should find, from the same events */
    if (ev->type == FSC_EV_ALLOC)
        f->alloc += (int64_t)ev->size;
    else if (ev->type == FSC_EV_FREE_REQUESTED)
        f->alloc -= (int64_t)ev->size;
    else if (ev->type == FSC_EV_SEGMENT_ALLOC || ev->type == FSC_EV_SEGMENT_MAP)
        f->reserved += (int64_t)ev->size;
    else if (ev->type == FSC_EV_SEGMENT_FREE || ev->type == FSC_EV_SEGMENT_UNMAP)
        f->reserved -= (int64_t)ev->size;
    if (f->alloc > f->peak_alloc)
        f->peak_alloc = f->alloc;
    if (f->reserved > f->peak_reserved)
        f->peak_reserved = f->reserved;
    f->rc = fsc_analysis_feed(f->an, ev);
    if (f->rc != 0)
        snprintf(f->msg, sizeof f->msg, "%s", fsc_analysis_last_error(f->an));
}

static void run_one(const char *conf, uint64_t total, uint64_t cap, unsigned seed)
{
    fsc_backend_t *be;
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(total, 0, &be), 0);
    fsc_trace_header_t hdr;
    memset(&hdr, 0, sizeof hdr);
    hdr.producer = "test_allocator_analyzer";
    hdr.config = conf;
    hdr.backend = "sim";
    hdr.capacity = cap ? cap : total;
    hdr.device_total = total;
    hdr.rank = -1;
    char name[64];
    snprintf(name, sizeof name, "alloc_%u.db", seed);
    feed_t f;
    memset(&f, 0, sizeof f);
    fsc_err_t e = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_analysis_create(fsc_test_path(name), &hdr, NULL, &f.an, &e), 0);
    const props_opts_t po = {NULL, feed_sink, &f};
    props_result_t r;
    CU_ASSERT_EQUAL(props_run(be, conf, cap, 4000, seed, &po, &r), 0);
    if (f.rc != 0)
        fprintf(stderr, "\n  config \"%s\": analysis refused an event: %s\n", conf, f.msg);
    CU_ASSERT_EQUAL(f.rc, 0);
    CU_ASSERT_EQUAL(r.failures, 0);
    if (f.rc == 0) {
        fsc_analysis_summary_t s;
        CU_ASSERT_EQUAL(fsc_analysis_finish(f.an, &s), 0);
        CU_ASSERT_EQUAL(s.peak_allocated, (uint64_t)f.peak_alloc);
        CU_ASSERT_EQUAL(s.peak_reserved, (uint64_t)f.peak_reserved);
        CU_ASSERT_EQUAL(s.final_allocated, 0);
        CU_ASSERT_EQUAL(s.final_reserved, 0);
        CU_ASSERT_EQUAL(s.num_ooms, (uint64_t)r.ooms);
        CU_ASSERT_EQUAL(s.warnings, 0);
        CU_ASSERT_TRUE(s.events > 5000 && s.peak_allocated > 0);
    }
    fsc_analysis_destroy(f.an);
    fsc_backend_destroy(be);
}

static void test_strict_replay(void)
{
    run_one("", 4 * GiB, 0, 1);
    run_one("max_split_size_mb:64,garbage_collection_threshold:0.6", 4 * GiB, GiB, 2);
    run_one("roundup_power2_divisions:4", 2 * GiB, 0, 3);
    run_one("expandable_segments:True", 2 * GiB, 0, 4);
    run_one("expandable_segments:True,garbage_collection_threshold:0.5", 4 * GiB, GiB, 5);
}

static const fsc_test_case_t k_tests[] = {
    {"strict_replay", test_strict_replay},
    {NULL, NULL},
};

FSC_TEST_MAIN("allocator_analyzer", k_tests)
