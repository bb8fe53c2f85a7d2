/*
 * test_native.c — the native recorder's conversion of PyTorch trace
 * entries into a trace (fragscope/native.h), on synthetic entries: no
 * torch here. What the tracker gets on a GPU is checked there
 * (docs/native.md, "Testing on the GPU").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/analyzer.h"
#include "fragscope/native.h"
#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"
#include "fragscope/source.h"
#include "fragscope/whatif.h"
#include "fsc_test.h"
#include "fsc_test_gpu.h"

#define MiB (1024ull * 1024)

static fsc_native_t *open_native(const char *path, int devices)
{
    fsc_native_opts_t o;
    memset(&o, 0, sizeof o);
    o.path = path;
    o.devices = devices;
    o.producer = "fragscope test native";
    o.flush_interval_ms = 1;
    fsc_native_t *n = NULL;
    fsc_err_t err = {0, ""};
    int rc = fsc_native_open(&o, &n, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", fsc_err_msg(&err));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return n;
}

static void begin(fsc_native_t *n, int device, uint64_t capacity,
                  const fsc_native_segment_t *segs, size_t nsegs)
{
    fsc_native_device_t d;
    memset(&d, 0, sizeof d);
    d.device = device;
    d.name = "Test GPU";
    d.total = 80ull << 30;
    d.free = 79ull << 30;
    d.capacity = capacity;
    d.config = "";
    d.segments = segs;
    d.nsegments = nsegs;
    fsc_err_t err = {0, ""};
    int rc = fsc_native_begin_device(n, &d, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", fsc_err_msg(&err));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static uint64_t g_time = 1000;

static void push(fsc_native_t *n, int device, int action, uint64_t addr, uint64_t size)
{
    fsc_native_entry_t e;
    memset(&e, 0, sizeof e);
    e.action = (uint8_t)action;
    e.device = (uint16_t)device;
    e.tag = fsc_tag_current();
    e.addr = addr;
    e.size = size;
    e.time = g_time += 1000;
    fsc_native_push(n, &e);
}

typedef struct got {
    fsc_event_t ev[64];
    char text[64][64];
    int n;
    fsc_trace_header_t hdr;
    char config[64], backend[64];
} got_t;

static void read_trace(const char *path, got_t *g)
{
    memset(g, 0, sizeof *g);
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(path, &r, &err), 0);
    g->hdr = *fsc_trace_header(r);
    snprintf(g->backend, sizeof g->backend, "%s", g->hdr.backend);
    fsc_event_t ev;
    while (fsc_trace_next(r, &ev) == 1 && g->n < 64) {
        if (ev.type == FSC_EV_MARKER && ev.text != NULL)
            snprintf(g->text[g->n], sizeof g->text[0], "%.*s", (int)ev.text_len, ev.text);
        ev.text = NULL;
        g->ev[g->n++] = ev;
    }
    fsc_trace_integrity_t in;
    fsc_trace_get_integrity(r, &in);
    CU_ASSERT_TRUE(in.clean_close);
    fsc_trace_close(r);
}

/* The entries of a small step become the events the importer would make:
 * splits where PyTorch split, merges on the free, the OOM with the cap. */
static void test_entries_to_events(void)
{
    const char *path = fsc_test_path("n1.fstrace");
    fsc_native_t *n = open_native(path, 1);
    begin(n, 0, 40ull << 30, NULL, 0);
    push(n, 0, FSC_NATIVE_SEGMENT_ALLOC, 0x7f0000000000ull, 20 * MiB);
    push(n, 0, FSC_NATIVE_ALLOC, 0x7f0000000000ull, 3 * MiB - 100);
    push(n, 0, FSC_NATIVE_ALLOC, 0x7f0000300000ull, 5 * MiB);
    push(n, 0, FSC_NATIVE_FREE_REQUESTED, 0x7f0000000000ull, 3 * MiB - 100);
    push(n, 0, FSC_NATIVE_FREE_COMPLETED, 0x7f0000000000ull, 3 * MiB - 100);
    fsc_native_entry_t oom;
    memset(&oom, 0, sizeof oom);
    oom.action = FSC_NATIVE_OOM;
    oom.addr = 123 * MiB; /* device_free */
    oom.size = 64 * MiB;
    oom.time = g_time += 1000;
    fsc_native_push(n, &oom);
    CU_ASSERT_EQUAL(fsc_native_flush(n), 0);
    fsc_native_stats_t st;
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 6);
    CU_ASSERT_EQUAL(st.contradicted, 0);
    CU_ASSERT_EQUAL(st.dropped, 0);
    CU_ASSERT_STRING_EQUAL(fsc_native_trace_path(n, 0), path);
    fsc_native_destroy(n);

    got_t g;
    read_trace(path, &g);
    CU_ASSERT_EQUAL(g.hdr.capacity, 40ull << 30);
    CU_ASSERT_EQUAL(g.hdr.device_total, 80ull << 30);
    CU_ASSERT_FALSE(g.hdr.flags & FSC_TRACE_F_RECONSTRUCTED);
    CU_ASSERT_FALSE(g.hdr.flags & FSC_TRACE_F_CAPACITY_UNKNOWN);
    CU_ASSERT_STRING_EQUAL(g.backend, "cuda:0 Test GPU");
    static const uint8_t want[] = {FSC_EV_DEVICE_MEMORY, FSC_EV_SEGMENT_ALLOC, FSC_EV_SPLIT,
                                   FSC_EV_ALLOC,         FSC_EV_SPLIT,        FSC_EV_ALLOC,
                                   FSC_EV_FREE_REQUESTED, FSC_EV_FREE_COMPLETED, FSC_EV_OOM};
    CU_ASSERT_EQUAL_FATAL(g.n, (int)sizeof want);
    for (int i = 0; i < g.n; i++)
        CU_ASSERT_EQUAL(g.ev[i].type, want[i]);
    CU_ASSERT_EQUAL(g.ev[0].oom.device_free, 79ull << 30);
    CU_ASSERT_EQUAL(g.ev[3].size, 3 * MiB);     /* block size: the rounded request */
    CU_ASSERT_EQUAL(g.ev[3].requested, 3 * MiB - 100);
    CU_ASSERT_EQUAL(g.ev[5].addr, 0x7f0000300000ull);
    CU_ASSERT_EQUAL(g.ev[5].size, 5 * MiB);
    const fsc_event_t *o = &g.ev[8];
    CU_ASSERT_EQUAL(o->size, 64 * MiB);
    CU_ASSERT_EQUAL(o->oom.device_free, 123 * MiB);
    CU_ASSERT_EQUAL(o->oom.capacity, 40ull << 30);
    CU_ASSERT_EQUAL(o->oom.device_total, 80ull << 30);
    CU_ASSERT_EQUAL(o->oom.allocated, 5 * MiB);
    CU_ASSERT_EQUAL(o->oom.reserved, 20 * MiB);
    CU_ASSERT_EQUAL(o->oom.segment_size, 64 * MiB);
    /* times follow the entries' */
    for (int i = 2; i < g.n; i++)
        CU_ASSERT_TRUE(g.ev[i].time_ns >= g.ev[i - 1].time_ns);
}

/* A snapshot's JSON text written as NAME.json and imported; the trace's path. */
static const char *import_json(const char *js, const char *name)
{
    char file[64];
    snprintf(file, sizeof file, "%s.json", name);
    const char *snap = fsc_test_path(file);
    FILE *f = fopen(snap, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(js, f);
    fclose(f);
    snprintf(file, sizeof file, "%s.import.fstrace", name);
    const char *imp = fsc_test_path(file);
    char out[4096];
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s import %s -o %s", fsc_test_fragscope(),
                                      snap, imp),
                          0);
    return imp;
}

/* The same entries through the snapshot importer give the same events:
 * one block model for both (pytorch_blocks.c). */
static void test_same_as_snapshot(void)
{
    const char *path = fsc_test_path("n2.fstrace");
    fsc_native_t *n = open_native(path, 1);
    begin(n, 0, 0, NULL, 0);
    static const struct { int act; uint64_t addr, size; } h[] = {
        {FSC_NATIVE_SEGMENT_ALLOC, 0x10000000, 2 * MiB},
        {FSC_NATIVE_ALLOC, 0x10000000, 1000},
        {FSC_NATIVE_ALLOC, 0x10000400, 70000},
        {FSC_NATIVE_SEGMENT_ALLOC, 0x20000000, 20 * MiB},
        {FSC_NATIVE_ALLOC, 0x20000000, 1536 * 1024},
        {FSC_NATIVE_ALLOC, 0x20180000, 12 * MiB + 1},
        {FSC_NATIVE_FREE_REQUESTED, 0x10000000, 1000},
        {FSC_NATIVE_FREE_COMPLETED, 0x10000000, 1000},
        {FSC_NATIVE_FREE_REQUESTED, 0x20000000, 1536 * 1024},
        {FSC_NATIVE_FREE_REQUESTED, 0x20180000, 12 * MiB + 1},
        {FSC_NATIVE_FREE_COMPLETED, 0x20180000, 12 * MiB + 1},
        {FSC_NATIVE_FREE_COMPLETED, 0x20000000, 1536 * 1024},
        {FSC_NATIVE_SEGMENT_FREE, 0x20000000, 20 * MiB},
    };
    static const char *const names[] = {"alloc", "free_requested", "free_completed",
                                        "segment_alloc", "segment_free"};
    size_t nh = sizeof h / sizeof h[0];
    char *js = malloc(8192);
    size_t w = (size_t)snprintf(js, 8192, "{\"segments\": [{\"device\": 0, \"address\": %d, "
                                "\"total_size\": %llu, \"stream\": 0, \"segment_type\": \"small\", "
                                "\"blocks\": [{\"address\": %d, \"size\": 1024, \"requested_size\":"
                                " 1000, \"state\": \"inactive\"}, {\"address\": %d, \"size\": "
                                "70144, \"requested_size\": 70000, \"state\": \"active_allocated\"},"
                                " {\"address\": %d, \"size\": %llu, \"state\": \"inactive\"}]}], "
                                "\"device_traces\": [[",
                                0x10000000, 2 * MiB, 0x10000000, 0x10000400, 0x10000400 + 70144,
                                2 * MiB - 1024 - 70144);
    for (size_t i = 0; i < nh; i++) {
        push(n, 0, h[i].act, h[i].addr, h[i].size);
        w += (size_t)snprintf(js + w, 8192 - w,
                              "%s{\"action\": \"%s\", \"addr\": %llu, \"size\": %llu, "
                              "\"stream\": 0, \"time_us\": %zu}",
                              i ? ", " : "", names[h[i].act], (unsigned long long)h[i].addr,
                              (unsigned long long)h[i].size, 1000 + i);
    }
    snprintf(js + w, 8192 - w, "]]}");
    fsc_native_destroy(n);
    const char *imp = import_json(js, "n2");
    free(js);
    got_t a, b;
    read_trace(path, &a);
    read_trace(imp, &b);
    /* the import's records are markers of its own; the native trace has a
     * device sample first */
    int i = 0, j = 0, same = 0, compared = 0;
    for (;;) {
        while (i < a.n && (a.ev[i].type == FSC_EV_DEVICE_MEMORY || a.ev[i].type == FSC_EV_MARKER))
            i++;
        while (j < b.n && b.ev[j].type == FSC_EV_MARKER)
            j++;
        if (i >= a.n || j >= b.n)
            break;
        compared++;
        same += a.ev[i].type == b.ev[j].type && a.ev[i].addr == b.ev[j].addr &&
                a.ev[i].size == b.ev[j].size && a.ev[i].requested == b.ev[j].requested &&
                a.ev[i].other == b.ev[j].other;
        i++;
        j++;
    }
    CU_ASSERT_EQUAL(compared, 19); /* 2 segments, 4 splits, 4 allocs, 3 + 3 frees, 2 merges, 1 segment free */
    CU_ASSERT_EQUAL(same, compared);
    CU_ASSERT_EQUAL(i, a.n);
    CU_ASSERT_EQUAL(j, b.n);
}

/* Attached after CUDA work began: the state the allocator is in comes
 * first, and what-if replays the rest from it exactly. */
static void test_start_state(void)
{
    const char *path = fsc_test_path("n3.fstrace");
    static const fsc_native_block_t b1[] = {
        {0x30000000, 4 * MiB, 4 * MiB - 7, 1, 0, 0},
        {0x30400000, 6 * MiB, 0, 0, 0, 0},
        {0x30a00000, 2 * MiB, 2 * MiB, 0, 1, 0},
        {0x30c00000, 8 * MiB, 0, 0, 0, 0},
    };
    static const fsc_native_block_t b2[] = {
        {0x40000000, 512, 100, 1, 0, 0},
        {0x40000200, 2 * MiB - 512, 0, 0, 0, 0},
    };
    fsc_native_segment_t segs[] = {
        {0x40000000, 2 * MiB, 0, 0, 0, 0, b2, 2},
        {0x30000000, 20 * MiB, 0, 0, 1, 0, b1, 4},
    };
    fsc_native_t *n = open_native(path, 1);
    begin(n, 0, 0, segs, 2);
    fsc_tag_push("train");
    fsc_tag_push("layer.3");
    push(n, 0, FSC_NATIVE_FREE_COMPLETED, 0x30a00000, 2 * MiB);
    push(n, 0, FSC_NATIVE_ALLOC, 0x30400000, 5 * MiB);       /* best fit: the 6 MiB hole */
    push(n, 0, FSC_NATIVE_ALLOC, 0x30a00000 - 1 * MiB, 2 * MiB); /* the rest + the freed 2 MiB */
    fsc_tag_pop();
    fsc_tag_pop();
    push(n, 0, FSC_NATIVE_FREE_REQUESTED, 0x30000000, 4 * MiB - 7);
    push(n, 0, FSC_NATIVE_FREE_COMPLETED, 0x30000000, 4 * MiB - 7);
    fsc_native_stats_t st;
    fsc_native_flush(n);
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.contradicted, 0);
    if (st.contradicted)
        fprintf(stderr, "%s\n", st.message);
    fsc_native_destroy(n);
    got_t g;
    read_trace(path, &g);
    CU_ASSERT_TRUE(g.hdr.flags & FSC_TRACE_F_RECONSTRUCTED);
    int marker = -1;
    for (int i = 0; i < g.n; i++)
        if (g.ev[i].type == FSC_EV_MARKER && strcmp(g.text[i], FSC_TRACE_HISTORY_MARKER) == 0)
            marker = i;
    CU_ASSERT_TRUE(marker > 0);
    /* what-if replays the window from that state, every address as recorded */
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_request_stream_load(path, &rs, &err), 0);
    fsc_whatif_verify_t v;
    CU_ASSERT_EQUAL(fsc_whatif_verify(rs, NULL, &v, &err), 0);
    CU_ASSERT_TRUE(v.match);
    CU_ASSERT_EQUAL(v.allocs_compared, 2);
    CU_ASSERT_EQUAL(v.alloc_addr_matches, 2);
    fsc_request_stream_info_t in;
    fsc_request_stream_info(rs, &in);
    CU_ASSERT_TRUE(in.window);
    CU_ASSERT_EQUAL(in.start_reserved, 22 * MiB);
    CU_ASSERT_EQUAL(in.start_blocks, 3);
    fsc_request_stream_destroy(rs);
    /* the tags of the allocating thread name the events */
    const char *db = fsc_test_path("n3.db");
    char out[1 << 14];
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", fsc_test_fragscope(),
                                      path, db),
                          0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                "sqlite3 %s \"SELECT p.path FROM blocks b JOIN tag_paths p ON "
                                "p.id = b.tag WHERE b.addr = %d AND b.size = %llu\"",
                                db, 0x30400000, 5 * MiB),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "train/layer.3"));
}

typedef struct prod {
    fsc_native_t *n;
    int device;
    int pairs;
} prod_t;

static void *producer(void *arg)
{
    prod_t *p = arg;
    uint64_t base = 0x100000000ull * (uint64_t)(p->device + 1);
    fsc_native_entry_t e;
    memset(&e, 0, sizeof e);
    e.device = (uint16_t)p->device;
    e.action = FSC_NATIVE_SEGMENT_ALLOC;
    e.addr = base;
    e.size = 20 * MiB;
    fsc_native_push(p->n, &e);
    for (int i = 0; i < p->pairs; i++) {
        e.addr = base;
        e.size = (uint64_t)(i % 7 + 2) * MiB;
        e.time = (uint64_t)i;
        e.action = FSC_NATIVE_ALLOC;
        fsc_native_push(p->n, &e);
        e.action = FSC_NATIVE_FREE_REQUESTED;
        fsc_native_push(p->n, &e);
        e.action = FSC_NATIVE_FREE_COMPLETED;
        fsc_native_push(p->n, &e);
    }
    return NULL;
}

/* Two devices, each from its own thread, while the recorder's thread
 * converts: every entry arrives, in order, in its device's trace. */
static void test_two_devices(void)
{
    const char *path = fsc_test_path("two.fstrace");
    fsc_native_t *n = open_native(path, 2);
    begin(n, 1, 0, NULL, 0); /* the first to begin takes the path */
    begin(n, 0, 0, NULL, 0);
    CU_ASSERT_STRING_EQUAL(fsc_native_trace_path(n, 1), path);
    CU_ASSERT_STRING_EQUAL(fsc_native_trace_path(n, 0), fsc_test_path("two.dev0.fstrace"));
    prod_t p[2] = {{n, 0, 50000}, {n, 1, 50000}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, producer, &p[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    /* an entry of a device beyond the range is dropped, not a crash */
    push(n, 5, FSC_NATIVE_ALLOC, 0x1000, 512);
    fsc_native_stats_t st;
    fsc_native_flush(n);
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 2 * (1 + 3 * 50000));
    CU_ASSERT_EQUAL(st.contradicted, 0);
    CU_ASSERT_EQUAL(st.dropped, 1);
    CU_ASSERT_EQUAL(fsc_native_close(n), 0);
    fsc_native_destroy(n);
    for (int d = 0; d < 2; d++) {
        fsc_analysis_summary_t sum;
        fsc_analyze_opts_t ao;
        memset(&ao, 0, sizeof ao);
        fsc_err_t err = {0, ""};
        const char *tr = d == 1 ? path : fsc_test_path("two.dev0.fstrace");
        CU_ASSERT_EQUAL_FATAL(fsc_analyze_file(tr, fsc_test_path(d ? "two1.db" : "two0.db"), &ao,
                                               &sum, NULL, &err),
                              0);
        CU_ASSERT_EQUAL(sum.peak_reserved, 20 * MiB);
        CU_ASSERT_EQUAL(sum.peak_allocated, 8 * MiB);
        CU_ASSERT_EQUAL(sum.warnings, 0);
    }
}

/* The tag paths of a trace's alloc events, in order. */
static int alloc_paths(const char *path, char paths[][512], int max)
{
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(path, &r, &err), 0);
    fsc_event_t ev;
    int k = 0;
    while (fsc_trace_next(r, &ev) == 1 && k < max)
        if (ev.type == FSC_EV_ALLOC)
            fsc_trace_tag_path(r, ev.tag, paths[k++], 512);
    fsc_trace_close(r);
    return k;
}

static void push_flagged(fsc_native_t *n, int action, uint64_t addr, uint64_t size, int stack)
{
    fsc_native_entry_t e;
    memset(&e, 0, sizeof e);
    e.action = (uint8_t)action;
    e.flags = stack ? FSC_NATIVE_F_STACK : 0;
    e.tag = fsc_tag_current();
    e.addr = addr;
    e.size = size;
    e.time = g_time += 1000;
    CU_ASSERT_EQUAL(fsc_native_push(n, &e), 1);
}

#define FR(file, line, fn) {file, sizeof file - 1, fn, sizeof fn - 1, line}

/* With _record_memory_history(stacks=...) on, an entry's stack comes after
 * the entry: the device's later entries wait for it, then each event is
 * tagged with its frames below the thread's tag, named as a snapshot's
 * import names the same frames. */
static void test_stacks(void)
{
    static const fsc_native_frame_t s_init[] = {FR("model.py", 7, "init"),
                                                FR("train.py", 3, "<module>")};
    static const fsc_native_frame_t s_fwd[] = {FR("gen.py", UINT64_MAX, "kernel"),
                                               FR("", 0, "at::empty"),
                                               FR("model.py", 12, "forward"),
                                               FR("train.py", 3, "<module>")};
    static const fsc_native_frame_t s_bwd[] = {FR("model.py", 20, "backward"),
                                               FR("train.py", 3, "<module>")};
    fsc_native_block_t b[] = {{0x50000000, 512, 100, 1, 0, 0}, {0x50000200, 2 * MiB - 512, 0, 0, 0, 0}};
    b[0].tag = fsc_native_stack_node(s_init, 2);
    CU_ASSERT_NOT_EQUAL(b[0].tag, 0);
    fsc_native_segment_t seg = {0x50000000, 2 * MiB, 0, 0, 0, 0, b, 2};
    const char *path = fsc_test_path("stk.fstrace");
    fsc_native_t *n = open_native(path, 1);
    begin(n, 0, 0, &seg, 1);
    push_flagged(n, FSC_NATIVE_SEGMENT_ALLOC, 0x60000000, 20 * MiB, 0);
    push_flagged(n, FSC_NATIVE_ALLOC, 0x60000000, 1 * MiB, 1);
    push_flagged(n, FSC_NATIVE_ALLOC, 0x60100000, 2 * MiB, 0);
    fsc_tag_push("step");
    push_flagged(n, FSC_NATIVE_ALLOC, 0x60300000, 3 * MiB, 1);
    fsc_tag_pop();
    fsc_native_stats_t st;
    CU_ASSERT_EQUAL(fsc_native_flush(n), 0);
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 1); /* the rest waits for the first stack */
    uint32_t s1 = fsc_native_stack_node(s_fwd, 4);
    CU_ASSERT_EQUAL(fsc_native_stacks(n, 0, &s1, 1), 0);
    CU_ASSERT_EQUAL(fsc_native_flush(n), 0);
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 3);
    uint32_t s2 = fsc_native_stack_node(s_bwd, 2);
    CU_ASSERT_EQUAL(fsc_native_stacks(n, 0, &s2, 1), 0);
    /* a stack that never comes: written at close with the thread's tag */
    push_flagged(n, FSC_NATIVE_ALLOC, 0x60600000, 4 * MiB, 1);
    CU_ASSERT_EQUAL(fsc_native_stacks(n, 1, &s2, 1), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_native_close(n), 0);
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 5);
    CU_ASSERT_EQUAL(st.unnamed_stacks, 1);
    CU_ASSERT_EQUAL(st.contradicted, 0);
    fsc_native_destroy(n);
    char p[8][512];
    CU_ASSERT_EQUAL_FATAL(alloc_paths(path, p, 8), 5);
    CU_ASSERT_STRING_EQUAL(p[0], "train.py:3:<module>/model.py:7:init");
    CU_ASSERT_STRING_EQUAL(p[1], "train.py:3:<module>/model.py:12:forward/at::empty/gen.py:?:kernel");
    CU_ASSERT_STRING_EQUAL(p[2], "");
    CU_ASSERT_STRING_EQUAL(p[3], "step/train.py:3:<module>/model.py:20:backward");
    CU_ASSERT_STRING_EQUAL(p[4], "");

    /* the same frames in a snapshot import to the same tags */
    char js[1024];
    snprintf(js, sizeof js,
             "{\"segments\": [], \"device_traces\": [[{\"action\": \"segment_alloc\", \"addr\": "
             "%d, \"size\": %llu, \"stream\": 0, \"time_us\": 1}, {\"action\": \"alloc\", "
             "\"addr\": %d, \"size\": %llu, \"stream\": 0, \"time_us\": 2, \"frames\": ["
             "{\"filename\": \"gen.py\", \"line\": 18446744073709551615, \"name\": \"kernel\"}, "
             "{\"filename\": \"\", \"line\": 0, \"name\": \"at::empty\"}, "
             "{\"filename\": \"model.py\", \"line\": 12, \"name\": \"forward\"}, "
             "{\"filename\": \"train.py\", \"line\": 3, \"name\": \"<module>\"}]}]]}",
             0x60000000, 20 * MiB, 0x60000000, 1 * MiB);
    const char *imp = import_json(js, "stk");
    char q[2][512];
    CU_ASSERT_EQUAL_FATAL(alloc_paths(imp, q, 2), 1);
    CU_ASSERT_STRING_EQUAL(q[0], p[1]);
}

/* An entry the model cannot place is counted and named, and the rest of
 * the trace stays good; a device that never began drops its entries. */
static void test_contradiction(void)
{
    const char *path = fsc_test_path("bad.fstrace");
    fsc_native_t *n = open_native(path, 2);
    begin(n, 0, 0, NULL, 0);
    push(n, 0, FSC_NATIVE_SEGMENT_ALLOC, 0x50000000, 2 * MiB);
    push(n, 0, FSC_NATIVE_FREE_COMPLETED, 0x51000000, 512);
    push(n, 0, FSC_NATIVE_ALLOC, 0x50000000, 512);
    push(n, 1, FSC_NATIVE_ALLOC, 0x60000000, 512);
    fsc_native_flush(n);
    fsc_native_stats_t st;
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.contradicted, 1);
    CU_ASSERT_EQUAL(st.dropped, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "free_completed at 0x51000000"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "no allocated block starts at this address"));
    fsc_native_destroy(n);
    got_t g;
    read_trace(path, &g);
    CU_ASSERT_EQUAL(g.n, 4); /* sample, segment, split, alloc */
}

/* The skips the trace at path says, read to its end. */
static void trace_skips(const char *path, fsc_trace_skips_t *out, uint64_t *events)
{
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(path, &r, &err), 0);
    fsc_event_t ev;
    while (fsc_trace_next(r, &ev) == 1)
        ;
    fsc_trace_integrity_t in;
    fsc_trace_get_integrity(r, &in);
    CU_ASSERT_TRUE(in.clean_close);
    *out = in.skipped;
    *events = in.events;
    fsc_trace_close(r);
}

/* Every entry the recorder cannot place or keep is counted by kind, the
 * first 8 are described, the trace says so, and every command that reads
 * it says so too: analyze warns, info and report show the counts in words
 * and JSON, whatif --verify does not call the replay faithful (exit 1). */
static void test_skips_by_kind(void)
{
    const char *path = fsc_test_path("skips.fstrace");
    fsc_native_t *n = open_native(path, 2);
    begin(n, 0, 0, NULL, 0);
    push(n, 0, FSC_NATIVE_SEGMENT_ALLOC, 0x50000000, 2 * MiB);    /* 0 */
    push(n, 0, 42, 0x50000000, 512);                              /* 1 unknown action */
    push(n, 0, FSC_NATIVE_FREE_COMPLETED, 0x51000000, 512);       /* 2 free, unknown */
    push(n, 0, FSC_NATIVE_SEGMENT_UNMAP, 0x70000000, 20 * MiB);   /* 3 unmap, unmapped */
    push(n, 0, FSC_NATIVE_SEGMENT_FREE, 0x71000000, 2 * MiB);     /* 4 no such segment */
    push(n, 0, FSC_NATIVE_ALLOC, 0x50000000, 0);                  /* 5 size 0 */
    push(n, 0, FSC_NATIVE_ALLOC, 0x50000000, 1ull << 60);         /* 6 absurd */
    push(n, 0, FSC_NATIVE_ALLOC, 0x90000000, 512);                /* 7 outside every segment */
    push(n, 0, FSC_NATIVE_ALLOC, 0x50000000, 512);                /* 8 fine */
    push(n, 0, FSC_NATIVE_FREE_REQUESTED, 0x50000000, 512);       /* 9 fine */
    push(n, 0, FSC_NATIVE_FREE_COMPLETED, 0x50000000, 512);       /* 10 fine */
    push(n, 1, FSC_NATIVE_ALLOC, 0x60000000, 512);                /* device 1 never began */
    push(n, 7, FSC_NATIVE_ALLOC, 0x60000000, 512);                /* device 7 out of range */
    CU_ASSERT_EQUAL(fsc_native_flush(n), 0);
    fsc_native_stats_t st;
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 11);
    CU_ASSERT_EQUAL(st.contradicted, 7);
    CU_ASSERT_EQUAL(st.dropped, 2);
    CU_ASSERT_EQUAL(st.skipped.total, 9);
    static const uint64_t want[FSC_TRACE_SKIP_KINDS] = {
        [FSC_TRACE_SKIP_UNKNOWN_ACTION] = 1, [FSC_TRACE_SKIP_FREE_UNKNOWN] = 1,
        [FSC_TRACE_SKIP_UNMAP_UNMAPPED] = 1, [FSC_TRACE_SKIP_SEGMENT_UNKNOWN] = 1,
        [FSC_TRACE_SKIP_ZERO_SIZE] = 1,      [FSC_TRACE_SKIP_ABSURD_SIZE] = 1,
        [FSC_TRACE_SKIP_CONTRADICTED] = 1,   [FSC_TRACE_SKIP_NO_MEMORY] = 0,
        [FSC_TRACE_SKIP_NOT_BEGUN] = 2};
    for (int k = 0; k < FSC_TRACE_SKIP_KINDS; k++)
        CU_ASSERT_EQUAL(st.skipped.by_kind[k], want[k]);
    CU_ASSERT_EQUAL(fsc_native_close(n), 0);
    fsc_native_destroy(n);

    /* the trace holds the same counts, and the first 8 entries described */
    fsc_trace_skips_t sk;
    uint64_t events = 0;
    trace_skips(path, &sk, &events);
    CU_ASSERT_EQUAL(events, 6); /* segment, split, alloc, free requested/completed, merge */
    CU_ASSERT_EQUAL(sk.total, 9);
    for (int k = 0; k < FSC_TRACE_SKIP_KINDS; k++)
        CU_ASSERT_EQUAL(sk.by_kind[k], want[k]);
    CU_ASSERT_EQUAL_FATAL(sk.nshown, 8);
    static const uint32_t kinds[8] = {
        FSC_TRACE_SKIP_UNKNOWN_ACTION, FSC_TRACE_SKIP_FREE_UNKNOWN, FSC_TRACE_SKIP_UNMAP_UNMAPPED,
        FSC_TRACE_SKIP_SEGMENT_UNKNOWN, FSC_TRACE_SKIP_ZERO_SIZE,   FSC_TRACE_SKIP_ABSURD_SIZE,
        FSC_TRACE_SKIP_CONTRADICTED,   FSC_TRACE_SKIP_NOT_BEGUN};
    for (int i = 0; i < 8; i++) {
        CU_ASSERT_EQUAL(sk.shown[i].kind, kinds[i]);
        CU_ASSERT_EQUAL(sk.shown[i].index, i < 7 ? (uint64_t)i + 1 : 0);
    }
    CU_ASSERT_EQUAL(sk.shown[0].action, 42);
    CU_ASSERT_EQUAL(sk.shown[1].addr, 0x51000000);
    CU_ASSERT_EQUAL(sk.shown[5].size, 1ull << 60);
    CU_ASSERT_EQUAL(sk.shown[7].device, 1);
    char line[512];
    CU_ASSERT_STRING_EQUAL(fsc_trace_skip_describe(&sk.shown[1], line, sizeof line),
                           "free_completed at 0x51000000, 512 bytes (device 0, entry 2): free of "
                           "an unknown address");

    /* the commands say so */
    char out[16384];
    const char *db = fsc_test_path("skips.db");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s 2>&1",
                                fsc_test_fragscope(), path, db),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "warning"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "9 recorded entries left out of the trace: 1 unknown "
                                       "action, 1 free of an unknown address"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s info %s", fsc_test_fragscope(), path), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "clean close; but 9 recorded entries left out"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(out, "first: action 42 at 0x50000000, 512 bytes (device 0, entry 1): unknown "
                    "action"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s info %s --format json", fsc_test_fragscope(),
                                path),
                    0);
    cJSON *o = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    cJSON *sj = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "integrity"), "skipped");
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(sj, "total")->valuedouble, 9);
    CU_ASSERT_EQUAL(
        cJSON_GetObjectItem(cJSON_GetObjectItem(sj, "by_kind"), "not_begun")->valuedouble, 2);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(sj, "first")), 8);
    cJSON_Delete(o);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s", fsc_test_fragscope(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "recorder    9 recorded entries left out"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s --format markdown",
                                fsc_test_fragscope(), db),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "**The recorder left entries out: 9 recorded entries"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s report %s --format json",
                                fsc_test_fragscope(), db),
                    0);
    o = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    cJSON *w = cJSON_GetObjectItem(o, "warnings");
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(w, "recorder_skipped_entries")->valuedouble, 9);
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(cJSON_GetObjectItem(w, "recorder_skipped_by_kind"),
                                        "zero_size")
                        ->valuedouble,
                    1);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(w, "recorder_skipped_first")), 8);
    cJSON_Delete(o);
    /* the replay of what was kept matches, but is not called faithful */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s whatif %s --verify", fsc_test_fragscope(),
                                path),
                    1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "recorder: 9 recorded entries left out"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "NOT FAITHFUL: the replay reproduces the entries the "
                                       "trace kept, but the recorder left 9 out"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s whatif %s --verify --format json",
                                fsc_test_fragscope(), path),
                    1);
    o = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_TRUE(cJSON_IsFalse(cJSON_GetObjectItem(o, "match")));
    CU_ASSERT_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(o, "kept_entries_match")));
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(o, "recorder_skipped")->valuedouble, 9);
    cJSON_Delete(o);
    /* the viewer's page says it in words */
    const char *html = fsc_test_path("skips.html");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s view %s -o %s", fsc_test_fragscope(), db,
                                html),
                    0);
    char *page = fsc_test_slurp(html, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "9 recorded entries left out of the trace"));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\"recorder_skipped\":{\"total\":9"));
    free(page);
}

/* 16 entries of 16 with an unknown action: the trace holds no event, and
 * says that all 16 were left out (it is not "clean"). */
static void test_all_unknown(void)
{
    const char *path = fsc_test_path("unknown.fstrace");
    fsc_native_t *n = open_native(path, 1);
    begin(n, 0, 0, NULL, 0);
    for (int i = 0; i < 16; i++)
        push(n, 0, 100 + i, 0x50000000 + 512u * (unsigned)i, 512);
    CU_ASSERT_EQUAL(fsc_native_close(n), 0);
    fsc_native_destroy(n);
    fsc_trace_skips_t sk;
    uint64_t events = 1;
    trace_skips(path, &sk, &events);
    CU_ASSERT_EQUAL(events, 0);
    CU_ASSERT_EQUAL(sk.total, 16);
    CU_ASSERT_EQUAL(sk.by_kind[FSC_TRACE_SKIP_UNKNOWN_ACTION], 16);
    CU_ASSERT_EQUAL(sk.nshown, 8);
    CU_ASSERT_EQUAL(sk.shown[7].action, 107);
    char out[8192];
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s info %s", fsc_test_fragscope(), path), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "clean close; but 16 recorded entries left out of the "
                                       "trace: 16 unknown action"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s 2>&1",
                                fsc_test_fragscope(), path, fsc_test_path("unknown.db")),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "warning"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "16 recorded entries left out"));
}

/* A second begin_device on a running device is refused, and the device's
 * trace goes on recording: every entry before and after is in it. */
static void test_begin_refused(void)
{
    const char *path = fsc_test_path("again.fstrace");
    fsc_native_t *n = open_native(path, 1);
    begin(n, 0, 0, NULL, 0);
    push(n, 0, FSC_NATIVE_SEGMENT_ALLOC, 0x50000000, 2 * MiB);
    push(n, 0, FSC_NATIVE_ALLOC, 0x50000000, 512);
    fsc_native_device_t d;
    memset(&d, 0, sizeof d);
    d.device = 0;
    d.total = 80ull << 30;
    d.free = 70ull << 30;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL(fsc_native_begin_device(n, &d, &err), FSC_ESTATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "device 0 has begun already"));
    CU_ASSERT_EQUAL(fsc_native_declare_device(n, &d, &err), FSC_ESTATE);
    CU_ASSERT_STRING_EQUAL(fsc_native_trace_path(n, 0), path);
    push(n, 0, FSC_NATIVE_ALLOC, 0x50000200, 512);
    push(n, 0, FSC_NATIVE_FREE_REQUESTED, 0x50000000, 512);
    push(n, 0, FSC_NATIVE_FREE_COMPLETED, 0x50000000, 512);
    CU_ASSERT_EQUAL(fsc_native_flush(n), 0);
    fsc_native_stats_t st;
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 5);
    CU_ASSERT_EQUAL(st.skipped.total, 0);
    CU_ASSERT_EQUAL(fsc_native_close(n), 0);
    fsc_native_destroy(n);
    got_t g;
    read_trace(path, &g);
    /* sample, segment, split, alloc, split, alloc, free requested, free completed */
    static const uint8_t want[] = {FSC_EV_DEVICE_MEMORY, FSC_EV_SEGMENT_ALLOC, FSC_EV_SPLIT,
                                   FSC_EV_ALLOC,         FSC_EV_SPLIT,        FSC_EV_ALLOC,
                                   FSC_EV_FREE_REQUESTED, FSC_EV_FREE_COMPLETED};
    CU_ASSERT_EQUAL_FATAL(g.n, (int)sizeof want);
    for (int i = 0; i < g.n; i++)
        CU_ASSERT_EQUAL(g.ev[i].type, want[i]);
    CU_ASSERT_EQUAL(g.ev[0].oom.device_free, 79ull << 30); /* the first begin's */
}

/* A device declared when recording starts (the process had not used it)
 * begins when its first entry arrives: its own trace, empty at first, with
 * the header the declaration gave; nothing is lost. */
static void test_late_device(void)
{
    const char *path = fsc_test_path("late.fstrace");
    fsc_native_t *n = open_native(path, 2);
    begin(n, 0, 0, NULL, 0);
    fsc_native_device_t d;
    memset(&d, 0, sizeof d);
    d.device = 1;
    d.name = "Late GPU";
    d.total = 40ull << 30;
    d.capacity = 20ull << 30;
    d.config = "expandable_segments:False";
    fsc_err_t err = {0, ""};
    fsc_native_segment_t seg;
    memset(&seg, 0, sizeof seg);
    d.segments = &seg;
    d.nsegments = 1;
    CU_ASSERT_EQUAL(fsc_native_declare_device(n, &d, &err), FSC_EINVAL);
    d.segments = NULL;
    d.nsegments = 0;
    CU_ASSERT_EQUAL_FATAL(fsc_native_declare_device(n, &d, &err), 0);
    CU_ASSERT_EQUAL(fsc_native_declare_device(n, &d, &err), FSC_ESTATE);
    CU_ASSERT_EQUAL(fsc_native_flush(n), 0);
    CU_ASSERT_PTR_NULL(fsc_native_trace_path(n, 1)); /* no entry yet: no file */
    CU_ASSERT_FALSE(fsc_test_file_exists(fsc_test_path("late.dev1.fstrace")));
    push(n, 1, FSC_NATIVE_SEGMENT_ALLOC, 0x60000000, 20 * MiB);
    push(n, 1, FSC_NATIVE_ALLOC, 0x60000000, 4 * MiB);
    push(n, 0, FSC_NATIVE_SEGMENT_ALLOC, 0x50000000, 2 * MiB);
    CU_ASSERT_EQUAL(fsc_native_flush(n), 0);
    CU_ASSERT_STRING_EQUAL(fsc_native_trace_path(n, 1), fsc_test_path("late.dev1.fstrace"));
    push(n, 1, FSC_NATIVE_FREE_REQUESTED, 0x60000000, 4 * MiB);
    push(n, 1, FSC_NATIVE_FREE_COMPLETED, 0x60000000, 4 * MiB);
    fsc_native_stats_t st;
    CU_ASSERT_EQUAL(fsc_native_close(n), 0);
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 5);
    CU_ASSERT_EQUAL(st.dropped, 0);
    CU_ASSERT_EQUAL(st.skipped.total, 0);
    fsc_native_destroy(n);
    got_t g;
    read_trace(fsc_test_path("late.dev1.fstrace"), &g);
    CU_ASSERT_STRING_EQUAL(g.backend, "cuda:1 Late GPU");
    CU_ASSERT_EQUAL(g.hdr.capacity, 20ull << 30);
    CU_ASSERT_EQUAL(g.hdr.device_total, 40ull << 30);
    CU_ASSERT_FALSE(g.hdr.flags & FSC_TRACE_F_RECONSTRUCTED);
    /* no sample (its free bytes were not read), no start state */
    static const uint8_t want[] = {FSC_EV_SEGMENT_ALLOC, FSC_EV_SPLIT, FSC_EV_ALLOC,
                                   FSC_EV_FREE_REQUESTED, FSC_EV_FREE_COMPLETED, FSC_EV_MERGE};
    CU_ASSERT_EQUAL_FATAL(g.n, (int)sizeof want);
    for (int i = 0; i < g.n; i++)
        CU_ASSERT_EQUAL(g.ev[i].type, want[i]);
    CU_ASSERT_EQUAL(g.ev[2].size, 4 * MiB);
    read_trace(path, &g);
    CU_ASSERT_EQUAL(g.n, 2); /* device 0: sample, segment */
}

/* Runs recorded on an H100 (bench/gpu/native_check.py; n_fsdp2 and n_tags
 * on an H200) by the native recorder and, in the same process, by
 * PyTorch's own history: the trace
 * analyzes to memory_stats()'s peaks to the byte and to the same segments
 * and blocks as the snapshot, and what-if reproduces every address. The
 * OOM run's trace carries the 6 GiB cap, and its verdict says so. */
typedef struct sum3 {
    long long peak_alloc, peak_res, segs, blocks;
} sum3_t;

static void db_sum(const char *db, sum3_t *s)
{
    char out[4096];
    CU_ASSERT_EQUAL_FATAL(
        fsc_test_sh(out, sizeof out,
                    "sqlite3 %s \"SELECT (SELECT value FROM summary WHERE key = "
                    "'peak_allocated_bytes'), (SELECT value FROM summary WHERE key = "
                    "'peak_reserved_bytes'), (SELECT count(*) || '/' || total(addr) || '/' || "
                    "total(size) FROM segments), (SELECT count(*) || '/' || total(addr * 3 + size) "
                    "|| '/' || total(requested) FROM blocks)\"",
                    db),
        0);
    double pa = 0, pr = 0;
    char segs[256] = "", blocks[256] = "";
    sscanf(out, "%lf|%lf|%255[^|]|%255s", &pa, &pr, segs, blocks);
    s->peak_alloc = (long long)pa;
    s->peak_res = (long long)pr;
    /* count/sum/sum of the table: equal tables give equal strings */
    uint64_t hs = 0, hb = 0; /* unsigned: the hash wraps */
    for (const char *c = segs; *c; c++)
        hs = hs * 31 + (unsigned char)*c;
    for (const char *c = blocks; *c; c++)
        hb = hb * 31 + (unsigned char)*c;
    s->segs = (long long)(hs >> 1);
    s->blocks = (long long)(hb >> 1);
}

/* A GPU run's native trace and its snapshot, both analyzed (into dbn and
 * dbs), summed; *ra and *rr get memory_stats()'s peaks from
 * tests/data/gpu/RUN.stats.json. */
static void analyze_pair(const char *trace, const char *snap, const char *run, const char *dbn,
                         const char *dbs, sum3_t *a, sum3_t *b, long long *ra, long long *rr)
{
    char out[4096];
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s",
                                      fsc_test_fragscope(), trace, dbn), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s",
                                      fsc_test_fragscope(), snap, dbs), 0);
    db_sum(dbn, a);
    db_sum(dbs, b);
    cJSON *st = fsc_test_gpu_stats(run);
    *ra = (long long)fsc_test_stat_u64(st, "allocated_bytes.all.peak");
    *rr = (long long)fsc_test_stat_u64(st, "reserved_bytes.all.peak");
    cJSON_Delete(st);
}

/* The verdict `report --format verdict` prints for a test data trace. */
static void verdict_of(const char *trace, char *out, size_t cap)
{
    const char *db = fsc_test_path("verdict.db");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, cap, "%s analyze %s -o %s", fsc_test_fragscope(),
                                      fsc_test_data(trace), db),
                          0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, cap, "%s report %s --format verdict", fsc_test_fragscope(),
                                db),
                    0);
}

static void test_gpu_runs(void)
{
    static const char *const runs[] = {"n_plain",       "n_expandable", "n_graphed", "n_mempool_live",
                                       "n_side_stream", "n_oom_cap",    "n_late",    "n_fsdp2",
                                       "n_tags"};
    char out[1 << 14];
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char base[512], tr[600], pk[600], st[600];
        snprintf(base, sizeof base, "%s%s", fsc_test_data("gpu/native/"), runs[i]);
        snprintf(pk, sizeof pk, "%s.pickle", base);
        snprintf(st, sizeof st, "native/%s", runs[i]);
        snprintf(tr, sizeof tr, "%s.fstrace", base);
        sum3_t a, b;
        long long ra, rr;
        analyze_pair(tr, pk, st, fsc_test_path("gn.db"), fsc_test_path("gs.db"), &a, &b, &ra,
                     &rr);
        int late = strcmp(runs[i], "n_late") == 0;
        if (!late) {
            /* the whole run: memory_stats()'s peaks, the snapshot's tables */
            CU_ASSERT_EQUAL(a.peak_alloc, ra);
            CU_ASSERT_EQUAL(a.peak_res, rr);
            CU_ASSERT_EQUAL(a.segs, b.segs);
            CU_ASSERT_EQUAL(a.blocks, b.blocks);
        } else {
            /* begun after the first step: a window, whose allocated peak
             * was before it; what it reserved it kept */
            CU_ASSERT_TRUE(a.peak_alloc < ra);
            CU_ASSERT_EQUAL(a.peak_res, rr);
        }
        if (a.peak_alloc != ra && !late)
            fprintf(stderr, "%s: peak allocated %lld, memory_stats %lld\n", runs[i], a.peak_alloc,
                    ra);
        fsc_request_stream_t *rs = NULL;
        fsc_err_t err = {0, ""};
        CU_ASSERT_EQUAL_FATAL(fsc_request_stream_load(tr, &rs, &err), 0);
        fsc_whatif_verify_t v;
        CU_ASSERT_EQUAL(fsc_whatif_verify(rs, NULL, &v, &err), 0);
        CU_ASSERT_TRUE(v.match);
        CU_ASSERT_EQUAL(v.alloc_addr_matches, v.allocs_compared);
        CU_ASSERT_TRUE(v.allocs_compared > 20);
        fsc_request_stream_info_t in;
        fsc_request_stream_info(rs, &in);
        CU_ASSERT_EQUAL(in.window, late);
        fsc_request_stream_destroy(rs);
    }
    /* GPT-2 under watch() and watch_optimizer(): each block carries the
     * module path of the forward that allocated it, or optimizer.step */
    const char *dbt = fsc_test_path("gt.db");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", fsc_test_fragscope(),
                                      fsc_test_data("gpu/native/n_tags.fstrace"), dbt),
                          0);
    CU_ASSERT_EQUAL(
        fsc_test_sh(out, sizeof out,
                    "sqlite3 %s \"SELECT p.path, count(*) FROM blocks b JOIN tag_paths p ON "
                    "p.id = b.tag AND p.run = b.run WHERE p.path IN ('optimizer.step', "
                    "'GPT2LMHeadModel/transformer/h.0/mlp/act', "
                    "'GPT2LMHeadModel/transformer/h.5/attn') GROUP BY 1 ORDER BY 1\"",
                    dbt),
        0);
    CU_ASSERT_STRING_EQUAL(out, "GPT2LMHeadModel/transformer/h.0/mlp/act|24\n"
                                "GPT2LMHeadModel/transformer/h.5/attn|12\n"
                                "optimizer.step|380\n");
    /* the OOM run: the cap is in the trace, and the verdict names it */
    verdict_of("gpu/native/n_oom_cap.fstrace", out, sizeof out);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fragscope: out of memory on cuda:0 NVIDIA H100 80GB HBM3: "
                                       "1.49 GiB requested"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cap 6.00 GiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cause: capacity"));
}

/* H200 runs with _record_memory_history(stacks=...) on as well: each
 * native event is tagged with the frames PyTorch captured, named as the
 * same run's snapshot names them, so the two give the same table of tags
 * (blocks and bytes per call path); with stacks='all' the C++ frames too. */
#define TAGS_Q "SELECT p.path, count(*), sum(b.size) FROM blocks b JOIN tag_paths p ON p.id = " \
               "b.tag AND p.run = b.run GROUP BY 1 ORDER BY 1"
static void test_gpu_stacks(void)
{
    static const struct {
        const char *run;
        int rows;
    } runs[] = {{"s_python", 33}, {"s_all", 72}, {"s_oom", 24}};
    char out[4096];
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char tr[600], pk[600], st[600];
        snprintf(tr, sizeof tr, "%s%s.fstrace", fsc_test_data("gpu/native/"), runs[i].run);
        snprintf(st, sizeof st, "native/%s", runs[i].run);
        snprintf(pk, sizeof pk, "gpu/native/%s.pickle", runs[i].run);
        const char *snap = fsc_test_data_unzstd(pk);
        CU_ASSERT_PTR_NOT_NULL_FATAL(snap);
        const char *dbn = fsc_test_path("sn.db"), *dbs = fsc_test_path("ss.db");
        sum3_t a, b;
        long long ra, rr;
        analyze_pair(tr, snap, st, dbn, dbs, &a, &b, &ra, &rr);
        CU_ASSERT_EQUAL(a.peak_alloc, ra);
        CU_ASSERT_EQUAL(a.peak_res, rr);
        CU_ASSERT_EQUAL(a.segs, b.segs);
        CU_ASSERT_EQUAL(a.blocks, b.blocks);
        const char *tn = fsc_test_path("sn.tags"), *ts = fsc_test_path("ss.tags");
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                    "sqlite3 %s '" TAGS_Q "' > %s && sqlite3 %s '" TAGS_Q
                                    "' > %s && cmp %s %s && wc -l < %s",
                                    dbn, tn, dbs, ts, tn, ts, tn),
                        0);
        CU_ASSERT_EQUAL(atoi(out), runs[i].rows);
        if (strcmp(runs[i].run, "s_all") == 0) { /* C++ frames, kept apart from Python's */
            CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                        "grep -c 'at::native::' %s", tn), 0);
            CU_ASSERT_TRUE(atoi(out) > 10);
        }
    }
    /* the OOM's verdict names the model's line that asked */
    verdict_of("gpu/native/s_oom.fstrace", out, sizeof out);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fragscope: out of memory on cuda:0 NVIDIA H200: 1.49 GiB "
                                       "requested at linear.py:134 forward ← "
                                       "modeling_gpt2.py:697 forward ← generic.py:939 wrapper\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cap 6.00 GiB"));
    /* begun after a step: the live blocks of the start carry the frames the
     * allocator's snapshot gave them (158 of 159; one was made by autograd's
     * thread, which has no Python frames), and every tag is one of the
     * whole run's snapshot */
    const char *dbl = fsc_test_path("sl.db"), *dbw = fsc_test_path("sw.db");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", fsc_test_fragscope(),
                                      fsc_test_data("gpu/native/s_late.fstrace"), dbl),
                          0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", fsc_test_fragscope(),
                                      fsc_test_data_unzstd("gpu/native/s_late.pickle"), dbw),
                          0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                "sqlite3 %s 'SELECT count(*), sum(tag != 0) FROM blocks WHERE "
                                "alloc_time_ns = (SELECT min(alloc_time_ns) FROM blocks)'",
                                dbl),
                    0);
    CU_ASSERT_STRING_EQUAL(out, "159|158\n");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                "sqlite3 %s 'SELECT DISTINCT path FROM tag_paths p JOIN blocks b "
                                "ON p.id = b.tag AND p.run = b.run' | sort > %s.p && sqlite3 %s "
                                "'SELECT DISTINCT path FROM tag_paths' | sort > %s.p && "
                                "comm -23 %s.p %s.p | wc -l",
                                dbl, dbl, dbw, dbw, dbl, dbw),
                    0);
    CU_ASSERT_STRING_EQUAL(out, "0\n");
}

static const fsc_test_case_t tests[] = {
    {"entries become the importer's events, the cap and device on the OOM", test_entries_to_events},
    {"the same entries as a snapshot import to the same events", test_same_as_snapshot},
    {"attached mid-run: the allocator's state first, what-if exact from it", test_start_state},
    {"two devices from two threads: every entry in its device's trace", test_two_devices},
    {"stacks come after their entries: later entries wait, frames tag the events",
     test_stacks},
    {"an entry the model cannot place is counted, the trace stays good", test_contradiction},
    {"entries left out are counted by kind, in the trace, and every command says so",
     test_skips_by_kind},
    {"16 unknown actions of 16: an empty trace that says so", test_all_unknown},
    {"a refused begin_device leaves the running trace recording", test_begin_refused},
    {"a declared device begins when its first entry arrives", test_late_device},
    {"H100 runs: the native trace and the same run's snapshot agree", test_gpu_runs},
    {"H200 runs with history's stacks: the same tags as the snapshot's", test_gpu_stacks},
    {NULL, NULL},
};

FSC_TEST_MAIN("native", tests)
