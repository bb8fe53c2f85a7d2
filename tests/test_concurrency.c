/*
 * test_concurrency.c — eight threads hammer one allocator with recording
 * on: mallocs of small and large sizes on three streams, frees,
 * record_stream frees completed later, empty_cache, tags and markers.
 *
 * While they run, threads take snapshots of the layout
 * (fsc_allocator_walk holds the lock, so each is consistent) and check
 * that blocks tile their segments exactly and that segments do not
 * overlap. Once they are done, the layout must agree with the allocator's
 * statistics byte for byte, and the trace read back must hold every event
 * the allocator emitted (counted per type in the sink), with one tag per
 * recording thread, and replay without contradiction through the analyzer.
 *
 * FSC_STRESS_OPS sets the operations per thread (default 50 000; use
 * 1000000 for the long run). Meant to be run under ThreadSanitizer too
 * (-DFSC_TSAN=ON), see docs/TESTING.md.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fragscope/analyzer.h"
#include "fragscope/recorder.h"
#include "fsc_test.h"

#define THREADS 8
#define SLOTS 48

/* ---- counting sink: called with the allocator's lock held ---------------- */

typedef struct counting {
    fsc_recorder_t *rec;
    uint64_t by_type[FSC_EV__COUNT];
    uint64_t total;
} counting_t;

static void counting_sink(void *ud, const fsc_event_t *ev)
{
    counting_t *c = ud;
    if (ev->type < FSC_EV__COUNT)
        c->by_type[ev->type]++;
    c->total++;
    fsc_recorder_sink(c->rec, ev);
}

/* ---- layout snapshots ------------------------------------------------------ */

typedef struct layout {
    fsc_block_info_t *b;
    size_t n, cap;
    int oom; /* out of host memory while collecting */
} layout_t;

static void collect(void *ud, const fsc_block_info_t *b)
{
    layout_t *l = ud;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        fsc_block_info_t *nb = realloc(l->b, cap * sizeof *nb);
        if (nb == NULL) {
            l->oom = 1;
            return;
        }
        l->b = nb;
        l->cap = cap;
    }
    l->b[l->n++] = *b;
}

typedef struct totals {
    uint64_t segments, reserved, allocated_blocks, allocated, active, requested;
    uint64_t inactive_split, inactive_split_bytes;
} totals_t;

/* Blocks tile each segment (first at its base, each next at the previous
 * end, the last ending at base + size); segments ascend without overlap;
 * allocated blocks hold at least what was requested. Returns the first
 * problem or NULL, and the sums in *t. */
static const char *check_layout(const layout_t *l, totals_t *t)
{
    memset(t, 0, sizeof *t);
    uint64_t prev_end = 0;
    size_t i = 0;
    while (i < l->n) {
        const fsc_block_info_t *first = &l->b[i];
        uint64_t seg = first->segment, size = first->segment_size;
        if (seg < prev_end)
            return "segments overlap or are out of order";
        if (first->addr != seg)
            return "a segment's first block is not at its base";
        uint64_t at = seg;
        size_t blocks = 0;
        for (; i < l->n && l->b[i].segment == seg; i++, blocks++) {
            const fsc_block_info_t *b = &l->b[i];
            if (b->addr != at || b->size == 0)
                return "blocks do not tile their segment";
            if (b->segment_size != size)
                return "blocks of one segment disagree on its size";
            if (b->allocated && b->pending_free)
                return "a block is both allocated and pending free";
            if ((b->allocated || b->pending_free) && b->requested > b->size)
                return "a block holds less than was requested";
            at += b->size;
            if (b->allocated) {
                t->allocated_blocks++;
                t->allocated += b->size;
            }
            if (b->allocated || b->pending_free) {
                t->active += b->size;
                t->requested += b->requested;
            }
        }
        if (at != seg + size)
            return "blocks do not end at the segment's end";
        if (blocks > 1)
            for (size_t j = i - blocks; j < i; j++)
                if (!l->b[j].allocated && !l->b[j].pending_free) {
                    t->inactive_split++;
                    t->inactive_split_bytes += l->b[j].size;
                }
        t->segments++;
        t->reserved += size;
        prev_end = seg + size;
    }
    return NULL;
}

/* ---- the workers ------------------------------------------------------------- */

typedef struct shared {
    fsc_allocator_t *a;
    long ops;
    pthread_mutex_t mu; /* guards problem */
    const char *problem;
    unsigned walks;
} shared_t;

typedef struct worker {
    shared_t *sh;
    int id;
    uint64_t rng;
    uint64_t ooms, mallocs, frees;
} worker_t;

static uint64_t next_rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void report(shared_t *sh, const char *what)
{
    pthread_mutex_lock(&sh->mu);
    if (sh->problem == NULL)
        sh->problem = what;
    pthread_mutex_unlock(&sh->mu);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    shared_t *sh = w->sh;
    uint64_t live[SLOTS] = {0};
    uint64_t side_stream = 100 + (uint64_t)w->id; /* record_stream uses */
    int side_pending = 0;
    char tag[32];
    snprintf(tag, sizeof tag, "worker%d", w->id);
    fsc_tag_push(tag);
    for (long op = 0; op < sh->ops; op++) {
        uint64_t r = next_rnd(&w->rng);
        size_t slot = (size_t)(r % SLOTS);
        if (live[slot] != 0) {
            if ((r >> 8) % 16 == 0) {
                fsc_allocator_record_stream(sh->a, live[slot], side_stream);
                side_pending = 1;
            }
            if (fsc_allocator_free(sh->a, live[slot]) != 0)
                report(sh, "free of a live block failed");
            live[slot] = 0;
            w->frees++;
        } else {
            uint64_t kind = (r >> 12) % 20, size;
            if (kind == 0)
                size = (r >> 20) % (48 * FSC_MiB) + 1; /* large, new segments */
            else if (kind < 6)
                size = (r >> 20) % (4 * FSC_MiB) + 1;
            else
                size = (r >> 20) % (256 * FSC_KiB) + 1;
            int rc = fsc_allocator_malloc(sh->a, size, (uint64_t)(w->id % 3), &live[slot]);
            if (rc == FSC_EOOM) {
                live[slot] = 0;
                w->ooms++;
            } else if (rc != 0 || live[slot] == 0) {
                report(sh, "malloc failed other than by OOM");
                live[slot] = 0;
            }
            w->mallocs++;
        }
        if (side_pending && (r >> 32) % 64 == 0) {
            fsc_allocator_stream_done(sh->a, side_stream);
            side_pending = 0;
        }
        if ((r >> 40) % 4096 == 0)
            fsc_allocator_empty_cache(sh->a);
        if ((r >> 40) % 8192 == 1)
            fsc_mark(tag);
        if (op % 2000 == (long)w->id * 250) {
            layout_t l = {NULL, 0, 0, 0};
            totals_t t;
            if (fsc_allocator_walk(sh->a, collect, &l) != 0 || l.oom)
                report(sh, "walk failed");
            const char *why = check_layout(&l, &t);
            if (why != NULL)
                report(sh, why);
            free(l.b);
            pthread_mutex_lock(&sh->mu);
            sh->walks++;
            pthread_mutex_unlock(&sh->mu);
        }
    }
    for (size_t i = 0; i < SLOTS; i++)
        if (live[i] != 0 && fsc_allocator_free(sh->a, live[i]) != 0)
            report(sh, "final free failed");
    fsc_allocator_stream_done(sh->a, side_stream);
    fsc_tag_pop();
    return NULL;
}

/* ---- reading the trace back ---------------------------------------------------- */

typedef struct readback {
    uint64_t by_type[FSC_EV__COUNT];
    uint64_t total;
    int clean;
    uint32_t thread_tag[64]; /* tag node seen for each thread number */
    int tag_conflict;
    unsigned threads_seen;
    char tags_ok;
    int analysis_rc;
    char analysis_err[FSC_ERR_MSG_MAX];
} readback_t;

static void read_back(const char *path, const char *db, readback_t *out)
{
    memset(out, 0, sizeof *out);
    out->analysis_rc = -1;
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    if (fsc_trace_open(path, &r, &err) != 0)
        return;
    fsc_analysis_t *an = NULL;
    int arc = db != NULL ? fsc_analysis_create(db, fsc_trace_header(r), NULL, &an, &err) : 0;
    uint32_t tags_defined = 0;
    fsc_event_t ev;
    out->tags_ok = 1;
    while (fsc_trace_next(r, &ev) == 1) {
        if (ev.type < FSC_EV__COUNT)
            out->by_type[ev.type]++;
        out->total++;
        if (an != NULL && arc == 0) {
            for (uint32_t n = fsc_trace_tag_count(r); tags_defined < n;) {
                const char *name;
                size_t len;
                uint32_t parent;
                tags_defined++;
                fsc_trace_tag(r, tags_defined, &name, &len, &parent);
                arc = fsc_analysis_define_tag(an, tags_defined, parent, name, len);
            }
            if (arc == 0)
                arc = fsc_analysis_feed(an, &ev);
        }
        if (ev.type == FSC_EV_ALLOC && ev.thread < 64) {
            uint32_t *seen = &out->thread_tag[ev.thread];
            if (*seen == 0) {
                *seen = ev.tag;
                out->threads_seen++;
                char p[64];
                fsc_trace_tag_path(r, ev.tag, p, sizeof p);
                if (strncmp(p, "worker", 6) != 0)
                    out->tags_ok = 0;
            } else if (*seen != ev.tag) {
                out->tag_conflict = 1;
            }
        }
    }
    fsc_trace_integrity_t integ;
    fsc_trace_get_integrity(r, &integ);
    out->clean = integ.clean_close;
    fsc_trace_close(r);
    if (an != NULL) {
        if (arc == 0)
            arc = fsc_analysis_finish(an, NULL);
        if (arc != 0)
            snprintf(out->analysis_err, sizeof out->analysis_err, "%s",
                     fsc_analysis_last_error(an));
        fsc_analysis_destroy(an);
    } else if (arc != 0) {
        snprintf(out->analysis_err, sizeof out->analysis_err, "%s", err.msg);
    }
    out->analysis_rc = arc;
}

/* ---- the test --------------------------------------------------------------------- */

static void stress(const char *config, uint64_t capacity, const char *name)
{
    long ops = 50000;
    const char *env = getenv("FSC_STRESS_OPS");
    if (env != NULL && *env)
        ops = strtol(env, NULL, 10);
    char path[1100], db[1100];
    snprintf(path, sizeof path, "%s/%s.fstrace", fsc_test_tmpdir(), name);
    snprintf(db, sizeof db, "%s/%s.db", fsc_test_tmpdir(), name);

    counting_t cs;
    memset(&cs, 0, sizeof cs);
    fsc_err_t err;
    fsc_recorder_opts_t ro = FSC_RECORDER_OPTS_DEFAULT;
    ro.synchronous = 0;
    ro.chunk_bytes = 64 * 1024;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(path, NULL, &ro, &cs.rec, &err), 0);
    fsc_backend_t *be = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(capacity, 0, &be), 0);
    fsc_allocator_opts_t o = {FSC_ALLOC_CONFIG_DEFAULT, be, capacity, counting_sink, &cs};
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(config, &o.config, &err), 0);
    fsc_allocator_t *a = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &a, &err), 0);

    shared_t sh = {a, ops, PTHREAD_MUTEX_INITIALIZER, NULL, 0};
    worker_t w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){&sh, i, 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1), 0, 0, 0};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    uint64_t mallocs = 0, ooms = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        mallocs += w[i].mallocs;
        ooms += w[i].ooms;
    }
    if (sh.problem != NULL)
        fprintf(stderr, "\n  %s: %s\n", name, sh.problem);
    CU_ASSERT_PTR_NULL(sh.problem);
    CU_ASSERT(sh.walks >= THREADS * (unsigned)(ops / 2000));

    /* Quiescent: everything freed, so only cached free blocks remain, and
     * the layout and the statistics must agree exactly. */
    layout_t l = {NULL, 0, 0, 0};
    totals_t t;
    CU_ASSERT_EQUAL(fsc_allocator_walk(a, collect, &l), 0);
    CU_ASSERT_PTR_NULL(check_layout(&l, &t));
    fsc_alloc_stats_t st;
    CU_ASSERT_EQUAL(fsc_allocator_get_stats(a, &st), 0);
    CU_ASSERT_EQUAL(t.allocated, 0);
    CU_ASSERT_EQUAL(t.active, 0);
    CU_ASSERT_EQUAL(st.allocated_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(st.active_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(st.requested_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(st.allocation[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL((uint64_t)st.reserved_bytes[FSC_STAT_ALL].current, t.reserved);
    CU_ASSERT_EQUAL((uint64_t)st.segment[FSC_STAT_ALL].current, t.segments);
    CU_ASSERT_EQUAL((uint64_t)st.inactive_split[FSC_STAT_ALL].current, t.inactive_split);
    CU_ASSERT_EQUAL((uint64_t)st.inactive_split_bytes[FSC_STAT_ALL].current,
                    t.inactive_split_bytes);
    CU_ASSERT_EQUAL((uint64_t)st.allocation[FSC_STAT_ALL].allocated, mallocs - ooms);
    CU_ASSERT_EQUAL((uint64_t)st.num_ooms, ooms);
    CU_ASSERT_EQUAL(cs.by_type[FSC_EV_ALLOC], mallocs - ooms);
    CU_ASSERT_EQUAL(cs.by_type[FSC_EV_OOM], ooms);
    CU_ASSERT_EQUAL(cs.by_type[FSC_EV_FREE_REQUESTED], mallocs - ooms);
    CU_ASSERT_EQUAL(cs.by_type[FSC_EV_FREE_COMPLETED], mallocs - ooms);
    /* Peaks never lag behind what is current or ever was. */
    CU_ASSERT(st.reserved_bytes[FSC_STAT_ALL].peak >= (int64_t)t.reserved);
    CU_ASSERT(st.reserved_bytes[FSC_STAT_ALL].peak >= st.allocated_bytes[FSC_STAT_ALL].peak);
    free(l.b);

    CU_ASSERT_EQUAL(fsc_allocator_empty_cache(a), 0);
    CU_ASSERT_EQUAL(fsc_allocator_get_stats(a, &st), 0);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(st.segment[FSC_STAT_ALL].current, 0);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    CU_ASSERT_EQUAL(fsc_recorder_close(cs.rec), 0);

    /* Markers go straight to the recorder, not through the allocator. */
    readback_t rb;
    read_back(path, ops <= 100000 ? db : NULL, &rb);
    CU_ASSERT(rb.clean);
    CU_ASSERT_EQUAL(rb.total - rb.by_type[FSC_EV_MARKER], cs.total);
    for (int ty = 1; ty < FSC_EV__COUNT; ty++)
        if (ty != FSC_EV_MARKER && rb.by_type[ty] != cs.by_type[ty]) {
            fprintf(stderr, "\n  %s: %s: %llu emitted, %llu read back\n", name,
                    fsc_event_type_name(ty), (unsigned long long)cs.by_type[ty],
                    (unsigned long long)rb.by_type[ty]);
            CU_FAIL("event count of a type differs");
        }
    CU_ASSERT_EQUAL(rb.threads_seen, THREADS);
    CU_ASSERT_FALSE(rb.tag_conflict);
    CU_ASSERT(rb.tags_ok);
    if (rb.analysis_rc != 0)
        fprintf(stderr, "\n  %s: strict replay: %s\n", name, rb.analysis_err);
    CU_ASSERT_EQUAL(rb.analysis_rc, 0);
    fprintf(stderr, "\n  %s: %d threads x %ld ops, %llu events, %llu OOMs, %u layout checks\n",
            name, THREADS, ops, (unsigned long long)cs.total, (unsigned long long)ooms, sh.walks);
    remove(path);
    remove(db);
}

static void test_default_config(void) { stress("", 64 * FSC_GiB, "default"); }

/* A cap that the workers hit now and then: OOMs, retries, GC and
 * max_split_size's oversize path, all under contention. */
static void test_capped_gc_max_split(void)
{
    stress("max_split_size_mb:32,garbage_collection_threshold:0.6", 320 * FSC_MiB, "capped");
}

static const fsc_test_case_t k_tests[] = {
    {"8 threads, default settings", test_default_config},
    {"8 threads, a cap with GC and max_split_size", test_capped_gc_max_split},
    {NULL, NULL},
};

FSC_TEST_MAIN("concurrency", k_tests)
