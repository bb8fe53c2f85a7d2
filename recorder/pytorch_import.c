/*
 * pytorch_import.c — turns a PyTorch memory snapshot into fragscope events:
 * picks the device, reads the allocator settings, rebuilds the starting
 * state when the history ring had wrapped, then replays every history
 * entry through the block model (pytorch_blocks.c). Python frames become
 * tag nodes, outermost frame nearest the root.
 *
 * Reconstruction (see docs/pytorch.md): segments that existed before the
 * first entry are the final segments the history never created plus those
 * it frees without creating; blocks live at the start are the final
 * allocated blocks the history never touches (exact) plus addresses whose
 * first entry is a free (sized from the request by the split rules). The
 * free space between them is exact, because every block live at the start
 * is either freed in the history or still live at the end.
 */
#include "pytorch_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    ACT_OTHER = 0,
    ACT_ALLOC,
    ACT_FREE_REQUESTED,
    ACT_FREE_COMPLETED,
    ACT_FREE, /* older PyTorch: one entry for both */
    ACT_SEGMENT_ALLOC,
    ACT_SEGMENT_FREE,
    ACT_SEGMENT_MAP,
    ACT_SEGMENT_UNMAP,
    ACT_OOM,
    ACT_SNAPSHOT,
    ACT_EMPTY_CACHE,
    ACT_USER_DEFINED
};

static const struct {
    const char *name;
    int act;
} k_actions[] = {
    {"alloc", ACT_ALLOC},
    {"free_requested", ACT_FREE_REQUESTED},
    {"free_completed", ACT_FREE_COMPLETED},
    {"free", ACT_FREE},
    {"segment_alloc", ACT_SEGMENT_ALLOC},
    {"segment_free", ACT_SEGMENT_FREE},
    {"segment_map", ACT_SEGMENT_MAP},
    {"segment_unmap", ACT_SEGMENT_UNMAP},
    {"oom", ACT_OOM},
    {"snapshot", ACT_SNAPSHOT},
    {"empty_cache", ACT_EMPTY_CACHE},
    {"user_defined", ACT_USER_DEFINED},
};

/* Largest dict the importer looks keys up in: real ones have ~15 keys;
 * the bound keeps lookups linear in the input size. */
#define MAX_DICT_ITEMS 1024

typedef struct entry {
    int act;
    const fsc__pv_t *action;
    uint64_t addr, size, stream, time_us, device_free;
    int has_device_free, has_addr;
    const fsc__pv_t *frames;
    const fsc__pv_t *user_metadata;
} entry_t;

typedef struct final_seg {
    uint64_t base, size, stream;
    uint8_t pool, expandable, pool_known;
    const fsc__pv_t *blocks;
} final_seg_t;

typedef struct addr_info {
    UT_hash_handle hh;
    uint64_t addr;
    uint8_t seen, prelive, pending;
    uint64_t requested;
} addr_info_t;

typedef struct seg_info {
    UT_hash_handle hh;
    uint64_t base;
    uint8_t created, pre;
    uint64_t size, stream;
} seg_info_t;

typedef struct tag_cache {
    UT_hash_handle hh;
    const void *key;
    uint32_t node;
} tag_cache_t;

/* Child node of (parent, frame dict): frame dicts are shared by memo, so
 * this spares formatting and interning the same frame again. */
typedef struct frame_key {
    const void *frame;
    uint32_t parent;
} frame_key_t;

typedef struct frame_cache {
    UT_hash_handle hh;
    frame_key_t key;
    uint32_t node;
} frame_cache_t;

/* A block live before the first entry. */
typedef struct prelive {
    uint64_t addr, size, requested;
    uint8_t exact, pending;
    const fsc__pv_t *frames;
    const final_seg_t *seg; /* containing pre-existing segment */
} prelive_t;

/* An entry of 'external_annotations' (e.g. optimizer step start/end). */
typedef struct annotation {
    uint64_t time_us;
    uint32_t order;
    const fsc__pv_t *stage, *name;
} annotation_t;

typedef struct imp {
    const char *path;
    fsc_import_opts_t opts;
    const fsc_import_sink_t *sink;
    fsc_import_stats_t *st;
    fsc_err_t *err;
    fsc_err_t merr; /* the model's message, wrapped with the entry */
    fsc__pmodel_t m;
    fsc_alloc_config_t cfg;
    char config[1024];
    int device;
    fsc__pv_t *const *ents;
    uint32_t n_ents;
    final_seg_t *finals; /* this device's final segments, sorted by base */
    size_t n_finals;
    final_seg_t *pre;    /* segments that existed before the first entry */
    size_t n_pre, cap_pre;
    prelive_t *live;
    size_t n_live, cap_live;
    addr_info_t *addrs;
    seg_info_t *segs;
    tag_cache_t *tags;
    frame_cache_t *frame_tags;
    annotation_t *ann;
    size_t n_ann, next_ann;
    uint64_t t0_us;
    char namebuf[4096];
} imp_t;

/* ---- small helpers ----------------------------------------------------- */

static int bad(imp_t *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(imp_t *im, const char *fmt, ...)
{
    char what[FSC_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fsc_err_set(im->err, FSC_EFORMAT, "%s: %s", im->path, what);
}

/* Lenient mode: count a skipped entry, keep the first message. */
static void warn(imp_t *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(imp_t *im, const char *fmt, ...)
{
    if (im->st->warnings++ > 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(im->st->first_warning, sizeof im->st->first_warning, fmt, ap);
    va_end(ap);
}

static int dict_ok(const fsc__pv_t *v)
{
    return v != NULL && v->kind == FSC__PV_DICT && v->len <= MAX_DICT_ITEMS;
}

/* A non-negative integer; addresses, sizes, streams and times all are. */
static int get_u64(const fsc__pv_t *d, const char *key, uint64_t *out)
{
    int64_t v;
    if (!fsc__pv_int(fsc__pv_get(d, key), &v) || v < 0)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

/* No device has 2^56 bytes (64 PiB): larger sizes are corrupt data, and
 * keeping sizes below it keeps every sum of addresses and sizes exact. */
#define MAX_SIZE (1ull << 56)

static int on_event(void *ud, const fsc_event_t *ev)
{
    imp_t *im = ud;
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
            return fsc_err_set(&im->merr, rc, "the event consumer failed (%s)",
                               fsc_err_name(rc));
    }
    return 0;
}

/* ---- frames → tags ----------------------------------------------------- */

static int frames_tag(imp_t *im, const fsc__pv_t *frames, uint32_t *out)
{
    *out = 0;
    fsc__pv_t *const *fr;
    uint32_t n = fsc__pv_seq(frames, &fr);
    if (n == 0 || im->sink == NULL || im->sink->tag == NULL)
        return 0;
    tag_cache_t *c = NULL;
    HASH_FIND_PTR(im->tags, &frames, c);
    if (c != NULL) {
        *out = c->node;
        return 0;
    }
    uint32_t node = 0;
    for (uint32_t i = n; i-- > 0;) { /* outermost frame is last */
        const fsc__pv_t *f = fr[i];
        frame_key_t fk;
        memset(&fk, 0, sizeof fk);
        fk.frame = f;
        fk.parent = node;
        frame_cache_t *fc = NULL;
        HASH_FIND(hh, im->frame_tags, &fk, sizeof fk, fc);
        if (fc != NULL) {
            node = fc->node;
            continue;
        }
        if (!dict_ok(f))
            return bad(im, "a Python frame is not a dict");
        const fsc__pv_t *file = fsc__pv_get(f, "filename");
        const fsc__pv_t *fn = fsc__pv_get(f, "name");
        int64_t line = 0;
        fsc__pv_int(fsc__pv_get(f, "line"), &line);
        int flen = (file && file->kind == FSC__PV_STR) ? (int)(file->len > 2000 ? 2000 : file->len) : 0;
        int nlen = (fn && fn->kind == FSC__PV_STR) ? (int)(fn->len > 1000 ? 1000 : fn->len) : 0;
        /* A frame without file and line is a plain tag (that is how the
         * exporter writes tags that are not Python frames). */
        int len = flen == 0 && line == 0
                      ? snprintf(im->namebuf, sizeof im->namebuf, "%.*s", nlen,
                                 nlen ? fn->u.s : "")
                      : snprintf(im->namebuf, sizeof im->namebuf, "%.*s:%lld:%.*s", flen,
                                 flen ? file->u.s : "", (long long)line, nlen,
                                 nlen ? fn->u.s : "");
        if (len < 0)
            len = 0;
        if ((size_t)len >= sizeof im->namebuf)
            len = (int)sizeof im->namebuf - 1;
        uint32_t child = 0;
        int rc = im->sink->tag(im->sink->ud, node, im->namebuf, (size_t)len, &child);
        if (rc != 0)
            return fsc_err_set(im->err, rc, "%s: the tag consumer failed (%s)", im->path,
                               fsc_err_name(rc));
        if ((fc = malloc(sizeof *fc)) == NULL)
            return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
        fc->key = fk;
        fc->node = child;
        HASH_ADD(hh, im->frame_tags, key, sizeof fk, fc);
        node = child;
    }
    c = malloc(sizeof *c);
    if (c == NULL)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    c->key = frames;
    c->node = node;
    HASH_ADD_PTR(im->tags, key, c);
    *out = node;
    return 0;
}

/* ---- settings ---------------------------------------------------------- */

static int read_settings(imp_t *im, const fsc__pv_t *root)
{
    fsc_alloc_config_t def = FSC_ALLOC_CONFIG_DEFAULT;
    im->cfg = def;
    const fsc__pv_t *s = fsc__pv_get(root, "allocator_settings");
    const fsc__pv_t *env = fsc__pv_get(s, "PYTORCH_CUDA_ALLOC_CONF");
    int have_env = env != NULL && env->kind == FSC__PV_STR && env->len > 0;
    if (s != NULL && !dict_ok(s))
        return bad(im, "'allocator_settings' is not a dict");
    if (s != NULL) {
        int64_t v;
        double d;
        if (fsc__pv_int(fsc__pv_get(s, "max_split_size"), &v) && v > 0 &&
            (uint64_t)v < (UINT64_MAX >> 1))
            im->cfg.max_split_size = (uint64_t)v;
        if (fsc__pv_num(fsc__pv_get(s, "garbage_collection_threshold"), &d) && d > 0 && d < 1)
            im->cfg.garbage_collection_threshold = d;
        if (fsc__pv_int(fsc__pv_get(s, "expandable_segments"), &v))
            im->cfg.expandable_segments = v != 0;
        if (fsc__pv_int(fsc__pv_get(s, "max_non_split_rounding"), &v) && v > 0)
            im->cfg.max_non_split_rounding = (uint64_t)v;
        const fsc__pv_t *rd = fsc__pv_get(s, "roundup_power2_divisions");
        if (dict_ok(rd)) {
            for (uint32_t i = 0; i < rd->len; i++) {
                const fsc__pv_t *k = rd->u.items[2 * i];
                char kb[32];
                if (k->kind != FSC__PV_STR || k->len == 0 || k->len >= sizeof kb)
                    continue;
                memcpy(kb, k->u.s, k->len);
                kb[k->len] = '\0';
                char *end;
                unsigned long long mib = strtoull(kb, &end, 10);
                if (*end != '\0' || mib == 0 || (mib & (mib - 1)) != 0)
                    continue;
                int idx = 63 - __builtin_clzll(mib);
                if (idx < FSC_ROUNDUP_INTERVALS && fsc__pv_int(rd->u.items[2 * i + 1], &v) &&
                    v >= 0 && v <= 65536)
                    im->cfg.roundup_power2_divisions[idx] = (uint32_t)v;
            }
        }
    }
    if (have_env) {
        size_t n = env->len < sizeof im->config - 1 ? env->len : sizeof im->config - 1;
        memcpy(im->config, env->u.s, n);
        im->config[n] = '\0';
        if (s == NULL || fsc__pv_get(s, "max_split_size") == NULL) {
            /* Only the string is known: it decides the rules. */
            fsc_err_t e;
            if (fsc_alloc_config_parse(im->config, &im->cfg, &e) != 0)
                return fsc_err_set(im->err, FSC_ECONFIG, "%s: PYTORCH_CUDA_ALLOC_CONF: %s",
                                   im->path, fsc_err_msg(&e));
        }
        return 0;
    }
    return fsc_alloc_config_format(&im->cfg, im->config, sizeof im->config) < 0
               ? bad(im, "cannot render the allocator settings")
               : 0;
}

/* ---- device and final segments ----------------------------------------- */

static int cmp_final(const void *a, const void *b)
{
    const final_seg_t *x = a, *y = b;
    return x->base < y->base ? -1 : x->base > y->base;
}

static int read_finals(imp_t *im, const fsc__pv_t *segs)
{
    fsc__pv_t *const *it;
    uint32_t n = fsc__pv_seq(segs, &it);
    if (segs != NULL && segs->kind != FSC__PV_LIST)
        return bad(im, "'segments' is not a list");
    im->finals = calloc(n ? n : 1, sizeof *im->finals);
    if (im->finals == NULL)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    for (uint32_t i = 0; i < n; i++) {
        const fsc__pv_t *s = it[i];
        if (!dict_ok(s))
            return bad(im, "segments[%u] is not a dict", i);
        int64_t dev = 0;
        fsc__pv_int(fsc__pv_get(s, "device"), &dev);
        if (dev != im->device)
            continue;
        final_seg_t *f = &im->finals[im->n_finals];
        if (!get_u64(s, "address", &f->base) || !get_u64(s, "total_size", &f->size))
            return bad(im, "segments[%u] lacks 'address' or 'total_size'", i);
        if (f->size == 0 || f->size >= MAX_SIZE || f->base >= UINT64_MAX - MAX_SIZE)
            return bad(im, "segments[%u]: address 0x%llx or size %llu is not plausible", i,
                       (unsigned long long)f->base, (unsigned long long)f->size);
        get_u64(s, "stream", &f->stream);
        int64_t ex = 0;
        fsc__pv_int(fsc__pv_get(s, "is_expandable"), &ex);
        f->expandable = ex != 0;
        const fsc__pv_t *type = fsc__pv_get(s, "segment_type");
        f->pool_known = fsc__pv_is_str(type, "small") || fsc__pv_is_str(type, "large");
        f->pool = fsc__pv_is_str(type, "small") ? FSC_POOL_SMALL
                  : f->pool_known               ? FSC_POOL_LARGE
                  : f->size == 2 * FSC_MiB      ? FSC_POOL_SMALL
                                                : FSC_POOL_LARGE;
        f->blocks = fsc__pv_get(s, "blocks");
        im->n_finals++;
    }
    if (im->n_finals > 1)
        qsort(im->finals, im->n_finals, sizeof *im->finals, cmp_final);
    return 0;
}

/* Final segment whose range holds addr (exact base when exact). */
static const final_seg_t *final_at(const final_seg_t *arr, size_t n, uint64_t addr, int exact)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (arr[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const final_seg_t *f = &arr[lo - 1];
    if (exact)
        return f->base == addr ? f : NULL;
    return addr < f->base + f->size ? f : NULL;
}

static int device_list(const fsc__pv_t *traces, char *buf, size_t cap, uint32_t *count,
                       int *only)
{
    fsc__pv_t *const *t;
    uint32_t n = fsc__pv_seq(traces, &t);
    size_t len = 0;
    *count = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        fsc__pv_t *const *e;
        if (fsc__pv_seq(t[i], &e) == 0)
            continue;
        (*count)++;
        *only = (int)i;
        int w = snprintf(buf + len, cap - len, "%s%u", len ? ", " : "", i);
        if (w > 0 && (size_t)w < cap - len)
            len += (size_t)w;
    }
    return 0;
}

static int pick_device(imp_t *im, const fsc__pv_t *root, const fsc__pv_t *segs)
{
    const fsc__pv_t *traces = fsc__pv_get(root, "device_traces");
    if (traces != NULL && traces->kind != FSC__PV_LIST)
        return bad(im, "'device_traces' is not a list");
    char list[256];
    uint32_t count = 0;
    int only = 0;
    device_list(traces, list, sizeof list, &count, &only);
    im->st->devices = count;
    fsc__pv_t *const *t;
    uint32_t nt = fsc__pv_seq(traces, &t);
    if (im->opts.device >= 0) {
        im->device = im->opts.device;
        int in_segs = 0;
        fsc__pv_t *const *s;
        uint32_t ns = fsc__pv_seq(segs, &s);
        for (uint32_t i = 0; i < ns && !in_segs; i++) {
            int64_t d = 0;
            fsc__pv_int(fsc__pv_get(s[i], "device"), &d);
            in_segs = d == im->device;
        }
        if ((uint32_t)im->device >= nt && !in_segs)
            return fsc_err_set(im->err, FSC_ENOENT,
                               "%s: no device %d in the snapshot (devices with history: %s)",
                               im->path, im->device, count ? list : "none");
    } else if (count == 1) {
        im->device = only;
    } else if (count > 1) {
        return fsc_err_set(im->err, FSC_EINVAL,
                           "%s: the snapshot has history for devices %s: choose one with "
                           "--device",
                           im->path, list);
    } else {
        /* No history: the device of the segments, which must be one. */
        fsc__pv_t *const *s;
        uint32_t ns = fsc__pv_seq(segs, &s);
        int64_t first = -1;
        for (uint32_t i = 0; i < ns; i++) {
            int64_t d = 0;
            fsc__pv_int(fsc__pv_get(s[i], "device"), &d);
            if (first < 0)
                first = d;
            else if (d != first)
                return fsc_err_set(im->err, FSC_EINVAL,
                                   "%s: the snapshot has segments on devices %lld and %lld: "
                                   "choose one with --device",
                                   im->path, (long long)first, (long long)d);
        }
        im->device = first < 0 ? 0 : (int)first;
    }
    im->st->device = im->device;
    if ((uint32_t)im->device < nt) {
        if (t[im->device]->kind != FSC__PV_LIST)
            return bad(im, "device_traces[%d] is not a list", im->device);
        im->n_ents = fsc__pv_seq(t[im->device], &im->ents);
    }
    return 0;
}

/* ---- history entries ---------------------------------------------------- */

static int read_entry(imp_t *im, uint32_t i, entry_t *e)
{
    const fsc__pv_t *d = im->ents[i];
    memset(e, 0, sizeof *e);
    if (!dict_ok(d))
        return bad(im, "device_traces[%d][%u] is not a dict", im->device, i);
    /* One pass over the keys (the hot path of an import); a later
     * duplicate key wins, as in Python. */
    const fsc__pv_t *addr = NULL, *size = NULL, *stream = NULL, *time = NULL, *dfree = NULL;
    for (uint32_t k = 0; k < d->len; k++) {
        const fsc__pv_t *key = d->u.items[2 * k], *val = d->u.items[2 * k + 1];
        if (key->kind != FSC__PV_STR)
            continue;
#define KEY_IS(lit) (key->len == sizeof(lit) - 1 && memcmp(key->u.s, lit, sizeof(lit) - 1) == 0)
        if (KEY_IS("action"))
            e->action = val;
        else if (KEY_IS("addr"))
            addr = val;
        else if (KEY_IS("size"))
            size = val;
        else if (KEY_IS("stream"))
            stream = val;
        else if (KEY_IS("time_us"))
            time = val;
        else if (KEY_IS("frames"))
            e->frames = val;
        else if (KEY_IS("device_free"))
            dfree = val;
        else if (KEY_IS("user_metadata"))
            e->user_metadata = val;
#undef KEY_IS
    }
    if (e->action == NULL || e->action->kind != FSC__PV_STR)
        return bad(im, "device_traces[%d][%u] has no 'action'", im->device, i);
    e->act = ACT_OTHER;
    for (size_t k = 0; k < sizeof k_actions / sizeof k_actions[0]; k++)
        if (fsc__pv_is_str(e->action, k_actions[k].name))
            e->act = k_actions[k].act;
    int64_t v;
    e->has_addr = fsc__pv_int(addr, &v) && v >= 0;
    e->addr = e->has_addr ? (uint64_t)v : 0;
    int has_size = fsc__pv_int(size, &v) && v >= 0;
    e->size = has_size ? (uint64_t)v : 0;
    if (fsc__pv_int(stream, &v) && v >= 0)
        e->stream = (uint64_t)v;
    if (fsc__pv_int(time, &v) && v >= 0)
        e->time_us = (uint64_t)v;
    e->has_device_free = fsc__pv_int(dfree, &v) && v >= 0;
    e->device_free = e->has_device_free ? (uint64_t)v : 0;
    int needs_addr = e->act != ACT_OTHER && e->act != ACT_OOM && e->act != ACT_SNAPSHOT &&
                     e->act != ACT_EMPTY_CACHE && e->act != ACT_USER_DEFINED;
    if (needs_addr && (!e->has_addr || !has_size))
        return bad(im, "device_traces[%d][%u] (%.*s) lacks a non-negative 'addr' or 'size'",
                   im->device, i, (int)(e->action->len > 32 ? 32 : e->action->len),
                   e->action->u.s);
    if (e->size >= MAX_SIZE || e->addr >= UINT64_MAX - MAX_SIZE)
        return bad(im, "device_traces[%d][%u]: address 0x%llx or size %llu is not plausible",
                   im->device, i, (unsigned long long)e->addr, (unsigned long long)e->size);
    return 0;
}

/* ---- reconstruction ------------------------------------------------------ */

static addr_info_t *addr_get(imp_t *im, uint64_t addr)
{
    addr_info_t *a = NULL;
    HASH_FIND(hh, im->addrs, &addr, sizeof addr, a);
    if (a == NULL && (a = calloc(1, sizeof *a)) != NULL) {
        a->addr = addr;
        HASH_ADD(hh, im->addrs, addr, sizeof a->addr, a);
    }
    return a;
}

static seg_info_t *seg_get(imp_t *im, uint64_t base)
{
    seg_info_t *s = NULL;
    HASH_FIND(hh, im->segs, &base, sizeof base, s);
    if (s == NULL && (s = calloc(1, sizeof *s)) != NULL) {
        s->base = base;
        HASH_ADD(hh, im->segs, base, sizeof s->base, s);
    }
    return s;
}

static int grow_arr(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *n = realloc(*arr, nc * elem);
    if (n == NULL)
        return FSC_ENOMEM;
    *arr = n;
    *cap = nc;
    return 0;
}

static int add_pre(imp_t *im, const final_seg_t *f)
{
    if (grow_arr((void **)&im->pre, &im->cap_pre, im->n_pre + 1, sizeof *im->pre) != 0)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    im->pre[im->n_pre++] = *f;
    return 0;
}

static int add_live(imp_t *im, const prelive_t *p)
{
    if (grow_arr((void **)&im->live, &im->cap_live, im->n_live + 1, sizeof *im->live) != 0)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    im->live[im->n_live++] = *p;
    return 0;
}

static int cmp_live(const void *a, const void *b)
{
    const prelive_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Which segments and blocks existed before the first entry. */
static int find_start_state(imp_t *im)
{
    entry_t e;
    for (uint32_t i = 0; i < im->n_ents; i++) {
        int rc = read_entry(im, i, &e);
        if (rc != 0)
            return rc;
        addr_info_t *a = NULL;
        seg_info_t *s = NULL;
        switch (e.act) {
        case ACT_ALLOC:
            if ((a = addr_get(im, e.addr)) == NULL)
                goto oom;
            a->seen = 1;
            break;
        case ACT_FREE_REQUESTED:
        case ACT_FREE_COMPLETED:
        case ACT_FREE:
            if ((a = addr_get(im, e.addr)) == NULL)
                goto oom;
            if (!a->seen) {
                a->prelive = 1;
                a->requested = e.size;
                a->pending = e.act == ACT_FREE_COMPLETED;
            }
            a->seen = 1;
            break;
        case ACT_SEGMENT_ALLOC:
            if ((s = seg_get(im, e.addr)) == NULL)
                goto oom;
            s->created = 1;
            break;
        case ACT_SEGMENT_FREE:
            if ((s = seg_get(im, e.addr)) == NULL)
                goto oom;
            if (!s->created && !s->pre) {
                s->pre = 1;
                s->size = e.size;
                s->stream = e.stream;
            }
            break;
        case ACT_SEGMENT_MAP:
            /* An expandable segment that grows in the history is not
             * rebuilt from its final size. */
            {
                const final_seg_t *f = final_at(im->finals, im->n_finals, e.addr, 0);
                if (f != NULL && (s = seg_get(im, f->base)) != NULL)
                    s->created = 1;
            }
            break;
        default:
            break;
        }
    }
    /* Pre-existing segments. */
    for (seg_info_t *s = im->segs; s != NULL; s = s->hh.next) {
        if (!s->pre)
            continue;
        const final_seg_t *f = final_at(im->finals, im->n_finals, s->base, 1);
        final_seg_t pre = {s->base, s->size, s->stream,
                           s->size == 2 * FSC_MiB ? FSC_POOL_SMALL : FSC_POOL_LARGE, 0, 0, NULL};
        if (f != NULL && f->size == s->size && f->pool_known)
            pre.pool = f->pool;
        if (add_pre(im, &pre) != 0)
            return FSC_ENOMEM;
    }
    for (size_t i = 0; i < im->n_finals; i++) {
        seg_info_t *s = NULL;
        HASH_FIND(hh, im->segs, &im->finals[i].base, sizeof(uint64_t), s);
        if (s != NULL && (s->created || s->pre))
            continue;
        if (add_pre(im, &im->finals[i]) != 0)
            return FSC_ENOMEM;
    }
    if (im->n_pre > 1)
        qsort(im->pre, im->n_pre, sizeof *im->pre, cmp_final);
    /* Live blocks: final allocated blocks the history never touches. */
    for (size_t i = 0; i < im->n_pre; i++) {
        const final_seg_t *f = &im->pre[i];
        fsc__pv_t *const *b;
        uint32_t nb = fsc__pv_seq(f->blocks, &b);
        uint64_t cursor = f->base;
        for (uint32_t k = 0; k < nb; k++) {
            if (!dict_ok(b[k]))
                return bad(im, "a block of segment 0x%llx is not a dict",
                           (unsigned long long)f->base);
            prelive_t p = {0};
            if (!get_u64(b[k], "size", &p.size) || p.size >= MAX_SIZE)
                return bad(im, "a block of segment 0x%llx has no plausible 'size'",
                           (unsigned long long)f->base);
            if (!get_u64(b[k], "address", &p.addr))
                p.addr = cursor; /* older snapshots: blocks are contiguous */
            cursor = p.addr + p.size;
            const fsc__pv_t *state = fsc__pv_get(b[k], "state");
            int pending = fsc__pv_is_str(state, "active_pending_free");
            if (!pending && !fsc__pv_is_str(state, "active_allocated"))
                continue;
            addr_info_t *a = NULL;
            HASH_FIND(hh, im->addrs, &p.addr, sizeof p.addr, a);
            if (a != NULL)
                continue;
            if (!get_u64(b[k], "requested_size", &p.requested))
                p.requested = p.size;
            p.exact = 1;
            p.pending = (uint8_t)pending;
            p.frames = fsc__pv_get(b[k], "frames");
            p.seg = f;
            if (add_live(im, &p) != 0)
                return FSC_ENOMEM;
        }
    }
    /* Live blocks: addresses whose first entry frees them. Those outside
     * every pre-existing segment are left to the replay to report. */
    for (addr_info_t *a = im->addrs; a != NULL; a = a->hh.next) {
        if (!a->prelive)
            continue;
        const final_seg_t *f = final_at(im->pre, im->n_pre, a->addr, 0);
        if (f == NULL)
            continue;
        prelive_t p = {a->addr, fsc_alloc_round_size(&im->cfg, a->requested), a->requested,
                       0, a->pending, NULL, f};
        if (add_live(im, &p) != 0)
            return FSC_ENOMEM;
    }
    if (im->n_live > 1)
        qsort(im->live, im->n_live, sizeof *im->live, cmp_live);
    /* A block sized from its request keeps the space up to the next block
     * when PyTorch would not have split that remainder off. */
    for (size_t i = 0; i < im->n_live; i++) {
        prelive_t *p = &im->live[i];
        if (p->exact)
            continue;
        uint64_t limit = p->seg->base + p->seg->size;
        if (i + 1 < im->n_live && im->live[i + 1].seg == p->seg)
            limit = im->live[i + 1].addr;
        if (p->addr + p->size > limit)
            continue; /* overlap: reported when placed */
        uint64_t gap = limit - (p->addr + p->size);
        if (gap > 0 && !fsc_alloc_should_split(&im->cfg, (fsc_pool_t)p->seg->pool,
                                               p->size + gap, p->size, p->seg->expandable))
            p->size += gap;
    }
    im->st->reconstructed = im->n_pre > 0 || im->n_live > 0;
    return 0;
oom:
    return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
}

static int wrap_model_error(imp_t *im, const char *what)
{
    return fsc_err_set(im->err, im->merr.code ? im->merr.code : FSC_ESTATE, "%s: %s: %s",
                       im->path, what, im->merr.msg);
}

static int emit_start_state(imp_t *im)
{
    size_t li = 0;
    for (size_t i = 0; i < im->n_pre; i++) {
        const final_seg_t *f = &im->pre[i];
        int rc = f->expandable
                     ? fsc__pm_map(&im->m, f->base, f->base, f->size, f->stream, f->pool)
                     : fsc__pm_segment_alloc(&im->m, f->base, f->size, f->stream, f->pool);
        if (rc != 0) {
            char what[96];
            snprintf(what, sizeof what, "rebuilding segment 0x%llx", (unsigned long long)f->base);
            return wrap_model_error(im, what);
        }
        im->st->reconstructed_segments++;
        fsc__pseg_t *seg = fsc__pm_segment(&im->m, f->base);
        while (li < im->n_live && im->live[li].addr < f->base)
            li++;
        for (; li < im->n_live && im->live[li].seg == f; li++) {
            const prelive_t *p = &im->live[li];
            uint32_t tag = 0;
            if ((rc = frames_tag(im, p->frames, &tag)) != 0)
                return rc;
            rc = fsc__pm_place(&im->m, seg, p->addr, p->size, p->requested, f->stream, tag);
            if (rc == 0 && p->pending)
                rc = fsc__pm_free_requested(&im->m, p->addr, tag);
            if (rc != 0) {
                if (im->opts.lenient && rc == FSC_ESTATE) {
                    warn(im, "rebuilding block 0x%llx: %s", (unsigned long long)p->addr,
                         im->merr.msg);
                    continue;
                }
                char what[96];
                snprintf(what, sizeof what, "rebuilding block 0x%llx",
                         (unsigned long long)p->addr);
                return wrap_model_error(im, what);
            }
            im->st->reconstructed_blocks++;
        }
    }
    return 0;
}

/* ---- replay --------------------------------------------------------------- */

static fsc_pool_t pool_for_new_segment(imp_t *im, uint64_t base, uint64_t size, int expandable)
{
    const final_seg_t *f = final_at(im->finals, im->n_finals, base, !expandable);
    if (f != NULL && f->pool_known)
        return (fsc_pool_t)f->pool;
    if (expandable)
        return size % (20 * FSC_MiB) == 0 ? FSC_POOL_LARGE : FSC_POOL_SMALL;
    return size == 2 * FSC_MiB ? FSC_POOL_SMALL : FSC_POOL_LARGE;
}

/* Base of the expandable segment a mapping at addr belongs to: the final
 * segment holding it, else a segment of the model whose mapped range it
 * extends or falls into, else addr itself (a new segment). */
static uint64_t expandable_base(imp_t *im, uint64_t addr)
{
    fsc__pseg_t *s = fsc__pm_segment_at(&im->m, addr);
    if (s == NULL) {
        for (fsc__pseg_t *x = im->m.segs; x != NULL; x = x->hh.next)
            if (x->expandable && x->end == addr)
                s = x;
    }
    if (s != NULL && s->expandable)
        return s->base;
    const final_seg_t *f = final_at(im->finals, im->n_finals, addr, 0);
    if (f != NULL && f->expandable && fsc__pm_segment(&im->m, f->base) != NULL)
        return f->base;
    return addr;
}

static int marker(imp_t *im, const char *text, size_t len, uint32_t tag)
{
    fsc_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = FSC_EV_MARKER;
    ev.time_ns = im->m.time_ns;
    ev.text = text;
    ev.text_len = (uint32_t)len;
    ev.tag = tag;
    return on_event(im, &ev);
}

static int replay_entry(imp_t *im, const entry_t *e)
{
    uint32_t tag = 0;
    int rc = frames_tag(im, e->frames, &tag);
    if (rc != 0)
        return rc;
    fsc__pmodel_t *m = &im->m;
    m->tag = tag;
    switch (e->act) {
    case ACT_ALLOC: return fsc__pm_alloc(m, e->addr, e->size, e->stream, tag);
    case ACT_FREE_REQUESTED: return fsc__pm_free_requested(m, e->addr, tag);
    case ACT_FREE_COMPLETED: return fsc__pm_free_completed(m, e->addr, tag);
    case ACT_FREE: return fsc__pm_free_completed(m, e->addr, tag);
    case ACT_SEGMENT_ALLOC:
        return fsc__pm_segment_alloc(m, e->addr, e->size, e->stream,
                                     pool_for_new_segment(im, e->addr, e->size, 0));
    case ACT_SEGMENT_FREE: return fsc__pm_segment_free(m, e->addr, e->size);
    case ACT_SEGMENT_MAP: {
        uint64_t base = expandable_base(im, e->addr);
        fsc__pseg_t *s = fsc__pm_segment(m, base);
        fsc_pool_t pool = s ? (fsc_pool_t)s->pool : pool_for_new_segment(im, base, e->size, 1);
        return fsc__pm_map(m, base, e->addr, e->size, e->stream, pool);
    }
    case ACT_SEGMENT_UNMAP: return fsc__pm_unmap(m, e->addr, e->size);
    case ACT_OOM: {
        fsc_event_t ev;
        memset(&ev, 0, sizeof ev);
        uint64_t rounded = fsc_alloc_round_size(&m->cfg, e->size);
        ev.type = FSC_EV_OOM;
        ev.time_ns = m->time_ns;
        ev.size = rounded;
        ev.requested = e->size;
        ev.stream = e->stream;
        ev.pool = (uint8_t)fsc_alloc_pool_of(rounded);
        ev.tag = tag;
        ev.oom.allocated = m->allocated;
        ev.oom.reserved = m->reserved;
        ev.oom.capacity = 0;
        /* Older snapshots put device_free in 'addr'. */
        ev.oom.device_free = e->has_device_free ? e->device_free
                             : e->has_addr      ? e->addr
                                                : UINT64_MAX;
        ev.oom.device_total = 0;
        ev.oom.segment_size = fsc_alloc_segment_size(rounded);
        return on_event(im, &ev);
    }
    case ACT_EMPTY_CACHE: {
        fsc_event_t ev;
        memset(&ev, 0, sizeof ev);
        ev.type = FSC_EV_EMPTY_CACHE;
        ev.time_ns = m->time_ns;
        ev.size = e->size;
        return on_event(im, &ev);
    }
    case ACT_SNAPSHOT: return marker(im, "snapshot", 8, tag);
    case ACT_USER_DEFINED: {
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

static int cmp_ann(const void *a, const void *b)
{
    const annotation_t *x = a, *y = b;
    if (x->time_us != y->time_us)
        return x->time_us < y->time_us ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* This device's external annotations, in time order (stable). */
static int read_annotations(imp_t *im, const fsc__pv_t *root)
{
    fsc__pv_t *const *it;
    uint32_t n = fsc__pv_seq(fsc__pv_get(root, "external_annotations"), &it);
    if (n == 0)
        return 0;
    im->ann = calloc(n, sizeof *im->ann);
    if (im->ann == NULL)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    for (uint32_t i = 0; i < n; i++) {
        if (!dict_ok(it[i]))
            return bad(im, "external_annotations[%u] is not a dict", i);
        int64_t dev = im->device;
        fsc__pv_int(fsc__pv_get(it[i], "device"), &dev);
        annotation_t a = {0, i, fsc__pv_get(it[i], "stage"), fsc__pv_get(it[i], "name")};
        if (dev != im->device || !get_u64(it[i], "time_us", &a.time_us) ||
            a.name == NULL || a.name->kind != FSC__PV_STR)
            continue;
        im->ann[im->n_ann++] = a;
    }
    if (im->n_ann > 1)
        qsort(im->ann, im->n_ann, sizeof *im->ann, cmp_ann);
    return 0;
}

/* MARKERs "STAGE name" for every annotation up to time_us (all: UINT64_MAX). */
static int emit_annotations(imp_t *im, uint64_t time_us)
{
    char text[512];
    for (; im->next_ann < im->n_ann && im->ann[im->next_ann].time_us <= time_us;
         im->next_ann++) {
        const annotation_t *a = &im->ann[im->next_ann];
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

static int replay(imp_t *im)
{
    entry_t e;
    for (uint32_t i = 0; i < im->n_ents; i++) {
        int rc = read_entry(im, i, &e);
        if (rc != 0)
            return rc;
        if ((rc = emit_annotations(im, e.time_us)) != 0)
            return rc;
        if (im->opts.progress != NULL && (i & 4095u) == 0)
            im->opts.progress(im->opts.progress_ud, i, im->n_ents);
        im->st->entries++;
        im->m.time_ns = e.time_us > im->t0_us ? (e.time_us - im->t0_us) * 1000u : 0;
        fsc_err_clear(&im->merr);
        rc = replay_entry(im, &e);
        if (rc == 0)
            continue;
        if (im->merr.code == 0)
            return rc; /* already described in im->err */
        char what[160];
        snprintf(what, sizeof what, "device_traces[%d][%u] (%.*s at 0x%llx, %llu bytes)",
                 im->device, i, (int)(e.action->len > 32 ? 32 : e.action->len), e.action->u.s,
                 (unsigned long long)e.addr, (unsigned long long)e.size);
        if (im->opts.lenient && rc == FSC_ESTATE) {
            warn(im, "%s: %s", what, im->merr.msg);
            continue;
        }
        return wrap_model_error(im, what);
    }
    if (im->opts.progress != NULL)
        im->opts.progress(im->opts.progress_ud, im->n_ents, im->n_ents);
    return emit_annotations(im, UINT64_MAX);
}

/* ---- entry point ---------------------------------------------------------- */

static void imp_free(imp_t *im)
{
    fsc__pm_free(&im->m);
    free(im->finals);
    free(im->pre);
    free(im->live);
    free(im->ann);
    addr_info_t *a, *at;
    HASH_ITER(hh, im->addrs, a, at) {
        HASH_DEL(im->addrs, a);
        free(a);
    }
    seg_info_t *s, *st;
    HASH_ITER(hh, im->segs, s, st) {
        HASH_DEL(im->segs, s);
        free(s);
    }
    tag_cache_t *c, *ct;
    HASH_ITER(hh, im->tags, c, ct) {
        HASH_DEL(im->tags, c);
        free(c);
    }
    frame_cache_t *f, *ft;
    HASH_ITER(hh, im->frame_tags, f, ft) {
        HASH_DEL(im->frame_tags, f);
        free(f);
    }
}

static int run(imp_t *im, const fsc__pv_t *root)
{
    const fsc__pv_t *segs = NULL;
    int rc;
    if (root->kind == FSC__PV_LIST) {
        segs = root; /* torch.cuda.memory_snapshot(): segments only */
        im->st->segments_only = 1;
    } else if (root->kind == FSC__PV_DICT) {
        segs = fsc__pv_get(root, "segments");
        if (segs == NULL && fsc__pv_get(root, "device_traces") == NULL)
            return bad(im, "not a memory snapshot: the top-level dict has neither 'segments' "
                           "nor 'device_traces'");
    } else {
        return bad(im, "not a memory snapshot: the top level is neither a dict nor a list");
    }
    if ((rc = pick_device(im, root->kind == FSC__PV_DICT ? root : NULL, segs)) != 0)
        return rc;
    if ((rc = read_settings(im, root->kind == FSC__PV_DICT ? root : NULL)) != 0)
        return rc;
    if ((rc = read_finals(im, segs)) != 0)
        return rc;
    if (root->kind == FSC__PV_DICT && (rc = read_annotations(im, root)) != 0)
        return rc;
    if (im->n_ents > 0) {
        entry_t e;
        if ((rc = read_entry(im, 0, &e)) != 0)
            return rc;
        im->t0_us = e.time_us;
        im->st->first_time_us = e.time_us;
    } else if (im->n_ann > 0) {
        im->t0_us = im->ann[0].time_us;
    }
    if ((rc = find_start_state(im)) != 0)
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
    hdr.flags = FSC_TRACE_F_CAPACITY_UNKNOWN |
                (im->st->reconstructed ? FSC_TRACE_F_RECONSTRUCTED : 0u);
    if (im->sink && im->sink->header && (rc = im->sink->header(im->sink->ud, &hdr)) != 0)
        return fsc_err_set(im->err, rc, "%s: the header consumer failed (%s)", im->path,
                           fsc_err_name(rc));

    fsc__pm_init(&im->m, &im->cfg, on_event, im, &im->merr);
    if ((rc = emit_start_state(im)) != 0)
        return rc;
    if (im->st->reconstructed && im->n_ents > 0 &&
        (rc = marker(im, FSC__HISTORY_MARKER, strlen(FSC__HISTORY_MARKER), 0)) != 0)
        return fsc_err_set(im->err, rc, "%s: %s", im->path, im->merr.msg);
    if ((rc = replay(im)) != 0)
        return rc;
    im->st->peak_allocated = im->m.peak_allocated;
    im->st->peak_reserved = im->m.peak_reserved;
    im->st->splits = im->m.splits;
    im->st->merges = im->m.merges;
    return 0;
}

int fsc_pytorch_import(const char *path, const fsc_import_opts_t *opts,
                       const fsc_import_sink_t *sink, fsc_import_stats_t *stats,
                       fsc_err_t *err)
{
    fsc_import_stats_t local;
    fsc_import_opts_t def = FSC_IMPORT_OPTS_DEFAULT;
    imp_t im;
    memset(&im, 0, sizeof im);
    im.path = path;
    im.opts = opts ? *opts : def;
    im.sink = sink;
    im.st = stats ? stats : &local;
    im.err = err;
    memset(im.st, 0, sizeof *im.st);

    fsc__pdoc_t *doc = NULL;
    int rc = fsc__snap_load(path, &doc, &im.st->format, err);
    if (rc == 0)
        rc = run(&im, fsc__pdoc_root(doc));
    imp_free(&im);
    fsc__pdoc_free(doc);
    return rc;
}
