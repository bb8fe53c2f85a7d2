/*
 * test_settings_table.c — the table of allocator settings and the rules it
 * drives: docs/allocator.md's list is the table's, every entry parses and
 * prints back, large_segment_size_mb (segment sizes, expandable pages,
 * minima, the tolerance's default) with exact addresses on the sim backend,
 * per_process_memory_fraction as the cap, throw_on_cudamalloc_oom's OOM
 * without retry, the environment variables' precedence, the ">" entry under
 * the old and the new parser, and the settings named as not modelled.
 *
 * The rules only PyTorch after 2.11 has are checked against what its
 * sources of 2026 say (no newer PyTorch ran on a GPU here): the numbers are
 * worked out by hand from those rules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fsc_test.h"

#define MiB FSC_MiB
#define B0 0x7f0000000000ull

static void test_doc_matches_table(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/allocator.md", FSC_SOURCE_DIR);
    char *doc = fsc_test_slurp(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    const char *b = strstr(doc, "<!-- settings-table:begin -->\n");
    const char *e = strstr(doc, "<!-- settings-table:end -->");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    b += strlen("<!-- settings-table:begin -->\n");
    static char want[1 << 16];
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_settings_doc(want, sizeof want), 0);
    size_t n = (size_t)(e - b);
    if (n != strlen(want) || memcmp(b, want, n) != 0) {
        fprintf(stderr, "\ndocs/allocator.md's settings list differs from the table "
                        "(scripts/gen-settings-doc.sh rewrites it); it should be:\n%s\n",
                want);
        CU_FAIL("docs/allocator.md settings list");
    }
    free(doc);
}

/* A value each kind accepts, and the entry prints back the same. */
static const char *sample(const fsc_alloc_setting_t *s)
{
    switch (s->kind) {
    case FSC_SETTING_MIB: return "64";
    case FSC_SETTING_BOOL: return "True";
    case FSC_SETTING_FRACTION: return "0.5";
    case FSC_SETTING_DIVISIONS: return "[256:1,512:2,>:4]";
    case FSC_SETTING_BACKEND: return "native";
    case FSC_SETTING_RESERVE: return "40G";
    case FSC_SETTING_RESERVE_LIST: return "[tiny:0.05,big:40G]";
    case FSC_SETTING_ACCEPTED: return "True";
    case FSC_SETTING_COUNT: return "8";
    }
    return "";
}

static void test_every_entry_round_trips(void)
{
    size_t n;
    const fsc_alloc_setting_t *t = fsc_alloc_settings(&n);
    CU_ASSERT_TRUE_FATAL(n >= 18 && n <= FSC_ALLOC_SETTINGS_MAX);
    for (size_t i = 0; i < n; i++) {
        char in[256], out[512];
        snprintf(in, sizeof in, "%s:%s", t[i].name, sample(&t[i]));
        fsc_alloc_config_t c, c2;
        fsc_err_t e = {0};
        int rc = fsc_alloc_config_parse(in, &c, &e);
        if (rc != 0)
            fprintf(stderr, "\n  %s: %s\n", in, e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_TRUE(fsc_alloc_config_is_set(&c, i));
        size_t idx = 99;
        CU_ASSERT_PTR_EQUAL(fsc_alloc_setting_find(t[i].name, &idx), &t[i]);
        CU_ASSERT_EQUAL(idx, i);
        CU_ASSERT_EQUAL(fsc_alloc_config_format(&c, out, sizeof out), 0);
        CU_ASSERT_STRING_EQUAL(out, (t[i].flags & FSC_SETTING_PRINTED) ? in : "");
        CU_ASSERT_EQUAL(fsc_alloc_config_parse(out, &c2, &e), 0);
        /* a bad value names the key */
        snprintf(in, sizeof in, "%s:nonsense", t[i].name);
        CU_ASSERT_EQUAL(fsc_alloc_config_parse(in, &c2, &e), FSC_ECONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, t[i].name));
    }
    /* the ROCm spellings are the same settings */
    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    CU_ASSERT_EQUAL(fsc_alloc_config_parse("pinned_use_hip_host_register:True", &c, &e), 0);
    size_t idx;
    fsc_alloc_setting_find("pinned_use_cuda_host_register", &idx);
    CU_ASSERT_TRUE(fsc_alloc_config_is_set(&c, idx));
}

static void test_new_key_errors(void)
{
    static const struct { const char *s, *needle; } bad[] = {
        {"large_segment_size_mb:10", "'10' for large_segment_size_mb: must be > 10"},
        {"max_split_size_mb:12", "'12' for max_split_size_mb: must be >= 20"},
        {"large_segment_size_mb:32,max_split_size_mb:30",
         "'30' for max_split_size_mb: must be >= 32"},
        /* read first, wherever it stands */
        {"max_non_split_rounding_mb:30,large_segment_size_mb:32", "must be >= 32"},
        {"per_process_memory_fraction:1.5", "must be in [0.0, 1.0]"},
        {"throw_on_cudamalloc_oom:1", "expected True or False"},
        {"expandable_segments_reserve:-1", "'-1' for expandable_segments_reserve"},
        {"expandable_segments_reserve:0", "expandable_segments_reserve"},
        {"expandable_segments_reserve_by_class:tiny", "expected '['"},
        {"expandable_segments_reserve_by_class:[tiny:0.05", "expandable_segments_reserve_by_class"},
        {"pinned_num_register_threads:3", "power of two"},
        {"pinned_num_register_threads:256", "'256' for pinned_num_register_threads"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fsc_alloc_config_t c = FSC_ALLOC_CONFIG_DEFAULT;
        c.max_split_size = 77;
        fsc_err_t e = {0};
        CU_ASSERT_EQUAL(fsc_alloc_config_parse(bad[i].s, &c, &e), FSC_ECONFIG);
        CU_ASSERT_EQUAL(c.max_split_size, 77);
        if (strstr(e.msg, bad[i].needle) == NULL) {
            fprintf(stderr, "\n  \"%s\" -> \"%s\" (wanted \"%s\")\n", bad[i].s, e.msg,
                    bad[i].needle);
            CU_FAIL("error message");
        }
    }
    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    /* large_segment_size_mb lowers the minima */
    CU_ASSERT_EQUAL(fsc_alloc_config_parse("max_split_size_mb:12,large_segment_size_mb:12,"
                                           "max_non_split_rounding_mb:12",
                                           &c, &e),
                    0);
    CU_ASSERT_EQUAL(c.max_split_size, 12 * MiB);
    CU_ASSERT_EQUAL(c.large_segment_size, 12 * MiB);
    char buf[256];
    CU_ASSERT_EQUAL(fsc_alloc_config_format(&c, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "max_split_size_mb:12,max_non_split_rounding_mb:12,"
                                "large_segment_size_mb:12");
}

static void test_segment_sizes(void)
{
    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("large_segment_size_mb:12", &c, &e), 0);
    CU_ASSERT_EQUAL(fsc_alloc_segment_size_cfg(&c, MiB), 2 * MiB);       /* small pool */
    CU_ASSERT_EQUAL(fsc_alloc_segment_size_cfg(&c, MiB + 512), 12 * MiB); /* 1..10 MiB */
    CU_ASSERT_EQUAL(fsc_alloc_segment_size_cfg(&c, 10 * MiB - 512), 12 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_segment_size_cfg(&c, 10 * MiB), 10 * MiB); /* rounded to 2 MiB */
    CU_ASSERT_EQUAL(fsc_alloc_segment_size_cfg(&c, 11 * MiB), 12 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_segment_size_cfg(NULL, 5 * MiB), 20 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_segment_size(5 * MiB), 20 * MiB);
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("large_segment_size_mb:64", &c, &e), 0);
    CU_ASSERT_EQUAL(fsc_alloc_segment_size_cfg(&c, 5 * MiB), 64 * MiB);
}

typedef struct run {
    fsc_backend_t *be;
    fsc_allocator_t *a;
} run_t;

static int g_gc_events;

static void count_gc(void *ud, const fsc_event_t *ev)
{
    (void)ud;
    g_gc_events += ev->type == FSC_EV_GC;
}

static void run_open(run_t *r, const char *conf, uint64_t total, uint64_t cap)
{
    fsc_err_t e = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(total, 0, &r->be), 0);
    fsc_allocator_opts_t o = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(conf, &o.config, &e), 0);
    o.backend = r->be;
    o.capacity = cap;
    o.sink = count_gc;
    g_gc_events = 0;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &r->a, &e), 0);
}

static void run_close(run_t *r)
{
    fsc_allocator_destroy(r->a);
    fsc_backend_destroy(r->be);
}

static void test_large_segment_addresses(void)
{
    run_t r;
    run_open(&r, "large_segment_size_mb:12", 0, 0);
    uint64_t p1, p2, p3, p4;
    /* 5 MiB: a 12 MiB segment at the base; the second 5 MiB splits it (7
     * MiB left > 1 MiB); the third does not fit the 2 MiB left: a new 12
     * MiB segment right above. */
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 5 * MiB, 0, &p1), 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 5 * MiB, 0, &p2), 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 5 * MiB, 0, &p3), 0);
    CU_ASSERT_EQUAL(p1, B0);
    CU_ASSERT_EQUAL(p2, B0 + 5 * MiB);
    CU_ASSERT_EQUAL(p3, B0 + 12 * MiB);
    fsc_alloc_stats_t st;
    fsc_allocator_get_stats(r.a, &st);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, (int64_t)(24 * MiB));
    CU_ASSERT_EQUAL(st.segment[FSC_STAT_ALL].current, 2);
    /* The oversize tolerance defaults to the large segment size: with
     * max_split_size_mb:12, a 12 MiB request takes a cached 23 MiB block
     * (< 12 + 12) but not a 24 MiB one. */
    fsc_allocator_free(r.a, p3);
    fsc_allocator_free(r.a, p2);
    fsc_allocator_free(r.a, p1);
    run_close(&r);

    run_open(&r, "large_segment_size_mb:12,max_split_size_mb:12", 0, 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 24 * MiB, 0, &p1), 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 22 * MiB, 0, &p2), 0);
    CU_ASSERT_EQUAL(p2, B0 + 24 * MiB);
    fsc_allocator_free(r.a, p1);
    fsc_allocator_free(r.a, p2);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 12 * MiB, 0, &p3), 0);
    CU_ASSERT_EQUAL(p3, B0 + 24 * MiB); /* the 22 MiB block: 22 < 12 + 12 */
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 12 * MiB, 0, &p4), 0);
    CU_ASSERT_EQUAL(p4, B0 + 46 * MiB); /* not the 24 MiB one: a new segment */
    run_close(&r);

    /* Expandable segments: the large pool maps 12 MiB pages. */
    run_open(&r, "large_segment_size_mb:12,expandable_segments:True", 0, 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 5 * MiB, 0, &p1), 0);
    fsc_allocator_get_stats(r.a, &st);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, (int64_t)(12 * MiB));
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 13 * MiB, 0, &p2), 0);
    CU_ASSERT_EQUAL(p2, p1 + 5 * MiB);
    fsc_allocator_get_stats(r.a, &st);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, (int64_t)(24 * MiB));
    run_close(&r);
}

static void test_fraction_and_throw(void)
{
    run_t r;
    /* per_process_memory_fraction in the string: the cap. */
    run_open(&r, "per_process_memory_fraction:0.5", 100 * MiB, 0);
    CU_ASSERT_EQUAL(fsc_allocator_capacity(r.a), 50 * MiB);
    run_close(&r);
    run_open(&r, "per_process_memory_fraction:0.5", 100 * MiB, 80 * MiB);
    CU_ASSERT_EQUAL(fsc_allocator_capacity(r.a), 80 * MiB); /* an explicit capacity wins */
    run_close(&r);

    /* Without throw_on_cudamalloc_oom: a 40 MiB miss over a cached 30 MiB
     * segment releases it and retries (one num_alloc_retries). */
    uint64_t p, q;
    fsc_alloc_stats_t st;
    run_open(&r, "per_process_memory_fraction:0.5", 100 * MiB, 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 30 * MiB, 0, &p), 0);
    fsc_allocator_free(r.a, p);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 40 * MiB, 0, &q), 0);
    fsc_allocator_get_stats(r.a, &st);
    CU_ASSERT_EQUAL(st.num_alloc_retries, 1);
    CU_ASSERT_EQUAL(st.num_ooms, 0);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, (int64_t)(40 * MiB));
    run_close(&r);

    /* With it: refused at once, the cache kept, no retry. */
    run_open(&r, "per_process_memory_fraction:0.5,throw_on_cudamalloc_oom:True", 100 * MiB, 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 30 * MiB, 0, &p), 0);
    fsc_allocator_free(r.a, p);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 40 * MiB, 0, &q), FSC_EOOM);
    fsc_allocator_get_stats(r.a, &st);
    CU_ASSERT_EQUAL(st.num_alloc_retries, 0);
    CU_ASSERT_EQUAL(st.num_ooms, 1);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, (int64_t)(30 * MiB));
    /* what fits under the cap still goes to the device */
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 20 * MiB, 0, &q), 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 20 * MiB, 0, &p), 0);
    fsc_allocator_get_stats(r.a, &st);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, (int64_t)(50 * MiB));
    run_close(&r);

    /* Garbage collection armed (0.5 of the 50 MiB cap): without the throw,
     * the miss collects the cached 30 MiB and then fits; with it, nothing
     * is collected and the request fails. */
    run_open(&r, "per_process_memory_fraction:0.5,garbage_collection_threshold:0.5", 100 * MiB, 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 30 * MiB, 0, &p), 0);
    fsc_allocator_free(r.a, p);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 40 * MiB, 0, &q), 0);
    fsc_allocator_get_stats(r.a, &st);
    CU_ASSERT_EQUAL(g_gc_events, 1);
    CU_ASSERT_EQUAL(st.num_alloc_retries, 0);
    run_close(&r);
    run_open(&r,
             "per_process_memory_fraction:0.5,garbage_collection_threshold:0.5,"
             "throw_on_cudamalloc_oom:True",
             100 * MiB, 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 30 * MiB, 0, &p), 0);
    fsc_allocator_free(r.a, p);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 40 * MiB, 0, &q), FSC_EOOM);
    fsc_allocator_get_stats(r.a, &st);
    CU_ASSERT_EQUAL(g_gc_events, 0);
    CU_ASSERT_EQUAL(st.num_alloc_retries, 0);
    CU_ASSERT_EQUAL(st.num_ooms, 1);
    CU_ASSERT_EQUAL(st.reserved_bytes[FSC_STAT_ALL].current, (int64_t)(30 * MiB));
    run_close(&r);

    /* With no cap, throw_on_cudamalloc_oom changes nothing. */
    run_open(&r, "throw_on_cudamalloc_oom:True", 100 * MiB, 0);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 30 * MiB, 0, &p), 0);
    fsc_allocator_free(r.a, p);
    CU_ASSERT_EQUAL(fsc_allocator_malloc(r.a, 80 * MiB, 0, &q), 0);
    fsc_allocator_get_stats(r.a, &st);
    CU_ASSERT_EQUAL(st.num_alloc_retries, 1);
    run_close(&r);
}

static const char *g_env[3]; /* CUDA, HIP, generic */

static const char *fake_getenv(const char *name)
{
    if (strcmp(name, "PYTORCH_CUDA_ALLOC_CONF") == 0)
        return g_env[0];
    if (strcmp(name, "PYTORCH_HIP_ALLOC_CONF") == 0)
        return g_env[1];
    if (strcmp(name, "PYTORCH_ALLOC_CONF") == 0)
        return g_env[2];
    return NULL;
}

static void test_env_precedence(void)
{
    const char *name;
    g_env[0] = NULL, g_env[1] = NULL, g_env[2] = NULL;
    CU_ASSERT_PTR_NULL(fsc_alloc_config_env(fake_getenv, &name));
    CU_ASSERT_PTR_NULL(name);
    g_env[2] = "max_split_size_mb:128";
    CU_ASSERT_STRING_EQUAL(fsc_alloc_config_env(fake_getenv, &name), "max_split_size_mb:128");
    CU_ASSERT_STRING_EQUAL(name, "PYTORCH_ALLOC_CONF");
    g_env[1] = "expandable_segments:True";
    CU_ASSERT_STRING_EQUAL(fsc_alloc_config_env(fake_getenv, &name), "expandable_segments:True");
    CU_ASSERT_STRING_EQUAL(name, "PYTORCH_HIP_ALLOC_CONF");
    /* set but empty still wins: the defaults, nothing merged from the others */
    g_env[0] = "";
    CU_ASSERT_STRING_EQUAL(fsc_alloc_config_env(fake_getenv, &name), "");
    CU_ASSERT_STRING_EQUAL(name, "PYTORCH_CUDA_ALLOC_CONF");
}

static void test_gt_entry_old_and_new(void)
{
    fsc_alloc_config_t n, o;
    fsc_err_t e = {0};
    const char *s = "roundup_power2_divisions:[256:1,512:2,>:4]";
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(s, &n, &e), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse_rules(s, FSC_PARSER_OLD, &o, &e), 0);
    /* index 8 = [256 MiB, 512 MiB), 9 = [512 MiB, 1 GiB), 10 = [1 GiB, 2 GiB) */
    CU_ASSERT_EQUAL(n.roundup_power2_divisions[0], 1);
    CU_ASSERT_EQUAL(n.roundup_power2_divisions[8], 1);
    CU_ASSERT_EQUAL(n.roundup_power2_divisions[9], 2);
    CU_ASSERT_EQUAL(n.roundup_power2_divisions[10], 4);
    CU_ASSERT_EQUAL(o.roundup_power2_divisions[8], 1);
    CU_ASSERT_EQUAL(o.roundup_power2_divisions[9], 4);
    CU_ASSERT_EQUAL(o.roundup_power2_divisions[10], 4);
    /* so a 600 MiB + 1 request rounds to 768 MiB (2 divisions of 512 MiB)
     * under the new rule and to 640 MiB (4 divisions) under the old */
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&n, 600 * MiB + 1), 768 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&o, 600 * MiB + 1), 640 * MiB);
    /* ">" first: every interval under both */
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse_rules("roundup_power2_divisions:[>:8]",
                                                       FSC_PARSER_OLD, &o, &e), 0);
    CU_ASSERT_EQUAL(o.roundup_power2_divisions[0], 8);
    CU_ASSERT_EQUAL(o.roundup_power2_divisions[15], 8);
}

static void test_unmodelled_named(void)
{
    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    char buf[256];
    CU_ASSERT_EQUAL_FATAL(
        fsc_alloc_config_parse("expandable_segments:True,expandable_segments_reserve:0.5,"
                               "graph_capture_record_stream_reuse:True,"
                               "pinned_use_cuda_host_register:True,large_segment_size_mb:12",
                               &c, &e),
        0);
    CU_ASSERT_EQUAL(fsc_alloc_config_unmodelled(&c, buf, sizeof buf), 2);
    CU_ASSERT_STRING_EQUAL(buf, "expandable_segments_reserve,graph_capture_record_stream_reuse");
    CU_ASSERT_EQUAL(fsc_alloc_config_format(&c, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "expandable_segments:True,large_segment_size_mb:12,"
                                "expandable_segments_reserve:0.5,"
                                "graph_capture_record_stream_reuse:True,"
                                "pinned_use_cuda_host_register:True");
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("max_split_size_mb:64", &c, &e), 0);
    CU_ASSERT_EQUAL(fsc_alloc_config_unmodelled(&c, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "");
}

/* A synthetic snapshot of PyTorch after 2.11 (tests/data/make_fixtures.py,
 * newer_settings): its settings and snapshot keys that fragscope does not
 * model are named by import, analyze, report and whatif, in text and JSON;
 * its large_segment_size_mb:12 is replayed exactly (12 MiB segments), and a
 * what-if under the defaults packs the three 5 MiB blocks in one 20 MiB
 * segment. */
static void test_newer_snapshot_named(void)
{
    static char out[16384];
    const char *fs = fsc_test_fragscope();
    const char *in = fsc_test_data("pytorch/newer_settings.json");
    const char *tr = fsc_test_path("ns.fstrace");
    const char *db = fsc_test_path("ns.db");
    const char *unm = "expandable_segments_reserve,graph_capture_record_stream_reuse";
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "'%s' import '%s' -o '%s'", fs, in, tr), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "settings not modelled: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, unm));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "snapshot keys not modelled: "
                                       "allocator_settings.trace_alloc_overflowed=False, "
                                       "trace_alloc_max_entries=100000"));
    CU_ASSERT_PTR_NULL(strstr(out, "not understood")); /* every key is known */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "peak reserved 24.00 MiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "PyTorch version: after 2.11 (inferred from its keys"));

    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "'%s' analyze '%s' -o '%s'", fs, in, db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "settings not modelled: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, unm));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "snapshot keys not modelled"));

    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "'%s' report '%s'", fs, db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "not modelled  expandable_segments_reserve,"));
    CU_ASSERT_EQUAL_FATAL(
        fsc_test_sh(out, sizeof out, "'%s' report '%s' --format json", fs, db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"settings_not_modelled\":"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"graph_capture_record_stream_reuse\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"snapshot_keys_not_modelled\":"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"torch_version_inferred\":"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"after 2.11 (inferred from its keys, not recorded: "));

    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --config '' --format json",
                                      fs, in),
                          0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"peak_reserved_bytes\": 20971520"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"exact\": false, \"not_modelled\": "
                                       "[\"expandable_segments_reserve\", "
                                       "\"graph_capture_record_stream_reuse\"]"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --config ''", fs, in), 0);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(out, "not exact: (defaults): settings fragscope does not model: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, unm));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --verify", fs, in), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "peak reserved  25165824 recorded, 25165824 replayed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "block addresses matching the recording: 3 of 3"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "not exact      settings fragscope does not model: "));
    CU_ASSERT_EQUAL_FATAL(
        fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --verify --format json", fs, in), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"exact\": false, \"not_modelled\": "));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --suggest", fs, in), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "not exact: the recording's settings include "
                                       "expandable_segments_reserve,"));

    /* A string this version cannot read (a key of a still newer PyTorch):
     * the dict's settings replay, and the string is named as not read. */
    size_t len = 0;
    char *js = fsc_test_slurp(in, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(js);
    const char *old = "\"large_segment_size_mb:12,";
    char *at = strstr(js, old);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    const char *unk = fsc_test_path("unknown_conf.json");
    FILE *f = fopen(unk, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "%.*s\"page_size:1g,%s", (int)(at - js), js, at + 1);
    fclose(f);
    free(js);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "'%s' import '%s' -o '%s'", fs, unk,
                                      fsc_test_path("unknown_conf.fstrace")),
                          0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "allocator_settings.PYTORCH_CUDA_ALLOC_CONF not read "
                                       "(allocator config: unknown key 'page_size')"));
    /* --torch: an older version's rules; what it lacks is refused. */
    CU_ASSERT_EQUAL_FATAL(
        fsc_test_sh(out, sizeof out,
                    "'%s' whatif '%s' --torch 2.8 --config "
                    "'roundup_power2_divisions:[256:1,512:2,>:4]'",
                    fs, tr),
        0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "PyTorch 2.8 rules: where they differ"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "replayed as \"roundup_power2_divisions:[256:1,>:4]\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the recording's own settings have "
                                       "large_segment_size_mb,expandable_segments_reserve"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                "'%s' whatif '%s' --torch 2.11 --config "
                                "'throw_on_cudamalloc_oom:True'",
                                fs, tr),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "PyTorch 2.11 has no throw_on_cudamalloc_oom"));
    CU_ASSERT_EQUAL(
        fsc_test_sh(out, sizeof out, "'%s' whatif '%s' --torch two --config ''", fs, tr), 2);
    /* A --config with a setting fragscope does not model says so too. */
    CU_ASSERT_EQUAL_FATAL(
        fsc_test_sh(out, sizeof out,
                    "'%s' whatif '%s' --config 'expandable_segments_reserve_by_class:[a:0.5]'", fs,
                    tr),
        0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "expandable_segments_reserve_by_class"));
    /* and a bad one is refused with exit code 2, naming the key */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out,
                                "'%s' whatif '%s' --config 'large_segment_size_mb:8'", fs, tr),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "large_segment_size_mb"));
}

static void test_torch_versions(void)
{
    int v = 0;
    CU_ASSERT_EQUAL(fsc_alloc_torch_version_parse("2.11", &v), 0);
    CU_ASSERT_EQUAL(v, 211);
    CU_ASSERT_EQUAL(fsc_alloc_torch_version_parse("2.8.1", &v), 0);
    CU_ASSERT_EQUAL(v, 208);
    CU_ASSERT_EQUAL(fsc_alloc_torch_version_parse("2", &v), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_alloc_torch_version_parse("2.x", &v), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_alloc_torch_parser_rules(208), FSC_PARSER_OLD);
    CU_ASSERT_EQUAL(fsc_alloc_torch_parser_rules(211), FSC_PARSER_NEW);
    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    char buf[2048];
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("expandable_segments:True,large_segment_size_mb:"
                                                 "16,per_process_memory_fraction:0.5",
                                                 &c, &e),
                          0);
    /* 2.11 accepts both keys (bench/gpu/settings_211.py on an H100,
     * bench/gpu/results/2026-12-07/settings_211_h100.txt); earlier releases
     * were not checked, so 2.10 is taken to lack them */
    CU_ASSERT_EQUAL(fsc_alloc_config_missing_in(&c, 211, buf, sizeof buf), 0);
    CU_ASSERT_EQUAL(fsc_alloc_config_missing_in(&c, 210, buf, sizeof buf), 2);
    CU_ASSERT_STRING_EQUAL(buf, "large_segment_size_mb,per_process_memory_fraction");
    CU_ASSERT_EQUAL(fsc_alloc_config_missing_in(&c, 200, buf, sizeof buf), 3);
    CU_ASSERT_EQUAL(fsc_alloc_config_missing_in(&c, 212, buf, sizeof buf), 0);
    /* 2.8: the old '>' rule, no large_segment_size_mb, no fraction in the
     * string, no throw_on_cudamalloc_oom; 2.10: the last three and the
     * environment order; 2.11: only throw_on_cudamalloc_oom (refused there) */
    CU_ASSERT_EQUAL(fsc_alloc_torch_rule_differences(208, buf, sizeof buf), 4);
    CU_ASSERT_EQUAL(fsc_alloc_torch_rule_differences(210, buf, sizeof buf), 4);
    CU_ASSERT_EQUAL(fsc_alloc_torch_rule_differences(211, buf, sizeof buf), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "throw_on_cudamalloc_oom"));
    CU_ASSERT_EQUAL(fsc_alloc_torch_rule_differences(212, buf, sizeof buf), 0);
}

/* Two configurations hold the same settings, as far as the canonical form
 * carries them (keys it does not print, and False or 0 written out, leave no
 * trace in it). */
static int same_settings(const fsc_alloc_config_t *a, const fsc_alloc_config_t *b)
{
    size_t n;
    const fsc_alloc_setting_t *t = fsc_alloc_settings(&n);
    int ok = a->max_split_size == b->max_split_size &&
             a->max_non_split_rounding == b->max_non_split_rounding &&
             memcmp(a->roundup_power2_divisions, b->roundup_power2_divisions,
                    sizeof a->roundup_power2_divisions) == 0 &&
             a->garbage_collection_threshold == b->garbage_collection_threshold &&
             a->expandable_segments == b->expandable_segments &&
             a->large_segment_size == b->large_segment_size &&
             a->throw_on_cudamalloc_oom == b->throw_on_cudamalloc_oom;
    for (size_t i = 0; i < n; i++) {
        if (!(t[i].flags & FSC_SETTING_PRINTED) || t[i].offset >= 0)
            continue;
        ok &= fsc_alloc_config_is_set(a, i) == fsc_alloc_config_is_set(b, i);
        if (fsc_alloc_config_is_set(a, i))
            ok &= t[i].kind == FSC_SETTING_RESERVE_LIST
                      ? strcmp(a->reserve_by_class, b->reserve_by_class) == 0
                      : a->extra[i] == b->extra[i];
    }
    size_t ppmf;
    fsc_alloc_setting_find("per_process_memory_fraction", &ppmf);
    ok &= fsc_alloc_config_is_set(a, ppmf) == fsc_alloc_config_is_set(b, ppmf);
    if (fsc_alloc_config_is_set(a, ppmf))
        ok &= a->per_process_memory_fraction == b->per_process_memory_fraction;
    return ok;
}

/* Random strings of the grammar's pieces and the new keys: 0 or
 * FSC_ECONFIG, never a crash (ASan too); whatever parses prints to a string
 * that parses back to the same settings. */
static void test_round_trip_fuzz(void)
{
    static const char *const pieces[] = {
        "large_segment_size_mb", "max_split_size_mb", "max_non_split_rounding_mb",
        "per_process_memory_fraction", "throw_on_cudamalloc_oom", "expandable_segments_reserve",
        "expandable_segments_reserve_by_class", "graph_capture_record_stream_reuse",
        "pinned_num_register_threads", "pinned_reserve_segment_size_mb", "pinned_free_catch_all",
        "roundup_power2_divisions", "True", "False", ":", ",", "[", "]", ">", " ", "0", "1", "8",
        "12", "20", "64", "0.5", "0.123456789", "1.0", "40G", "1.5g", "tiny", "-1", "1e400", "",
    };
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    char buf[256], out[1024];
    long accepted = 0;
    for (int it = 0; it < 50000; it++) {
        size_t len = 0;
        int n = 1 + (int)((rng >> 9) % 14);
        for (int k = 0; k < n; k++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            const char *p = pieces[rng % (sizeof pieces / sizeof pieces[0])];
            size_t pl = strlen(p);
            if (len + pl < sizeof buf) {
                memcpy(buf + len, p, pl);
                len += pl;
            }
        }
        buf[len] = '\0';
        fsc_alloc_config_t c, c2;
        fsc_err_t e = {0};
        if (fsc_alloc_config_parse(buf, &c, &e) != 0) {
            CU_ASSERT_EQUAL(e.code, FSC_ECONFIG);
            continue;
        }
        accepted++;
        CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_format(&c, out, sizeof out), 0);
        int rc = fsc_alloc_config_parse(out, &c2, &e);
        if (rc != 0 || !same_settings(&c, &c2)) {
            fprintf(stderr, "\n  \"%s\" -> \"%s\": %s\n", buf, out, rc ? e.msg : "differs");
            CU_FAIL_FATAL("round trip");
        }
    }
    printf(" (%ld of 50000 accepted) ", accepted);
    CU_ASSERT_TRUE(accepted > 100);
}

static const fsc_test_case_t k_tests[] = {
    {"doc_matches_table", test_doc_matches_table},
    {"every_entry_round_trips", test_every_entry_round_trips},
    {"new_key_errors", test_new_key_errors},
    {"segment_sizes", test_segment_sizes},
    {"large_segment_addresses", test_large_segment_addresses},
    {"fraction_and_throw", test_fraction_and_throw},
    {"env_precedence", test_env_precedence},
    {"gt_entry_old_and_new", test_gt_entry_old_and_new},
    {"unmodelled_named", test_unmodelled_named},
    {"newer_snapshot_named", test_newer_snapshot_named},
    {"torch_versions", test_torch_versions},
    {"round_trip_fuzz", test_round_trip_fuzz},
    {NULL, NULL},
};

FSC_TEST_MAIN("settings_table", k_tests)
