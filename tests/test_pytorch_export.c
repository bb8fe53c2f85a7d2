/*
 * test_pytorch_export.c — `fragscope import` and `fragscope export`: the
 * trace written by import holds exactly the importer's events; export
 * writes a snapshot that Python's pickle reads and that imports back to the
 * same events (import → export → import); and both commands fail cleanly,
 * leaving no output file, on bad input.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "fsc_test.h"
#include "pickle.h"
#include "test_pytorch_common.h"

static void expect_same(const tp_col_t *a, const tp_col_t *b, const char *what)
{
    const char *why = "";
    long at = tp_diff(a, b, 0, 0, &why);
    if (at >= 0)
        fprintf(stderr, "\n%s: streams differ at event %ld (%s) of %zu/%zu\n", what, at, why,
                a->n, b->n);
    CU_ASSERT_EQUAL(at, -1);
}

/* snapshot → import (CLI) → trace → export (CLI) → pickle → import */
static void roundtrip(const char *rel, size_t min_events)
{
    const char *snap = fsc_test_data(rel);
    char trace[512], out[600], base[128];
    const char *slash = strrchr(rel, '/');
    snprintf(base, sizeof base, "%s", slash ? slash + 1 : rel);
    snprintf(trace, sizeof trace, "%s", fsc_test_path(base));
    strcat(trace, ".fstrace");
    snprintf(out, sizeof out, "%s.out.pickle", trace);

    tp_col_t direct, from_trace, again;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(tp_import(snap, -1, 0, &direct, &st, &err), 0);
    CU_ASSERT_FATAL(direct.n >= min_events);

    char msg[4096];
    int rc = fsc_test_sh(msg, sizeof msg, "%s import %s -o %s", fsc_test_fragscope(), snap,
                         trace);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(tp_read_trace(trace, &from_trace), 0);
    expect_same(&direct, &from_trace, "import vs trace");
    CU_ASSERT_STRING_EQUAL(from_trace.producer, "pytorch snapshot import");
    CU_ASSERT_EQUAL(from_trace.flags, direct.flags);
    if (direct.clock_origin_ns != 0) /* 0: no history, the recorder stamps "now" */
        CU_ASSERT_EQUAL(from_trace.clock_origin_ns, direct.clock_origin_ns);

    rc = fsc_test_sh(msg, sizeof msg, "%s export %s --pytorch-snapshot %s",
                     fsc_test_fragscope(), trace, out);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "history entries"));
    CU_ASSERT_EQUAL_FATAL(tp_import(out, -1, 0, &again, &st, &err), 0);
    expect_same(&direct, &again, "import vs export+import");
    CU_ASSERT_STRING_EQUAL(again.config, direct.config);
    CU_ASSERT_EQUAL(again.flags, direct.flags);
    if (direct.clock_origin_ns != 0)
        CU_ASSERT_EQUAL(again.clock_origin_ns, direct.clock_origin_ns);
    tp_free(&direct);
    tp_free(&from_trace);
    tp_free(&again);
}

static void test_roundtrip_tiny(void) { roundtrip("pytorch/tiny.p4.pickle", 21); }
static void test_roundtrip_midrun(void) { roundtrip("pytorch/midrun.pickle", 24); }
static void test_roundtrip_expandable(void) { roundtrip("pytorch/expandable.pickle", 9); }
static void test_roundtrip_segments_only(void) { roundtrip("pytorch/segments_only.json", 8); }
static void test_roundtrip_real_oom(void) { roundtrip("pytorch/gpt2m_oom_12g.pickle", 3074); }

/* A run of fragscope's own allocator → export → import: the importer's
 * rules must reproduce every block event the allocator emitted. Times are
 * rebased to the first entry at microsecond resolution, and markers have no
 * PyTorch entry, so those two are left out of the comparison. */
static void sim_roundtrip(const char *name, const char *sim_args)
{
    char trace[512], out[600], again_path[600], msg[4096];
    snprintf(trace, sizeof trace, "%s", fsc_test_path(name));
    snprintf(out, sizeof out, "%s.pickle", trace);
    snprintf(again_path, sizeof again_path, "%s.again.fstrace", trace);
    const char *fs = fsc_test_fragscope();
    int rc = fsc_test_sh(msg, sizeof msg, "%s simulate %s -o %s", fs, sim_args, trace);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(msg, sizeof msg, "%s export %s --pytorch-snapshot %s",
                                      fs, trace, out), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s", fs, out,
                                      again_path), 0);
    tp_col_t a, b;
    CU_ASSERT_EQUAL_FATAL(tp_read_trace(trace, &a), 0);
    CU_ASSERT_EQUAL_FATAL(tp_read_trace(again_path, &b), 0);
    CU_ASSERT_FATAL(a.n > 1000);
    const char *why = "";
    long at = tp_diff(&a, &b, 1, 1, &why);
    if (at >= 0)
        fprintf(stderr, "\n%s: differs at event %ld (%s)\n", name, at, why);
    CU_ASSERT_EQUAL(at, -1);
    CU_ASSERT_EQUAL(a.peak_alloc, b.peak_alloc);
    CU_ASSERT_EQUAL(a.peak_res, b.peak_res);
    CU_ASSERT_STRING_EQUAL(a.config, b.config);
    for (size_t i = 1; i < b.n; i++)
        CU_ASSERT_FATAL(b.r[i].ev.time_ns >= b.r[i - 1].ev.time_ns);
    tp_free(&a);
    tp_free(&b);
}

static void test_sim_roundtrip(void) { sim_roundtrip("sim.fstrace", "--workload gpt2 --steps 2"); }

static void test_sim_roundtrip_expandable_oom(void)
{
    sim_roundtrip("sime.fstrace", "--workload gpt2 --steps 3 --capacity 12GiB "
                                  "--config expandable_segments:True");
}

static void test_python_reads_export(void)
{
    const char *snap = fsc_test_data("pytorch/tiny.p4.pickle");
    const char *trace = fsc_test_path("py.fstrace");
    const char *out = fsc_test_path("py.pickle");
    char msg[4096];
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s",
                                      fsc_test_fragscope(), snap, trace), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(msg, sizeof msg, "%s export %s --pytorch-snapshot %s",
                                      fsc_test_fragscope(), trace, out), 0);
    CU_ASSERT_EQUAL(strncmp(msg, "wrote ", 6), 0);
    /* the summary line names the file and the 14 entries */
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, ": 14 history entries"));
    int st = fsc_test_sh(
        msg, sizeof msg,
        "python3 -c 'import pickle,sys\n"
        "d = pickle.load(open(sys.argv[1], \"rb\"))\n"
        "t = d[\"device_traces\"][0]\n"
        "print(len(t), [e[\"action\"] for e in t][:3], t[1][\"size\"], t[11][\"device_free\"])\n"
        "print(t[1][\"frames\"])\n"
        "s = d[\"segments\"]\n"
        "print(len(s), s[0][\"segment_type\"],\n"
        "      [(b[\"size\"], b[\"state\"]) for b in s[0][\"blocks\"]])\n"
        "a = d[\"allocator_settings\"]\n"
        "print(a[\"max_split_size\"], a[\"expandable_segments\"])' %s",
        out);
    if (st == 127) {
        fprintf(stderr, "\n(python3 not found: Python check skipped)\n");
        return;
    }
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_STRING_EQUAL(
        msg,
        "14 ['segment_alloc', 'alloc', 'alloc'] 1000 123456\n"
        "[{'filename': 'model.py', 'line': 10, 'name': 'forward'}, "
        "{'filename': 'train.py', 'line': 5, 'name': 'main'}]\n"
        "1 large [(3000320, 'inactive'), (17971200, 'active_allocated')]\n"
        "-1 False\n");
}

/* No file in the scratch directory starts with prefix (no partial output). */
static int leftovers(const char *prefix)
{
    DIR *d = opendir(fsc_test_tmpdir());
    int n = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    if (d)
        closedir(d);
    return n;
}

static void test_cli_errors(void)
{
    char msg[4096];
    const char *fs = fsc_test_fragscope();
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import %s", fs,
                                fsc_test_data("pytorch/tiny.p4.pickle")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "-o"));
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import -o x.fstrace", fs), 2);
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s --bogus", fs,
                                fsc_test_data("pytorch/tiny.p4.pickle"),
                                fsc_test_path("e0.fstrace")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "unknown option '--bogus'"));

    /* bad snapshot: one line naming the file, exit 2, no output */
    const char *bad = fsc_test_data("pytorch/hostile/huge_len.pickle");
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s", fs, bad,
                                fsc_test_path("e1.fstrace")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "huge_len.pickle: offset 2: BINUNICODE length"));
    CU_ASSERT_EQUAL(strchr(msg, '\n'), msg + strlen(msg) - 1);
    CU_ASSERT_EQUAL(leftovers("e1.fstrace"), 0);

    /* contradicting history: exit 2, no output; --lenient imports it */
    const char *uf = fsc_test_data("pytorch/unknown_free.pickle");
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s", fs, uf,
                                fsc_test_path("e2.fstrace")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "device_traces[0][1]"));
    CU_ASSERT_EQUAL(leftovers("e2.fstrace"), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s --lenient", fs, uf,
                                fsc_test_path("e2.fstrace")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "1 entries skipped (--lenient)"));
    CU_ASSERT(fsc_test_file_exists(fsc_test_path("e2.fstrace")));

    /* ambiguous and unknown devices */
    const char *md = fsc_test_data("pytorch/multidev.pickle");
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s", fs, md,
                                fsc_test_path("e3.fstrace")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "devices 0, 1"));
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s --device 7", fs, md,
                                fsc_test_path("e3.fstrace")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "no device 7"));
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s --device x", fs, md,
                                fsc_test_path("e3.fstrace")), 2);
    CU_ASSERT_EQUAL(leftovers("e3.fstrace"), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s --device 1", fs, md,
                                fsc_test_path("e3.fstrace")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "device 1"));

    /* export: not a trace → 2, no output; an output in a folder that does
     * not exist → 2 too (bad input, refused before any work) */
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s export %s --pytorch-snapshot %s", fs,
                                fsc_test_data("pytorch/tiny.p4.pickle"),
                                fsc_test_path("e4.pickle")), 2);
    CU_ASSERT_EQUAL(leftovers("e4.pickle"), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s export %s", fs,
                                fsc_test_path("e2.fstrace")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "--pytorch-snapshot"));
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s export %s --pytorch-snapshot %s", fs,
                                fsc_test_path("e2.fstrace"),
                                fsc_test_path("no-such-dir/out.pickle")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "no-such-dir does not exist"));
}

static void test_export_of_a_cut_trace(void)
{
    /* a trace cut short (a crashed run) exports what it holds, with a warning */
    char msg[4096];
    const char *fs = fsc_test_fragscope();
    const char *trace = fsc_test_path("cut.fstrace");
    const char *out = fsc_test_path("cut.pickle");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s", fs,
                                      fsc_test_data("pytorch/gpt2m_oom_12g.pickle"), trace), 0);
    /* the recorder wrote a chunk at the OOM: cutting the tail loses only the
     * events after it */
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(msg, sizeof msg, "truncate -s -100 %s", trace), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(msg, sizeof msg, "%s export %s --pytorch-snapshot %s", fs,
                                trace, out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "was not closed cleanly"));
    CU_ASSERT(fsc_test_file_exists(out));
    tp_col_t c;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL(tp_import(out, -1, 0, &c, NULL, &err), 0);
    CU_ASSERT(c.n < 3074);
    CU_ASSERT(c.n > 0);
    tp_free(&c);
}

static void test_import_summary(void)
{
    char msg[4096];
    int rc = fsc_test_sh(msg, sizeof msg, "%s import %s -o %s", fsc_test_fragscope(),
                         fsc_test_data("pytorch/gpt2m_oom_12g.pickle"),
                         fsc_test_path("sum.fstrace"));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "pickle snapshot, device 0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "2417 history entries -> 3074 events: 712 allocations"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "284 segments allocated"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "1 OOMs"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "peak allocated 11.95 GiB, peak reserved 11.97 GiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "history complete"));
    rc = fsc_test_sh(msg, sizeof msg, "%s import %s -o %s", fsc_test_fragscope(),
                     fsc_test_data("pytorch/midrun.pickle"), fsc_test_path("mid.fstrace"));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "the history starts mid-run"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "the final segments: 2 segments or mapped ranges"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "reserved), 4 live blocks"));
}

#define BK_BLOCKS 100
#define BK_MIB (1024ull * 1024)

static void bk_int(fsc__pw_t *w, const char *key, uint64_t v)
{
    fsc__pw_cstr(w, key);
    fsc__pw_uint(w, v);
}

/* A snapshot whose one segment holds BK_BLOCKS blocks of 2 MiB, each with
 * a key this version of PyTorch does not write (x_key = its index). */
static void write_block_keys_snapshot(const char *path)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fsc__pw_t *w = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc__pw_open(f, &w), 0);
    const uint64_t base = 0x7f0000000000ull, bs = 2 * BK_MIB, total = BK_BLOCKS * bs;
    fsc__pw_dict_open(w);
    fsc__pw_cstr(w, "segments");
    fsc__pw_list_open(w);
    fsc__pw_dict_open(w);
    bk_int(w, "device", 0);
    bk_int(w, "address", base);
    bk_int(w, "total_size", total);
    bk_int(w, "allocated_size", total);
    bk_int(w, "active_size", total);
    bk_int(w, "requested_size", total);
    bk_int(w, "stream", 0);
    fsc__pw_cstr(w, "segment_type");
    fsc__pw_cstr(w, "large");
    fsc__pw_cstr(w, "segment_pool_id");
    fsc__pw_tuple_open(w);
    fsc__pw_int(w, 0);
    fsc__pw_int(w, 0);
    fsc__pw_tuple_close(w);
    fsc__pw_cstr(w, "is_expandable");
    fsc__pw_bool(w, 0);
    fsc__pw_cstr(w, "frames");
    fsc__pw_list_open(w);
    fsc__pw_list_close(w);
    fsc__pw_cstr(w, "blocks");
    fsc__pw_list_open(w);
    for (int i = 0; i < BK_BLOCKS; i++) {
        fsc__pw_dict_open(w);
        bk_int(w, "address", base + (uint64_t)i * bs);
        bk_int(w, "size", bs);
        bk_int(w, "requested_size", bs);
        fsc__pw_cstr(w, "state");
        fsc__pw_cstr(w, "active_allocated");
        fsc__pw_cstr(w, "frames");
        fsc__pw_list_open(w);
        fsc__pw_list_close(w);
        bk_int(w, "x_key", (uint64_t)i);
        fsc__pw_dict_close(w);
    }
    fsc__pw_list_close(w);
    fsc__pw_dict_close(w);
    fsc__pw_list_close(w);
    fsc__pw_cstr(w, "device_traces");
    fsc__pw_list_open(w);
    fsc__pw_list_open(w);
    for (int i = -1; i < BK_BLOCKS; i++) {
        fsc__pw_dict_open(w);
        fsc__pw_cstr(w, "action");
        fsc__pw_cstr(w, i < 0 ? "segment_alloc" : "alloc");
        bk_int(w, "addr", i < 0 ? base : base + (uint64_t)i * bs);
        bk_int(w, "size", i < 0 ? total : bs);
        bk_int(w, "stream", 0);
        bk_int(w, "time_us", (uint64_t)(i + 2));
        fsc__pw_cstr(w, "frames");
        fsc__pw_list_open(w);
        fsc__pw_list_close(w);
        fsc__pw_dict_close(w);
    }
    fsc__pw_list_close(w);
    fsc__pw_list_close(w);
    fsc__pw_dict_close(w);
    CU_ASSERT_EQUAL_FATAL(fsc__pw_finish(w), 0);
    CU_ASSERT_EQUAL(fclose(f), 0);
}

/* Keys of blocks that the import keeps come back on their own blocks,
 * however many blocks carry them (past 64 they were dropped). */
static void test_export_block_keys(void)
{
    const char *snap = fsc_test_path("bk.pickle");
    char trace[512], out[512], msg[4096];
    snprintf(trace, sizeof trace, "%s", fsc_test_path("bk.fstrace"));
    snprintf(out, sizeof out, "%s", fsc_test_path("bk.out.pickle"));
    write_block_keys_snapshot(snap);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(msg, sizeof msg, "%s import %s -o %s",
                                      fsc_test_fragscope(), snap, trace), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(msg, sizeof msg, "%s export %s --pytorch-snapshot %s",
                                      fsc_test_fragscope(), trace, out), 0);
    size_t len = 0;
    char *data = fsc_test_slurp(out, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    fsc__pdoc_t *doc = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_parse(data, len, out, &doc, &err), 0);
    free(data);
    fsc__pv_t *const *segs, *const *blocks;
    CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(fsc__pv_get(fsc__pdoc_root(doc), "segments"), &segs), 1);
    uint32_t nb = fsc__pv_seq(fsc__pv_get(segs[0], "blocks"), &blocks);
    CU_ASSERT_EQUAL(nb, BK_BLOCKS);
    int kept = 0;
    for (uint32_t i = 0; i < nb; i++) {
        int64_t x = -1, addr = 0;
        fsc__pv_int(fsc__pv_get(blocks[i], "address"), &addr);
        kept += fsc__pv_int(fsc__pv_get(blocks[i], "x_key"), &x) &&
                (uint64_t)addr == 0x7f0000000000ull + (uint64_t)x * 2 * BK_MIB;
    }
    CU_ASSERT_EQUAL(kept, BK_BLOCKS);
    fsc__pdoc_free(doc);
}

static const fsc_test_case_t k_tests[] = {
    {"keys of 100 blocks come back on their blocks", test_export_block_keys},
    {"round trip: tiny", test_roundtrip_tiny},
    {"round trip: wrapped history", test_roundtrip_midrun},
    {"round trip: expandable segments", test_roundtrip_expandable},
    {"round trip: segments only", test_roundtrip_segments_only},
    {"round trip: real OOM snapshot", test_roundtrip_real_oom},
    {"allocator run: export and import agree", test_sim_roundtrip},
    {"allocator run with expandable segments and an OOM", test_sim_roundtrip_expandable_oom},
    {"Python reads the exported snapshot", test_python_reads_export},
    {"command-line errors leave no output", test_cli_errors},
    {"export of a cut trace", test_export_of_a_cut_trace},
    {"import summary", test_import_summary},
    {NULL, NULL},
};

FSC_TEST_MAIN("pytorch_export", k_tests)
