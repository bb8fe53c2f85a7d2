/*
 * test_analyzer.c — the replay into the run database: hand-built event
 * sequences whose every figure is worked out by hand in the comments, OOM
 * diagnosis for each cause, bins, timeline bounds, strict vs lenient.
 */
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fragscope/analyzer.h"
#include "fsc_test.h"

#define MiB (1024ull * 1024ull)
#define S1 0x10000000ull
#define S2 0x20000000ull

/* ---- building event streams ------------------------------------------- */

typedef struct rig {
    fsc_analysis_t *a;
    uint64_t seq;
    int rc; /* first failure */
} rig_t;

/* The last stream fed, to compare with the events view. */
static fsc_event_t g_fed[64];
static size_t g_nfed;

static void feed(rig_t *r, fsc_event_t ev)
{
    ev.time_ns = r->seq * 1000;
    if (r->seq == 0)
        g_nfed = 0;
    if (g_nfed < 64)
        g_fed[g_nfed++] = ev;
    r->seq++;
    int rc = fsc_analysis_feed(r->a, &ev);
    if (rc != 0 && r->rc == 0)
        r->rc = rc;
}

static void seg_alloc(rig_t *r, uint64_t addr, uint64_t size)
{
    feed(r, (fsc_event_t){.type = FSC_EV_SEGMENT_ALLOC, .pool = 1, .addr = addr, .size = size});
}

static void seg_free(rig_t *r, uint64_t addr, uint64_t size)
{
    feed(r, (fsc_event_t){.type = FSC_EV_SEGMENT_FREE, .pool = 1, .addr = addr, .size = size});
}

/* A SPLIT carries the tag of the ALLOC it serves, as producers emit it. */
static void split_t(rig_t *r, uint64_t seg, uint64_t addr, uint64_t size, uint64_t first,
                    uint32_t tag)
{
    feed(r, (fsc_event_t){.type = FSC_EV_SPLIT, .pool = 1, .addr = addr, .size = size,
                          .requested = first, .segment = seg, .tag = tag});
}

static void split(rig_t *r, uint64_t seg, uint64_t addr, uint64_t size, uint64_t first)
{
    split_t(r, seg, addr, size, first, 0);
}

static void alloc(rig_t *r, uint64_t seg, uint64_t addr, uint64_t size, uint64_t req,
                  uint32_t tag)
{
    feed(r, (fsc_event_t){.type = FSC_EV_ALLOC, .pool = 1, .addr = addr, .size = size,
                          .requested = req, .segment = seg, .tag = tag});
}

static void free_both(rig_t *r, uint64_t seg, uint64_t addr, uint64_t size)
{
    feed(r, (fsc_event_t){.type = FSC_EV_FREE_REQUESTED, .pool = 1, .addr = addr,
                          .size = size, .segment = seg});
    feed(r, (fsc_event_t){.type = FSC_EV_FREE_COMPLETED, .pool = 1, .addr = addr,
                          .size = size, .segment = seg});
}

static void merge(rig_t *r, uint64_t seg, uint64_t lo, uint64_t size, uint64_t hi)
{
    feed(r, (fsc_event_t){.type = FSC_EV_MERGE, .pool = 1, .addr = lo, .size = size,
                          .other = hi, .segment = seg});
}

static void oom(rig_t *r, uint64_t req, uint64_t rounded, uint64_t cap, uint64_t dev_free,
                uint64_t dev_total, uint64_t segsize)
{
    fsc_event_t ev = {.type = FSC_EV_OOM, .pool = 1, .size = rounded, .requested = req};
    ev.oom.capacity = cap;
    ev.oom.device_free = dev_free;
    ev.oom.device_total = dev_total;
    ev.oom.segment_size = segsize;
    feed(r, ev);
}

static void marker(rig_t *r, const char *text)
{
    feed(r, (fsc_event_t){.type = FSC_EV_MARKER, .text = text,
                          .text_len = (uint32_t)strlen(text)});
}

static fsc_trace_header_t header(uint64_t capacity, uint32_t flags)
{
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.producer = "test";
    h.config = "";
    h.backend = "sim";
    h.capacity = capacity;
    h.rank = -1;
    h.flags = flags;
    return h;
}

static void rig_open(rig_t *r, const char *db, uint64_t capacity, uint32_t flags, int lenient)
{
    memset(r, 0, sizeof *r);
    fsc_trace_header_t h = header(capacity, flags);
    fsc_analysis_opts_t o = FSC_ANALYSIS_OPTS_DEFAULT;
    o.lenient = lenient;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_analysis_create(db, &h, &o, &r->a, &err), 0);
}

/* ---- querying the result ---------------------------------------------- */

static sqlite3 *g_db;

static void db_open(const char *path)
{
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &g_db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
}

static void db_close(void)
{
    sqlite3_close(g_db);
    g_db = NULL;
}

static sqlite3_stmt *q(const char *fmt, va_list ap)
{
    char sql[1024];
    vsnprintf(sql, sizeof sql, fmt, ap);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(g_db, sql, -1, &s, NULL) != SQLITE_OK) {
        fprintf(stderr, "bad query %s: %s\n", sql, sqlite3_errmsg(g_db));
        return NULL;
    }
    if (sqlite3_step(s) != SQLITE_ROW) {
        fprintf(stderr, "no row: %s\n", sql);
        sqlite3_finalize(s);
        return NULL;
    }
    return s;
}

static long long qi(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static long long qi(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *s = q(fmt, ap);
    va_end(ap);
    if (s == NULL)
        return -424242;
    long long v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

static double qd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static double qd(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *s = q(fmt, ap);
    va_end(ap);
    if (s == NULL)
        return -424242.0;
    double v = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    return v;
}

static char g_text[2048];
static const char *qt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *qt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *s = q(fmt, ap);
    va_end(ap);
    g_text[0] = '\0';
    if (s == NULL)
        return g_text;
    const unsigned char *t = sqlite3_column_text(s, 0);
    snprintf(g_text, sizeof g_text, "%s", t ? (const char *)t : "(null)");
    sqlite3_finalize(s);
    return g_text;
}

#define SUM(key) qi("SELECT value FROM summary WHERE key='%s'", key)
#define SUMD(key) qd("SELECT value FROM summary WHERE key='%s'", key)

/* ---- the fragmentation run -------------------------------------------- */

/*
 * Two 4 MiB segments under an 8 MiB cap (large pool, stream 0):
 *
 *  seq  event                                   allocated reserved
 *   0   SEGMENT_ALLOC S1 4M                        0        4M
 *   1   SPLIT S1 4M → 2M | 2M                      0        4M
 *   2   ALLOC A = S1 2M (req 2000000, tag 1) miss  2M       4M
 *   3   SPLIT S1+2M 2M → 1M | 1M                   2M       4M
 *   4   ALLOC B = S1+2M 1M (req 1M, tag 2) hit     3M       4M
 *   5   SEGMENT_ALLOC S2 4M                        3M       8M   peak reserved
 *   6   SPLIT S2 4M → 3M | 1M                      3M       8M
 *   7   ALLOC C = S2 3M (req 3M, tag 2) miss       6M       8M   peak allocated
 *   8   FREE_REQUESTED A                           4M       8M
 *   9   FREE_COMPLETED A                           4M       8M
 *  10   MARKER "step 1"
 *  11   OOM 2.5M: cap 8M − allocated 4M = 4M ≥ 2.5M → fragmentation.
 *       Free: A 2M + S1+3M 1M + S2+3M 1M = 4M, largest 2M → ext frag 0.5.
 *  12   FREE_REQUESTED B                           3M       8M
 *  13   FREE_COMPLETED B
 *  14   MERGE S1 ← S1+2M (3M)
 *  15   MERGE S1 ← S1+3M (4M)
 *  16   SEGMENT_FREE S1                            3M       4M
 * C stays allocated: one 3M leak with tag 2.
 */
static void build_fragmentation_run(const char *db)
{
    rig_t r;
    rig_open(&r, db, 8 * MiB, 0, 0);
    CU_ASSERT_EQUAL(fsc_analysis_define_tag(r.a, 1, 0, "forward", 7), 0);
    CU_ASSERT_EQUAL(fsc_analysis_define_tag(r.a, 2, 1, "attn", 4), 0);
    seg_alloc(&r, S1, 4 * MiB);
    split_t(&r, S1, S1, 4 * MiB, 2 * MiB, 1);
    alloc(&r, S1, S1, 2 * MiB, 2000000, 1);
    split_t(&r, S1, S1 + 2 * MiB, 2 * MiB, 1 * MiB, 2);
    alloc(&r, S1, S1 + 2 * MiB, 1 * MiB, 1 * MiB, 2);
    seg_alloc(&r, S2, 4 * MiB);
    split_t(&r, S2, S2, 4 * MiB, 3 * MiB, 2);
    alloc(&r, S2, S2, 3 * MiB, 3 * MiB, 2);
    free_both(&r, S1, S1, 2 * MiB);
    marker(&r, "step 1");
    oom(&r, 2621440, 2621440, 8 * MiB, UINT64_MAX, 0, 0);
    free_both(&r, S1, S1 + 2 * MiB, 1 * MiB);
    merge(&r, S1, S1, 3 * MiB, S1 + 2 * MiB);
    merge(&r, S1, S1, 4 * MiB, S1 + 3 * MiB);
    seg_free(&r, S1, 4 * MiB);
    CU_ASSERT_EQUAL(r.rc, 0);
    fsc_analysis_summary_t sum;
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, &sum), 0);
    CU_ASSERT_EQUAL(sum.events, 17);
    CU_ASSERT_EQUAL(sum.peak_allocated, 6 * MiB);
    CU_ASSERT_EQUAL(sum.peak_reserved, 8 * MiB);
    CU_ASSERT_EQUAL(sum.num_ooms, 1);
    CU_ASSERT_EQUAL(sum.first_oom_cause, FSC_OOM_FRAGMENTATION);
    fsc_analysis_destroy(r.a);
}

static void test_fragmentation_oom(void)
{
    const char *db = fsc_test_path("frag.db");
    build_fragmentation_run(db);
    db_open(db);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM ooms"), 1);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "fragmentation");
    CU_ASSERT_EQUAL(qi("SELECT seq FROM ooms"), 11);
    CU_ASSERT_EQUAL(qi("SELECT requested FROM ooms"), 2621440);
    CU_ASSERT_EQUAL(qi("SELECT allocated FROM ooms"), 4 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT reserved FROM ooms"), 8 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT capacity FROM ooms"), 8 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT capacity_inferred FROM ooms"), 0);
    CU_ASSERT_EQUAL(qi("SELECT device_free FROM ooms"), -1); /* NULL: unknown */
    CU_ASSERT_EQUAL(qi("SELECT free_in_reserved FROM ooms"), 4 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT largest_free FROM ooms"), 2 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT largest_free_usable FROM ooms"), 2 * MiB);
    CU_ASSERT_DOUBLE_EQUAL(qd("SELECT external_frag FROM ooms"), 0.5, 1e-12);
    /* 2.5 MiB < 10 MiB → the failing segment would have been 20 MiB */
    CU_ASSERT_EQUAL(qi("SELECT segment_size FROM ooms"), 20 * MiB);
    /* S1 holds 3M free (A + S1+3M), S2 1M. */
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM oom_segments"), 2);
    CU_ASSERT_EQUAL(qi("SELECT segment FROM oom_segments WHERE rank=0"), S1);
    CU_ASSERT_EQUAL(qi("SELECT free_bytes FROM oom_segments WHERE rank=0"), 3 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT largest_free FROM oom_segments WHERE rank=0"), 2 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT free_blocks FROM oom_segments WHERE rank=0"), 2);
    CU_ASSERT_EQUAL(qi("SELECT live_bytes FROM oom_segments WHERE rank=0"), 1 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT free_bytes FROM oom_segments WHERE rank=1"), 1 * MiB);
    /* B pins S1: allocated at seq 4, OOM at seq 11 → 7 events, 7000 ns. */
    CU_ASSERT_EQUAL(qi("SELECT addr FROM oom_pinning_blocks WHERE segment=%llu", S1),
                    S1 + 2 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT age_events FROM oom_pinning_blocks WHERE segment=%llu", S1), 7);
    CU_ASSERT_EQUAL(qi("SELECT age_ns FROM oom_pinning_blocks WHERE segment=%llu", S1), 7000);
    CU_ASSERT_EQUAL(qi("SELECT tag FROM oom_pinning_blocks WHERE segment=%llu", S1), 2);
    CU_ASSERT_EQUAL(qi("SELECT age_events FROM oom_pinning_blocks WHERE segment=%llu", S2), 4);
    /* Tag 2 holds B + C = 4M at the OOM; tag 1 nothing (A was freed). */
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM oom_tags"), 1);
    CU_ASSERT_EQUAL(qi("SELECT live_bytes FROM oom_tags WHERE tag=2"), 4 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT live_blocks FROM oom_tags WHERE tag=2"), 2);
    /* The OOM layout: S1 = A free 2M, B 1M, free 1M; S2 = C 3M, free 1M. */
    long long snap = qi("SELECT layout_snapshot FROM ooms");
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM layout WHERE snapshot=%lld", snap), 5);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM layout WHERE snapshot=%lld AND state='free'",
                       snap), 3);
    CU_ASSERT_STRING_EQUAL(qt("SELECT kind FROM layout_snapshots WHERE id=%lld", snap), "oom");
    CU_ASSERT_STRING_EQUAL(qt("SELECT path FROM tag_paths WHERE id=2"), "forward/attn");
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM suggestions"), 0);
    db_close();
}

static void test_metrics(void)
{
    const char *db = fsc_test_path("metrics.db");
    build_fragmentation_run(db);
    db_open(db);
    CU_ASSERT_EQUAL(SUM("events"), 17);
    CU_ASSERT_EQUAL(SUM("duration_ns"), 16000);
    CU_ASSERT_EQUAL(SUM("peak_allocated_bytes"), 6 * MiB);
    CU_ASSERT_EQUAL(SUM("peak_allocated_seq"), 7);
    CU_ASSERT_EQUAL(SUM("peak_reserved_bytes"), 8 * MiB);
    CU_ASSERT_EQUAL(SUM("peak_reserved_seq"), 5);
    CU_ASSERT_EQUAL(SUM("peak_active_bytes"), 6 * MiB);
    /* 2000000 + 1M + 3M */
    CU_ASSERT_EQUAL(SUM("peak_requested_bytes"), 6194304);
    CU_ASSERT_EQUAL(SUM("final_allocated_bytes"), 3 * MiB);
    CU_ASSERT_EQUAL(SUM("final_reserved_bytes"), 4 * MiB);
    CU_ASSERT_DOUBLE_EQUAL(SUMD("utilization"), 0.75, 1e-12);
    /* At the peak only A wastes: 2097152 − 2000000 = 97152 of 6M. */
    CU_ASSERT_EQUAL(SUM("internal_frag_bytes_at_peak"), 97152);
    CU_ASSERT_DOUBLE_EQUAL(SUMD("internal_frag_ratio_at_peak"), 97152.0 / 6291456.0, 1e-12);
    CU_ASSERT_EQUAL(SUM("peak_internal_frag_bytes"), 97152);
    /* At the peak two 1M free blocks: largest 1M of 2M → 0.5. */
    CU_ASSERT_EQUAL(SUM("free_in_reserved_at_peak"), 2 * MiB);
    CU_ASSERT_EQUAL(SUM("largest_free_at_peak"), 1 * MiB);
    CU_ASSERT_DOUBLE_EQUAL(SUMD("external_frag_at_peak"), 0.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(SUMD("external_frag_large_at_peak"), 0.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(SUMD("external_frag_small_at_peak"), 0.0, 1e-12);
    CU_ASSERT_EQUAL(SUM("reserved_unallocated_at_peak"), 2 * MiB);
    /* After seq 5 (and again after seq 12): 8M − 3M = 5M. */
    CU_ASSERT_EQUAL(SUM("peak_reserved_unallocated_bytes"), 5 * MiB);
    CU_ASSERT_EQUAL(SUM("inactive_split_blocks_at_peak"), 2);
    CU_ASSERT_EQUAL(SUM("inactive_split_bytes_at_peak"), 2 * MiB);
    /* After seq 9: S1 has A 2M + 1M free, S2 1M free → 4M. (Right after
     * seq 13 S1 holds three free blocks, 5M in all, but that state lasts
     * only until B's merges: the allocator frees and merges in one step.) */
    CU_ASSERT_EQUAL(SUM("peak_inactive_split_bytes"), 4 * MiB);
    /* At the end S2 = C 3M + 1M free. */
    CU_ASSERT_DOUBLE_EQUAL(SUMD("external_frag_final"), 0.0, 1e-12);
    CU_ASSERT_EQUAL(SUM("segments_created"), 2);
    CU_ASSERT_EQUAL(SUM("segments_freed"), 1);
    CU_ASSERT_EQUAL(SUM("peak_segments"), 2);
    CU_ASSERT_EQUAL(SUM("final_segments"), 1);
    CU_ASSERT_EQUAL(SUM("allocs"), 3);
    CU_ASSERT_EQUAL(SUM("frees"), 2);
    CU_ASSERT_EQUAL(SUM("cache_hits"), 1);
    CU_ASSERT_EQUAL(SUM("cache_misses"), 2);
    CU_ASSERT_EQUAL(SUM("splits"), 3);
    CU_ASSERT_EQUAL(SUM("merges"), 2);
    CU_ASSERT_EQUAL(SUM("markers"), 1);
    CU_ASSERT_EQUAL(SUM("leaked_blocks"), 1);
    CU_ASSERT_EQUAL(SUM("leaked_bytes"), 3 * MiB);

    /* events: a view over blocks + events_other, one row per event */
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM events"), 17);
    CU_ASSERT_EQUAL(qi("SELECT count(DISTINCT seq) FROM events"), 17);
    CU_ASSERT_EQUAL(qi("SELECT max(seq) FROM events"), 16);
    CU_ASSERT_EQUAL(qi("SELECT type FROM events WHERE seq=8"), FSC_EV_FREE_REQUESTED);
    CU_ASSERT_EQUAL(qi("SELECT addr FROM events WHERE seq=13"), S1 + 2 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT other FROM events WHERE seq=14"), S1 + 2 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT time_ns FROM events WHERE seq=9"), 9000);
    CU_ASSERT_STRING_EQUAL(qt("SELECT y.name FROM events e JOIN event_types y ON y.id=e.type"
                              " WHERE seq=6"), "split");
    CU_ASSERT_STRING_EQUAL(qt("SELECT text FROM markers WHERE seq=10"), "step 1");

    /* blocks: A and B completed, C live */
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM blocks"), 3);
    CU_ASSERT_EQUAL(qi("SELECT free_completed_seq FROM blocks WHERE alloc_seq=2"), 9);
    CU_ASSERT_EQUAL(qi("SELECT free_requested_seq FROM blocks WHERE alloc_seq=7"), -1);
    CU_ASSERT_EQUAL(qi("SELECT cache_hit FROM blocks WHERE alloc_seq=4"), 1);
    CU_ASSERT_EQUAL(qi("SELECT cache_hit FROM blocks WHERE alloc_seq=7"), 0);
    /* segments: S1 freed at 16, S2 live */
    CU_ASSERT_EQUAL(qi("SELECT freed_seq FROM segments WHERE addr=%llu", S1), 16);
    CU_ASSERT_EQUAL(qi("SELECT freed_seq FROM segments WHERE addr=%llu", S2), -1);
    CU_ASSERT_EQUAL(qi("SELECT id FROM segments WHERE addr=%llu", S2), 1);

    /* tag_stats: tag 1 = A; tag 2 = B + C, C leaked */
    CU_ASSERT_EQUAL(qi("SELECT live_bytes_at_peak FROM tag_stats WHERE tag=1"), 2 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT live_bytes_end FROM tag_stats WHERE tag=1"), 0);
    CU_ASSERT_EQUAL(qi("SELECT allocs FROM tag_stats WHERE tag=2"), 2);
    CU_ASSERT_EQUAL(qi("SELECT live_bytes_at_peak FROM tag_stats WHERE tag=2"), 4 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT live_bytes_end FROM tag_stats WHERE tag=2"), 3 * MiB);

    /* The peak layout (after seq 7): A, B, free 1M | C, free 1M. */
    long long ps = qi("SELECT id FROM layout_snapshots WHERE kind='peak_allocated'");
    CU_ASSERT_EQUAL(qi("SELECT seq FROM layout_snapshots WHERE id=%lld", ps), 7);
    CU_ASSERT_EQUAL(qi("SELECT reserved FROM layout_snapshots WHERE id=%lld", ps), 8 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM layout WHERE snapshot=%lld", ps), 5);
    CU_ASSERT_STRING_EQUAL(qt("SELECT state FROM layout WHERE snapshot=%lld AND addr=%llu", ps,
                              S1), "allocated");
    CU_ASSERT_EQUAL(qi("SELECT age_events FROM layout WHERE snapshot=%lld AND addr=%llu", ps,
                       S1), 5);
    CU_ASSERT_EQUAL(qi("SELECT sum(size) FROM layout WHERE snapshot=%lld AND state='free'", ps),
                    2 * MiB);

    /* meta */
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key='schema_version'"), 2);
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key='capacity'"), 8 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key='events.split'"), 3);
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key='warnings'"), 0);
    db_close();
}

/* The events view gives back every event of the stream, field for field,
 * although most SPLITs and MERGEs were folded into block rows. */
static void test_events_view_exact(void)
{
    const char *db = fsc_test_path("view.db");
    build_fragmentation_run(db);
    db_open(db);
    /* stored apart: 2 SEGMENT_ALLOC, MARKER, OOM, SEGMENT_FREE; the 3 SPLITs
     * and 2 MERGEs live in block rows */
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM events_other"), 5);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM blocks WHERE split_size IS NOT NULL"), 3);
    CU_ASSERT_EQUAL(qi("SELECT merge2_other FROM blocks WHERE alloc_seq=4"), S1 + 3 * MiB);
    sqlite3_stmt *s = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(g_db, "SELECT seq, time_ns, type, addr, size,"
                                             " requested, tag, other FROM events ORDER BY seq",
                                             -1, &s, NULL), SQLITE_OK);
    size_t i = 0;
    while (sqlite3_step(s) == SQLITE_ROW && i < g_nfed) {
        const fsc_event_t *e = &g_fed[i];
        CU_ASSERT_EQUAL(sqlite3_column_int64(s, 0), (long long)i);
        CU_ASSERT_EQUAL(sqlite3_column_int64(s, 1), (long long)e->time_ns);
        CU_ASSERT_EQUAL(sqlite3_column_int(s, 2), e->type);
        CU_ASSERT_EQUAL(sqlite3_column_int64(s, 6), e->tag);
        if (e->type != FSC_EV_OOM && e->type != FSC_EV_MARKER)
            CU_ASSERT_EQUAL(sqlite3_column_int64(s, 3), (long long)e->addr);
        if (e->type != FSC_EV_MARKER)
            CU_ASSERT_EQUAL(sqlite3_column_int64(s, 4), (long long)e->size);
        if (e->type == FSC_EV_SPLIT || e->type == FSC_EV_ALLOC || e->type == FSC_EV_OOM)
            CU_ASSERT_EQUAL(sqlite3_column_int64(s, 5), (long long)e->requested);
        if (e->type == FSC_EV_MERGE) {
            CU_ASSERT_EQUAL(sqlite3_column_int64(s, 7), (long long)e->other);
        } else {
            CU_ASSERT_EQUAL(sqlite3_column_type(s, 7), SQLITE_NULL);
        }
        i++;
    }
    CU_ASSERT_EQUAL(i, 17);
    sqlite3_finalize(s);
    db_close();

    /* A SPLIT whose tag differs from its ALLOC's, and a MERGE with another
     * tag than the free: not folded, stored apart, still listed once. */
    db = fsc_test_path("view2.db");
    rig_t r;
    rig_open(&r, db, 0, 0, 0);
    seg_alloc(&r, S1, 4 * MiB);
    split_t(&r, S1, S1, 4 * MiB, 1 * MiB, 5);
    alloc(&r, S1, S1, 1 * MiB, 1 * MiB, 0);
    free_both(&r, S1, S1, 1 * MiB);
    feed(&r, (fsc_event_t){.type = FSC_EV_MERGE, .pool = 1, .addr = S1, .size = 4 * MiB,
                           .other = S1 + 1 * MiB, .segment = S1, .tag = 7});
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, NULL), 0);
    fsc_analysis_destroy(r.a);
    db_open(db);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM events_other"), 3);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM events"), 6);
    CU_ASSERT_EQUAL(qi("SELECT tag FROM events WHERE seq=1"), 5);
    CU_ASSERT_EQUAL(qi("SELECT tag FROM events WHERE seq=5"), 7);
    CU_ASSERT_EQUAL(qi("SELECT other FROM events WHERE seq=5"), S1 + 1 * MiB);
    db_close();
}

/*
 * Bins of the same run. Bin k = [512·2^k, 512·2^(k+1)): 1M → 11, 2M and 3M → 12.
 *  bin 11: B (1M, req 1M, hit); split at seq 3 (first part 1M); the merges at
 *          14 and 15 follow the free of B → 2. Peak live 1 / 1M. At the peak
 *          two free 1M blocks → free 2 / 2M.
 *  bin 12: A (2M, req 2000000, miss) and C (3M, req 3M, miss): requested
 *          5145728, allocated 5242880, waste 97152; splits at seq 1 (2M) and 6
 *          (3M). Peak live 2 / 5M (after seq 7), the same at the peak.
 */
static void test_bins(void)
{
    const char *db = fsc_test_path("bins.db");
    build_fragmentation_run(db);
    db_open(db);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM bins"), 13);
    CU_ASSERT_EQUAL(qi("SELECT lo FROM bins WHERE bin=11"), 1 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT hi FROM bins WHERE bin=11"), 2 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT requests FROM bins WHERE bin=11"), 1);
    CU_ASSERT_EQUAL(qi("SELECT cache_hits FROM bins WHERE bin=11"), 1);
    CU_ASSERT_DOUBLE_EQUAL(qd("SELECT hit_rate FROM bins WHERE bin=11"), 1.0, 1e-12);
    CU_ASSERT_EQUAL(qi("SELECT splits FROM bins WHERE bin=11"), 1);
    CU_ASSERT_EQUAL(qi("SELECT merges FROM bins WHERE bin=11"), 2);
    CU_ASSERT_EQUAL(qi("SELECT peak_live_bytes FROM bins WHERE bin=11"), 1 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT free_blocks_at_peak FROM bins WHERE bin=11"), 2);
    CU_ASSERT_EQUAL(qi("SELECT free_bytes_at_peak FROM bins WHERE bin=11"), 2 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT requests FROM bins WHERE bin=12"), 2);
    CU_ASSERT_EQUAL(qi("SELECT requested_bytes FROM bins WHERE bin=12"), 5145728);
    CU_ASSERT_EQUAL(qi("SELECT allocated_bytes FROM bins WHERE bin=12"), 5 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT internal_waste FROM bins WHERE bin=12"), 97152);
    CU_ASSERT_EQUAL(qi("SELECT cache_misses FROM bins WHERE bin=12"), 2);
    CU_ASSERT_EQUAL(qi("SELECT splits FROM bins WHERE bin=12"), 2);
    CU_ASSERT_EQUAL(qi("SELECT merges FROM bins WHERE bin=12"), 0);
    CU_ASSERT_EQUAL(qi("SELECT peak_live_blocks FROM bins WHERE bin=12"), 2);
    CU_ASSERT_EQUAL(qi("SELECT peak_live_bytes FROM bins WHERE bin=12"), 5 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT live_bytes_at_peak FROM bins WHERE bin=12"), 5 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT requests FROM bins WHERE bin=0"), 0);
    db_close();
}

/*
 * Capacity OOM under an unknown cap (as from a PyTorch snapshot):
 *   0 SEGMENT_ALLOC S1 20M; 1 SPLIT 20M → 12M; 2 ALLOC 12M; 3 SPLIT 8M → 6M;
 *   4 ALLOC 6M (req 5M); 5 OOM 10M.
 * allocated 18M, reserved 20M. Lower bound = highest reserved = 20M; the
 * failing segment for 10M is 10M (≥ 10 MiB: rounded up to 2 MiB), so the
 * upper bound is 30M. A perfect allocator needs 18M + 10M = 28M: capacity
 * under a cap in [20M, 28M), fragmentation in [28M, 30M), so the cause is
 * undetermined with 28M as the threshold.
 */
static void test_capacity_oom_inferred(void)
{
    const char *db = fsc_test_path("cap.db");
    rig_t r;
    rig_open(&r, db, 0, FSC_TRACE_F_CAPACITY_UNKNOWN, 0);
    seg_alloc(&r, S1, 20 * MiB);
    split(&r, S1, S1, 20 * MiB, 12 * MiB);
    alloc(&r, S1, S1, 12 * MiB, 12 * MiB, 0);
    split(&r, S1, S1 + 12 * MiB, 8 * MiB, 6 * MiB);
    alloc(&r, S1, S1 + 12 * MiB, 6 * MiB, 5 * MiB, 0);
    oom(&r, 10 * MiB, 10 * MiB, 0, UINT64_MAX, 0, 0);
    CU_ASSERT_EQUAL(r.rc, 0);
    fsc_analysis_summary_t sum;
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, &sum), 0);
    CU_ASSERT_EQUAL(sum.first_oom_cause, FSC_OOM_UNDETERMINED);
    fsc_analysis_destroy(r.a);
    db_open(db);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "undetermined");
    CU_ASSERT_PTR_NOT_NULL(strstr(qt("SELECT explanation FROM ooms"), "Under a cap below 28.00 MiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(qt("SELECT explanation FROM ooms"), "X GiB allowed"));
    CU_ASSERT_EQUAL(qi("SELECT capacity_inferred FROM ooms"), 1);
    CU_ASSERT_EQUAL(qi("SELECT capacity_lower FROM ooms"), 20 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT capacity_upper FROM ooms"), 30 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT capacity FROM ooms"), 20 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT segment_size FROM ooms"), 10 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT allocated FROM ooms"), 18 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT free_in_reserved FROM ooms"), 2 * MiB);
    CU_ASSERT_PTR_NOT_NULL(strstr(qt("SELECT explanation FROM ooms"), "not recorded"));
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key='capacity_inferred'"), 1);
    /* internal at the peak: the 6M block asked for 5M */
    CU_ASSERT_EQUAL(SUM("internal_frag_bytes_at_peak"), 1 * MiB);
    db_close();
}

/*
 * Capacity for every cap the run allows: the 20M segment is wholly
 * allocated (12M + 8M), so the bounds are [20M, 30M) and a perfect
 * allocator needs 20M + 10M = 30M, more than any of them.
 */
/*
 * Free memory in a private pool does not serve the default pool: a 20M
 * segment of pool (0, 1) with all of it free, a wholly allocated 20M
 * default segment, then a 10M default request fails under a 40M cap. The
 * diagnosis names the pool; the largest usable block is 0.
 */
static void test_oom_private_pool(void)
{
    const char *db = fsc_test_path("pool.db");
    rig_t r;
    rig_open(&r, db, 40 * MiB, 0, 0);
    feed(&r, (fsc_event_t){.type = FSC_EV_SEGMENT_ALLOC, .pool = 1, .addr = S1,
                           .size = 20 * MiB, .pool_id = 1});
    seg_alloc(&r, S2, 20 * MiB);
    alloc(&r, S2, S2, 20 * MiB, 20 * MiB, 0);
    oom(&r, 10 * MiB, 10 * MiB, 40 * MiB, UINT64_MAX, 0, 10 * MiB);
    CU_ASSERT_EQUAL(r.rc, 0);
    fsc_analysis_summary_t sum;
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, &sum), 0);
    fsc_analysis_destroy(r.a);
    db_open(db);
    CU_ASSERT_EQUAL(qi("SELECT largest_free_usable FROM ooms"), 0);
    CU_ASSERT_EQUAL(qi("SELECT pool_id FROM segments WHERE addr = 268435456"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(qt("SELECT explanation FROM ooms"),
                                  "private pool (0, 1) (a CUDA graph pool or a MemPool) holds "
                                  "20.00 MiB"));
    db_close();
}

static void test_capacity_oom_inferred_firm(void)
{
    const char *db = fsc_test_path("cap2.db");
    rig_t r;
    rig_open(&r, db, 0, FSC_TRACE_F_CAPACITY_UNKNOWN, 0);
    seg_alloc(&r, S1, 20 * MiB);
    split(&r, S1, S1, 20 * MiB, 12 * MiB);
    alloc(&r, S1, S1, 12 * MiB, 12 * MiB, 0);
    alloc(&r, S1, S1 + 12 * MiB, 8 * MiB, 8 * MiB, 0);
    oom(&r, 10 * MiB, 10 * MiB, 0, UINT64_MAX, 0, 0);
    CU_ASSERT_EQUAL(r.rc, 0);
    fsc_analysis_summary_t sum;
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, &sum), 0);
    CU_ASSERT_EQUAL(sum.first_oom_cause, FSC_OOM_CAPACITY);
    fsc_analysis_destroy(r.a);
    db_open(db);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "capacity");
    CU_ASSERT_EQUAL(qi("SELECT capacity_upper FROM ooms"), 30 * MiB);
    CU_ASSERT_PTR_NOT_NULL(strstr(qt("SELECT explanation FROM ooms"), "holds for every cap"));
    db_close();
}

/*
 * The lower bound proves fragmentation: two 20M segments each pinned by a
 * 1M block (reserved 40M, allocated 2M), then 30M is refused. The failing
 * segment would be 30M, so the cap is in [40M, 70M); 40M − 2M = 38M ≥ 30M.
 */
static void test_fragmentation_oom_inferred(void)
{
    const char *db = fsc_test_path("frag_inf.db");
    rig_t r;
    rig_open(&r, db, 0, FSC_TRACE_F_CAPACITY_UNKNOWN, 0);
    seg_alloc(&r, S1, 20 * MiB);
    split(&r, S1, S1, 20 * MiB, 1 * MiB);
    alloc(&r, S1, S1, 1 * MiB, 1 * MiB, 0);
    seg_alloc(&r, S2, 20 * MiB);
    split(&r, S2, S2, 20 * MiB, 1 * MiB);
    alloc(&r, S2, S2, 1 * MiB, 1 * MiB, 0);
    oom(&r, 30 * MiB, 30 * MiB, 0, UINT64_MAX, 0, 0);
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, NULL), 0);
    fsc_analysis_destroy(r.a);
    db_open(db);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "fragmentation");
    CU_ASSERT_EQUAL(qi("SELECT capacity_lower FROM ooms"), 40 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT capacity_upper FROM ooms"), 70 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT largest_free FROM ooms"), 19 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM oom_pinning_blocks"), 2);
    db_close();
}

/* Oversize: 16M asked under an 8M cap. External: the cap allows a 2M
 * segment (4M + 2M ≤ 8M) but the device has only 1M free. */
static void test_oversize_and_external(void)
{
    const char *db = fsc_test_path("ext.db");
    rig_t r;
    rig_open(&r, db, 8 * MiB, 0, 0);
    seg_alloc(&r, S1, 4 * MiB);
    alloc(&r, S1, S1, 4 * MiB, 4 * MiB, 0);
    oom(&r, 16 * MiB, 16 * MiB, 8 * MiB, UINT64_MAX, 0, 0);
    oom(&r, 1536 * 1024, 1536 * 1024, 8 * MiB, 1 * MiB, 80ull * 1024 * MiB, 2 * MiB);
    /* Same request, device with room: 8M − 4M = 4M ≥ 1.5M → fragmentation. */
    oom(&r, 1536 * 1024, 1536 * 1024, 8 * MiB, 10 * MiB, 80ull * 1024 * MiB, 2 * MiB);
    /* 5M: 8M − 4M = 4M < 5M → capacity. */
    oom(&r, 5 * MiB, 5 * MiB, 8 * MiB, 10 * MiB, 80ull * 1024 * MiB, 20 * MiB);
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, NULL), 0);
    fsc_analysis_destroy(r.a);
    db_open(db);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms WHERE id=0"), "oversize");
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms WHERE id=1"), "external");
    CU_ASSERT_EQUAL(qi("SELECT device_free FROM ooms WHERE id=1"), 1 * MiB);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms WHERE id=2"), "fragmentation");
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms WHERE id=3"), "capacity");
    CU_ASSERT_EQUAL(SUM("num_ooms"), 4);
    /* A segment-sized ALLOC with no split right after SEGMENT_ALLOC: a miss. */
    CU_ASSERT_EQUAL(SUM("cache_misses"), 1);
    db_close();
}

/* Strict: the first contradiction fails feed with FSC_ESTATE naming the
 * event, and no database is left behind. Lenient: counted and kept. */
static void test_strict_vs_lenient(void)
{
    const char *db = fsc_test_path("strict.db");
    rig_t r;
    rig_open(&r, db, 0, 0, 0);
    seg_alloc(&r, S1, 4 * MiB);
    feed(&r, (fsc_event_t){.type = FSC_EV_FREE_REQUESTED, .pool = 1, .addr = S1 + 512,
                           .size = 512});
    CU_ASSERT_EQUAL(r.rc, FSC_ESTATE);
    CU_ASSERT_STRING_EQUAL(fsc_analysis_last_error(r.a),
                           "event 1 (free_requested at 0x10000200): no live block at this "
                           "address");
    CU_ASSERT_NOT_EQUAL(fsc_analysis_finish(r.a, NULL), 0);
    fsc_analysis_destroy(r.a);
    CU_ASSERT_FALSE(fsc_test_file_exists(db));
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "ls %s | grep -c strict.db", fsc_test_tmpdir());
    char out[64];
    fsc_test_sh(out, sizeof out, "%s", tmp);
    CU_ASSERT_STRING_EQUAL(out, "0\n");

    /* Overlapping segments and an ALLOC on an allocated block, leniently. */
    db = fsc_test_path("lenient.db");
    rig_open(&r, db, 0, 0, 1);
    seg_alloc(&r, S1, 4 * MiB);
    seg_alloc(&r, S1 + 2 * MiB, 4 * MiB);                  /* overlaps S1 */
    alloc(&r, S1, S1, 4 * MiB, 4 * MiB, 0);
    alloc(&r, S1, S1, 4 * MiB, 4 * MiB, 0);                /* already allocated */
    split(&r, S1, S1, 4 * MiB, 1 * MiB);                   /* not free */
    feed(&r, (fsc_event_t){.type = FSC_EV_FREE_REQUESTED, .pool = 1, .addr = S2, .size = 1});
    CU_ASSERT_EQUAL(r.rc, 0);
    fsc_analysis_summary_t sum;
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, &sum), 0);
    CU_ASSERT_EQUAL(sum.warnings, 4);
    fsc_analysis_destroy(r.a);
    db_open(db);
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key='warnings'"), 4);
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key='lenient'"), 1);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM warnings"), 4);
    CU_ASSERT_STRING_EQUAL(qt("SELECT message FROM warnings WHERE seq=1"),
                           "event 1 (segment_alloc at 0x10200000): overlaps the segment at "
                           "0x10000000");
    /* Every event is still listed, the skipped ALLOC from events_other. */
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM events"), 6);
    CU_ASSERT_EQUAL(qi("SELECT type FROM events WHERE seq=3"), FSC_EV_ALLOC);
    CU_ASSERT_EQUAL(SUM("peak_allocated_bytes"), 4 * MiB);
    CU_ASSERT_EQUAL(SUM("peak_reserved_bytes"), 4 * MiB);
    db_close();
}

/* A ring trace starts mid-run: a free of a block allocated before the
 * window is a warning, not an error, and the OOM takes the allocator's
 * figures. */
static void test_ring_trace(void)
{
    const char *db = fsc_test_path("ring.db");
    rig_t r;
    rig_open(&r, db, 8 * MiB, FSC_TRACE_F_RING, 0);
    feed(&r, (fsc_event_t){.type = FSC_EV_FREE_REQUESTED, .pool = 1, .addr = S1,
                           .size = 2 * MiB});
    fsc_event_t ev = {.type = FSC_EV_OOM, .pool = 1, .size = 4 * MiB, .requested = 4 * MiB};
    ev.oom.allocated = 6 * MiB;
    ev.oom.reserved = 8 * MiB;
    ev.oom.capacity = 8 * MiB;
    ev.oom.device_free = UINT64_MAX;
    feed(&r, ev);
    CU_ASSERT_EQUAL(r.rc, 0);
    fsc_analysis_summary_t sum;
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, &sum), 0);
    CU_ASSERT_EQUAL(sum.warnings, 1);
    fsc_analysis_destroy(r.a);
    db_open(db);
    /* 8M − 6M = 2M < 4M → capacity */
    CU_ASSERT_EQUAL(qi("SELECT allocated FROM ooms"), 6 * MiB);
    CU_ASSERT_STRING_EQUAL(qt("SELECT cause FROM ooms"), "capacity");
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key='lenient'"), 1);
    db_close();
}

/*
 * 10 000 events into at most 100 timeline rows: S1 (64M) is allocated whole
 * and freed over and over; once, at event 7777, a second 32M segment is
 * allocated whole for one event, so allocated = 96M exactly there.
 */
static void test_timeline_bounded_keeps_peaks(void)
{
    const char *db = fsc_test_path("tl.db");
    rig_t r;
    memset(&r, 0, sizeof r);
    fsc_trace_header_t h = header(0, 0);
    fsc_analysis_opts_t o = FSC_ANALYSIS_OPTS_DEFAULT;
    o.timeline_samples = 100;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_analysis_create(db, &h, &o, &r.a, &err), 0);
    seg_alloc(&r, S1, 64 * MiB);
    uint64_t spike_seq = 0;
    while (r.seq < 10000) {
        alloc(&r, S1, S1, 64 * MiB, 64 * MiB, 0);
        if (r.seq >= 7770 && spike_seq == 0) {
            seg_alloc(&r, S2, 32 * MiB);
            spike_seq = r.seq;
            alloc(&r, S2, S2, 32 * MiB, 32 * MiB, 0); /* seq = spike_seq */
            free_both(&r, S2, S2, 32 * MiB);
            seg_free(&r, S2, 32 * MiB);
        }
        free_both(&r, S1, S1, 64 * MiB);
    }
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, NULL), 0);
    fsc_analysis_destroy(r.a);
    db_open(db);
    long long rows = qi("SELECT count(*) FROM timeline");
    CU_ASSERT(rows <= 100 && rows >= 50);
    CU_ASSERT_EQUAL(qi("SELECT max(allocated_max) FROM timeline"), 96 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT allocated_max_seq FROM timeline ORDER BY allocated_max DESC"),
                    spike_seq);
    CU_ASSERT_EQUAL(qi("SELECT max(reserved_max) FROM timeline"), 96 * MiB);
    CU_ASSERT_EQUAL(qi("SELECT min(allocated_min) FROM timeline"), 0);
    CU_ASSERT_EQUAL(SUM("peak_allocated_seq"), spike_seq);
    /* buckets tile the run without gaps */
    CU_ASSERT_EQUAL(qi("SELECT min(seq_first) FROM timeline"), 0);
    CU_ASSERT_EQUAL(qi("SELECT max(seq_last) FROM timeline"), (long long)r.seq - 1);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM timeline a JOIN timeline b ON b.id = a.id + 1"
                       " WHERE b.seq_first != a.seq_last + 1"), 0);
    CU_ASSERT_EQUAL(qi("SELECT value FROM meta WHERE key='timeline_bucket_events'") *
                        (rows - 1) < (long long)r.seq, 1);
    /* the peak layout holds S1's block and the spike's block */
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM layout l JOIN layout_snapshots s ON s.id ="
                       " l.snapshot WHERE s.kind='peak_allocated' AND l.state='allocated'"),
                    2);
    db_close();
}

/* Expandable segments: pages mapped next to a free block coalesce with it;
 * unmapping splits the free block around the pages. */
static void test_expandable(void)
{
    const char *db = fsc_test_path("exp.db");
    const uint64_t E = 0x7f0000000000ull;
    rig_t r;
    rig_open(&r, db, 0, 0, 0);
    feed(&r, (fsc_event_t){.type = FSC_EV_SEGMENT_MAP, .pool = 1, .addr = E,
                           .size = 20 * MiB, .segment = E});
    split(&r, E, E, 20 * MiB, 4 * MiB);
    alloc(&r, E, E, 4 * MiB, 4 * MiB, 0); /* miss */
    feed(&r, (fsc_event_t){.type = FSC_EV_SEGMENT_MAP, .pool = 1, .addr = E + 20 * MiB,
                           .size = 20 * MiB, .segment = E});
    /* the free 16M and the new 20M are one 36M block now */
    split(&r, E, E + 4 * MiB, 36 * MiB, 30 * MiB);
    alloc(&r, E, E + 4 * MiB, 30 * MiB, 30 * MiB, 0); /* miss */
    free_both(&r, E, E + 4 * MiB, 30 * MiB);
    merge(&r, E, E + 4 * MiB, 36 * MiB, E + 34 * MiB);
    /* give back the second page: [E+20M, E+40M) */
    feed(&r, (fsc_event_t){.type = FSC_EV_SEGMENT_UNMAP, .pool = 1, .addr = E + 20 * MiB,
                           .size = 20 * MiB, .segment = E});
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, NULL), 0);
    fsc_analysis_destroy(r.a);
    db_open(db);
    CU_ASSERT_EQUAL(SUM("peak_reserved_bytes"), 40 * MiB);
    CU_ASSERT_EQUAL(SUM("final_reserved_bytes"), 20 * MiB);
    CU_ASSERT_EQUAL(SUM("peak_allocated_bytes"), 34 * MiB);
    CU_ASSERT_EQUAL(SUM("cache_misses"), 2);
    CU_ASSERT_EQUAL(SUM("segments_created"), 1);
    CU_ASSERT_EQUAL(qi("SELECT expandable FROM segments"), 1);
    CU_ASSERT_EQUAL(qi("SELECT size FROM segments"), 40 * MiB);
    CU_ASSERT_EQUAL(SUM("segment_maps"), 2);
    db_close();
}

/* ---- our own allocator, replayed --------------------------------------- */

typedef struct walk {
    fsc_block_info_t v[4096];
    size_t n;
} walk_t;

static void visit(void *ud, const fsc_block_info_t *b)
{
    walk_t *w = ud;
    if (w->n < 4096)
        w->v[w->n++] = *b;
}

static void sink_to_analysis(void *ud, const fsc_event_t *ev)
{
    rig_t *r = ud;
    fsc_event_t e = *ev;
    e.time_ns = r->seq;
    r->seq++;
    int rc = fsc_analysis_feed(r->a, &e);
    if (rc != 0 && r->rc == 0) {
        r->rc = rc;
        fprintf(stderr, "%s\n", fsc_analysis_last_error(r->a));
    }
}

static uint64_t xs(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/*
 * The allocator (sim backend) serves 60 000 random requests, some of them
 * freed while in use on a second stream (pending frees), its events fed
 * straight into an analysis. The database must agree with the allocator's
 * own statistics (peaks of allocated, reserved, active, requested,
 * inactive_split; segment count) and its peak layout must be, block for
 * block, what fsc_allocator_walk saw right after the peak. The live set
 * shrinks for the last 40 000 requests, so the peak layout is rebuilt from
 * more than 65 536 changed blocks (the delta gets materialized).
 */
static void run_allocator(const char *cfg, int compare_layout)
{
    const char *db = fsc_test_path("alloc.db");
    fsc_alloc_config_t conf;
    fsc_err_t err = {0};
    if (fsc_alloc_config_parse(cfg, &conf, &err) != 0)
        fprintf(stderr, "%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(cfg, &conf, &err), 0);
    fsc_backend_t *be = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(0, 0, &be), 0);
    rig_t r;
    rig_open(&r, db, 0, 0, 0);
    fsc_allocator_opts_t ao;
    memset(&ao, 0, sizeof ao);
    ao.config = conf;
    ao.backend = be;
    ao.sink = sink_to_analysis;
    ao.sink_ud = &r;
    fsc_allocator_t *al = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&ao, &al, &err), 0);
    static walk_t at_peak;
    at_peak.n = 0;
    static uint64_t live[2048];
    size_t n = 0;
    int64_t best = -1;
    uint64_t seed = 12345;
    for (int i = 0; i < 60000 && r.rc == 0; i++) {
        size_t target = i < 20000 ? 1500 : 100;
        if (n > 0 && (n >= target || xs(&seed) % 3 == 0)) {
            size_t k = xs(&seed) % n;
            if (xs(&seed) % 8 == 0)
                fsc_allocator_record_stream(al, live[k], 7);
            fsc_allocator_free(al, live[k]);
            live[k] = live[--n];
            if (xs(&seed) % 16 == 0)
                fsc_allocator_stream_done(al, 7);
            continue;
        }
        uint64_t size = xs(&seed) % 4 ? 512 + xs(&seed) % (900 * 1024)
                                      : (1 << 20) + xs(&seed) % (30u << 20);
        uint64_t addr = 0;
        if (fsc_allocator_malloc(al, size, 0, &addr) != 0 || addr == 0)
            continue;
        live[n++] = addr;
        fsc_alloc_stats_t st;
        fsc_allocator_get_stats(al, &st);
        if (compare_layout && st.allocated_bytes[FSC_STAT_ALL].current > best) {
            best = st.allocated_bytes[FSC_STAT_ALL].current;
            at_peak.n = 0;
            fsc_allocator_walk(al, visit, &at_peak);
        }
    }
    fsc_allocator_stream_done(al, 7);
    fsc_alloc_stats_t st;
    fsc_allocator_get_stats(al, &st);
    CU_ASSERT_EQUAL(r.rc, 0);
    fsc_analysis_summary_t sum;
    CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, &sum), 0);
    fsc_analysis_destroy(r.a);
    db_open(db);
    CU_ASSERT_EQUAL(SUM("peak_allocated_bytes"), st.allocated_bytes[FSC_STAT_ALL].peak);
    CU_ASSERT_EQUAL(SUM("peak_reserved_bytes"), st.reserved_bytes[FSC_STAT_ALL].peak);
    CU_ASSERT_EQUAL(SUM("peak_active_bytes"), st.active_bytes[FSC_STAT_ALL].peak);
    CU_ASSERT_EQUAL(SUM("peak_requested_bytes"), st.requested_bytes[FSC_STAT_ALL].peak);
    CU_ASSERT_EQUAL(SUM("final_allocated_bytes"), st.allocated_bytes[FSC_STAT_ALL].current);
    CU_ASSERT_EQUAL(SUM("final_reserved_bytes"), st.reserved_bytes[FSC_STAT_ALL].current);
    if (!conf.expandable_segments) {
        CU_ASSERT_EQUAL(SUM("segments_created"), st.segment[FSC_STAT_ALL].allocated);
        CU_ASSERT_EQUAL(SUM("peak_inactive_split_bytes"),
                        st.inactive_split_bytes[FSC_STAT_ALL].peak);
    } else {
        /* one expandable segment per pool; each mapping is a device allocation */
        CU_ASSERT_EQUAL(SUM("segment_maps"), st.num_device_alloc);
    }
    CU_ASSERT_EQUAL(SUM("allocs"), st.allocation[FSC_STAT_ALL].allocated);
    if (compare_layout) {
        long long ps = qi("SELECT id FROM layout_snapshots WHERE kind='peak_allocated'");
        CU_ASSERT_EQUAL(qi("SELECT count(*) FROM layout WHERE snapshot=%lld", ps),
                        (long long)at_peak.n);
        sqlite3_stmt *s = NULL;
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(g_db, "SELECT addr, size, state, segment FROM"
                                                 " layout WHERE snapshot=? ORDER BY addr", -1,
                                                 &s, NULL), SQLITE_OK);
        sqlite3_bind_int64(s, 1, ps);
        size_t i = 0, bad = 0;
        while (sqlite3_step(s) == SQLITE_ROW && i < at_peak.n) {
            const fsc_block_info_t *b = &at_peak.v[i++];
            const char *state = (const char *)sqlite3_column_text(s, 2);
            const char *want = b->allocated ? (b->pending_free ? "pending" : "allocated")
                                            : (b->pending_free ? "pending" : "free");
            if ((uint64_t)sqlite3_column_int64(s, 0) != b->addr ||
                (uint64_t)sqlite3_column_int64(s, 1) != b->size || strcmp(state, want) != 0 ||
                (uint64_t)sqlite3_column_int64(s, 3) != b->segment)
                bad++;
        }
        sqlite3_finalize(s);
        CU_ASSERT_EQUAL(i, at_peak.n);
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT(at_peak.n > 100);
    }
    db_close();
    fsc_allocator_destroy(al);
    fsc_backend_destroy(be);
}

static void test_own_allocator(void)
{
    run_allocator("", 1);
    run_allocator("max_split_size_mb:64", 1);
    run_allocator("expandable_segments:True", 0);
}

/* Garbage in: random events over a few addresses, leniently, must give a
 * database (every contradiction counted) and never crash; strictly, the
 * first contradiction is an FSC_ESTATE. */
static void test_random_events(void)
{
    static const uint64_t addrs[] = {S1, S1 + 512, S1 + 1 * MiB, S1 + 2 * MiB, S2,
                                     S2 + 4 * MiB, 0};
    for (int lenient = 1; lenient >= 0; lenient--) {
        rig_t r;
        rig_open(&r, fsc_test_path(lenient ? "rnd_l.db" : "rnd_s.db"), 0, 0, lenient);
        uint64_t seed = 99;
        for (int i = 0; i < 20000 && (lenient || r.rc == 0); i++) {
            fsc_event_t ev;
            memset(&ev, 0, sizeof ev);
            ev.type = (uint8_t)(xs(&seed) % 15);
            ev.pool = (uint8_t)(xs(&seed) % 3);
            ev.addr = addrs[xs(&seed) % 7];
            ev.size = (xs(&seed) % 9) * 512 * 1024;
            ev.requested = ev.size ? xs(&seed) % (ev.size + 1) : 0;
            ev.segment = addrs[xs(&seed) % 7];
            ev.other = addrs[xs(&seed) % 7];
            ev.tag = (uint32_t)(xs(&seed) % 5);
            ev.oom.device_free = xs(&seed) % 2 ? UINT64_MAX : ev.size;
            feed(&r, ev);
        }
        if (lenient) {
            CU_ASSERT_EQUAL(r.rc, 0);
            fsc_analysis_summary_t sum;
            CU_ASSERT_EQUAL(fsc_analysis_finish(r.a, &sum), 0);
            CU_ASSERT(sum.warnings > 0 && sum.warnings < 20000);
        } else {
            CU_ASSERT_EQUAL(r.rc, FSC_ESTATE);
        }
        fsc_analysis_destroy(r.a);
    }
}

static void test_api_errors(void)
{
    fsc_analysis_t *a = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_NOT_EQUAL(fsc_analysis_create("", NULL, NULL, &a, &err), 0);
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_NOT_EQUAL(fsc_analysis_create("/nonexistent-dir/x.db", NULL, NULL, &a, &err), 0);
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "/nonexistent-dir/x.db"));
    fsc_analysis_destroy(NULL);
    /* no events at all: a valid, empty database */
    const char *db = fsc_test_path("empty.db");
    CU_ASSERT_EQUAL_FATAL(fsc_analysis_create(db, NULL, NULL, &a, &err), 0);
    /* tags: repeated definitions are no-ops, children see their parent's path,
     * a tag used before its parent is defined gets a placeholder parent */
    CU_ASSERT_EQUAL(fsc_analysis_define_tag(a, 1, 0, "a/b.py:3:f", 10), 0);
    CU_ASSERT_EQUAL(fsc_analysis_define_tag(a, 1, 0, "a/b.py:3:f", 10), 0);
    CU_ASSERT_EQUAL(fsc_analysis_define_tag(a, 2, 1, "g", 1), 0);
    CU_ASSERT_EQUAL(fsc_analysis_define_tag(a, 4, 3, "h", 1), 0);
    CU_ASSERT_EQUAL(fsc_analysis_define_tag(a, 5, 5, "x", 1), FSC_EFORMAT);
    fsc_analysis_summary_t sum;
    CU_ASSERT_EQUAL(fsc_analysis_finish(a, &sum), 0);
    CU_ASSERT_EQUAL(fsc_analysis_feed(a, &(fsc_event_t){.type = FSC_EV_MARKER}), FSC_EINVAL);
    fsc_analysis_destroy(a);
    CU_ASSERT_EQUAL(sum.events, 0);
    CU_ASSERT_EQUAL(sum.first_oom_cause, -1);
    db_open(db);
    CU_ASSERT_EQUAL(SUM("peak_allocated_bytes"), 0);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM layout_snapshots"), 0);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM events"), 0);
    CU_ASSERT_EQUAL(qi("SELECT count(*) FROM timeline"), 0);
    CU_ASSERT_STRING_EQUAL(qt("SELECT value FROM meta WHERE key='source_kind'"), "api");
    CU_ASSERT_STRING_EQUAL(qt("SELECT path FROM tag_paths WHERE id=2"), "a/b.py:3:f/g");
    CU_ASSERT_STRING_EQUAL(qt("SELECT path FROM tag_paths WHERE id=4"), "#3/h");
    CU_ASSERT_EQUAL(qi("SELECT parent FROM tags WHERE id=0"), -1);
    db_close();
    CU_ASSERT_STRING_EQUAL(fsc_oom_cause_name(FSC_OOM_EXTERNAL), "external");
    CU_ASSERT_STRING_EQUAL(fsc_oom_cause_name(99), "unknown");
}

static const fsc_test_case_t k_tests[] = {
    {"fragmentation OOM", test_fragmentation_oom},
    {"metrics", test_metrics},
    {"events view exact", test_events_view_exact},
    {"bins", test_bins},
    {"undetermined OOM, inferred cap", test_capacity_oom_inferred},
    {"capacity OOM for every inferred cap", test_capacity_oom_inferred_firm},
    {"OOM with free memory in a private pool", test_oom_private_pool},
    {"fragmentation OOM, inferred cap", test_fragmentation_oom_inferred},
    {"oversize and external", test_oversize_and_external},
    {"strict vs lenient", test_strict_vs_lenient},
    {"timeline bounded, peaks kept", test_timeline_bounded_keeps_peaks},
    {"ring trace", test_ring_trace},
    {"expandable segments", test_expandable},
    {"own allocator replayed: stats and peak layout", test_own_allocator},
    {"random events: lenient survives, strict stops", test_random_events},
    {"API errors", test_api_errors},
    {NULL, NULL},
};

FSC_TEST_MAIN("analyzer", k_tests)
