/*
 * test_many_pools.c — private pools without a fixed limit: 200 CUDA-graph
 * pools and 200 MemPools side by side (as a compiled model with many graph
 * partitions, or a server capturing a graph per batch size, makes), each
 * keeping its own segments, released one by one; and the same run
 * recorded and replayed by what-if, which must reproduce it exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fragscope/whatif.h"
#include "fsc_test.h"

#define MiB FSC_MiB
#define NGRAPH 200
#define NMEM 200
#define NPOOLS (NGRAPH + NMEM)

/* PyTorch's MempoolId_t (a, b) packed as a << 32 | b: graph pools (0, k)
 * and user MemPools (k, 0). */
static uint64_t pool_id(int i)
{
    return i < NGRAPH ? (uint64_t)(i + 1) : (uint64_t)(i - NGRAPH + 1) << 32;
}

static void to_stream(void *ud, const fsc_event_t *ev)
{
    fsc_err_t err = {0, ""};
    CU_ASSERT(fsc_request_stream_add(ud, ev, &err) == 0);
}

typedef struct seg_count {
    uint64_t segs[NPOOLS + 1];
} seg_count_t;

static void count_seg(void *ud, const fsc_event_t *ev)
{
    seg_count_t *c = ud;
    if (ev->type != FSC_EV_SEGMENT_ALLOC)
        return;
    int k = NPOOLS;
    for (int i = 0; i < NPOOLS; i++)
        if (pool_id(i) == ev->pool_id)
            k = i;
    c->segs[k]++;
}

typedef struct tee {
    fsc_request_stream_t *rs;
    seg_count_t *count;
} tee_t;

static void tee_sink(void *ud, const fsc_event_t *ev)
{
    tee_t *t = ud;
    to_stream(t->rs, ev);
    count_seg(t->count, ev);
}

/* Each pool's requests: a small block and two large ones, the second
 * freed at once; pools never share a segment, and a freed block of one
 * pool never serves another. Then every pool is released in turn and
 * empty_cache gives its segments back; the default pool runs alongside. */
static fsc_request_stream_t *run(fsc_alloc_stats_t *st, seg_count_t *count)
{
    fsc_err_t err = {0, ""};
    fsc_request_stream_t *rs = NULL;
    CU_ASSERT_FATAL(fsc_request_stream_create(&rs, &err) == 0);
    fsc_trace_header_t hdr = {0};
    hdr.config = "";
    hdr.device_total = 80 * FSC_GiB;
    CU_ASSERT_FATAL(fsc_request_stream_set_header(rs, &hdr, &err) == 0);
    fsc_backend_t *be = NULL;
    CU_ASSERT_FATAL(fsc_backend_sim_create(0, 0, &be) == 0);
    tee_t t = {rs, count};
    fsc_allocator_opts_t ao = {FSC_ALLOC_CONFIG_DEFAULT, be, 0, tee_sink, &t};
    fsc_allocator_t *a = NULL;
    CU_ASSERT_FATAL(fsc_allocator_create(&ao, &a, &err) == 0);
    static uint64_t small[NPOOLS], large[NPOOLS];
    uint64_t def[NPOOLS];
    for (int i = 0; i < NPOOLS; i++) {
        uint64_t tmp = 0;
        CU_ASSERT_EQUAL_FATAL(fsc_allocator_malloc_pool(a, 4096 + 512 * (uint64_t)(i % 7), 0,
                                                        pool_id(i), &small[i]),
                              0);
        CU_ASSERT_EQUAL_FATAL(fsc_allocator_malloc_pool(a, 3 * MiB + 4096 * (uint64_t)i, 0,
                                                        pool_id(i), &large[i]),
                              0);
        CU_ASSERT_EQUAL_FATAL(fsc_allocator_malloc_pool(a, 5 * MiB, 0, pool_id(i), &tmp), 0);
        CU_ASSERT_EQUAL(fsc_allocator_free(a, tmp), 0);
        CU_ASSERT_EQUAL_FATAL(fsc_allocator_malloc(a, 2 * MiB + 512 * (uint64_t)i, 0, &def[i]),
                              0);
    }
    /* release half of the pools, as a MemPool's destructor does, and empty
     * the cache: only their segments go */
    for (int i = 0; i < NPOOLS; i += 2) {
        CU_ASSERT_EQUAL(fsc_allocator_free(a, small[i]), 0);
        CU_ASSERT_EQUAL(fsc_allocator_free(a, large[i]), 0);
        CU_ASSERT_EQUAL(fsc_allocator_release_pool(a, pool_id(i)), 0);
    }
    for (int i = 0; i < NPOOLS; i++)
        CU_ASSERT_EQUAL(fsc_allocator_free(a, def[i]), 0);
    CU_ASSERT_EQUAL(fsc_allocator_empty_cache(a), 0);
    fsc_allocator_get_stats(a, st);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    return rs;
}

static void test_pools_side_by_side(void)
{
    fsc_alloc_stats_t st;
    seg_count_t *c = calloc(1, sizeof *c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    fsc_request_stream_t *rs = run(&st, c);
    /* every pool made its own: one small segment (2 MiB), one large for the
     * kept block and one for the freed 5 MiB block (a 20 MiB segment holds
     * both: 3 MiB + 5 MiB fit) */
    for (int i = 0; i < NPOOLS; i++) {
        if (c->segs[i] != 2)
            fprintf(stderr, "pool %d: %llu segments\n", i, (unsigned long long)c->segs[i]);
        CU_ASSERT_EQUAL(c->segs[i], 2);
    }
    /* released pools gave back both segments; the others keep theirs */
    CU_ASSERT_EQUAL(st.num_device_free, (uint64_t)NPOOLS + c->segs[NPOOLS]);
    CU_ASSERT_EQUAL(st.segment[FSC_STAT_ALL].current, NPOOLS);
    /* what-if replays all 400 pools and reproduces every address */
    fsc_whatif_verify_t v;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify(rs, NULL, &v, &err), 0);
    if (!v.match)
        fprintf(stderr, "verify: segments %llu/%llu addresses %llu/%llu\n",
                (unsigned long long)v.segments_got, (unsigned long long)v.segments_expected,
                (unsigned long long)v.alloc_addr_matches, (unsigned long long)v.allocs_compared);
    CU_ASSERT(v.match);
    CU_ASSERT_EQUAL(v.allocs_compared, 4 * (uint64_t)NPOOLS);
    CU_ASSERT_EQUAL(v.alloc_addr_matches, v.allocs_compared);
    fsc_request_stream_destroy(rs);
    free(c);
}

/* The replay measures external fragmentation at each new reserved peak
 * from the free-block summary the allocator keeps (a walk of every block
 * at each peak made a run that grows step by step quadratic). The summary
 * must be what the walk adds up: FRAGSCOPE_WHATIF_CHECK_FREE=1 makes each
 * replay compare them and fail on a difference, here on real recordings
 * with side streams, private pools, expandable segments and a cap. */
static void test_free_summary_is_the_walk(void)
{
    static const char *const inputs[] = {
        "gpu/side_stream.pickle", "gpu/mempool_live.pickle", "gpu/graphed.pickle",
        "gpu/gpt2_emptycache_exp.pickle", "pytorch/gpt2m_oom_12g.pickle",
        "gpu/xset/ckpt_cap0.75_expandable_segments_True.pickle"};
    static const char *const cfgs[] = {"", "expandable_segments:True",
                                       "max_split_size_mb:64,garbage_collection_threshold:0.6"};
    setenv("FRAGSCOPE_WHATIF_CHECK_FREE", "1", 1);
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        fsc_request_stream_t *rs = NULL;
        fsc_err_t err = {0, ""};
        CU_ASSERT_EQUAL_FATAL(fsc_request_stream_load(fsc_test_data(inputs[i]), &rs, &err), 0);
        fsc_whatif_result_t r[3];
        fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
        o.capacity = 8 * FSC_GiB;
        o.past_oom = 1;
        int rc = fsc_whatif_run(rs, cfgs, 3, &o, r, &err);
        if (rc != 0)
            fprintf(stderr, "%s: %s\n", inputs[i], fsc_err_msg(&err));
        CU_ASSERT_EQUAL(rc, 0);
        for (int k = 0; k < 3; k++)
            CU_ASSERT_EQUAL(r[k].rc, 0);
        fsc_request_stream_destroy(rs);
    }
    unsetenv("FRAGSCOPE_WHATIF_CHECK_FREE");
}

static const fsc_test_case_t k_tests[] = {
    {"200 graph pools and 200 MemPools", test_pools_side_by_side},
    {"the free-block summary is what a walk adds up", test_free_summary_is_the_walk},
    {NULL, NULL},
};

FSC_TEST_MAIN("many_pools", k_tests)
