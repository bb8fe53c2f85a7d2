/*
 * test_diff.c — `fragscope diff`'s explanation of a change (diff_explain.c,
 * docs/metrics.md "What changed") on real pairs of H200 recordings: the
 * peaks' changes equal what PyTorch reported (*.stats.json), the program
 * and allocator parts add up to Δ peak reserved exactly, the sites to Δ
 * peak allocated; the settings replay, the steps, the thresholds
 * (--fail-on, check --baseline) with their exit codes, the Markdown, JUnit
 * and annotation outputs, inputs given as snapshots and ring windows, and
 * the one-line refusals (a job against a run, different devices, bad
 * specs).
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/analyzer.h"
#include "fragscope/rundb.h"
#include "fsc_test.h"
#include "fsc_test_gpu.h"

/* tests/data/gpu/NAME.pickle */
static const char *gpu_pickle(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "gpu/%s.pickle", name);
    return fsc_test_data(rel);
}

static size_t count_lines(const char *s)
{
    return fsc_test_count(s, "\n");
}

/* tests/data/gpu/NAME.pickle analyzed into the scratch folder (once per
 * name): its database's path, in static storage. */
static const char *db_of(const char *name)
{
    static struct {
        char name[128], path[1024];
    } done[32];
    static int n;
    for (int i = 0; i < n; i++)
        if (strcmp(done[i].name, name) == 0)
            return done[i].path;
    CU_ASSERT_FATAL(n < 32);
    char in[1024], file[160];
    snprintf(in, sizeof in, "%s", gpu_pickle(name));
    snprintf(file, sizeof file, "%s.db", name);
    for (char *c = file; *c; c++)
        if (*c == '/')
            *c = '_';
    snprintf(done[n].path, sizeof done[n].path, "%s", fsc_test_path(file));
    snprintf(done[n].name, sizeof done[n].name, "%s", name);
    fsc_err_t err = {0};
    int rc = fsc_analyze_file(in, done[n].path, NULL, NULL, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "\n  analyze %s: %s\n", in, fsc_err_msg(&err));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return done[n++].path;
}

/* fsc_diff_explain of two databases as JSON, parsed. */
static cJSON *explain(const char *a, const char *b, const fsc_diff_opts_t *opts, int *failed)
{
    fsc_diff_opts_t o;
    if (opts)
        o = *opts;
    else
        memset(&o, 0, sizeof o);
    o.format = FSC_DIFF_JSON;
    const char *path = fsc_test_path("explain.json");
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fsc_err_t err = {0};
    int rc = fsc_diff_explain(a, b, &o, f, failed, &err);
    fclose(f);
    if (rc != 0)
        fprintf(stderr, "\n  diff: %s\n", fsc_err_msg(&err));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char *s = fsc_test_slurp(path, NULL);
    cJSON *j = cJSON_Parse(s);
    free(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static int64_t num(const cJSON *o, const char *path)
{
    /* "a.b.c" */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *x = o;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && x;
         k = strtok_r(NULL, ".", &save))
        x = cJSON_GetObjectItemCaseSensitive(x, k);
    if (!cJSON_IsNumber(x) && !cJSON_IsBool(x)) {
        fprintf(stderr, "\n  no number at %s\n", path);
        CU_FAIL("missing JSON number");
        return INT64_MIN;
    }
    return cJSON_IsBool(x) ? cJSON_IsTrue(x) : (int64_t)x->valuedouble;
}

/* The identities every explanation holds, and the peaks' changes against
 * what PyTorch reported for both recordings; returns the parsed JSON. */
static cJSON *check_pair(const char *a, const char *b)
{
    cJSON *j = explain(db_of(a), db_of(b), NULL, NULL);
    cJSON *sa = fsc_test_gpu_stats(a), *sb = fsc_test_gpu_stats(b);
    int64_t d_res = (int64_t)fsc_test_stat_u64(sb, "reserved_bytes.all.peak") -
                    (int64_t)fsc_test_stat_u64(sa, "reserved_bytes.all.peak");
    int64_t d_alloc = (int64_t)fsc_test_stat_u64(sb, "allocated_bytes.all.peak") -
                      (int64_t)fsc_test_stat_u64(sa, "allocated_bytes.all.peak");
    cJSON_Delete(sa);
    cJSON_Delete(sb);
    CU_ASSERT_EQUAL(num(j, "delta.peak_reserved_bytes"), d_res);
    CU_ASSERT_EQUAL(num(j, "delta.peak_allocated_bytes"), d_alloc);
    CU_ASSERT_EQUAL(num(j, "exact"), 1);
    /* program + allocator = Δ peak reserved */
    CU_ASSERT_EQUAL(num(j, "program.delta_bytes") + num(j, "allocator.delta_bytes"), d_res);
    /* the sites add up to Δ peak allocated */
    int64_t sites = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "program"), "sites"))
    {
        int64_t dv = num(s, "new_bytes") - num(s, "base_bytes");
        CU_ASSERT_EQUAL(num(s, "delta_bytes"), dv);
        const char *st = cJSON_GetObjectItem(s, "status")->valuestring;
        CU_ASSERT_STRING_EQUAL(st, num(s, "base_bytes") == 0 && dv > 0   ? "new"
                                   : num(s, "new_bytes") == 0 && dv < 0 ? "gone"
                                   : dv > 0                             ? "grown"
                                   : dv < 0                             ? "shrunk"
                                                                        : "same");
        sites += dv;
    }
    CU_ASSERT_EQUAL(sites, d_alloc);
    CU_ASSERT_EQUAL(num(j, "program.sites_delta_bytes"), d_alloc);
    /* the allocator's part is its parts */
    CU_ASSERT_EQUAL(num(j, "allocator.rounding_bytes") +
                        num(j, "allocator.reserved_unallocated_bytes") +
                        num(j, "allocator.moment_bytes"),
                    num(j, "allocator.delta_bytes"));
    CU_ASSERT_EQUAL(num(j, "allocator.classes.soft") + num(j, "allocator.classes.hard") +
                        num(j, "allocator.classes.stream") +
                        num(j, "allocator.classes.private_pool") +
                        num(j, "allocator.classes.pending"),
                    num(j, "allocator.reserved_unallocated_bytes"));
    /* program + rounding = the sites' block bytes */
    CU_ASSERT_EQUAL(num(j, "program.delta_bytes") + num(j, "allocator.rounding_bytes"), d_alloc);
    return j;
}

/* The same job under the defaults and expandable segments, both capped at
 * 0.80 and ending at their OOM: the same requests, so the program's part
 * is 0 and the allocator's is all of it; the settings replay explains it
 * to the byte. */
static void test_gpt2_expandable(void)
{
    cJSON *j = check_pair("gpt2_cap0.80_default", "gpt2_cap0.80_expandable_segments_True");
    CU_ASSERT_EQUAL(num(j, "delta.peak_reserved_bytes"), -113246208);
    CU_ASSERT_EQUAL(num(j, "program.delta_bytes"), 0);
    CU_ASSERT_EQUAL(num(j, "allocator.delta_bytes"), -113246208);
    /* expandable segments split off any remainder: what rounding is left
     * is the small requests' (to 512 B), 1 720 B */
    CU_ASSERT_EQUAL(num(j, "new.rounding_at_peak_allocated_bytes"), 1720);
    CU_ASSERT_EQUAL(num(j, "allocator.classes.soft"), -50331648);
    cJSON_Delete(j);
}

/* roundup_power2_divisions:4 against the defaults, the boundary job (no
 * OOM): the same requests, more rounding. */
static void test_boundary_rp4(void)
{
    cJSON *j = check_pair("boundary/b_defaults", "boundary/b_rp4");
    CU_ASSERT_EQUAL(num(j, "program.delta_bytes"), 0);
    CU_ASSERT(num(j, "allocator.rounding_bytes") > 0);
    CU_ASSERT_EQUAL(num(j, "base.ooms"), 0);
    cJSON_Delete(j);
}

/* A gradient-checkpointed job capped at 0.75 under the defaults (OOM
 * early) and under expandable segments (got further): here the program's
 * part is not 0, the recordings cover different stretches of the run. */
static void test_ckpt(void)
{
    cJSON *j = check_pair("xset/ckpt_cap0.75_default", "xset/ckpt_cap0.75_expandable_segments_True");
    CU_ASSERT(num(j, "program.delta_bytes") != 0);
    cJSON_Delete(j);
    j = check_pair("xset/ckpt_cap0.75_default", "xset/ckpt_cap0.75_garbage_collection_threshold_0_6");
    CU_ASSERT_EQUAL(num(j, "delta.peak_reserved_bytes"), 0);
    cJSON_Delete(j);
    /* analyzed with the cap the runs had (5 721 970 180 B, README of
     * tests/data/gpu), the settings replay runs each under it and finds
     * what the recordings show: garbage collection changed nothing */
    char a[1024], b[1024], out[1 << 16];
    snprintf(a, sizeof a, "%s", fsc_test_path("ckpt_def_cap.db"));
    snprintf(b, sizeof b, "%s", fsc_test_path("ckpt_gc_cap.db"));
    const char *fs = fsc_test_fragscope();
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s analyze %s --capacity 5721970180 -o %s "
                                ">/dev/null && %s analyze %s --capacity 5721970180 -o %s >/dev/null",
                                fs, gpu_pickle("xset/ckpt_cap0.75_default"), a, fs,
                                gpu_pickle("xset/ckpt_cap0.75_garbage_collection_threshold_0_6"),
                                b), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --format json", fs, a, b), 0);
    j = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(num(j, "settings.replayed"), 1);
    CU_ASSERT_EQUAL(num(j, "settings.base_capacity_bytes"), 5721970180);
    CU_ASSERT_EQUAL(num(j, "settings.replay_capacity_bytes"), 5721970180);
    CU_ASSERT_EQUAL(num(j, "settings.explained_bytes"), 0);
    CU_ASSERT_EQUAL(num(j, "settings.replay_base_peak_reserved_bytes"),
                    num(j, "base.peak_reserved_bytes"));
    cJSON_Delete(j);
}

/* GPT-2 uncapped against the job calling empty_cache() every 3 steps (both
 * complete): steps from PyTorch's optimizer annotations, each step's peaks
 * exact (the highest is the run's peak), the soft bytes gone. */
static void test_emptycache_steps(void)
{
    cJSON *j = check_pair("gpt2_uncapped", "gpt2_emptycache");
    CU_ASSERT(num(j, "allocator.classes.soft") < 0);
    CU_ASSERT_EQUAL(num(j, "base.steps"), 6);
    CU_ASSERT_EQUAL(num(j, "new.steps"), 9);
    CU_ASSERT_EQUAL(num(j, "steps.compared"), 1);
    CU_ASSERT_EQUAL(num(j, "steps.first_differing_step"), 1);
    CU_ASSERT_EQUAL(num(j, "steps.reserved_from_samples"), 0);
    const cJSON *steps = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "base");
    CU_ASSERT_EQUAL(cJSON_GetArraySize(steps), 6);
    int64_t ma = 0, mr = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, steps)
    {
        if (num(s, "peak_allocated_bytes") > ma)
            ma = num(s, "peak_allocated_bytes");
        if (num(s, "peak_reserved_bytes") > mr)
            mr = num(s, "peak_reserved_bytes");
    }
    cJSON *st = fsc_test_gpu_stats("gpt2_uncapped");
    CU_ASSERT_EQUAL(ma, (int64_t)fsc_test_stat_u64(st, "allocated_bytes.all.peak"));
    CU_ASSERT_EQUAL(mr, (int64_t)fsc_test_stat_u64(st, "reserved_bytes.all.peak"));
    cJSON_Delete(st);
    /* the same runs as databases need no replay: the settings are the same */
    CU_ASSERT_EQUAL(num(j, "settings.measured"), 0);
    cJSON_Delete(j);
    /* a run against itself: nothing changed, no step differs */
    j = explain(db_of("gpt2_uncapped"), db_of("gpt2_uncapped"), NULL, NULL);
    CU_ASSERT_EQUAL(num(j, "delta.peak_reserved_bytes"), 0);
    CU_ASSERT_EQUAL(num(j, "program.delta_bytes"), 0);
    CU_ASSERT_EQUAL(num(j, "allocator.delta_bytes"), 0);
    CU_ASSERT(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"),
                                               "first_differing_step")));
    cJSON_Delete(j);
}

/* The command on snapshots directly: settings differ, the base's requests
 * are replayed under both (at the base's inferred cap: its recording ends at
 * an OOM), and explain the whole change. Ring windows are taken as well. */
static void test_cli_snapshots(void)
{
    char out[1 << 16];
    const char *fs = fsc_test_fragscope();
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s", gpu_pickle("gpt2_cap0.80_default"));
    snprintf(b, sizeof b, "%s", gpu_pickle("gpt2_cap0.80_expandable_segments_True"));
    const char *js = fsc_test_path("cli.json");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --format json -o %s", fs, a, b,
                                js), 0);
    char *s = fsc_test_slurp(js, NULL);
    cJSON *j = cJSON_Parse(s);
    free(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(num(j, "settings.differ"), 1);
    CU_ASSERT_EQUAL(num(j, "settings.replayed"), 1);
    CU_ASSERT_EQUAL(num(j, "settings.explained_bytes"), -113246208);
    CU_ASSERT_EQUAL(num(j, "settings.replay_base_peak_reserved_bytes"), num(j, "base.peak_reserved_bytes"));
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "settings"),
                                               "new_config")->valuestring,
                           "expandable_segments:True");
    cJSON_Delete(j);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s", fs, a, b), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the settings alone explain -108.00 MiB of the -108.00 "
                                       "MiB change (100%)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "why peak reserved changed by -108.00 MiB (the parts "
                                       "add up to it exactly):\n"));
    /* no temporary database left behind */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "TMPDIR=%s %s diff %s %s --no-replay >/dev/null"
                                " && ls %s | grep -c fragscope-diff",
                                fsc_test_tmpdir(), fs, a, b, fsc_test_tmpdir()), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "0"));
    /* a ring window against a complete run: said so, and still exact */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --format json --no-replay", fs,
                                fsc_test_data("gpu/ring/ring_emptycache.pickle"),
                                fsc_test_data("gpu/ring/ring_emptycache_exp.pickle")), 0);
    j = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(num(j, "base.window"), 1);
    CU_ASSERT_EQUAL(num(j, "exact"), 1);
    CU_ASSERT_EQUAL(num(j, "program.delta_bytes") + num(j, "allocator.delta_bytes"),
                    num(j, "delta.peak_reserved_bytes"));
    CU_ASSERT_EQUAL(num(j, "program.sites_delta_bytes"), num(j, "delta.peak_allocated_bytes"));
    /* the same job under expandable segments: the same requests. The blocks
     * live when each window began, freed before its snapshot, have no
     * recorded site: one site in both windows, not "new" */
    CU_ASSERT_EQUAL(num(j, "program.delta_bytes"), 0);
    int found = 0;
    const cJSON *site;
    cJSON_ArrayForEach(site, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "program"), "sites"))
    {
        if (strcmp(cJSON_GetObjectItem(site, "site")->valuestring,
                   "(live when the window began; site not recorded)") != 0)
            continue;
        found = 1;
        CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(site, "status")->valuestring, "shrunk");
        CU_ASSERT_EQUAL(num(site, "base_bytes"), 501647360);
    }
    CU_ASSERT(found);
    cJSON_Delete(j);
}

/* A snapshot of two devices: refused until --device picks one; device 0 of
 * two_devices is rank2 (tests/data/make_format_fixtures.py): no change. */
static void test_devices(void)
{
    char out[1 << 16];
    const char *fs = fsc_test_fragscope();
    char two[1024], r2[1024];
    snprintf(two, sizeof two, "%s", gpu_pickle("two_devices"));
    snprintf(r2, sizeof r2, "%s", gpu_pickle("rank2"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s", fs, two, r2), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "history for devices 0, 1: choose one with --device"));
    CU_ASSERT_EQUAL(count_lines(out), 1);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --device 0 --format json", fs,
                                two, r2), 0);
    cJSON *j = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(num(j, "delta.peak_reserved_bytes"), 0);
    CU_ASSERT_EQUAL(num(j, "program.delta_bytes"), 0);
    CU_ASSERT_EQUAL(num(j, "exact"), 1);
    cJSON_Delete(j);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --device x", fs, two, r2), 2);
}

/* --fail-on: exit 1 exactly when a threshold fails; JUnit has one testcase
 * per threshold; check --baseline takes the same. b_rp4 reserves 17.0% more
 * than b_defaults. */
static void test_thresholds(void)
{
    char out[1 << 16];
    const char *fs = fsc_test_fragscope();
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s", db_of("boundary/b_defaults"));
    snprintf(b, sizeof b, "%s", db_of("boundary/b_rp4"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on peak-reserved:+2%%",
                                fs, a, b), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "peak-reserved:+2%: peak-reserved 4.62 GiB → 5.40 GiB "
                                       "(+17.0%), limit +2%: fails"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on peak-reserved:+18%% "
                                "--fail-on oom --fail-on hard:+1GiB", fs, a, b), 0);
    /* the other way round nothing grew */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on peak-reserved:+0%% "
                                "--fail-on rounding:+0", fs, b, a), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on rounding:+0", fs, a, b),
                    1);
    /* JUnit */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --format junit --fail-on "
                                "peak-reserved:+2%% --fail-on oom --fail-on frag:+10GiB",
                                fs, a, b), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "<testsuite name=\"fragscope diff\" tests=\"3\" "
                                       "failures=\"1\">"));
    CU_ASSERT_EQUAL(fsc_test_count(out, "<testcase "), 3);
    CU_ASSERT_EQUAL(fsc_test_count(out, "<failure "), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "<testcase classname=\"fragscope.diff\" "
                                       "name=\"peak-reserved:+2%\">\n      <failure"));
    /* a new OOM: the uncapped run against the capped one */
    char u[1024], c[1024];
    snprintf(u, sizeof u, "%s", db_of("gpt2_uncapped"));
    snprintf(c, sizeof c, "%s", db_of("gpt2_cap0.80_default"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on oom --no-replay", fs,
                                u, c), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "oom: OOMs 0 → 1 (no new OOM allowed): fails"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on oom --no-replay", fs,
                                c, u), 0);
    /* check --baseline */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --baseline %s --fail-on "
                                "peak-reserved:+2%% --fail-on oom", fs, b, a), 1);
    CU_ASSERT_EQUAL(count_lines(out), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "peak-reserved:+2%: peak-reserved 4.62 GiB → 5.40 GiB"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --baseline %s --fail-on "
                                "peak-reserved:+20%% --max-peak-reserved 6GiB", fs, b, a), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "meets 2 thresholds"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --baseline %s --fail-on "
                                "peak-reserved:+20%% --max-peak-reserved 5GiB", fs, b, a), 1);
    /* Markdown: the job summary */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --format markdown --fail-on "
                                "peak-reserved:+2%%", fs, a, b), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "**Why peak reserved changed by +802.00 MiB** (the parts "
                                       "add up to it exactly)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "- :x: peak-reserved:+2%"));
}

/* --annotations: a warning on the first frame of the grown sites whose file
 * the checkout (the current directory) has, one per source line; none when
 * it has none. */
static void test_annotations(void)
{
    char out[1 << 16];
    const char *fs = fsc_test_fragscope();
    char a[1024], b[1024], co[1024];
    snprintf(a, sizeof a, "%s", db_of("gpt2_emptycache"));
    snprintf(b, sizeof b, "%s", db_of("gpt2_uncapped"));
    snprintf(co, sizeof co, "%s", fsc_test_path("checkout"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "mkdir -p %s/bench/gpu && cd %s && %s diff %s "
                                "%s --annotations --format junit", co, co, fs, a, b), 0);
    CU_ASSERT_EQUAL(fsc_test_count(out, "::warning "), 0);
    /* the recording ran in another checkout: its bench/gpu/record.py is found by
     * the tail of its path */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "touch %s/bench/gpu/record.py && cd %s && %s "
                                "diff %s %s --annotations --format junit", co, co, fs, a, b), 0);
    /* one per source line: the 12 sites reached from line 115 (the model's
     * call) share one, the weights' .to() at line 89 another, line 113
     * itself a third; the untagged blocks (backward, no Python frame) none */
    CU_ASSERT_EQUAL(fsc_test_count(out, "::warning "), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "::warning file=bench/gpu/record.py,line=115,title=memory "
                                       "grew::fragscope: +5.10 GiB more live at the allocated "
                                       "peak from 12 call sites reached from here: "
                                       "activations.py:66 forward ← modeling_gpt2.py:240 forward "
                                       "(+2.01 GiB), functional.py:3504 cross_entropy ← "
                                       "loss_utils.py:40 fixed_cross_entropy (+1.20 GiB), "
                                       "pytorch_utils.py:119 forward ← modeling_gpt2.py:239 "
                                       "forward (+515.38 MiB), ...; peak reserved +8.05 GiB "
                                       "overall\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "::warning file=bench/gpu/record.py,line=89,"));
    /* shrinking sites get none */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cd %s && %s diff %s %s --annotations "
                                "--format junit", co, fs, b, a), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "::warning file=bench/gpu/record.py,line=115"));
}

/* --format html: the compare page, one file, no script, the figures of the
 * other formats. */
static void test_html(void)
{
    char out[1 << 16];
    const char *page = fsc_test_path("compare.html");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --format html -o %s --fail-on "
                                "oom", fsc_test_fragscope(), db_of("gpt2_uncapped"),
                                db_of("gpt2_emptycache"), page), 0);
    char *s = fsc_test_slurp(page, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(strncmp(s, "<!DOCTYPE html>", 15), 0);
    CU_ASSERT_PTR_NULL(strstr(s, "<script"));
    CU_ASSERT_PTR_NULL(strstr(s, "http"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "<h2>Why peak reserved changed by -8.05 GiB</h2>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "program (requested bytes live at the allocated peak) "
                                     "-7.26 GiB, allocator -804.72 MiB: rounding -64.90 MiB, "
                                     "reserved − allocated at the reserved peak -7.22 GiB, the "
                                     "peaks' moments +6.49 GiB."));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "the 19 sites add up to the change of peak allocated, "
                                     "-7.33 GiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "modeling_gpt2.py:282 forward ← modeling_layers.py:109 "
                                     "__call__"));
    CU_ASSERT_EQUAL(fsc_test_count(s, "<svg "), 2); /* the waterfall, the steps */
    CU_ASSERT_EQUAL(fsc_test_count(s, "<polyline "), 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "<li class=\"ok\">ok oom</li>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "</body></html>\n"));
    /* the same page from `fragscope view BASE NEW -o FILE`; -o is needed there,
     * and one run's page options are refused */
    const char *page2 = fsc_test_path("compare_view.html");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s view %s %s -o %s", fsc_test_fragscope(),
                                db_of("gpt2_uncapped"), db_of("gpt2_emptycache"), page2), 0);
    const char *page3 = fsc_test_path("compare_plain.html");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --format html -o %s",
                                fsc_test_fragscope(), db_of("gpt2_uncapped"),
                                db_of("gpt2_emptycache"), page3), 0);
    char *s2 = fsc_test_slurp(page2, NULL), *s3 = fsc_test_slurp(page3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s3);
    CU_ASSERT_STRING_EQUAL(s2, s3);
    free(s2);
    free(s3);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s view %s %s", fsc_test_fragscope(),
                                db_of("gpt2_uncapped"), db_of("gpt2_emptycache")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "needs -o COMPARE.html"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s view %s %s -o %s --bands 5",
                                fsc_test_fragscope(), db_of("gpt2_uncapped"),
                                db_of("gpt2_emptycache"), fsc_test_path("no.html")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--bands is for one run's page"));
    free(s);
}

/* Refusals: one line naming the file, exit 2. */
static void test_refusals(void)
{
    char out[1 << 16];
    const char *fs = fsc_test_fragscope();
    char a[1024], b[1024], job[1024];
    snprintf(a, sizeof a, "%s", db_of("boundary/b_defaults"));
    snprintf(b, sizeof b, "%s", db_of("boundary/b_rp4"));
    snprintf(job, sizeof job, "%s", fsc_test_path("job.db"));
    /* a job (two runs) against one run */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s merge -o %s %s %s >/dev/null", fs, job, a, b),
                    0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s", fs, job, a), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "holds 2 runs (a job) but"));
    CU_ASSERT_EQUAL(count_lines(out), 1);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s check %s --baseline %s --fail-on oom", fs, a,
                                job), 2);
    CU_ASSERT_EQUAL(count_lines(out), 1);
    /* different devices */
    char a2[1024], b2[1024];
    snprintf(a2, sizeof a2, "%s", fsc_test_path("h100.db"));
    snprintf(b2, sizeof b2, "%s", fsc_test_path("h200.db"));
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cp %s %s && cp %s %s && sqlite3 %s \"UPDATE meta "
                                "SET value = 85520809984 WHERE key = 'device_total'\" && sqlite3 "
                                "%s \"UPDATE meta SET value = 150109880320 WHERE key = "
                                "'device_total'\"", a, a2, b, b2, a2, b2), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s", fs, a2, b2), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "on a device of 79.65 GiB but"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "different devices"));
    CU_ASSERT_EQUAL(count_lines(out), 1);
    /* not a run, trace or snapshot; missing */
    const char *txt = fsc_test_path("notes.txt");
    FILE *f = fopen(txt, "w");
    fputs("some notes, not a run\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s", fs, a, txt), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, txt));
    CU_ASSERT_EQUAL(count_lines(out), 1);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s/missing.pickle", fs, a,
                                fsc_test_tmpdir()), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "missing.pickle: No such file"));
    /* bad thresholds */
    const char *bad[] = {"peak-reserved", "peak:+2%", "hard:+lots", "oom:+1", "hard:-2%"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s --fail-on '%s'", fs, a, b,
                                    bad[i]), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, bad[i]));
    }
    /* with -o, a failure leaves no file */
    const char *o = fsc_test_path("never.md");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s diff %s %s -o %s --format markdown", fs, a,
                                txt, o), 2);
    CU_ASSERT_EQUAL(fsc_test_file_exists(o), 0);
}

static void test_threshold_parse(void)
{
    fsc_diff_threshold_t t;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL(fsc_diff_threshold_parse("peak-reserved:+2%", &t, &err), 0);
    CU_ASSERT_EQUAL(t.metric, FSC_DIFF_M_PEAK_RESERVED);
    CU_ASSERT_EQUAL(t.relative, 1);
    CU_ASSERT_DOUBLE_EQUAL(t.limit, 2.0, 1e-9);
    CU_ASSERT_EQUAL(fsc_diff_threshold_parse("hard:+256MiB", &t, &err), 0);
    CU_ASSERT_EQUAL(t.metric, FSC_DIFF_M_HARD);
    CU_ASSERT_EQUAL(t.relative, 0);
    CU_ASSERT_DOUBLE_EQUAL(t.limit, 256.0 * 1024 * 1024, 0.5);
    CU_ASSERT_EQUAL(fsc_diff_threshold_parse("oom", &t, &err), 0);
    CU_ASSERT_EQUAL(t.metric, FSC_DIFF_M_OOM);
    CU_ASSERT_EQUAL(fsc_diff_threshold_parse("soft:0", &t, &err), 0);
    CU_ASSERT_EQUAL(fsc_diff_threshold_parse("pending:+1.5%", &t, &err), 0);
    CU_ASSERT_EQUAL(fsc_diff_threshold_parse("pending:%", &t, &err), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_diff_threshold_parse("", &t, &err), FSC_EINVAL);
}

static const fsc_test_case_t k_tests[] = {
    {"expandable segments: the allocator's part, the settings replay", test_gpt2_expandable},
    {"roundup_power2_divisions: rounding", test_boundary_rp4},
    {"checkpointed job under three settings", test_ckpt},
    {"empty_cache: steps and soft bytes", test_emptycache_steps},
    {"snapshots and ring windows on the command line", test_cli_snapshots},
    {"thresholds, JUnit, Markdown, check --baseline", test_thresholds},
    {"snapshots of two devices", test_devices},
    {"annotations", test_annotations},
    {"the compare page", test_html},
    {"refusals", test_refusals},
    {"threshold specs", test_threshold_parse},
    {NULL, NULL},
};

FSC_TEST_MAIN("diff", k_tests)
