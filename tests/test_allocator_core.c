/*
 * test_allocator_core.c — the caching allocator on the sim backend, with
 * exact addresses, sizes and event order: splitting, max_split_size, merging,
 * release, garbage collection, the miss/retry/OOM sequence, record_stream and
 * expandable segments.
 */
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fsc_test.h"

#define MiB FSC_MiB
#define B0 0x7f0000000000ull

/* ---- a recording sink and a small harness ------------------------------ */

typedef struct evlog {
    fsc_event_t ev[256];
    int n;
} evlog_t;

static void log_sink(void *ud, const fsc_event_t *ev)
{
    evlog_t *l = ud;
    if (l->n < 256)
        l->ev[l->n++] = *ev;
}

typedef struct h {
    fsc_backend_t *be;
    fsc_allocator_t *a;
    evlog_t log;
} h_t;

static h_t *h_new(const char *conf, uint64_t total, uint64_t cap)
{
    h_t *h = calloc(1, sizeof *h);
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(total, 0, &h->be), 0);
    fsc_allocator_opts_t o = {0};
    fsc_err_t e = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(conf, &o.config, &e), 0);
    o.backend = h->be;
    o.capacity = cap;
    o.sink = log_sink;
    o.sink_ud = &h->log;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &h->a, &e), 0);
    return h;
}

static void h_free(h_t *h)
{
    fsc_allocator_destroy(h->a);
    fsc_backend_destroy(h->be);
    free(h);
}

static uint64_t h_malloc(h_t *h, uint64_t size, uint64_t stream)
{
    uint64_t addr = 0;
    int rc = fsc_allocator_malloc(h->a, size, stream, &addr);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0)
        fprintf(stderr, "\n  malloc(%llu): %s\n", (unsigned long long)size,
                fsc_allocator_last_error(h->a));
    return addr;
}

static fsc_alloc_stats_t h_stats(h_t *h)
{
    fsc_alloc_stats_t s;
    fsc_allocator_get_stats(h->a, &s);
    return s;
}

/* Compare the log from index `from` with the expected (type, addr, size)
 * triples; addr/size of ~0 are not checked. */
typedef struct exp_ev {
    int type;
    uint64_t addr, size;
} exp_ev_t;
#define ANY UINT64_MAX

static void expect_events(h_t *h, int from, const exp_ev_t *x, int n)
{
    int ok = h->log.n - from == n;
    for (int i = 0; ok && i < n; i++) {
        const fsc_event_t *e = &h->log.ev[from + i];
        ok = e->type == x[i].type && (x[i].addr == ANY || e->addr == x[i].addr) &&
             (x[i].size == ANY || e->size == x[i].size);
    }
    if (!ok) {
        fprintf(stderr, "\n  events from %d:\n", from);
        for (int i = from; i < h->log.n; i++)
            fprintf(stderr, "    %-15s addr=B0+%lld size=%llu\n",
                    fsc_event_type_name(h->log.ev[i].type),
                    (long long)(h->log.ev[i].addr - B0), (unsigned long long)h->log.ev[i].size);
    }
    CU_ASSERT_TRUE(ok);
}

typedef struct walkrec {
    fsc_block_info_t b[64];
    int n;
} walkrec_t;

static void walk_cb(void *ud, const fsc_block_info_t *b)
{
    walkrec_t *w = ud;
    if (w->n < 64)
        w->b[w->n++] = *b;
}

static walkrec_t h_walk(h_t *h)
{
    walkrec_t w = {.n = 0};
    CU_ASSERT_EQUAL(fsc_allocator_walk(h->a, walk_cb, &w), 0);
    return w;
}

/* ---- tests -------------------------------------------------------------- */

static void test_small_pool_split_and_best_fit(void)
{
    h_t *h = h_new("", 0, 0);
    CU_ASSERT_EQUAL(h_malloc(h, 100, 0), B0);
    const exp_ev_t first[] = {{FSC_EV_SEGMENT_ALLOC, B0, 2 * MiB},
                              {FSC_EV_SPLIT, B0, 2 * MiB},
                              {FSC_EV_ALLOC, B0, 512}};
    expect_events(h, 0, first, 3);
    CU_ASSERT_EQUAL(h->log.ev[1].requested, 512);
    CU_ASSERT_EQUAL(h->log.ev[2].requested, 100);
    CU_ASSERT_EQUAL(h->log.ev[2].segment, B0);
    CU_ASSERT_EQUAL(h->log.ev[2].pool, FSC_POOL_SMALL);
    CU_ASSERT_EQUAL(h_malloc(h, 1000, 0), B0 + 512);
    CU_ASSERT_EQUAL(fsc_allocator_free(h->a, B0), 0);
    /* Best fit: the 512 B hole beats the big remainder. */
    CU_ASSERT_EQUAL(h_malloc(h, 512, 0), B0);
    /* Another stream never reuses stream 0's blocks. */
    CU_ASSERT_EQUAL(h_malloc(h, 512, 5), B0 + 2 * MiB);
    uint64_t zero = 77;
    CU_ASSERT_EQUAL(fsc_allocator_malloc(h->a, 0, 0, &zero), 0);
    CU_ASSERT_EQUAL(zero, 0);
    CU_ASSERT_EQUAL(fsc_allocator_free(h->a, B0 + 4096), FSC_EINVAL);
    int before = h->log.n;
    CU_ASSERT_EQUAL(fsc_allocator_malloc(h->a, UINT64_MAX, 0, &zero), FSC_EOOM);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(h->a, 1ull << 60, 0, &zero), FSC_EOOM);
    CU_ASSERT_EQUAL(h->log.n, before);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_allocator_last_error(h->a), "more than 1EB"));
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].current, 512 + 1024 + 512);
    CU_ASSERT_EQUAL(s.requested_bytes[FSC_STAT_ALL].current, 512 + 1000 + 512);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_SMALL].current, 4 * MiB);
    CU_ASSERT_EQUAL(s.segment[FSC_STAT_ALL].current, 2);
    CU_ASSERT_EQUAL(s.num_device_alloc, 2);
    h_free(h);
}

static void test_split_thresholds(void)
{
    /* small pool: a remainder of exactly 512 B is split off, 0 is not */
    h_t *h = h_new("", 0, 0);
    CU_ASSERT_EQUAL(h_malloc(h, MiB, 0), B0);
    CU_ASSERT_EQUAL(h_malloc(h, MiB - 512, 0), B0 + MiB);
    CU_ASSERT_EQUAL(h_malloc(h, 512, 0), B0 + 2 * MiB - 512);
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.segment[FSC_STAT_ALL].current, 1);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].current, 2 * MiB);
    h_free(h);

    /* large pool: remainder 1 MiB is not split (the block is allocated
     * whole), 1 MiB + 512 is */
    h = h_new("", 0, 0);
    CU_ASSERT_EQUAL(h_malloc(h, 19 * MiB, 0), B0);
    s = h_stats(h);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_LARGE].current, 20 * MiB);
    CU_ASSERT_EQUAL(s.requested_bytes[FSC_STAT_LARGE].current, 19 * MiB);
    CU_ASSERT_EQUAL(h_malloc(h, 19 * MiB - 512, 0), B0 + 20 * MiB);
    s = h_stats(h);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_LARGE].current, 39 * MiB - 512);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_LARGE].current, MiB + 512);
    CU_ASSERT_EQUAL(s.inactive_split[FSC_STAT_LARGE].current, 1);
    /* best fit: 1 MiB + 512 is exactly the remainder just split off */
    CU_ASSERT_EQUAL(h_malloc(h, MiB + 1, 0), B0 + 39 * MiB - 512);
    walkrec_t w = h_walk(h);
    CU_ASSERT_EQUAL(w.n, 3);
    CU_ASSERT_EQUAL(w.b[2].addr, B0 + 39 * MiB - 512);
    CU_ASSERT_EQUAL(w.b[2].size, MiB + 512);
    CU_ASSERT_EQUAL(w.b[2].requested, MiB + 1);
    CU_ASSERT_EQUAL(w.b[2].allocated, 1);
    s = h_stats(h);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_LARGE].current, 0);
    CU_ASSERT_EQUAL(s.inactive_split[FSC_STAT_LARGE].current, 0);
    h_free(h);
}

static void test_max_split_size(void)
{
    h_t *h = h_new("max_split_size_mb:20", 0, 0);
    /* oversize: its own segment, never split */
    CU_ASSERT_EQUAL(h_malloc(h, 60 * MiB, 0), B0);
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.oversize_allocations.current, 1);
    CU_ASSERT_EQUAL(s.oversize_segments.current, 1);
    CU_ASSERT_EQUAL(fsc_allocator_free(h->a, B0), 0);
    /* a request below max_split_size never takes the cached oversize block */
    uint64_t small = h_malloc(h, 8 * MiB, 0);
    CU_ASSERT_EQUAL(small, B0 + 60 * MiB);
    /* exactly 20 MiB of slack: not taken */
    CU_ASSERT_EQUAL(h_malloc(h, 40 * MiB, 0), B0 + 80 * MiB);
    /* less than 20 MiB of slack: taken whole */
    CU_ASSERT_EQUAL(h_malloc(h, 40 * MiB + 1, 0), B0);
    walkrec_t w = h_walk(h);
    CU_ASSERT_EQUAL(w.b[0].size, 60 * MiB);
    CU_ASSERT_EQUAL(w.b[0].requested, 40 * MiB + 1);
    s = h_stats(h);
    CU_ASSERT_EQUAL(s.oversize_allocations.current, 2);
    CU_ASSERT_EQUAL(s.oversize_allocations.peak, 2);
    /* 60 and 40 MiB, and the 20 MiB one: segments count at >= max_split */
    CU_ASSERT_EQUAL(s.oversize_segments.current, 3);
    h_free(h);

    /* the tolerance is max_non_split_rounding_mb when set */
    h = h_new("max_split_size_mb:20,max_non_split_rounding_mb:40", 0, 0);
    CU_ASSERT_EQUAL(h_malloc(h, 60 * MiB, 0), B0);
    CU_ASSERT_EQUAL(fsc_allocator_free(h->a, B0), 0);
    CU_ASSERT_EQUAL(h_malloc(h, 22 * MiB, 0), B0);
    h_free(h);
}

static void test_release_oversize_on_miss(void)
{
    /* Under a 100 MiB cap with two cached 30 MiB oversize blocks, a 50 MiB
     * request frees the largest (highest address first) until 50 MiB are
     * released, then allocates without counting a retry. */
    h_t *h = h_new("max_split_size_mb:20", 0, 100 * MiB);
    CU_ASSERT_EQUAL(h_malloc(h, 30 * MiB, 0), B0);
    CU_ASSERT_EQUAL(h_malloc(h, 30 * MiB, 0), B0 + 30 * MiB);
    fsc_allocator_free(h->a, B0);
    fsc_allocator_free(h->a, B0 + 30 * MiB);
    int from = h->log.n;
    CU_ASSERT_EQUAL(h_malloc(h, 50 * MiB, 0), B0);
    const exp_ev_t x[] = {{FSC_EV_SEGMENT_FREE, B0 + 30 * MiB, 30 * MiB},
                          {FSC_EV_SEGMENT_FREE, B0, 30 * MiB},
                          {FSC_EV_SEGMENT_ALLOC, B0, 50 * MiB},
                          {FSC_EV_ALLOC, B0, 50 * MiB}};
    expect_events(h, from, x, 4);
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.num_alloc_retries, 0);
    CU_ASSERT_EQUAL(s.num_device_free, 2);
    CU_ASSERT_EQUAL(s.oversize_segments.current, 1);
    h_free(h);
}

static void test_merge_and_release_when_whole(void)
{
    h_t *h = h_new("", 0, 0);
    uint64_t a = h_malloc(h, 2 * MiB, 0), b = h_malloc(h, 2 * MiB, 0), c = h_malloc(h, 2 * MiB, 0);
    CU_ASSERT_EQUAL(a, B0);
    CU_ASSERT_EQUAL(b, B0 + 2 * MiB);
    CU_ASSERT_EQUAL(c, B0 + 4 * MiB);
    int from = h->log.n;
    fsc_allocator_free(h->a, a); /* no free neighbour */
    const exp_ev_t x1[] = {{FSC_EV_FREE_REQUESTED, a, 2 * MiB}, {FSC_EV_FREE_COMPLETED, a, 2 * MiB}};
    expect_events(h, from, x1, 2);
    from = h->log.n;
    fsc_allocator_free(h->a, c); /* merges with the next (the remainder) */
    const exp_ev_t x2[] = {{FSC_EV_FREE_REQUESTED, c, 2 * MiB},
                           {FSC_EV_FREE_COMPLETED, c, 2 * MiB},
                           {FSC_EV_MERGE, c, 16 * MiB}};
    expect_events(h, from, x2, 3);
    CU_ASSERT_EQUAL(h->log.ev[from + 2].other, B0 + 6 * MiB);
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.inactive_split[FSC_STAT_ALL].current, 2);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_ALL].current, 18 * MiB);
    /* a split segment is not released */
    from = h->log.n;
    CU_ASSERT_EQUAL(fsc_allocator_empty_cache(h->a), 0);
    const exp_ev_t x3[] = {{FSC_EV_EMPTY_CACHE, ANY, 0}};
    expect_events(h, from, x3, 1);
    CU_ASSERT_EQUAL(h_stats(h).reserved_bytes[FSC_STAT_ALL].current, 20 * MiB);
    from = h->log.n;
    fsc_allocator_free(h->a, b); /* merges with both */
    const exp_ev_t x4[] = {{FSC_EV_FREE_REQUESTED, b, 2 * MiB},
                           {FSC_EV_FREE_COMPLETED, b, 2 * MiB},
                           {FSC_EV_MERGE, B0, 4 * MiB},
                           {FSC_EV_MERGE, B0, 20 * MiB}};
    expect_events(h, from, x4, 4);
    CU_ASSERT_EQUAL(h->log.ev[from + 2].other, B0 + 2 * MiB);
    CU_ASSERT_EQUAL(h->log.ev[from + 3].other, B0 + 4 * MiB);
    s = h_stats(h);
    CU_ASSERT_EQUAL(s.inactive_split[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_ALL].peak, 18 * MiB);
    from = h->log.n;
    fsc_allocator_empty_cache(h->a);
    const exp_ev_t x5[] = {{FSC_EV_SEGMENT_FREE, B0, 20 * MiB}, {FSC_EV_EMPTY_CACHE, ANY, 20 * MiB}};
    expect_events(h, from, x5, 2);
    s = h_stats(h);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(s.num_sync_all_streams, 2);
    h_free(h);
}

/* Ages: A (12 MiB) freed at tick 4, B (14 MiB) at tick 5; a split 20 MiB
 * segment on stream 9 is never a candidate. */
static void gc_scenario(double thr, uint64_t expect_reclaimed, uint64_t expect_target,
                        int expect_b_freed)
{
    char conf[64];
    snprintf(conf, sizeof conf, "garbage_collection_threshold:%g", thr);
    h_t *h = h_new(conf, 0, 200 * MiB);
    CU_ASSERT_EQUAL(h_malloc(h, 2 * MiB, 9), B0);
    uint64_t a = h_malloc(h, 12 * MiB, 0), b = h_malloc(h, 14 * MiB, 0);
    uint64_t c = h_malloc(h, 16 * MiB, 0);
    CU_ASSERT_EQUAL(a, B0 + 20 * MiB);
    CU_ASSERT_EQUAL(b, B0 + 32 * MiB);
    CU_ASSERT_EQUAL(c, B0 + 46 * MiB);
    fsc_allocator_free(h->a, a);
    CU_ASSERT_EQUAL(h_malloc(h, MiB + 512, 9), B0 + 2 * MiB); /* a hit: one tick */
    fsc_allocator_free(h->a, b);
    int from = h->log.n;
    uint64_t d = h_malloc(h, 16 * MiB, 0);
    if (expect_b_freed) {
        const exp_ev_t x[] = {{FSC_EV_SEGMENT_FREE, a, 12 * MiB},
                              {FSC_EV_SEGMENT_FREE, b, 14 * MiB},
                              {FSC_EV_GC, ANY, expect_reclaimed},
                              {FSC_EV_SEGMENT_ALLOC, B0 + 20 * MiB, 16 * MiB},
                              {FSC_EV_ALLOC, B0 + 20 * MiB, 16 * MiB}};
        expect_events(h, from, x, 5);
        CU_ASSERT_EQUAL(d, B0 + 20 * MiB);
    } else {
        const exp_ev_t x[] = {{FSC_EV_SEGMENT_FREE, a, 12 * MiB},
                              {FSC_EV_GC, ANY, expect_reclaimed},
                              {FSC_EV_SEGMENT_ALLOC, B0 + 62 * MiB, 16 * MiB},
                              {FSC_EV_ALLOC, B0 + 62 * MiB, 16 * MiB}};
        expect_events(h, from, x, 4);
        CU_ASSERT_EQUAL(d, B0 + 62 * MiB);
    }
    const fsc_event_t *gc = NULL;
    for (int i = from; i < h->log.n; i++)
        if (h->log.ev[i].type == FSC_EV_GC)
            gc = &h->log.ev[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(gc);
    CU_ASSERT_EQUAL(gc->requested, expect_target);
    h_free(h);
}

static void test_garbage_collection(void)
{
    /* threshold 50 MiB, reserved 62 MiB: target 12; one pass frees the
     * blocks at or above the average age (2 vs 1.5): A only. */
    gc_scenario(0.25, 12 * MiB, 12 * MiB, 0);
    /* threshold 40 MiB: target 22; the first pass reclaims 12, a second
     * pass (average now 1) frees B as well. */
    gc_scenario(0.2, 26 * MiB, 22 * MiB, 1);
    /* without a capacity GC is off: nothing is freed */
    h_t *h = h_new("garbage_collection_threshold:0.2", 0, 0);
    uint64_t a = h_malloc(h, 12 * MiB, 0);
    fsc_allocator_free(h->a, a);
    int from = h->log.n;
    h_malloc(h, 16 * MiB, 0);
    const exp_ev_t x[] = {{FSC_EV_SEGMENT_ALLOC, B0 + 12 * MiB, 16 * MiB},
                          {FSC_EV_ALLOC, B0 + 12 * MiB, 16 * MiB}};
    expect_events(h, from, x, 2);
    h_free(h);
}

static void test_retry_sequence(void)
{
    h_t *h = h_new("", 0, 64 * MiB);
    fsc_allocator_free(h->a, h_malloc(h, 512, 0));
    uint64_t big = h_malloc(h, 40 * MiB, 0);
    CU_ASSERT_EQUAL(big, B0 + 2 * MiB);
    fsc_allocator_free(h->a, big);
    int from = h->log.n;
    /* stream 1 cannot reuse stream 0's cache: 42 + 40 > 64 → release all
     * cached unsplit segments (large pool first) → retry */
    CU_ASSERT_EQUAL(h_malloc(h, 40 * MiB, 1), B0);
    const exp_ev_t x[] = {{FSC_EV_SEGMENT_FREE, B0 + 2 * MiB, 40 * MiB},
                          {FSC_EV_SEGMENT_FREE, B0, 2 * MiB},
                          {FSC_EV_SEGMENT_ALLOC, B0, 40 * MiB},
                          {FSC_EV_ALLOC, B0, 40 * MiB}};
    expect_events(h, from, x, 4);
    CU_ASSERT_EQUAL(h->log.ev[from + 3].stream, 1);
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.num_alloc_retries, 1);
    CU_ASSERT_EQUAL(s.num_sync_all_streams, 1);
    CU_ASSERT_EQUAL(s.num_ooms, 0);
    h_free(h);
}

static void test_oom(void)
{
    h_t *h = h_new("", 0, 64 * MiB);
    fsc_allocator_free(h->a, h_malloc(h, 512, 0));
    CU_ASSERT_EQUAL(h_malloc(h, 40 * MiB, 0), B0 + 2 * MiB);
    int from = h->log.n;
    uint64_t addr = 5;
    CU_ASSERT_EQUAL(fsc_allocator_malloc(h->a, 30 * MiB - 100, 0, &addr), FSC_EOOM);
    CU_ASSERT_EQUAL(addr, 0);
    const exp_ev_t x[] = {{FSC_EV_SEGMENT_FREE, B0, 2 * MiB}, {FSC_EV_OOM, ANY, 30 * MiB}};
    expect_events(h, from, x, 2);
    const fsc_event_t *o = &h->log.ev[from + 1];
    CU_ASSERT_EQUAL(o->requested, 30 * MiB - 100);
    CU_ASSERT_EQUAL(o->pool, FSC_POOL_LARGE);
    CU_ASSERT_EQUAL(o->oom.allocated, 40 * MiB);
    CU_ASSERT_EQUAL(o->oom.reserved, 40 * MiB);
    CU_ASSERT_EQUAL(o->oom.capacity, 64 * MiB);
    CU_ASSERT_EQUAL(o->oom.segment_size, 30 * MiB);
    CU_ASSERT_EQUAL(o->oom.device_total, 80 * FSC_GiB);
    CU_ASSERT_EQUAL(o->oom.device_free, 80 * FSC_GiB - 40 * MiB);
    const char *msg = fsc_allocator_last_error(h->a);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "Tried to allocate 30.00 MiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "64.00 MiB allowed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "40.00 MiB allocated"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "0 B is reserved but unallocated"));
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.num_ooms, 1);
    CU_ASSERT_EQUAL(s.num_alloc_retries, 1);
    /* the allocator still works afterwards */
    CU_ASSERT_EQUAL(h_malloc(h, 512, 0), B0);
    h_free(h);

    /* the device itself running out (no cap): same sequence */
    h = h_new("", 50 * MiB, 0);
    CU_ASSERT_EQUAL(h_malloc(h, 40 * MiB, 0), B0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(h->a, 20 * MiB, 0, &addr), FSC_EOOM);
    CU_ASSERT_EQUAL(h->log.ev[h->log.n - 1].type, FSC_EV_OOM);
    CU_ASSERT_EQUAL(h->log.ev[h->log.n - 1].oom.capacity, 50 * MiB);
    h_free(h);
}

static void test_record_stream(void)
{
    h_t *h = h_new("", 0, 0);
    uint64_t a = h_malloc(h, MiB, 1);
    CU_ASSERT_EQUAL(a, B0);
    CU_ASSERT_EQUAL(fsc_allocator_record_stream(h->a, a, 2), 0);
    CU_ASSERT_EQUAL(fsc_allocator_record_stream(h->a, a, 1), 0); /* own stream: ignored */
    CU_ASSERT_EQUAL(fsc_allocator_record_stream(h->a, a + 512, 2), FSC_EINVAL);
    int from = h->log.n;
    CU_ASSERT_EQUAL(fsc_allocator_free(h->a, a), 0);
    const exp_ev_t x1[] = {{FSC_EV_FREE_REQUESTED, a, MiB}};
    expect_events(h, from, x1, 1);
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(s.active_bytes[FSC_STAT_ALL].current, MiB);
    CU_ASSERT_EQUAL(s.requested_bytes[FSC_STAT_ALL].current, MiB);
    walkrec_t w = h_walk(h);
    CU_ASSERT_EQUAL(w.b[0].pending_free, 1);
    CU_ASSERT_EQUAL(fsc_allocator_free(h->a, a), FSC_EINVAL);
    /* the pending block is not reused */
    CU_ASSERT_EQUAL(h_malloc(h, MiB, 1), B0 + MiB);
    from = h->log.n;
    CU_ASSERT_EQUAL(fsc_allocator_stream_done(h->a, 3), 0); /* unrelated */
    CU_ASSERT_EQUAL(h->log.n, from);
    CU_ASSERT_EQUAL(fsc_allocator_stream_done(h->a, 2), 0);
    const exp_ev_t x2[] = {{FSC_EV_FREE_COMPLETED, a, MiB}};
    expect_events(h, from, x2, 1);
    s = h_stats(h);
    CU_ASSERT_EQUAL(s.active_bytes[FSC_STAT_ALL].current, MiB);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_ALL].current, MiB);
    CU_ASSERT_EQUAL(h_malloc(h, MiB, 1), B0);

    /* two streams: completes when both are done; empty_cache syncs all */
    uint64_t b = h_malloc(h, 4 * MiB, 1);
    fsc_allocator_record_stream(h->a, b, 2);
    fsc_allocator_record_stream(h->a, b, 3);
    fsc_allocator_free(h->a, b);
    from = h->log.n;
    fsc_allocator_stream_done(h->a, 3);
    CU_ASSERT_EQUAL(h->log.n, from);
    fsc_allocator_empty_cache(h->a);
    CU_ASSERT_EQUAL(h->log.ev[from].type, FSC_EV_FREE_COMPLETED);
    CU_ASSERT_EQUAL(h->log.ev[from].addr, b);
    CU_ASSERT_EQUAL(h->log.ev[from + 1].type, FSC_EV_MERGE);
    CU_ASSERT_EQUAL(h->log.ev[from + 2].type, FSC_EV_SEGMENT_FREE);
    h_free(h);
}

static void test_expandable_grow_shrink(void)
{
    /* 1 GiB device: small VA = 1152 MiB (2 MiB pages), large pages 20 MiB */
    h_t *h = h_new("expandable_segments:True", FSC_GiB, 0);
    const uint64_t L0 = B0 + 1152 * MiB;
    CU_ASSERT_EQUAL(h_malloc(h, 512, 0), B0);
    const exp_ev_t x1[] = {{FSC_EV_SEGMENT_MAP, B0, 2 * MiB},
                           {FSC_EV_SPLIT, B0, 2 * MiB},
                           {FSC_EV_ALLOC, B0, 512}};
    expect_events(h, 0, x1, 3);
    int from = h->log.n;
    uint64_t a = h_malloc(h, 30 * MiB, 0);
    CU_ASSERT_EQUAL(a, L0);
    const exp_ev_t x2[] = {{FSC_EV_SEGMENT_MAP, L0, 40 * MiB},
                           {FSC_EV_SPLIT, L0, 40 * MiB},
                           {FSC_EV_ALLOC, L0, 30 * MiB}};
    expect_events(h, from, x2, 3);
    CU_ASSERT_EQUAL(h->log.ev[from].segment, L0);
    /* grows at the end: the free 10 MiB tail plus one more page */
    from = h->log.n;
    uint64_t b = h_malloc(h, 25 * MiB, 0);
    CU_ASSERT_EQUAL(b, L0 + 30 * MiB);
    const exp_ev_t x3[] = {{FSC_EV_SEGMENT_MAP, L0 + 40 * MiB, 20 * MiB},
                           {FSC_EV_SPLIT, L0 + 30 * MiB, 30 * MiB},
                           {FSC_EV_ALLOC, b, 25 * MiB}};
    expect_events(h, from, x3, 3);
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].current, 62 * MiB);
    CU_ASSERT_EQUAL(s.segment[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(s.num_device_alloc, 3);
    walkrec_t w = h_walk(h);
    CU_ASSERT_EQUAL(w.n, 5);
    CU_ASSERT_EQUAL(w.b[2].segment, L0);
    CU_ASSERT_EQUAL(w.b[2].segment_size, 60 * MiB);
    CU_ASSERT_EQUAL(w.b[2].expandable, 1);

    /* shrinks by whole free pages only */
    fsc_allocator_free(h->a, a);
    from = h->log.n;
    fsc_allocator_empty_cache(h->a);
    const exp_ev_t x4[] = {{FSC_EV_SEGMENT_UNMAP, L0, 20 * MiB}, {FSC_EV_EMPTY_CACHE, ANY, 20 * MiB}};
    expect_events(h, from, x4, 2);
    w = h_walk(h);
    CU_ASSERT_EQUAL(w.n, 5);
    CU_ASSERT_EQUAL(w.b[2].addr, L0 + 20 * MiB);
    CU_ASSERT_EQUAL(w.b[2].size, 10 * MiB);
    CU_ASSERT_EQUAL(w.b[2].segment_size, 40 * MiB);
    /* regrows into the hole at the lowest address */
    from = h->log.n;
    CU_ASSERT_EQUAL(h_malloc(h, 25 * MiB, 0), L0);
    const exp_ev_t x5[] = {{FSC_EV_SEGMENT_MAP, L0, 20 * MiB},
                           {FSC_EV_SPLIT, L0, 30 * MiB},
                           {FSC_EV_ALLOC, L0, 25 * MiB}};
    expect_events(h, from, x5, 3);

    /* the small segment, once wholly free, is unmapped and released */
    fsc_allocator_free(h->a, B0);
    from = h->log.n;
    fsc_allocator_empty_cache(h->a);
    const exp_ev_t x6[] = {{FSC_EV_SEGMENT_UNMAP, B0, 2 * MiB}, {FSC_EV_EMPTY_CACHE, ANY, 2 * MiB}};
    expect_events(h, from, x6, 2);
    s = h_stats(h);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_SMALL].current, 0);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_LARGE].current, 60 * MiB);
    CU_ASSERT_EQUAL(s.num_device_free, 2);
    /* a new small segment reuses the released address range */
    CU_ASSERT_EQUAL(h_malloc(h, 512, 0), B0);
    h_free(h);
}

static void test_expandable_cap_and_retry(void)
{
    /* The cap counts the request's segment size (12 MiB), not the page
     * actually mapped (20 MiB): reserved ends above the cap. */
    h_t *h = h_new("expandable_segments:True", FSC_GiB, 55 * MiB);
    uint64_t a = h_malloc(h, 30 * MiB, 0);
    CU_ASSERT_EQUAL(a, B0);
    CU_ASSERT_EQUAL(h_malloc(h, 12 * MiB, 0), B0 + 30 * MiB);
    CU_ASSERT_EQUAL(h_stats(h).reserved_bytes[FSC_STAT_ALL].current, 60 * MiB);
    h_free(h);

    /* OOM retry unmaps the free pages of every free block, then the
     * whole-free segment goes; a new one serves stream 1. */
    h = h_new("expandable_segments:True", FSC_GiB, 60 * MiB);
    a = h_malloc(h, 30 * MiB, 0);
    fsc_allocator_free(h->a, a);
    int from = h->log.n;
    CU_ASSERT_EQUAL(h_malloc(h, 45 * MiB, 1), B0);
    const exp_ev_t x[] = {{FSC_EV_SEGMENT_UNMAP, B0, 40 * MiB},
                          {FSC_EV_SEGMENT_MAP, B0, 60 * MiB},
                          {FSC_EV_SPLIT, B0, 60 * MiB},
                          {FSC_EV_ALLOC, B0, 45 * MiB}};
    expect_events(h, from, x, 4);
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.num_alloc_retries, 1);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].current, 60 * MiB);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].peak, 60 * MiB);
    h_free(h);
}

static void test_stats_format_and_peaks(void)
{
    h_t *h = h_new("", 0, 0);
    uint64_t a = h_malloc(h, 3 * MiB, 0);
    fsc_allocator_free(h->a, a);
    fsc_alloc_stats_t s = h_stats(h);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].peak, 3 * MiB);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].allocated, 3 * MiB);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].freed, 3 * MiB);
    CU_ASSERT_EQUAL(fsc_allocator_reset_peaks(h->a), 0);
    s = h_stats(h);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].peak, 0);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].peak, 20 * MiB);
    char buf[8192];
    CU_ASSERT_EQUAL(fsc_alloc_stats_format(&s, buf, sizeof buf), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "| Allocated memory           |          0 B |          0 B |"
                                       "     3.00 MiB |     3.00 MiB |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "| GPU reserved memory        |    20.00 MiB |    20.00 MiB |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "num_alloc_retries: 0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "Non-releasable memory"));
    CU_ASSERT_EQUAL(fsc_alloc_stats_format(&s, buf, 100), FSC_ELIMIT);
    CU_ASSERT_EQUAL(strlen(buf), 99);
    CU_ASSERT_EQUAL(fsc_allocator_capacity(h->a), 80 * FSC_GiB);
    CU_ASSERT_PTR_NOT_NULL(fsc_allocator_config(h->a));
    fsc_allocator_destroy(NULL);
    fsc_backend_destroy(NULL);
    h_free(h);

    fsc_backend_t *be = NULL;
    fsc_err_t e = {0};
    int rc = fsc_backend_cuda_create(0, &be, &e);
    CU_ASSERT_TRUE(rc == 0 || rc == FSC_EUNSUPPORTED || rc == FSC_ECUDA);
    fsc_backend_destroy(be);
}

static void test_scripted_backend(void)
{
    const uint64_t addrs[] = {0x7f5500000000ull, 0x7f4400000000ull};
    const uint64_t sizes[] = {2 * MiB, 20 * MiB};
    fsc_backend_t *be;
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create_scripted(0, addrs, sizes, 2, &be), 0);
    fsc_allocator_opts_t o = {0};
    o.backend = be;
    fsc_allocator_t *a;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &a, NULL), 0);
    uint64_t x;
    CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 100, 0, &x), 0);
    CU_ASSERT_EQUAL(x, addrs[0]);
    CU_ASSERT_EQUAL(fsc_backend_sim_script_diverged(be), -1);
    /* a 40 MiB segment where the script says 20 MiB: diverges, and the
     * driver's placement (placement.c) puts it in a chunk of 64 MiB just
     * below the lowest one, 32 MiB-aligned */
    CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 40 * MiB, 0, &x), 0);
    CU_ASSERT_EQUAL(x, 0x7f54fc000000ull);
    CU_ASSERT_EQUAL(fsc_backend_sim_script_diverged(be), 1);
    /* its 20 MiB segment fits in the rest of that chunk */
    CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 5 * MiB, 0, &x), 0);
    CU_ASSERT_EQUAL(x, 0x7f54fc000000ull + 40 * MiB);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
}

/* destroy gives every segment and page back: a second allocator on the same
 * device can then take all of it. */
static void test_destroy_returns_memory(void)
{
    fsc_backend_t *be;
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(FSC_GiB, 0, &be), 0);
    static const char *const confs[] = {"", "expandable_segments:True"};
    for (int i = 0; i < 2; i++) {
        fsc_allocator_opts_t o = {0};
        CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(confs[i], &o.config, NULL), 0);
        o.backend = be;
        fsc_allocator_t *a;
        CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &a, NULL), 0);
        uint64_t x;
        CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 100 * MiB, 0, &x), 0);
        CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 3 * MiB, 1, &x), 0);
        CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 4096, 0, &x), 0);
        CU_ASSERT_EQUAL(fsc_allocator_record_stream(a, x, 7), 0);
        CU_ASSERT_EQUAL(fsc_allocator_free(a, x), 0); /* left pending */
        fsc_allocator_destroy(a);
    }
    fsc_allocator_opts_t o = {0};
    o.backend = be;
    fsc_allocator_t *a;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &a, NULL), 0);
    uint64_t x;
    CU_ASSERT_EQUAL(fsc_allocator_malloc(a, FSC_GiB, 0, &x), 0);
    CU_ASSERT_EQUAL(x, B0);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
}

static const fsc_test_case_t k_tests[] = {
    {"small_pool_split_and_best_fit", test_small_pool_split_and_best_fit},
    {"split_thresholds", test_split_thresholds},
    {"max_split_size", test_max_split_size},
    {"release_oversize_on_miss", test_release_oversize_on_miss},
    {"merge_and_release_when_whole", test_merge_and_release_when_whole},
    {"garbage_collection", test_garbage_collection},
    {"retry_sequence", test_retry_sequence},
    {"oom", test_oom},
    {"record_stream", test_record_stream},
    {"expandable_grow_shrink", test_expandable_grow_shrink},
    {"expandable_cap_and_retry", test_expandable_cap_and_retry},
    {"stats_format_and_peaks", test_stats_format_and_peaks},
    {"scripted_backend", test_scripted_backend},
    {"destroy_returns_memory", test_destroy_returns_memory},
    {NULL, NULL},
};

FSC_TEST_MAIN("allocator_core", k_tests)
