/*
 * bench_record_overhead.c — what recording adds to the allocator's hot path,
 * per event, in one run: the same malloc/free stream (64 live blocks, sizes
 * drawn from {512 B, 4 KiB, 64 KiB, 1 MiB, 3 MiB, 16 MiB, 64 MiB}) through
 *   off       an allocator without a sink
 *   null      an allocator whose sink does nothing (the allocator's own cost
 *             of building events)
 *   recorder  an allocator whose sink is fsc_recorder_sink, writing a real
 *             trace with its background compressor
 * Rounds alternate the three so machine drift affects all alike; the best
 * round of each is kept. Times are the calling thread's CPU time (the hot
 * path's cost; the background compressor has its own thread) and, apart,
 * wall time. At full speed this stream makes ~10 M events/s, more than one
 * compressor thread keeps up with on a busy machine; the sink then
 * compresses on the caller's thread (back-pressure), which the CPU time
 * counts. Output: one JSON line with ns per pair, events per pair, and ns
 * added per event (recorder − off, null − off, recorder − null).
 *
 *   bench_record_overhead [DIR]   (the trace is written to DIR, default /tmp)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fragscope/allocator.h"
#include "fragscope/recorder.h"

#define WINDOW 64
#define PAIRS 2000000
#define ROUNDS 5

static const uint64_t k_sizes[] = {512, 4096, 65536, 1u << 20, 3u << 20, 16u << 20, 64u << 20};

static uint64_t g_events;

static void null_sink(void *ud, const fsc_event_t *ev)
{
    (void)ud;
    (void)ev;
}

static void count_sink(void *ud, const fsc_event_t *ev)
{
    (void)ud;
    (void)ev;
    g_events++;
}

/* CPU time of the calling thread: the hot path's own cost. The background
 * compressor runs on another thread and is reported apart (wall time). */
static uint64_t thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Runs the stream; returns the calling thread's CPU ns per pair, and the
 * wall ns per pair in *wall. */
static double run(fsc_event_sink_fn sink, void *ud, double *wall)
{
    fsc_backend_t *b = NULL;
    fsc_allocator_t *a = NULL;
    fsc_err_t err;
    if (fsc_backend_sim_create(0, 0, &b) != 0)
        abort();
    fsc_allocator_opts_t o;
    memset(&o, 0, sizeof o);
    fsc_alloc_config_t c = FSC_ALLOC_CONFIG_DEFAULT;
    o.config = c;
    o.backend = b;
    o.sink = sink;
    o.sink_ud = ud;
    if (fsc_allocator_create(&o, &a, &err) != 0)
        abort();
    uint64_t rng = 7, live[WINDOW];
    for (int i = 0; i < WINDOW; i++)
        if (fsc_allocator_malloc(a, k_sizes[rnd(&rng) % 7], 0, &live[i]) != 0)
            abort();
    uint64_t w0 = fsc_now_ns(), t0 = thread_ns();
    for (int i = 0; i < PAIRS; i++) {
        int v = (int)(rnd(&rng) % WINDOW);
        fsc_allocator_free(a, live[v]);
        if (fsc_allocator_malloc(a, k_sizes[rnd(&rng) % 7], 0, &live[v]) != 0)
            abort();
    }
    uint64_t t1 = thread_ns(), w1 = fsc_now_ns();
    *wall = (double)(w1 - w0) / PAIRS;
    for (int i = 0; i < WINDOW; i++)
        fsc_allocator_free(a, live[i]);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(b);
    return (double)(t1 - t0) / PAIRS;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_record_overhead.%ld.fstrace", dir, (long)getpid());

    double wall[3], best_wall[3] = {1e30, 1e30, 1e30};
    g_events = 0;
    run(count_sink, NULL, &wall[0]);
    double per_pair = (double)g_events / PAIRS; /* includes the warm-up window */

    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r < ROUNDS; r++) {
        double off = run(NULL, NULL, &wall[0]);
        double nul = run(null_sink, NULL, &wall[1]);
        fsc_trace_header_t h;
        memset(&h, 0, sizeof h);
        h.producer = "bench_record_overhead";
        h.backend = "sim";
        h.rank = -1;
        fsc_recorder_opts_t ro = FSC_RECORDER_OPTS_DEFAULT;
        fsc_recorder_t *rec = NULL;
        fsc_err_t err;
        if (fsc_recorder_open(path, &h, &ro, &rec, &err) != 0) {
            fprintf(stderr, "%s\n", fsc_err_msg(&err));
            return 1;
        }
        double recd = run(fsc_recorder_sink, rec, &wall[2]);
        if (fsc_recorder_close(rec) != 0)
            return 1;
        if (off < best[0]) best[0] = off;
        if (nul < best[1]) best[1] = nul;
        if (recd < best[2]) best[2] = recd;
        for (int k = 0; k < 3; k++)
            if (wall[k] < best_wall[k])
                best_wall[k] = wall[k];
    }
    unlink(path);
    printf("{\"bench\":\"record_overhead\",\"pairs\":%d,\"events_per_pair\":%.3f,"
           "\"off_ns_per_pair\":%.1f,\"null_sink_ns_per_pair\":%.1f,\"recorder_ns_per_pair\":%.1f,"
           "\"added_ns_per_event\":{\"recorder_vs_off\":%.1f,\"null_vs_off\":%.1f,"
           "\"recorder_vs_null\":%.1f},\"wall_ns_per_pair\":{\"off\":%.1f,\"null\":%.1f,"
           "\"recorder\":%.1f}}\n",
           PAIRS, per_pair, best[0], best[1], best[2], (best[2] - best[0]) / per_pair,
           (best[1] - best[0]) / per_pair, (best[2] - best[1]) / per_pair, best_wall[0],
           best_wall[1], best_wall[2]);
    return 0;
}
