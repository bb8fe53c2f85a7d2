/*
 * bench_analyze.c — throughput of the analysis (events → run database)
 * against bare SQLite inserting the same events as rows, measured in the
 * same run, plus the analysis's peak RSS.
 *
 * The events come from the real allocator (sim backend) serving a
 * training-like request stream: the live set climbs to a few thousand
 * blocks and falls back, sizes log-uniform over the small and large pools.
 * One chunk ends with everything freed and the cache emptied, so the same
 * chunk can be fed again and again (times shifted) as one long consistent
 * run without holding ten million events in memory.
 *
 * usage: bench_analyze [EVENTS (default 10000000)] [DIR (default /tmp)] [both|analysis|bare|none]
 *                      [MARKER_EVERY (default 0)]
 * The third argument runs one side only (for `perf stat`: "none" measures
 * the chunk generation alone, to subtract). MARKER_EVERY > 0 feeds a
 * marker before every MARKER_EVERY-th event, as a training run's step
 * annotations do (a real GPT-2 recording has one per ~550 events); both
 * sides write it as one more row.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fragscope/allocator.h"
#include "fragscope/analyzer.h"

typedef struct evbuf {
    fsc_event_t *v;
    size_t n, cap;
} evbuf_t;

static void sink(void *ud, const fsc_event_t *ev)
{
    evbuf_t *b = ud;
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 1 << 16;
        b->v = realloc(b->v, b->cap * sizeof *b->v);
        if (b->v == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(3);
        }
    }
    b->v[b->n] = *ev;
    b->v[b->n].text = NULL; /* the chunk has no markers */
    b->v[b->n].time_ns = b->n * 100;
    b->n++;
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t log_uniform(uint64_t *s, double lo, double hi)
{
    double u = (double)(rng(s) >> 11) / 9007199254740992.0;
    double v = lo * __builtin_pow(hi / lo, u);
    return (uint64_t)v;
}

static int make_chunk(size_t target, evbuf_t *out)
{
    fsc_backend_t *be = NULL;
    fsc_allocator_t *al = NULL;
    fsc_err_t err = {0};
    if (fsc_backend_sim_create(0, 0, &be) != 0)
        return -1;
    fsc_allocator_opts_t ao;
    memset(&ao, 0, sizeof ao);
    ao.backend = be;
    ao.sink = sink;
    ao.sink_ud = out;
    if (fsc_allocator_create(&ao, &al, &err) != 0) {
        fprintf(stderr, "allocator: %s\n", err.msg);
        return -1;
    }
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    size_t cap = 4096, n = 0, hi_mark = 3000;
    uint64_t *live = malloc(cap * sizeof *live);
    int rising = 1;
    while (out->n < target) {
        if (rising && n >= hi_mark)
            rising = 0;
        if (!rising && n <= 300)
            rising = 1;
        int do_alloc = rising ? (rng(&seed) % 4 != 0) : (rng(&seed) % 4 == 0);
        if (do_alloc && n < cap) {
            uint64_t size = rng(&seed) % 10 < 7 ? log_uniform(&seed, 256, 1 << 20)
                                                 : log_uniform(&seed, 1 << 20, 48 << 20);
            uint64_t addr;
            if (fsc_allocator_malloc(al, size, 0, &addr) == 0 && addr != 0)
                live[n++] = addr;
        } else if (n > 0) {
            size_t i = rng(&seed) % n;
            fsc_allocator_free(al, live[i]);
            live[i] = live[--n];
        }
    }
    while (n > 0)
        fsc_allocator_free(al, live[--n]);
    fsc_allocator_empty_cache(al);
    free(live);
    fsc_allocator_destroy(al);
    fsc_backend_destroy(be);
    return 0;
}

/* CPU seconds of the process, all threads (the analysis writes its rows
 * on a second thread): on a shared machine the steadier figure, and the
 * total work done. */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long vm_hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            v = atol(line + 6);
    if (f)
        fclose(f);
    return v;
}

static void reset_hwm(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

static uint64_t g_marker_every;

/* The marker fed before event number fed, if one is due. */
static int marker_due(uint64_t fed, uint64_t time_ns, fsc_event_t *m)
{
    if (g_marker_every == 0 || fed % g_marker_every != 0)
        return 0;
    memset(m, 0, sizeof *m);
    m->type = FSC_EV_MARKER;
    m->time_ns = time_ns;
    m->text = "STAGE optimizer step";
    m->text_len = (uint32_t)strlen(m->text);
    return 1;
}

static double run_analysis(const evbuf_t *c, uint64_t total, const char *path,
                           fsc_analysis_summary_t *sum, double *cpu)
{
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.producer = "bench";
    h.config = "";
    h.backend = "sim";
    h.capacity = 80ull << 30;
    h.rank = -1;
    fsc_analysis_t *a = NULL;
    fsc_err_t err = {0};
    double c0 = cpu_s();
    uint64_t t0 = fsc_now_ns();
    if (fsc_analysis_create(path, &h, NULL, &a, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        exit(3);
    }
    uint64_t fed = 0, shift = 0;
    while (fed < total) {
        for (size_t i = 0; i < c->n && fed < total; i++, fed++) {
            fsc_event_t ev = c->v[i], m;
            ev.time_ns += shift;
            if (marker_due(fed, ev.time_ns, &m) && fsc_analysis_feed(a, &m) != 0) {
                fprintf(stderr, "feed: %s\n", fsc_analysis_last_error(a));
                exit(3);
            }
            if (fsc_analysis_feed(a, &ev) != 0) {
                fprintf(stderr, "feed: %s\n", fsc_analysis_last_error(a));
                exit(3);
            }
        }
        shift += c->n * 100;
    }
    if (fsc_analysis_finish(a, sum) != 0) {
        fprintf(stderr, "finish: %s\n", fsc_analysis_last_error(a));
        exit(3);
    }
    fsc_analysis_destroy(a);
    *cpu = cpu_s() - c0;
    return (double)(fsc_now_ns() - t0) / 1e9;
}

/* The same events, one row each with every field, as plainly as SQLite
 * allows: same pragmas, one transaction, one prepared statement. */
static double run_bare(const evbuf_t *c, uint64_t total, const char *path, double *cpu)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    unlink(path);
    double c0 = cpu_s();
    uint64_t t0 = fsc_now_ns();
    sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                    NULL);
    sqlite3_exec(db,
                 "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                 "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-65536;"
                 "CREATE TABLE events(seq INTEGER PRIMARY KEY, time_ns INTEGER, type INTEGER,"
                 " addr INTEGER, size INTEGER, requested INTEGER, stream INTEGER, pool INTEGER,"
                 " segment INTEGER, tag INTEGER, other INTEGER); BEGIN;",
                 NULL, NULL, NULL);
    sqlite3_prepare_v3(db, "INSERT INTO events VALUES(?,?,?,?,?,?,?,?,?,?,?)", -1,
                       SQLITE_PREPARE_PERSISTENT, &st, NULL);
    uint64_t fed = 0, shift = 0, rows = 0;
    while (fed < total) {
        for (size_t i = 0; i < c->n && fed < total; i++, fed++) {
            fsc_event_t m, ev = c->v[i];
            ev.time_ns += shift;
            for (int k = marker_due(fed, ev.time_ns, &m) ? 0 : 1; k < 2; k++) {
                const fsc_event_t *e = k == 0 ? &m : &ev;
                sqlite3_bind_int64(st, 1, (sqlite3_int64)rows++);
                sqlite3_bind_int64(st, 2, (sqlite3_int64)e->time_ns);
                sqlite3_bind_int(st, 3, e->type);
                sqlite3_bind_int64(st, 4, (sqlite3_int64)e->addr);
                sqlite3_bind_int64(st, 5, (sqlite3_int64)e->size);
                sqlite3_bind_int64(st, 6, (sqlite3_int64)e->requested);
                sqlite3_bind_int64(st, 7, (sqlite3_int64)e->stream);
                sqlite3_bind_int(st, 8, e->pool);
                sqlite3_bind_int64(st, 9, (sqlite3_int64)e->segment);
                sqlite3_bind_int(st, 10, (int)e->tag);
                sqlite3_bind_int64(st, 11, (sqlite3_int64)e->other);
                if (sqlite3_step(st) != SQLITE_DONE) {
                    fprintf(stderr, "bare insert: %s\n", sqlite3_errmsg(db));
                    exit(3);
                }
                sqlite3_reset(st);
            }
        }
        shift += c->n * 100;
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_finalize(st);
    sqlite3_close(db);
    *cpu = cpu_s() - c0;
    return (double)(fsc_now_ns() - t0) / 1e9;
}

int main(int argc, char **argv)
{
    uint64_t total = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000ull;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    const char *only = argc > 3 ? argv[3] : "both";
    g_marker_every = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
    int do_bare = strcmp(only, "both") == 0 || strcmp(only, "bare") == 0;
    int do_ana = strcmp(only, "both") == 0 || strcmp(only, "analysis") == 0;
    char db_path[1024], bare_path[1024];
    snprintf(db_path, sizeof db_path, "%s/bench_analyze.%d.db", dir, (int)getpid());
    snprintf(bare_path, sizeof bare_path, "%s/bench_analyze_bare.%d.db", dir, (int)getpid());

    evbuf_t chunk = {0};
    if (make_chunk(1000000, &chunk) != 0)
        return 3;
    printf("bench_analyze: %llu events (a %zu-event allocator chunk, replayed), sqlite %s\n",
           (unsigned long long)total, chunk.n, sqlite3_libversion());
    if (g_marker_every > 0)
        printf("  and a marker before every %llu-th of them (%llu markers)\n",
               (unsigned long long)g_marker_every,
               (unsigned long long)((total + g_marker_every - 1) / g_marker_every));

    double bare_cpu = 0, ana_cpu = 0, bare = 0, ana = 0;
    if (do_bare)
        bare = run_bare(&chunk, total, bare_path, &bare_cpu);
    reset_hwm();
    long rss0 = vm_hwm_kib();
    fsc_analysis_summary_t sum;
    memset(&sum, 0, sizeof sum);
    if (do_ana)
        ana = run_analysis(&chunk, total, db_path, &sum, &ana_cpu);
    long rss1 = vm_hwm_kib();
    if (!do_bare || !do_ana) {
        printf("  %s: %.2f s wall, %.2f s CPU\n", only, do_ana ? ana : bare,
               do_ana ? ana_cpu : bare_cpu);
        unlink(db_path);
        unlink(bare_path);
        free(chunk.v);
        return 0;
    }

    printf("                       wall                     CPU\n");
    printf("  bare SQLite insert : %7.2f s %6.2f M ev/s   %7.2f s %6.2f M ev/s\n", bare,
           total / bare / 1e6, bare_cpu, total / bare_cpu / 1e6);
    printf("  analysis           : %7.2f s %6.2f M ev/s   %7.2f s %6.2f M ev/s\n", ana,
           total / ana / 1e6, ana_cpu, total / ana_cpu / 1e6);
    printf("  ratio analysis/bare: %7.2f x                 %7.2f x\n", ana / bare,
           ana_cpu / bare_cpu);
    printf("  peak RSS during analysis: %.1f MiB (event chunk held by the benchmark: %.1f MiB)\n",
           rss1 / 1024.0, chunk.n * sizeof(fsc_event_t) / 1048576.0);
    printf("  RSS growth over the chunk: %.1f MiB\n", (rss1 - rss0) / 1024.0);
    printf("  run: peak allocated %llu, peak reserved %llu, segments %llu\n",
           (unsigned long long)sum.peak_allocated, (unsigned long long)sum.peak_reserved,
           (unsigned long long)sum.segments_created);
    unlink(db_path);
    unlink(bare_path);
    free(chunk.v);
    return 0;
}
