/*
 * test_allocator_cuda.c — the caching allocator on the cuda backend: the
 * same random-operation properties as on sim (stats equal recounts from the
 * layout and the events; blocks tile their segments), with real streams and
 * CUDA events, plus memory that the device can actually write, for plain and
 * expandable segments. Without CUDA support or without a device it prints a
 * note and passes.
 */
#include <stdio.h>
#include <string.h>

#include "alloc_props.h"
#include "fragscope/allocator.h"
#include "fsc_test.h"

#ifdef FSC_HAVE_CUDA
#include <cuda_runtime_api.h>

static fsc_backend_t *g_be;

static int have_device(void)
{
    static int probed, ok;
    if (!probed) {
        fsc_err_t e = {0};
        probed = 1;
        ok = fsc_backend_cuda_create(0, &g_be, &e) == 0;
        if (!ok)
            printf("\n  note: no usable CUDA device (%s); cuda tests skipped\n", e.msg);
    }
    return ok;
}

static void test_properties_on_device(void)
{
    if (!have_device())
        return;
    cudaStream_t s[3];
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(cudaStreamCreate(&s[i]), cudaSuccess);
    const uint64_t streams[4] = {0, (uint64_t)(uintptr_t)s[0], (uint64_t)(uintptr_t)s[1],
                                 (uint64_t)(uintptr_t)s[2]};
    static const char *const confs[] = {"", "max_split_size_mb:64",
                                        "expandable_segments:True"};
    for (int i = 0; i < 3; i++) {
        props_result_t r;
        /* an 8 GiB cap keeps the run well inside any data-center GPU */
        const props_opts_t po = {streams, NULL, NULL};
        CU_ASSERT_EQUAL(props_run(g_be, confs[i], 8 * FSC_GiB, 6000, 77u + (unsigned)i, &po, &r), 0);
        if (r.failures != 0)
            fprintf(stderr, "\n  config \"%s\": %s\n", confs[i], r.first_failure);
        CU_ASSERT_EQUAL(r.failures, 0);
        CU_ASSERT_TRUE(r.splits > 0 && r.merges > 0);
        CU_ASSERT_TRUE(r.pending_completed > 0);
    }
    for (int i = 0; i < 3; i++)
        cudaStreamDestroy(s[i]);
}

static void test_memory_is_usable(void)
{
    if (!have_device())
        return;
    static const char *const confs[] = {"", "expandable_segments:True"};
    for (int i = 0; i < 2; i++) {
        fsc_allocator_opts_t o = {0};
        CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(confs[i], &o.config, NULL), 0);
        o.backend = g_be;
        fsc_allocator_t *a;
        CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &a, NULL), 0);
        uint64_t p[3];
        CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 3 * FSC_MiB, 0, &p[0]), 0);
        CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 45 * FSC_MiB, 0, &p[1]), 0);
        CU_ASSERT_EQUAL(fsc_allocator_malloc(a, 4096, 0, &p[2]), 0);
        static const uint64_t sizes[3] = {3 * FSC_MiB, 45 * FSC_MiB, 4096};
        for (int k = 0; k < 3; k++) {
            CU_ASSERT_EQUAL(cudaMemset((void *)(uintptr_t)p[k], 0x5a, sizes[k]), cudaSuccess);
            unsigned char last = 0;
            CU_ASSERT_EQUAL(cudaMemcpy(&last, (void *)(uintptr_t)(p[k] + sizes[k] - 1), 1,
                                       cudaMemcpyDeviceToHost),
                            cudaSuccess);
            CU_ASSERT_EQUAL(last, 0x5a);
        }
        for (int k = 0; k < 3; k++)
            CU_ASSERT_EQUAL(fsc_allocator_free(a, p[k]), 0);
        CU_ASSERT_EQUAL(fsc_allocator_empty_cache(a), 0);
        fsc_alloc_stats_t s;
        fsc_allocator_get_stats(a, &s);
        CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].current, 0);
        fsc_allocator_destroy(a);
    }
    /* a request larger than the device: FSC_EOOM, and CUDA still works */
    fsc_allocator_opts_t o = {0};
    o.backend = g_be;
    fsc_allocator_t *a;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &a, NULL), 0);
    uint64_t addr;
    CU_ASSERT_EQUAL(fsc_allocator_malloc(a, fsc_backend_total(g_be) * 2, 0, &addr), FSC_EOOM);
    CU_ASSERT_EQUAL(cudaGetLastError(), cudaSuccess);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(a, FSC_MiB, 0, &addr), 0);
    fsc_allocator_destroy(a);
}

static void test_release_backend(void)
{
    fsc_backend_destroy(g_be);
    g_be = NULL;
}

static const fsc_test_case_t k_tests[] = {
    {"properties_on_device", test_properties_on_device},
    {"memory_is_usable", test_memory_is_usable},
    {"release_backend", test_release_backend},
    {NULL, NULL},
};

#else

static void test_built_without_cuda(void)
{
    fsc_backend_t *be = NULL;
    fsc_err_t e = {0};
    printf("\n  note: built without CUDA; cuda tests skipped\n");
    CU_ASSERT_EQUAL(fsc_backend_cuda_create(0, &be, &e), FSC_EUNSUPPORTED);
    CU_ASSERT_PTR_NULL(be);
}

static const fsc_test_case_t k_tests[] = {
    {"built_without_cuda", test_built_without_cuda},
    {NULL, NULL},
};

#endif

FSC_TEST_MAIN("allocator_cuda", k_tests)
