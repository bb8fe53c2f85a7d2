/*
 * test_whatif_snapshots.c — what-if replay of the real PyTorch runs in
 * tests/data/pytorch (PyTorch 2.11, one H200) against the figures PyTorch
 * itself reported in their .stats.json files, and the `fragscope whatif`
 * command line on them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/whatif.h"
#include "fsc_test.h"

/* From the .stats.json files (torch.cuda.memory_stats() of each run). */
#define GPT2_PEAK_RESERVED 22020096000ull    /* reserved_bytes.all.peak */
#define GPT2_PEAK_ALLOCATED 17426674688ull   /* allocated_bytes.all.peak */
#define GPT2_SEGMENTS 251                    /* num_device_alloc */
#define GPT2_ALLOCS 25939                    /* allocation.all.allocated */
#define RESNET_PEAK_RESERVED 7046430720ull
#define RESNET_PEAK_ALLOCATED 4456380416ull
#define RESNET_SEGMENTS 133
#define RESNET_ALLOCS 8670
#define OOM_PEAK_RESERVED 12851347456ull
#define OOM_PEAK_ALLOCATED 12829982720ull
#define OOM_SEGMENTS 284
#define OOM_ALLOCS 712
#define OOM_REQUEST (96 * FSC_MiB) /* "Tried to allocate 96.00 MiB" */
/* the call site of its OOM, as `report` names it */
#define OOM_SITE "activations.py:66 forward ← modeling_gpt2.py:240 forward ← " \
                 "modeling_gpt2.py:305 forward"
#define OOM_CAP (12 * FSC_GiB)     /* set_per_process_memory_fraction: 12 GiB */

static fsc_request_stream_t *load(const char *name)
{
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    int rc = fsc_request_stream_load(fsc_test_data(name), &rs, &err);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", name, fsc_err_msg(&err));
    CU_ASSERT_EQUAL(rc, 0);
    return rs;
}

static void check_verify(const char *name, uint64_t capacity, uint64_t peak_reserved,
                         uint64_t peak_allocated, uint64_t segments, uint64_t allocs)
{
    fsc_request_stream_t *rs = load(name);
    if (rs == NULL)
        return;
    fsc_request_stream_info_t in;
    fsc_request_stream_info(rs, &in);
    CU_ASSERT_EQUAL(in.recorded_peak_reserved, peak_reserved);
    CU_ASSERT_EQUAL(in.recorded_peak_allocated, peak_allocated);
    CU_ASSERT_EQUAL(in.recorded_segments, segments);
    CU_ASSERT_STRING_EQUAL(in.config, "");
    fsc_whatif_verify_t v;
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = capacity;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify(rs, &o, &v, &err), 0);
    CU_ASSERT_EQUAL(v.match, 1);
    CU_ASSERT_EQUAL(v.first_divergence, -1);
    CU_ASSERT_EQUAL(v.segments_expected, segments);
    CU_ASSERT_EQUAL(v.segments_got, segments);
    CU_ASSERT_EQUAL(v.peak_reserved_got, peak_reserved);
    CU_ASSERT_EQUAL(v.peak_allocated_got, peak_allocated);
    /* Every block at the address PyTorch returned. */
    CU_ASSERT_EQUAL(v.allocs_compared, allocs);
    CU_ASSERT_EQUAL(v.alloc_addr_matches, allocs);
    CU_ASSERT_EQUAL(v.first_addr_mismatch, -1);
    fsc_request_stream_destroy(rs);
}

static void test_gpt2_varlen_reproduced(void)
{
    check_verify("pytorch/gpt2_varlen.pickle", 0, GPT2_PEAK_RESERVED, GPT2_PEAK_ALLOCATED,
                 GPT2_SEGMENTS, GPT2_ALLOCS);
}

static void test_resnet50_varbatch_reproduced(void)
{
    check_verify("pytorch/resnet50_varbatch.pickle", 0, RESNET_PEAK_RESERVED,
                 RESNET_PEAK_ALLOCATED, RESNET_SEGMENTS, RESNET_ALLOCS);
}

/* Under its 12 GiB cap the GPT-2 medium run fails the same 96 MiB request
 * after one retry (num_alloc_retries 1, num_ooms 1), with every earlier
 * figure PyTorch's; without the cap the same request is served. */
static void test_gpt2m_oom_reproduced(void)
{
    check_verify("pytorch/gpt2m_oom_12g.pickle", OOM_CAP, OOM_PEAK_RESERVED, OOM_PEAK_ALLOCATED,
                 OOM_SEGMENTS, OOM_ALLOCS);
    fsc_request_stream_t *rs = load("pytorch/gpt2m_oom_12g.pickle");
    if (rs == NULL)
        return;
    fsc_request_stream_info_t in;
    fsc_request_stream_info(rs, &in);
    CU_ASSERT_EQUAL(in.recorded_ooms, 1);
    fsc_whatif_result_t r;
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    fsc_err_t err = {0, ""};
    o.capacity = OOM_CAP;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_replay(rs, "", &o, &r, &err), 0);
    CU_ASSERT_EQUAL(r.oom, 1);
    CU_ASSERT_EQUAL(r.first_oom.request, OOM_ALLOCS); /* the request after the 712 served */
    CU_ASSERT_EQUAL(r.first_oom.requested, OOM_REQUEST);
    CU_ASSERT_EQUAL(r.num_alloc_retries, 1);
    CU_ASSERT_EQUAL(r.num_ooms, 1);
    CU_ASSERT_STRING_EQUAL(r.first_oom.tag, OOM_SITE);
    CU_ASSERT_EQUAL(r.first_oom.recorded_oom, 0);
    o.capacity = 0;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_replay(rs, "", &o, &r, &err), 0);
    CU_ASSERT_EQUAL(r.oom, 0);

    /* The smallest cap that serves it: reserved at the OOM (= the peak,
     * nothing was releasable) + the 96 MiB segment the miss needed. */
    uint64_t need = 0;
    CU_ASSERT_EQUAL(fsc_whatif_needed_capacity(rs, "", 0, &need, &err), 0);
    CU_ASSERT_EQUAL(need, OOM_PEAK_RESERVED + OOM_REQUEST);
    fsc_request_stream_destroy(rs);
}

/* expandable_segments on the GPT-2 stream: PyTorch's 251 mappings
 * (DESIGN.md fidelity notes) in one segment per pool, 17.43 GiB reserved at
 * the peak instead of 20.51 GiB. */
static void test_gpt2_expandable(void)
{
    fsc_request_stream_t *rs = load("pytorch/gpt2_varlen.pickle");
    if (rs == NULL)
        return;
    const char *cfgs[] = {"", "expandable_segments:True"};
    fsc_whatif_result_t r[2];
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_run(rs, cfgs, 2, NULL, r, &err), 0);
    CU_ASSERT_EQUAL(r[0].peak_reserved, GPT2_PEAK_RESERVED);
    CU_ASSERT_EQUAL(r[0].segments, GPT2_SEGMENTS);
    CU_ASSERT_EQUAL(r[1].segment_maps, 251);
    CU_ASSERT_EQUAL(r[1].segments, 2);
    CU_ASSERT_EQUAL(r[1].peak_reserved, 18710790144ull);
    CU_ASSERT(r[1].oom == 0 && r[0].oom == 0);
    fsc_request_stream_destroy(rs);
}

/* ---- the command line ---------------------------------------------------------- */

static char g_out[1 << 16];

static void test_cli_json(void)
{
    int st = fsc_test_sh(g_out, sizeof g_out,
                         "%s whatif %s --capacity 12GiB --config '' "
                         "--config expandable_segments:True --format json 2>&1",
                         fsc_test_fragscope(), fsc_test_data("pytorch/gpt2m_oom_12g.pickle"));
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT(g_out[0] == '[');
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "{\"config\": \"\", \"capacity_bytes\": 12884901888, "
                                         "\"peak_reserved_bytes\": 12851347456, "
                                         "\"peak_allocated_bytes\": 12829982720"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"num_alloc_retries\": 1, \"num_ooms\": 1, "
                                         "\"oom\": true, \"run_complete\": false, "
                                         "\"margin_bytes\": null, \"window\": null, "
                                         "\"recorder_skipped\": 0, "
                                         "\"recorder_skipped_by_kind\": {}, "
                                         "\"first_oom\": {\"index\": 712"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"requested_bytes\": 100663296"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "{\"config\": \"expandable_segments:True\""));
}

static void test_cli_verify_and_suggest(void)
{
    int st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --verify 2>&1", fsc_test_fragscope(),
                         fsc_test_data("pytorch/resnet50_varbatch.pickle"));
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "the replay reproduces the recording"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "block addresses matching the recording: 8670 of 8670"));
    /* Under a cap it was not recorded with, the resnet run differs. */
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --verify --capacity 6GiB 2>&1",
                     fsc_test_fragscope(), fsc_test_data("pytorch/resnet50_varbatch.pickle"));
    CU_ASSERT_EQUAL(st, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "the replay DIFFERS"));
    /* ... and says where its addresses first part from the recording:
     * the request, its recorded event and both addresses, as the API has
     * them; in JSON too, and null where every address matches. */
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(
        fsc_request_stream_load(fsc_test_data("pytorch/resnet50_varbatch.pickle"), &rs, &err), 0);
    fsc_whatif_opts_t o;
    memset(&o, 0, sizeof o);
    o.capacity = 6ull << 30;
    fsc_whatif_verify_t v;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify(rs, &o, &v, &err), 0);
    fsc_request_stream_destroy(rs);
    CU_ASSERT_FATAL(v.first_addr_mismatch > 0);
    CU_ASSERT(v.mismatch_expected_addr != 0 && v.mismatch_expected_addr != v.mismatch_got_addr);
    char want[256];
    snprintf(want, sizeof want,
             "first address that differs: request %ld (recorded event %llu), recorded 0x%llx, ",
             v.first_addr_mismatch, (unsigned long long)v.mismatch_event,
             (unsigned long long)v.mismatch_expected_addr);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, want));
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --verify --capacity 6GiB --format json",
                     fsc_test_fragscope(), fsc_test_data("pytorch/resnet50_varbatch.pickle"));
    CU_ASSERT_EQUAL(st, 1);
    snprintf(want, sizeof want,
             "\"first_addr_mismatch\": {\"request\": %ld, \"event\": %llu, \"expected_addr\": "
             "%llu, \"got_addr\": %llu}",
             v.first_addr_mismatch, (unsigned long long)v.mismatch_event,
             (unsigned long long)v.mismatch_expected_addr,
             (unsigned long long)v.mismatch_got_addr);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, want));
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --verify --format json",
                     fsc_test_fragscope(), fsc_test_data("pytorch/resnet50_varbatch.pickle"));
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"alloc_addr_matches\": 8670, \"first_addr_mismatch\": null"));

    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --capacity 12GiB --suggest 2>&1",
                     fsc_test_fragscope(), fsc_test_data("pytorch/gpt2m_oom_12g.pickle"));
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "the run's own settings need 12.06 GiB"));
}

/* whatif names the OOM's call site and number as `report` does. */
static void test_cli_site_as_report(void)
{
    const char *db = fsc_test_path("site.db");
    const char *snap = fsc_test_data("pytorch/gpt2m_oom_12g.pickle");
    int st = fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s 2>&1", fsc_test_fragscope(),
                         snap, db);
    CU_ASSERT_EQUAL_FATAL(st, 0);
    st = fsc_test_sh(g_out, sizeof g_out, "%s report %s 2>&1", fsc_test_fragscope(), db);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\n  #0 at event 1555: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\n    call site: " OOM_SITE "\n"));
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --capacity 12GiB --config '' 2>&1",
                     fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "(recorded event 1555), 96.00 MiB requested; the "
                                         "recording's OOM #0 failed there too\n"
                                         "  call site: " OOM_SITE "\n"));
    st = fsc_test_sh(g_out, sizeof g_out,
                     "%s whatif %s --capacity 12GiB --config '' --format json 2>&1",
                     fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"tag\": \"" OOM_SITE "\", \"recorded_oom\": 0, "));
    /* the frame filter switched off: nn.Module's call machinery too */
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --capacity 12GiB --config '' "
                                          "--all-frames 2>&1", fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "  call site: activations.py:66 forward ← "
                                         "module.py:1790 _call_impl ← module.py:1779 "
                                         "_wrapped_call_impl\n"));
    /* the viewer numbers it the same: #0, anchor #oom-0 */
    const char *html = fsc_test_path("site.html");
    st = fsc_test_sh(g_out, sizeof g_out, "%s view %s -o %s 2>&1", fsc_test_fragscope(), db, html);
    CU_ASSERT_EQUAL_FATAL(st, 0);
    char *page = fsc_test_slurp(html, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "<li><b>OOM #0</b> at "));
    CU_ASSERT_PTR_NULL(strstr(page, "OOM #1"));
    free(page);
}

/* The suggestions table of a database analyzed from the same snapshot: the
 * cap is unknown, inferred to lie in [12851347456, 12952010752) B. No
 * setting of the grid gets past the 96 MiB request at every cap in that
 * range (expandable segments do at its top, not at its bottom), so no row
 * claims one does: the table is empty rather than holding a guess. */
static void test_cli_db(void)
{
    const char *db = fsc_test_path("oom.db");
    int st = fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s 2>&1", fsc_test_fragscope(),
                         fsc_test_data("pytorch/gpt2m_oom_12g.pickle"), db);
    CU_ASSERT_EQUAL_FATAL(st, 0);
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --db %s 2>&1", fsc_test_fragscope(),
                     fsc_test_data("pytorch/gpt2m_oom_12g.pickle"), db);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "wrote 0 suggestion rows into"));
    st = fsc_test_sh(g_out, sizeof g_out, "sqlite3 %s \"SELECT count(*) FROM suggestions\" 2>&1",
                     db);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_STRING_EQUAL(g_out, "0\n");
    /* with the cap given, at its top: expandable segments serve it */
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --db %s --capacity 12952010751 2>&1",
                     fsc_test_fragscope(), fsc_test_data("pytorch/gpt2m_oom_12g.pickle"), db);
    CU_ASSERT_EQUAL(st, 0);
    st = fsc_test_sh(g_out, sizeof g_out,
                     "sqlite3 %s \"SELECT group_concat(config, '|') FROM suggestions WHERE "
                     "avoids_oom = 1 AND oom_id = 0\" 2>&1",
                     db);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "expandable_segments:True"));
}

static void test_cli_errors(void)
{
    int st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --config max_split_size_mb:huge 2>&1",
                         fsc_test_fragscope(), fsc_test_data("pytorch/gpt2m_oom_12g.pickle"));
    CU_ASSERT_EQUAL(st, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "max_split_size_mb:huge"));
    CU_ASSERT_PTR_NOT_NULL(strchr(g_out, '\n'));
    CU_ASSERT_PTR_NULL(strchr(strchr(g_out, '\n') + 1, '\n')); /* one line */

    const char *junk = fsc_test_path("junk.bin");
    FILE *f = fopen(junk, "wb");
    CU_ASSERT_FATAL(f != NULL);
    fputs("this is neither a trace nor a snapshot\n", f);
    fclose(f);
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --config '' 2>&1", fsc_test_fragscope(),
                     junk);
    CU_ASSERT_EQUAL(st, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "junk.bin: neither a fragscope trace nor a PyTorch"));
    CU_ASSERT_PTR_NULL(strchr(strchr(g_out, '\n') + 1, '\n'));

    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s 2>&1", fsc_test_fragscope(), junk);
    CU_ASSERT_EQUAL(st, 2); /* nothing to do */
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --config '' --suggest --format json 2>&1",
                     fsc_test_fragscope(), junk);
    CU_ASSERT_EQUAL(st, 2);
}

/* A recording that ends at an OOM is a prefix of a run: every suggestion
 * says so, and verify without --capacity replays at the inferred lower
 * bound on the cap (the highest reserved figure) and reproduces it. */
static void test_cli_oom_prefix(void)
{
    const char *snap = fsc_test_data("pytorch/gpt2m_oom_12g.pickle");
    int st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --suggest --format json 2>/dev/null",
                         fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT(g_out[0] == '[');
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"run_complete\": false"));
    CU_ASSERT_PTR_NULL(strstr(g_out, "\"run_complete\": true"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"capacity_bytes\": 12851347456"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "the recorded part needs"));
    /* the cap lies in [12851347456, 12952010752): no claim that a setting
     * serves the failed request unless it does at both ends; expandable
     * segments serve it at the top only, so it depends on the cap */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"capacity_upper_bytes\": 12952010752"));
    CU_ASSERT_PTR_NULL(strstr(g_out, "\"avoids_oom\": true"));
    CU_ASSERT_PTR_NULL(strstr(g_out, "\"helps\": true"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"config\": \"expandable_segments:True\", \"helps\": "
                                         "false, \"capacity_bytes\": 12851347456, "
                                         "\"capacity_upper_bytes\": 12952010752, "
                                         "\"avoids_at_lower\": false, \"avoids_at_upper\": true"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "depends on the cap, which the recording does not say"));
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --verify 2>&1", fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "the replay reproduces the recording"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "not recorded; replayed at 11.97 GiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "block addresses matching the recording: 712 of 712"));
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --verify --format json 2>&1",
                     fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"capacity_inferred\": true, \"capacity_lower\": "
                                         "12851347456, \"capacity_upper\": 12952010752, "
                                         "\"run_complete\": false"));
    /* The text says what "ok" means for a prefix. */
    st = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --capacity 13GiB --config '' 2>&1",
                     fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "ok*"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "serves the request that failed and everything"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "left under the cap when the failed request is served"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "--capacity X"));
}

static const fsc_test_case_t k_tests[] = {
    {"gpt2_varlen replayed with its settings", test_gpt2_varlen_reproduced},
    {"resnet50_varbatch replayed with its settings", test_resnet50_varbatch_reproduced},
    {"gpt2m_oom_12g OOM reproduced under 12 GiB", test_gpt2m_oom_reproduced},
    {"gpt2_varlen with expandable segments", test_gpt2_expandable},
    {"whatif --format json", test_cli_json},
    {"whatif --verify and --suggest", test_cli_verify_and_suggest},
    {"whatif --db fills the suggestions table", test_cli_db},
    {"whatif names the OOM site as report does", test_cli_site_as_report},
    {"whatif errors", test_cli_errors},
    {"whatif on a recording that ends at an OOM", test_cli_oom_prefix},
    {NULL, NULL},
};

FSC_TEST_MAIN("whatif_snapshots", k_tests)
