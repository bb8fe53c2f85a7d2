/*
 * test_whatif.c — what-if replay on hand-made request streams whose outcome
 * under each configuration is worked out by hand (the arithmetic is in the
 * comments), plus fidelity on runs recorded from fragscope's own allocator,
 * config errors, and the suggestions table of a run database (and of one
 * run of a job database).
 *
 * Size rules used below (docs/allocator.md, PyTorch's): a request of 10 MiB
 * or more gets a segment of its size rounded up to 2 MiB; a large free
 * block is split when the remainder is over 1 MiB; under a cap a new
 * segment fails when reserved + segment size > cap, and the retry releases
 * only cached segments that are one unsplit free block.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fragscope/recorder.h"
#include "fragscope/rundb.h"
#include "fragscope/whatif.h"
#include "fsc_test.h"

#define MiB FSC_MiB

/* ---- building streams as a recording would hold them ------------------------ */

typedef struct sb {
    fsc_request_stream_t *rs;
    uint64_t next_addr;
} sb_t;

static void sb_init(sb_t *b)
{
    fsc_err_t err = {0, ""};
    CU_ASSERT_FATAL(fsc_request_stream_create(&b->rs, &err) == 0);
    b->next_addr = 0x10000000;
}

static void sb_ev(sb_t *b, const fsc_event_t *ev)
{
    fsc_err_t err = {0, ""};
    CU_ASSERT_FATAL(fsc_request_stream_add(b->rs, ev, &err) == 0);
}

/* An allocation; the recorded address only has to be unique while live. */
static uint64_t sb_alloc(sb_t *b, uint64_t size, uint64_t stream, uint32_t tag)
{
    fsc_event_t ev = {0};
    ev.type = FSC_EV_ALLOC;
    ev.addr = b->next_addr;
    b->next_addr += 1ull << 32;
    ev.size = size;
    ev.requested = size;
    ev.stream = stream;
    ev.tag = tag;
    sb_ev(b, &ev);
    return ev.addr;
}

static void sb_free_req(sb_t *b, uint64_t addr, uint64_t size)
{
    fsc_event_t ev = {0};
    ev.type = FSC_EV_FREE_REQUESTED;
    ev.addr = addr;
    ev.size = size;
    sb_ev(b, &ev);
}

static void sb_free_done(sb_t *b, uint64_t addr, uint64_t size)
{
    fsc_event_t ev = {0};
    ev.type = FSC_EV_FREE_COMPLETED;
    ev.addr = addr;
    ev.size = size;
    sb_ev(b, &ev);
}

static void sb_free(sb_t *b, uint64_t addr, uint64_t size)
{
    sb_free_req(b, addr, size);
    sb_free_done(b, addr, size);
}

static void sb_marker(sb_t *b, const char *text)
{
    fsc_event_t ev = {0};
    ev.type = FSC_EV_MARKER;
    ev.text = text;
    ev.text_len = (uint32_t)strlen(text);
    sb_ev(b, &ev);
}

static fsc_whatif_result_t replay(const fsc_request_stream_t *rs, const char *config,
                                  uint64_t capacity)
{
    fsc_whatif_result_t r;
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    fsc_err_t err = {0, ""};
    o.capacity = capacity;
    int rc = fsc_whatif_replay(rs, config, &o, &r, &err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0)
        fprintf(stderr, "replay %s: %s\n", config, fsc_err_msg(&err));
    return r;
}

/*
 * The fragmentation stream, under an 80 MiB cap:
 *   X = alloc 60 MiB      new 60 MiB segment              reserved 60
 *   free X                one free 60 MiB block
 *   marker "step 1"
 *   Y = alloc 20 MiB      best fit: X's block, split 20 | 40 free
 *   Z = alloc 20 MiB      the 40 MiB remainder, split 20 | 20 free
 *   free Y                free: [0,20) and [40,60); largest 20 MiB
 *   W = alloc 40 MiB      (tag "train/forward")
 * Defaults: no free block ≥ 40 MiB; a new 40 MiB segment gives 60 + 40 =
 * 100 > 80; the retry can release nothing (the only segment holds Z), so W
 * fails: OOM at request 3 with Z (20 MiB) + W (40 MiB) = 60 MiB ≤ 80 MiB
 * live, i.e. fragmentation. Peak reserved 60 MiB, peak allocated 60 MiB (X),
 * 1 segment, 1 retry. Without the cap W gets its own segment: 100 MiB.
 * expandable_segments: the same first check fails (60 + 40 > 80); the retry
 * unmaps the fully free pages of every free block, Y's [0,20) and [40,60)
 * (reserved 20 MiB: Z), then 20 + 40 ≤ 80 and W maps two 20 MiB pages:
 * reserved back at 60 MiB, no OOM, still one segment, 1 retry.
 */
static sb_t frag_stream(void)
{
    sb_t b;
    sb_init(&b);
    fsc_err_t err = {0, ""};
    CU_ASSERT(fsc_request_stream_define_tag(b.rs, 1, 0, "train", 5, &err) == 0);
    CU_ASSERT(fsc_request_stream_define_tag(b.rs, 2, 1, "forward", 7, &err) == 0);
    uint64_t x = sb_alloc(&b, 60 * MiB, 0, 0);
    sb_free(&b, x, 60 * MiB);
    sb_marker(&b, "step 1");
    uint64_t y = sb_alloc(&b, 20 * MiB, 0, 0);
    sb_alloc(&b, 20 * MiB, 0, 0);
    sb_free(&b, y, 20 * MiB);
    sb_alloc(&b, 40 * MiB, 0, 2);
    return b;
}

static void test_defaults_oom_expandable_survives(void)
{
    sb_t b = frag_stream();
    fsc_request_stream_info_t in;
    fsc_request_stream_info(b.rs, &in);
    /* events: alloc, free_req, free_done, marker, alloc, alloc, free_req,
     * free_done, alloc = 9; ops: 4 allocs + 2 frees + 1 marker = 7 */
    CU_ASSERT_EQUAL(in.events, 9);
    CU_ASSERT_EQUAL(in.ops, 7);
    CU_ASSERT_EQUAL(in.allocs, 4);
    CU_ASSERT_EQUAL(in.frees, 2);
    CU_ASSERT_EQUAL(in.delayed_frees, 0);
    CU_ASSERT_EQUAL(in.peak_requested, 60 * MiB);

    fsc_whatif_result_t d = replay(b.rs, "", 80 * MiB);
    CU_ASSERT_EQUAL(d.oom, 1);
    CU_ASSERT_EQUAL(d.first_oom.request, 3);
    CU_ASSERT_EQUAL(d.first_oom.event, 8);
    CU_ASSERT_EQUAL(d.first_oom.requested, 40 * MiB);
    CU_ASSERT_EQUAL(d.first_oom.has_marker, 1);
    CU_ASSERT_STRING_EQUAL(d.first_oom.marker, "step 1");
    CU_ASSERT_STRING_EQUAL(d.first_oom.tag, "train/forward");
    CU_ASSERT_EQUAL(d.peak_reserved, 60 * MiB);
    CU_ASSERT_EQUAL(d.peak_allocated, 60 * MiB);
    CU_ASSERT_EQUAL(d.segments, 1);
    CU_ASSERT_EQUAL(d.num_alloc_retries, 1);
    CU_ASSERT_EQUAL(d.capacity, 80 * MiB);

    fsc_whatif_result_t e = replay(b.rs, "expandable_segments:True", 80 * MiB);
    CU_ASSERT_EQUAL(e.oom, 0);
    CU_ASSERT_EQUAL(e.peak_reserved, 60 * MiB);
    CU_ASSERT_EQUAL(e.peak_allocated, 60 * MiB);
    CU_ASSERT_EQUAL(e.segments, 1);
    CU_ASSERT_EQUAL(e.num_alloc_retries, 1);

    /* Unlimited: W gets a second segment; 60 + 40 = 100 MiB reserved and
     * 100 MiB allocated is not reached (Z + W = 60 MiB live), so peak
     * allocated stays 60 MiB; utilization 60/100. At the reserved peak the
     * free blocks are Y's 20 MiB and the 20 MiB after Z: 1 - 20/40 = 0.5. */
    fsc_whatif_result_t u = replay(b.rs, "", 0);
    CU_ASSERT_EQUAL(u.oom, 0);
    CU_ASSERT_EQUAL(u.peak_reserved, 100 * MiB);
    CU_ASSERT_EQUAL(u.segments, 2);
    CU_ASSERT_DOUBLE_EQUAL(u.utilization, 0.6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(u.external_frag_at_peak, 0.5, 1e-12);
    fsc_request_stream_destroy(b.rs);
}

/*
 * max_split_size_mb changes the outcome, under a 100 MiB cap:
 *   A = alloc 70 MiB, free A, B = alloc 20 MiB, C = alloc 70 MiB.
 * Defaults: B takes A's free 70 MiB block and splits it (20 | 50 free); C
 * finds no block ≥ 70 MiB, a new 70 MiB segment gives 70 + 70 = 140 > 100,
 * nothing is releasable (B pins the segment): OOM at request 2. Peak
 * reserved 70 MiB, peak allocated 70 MiB.
 * max_split_size_mb:64: B (20 < 64) may not take a block ≥ 64 MiB, so it
 * gets its own 20 MiB segment (70 + 20 = 90 ≤ 100); C (70 ≥ 64, oversize)
 * may take a cached block smaller than 70 + 20 MiB: A's 70 MiB block, whole.
 * No OOM; peak reserved 90 MiB, peak allocated B + C = 90 MiB, 2 segments.
 */
static void test_max_split_changes_outcome(void)
{
    sb_t b;
    sb_init(&b);
    uint64_t a = sb_alloc(&b, 70 * MiB, 0, 0);
    sb_free(&b, a, 70 * MiB);
    sb_alloc(&b, 20 * MiB, 0, 0);
    sb_alloc(&b, 70 * MiB, 0, 0);

    fsc_whatif_result_t d = replay(b.rs, "", 100 * MiB);
    CU_ASSERT_EQUAL(d.oom, 1);
    CU_ASSERT_EQUAL(d.first_oom.request, 2);
    CU_ASSERT_EQUAL(d.first_oom.has_marker, 0);
    CU_ASSERT_STRING_EQUAL(d.first_oom.tag, "");
    CU_ASSERT_EQUAL(d.peak_reserved, 70 * MiB);
    CU_ASSERT_EQUAL(d.peak_allocated, 70 * MiB);

    fsc_whatif_result_t m = replay(b.rs, "max_split_size_mb:64", 100 * MiB);
    CU_ASSERT_EQUAL(m.oom, 0);
    CU_ASSERT_EQUAL(m.peak_reserved, 90 * MiB);
    CU_ASSERT_EQUAL(m.peak_allocated, 90 * MiB);
    CU_ASSERT_EQUAL(m.segments, 2);
    CU_ASSERT_EQUAL(m.num_alloc_retries, 0);
    CU_ASSERT_DOUBLE_EQUAL(m.utilization, 1.0, 1e-12);
    fsc_request_stream_destroy(b.rs);
}

/*
 * record_stream: A's free completes only after B was allocated, so B cannot
 * reuse A's block and needs a second segment; C, after the completion,
 * reuses A's block. Unlimited, defaults: 2 segments, peak reserved 60 MiB,
 * peak allocated 60 MiB (B + C). Had the free completed at once, B would
 * have reused A's block: 1 segment, 30 MiB.
 */
static void test_delayed_free(void)
{
    sb_t b;
    sb_init(&b);
    uint64_t a = sb_alloc(&b, 30 * MiB, 0, 0);
    sb_free_req(&b, a, 30 * MiB);
    sb_alloc(&b, 30 * MiB, 0, 0);
    sb_free_done(&b, a, 30 * MiB);
    sb_alloc(&b, 30 * MiB, 0, 0);
    fsc_request_stream_info_t in;
    fsc_request_stream_info(b.rs, &in);
    CU_ASSERT_EQUAL(in.delayed_frees, 1);
    CU_ASSERT_EQUAL(in.ops, 5); /* 3 allocs, 1 free, 1 completion */
    fsc_whatif_result_t r = replay(b.rs, "", 0);
    CU_ASSERT_EQUAL(r.oom, 0);
    CU_ASSERT_EQUAL(r.segments, 2);
    CU_ASSERT_EQUAL(r.peak_reserved, 60 * MiB);
    CU_ASSERT_EQUAL(r.peak_allocated, 60 * MiB);

    sb_t c;
    sb_init(&c);
    a = sb_alloc(&c, 30 * MiB, 0, 0);
    sb_free(&c, a, 30 * MiB);
    sb_alloc(&c, 30 * MiB, 0, 0);
    r = replay(c.rs, "", 0);
    CU_ASSERT_EQUAL(r.segments, 1);
    CU_ASSERT_EQUAL(r.peak_reserved, 30 * MiB);
    fsc_request_stream_destroy(b.rs);
    fsc_request_stream_destroy(c.rs);
}

/*
 * A recorded OOM is replayed as the allocation it was. A = 40 MiB live,
 * then an OOM event for 50 MiB. Cap 80 MiB: 40 + 50 = 90 > 80 and A pins
 * its segment, so the replay fails it too. Cap 100 MiB: it is served (the
 * config "survives"): peak reserved 90 MiB, peak allocated 90 MiB.
 */
static void test_recorded_oom_replayed(void)
{
    sb_t b;
    sb_init(&b);
    sb_alloc(&b, 40 * MiB, 0, 0);
    fsc_event_t ev = {0};
    ev.type = FSC_EV_OOM;
    ev.size = 50 * MiB;
    ev.requested = 50 * MiB;
    sb_ev(&b, &ev);
    fsc_request_stream_info_t in;
    fsc_request_stream_info(b.rs, &in);
    CU_ASSERT_EQUAL(in.recorded_ooms, 1);
    CU_ASSERT_EQUAL(in.allocs, 2);
    fsc_whatif_result_t r = replay(b.rs, "", 80 * MiB);
    CU_ASSERT_EQUAL(r.oom, 1);
    CU_ASSERT_EQUAL(r.first_oom.request, 1);
    CU_ASSERT_EQUAL(r.first_oom.event, 1);
    CU_ASSERT_EQUAL(r.first_oom.requested, 50 * MiB);
    r = replay(b.rs, "", 100 * MiB);
    CU_ASSERT_EQUAL(r.oom, 0);
    CU_ASSERT_EQUAL(r.peak_reserved, 90 * MiB);
    CU_ASSERT_EQUAL(r.peak_allocated, 90 * MiB);
    fsc_request_stream_destroy(b.rs);
}

static void test_parallel_run_and_bad_config(void)
{
    sb_t b = frag_stream();
    const char *cfgs[] = {"", "expandable_segments:True", "max_split_size_mb:64", ""};
    fsc_whatif_result_t r[4];
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = 80 * MiB;
    o.threads = 3;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL(fsc_whatif_run(b.rs, cfgs, 4, &o, r, &err), 0);
    CU_ASSERT_STRING_EQUAL(r[1].config, "expandable_segments:True");
    CU_ASSERT_EQUAL(r[0].oom, 1);
    CU_ASSERT_EQUAL(r[1].oom, 0);
    /* X = 60 MiB < 64 is split as with the defaults: the same OOM. */
    CU_ASSERT_EQUAL(r[2].oom, 1);
    CU_ASSERT_EQUAL(r[2].first_oom.request, 3);
    CU_ASSERT_EQUAL(r[3].oom, 1);
    CU_ASSERT_EQUAL(r[3].peak_reserved, r[0].peak_reserved);

    const char *bad[] = {"", "max_split_size_mb:lots"};
    CU_ASSERT_EQUAL(fsc_whatif_run(b.rs, bad, 2, &o, r, &err), FSC_ECONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&err), "max_split_size_mb:lots"));
    fsc_whatif_result_t one;
    CU_ASSERT_EQUAL(fsc_whatif_replay(b.rs, "no_such_key:1", &o, &one, &err), FSC_ECONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&err), "no_such_key:1"));
    fsc_request_stream_destroy(b.rs);
}

/*
 * Needed capacities of the fragmentation stream: with the defaults W needs
 * its own segment without a retry, 60 + 40 = 100 MiB; any less fails. With
 * expandable segments the retry brings reserved down to Z's 20 MiB first, so
 * W needs 20 + 40 = 60 MiB, as much as X alone: 60 MiB, and 58 MiB fails at
 * X already.
 */
static void test_needed_capacity_and_suggest(void)
{
    sb_t b = frag_stream();
    fsc_err_t err = {0, ""};
    uint64_t need = 0;
    CU_ASSERT_EQUAL(fsc_whatif_needed_capacity(b.rs, "", 0, &need, &err), 0);
    CU_ASSERT_EQUAL(need, 100 * MiB);
    CU_ASSERT_EQUAL(fsc_whatif_needed_capacity(b.rs, "expandable_segments:True", 0, &need, &err),
                    0);
    CU_ASSERT_EQUAL(need, 60 * MiB);

    fsc_suggestion_t *s = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_suggest(b.rs, 80 * MiB, &s, &n, &err), 0);
    CU_ASSERT_FATAL(n >= 1);
    /* Best first: the only settings that avoid the OOM at 80 MiB are the
     * expandable ones, and both need 60 MiB. */
    CU_ASSERT_PTR_NOT_NULL(strstr(s[0].config, "expandable_segments:True"));
    CU_ASSERT_EQUAL(s[0].avoids_oom, 1);
    CU_ASSERT_EQUAL(s[0].needed_capacity, 60 * MiB);
    CU_ASSERT_EQUAL(s[0].baseline_needed, 100 * MiB);
    CU_ASSERT_EQUAL(s[0].baseline_oom, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(s[0].note, "needs 60.00 MiB instead of 100.00 MiB"));
    /* The list: what avoids the baseline's OOM; after it, what does not
     * help (it fails at 80 MiB too), however little capacity it needs. */
    size_t helps = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].helps) {
            CU_ASSERT_EQUAL(helps, i); /* the helpful ones come first */
            helps++;
            CU_ASSERT(s[i].avoids_oom);
        } else {
            CU_ASSERT_EQUAL(s[i].avoids_oom, 0);
            CU_ASSERT(strncmp(s[i].note, "does not help: runs out of memory at 80.00 MiB too",
                              50) == 0);
        }
        CU_ASSERT_EQUAL(s[i].capacity, 80 * MiB);
        CU_ASSERT_EQUAL(s[i].capacity_upper, 0); /* a known cap */
    }
    CU_ASSERT_EQUAL(helps, 2); /* the two expandable settings */
    fsc_suggestions_free(s);
    fsc_request_stream_destroy(b.rs);
}

/* ---- fidelity on a run recorded from fragscope's own allocator -------------- */

static void to_stream(void *ud, const fsc_event_t *ev)
{
    fsc_err_t err = {0, ""};
    CU_ASSERT(fsc_request_stream_add(ud, ev, &err) == 0);
}

/* A deterministic mixed workload: sizes from 512 B to 48 MiB, two streams,
 * some frees delayed by record_stream. */
static fsc_request_stream_t *record_run(const char *config, uint64_t capacity,
                                        fsc_alloc_stats_t *st)
{
    fsc_err_t err = {0, ""};
    fsc_request_stream_t *rs = NULL;
    CU_ASSERT_FATAL(fsc_request_stream_create(&rs, &err) == 0);
    fsc_trace_header_t hdr = {0};
    hdr.config = config;
    hdr.capacity = capacity;
    /* The replay's sim device must be as large as the recording's: the
     * address space reserved for expandable segments scales with it. */
    hdr.device_total = 80 * FSC_GiB;
    CU_ASSERT_FATAL(fsc_request_stream_set_header(rs, &hdr, &err) == 0);
    fsc_backend_t *be = NULL;
    CU_ASSERT_FATAL(fsc_backend_sim_create(0, 0, &be) == 0);
    fsc_allocator_opts_t ao = {{0}, be, capacity, to_stream, rs};
    CU_ASSERT_FATAL(fsc_alloc_config_parse(config, &ao.config, &err) == 0);
    fsc_allocator_t *a = NULL;
    CU_ASSERT_FATAL(fsc_allocator_create(&ao, &a, &err) == 0);
    uint64_t live[64] = {0};
    uint64_t x = 12345;
    for (int i = 0; i < 3000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned slot = (unsigned)(x >> 58);
        if (live[slot] != 0) {
            if ((x >> 20) % 7 == 0) {
                fsc_allocator_record_stream(a, live[slot], 2);
                fsc_allocator_free(a, live[slot]);
                fsc_allocator_stream_done(a, 2);
            } else {
                fsc_allocator_free(a, live[slot]);
            }
            live[slot] = 0;
            continue;
        }
        uint64_t kind = (x >> 30) % 4;
        uint64_t size = kind == 0 ? 512 + (x >> 40) % 65536
                        : kind == 1 ? MiB + (x >> 40) % (3 * MiB)
                                    : (x >> 40) % (48 * MiB) + 1;
        if (fsc_allocator_malloc(a, size, (x >> 45) & 1, &live[slot]) != 0)
            live[slot] = 0;
    }
    fsc_allocator_get_stats(a, st);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    return rs;
}

static void check_fidelity(const char *config, uint64_t capacity)
{
    fsc_alloc_stats_t st;
    fsc_request_stream_t *rs = record_run(config, capacity, &st);
    fsc_whatif_verify_t v;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify(rs, NULL, &v, &err), 0);
    if (!v.match || v.first_addr_mismatch >= 0)
        fprintf(stderr, "\n%s: match %d div %ld addr %llu/%llu first mismatch %ld\n", config,
                v.match, v.first_divergence, (unsigned long long)v.alloc_addr_matches,
                (unsigned long long)v.allocs_compared, v.first_addr_mismatch);
    CU_ASSERT_EQUAL(v.match, 1);
    CU_ASSERT_EQUAL(v.first_divergence, -1);
    CU_ASSERT_EQUAL(v.segments_got, v.segments_expected);
    CU_ASSERT_EQUAL(v.peak_reserved_got, (uint64_t)st.reserved_bytes[FSC_STAT_ALL].peak);
    CU_ASSERT_EQUAL(v.peak_allocated_got, (uint64_t)st.allocated_bytes[FSC_STAT_ALL].peak);
    CU_ASSERT_EQUAL(v.replay.num_alloc_retries, st.num_alloc_retries);
    CU_ASSERT_EQUAL(v.alloc_addr_matches, v.allocs_compared);
    CU_ASSERT_EQUAL(v.first_addr_mismatch, -1);
    CU_ASSERT(v.allocs_compared > 500);
    fsc_request_stream_destroy(rs);
}

static void test_fidelity_own_runs(void)
{
    check_fidelity("", 0);
    check_fidelity("max_split_size_mb:32,roundup_power2_divisions:4", 0);
    check_fidelity("expandable_segments:True", 0);
    check_fidelity("garbage_collection_threshold:0.7", 400 * MiB);
}

static void test_verify_reports_divergence(void)
{
    /* The recording says the run got one 60 MiB segment then a 40 MiB one;
     * a replay gets the same 60 MiB then 40 MiB only without a cap, so with
     * the frag stream's recorded segments the defaults match, and a cap of
     * 80 MiB makes the second segment go missing: divergence at index 1. */
    sb_t b = frag_stream();
    fsc_event_t s = {0};
    s.type = FSC_EV_SEGMENT_ALLOC;
    s.addr = 0x7f0000000000ull;
    s.size = 60 * MiB;
    sb_ev(&b, &s);
    s.addr += 64 * MiB;
    s.size = 40 * MiB;
    sb_ev(&b, &s);
    fsc_whatif_verify_t v;
    fsc_err_t err = {0, ""};
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = 80 * MiB;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify(b.rs, &o, &v, &err), 0);
    CU_ASSERT_EQUAL(v.match, 0);
    CU_ASSERT_EQUAL(v.segments_expected, 2);
    CU_ASSERT_EQUAL(v.segments_got, 1);
    CU_ASSERT_EQUAL(v.first_divergence, 1);
    CU_ASSERT_EQUAL(v.expected_type, FSC_EV_SEGMENT_ALLOC);
    CU_ASSERT_EQUAL(v.expected_size, 40 * MiB);
    CU_ASSERT_EQUAL(v.got_type, 0);
    fsc_request_stream_destroy(b.rs);
}

/*
 * Through a real trace: the max_split stream recorded by fragscope's
 * allocator under a 100 MiB cap with the defaults, with a marker before B
 * and tags around C. The recorded events, in order (events.h):
 *   0 segment_alloc A   1 alloc A   2 free_requested A   3 free_completed A
 *   4 marker "step 7"   5 split (A's block for B)         6 alloc B
 *   7 oom (C: nothing releasable, so no segment_free before it)
 * so the replay with the recorded settings fails C at recorded event 7,
 * request 2, and max_split_size_mb:64 serves it (see above: 90 MiB).
 */
/*
 * OOM call sites are named as `report` names them (fsc_frame_label): two
 * Python paths that part at "a.py:1 step" / "b.py:1 step" and end in the
 * same three frames, the first with an unwinder frame innermost (noise).
 * A replay under 80 MiB serves a recorded 1 MiB OOM and fails at the
 * recording's second OOM (#1), a 40 MiB request at the second path.
 */
static void test_oom_site_named_as_report(void)
{
    sb_t b;
    sb_init(&b);
    fsc_err_t err = {0, ""};
    static const struct {
        uint32_t node, parent;
        const char *name;
    } k_tags[] = {
        {1, 0, "train.py:10:main"}, {2, 1, "model.py:5:forward"}, {3, 2, "a.py:1:step"},
        {4, 3, "layer.py:20:f"},    {5, 4, "util.py:3:g"},        {6, 5, "ops.py:7:h"},
        {7, 2, "b.py:1:step"},      {8, 7, "layer.py:20:f"},      {9, 8, "util.py:3:g"},
        {10, 9, "ops.py:7:h"},      {11, 6, "??:0:torch::unwind::unwind()"},
    };
    for (size_t i = 0; i < sizeof k_tags / sizeof *k_tags; i++)
        CU_ASSERT_FATAL(fsc_request_stream_define_tag(b.rs, k_tags[i].node, k_tags[i].parent,
                                                      k_tags[i].name, strlen(k_tags[i].name),
                                                      &err) == 0);
    char buf[512];
    CU_ASSERT_EQUAL(fsc_request_stream_tag_label(b.rs, 11, 0, 0, 3, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "ops.py:7 h ← util.py:3 g ← layer.py:20 f");
    CU_ASSERT_EQUAL(fsc_request_stream_tag_label(b.rs, 10, 0, 0, 3, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "ops.py:7 h ← util.py:3 g ← layer.py:20 f");
    CU_ASSERT_EQUAL(fsc_request_stream_tag_label(b.rs, 11, 10, 0, 3, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "ops.py:7 h ← util.py:3 g ← layer.py:20 f … ← a.py:1 step");
    CU_ASSERT_EQUAL(fsc_request_stream_tag_label(b.rs, 10, 11, 0, 3, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "ops.py:7 h ← util.py:3 g ← layer.py:20 f … ← b.py:1 step");
    CU_ASSERT_EQUAL(fsc_request_stream_tag_label(b.rs, 11, 0, 1, 3, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "torch::unwind::unwind ← ops.py:7 h ← util.py:3 g");
    CU_ASSERT_EQUAL(fsc_request_stream_tag_label(b.rs, 0, 0, 0, 3, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "");

    sb_alloc(&b, 60 * MiB, 0, 11);
    fsc_event_t ev = {0};
    ev.type = FSC_EV_OOM;
    ev.requested = ev.size = 1 * MiB;
    ev.tag = 11;
    sb_ev(&b, &ev);
    ev.requested = ev.size = 40 * MiB;
    ev.tag = 10;
    sb_ev(&b, &ev);
    fsc_whatif_result_t r = replay(b.rs, "", 80 * MiB);
    CU_ASSERT_EQUAL(r.oom, 1);
    CU_ASSERT_EQUAL(r.first_oom.request, 2);
    CU_ASSERT_EQUAL(r.first_oom.recorded_oom, 1);
    CU_ASSERT_EQUAL(r.first_oom.tag_node, 10);
    CU_ASSERT_STRING_EQUAL(r.first_oom.tag, "ops.py:7 h ← util.py:3 g ← layer.py:20 f");
    fsc_request_stream_destroy(b.rs);
}

static void test_from_trace(void)
{
    const char *path = fsc_test_path("split.fstrace");
    fsc_trace_header_t hdr = {0};
    hdr.producer = "test_whatif";
    hdr.config = "";
    hdr.backend = "sim";
    hdr.capacity = 100 * MiB;
    hdr.device_total = 80 * FSC_GiB;
    hdr.rank = -1;
    fsc_recorder_opts_t ro = FSC_RECORDER_OPTS_DEFAULT;
    ro.synchronous = 1;
    fsc_recorder_t *rec = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_FATAL(fsc_recorder_open(path, &hdr, &ro, &rec, &err) == 0);
    fsc_backend_t *be = NULL;
    CU_ASSERT_FATAL(fsc_backend_sim_create(0, 0, &be) == 0);
    fsc_allocator_opts_t ao = {FSC_ALLOC_CONFIG_DEFAULT, be, 100 * MiB, fsc_recorder_sink, rec};
    fsc_allocator_t *a = NULL;
    CU_ASSERT_FATAL(fsc_allocator_create(&ao, &a, &err) == 0);
    uint64_t pa = 0, pb = 0, pc = 0;
    CU_ASSERT(fsc_allocator_malloc(a, 70 * MiB, 0, &pa) == 0);
    CU_ASSERT(fsc_allocator_free(a, pa) == 0);
    fsc_mark("step 7");
    CU_ASSERT(fsc_allocator_malloc(a, 20 * MiB, 0, &pb) == 0);
    fsc_tag_push("model");
    fsc_tag_push("layer1");
    CU_ASSERT(fsc_allocator_malloc(a, 70 * MiB, 0, &pc) == FSC_EOOM);
    fsc_tag_pop();
    fsc_tag_pop();
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    CU_ASSERT_FATAL(fsc_recorder_close(rec) == 0);

    fsc_request_stream_t *rs = NULL;
    CU_ASSERT_FATAL(fsc_request_stream_load(path, &rs, &err) == 0);
    fsc_request_stream_info_t in;
    fsc_request_stream_info(rs, &in);
    CU_ASSERT_EQUAL(in.allocs, 3);
    CU_ASSERT_EQUAL(in.recorded_ooms, 1);
    CU_ASSERT_EQUAL(in.markers, 1);
    CU_ASSERT_EQUAL(in.capacity, 100 * MiB);
    CU_ASSERT_EQUAL(in.recorded_peak_reserved, 70 * MiB);

    fsc_whatif_verify_t v;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify(rs, NULL, &v, &err), 0);
    CU_ASSERT_EQUAL(v.match, 1);
    CU_ASSERT_EQUAL(v.oom_expected, 1);
    CU_ASSERT_EQUAL(v.oom_got, 1);
    CU_ASSERT_EQUAL(v.alloc_addr_matches, 2);
    CU_ASSERT_EQUAL(v.replay.first_oom.request, 2);
    CU_ASSERT_EQUAL(v.replay.first_oom.event, 7);
    CU_ASSERT_STRING_EQUAL(v.replay.first_oom.marker, "step 7");
    CU_ASSERT_STRING_EQUAL(v.replay.first_oom.tag, "model/layer1");

    fsc_whatif_result_t m = replay(rs, "max_split_size_mb:64", 100 * MiB);
    CU_ASSERT_EQUAL(m.oom, 0);
    CU_ASSERT_EQUAL(m.peak_reserved, 90 * MiB);
    fsc_request_stream_destroy(rs);
}

/* ---- suggestions table ------------------------------------------------------ */

static void test_fill_db(void)
{
    const char *path = fsc_test_path("whatif.db");
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
    /* A run database (the schema's one definition) with one OOM and a stale
     * suggestion; fill_db reads ooms and rewrites suggestions. */
    CU_ASSERT(sqlite3_exec(db, fsc_rundb_schema(), NULL, NULL, NULL) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(db,
                           "INSERT INTO runs(run, kind) VALUES(0, 'trace');"
                           "INSERT INTO meta(key, value) VALUES('schema_version', 2);"
                           "INSERT INTO summary(key, value, unit) VALUES('num_ooms', 1, 'count');"
                           "INSERT INTO ooms(id, seq, capacity) VALUES(0, 8, 83886080);"
                           "INSERT INTO suggestions(config) VALUES('stale');",
                           NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);

    sb_t b = frag_stream();
    fsc_err_t err = {0, ""};
    size_t rows = 0;
    /* No capacity given and none in the stream: the OOM row's 80 MiB. */
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_fill_db(path, b.rs, 0, &rows, &err), 0);
    CU_ASSERT(rows >= 1);
    CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CU_ASSERT_FATAL(sqlite3_prepare_v2(db,
                                       "SELECT count(*), sum(config = 'stale'), "
                                       "sum(config = 'expandable_segments:True' AND oom_id = 0 "
                                       "AND avoids_oom = 1 AND capacity = 83886080 AND "
                                       "needed_capacity = 62914560) FROM suggestions",
                                       -1, &st, NULL) == SQLITE_OK);
    CU_ASSERT_FATAL(sqlite3_step(st) == SQLITE_ROW);
    CU_ASSERT_EQUAL((size_t)sqlite3_column_int64(st, 0), rows);
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 1), 0);
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 2), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);

    CU_ASSERT_EQUAL(fsc_whatif_fill_db(fsc_test_path("missing.db"), b.rs, 0, &rows, &err),
                    FSC_ENOENT);
    fsc_request_stream_destroy(b.rs);
}

/* One value of the database at path (an integer; -1 when NULL). */
static int64_t db_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    CU_ASSERT_FATAL(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CU_ASSERT_FATAL(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

static void test_fill_db_job(void)
{
    /* A job database of two ranks of the fixture job: run 0 is rank 0 (no
     * OOM), run 1 rank 3 (one fragmentation OOM). Suggestions go to the
     * run picked by --rank/--run only; without a pick nothing is written. */
    static char out[8192];
    const char *bin = fsc_test_fragscope();
    char db[600], r0[600], r3[600];
    snprintf(db, sizeof db, "%s", fsc_test_path("whatif_job.db"));
    snprintf(r0, sizeof r0, "%s", fsc_test_data("jobs/train_rank0.fstrace"));
    snprintf(r3, sizeof r3, "%s", fsc_test_data("jobs/train_rank3.fstrace"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "'%s' analyze '%s' '%s' -o '%s' 2>&1",
                                      bin, r0, r3, db), 0);
    sqlite3 *h = NULL;
    CU_ASSERT_FATAL(sqlite3_open(db, &h) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(h, "DELETE FROM suggestions;"
                              "INSERT INTO suggestions(run, config) VALUES(0, 'stale0');"
                              "INSERT INTO suggestions(run, config) VALUES(1, 'stale1');",
                           NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    fsc_err_t err = {0, ""};
    fsc_request_stream_t *s0 = NULL, *s3 = NULL;
    CU_ASSERT_FATAL(fsc_request_stream_load(r0, &s0, &err) == 0);
    CU_ASSERT_FATAL(fsc_request_stream_load(r3, &s3, &err) == 0);
    size_t rows = 99;

    /* no pick: refused, naming the runs and how to pick; nothing written */
    CU_ASSERT_EQUAL(fsc_whatif_fill_db_job(db, s3, NULL, NULL, &rows, &err), FSC_EINVAL);
    CU_ASSERT(ends_with(fsc_err_msg(&err), "whatif_job.db: the database holds 2 runs (rank 0, "
                                           "rank 3): pick the one this input recorded with "
                                           "--rank R or --run N"));
    CU_ASSERT_EQUAL(rows, 0);
    CU_ASSERT_EQUAL(fsc_whatif_fill_db_opts(db, s3, NULL, &rows, &err), FSC_EINVAL);
    CU_ASSERT_EQUAL(db_int(db, "SELECT count(*) FROM suggestions WHERE config LIKE 'stale%'"),
                    2);

    /* the errors of report/check/diff */
    fsc_job_opts_t bad_rank = {.has_rank = 1, .rank = 7};
    CU_ASSERT_EQUAL(fsc_whatif_fill_db_job(db, s3, NULL, &bad_rank, &rows, &err), FSC_ENOENT);
    CU_ASSERT(ends_with(fsc_err_msg(&err), "whatif_job.db: no run of rank 7"));
    fsc_job_opts_t bad_run = {.has_run = 1, .run = 5};
    CU_ASSERT_EQUAL(fsc_whatif_fill_db_job(db, s3, NULL, &bad_run, &rows, &err), FSC_ENOENT);
    CU_ASSERT(ends_with(fsc_err_msg(&err), "whatif_job.db: no run 5 (the database holds runs 0 "
                                           "to 1)"));
    fsc_job_opts_t both = {.has_run = 1, .run = 1, .has_rank = 1, .rank = 0};
    CU_ASSERT_EQUAL(fsc_whatif_fill_db_job(db, s3, NULL, &both, &rows, &err), FSC_EINVAL);
    CU_ASSERT(ends_with(fsc_err_msg(&err), "whatif_job.db: run 1 is rank 3, not rank 0"));
    CU_ASSERT_EQUAL(db_int(db, "SELECT count(*) FROM suggestions"), 2);

    /* --rank 3: run 1's rows replaced, one per config that avoids its OOM
     * (9; a tenth setting that needs less capacity but fails at the cap
     * too is no suggestion; expandable segments need 4955570176 B), run
     * 0's kept */
    fsc_job_opts_t rank3 = {.has_rank = 1, .rank = 3};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_fill_db_job(db, s3, NULL, &rank3, &rows, &err), 0);
    CU_ASSERT_EQUAL(rows, 9);
    CU_ASSERT_EQUAL(db_int(db, "SELECT count(*) FROM suggestions WHERE run = 1 AND oom_id = 0"),
                    9);
    CU_ASSERT_EQUAL(db_int(db, "SELECT sum(avoids_oom) FROM suggestions WHERE run = 1"), 9);
    CU_ASSERT_EQUAL(db_int(db, "SELECT needed_capacity FROM suggestions WHERE run = 1 AND "
                               "config = 'expandable_segments:True'"), 4955570176);
    CU_ASSERT_EQUAL(db_int(db, "SELECT count(*) FROM suggestions WHERE run = 0 AND "
                               "config = 'stale0'"), 1);
    CU_ASSERT_EQUAL(db_int(db, "SELECT value FROM meta WHERE run = 1 AND key = 'run_complete'"),
                    0);

    /* --run 0: rank 0 ran out of nothing, its rows have no OOM */
    fsc_job_opts_t run0 = {.has_run = 1, .run = 0};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_fill_db_job(db, s0, NULL, &run0, &rows, &err), 0);
    CU_ASSERT_EQUAL(rows, 8);
    CU_ASSERT_EQUAL(db_int(db, "SELECT count(*) FROM suggestions WHERE run = 0 AND "
                               "oom_id IS NULL AND config <> 'stale0'"), 8);
    CU_ASSERT_EQUAL(db_int(db, "SELECT count(*) FROM suggestions WHERE run = 1"), 9);
    fsc_request_stream_destroy(s0);
    fsc_request_stream_destroy(s3);

    /* the command: same options and errors as report, one line, exit 2 */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --db '%s' 2>&1", bin, r3, db),
                    2);
    CU_ASSERT_EQUAL(fsc_test_count(out, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the database holds 2 runs (rank 0, rank 3): pick the "
                                       "one this input recorded with --rank R or --run N\n"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --suggest --rank 3 2>&1", bin,
                                r3), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--rank picks the run of --db: give --db"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --db '%s' --rank x 2>&1", bin,
                                r3, db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--rank: 'x' is not a number of 0 or more"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --db '%s' --run 1 2>&1", bin,
                                r3, db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "wrote 9 suggestion rows into "));
    CU_ASSERT_EQUAL(db_int(db, "SELECT count(*) FROM suggestions"), 17);
}

static const fsc_test_case_t k_tests[] = {
    {"defaults OOM, expandable_segments survives", test_defaults_oom_expandable_survives},
    {"max_split_size_mb changes the outcome", test_max_split_changes_outcome},
    {"record_stream delays a free", test_delayed_free},
    {"a recorded OOM is replayed as an allocation", test_recorded_oom_replayed},
    {"parallel run and bad configs", test_parallel_run_and_bad_config},
    {"needed capacity and suggestions", test_needed_capacity_and_suggest},
    {"fidelity on fragscope's own runs", test_fidelity_own_runs},
    {"verify reports the first divergence", test_verify_reports_divergence},
    {"OOM call sites named as the report names them", test_oom_site_named_as_report},
    {"a trace written by the recorder", test_from_trace},
    {"suggestions table of a run database", test_fill_db},
    {"suggestions for one run of a job database", test_fill_db_job},
    {NULL, NULL},
};

FSC_TEST_MAIN("whatif", k_tests)
