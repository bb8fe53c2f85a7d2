/*
 * alloc_props.h — the random-operation driver and invariant checks shared
 * by the allocator property tests (sim backend in test_allocator_props.c,
 * cuda backend in test_allocator_cuda.c).
 *
 * props_run() drives one allocator through a seeded random mix of malloc,
 * free, record_stream, stream completion, empty_cache and oversized requests,
 * and every few hundred operations checks that
 *   - the statistics equal a recount from fsc_allocator_walk,
 *   - the statistics equal a recount from the event stream (PyTorch's
 *     accounting: allocated at ALLOC/FREE_REQUESTED, active and requested at
 *     ALLOC/FREE_COMPLETED, reserved at SEGMENT_*),
 *   - blocks tile their segments, never overlap, and no two free neighbours
 *     are left unmerged.
 */
#ifndef FSC_TEST_ALLOC_PROPS_H
#define FSC_TEST_ALLOC_PROPS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"

typedef struct props_result {
    long ops, mallocs, ooms, splits, merges, maps, unmaps, pending_completed, checks;
    long failures;
    char first_failure[512];
} props_result_t;

typedef struct props_blocks {
    fsc_block_info_t *v;
    size_t n, cap;
} props_blocks_t;

static inline void props_blocks_cb(void *ud, const fsc_block_info_t *b)
{
    props_blocks_t *l = ud;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = *b;
}

static inline int props_fail(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* Layout invariants from one walk; on failure a sentence in why. */
static inline int props_layout_ok(const props_blocks_t *l, char *why, size_t cap)
{
    uint64_t seg = 0, seg_sum = 0, seg_size = 0, next_addr = 0;
    int seg_exp = 0;
    for (size_t i = 0; i <= l->n; i++) {
        const fsc_block_info_t *b = i < l->n ? &l->v[i] : NULL;
        if (b == NULL || b->segment != seg || i == 0) {
            if (i > 0 && seg_sum != seg_size)
                return props_fail(why, cap, "segment 0x%llx: blocks sum to %llu, size %llu",
                                  (unsigned long long)seg, (unsigned long long)seg_sum,
                                  (unsigned long long)seg_size);
            if (b == NULL)
                break;
            seg = b->segment;
            seg_size = b->segment_size;
            seg_exp = b->expandable;
            seg_sum = 0;
            if (!seg_exp && b->addr != seg)
                return props_fail(why, cap, "segment 0x%llx starts with block 0x%llx",
                                  (unsigned long long)seg, (unsigned long long)b->addr);
        } else if (!seg_exp && b->addr != next_addr) {
            return props_fail(why, cap, "gap or overlap at 0x%llx in segment 0x%llx",
                              (unsigned long long)b->addr, (unsigned long long)seg);
        }
        if (i > 0) {
            const fsc_block_info_t *p = &l->v[i - 1];
            if (p->addr + p->size > b->addr)
                return props_fail(why, cap, "blocks 0x%llx and 0x%llx overlap",
                                  (unsigned long long)p->addr, (unsigned long long)b->addr);
            int p_free = !p->allocated && !p->pending_free;
            int b_free = !b->allocated && !b->pending_free;
            if (p->segment == b->segment && p->addr + p->size == b->addr && p_free && b_free)
                return props_fail(why, cap, "free neighbours 0x%llx and 0x%llx not merged",
                                  (unsigned long long)p->addr, (unsigned long long)b->addr);
        }
        if (b->size == 0 || b->size % 512 != 0 || b->addr % 512 != 0)
            return props_fail(why, cap, "block 0x%llx of %llu bytes is misaligned",
                              (unsigned long long)b->addr, (unsigned long long)b->size);
        seg_sum += b->size;
        next_addr = b->addr + b->size;
    }
    return 0;
}

static inline int props_check_layout(fsc_allocator_t *a, char *why, size_t cap)
{
    props_blocks_t l = {0};
    if (fsc_allocator_walk(a, props_blocks_cb, &l) != 0)
        return props_fail(why, cap, "walk failed");
    int rc = props_layout_ok(&l, why, cap);
    free(l.v);
    return rc;
}

/* Accounting rebuilt from events; index 0 = all, 1 = small, 2 = large. */
typedef struct props_acct {
    int64_t alloc[3], active[3], req[3], reserved[3], nalloc[3], nseg[3];
    int64_t alloc_peak, reserved_peak;
    long ooms, splits, merges, maps, unmaps, pending_completed;
    uint64_t last_free_requested;
    int last_type;
    fsc_event_sink_fn tee; /* also gets every event, if set */
    void *tee_ud;
} props_acct_t;

static inline void props_add(int64_t *v, int pool, int64_t d)
{
    v[0] += d;
    v[pool == FSC_POOL_SMALL ? 1 : 2] += d;
}

static inline void props_sink(void *ud, const fsc_event_t *ev)
{
    props_acct_t *c = ud;
    switch (ev->type) {
    case FSC_EV_ALLOC:
        props_add(c->alloc, ev->pool, (int64_t)ev->size);
        props_add(c->active, ev->pool, (int64_t)ev->size);
        props_add(c->req, ev->pool, (int64_t)ev->requested);
        props_add(c->nalloc, ev->pool, 1);
        if (c->alloc[0] > c->alloc_peak)
            c->alloc_peak = c->alloc[0];
        break;
    case FSC_EV_FREE_REQUESTED:
        props_add(c->alloc, ev->pool, -(int64_t)ev->size);
        props_add(c->nalloc, ev->pool, -1);
        c->last_free_requested = ev->addr;
        break;
    case FSC_EV_FREE_COMPLETED:
        props_add(c->active, ev->pool, -(int64_t)ev->size);
        props_add(c->req, ev->pool, -(int64_t)ev->requested);
        if (!(c->last_type == FSC_EV_FREE_REQUESTED && c->last_free_requested == ev->addr))
            c->pending_completed++;
        break;
    case FSC_EV_SEGMENT_ALLOC:
    case FSC_EV_SEGMENT_MAP:
        props_add(c->reserved, ev->pool, (int64_t)ev->size);
        if (ev->type == FSC_EV_SEGMENT_ALLOC)
            props_add(c->nseg, ev->pool, 1);
        else
            c->maps++;
        if (c->reserved[0] > c->reserved_peak)
            c->reserved_peak = c->reserved[0];
        break;
    case FSC_EV_SEGMENT_FREE:
    case FSC_EV_SEGMENT_UNMAP:
        props_add(c->reserved, ev->pool, -(int64_t)ev->size);
        if (ev->type == FSC_EV_SEGMENT_FREE)
            props_add(c->nseg, ev->pool, -1);
        else
            c->unmaps++;
        break;
    case FSC_EV_SPLIT:
        c->splits++;
        break;
    case FSC_EV_MERGE:
        c->merges++;
        break;
    case FSC_EV_OOM:
        c->ooms++;
        break;
    default:
        break;
    }
    c->last_type = ev->type;
    if (c->tee != NULL)
        c->tee(c->tee_ud, ev);
}

/* Statistics against the layout and the events. */
static inline int props_check_stats(fsc_allocator_t *a, const props_acct_t *c, char *why,
                                    size_t cap)
{
    props_blocks_t l = {0};
    if (fsc_allocator_walk(a, props_blocks_cb, &l) != 0)
        return props_fail(why, cap, "walk failed");
    int rc = props_layout_ok(&l, why, cap);
    int64_t al[3] = {0}, aln[3] = {0}, ac[3] = {0}, acn[3] = {0}, rq[3] = {0}, rs[3] = {0};
    int64_t sg[3] = {0}, is[3] = {0}, isb[3] = {0};
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        const fsc_block_info_t *b = &l.v[i];
        int p = b->pool;
        int first = i == 0 || l.v[i - 1].segment != b->segment;
        int single = first && (i + 1 == l.n || l.v[i + 1].segment != b->segment);
        if (first) {
            props_add(rs, p, (int64_t)b->segment_size);
            if (!b->expandable)
                props_add(sg, p, 1);
        }
        if (b->allocated) {
            props_add(al, p, (int64_t)b->size);
            props_add(aln, p, 1);
        }
        if (b->allocated || b->pending_free) {
            props_add(ac, p, (int64_t)b->size);
            props_add(acn, p, 1);
            props_add(rq, p, (int64_t)b->requested);
        } else if (!b->expandable && !single) {
            props_add(is, p, 1);
            props_add(isb, p, (int64_t)b->size);
        }
    }
    free(l.v);
    if (rc != 0)
        return rc;
    fsc_alloc_stats_t s;
    fsc_allocator_get_stats(a, &s);
    static const char *const pn[3] = {"all", "small", "large"};
    for (int k = 0; k < 3; k++) {
#define PROPS_EQ(stat, val)                                                                    \
    if (s.stat[k].current != (val))                                                            \
        return props_fail(why, cap, #stat ".%s.current = %lld, recount %lld", pn[k],            \
                          (long long)s.stat[k].current, (long long)(val));
        PROPS_EQ(allocated_bytes, al[k]);
        PROPS_EQ(allocation, aln[k]);
        PROPS_EQ(active_bytes, ac[k]);
        PROPS_EQ(active, acn[k]);
        PROPS_EQ(requested_bytes, rq[k]);
        PROPS_EQ(reserved_bytes, rs[k]);
        PROPS_EQ(segment, sg[k]);
        PROPS_EQ(inactive_split, is[k]);
        PROPS_EQ(inactive_split_bytes, isb[k]);
        PROPS_EQ(allocated_bytes, c->alloc[k]);
        PROPS_EQ(allocation, c->nalloc[k]);
        PROPS_EQ(active_bytes, c->active[k]);
        PROPS_EQ(requested_bytes, c->req[k]);
        PROPS_EQ(reserved_bytes, c->reserved[k]);
        PROPS_EQ(segment, c->nseg[k]);
#undef PROPS_EQ
    }
    if (s.allocated_bytes[0].peak != c->alloc_peak || s.reserved_bytes[0].peak != c->reserved_peak)
        return props_fail(why, cap, "peaks %lld/%lld, from events %lld/%lld",
                          (long long)s.allocated_bytes[0].peak, (long long)s.reserved_bytes[0].peak,
                          (long long)c->alloc_peak, (long long)c->reserved_peak);
    if (s.num_ooms != c->ooms)
        return props_fail(why, cap, "num_ooms %lld, OOM events %ld", (long long)s.num_ooms,
                          c->ooms);
    return 0;
}

static inline uint64_t props_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static inline uint64_t props_size(uint64_t *rng)
{
    uint64_t r = props_rand(rng) % 100;
    if (r < 55)
        return 1 + props_rand(rng) % (props_rand(rng) % 2 ? 8192 : FSC_MiB);
    if (r < 90)
        return FSC_MiB + props_rand(rng) % (11 * FSC_MiB);
    return 12 * FSC_MiB + props_rand(rng) % (140 * FSC_MiB);
}

#define PROPS_LIVE_MAX 384

typedef struct props_opts {
    const uint64_t *streams; /* {main, alternate, use 1, use 2}; NULL = {0, 1, 2, 3} (sim) */
    fsc_event_sink_fn tee;   /* optional second consumer of the events */
    void *tee_ud;
} props_opts_t;

static inline int props_run(fsc_backend_t *be, const char *conf, uint64_t capacity, long nops,
                            unsigned seed, const props_opts_t *po, props_result_t *r)
{
    static const uint64_t k_sim_streams[4] = {0, 1, 2, 3};
    const uint64_t *streams = po != NULL && po->streams != NULL ? po->streams : k_sim_streams;
    memset(r, 0, sizeof *r);
    props_acct_t *c = calloc(1, sizeof *c);
    if (po != NULL) {
        c->tee = po->tee;
        c->tee_ud = po->tee_ud;
    }
    fsc_allocator_opts_t o = {0};
    fsc_err_t e = {0};
    if (fsc_alloc_config_parse(conf, &o.config, &e) != 0) {
        free(c);
        return -1;
    }
    o.backend = be;
    o.capacity = capacity;
    o.sink = props_sink;
    o.sink_ud = c;
    fsc_allocator_t *a;
    if (fsc_allocator_create(&o, &a, &e) != 0) {
        free(c);
        return -1;
    }
    uint64_t live[PROPS_LIVE_MAX];
    int n = 0;
    uint64_t rng = 0x2545F4914F6CDD1Dull ^ ((uint64_t)seed << 20);
    char why[400];
    for (long i = 0; i < nops; i++) {
        uint64_t op = props_rand(&rng) % 1000;
        int rc = 0;
        if ((op < 520 || (op >= 990 && op < 996)) && n < PROPS_LIVE_MAX) {
            uint64_t size = op >= 990 ? 200 * FSC_MiB + props_rand(&rng) % (800 * FSC_MiB)
                                      : props_size(&rng);
            uint64_t stream = props_rand(&rng) % 10 == 0 ? streams[1] : streams[0];
            uint64_t addr;
            rc = fsc_allocator_malloc(a, size, stream, &addr);
            r->mallocs++;
            if (rc == 0)
                live[n++] = addr;
            else if (rc == FSC_EOOM)
                rc = 0;
        } else if (op < 900 && n > 0) {
            int k = (int)(props_rand(&rng) % (uint64_t)n);
            rc = fsc_allocator_free(a, live[k]);
            live[k] = live[--n];
        } else if (op < 930 && n > 0) {
            int k = (int)(props_rand(&rng) % (uint64_t)n);
            rc = fsc_allocator_record_stream(a, live[k], streams[2 + props_rand(&rng) % 2]);
        } else if (op < 985) {
            rc = fsc_allocator_stream_done(a, streams[2 + props_rand(&rng) % 2]);
        } else if (op < 988) {
            rc = fsc_allocator_empty_cache(a);
        }
        r->ops++;
        if (rc != 0 && r->failures++ == 0)
            snprintf(r->first_failure, sizeof r->first_failure, "op %ld: %s (%s)", i,
                     fsc_strerror(rc), fsc_allocator_last_error(a));
        if (i % 500 == 499) {
            r->checks++;
            if (props_check_stats(a, c, why, sizeof why) != 0 && r->failures++ == 0)
                snprintf(r->first_failure, sizeof r->first_failure, "after op %ld: %s", i, why);
        }
    }
    /* Teardown: everything freed and released leaves nothing reserved. */
    while (n > 0)
        if (fsc_allocator_free(a, live[--n]) != 0)
            r->failures++;
    fsc_allocator_stream_done(a, streams[2]);
    fsc_allocator_stream_done(a, streams[3]);
    fsc_allocator_empty_cache(a);
    if (props_check_stats(a, c, why, sizeof why) != 0 && r->failures++ == 0)
        snprintf(r->first_failure, sizeof r->first_failure, "at the end: %s", why);
    fsc_alloc_stats_t s;
    fsc_allocator_get_stats(a, &s);
    if ((s.reserved_bytes[0].current != 0 || c->reserved[0] != 0) && r->failures++ == 0)
        snprintf(r->first_failure, sizeof r->first_failure, "%lld bytes still reserved",
                 (long long)s.reserved_bytes[0].current);
    r->ooms = c->ooms;
    r->splits = c->splits;
    r->merges = c->merges;
    r->maps = c->maps;
    r->unmaps = c->unmaps;
    r->pending_completed = c->pending_completed;
    fsc_allocator_destroy(a);
    free(c);
    return 0;
}

#endif
