/*
 * test_verify_against.c — cross-setting verification on real H200
 * recordings: one job recorded without a cap under PyTorch's defaults, and
 * recorded again under a cap with each allocator setting
 * (tests/data/gpu/xset: gradient-checkpointed MLP, 5 settings; and GPT-2,
 * 4 settings). Replaying the uncapped run under each setting at that run's
 * cap must give the other recording itself: its segment sequence, both
 * peaks, its address for every request, and its OOM. PyTorch's rounding of
 * each form is pinned by the size its OOM entry recorded (the rounded
 * size) for the request the job made there.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fragscope/source.h"
#include "fragscope/whatif.h"
#include "fsc_test.h"
#include "fsc_test_gpu.h"

/* a (uncapped, defaults) replayed under b's settings at b's cap (if b had
 * one) is b. */
static void against(const char *a_name, const char *b_name, const char *config)
{
    fsc_request_stream_t *a = fsc_test_gpu_stream(a_name), *b = fsc_test_gpu_stream(b_name);
    cJSON *st = fsc_test_gpu_stats(b_name);
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    if (cJSON_GetObjectItemCaseSensitive(st, "cap_bytes") != NULL)
        o.capacity = fsc_test_stat_u64(st, "cap_bytes");
    const cJSON *oc = cJSON_GetObjectItemCaseSensitive(st, "outcome");
    int b_oom = oc == NULL || (cJSON_IsString(oc) && strcmp(oc->valuestring, "oom") == 0);
    fsc_whatif_verify_t v;
    fsc_err_t err = {0, ""};
    /* the settings come from b's snapshot (allocator_settings) */
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify_against(a, b, NULL, &o, &v, &err), 0);
    CU_ASSERT_STRING_EQUAL(v.replay.config, config);
    if (!v.match)
        fprintf(stderr,
                "%s -> %s: segments %llu/%llu, addresses %llu/%llu, first at request %ld "
                "(%llu B, rounded %llu B)\n",
                a_name, b_name, (unsigned long long)v.segments_got,
                (unsigned long long)v.segments_expected, (unsigned long long)v.alloc_addr_matches,
                (unsigned long long)v.allocs_compared, v.first_addr_mismatch,
                (unsigned long long)v.mismatch_requested, (unsigned long long)v.mismatch_rounded);
    CU_ASSERT(v.match);
    CU_ASSERT_EQUAL(v.first_request_diff, -1);
    CU_ASSERT_EQUAL(v.first_addr_mismatch, -1);
    /* every request b served, at b's address; PyTorch's own figures */
    CU_ASSERT_EQUAL(v.allocs_compared, fsc_test_stat_u64(st, "allocation.all.allocated"));
    CU_ASSERT_EQUAL(v.alloc_addr_matches, v.allocs_compared);
    CU_ASSERT_EQUAL(v.requests_compared, v.requests_b);
    if (b_oom) {
        CU_ASSERT(v.requests_a > v.requests_b); /* b died at its OOM */
    } else {
        CU_ASSERT_EQUAL(v.requests_a, v.requests_b);
    }
    CU_ASSERT_EQUAL(v.peak_reserved_got, fsc_test_stat_u64(st, "reserved_bytes.all.peak"));
    CU_ASSERT_EQUAL(v.peak_allocated_got, fsc_test_stat_u64(st, "allocated_bytes.all.peak"));
    if (strstr(config, "expandable") == NULL)
        CU_ASSERT_EQUAL(v.segments_got, fsc_test_stat_u64(st, "num_device_alloc"));
    CU_ASSERT_EQUAL(v.oom_expected, b_oom);
    CU_ASSERT_EQUAL(v.oom_got, b_oom);
    cJSON_Delete(st);
    fsc_request_stream_destroy(a);
    fsc_request_stream_destroy(b);
}

static void test_ckpt_settings(void)
{
    against("xset/ckpt_uncapped", "xset/ckpt_cap0.75_default", "");
    against("xset/ckpt_uncapped", "xset/ckpt_cap0.75_roundup_power2_divisions_4",
            "roundup_power2_divisions:4");
    against("xset/ckpt_uncapped", "ckpt_cap0.75_divisions_list",
            "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
    against("xset/ckpt_uncapped", "xset/ckpt_cap0.75_max_split_size_mb_64",
            "max_split_size_mb:64");
    against("xset/ckpt_uncapped", "xset/ckpt_cap0.75_garbage_collection_threshold_0_6",
            "garbage_collection_threshold:0.6");
    against("xset/ckpt_uncapped", "xset/ckpt_cap0.75_expandable_segments_True",
            "expandable_segments:True");
}

static void test_gpt2_settings(void)
{
    against("gpt2_uncapped", "gpt2_cap0.80_default", "");
    against("gpt2_uncapped", "gpt2_cap0.80_max_split_size_mb_64", "max_split_size_mb:64");
    against("gpt2_uncapped", "gpt2_cap0.80_garbage_collection_threshold_0_6",
            "garbage_collection_threshold:0.6");
    against("gpt2_uncapped", "gpt2_cap0.80_expandable_segments_True",
            "expandable_segments:True");
}

/* One deterministic job of requests at the rounding rules' boundaries
 * (bench/gpu/boundary_job.py: just above and below powers of two from 1 MiB
 * to 256 MiB, past an eighth and a quarter, around 1 MiB, and small-pool
 * sizes; 1 518 requests), recorded on the H200 under the defaults and under
 * each setting, uncapped and capped at 4 211 081 216 B (0.85 of the
 * defaults run's peak reserved): the defaults run replayed under each is
 * that run, including the four capped runs' OOMs. */
static void test_boundary_settings(void)
{
    static const struct {
        const char *name, *config;
    } runs[] = {
        {"b_rp4", "roundup_power2_divisions:4"},
        {"b_rp8", "roundup_power2_divisions:8"},
        {"b_rplist", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"},
        {"b_ms128", "max_split_size_mb:128"},
        {"b_nsr64", "max_non_split_rounding_mb:64,max_split_size_mb:128"},
        {"b_exp", "expandable_segments:True"},
        {"b_rp4_ms128", "roundup_power2_divisions:4,max_split_size_mb:128"},
        {"b_rp8_exp", "roundup_power2_divisions:8,expandable_segments:True"},
        {"b_defaults_cap", ""},
        {"b_gc_cap", "garbage_collection_threshold:0.6"},
        {"b_rp4_cap", "roundup_power2_divisions:4"},
        {"b_rplist_cap", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"},
        {"b_ms128_cap", "max_split_size_mb:128"},
        {"b_exp_cap", "expandable_segments:True"},
        {"b_gc_ms128_cap", "garbage_collection_threshold:0.6,max_split_size_mb:128"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char b[64];
        snprintf(b, sizeof b, "boundary/%s", runs[i].name);
        against("boundary/b_defaults", b, runs[i].config);
    }
}

/* PyTorch's rounding, as the recordings show it: the size its OOM entry
 * holds is the rounded size of the request the job made there (1 595 358 208
 * B, a 1.49 GiB logits buffer, in both jobs). */
static void test_rounding_pins(void)
{
    static const struct {
        const char *config;
        uint64_t requested, recorded;
    } pins[] = {
        {"", 1595358208, 1595358208},
        {"max_split_size_mb:64", 1595358208, 1595358208},
        {"garbage_collection_threshold:0.6", 1595358208, 1595358208},
        {"roundup_power2_divisions:4", 1595358208, 1610612736},
        {"roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", 1595358208, 1610612736},
    };
    for (size_t i = 0; i < sizeof pins / sizeof pins[0]; i++) {
        fsc_alloc_config_t c;
        CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(pins[i].config, &c, NULL), 0);
        CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, pins[i].requested), pins[i].recorded);
    }
    /* and the replay's OOM is at that request, the size the job asked */
    fsc_request_stream_t *a = fsc_test_gpu_stream("xset/ckpt_uncapped"),
                         *b = fsc_test_gpu_stream("xset/ckpt_cap0.75_roundup_power2_divisions_4");
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = 5721970180ull; /* its stats' cap_bytes */
    fsc_whatif_verify_t v;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify_against(a, b, NULL, &o, &v, &err), 0);
    CU_ASSERT_EQUAL(v.replay.first_oom.requested, 1595358208);
    CU_ASSERT_EQUAL(v.replay.first_oom.request, 477);
    fsc_request_stream_destroy(a);
    fsc_request_stream_destroy(b);
}

/* Without the cap, a replay that cannot reach it differs, and says where:
 * the first request placed elsewhere, with its size and our rounding. */
static void test_differs_names_request(void)
{
    fsc_request_stream_t *a = fsc_test_gpu_stream("gpt2_uncapped"), *b = fsc_test_gpu_stream("gpt2_cap0.80_default");
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = 2ull << 40; /* far above: no OOM, so b's is not reproduced */
    fsc_whatif_verify_t v;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify_against(a, b, "", &o, &v, &err), 0);
    CU_ASSERT_EQUAL(v.match, 0);
    CU_ASSERT_EQUAL(v.oom_expected, 1);
    CU_ASSERT_EQUAL(v.oom_got, 0);
    /* a setting that rounds otherwise moves blocks: named with its rounding */
    CU_ASSERT_EQUAL_FATAL(
        fsc_whatif_verify_against(a, b, "roundup_power2_divisions:2", &o, &v, &err), 0);
    CU_ASSERT_EQUAL(v.match, 0);
    CU_ASSERT(v.first_addr_mismatch >= 0);
    CU_ASSERT(v.mismatch_requested > 0);
    fsc_alloc_config_t c;
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:2", &c, NULL), 0);
    CU_ASSERT_EQUAL(v.mismatch_rounded, fsc_alloc_round_size(&c, v.mismatch_requested));
    fsc_request_stream_destroy(a);
    fsc_request_stream_destroy(b);
}

/* Two different jobs part at their first request of other bytes. */
static void test_other_job(void)
{
    fsc_request_stream_t *a = fsc_test_gpu_stream("gpt2_uncapped"), *b = fsc_test_gpu_stream("xset/ckpt_uncapped");
    fsc_whatif_verify_t v;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_verify_against(a, b, NULL, NULL, &v, &err), 0);
    CU_ASSERT_EQUAL(v.match, 0);
    CU_ASSERT(v.first_request_diff >= 0);
    CU_ASSERT(v.diff_requested_a != v.diff_requested_b);
    CU_ASSERT_EQUAL(v.requests_compared, (uint64_t)v.first_request_diff + 1);
    fsc_request_stream_destroy(a);
    fsc_request_stream_destroy(b);
}

/* The command: exit 0 on a match, 1 on a difference, 2 (one line naming
 * the file) for a window of a ring, which cannot be lined up. */
static void test_cli(void)
{
    const char *bin = fsc_test_fragscope();
    char a[512], b[512], w[512];
    snprintf(a, sizeof a, "%s", fsc_test_data("gpu/xset/ckpt_uncapped.pickle"));
    snprintf(b, sizeof b, "%s",
             fsc_test_data("gpu/xset/ckpt_cap0.75_roundup_power2_divisions_4.pickle"));
    snprintf(w, sizeof w, "%s", fsc_test_data("gpu/ring/ring_exp.pickle"));
    static char out[16384];
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                "'%s' whatif '%s' --verify-against '%s' --capacity 5721970180",
                                bin, a, b),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the replay reproduces it"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "block addresses matching the other: 477 of 477"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                "'%s' whatif '%s' --verify-against '%s' --config "
                                "roundup_power2_divisions:2 --capacity 5721970180 --format json",
                                bin, a, b),
                    1);
    cJSON *j = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT(cJSON_IsFalse(cJSON_GetObjectItem(j, "match")));
    const cJSON *m = cJSON_GetObjectItem(j, "first_addr_mismatch");
    CU_ASSERT(cJSON_IsObject(m));
    CU_ASSERT(cJSON_IsNumber(cJSON_GetObjectItem(m, "rounded")));
    cJSON_Delete(j);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --verify-against '%s' 2>&1",
                                bin, a, w),
                    2);
    CU_ASSERT_EQUAL(fsc_test_count(out, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "ring_exp.pickle"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "begins mid-run"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                "'%s' whatif '%s' --verify-against '%s' --suggest 2>&1", bin, a, b),
                    2);
}

/* PyTorch's rounding seen in the recordings themselves: a request of more
 * than 10 MiB that missed the cache gets a segment of its rounded size up
 * to 2 MiB, so the segment PyTorch created right before serving it says
 * how PyTorch rounded it (exactly, where the rounding's step is 2 MiB or
 * more). Each recording's own settings must give every such segment. */
typedef struct seg_pin {
    fsc_alloc_config_t cfg;
    uint64_t seg_addr, seg_size;
    int have_seg;
    uint64_t checked, differ_from_512, mismatched;
} seg_pin_t;

static int pin_header(void *ud, const fsc_trace_header_t *hdr, fsc_err_t *err)
{
    (void)ud;
    (void)hdr;
    (void)err;
    return 0;
}

static int pin_tag(void *ud, uint32_t node, uint32_t parent, const char *name, size_t len,
                   fsc_err_t *err)
{
    (void)ud;
    (void)node;
    (void)parent;
    (void)name;
    (void)len;
    (void)err;
    return 0;
}

static int pin_event(void *ud, const fsc_event_t *ev, fsc_err_t *err)
{
    (void)err;
    seg_pin_t *p = ud;
    if (ev->type == FSC_EV_SEGMENT_ALLOC) {
        p->seg_addr = ev->addr;
        p->seg_size = ev->size;
        p->have_seg = 1;
        return 0;
    }
    if (ev->type != FSC_EV_ALLOC || !p->have_seg)
        return 0;
    p->have_seg = 0;
    uint64_t r = ev->requested;
    if (ev->addr != p->seg_addr || r <= 10 * FSC_MiB)
        return 0;
    uint64_t want = fsc_alloc_segment_size(fsc_alloc_round_size(&p->cfg, r));
    p->checked++;
    p->mismatched += want != p->seg_size;
    p->differ_from_512 += want != fsc_alloc_segment_size((r + 511) / 512 * 512);
    return 0;
}

static void pin_segments(const char *name, const char *config, uint64_t min_differ)
{
    char path[256];
    snprintf(path, sizeof path, "gpu/%s.pickle", name);
    seg_pin_t p;
    memset(&p, 0, sizeof p);
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(config, &p.cfg, NULL), 0);
    fsc_source_t *src = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_source_open(fsc_test_data(path), NULL, &src, &err), 0);
    fsc_source_sink_t sink = {&p, pin_header, pin_tag, pin_event};
    CU_ASSERT_EQUAL(fsc_source_run(src, &sink, &err), 0);
    fsc_source_close(src);
    if (p.mismatched != 0 || p.differ_from_512 < min_differ)
        fprintf(stderr, "%s: %llu segments checked, %llu mismatched, %llu rounded otherwise\n",
                name, (unsigned long long)p.checked, (unsigned long long)p.mismatched,
                (unsigned long long)p.differ_from_512);
    CU_ASSERT(p.checked > 0);
    CU_ASSERT_EQUAL(p.mismatched, 0);
    /* the forms that round otherwise show it in some of these segments */
    CU_ASSERT(p.differ_from_512 >= min_differ);
}

static void test_rounding_in_segments(void)
{
    pin_segments("xset/ckpt_uncapped", "", 0);
    pin_segments("xset/ckpt_cap0.75_default", "", 0);
    /* 10 of its 16 such segments, and 2 of the list form's, are sized
     * otherwise than 512 B rounding would give: the forms' own rounding */
    pin_segments("xset/ckpt_cap0.75_roundup_power2_divisions_4", "roundup_power2_divisions:4", 10);
    pin_segments("ckpt_cap0.75_divisions_list", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
                 2);
    pin_segments("xset/ckpt_cap0.75_max_split_size_mb_64", "max_split_size_mb:64", 0);
    pin_segments("gpt2_uncapped", "", 0);
    /* the boundary job: requests just past a power of two, an eighth or a
     * quarter of one: 18 of b_rp4's 20 such segments and 18 of b_rp8's 19
     * are sized by the form's step, not by 512 B rounding. The list form
     * divides only from 512 MiB up, above this job's sizes: its 18 are
     * 512 B rounded, as ours. */
    pin_segments("boundary/b_defaults", "", 0);
    pin_segments("boundary/b_rp4", "roundup_power2_divisions:4", 18);
    pin_segments("boundary/b_rp8", "roundup_power2_divisions:8", 18);
    pin_segments("boundary/b_rplist", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", 0);
    pin_segments("boundary/b_rp4_ms128", "roundup_power2_divisions:4,max_split_size_mb:128", 37);
}

/* Advice from a run that ran out of memory after serving `served`
 * requests, checked against the same job run for real under other settings
 * at that cap (their stats files): a setting is said to serve the failed
 * request only if the real run under it got past it (it ended without an
 * OOM, or served more requests before its own), and is said not to help
 * only if the real run failed at or before it. */
typedef struct real_run {
    const char *config, *stats;
} real_run_t;

static void check_advice(const fsc_suggestion_t *s, size_t n, const real_run_t *real, size_t nreal,
                         uint64_t served, int *claims)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < nreal; k++) {
            if (strcmp(s[i].config, real[k].config) != 0)
                continue;
            cJSON *st = fsc_test_gpu_stats(real[k].stats);
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(st, "outcome");
            int real_oom = cJSON_IsString(o) && strcmp(o->valuestring, "oom") == 0;
            int got_past = !real_oom || fsc_test_stat_u64(st, "allocation.all.allocated") > served;
            int depends = s[i].capacity_upper != 0 && s[i].avoids_at_lower != s[i].avoids_at_upper;
            if (s[i].helps) {
                CU_ASSERT(s[i].avoids_oom);
                CU_ASSERT(got_past);
                claims[0]++;
            } else if (!depends) {
                CU_ASSERT(!got_past);
                CU_ASSERT(strncmp(s[i].note, "does not help", 13) == 0);
                claims[1]++;
            } else {
                CU_ASSERT(strncmp(s[i].note, "depends on the cap", 18) == 0);
                claims[2]++;
            }
            cJSON_Delete(st);
        }
}

/* gpt2_cap0.90_default against three of the grid's settings at its cap. */
static const real_run_t k_gpt2_real[] = {
    {"expandable_segments:True", "gpt2_cap0.90_expandable_segments_True"},
    {"garbage_collection_threshold:0.6", "gpt2_cap0.90_garbage_collection_threshold_0_6"},
    {"max_split_size_mb:64", "gpt2_cap0.90_max_split_size_mb_64"},
};

/* --suggest's claims for rs at cap (0: unknown), counted into claims[3]
 * (serves / does not help / depends on the cap) as check_advice checks
 * them against the real runs. */
static void advise(fsc_request_stream_t *rs, uint64_t cap, const real_run_t *real, size_t nreal,
                   uint64_t served, int *claims)
{
    fsc_err_t err = {0, ""};
    fsc_suggestion_t *s = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(fsc_whatif_suggest(rs, cap, &s, &n, &err), 0);
    CU_ASSERT(n > 0);
    if (cap == 0) {
        fsc_request_stream_info_t info;
        fsc_request_stream_info(rs, &info);
        for (size_t i = 0; i < n; i++) /* the claims hold over [lower, upper) */
            CU_ASSERT_EQUAL(s[i].capacity_upper, info.capacity_upper);
    }
    check_advice(s, n, real, nreal, served, claims);
    fsc_suggestions_free(s);
}

static void test_advice_against_real_runs(void)
{
    fsc_request_stream_t *rs = fsc_test_gpu_stream("gpt2_cap0.90_default");
    fsc_request_stream_info_t info;
    fsc_request_stream_info(rs, &info);
    cJSON *st = fsc_test_gpu_stats("gpt2_cap0.90_default");
    uint64_t cap = fsc_test_stat_u64(st, "cap_bytes");
    uint64_t served = fsc_test_stat_u64(st, "allocation.all.allocated");
    cJSON_Delete(st);
    /* the cap it ran under lies in the range the recording allows */
    CU_ASSERT(info.capacity_lower <= cap && cap < info.capacity_upper);
    /* the cap unknown: claims must hold over [lower, upper) */
    int claims[3] = {0, 0, 0};
    advise(rs, 0, k_gpt2_real, 3, served, claims);
    /* expandable segments serve it everywhere in the range; max_split_size_mb:64
     * and GC only at some caps of it */
    CU_ASSERT_EQUAL(claims[0], 1);
    CU_ASSERT_EQUAL(claims[2], 2);
    /* the cap known: a firm answer for all three */
    int firm[3] = {0, 0, 0};
    advise(rs, cap, k_gpt2_real, 3, served, firm);
    CU_ASSERT_EQUAL(firm[0], 2); /* expandable, max_split_size_mb:64 */
    CU_ASSERT_EQUAL(firm[1], 1); /* garbage_collection_threshold:0.6 fails too */
    CU_ASSERT_EQUAL(firm[2], 0);
    fsc_request_stream_destroy(rs);
}

/* The boundary job's capped defaults run (out of memory at 4 211 081 216 B
 * after 519 requests) against the same job at that cap under four of the
 * settings the advice names: expandable segments and max_split_size_mb:128
 * ran to the end; garbage collection at 0.6 served the failed request and
 * ran out later (after 926), which the advice, covering the recorded part
 * only, is right to count as serving it at that cap;
 * roundup_power2_divisions:4 ran out earlier (after 440). */
static void test_boundary_advice(void)
{
    static const real_run_t real[] = {
        {"expandable_segments:True", "boundary/b_exp_cap"},
        {"max_split_size_mb:128", "boundary/b_ms128_cap"},
        {"roundup_power2_divisions:4", "boundary/b_rp4_cap"},
        {"garbage_collection_threshold:0.6", "boundary/b_gc_cap"},
    };
    fsc_request_stream_t *rs = fsc_test_gpu_stream("boundary/b_defaults_cap");
    fsc_request_stream_info_t info;
    fsc_request_stream_info(rs, &info);
    const uint64_t cap = 4211081216ull;
    CU_ASSERT(info.capacity_lower <= cap && cap < info.capacity_upper);
    int claims[3] = {0, 0, 0};
    advise(rs, 0, real, 4, 519, claims);
    /* expandable, max_split 128 and GC 0.6 over the whole range (with the
     * segments placed as the driver places them; bottom-up first fit made GC
     * 0.6 fail at the range's lower end, where no real run was made) */
    CU_ASSERT_EQUAL(claims[0], 3);
    CU_ASSERT_EQUAL(claims[1], 1); /* divisions 4: fails at both ends */
    CU_ASSERT_EQUAL(claims[2], 0);
    int firm[3] = {0, 0, 0};
    advise(rs, cap, real, 4, 519, firm);
    CU_ASSERT_EQUAL(firm[0], 3);
    CU_ASSERT_EQUAL(firm[1], 1);
    CU_ASSERT_EQUAL(firm[2], 0);
    fsc_request_stream_destroy(rs);
}

static const fsc_test_case_t k_tests[] = {
    {"checkpointed MLP: defaults -> 5 settings exact", test_ckpt_settings},
    {"GPT-2: defaults -> 4 settings exact", test_gpt2_settings},
    {"boundary job: defaults -> 15 runs under 10 settings exact", test_boundary_settings},
    {"rounding of each form pinned by the recordings", test_rounding_pins},
    {"rounding seen in the recordings' own segments", test_rounding_in_segments},
    {"a difference names the request and our rounding", test_differs_names_request},
    {"another job parts at its first other request", test_other_job},
    {"command line", test_cli},
    {"advice checked against the real runs", test_advice_against_real_runs},
    {"boundary job: advice checked against the real runs", test_boundary_advice},
    {NULL, NULL},
};

FSC_TEST_MAIN("verify_against", k_tests)
