/*
 * pytorch_export.c — writes a fragscope trace as a PyTorch memory snapshot
 * pickle ({'device_traces', 'segments', 'allocator_settings'}) that
 * pickle.load and PyTorch's memory_viz read.
 *
 * History entries are streamed out while the trace is read; the final
 * 'segments' come from replaying the trace's own block events through the
 * importer's block model, placing each ALLOC exactly where the trace says
 * (no size rules are applied: the trace already decided). Tag paths become
 * frame lists, memoized per tag node so that a frame shared by many entries
 * is written once.
 */
#include "pytorch_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/frames.h"
#include "fragscope/recorder.h"
#include "fsc/vec.h"
#include "pytorch_export_meta.h"

typedef struct node_memo {
    UT_hash_handle hh;
    uint32_t node;
    uint32_t frame_memo, list_memo;
    uint8_t has_frame, has_list;
} node_memo_t;

/* A START/END marker, written back as an external annotation. */
typedef struct ann {
    uint64_t time_us;
    char *text; /* "START name" */
} ann_t;

typedef struct exp {
    const char *path;
    fsc_trace_reader_t *r;
    fsc__pw_t *w;
    fsc__pmodel_t m;
    fsc_err_t merr;
    node_memo_t *memo;
    int device;
    uint64_t origin_us;
    fsc_err_t *err;
    ann_t *ann;
    size_t n_ann, cap_ann;
    uint64_t segments_written;
    fsc__xmeta_t *xm; /* the snapshot's own records, if the trace has them */
    int xm_err;       /* a record could not be written back */
} exp_t;

static void kv_u64(exp_t *x, const char *k, uint64_t v);
static void kv_str(exp_t *x, const char *k, const char *v);

static int is_annotation(const fsc_event_t *ev)
{
    return ev->type == FSC_EV_MARKER && ev->text != NULL &&
           ((ev->text_len > 6 && memcmp(ev->text, "START ", 6) == 0) ||
            (ev->text_len > 4 && memcmp(ev->text, "END ", 4) == 0));
}

static int keep_annotation(exp_t *x, const fsc_event_t *ev)
{
    if (FSC__VEC_RESERVE(x->ann, x->cap_ann, x->n_ann + 1) != 0)
        return fsc_err_set(x->err, FSC_ENOMEM, "out of memory");
    char *t = malloc(ev->text_len + 1);
    if (t == NULL)
        return fsc_err_set(x->err, FSC_ENOMEM, "out of memory");
    memcpy(t, ev->text, ev->text_len);
    t[ev->text_len] = '\0';
    x->ann[x->n_ann].time_us = x->origin_us + ev->time_ns / 1000u;
    x->ann[x->n_ann++].text = t;
    return 0;
}

static void write_annotations(exp_t *x)
{
    int kept = fsc__xm_write_top(x->xm, x->w, "external_annotations");
    if (kept < 0)
        x->xm_err = 1;
    if (kept != 0)
        return;
    fsc__pw_cstr(x->w, "external_annotations");
    fsc__pw_list_open(x->w);
    for (size_t i = 0; i < x->n_ann; i++) {
        char *sp = strchr(x->ann[i].text, ' ');
        *sp = '\0';
        fsc__pw_dict_open(x->w);
        kv_str(x, "stage", x->ann[i].text);
        kv_str(x, "name", sp + 1);
        kv_u64(x, "device", (uint64_t)x->device);
        kv_u64(x, "time_us", x->ann[i].time_us);
        fsc__pw_dict_close(x->w);
        *sp = ' ';
        if ((i + 1) % 1000 == 0)
            fsc__pw_list_batch(x->w);
    }
    fsc__pw_list_close(x->w);
}

static node_memo_t *memo_of(exp_t *x, uint32_t node)
{
    node_memo_t *n = NULL;
    HASH_FIND(hh, x->memo, &node, sizeof node, n);
    if (n == NULL && (n = calloc(1, sizeof *n)) != NULL) {
        n->node = node;
        HASH_ADD(hh, x->memo, node, sizeof n->node, n);
    }
    return n;
}

/* "file:line:function" (split as fragscope/frames.h says, so C++ names keep
 * their '::') → a frame; anything else → filename "", line 0. */
static void write_frame(exp_t *x, uint32_t node, const char *name, size_t len)
{
    node_memo_t *nm = memo_of(x, node);
    if (nm != NULL && nm->has_frame) {
        fsc__pw_get(x->w, nm->frame_memo);
        return;
    }
    fsc_frame_t fr;
    int ok = fsc_frame_parse(name, len, &fr);
    fsc__pw_dict_open(x->w);
    fsc__pw_cstr(x->w, "filename");
    fsc__pw_str(x->w, ok ? fr.file : "", ok ? fr.file_len : 0);
    fsc__pw_cstr(x->w, "line");
    fsc__pw_uint(x->w, ok ? fr.line : 0);
    fsc__pw_cstr(x->w, "name");
    if (ok)
        fsc__pw_str(x->w, fr.function, fr.function_len);
    else
        fsc__pw_str(x->w, name, len);
    if (fsc__xm_write_frame_keys(x->xm, x->w, node) != 0)
        x->xm_err = 1;
    fsc__pw_dict_close(x->w);
    if (nm != NULL) {
        nm->frame_memo = fsc__pw_memoize(x->w);
        nm->has_frame = 1;
    }
}

/* Frames of a tag node, innermost (the node itself) first. */
static void write_frames(exp_t *x, uint32_t node)
{
    node_memo_t *nm = node ? memo_of(x, node) : NULL;
    if (nm != NULL && nm->has_list) {
        fsc__pw_get(x->w, nm->list_memo);
        return;
    }
    fsc__pw_list_open(x->w);
    uint32_t n = node;
    for (int guard = 0; n != 0 && guard < 100000; guard++) {
        const char *name = NULL;
        size_t len = 0;
        uint32_t parent = 0;
        if (fsc_trace_tag(x->r, n, &name, &len, &parent) != 0)
            break;
        write_frame(x, n, name, len);
        n = parent;
    }
    fsc__pw_list_close(x->w);
    if (nm != NULL) {
        nm->list_memo = fsc__pw_memoize(x->w);
        nm->has_list = 1;
    }
}

static void kv_u64(exp_t *x, const char *k, uint64_t v)
{
    fsc__pw_cstr(x->w, k);
    fsc__pw_uint(x->w, v);
}

static void kv_str(exp_t *x, const char *k, const char *v)
{
    fsc__pw_cstr(x->w, k);
    fsc__pw_cstr(x->w, v);
}

/* PyTorch action name of an event that becomes a history entry, else NULL. */
static const char *action_of(int type)
{
    switch (type) {
    case FSC_EV_ALLOC: return "alloc";
    case FSC_EV_FREE_REQUESTED: return "free_requested";
    case FSC_EV_FREE_COMPLETED: return "free_completed";
    case FSC_EV_SEGMENT_ALLOC: return "segment_alloc";
    case FSC_EV_SEGMENT_FREE: return "segment_free";
    case FSC_EV_SEGMENT_MAP: return "segment_map";
    case FSC_EV_SEGMENT_UNMAP: return "segment_unmap";
    case FSC_EV_OOM: return "oom";
    default: return NULL;
    }
}

static void write_entry(exp_t *x, const fsc_event_t *ev, const char *action)
{
    int is_block = ev->type == FSC_EV_ALLOC || ev->type == FSC_EV_FREE_REQUESTED ||
                   ev->type == FSC_EV_FREE_COMPLETED;
    fsc__pw_dict_open(x->w);
    kv_str(x, "action", action);
    if (ev->type == FSC_EV_OOM) { /* PyTorch gives an OOM entry no address */
        /* PyTorch writes the rounded size (round_size) of the request. */
        kv_u64(x, "size", ev->size ? ev->size : ev->requested);
        /* PyTorch's tools read device_free from every OOM entry, so an
         * unknown figure is written as 0. */
        kv_u64(x, "device_free",
               ev->oom.device_free == UINT64_MAX ? 0 : ev->oom.device_free);
    } else {
        kv_u64(x, "addr", ev->addr);
        /* PyTorch records the caller's size for block entries. */
        kv_u64(x, "size", is_block ? ev->requested : ev->size);
    }
    kv_u64(x, "stream", ev->stream);
    kv_u64(x, "time_us", x->origin_us + ev->time_ns / 1000u);
    if (!fsc__xm_entry_absent(x->xm, "frames")) {
        fsc__pw_cstr(x->w, "frames");
        write_frames(x, ev->tag);
    }
    if (fsc__xm_write_entry_keys(x->xm, x->w) != 0)
        x->xm_err = 1;
    fsc__pw_dict_close(x->w);
}

/* Keep the layout of the trace's segments and blocks. */
static int track(exp_t *x, const fsc_event_t *ev)
{
    fsc__pmodel_t *m = &x->m;
    fsc__pseg_t *s;
    switch (ev->type) {
    case FSC_EV_SEGMENT_ALLOC:
        m->new_pool_id = ev->pool_id;
        return fsc__pm_segment_alloc(m, ev->addr, ev->size, ev->stream, (fsc_pool_t)ev->pool);
    case FSC_EV_SEGMENT_FREE: return fsc__pm_segment_free(m, ev->addr, ev->size);
    case FSC_EV_SEGMENT_MAP:
        m->new_pool_id = ev->pool_id;
        return fsc__pm_map(m, ev->segment ? ev->segment : ev->addr, ev->addr, ev->size,
                           ev->stream, (fsc_pool_t)ev->pool);
    case FSC_EV_SEGMENT_UNMAP: return fsc__pm_unmap(m, ev->addr, ev->size);
    case FSC_EV_ALLOC:
        s = ev->segment ? fsc__pm_segment(m, ev->segment) : NULL;
        if (s == NULL)
            s = fsc__pm_segment_at(m, ev->addr);
        if (s == NULL)
            return fsc_err_set(m->err, FSC_ESTATE, "allocation outside every segment");
        return fsc__pm_place(m, s, ev->addr, ev->size, ev->requested, ev->stream, ev->tag);
    case FSC_EV_FREE_REQUESTED: return fsc__pm_free_requested(m, ev->addr, ev->tag);
    case FSC_EV_FREE_COMPLETED: return fsc__pm_free_completed(m, ev->addr, ev->tag);
    default: return 0; /* SPLIT/MERGE follow from the above */
    }
}

static int cmp_seg(const void *a, const void *b)
{
    const fsc__pseg_t *x = *(fsc__pseg_t *const *)a, *y = *(fsc__pseg_t *const *)b;
    return x->base < y->base ? -1 : x->base > y->base;
}

/* One PyTorch segment: blocks [first, stop). */
static void write_segment(exp_t *x, const fsc__pseg_t *s, fsc__pblock_t *first,
                          fsc__pblock_t *stop)
{
    uint64_t total = 0, alloc = 0, active = 0, req = 0;
    for (fsc__pblock_t *b = first; b != stop; b = b->next) {
        total += b->size;
        if (b->state == FSC__PB_ALLOCATED)
            alloc += b->size;
        if (b->state != FSC__PB_FREE) {
            active += b->size;
            req += b->requested;
        }
    }
    fsc__pw_dict_open(x->w);
    kv_u64(x, "device", (uint64_t)x->device);
    kv_u64(x, "address", first->addr);
    kv_u64(x, "total_size", total);
    kv_u64(x, "allocated_size", alloc);
    kv_u64(x, "active_size", active);
    kv_u64(x, "requested_size", req);
    kv_u64(x, "stream", s->stream);
    kv_str(x, "segment_type", s->pool == FSC_POOL_SMALL ? "small" : "large");
    fsc__pw_cstr(x->w, "segment_pool_id");
    int kept = fsc__xm_write_segment_key(x->xm, x->w, first->addr, "segment_pool_id");
    if (kept == 0) {
        fsc__pw_tuple_open(x->w);
        fsc__pw_int(x->w, (int64_t)(s->pool_id >> 32));
        fsc__pw_int(x->w, (int64_t)(s->pool_id & 0xffffffffu));
        fsc__pw_tuple_close(x->w);
    }
    fsc__pw_cstr(x->w, "is_expandable");
    fsc__pw_bool(x->w, s->expandable);
    fsc__pw_cstr(x->w, "frames");
    int kf = fsc__xm_write_segment_key(x->xm, x->w, first->addr, "frames");
    if (kf == 0)
        write_frames(x, 0);
    if (kept < 0 || kf < 0 || fsc__xm_write_segment_rest(x->xm, x->w, first->addr) != 0)
        x->xm_err = 1;
    fsc__pw_cstr(x->w, "blocks");
    fsc__pw_list_open(x->w);
    for (fsc__pblock_t *b = first; b != stop; b = b->next) {
        fsc__pw_dict_open(x->w);
        kv_u64(x, "address", b->addr);
        kv_u64(x, "size", b->size);
        kv_u64(x, "requested_size", b->requested);
        kv_str(x, "state", b->state == FSC__PB_FREE        ? "inactive"
                           : b->state == FSC__PB_ALLOCATED ? "active_allocated"
                                                           : "active_pending_free");
        fsc__pw_cstr(x->w, "frames");
        write_frames(x, b->state == FSC__PB_FREE ? 0 : b->tag);
        if (fsc__xm_write_block_rest(x->xm, x->w, first->addr, b->addr) != 0)
            x->xm_err = 1;
        fsc__pw_dict_close(x->w);
    }
    fsc__pw_list_close(x->w);
    fsc__pw_dict_close(x->w);
}

static int write_segments(exp_t *x)
{
    size_t n = HASH_COUNT(x->m.segs), i = 0;
    fsc__pseg_t **arr = malloc((n ? n : 1) * sizeof *arr);
    if (arr == NULL)
        return fsc_err_set(x->err, FSC_ENOMEM, "out of memory");
    for (fsc__pseg_t *s = x->m.segs; s != NULL; s = s->hh.next)
        arr[i++] = s;
    qsort(arr, n, sizeof *arr, cmp_seg);
    fsc__pw_cstr(x->w, "segments");
    fsc__pw_list_open(x->w);
    for (i = 0; i < n; i++) {
        /* An expandable segment is shown as its contiguous mapped runs, as
         * PyTorch does. */
        fsc__pblock_t *b = arr[i]->first;
        while (b != NULL) {
            fsc__pblock_t *e = b->next;
            while (e != NULL && e->prev->addr + e->prev->size == e->addr)
                e = e->next;
            write_segment(x, arr[i], b, e);
            x->segments_written++;
            b = e;
        }
    }
    fsc__pw_list_close(x->w);
    free(arr);
    return 0;
}

/* One allocator_settings key: bytes as an int (-1 or nothing when unset,
 * as the entry says), a fraction as a float, a flag as a bool, the
 * divisions as PyTorch's {"MiB": divisions} dict. */
static void write_setting(exp_t *x, const fsc_alloc_config_t *c, const fsc_alloc_setting_t *s)
{
    const char *f = (const char *)c + s->offset;
    switch (s->kind) {
    case FSC_SETTING_MIB: {
        uint64_t v;
        memcpy(&v, f, sizeof v);
        if (v == 0 && !(s->flags & FSC_SETTING_SNAP_UNSET_M1))
            return;
        fsc__pw_cstr(x->w, s->snapshot_key);
        fsc__pw_int(x->w, v ? (int64_t)v : -1);
        return;
    }
    case FSC_SETTING_FRACTION: {
        double d;
        memcpy(&d, f, sizeof d);
        fsc__pw_cstr(x->w, s->snapshot_key);
        fsc__pw_float(x->w, d);
        return;
    }
    case FSC_SETTING_BOOL: {
        int b;
        memcpy(&b, f, sizeof b);
        fsc__pw_cstr(x->w, s->snapshot_key);
        fsc__pw_bool(x->w, b);
        return;
    }
    case FSC_SETTING_DIVISIONS:
        fsc__pw_cstr(x->w, s->snapshot_key);
        fsc__pw_dict_open(x->w);
        for (int i = 0; i < FSC_ROUNDUP_INTERVALS; i++) {
            char k[16];
            snprintf(k, sizeof k, "%u", 1u << i);
            fsc__pw_cstr(x->w, k);
            fsc__pw_int(x->w, c->roundup_power2_divisions[i]);
        }
        fsc__pw_dict_close(x->w);
        return;
    default:
        return;
    }
}

static void write_settings(exp_t *x, const char *config)
{
    /* The snapshot's own dict, when the trace kept it: it holds keys the
     * rules do not use (pinned memory, lock release, ...). */
    int kept = fsc__xm_write_top(x->xm, x->w, "allocator_settings");
    if (kept < 0)
        x->xm_err = 1;
    if (kept != 0)
        return;
    fsc_alloc_config_t c = FSC_ALLOC_CONFIG_DEFAULT;
    fsc_err_t e;
    if (config == NULL || fsc_alloc_config_parse(config, &c, &e) != 0) {
        fsc_alloc_config_t def = FSC_ALLOC_CONFIG_DEFAULT;
        c = def;
    }
    fsc__pw_cstr(x->w, "allocator_settings");
    fsc__pw_dict_open(x->w);
    kv_str(x, "PYTORCH_CUDA_ALLOC_CONF", config ? config : "");
    /* The other keys as the settings table says, in its snapshot order. */
    size_t n;
    const fsc_alloc_setting_t *t = fsc_alloc_settings(&n);
    for (int rank = 2; rank <= (int)n + 1; rank++)
        for (size_t i = 0; i < n; i++)
            if (t[i].snapshot_rank == rank && t[i].offset >= 0)
                write_setting(x, &c, &t[i]);
    fsc__pw_dict_close(x->w);
}

static int export_body(exp_t *x, fsc_export_stats_t *st)
{
    const fsc_trace_header_t *h = fsc_trace_header(x->r);
    x->origin_us = h->clock_origin_ns / 1000u;
    if (h->backend != NULL && strncmp(h->backend, "cuda:", 5) == 0)
        x->device = atoi(h->backend + 5);
    fsc__pw_dict_open(x->w);
    fsc__pw_cstr(x->w, "device_traces");
    fsc__pw_list_open(x->w);
    /* device_traces[d] is device d's history: the lists before it are empty */
    for (int d = 0; d < x->device && d < 4096; d++) {
        fsc__pw_list_open(x->w);
        fsc__pw_list_close(x->w);
    }
    fsc__pw_list_open(x->w);
    fsc_event_t ev;
    uint64_t entries = 0, n = 0;
    int rc;
    /* A rebuilt starting state is not history: the final segments let a
     * reader rebuild it again. */
    int in_history = (h->flags & FSC_TRACE_F_RECONSTRUCTED) == 0;
    size_t mlen = strlen(FSC__HISTORY_MARKER);
    /* A ring trace starts mid-run and skips what happened between its
     * writes: an event whose block or segment it does not show is still
     * history, it only cannot move the final layout. */
    st->ring = (h->flags & FSC_TRACE_F_RING) != 0;
    while ((rc = fsc_trace_next(x->r, &ev)) == 1) {
        n++;
        int kind = FSC__XM_NONE;
        if ((rc = fsc__xm_feed(x->xm, &ev, &kind)) != 0)
            return fsc_err_set(x->err, rc, "%s: event %llu: a pytorch record: %s", x->path,
                               (unsigned long long)n, fsc_err_name(rc));
        if (kind == FSC__XM_ACTION && in_history) {
            if (fsc__xm_write_action(x->xm, x->w) != 0)
                x->xm_err = 1;
            if (++entries % 1000 == 0)
                fsc__pw_list_batch(x->w);
        }
        if (kind != FSC__XM_NONE)
            continue;
        fsc_err_clear(&x->merr);
        if (track(x, &ev) != 0) {
            if (!st->ring || x->merr.code == FSC_ENOMEM)
                return fsc_err_set(x->err, x->merr.code == FSC_ENOMEM ? FSC_ENOMEM : FSC_ESTATE,
                                   "%s: event %llu (%s at 0x%llx): %s", x->path,
                                   (unsigned long long)n, fsc_event_type_name(ev.type),
                                   (unsigned long long)ev.addr, x->merr.msg);
            st->untracked++;
        }
        if (ev.type == FSC_EV_MARKER && ev.text_len == mlen &&
            memcmp(ev.text, FSC__HISTORY_MARKER, mlen) == 0)
            in_history = 1;
        if (is_annotation(&ev) && (rc = keep_annotation(x, &ev)) != 0)
            return rc;
        const char *action = action_of(ev.type);
        if (action == NULL || !in_history)
            continue;
        write_entry(x, &ev, action);
        if (++entries % 1000 == 0)
            fsc__pw_list_batch(x->w);
    }
    if (rc < 0)
        return fsc_err_set(x->err, rc, "%s", fsc_trace_last_error(x->r)); /* names the file */
    fsc__pw_list_close(x->w);
    fsc__pw_list_close(x->w);
    if ((rc = write_segments(x)) != 0)
        return rc;
    write_settings(x, h->config);
    write_annotations(x);
    if (fsc__xm_write_top_rest(x->xm, x->w) != 0)
        x->xm_err = 1;
    fsc__pw_dict_close(x->w);
    if (x->xm_err)
        return fsc_err_set(x->err, FSC_EFORMAT,
                           "%s: a pytorch.* record of the trace is not valid JSON", x->path);
    st->entries = entries;
    st->annotations = x->n_ann;
    st->segments = x->segments_written;
    fsc_trace_get_integrity(x->r, &st->integrity);
    return 0;
}

int fsc_pytorch_export(const char *trace_path, const char *out_path,
                       fsc_export_stats_t *stats, fsc_err_t *err)
{
    fsc_export_stats_t local;
    fsc_export_stats_t *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    exp_t x;
    memset(&x, 0, sizeof x);
    x.path = trace_path;
    x.err = err;
    int rc = fsc_trace_open(trace_path, &x.r, err);
    if (rc != 0)
        return rc;
    fsc_outfile_t of;
    FILE *f = NULL;
    if ((rc = fsc_outfile_init(&of, out_path, err)) != 0) {
        fsc_trace_close(x.r);
        return rc;
    }
    f = fopen(of.tmp_path, "wb");
    if (f == NULL) {
        rc = fsc_err_set(err, FSC_EIO, "%s: %s", out_path, strerror(errno));
        fsc_outfile_abort(&of);
        fsc_trace_close(x.r);
        return rc;
    }
    fsc_alloc_config_t def = FSC_ALLOC_CONFIG_DEFAULT;
    fsc__pm_init(&x.m, &def, NULL, NULL, &x.merr);
    rc = fsc__xm_new(&x.xm);
    if (rc == 0)
        rc = fsc__pw_open(f, &x.w);
    if (rc != 0)
        rc = fsc_err_set(err, rc, "%s: out of memory", out_path);
    if (rc == 0)
        rc = export_body(&x, st);
    if (x.w != NULL) {
        if (rc == 0) {
            int wrc = fsc__pw_finish(x.w);
            if (wrc != 0)
                rc = fsc_err_set(err, wrc, "%s: write error", out_path);
        } else {
            fsc__pw_free(x.w);
        }
    }
    if (fclose(f) != 0 && rc == 0)
        rc = fsc_err_set(err, FSC_EIO, "%s: %s", out_path, strerror(errno));
    if (rc == 0)
        rc = fsc_outfile_commit(&of, err);
    else
        fsc_outfile_abort(&of);
    fsc__pm_free(&x.m);
    fsc__xm_free(x.xm);
    for (size_t i = 0; i < x.n_ann; i++)
        free(x.ann[i].text);
    free(x.ann);
    node_memo_t *nm, *nt;
    HASH_ITER(hh, x.memo, nm, nt) {
        HASH_DEL(x.memo, nm);
        free(nm);
    }
    fsc_trace_close(x.r);
    return rc;
}
