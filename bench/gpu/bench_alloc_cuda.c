/*
 * bench_alloc_cuda.c — the caching allocator on the cuda backend against raw
 * cudaMalloc/cudaFree, same size mix and same sequences as bench_alloc_sim:
 * for each size of {512 B, 4 KiB, 64 KiB, 1 MiB, 3 MiB, 16 MiB, 64 MiB} and
 * the mix of all of them, "hot" (malloc+free of a cached block, again and
 * again) and "window" (64 live blocks, a random victim replaced each step),
 * with plain and with expandable segments. About 0.2 s per figure.
 * Prints one JSON line per case: ns per malloc+free pair, cudaMalloc's
 * figure, and the ratio (ours / cudaMalloc).
 *
 *   bench_alloc_cuda [device]
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"

#define WINDOW 64
#define RUN_NS 200000000ull

static const uint64_t k_sizes[] = {512, 4096, 65536, 1u << 20, 3u << 20, 16u << 20, 64u << 20};
#define NSIZES (int)(sizeof k_sizes / sizeof k_sizes[0])

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static uint64_t pick(int size_idx, uint64_t *rng)
{
    return size_idx >= 0 ? k_sizes[size_idx] : k_sizes[rnd(rng) % NSIZES];
}

/* One implementation of malloc/free behind two function pointers. */
typedef struct impl {
    int (*alloc)(void *ctx, uint64_t size, uint64_t *addr);
    void (*release)(void *ctx, uint64_t addr);
    void *ctx;
} impl_t;

static int ours_alloc(void *ctx, uint64_t size, uint64_t *addr)
{
    return fsc_allocator_malloc(ctx, size, 0, addr);
}

static void ours_free(void *ctx, uint64_t addr)
{
    fsc_allocator_free(ctx, addr);
}

static int raw_alloc(void *ctx, uint64_t size, uint64_t *addr)
{
    (void)ctx;
    void *p = NULL;
    if (cudaMalloc(&p, size) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    *addr = (uint64_t)(uintptr_t)p;
    return 0;
}

static void raw_free(void *ctx, uint64_t addr)
{
    (void)ctx;
    cudaFree((void *)(uintptr_t)addr);
}

static double run_hot(const impl_t *im, int size_idx)
{
    uint64_t rng = 42, addr, n = 0, t0 = fsc_now_ns(), t;
    do {
        for (int i = 0; i < 256; i++) {
            if (im->alloc(im->ctx, pick(size_idx, &rng), &addr) != 0)
                return -1.0;
            im->release(im->ctx, addr);
        }
        n += 256;
    } while ((t = fsc_now_ns()) - t0 < RUN_NS);
    return (double)(t - t0) / (double)n;
}

static double run_window(const impl_t *im, int size_idx)
{
    uint64_t rng = 7, live[WINDOW], n = 0;
    for (int i = 0; i < WINDOW; i++)
        if (im->alloc(im->ctx, pick(size_idx, &rng), &live[i]) != 0)
            return -1.0;
    uint64_t t0 = fsc_now_ns(), t;
    do {
        for (int i = 0; i < 256; i++) {
            int v = (int)(rnd(&rng) % WINDOW);
            im->release(im->ctx, live[v]);
            if (im->alloc(im->ctx, pick(size_idx, &rng), &live[v]) != 0)
                return -1.0;
        }
        n += 256;
    } while ((t = fsc_now_ns()) - t0 < RUN_NS);
    for (int i = 0; i < WINDOW; i++)
        im->release(im->ctx, live[i]);
    return (double)(t - t0) / (double)n;
}

int main(int argc, char **argv)
{
    int device = argc > 1 ? atoi(argv[1]) : 0;
    fsc_backend_t *be;
    fsc_err_t e = {0};
    if (fsc_backend_cuda_create(device, &be, &e) != 0) {
        fprintf(stderr, "bench_alloc_cuda: %s\n", e.msg);
        return 1;
    }
    static const char *const confs[] = {"", "expandable_segments:True"};
    const impl_t raw = {raw_alloc, raw_free, NULL};
    for (int c = 0; c < 2; c++) {
        for (int s = -1; s < NSIZES; s++) {
            double raw_ns = c == 0 ? run_hot(&raw, s) : run_window(&raw, s);
            for (int k = 0; k < 2; k++) {
                fsc_allocator_opts_t o = {0};
                fsc_alloc_config_parse(confs[k], &o.config, NULL);
                o.backend = be;
                fsc_allocator_t *a;
                if (fsc_allocator_create(&o, &a, &e) != 0) {
                    fprintf(stderr, "bench_alloc_cuda: %s\n", e.msg);
                    return 1;
                }
                const impl_t ours = {ours_alloc, ours_free, a};
                /* first pass fills the cache; the second is measured */
                double ns = c == 0 ? run_hot(&ours, s) : run_window(&ours, s);
                ns = c == 0 ? run_hot(&ours, s) : run_window(&ours, s);
                char sz[32];
                if (s < 0)
                    strcpy(sz, "\"mix\"");
                else
                    snprintf(sz, sizeof sz, "%llu", (unsigned long long)k_sizes[s]);
                printf("{\"bench\":\"alloc_cuda\",\"device\":\"%s\",\"case\":\"%s\",\"size\":%s,"
                       "\"config\":\"%s\",\"ns_per_pair\":%.1f,\"cudamalloc_ns_per_pair\":%.1f,"
                       "\"ratio_vs_cudamalloc\":%.4f}\n",
                       fsc_backend_name(be), c == 0 ? "hot" : "window", sz, confs[k], ns, raw_ns,
                       raw_ns > 0 ? ns / raw_ns : 0.0);
                fflush(stdout);
                fsc_allocator_destroy(a);
            }
        }
    }
    fsc_backend_destroy(be);
    return 0;
}
