/*
 * test_recorder.c — the .fstrace format: every field of every event type
 * round-trips, the writer's output is byte-identical to the golden file,
 * a file cut at any byte or with any byte damaged still yields exactly the
 * events of its intact chunks, and the reader's errors on non-traces and
 * newer versions.
 *
 * Regenerate the golden file after an intended format change with
 *   FSC_REGEN_GOLDEN=1 ./test_recorder     (from the build's tests folder)
 * and review the diff of docs/trace-format.md alongside it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "fragscope/recorder.h"
#include "fsc_test.h"
#include "test_recorder_util.h"
#include "trace_format.h"

#define GOLDEN "recorder_golden.fstrace"

static const fsc_trace_header_t k_hdr = {
    0, 0, "fragscope test", "max_split_size_mb:128,expandable_segments:True", "sim",
    80ull << 30, 80ull << 30, 1764400000123456789ull, 4242, 3, FSC_TRACE_F_CAPACITY_UNKNOWN,
    "gpu-node-07",
};

/* Tag ids in the golden trace: 1 forward, 2 forward/layer.0, 3 backward. */
static const fsc_event_t k_events[] = {
    {.type = FSC_EV_SEGMENT_ALLOC, .pool = 1, .time_ns = 1000, .addr = 0x7f0000000000ull,
     .size = 20971520, .stream = 7, .thread = 1, .pool_id = 1},
    {.type = FSC_EV_SEGMENT_MAP, .pool = 1, .time_ns = 1500, .addr = 0x7f0001400000ull,
     .size = 20971520, .stream = 7, .segment = 0x7f0000000000ull, .thread = 1},
    {.type = FSC_EV_SPLIT, .pool = 1, .time_ns = 2000, .addr = 0x7f0000000000ull,
     .size = 20971520, .requested = 4194304, .stream = 7, .segment = 0x7f0000000000ull,
     .thread = 1},
    {.type = FSC_EV_ALLOC, .pool = 1, .tag = 2, .time_ns = 2100, .addr = 0x7f0000000000ull,
     .size = 4194304, .requested = 4000000, .stream = 7, .segment = 0x7f0000000000ull,
     .thread = 1, .pool_id = 1},
    {.type = FSC_EV_ALLOC, .pool = 0, .tag = 1, .time_ns = 2200, .addr = 0x7f0000400000ull,
     .size = 512, .requested = 1, .segment = 0x7f0000000000ull, .thread = 2},
    {.type = FSC_EV_MARKER, .time_ns = 2300, .thread = 2, .text = "step 12", .text_len = 7},
    {.type = FSC_EV_FREE_REQUESTED, .pool = 1, .tag = 3, .time_ns = 2400,
     .addr = 0x7f0000000000ull, .size = 4194304, .requested = 4000000, .stream = 7,
     .segment = 0x7f0000000000ull, .thread = 1},
    {.type = FSC_EV_FREE_COMPLETED, .pool = 1, .tag = 3, .time_ns = 2500,
     .addr = 0x7f0000000000ull, .size = 4194304, .requested = 4000000, .stream = 7,
     .segment = 0x7f0000000000ull, .thread = 1},
    {.type = FSC_EV_MERGE, .pool = 1, .time_ns = 2600, .addr = 0x7f0000000000ull,
     .size = 20971520, .stream = 7, .segment = 0x7f0000000000ull, .other = 0x7f0000400000ull,
     .thread = 1},
    {.type = FSC_EV_SEGMENT_UNMAP, .pool = 1, .time_ns = 2700, .addr = 0x7f0001400000ull,
     .size = 20971520, .stream = 7, .segment = 0x7f0000000000ull, .thread = 1},
    {.type = FSC_EV_SEGMENT_FREE, .pool = 1, .time_ns = 2800, .addr = 0x7f0000000000ull,
     .size = 20971520, .stream = 7, .thread = 1, .pool_id = UINT64_MAX},
    {.type = FSC_EV_GC, .time_ns = 2900, .size = 41943040, .requested = 62914560, .thread = 1},
    {.type = FSC_EV_EMPTY_CACHE, .time_ns = 3000, .size = 2097152, .thread = 3},
    {.type = FSC_EV_OOM, .pool = 1, .tag = 2, .time_ns = 3100, .size = 100663296,
     .requested = 100000000, .stream = 7, .thread = 1,
     .oom = {12884901888ull, 12905873408ull, 12884901888ull, UINT64_MAX, 0, 100663296}},
    {.type = FSC_EV_OOM, .pool = 0, .time_ns = 3200, .size = 1024, .requested = 1000,
     .thread = 1, .oom = {1, 2, 3, 4, 5, 6}},
    /* Odd values: time going back, extreme addresses, every field set. */
    {.type = FSC_EV_ALLOC, .pool = 255, .reserved0 = 65535, .tag = 3, .time_ns = 10,
     .addr = UINT64_MAX, .size = UINT64_MAX, .requested = 0, .stream = UINT64_MAX,
     .segment = 1, .other = 2, .thread = UINT32_MAX, .text = "x\0y", .text_len = 3,
     .oom = {UINT64_MAX, 0, UINT64_MAX, 0, UINT64_MAX, 1}},
    {.type = FSC_EV_FREE_REQUESTED, .time_ns = UINT64_MAX, .addr = 1, .size = 1,
     .requested = UINT64_MAX},
    {.type = FSC_EV_MARKER, .time_ns = 0, .text = "epoch end", .text_len = 9},
};
#define N_EVENTS (sizeof k_events / sizeof k_events[0])

/* The records the golden trace says were left out (2.4): written once
 * part way with the first counts, then with all of them (the last wins). */
static void golden_skips(fsc_trace_skips_t *s, int all)
{
    memset(s, 0, sizeof *s);
    s->by_kind[FSC_TRACE_SKIP_FREE_UNKNOWN] = all ? 2 : 1;
    s->by_kind[FSC_TRACE_SKIP_UNKNOWN_ACTION] = all ? 1 : 0;
    s->total = all ? 3 : 1;
    s->nshown = all ? 2 : 1;
    s->shown[0] = (fsc_trace_skip_t){FSC_TRACE_SKIP_FREE_UNKNOWN, 2, 0, 5, 0x7f0000100000ull, 512};
    s->shown[1] = (fsc_trace_skip_t){FSC_TRACE_SKIP_UNKNOWN_ACTION, 42, 1, 9, 0, 0};
}

static int write_golden_like(const char *path)
{
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = 1;
    o.chunk_bytes = 128;
    fsc_recorder_t *r = NULL;
    fsc_err_t err;
    int rc = fsc_recorder_open(path, &k_hdr, &o, &r, &err);
    if (rc != 0)
        return rc;
    uint32_t fwd, layer, bwd;
    if (fsc_recorder_tag_node(r, 0, "forward", 7, &fwd) != 0 ||
        fsc_recorder_tag_node(r, fwd, "layer.0", 7, &layer) != 0 ||
        fsc_recorder_tag_node(r, 0, "backward", 8, &bwd) != 0 || fwd != 1 || layer != 2 ||
        bwd != 3)
        return -100;
    fsc_trace_skips_t sk;
    for (size_t i = 0; i < N_EVENTS; i++) {
        if ((rc = fsc_recorder_write(r, &k_events[i])) != 0)
            return rc;
        if (i == 13 || i == N_EVENTS - 1) {
            golden_skips(&sk, i != 13);
            if ((rc = fsc_recorder_write_skips(r, &sk)) != 0)
                return rc;
        }
    }
    return fsc_recorder_close(r);
}

static void check_events_v(const char *path, uint32_t major, uint32_t minor)
{
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(path, &r, &err), 0);
    const fsc_trace_header_t *h = fsc_trace_header(r);
    CU_ASSERT_EQUAL(h->version_major, major);
    CU_ASSERT_EQUAL(h->version_minor, minor);
    CU_ASSERT_STRING_EQUAL(h->producer, "fragscope test");
    CU_ASSERT_STRING_EQUAL(h->config, "max_split_size_mb:128,expandable_segments:True");
    CU_ASSERT_STRING_EQUAL(h->backend, "sim");
    CU_ASSERT_EQUAL(h->capacity, 80ull << 30);
    CU_ASSERT_EQUAL(h->device_total, 80ull << 30);
    CU_ASSERT_EQUAL(h->clock_origin_ns, 1764400000123456789ull);
    CU_ASSERT_EQUAL(h->pid, 4242);
    CU_ASSERT_EQUAL(h->rank, 3);
    CU_ASSERT_EQUAL(h->flags, FSC_TRACE_F_CAPACITY_UNKNOWN);
    /* the host from 2.3 on; older files record none */
    if (major == 2 && minor >= 3) {
        CU_ASSERT(h->host != NULL && strcmp(h->host, "gpu-node-07") == 0);
    } else {
        CU_ASSERT_PTR_NULL(h->host);
    }
    fsc_event_t ev;
    size_t i = 0;
    int rc;
    while ((rc = fsc_trace_next(r, &ev)) == 1) {
        CU_ASSERT_FATAL(i < N_EVENTS);
        CU_ASSERT(rt_event_eq(&ev, &k_events[i]));
        /* pool ids from 2.2 on; older files read as the default pool's */
        CU_ASSERT_EQUAL(ev.pool_id, major == 2 && minor >= 2 ? k_events[i].pool_id : 0);
        i++;
    }
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(i, N_EVENTS);
    char path_buf[64];
    CU_ASSERT_EQUAL(fsc_trace_tag_count(r), 3);
    CU_ASSERT_EQUAL(fsc_trace_tag_path(r, 2, path_buf, sizeof path_buf), 0);
    CU_ASSERT_STRING_EQUAL(path_buf, "forward/layer.0");
    CU_ASSERT_EQUAL(fsc_trace_tag_path(r, 3, path_buf, sizeof path_buf), 0);
    CU_ASSERT_STRING_EQUAL(path_buf, "backward");
    CU_ASSERT_EQUAL(fsc_trace_tag_path(r, 2, path_buf, 8), 0);
    CU_ASSERT_STRING_EQUAL(path_buf, "forward");
    CU_ASSERT_EQUAL(fsc_trace_tag_path(r, 9, path_buf, sizeof path_buf), FSC_ENOENT);
    const char *name;
    size_t len;
    uint32_t parent;
    CU_ASSERT_EQUAL_FATAL(fsc_trace_tag(r, 2, &name, &len, &parent), 0);
    CU_ASSERT_EQUAL(len, 7);
    CU_ASSERT_EQUAL(memcmp(name, "layer.0", 7), 0);
    CU_ASSERT_EQUAL(parent, 1);
    fsc_trace_integrity_t in;
    CU_ASSERT_EQUAL(fsc_trace_get_integrity(r, &in), 0);
    CU_ASSERT_EQUAL(in.clean_close, 1);
    CU_ASSERT_EQUAL(in.events, N_EVENTS);
    CU_ASSERT(in.chunks >= 3); /* 128-byte chunks */
    CU_ASSERT_EQUAL(in.bytes_lost, 0);
    CU_ASSERT_EQUAL(in.events_lost, 0);
    CU_ASSERT_EQUAL(in.compressed_bytes, in.file_bytes);
    /* the records left out from 2.4 on: the last SKIPPED record's */
    fsc_trace_skips_t want;
    golden_skips(&want, 1);
    if (major == 2 && minor >= 4) {
        CU_ASSERT_EQUAL(in.skipped.total, 3);
        CU_ASSERT_EQUAL(memcmp(in.skipped.by_kind, want.by_kind, sizeof want.by_kind), 0);
        CU_ASSERT_EQUAL_FATAL(in.skipped.nshown, 2);
        for (int i = 0; i < 2; i++) {
            const fsc_trace_skip_t *a = &in.skipped.shown[i], *b = &want.shown[i];
            CU_ASSERT(a->kind == b->kind && a->action == b->action && a->device == b->device &&
                      a->index == b->index && a->addr == b->addr && a->size == b->size);
        }
        char line[256];
        CU_ASSERT_STRING_EQUAL(fsc_trace_skips_text(&in.skipped, line, sizeof line),
                               "3 recorded entries left out of the trace: 1 unknown action, 2 "
                               "free of an unknown address");
        CU_ASSERT_STRING_EQUAL(fsc_trace_skip_describe(&in.skipped.shown[0], line, sizeof line),
                               "free_completed at 0x7f0000100000, 512 bytes (device 0, entry "
                               "5): free of an unknown address");
    } else {
        CU_ASSERT_EQUAL(in.skipped.total, 0);
        CU_ASSERT_EQUAL(in.skipped.nshown, 0);
    }
    fsc_trace_close(r);
}

static void check_events(const char *path)
{
    check_events_v(path, 2, 4);
}

static void test_round_trip_every_field(void)
{
    const char *p = fsc_test_path("rt.fstrace");
    CU_ASSERT_EQUAL_FATAL(write_golden_like(p), 0);
    check_events(p);
}

static void test_golden_bytes(void)
{
    const char *fresh = fsc_test_path("golden_fresh.fstrace");
    CU_ASSERT_EQUAL_FATAL(write_golden_like(fresh), 0);
    size_t nf = 0, ng = 0;
    char *f = fsc_test_slurp(fresh, &nf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    const char *regen = getenv("FSC_REGEN_GOLDEN");
    if (regen != NULL && regen[0] == '1') {
        CU_ASSERT_EQUAL(rt_write_file(fsc_test_data(GOLDEN), f, nf), 0);
        printf("\n  wrote %s (%zu bytes)\n", fsc_test_data(GOLDEN), nf);
    }
    char *g = fsc_test_slurp(fsc_test_data(GOLDEN), &ng);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(nf, ng);
    CU_ASSERT(nf == ng && memcmp(f, g, nf) == 0);
    free(f);
    free(g);
    /* The committed file also reads back to the same events. */
    check_events(fsc_test_data(GOLDEN));
}

/* A trace of 60 events over many small chunks, with tags and markers. */
static size_t make_small(const char *path, fsc_event_t *evs, char texts[][16])
{
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = 1;
    o.chunk_bytes = 100;
    fsc_recorder_t *r = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(path, &k_hdr, &o, &r, &err), 0);
    uint32_t t1, t2;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_tag_node(r, 0, "a", 1, &t1), 0);
    size_t n = 60;
    for (size_t i = 0; i < n; i++) {
        fsc_event_t *e = &evs[i];
        memset(e, 0, sizeof *e);
        e->type = (uint8_t)(1 + i % 13);
        e->time_ns = 100 * i + 7;
        e->addr = 0x7f0000000000ull + (i % 5) * 512;
        e->size = 512 << (i % 4);
        e->requested = e->size - i;
        e->thread = 1 + (uint32_t)(i % 3);
        e->tag = i % 2 ? t1 : 0;
        if (e->type == FSC_EV_MARKER) {
            snprintf(texts[i], 16, "step %zu", i);
            e->text = texts[i];
            e->text_len = (uint32_t)strlen(texts[i]);
        }
        if (i == 30) {
            CU_ASSERT_EQUAL_FATAL(fsc_recorder_tag_node(r, t1, "b", 1, &t2), 0);
            e->tag = t2;
        }
        CU_ASSERT_EQUAL_FATAL(fsc_recorder_write(r, e), 0);
    }
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_close(r), 0);
    return n;
}

static void test_cut_at_every_byte(void)
{
    const char *p = fsc_test_path("small.fstrace");
    fsc_event_t evs[60];
    char texts[60][16];
    size_t n = make_small(p, evs, texts);
    size_t len = 0;
    uint8_t *img = (uint8_t *)fsc_test_slurp(p, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(img);
    size_t hdr_len = 8 + fsc__get_le32(img + 4);
    const char *cut = fsc_test_path("cut.fstrace");
    long prev = -1;
    int failures = 0;
    for (size_t c = 0; c <= len; c++) {
        CU_ASSERT_EQUAL_FATAL(rt_write_file(cut, img, c), 0);
        fsc_event_t *got = NULL;
        fsc_trace_integrity_t in;
        int rc;
        long k = rt_read_all(cut, &got, &in, &rc);
        if (c < hdr_len) {
            failures += !(k == -1 && rc == FSC_EFORMAT);
            continue;
        }
        failures += rc != 0;
        failures += k < prev;
        failures += (uint64_t)k != (c == len ? n : rt_events_before(img, len, c));
        for (long i = 0; i < k; i++) {
            fsc_event_t want = evs[i];
            want.text = NULL;
            failures += !rt_event_eq(&got[i], &want);
        }
        failures += in.clean_close != (c == len);
        failures += in.events != (uint64_t)k;
        failures += c < len && in.compressed_bytes + in.bytes_lost != c;
        prev = k;
        free(got);
    }
    CU_ASSERT_EQUAL(failures, 0);
    CU_ASSERT_EQUAL(prev, (long)n);
    free(img);
}

static void test_damaged_byte_anywhere(void)
{
    const char *p = fsc_test_path("small2.fstrace");
    fsc_event_t evs[60];
    char texts[60][16];
    size_t n = make_small(p, evs, texts);
    size_t len = 0;
    uint8_t *img = (uint8_t *)fsc_test_slurp(p, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(img);
    const char *bad = fsc_test_path("flip.fstrace");
    int failures = 0, fewer = 0;
    for (size_t c = 0; c < len; c++) {
        img[c] ^= 0x5A;
        CU_ASSERT_EQUAL_FATAL(rt_write_file(bad, img, len), 0);
        img[c] ^= 0x5A;
        fsc_event_t *got = NULL;
        fsc_trace_integrity_t in;
        int rc;
        long k = rt_read_all(bad, &got, &in, &rc);
        if (k < 0)
            continue; /* header damaged: refused */
        failures += k > (long)n;
        for (long i = 0; i < k && i < (long)n; i++) {
            fsc_event_t want = evs[i];
            want.text = NULL;
            failures += !rt_event_eq(&got[i], &want);
        }
        fewer += k < (long)n;
        /* A damaged file never claims a clean close with events missing,
         * and every byte is either consumed or reported lost. */
        failures += in.clean_close && k != (long)n;
        failures += in.compressed_bytes + in.bytes_lost != len;
        failures += in.compressed_bytes > len;
        free(got);
    }
    CU_ASSERT_EQUAL(failures, 0);
    CU_ASSERT(fewer > 0);
    free(img);
}

static void test_not_a_trace(void)
{
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    const char *txt = fsc_test_path("notes.txt");
    CU_ASSERT_EQUAL_FATAL(rt_write_file(txt, "hello, world\n", 13), 0);
    CU_ASSERT_EQUAL(fsc_trace_open(txt, &r, &err), FSC_EFORMAT);
    CU_ASSERT_PTR_NULL(r);
    char want[1200];
    snprintf(want, sizeof want, "%s: not a fragscope trace", txt);
    CU_ASSERT_STRING_EQUAL(err.msg, want);
    const char *empty = fsc_test_path("empty.fstrace");
    CU_ASSERT_EQUAL_FATAL(rt_write_file(empty, "", 0), 0);
    CU_ASSERT_EQUAL(fsc_trace_open(empty, &r, &err), FSC_EFORMAT);
    /* A plain zstd file is not a trace either. */
    char z[64];
    size_t zn = ZSTD_compress(z, sizeof z, "abc", 3, 1);
    CU_ASSERT_FALSE_FATAL(ZSTD_isError(zn));
    const char *zp = fsc_test_path("plain.zst");
    CU_ASSERT_EQUAL_FATAL(rt_write_file(zp, z, zn), 0);
    CU_ASSERT_EQUAL(fsc_trace_open(zp, &r, &err), FSC_EFORMAT);
    CU_ASSERT_EQUAL(fsc_trace_open(fsc_test_path("missing.fstrace"), &r, &err), FSC_ENOENT);
}

static void test_newer_major_refused(void)
{
    const char *p = fsc_test_path("v2.fstrace");
    CU_ASSERT_EQUAL_FATAL(write_golden_like(p), 0);
    size_t len = 0;
    uint8_t *img = (uint8_t *)fsc_test_slurp(p, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(img);
    img[8 + 8] = 3; /* major version, low byte */
    CU_ASSERT_EQUAL_FATAL(rt_write_file(p, img, len), 0);
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL(fsc_trace_open(p, &r, &err), FSC_EVERSION);
    char want[1200];
    snprintf(want, sizeof want,
             "%s: trace format version 3.4 is newer than this fragscope reads (2.x); "
             "upgrade fragscope",
             p);
    CU_ASSERT_STRING_EQUAL(err.msg, want);
    /* A damaged header (same major) is a format error, not a version one. */
    img[8 + 8] = 2;
    img[8 + 20] ^= 0xFF;
    CU_ASSERT_EQUAL_FATAL(rt_write_file(p, img, len), 0);
    CU_ASSERT_EQUAL(fsc_trace_open(p, &r, &err), FSC_EFORMAT);
    free(img);
}

/* Append a chunk of raw records to an image, with its descriptor. */
static size_t append_chunk(uint8_t *img, size_t len, const uint8_t *content, size_t n,
                           uint64_t first, uint32_t events)
{
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    uint8_t *d = img + len;
    size_t cs = ZSTD_compress2(cc, d + 32, 4096, content, n);
    ZSTD_freeCCtx(cc);
    fsc__put_le32(d, FSC__SKIP_CHUNK);
    fsc__put_le32(d + 4, FSC__CHUNK_DESC_LEN);
    fsc__put_le64(d + 8, first);
    fsc__put_le32(d + 16, events);
    fsc__put_le32(d + 20, (uint32_t)cs);
    fsc__put_le32(d + 24, (uint32_t)n);
    fsc__put_le32(d + 28, fsc__crc32(d + 8, 20));
    return len + 32 + cs;
}

static void test_newer_minor_records_skipped(void)
{
    /* A newer minor's file: an unknown skippable frame and an unknown
     * length-prefixed record (0x55) around two events. */
    const char *p = fsc_test_path("minor.fstrace");
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = 1;
    fsc_recorder_t *w = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(p, &k_hdr, &o, &w, &err), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_close(w), 0);
    size_t len = 0;
    char *base = fsc_test_slurp(p, &len);
    uint8_t img[8192];
    size_t hl = 8 + fsc__get_le32((uint8_t *)base + 4);
    memcpy(img, base, hl);
    free(base);
    img[8 + 10] = 7; /* minor 7 */
    fsc__put_le32(img + hl - 4, fsc__crc32(img + 8, hl - 12));
    size_t n = hl;
    fsc__put_le32(img + n, 0x184D2A53u);
    fsc__put_le32(img + n + 4, 3);
    memcpy(img + n + 8, "new", 3);
    n += 11;
    /* Column layout, 16 columns (one more than 1.0 knows): records, time,
     * addr, size, ..., defs, extra. */
    const uint8_t content[] = {
        16, 5, 2, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 3, /* directory */
        FSC_EV_ALLOC, FSC__F_ADDR | FSC__F_SIZE, 0x55,        /* records: ALLOC, ext, */
        FSC_EV_FREE_REQUESTED, FSC__F_ADDR | FSC__F_SIZE,     /*   FREE_REQUESTED */
        10, 2,                                                /* time: 5, then +1 */
        2, 0,                                                 /* addr: 1, then +0 */
        0x80, 0x04, 0x80, 0x04,                               /* size: 512, 512 */
        3, 'x', 'y', 'z',                                     /* defs: the ext payload */
        'n', 'e', 'w',                                        /* a newer minor's column */
    };
    n = append_chunk(img, n, content, sizeof content, 0, 2);
    CU_ASSERT_EQUAL_FATAL(rt_write_file(p, img, n), 0);
    fsc_event_t *got = NULL;
    fsc_trace_integrity_t in;
    int rc;
    long k = rt_read_all(p, &got, &in, &rc);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(k, 2);
    CU_ASSERT_EQUAL(got[0].type, FSC_EV_ALLOC);
    CU_ASSERT_EQUAL(got[0].time_ns, 5);
    CU_ASSERT_EQUAL(got[0].addr, 1);
    CU_ASSERT_EQUAL(got[0].size, 512);
    CU_ASSERT_EQUAL(got[1].type, FSC_EV_FREE_REQUESTED);
    CU_ASSERT_EQUAL(got[1].time_ns, 6);
    CU_ASSERT_EQUAL(got[1].addr, 1);
    CU_ASSERT_EQUAL(in.clean_close, 0); /* no end record */
    free(got);

    /* An unknown fixed-layout type cannot be skipped: a format error. */
    const uint8_t bad_content[] = {15, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3A};
    n = append_chunk(img, hl, bad_content, sizeof bad_content, 0, 0);
    CU_ASSERT_EQUAL_FATAL(rt_write_file(p, img, n), 0);
    k = rt_read_all(p, &got, &in, &rc);
    CU_ASSERT_EQUAL(k, 0);
    CU_ASSERT_EQUAL(rc, FSC_EFORMAT);
    free(got);
}

static void test_hostile_sizes(void)
{
    /* A descriptor claiming a 4 GiB frame must not make the reader
     * allocate it: the file is shorter, so it is a damaged tail. */
    const char *p = fsc_test_path("huge.fstrace");
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = 1;
    fsc_recorder_t *w = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(p, &k_hdr, &o, &w, &err), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_close(w), 0);
    size_t len = 0;
    char *base = fsc_test_slurp(p, &len);
    uint8_t img[4096];
    size_t hl = 8 + fsc__get_le32((uint8_t *)base + 4);
    memcpy(img, base, hl);
    free(base);
    uint8_t *d = img + hl;
    fsc__put_le32(d, FSC__SKIP_CHUNK);
    fsc__put_le32(d + 4, FSC__CHUNK_DESC_LEN);
    fsc__put_le64(d + 8, 0);
    fsc__put_le32(d + 16, 1000);
    fsc__put_le32(d + 20, 0xFFFFFFF0u);
    fsc__put_le32(d + 24, 0xFFFFFFF0u);
    fsc__put_le32(d + 28, fsc__crc32(d + 8, 20));
    memset(d + 32, 0xAB, 64);
    CU_ASSERT_EQUAL_FATAL(rt_write_file(p, img, hl + 96), 0);
    fsc_event_t *got = NULL;
    fsc_trace_integrity_t in;
    int rc;
    long k = rt_read_all(p, &got, &in, &rc);
    CU_ASSERT_EQUAL(k, 0);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(in.bytes_lost, 96);
    CU_ASSERT_EQUAL(in.events_lost, 1000);
    CU_ASSERT_EQUAL(in.events_lost_known, 0);
    free(got);
}

static void test_writer_rejects_bad_input(void)
{
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = 1;
    fsc_recorder_t *w = NULL;
    fsc_err_t err;
    const char *p = fsc_test_path("rej.fstrace");
    o.chunk_bytes = 1u << 30;
    CU_ASSERT_EQUAL(fsc_recorder_open(p, NULL, &o, &w, &err), FSC_EINVAL);
    CU_ASSERT_FALSE(fsc_test_file_exists(p));
    o.chunk_bytes = 0;
    /* a folder that does not exist: not found (the command's exit 2) */
    CU_ASSERT_EQUAL(fsc_recorder_open(fsc_test_path("no/such/dir/x.fstrace"), NULL, &o, &w, &err),
                    FSC_ENOENT);
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(p, NULL, &o, &w, &err), 0);
    fsc_event_t e = {.type = 0};
    CU_ASSERT_EQUAL(fsc_recorder_write(w, &e), FSC_EINVAL);
    e.type = 40;
    CU_ASSERT_EQUAL(fsc_recorder_write(w, &e), FSC_EINVAL);
    e.type = FSC_EV_ALLOC;
    e.tag = 5; /* never defined */
    CU_ASSERT_EQUAL(fsc_recorder_write(w, &e), FSC_EINVAL);
    uint32_t id;
    CU_ASSERT_EQUAL(fsc_recorder_tag_node(w, 9, "x", 1, &id), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_recorder_close(w), FSC_EINVAL); /* first error is reported */
    CU_ASSERT_EQUAL(fsc_recorder_close(NULL), 0);
    fsc_trace_close(NULL);
    /* Nothing bad was written: the trace is clean and empty. */
    fsc_event_t *got = NULL;
    fsc_trace_integrity_t in;
    int rc;
    CU_ASSERT_EQUAL(rt_read_all(p, &got, &in, &rc), 0);
    CU_ASSERT_EQUAL(in.clean_close, 1);
    free(got);
}

static void test_mode_parse(void)
{
    uint64_t n = 99;
    CU_ASSERT_EQUAL(fsc_trace_mode_parse(NULL, &n), 0);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(fsc_trace_mode_parse("stream", &n), 0);
    CU_ASSERT_EQUAL(fsc_trace_mode_parse("ring:1000", &n), 0);
    CU_ASSERT_EQUAL(n, 1000);
    CU_ASSERT_EQUAL(fsc_trace_mode_parse("ring:0", &n), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_trace_mode_parse("ring:", &n), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_trace_mode_parse("ring:-5", &n), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_trace_mode_parse("ring:12x", &n), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_trace_mode_parse("loop", &n), FSC_EINVAL);
}

static void test_varint_limits(void)
{
    uint8_t b[16];
    uint64_t vals[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t *e = fsc__put_varint(b, vals[i]);
        const uint8_t *p = b;
        uint64_t v = 0;
        CU_ASSERT_EQUAL(fsc__get_varint(&p, e, &v), 0);
        CU_ASSERT_EQUAL(v, vals[i]);
        CU_ASSERT_PTR_EQUAL(p, e);
        p = b;
        CU_ASSERT_EQUAL(fsc__get_varint(&p, e - 1, &v), -1); /* cut short */
    }
    memset(b, 0xFF, sizeof b); /* never terminates within 10 bytes */
    const uint8_t *p = b;
    uint64_t v;
    CU_ASSERT_EQUAL(fsc__get_varint(&p, b + sizeof b, &v), -1);
    CU_ASSERT_EQUAL(fsc__unzigzag(5, fsc__zigzag(3, 5)), 3);
    CU_ASSERT_EQUAL(fsc__unzigzag(0, fsc__zigzag(UINT64_MAX, 0)), UINT64_MAX);
    CU_ASSERT_EQUAL(fsc__zigzag(4, 5), 1);
    CU_ASSERT_EQUAL(fsc__zigzag(6, 5), 2);
    /* The standard CRC-32 check value. */
    CU_ASSERT_EQUAL(fsc__crc32((const uint8_t *)"123456789", 9), 0xCBF43926u);
}

static void test_long_marker_text(void)
{
    /* A marker larger than a whole chunk: the chunk grows for it. Longer
     * than the 64 KiB limit: refused by write, cut by the sink. */
    const char *p = fsc_test_path("marker.fstrace");
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = 1;
    o.chunk_bytes = 4096;
    fsc_recorder_t *w = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(p, NULL, &o, &w, &err), 0);
    size_t big = 70000;
    char *text = malloc(big);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    for (size_t i = 0; i < big; i++)
        text[i] = (char)('a' + i % 26);
    fsc_event_t e = {.type = FSC_EV_MARKER, .time_ns = 5, .text = text, .text_len = 65536};
    CU_ASSERT_EQUAL(fsc_recorder_write(w, &e), 0);
    e.text_len = (uint32_t)big;
    CU_ASSERT_EQUAL(fsc_recorder_write(w, &e), FSC_EINVAL);
    fsc_recorder_sink(w, &e);
    fsc_recorder_close(w);
    fsc_trace_reader_t *r = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(p, &r, &err), 0);
    fsc_event_t ev;
    int n = 0;
    while (fsc_trace_next(r, &ev) == 1) {
        CU_ASSERT_EQUAL(ev.type, FSC_EV_MARKER);
        CU_ASSERT_EQUAL(ev.text_len, 65536);
        CU_ASSERT(ev.text_len == 65536 && memcmp(ev.text, text, 65536) == 0);
        n++;
    }
    CU_ASSERT_EQUAL(n, 2);
    fsc_trace_close(r);
    free(text);
}

static void test_path_expand(void)
{
    char b[64];
    CU_ASSERT_EQUAL(fsc_trace_path_expand("run.fstrace", 42, -1, 1, b, sizeof b), 0);
    CU_ASSERT_STRING_EQUAL(b, "run.fstrace");
    CU_ASSERT_EQUAL(fsc_trace_path_expand("/t/run.%p.fstrace", 42, -1, 1, b, sizeof b), 0);
    CU_ASSERT_STRING_EQUAL(b, "/t/run.42.fstrace");
    CU_ASSERT_EQUAL(fsc_trace_path_expand("r%r-%p%%.fstrace", 7, 3, 8, b, sizeof b), 0);
    CU_ASSERT_STRING_EQUAL(b, "r3-7%.fstrace");
    /* Ranks of one job never share a file. */
    CU_ASSERT_EQUAL(fsc_trace_path_expand("/t/run.fstrace", 7, 3, 8, b, sizeof b), 0);
    CU_ASSERT_STRING_EQUAL(b, "/t/run.rank3.fstrace");
    CU_ASSERT_EQUAL(fsc_trace_path_expand("/t/run", 7, 0, 2, b, sizeof b), 0);
    CU_ASSERT_STRING_EQUAL(b, "/t/run.rank0");
    CU_ASSERT_EQUAL(fsc_trace_path_expand("/t/run.fstrace", 7, 0, 1, b, sizeof b), 0);
    CU_ASSERT_STRING_EQUAL(b, "/t/run.fstrace");
    CU_ASSERT_EQUAL(fsc_trace_path_expand("%p%p%p%p", 1234567, -1, 1, b, 12), FSC_EINVAL);
}

static void test_reads_version_1(void)
{
    /* Files of format 1.0 (records one after another, written before the
     * column layout) still read back to the same events. The file is the
     * golden trace as version 1.0 wrote it. */
    check_events_v(fsc_test_data("recorder_golden_v1.fstrace"), 1, 0);
}

static void test_reads_version_2_0(void)
{
    /* The golden trace as format 2.0 wrote it (before DEVICE_MEMORY
     * records) reads back to the same events. */
    check_events_v(fsc_test_data("recorder_golden_v2_0.fstrace"), 2, 0);
}

static void test_reads_version_2_1(void)
{
    /* The golden trace as format 2.1 wrote it (before POOL records): the
     * same events, every one in the default pool. */
    check_events_v(fsc_test_data("recorder_golden_v2_1.fstrace"), 2, 1);
}

static void test_reads_version_2_2(void)
{
    /* The golden trace as format 2.2 wrote it (before the header's host):
     * the same events and pools, no host. */
    check_events_v(fsc_test_data("recorder_golden_v2_2.fstrace"), 2, 2);
}

static void test_reads_version_2_3(void)
{
    /* The golden trace as format 2.3 wrote it (before SKIPPED records):
     * the same events, pools and host, nothing said to be left out. */
    check_events_v(fsc_test_data("recorder_golden_v2_3.fstrace"), 2, 3);
}

static const fsc_test_case_t k_tests[] = {
    {"round_trip_every_field", test_round_trip_every_field},
    {"golden_bytes", test_golden_bytes},
    {"reads_version_1", test_reads_version_1},
    {"reads_version_2_0", test_reads_version_2_0},
    {"reads_version_2_1", test_reads_version_2_1},
    {"reads_version_2_2", test_reads_version_2_2},
    {"reads_version_2_3", test_reads_version_2_3},
    {"cut_at_every_byte", test_cut_at_every_byte},
    {"damaged_byte_anywhere", test_damaged_byte_anywhere},
    {"not_a_trace", test_not_a_trace},
    {"newer_major_refused", test_newer_major_refused},
    {"newer_minor_records_skipped", test_newer_minor_records_skipped},
    {"hostile_sizes", test_hostile_sizes},
    {"writer_rejects_bad_input", test_writer_rejects_bad_input},
    {"mode_parse", test_mode_parse},
    {"path_expand", test_path_expand},
    {"varint_limits", test_varint_limits},
    {"long_marker_text", test_long_marker_text},
    {NULL, NULL},
};

FSC_TEST_MAIN("recorder", k_tests)
