/*
 * test_whatif_habits.c — what-if on real H200 recordings of common habits
 * (tests/data/gpu, from bench/gpu/results/2026-12-01): empty_cache()
 * every 3 steps with and without expandable segments, a side stream with
 * record_stream, an OOM under a cap and the same job uncapped. Each replay
 * is checked against PyTorch's own figures (NAME.stats.json: memory_stats()
 * and the outcome), and the rules that make it so are pinned on streams
 * built event by event.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/whatif.h"
#include "fsc_test.h"
#include "fsc_test_gpu.h"

#define MiB FSC_MiB

/* The replay with the run's own settings gives every block address and
 * both peaks of the recording, and PyTorch's own peaks. */
static void verify_exact(const char *name, uint64_t capacity)
{
    fsc_request_stream_t *rs = fsc_test_gpu_stream(name);
    cJSON *st = fsc_test_gpu_stats(name);
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = capacity;
    fsc_whatif_verify_t v;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify(rs, &o, &v, &err), 0);
    if (!v.match || v.alloc_addr_matches != v.allocs_compared)
        fprintf(stderr, "%s: segments %llu/%llu, addresses %llu/%llu\n", name,
                (unsigned long long)v.segments_got, (unsigned long long)v.segments_expected,
                (unsigned long long)v.alloc_addr_matches, (unsigned long long)v.allocs_compared);
    CU_ASSERT(v.match);
    CU_ASSERT_EQUAL(v.alloc_addr_matches, v.allocs_compared);
    CU_ASSERT_EQUAL(v.allocs_compared, fsc_test_stat_u64(st, "allocation.all.allocated"));
    CU_ASSERT_EQUAL(v.peak_reserved_got, fsc_test_stat_u64(st, "reserved_bytes.all.peak"));
    CU_ASSERT_EQUAL(v.peak_allocated_got, fsc_test_stat_u64(st, "allocated_bytes.all.peak"));
    CU_ASSERT_EQUAL(v.segments_got, fsc_test_stat_u64(st, "num_device_alloc"));
    cJSON_Delete(st);
    fsc_request_stream_destroy(rs);
}

/* empty_cache() after steps 2, 5 and 8: PyTorch records only the segment
 * releases; each burst is the program's, replayed at the same point. */
static void test_emptycache(void)
{
    verify_exact("gpt2_emptycache", 0);
    fsc_request_stream_t *rs = fsc_test_gpu_stream("gpt2_emptycache");
    fsc_request_stream_info_t info;
    fsc_request_stream_info(rs, &info);
    CU_ASSERT_EQUAL(info.inferred_empty_caches, 3);
    CU_ASSERT_EQUAL(info.run_complete, 1);
    fsc_request_stream_destroy(rs);
}

/* The same with expandable segments: empty_cache() unmaps free pages. */
static void test_emptycache_expandable(void)
{
    verify_exact("gpt2_emptycache_exp", 0);
    fsc_request_stream_t *rs = fsc_test_gpu_stream("gpt2_emptycache_exp");
    fsc_request_stream_info_t info;
    fsc_request_stream_info(rs, &info);
    CU_ASSERT_EQUAL(info.inferred_empty_caches, 3);
    fsc_request_stream_destroy(rs);
}

static void test_side_stream(void)
{
    verify_exact("side_stream", 0);
}

static void test_uncapped(void)
{
    verify_exact("gpt2_uncapped", 0);
}

/* make_graphed_callables: the capture allocates into the graph's private
 * pool (segment_pool_id (0, 1)), whose segments serve only it and stay
 * through the empty_cache() that torch.cuda.graph() calls. */
static void test_graph_pool(void)
{
    verify_exact("graphed", 0);
}

/* torch.compile(mode="reduce-overhead"): CUDA graph trees in a private pool. */
static void test_compile_reduce_overhead(void)
{
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(
        fsc_request_stream_load(fsc_test_data("pytorch/compile_ro.pickle"), &rs, &err), 0);
    fsc_whatif_verify_t v;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify(rs, NULL, &v, &err), 0);
    CU_ASSERT(v.match);
    CU_ASSERT_EQUAL(v.alloc_addr_matches, 426);
    CU_ASSERT_EQUAL(v.allocs_compared, 426);
    CU_ASSERT_EQUAL(v.peak_reserved_got, 201326592);  /* reserved_bytes.all.peak */
    CU_ASSERT_EQUAL(v.peak_allocated_got, 134763520); /* allocated_bytes.all.peak */
    fsc_request_stream_destroy(rs);
}

/* A snapshot that ends at an OOM under a cap it does not record: the
 * verify replays at the inferred lower bound and reproduces the run; every
 * suggestion covers only the recorded prefix. */
static void test_oom_prefix(void)
{
    verify_exact("gpt2_cap0.80_default", 0);
    fsc_request_stream_t *rs = fsc_test_gpu_stream("gpt2_cap0.80_default");
    fsc_request_stream_info_t info;
    fsc_request_stream_info(rs, &info);
    CU_ASSERT_EQUAL(info.ends_at_oom, 1);
    CU_ASSERT_EQUAL(info.run_complete, 0);
    /* PyTorch: 8.42 GiB allowed (cap_bytes 9037684932) lies in the bounds */
    CU_ASSERT(info.capacity_lower <= 9037684932ull && 9037684932ull < info.capacity_upper);
    fsc_suggestion_t *s = NULL;
    size_t n = 0;
    fsc_err_t err = {0, ""};
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = 9037684932ull;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_suggest_opts(rs, &o, &s, &n, &err), 0);
    CU_ASSERT(n > 0);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(s[i].run_complete, 0);
        CU_ASSERT_PTR_NULL(strstr(s[i].note, "completes"));
    }
    fsc_suggestions_free(s);
    fsc_request_stream_destroy(rs);
}

/* The uncapped recording replayed under the caps of the capped runs
 * predicts what each of them really did, under four settings: outcome,
 * both peaks, retries and OOMs as PyTorch counted them. */
static void test_predicts_capped_runs(void)
{
    fsc_request_stream_t *rs = fsc_test_gpu_stream("gpt2_uncapped");
    static const char *const cfgs[] = {"", "expandable_segments:True",
                                       "garbage_collection_threshold:0.6",
                                       "max_split_size_mb:64"};
    static const char *const names[] = {"default", "expandable_segments_True",
                                        "garbage_collection_threshold_0_6",
                                        "max_split_size_mb_64"};
    static const char *const caps[] = {"0.80", "0.90"};
    int ooms = 0, oks = 0;
    for (size_t c = 0; c < 2; c++) {
        char first[96];
        snprintf(first, sizeof first, "gpt2_cap%s_default", caps[c]);
        cJSON *st0 = fsc_test_gpu_stats(first);
        fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
        o.capacity = fsc_test_stat_u64(st0, "cap_bytes");
        cJSON_Delete(st0);
        fsc_whatif_result_t r[4];
        fsc_err_t err = {0, ""};
        CU_ASSERT_EQUAL_FATAL(fsc_whatif_run(rs, cfgs, 4, &o, r, &err), 0);
        for (size_t i = 0; i < 4; i++) {
            char name[96];
            snprintf(name, sizeof name, "gpt2_cap%s_%s", caps[c], names[i]);
            cJSON *st = fsc_test_gpu_stats(name);
            const cJSON *out = cJSON_GetObjectItemCaseSensitive(st, "outcome");
            int want_oom = cJSON_IsString(out) && strcmp(out->valuestring, "oom") == 0;
            if (r[i].oom != want_oom || r[i].peak_reserved != fsc_test_stat_u64(st, "reserved_bytes.all.peak"))
                fprintf(stderr, "%s: predicted %s, %llu reserved\n", name,
                        r[i].oom ? "oom" : "ok", (unsigned long long)r[i].peak_reserved);
            CU_ASSERT_EQUAL(r[i].oom, want_oom);
            CU_ASSERT_EQUAL(r[i].run_complete, 1);
            CU_ASSERT_EQUAL(r[i].peak_reserved, fsc_test_stat_u64(st, "reserved_bytes.all.peak"));
            CU_ASSERT_EQUAL(r[i].peak_allocated, fsc_test_stat_u64(st, "allocated_bytes.all.peak"));
            CU_ASSERT_EQUAL((uint64_t)r[i].num_alloc_retries, fsc_test_stat_u64(st, "num_alloc_retries"));
            CU_ASSERT_EQUAL((uint64_t)r[i].num_ooms, fsc_test_stat_u64(st, "num_ooms"));
            ooms += want_oom;
            oks += !want_oom;
            cJSON_Delete(st);
        }
    }
    CU_ASSERT_EQUAL(ooms, 6); /* both outcomes are among them */
    CU_ASSERT_EQUAL(oks, 2);
    fsc_request_stream_destroy(rs);
}

/* ---- the rules, on streams built event by event ------------------------- */

static void add(fsc_request_stream_t *rs, int type, uint64_t addr, uint64_t size,
                uint64_t requested)
{
    fsc_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = (uint8_t)type;
    ev.addr = addr;
    ev.size = size;
    ev.requested = requested;
    if (type == FSC_EV_OOM)
        ev.oom.segment_size = size;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL(fsc_request_stream_add(rs, &ev, &err), 0);
}

#define SA 0x7f0000000000ull
#define SB 0x7f0040000000ull

/* One 20 MiB segment used and freed, then a release burst, then the next
 * request: tail says what follows the burst. */
static fsc_request_stream_t *burst(uint64_t capacity, int tail)
{
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_request_stream_create(&rs, &err), 0);
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.config = "";
    h.capacity = capacity;
    h.flags = capacity ? 0 : FSC_TRACE_F_CAPACITY_UNKNOWN;
    fsc_request_stream_set_header(rs, &h, &err);
    add(rs, FSC_EV_SEGMENT_ALLOC, SA, 20 * MiB, 0);
    add(rs, FSC_EV_ALLOC, SA, 20 * MiB, 20 * MiB);
    add(rs, FSC_EV_FREE_REQUESTED, SA, 20 * MiB, 20 * MiB);
    add(rs, FSC_EV_FREE_COMPLETED, SA, 20 * MiB, 20 * MiB);
    add(rs, FSC_EV_SEGMENT_FREE, SA, 20 * MiB, 0);
    if (tail == 0) { /* a new segment for the next request */
        add(rs, FSC_EV_SEGMENT_ALLOC, SB, 30 * MiB, 0);
        add(rs, FSC_EV_ALLOC, SB, 30 * MiB, 30 * MiB);
    } else { /* the request failed: the release was the OOM retry's */
        add(rs, FSC_EV_OOM, 0, 30 * MiB, 30 * MiB);
    }
    return rs;
}

static void test_release_rules(void)
{
    fsc_request_stream_info_t info;
    /* No cap, no failure: the program released (empty_cache). */
    fsc_request_stream_t *rs = burst(0, 0);
    fsc_request_stream_info(rs, &info);
    CU_ASSERT_EQUAL(info.inferred_empty_caches, 1);
    CU_ASSERT_EQUAL(info.run_complete, 1);
    fsc_request_stream_destroy(rs);
    /* Followed by a failed request: the allocator's retry. */
    rs = burst(0, 1);
    fsc_request_stream_info(rs, &info);
    CU_ASSERT_EQUAL(info.inferred_empty_caches, 0);
    CU_ASSERT_EQUAL(info.ends_at_oom, 1);
    CU_ASSERT_EQUAL(info.run_complete, 0);
    CU_ASSERT_EQUAL(info.capacity_lower, 20 * MiB);
    CU_ASSERT_EQUAL(info.capacity_upper, 30 * MiB);
    fsc_request_stream_destroy(rs);
    /* Under a 40 MiB cap, 20 MiB reserved + the 30 MiB segment did not
     * fit: the allocator released to make room. Under 64 MiB it fitted,
     * so the program did. */
    rs = burst(40 * MiB, 0);
    fsc_request_stream_info(rs, &info);
    CU_ASSERT_EQUAL(info.inferred_empty_caches, 0);
    fsc_request_stream_destroy(rs);
    rs = burst(64 * MiB, 0);
    fsc_request_stream_info(rs, &info);
    CU_ASSERT_EQUAL(info.inferred_empty_caches, 1);
    /* The inferred empty_cache is replayed whatever the settings: the
     * 20 MiB segment is gone before the 30 MiB request, so reserved peaks
     * at 30 MiB, not 50 MiB. */
    fsc_whatif_result_t r;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL(fsc_whatif_replay(rs, "max_split_size_mb:64", NULL, &r, &err), 0);
    CU_ASSERT_EQUAL(r.peak_reserved, 30 * MiB);
    fsc_request_stream_destroy(rs);
}

/* The margin: after serving the request the recording failed, how much of
 * the cap is left. */
static void test_margin(void)
{
    fsc_request_stream_t *rs = burst(0, 1);
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = 64 * MiB;
    fsc_whatif_result_t r;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_replay(rs, "", &o, &r, &err), 0);
    CU_ASSERT_EQUAL(r.oom, 0);
    CU_ASSERT_EQUAL(r.run_complete, 0);
    CU_ASSERT_EQUAL(r.has_margin, 1);
    /* the 20 MiB segment stays cached (nothing needed it released), the
     * 30 MiB request gets its own: 50 MiB reserved, 14 MiB left */
    CU_ASSERT_EQUAL(r.margin, 14 * MiB);
    fsc_request_stream_destroy(rs);
}

/* Gradient checkpointing under roundup_power2_divisions:[256:1,512:2,
 * 1024:4,>:8], ending at an OOM: PyTorch's own reading of the list (its
 * snapshot's allocator_settings) gives [1 GiB, 2 GiB) 4 divisions and 8 from
 * 2 GiB on; the replay at the inferred cap reproduces it. */
static void test_divisions_list(void)
{
    verify_exact("ckpt_cap0.75_divisions_list", 0);
    fsc_alloc_config_t c;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(
        fsc_alloc_config_parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", &c, &err), 0);
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[9], 2);
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[10], 4);
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[11], 8);
}

/* Private pools in the allocator: a pool's free blocks never serve the
 * default pool and the other way round; empty_cache() leaves a pool's
 * segments until the pool is released. */
static void test_pool_rules(void)
{
    fsc_backend_t *be = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(1024 * MiB, 0, &be), 0);
    fsc_allocator_opts_t ao = {FSC_ALLOC_CONFIG_DEFAULT, be, 0, NULL, NULL};
    fsc_allocator_t *a = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&ao, &a, &err), 0);
    const uint64_t pool = 1; /* (0, 1) */
    uint64_t p1 = 0, d1 = 0, p2 = 0;
    CU_ASSERT_EQUAL(fsc_allocator_malloc_pool(a, 12 * MiB, 0, pool, &p1), 0);
    CU_ASSERT_EQUAL(fsc_allocator_free(a, p1), 0);
    /* the pool's cached 12 MiB segment does not serve the default pool */
    CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 12 * MiB, 0, &d1), 0);
    CU_ASSERT(d1 != p1);
    CU_ASSERT_EQUAL(fsc_allocator_free(a, d1), 0);
    /* and the default pool's does not serve the private one: it reuses its own */
    CU_ASSERT_EQUAL(fsc_allocator_malloc_pool(a, 12 * MiB, 0, pool, &p2), 0);
    CU_ASSERT_EQUAL(p2, p1);
    CU_ASSERT_EQUAL(fsc_allocator_free(a, p2), 0);
    fsc_alloc_stats_t st;
    fsc_allocator_get_stats(a, &st);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, 24 * MiB);
    /* empty_cache frees the default pool's segment, keeps the pool's */
    CU_ASSERT_EQUAL(fsc_allocator_empty_cache(a), 0);
    fsc_allocator_get_stats(a, &st);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, 12 * MiB);
    /* once the program releases the pool, its segments go too */
    CU_ASSERT_EQUAL(fsc_allocator_release_pool(a, pool), 0);
    CU_ASSERT_EQUAL(fsc_allocator_empty_cache(a), 0);
    fsc_allocator_get_stats(a, &st);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, 0);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
}

/* With expandable segments PyTorch checks the cap with the request's
 * segment size (21 MiB -> 22 MiB, under a 30 MiB cap) and then maps whole
 * 20 MiB pages: 40 MiB reserved, above the cap. The replay of a recording
 * that does not say how large its device was must allow that too. */
static void test_expandable_pages_past_cap(void)
{
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_request_stream_create(&rs, &err), 0);
    add(rs, FSC_EV_ALLOC, SA, 22 * MiB, 21 * MiB);
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = 30 * MiB;
    fsc_whatif_result_t r;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_replay(rs, "expandable_segments:True", &o, &r, &err), 0);
    CU_ASSERT_EQUAL(r.oom, 0);
    CU_ASSERT_EQUAL(r.peak_reserved, 40 * MiB);
    fsc_request_stream_destroy(rs);
}

static const fsc_test_case_t k_tests[] = {
    {"empty_cache every 3 steps reproduced", test_emptycache},
    {"empty_cache with expandable segments reproduced", test_emptycache_expandable},
    {"side stream with record_stream reproduced", test_side_stream},
    {"uncapped GPT-2 reproduced", test_uncapped},
    {"CUDA graph private pool reproduced", test_graph_pool},
    {"torch.compile reduce-overhead reproduced", test_compile_reduce_overhead},
    {"private pool rules", test_pool_rules},
    {"roundup_power2_divisions list form reproduced", test_divisions_list},
    {"OOM under an unrecorded cap: verify and suggestions", test_oom_prefix},
    {"uncapped run predicts the capped runs (2 caps x 4 settings)", test_predicts_capped_runs},
    {"which segment releases are the program's", test_release_rules},
    {"margin under the cap at the failed request", test_margin},
    {"expandable pages may end above the cap", test_expandable_pages_past_cap},
    {NULL, NULL},
};

FSC_TEST_MAIN("whatif_habits", k_tests)
