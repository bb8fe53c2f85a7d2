/*
 * test_analyzer_events.c — the events view of a run database against the
 * stream that produced it, on real inputs: the PyTorch snapshots of
 * tests/data/pytorch and recorded traces. The view is rebuilt from blocks
 * (an allocation's lifetime with its folded SPLIT and MERGEs) and
 * events_other; the property checked is that it gives back every event
 * exactly once, at its own seq, with its type, address, size and time: seq
 * unique and dense, the SPLIT rows equal to the summary's `splits`, and
 * blocks.split_* set only on rows whose alloc_seq − 1 really is a SPLIT of
 * that block.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"
#include "fsc_test.h"

typedef struct src_ev {
    uint8_t type;
    uint64_t addr, size, time;
} src_ev_t;

typedef struct stream {
    src_ev_t *v;
    size_t n, cap;
    uint64_t splits;
} stream_t;

static int push(stream_t *s, const fsc_event_t *ev)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 4096;
        src_ev_t *nv = realloc(s->v, nc * sizeof *nv);
        if (nv == NULL)
            return FSC_ENOMEM;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = (src_ev_t){ev->type, ev->addr, ev->size, ev->time_ns};
    if (ev->type == FSC_EV_SPLIT)
        s->splits++;
    return 0;
}

static int sink_header(void *ud, const fsc_trace_header_t *hdr)
{
    (void)ud;
    (void)hdr;
    return 0;
}

static int sink_tag(void *ud, uint32_t parent, const char *name, size_t len, uint32_t *node)
{
    (void)ud;
    (void)parent;
    (void)name;
    (void)len;
    *node = 1; /* tags are not compared */
    return 0;
}

static int sink_event(void *ud, const fsc_event_t *ev)
{
    return push(ud, ev);
}

static void load_snapshot(const char *path, stream_t *s)
{
    fsc_import_sink_t sink = {s, sink_header, sink_tag, sink_event};
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_pytorch_import(path, NULL, &sink, NULL, &err), 0);
}

static void load_trace(const char *path, stream_t *s)
{
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(path, &r, &err), 0);
    fsc_event_t ev;
    int got;
    while ((got = fsc_trace_next(r, &ev)) == 1)
        CU_ASSERT_EQUAL_FATAL(push(s, &ev), 0);
    CU_ASSERT_EQUAL(got, 0);
    fsc_trace_close(r);
}

static int64_t scalar(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Analyze input with the fragscope binary and compare the view with s. */
static void check_view(const char *input, const stream_t *s)
{
    const char *db_path = fsc_test_path("events.db");
    char out[4096];
    int st = fsc_test_sh(out, sizeof out, "%s analyze --no-suggest %s -o %s",
                         fsc_test_fragscope(), input, db_path);
    if (st != 0)
        fprintf(stderr, "%s\n", out);
    CU_ASSERT_EQUAL_FATAL(st, 0);
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);

    CU_ASSERT_EQUAL(scalar(db, "SELECT COUNT(*) FROM events"), (int64_t)s->n);
    CU_ASSERT_EQUAL(scalar(db, "SELECT COUNT(DISTINCT seq) FROM events"), (int64_t)s->n);
    CU_ASSERT_EQUAL(scalar(db, "SELECT MIN(seq) FROM events"), 0);
    CU_ASSERT_EQUAL(scalar(db, "SELECT MAX(seq) FROM events"), (int64_t)s->n - 1);
    CU_ASSERT_EQUAL(scalar(db, "SELECT COUNT(*) FROM events WHERE type = 8"), (int64_t)s->splits);
    CU_ASSERT_EQUAL(scalar(db, "SELECT value FROM summary WHERE key = 'splits'"),
                    (int64_t)s->splits);

    sqlite3_stmt *q = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, "SELECT seq, type, addr, size, time_ns FROM "
                                             "events ORDER BY seq, type", -1, &q, NULL),
                          SQLITE_OK);
    size_t i = 0, bad = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(q, 0);
        if (i >= s->n || seq != (int64_t)i) {
            bad++;
            if (bad <= 3)
                fprintf(stderr, "%s: row %zu has seq %lld\n", input, i, (long long)seq);
            i++;
            continue;
        }
        const src_ev_t *e = &s->v[i];
        int type = sqlite3_column_int(q, 1);
        uint64_t addr = (uint64_t)sqlite3_column_int64(q, 2);
        uint64_t time = (uint64_t)sqlite3_column_int64(q, 4);
        /* A FREE_REQUESTED may leave its size to the block (0 = the block's). */
        int size_ok = sqlite3_column_type(q, 3) == SQLITE_NULL
                          ? e->size == 0
                          : (uint64_t)sqlite3_column_int64(q, 3) == e->size ||
                                (e->size == 0 && type == FSC_EV_FREE_REQUESTED);
        if (type != e->type || addr != e->addr || time != e->time || !size_ok) {
            bad++;
            if (bad <= 3)
                fprintf(stderr, "%s: seq %zu: view has type %d addr %llx, stream type %d "
                                "addr %llx\n", input, i, type, (unsigned long long)addr,
                        e->type, (unsigned long long)e->addr);
        }
        i++;
    }
    sqlite3_finalize(q);
    CU_ASSERT_EQUAL(i, s->n);
    CU_ASSERT_EQUAL(bad, 0);

    /* blocks.split_* only where the event before the allocation is its SPLIT */
    CU_ASSERT_EQUAL(scalar(db, "SELECT COUNT(*) FROM blocks WHERE split_size IS NOT NULL"),
                    scalar(db, "SELECT COUNT(*) FROM events WHERE type = 8") -
                        scalar(db, "SELECT COUNT(*) FROM events_other WHERE type = 8"));
    sqlite3_close(db);
}

static void check_snapshot(const char *name)
{
    stream_t s = {0};
    const char *path = fsc_test_data(name);
    load_snapshot(path, &s);
    CU_ASSERT_TRUE(s.n > 0);
    check_view(path, &s);
    free(s.v);
}

static void check_trace(const char *path)
{
    stream_t s = {0};
    load_trace(path, &s);
    CU_ASSERT_TRUE(s.n > 0);
    check_view(path, &s);
    free(s.v);
}

static void test_gpt2_varlen(void) { check_snapshot("pytorch/gpt2_varlen.pickle"); }
static void test_gpt2m_oom(void) { check_snapshot("pytorch/gpt2m_oom_12g.pickle"); }
static void test_resnet50(void) { check_snapshot("pytorch/resnet50_varbatch.pickle"); }
static void test_small_snapshots(void)
{
    check_snapshot("pytorch/tiny.json");
    check_snapshot("pytorch/expandable.pickle");
    check_snapshot("pytorch/midrun.pickle");
}

static void test_recorded_traces(void)
{
    check_trace(FSC_SOURCE_DIR "/sample_traces/gpt2_h200_shim.fstrace");
    check_trace(FSC_SOURCE_DIR "/sample_traces/resnet_sim.fstrace");
}

/* A trace the allocator simulator records now: caching reuses freed blocks
 * at the same address, with and without a split, again and again. */
static void test_simulated_trace(void)
{
    const char *t = fsc_test_path("sim.fstrace");
    char out[4096];
    int st = fsc_test_sh(out, sizeof out, "%s simulate --workload gpt2 --steps 3 -o %s",
                         fsc_test_fragscope(), t);
    if (st != 0)
        fprintf(stderr, "%s\n", out);
    CU_ASSERT_EQUAL_FATAL(st, 0);
    check_trace(t);
}

static const fsc_test_case_t k_tests[] = {
    {"gpt2_varlen snapshot: every event once", test_gpt2_varlen},
    {"gpt2m_oom_12g snapshot: every event once", test_gpt2m_oom},
    {"resnet50_varbatch snapshot: every event once", test_resnet50},
    {"small snapshots: every event once", test_small_snapshots},
    {"recorded traces: every event once", test_recorded_traces},
    {"simulated trace: every event once", test_simulated_trace},
    {NULL, NULL},
};

FSC_TEST_MAIN("analyzer_events", k_tests)
