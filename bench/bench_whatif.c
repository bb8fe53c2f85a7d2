/*
 * bench_whatif.c — how fast a what-if replay runs, per configuration, on one
 * core and on all of them.
 *
 *   bench_whatif [SNAPSHOT_OR_TRACE] [--ops N] [--reps R]
 *
 * Without a file the stream is synthetic: a training-like mix of ~60 tensor
 * shapes (512 B to 96 MiB) with ~400 live at a time, N operations long. The
 * baseline, measured in the same run, is the allocator driven directly
 * (malloc/free on precomputed addresses, no sink, no replay bookkeeping), so
 * the ratio is what the replay machinery costs on top of the allocator.
 *
 * Each single-thread replay is timed twice: wall clock (the result's
 * elapsed_ns) and the thread's CPU time, which is what to compare between
 * two builds on a machine other work shares. "peak RSS" is the process's
 * after the stream is built and every replay ran.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "fragscope/whatif.h"

static const char *const k_configs[] = {
    "",
    "expandable_segments:True",
    "max_split_size_mb:128",
    "garbage_collection_threshold:0.8",
    "roundup_power2_divisions:4",
};
#define NCFG (sizeof k_configs / sizeof k_configs[0])

typedef struct req {
    uint64_t size; /* 0 = free of slot */
    uint32_t slot;
} req_t;

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 17;
}

/* The same synthetic requests as a stream (for the replay) and as a plain
 * array (for the direct baseline). */
static int synth(size_t nops, fsc_request_stream_t **out, req_t **reqs_out, size_t *nreq)
{
    enum { SLOTS = 800, SHAPES = 60 };
    uint64_t shapes[SHAPES], x = 42;
    for (int i = 0; i < SHAPES; i++) {
        int k = (int)(lcg(&x) % 3);
        shapes[i] = k == 0 ? 512 + lcg(&x) % (64 * 1024)
                    : k == 1 ? (1ull << 20) + lcg(&x) % (8ull << 20)
                             : (lcg(&x) % (96ull << 20)) + 1;
    }
    fsc_err_t err = {0, ""};
    fsc_request_stream_t *rs = NULL;
    if (fsc_request_stream_create(&rs, &err) != 0)
        return -1;
    req_t *reqs = malloc(nops * sizeof *reqs);
    uint64_t live[SLOTS] = {0};
    if (reqs == NULL)
        return -1;
    size_t n = 0;
    uint64_t next_addr = 0x100000;
    while (n < nops) {
        uint32_t slot = (uint32_t)(lcg(&x) % SLOTS);
        fsc_event_t ev = {0};
        if (live[slot]) {
            ev.type = FSC_EV_FREE_REQUESTED;
            ev.addr = live[slot];
            fsc_request_stream_add(rs, &ev, &err);
            ev.type = FSC_EV_FREE_COMPLETED;
            fsc_request_stream_add(rs, &ev, &err);
            live[slot] = 0;
            reqs[n].size = 0;
        } else {
            ev.type = FSC_EV_ALLOC;
            ev.requested = ev.size = shapes[lcg(&x) % SHAPES];
            ev.addr = live[slot] = next_addr;
            next_addr += 0x100000;
            fsc_request_stream_add(rs, &ev, &err);
            reqs[n].size = ev.requested;
        }
        reqs[n++].slot = slot;
    }
    *out = rs;
    *reqs_out = reqs;
    *nreq = n;
    return 0;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The allocator alone, on the same requests. Returns ns. */
static uint64_t direct(const req_t *reqs, size_t n, const char *config)
{
    fsc_alloc_config_t cfg;
    fsc_alloc_config_parse(config, &cfg, NULL);
    fsc_backend_t *be = NULL;
    fsc_backend_sim_create(1024 * FSC_GiB, 0, &be);
    fsc_allocator_opts_t o = {cfg, be, 0, NULL, NULL};
    fsc_allocator_t *a = NULL;
    fsc_allocator_create(&o, &a, NULL);
    static uint64_t addr[800];
    memset(addr, 0, sizeof addr);
    uint64_t t0 = fsc_now_ns();
    for (size_t i = 0; i < n; i++) {
        if (reqs[i].size)
            fsc_allocator_malloc(a, reqs[i].size, 0, &addr[reqs[i].slot]);
        else if (addr[reqs[i].slot])
            fsc_allocator_free(a, addr[reqs[i].slot]);
    }
    uint64_t dt = fsc_now_ns() - t0;
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    return dt;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    size_t nops = 2000000;
    int reps = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
            nops = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else
            path = argv[i];
    }
    if (reps < 1)
        reps = 1;
    fsc_err_t err = {0, ""};
    fsc_request_stream_t *rs = NULL;
    req_t *reqs = NULL;
    size_t nreq = 0;
    uint64_t t0 = fsc_now_ns();
    if (path != NULL) {
        if (fsc_request_stream_load(path, &rs, &err) != 0) {
            fprintf(stderr, "bench_whatif: %s\n", fsc_err_msg(&err));
            return 2;
        }
    } else if (synth(nops, &rs, &reqs, &nreq) != 0) {
        fprintf(stderr, "bench_whatif: out of memory\n");
        return 3;
    }
    uint64_t load_ns = fsc_now_ns() - t0;
    fsc_request_stream_info_t in;
    fsc_request_stream_info(rs, &in);
    printf("stream: %s, %llu recorded events, %llu requests (%llu allocs), built in %.1f ms\n",
           path ? path : "synthetic", (unsigned long long)in.events, (unsigned long long)in.ops,
           (unsigned long long)in.allocs, load_ns / 1e6);
    printf("%-36s %10s %10s %12s %14s %12s\n", "config (1 thread, best of reps)", "ms",
           "cpu ms", "requests/s", "rec. events/s", "vs direct");
    double total_ms = 0, total_cpu_ms = 0;
    for (size_t c = 0; c < NCFG; c++) {
        fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
        /* GC acts only under a cap: give it one above the stream's need. */
        if (strstr(k_configs[c], "garbage") != NULL)
            o.capacity = 512 * FSC_GiB;
        uint64_t best = UINT64_MAX, best_cpu = UINT64_MAX, best_direct = UINT64_MAX;
        for (int r = 0; r < reps; r++) {
            fsc_whatif_result_t res;
            uint64_t c0 = cpu_ns();
            if (fsc_whatif_replay(rs, k_configs[c], &o, &res, &err) != 0) {
                fprintf(stderr, "bench_whatif: %s\n", fsc_err_msg(&err));
                return 3;
            }
            uint64_t cpu = cpu_ns() - c0;
            if (cpu < best_cpu)
                best_cpu = cpu;
            if (res.elapsed_ns < best)
                best = res.elapsed_ns;
            if (reqs != NULL) {
                uint64_t d = direct(reqs, nreq, k_configs[c]);
                if (d < best_direct)
                    best_direct = d;
            }
        }
        total_ms += best / 1e6;
        total_cpu_ms += best_cpu / 1e6;
        char ratio[32] = "-";
        if (reqs != NULL)
            snprintf(ratio, sizeof ratio, "%.2fx", (double)best_direct / (double)best);
        printf("%-36s %10.1f %10.1f %12.2fM %13.2fM %12s\n",
               k_configs[c][0] ? k_configs[c] : "(defaults)", best / 1e6, best_cpu / 1e6,
               in.ops / (best / 1e9) / 1e6, in.events / (best / 1e9) / 1e6, ratio);
    }
    printf("sum of the single-thread replays: %.1f ms wall, %.1f ms CPU\n", total_ms, total_cpu_ms);
    fsc_whatif_result_t res[NCFG];
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    uint64_t p0 = fsc_now_ns();
    if (fsc_whatif_run(rs, k_configs, NCFG, &o, res, &err) != 0) {
        fprintf(stderr, "bench_whatif: %s\n", fsc_err_msg(&err));
        return 3;
    }
    double par_ms = (fsc_now_ns() - p0) / 1e6;
    printf("all %zu configs, one thread per core: %.1f ms (sequential sum %.1f ms, speedup "
           "%.2fx), %.2fM requests/s in total\n",
           NCFG, par_ms, total_ms, total_ms / par_ms, NCFG * in.ops / (par_ms / 1e3) / 1e6);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS: %.1f MiB\n", ru.ru_maxrss / 1024.0);
    free(reqs);
    fsc_request_stream_destroy(rs);
    return 0;
}
