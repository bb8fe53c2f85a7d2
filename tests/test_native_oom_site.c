/*
 * test_native_oom_site.c — the failed request's call site on the native
 * recorder's OOM event, with history's stacks off: PyTorch's `oom` entry
 * carries no frames, so the tracker flags it as one whose stack comes
 * later and fragscope_torch's OOM observer hands over the failing thread's
 * Python stack (tools/torch/fragscope_native.cpp, oom_site). Here, on
 * synthetic entries as the tracker pushes them: the OOM event is tagged
 * with those frames below the thread's tag, and the verdict names the line
 * that asked.
 */
#include <stdio.h>
#include <string.h>

#include "fragscope/native.h"
#include "fragscope/recorder.h"
#include "fsc_test.h"

#define MiB (1024ull * 1024)
#define FR(file, line, fn) {file, sizeof file - 1, fn, sizeof fn - 1, line}

static uint64_t g_time = 1000;

static void push(fsc_native_t *n, int action, uint64_t addr, uint64_t size, int flags)
{
    fsc_native_entry_t e;
    memset(&e, 0, sizeof e);
    e.action = (uint8_t)action;
    e.flags = (uint8_t)flags;
    e.tag = fsc_tag_current();
    e.addr = addr;
    e.size = size;
    e.time = g_time += 1000;
    CU_ASSERT_EQUAL(fsc_native_push(n, &e), 1);
}

/* One run: 6 GiB cap, 5 GiB live, a 2 GiB request refused; the observer's
 * frames (innermost first) handed over after the OOM entry, under the tag
 * `tag` (NULL: none). Returns the OOM event's tag path. */
static void record_oom(const char *name, const char *tag, char *path, size_t cap)
{
    static const fsc_native_frame_t site[] = {FR("/home/u/prog.py", 12, "asks_for_memory"),
                                              FR("/home/u/prog.py", 15, "train_step"),
                                              FR("/home/u/prog.py", 17, "<module>")};
    const char *trace = fsc_test_path(name);
    fsc_native_opts_t o;
    memset(&o, 0, sizeof o);
    o.path = trace;
    o.devices = 1;
    o.producer = "fragscope test native";
    o.flush_interval_ms = 1;
    fsc_native_t *n = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_native_open(&o, &n, &err), 0);
    fsc_native_device_t d;
    memset(&d, 0, sizeof d);
    d.name = "Test GPU";
    d.total = 80ull << 30;
    d.free = 79ull << 30;
    d.capacity = 6ull << 30;
    d.config = "";
    CU_ASSERT_EQUAL_FATAL(fsc_native_begin_device(n, &d, &err), 0);
    push(n, FSC_NATIVE_SEGMENT_ALLOC, 0x7f0000000000ull, 5ull << 30, 0);
    push(n, FSC_NATIVE_ALLOC, 0x7f0000000000ull, 5ull << 30, 0);
    if (tag != NULL)
        fsc_tag_push(tag);
    push(n, FSC_NATIVE_OOM, 74ull << 30, 2ull << 30, FSC_NATIVE_F_STACK);
    if (tag != NULL)
        fsc_tag_pop();
    fsc_native_stats_t st;
    CU_ASSERT_EQUAL(fsc_native_flush(n), 0);
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 2); /* the OOM waits for its call site */
    uint32_t node = fsc_native_stack_node(site, 3);
    CU_ASSERT_NOT_EQUAL(node, 0);
    CU_ASSERT_EQUAL(fsc_native_stacks(n, 0, &node, 1), 0);
    CU_ASSERT_EQUAL(fsc_native_close(n), 0);
    fsc_native_get_stats(n, &st);
    CU_ASSERT_EQUAL(st.entries, 3);
    CU_ASSERT_EQUAL(st.unnamed_stacks, 0);
    fsc_native_destroy(n);

    fsc_trace_reader_t *r = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(trace, &r, &err), 0);
    fsc_event_t ev;
    path[0] = '\0';
    while (fsc_trace_next(r, &ev) == 1)
        if (ev.type == FSC_EV_OOM)
            fsc_trace_tag_path(r, ev.tag, path, cap);
    fsc_trace_close(r);
}

static void verdict(const char *trace, const char *db, char *out, size_t cap)
{
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, cap, "%s analyze %s -o %s", fsc_test_fragscope(),
                                      fsc_test_path(trace), fsc_test_path(db)),
                          0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, cap, "%s report %s --format verdict", fsc_test_fragscope(),
                                fsc_test_path(db)),
                    0);
}

static void test_oom_call_site(void)
{
    char path[1024];
    static char out[16384];
    record_oom("site.fstrace", NULL, path, sizeof path);
    CU_ASSERT_STRING_EQUAL(path, "/home/u/prog.py:17:<module>//home/u/prog.py:15:train_step/"
                                 "/home/u/prog.py:12:asks_for_memory");
    verdict("site.fstrace", "site.db", out, sizeof out);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "2.00 GiB requested at prog.py:12 asks_for_memory ← "
                                       "prog.py:15 train_step ← prog.py:17 <module>"));

    /* under a module tag (watch()): the frames below it */
    record_oom("site_tag.fstrace", "GPT2LMHeadModel", path, sizeof path);
    CU_ASSERT_STRING_EQUAL(path, "GPT2LMHeadModel//home/u/prog.py:17:<module>/"
                                 "/home/u/prog.py:15:train_step//home/u/prog.py:12:asks_for_memory");
    verdict("site_tag.fstrace", "site_tag.db", out, sizeof out);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "requested at prog.py:12 asks_for_memory ← "
                                       "prog.py:15 train_step ← prog.py:17 <module>"));
}

static const fsc_test_case_t k_tests[] = {
    {"oom_call_site", test_oom_call_site},
    {NULL, NULL},
};

FSC_TEST_MAIN("native_oom_site", k_tests)
