/*
 * bench_pytorch.c — speed of the PyTorch snapshot importer and exporter.
 *
 * Baseline: parsing the snapshot's pickle into a value tree (the least any
 * import must do). Then the full import into a sink that only counts, the
 * import into a trace file through the recorder (what `fragscope import`
 * does), the export of that trace back to a snapshot pickle, and the two
 * parts of the streaming reader (fsc__pickle_scan, one fsc__pickle_stream
 * parse without a consumer; an import makes one scan and two parses). Each line
 * prints the best of --reps runs and its ratio to the parse.
 *
 *   bench_pytorch [SNAPSHOT] [--reps N]   (default tests/data/pytorch/gpt2_varlen.pickle)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"
#include "pickle.h"

#ifndef FSC_BENCH_DATA
#define FSC_BENCH_DATA "tests/data"
#endif

static uint64_t g_events;

static int count_event(void *ud, const fsc_event_t *ev)
{
    (void)ud;
    (void)ev;
    g_events++;
    return 0;
}

static uint32_t g_next_tag;

static int count_tag(void *ud, uint32_t parent, const char *name, size_t len, uint32_t *out)
{
    (void)ud;
    (void)parent;
    (void)name;
    (void)len;
    *out = ++g_next_tag;
    return 0;
}

typedef struct rec_ctx {
    const char *path;
    fsc_recorder_t *r;
} rec_ctx_t;

static int rec_header(void *ud, const fsc_trace_header_t *h)
{
    rec_ctx_t *c = ud;
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = 1;
    fsc_err_t err;
    return fsc_recorder_open(c->path, h, &o, &c->r, &err);
}

static int rec_tag(void *ud, uint32_t parent, const char *name, size_t len, uint32_t *out)
{
    return fsc_recorder_tag_node(((rec_ctx_t *)ud)->r, parent, name, len, out);
}

static int rec_event(void *ud, const fsc_event_t *ev)
{
    return fsc_recorder_write(((rec_ctx_t *)ud)->r, ev);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b != NULL && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

int main(int argc, char **argv)
{
    const char *snap = FSC_BENCH_DATA "/pytorch/gpt2_varlen.pickle";
    int reps = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else
            snap = argv[i];
    }
    if (reps < 1)
        reps = 1;
    size_t len = 0;
    char *data = slurp(snap, &len);
    if (data == NULL) {
        fprintf(stderr, "bench_pytorch: cannot read %s\n", snap);
        return 2;
    }
    char trace[64], out[64];
    snprintf(trace, sizeof trace, "/tmp/bench_pytorch.%d.fstrace", (int)getpid());
    snprintf(out, sizeof out, "/tmp/bench_pytorch.%d.pickle", (int)getpid());

    double best[7] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
    size_t mem = 0;
    fsc_import_stats_t st;
    for (int r = 0; r < reps; r++) {
        fsc_err_t err = {0};
        uint64_t t0 = fsc_now_ns();
        fsc__pdoc_t *d = NULL;
        if (fsc__pickle_parse(data, len, snap, &d, &err) != 0) {
            fprintf(stderr, "bench_pytorch: %s\n", err.msg);
            return 2;
        }
        uint64_t t1 = fsc_now_ns();
        mem = fsc__pdoc_mem(d);
        fsc__pdoc_free(d);

        g_events = 0;
        g_next_tag = 0;
        fsc_import_sink_t counting = {NULL, NULL, count_tag, count_event};
        uint64_t t2 = fsc_now_ns();
        if (fsc_pytorch_import(snap, NULL, &counting, &st, &err) != 0) {
            fprintf(stderr, "bench_pytorch: %s\n", err.msg);
            return 2;
        }
        uint64_t t3 = fsc_now_ns();

        rec_ctx_t rc = {trace, NULL};
        fsc_import_sink_t to_file = {&rc, rec_header, rec_tag, rec_event};
        if (fsc_pytorch_import(snap, NULL, &to_file, NULL, &err) != 0 ||
            fsc_recorder_close(rc.r) != 0) {
            fprintf(stderr, "bench_pytorch: import to trace failed: %s\n", err.msg);
            return 2;
        }
        uint64_t t4 = fsc_now_ns();
        if (fsc_pytorch_export(trace, out, NULL, &err) != 0) {
            fprintf(stderr, "bench_pytorch: %s\n", err.msg);
            return 2;
        }
        uint64_t t5 = fsc_now_ns();
        /* the streaming reader's own passes: the memo scan, one parse */
        fsc__pscan_t *sc = NULL;
        if (fsc__pickle_scan(data, len, NULL, &sc) != 0)
            return 2;
        uint64_t t6 = fsc_now_ns();
        fsc__pstream_t cb = {NULL, NULL, NULL, NULL, 0, 0, 0, NULL};
        if (fsc__pickle_stream(data, len, snap, sc, &cb, &d, &err) != 0) {
            fprintf(stderr, "bench_pytorch: %s\n", err.msg);
            return 2;
        }
        uint64_t t7 = fsc_now_ns();
        fsc__pdoc_free(d);
        fsc__pscan_free(sc);
        /* what import and analyze do: the pytorch.* records kept too */
        fsc_import_opts_t keep = FSC_IMPORT_OPTS_DEFAULT;
        keep.keep_records = 1;
        uint64_t events = g_events;
        uint64_t t8 = fsc_now_ns();
        if (fsc_pytorch_import(snap, &keep, &counting, NULL, &err) != 0) {
            fprintf(stderr, "bench_pytorch: %s\n", err.msg);
            return 2;
        }
        uint64_t t9 = fsc_now_ns();
        g_events = events;
        double ms[7] = {(t1 - t0) / 1e6, (t3 - t2) / 1e6, (t4 - t3) / 1e6,
                        (t5 - t4) / 1e6, (t6 - t5) / 1e6, (t7 - t6) / 1e6, (t9 - t8) / 1e6};
        for (int k = 0; k < 7; k++)
            if (ms[k] < best[k])
                best[k] = ms[k];
    }
    unlink(trace);
    unlink(out);
    free(data);

    printf("snapshot: %s (%.1f MB, %llu history entries -> %llu events), best of %d\n", snap,
           len / 1e6, (unsigned long long)st.entries, (unsigned long long)g_events, reps);
    printf("%-34s %9s %12s %10s\n", "phase", "ms", "events/s", "vs parse");
    static const char *names[7] = {"pickle parse (baseline)", "import, counting sink",
                                   "import into a trace (recorder)", "export trace -> pickle",
                                   "stream: memo scan", "stream: one parse, no consumer",
                                   "import, counting, with records"};
    for (int k = 0; k < 7; k++)
        printf("%-34s %9.1f %11.2fM %9.2fx\n", names[k], best[k],
               (double)g_events / (best[k] / 1e3) / 1e6, best[k] / best[0]);
    printf("value tree: %.1f MB (%.1f bytes per input byte)\n", mem / 1e6, (double)mem / len);
    return 0;
}
