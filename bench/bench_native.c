/*
 * bench_native.c — what the native recorder costs on the allocating thread
 * (fragscope/native.h), without a GPU:
 *   1. ns per entry of fsc_native_push over a no-op tracker called the same
 *      way (a function through a pointer that counts), while the
 *      recorder's thread converts and compresses (goal: <= 15 ns); between
 *      two entries the loop spins for 130 ns, PyTorch's own work per entry
 *      in a raw_alloc/raw_delete loop on an H100, so that the entries come
 *      as fast as that loop makes them;
 *   2. how fast that thread turns entries into trace events (entries/s),
 *      and the trace's bytes per event (goal: <= 4).
 * The entries imitate training steps: a segment, then allocations and
 * frees of a few sizes at recurring addresses, as a caching allocator
 * hands them out. The GPU figures (the real tracker, PyTorch building each
 * entry) are bench/gpu/native_check.py's.
 *
 * usage: bench_native [ENTRIES]   (default 3000000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fragscope/native.h"
#include "fragscope/recorder.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define LIVE 32
#define PROG (3 * LIVE * 32) /* entries of 32 "layers" */

static fsc_native_entry_t g_prog[PROG];

/* A layer: LIVE allocations of sizes from a small set, handed out one after
 * the other from the segment's start as a caching allocator does, then
 * freed (request and completion) in reverse. */
static void make_program(void)
{
    static const uint64_t sizes[] = {512, 4096, 65536, 262144, 786432};
    uint64_t base = 0x7f0000000000ull;
    int k = 0;
    for (int layer = 0; layer < PROG / (3 * LIVE); layer++) {
        uint64_t addr[LIVE], size[LIVE], at = base;
        for (int i = 0; i < LIVE; i++) {
            size[i] = sizes[(i * 7 + layer) % 5];
            addr[i] = at;
            at += size[i];
            fsc_native_entry_t *e = &g_prog[k++];
            memset(e, 0, sizeof *e);
            e->action = FSC_NATIVE_ALLOC;
            e->addr = addr[i];
            e->size = size[i];
        }
        for (int i = LIVE - 1; i >= 0; i--)
            for (int j = 0; j < 2; j++) {
                fsc_native_entry_t *e = &g_prog[k++];
                memset(e, 0, sizeof *e);
                e->action = (uint8_t)(j == 0 ? FSC_NATIVE_FREE_REQUESTED
                                             : FSC_NATIVE_FREE_COMPLETED);
                e->addr = addr[i];
                e->size = size[i];
            }
    }
}

static volatile uint64_t g_count;

static void noop_tracker(void *ud, const fsc_native_entry_t *e)
{
    (void)ud;
    g_count += e->size != 0;
}

static void push_tracker(void *ud, const fsc_native_entry_t *e)
{
    fsc_native_push(ud, e);
}

typedef void (*tracker_fn)(void *ud, const fsc_native_entry_t *e);

/* ns per entry of n entries through fn (the program, with a time stamp and
 * the segments it needs at the start). */
/* The allocator's own work between two entries: PyTorch's raw_alloc +
 * raw_delete pair takes about 400 ns on an H100 for 3 entries
 * (../shared/gpu figures), so a tracker is called about every 130 ns. */
static uint64_t g_work_iters;
static volatile uint64_t g_sink;

static void work(void)
{
    uint64_t x = g_sink;
    for (uint64_t k = 0; k < g_work_iters; k++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    g_sink = x;
}

static void calibrate(double ns)
{
    g_work_iters = 1000;
    uint64_t t0 = now_ns();
    for (int i = 0; i < 10000; i++)
        work();
    double per = (double)(now_ns() - t0) / 10000.0 / 1000.0;
    g_work_iters = (uint64_t)(ns / per);
}

static double run(tracker_fn fn, void *ud, uint64_t n)
{
    fsc_native_entry_t seg;
    memset(&seg, 0, sizeof seg);
    seg.action = FSC_NATIVE_SEGMENT_ALLOC;
    seg.addr = 0x7f0000000000ull;
    seg.size = 32ull << 20;
    fn(ud, &seg);
    fsc_native_entry_t e;
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        e = g_prog[i % PROG];
        e.time = i;
        work();
        fn(ud, &e);
    }
    return (double)(now_ns() - t0) / (double)n;
}

static fsc_native_t *open_one(const char *path, uint32_t interval_ms)
{
    fsc_native_opts_t o;
    memset(&o, 0, sizeof o);
    o.path = path;
    o.devices = 1;
    o.producer = "bench_native";
    o.flush_interval_ms = interval_ms;
    fsc_native_t *nat = NULL;
    fsc_err_t err = {0, ""};
    fsc_native_device_t d;
    memset(&d, 0, sizeof d);
    d.total = 80ull << 30;
    if (fsc_native_open(&o, &nat, &err) != 0 || fsc_native_begin_device(nat, &d, &err) != 0) {
        fprintf(stderr, "bench_native: %s\n", fsc_err_msg(&err));
        exit(1);
    }
    return nat;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 3000000;
    n -= n % PROG;
    make_program();
    calibrate(130.0);
    char path[] = "/tmp/fsc-bench-native-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    double best_noop = 1e9, best_alone = 1e9, best_conc = 1e9, conv_rate = 0;
    uint64_t bytes = 0, events = 0;
    for (int round = 0; round < 3; round++) {
        double a = run(noop_tracker, NULL, n);
        /* the producer alone: the thread idle, its blocks recycled from a
         * first pass (what a core of its own for the thread gives) */
        fsc_native_t *nat = open_one(path, 600000);
        run(push_tracker, nat, n);
        fsc_native_flush(nat);
        double b = run(push_tracker, nat, n);
        fsc_native_destroy(nat);
        /* the thread converting at the same time, on this machine's cores */
        nat = open_one(path, 1);
        double c = run(push_tracker, nat, n);
        uint64_t t0 = now_ns();
        fsc_native_flush(nat);
        fsc_native_stats_t st;
        fsc_native_get_stats(nat, &st);
        double drain_s = (double)(now_ns() - t0) / 1e9;
        fsc_native_destroy(nat);
        struct stat sb;
        stat(path, &sb);
        best_noop = a < best_noop ? a : best_noop;
        best_alone = b < best_alone ? b : best_alone;
        best_conc = c < best_conc ? c : best_conc;
        conv_rate = (double)st.entries / ((double)n * c / 1e9 + drain_s);
        bytes = (uint64_t)sb.st_size;
        events = st.events;
        printf("round %d: no-op tracker %.1f ns/entry; fsc_native_push alone %.1f (+%.1f), "
               "converted at once %.1f (+%.1f)\n",
               round, a, b, b - a, c, c - a);
    }
    printf("\nentries: %llu per run (%d-entry program replayed), 130 ns of work before each\n",
           (unsigned long long)n, PROG);
    printf("fsc_native_push over a no-op tracker, the recorder's thread idle: +%.1f ns per entry "
           "(goal <= 15)\n", best_alone - best_noop);
    printf("the same while its thread converts on this machine's %ld cores: +%.1f ns per entry\n",
           sysconf(_SC_NPROCESSORS_ONLN), best_conc - best_noop);
    printf("conversion on the recorder's thread: %.1f M entries/s\n", conv_rate / 1e6);
    printf("trace: %llu bytes for %llu events: %.2f bytes per event (goal <= 4; a synthetic "
           "program repeats itself far more than a run)\n",
           (unsigned long long)bytes, (unsigned long long)events,
           events ? (double)bytes / (double)events : 0.0);
    unlink(path);
    return 0;
}
