/*
 * bench_recorder.c — what recording costs:
 *   1. hot path: ns per event added by fsc_recorder_sink over a no-op sink
 *      called the same way (goal: <= 25 ns), with the background thread
 *      compressing; once with times stamped by the caller, once by the sink;
 *   2. throughput of encoding + zstd + write on one thread (what the
 *      background compressor can sustain), per zstd level;
 *   3. compressed bytes per event on a realistic event mix (goal: <= 4);
 *   4. how fast the reader delivers the events back.
 *
 * The event mix imitates training steps through a caching allocator (see
 * make_program): sizes from a small set, the same addresses every step,
 * splits and merges, a tag tree of phases x layers x ops, and gaps between
 * events of 0.3-4.3 us with random jitter in every step.
 *
 * usage: bench_recorder [EVENTS]   (default 4000000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fragscope/recorder.h"

#define MIX 65536 /* pre-generated events, replayed cyclically */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

typedef struct mixev {
    fsc_event_t ev;
    uint32_t tag_slot; /* which pushed tag is current for this event */
} mixev_t;

static const char *k_phase[] = {"forward", "backward", "optimizer"};
static const char *k_op[] = {"attn", "mlp", "norm"};

/* One training step as a fixed program of allocator events: forward
 * allocates activations layer by layer (plus short-lived temporaries),
 * backward frees them in reverse while allocating gradients, the optimizer
 * uses a temporary per parameter. A caching allocator hands out the same
 * addresses every step, so the program's addresses repeat; only the gaps
 * between events vary (jitter). */
#define PROG_MAX 4096

typedef struct progev {
    uint8_t type;
    uint64_t addr, size, requested, segment, other;
    uint32_t tag_slot;
    uint64_t gap_ns;
} progev_t;

static size_t g_prog_n;
static progev_t g_prog[PROG_MAX];

static void prog_add(uint8_t type, uint64_t addr, uint64_t size, uint64_t req, uint32_t slot,
                     uint64_t other)
{
    progev_t *p = &g_prog[g_prog_n++];
    p->type = type;
    p->addr = addr;
    p->size = size;
    p->requested = req;
    p->segment = addr & ~0x1ffffffull;
    p->other = other;
    p->tag_slot = slot;
    p->gap_ns = 300 + rnd() % 4000;
}

static void make_program(void)
{
    static const uint64_t sizes[] = {512, 1024, 4096, 16384, 65536, 262144, 1048576,
                                     2097152, 4194304, 9437184, 12582912};
    uint64_t bump = 0x7f0000000000ull;
    uint64_t act_addr[12][3][3], act_size[12][3][3];
    for (int l = 0; l < 12; l++) {
        for (int op = 0; op < 3; op++) {
            uint32_t slot = (uint32_t)(l * 3 + op);
            for (int k = 0; k < 3; k++) {
                uint64_t size = sizes[rnd() % 11];
                uint64_t addr = bump;
                bump += (size + 0x1ffff) & ~0x1ffffull;
                if (rnd() % 4 == 0)
                    prog_add(FSC_EV_SPLIT, addr, size * 4, size, slot, 0);
                prog_add(FSC_EV_ALLOC, addr, size, size - (rnd() % 8) * 64 % size, slot, 0);
                act_addr[l][op][k] = addr;
                act_size[l][op][k] = size;
            }
            uint64_t tmp = bump, ts = sizes[rnd() % 6];
            prog_add(FSC_EV_ALLOC, tmp, ts, ts, slot, 0);
            prog_add(FSC_EV_FREE_REQUESTED, tmp, ts, ts, slot, 0);
            prog_add(FSC_EV_FREE_COMPLETED, tmp, ts, ts, slot, 0);
        }
    }
    for (int l = 11; l >= 0; l--) {
        for (int op = 2; op >= 0; op--) {
            uint32_t slot = (uint32_t)(36 + l * 3 + op);
            uint64_t grad = bump + 0x10000000ull, gs = sizes[rnd() % 11];
            prog_add(FSC_EV_ALLOC, grad, gs, gs, slot, 0);
            for (int k = 2; k >= 0; k--) {
                uint64_t a = act_addr[l][op][k], z = act_size[l][op][k];
                prog_add(FSC_EV_FREE_REQUESTED, a, z, z, slot, 0);
                prog_add(FSC_EV_FREE_COMPLETED, a, z, z, slot, 0);
                if (rnd() % 3 == 0)
                    prog_add(FSC_EV_MERGE, a, z * 2, 0, slot, a + z);
            }
            prog_add(FSC_EV_FREE_REQUESTED, grad, gs, gs, slot, 0);
            prog_add(FSC_EV_FREE_COMPLETED, grad, gs, gs, slot, 0);
        }
    }
    for (uint32_t p = 0; p < 36; p++) {
        uint64_t tmp = bump + 0x20000000ull, ts = sizes[rnd() % 8];
        prog_add(FSC_EV_ALLOC, tmp, ts, ts, 72 + p, 0);
        prog_add(FSC_EV_FREE_REQUESTED, tmp, ts, ts, 72 + p, 0);
        prog_add(FSC_EV_FREE_COMPLETED, tmp, ts, ts, 72 + p, 0);
    }
}

static void make_mix(mixev_t *m, size_t n)
{
    make_program();
    uint64_t t = 1000;
    for (size_t i = 0; i < n; i++) {
        const progev_t *p = &g_prog[i % g_prog_n];
        fsc_event_t *e = &m[i].ev;
        memset(e, 0, sizeof *e);
        t += p->gap_ns + rnd() % 256; /* same program, different timing */
        e->type = p->type;
        e->pool = p->size > 1048576;
        e->addr = p->addr;
        e->size = p->size;
        e->requested = p->requested;
        e->segment = p->segment;
        e->other = p->other;
        e->time_ns = t;
        m[i].tag_slot = p->tag_slot;
    }
}

/* CPU time of the calling thread: the hot path's own cost, not the
 * background compressor's, which may share a core with it. */
static uint64_t thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void noop_sink(void *ud, const fsc_event_t *ev)
{
    __asm__ volatile("" : : "r"(ud), "r"(ev) : "memory");
}

/* The caller's side of one event, identical for both sinks: tag stack
 * movement at op boundaries, a fresh time, the indirect call. */
static double run(fsc_event_sink_fn sink, void *ud, const mixev_t *mix, uint64_t n, int stamp)
{
    fsc_event_sink_fn volatile fn = sink;
    uint32_t cur = UINT32_MAX;
    uint64_t t0 = thread_ns();
    for (uint64_t i = 0; i < n; i++) {
        const mixev_t *m = &mix[i & (MIX - 1)];
        if (m->tag_slot != cur) {
            if (cur != UINT32_MAX) {
                fsc_tag_pop();
                fsc_tag_pop();
                fsc_tag_pop();
            }
            cur = m->tag_slot;
            static const char *layers[12] = {"layer.0", "layer.1", "layer.2", "layer.3",
                                             "layer.4", "layer.5", "layer.6", "layer.7",
                                             "layer.8", "layer.9", "layer.10", "layer.11"};
            fsc_tag_push(k_phase[cur / 36]);
            fsc_tag_push(layers[(cur / 3) % 12]);
            fsc_tag_push(k_op[cur % 3]);
        }
        fsc_event_t e = m->ev;
        e.time_ns = stamp ? 0 : m->ev.time_ns + (i / MIX) * 200000000ull;
        fn(ud, &e);
    }
    uint64_t t1 = thread_ns();
    if (cur != UINT32_MAX) {
        fsc_tag_pop();
        fsc_tag_pop();
        fsc_tag_pop();
    }
    return (double)(t1 - t0) / (double)n;
}

static uint64_t file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4000000ull;
    mixev_t *mix = malloc(MIX * sizeof *mix);
    if (mix == NULL || n == 0)
        return 2;
    make_mix(mix, MIX);
    char path[256];
    snprintf(path, sizeof path, "/tmp/bench_recorder.%d.fstrace", (int)getpid());
    fsc_err_t err;
    fsc_trace_header_t h = {0};
    h.producer = "bench_recorder";
    h.rank = -1;

    printf("recorder benchmark, %llu events per run\n\n", (unsigned long long)n);
    printf("1. hot path (background compression on), ns/event, best of 7 (CPU time of the calling thread)\n");
    for (int stamp = 0; stamp <= 1; stamp++) {
        double best_noop = 1e9, best_rec = 1e9;
        for (int rep = 0; rep < 7; rep++) {
            double a = run(noop_sink, NULL, mix, n, stamp);
            fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
            fsc_recorder_t *r = NULL;
            if (fsc_recorder_open(path, &h, &o, &r, &err) != 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            double b = run(fsc_recorder_sink, r, mix, n, stamp);
            fsc_recorder_close(r);
            best_noop = a < best_noop ? a : best_noop;
            best_rec = b < best_rec ? b : best_rec;
        }
        printf("   %-28s no-op sink %6.2f   recorder %6.2f   added %6.2f ns/event (%.2fx)\n",
               stamp ? "times stamped by the sink:" : "times given by the caller:", best_noop,
               best_rec, best_rec - best_noop, best_rec / best_noop);
    }

    printf("\n2. encode + compress + write on one thread (background off)\n");
    const int levels[] = {1, 3, 6};
    double bpe3 = 0;
    for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
        fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
        o.synchronous = 1;
        o.zstd_level = levels[li];
        fsc_recorder_t *r = NULL;
        if (fsc_recorder_open(path, &h, &o, &r, &err) != 0)
            return 1;
        double ns = run(fsc_recorder_sink, r, mix, n, 0);
        uint64_t t0 = fsc_now_ns();
        fsc_recorder_close(r);
        ns += (double)(fsc_now_ns() - t0) / (double)n;
        double bpe = (double)file_size(path) / (double)n;
        if (levels[li] == 3)
            bpe3 = bpe;
        printf("   zstd level %d: %6.2f M events/s, %5.2f bytes/event%s\n", levels[li],
               1e3 / ns, bpe, levels[li] == 3 ? "  (default)" : "");
    }

    printf("\n3. compressed size on the realistic mix: %.2f bytes/event (goal <= 4)\n", bpe3);

    /* The file of the last level is still there: read it back. */
    fsc_trace_reader_t *rd = NULL;
    if (fsc_trace_open(path, &rd, &err) == 0) {
        fsc_event_t ev;
        uint64_t got = 0, t0 = fsc_now_ns();
        while (fsc_trace_next(rd, &ev) == 1)
            got++;
        double secs = (double)(fsc_now_ns() - t0) / 1e9;
        fsc_trace_close(rd);
        printf("\n4. reader (decompress + decode): %.2f M events/s (%llu events)\n",
               (double)got / secs / 1e6, (unsigned long long)got);
    }
    unlink(path);
    free(mix);
    return 0;
}
