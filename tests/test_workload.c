/*
 * test_workload.c — the synthetic training workloads, checked through
 * `fragscope simulate --profile`, which runs a workload against a
 * bookkeeping stand-in for the allocator (no rounding, no caching) and prints
 * what it asked for per step.
 *
 * Why the expected numbers are right (and plausible against the real runs in
 * data/pytorch_snapshots, see docs/workloads.md):
 *  - gpt2 init: 148 parameter tensors, 497 759 232 bytes = 124 439 808 fp32
 *    parameters, GPT-2 small's count; the real snapshot has the same 148.
 *  - gpt2 step 0: 861 allocations of a step + 296 AdamW state tensors
 *    (exp_avg, exp_avg_sq for 148 parameters) = 1157; the real run's first
 *    step made 444 optimizer allocations (state + 148 temporaries), later
 *    steps 148, like ours. Real steps make 1054-1068 allocations.
 *  - at the end: parameters + AdamW state = 3 x 497 759 232 = 1 493 277 696
 *    bytes in 444 buffers; everything else was freed.
 *  - gpt2, seed 1: step 0 draws seq 256: what stays live after it is the
 *    state above, the last step's logits and token ids (the training loop
 *    still holds them): 1 493 277 696 + 8*256*50257*4 + 8*256*8 = 1 904 999 424.
 *    Step 1 draws seq 1024 and peaks at 17 953 635 332 bytes (16.72 GiB);
 *    the real run peaked at 16.23 GiB allocated at seq 1024.
 *  - resnet init: 320 tensors (161 parameters + 3 buffers for each of 53
 *    batchnorms), like torchvision's model in the real snapshot;
 *    102 441 032 bytes = 25 557 032 parameters * 4 + running stats.
 *  - resnet step 0: 664 allocations a step + 161 momentum buffers = 825
 *    (real: 675-691 a step).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc_test.h"

static char g_out[1 << 16];

static int profile(const char *workload, int steps, int seed)
{
    return fsc_test_sh(g_out, sizeof g_out, "%s simulate --workload %s --steps %d --seed %d --profile",
                       fsc_test_fragscope(), workload, steps, seed);
}

typedef struct row {
    unsigned long long allocs, frees, bytes, peak, live_end;
} row_t;

/* The row of step `label` ("init", "0", "1", ...) of the last profile. */
static int find_row(const char *label, row_t *r)
{
    for (const char *l = g_out; l != NULL && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char name[16];
        if (sscanf(l, "%15s %llu %llu %llu %llu %llu", name, &r->allocs, &r->frees, &r->bytes,
                   &r->peak, &r->live_end) == 6 &&
            strcmp(name, label) == 0)
            return 1;
    }
    return 0;
}

static void test_gpt2_counts(void)
{
    CU_ASSERT_EQUAL_FATAL(profile("gpt2", 3, 1), 0);
    row_t r;
    CU_ASSERT_FATAL(find_row("init", &r));
    CU_ASSERT_EQUAL(r.allocs, 148);
    CU_ASSERT_EQUAL(r.frees, 0);
    CU_ASSERT_EQUAL(r.bytes, 497759232ull);
    CU_ASSERT_FATAL(find_row("0", &r));
    CU_ASSERT_EQUAL(r.allocs, 1157);
    CU_ASSERT_EQUAL(r.live_end, 1904999424ull);
    CU_ASSERT_FATAL(find_row("1", &r));
    CU_ASSERT_EQUAL(r.allocs, 861);
    CU_ASSERT_EQUAL(r.frees, 861);
    CU_ASSERT_EQUAL(r.peak, 17953635332ull);
    /* allocations per step within the real run's order (1054-1068) */
    CU_ASSERT(r.allocs >= 700 && r.allocs <= 1300);
    CU_ASSERT_FATAL(find_row("2", &r));
    CU_ASSERT_EQUAL(r.allocs, 861);
    CU_ASSERT_EQUAL(r.frees, 863); /* + the last step's ids and logits */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "peak live: 17953635332 bytes (16.72 GiB) in step 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "live at end: 444 buffers, 1493277696 bytes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "total: 3027 allocs, 2583 frees"));
}

static void test_gpt2_peak_range_24_steps(void)
{
    /* over the real run's 24 steps the peak must be the real one's order:
     * 16.23 GiB allocated; accept 12-21 GiB */
    CU_ASSERT_EQUAL_FATAL(profile("gpt2", 24, 1), 0);
    const char *p = strstr(g_out, "peak live: ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    unsigned long long peak = strtoull(p + strlen("peak live: "), NULL, 10);
    CU_ASSERT(peak >= 12ull << 30 && peak <= 21ull << 30);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "total: 21108 allocs, 20664 frees"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "live at end: 444 buffers, 1493277696 bytes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "markers 24;"));
}

static void test_resnet_counts(void)
{
    CU_ASSERT_EQUAL_FATAL(profile("resnet", 3, 1), 0);
    row_t r;
    CU_ASSERT_FATAL(find_row("init", &r));
    CU_ASSERT_EQUAL(r.allocs, 320);
    CU_ASSERT_EQUAL(r.bytes, 102441032ull);
    CU_ASSERT_FATAL(find_row("0", &r));
    CU_ASSERT_EQUAL(r.allocs, 825);
    CU_ASSERT_EQUAL(r.peak, 4187969512ull);
    CU_ASSERT_FATAL(find_row("1", &r));
    CU_ASSERT_EQUAL(r.allocs, 664);
    CU_ASSERT_EQUAL(r.frees, 664);
    /* params + buffers + momentum: 320 + 161 buffers */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "live at end: 481 buffers, 204669160 bytes"));
}

static void test_resnet_peak_range_12_steps(void)
{
    /* real: 4.15 GiB peak allocated over 12 steps; accept 3-5.5 GiB */
    CU_ASSERT_EQUAL_FATAL(profile("resnet", 12, 1), 0);
    const char *p = strstr(g_out, "peak live: ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    unsigned long long peak = strtoull(p + strlen("peak live: "), NULL, 10);
    CU_ASSERT(peak >= 3ull << 30 && peak <= 11ull << 29);
}

static void test_tags_and_frees_consistent(void)
{
    static const char *names[] = {"gpt2", "resnet"};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL_FATAL(profile(names[i], 4, 3), 0);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(g_out, "tags: max depth 4, final depth 0, bad pops 0; markers 4; bad frees 0"));
    }
}

static void test_deterministic_for_a_seed(void)
{
    static char first[sizeof g_out];
    CU_ASSERT_EQUAL_FATAL(profile("gpt2", 5, 42), 0);
    memcpy(first, g_out, sizeof first);
    CU_ASSERT_EQUAL_FATAL(profile("gpt2", 5, 42), 0);
    CU_ASSERT_STRING_EQUAL(first, g_out);
    /* another seed draws other sequence lengths */
    CU_ASSERT_EQUAL_FATAL(profile("gpt2", 5, 43), 0);
    const char *a = strstr(first, "\ninit"), *b = strstr(g_out, "\ninit");
    CU_ASSERT_FATAL(a != NULL && b != NULL);
    CU_ASSERT(strcmp(a, b) != 0);

    CU_ASSERT_EQUAL_FATAL(profile("resnet", 4, 9), 0);
    memcpy(first, g_out, sizeof first);
    CU_ASSERT_EQUAL_FATAL(profile("resnet", 4, 9), 0);
    CU_ASSERT_STRING_EQUAL(first, g_out);
}

static void test_size_classes_like_the_real_run(void)
{
    /* most gpt2 allocations are activation-sized: 2 MiB - 64 MiB, as in the
     * real run (about 58% there) */
    CU_ASSERT_EQUAL_FATAL(profile("gpt2", 6, 1), 0);
    unsigned long long total = 0, mid = 0;
    const char *l = strstr(g_out, "size classes");
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    while ((l = strchr(l, '\n')) != NULL) {
        l++;
        int k;
        unsigned long long n;
        if (sscanf(l, " 2^%d %llu", &k, &n) != 2)
            break;
        total += n;
        if (k >= 21 && k <= 25)
            mid += n;
    }
    CU_ASSERT(total > 0);
    CU_ASSERT(mid * 100 >= total * 40 && mid * 100 <= total * 75);
}

static void test_unknown_workload(void)
{
    CU_ASSERT_EQUAL(profile("bert", 2, 1), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "unknown workload 'bert'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "gpt2, resnet"));
}

static const fsc_test_case_t k_tests[] = {
    {"gpt2 counts, seed 1", test_gpt2_counts},
    {"gpt2 peak over 24 steps", test_gpt2_peak_range_24_steps},
    {"resnet counts, seed 1", test_resnet_counts},
    {"resnet peak over 12 steps", test_resnet_peak_range_12_steps},
    {"tags balanced, frees valid", test_tags_and_frees_consistent},
    {"deterministic for a seed", test_deterministic_for_a_seed},
    {"size classes", test_size_classes_like_the_real_run},
    {"unknown workload", test_unknown_workload},
    {NULL, NULL},
};

FSC_TEST_MAIN("workload", k_tests)
