/*
 * test_allocator_pytorch.c — the allocator against PyTorch's own runs: the
 * request stream of a recorded snapshot (through the importer), replayed on
 * the scripted sim backend with the segment addresses PyTorch got, must give
 * every address PyTorch's allocator gave, the block sizes the importer
 * derived, and PyTorch's memory_stats() (values copied from the run's
 * .stats.json).
 */
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fragscope/pytorch.h"
#include "fsc_test.h"

typedef struct req {
    uint8_t type;
    uint64_t addr, size, requested, stream;
} req_t;

typedef struct reqs {
    req_t *v;
    size_t n, cap;
} reqs_t;

static int on_header(void *ud, const fsc_trace_header_t *hdr)
{
    (void)ud;
    (void)hdr;
    return 0;
}

static int on_tag(void *ud, uint32_t parent, const char *name, size_t len, uint32_t *node_out)
{
    (void)ud;
    (void)parent;
    (void)name;
    (void)len;
    *node_out = 1;
    return 0;
}

static int on_event(void *ud, const fsc_event_t *ev)
{
    reqs_t *r = ud;
    if (ev->type != FSC_EV_ALLOC && ev->type != FSC_EV_FREE_REQUESTED &&
        ev->type != FSC_EV_SEGMENT_ALLOC && ev->type != FSC_EV_OOM)
        return 0;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4096;
        r->v = realloc(r->v, r->cap * sizeof *r->v);
        if (r->v == NULL)
            return FSC_ENOMEM;
    }
    r->v[r->n++] = (req_t){ev->type, ev->addr, ev->size, ev->requested, ev->stream};
    return 0;
}

static void last_alloc_sink(void *ud, const fsc_event_t *ev)
{
    if (ev->type == FSC_EV_ALLOC)
        *(uint64_t *)ud = ev->size;
}

typedef struct expect {
    const char *file;
    uint64_t capacity;
    long allocs, ooms;
    int64_t peak_allocated, peak_reserved, segments, inactive_split_bytes_peak, retries;
} expect_t;

static void replay(const expect_t *x)
{
    reqs_t r = {0};
    fsc_import_sink_t sink = {&r, on_header, on_tag, on_event};
    fsc_err_t e = {0};
    int rc = fsc_pytorch_import(fsc_test_data(x->file), NULL, &sink, NULL, &e);
    if (rc != 0)
        fprintf(stderr, "\n  import %s: %s\n", x->file, e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    uint64_t *sa = malloc((r.n + 1) * sizeof *sa), *ss = malloc((r.n + 1) * sizeof *ss);
    size_t ns = 0;
    for (size_t i = 0; i < r.n; i++)
        if (r.v[i].type == FSC_EV_SEGMENT_ALLOC) {
            sa[ns] = r.v[i].addr;
            ss[ns++] = r.v[i].size;
        }
    fsc_backend_t *be;
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create_scripted(150110011392ull, sa, ss, ns, &be), 0);
    fsc_allocator_opts_t o = {0};
    o.backend = be;
    o.capacity = x->capacity;
    uint64_t last_size = 0;
    o.sink = last_alloc_sink;
    o.sink_ud = &last_size;
    fsc_allocator_t *a;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &a, NULL), 0);
    long allocs = 0, wrong_addr = 0, wrong_size = 0, ooms = 0, first_wrong = -1;
    for (size_t i = 0; i < r.n; i++) {
        const req_t *q = &r.v[i];
        uint64_t addr = 0;
        if (q->type == FSC_EV_ALLOC) {
            rc = fsc_allocator_malloc(a, q->requested, q->stream, &addr);
            CU_ASSERT_EQUAL(rc, 0);
            if (addr != q->addr && wrong_addr++ == 0)
                first_wrong = allocs;
            /* the importer's model and the allocator agree on block sizes */
            wrong_size += last_size != q->size;
            allocs++;
        } else if (q->type == FSC_EV_FREE_REQUESTED) {
            CU_ASSERT_EQUAL(fsc_allocator_free(a, q->addr), 0);
        } else if (q->type == FSC_EV_OOM) {
            CU_ASSERT_EQUAL(fsc_allocator_malloc(a, q->requested, q->stream, &addr), FSC_EOOM);
            ooms++;
        }
    }
    if (wrong_addr != 0)
        fprintf(stderr, "\n  %s: %ld addresses differ, first at allocation %ld\n", x->file,
                wrong_addr, first_wrong);
    CU_ASSERT_EQUAL(allocs, x->allocs);
    CU_ASSERT_EQUAL(wrong_addr, 0);
    CU_ASSERT_EQUAL(wrong_size, 0);
    CU_ASSERT_EQUAL(ooms, x->ooms);
    CU_ASSERT_EQUAL(fsc_backend_sim_script_diverged(be), -1);
    fsc_alloc_stats_t s;
    fsc_allocator_get_stats(a, &s);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].peak, x->peak_allocated);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].peak, x->peak_reserved);
    CU_ASSERT_EQUAL(s.segment[FSC_STAT_ALL].allocated, x->segments);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_ALL].peak, x->inactive_split_bytes_peak);
    CU_ASSERT_EQUAL(s.num_alloc_retries, x->retries);
    CU_ASSERT_EQUAL(s.num_ooms, x->ooms);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    free(sa);
    free(ss);
    free(r.v);
}

static void test_gpt2_varlen(void)
{
    /* gpt2_varlen.stats.json: allocated_bytes.all.peak, reserved_bytes.all.peak,
     * segment.all.allocated, inactive_split_bytes.all.peak, num_alloc_retries */
    static const expect_t x = {"pytorch/gpt2_varlen.pickle", 0, 25939, 0, 17426674688ll,
                               22020096000ll, 251, 5420651520ll, 0};
    replay(&x);
}

static void test_gpt2m_oom_12g(void)
{
    static const expect_t x = {"pytorch/gpt2m_oom_12g.pickle", 12 * FSC_GiB, 712, 1, 12829982720ll,
                               12851347456ll, 284, 36585472, 1};
    replay(&x);
}

static const fsc_test_case_t k_tests[] = {
    {"gpt2_varlen", test_gpt2_varlen},
    {"gpt2m_oom_12g", test_gpt2m_oom_12g},
    {NULL, NULL},
};

FSC_TEST_MAIN("allocator_pytorch", k_tests)
