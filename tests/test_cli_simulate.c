/*
 * test_cli_simulate.c — `fragscope simulate` end to end: the summary, the
 * OOM report, exit codes for bad options, and the trace it records.
 *
 * The exact figures come from running the workloads through the allocator
 * (seed 1): gpt2 peaks at seq 1024 in step 1 with 17 957 594 624 bytes
 * allocated (block sizes: the profile's 17 953 635 332 requested bytes plus
 * rounding). Under a 17 GiB cap that step's 1.53 GiB logits gradient fails
 * although 1.81 GiB are unallocated: the free memory is split across
 * segments that stay pinned by live blocks (docs/workloads.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc_test.h"

static char g_out[1 << 16];

#define SIM(...) fsc_test_sh(g_out, sizeof g_out, "%s simulate " __VA_ARGS__)

static void test_summary(void)
{
    CU_ASSERT_EQUAL_FATAL(SIM("--workload gpt2 --steps 3", fsc_test_fragscope()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "workload gpt2: 3 steps, seed 1, capacity 80.00 GiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "completed 3 steps, no OOM"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "peak allocated 17957594624 bytes (16.72 GiB)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "alloc retries 0, OOMs 0"));
    /* memory_summary()-style rows */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "Allocated memory"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "Requested memory"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "GPU reserved memory"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "Non-releasable memory"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "num_alloc_retries"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "events: "));
}

static void test_resnet_summary(void)
{
    CU_ASSERT_EQUAL_FATAL(SIM("--workload resnet --steps 2 --seed 1", fsc_test_fragscope()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "completed 2 steps, no OOM"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "workload resnet: 2 steps, seed 1"));
}

static void test_fragmentation_oom(void)
{
    CU_ASSERT_EQUAL_FATAL(SIM("--workload gpt2 --steps 6 --capacity 17GiB", fsc_test_fragscope()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "OOM at step 1 (step/backward/loss) after 1 complete steps"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "allocator: out of device memory"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, ">= the rounded request 1.53 GiB (enough free memory, but fragmented)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "OOMs 1"));

    /* the same run with expandable segments, or with oversize blocks kept
     * whole, completes */
    CU_ASSERT_EQUAL_FATAL(SIM("--workload gpt2 --steps 6 --capacity 17GiB --config expandable_segments:True",
                              fsc_test_fragscope()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "completed 6 steps, no OOM"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "config \"expandable_segments:True\""));
    CU_ASSERT_EQUAL_FATAL(SIM("--workload gpt2 --steps 6 --capacity 17GiB --config max_split_size_mb:128",
                              fsc_test_fragscope()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "completed 6 steps, no OOM"));
}

static void test_capacity_oom(void)
{
    /* 3 GiB cannot even hold step 0 (seq 256): its loss gradient fails with
     * only 310.85 MiB left under the cap */
    CU_ASSERT_EQUAL_FATAL(SIM("--workload gpt2 --steps 3 --capacity 3GiB", fsc_test_fragscope()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "OOM at step 0 (step/backward/loss) after 0 complete steps"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "capacity - allocated = 310.85 MiB < the rounded request 392.63 MiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "(not enough memory)"));
}

static void test_bad_options(void)
{
    const char *f = fsc_test_fragscope();
    CU_ASSERT_EQUAL(SIM("--workload gpt2 --config max_split_size_mb:abc", f), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "--config"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "max_split_size_mb"));
    CU_ASSERT_EQUAL(SIM("--workload gpt2 --config bogus_key:1", f), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "bogus_key"));

    CU_ASSERT_EQUAL(SIM("--workload llama --steps 2", f), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "unknown workload 'llama' (workloads: gpt2, resnet)"));
    CU_ASSERT_EQUAL(SIM("--steps 2", f), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "--workload is required"));
    CU_ASSERT_EQUAL(SIM("--workload gpt2 --steps 0", f), 2);
    CU_ASSERT_EQUAL(SIM("--workload gpt2 --steps 3x", f), 2);
    CU_ASSERT_EQUAL(SIM("--workload gpt2 --capacity lots", f), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "'lots' is not a size"));
    CU_ASSERT_EQUAL(SIM("--workload gpt2 --capacity 0", f), 2);
    CU_ASSERT_EQUAL(SIM("--workload gpt2 --frobnicate", f), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "unknown option '--frobnicate'"));
    CU_ASSERT_EQUAL(SIM("--workload gpt2 --profile --capacity 4GiB", f), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "without the allocator"));
    CU_ASSERT_EQUAL(SIM("--workload", f), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "--workload needs a value"));
}

static void test_records_trace(void)
{
    const char *trace = fsc_test_path("sim.fstrace");
    CU_ASSERT_EQUAL_FATAL(SIM("--workload gpt2 --steps 2 -o %s", fsc_test_fragscope(), trace), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "trace: "));
    const char *ev = strstr(g_out, "events: ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    unsigned long long events = strtoull(ev + strlen("events: "), NULL, 10);
    CU_ASSERT(events > 2000);
    CU_ASSERT_TRUE(fsc_test_file_exists(trace));
    /* no temporary left behind */
    char ls[4096];
    CU_ASSERT_EQUAL(fsc_test_sh(ls, sizeof ls, "ls %s", fsc_test_tmpdir()), 0);
    CU_ASSERT_PTR_NULL(strstr(ls, ".tmp."));

    /* `fragscope info` reads it, once that command is built */
    char help[256];
    if (fsc_test_sh(help, sizeof help, "%s help info", fsc_test_fragscope()) == 0) {
        CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "%s info %s", fsc_test_fragscope(), trace), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "fragscope 0.1.0 simulate"));
        /* every event simulate counted is in the file, markers included */
        char want[64];
        snprintf(want, sizeof want, " %llu\n", events);
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "marker"));
    }
}

static void test_records_from_env(void)
{
    const char *trace = fsc_test_path("env.fstrace");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out,
                                      "FRAGSCOPE_TRACE=%s %s simulate --workload resnet --steps 1",
                                      trace, fsc_test_fragscope()), 0);
    CU_ASSERT_TRUE(fsc_test_file_exists(trace));
}

static void test_unwritable_output(void)
{
    const char *trace = fsc_test_path("no/such/dir/x.fstrace");
    int rc = SIM("--workload gpt2 --steps 1 -o %s", fsc_test_fragscope(), trace);
    CU_ASSERT(rc == 2 || rc == 3);
    CU_ASSERT_FALSE(fsc_test_file_exists(trace));
}

static const fsc_test_case_t k_tests[] = {
    {"summary", test_summary},
    {"resnet summary", test_resnet_summary},
    {"fragmentation OOM and its cures", test_fragmentation_oom},
    {"capacity OOM", test_capacity_oom},
    {"bad options", test_bad_options},
    {"-o records a trace", test_records_trace},
    {"FRAGSCOPE_TRACE records a trace", test_records_from_env},
    {"unwritable output", test_unwritable_output},
    {NULL, NULL},
};

FSC_TEST_MAIN("cli_simulate", k_tests)
