/*
 * pytorch_import.c — turns a PyTorch memory snapshot into fragscope events:
 * loads it, picks the device, reads the settings (pytorch_input.c), emits
 * the header and any rebuilt starting state (pytorch_rebuild.c), then
 * replays every history entry through the block model (pytorch_blocks.c),
 * with the external annotations as markers in time order.
 */
#include "pytorch_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fsc__imp_on_event(void *ud, const fsc_event_t *ev)
{
    fsc__imp_t *im = ud;
    fsc_import_stats_t *st = im->st;
    st->events++;
    switch (ev->type) {
    case FSC_EV_ALLOC: st->allocs++; break;
    case FSC_EV_FREE_REQUESTED: st->frees++; break;
    case FSC_EV_SEGMENT_ALLOC: st->segment_allocs++; break;
    case FSC_EV_SEGMENT_FREE: st->segment_frees++; break;
    case FSC_EV_SEGMENT_MAP: st->maps++; break;
    case FSC_EV_SEGMENT_UNMAP: st->unmaps++; break;
    case FSC_EV_OOM: st->ooms++; break;
    default: break;
    }
    if (im->sink && im->sink->event) {
        int rc = im->sink->event(im->sink->ud, ev);
        if (rc != 0)
            return fsc_err_set(&im->merr, rc, "the event consumer failed (%s)", fsc_err_name(rc));
    }
    return 0;
}

int fsc__imp_model_error(fsc__imp_t *im, const char *what)
{
    return fsc_err_set(im->err, im->merr.code ? im->merr.code : FSC_ESTATE, "%s: %s: %s", im->path,
                       what, im->merr.msg);
}

/* ---- replay --------------------------------------------------------------- */

static fsc_pool_t pool_for_new_segment(fsc__imp_t *im, uint64_t base, uint64_t size, int expandable)
{
    const fsc__final_seg_t *f = fsc__imp_final_at(im->finals, im->n_finals, base, !expandable);
    if (f != NULL && f->pool_known)
        return (fsc_pool_t)f->pool;
    if (expandable)
        return size % (20 * FSC_MiB) == 0 ? FSC_POOL_LARGE : FSC_POOL_SMALL;
    return size == 2 * FSC_MiB ? FSC_POOL_SMALL : FSC_POOL_LARGE;
}

/* The private pool of a segment the history creates: known from the final
 * segments when it is still there at the end; a segment freed before the
 * snapshot was taken is taken to be the default pool's. */
struct fsc__last_seg {
    UT_hash_handle hh;
    uint64_t base;
    uint32_t total, seen; /* segment_alloc entries at base: all, replayed so far */
};

static int index_last_segments(fsc__imp_t *im)
{
    for (size_t i = 0; i < im->n_segev; i++) {
        if (im->segev[i].act != FSC__ACT_SEGMENT_ALLOC)
            continue;
        uint64_t base = im->segev[i].addr;
        struct fsc__last_seg *l = NULL;
        HASH_FIND(hh, im->last_seg, &base, sizeof base, l);
        if (l == NULL) {
            if ((l = calloc(1, sizeof *l)) == NULL)
                return FSC_ENOMEM;
            l->base = base;
            HASH_ADD(hh, im->last_seg, base, sizeof l->base, l);
        }
        l->total++;
    }
    im->cur_entry = 1; /* indexed */
    return 0;
}

static uint64_t pool_id_of(fsc__imp_t *im, uint64_t base, uint64_t size, uint64_t stream,
                           int expandable)
{
    if (im->cur_entry == 0 && index_last_segments(im) != 0)
        return 0;
    const fsc__final_seg_t *f = fsc__imp_final_at(im->finals, im->n_finals, base, !expandable);
    struct fsc__last_seg *l = NULL;
    if (!expandable) {
        HASH_FIND(hh, im->last_seg, &base, sizeof base, l);
        if (l != NULL)
            l->seen++;
    }
    /* An address is reused by later segments: only the same segment, the
     * last one created there, is the final one. */
    if (f == NULL || f->stream != stream || (!expandable && f->size != size))
        return 0;
    if (l != NULL && l->seen != l->total)
        return 0;
    return f->pool_id;
}


/* A MemPool created with no_split never splits a block. Snapshots do not
 * record the setting, but its final segments show it: an allocated block of
 * a private pool larger than its rounded request by what PyTorch would
 * have split off (should_split) was taken whole. */
static void find_no_split_pools(fsc__imp_t *im)
{
    fsc__pmodel_t *m = &im->m;
    for (size_t i = 0; i < im->n_finals; i++) {
        const fsc__final_seg_t *f = &im->finals[i];
        if (f->pool_id == 0 || f->expandable)
            continue;
        fsc__pv_t *const *b;
        uint32_t nb = fsc__pv_seq(f->blocks, &b);
        for (uint32_t k = 0; k < nb; k++) {
            uint64_t size, req;
            if (!fsc__imp_dict_ok(b[k]) || !fsc__imp_u64(b[k], "size", &size) ||
                !fsc__imp_u64(b[k], "requested_size", &req) || req == 0 ||
                !fsc__pv_is_str(fsc__pv_get(b[k], "state"), "active_allocated"))
                continue;
            uint64_t rounded = fsc_alloc_round_size(&im->cfg, req);
            if (size <= rounded || !fsc_alloc_should_split(&im->cfg, (fsc_pool_t)f->pool, size,
                                                            rounded, 0))
                continue;
            uint8_t j = 0;
            while (j < m->n_no_split && m->no_split[j] != f->pool_id)
                j++;
            if (j == m->n_no_split && j < sizeof m->no_split / sizeof m->no_split[0])
                m->no_split[m->n_no_split++] = f->pool_id;
            break;
        }
    }
}

/* Base of the expandable segment a mapping at addr belongs to: the final
 * segment holding it, else a segment of the model whose mapped range it
 * extends or falls into, else addr itself (a new segment). */
static uint64_t expandable_base(fsc__imp_t *im, uint64_t addr, uint64_t stream)
{
    const fsc__xgroup_t *g = fsc__imp_xgroup(im, addr, stream);
    if (g != NULL)
        return g->lo;
    uint64_t base;
    if (fsc__pm_expandable_base(&im->m, addr, &base))
        return base;
    const fsc__final_seg_t *f = fsc__imp_final_at(im->finals, im->n_finals, addr, 0);
    if (f != NULL && f->expandable && fsc__pm_segment(&im->m, f->base) != NULL)
        return f->base;
    return addr;
}

static int marker(fsc__imp_t *im, const char *text, size_t len, uint32_t tag)
{
    fsc_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = FSC_EV_MARKER;
    ev.time_ns = im->m.time_ns;
    ev.text = text;
    ev.text_len = (uint32_t)len;
    ev.tag = tag;
    return fsc__imp_on_event(im, &ev);
}

static int replay_entry(fsc__imp_t *im, const fsc__entry_t *e, uint32_t tag)
{
    fsc__pmodel_t *m = &im->m;
    m->tag = tag;
    switch (e->act) {
    case FSC__ACT_ALLOC: return fsc__pm_alloc(m, e->addr, e->size, e->stream, tag);
    case FSC__ACT_FREE_REQUESTED: return fsc__pm_free_requested(m, e->addr, tag);
    case FSC__ACT_FREE_COMPLETED: return fsc__pm_free_completed(m, e->addr, tag);
    case FSC__ACT_FREE: return fsc__pm_free_completed(m, e->addr, tag);
    case FSC__ACT_SEGMENT_ALLOC:
        m->new_pool_id = pool_id_of(im, e->addr, e->size, e->stream, 0);
        return fsc__pm_segment_alloc(m, e->addr, e->size, e->stream,
                                     pool_for_new_segment(im, e->addr, e->size, 0));
    case FSC__ACT_SEGMENT_FREE: return fsc__pm_segment_free(m, e->addr, e->size);
    case FSC__ACT_SEGMENT_MAP: {
        uint64_t base = expandable_base(im, e->addr, e->stream);
        fsc__pseg_t *s = fsc__pm_segment(m, base);
        const fsc__xgroup_t *g = fsc__imp_xgroup(im, e->addr, e->stream);
        fsc_pool_t pool = s              ? (fsc_pool_t)s->pool
                          : g && g->known ? (fsc_pool_t)g->pool
                                          : pool_for_new_segment(im, base, e->size, 1);
        m->new_pool_id = g && g->known ? g->pool_id : pool_id_of(im, base, e->size, e->stream, 1);
        return fsc__pm_map(m, base, e->addr, e->size, e->stream, pool);
    }
    case FSC__ACT_SEGMENT_UNMAP: return fsc__pm_unmap(m, e->addr, e->size);
    case FSC__ACT_OOM:
        /* Older snapshots put device_free in 'addr'. */
        return fsc__pm_oom(m, e->size, e->stream,
                           e->has_device_free ? e->device_free
                           : e->has_addr      ? e->addr
                                              : UINT64_MAX,
                           0, 0, tag);
    case FSC__ACT_EMPTY_CACHE: {
        fsc_event_t ev;
        memset(&ev, 0, sizeof ev);
        ev.type = FSC_EV_EMPTY_CACHE;
        ev.time_ns = m->time_ns;
        ev.size = e->size;
        return fsc__imp_on_event(im, &ev);
    }
    case FSC__ACT_SNAPSHOT: return marker(im, "snapshot", 8, tag);
    case FSC__ACT_USER_DEFINED: {
        const fsc__pv_t *u = e->user_metadata;
        if (u != NULL && u->kind == FSC__PV_STR && u->len > 0)
            return marker(im, u->u.s, u->len, tag);
        return marker(im, e->action->u.s, e->action->len, tag);
    }
    default:
        return fsc_err_set(&im->merr, FSC_ESTATE, "unknown action '%.*s'",
                           (int)(e->action->len > 64 ? 64 : e->action->len), e->action->u.s);
    }
}

/* MARKERs "STAGE name" for every annotation up to time_us (all: UINT64_MAX). */
static int emit_annotations(fsc__imp_t *im, uint64_t time_us)
{
    char text[512];
    for (; im->next_ann < im->n_ann && im->ann[im->next_ann].time_us <= time_us; im->next_ann++) {
        const fsc__annotation_t *a = &im->ann[im->next_ann];
        int slen = (a->stage && a->stage->kind == FSC__PV_STR)
                       ? (int)(a->stage->len > 64 ? 64 : a->stage->len)
                       : 0;
        int nlen = (int)(a->name->len > 400 ? 400 : a->name->len);
        int len = snprintf(text, sizeof text, "%.*s%s%.*s", slen, slen ? a->stage->u.s : "",
                           slen ? " " : "", nlen, a->name->u.s);
        if (len < 0)
            len = 0;
        uint64_t t = a->time_us > im->t0_us ? (a->time_us - im->t0_us) * 1000u : 0;
        uint64_t saved = im->m.time_ns;
        im->m.time_ns = t;
        int rc = marker(im, text, (size_t)len, 0);
        im->m.time_ns = saved;
        if (rc != 0)
            return fsc_err_set(im->err, rc, "%s: %s", im->path, im->merr.msg);
        im->st->annotations++;
    }
    return 0;
}

/* Name of an action with an event (messages of entries replayed from a
 * copy, whose action string is gone). */
static const char *act_name(int act)
{
    switch (act) {
    case FSC__ACT_ALLOC: return "alloc";
    case FSC__ACT_FREE_REQUESTED: return "free_requested";
    case FSC__ACT_FREE_COMPLETED: return "free_completed";
    case FSC__ACT_FREE: return "free";
    case FSC__ACT_SEGMENT_ALLOC: return "segment_alloc";
    case FSC__ACT_SEGMENT_FREE: return "segment_free";
    case FSC__ACT_SEGMENT_MAP: return "segment_map";
    case FSC__ACT_SEGMENT_UNMAP: return "segment_unmap";
    case FSC__ACT_OOM: return "oom";
    case FSC__ACT_EMPTY_CACHE: return "empty_cache";
    default: return "?";
    }
}

/* Before entry i's own work: annotations up to its time, then its time. */
static int entry_begin(fsc__imp_t *im, uint64_t time_us)
{
    int rc = emit_annotations(im, time_us);
    if (rc != 0)
        return rc;
    im->st->entries++;
    im->m.time_ns = time_us > im->t0_us ? (time_us - im->t0_us) * 1000u : 0;
    fsc_err_clear(&im->merr);
    return 0;
}

/* The block model's answer to entry i: a failure described with the entry,
 * or in lenient mode a warning. */
static int entry_result(fsc__imp_t *im, uint64_t i, const fsc__entry_t *e, int rc)
{
    if (rc == 0)
        return 0;
    if (im->merr.code == 0)
        return rc; /* already described in im->err */
    const char *an = e->action != NULL ? e->action->u.s : act_name(e->act);
    size_t al = e->action != NULL ? e->action->len : strlen(an);
    char what[160];
    snprintf(what, sizeof what, "device_traces[%d][%llu] (%.*s at 0x%llx, %llu bytes)", im->device,
             (unsigned long long)i, (int)(al > 32 ? 32 : al), an, (unsigned long long)e->addr,
             (unsigned long long)e->size);
    if (im->opts.lenient && rc == FSC_ESTATE) {
        fsc__imp_warn(im, "%s: %s", what, im->merr.msg);
        return 0;
    }
    return fsc__imp_model_error(im, what);
}

/* History entry i, replayed (annotations up to its time first). */
int fsc__imp_replay_one(fsc__imp_t *im, uint64_t i, const fsc__entry_t *e)
{
    if (im->opts.progress != NULL && (i & 4095u) == 0)
        im->opts.progress(im->opts.progress_ud, i, im->n_ents);
    int rc = entry_begin(im, e->time_us);
    if (rc != 0)
        return rc;
    int handled = 0;
    if ((rc = fsc__imp_keys_entry(im, i, e, &handled)) != 0)
        return rc;
    if (handled)
        return 0; /* kept as a record, no event */
    uint32_t tag = 0;
    if ((rc = fsc__imp_frames_tag(im, e->frames, &tag)) != 0)
        return rc;
    return entry_result(im, i, e, replay_entry(im, e, tag));
}

int fsc__imp_replay_async(fsc__imp_t *im, fsc__rq_t *q, uint64_t i, const fsc__entry_t *e)
{
    /* the actions replayed from numbers alone (markers need their text) */
    int usual = e->act != FSC__ACT_OTHER && e->act != FSC__ACT_SNAPSHOT &&
                e->act != FSC__ACT_USER_DEFINED;
    uint32_t tag = 0;
    if (usual && fsc__imp_keys_quiet(im, e) &&
        fsc__imp_frames_tag_cached(im, e->frames, &tag) == 0) {
        if (im->opts.progress != NULL && (i & 4095u) == 0)
            im->opts.progress(im->opts.progress_ud, i, im->n_ents);
        fsc__rop_t op;
        op.i = i;
        op.addr = e->addr;
        op.size = e->size;
        op.stream = e->stream;
        op.time_us = e->time_us;
        op.device_free = e->device_free;
        op.tag = tag;
        op.act = (uint8_t)e->act;
        op.has_addr = (uint8_t)e->has_addr;
        op.has_device_free = (uint8_t)e->has_device_free;
        return fsc__rq_push(q, &op);
    }
    /* a record, a marker or a new tag to emit: here, in order */
    int rc = fsc__rq_sync(q);
    return rc != 0 ? rc : fsc__imp_replay_one(im, i, e);
}

int fsc__imp_replay_op(fsc__imp_t *im, const fsc__rop_t *op)
{
    fsc__entry_t e;
    e.act = op->act;
    e.action = e.frames = e.user_metadata = e.dict = NULL;
    e.addr = op->addr;
    e.size = op->size;
    e.stream = op->stream;
    e.time_us = op->time_us;
    e.device_free = op->device_free;
    e.has_addr = op->has_addr;
    e.has_device_free = op->has_device_free;
    e.nx = e.nx_dropped = 0;
    int rc = entry_begin(im, op->time_us);
    return rc != 0 ? rc : entry_result(im, op->i, &e, replay_entry(im, &e, op->tag));
}

int fsc__imp_end(fsc__imp_t *im)
{
    int krc = fsc__imp_keys_end(im);
    if (krc != 0)
        return krc;
    if (im->opts.progress != NULL)
        im->opts.progress(im->opts.progress_ud, im->n_ents, im->n_ents);
    int rc = emit_annotations(im, UINT64_MAX);
    if (rc != 0)
        return rc;
    im->st->peak_allocated = im->m.peak_allocated;
    im->st->peak_reserved = im->m.peak_reserved;
    im->st->splits = im->m.splits;
    im->st->merges = im->m.merges;
    return 0;
}

/* ---- entry point ---------------------------------------------------------- */

void fsc__imp_free(fsc__imp_t *im)
{
    fsc__imp_keys_free(im);
    fsc__pm_free(&im->m);
    free(im->finals);
    free(im->pre);
    free(im->live);
    free(im->ann);
    free(im->segev);
    free(im->firsts);
    free(im->dones);
    free(im->xgroups);
    fsc__u64map_free(&im->addrs);
    fsc__seg_info_t *s, *st;
    HASH_ITER (hh, im->segs, s, st) {
        HASH_DEL(im->segs, s);
        free(s);
    }
    fsc__tag_cache_t *c, *ct;
    HASH_ITER (hh, im->tags, c, ct) {
        HASH_DEL(im->tags, c);
        free(c);
    }
    struct fsc__last_seg *ls, *lt;
    HASH_ITER (hh, im->last_seg, ls, lt) {
        HASH_DEL(im->last_seg, ls);
        free(ls);
    }
    fsc__stack_cache_t *k, *kt;
    HASH_ITER (hh, im->stacks, k, kt) {
        HASH_DEL(im->stacks, k);
        free(k);
    }
    fsc__frame_cache_t *f, *ft;
    HASH_ITER (hh, im->frame_tags, f, ft) {
        HASH_DEL(im->frame_tags, f);
        free(f);
    }
}

/* Device, settings, final segments, annotations, the start time (the first
 * entry's, given when the history is streamed), the starting state, the
 * header and the rebuilt state. */
int fsc__imp_begin(fsc__imp_t *im, const fsc__pv_t *root, uint64_t t0_us, int has_t0)
{
    const fsc__pv_t *segs = NULL;
    int rc;
    if (root->kind == FSC__PV_LIST) {
        segs = root; /* torch.cuda.memory_snapshot(): segments only */
        im->st->segments_only = 1;
    } else if (root->kind == FSC__PV_DICT) {
        segs = fsc__pv_get(root, "segments");
        if (segs == NULL && fsc__pv_get(root, "device_traces") == NULL)
            return fsc__imp_bad(im,
                                "not a memory snapshot: the top-level dict has neither 'segments' "
                                "nor 'device_traces'");
    } else {
        return fsc__imp_bad(im,
                            "not a memory snapshot: the top level is neither a dict nor a list");
    }
    if ((rc = fsc__imp_pick_device(im, root->kind == FSC__PV_DICT ? root : NULL, segs)) != 0)
        return rc;
    if ((rc = fsc__imp_read_settings(im, root->kind == FSC__PV_DICT ? root : NULL)) != 0)
        return rc;
    if ((rc = fsc__imp_read_finals(im, segs)) != 0)
        return rc;
    if (root->kind == FSC__PV_DICT && (rc = fsc__imp_read_annotations(im, root)) != 0)
        return rc;
    /* Streamed: the first pass read another device's entries. */
    if (im->ents == NULL && im->n_ents > 0 && im->pass_dev != im->device &&
        im->history_pass != NULL) {
        if ((rc = im->history_pass(im)) != 0)
            return rc;
        /* the start time is the imported device's first entry's */
        t0_us = im->pass_t0_us;
        has_t0 = im->pass_has_t0;
    }
    if (im->n_ents > 0) {
        if (im->ents != NULL) {
            fsc__entry_t e;
            if ((rc = fsc__imp_read_entry(im, im->ents[0], 0, &e)) != 0)
                return rc;
            t0_us = e.time_us;
        } else if (im->entry_rc != 0) {
            return fsc_err_set(im->err, im->entry_rc, "%s", im->entry_err.msg);
        } else if (!has_t0) {
            return fsc__imp_bad(im, "the history was not read"); /* not reached */
        }
        im->t0_us = t0_us;
        im->st->first_time_us = t0_us;
    } else if (im->n_ann > 0) {
        im->t0_us = im->ann[0].time_us;
    }
    if ((rc = fsc__imp_find_start_state(im)) != 0)
        return rc;

    char backend[32];
    snprintf(backend, sizeof backend, "cuda:%d", im->device);
    fsc_trace_header_t hdr;
    memset(&hdr, 0, sizeof hdr);
    hdr.producer = "pytorch snapshot import";
    hdr.config = im->config;
    hdr.backend = backend;
    hdr.capacity = 0;
    hdr.device_total = 0;
    hdr.clock_origin_ns = im->t0_us * 1000u;
    hdr.rank = -1;
    hdr.flags =
        FSC_TRACE_F_CAPACITY_UNKNOWN | (im->st->reconstructed ? FSC_TRACE_F_RECONSTRUCTED : 0u);
    if (im->sink && im->sink->header && (rc = im->sink->header(im->sink->ud, &hdr)) != 0)
        return fsc_err_set(im->err, rc, "%s: the header consumer failed (%s)", im->path,
                           fsc_err_name(rc));

    fsc__pm_init(&im->m, &im->cfg, fsc__imp_on_event, im, &im->merr);
    find_no_split_pools(im);
    if ((rc = fsc__imp_keys_begin(im, root)) != 0)
        return rc;
    if ((rc = fsc__imp_emit_start_state(im)) != 0)
        return rc;
    if (im->st->reconstructed && (rc = fsc__imp_keys_rebuild(im)) != 0)
        return rc;
    if (im->st->reconstructed && im->n_ents > 0 &&
        (rc = marker(im, FSC__HISTORY_MARKER, strlen(FSC__HISTORY_MARKER), 0)) != 0)
        return fsc_err_set(im->err, rc, "%s: %s", im->path, im->merr.msg);
    return 0;
}

int fsc_pytorch_import(const char *path, const fsc_import_opts_t *opts,
                       const fsc_import_sink_t *sink, fsc_import_stats_t *stats, fsc_err_t *err)
{
    fsc_import_stats_t local;
    fsc_import_opts_t def = FSC_IMPORT_OPTS_DEFAULT;
    fsc__imp_t im;
    memset(&im, 0, sizeof im);
    im.path = path;
    im.opts = opts ? *opts : def;
    im.sink = sink;
    im.st = stats ? stats : &local;
    im.err = err;
    im.rerr = err;
    memset(im.st, 0, sizeof *im.st);

    fsc__snap_t snap;
    int rc = fsc__snap_open(path, &snap, err);
    if (rc == 0) {
        im.st->format = snap.format;
        rc = fsc__imp_stream(&im, &snap); /* pickle or JSON */
        fsc__snap_close(&snap);
    }
    fsc__imp_free(&im);
    return rc;
}
