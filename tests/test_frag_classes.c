/*
 * test_frag_classes.c — the split of reserved − allocated into soft, hard,
 * stream, private_pool and pending bytes (analyzer/frag_classes.c,
 * docs/metrics.md): a hand-built run with every class at known bytes, the
 * incremental split against the one worked out from the layout at every
 * event of real runs, and exact sums at every reported point of the shared
 * snapshots, the sample traces and the H200 recordings.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "fsc_test.h"
#include "test_pytorch_common.h"

#define MiB (1024ull * 1024ull)

static void feed(fsc_analysis_t *a, uint64_t *seq, fsc_event_t ev)
{
    ev.time_ns = (*seq)++ * 10;
    CU_ASSERT_EQUAL(fsc_analysis_feed(a, &ev), 0);
}

/* A segment of `size`, its first `used` bytes allocated on `stream`. */
static void seg_with_block(fsc_analysis_t *a, uint64_t *seq, uint64_t base, uint64_t size,
                           uint64_t used, uint64_t stream, uint32_t tag)
{
    int pool = size > 2 * MiB;
    feed(a, seq, (fsc_event_t){.type = FSC_EV_SEGMENT_ALLOC, .pool = pool, .addr = base,
                               .size = size, .stream = stream});
    if (used == 0)
        return;
    if (used < size)
        feed(a, seq, (fsc_event_t){.type = FSC_EV_SPLIT, .pool = pool, .addr = base,
                                   .size = size, .requested = used, .segment = base,
                                   .stream = stream});
    feed(a, seq, (fsc_event_t){.type = FSC_EV_ALLOC, .pool = pool, .addr = base, .size = used,
                               .requested = used, .segment = base, .stream = stream,
                               .tag = tag});
}

static int64_t q1(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else
        fprintf(stderr, "\n  query failed: %s: %s\n", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return v;
}

static void check_point(const fsc__frag_point_t *p, uint64_t soft, uint64_t hard,
                        uint64_t stream, uint64_t priv, uint64_t pending)
{
    const fsc__frag_t *c = &p->cls[FSC__FRAG_ALL];
    CU_ASSERT_EQUAL(c->soft, soft);
    CU_ASSERT_EQUAL(c->hard, hard);
    CU_ASSERT_EQUAL(c->stream, stream);
    CU_ASSERT_EQUAL(c->private_pool, priv);
    CU_ASSERT_EQUAL(c->pending, pending);
}

/*
 * Segments (large pool 20 MiB unless said), asking stream 0 at the end:
 *   A  8 MiB allocated                     → 12 MiB hard
 *   B  2 MiB small, nothing allocated      →  2 MiB soft
 *   C  4 MiB allocated on stream 7         → 16 MiB stream
 *   D  6 MiB allocated, then freed with its
 *      free pending                        →  6 MiB pending, 14 MiB hard
 *   E  10 MiB allocated, private pool 5    → 10 MiB private_pool
 *   F  expandable, 40 MiB mapped (2 pages), 1 MiB allocated at the base
 *                                          → page 2 (20 MiB) soft, 19 MiB hard
 * Reserved 122 MiB; at the end allocated 23 MiB: 99 = 22 + 45 + 16 + 10 + 6.
 * The allocated peak (29 MiB) is before D's free: pending 0, D pinned by
 * its allocated block. Then an OOM on stream 7: C's 16 MiB are hard there
 * and the 45 MiB of stream 0 are stream.
 */
static void test_hand_built(void)
{
    const char *path = fsc_test_path("frag_hand.db");
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.producer = "test";
    h.config = "";
    h.backend = "sim";
    h.capacity = 200 * MiB;
    h.rank = -1;
    fsc_analysis_t *a = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_analysis_create(path, &h, NULL, &a, &err), 0);
    fsc__replay_t *r = fsc__analysis_replay(a);
    for (uint32_t t = 1; t <= 6; t++) {
        char name[8];
        snprintf(name, sizeof name, "t%c", 'A' + (int)t - 1);
        CU_ASSERT_EQUAL(fsc_analysis_define_tag(a, t, 0, name, 2), 0);
    }
    uint64_t seq = 0;
    const uint64_t A = 0x10000000, B = 0x20000000, C = 0x30000000, D = 0x40000000,
                   E = 0x50000000, F = 0x60000000;
    seg_with_block(a, &seq, A, 20 * MiB, 8 * MiB, 0, 1);
    seg_with_block(a, &seq, B, 2 * MiB, 0, 0, 2);
    seg_with_block(a, &seq, C, 20 * MiB, 4 * MiB, 7, 3);
    seg_with_block(a, &seq, D, 20 * MiB, 6 * MiB, 0, 4);
    /* E belongs to a private pool: set as an importer sets it at creation */
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_SEGMENT_ALLOC, .pool = 1, .addr = E,
                                .size = 20 * MiB});
    fsc__seg_t *e = fsc__u64map_getp(&r->segs, E);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    fsc__frag_seg_out(r, e);
    e->pool_id = 5;
    fsc__frag_seg_in(r, e);
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_SPLIT, .pool = 1, .addr = E, .size = 20 * MiB,
                                .requested = 10 * MiB, .segment = E});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_ALLOC, .pool = 1, .addr = E, .size = 10 * MiB,
                                .requested = 10 * MiB, .segment = E, .tag = 5});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_SEGMENT_MAP, .pool = 1, .addr = F,
                                .size = 40 * MiB, .segment = F});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_SPLIT, .pool = 1, .addr = F, .size = 40 * MiB,
                                .requested = 1 * MiB, .segment = F});
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_ALLOC, .pool = 1, .addr = F, .size = 1 * MiB,
                                .requested = 1 * MiB, .segment = F, .tag = 6});
    fsc__frag_point_t now, lay;
    fsc__frag_now(r, 0, &now);
    check_point(&now, 22 * MiB, 45 * MiB, 16 * MiB, 10 * MiB, 0);
    CU_ASSERT_EQUAL(now.reserved[FSC__FRAG_ALL], 122 * MiB);
    CU_ASSERT_EQUAL(now.allocated[FSC__FRAG_ALL], 29 * MiB);
    CU_ASSERT_EQUAL(now.cls[FSC__FRAG_SMALL].soft, 2 * MiB);
    CU_ASSERT_EQUAL(now.reserved[FSC__FRAG_SMALL], 2 * MiB);
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_FREE_REQUESTED, .pool = 1, .addr = D,
                                .size = 6 * MiB, .segment = D});
    fsc__frag_now(r, 0, &now);
    check_point(&now, 22 * MiB, 45 * MiB, 16 * MiB, 10 * MiB, 6 * MiB);
    CU_ASSERT_EQUAL(now.allocated[FSC__FRAG_ALL], 23 * MiB);
    CU_ASSERT_EQUAL(r->allocated, 23 * MiB);
    fsc__imgvec_t cur = {0};
    CU_ASSERT_EQUAL(fsc__layout_current(r, &cur), 0);
    fsc__frag_of_layout(cur.v, cur.n, 0, &lay);
    check_point(&lay, 22 * MiB, 45 * MiB, 16 * MiB, 10 * MiB, 6 * MiB);
    fsc__frag_of_layout(cur.v, cur.n, 7, &lay);
    check_point(&lay, 22 * MiB, 16 * MiB, 45 * MiB, 10 * MiB, 6 * MiB);
    fsc__imgvec_free(&cur);
    feed(a, &seq, (fsc_event_t){.type = FSC_EV_OOM, .pool = 1, .size = 100 * MiB,
                                .requested = 100 * MiB, .stream = 7,
                                .oom = {.device_free = UINT64_MAX}});
    CU_ASSERT_EQUAL(fsc_analysis_finish(a, NULL), 0);
    fsc_analysis_destroy(a);

    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
#define POINT(p, col) \
    q1(db, "SELECT " col " FROM frag_classes WHERE point = '" p "' AND pool = 'all'")
    CU_ASSERT_EQUAL(POINT("peak_allocated", "soft"), 22 * MiB);
    CU_ASSERT_EQUAL(POINT("peak_allocated", "hard"), 45 * MiB);
    CU_ASSERT_EQUAL(POINT("peak_allocated", "stream"), 16 * MiB);
    CU_ASSERT_EQUAL(POINT("peak_allocated", "private_pool"), 10 * MiB);
    CU_ASSERT_EQUAL(POINT("peak_allocated", "pending"), 0);
    CU_ASSERT_EQUAL(POINT("peak_allocated", "reserved_unallocated"), 93 * MiB);
    CU_ASSERT_EQUAL(POINT("oom", "soft"), 22 * MiB);
    CU_ASSERT_EQUAL(POINT("oom", "hard"), 16 * MiB);
    CU_ASSERT_EQUAL(POINT("oom", "stream"), 45 * MiB);
    CU_ASSERT_EQUAL(POINT("oom", "private_pool"), 10 * MiB);
    CU_ASSERT_EQUAL(POINT("oom", "pending"), 6 * MiB);
    CU_ASSERT_EQUAL(POINT("oom", "asking_stream"), 7);
    /* F was the last segment mapped: the peak of reserved is after its ALLOC */
    CU_ASSERT_EQUAL(POINT("peak_reserved", "reserved"), 122 * MiB);
    CU_ASSERT_EQUAL(POINT("peak_reserved", "allocated"), 29 * MiB);
#undef POINT
    /* who pins: at the peak A's block 12, D's 14, F's 19 (its page-1 part) */
    CU_ASSERT_EQUAL(q1(db, "SELECT hard_bytes FROM frag_hard_blocks WHERE point ="
                           " 'peak_allocated' AND addr = 0x60000000"), 19 * MiB);
    CU_ASSERT_EQUAL(q1(db, "SELECT hard_bytes FROM frag_hard_blocks WHERE point ="
                           " 'peak_allocated' AND addr = 0x40000000"), 14 * MiB);
    CU_ASSERT_EQUAL(q1(db, "SELECT sum(hard_bytes) FROM frag_hard_tags WHERE point ="
                           " 'peak_allocated'"), 45 * MiB);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM frag_hard_tags WHERE point = 'peak_allocated'"),
                    3);
    CU_ASSERT_EQUAL(q1(db, "SELECT tag FROM frag_hard_tags WHERE point = 'peak_allocated' AND"
                           " rank = 0"), 6);
    /* at the OOM the asking stream is 7: C's block pins 16 MiB */
    CU_ASSERT_EQUAL(q1(db, "SELECT tag FROM frag_hard_tags WHERE point = 'oom' AND rank = 0"), 3);
    CU_ASSERT_EQUAL(q1(db, "SELECT hard_bytes FROM frag_hard_tags WHERE point = 'oom' AND"
                           " rank = 0"), 16 * MiB);
    CU_ASSERT_EQUAL(q1(db, "SELECT value FROM summary WHERE key = 'max_hard_bytes_at_oom'"),
                    16 * MiB);
    CU_ASSERT_EQUAL(q1(db, "SELECT value FROM summary WHERE key = 'pending_bytes_at_peak'"), 0);
    /* the last timeline row: after the OOM, asking stream 0 (last ALLOC) */
    CU_ASSERT_EQUAL(q1(db, "SELECT hard FROM timeline_frag WHERE pool = 'all' ORDER BY id DESC"
                           " LIMIT 1"), 45 * MiB);
    CU_ASSERT_EQUAL(q1(db, "SELECT pending FROM timeline_frag WHERE pool = 'all' ORDER BY id"
                           " DESC LIMIT 1"), 6 * MiB);
    CU_ASSERT_EQUAL(q1(db, "SELECT soft FROM timeline_frag WHERE pool = 'small' ORDER BY id"
                           " DESC LIMIT 1"), 2 * MiB);
    sqlite3_close(db);
}

/* Expandable pages: a free block with partial pages at both ends. */
static void test_expandable_pages(void)
{
    fsc__seg_t s;
    memset(&s, 0, sizeof s);
    s.base = 0x1000000000ull;
    s.pool = 1;
    s.expandable = 1;
    CU_ASSERT_EQUAL(fsc__frag_paged(&s, s.base + MiB, 60 * MiB), 40 * MiB);
    CU_ASSERT_EQUAL(fsc__frag_paged(&s, s.base + MiB, 19 * MiB), 0);
    CU_ASSERT_EQUAL(fsc__frag_paged(&s, s.base, 20 * MiB), 20 * MiB);
    s.pool = 0;
    CU_ASSERT_EQUAL(fsc__frag_paged(&s, s.base + MiB, 4 * MiB), 2 * MiB);
    s.expandable = 0;
    CU_ASSERT_EQUAL(fsc__frag_paged(&s, s.base, 20 * MiB), 0);
}

/* ---- real runs: incremental = layout at every event ------------------------ */

static long g_mismatch;

static void compare(fsc_analysis_t *a)
{
    fsc__replay_t *r = fsc__analysis_replay(a);
    fsc__imgvec_t cur = {0};
    fsc__frag_point_t now, lay;
    CU_ASSERT_EQUAL_FATAL(fsc__layout_current(r, &cur), 0);
    uint64_t asks[2] = {r->frag.ask_stream, 0};
    for (int i = 0; i < 2; i++) {
        fsc__frag_now(r, asks[i], &now);
        fsc__frag_of_layout(cur.v, cur.n, asks[i], &lay);
        for (int k = 0; k < FSC__FRAG_NPOOLS; k++)
            if (memcmp(&now.cls[k], &lay.cls[k], sizeof now.cls[k]) != 0 ||
                now.reserved[k] != lay.reserved[k] || now.allocated[k] != lay.allocated[k])
                g_mismatch++;
    }
    const fsc__frag_t *c = &now.cls[FSC__FRAG_ALL];
    if (now.reserved[FSC__FRAG_ALL] != r->reserved || now.allocated[FSC__FRAG_ALL] != r->allocated ||
        c->soft + c->hard + c->stream + c->private_pool + c->pending != r->reserved - r->allocated)
        g_mismatch++;
    fsc__imgvec_free(&cur);
}

static void replay_compare(const char *file, size_t every)
{
    tp_col_t c;
    fsc_err_t err = {0};
    int rc = tp_import(file, 0, 0, &c, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "\n  %s: %s\n", file, err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    fsc_trace_header_t h;
    memset(&h, 0, sizeof h);
    h.producer = "test";
    h.config = "";
    h.backend = "";
    h.rank = -1;
    h.flags = FSC_TRACE_F_CAPACITY_UNKNOWN;
    fsc_analysis_t *a = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_analysis_create(fsc_test_path("frag_cmp.db"), &h, NULL, &a, &err),
                          0);
    g_mismatch = 0;
    for (size_t i = 0; i < c.n; i++) {
        fsc_event_t ev = c.r[i].ev;
        ev.tag = 0;
        ev.text = NULL;
        ev.text_len = 0;
        CU_ASSERT_EQUAL_FATAL(fsc_analysis_feed(a, &ev), 0);
        if (i % every == 0 || i + 1 == c.n || ev.type == FSC_EV_OOM)
            compare(a);
    }
    if (g_mismatch)
        fprintf(stderr, "\n  %s: %ld mismatches\n", file, g_mismatch);
    CU_ASSERT_EQUAL(g_mismatch, 0);
    fsc_analysis_destroy(a);
    tp_free(&c);
}

static void test_incremental_matches_layout(void)
{
    replay_compare(fsc_test_data("gpu/side_stream.pickle"), 1);
    replay_compare(fsc_test_data("gpu/graphed.pickle"), 1);
    replay_compare(fsc_test_data("gpu/gpt2_emptycache.pickle"), 7);
    replay_compare(fsc_test_data("pytorch/gpt2m_oom_12g.pickle"), 3);
    replay_compare(fsc_test_data("pytorch/expandable.pickle"), 1);
    replay_compare(fsc_test_data("pytorch/resnet50_varbatch.pickle"), 29);
    char p[4096];
    snprintf(p, sizeof p, "%s/sample_traces/gpt2_h200_cap14g.pickle", FSC_SOURCE_DIR);
    replay_compare(p, 5);
}

/* ---- real runs: exact sums at every reported point ------------------------ */

static sqlite3 *analyze(const char *input, const char *name)
{
    char out[4096], db[4096];
    snprintf(db, sizeof db, "%s", fsc_test_path(name));
    int rc = fsc_test_sh(out, sizeof out, "%s analyze %s -o %s --no-suggest",
                         fsc_test_fragscope(), input, db);
    CU_ASSERT_EQUAL(rc, 0);
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return h;
}

typedef struct expect {
    const char *input; /* under tests/data, or the source tree when it starts with '/' */
    int ooms;
    int64_t soft_at_peak, hard_at_peak, stream_at_peak, pending_at_peak, private_at_peak;
} expect_t;

static void sums_of(const expect_t *x)
{
    char in[4096];
    if (x->input[0] == '/')
        snprintf(in, sizeof in, "%s%s", FSC_SOURCE_DIR, x->input);
    else
        snprintf(in, sizeof in, "%s", fsc_test_data(x->input));
    sqlite3 *db = analyze(in, "frag_sums.db");
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    /* every row of frag_classes, every pool, adds up */
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM frag_classes WHERE reserved - allocated <>"
                           " reserved_unallocated OR soft + hard + stream + private_pool +"
                           " pending <> reserved_unallocated"), 0);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM frag_classes"), 3 * (2 + x->ooms));
    /* the pools add up to the whole */
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM frag_classes w WHERE pool = 'all' AND"
                           " (reserved, allocated, soft, hard, stream, private_pool, pending) <>"
                           " (SELECT sum(reserved), sum(allocated), sum(soft), sum(hard),"
                           " sum(stream), sum(private_pool), sum(pending) FROM frag_classes p"
                           " WHERE p.pool <> 'all' AND p.point = w.point AND"
                           " p.oom_id IS w.oom_id)"), 0);
    /* the moments are the run's: the allocated peak, peak reserved, the OOMs */
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM frag_classes f, summary s WHERE f.pool = 'all'"
                           " AND f.point = 'peak_allocated' AND s.key = 'peak_allocated_bytes'"
                           " AND f.allocated = s.value"), 1);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM frag_classes f, summary s WHERE f.pool = 'all'"
                           " AND f.point = 'peak_reserved' AND s.key = 'peak_reserved_bytes'"
                           " AND f.reserved = s.value"), 1);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM frag_classes f JOIN ooms o ON o.id = f.oom_id"
                           " WHERE f.point = 'oom' AND f.pool = 'all' AND"
                           " f.reserved = o.reserved AND f.allocated = o.allocated"), x->ooms);
    /* every timeline row adds up to its reserved − allocated */
    CU_ASSERT(q1(db, "SELECT count(*) FROM timeline_frag") > 0);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM timeline t LEFT JOIN timeline_frag f"
                           " ON f.id = t.id AND f.pool = 'all' WHERE f.id IS NULL OR f.soft +"
                           " f.hard + f.stream + f.private_pool + f.pending <>"
                           " t.reserved - t.allocated"), 0);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM timeline_frag"),
                    3 * q1(db, "SELECT count(*) FROM timeline"));
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM timeline_frag w WHERE pool = 'all' AND"
                           " (soft, hard, stream, private_pool, pending) <> (SELECT sum(soft),"
                           " sum(hard), sum(stream), sum(private_pool), sum(pending) FROM"
                           " timeline_frag p WHERE p.id = w.id AND p.pool <> 'all')"), 0);
    /* hard attributions never exceed hard */
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM frag_classes f WHERE pool = 'all' AND"
                           " (SELECT coalesce(sum(hard_bytes), 0) FROM frag_hard_tags h WHERE"
                           " h.point = f.point AND h.oom_id IS f.oom_id) > f.hard"), 0);
    int64_t got[5] = {
        q1(db, "SELECT value FROM summary WHERE key = 'soft_bytes_at_peak'"),
        q1(db, "SELECT value FROM summary WHERE key = 'hard_bytes_at_peak'"),
        q1(db, "SELECT value FROM summary WHERE key = 'stream_bytes_at_peak'"),
        q1(db, "SELECT value FROM summary WHERE key = 'pending_bytes_at_peak'"),
        q1(db, "SELECT value FROM summary WHERE key = 'private_pool_bytes_at_peak'")};
    int64_t want[5] = {x->soft_at_peak, x->hard_at_peak, x->stream_at_peak, x->pending_at_peak,
                       x->private_at_peak};
    for (int i = 0; i < 5; i++) {
        if (got[i] != want[i])
            fprintf(stderr, "\n  %s: class %d at peak %lld, expected %lld\n", x->input, i,
                    (long long)got[i], (long long)want[i]);
        CU_ASSERT_EQUAL(got[i], want[i]);
    }
    sqlite3_close(db);
}

static void test_real_runs(void)
{
    static const expect_t runs[] = {
        {"pytorch/gpt2_varlen.pickle", 0, 3628072960, 965348352, 0, 0, 0},
        {"pytorch/resnet50_varbatch.pickle", 0, 1824522240, 765528064, 0, 0, 0},
        {"pytorch/gpt2m_oom_12g.pickle", 1, 0, 21364736, 0, 0, 0},
        {"/sample_traces/gpt2_h200_cap14g.pickle", 1, 50331648, 71566336, 0, 0, 0},
        {"/sample_traces/gpt2_sim_17g_oom.fstrace", 1, 528482304, 311252480, 0, 0, 0},
        {"gpu/gpt2_emptycache.pickle", 0, 419430400, 135598592, 0, 0, 0},
        {"gpu/side_stream.pickle", 0, 2097152, 69206016, 12582912, 100663296, 0},
        /* 19890176 of the free bytes at the peak lie in the CUDA graph's
         * private pool (segment_pool_id (0, 1)): private_pool, not stream */
        {"gpu/graphed.pickle", 0, 20971520, 12550144, 3144704, 0, 19890176},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
        sums_of(&runs[i]);
}

/* The five byte keys add up to reserved_unallocated_bytes in o. */
static int split_sum_ok(const cJSON *o)
{
    static const char *const k[] = {"soft_bytes", "hard_bytes", "stream_bytes",
                                    "private_pool_bytes", "pending_bytes"};
    double sum = 0;
    for (int i = 0; i < 5; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k[i]);
        if (!cJSON_IsNumber(v))
            return 0;
        sum += v->valuedouble;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "reserved_unallocated_bytes");
    return cJSON_IsNumber(t) && t->valuedouble == sum && sum > 0;
}

static void test_report_json(void)
{
    char in[4096], cmd[8192];
    snprintf(in, sizeof in, "%s/sample_traces/gpt2_h200_cap14g.pickle", FSC_SOURCE_DIR);
    sqlite3 *db = analyze(in, "frag_json.db");
    sqlite3_close(db);
    char *out = malloc(1 << 20);
    snprintf(cmd, sizeof cmd, "%s report %s --format json", fsc_test_fragscope(),
             fsc_test_path("frag_json.db"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, 1 << 20, "%s", cmd), 0);
    cJSON *j = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(j, "fragmentation");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(fr, "at_peak");
    CU_ASSERT(split_sum_ok(pk));
    CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(pk, "reserved_unallocated_bytes")->valuedouble,
                    121897984.0);
    CU_ASSERT(split_sum_ok(cJSON_GetObjectItemCaseSensitive(pk, "pools")->child->next));
    CU_ASSERT(split_sum_ok(cJSON_GetObjectItemCaseSensitive(fr, "at_peak_reserved")));
    const cJSON *oom = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ooms"), 0);
    CU_ASSERT(split_sum_ok(oom));
    /* PyTorch's message: "1.66 GiB is reserved by PyTorch but unallocated", all of it pinned */
    CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(oom, "hard_bytes")->valuedouble,
                    1782277120.0);
    CU_ASSERT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(oom, "hard_tags")) > 0);
    /* the old key stays, the plain name beside it */
    CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(fr, "external_at_peak")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(fr, "free_space_scatter_at_peak")->valuedouble);
    cJSON_Delete(j);
    free(out);
}

/* The README's CI example: passes on the healthy shared snapshots, fails on
 * the fragmented OOM runs (the H200 capped run and the demo's run), with
 * the line that says why. */
#define CI_EXAMPLE "--max-frag-ratio 0.6 --max-hard 2GiB --max-hard-at-oom 64MiB"

static void test_ci_example(void)
{
    static const struct {
        const char *input;
        int status;
        const char *line;
    } runs[] = {
        {"pytorch/gpt2_varlen.pickle", 0, "meets 3 thresholds"},
        {"pytorch/resnet50_varbatch.pickle", 0, "meets 3 thresholds"},
        {"/sample_traces/gpt2_h200_cap14g.pickle", 1,
         "1.66 GiB (1782277120 bytes) exceeds --max-hard-at-oom 64.00 MiB"},
        {"/sample_traces/gpt2_sim_17g_oom.fstrace", 1,
         "296.83 MiB (311253504 bytes) exceeds --max-hard-at-oom 64.00 MiB"},
    };
    char out[8192], in[4096], db[4096];
    snprintf(db, sizeof db, "%s", fsc_test_path("frag_ci.db"));
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        if (runs[i].input[0] == '/')
            snprintf(in, sizeof in, "%s%s", FSC_SOURCE_DIR, runs[i].input);
        else
            snprintf(in, sizeof in, "%s", fsc_test_data(runs[i].input));
        sqlite3_close(analyze(in, "frag_ci.db"));
        int rc = fsc_test_sh(out, sizeof out, "%s check %s " CI_EXAMPLE, fsc_test_fragscope(), db);
        if (rc != runs[i].status || strstr(out, runs[i].line) == NULL)
            fprintf(stderr, "\n  %s: status %d: %s\n", runs[i].input, rc, out);
        CU_ASSERT_EQUAL(rc, runs[i].status);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, runs[i].line));
    }
    /* the demo's run: diff against a healthy run shows the split and who pins */
    char base[4096];
    snprintf(base, sizeof base, "%s", fsc_test_path("frag_ci_base.db"));
    sqlite3_close(analyze(fsc_test_data("pytorch/resnet50_varbatch.pickle"), "frag_ci_base.db"));
    fsc_test_sh(out, sizeof out, "%s diff %s %s", fsc_test_fragscope(), base, db);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "  hard (pinned)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "hard at an OOM                          0 B     296.83 MiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "hard at peak pinned most by (base): "));
    /* the pinning tags are named as `report` names them (its hard rows at
     * the peak), the two batch_norm sites told apart */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "hard at peak pinned most by (base): 181.50 MiB "
                                       "functional.py:2846 batch_norm ← batchnorm.py:194 forward "
                                       "… ← resnet.py:275 _forward_impl, 111.50 MiB conv.py:548 "
                                       "_conv_forward ← conv.py:553 forward, 51.20 MiB "
                                       "functional.py:2846 batch_norm ← batchnorm.py:194 forward "
                                       "… ← resnet.py:274 _forward_impl\n"));
    char rep[1 << 15];
    fsc_test_sh(rep, sizeof rep, "%s report %s", fsc_test_fragscope(), base);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep, "  functional.py:2846 batch_norm ← batchnorm.py:194 "
                                       "forward … ← resnet.py:275 _forward_impl\n"));
    /* a database without the split: the check says so, exit 2 */
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "DELETE FROM summary WHERE key = 'max_hard_bytes_at_oom'",
                                 NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    int rc = fsc_test_sh(out, sizeof out, "%s check %s --max-hard-at-oom 1GiB",
                         fsc_test_fragscope(), db);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "no summary.max_hard_bytes_at_oom for --max-hard-at-oom"));
}

/* The HTML page's section, and its note for a database without the split. */
static void test_view_section(void)
{
    char in[4096], db[4096], html[4096], out[4096];
    snprintf(in, sizeof in, "%s/sample_traces/gpt2_h200_cap14g.pickle", FSC_SOURCE_DIR);
    sqlite3_close(analyze(in, "frag_view.db"));
    snprintf(db, sizeof db, "%s", fsc_test_path("frag_view.db"));
    snprintf(html, sizeof html, "%s", fsc_test_path("frag_view.html"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s view %s -o %s", fsc_test_fragscope(), db,
                                html), 0);
    char *s = fsc_test_slurp(html, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    const char *sec = strstr(s, "<section id=\"split\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
    const char *end = strstr(sec, "</section>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    const char *peak = strstr(sec, "allocated peak"), *oom = strstr(sec, "OOM 0</a>");
    CU_ASSERT(peak != NULL && oom != NULL && peak < oom && oom < end);
    /* OOM 0: 1.66 GiB, all of it hard, pinned most by the activations */
    CU_ASSERT_PTR_NOT_NULL(strstr(oom, "<td>1.66 GiB</td><td>13.46 GiB</td><td>0 B</td>"
                                       "<td>1.66 GiB</td>"));
    /* named as report names it, the whole path on hover */
    CU_ASSERT_PTR_NOT_NULL(strstr(oom, "577.86 MiB <span title=\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(oom, "activations.py:66:forward\">activations.py:66 forward "
                                       "\xe2\x86\x90 modeling_gpt2.py:240 forward</span>"));
    free(s);
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "DROP TABLE frag_classes", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s view %s -o %s", fsc_test_fragscope(), db,
                                html), 0);
    s = fsc_test_slurp(html, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "Not recorded: this database was written before"));
    free(s);
}

int main(void)
{
    static const fsc_test_case_t tests[] = {
        {"hand-built run: each class at known bytes", test_hand_built},
        {"expandable segments: whole pages", test_expandable_pages},
        {"incremental split = the layout's, at every event of real runs",
         test_incremental_matches_layout},
        {"real runs: the classes add up at every reported point", test_real_runs},
        {"report JSON: the split at the peaks and at each OOM", test_report_json},
        {"check: the README's CI example, diff", test_ci_example},
        {"view: the split's section", test_view_section},
        {NULL, NULL},
    };
    return fsc_test_run("frag_classes", tests);
}
