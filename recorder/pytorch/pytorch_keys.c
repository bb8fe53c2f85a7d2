/*
 * pytorch_keys.c — everything in a snapshot that is not an allocator event,
 * kept: settings PyTorch writes beyond the rules, host memory, history keys
 * such as compile_context, user_metadata and forward_frames, actions
 * without a fragscope event (snapshot, user_defined, annotate, and actions
 * this version does not know), segment frames and pool ids, the fx_* keys
 * of frames (one record per tag node), and any key
 * this version does not know. They travel as "pytorch.KIND JSON" markers
 * (fragscope/pytorch.h), which the analyzer stores in table pytorch_meta and
 * the exporter writes back, so that import -> export gives PyTorch's own
 * file back. Unknown actions and keys are counted for the "not understood"
 * line of import and report; they never stop an import.
 *
 * The JSON is written by hand rather than through cJSON: the values come
 * straight from the pickle value tree, tuples and bytes need markers of
 * their own, and a shared-reference "memo bomb" must be cut off by output
 * size before it is expanded, which a tree builder would do first.
 */
#include "pytorch_import.h"

#include "fsc/u64map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value whose JSON would pass this is replaced by a note (shared
 * references can make a small pickle expand without bound). */
#define KEYS_MAX_JSON (8u << 20)
#define KEYS_MAX_NOTES 8

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int nomem, over;
} sbuf_t;

typedef struct note {
    char where[24], name[40];
    uint64_t count;
} note_t;

typedef struct fsc__keys {
    /* The first entry's keys beyond the event fields (copies: a streamed
     * entry's values do not outlive its batch), and their JSON. */
    char *dk[FSC__IMP_MAX_EXTRA];
    size_t dkl[FSC__IMP_MAX_EXTRA];
    char *dv[FSC__IMP_MAX_EXTRA];
    /* a default that is a string: its bytes (same bytes, same JSON) */
    char *ds[FSC__IMP_MAX_EXTRA];
    uint32_t dsl[FSC__IMP_MAX_EXTRA];
    uint32_t nd;
    int dk_distinct; /* no two default keys alike (usual_entry relies on it) */
    /* The snapshot record but its entry_defaults, emitted at the first
     * entry (streamed histories are read after the rest) or at the end. */
    char *snap;
    size_t snap_len;
    int snap_pending;
    note_t notes[KEYS_MAX_NOTES];
    uint32_t nnotes;
    sbuf_t b, v;
    sbuf_t f;              /* a "pytorch.frame" record being written */
    fsc__u64map_t framed;  /* tag nodes whose frame record was emitted */
    /* Nodes that live as long as their document, met before: a key known
     * to k_entry, and per default key a scalar value whose JSON is the
     * default's (memo-shared: the same few nodes in every entry). */
    const fsc__pv_t *known_keys[8];
    const fsc__pv_t *same_v[FSC__IMP_MAX_EXTRA];
    const fsc__pv_t *dk_v[FSC__IMP_MAX_EXTRA]; /* a node met as default key d */
} fsc__keys_t;

static void sb_put(sbuf_t *b, const char *s, size_t n)
{
    if (b->nomem || b->over)
        return;
    if (b->n + n + 1 > KEYS_MAX_JSON + 1024u) {
        b->over = 1;
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n + 1)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (np == NULL) {
            b->nomem = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_cs(sbuf_t *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void sb_str(sbuf_t *b, const char *s, size_t n)
{
    sb_put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        sb_put(b, s + run, i - run);
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if (c == '\t')
            snprintf(esc, sizeof esc, "\\t");
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        sb_cs(b, esc);
        run = i + 1;
    }
    sb_put(b, s + run, n - run);
    sb_put(b, "\"", 1);
}

/* JSON of a value: tuples as {"__tuple__": [...]}, bytes as
 * {"__bytes__": "hex"}, floats that JSON cannot hold as
 * {"__float__": "nan"}, dicts with non-string keys as
 * {"__pairs__": [[k, v], ...]}. */
static void pv_json(sbuf_t *b, const fsc__pv_t *v)
{
    char num[40];
    if (b->nomem || b->over)
        return;
    if (v == NULL) {
        sb_cs(b, "null");
        return;
    }
    switch (v->kind) {
    case FSC__PV_NONE: sb_cs(b, "null"); break;
    case FSC__PV_BOOL: sb_cs(b, v->u.i ? "true" : "false"); break;
    case FSC__PV_INT:
        snprintf(num, sizeof num, "%lld", (long long)v->u.i);
        sb_cs(b, num);
        break;
    case FSC__PV_FLOAT:
        if (isfinite(v->u.f)) {
            snprintf(num, sizeof num, "%.17g", v->u.f);
            /* keep it a float when read back */
            if (strpbrk(num, ".eE") == NULL)
                strcat(num, ".0");
            sb_cs(b, num);
        } else {
            sb_cs(b, isnan(v->u.f) ? "{\"__float__\":\"nan\"}"
                     : v->u.f > 0  ? "{\"__float__\":\"inf\"}"
                                   : "{\"__float__\":\"-inf\"}");
        }
        break;
    case FSC__PV_STR: sb_str(b, v->u.s, v->len); break;
    case FSC__PV_BYTES:
        sb_cs(b, "{\"__bytes__\":\"");
        for (uint32_t i = 0; i < v->len && !b->over; i++) {
            snprintf(num, sizeof num, "%02x", (unsigned char)v->u.s[i]);
            sb_put(b, num, 2);
        }
        sb_cs(b, "\"}");
        break;
    case FSC__PV_LIST:
    case FSC__PV_TUPLE:
        if (v->kind == FSC__PV_TUPLE)
            sb_cs(b, "{\"__tuple__\":");
        sb_put(b, "[", 1);
        for (uint32_t i = 0; i < v->len && !b->over; i++) {
            if (i)
                sb_put(b, ",", 1);
            pv_json(b, v->u.items[i]);
        }
        sb_put(b, "]", 1);
        if (v->kind == FSC__PV_TUPLE)
            sb_put(b, "}", 1);
        break;
    case FSC__PV_DICT: {
        int plain = 1;
        for (uint32_t i = 0; i < v->len; i++)
            plain &= v->u.items[2 * i]->kind == FSC__PV_STR;
        sb_cs(b, plain ? "{" : "{\"__pairs__\":[");
        for (uint32_t i = 0; i < v->len && !b->over; i++) {
            if (i)
                sb_put(b, ",", 1);
            if (plain) {
                pv_json(b, v->u.items[2 * i]);
                sb_put(b, ":", 1);
            } else {
                sb_put(b, "[", 1);
                pv_json(b, v->u.items[2 * i]);
                sb_put(b, ",", 1);
            }
            pv_json(b, v->u.items[2 * i + 1]);
            if (!plain)
                sb_put(b, "]", 1);
        }
        sb_cs(b, plain ? "}" : "]}");
        break;
    }
    default: sb_cs(b, "null"); break;
    }
}

/* Append the JSON of v to b, or a note when it is too large. */
static void put_value(fsc__imp_t *im, sbuf_t *b, const fsc__pv_t *v)
{
    size_t at = b->n;
    pv_json(b, v);
    if (b->over) {
        b->over = 0;
        b->n = at;
        if (b->p != NULL)
            b->p[at] = '\0';
        sb_cs(b, "{\"__dropped__\":\"value larger than 8 MiB as JSON\"}");
        im->st->unknown_keys++;
    }
}

static void put_key(sbuf_t *b, int *first, const fsc__pv_t *k)
{
    if (!*first)
        sb_put(b, ",", 1);
    *first = 0;
    if (k->kind == FSC__PV_STR)
        sb_str(b, k->u.s, k->len);
    else
        sb_cs(b, "\"?\"");
    sb_put(b, ":", 1);
}

static void put_ckey(sbuf_t *b, int *first, const char *k)
{
    if (!*first)
        sb_put(b, ",", 1);
    *first = 0;
    sb_str(b, k, strlen(k));
    sb_put(b, ":", 1);
}

/* ---- known keys ------------------------------------------------------------ */

static const char *const k_top[] = {"segments",       "device_traces", "allocator_settings",
                                    "external_annotations", "host_segments", "host_traces",
                                    NULL};
/* allocator_settings keys beyond the settings table's snapshot keys
 * (fsc_alloc_settings): the string, and the ring's facts of PyTorch after
 * 2.11 (read in pytorch_input.c, named as not modelled). */
static const char *const k_settings[] = {"PYTORCH_CUDA_ALLOC_CONF", "trace_alloc_overflowed",
                                         "trace_alloc_max_entries", NULL};
static const char *const k_segment[] = {
    "address",        "total_size",    "stream",      "segment_type", "segment_pool_id",
    "allocated_size", "active_size",   "requested_size", "blocks",    "device",
    "is_expandable",  "frames",        NULL};
/* Rebuilt from the events by the exporter (the rest is kept as records). */
static const char *const k_segment_rebuilt[] = {
    "address",     "total_size",     "stream", "segment_type", "allocated_size",
    "active_size", "requested_size", "blocks", "device",       "is_expandable", NULL};
static const char *const k_block[] = {"address", "size", "requested_size", "state", "frames",
                                      "history", NULL};
static const char *const k_entry[] = {"user_metadata", "compile_context", "forward_frames",
                                      "pool_id", NULL};
/* A frame's keys: filename, line and name make its tag; PyTorch's FX
 * augmentation (torch.cuda.memory._snapshot(augment_with_fx_traces=True))
 * adds the fx_* keys to frames of generated code, kept as "pytorch.frame"
 * records. */
static const char *const k_frame[] = {"filename",       "line",           "name",
                                      "fx_node_op",     "fx_node_name",   "fx_node_target",
                                      "fx_original_trace", NULL};
static const char *const k_frame_tag[] = {"filename", "line", "name", NULL};
static const char *const k_kept_actions[] = {"snapshot", "user_defined", "annotate", NULL};

static int in_list(const fsc__pv_t *k, const char *const *list)
{
    if (k == NULL || k->kind != FSC__PV_STR)
        return 0;
    for (; *list; list++)
        if (strlen(*list) == k->len && memcmp(*list, k->u.s, k->len) == 0)
            return 1;
    return 0;
}

static void note(fsc__imp_t *im, const char *where, const fsc__pv_t *name, int action)
{
    if (action)
        im->st->unknown_actions++;
    else
        im->st->unknown_keys++;
    fsc__keys_t *k = im->keys;
    if (k == NULL)
        return;
    char nm[40];
    int nl = name && name->kind == FSC__PV_STR ? (int)(name->len > 39 ? 39 : name->len) : 0;
    snprintf(nm, sizeof nm, "%.*s", nl, nl ? name->u.s : "");
    for (uint32_t i = 0; i < k->nnotes; i++)
        if (strcmp(k->notes[i].where, where) == 0 && strcmp(k->notes[i].name, nm) == 0) {
            k->notes[i].count++;
            return;
        }
    if (k->nnotes < KEYS_MAX_NOTES) {
        note_t *n = &k->notes[k->nnotes++];
        snprintf(n->where, sizeof n->where, "%s", where);
        snprintf(n->name, sizeof n->name, "%s", nm);
        n->count = 1;
    }
}

/* A snapshot key of the settings table. */
static int table_key(const fsc__pv_t *k)
{
    if (k == NULL || k->kind != FSC__PV_STR)
        return 0;
    size_t n;
    const fsc_alloc_setting_t *t = fsc_alloc_settings(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].snapshot_key != NULL && strlen(t[i].snapshot_key) == k->len &&
            memcmp(t[i].snapshot_key, k->u.s, k->len) == 0)
            return 1;
    return 0;
}

static void count_unknown(fsc__imp_t *im, const fsc__pv_t *d, const char *const *known,
                          const char *where)
{
    if (!fsc__imp_dict_ok(d))
        return;
    int settings = known == k_settings;
    for (uint32_t i = 0; i < d->len; i++)
        if (!in_list(d->u.items[2 * i], known) && !(settings && table_key(d->u.items[2 * i])))
            note(im, where, d->u.items[2 * i], 0);
}

static void format_notes(fsc__imp_t *im)
{
    fsc__keys_t *k = im->keys;
    char *out = im->st->not_understood;
    size_t cap = sizeof im->st->not_understood, len = 0;
    out[0] = '\0';
    for (uint32_t i = 0; k != NULL && i < k->nnotes; i++) {
        const note_t *n = &k->notes[i];
        int w = strcmp(n->where, "action") == 0
                    ? snprintf(out + len, cap - len, "%saction '%s' x%llu", len ? "; " : "",
                               n->name, (unsigned long long)n->count)
                    : snprintf(out + len, cap - len, "%s%s key '%s' x%llu", len ? "; " : "",
                               n->where, n->name, (unsigned long long)n->count);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
}

/* ---- emitting records ------------------------------------------------------ */

static int emit(fsc__imp_t *im, const char *kind, const sbuf_t *b)
{
    if (!im->opts.keep_records)
        return 0;
    if (b->nomem)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    char head[48];
    size_t off = 0;
    do {
        size_t part = b->n - off;
        int more = part > FSC_PYTORCH_META_PART_MAX;
        if (more)
            part = FSC_PYTORCH_META_PART_MAX;
        int hl = snprintf(head, sizeof head, FSC_PYTORCH_META_PREFIX "%s%s ", kind,
                          more ? "+" : "");
        sbuf_t *t = &im->keys->v;
        t->n = 0;
        sb_put(t, head, (size_t)hl);
        sb_put(t, b->p + off, part);
        if (t->nomem)
            return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
        fsc_event_t ev;
        memset(&ev, 0, sizeof ev);
        ev.type = FSC_EV_MARKER;
        ev.time_ns = im->m.time_ns;
        ev.text = t->p;
        ev.text_len = (uint32_t)t->n;
        int rc = fsc__imp_on_event(im, &ev);
        im->st->events--; /* a record, not an allocator event */
        if (rc != 0)
            return fsc_err_set(im->err, rc, "%s: %s", im->path, im->merr.msg);
        off += part;
    } while (off < b->n);
    im->st->meta_records++;
    return 0;
}

static int keys_init(fsc__imp_t *im)
{
    if (im->keys == NULL && (im->keys = calloc(1, sizeof *im->keys)) == NULL)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    return 0;
}

void fsc__imp_keys_frame(fsc__imp_t *im, const fsc__pv_t *frame)
{
    if (keys_init(im) == 0)
        count_unknown(im, frame, k_frame, "frame");
}

int fsc__imp_keys_frame_record(fsc__imp_t *im, const fsc__pv_t *frame, uint32_t node)
{
    if (!im->opts.keep_records || node == 0 || !fsc__imp_dict_ok(frame))
        return 0;
    uint32_t i = 0;
    while (i < frame->len && in_list(frame->u.items[2 * i], k_frame_tag))
        i++;
    if (i == frame->len)
        return 0; /* filename, line and name only: the tag says it all */
    int rc = keys_init(im);
    if (rc != 0)
        return rc;
    fsc__keys_t *k = im->keys;
    uint64_t seen;
    if (fsc__u64map_get(&k->framed, node, &seen))
        return 0; /* the node's first frame speaks for it */
    if (fsc__u64map_put(&k->framed, node, 1) != 0)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    sbuf_t *b = &k->f;
    b->n = 0;
    int first = 1;
    char num[24];
    sb_put(b, "{", 1);
    put_ckey(b, &first, "tag");
    snprintf(num, sizeof num, "%u", node);
    sb_cs(b, num);
    for (i = 0; i < frame->len; i++) {
        const fsc__pv_t *key = frame->u.items[2 * i];
        if (in_list(key, k_frame_tag))
            continue;
        put_key(b, &first, key);
        put_value(im, b, frame->u.items[2 * i + 1]);
    }
    sb_put(b, "}", 1);
    return emit(im, "frame", b);
}

/* One "pytorch.segment" record: {"address": A, kept keys..., "blocks":
 * {"ADDR": {unknown keys}}} when the segment has anything to keep. */
static int segment_record(fsc__imp_t *im, const fsc__pv_t *s)
{
    fsc__keys_t *k = im->keys;
    sbuf_t *b = &k->b;
    b->n = 0;
    int first = 1, any = 0;
    sb_put(b, "{", 1);
    put_ckey(b, &first, "address");
    put_value(im, b, fsc__pv_get(s, "address"));
    for (uint32_t i = 0; i < s->len; i++) {
        const fsc__pv_t *key = s->u.items[2 * i], *val = s->u.items[2 * i + 1];
        if (in_list(key, k_segment_rebuilt))
            continue;
        if (!in_list(key, k_segment))
            note(im, "segment", key, 0);
        fsc__pv_t *const *it;
        if (fsc__pv_is_str(key, "frames") && fsc__pv_seq(val, &it) == 0 &&
            val->kind == FSC__PV_LIST)
            continue; /* [] is what the exporter writes anyway */
        /* (0, 0), the default pool; JSON writes the tuple as a list */
        if (fsc__pv_is_str(key, "segment_pool_id") &&
            (val->kind == FSC__PV_TUPLE || val->kind == FSC__PV_LIST) && val->len == 2) {
            int64_t a = -1, c = -1;
            fsc__pv_int(val->u.items[0], &a);
            fsc__pv_int(val->u.items[1], &c);
            if (a == 0 && c == 0)
                continue;
        }
        put_key(b, &first, key);
        put_value(im, b, val);
        any = 1;
    }
    fsc__pv_t *const *blocks;
    uint32_t nb = fsc__pv_seq(fsc__pv_get(s, "blocks"), &blocks);
    int bfirst = 1;
    for (uint32_t j = 0; j < nb; j++) {
        const fsc__pv_t *blk = blocks[j];
        if (!fsc__imp_dict_ok(blk))
            continue;
        int bf = 1;
        for (uint32_t i = 0; i < blk->len; i++) {
            const fsc__pv_t *key = blk->u.items[2 * i];
            if (in_list(key, k_block))
                continue;
            note(im, "block", key, 0);
            if (bfirst) {
                put_ckey(b, &first, "blocks");
                sb_put(b, "{", 1);
            }
            if (bf) {
                char a[32];
                uint64_t addr = 0;
                fsc__imp_u64(blk, "address", &addr);
                snprintf(a, sizeof a, "%s\"%llu\":{", bfirst ? "" : ",", (unsigned long long)addr);
                sb_cs(b, a);
            }
            bfirst = 0;
            int kf = bf;
            put_key(b, &kf, key);
            bf = 0;
            put_value(im, b, blk->u.items[2 * i + 1]);
        }
        if (!bf)
            sb_put(b, "}", 1);
    }
    if (!bfirst) {
        sb_put(b, "}", 1);
        any = 1;
    }
    sb_put(b, "}", 1);
    return any ? emit(im, "segment", b) : 0;
}

int fsc__imp_keys_begin(fsc__imp_t *im, const fsc__pv_t *root)
{
    int rc = keys_init(im);
    if (rc != 0)
        return rc;
    fsc__keys_t *k = im->keys;
    sbuf_t *b = &k->b;
    const fsc__pv_t *segs = root->kind == FSC__PV_LIST ? root : fsc__pv_get(root, "segments");
    if (root->kind == FSC__PV_DICT) {
        count_unknown(im, root, k_top, "top-level");
        const fsc__pv_t *s = fsc__pv_get(root, "allocator_settings");
        count_unknown(im, s, k_settings, "allocator_settings");
        if (!im->opts.keep_records)
            goto segments;
        b->n = 0;
        int first = 1;
        sb_put(b, "{", 1);
        put_ckey(b, &first, "keys");
        sb_put(b, "[", 1);
        for (uint32_t i = 0; i < root->len; i++) {
            if (i)
                sb_put(b, ",", 1);
            put_value(im, b, root->u.items[2 * i]);
        }
        sb_put(b, "]", 1);
        for (uint32_t i = 0; i < root->len; i++) {
            const fsc__pv_t *key = root->u.items[2 * i];
            if (fsc__pv_is_str(key, "segments") || fsc__pv_is_str(key, "device_traces"))
                continue;
            put_key(b, &first, key);
            put_value(im, b, root->u.items[2 * i + 1]);
        }
        char dev[48];
        snprintf(dev, sizeof dev, ",\"device\":%d,\"devices\":%u", im->device,
                 (unsigned)im->st->devices);
        sb_cs(b, dev);
        if (b->nomem || (k->snap = malloc(b->n + 1)) == NULL)
            return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
        memcpy(k->snap, b->p, b->n + 1);
        k->snap_len = b->n;
        k->snap_pending = 1;
    }
segments:;
    fsc__pv_t *const *it;
    uint32_t n = fsc__pv_seq(segs, &it);
    for (uint32_t i = 0; i < n; i++) {
        if (!fsc__imp_dict_ok(it[i]))
            continue;
        int64_t dev = 0;
        fsc__pv_int(fsc__pv_get(it[i], "device"), &dev);
        if (dev == im->device && (rc = segment_record(im, it[i])) != 0)
            return rc;
    }
    return 0;
}

/* The snapshot record, with the first entry's keys as entry_defaults (e may
 * be NULL: no history). */
static int emit_snapshot(fsc__imp_t *im, const fsc__entry_t *e)
{
    fsc__keys_t *k = im->keys;
    k->snap_pending = 0;
    sbuf_t *b = &k->b;
    for (uint32_t i = 0; e != NULL && i < e->nx; i++) {
        const fsc__pv_t *key = e->xk[i];
        if (key->kind != FSC__PV_STR)
            continue;
        b->n = 0;
        put_value(im, b, e->xv[i]);
        if (b->nomem || (k->dv[k->nd] = strdup(b->p)) == NULL ||
            (k->dk[k->nd] = malloc(key->len + 1)) == NULL)
            return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
        memcpy(k->dk[k->nd], key->u.s, key->len);
        k->dk[k->nd][key->len] = '\0';
        const fsc__pv_t *v = e->xv[i];
        if (v->kind == FSC__PV_STR) {
            if ((k->ds[k->nd] = malloc(v->len + 1u)) == NULL)
                return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
            memcpy(k->ds[k->nd], v->u.s, v->len);
            k->dsl[k->nd] = v->len;
        }
        k->dkl[k->nd++] = key->len;
    }
    k->dk_distinct = 1;
    for (uint32_t i = 0; i < k->nd; i++)
        for (uint32_t j = i + 1; j < k->nd; j++)
            if (k->dkl[i] == k->dkl[j] && memcmp(k->dk[i], k->dk[j], k->dkl[i]) == 0)
                k->dk_distinct = 0;
    b->n = 0;
    sb_put(b, k->snap, k->snap_len);
    sb_cs(b, ",\"entry_defaults\":{");
    for (uint32_t i = 0; i < k->nd; i++) {
        if (i)
            sb_put(b, ",", 1);
        sb_str(b, k->dk[i], k->dkl[i]);
        sb_put(b, ":", 1);
        sb_cs(b, k->dv[i]);
    }
    sb_cs(b, "}}");
    return emit(im, "snapshot", b);
}

int fsc__imp_keys_rebuild(fsc__imp_t *im)
{
    if (im->keys == NULL || !im->opts.keep_records)
        return 0;
    sbuf_t *b = &im->keys->b;
    char num[200];
    b->n = 0;
    snprintf(num, sizeof num,
             "{\"entries\":%llu,\"first_time_us\":%llu,\"segments\":%llu,\"blocks\":%llu,"
             "\"reserved\":%llu,\"settled\":%llu,\"guessed\":%llu,\"guessed_blocks\":[",
             (unsigned long long)im->n_ents, (unsigned long long)im->t0_us,
             (unsigned long long)im->st->reconstructed_segments,
             (unsigned long long)im->st->reconstructed_blocks,
             (unsigned long long)im->st->reconstructed_reserved,
             (unsigned long long)im->st->reconstructed_settled,
             (unsigned long long)im->st->reconstructed_guessed);
    sb_cs(b, num);
    int first = 1;
    for (size_t i = 0; i < im->n_live; i++) {
        const fsc__prelive_t *p = &im->live[i];
        if (!p->guessed)
            continue;
        snprintf(num, sizeof num, "%s[%llu,%llu,%llu,%llu,%llu]", first ? "" : ",",
                 (unsigned long long)p->addr, (unsigned long long)(p->addr + p->size),
                 (unsigned long long)p->split_end, (unsigned long long)p->max_end,
                 (unsigned long long)p->limit);
        sb_cs(b, num);
        first = 0;
    }
    sb_cs(b, "]}");
    return emit(im, "rebuild", b);
}

int fsc__imp_keys_end(fsc__imp_t *im)
{
    if (im->keys == NULL || !im->keys->snap_pending)
        return 0;
    return emit_snapshot(im, NULL);
}

/* in_list(key, k_entry), through the nodes met before. */
static int known_key(fsc__keys_t *k, const fsc__pv_t *key)
{
    for (size_t i = 0; i < sizeof k->known_keys / sizeof k->known_keys[0]; i++)
        if (k->known_keys[i] == key && key != NULL)
            return 1;
    if (!in_list(key, k_entry))
        return 0;
    if (fsc__pv_stable(key))
        for (size_t i = 0; i < sizeof k->known_keys / sizeof k->known_keys[0]; i++)
            if (k->known_keys[i] == NULL) {
                k->known_keys[i] = key;
                break;
            }
    return 1;
}

static int key_eq(const char *s, size_t n, const fsc__pv_t *k)
{
    return k->kind == FSC__PV_STR && k->len == n && memcmp(k->u.s, s, n) == 0;
}

/* Key node kn is default key d: by its address once met (keys are
 * memo-shared), else by its bytes. */
static int key_is(fsc__keys_t *k, uint32_t d, const fsc__pv_t *kn)
{
    if (k->dk_v[d] == kn)
        return 1;
    if (!key_eq(k->dk[d], k->dkl[d], kn))
        return 0;
    if (fsc__pv_stable(kn))
        k->dk_v[d] = kn;
    return 1;
}

/* Value node v of default key d has the default's bytes: the node met
 * before, or a string of the same bytes (the cases the record leaves out
 * without writing the value's JSON). A string node that lives as long as
 * the document is then remembered, so that the next entry, which shares it
 * through the memo, is known by its address (when it does). */
static int default_value(fsc__keys_t *k, uint32_t d, const fsc__pv_t *v)
{
    if (v == k->same_v[d])
        return 1;
    if (k->ds[d] == NULL || v->kind != FSC__PV_STR || v->len != k->dsl[d])
        return 0;
    /* PyTorch writes each entry's compile_context 'N/A' as a string of its
     * own: short, compared here without a call */
    for (uint32_t i = 0; i < v->len && i < 16; i++)
        if (v->u.s[i] != k->ds[d][i])
            return 0;
    if (v->len > 16 && memcmp(v->u.s + 16, k->ds[d] + 16, v->len - 16) != 0)
        return 0;
    if (fsc__pv_stable(v))
        k->same_v[d] = v;
    return 1;
}

/* The usual entry of a known action: exactly the default keys, in the
 * first entry's order, each with its default value, and its frames. Its
 * record would say nothing ("{}"), so none is written; the full walk of
 * fsc__imp_keys_entry finds the same for it, only slower. */
static int usual_entry(fsc__keys_t *k, const fsc__entry_t *e)
{
    if (!k->dk_distinct || e->nx != k->nd || e->nx_dropped != 0 || e->frames == NULL)
        return 0;
    for (uint32_t x = 0; x < e->nx; x++)
        if (!key_is(k, x, e->xk[x]) || !default_value(k, x, e->xv[x]))
            return 0;
    return 1;
}

int fsc__imp_keys_quiet(fsc__imp_t *im, const fsc__entry_t *e)
{
    fsc__keys_t *k = im->keys;
    if (k == NULL || k->snap_pending || e->nx_dropped != 0 || e->act == FSC__ACT_OTHER ||
        e->act == FSC__ACT_SNAPSHOT || e->act == FSC__ACT_USER_DEFINED)
        return 0;
    for (uint32_t x = 0; x < e->nx; x++)
        if (!known_key(k, e->xk[x]))
            return 0;
    return !im->opts.keep_records || usual_entry(k, e);
}

int fsc__imp_keys_entry(fsc__imp_t *im, uint64_t i, const fsc__entry_t *e, int *handled)
{
    (void)i;
    *handled = 0;
    int rc = keys_init(im);
    if (rc != 0)
        return rc;
    fsc__keys_t *k = im->keys;
    sbuf_t *b = &k->b;
    if (k->snap_pending && (rc = emit_snapshot(im, e)) != 0)
        return rc;
    /* the actions with an event: those fsc__imp_read_entry names but the
     * markers */
    int known_event = e->act != FSC__ACT_OTHER && e->act != FSC__ACT_SNAPSHOT &&
                      e->act != FSC__ACT_USER_DEFINED;
    int kept = known_event || in_list(e->action, k_kept_actions);
    /* (the keys of an entry of an unknown action are that entry's own) */
    for (uint32_t x = 0; kept && x < e->nx; x++)
        if (!known_key(k, e->xk[x]))
            note(im, "entry", e->xk[x], 0);
    im->st->unknown_keys += e->nx_dropped;
    if (!known_event) {
        if (!kept)
            note(im, "action", e->action, 1);
        /* snapshot and user_defined also become plain markers */
        *handled = !fsc__pv_is_str(e->action, "snapshot") &&
                   !fsc__pv_is_str(e->action, "user_defined");
        if (!im->opts.keep_records)
            return 0;
        b->n = 0;
        put_value(im, b, e->dict);
        return emit(im, "action", b);
    }
    if (!im->opts.keep_records)
        return 0;
    if (usual_entry(k, e))
        return 0;
    b->n = 0;
    int first = 1;
    sb_put(b, "{", 1);
    for (uint32_t x = 0; x < e->nx; x++) {
        uint32_t d = 0;
        while (d < k->nd && !key_is(k, d, e->xk[x]))
            d++;
        if (d < k->nd && e->xv[x] == k->same_v[d])
            continue;
        const fsc__pv_t *xv = e->xv[x];
        if (d < k->nd && k->ds[d] != NULL && xv->kind == FSC__PV_STR && xv->len == k->dsl[d] &&
            memcmp(xv->u.s, k->ds[d], xv->len) == 0)
            continue;
        sbuf_t *v = &k->v;
        v->n = 0;
        put_value(im, v, e->xv[x]);
        if (v->nomem)
            return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
        if (d < k->nd && strcmp(k->dv[d], v->p) == 0) {
            const fsc__pv_t *sv = e->xv[x];
            if (fsc__pv_stable(sv) && (sv->kind == FSC__PV_STR || sv->kind == FSC__PV_INT ||
                                       sv->kind == FSC__PV_NONE || sv->kind == FSC__PV_BOOL))
                k->same_v[d] = sv;
            continue;
        }
        put_key(b, &first, e->xk[x]);
        sb_put(b, v->p, v->n);
    }
    int af = 1;
    for (uint32_t d = 0; d < k->nd; d++) {
        uint32_t x = 0;
        while (x < e->nx && !key_is(k, d, e->xk[x]))
            x++;
        if (x < e->nx)
            continue;
        if (af)
            put_ckey(b, &first, "__absent__"), sb_put(b, "[", 1);
        else
            sb_put(b, ",", 1);
        af = 0;
        sb_str(b, k->dk[d], k->dkl[d]);
    }
    if (e->frames == NULL) {
        if (af)
            put_ckey(b, &first, "__absent__"), sb_put(b, "[", 1);
        else
            sb_put(b, ",", 1);
        af = 0;
        sb_cs(b, "\"frames\"");
    }
    if (!af)
        sb_put(b, "]", 1);
    sb_put(b, "}", 1);
    if (e->nx_dropped > 0 || first == 0)
        rc = emit(im, "entry", b);
    return rc;
}

void fsc__imp_keys_cache_reset(fsc__imp_t *im)
{
    if (im->keys != NULL) {
        memset(im->keys->known_keys, 0, sizeof im->keys->known_keys);
        memset(im->keys->same_v, 0, sizeof im->keys->same_v);
        memset(im->keys->dk_v, 0, sizeof im->keys->dk_v);
    }
}

void fsc__imp_keys_free(fsc__imp_t *im)
{
    fsc__keys_t *k = im->keys;
    if (k == NULL)
        return;
    format_notes(im);
    for (uint32_t i = 0; i < k->nd; i++) {
        free(k->dv[i]);
        free(k->ds[i]);
        free(k->dk[i]);
    }
    free(k->snap);
    free(k->b.p);
    free(k->v.p);
    free(k->f.p);
    fsc__u64map_free(&k->framed);
    free(k);
    im->keys = NULL;
}
