/*
 * test_whatif_spill.c — the what-if request stream kept in blocks, in
 * memory or spilled to a temporary file (analyzer/whatif/whatif_store.c):
 * real recordings give the same replays, verification and suggestions
 * whether the stream stayed in memory, went to the file whole, or was
 * split between the two, with blocks of a few ops (so that every path of
 * the cursor runs). The bound and the block size are forced small through
 * the store's two knobs, FRAGSCOPE_WHATIF_SPILL_BYTES and
 * FRAGSCOPE_WHATIF_BLOCK_OPS.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fragscope/whatif.h"
#include "fsc_test.h"
#include "whatif_internal.h"

/* From gpt2_varlen.stats.json (torch.cuda.memory_stats() of the run). */
#define GPT2_PEAK_RESERVED 22020096000ull
#define GPT2_PEAK_ALLOCATED 17426674688ull
#define GPT2_SEGMENTS 251
#define GPT2_ALLOCS 25939
#define OOM_CAP (12 * FSC_GiB) /* gpt2m_oom_12g: set_per_process_memory_fraction */

enum { IN_MEMORY, SPILLED, SPLIT, NMODES };
#define SPLIT_BYTES 2000

/* Where the last load of each mode kept its blocks. */
static struct {
    size_t nblocks, mem;
    uint64_t spilled;
} g_last[NMODES];

/* Loads name with the stream in memory (the default bound), all in the
 * file, or split between the two; blocks of 37 ops for the last two. */
static fsc_request_stream_t *load_as(const char *name, int mode)
{
    if (mode != IN_MEMORY) {
        setenv("FRAGSCOPE_WHATIF_SPILL_BYTES", mode == SPILLED ? "0" : "2000", 1);
        setenv("FRAGSCOPE_WHATIF_BLOCK_OPS", "37", 1);
    }
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    int rc = fsc_request_stream_load(fsc_test_data(name), &rs, &err);
    unsetenv("FRAGSCOPE_WHATIF_SPILL_BYTES");
    unsetenv("FRAGSCOPE_WHATIF_BLOCK_OPS");
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", name, fsc_err_msg(&err));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    /* the stream is where the mode says */
    const fsc__wstore_t *st = &rs->store;
    g_last[mode].nblocks = st->nblocks;
    g_last[mode].mem = st->mem;
    g_last[mode].spilled = st->spilled;
    if (mode == IN_MEMORY) {
        CU_ASSERT_EQUAL(st->spilled, 0);
        CU_ASSERT_EQUAL(st->fd, -1);
    } else if (mode == SPILLED) {
        CU_ASSERT_EQUAL(st->mem, 0);
        CU_ASSERT_EQUAL(st->spilled > 0, st->nblocks > 0);
        CU_ASSERT_EQUAL(st->fd >= 0, st->nblocks > 0);
    } else {
        CU_ASSERT(st->mem <= SPLIT_BYTES);
    }
    return rs;
}

static void same_info(const fsc_request_stream_info_t *a, const fsc_request_stream_info_t *b)
{
    CU_ASSERT_EQUAL(a->events, b->events);
    CU_ASSERT_EQUAL(a->ops, b->ops);
    CU_ASSERT_EQUAL(a->allocs, b->allocs);
    CU_ASSERT_EQUAL(a->frees, b->frees);
    CU_ASSERT_EQUAL(a->delayed_frees, b->delayed_frees);
    CU_ASSERT_EQUAL(a->skipped, b->skipped);
    CU_ASSERT_EQUAL(a->peak_requested, b->peak_requested);
    CU_ASSERT_EQUAL(a->inferred_empty_caches, b->inferred_empty_caches);
    CU_ASSERT_EQUAL(a->inferred_pools, b->inferred_pools);
    CU_ASSERT_EQUAL(a->inferred_pool_segments, b->inferred_pool_segments);
    CU_ASSERT_EQUAL(a->inferred_pool_allocs, b->inferred_pool_allocs);
    CU_ASSERT_EQUAL(a->pool_releases, b->pool_releases);
    CU_ASSERT_EQUAL(a->use_on_oom_allocs, b->use_on_oom_allocs);
}

static void same_result(const fsc_whatif_result_t *a, const fsc_whatif_result_t *b)
{
    CU_ASSERT_EQUAL(a->rc, b->rc);
    CU_ASSERT_EQUAL(a->peak_reserved, b->peak_reserved);
    CU_ASSERT_EQUAL(a->peak_allocated, b->peak_allocated);
    CU_ASSERT_EQUAL(a->utilization, b->utilization);
    CU_ASSERT_EQUAL(a->external_frag_at_peak, b->external_frag_at_peak);
    CU_ASSERT_EQUAL(a->segments, b->segments);
    CU_ASSERT_EQUAL(a->segment_maps, b->segment_maps);
    CU_ASSERT_EQUAL(a->num_alloc_retries, b->num_alloc_retries);
    CU_ASSERT_EQUAL(a->num_ooms, b->num_ooms);
    CU_ASSERT_EQUAL(a->oom, b->oom);
    CU_ASSERT_EQUAL(a->ops_replayed, b->ops_replayed);
    CU_ASSERT_EQUAL(a->run_complete, b->run_complete);
    CU_ASSERT_EQUAL(a->has_margin, b->has_margin);
    CU_ASSERT_EQUAL(a->margin, b->margin);
    CU_ASSERT_EQUAL(a->first_oom.request, b->first_oom.request);
    CU_ASSERT_EQUAL(a->first_oom.event, b->first_oom.event);
    CU_ASSERT_EQUAL(a->first_oom.requested, b->first_oom.requested);
    CU_ASSERT_EQUAL(a->first_oom.recorded_oom, b->first_oom.recorded_oom);
    CU_ASSERT_STRING_EQUAL(a->first_oom.marker, b->first_oom.marker);
    CU_ASSERT_STRING_EQUAL(a->first_oom.tag, b->first_oom.tag);
}

static void same_verify(const fsc_whatif_verify_t *a, const fsc_whatif_verify_t *b)
{
    CU_ASSERT_EQUAL(a->match, b->match);
    CU_ASSERT_EQUAL(a->segments_got, b->segments_got);
    CU_ASSERT_EQUAL(a->first_divergence, b->first_divergence);
    CU_ASSERT_EQUAL(a->allocs_compared, b->allocs_compared);
    CU_ASSERT_EQUAL(a->alloc_addr_matches, b->alloc_addr_matches);
    CU_ASSERT_EQUAL(a->first_addr_mismatch, b->first_addr_mismatch);
    same_result(&a->replay, &b->replay);
}

/* Several settings at once (two threads reading the blocks), at a cap
 * that makes some of them fail, and the verification, in every mode. */
static void compare_modes(const char *name, uint64_t capacity, fsc_whatif_verify_t *v_out)
{
    static const char *const cfgs[] = {"", "expandable_segments:True", "max_split_size_mb:64",
                                       "garbage_collection_threshold:0.6"};
    enum { NC = sizeof cfgs / sizeof cfgs[0] };
    fsc_whatif_result_t res[NMODES][NC];
    fsc_whatif_verify_t v[NMODES];
    fsc_request_stream_info_t in[NMODES];
    for (int m = 0; m < NMODES; m++) {
        fsc_request_stream_t *rs = load_as(name, m);
        fsc_err_t err = {0, ""};
        fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
        o.capacity = capacity;
        o.threads = 2;
        CU_ASSERT_EQUAL(fsc_whatif_run(rs, cfgs, NC, &o, res[m], &err), 0);
        CU_ASSERT_EQUAL(fsc_whatif_verify(rs, NULL, &v[m], &err), 0);
        CU_ASSERT_EQUAL(fsc_request_stream_info(rs, &in[m]), 0);
        fsc_request_stream_destroy(rs);
    }
    for (int m = 1; m < NMODES; m++) {
        same_info(&in[0], &in[m]);
        same_verify(&v[0], &v[m]);
        for (int c = 0; c < NC; c++)
            same_result(&res[0][c], &res[m][c]);
    }
    *v_out = v[SPILLED];
}

/* The GPT-2 run, replayed from the file, is PyTorch's to the byte. */
static void test_gpt2_varlen_spilled(void)
{
    fsc_whatif_verify_t v;
    compare_modes("pytorch/gpt2_varlen.pickle", 20 * FSC_GiB, &v);
    CU_ASSERT(g_last[SPILLED].nblocks > 100);
    CU_ASSERT(g_last[SPILLED].spilled > 0);
    CU_ASSERT(g_last[SPLIT].mem > 0 && g_last[SPLIT].spilled > 0);
    CU_ASSERT_EQUAL(v.match, 1);
    CU_ASSERT_EQUAL(v.segments_got, GPT2_SEGMENTS);
    CU_ASSERT_EQUAL(v.replay.peak_reserved, GPT2_PEAK_RESERVED);
    CU_ASSERT_EQUAL(v.replay.peak_allocated, GPT2_PEAK_ALLOCATED);
    CU_ASSERT_EQUAL(v.allocs_compared, GPT2_ALLOCS);
    CU_ASSERT_EQUAL(v.alloc_addr_matches, GPT2_ALLOCS);
}

/* Released MemPools (pools inferred, applied by the cursor), empty_cache
 * bursts, a use_on_oom pool and an OOM: the same from the file. */
static void test_pools_and_releases_spilled(void)
{
    static const char *const names[] = {"gpu/mempool.pickle", "gpu/mempool_oom.pickle",
                                        "gpu/gpt2_emptycache.pickle", "gpu/graphed.pickle",
                                        "pytorch/gpt2m_oom_12g.pickle"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fsc_whatif_verify_t v;
        compare_modes(names[i], 0, &v);
        if (i < 4) {
            CU_ASSERT_EQUAL(v.match, 1); /* as test_whatif_pools, test_whatif_habits */
        }
    }
}

static void test_suggest_spilled(void)
{
    fsc_suggestion_t *s[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    for (int m = 0; m < 2; m++) {
        fsc_request_stream_t *rs = load_as("pytorch/gpt2m_oom_12g.pickle", m ? SPILLED : IN_MEMORY);
        fsc_err_t err = {0, ""};
        fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
        o.capacity = OOM_CAP;
        o.threads = 2;
        CU_ASSERT_EQUAL(fsc_whatif_suggest_opts(rs, &o, &s[m], &n[m], &err), 0);
        fsc_request_stream_destroy(rs);
    }
    CU_ASSERT(n[0] > 0);
    CU_ASSERT_EQUAL_FATAL(n[0], n[1]);
    for (size_t i = 0; i < n[0]; i++) {
        CU_ASSERT_STRING_EQUAL(s[0][i].config, s[1][i].config);
        CU_ASSERT_EQUAL(s[0][i].avoids_oom, s[1][i].avoids_oom);
        CU_ASSERT_EQUAL(s[0][i].needed_capacity, s[1][i].needed_capacity);
        CU_ASSERT_EQUAL(s[0][i].peak_reserved, s[1][i].peak_reserved);
        CU_ASSERT_STRING_EQUAL(s[0][i].note, s[1][i].note);
    }
    fsc_suggestions_free(s[0]);
    fsc_suggestions_free(s[1]);
}

static size_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    if (d == NULL)
        return (size_t)-1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* The temporary file is made in $TMPDIR and unlinked at once: nothing of
 * it is there while the stream lives, or after. */
static void test_spill_file_unlinked(void)
{
    const char *dir = fsc_test_path("spill");
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
    const char *old = getenv("TMPDIR");
    char *saved = old != NULL ? strdup(old) : NULL;
    setenv("TMPDIR", dir, 1);
    fsc_request_stream_t *rs = load_as("gpu/mempool.pickle", SPILLED);
    CU_ASSERT(rs->store.fd >= 0 && rs->store.spilled > 0); /* the file exists, open */
    CU_ASSERT_EQUAL(entries(dir), 0);
    fsc_whatif_result_t r;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL(fsc_whatif_replay(rs, "", NULL, &r, &err), 0);
    fsc_request_stream_destroy(rs);
    CU_ASSERT_EQUAL(entries(dir), 0);
    if (saved != NULL)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
}

/* A temporary directory that cannot be written: one error naming it. */
static void test_spill_unwritable(void)
{
    const char *dir = fsc_test_path("no-such-dir");
    const char *old = getenv("TMPDIR");
    char *saved = old != NULL ? strdup(old) : NULL;
    setenv("TMPDIR", dir, 1);
    setenv("FRAGSCOPE_WHATIF_SPILL_BYTES", "0", 1);
    setenv("FRAGSCOPE_WHATIF_BLOCK_OPS", "10", 1);
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    int rc = fsc_request_stream_load(fsc_test_data("gpu/mempool.pickle"), &rs, &err);
    unsetenv("FRAGSCOPE_WHATIF_SPILL_BYTES");
    unsetenv("FRAGSCOPE_WHATIF_BLOCK_OPS");
    CU_ASSERT_EQUAL(rc, FSC_EIO);
    CU_ASSERT_PTR_NULL(rs);
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&err), "cannot create a temporary file in"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fsc_err_msg(&err), "no-such-dir"));
    if (saved != NULL)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
}

static const fsc_test_case_t k_tests[] = {
    {"gpt2_varlen from memory, from the file, split", test_gpt2_varlen_spilled},
    {"pools, releases and OOMs from the file", test_pools_and_releases_spilled},
    {"suggestions from the file", test_suggest_spilled},
    {"the temporary file is unlinked", test_spill_file_unlinked},
    {"an unwritable temporary directory", test_spill_unwritable},
    {NULL, NULL},
};

FSC_TEST_MAIN("whatif_spill", k_tests)
