/*
 * test_source.c — the one way in from a file (fragscope/source.h) and
 * fsc_analyze_file: detection by content, tags defined before the events
 * that carry them (parents first), the same counts through the source as
 * the database records, and errors that name the file they are about.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/analyzer.h"
#include "fragscope/source.h"
#include "fsc_test.h"

typedef struct seen {
    int headers;
    uint64_t events, tags, bad_order;
    uint8_t defined[4096];
} seen_t;

static int on_header(void *ud, const fsc_trace_header_t *hdr, fsc_err_t *err)
{
    (void)hdr;
    (void)err;
    ((seen_t *)ud)->headers++;
    return 0;
}

static int on_tag(void *ud, uint32_t node, uint32_t parent, const char *name, size_t len,
                  fsc_err_t *err)
{
    (void)name;
    (void)len;
    (void)err;
    seen_t *s = ud;
    s->tags++;
    if (node == 0 || node >= sizeof s->defined || s->defined[node] ||
        (parent != 0 && (parent >= sizeof s->defined || !s->defined[parent])))
        s->bad_order++;
    else
        s->defined[node] = 1;
    return 0;
}

static int on_event(void *ud, const fsc_event_t *ev, fsc_err_t *err)
{
    (void)err;
    seen_t *s = ud;
    s->events++;
    if (ev->tag != 0 && (ev->tag >= sizeof s->defined || !s->defined[ev->tag]))
        s->bad_order++;
    return 0;
}

static void read_all(const char *path, int kind, seen_t *s, fsc_source_info_t *info)
{
    memset(s, 0, sizeof *s);
    fsc_source_t *src = NULL;
    fsc_err_t err;
    fsc_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(fsc_source_open(path, NULL, &src, &err), 0);
    CU_ASSERT_EQUAL(fsc_source_kind(src), kind);
    fsc_source_sink_t sink = {s, on_header, on_tag, on_event};
    CU_ASSERT_EQUAL(fsc_source_run(src, &sink, &err), 0);
    CU_ASSERT_NOT_EQUAL(fsc_source_run(src, &sink, &err), 0); /* once only */
    fsc_source_info(src, info);
    fsc_source_close(src);
}

static void test_detect(void)
{
    CU_ASSERT_EQUAL(fsc_source_detect(fsc_test_data("recorder_golden.fstrace")), FSC_SOURCE_TRACE);
    CU_ASSERT_EQUAL(fsc_source_detect(fsc_test_data("pytorch/tiny.json")), FSC_SOURCE_SNAPSHOT);
    CU_ASSERT_EQUAL(fsc_source_detect(fsc_test_data("pytorch/tiny.p0.pickle")),
                    FSC_SOURCE_SNAPSHOT);
    CU_ASSERT_EQUAL(fsc_source_detect(fsc_test_data("make_fixtures.py")), FSC_SOURCE_UNKNOWN);
    CU_ASSERT_EQUAL(fsc_source_detect(fsc_test_path("no-such-file")), FSC_ENOENT);
}

static void test_snapshot_tags_first(void)
{
    seen_t s;
    fsc_source_info_t info;
    read_all(fsc_test_data("pytorch/tiny.json"), FSC_SOURCE_SNAPSHOT, &s, &info);
    CU_ASSERT_EQUAL(s.headers, 1);
    CU_ASSERT_EQUAL(s.events, 21); /* meta.events_total of its run database */
    CU_ASSERT_EQUAL(info.events, 21);
    CU_ASSERT_EQUAL(info.import.events, 21);
    CU_ASSERT_TRUE(s.tags >= 3);
    CU_ASSERT_EQUAL(s.bad_order, 0);
    CU_ASSERT_FALSE(info.have_integrity);
    CU_ASSERT_PTR_NULL(info.error_file);
}

static void test_trace_tags_first(void)
{
    seen_t s;
    fsc_source_info_t info;
    read_all(fsc_test_data("recorder_golden.fstrace"), FSC_SOURCE_TRACE, &s, &info);
    CU_ASSERT_EQUAL(s.headers, 1);
    CU_ASSERT_TRUE(s.events > 0);
    CU_ASSERT_EQUAL(s.bad_order, 0);
    CU_ASSERT_TRUE(info.have_integrity);
    CU_ASSERT_EQUAL(info.integrity.events, s.events);
}

static void test_errors_name_the_file(void)
{
    const char *missing = fsc_test_path("missing.fstrace");
    fsc_source_t *src = NULL;
    fsc_err_t err;
    fsc_err_clear(&err);
    CU_ASSERT_EQUAL(fsc_source_open(missing, NULL, &src, &err), FSC_ENOENT);
    CU_ASSERT_PTR_NULL(src);
    CU_ASSERT_EQUAL(strncmp(fsc_err_msg(&err), missing, strlen(missing)), 0);

    /* a file of neither kind says both were tried */
    const char *junk = fsc_test_path("junk.pickle");
    FILE *f = fopen(junk, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("not a snapshot, not a trace\n", f);
    fclose(f);
    fsc_err_clear(&err);
    CU_ASSERT_EQUAL(fsc_source_open(junk, NULL, &src, &err), FSC_EFORMAT);
    char want[1200];
    snprintf(want, sizeof want, "%s: neither a fragscope trace nor a PyTorch snapshot", junk);
    CU_ASSERT_STRING_EQUAL(fsc_err_msg(&err), want);
    unlink(junk);

    /* through the analysis: the input, then the output */
    fsc_analysis_summary_t sum;
    fsc_source_info_t info;
    fsc_err_clear(&err);
    CU_ASSERT_EQUAL(fsc_analyze_file(missing, fsc_test_path("x.db"), NULL, &sum, &info, &err),
                    FSC_ENOENT);
    CU_ASSERT_PTR_EQUAL(info.error_file, missing);
    const char *bad_out = fsc_test_path("no-such-dir/run.db");
    const char *in = fsc_test_data("pytorch/tiny.json");
    fsc_err_clear(&err);
    CU_ASSERT_NOT_EQUAL(fsc_analyze_file(in, bad_out, NULL, &sum, &info, &err), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(info.error_file);
    CU_ASSERT_EQUAL(strncmp(fsc_err_msg(&err), info.error_file, strlen(info.error_file)), 0);

    /* a contradicting event names the input and the event */
    fsc_err_clear(&err);
    const char *strict = fsc_test_data("recorder_golden_v1.fstrace");
    CU_ASSERT_EQUAL(fsc_analyze_file(strict, fsc_test_path("y.db"), NULL, &sum, &info, &err),
                    FSC_ESTATE);
    CU_ASSERT_PTR_EQUAL(info.error_file, strict);
    CU_ASSERT_EQUAL(strncmp(fsc_err_msg(&err), strict, strlen(strict)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&err), ": event 1 (segment_map"));
}

static void test_analyze_file(void)
{
    fsc_analyze_opts_t o;
    memset(&o, 0, sizeof o);
    fsc_analysis_summary_t sum;
    fsc_source_info_t info;
    fsc_err_t err;
    fsc_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(fsc_analyze_file(fsc_test_data("pytorch/tiny.json"),
                                           fsc_test_path("tiny.db"), &o, &sum, &info, &err),
                          0);
    CU_ASSERT_EQUAL(sum.events, 21);
    CU_ASSERT_EQUAL(info.kind, FSC_SOURCE_SNAPSHOT);
    CU_ASSERT_TRUE(fsc_test_file_exists(fsc_test_path("tiny.db")));
}

/* ---- the sink on its own thread (source_pipe.c) ------------------------- */

typedef struct order {
    uint64_t events, tags, hash;
    uint64_t fail_at; /* 0: never */
} order_t;

static void mix(order_t *o, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        o->hash = (o->hash ^ b[i]) * 0x100000001b3ull;
}

static int ord_header(void *ud, const fsc_trace_header_t *hdr, fsc_err_t *err)
{
    (void)ud, (void)hdr, (void)err;
    return 0;
}

static int ord_tag(void *ud, uint32_t node, uint32_t parent, const char *name, size_t len,
                   fsc_err_t *err)
{
    (void)err;
    order_t *o = ud;
    o->tags++;
    mix(o, &node, sizeof node);
    mix(o, &parent, sizeof parent);
    mix(o, name, len);
    return 0;
}

static int ord_event(void *ud, const fsc_event_t *ev, fsc_err_t *err)
{
    order_t *o = ud;
    if (++o->events == o->fail_at)
        return fsc_err_set(err, FSC_EIO, "consumer gave up at event %llu",
                           (unsigned long long)o->events);
    mix(o, &ev->type, sizeof ev->type);
    mix(o, &ev->addr, sizeof ev->addr);
    mix(o, &ev->size, sizeof ev->size);
    mix(o, &ev->tag, sizeof ev->tag);
    mix(o, &ev->time_ns, sizeof ev->time_ns);
    if (ev->type == FSC_EV_MARKER)
        mix(o, ev->text, ev->text_len);
    return 0;
}

static int run_order(const char *path, order_t *o, fsc_err_t *err)
{
    fsc_source_t *src = NULL;
    fsc_err_clear(err);
    CU_ASSERT_EQUAL_FATAL(fsc_source_open(path, NULL, &src, err), 0);
    fsc_source_sink_t sink = {o, ord_header, ord_tag, ord_event};
    int rc = fsc_source_run(src, &sink, err);
    fsc_source_close(src);
    return rc;
}

/* A snapshot's sink runs on a thread of its own: it sees the same tags and
 * events in the same order as on the caller's thread (FRAGSCOPE_THREADS=1),
 * and a failing sink stops the import with its own error, called no more. */
static void test_snapshot_sink_thread(void)
{
    const char *path = fsc_test_data("pytorch/gpt2_varlen.pickle");
    order_t a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
    fsc_err_t err;
    CU_ASSERT_EQUAL(run_order(path, &a, &err), 0);
    setenv("FRAGSCOPE_THREADS", "1", 1);
    CU_ASSERT_EQUAL(run_order(path, &b, &err), 0);
    unsetenv("FRAGSCOPE_THREADS");
    CU_ASSERT_EQUAL(a.events, 108585); /* what `fragscope import` reports for it */
    CU_ASSERT_EQUAL(a.events, b.events);
    CU_ASSERT_EQUAL(a.tags, b.tags);
    CU_ASSERT_EQUAL(a.hash, b.hash);

    order_t f = {0, 0, 0, 50000};
    CU_ASSERT_EQUAL(run_order(path, &f, &err), FSC_EIO);
    CU_ASSERT_EQUAL(f.events, 50000);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "consumer gave up at event 50000"));
}

static const fsc_test_case_t k_tests[] = {
    {"snapshot_sink_thread", test_snapshot_sink_thread},
    {"detect", test_detect},
    {"snapshot_tags_first", test_snapshot_tags_first},
    {"trace_tags_first", test_trace_tags_first},
    {"errors_name_the_file", test_errors_name_the_file},
    {"analyze_file", test_analyze_file},
    {NULL, NULL},
};

FSC_TEST_MAIN("source", k_tests)
