/*
 * whatif_replay.c — one replay of a request stream on a fresh allocator, and
 * its comparison with the recording (fidelity check).
 *
 * The allocator's event sink watches reserved bytes (for the peak and the
 * layout at it) and the segment sequence; the layout walk that measures
 * external fragmentation runs only after an operation that set a new
 * reserved peak, since the sink runs under the allocator's lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/analyzer.h"
#include "whatif_cursor.h"

/* Stream ids standing for "the other streams a block was used on": one per
 * delayed free, so each completes exactly when the recording says. Real
 * stream ids (CUDA stream handles, small numbers) never set the top bit. */
#define PSEUDO_STREAM(id) ((1ull << 63) | (id))

typedef struct replay_ctx {
    const fsc_request_stream_t *rs;
    fsc_whatif_verify_t *v;
    uint64_t reserved, peak_reserved;
    int new_peak;
    uint64_t segments, maps;
    uint64_t exp_bases[64]; /* expandable segments seen (per pool and stream) */
    size_t nexp;
    uint64_t seg_index;
    int seeding;                 /* adopting the starting state: not the
                                    replay's own segments */
    uint64_t recorded_cap;       /* fsc__wstream_recorded_cap */
    double recorded_gc;          /* the recording's GC threshold */
    int served_failed;           /* a recorded OOM request was served */
    uint64_t reserved_at_failed; /* reserved right after the last one */
    fsc__wprobe_t *probe;        /* stop at the first address that differs */
    /* Cross-setting check: the other recording, read alongside through
     * its own cursor; its segments and addresses are the expected ones. */
    const fsc_request_stream_t *against;
    fsc__wcur_t *acur;
    const fsc_alloc_config_t *cfg;
    int stop; /* the requests to compare ended */
    int check_free; /* FRAGSCOPE_WHATIF_CHECK_FREE: the summary against a walk */
} replay_ctx_t;

static void note_segment(replay_ctx_t *c, const fsc_event_t *ev)
{
    fsc_whatif_verify_t *v = c->v;
    uint64_t i = c->seg_index++;
    if (v == NULL)
        return;
    v->segments_got++;
    if (v->first_divergence >= 0)
        return;
    uint64_t addr = ev->type == FSC_EV_SEGMENT_MAP ? ev->segment : ev->addr;
    const fsc_request_stream_t *exp = c->against != NULL ? c->against : c->rs;
    const fsc__wseg_t *want = i < exp->nsegs ? &exp->segs[i] : NULL;
    if (want != NULL && want->type == ev->type && want->size == ev->size)
        return;
    v->first_divergence = (long)i;
    v->expected_type = want ? want->type : 0;
    v->expected_size = want ? want->size : 0;
    v->expected_addr = want ? want->addr : 0;
    v->got_type = ev->type;
    v->got_size = ev->size;
    v->got_addr = addr;
}

static void sink(void *ud, const fsc_event_t *ev)
{
    replay_ctx_t *c = ud;
    if (c->seeding) {
        /* the state the recording began in: reserved, not created */
        if (ev->type == FSC_EV_SEGMENT_ALLOC || ev->type == FSC_EV_SEGMENT_MAP) {
            c->reserved += ev->size;
            if (c->reserved > c->peak_reserved)
                c->peak_reserved = c->reserved;
        }
        return;
    }
    switch (ev->type) {
    case FSC_EV_SEGMENT_ALLOC:
        c->segments++;
        /* fall through */
    case FSC_EV_SEGMENT_MAP:
        if (ev->type == FSC_EV_SEGMENT_MAP) {
            c->maps++;
            size_t k = 0;
            while (k < c->nexp && c->exp_bases[k] != ev->segment)
                k++;
            if (k == c->nexp) {
                c->segments++;
                if (c->nexp < 64)
                    c->exp_bases[c->nexp++] = ev->segment;
            }
        }
        c->reserved += ev->size;
        if (c->reserved > c->peak_reserved) {
            c->peak_reserved = c->reserved;
            c->new_peak = 1;
        }
        note_segment(c, ev);
        break;
    case FSC_EV_SEGMENT_FREE:
    case FSC_EV_SEGMENT_UNMAP:
        c->reserved -= ev->size;
        break;
    default:
        break;
    }
}

typedef struct frag_acc {
    uint64_t free_bytes, largest;
} frag_acc_t;

static void frag_visit(void *ud, const fsc_block_info_t *b)
{
    frag_acc_t *f = ud;
    if (b->allocated || b->pending_free)
        return;
    f->free_bytes += b->size;
    if (b->size > f->largest)
        f->largest = b->size;
}

static void fill_oom(const fsc_request_stream_t *rs, const fsc__wop_t *op,
                     const char *last_marker, int64_t recorded_ooms, fsc_whatif_result_t *out)
{
    fsc_whatif_oom_t *o = &out->first_oom;
    o->recorded_oom = (op->flags & FSC__WOP_F_RECORDED_OOM) ? recorded_ooms : -1;
    o->request = op->id - rs->nseed_blocks;
    o->event = op->event;
    o->requested = op->arg;
    o->stream = op->stream;
    o->has_marker = last_marker != NULL;
    o->marker[0] = '\0';
    if (last_marker != NULL)
        snprintf(o->marker, sizeof o->marker, "%s", last_marker);
    /* What the report calls the call site; the full path can be kilobytes. */
    o->tag_node = op->tag;
    if (fsc_request_stream_tag_label(rs, op->tag, 0, 0, FSC_WHATIF_SITE_DEPTH, o->tag,
                                     sizeof o->tag) != 0)
        o->tag[0] = '\0';
}

typedef struct probe_walk {
    uint64_t addr, size, next_addr, next_size;
    int found, next_free;
} probe_walk_t;

static void probe_visit(void *ud, const fsc_block_info_t *b)
{
    probe_walk_t *w = ud;
    if (w->found == 1) {
        w->found = 2;
        w->next_free = !b->allocated && !b->pending_free && b->addr == w->addr + w->size;
        w->next_size = b->size;
        return;
    }
    if (b->addr == w->addr && w->found == 0) {
        w->found = 1;
        w->size = b->size;
    }
}

/* The first request served elsewhere than recorded: what it asked for,
 * where this replay served it and how large that free block was before
 * (the block handed out, and the remainder split off it, if any). */
static void probe_block(fsc_allocator_t *a, fsc__wprobe_t *pr, const fsc__wop_t *op,
                        uint64_t got)
{
    pr->hit = 1;
    pr->request = op->arg;
    pr->stream = op->stream;
    pr->got = got;
    pr->want = op->addr;
    pr->free_size = 0;
    if (got == 0)
        return;
    probe_walk_t w = {got, 0, 0, 0, 0, 0};
    fsc_allocator_walk(a, probe_visit, &w);
    pr->free_size = w.size + (w.found == 2 && w.next_free ? w.next_size : 0);
}

/* Cross-setting check: the other recording's request that stands for op
 * (its next one), or NULL where the comparison ends: the other ran out of
 * requests, or asked for other bytes (the runs part there). */
static const fsc__wop_t *against_next(replay_ctx_t *c, const fsc__wop_t *op)
{
    fsc_whatif_verify_t *v = c->v;
    const fsc__wop_t *bop = NULL;
    for (;;) {
        int rc = fsc__wcur_next(c->acur, &bop);
        if (rc <= 0) {
            c->stop = 1;
            return NULL;
        }
        if (bop->kind == FSC__WOP_ALLOC)
            break;
    }
    v->requests_compared++;
    /* PyTorch's OOM entry holds the rounded size */
    int same = bop->arg == op->arg || ((bop->flags & FSC__WOP_F_RECORDED_OOM) &&
                                       bop->arg == fsc_alloc_round_size(c->cfg, op->arg));
    if (!same) {
        v->first_request_diff = (long)(op->id - c->rs->nseed_blocks);
        v->diff_requested_a = op->arg;
        v->diff_requested_b = bop->arg;
        c->stop = 1;
        return NULL;
    }
    return bop;
}

/* The loop over the operations, read through a cursor of its own.
 * addrs: per slot, the address this replay's allocator returned (0: it
 * failed). Returns 0 or a hard error (not an OOM). */
static int replay_ops(const fsc_request_stream_t *rs, fsc_allocator_t *a, replay_ctx_t *c,
                      int stop_at_oom, uint64_t *addrs, fsc_whatif_result_t *out)
{
    fsc_whatif_verify_t *v = c->v;
    char marker[FSC_WHATIF_TEXT_MAX];
    int has_marker = 0;
    int64_t recorded_ooms = 0; /* OOM events of the recording before op i */
    size_t i, rel = 0;
    fsc__wcur_t cur;
    fsc__wcur_open(&cur, rs);
    for (i = 0;; i++) {
        const fsc__wop_t *op;
        int rc = fsc__wcur_next(&cur, &op);
        if (rc <= 0) {
            if (rc < 0) {
                out->rc = rc;
                snprintf(out->error, sizeof out->error, "%s",
                         rc == FSC_ENOMEM ? "what-if: out of host memory" : fsc__wcur_error(&cur));
                fsc__wcur_close(&cur);
                return rc;
            }
            break;
        }
        rc = 0;
        /* The program released a private pool here (whatif_pools.c): as a
         * MemPool's destructor, releasePool and the pool's own emptyCache. */
        for (; rel < rs->npool_rel && rs->pool_rel[rel].op <= i && rc == 0; rel++) {
            uint64_t pid = rs->pool_ids[rs->pool_rel[rel].pool - 1];
            rc = fsc_allocator_release_pool(a, pid);
            if (rc == 0)
                rc = fsc_allocator_empty_cache_pool(a, pid);
        }
        const fsc__wop_t *want = op; /* the recorded request compared with */
        if (rc == 0 && c->against != NULL && op->kind == FSC__WOP_ALLOC) {
            want = against_next(c, op);
            if (want == NULL)
                break;
        }
        switch (rc == 0 ? op->kind : 0) {
        case FSC__WOP_ALLOC: {
            uint64_t addr = 0;
            rc = fsc_allocator_malloc_pool(a, op->arg, op->stream,
                                           op->pool ? rs->pool_ids[op->pool - 1] : 0, &addr);
            if (rc == FSC_EOOM) {
                rc = 0;
                if (!out->oom)
                    fill_oom(rs, op, has_marker ? marker : NULL, recorded_ooms, out);
                out->oom = 1;
            }
            if (op->flags & FSC__WOP_F_RECORDED_OOM)
                recorded_ooms++;
            if (!(op->flags & FSC__WOP_F_RECORDED_OOM))
                addrs[op->slot] = addr; /* a recorded OOM is never freed */
            if (addr != 0 && (op->flags & FSC__WOP_F_RECORDED_OOM)) {
                /* The recording failed here; this replay served it. */
                fsc_alloc_stats_t st;
                fsc_allocator_get_stats(a, &st);
                c->served_failed = 1;
                c->reserved_at_failed = (uint64_t)st.reserved_bytes[FSC_STAT_ALL].current;
            }
            if (v != NULL && !(want->flags & FSC__WOP_F_RECORDED_OOM)) {
                v->allocs_compared++;
                if (addr != 0 && addr == want->addr)
                    v->alloc_addr_matches++;
                else if (v->first_addr_mismatch < 0) {
                    v->first_addr_mismatch = (long)(op->id - rs->nseed_blocks);
                    v->mismatch_event = want->event;
                    v->mismatch_expected_addr = want->addr;
                    v->mismatch_got_addr = addr;
                    v->mismatch_requested = op->arg;
                    v->mismatch_rounded = fsc_alloc_round_size(c->cfg, op->arg);
                    if (c->probe != NULL)
                        probe_block(a, c->probe, op, addr);
                }
            }
            break;
        }
        case FSC__WOP_FREE: {
            uint64_t addr = addrs[op->slot];
            if (addr == 0)
                break; /* its allocation failed in this replay */
            if (op->flags & FSC__WOP_F_DELAYED)
                rc = fsc_allocator_record_stream(a, addr, PSEUDO_STREAM(op->arg));
            if (rc == 0)
                rc = fsc_allocator_free(a, addr);
            break;
        }
        case FSC__WOP_COMPLETE:
            if (addrs[op->slot] != 0)
                rc = fsc_allocator_stream_done(a, PSEUDO_STREAM(op->arg));
            break;
        case FSC__WOP_MARKER:
            memcpy(marker, op->text, op->text_len);
            marker[op->text_len] = '\0';
            has_marker = 1;
            break;
        case FSC__WOP_EMPTY:
            rc = fsc_allocator_empty_cache(a);
            break;
        case FSC__WOP_RELEASE:
            /* The program's empty_cache(), seen only as segment releases
             * (PyTorch snapshots record no such action): at the same point
             * whatever the settings. */
            if (fsc__wop_release_is_program(op, c->recorded_cap, c->recorded_gc))
                rc = fsc_allocator_empty_cache(a);
            break;
        default:
            break;
        }
        if (rc != 0) {
            out->rc = rc;
            snprintf(out->error, sizeof out->error, "request %zu (recorded event %llu): %s", i,
                     (unsigned long long)op->event, fsc_allocator_last_error(a));
            fsc__wcur_close(&cur);
            return rc;
        }
        if (c->new_peak) {
            /* the free blocks' summary the allocator keeps (a walk of
             * every block would make a run that grows step by step
             * quadratic); FRAGSCOPE_WHATIF_CHECK_FREE=1 checks it against one */
            c->new_peak = 0;
            frag_acc_t f = {0, 0};
            fsc_allocator_free_summary(a, &f.free_bytes, &f.largest);
            if (c->check_free) {
                frag_acc_t w = {0, 0};
                fsc_allocator_walk(a, frag_visit, &w);
                if (w.free_bytes != f.free_bytes || w.largest != f.largest) {
                    out->rc = FSC_EINVAL;
                    snprintf(out->error, sizeof out->error,
                             "what-if: free-block summary %llu B (largest %llu) but a walk "
                             "finds %llu B (largest %llu) after op %zu",
                             (unsigned long long)f.free_bytes, (unsigned long long)f.largest,
                             (unsigned long long)w.free_bytes, (unsigned long long)w.largest, i);
                    fsc__wcur_close(&cur);
                    return FSC_EINVAL;
                }
            }
            out->external_frag_at_peak = fsc_metric_external_frag(f.largest, f.free_bytes);
        }
        if ((out->oom && stop_at_oom) || (c->probe != NULL && c->probe->hit)) {
            i++;
            break;
        }
    }
    out->ops_replayed = i;
    fsc__wcur_close(&cur);
    return 0;
}

/* Mappings in descending order of their segment's base (and address
 * order within one): the sim bounds an address space by the ranges above
 * it, so the higher ones must be there first. */
static int cmp_mapping(const void *a, const void *b)
{
    const fsc__wseed_t *x = *(const fsc__wseed_t *const *)a, *y = *(const fsc__wseed_t *const *)b;
    if (x->base != y->base)
        return x->base > y->base ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int adopt_one(const fsc_request_stream_t *rs, const fsc__wseed_t *sd, fsc_allocator_t *a,
                     uint64_t *addrs)
{
    /* a segment of a pool released later in the window: its inferred pool */
    uint64_t pool_id = sd->pool_id;
    if (pool_id == 0 && sd->wseg < rs->nseg_pool && rs->seg_pool[sd->wseg] != 0)
        pool_id = rs->pool_ids[rs->seg_pool[sd->wseg] - 1];
    switch (sd->kind) {
    case FSC__WSEED_SEGMENT:
        return fsc_allocator_adopt_segment(a, sd->addr, sd->size, sd->stream, (fsc_pool_t)sd->pool,
                                           pool_id);
    case FSC__WSEED_MAPPING:
        return fsc_allocator_adopt_mapping(a, sd->base, sd->addr, sd->size, sd->stream,
                                           (fsc_pool_t)sd->pool, pool_id);
    default: {
        int rc = fsc_allocator_adopt_block(a, sd->addr, sd->size, sd->requested);
        if (rc == 0)
            addrs[sd->slot] = sd->addr;
        return rc;
    }
    }
}

/* The state the recording began in, adopted before the first op: its
 * segments, its expandable segments' mapped ranges, then its live blocks
 * (whose slots hold their addresses, as a request's would). */
static int adopt_seeds(const fsc_request_stream_t *rs, fsc_allocator_t *a, uint64_t *addrs,
                       fsc_err_t *err)
{
    size_t nmap = 0;
    for (size_t i = 0; i < rs->nseeds; i++)
        nmap += rs->seeds[i].kind == FSC__WSEED_MAPPING;
    const fsc__wseed_t **maps = malloc((nmap ? nmap : 1) * sizeof *maps);
    if (maps == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
    nmap = 0;
    for (size_t i = 0; i < rs->nseeds; i++)
        if (rs->seeds[i].kind == FSC__WSEED_MAPPING)
            maps[nmap++] = &rs->seeds[i];
    qsort(maps, nmap, sizeof *maps, cmp_mapping);
    int rc = 0;
    const fsc__wseed_t *bad = NULL;
    for (size_t i = 0; i < rs->nseeds && rc == 0; i++)
        if (rs->seeds[i].kind == FSC__WSEED_SEGMENT)
            rc = adopt_one(rs, bad = &rs->seeds[i], a, addrs);
    for (size_t i = 0; i < nmap && rc == 0; i++)
        rc = adopt_one(rs, bad = maps[i], a, addrs);
    for (size_t i = 0; i < rs->nseeds && rc == 0; i++)
        if (rs->seeds[i].kind == FSC__WSEED_BLOCK)
            rc = adopt_one(rs, bad = &rs->seeds[i], a, addrs);
    free(maps);
    if (rc != 0)
        return fsc_err_set(err, rc, "what-if: the starting state at 0x%llx: %s",
                           (unsigned long long)bad->addr, fsc_allocator_last_error(a));
    return 0;
}

static int replay_cfg(const fsc_request_stream_t *rs, const fsc_alloc_config_t *cfg,
                      const fsc_whatif_opts_t *opts, fsc_whatif_verify_t *verify, int lean,
                      fsc__wprobe_t *probe, const fsc_request_stream_t *against,
                      fsc_whatif_result_t *out, fsc_err_t *err, int placement)
{
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    if (opts != NULL)
        o = *opts;
    out->capacity = o.capacity;
    uint64_t t0 = fsc_now_ns();
    fsc_backend_t *be = NULL;
    /* The device hands out the addresses of the recording compared with:
     * the same segment sequence gives the same addresses. */
    const fsc_request_stream_t *dev = against != NULL ? against : rs;
    int rc = fsc_backend_sim_create_scripted(fsc__whatif_device_total(rs, o.capacity),
                                             dev->script_addrs, dev->script_sizes, dev->nscript,
                                             &be);
    if (rc == 0 && dev->nva > 0)
        rc = fsc_backend_sim_script_va(be, dev->va_bases, dev->nva);
    if (rc == 0 && placement != FSC_SIM_PLACE_DRIVER)
        rc = fsc_backend_sim_set_placement(be, placement);
    if (rc != 0) {
        fsc_backend_destroy(be);
        return fsc_err_set(err, rc, "what-if: cannot create the sim device");
    }
    replay_ctx_t c;
    memset(&c, 0, sizeof c);
    c.rs = rs;
    c.v = verify;
    c.probe = probe;
    c.cfg = cfg;
    {
        const char *cf = getenv("FRAGSCOPE_WHATIF_CHECK_FREE");
        c.check_free = cf != NULL && strcmp(cf, "1") == 0;
    }
    fsc__wcur_t acur;
    if (against != NULL) {
        c.against = against;
        c.acur = &acur;
        fsc__wcur_open(&acur, against);
    }
    c.recorded_cap = o.recorded_capacity ? o.recorded_capacity : fsc__wstream_recorded_cap(rs);
    {
        fsc_alloc_config_t rc_cfg;
        if (fsc_alloc_config_parse(rs->config, &rc_cfg, NULL) == 0)
            c.recorded_gc = rc_cfg.garbage_collection_threshold;
    }
    fsc_allocator_opts_t ao = {*cfg, be, o.capacity, lean ? NULL : sink, &c};
    fsc_allocator_t *a = NULL;
    rc = fsc_allocator_create(&ao, &a, err);
    /* MemPool settings the recording shows (whatif_pools.c). */
    for (size_t k = 0; rc == 0 && rs->pool_flags != NULL && k < rs->npools; k++)
        if (rs->pool_flags[k] != 0)
            rc = fsc_allocator_set_pool_flags(a, rs->pool_ids[k], rs->pool_flags[k]);
    uint64_t *addrs = NULL;
    if (rc == 0) {
        addrs = calloc(rs->nslots ? rs->nslots : 1, sizeof *addrs);
        if (addrs == NULL)
            rc = fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
    }
    if (rc == 0 && rs->nseeds > 0) {
        c.seeding = 1;
        rc = adopt_seeds(rs, a, addrs, err);
        c.seeding = 0;
    }
    if (rc == 0) {
        rc = replay_ops(rs, a, &c, !o.past_oom, addrs, out);
        if (rc != 0)
            fsc_err_set(err, rc, "%s", out->error);
    }
    if (rc == 0) {
        fsc_alloc_stats_t st;
        fsc_allocator_get_stats(a, &st);
        out->peak_allocated = (uint64_t)st.allocated_bytes[FSC_STAT_ALL].peak;
        if (lean) {
            c.peak_reserved = (uint64_t)st.reserved_bytes[FSC_STAT_ALL].peak;
            c.segments = (uint64_t)st.num_device_alloc;
        }
        out->peak_reserved = c.peak_reserved;
        out->utilization =
            c.peak_reserved ? (double)out->peak_allocated / (double)c.peak_reserved : 0.0;
        out->segments = c.segments;
        out->segment_maps = c.maps;
        out->num_alloc_retries = st.num_alloc_retries;
        out->num_ooms = st.num_ooms;
        out->run_complete = fsc__wstream_run_complete(rs);
        if (!out->oom && c.served_failed && o.capacity != 0) {
            out->has_margin = 1;
            out->margin = o.capacity > c.reserved_at_failed ? o.capacity - c.reserved_at_failed
                                                            : 0;
        }
    }
    free(addrs);
    if (against != NULL)
        fsc__wcur_close(&acur);
    fsc_allocator_destroy(a);
    (void)fsc_backend_sim_placement_uncertain(be, &out->placement_uncertain);
    fsc_backend_destroy(be);
    out->elapsed_ns = fsc_now_ns() - t0;
    return rc;
}

/* The model's replay, then, where it placed segments by its least certain
 * rule, one replay per variant of that rule: the range they span. */
int fsc__whatif_replay_cfg(const fsc_request_stream_t *rs, const fsc_alloc_config_t *cfg,
                           const fsc_whatif_opts_t *opts, fsc_whatif_verify_t *verify,
                           fsc_whatif_result_t *out, fsc_err_t *err)
{
    int rc = replay_cfg(rs, cfg, opts, verify, 0, NULL, NULL, out, err, FSC_SIM_PLACE_DRIVER);
    out->placement_variants = 1;
    out->peak_reserved_lo = out->peak_reserved_hi = out->peak_reserved;
    out->peak_allocated_lo = out->peak_allocated_hi = out->peak_allocated;
    out->oom_variants = out->oom != 0;
    if (rc != 0 || verify != NULL || out->placement_uncertain == 0)
        return rc;
    for (int v = 1; v < FSC_SIM_PLACE_N; v++) {
        fsc_whatif_result_t *alt = malloc(sizeof *alt);
        if (alt == NULL)
            return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
        memset(alt, 0, sizeof *alt);
        rc = replay_cfg(rs, cfg, opts, NULL, 0, NULL, NULL, alt, err, v);
        if (rc == 0) {
            out->placement_variants++;
            out->oom_variants += alt->oom != 0;
            if (alt->peak_reserved < out->peak_reserved_lo)
                out->peak_reserved_lo = alt->peak_reserved;
            if (alt->peak_reserved > out->peak_reserved_hi)
                out->peak_reserved_hi = alt->peak_reserved;
            if (alt->peak_allocated < out->peak_allocated_lo)
                out->peak_allocated_lo = alt->peak_allocated;
            if (alt->peak_allocated > out->peak_allocated_hi)
                out->peak_allocated_hi = alt->peak_allocated;
        }
        free(alt);
        if (rc != 0)
            return rc;
    }
    out->placement_decides = out->peak_reserved_lo != out->peak_reserved_hi ||
                             out->peak_allocated_lo != out->peak_allocated_hi ||
                             (out->oom_variants != 0 && out->oom_variants != out->placement_variants);
    return 0;
}

int fsc__whatif_replay_lean(const fsc_request_stream_t *rs, const fsc_alloc_config_t *cfg,
                            const fsc_whatif_opts_t *opts, fsc_whatif_result_t *out,
                            fsc_err_t *err)
{
    return replay_cfg(rs, cfg, opts, NULL, 1, NULL, NULL, out, err, FSC_SIM_PLACE_DRIVER);
}

static void set_config_text(fsc_whatif_result_t *out, const char *config)
{
    size_t n = strlen(config);
    if (n >= sizeof out->config)
        n = sizeof out->config - 1;
    memcpy(out->config, config, n);
    out->config[n] = '\0';
}

int fsc_whatif_replay(const fsc_request_stream_t *rs, const char *config,
                      const fsc_whatif_opts_t *opts, fsc_whatif_result_t *out, fsc_err_t *err)
{
    if (rs == NULL || out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no stream or result");
    memset(out, 0, sizeof *out);
    if (config == NULL)
        config = "";
    set_config_text(out, config);
    fsc_alloc_config_t cfg;
    fsc_err_t perr = {0, ""};
    int rc = fsc_alloc_config_parse(config, &cfg, &perr);
    if (rc != 0)
        return fsc_err_set(err, rc, "bad config \"%s\": %s", config, fsc_err_msg(&perr));
    rc = fsc__whatif_replay_cfg(rs, &cfg, opts, NULL, out, err);
    out->rc = rc;
    return rc;
}

/* The replay options and settings a check against the recording uses:
 * its own config, at its own cap (or the lowest one it is consistent with). */
static int verify_setup(const fsc_request_stream_t *rs, const fsc_whatif_opts_t *opts,
                        fsc_whatif_opts_t *o, fsc_alloc_config_t *cfg, fsc_err_t *err)
{
    fsc_whatif_opts_t d = FSC_WHATIF_OPTS_DEFAULT;
    *o = opts != NULL ? *opts : d;
    fsc_request_stream_info_t info;
    fsc_request_stream_info(rs, &info);
    if (o->capacity == 0 && info.capacity_lower != 0)
        o->capacity = info.capacity_lower; /* the lowest cap the run is consistent with */
    else if (o->capacity == 0)
        o->capacity = rs->capacity;
    else if (o->recorded_capacity == 0)
        o->recorded_capacity = o->capacity; /* the cap the recording is checked at */
    o->past_oom = 1;
    fsc_err_t perr = {0, ""};
    int rc = fsc_alloc_config_parse(rs->config, cfg, &perr);
    if (rc != 0)
        return fsc_err_set(err, rc, "the recording's config \"%s\": %s", rs->config,
                           fsc_err_msg(&perr));
    return 0;
}

int fsc__whatif_probe(const fsc_request_stream_t *rs, fsc__wprobe_t *probe, fsc_err_t *err)
{
    fsc_whatif_opts_t o;
    fsc_alloc_config_t cfg;
    int rc = verify_setup(rs, NULL, &o, &cfg, err);
    if (rc != 0)
        return rc;
    fsc_whatif_verify_t *v = calloc(1, sizeof *v);
    if (v == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
    v->first_divergence = -1;
    v->first_addr_mismatch = -1;
    memset(probe, 0, sizeof *probe);
    rc = replay_cfg(rs, &cfg, &o, v, 0, probe, NULL, &v->replay, err, FSC_SIM_PLACE_DRIVER);
    free(v);
    return rc;
}

/* The replay (out->replay, with the segments and addresses the sink
 * compared) against recording `exp`: the segments it did not make, both
 * peaks, the OOM, and whether all match. partial: the comparison stopped
 * before exp's end, so exp's later segments and peaks cannot match. */
static void compare_with(const fsc_request_stream_t *exp, int partial, fsc_whatif_verify_t *out)
{
    out->segments_expected = exp->nsegs;
    if (out->first_divergence < 0 && out->segments_got < out->segments_expected && !partial) {
        /* The replay stopped creating segments early. */
        const fsc__wseg_t *want = &exp->segs[out->segments_got];
        out->first_divergence = (long)out->segments_got;
        out->expected_type = want->type;
        out->expected_size = want->size;
        out->expected_addr = want->addr;
    }
    out->peak_reserved_expected = exp->info.recorded_peak_reserved;
    out->peak_reserved_got = out->replay.peak_reserved;
    out->peak_allocated_expected = exp->info.recorded_peak_allocated;
    out->peak_allocated_got = out->replay.peak_allocated;
    out->oom_expected = exp->info.recorded_ooms > 0;
    out->oom_got = out->replay.oom;
    out->match = !partial && out->first_divergence < 0 &&
                 out->alloc_addr_matches == out->allocs_compared &&
                 out->peak_reserved_expected == out->peak_reserved_got &&
                 out->peak_allocated_expected == out->peak_allocated_got &&
                 out->oom_expected == out->oom_got;
}

int fsc_whatif_verify(const fsc_request_stream_t *rs, const fsc_whatif_opts_t *opts,
                      fsc_whatif_verify_t *out, fsc_err_t *err)
{
    if (rs == NULL || out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no stream or result");
    memset(out, 0, sizeof *out);
    out->first_divergence = -1;
    out->first_addr_mismatch = -1;
    out->first_request_diff = -1;
    fsc_whatif_opts_t o;
    fsc_alloc_config_t cfg;
    set_config_text(&out->replay, rs->config);
    int rc = verify_setup(rs, opts, &o, &cfg, err);
    if (rc != 0)
        return rc;
    rc = fsc__whatif_replay_cfg(rs, &cfg, &o, out, &out->replay, err);
    out->replay.rc = rc;
    if (rc != 0)
        return rc;
    compare_with(rs, 0, out);
    return 0;
}

int fsc_whatif_verify_against(const fsc_request_stream_t *a, const fsc_request_stream_t *b,
                              const char *config, const fsc_whatif_opts_t *opts,
                              fsc_whatif_verify_t *out, fsc_err_t *err)
{
    if (a == NULL || b == NULL || out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no stream or result");
    memset(out, 0, sizeof *out);
    out->first_divergence = -1;
    out->first_addr_mismatch = -1;
    out->first_request_diff = -1;
    /* Request i of one run stands for request i of the other only when
     * both begin at the start of the job. */
    if (a->nseeds > 0 || a->have_rebuild || b->nseeds > 0 || b->have_rebuild)
        return fsc_err_set(err, FSC_EINVAL,
                           "--verify-against compares two whole runs, and the %s recording "
                           "begins mid-run (a window of PyTorch's ring: record both with a "
                           "max_entries above their entry counts)",
                           a->nseeds > 0 || a->have_rebuild ? "first" : "other");
    fsc_whatif_opts_t o;
    fsc_alloc_config_t cfg;
    int rc = verify_setup(b, opts, &o, &cfg, err); /* b's cap and settings */
    if (rc != 0)
        return rc;
    /* a's own releases are told apart by a's own cap */
    o.recorded_capacity = opts != NULL ? opts->recorded_capacity : 0;
    const char *text = b->config;
    if (config != NULL) {
        fsc_err_t perr = {0, ""};
        rc = fsc_alloc_config_parse(config, &cfg, &perr);
        if (rc != 0)
            return fsc_err_set(err, rc, "bad config \"%s\": %s", config, fsc_err_msg(&perr));
        text = config;
    }
    set_config_text(&out->replay, text);
    rc = replay_cfg(a, &cfg, &o, out, 0, NULL, b, &out->replay, err, FSC_SIM_PLACE_DRIVER);
    out->replay.rc = rc;
    if (rc != 0)
        return rc;
    out->requests_a = a->nallocs;
    out->requests_b = b->nallocs;
    /* b made requests the comparison did not reach: its later segments
     * and peaks are not the replay's to match */
    compare_with(b, out->first_request_diff >= 0 || out->requests_compared < b->nallocs, out);
    return 0;
}
