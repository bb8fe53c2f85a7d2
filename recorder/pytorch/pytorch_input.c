/*
 * pytorch_input.c — reads the parts of a snapshot the importer needs: the
 * allocator settings, the device to import, the final segments, history
 * entries (one pass over each entry's keys: this is the hot path), the
 * external annotations, and Python frame lists as tag nodes. Everything
 * read is validated here; the rest of the importer trusts fsc__entry_t.
 */
#include "pytorch_import.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/frames.h"

#define ACT(name, act) {name, sizeof(name) - 1, act}
static const struct {
    const char *name;
    uint32_t len;
    int act;
} k_actions[] = {
    ACT("alloc", FSC__ACT_ALLOC),
    ACT("free_requested", FSC__ACT_FREE_REQUESTED),
    ACT("free_completed", FSC__ACT_FREE_COMPLETED),
    ACT("free", FSC__ACT_FREE),
    ACT("segment_alloc", FSC__ACT_SEGMENT_ALLOC),
    ACT("segment_free", FSC__ACT_SEGMENT_FREE),
    ACT("segment_map", FSC__ACT_SEGMENT_MAP),
    ACT("segment_unmap", FSC__ACT_SEGMENT_UNMAP),
    ACT("oom", FSC__ACT_OOM),
    ACT("snapshot", FSC__ACT_SNAPSHOT),
    ACT("empty_cache", FSC__ACT_EMPTY_CACHE),
    ACT("user_defined", FSC__ACT_USER_DEFINED),
};
#undef ACT

int fsc__imp_bad(fsc__imp_t *im, const char *fmt, ...)
{
    char what[FSC_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fsc_err_set(im->rerr, FSC_EFORMAT, "%s: %s", im->path, what);
}

void fsc__imp_warn(fsc__imp_t *im, const char *fmt, ...)
{
    if (im->st->warnings++ > 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(im->st->first_warning, sizeof im->st->first_warning, fmt, ap);
    va_end(ap);
}

int fsc__imp_dict_ok(const fsc__pv_t *v)
{
    return v != NULL && v->kind == FSC__PV_DICT && v->len <= FSC__IMP_MAX_DICT;
}

/* A non-negative integer; addresses, sizes, streams and times all are. */
int fsc__imp_u64(const fsc__pv_t *d, const char *key, uint64_t *out)
{
    int64_t v;
    if (!fsc__pv_int(fsc__pv_get(d, key), &v) || v < 0)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

/* ---- frames → tags ----------------------------------------------------- */

/* cached_only: return 1 instead of anything beyond the caches */
static int frames_tag(fsc__imp_t *im, const fsc__pv_t *frames, uint32_t *out, int cached_only)
{
    *out = 0;
    fsc__pv_t *const *fr;
    uint32_t n = fsc__pv_seq(frames, &fr);
    if (n == 0 || im->sink == NULL || im->sink->tag == NULL)
        return 0;
    /* Caches are keyed by node address: only nodes that outlive a streamed
     * batch qualify (the others' addresses are reused). */
    int stable = fsc__pv_stable(frames);
    size_t h = ((uintptr_t)frames >> 4) & (FSC__IMP_FCACHE - 1);
    if (stable && im->fcache[h].frames == frames) {
        *out = im->fcache[h].node;
        return 0;
    }
    /* The same stack recurs as new lists of the same frame dicts (each
     * step of a training loop): look the list up by its items. */
    fsc__stack_cache_t *sc = NULL;
    fsc__stack_key_t sk = {0, n};
    int by_items = n <= FSC__IMP_STACK_MAX;
    if (by_items) { /* one pass without branches: the hot loop of an import */
        uint64_t hash = 0;
        int stable_all = 1;
        for (uint32_t i = 0; i < n; i++) {
            stable_all &= fsc__pv_stable(fr[i]);
            hash = (hash ^ (uint64_t)(uintptr_t)fr[i]) * 0x100000001b3ull;
        }
        sk.hash = hash;
        by_items = stable_all;
    }
    if (by_items) {
        HASH_FIND(hh, im->stacks, &sk, sizeof sk, sc);
        if (sc != NULL && memcmp(sc->items, fr, (size_t)n * sizeof *fr) == 0) {
            if (stable) {
                im->fcache[h].frames = frames;
                im->fcache[h].node = sc->node;
            }
            *out = sc->node;
            return 0;
        }
        if (sc != NULL)
            by_items = 0; /* another stack with the same hash: not cached */
    }
    uint32_t node = 0;
    for (uint32_t i = n; i-- > 0;) { /* outermost frame is last */
        const fsc__pv_t *f = fr[i];
        fsc__frame_key_t fk;
        memset(&fk, 0, sizeof fk);
        fk.frame = f;
        fk.parent = node;
        fsc__frame_cache_t *fc = NULL;
        int fstable = fsc__pv_stable(f);
        if (fstable)
            HASH_FIND(hh, im->frame_tags, &fk, sizeof fk, fc);
        if (fc != NULL) {
            node = fc->node;
            continue;
        }
        if (cached_only)
            return 1;
        if (!fsc__imp_dict_ok(f))
            return fsc__imp_bad(im, "a Python frame is not a dict");
        fsc__imp_keys_frame(im, f);
        const fsc__pv_t *file = fsc__pv_get(f, "filename");
        const fsc__pv_t *fn = fsc__pv_get(f, "name");
        int64_t line = 0;
        const fsc__pv_t *lv = fsc__pv_get(f, "line");
        int unknown_line = lv != NULL && lv->kind == FSC__PV_BIGINT;
        fsc__pv_int(lv, &line);
        if (unknown_line)
            im->st->unknown_lines++;
        int has_file = file != NULL && file->kind == FSC__PV_STR;
        int has_fn = fn != NULL && fn->kind == FSC__PV_STR;
        size_t len = fsc_frame_name(im->namebuf, sizeof im->namebuf, has_file ? file->u.s : NULL,
                                    has_file ? file->len : 0,
                                    unknown_line || line < 0 ? UINT64_MAX : (uint64_t)line,
                                    has_fn ? fn->u.s : NULL, has_fn ? fn->len : 0);
        uint32_t child = 0;
        int rc = im->sink->tag(im->sink->ud, node, im->namebuf, len, &child);
        if (rc != 0)
            return fsc_err_set(im->err, rc, "%s: the tag consumer failed (%s)", im->path,
                               fsc_err_name(rc));
        node = child;
        if ((rc = fsc__imp_keys_frame_record(im, f, child)) != 0)
            return rc;
        if (!fstable)
            continue;
        if ((fc = malloc(sizeof *fc)) == NULL)
            return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
        fc->key = fk;
        fc->node = child;
        HASH_ADD(hh, im->frame_tags, key, sizeof fk, fc);
    }
    *out = node;
    if (stable) {
        im->fcache[h].frames = frames;
        im->fcache[h].node = node;
    }
    size_t bytes = sizeof *sc + (size_t)n * sizeof *fr;
    if (!by_items || im->stack_bytes + bytes > FSC__IMP_STACK_BYTES)
        return 0;
    if ((sc = malloc(bytes)) == NULL) /* (cached_only: said by the full walk) */
        return cached_only ? 1 : fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    im->stack_bytes += bytes;
    sc->key = sk;
    sc->node = node;
    memcpy(sc->items, fr, (size_t)n * sizeof *fr);
    HASH_ADD(hh, im->stacks, key, sizeof sk, sc);
    return 0;
}

int fsc__imp_frames_tag(fsc__imp_t *im, const fsc__pv_t *frames, uint32_t *out)
{
    return frames_tag(im, frames, out, 0);
}

int fsc__imp_frames_tag_cached(fsc__imp_t *im, const fsc__pv_t *frames, uint32_t *out)
{
    return frames_tag(im, frames, out, 1);
}

/* ---- settings ---------------------------------------------------------- */

/* One allocator_settings key into im->cfg, as the settings table says; a
 * value out of range is ignored, as PyTorch's own reader would refuse it. */
static void read_setting(fsc__imp_t *im, const fsc__pv_t *pv, const fsc_alloc_setting_t *s,
                         size_t idx)
{
    char *f = (char *)&im->cfg + s->offset;
    int64_t v;
    double d;
    if (s->offset < 0) {
        /* No field: kept as a value the string would have set, only when it
         * is not the default (so a 2.11 dict of defaults changes nothing). */
        if (pv != NULL && fsc__pv_num(pv, &d) && d != s->def && idx < 64) {
            im->cfg.extra[idx] = d;
            im->cfg.set_mask |= 1ull << idx;
        }
        return;
    }
    switch (s->kind) {
    case FSC_SETTING_MIB:
        if (fsc__pv_int(pv, &v) && v > 0 && (uint64_t)v < (UINT64_MAX >> 1)) {
            uint64_t u = (uint64_t)v;
            memcpy(f, &u, sizeof u);
        }
        return;
    case FSC_SETTING_FRACTION:
        /* Below DBL_MIN (subnormal) the settings string would not parse
         * back, as in PyTorch: such a value is ignored like one out of range. */
        if (fsc__pv_num(pv, &d) && d >= DBL_MIN && d < s->max)
            memcpy(f, &d, sizeof d);
        return;
    case FSC_SETTING_BOOL:
        if (fsc__pv_int(pv, &v)) {
            int b = v != 0;
            memcpy(f, &b, sizeof b);
        }
        return;
    case FSC_SETTING_DIVISIONS:
        if (fsc__imp_dict_ok(pv)) {
            for (uint32_t i = 0; i < pv->len; i++) {
                const fsc__pv_t *k = pv->u.items[2 * i];
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
                if (idx < FSC_ROUNDUP_INTERVALS && fsc__pv_int(pv->u.items[2 * i + 1], &v) &&
                    v >= 0 && v <= 65536)
                    im->cfg.roundup_power2_divisions[idx] = (uint32_t)v;
            }
        }
        return;
    default:
        return;
    }
}

/* Keys of allocator_settings that are facts of the snapshot rather than
 * settings (PyTorch after 2.11): read and named, not acted on. The ring
 * wrapping shows in the history itself, which is what the importer
 * follows. */
/* The settings of the config string the trace gets, and of the dict,
 * that fragscope cannot replay. */
static void name_unmodelled(fsc__imp_t *im)
{
    char *out = im->st->settings_not_modelled;
    size_t cap = sizeof im->st->settings_not_modelled;
    if (fsc_alloc_config_unmodelled_str(im->config, out, cap) == 0)
        fsc_alloc_config_unmodelled(&im->cfg, out, cap);
    /* Keys only PyTorch after 2.11 writes or accepts point to its version. */
    fsc_alloc_config_t c;
    fsc_err_t e;
    fsc_err_clear(&e);
    char newer[160] = "";
    if (fsc_alloc_config_parse(im->config, &c, &e) == 0)
        fsc_alloc_config_missing_in(&c, FSC_TORCH_CHECKED, newer, sizeof newer);
    const char *ring = im->st->keys_not_modelled[0] ? "allocator_settings.trace_alloc_*" : "";
    if (newer[0] || ring[0])
        snprintf(im->st->torch_inferred, sizeof im->st->torch_inferred,
                 "after 2.11 (inferred from its keys, not recorded: %s%s%s)", newer,
                 newer[0] && ring[0] ? "," : "", ring);
}

static void read_trace_keys(fsc__imp_t *im, const fsc__pv_t *s)
{
    int64_t over = 0, max = 0;
    char *out = im->st->keys_not_modelled;
    size_t cap = sizeof im->st->keys_not_modelled;
    out[0] = '\0';
    int have_over = fsc__pv_int(fsc__pv_get(s, "trace_alloc_overflowed"), &over);
    int have_max = fsc__pv_int(fsc__pv_get(s, "trace_alloc_max_entries"), &max);
    if (have_over || have_max)
        snprintf(out, cap,
                 "allocator_settings.trace_alloc_overflowed=%s, trace_alloc_max_entries=%lld "
                 "(read, not used: the history's own entries decide where it starts)",
                 !have_over ? "absent" : over ? "True" : "False", have_max ? (long long)max : -1);
}

int fsc__imp_read_settings(fsc__imp_t *im, const fsc__pv_t *root)
{
    fsc_alloc_config_t def = FSC_ALLOC_CONFIG_DEFAULT;
    im->cfg = def;
    const fsc__pv_t *s = fsc__pv_get(root, "allocator_settings");
    const fsc__pv_t *env = fsc__pv_get(s, "PYTORCH_CUDA_ALLOC_CONF");
    int have_env = env != NULL && env->kind == FSC__PV_STR && env->len > 0;
    if (s != NULL && !fsc__imp_dict_ok(s))
        return fsc__imp_bad(im, "'allocator_settings' is not a dict");
    if (s != NULL) {
        size_t n;
        const fsc_alloc_setting_t *t = fsc_alloc_settings(&n);
        for (size_t i = 0; i < n; i++)
            if (t[i].snapshot_key != NULL)
                read_setting(im, fsc__pv_get(s, t[i].snapshot_key), &t[i], i);
        read_trace_keys(im, s);
    }
    if (have_env) {
        size_t n = env->len < sizeof im->config - 1 ? env->len : sizeof im->config - 1;
        memcpy(im->config, env->u.s, n);
        im->config[n] = '\0';
        fsc_err_t e;
        fsc_alloc_config_t parsed;
        int parses = fsc_alloc_config_parse(im->config, &parsed, &e) == 0;
        if (s == NULL || fsc__pv_get(s, "max_split_size") == NULL) {
            /* Only the string is known: it decides the rules. */
            if (!parses)
                return fsc_err_set(im->err, FSC_ECONFIG, "%s: PYTORCH_CUDA_ALLOC_CONF: %s",
                                   im->path, fsc_err_msg(&e));
            im->cfg = parsed;
            name_unmodelled(im);
            return 0;
        }
        /* The dict is PyTorch's own reading of the string: where fragscope
         * reads the divisions differently, the dict's are the run's. */
        if (parses && memcmp(parsed.roundup_power2_divisions, im->cfg.roundup_power2_divisions,
                             sizeof parsed.roundup_power2_divisions) == 0)
            return name_unmodelled(im), 0;
        if (parses && fsc__pv_get(s, "roundup_power2_divisions") == NULL)
            return name_unmodelled(im), 0;
        /* The dict decides the rules; a string with keys this version does
         * not know (a newer PyTorch) would make the trace's settings
         * unusable for replays, so the dict's settings are written instead.
         * What the string held beyond them is not assumed away: named. */
        if (!parses) {
            char *k = im->st->keys_not_modelled;
            size_t len = strlen(k), cap = sizeof im->st->keys_not_modelled;
            snprintf(k + len, cap - len,
                     "%sallocator_settings.PYTORCH_CUDA_ALLOC_CONF not read (%s): the dict's "
                     "settings replay, without what the string adds",
                     len ? "; " : "", fsc_err_msg(&e));
        }
    }
    if (fsc_alloc_config_format(&im->cfg, im->config, sizeof im->config) < 0)
        return fsc__imp_bad(im, "cannot render the allocator settings");
    name_unmodelled(im);
    return 0;
}

/* ---- device and final segments ----------------------------------------- */

int fsc__imp_cmp_final(const void *a, const void *b)
{
    const fsc__final_seg_t *x = a, *y = b;
    return x->base < y->base ? -1 : x->base > y->base;
}

int fsc__imp_read_finals(fsc__imp_t *im, const fsc__pv_t *segs)
{
    fsc__pv_t *const *it;
    uint32_t n = fsc__pv_seq(segs, &it);
    if (segs != NULL && segs->kind != FSC__PV_LIST)
        return fsc__imp_bad(im, "'segments' is not a list");
    im->finals = calloc(n ? n : 1, sizeof *im->finals);
    if (im->finals == NULL)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    for (uint32_t i = 0; i < n; i++) {
        const fsc__pv_t *s = it[i];
        if (!fsc__imp_dict_ok(s))
            return fsc__imp_bad(im, "segments[%u] is not a dict", i);
        int64_t dev = 0;
        fsc__pv_int(fsc__pv_get(s, "device"), &dev);
        if (dev != im->device)
            continue;
        fsc__final_seg_t *f = &im->finals[im->n_finals];
        if (!fsc__imp_u64(s, "address", &f->base) || !fsc__imp_u64(s, "total_size", &f->size))
            return fsc__imp_bad(im, "segments[%u] lacks 'address' or 'total_size'", i);
        if (f->size == 0 || f->size >= FSC__IMP_MAX_SIZE ||
            f->base >= UINT64_MAX - FSC__IMP_MAX_SIZE)
            return fsc__imp_bad(im, "segments[%u]: address 0x%llx or size %llu is not plausible", i,
                                (unsigned long long)f->base, (unsigned long long)f->size);
        fsc__imp_u64(s, "stream", &f->stream);
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
        /* A private pool's id, (graph or MemPool id, 0) or (0, id): one
         * number, split again by the exporter. */
        fsc__pv_t *const *pid;
        int64_t pa = 0, pb = 0;
        if (fsc__pv_seq(fsc__pv_get(s, "segment_pool_id"), &pid) == 2 &&
            fsc__pv_int(pid[0], &pa) && fsc__pv_int(pid[1], &pb) && pa >= 0 && pb >= 0 &&
            pa <= 0xffffffffll && pb <= 0xffffffffll)
            f->pool_id = (uint64_t)pa << 32 | (uint64_t)pb;
        im->n_finals++;
    }
    if (im->n_finals > 1)
        qsort(im->finals, im->n_finals, sizeof *im->finals, fsc__imp_cmp_final);
    return 0;
}

/* Final segment whose range holds addr (exact base when exact). */
const fsc__final_seg_t *fsc__imp_final_at(const fsc__final_seg_t *arr, size_t n, uint64_t addr,
                                          int exact)
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
    const fsc__final_seg_t *f = &arr[lo - 1];
    if (exact)
        return f->base == addr ? f : NULL;
    return addr < f->base + f->size ? f : NULL;
}

static int device_list(const fsc__pv_t *traces, char *buf, size_t cap, uint32_t *count, int *only)
{
    fsc__pv_t *const *t;
    uint32_t n = fsc__pv_seq(traces, &t);
    size_t len = 0;
    *count = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        if (fsc__pv_count(t[i]) == 0)
            continue;
        (*count)++;
        *only = (int)i;
        int w = snprintf(buf + len, cap - len, "%s%u", len ? ", " : "", i);
        if (w > 0 && (size_t)w < cap - len)
            len += (size_t)w;
    }
    return 0;
}

int fsc__imp_pick_device(fsc__imp_t *im, const fsc__pv_t *root, const fsc__pv_t *segs)
{
    const fsc__pv_t *traces = fsc__pv_get(root, "device_traces");
    if (traces != NULL && traces->kind != FSC__PV_LIST)
        return fsc__imp_bad(im, "'device_traces' is not a list");
    char list[256];
    uint32_t count = 0;
    int only = 0;
    device_list(traces, list, sizeof list, &count, &only);
    im->st->devices = count;
    fsc__pv_t *const *t;
    uint32_t nt = fsc__pv_seq(traces, &t);
    for (uint32_t i = 0; i < nt && i < 64; i++)
        if (fsc__pv_count(t[i]) > 0)
            im->st->device_mask |= 1ull << i;
    if (im->opts.pick_device) {
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
            return fsc__imp_bad(im, "device_traces[%d] is not a list", im->device);
        im->n_ents = fsc__pv_count(t[im->device]);
        if (fsc__pv_seq(t[im->device], &im->ents) < im->n_ents)
            im->ents = NULL; /* streamed */
        /* A window of the history, as a ring keeps it (skip_entries). */
        uint64_t skip = im->opts.skip_entries < im->n_ents ? im->opts.skip_entries : im->n_ents;
        im->n_ents -= skip;
        if (im->ents != NULL)
            im->ents += skip;
    }
    return 0;
}

/* ---- history entries ---------------------------------------------------- */

enum { KEY_OTHER = 0, KEY_ACTION, KEY_ADDR, KEY_SIZE, KEY_STREAM, KEY_TIME, KEY_FRAMES,
       KEY_DFREE, KEY_USER_METADATA };

void fsc__imp_cache_reset(fsc__imp_t *im)
{
    memset(im->kcache, 0, sizeof im->kcache);
    im->layout.n = 0;
    fsc__imp_keys_cache_reset(im);
}

static int key_what(const fsc__pv_t *key)
{
#define KEY_IS(lit) (key->len == sizeof(lit) - 1 && memcmp(key->u.s, lit, sizeof(lit) - 1) == 0)
    return KEY_IS("action") ? KEY_ACTION
           : KEY_IS("addr") ? KEY_ADDR
           : KEY_IS("size") ? KEY_SIZE
           : KEY_IS("stream") ? KEY_STREAM
           : KEY_IS("time_us") ? KEY_TIME
           : KEY_IS("frames") ? KEY_FRAMES
           : KEY_IS("device_free") ? KEY_DFREE
           : KEY_IS("user_metadata") ? KEY_USER_METADATA
                                      : KEY_OTHER;
#undef KEY_IS
}

static int action_what(const fsc__pv_t *a)
{
    int act = FSC__ACT_OTHER;
    for (size_t k = 0; k < sizeof k_actions / sizeof k_actions[0]; k++)
        if (a->len == k_actions[k].len && memcmp(a->u.s, k_actions[k].name, k_actions[k].len) == 0)
            act = k_actions[k].act;
    return act;
}

/* What a string node means, through the cache when the node lives as long
 * as its document (keys and actions are memo-shared: a few nodes). Keys
 * and actions share the cache: a node is only ever one of them here, and
 * each side asks with its own classifier (a key node met as an action
 * string is classified again). */
static int str_what(fsc__imp_t *im, const fsc__pv_t *v, int is_key)
{
    size_t h = (((uintptr_t)v >> 3) * 2 + (is_key ? 1u : 0u)) & (FSC__IMP_KCACHE - 1);
    if (im->kcache[h].v == v)
        return im->kcache[h].what;
    int what = is_key ? key_what(v) : action_what(v);
    if (fsc__pv_stable(v)) {
        im->kcache[h].v = v;
        im->kcache[h].what = what;
    }
    return what;
}

/* A non-negative integer (v may be NULL). */
static inline int nonneg(const fsc__pv_t *v, uint64_t *out)
{
    int64_t x;
    if (v != NULL && v->kind == FSC__PV_INT)
        x = v->u.i;
    else if (!fsc__pv_int(v, &x))
        return 0;
    if (x < 0)
        return 0;
    *out = (uint64_t)x;
    return 1;
}

int fsc__imp_read_entry(fsc__imp_t *im, const fsc__pv_t *d, uint64_t i, fsc__entry_t *e)
{
    /* all but the extra keys' arrays, filled up to nx; field by field, as
     * a memset of the struct's head is a slow `rep stos` here */
    e->act = 0;
    e->action = e->frames = e->user_metadata = e->dict = NULL;
    e->addr = e->size = e->stream = e->time_us = e->device_free = 0;
    e->has_device_free = e->has_addr = 0;
    e->nx = e->nx_dropped = 0;
    if (!fsc__imp_dict_ok(d))
        return fsc__imp_bad(im, "device_traces[%d][%llu] is not a dict", im->device,
                            (unsigned long long)i);
    /* One pass over the keys (the hot path of an import); a later
     * duplicate key wins, as in Python. */
    const fsc__pv_t *by[KEY_USER_METADATA]; /* the value of each KEY_ACTION..KEY_DFREE */
    by[KEY_ACTION] = by[KEY_ADDR] = by[KEY_SIZE] = by[KEY_STREAM] = NULL;
    by[KEY_TIME] = by[KEY_FRAMES] = by[KEY_DFREE] = NULL;
    /* Entries share their key nodes through the memo: when this one has
     * the last one's, their meanings are known without a lookup each. */
    int same = d->len == im->layout.n;
    for (uint32_t k = 0; same && k < d->len; k++)
        same = d->u.items[2 * k] == im->layout.key[k];
    int learn = !same && d->len <= FSC__IMP_LAYOUT;
    for (uint32_t k = 0; k < d->len; k++) {
        const fsc__pv_t *key = d->u.items[2 * k], *val = d->u.items[2 * k + 1];
        int what;
        if (same) {
            what = im->layout.what[k];
        } else {
            what = key->kind == FSC__PV_STR ? str_what(im, key, 1) : -1;
            if (learn) {
                learn = fsc__pv_stable(key);
                im->layout.key[k] = key;
                im->layout.what[k] = (int8_t)what;
            }
        }
        if (what > KEY_OTHER && what < KEY_USER_METADATA) { /* (a store, not a jump) */
            by[what] = val;
            continue;
        }
        if (what < 0)
            continue;
        if (what == KEY_USER_METADATA)
            e->user_metadata = val;
        if (e->nx < FSC__IMP_MAX_EXTRA) {
            e->xk[e->nx] = key;
            e->xv[e->nx++] = val;
        } else {
            e->nx_dropped++;
        }
    }
    if (!same)
        im->layout.n = learn ? d->len : 0;
    e->action = by[KEY_ACTION];
    e->frames = by[KEY_FRAMES];
    const fsc__pv_t *addr = by[KEY_ADDR], *size = by[KEY_SIZE], *stream = by[KEY_STREAM],
                    *time = by[KEY_TIME], *dfree = by[KEY_DFREE];
    e->dict = d;
    if (e->action == NULL || e->action->kind != FSC__PV_STR)
        return fsc__imp_bad(im, "device_traces[%d][%llu] has no 'action'", im->device,
                            (unsigned long long)i);
    e->act = str_what(im, e->action, 0);
    e->has_addr = nonneg(addr, &e->addr);
    int has_size = nonneg(size, &e->size);
    nonneg(stream, &e->stream);
    nonneg(time, &e->time_us);
    e->has_device_free = nonneg(dfree, &e->device_free);
    int needs_addr = e->act != FSC__ACT_OTHER && e->act != FSC__ACT_OOM &&
                     e->act != FSC__ACT_SNAPSHOT && e->act != FSC__ACT_EMPTY_CACHE &&
                     e->act != FSC__ACT_USER_DEFINED;
    if (needs_addr && (!e->has_addr || !has_size))
        return fsc__imp_bad(
            im, "device_traces[%d][%llu] (%.*s) lacks a non-negative 'addr' or 'size'", im->device,
            (unsigned long long)i,
            (int)(e->action->len > 32 ? 32 : e->action->len), e->action->u.s);
    if (e->size >= FSC__IMP_MAX_SIZE || e->addr >= UINT64_MAX - FSC__IMP_MAX_SIZE)
        return fsc__imp_bad(
            im, "device_traces[%d][%llu]: address 0x%llx or size %llu is not plausible",
            im->device, (unsigned long long)i, (unsigned long long)e->addr,
            (unsigned long long)e->size);
    return 0;
}

/* ---- annotations ---------------------------------------------------------- */

static int cmp_ann(const void *a, const void *b)
{
    const fsc__annotation_t *x = a, *y = b;
    if (x->time_us != y->time_us)
        return x->time_us < y->time_us ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* This device's external annotations, in time order (stable). */
int fsc__imp_read_annotations(fsc__imp_t *im, const fsc__pv_t *root)
{
    fsc__pv_t *const *it;
    uint32_t n = fsc__pv_seq(fsc__pv_get(root, "external_annotations"), &it);
    if (n == 0)
        return 0;
    im->ann = calloc(n, sizeof *im->ann);
    if (im->ann == NULL)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    for (uint32_t i = 0; i < n; i++) {
        if (!fsc__imp_dict_ok(it[i]))
            return fsc__imp_bad(im, "external_annotations[%u] is not a dict", i);
        int64_t dev = im->device;
        fsc__pv_int(fsc__pv_get(it[i], "device"), &dev);
        fsc__annotation_t a = {0, i, fsc__pv_get(it[i], "stage"), fsc__pv_get(it[i], "name")};
        if (dev != im->device || !fsc__imp_u64(it[i], "time_us", &a.time_us) || a.name == NULL ||
            a.name->kind != FSC__PV_STR)
            continue;
        im->ann[im->n_ann++] = a;
    }
    if (im->n_ann > 1)
        qsort(im->ann, im->n_ann, sizeof *im->ann, cmp_ann);
    return 0;
}
