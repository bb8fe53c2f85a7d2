/*
 * bench_alloc_sim.c — cost of the caching allocator's cache-hit path on the
 * sim backend (no device calls, so this is the allocator's own bookkeeping),
 * against libc malloc/free of the same sizes measured in the same run.
 *
 * Cases, for each size of {512 B, 4 KiB, 64 KiB, 1 MiB, 3 MiB, 16 MiB,
 * 64 MiB} and for the mix of all of them:
 *   hot     malloc + free of one size, again and again (the block is cached)
 *   window  64 live blocks; each step frees a random one and allocates a new
 *           one (same size, or a random size of the mix)
 * Each figure is the best of 3 runs of about 0.1 s (the machine may be
 * shared). Output: one JSON line per case with ns per
 * malloc+free pair, libc's figure and the ratio (ours / libc).
 *
 *   bench_alloc_sim [--sink]     --sink: with an event sink that does nothing
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"

#define WINDOW 64
#define RUN_NS 100000000ull
#define REPS 3

static const uint64_t k_sizes[] = {512, 4096, 65536, 1u << 20, 3u << 20, 16u << 20, 64u << 20};
#define NSIZES (sizeof k_sizes / sizeof k_sizes[0])

static void *volatile g_keep;

static void null_sink(void *ud, const fsc_event_t *ev)
{
    (void)ud;
    (void)ev;
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* size_idx < 0: random size of the mix per step */
static uint64_t pick(int size_idx, uint64_t *rng)
{
    return size_idx >= 0 ? k_sizes[size_idx] : k_sizes[rnd(rng) % NSIZES];
}

static double bench_ours_hot(fsc_allocator_t *a, int size_idx)
{
    uint64_t rng = 42, addr, n = 0;
    uint64_t t0 = fsc_now_ns(), t;
    do {
        for (int i = 0; i < 1024; i++) {
            if (fsc_allocator_malloc(a, pick(size_idx, &rng), 0, &addr) != 0)
                abort();
            fsc_allocator_free(a, addr);
        }
        n += 1024;
    } while ((t = fsc_now_ns()) - t0 < RUN_NS);
    return (double)(t - t0) / (double)n;
}

static double bench_libc_hot(int size_idx)
{
    uint64_t rng = 42, n = 0;
    uint64_t t0 = fsc_now_ns(), t;
    do {
        for (int i = 0; i < 1024; i++) {
            void *p = malloc(pick(size_idx, &rng));
            g_keep = p;
            free(p);
        }
        n += 1024;
    } while ((t = fsc_now_ns()) - t0 < RUN_NS);
    return (double)(t - t0) / (double)n;
}

static double bench_ours_window(fsc_allocator_t *a, int size_idx)
{
    uint64_t rng = 7, live[WINDOW], n = 0;
    for (int i = 0; i < WINDOW; i++)
        if (fsc_allocator_malloc(a, pick(size_idx, &rng), 0, &live[i]) != 0)
            abort();
    uint64_t t0 = fsc_now_ns(), t;
    do {
        for (int i = 0; i < 1024; i++) {
            int v = (int)(rnd(&rng) % WINDOW);
            fsc_allocator_free(a, live[v]);
            if (fsc_allocator_malloc(a, pick(size_idx, &rng), 0, &live[v]) != 0)
                abort();
        }
        n += 1024;
    } while ((t = fsc_now_ns()) - t0 < RUN_NS);
    for (int i = 0; i < WINDOW; i++)
        fsc_allocator_free(a, live[i]);
    return (double)(t - t0) / (double)n;
}

static double bench_libc_window(int size_idx)
{
    uint64_t rng = 7, n = 0;
    void *live[WINDOW];
    for (int i = 0; i < WINDOW; i++)
        live[i] = malloc(pick(size_idx, &rng));
    uint64_t t0 = fsc_now_ns(), t;
    do {
        for (int i = 0; i < 1024; i++) {
            int v = (int)(rnd(&rng) % WINDOW);
            free(live[v]);
            live[v] = malloc(pick(size_idx, &rng));
            g_keep = live[v];
        }
        n += 1024;
    } while ((t = fsc_now_ns()) - t0 < RUN_NS);
    for (int i = 0; i < WINDOW; i++)
        free(live[i]);
    return (double)(t - t0) / (double)n;
}

int main(int argc, char **argv)
{
    int with_sink = argc > 1 && strcmp(argv[1], "--sink") == 0;
    fsc_backend_t *be;
    if (fsc_backend_sim_create(0, 0, &be) != 0)
        return 1;
    for (int c = 0; c < 2; c++) {
        const char *cname = c == 0 ? "hot" : "window";
        for (int s = -1; s < (int)NSIZES; s++) {
            fsc_allocator_opts_t o = {0};
            o.backend = be;
            o.sink = with_sink ? null_sink : NULL;
            fsc_allocator_t *a;
            fsc_err_t e = {0};
            if (fsc_allocator_create(&o, &a, &e) != 0) {
                fprintf(stderr, "bench_alloc_sim: %s\n", e.msg);
                return 1;
            }
            /* the first run warms the cache so that measured runs only hit it */
            double ours = c == 0 ? bench_ours_hot(a, s) : bench_ours_window(a, s);
            double libc = 1e30;
            ours = 1e30;
            for (int r = 0; r < REPS; r++) {
                double x = c == 0 ? bench_ours_hot(a, s) : bench_ours_window(a, s);
                double y = c == 0 ? bench_libc_hot(s) : bench_libc_window(s);
                ours = x < ours ? x : ours;
                libc = y < libc ? y : libc;
            }
            char sz[32];
            if (s < 0)
                strcpy(sz, "\"mix\"");
            else
                snprintf(sz, sizeof sz, "%llu", (unsigned long long)k_sizes[s]);
            printf("{\"bench\":\"alloc_sim\",\"case\":\"%s\",\"size\":%s,\"sink\":%s,"
                   "\"ns_per_pair\":%.1f,\"libc_ns_per_pair\":%.1f,\"ratio_vs_libc\":%.3f}\n",
                   cname, sz, with_sink ? "true" : "false", ours, libc, ours / libc);
            fflush(stdout);
            fsc_allocator_destroy(a);
        }
    }
    fsc_backend_destroy(be);
    return 0;
}
