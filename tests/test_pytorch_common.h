/*
 * test_pytorch_common.h — an import sink for the PyTorch snapshot suites
 * that keeps every event with its tag path, interns tags like a real
 * consumer, and tracks allocated/reserved bytes independently of the
 * importer's own statistics.
 */
#ifndef FSC_TEST_PYTORCH_COMMON_H
#define FSC_TEST_PYTORCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"

typedef struct tp_rec {
    fsc_event_t ev; /* ev.tag is a node of the collector's own tag table */
    char text[64];
    uint64_t tags_before; /* tag calls before it: where tags come among events */
} tp_rec_t;

typedef struct tp_tag {
    UT_hash_handle hh;
    uint32_t id, parent;
    char *key; /* "parent\x01name" */
    char *name;
} tp_tag_t;

typedef struct tp_col {
    int headers;
    char producer[64], config[256], backend[32];
    uint32_t flags;
    uint64_t capacity, clock_origin_ns;
    tp_rec_t *r;
    size_t n, cap;
    tp_tag_t *tags;     /* by key */
    tp_tag_t **by_id;   /* index id-1 */
    uint32_t ntags, cap_tags;
    uint64_t tag_calls;
    int64_t alloc, peak_alloc, res, peak_res;
    uint64_t records; /* pytorch.* records left out by tp_read_trace */
} tp_col_t;

static inline void tp_path(const tp_col_t *c, uint32_t id, char *buf, size_t cap)
{
    const char *parts[256];
    int n = 0;
    while (id != 0 && id <= c->ntags && n < 256) {
        parts[n++] = c->by_id[id - 1]->name;
        id = c->by_id[id - 1]->parent;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int i = n - 1; i >= 0; i--) {
        int w = snprintf(buf + len, cap - len, "%s%s", i == n - 1 ? "" : "/", parts[i]);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
}

static inline void tp_account(tp_col_t *c, const fsc_event_t *ev)
{
    switch (ev->type) {
    case FSC_EV_ALLOC: c->alloc += (int64_t)ev->size; break;
    case FSC_EV_FREE_REQUESTED: c->alloc -= (int64_t)ev->size; break;
    case FSC_EV_SEGMENT_ALLOC:
    case FSC_EV_SEGMENT_MAP: c->res += (int64_t)ev->size; break;
    case FSC_EV_SEGMENT_FREE:
    case FSC_EV_SEGMENT_UNMAP: c->res -= (int64_t)ev->size; break;
    default: break;
    }
    if (c->alloc > c->peak_alloc)
        c->peak_alloc = c->alloc;
    if (c->res > c->peak_res)
        c->peak_res = c->res;
}

/* Store an event whose tag is a node of c's table. */
static inline void tp_store(tp_col_t *c, const fsc_event_t *ev)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->r = realloc(c->r, c->cap * sizeof *c->r);
    }
    tp_rec_t *r = &c->r[c->n++];
    memset(r, 0, sizeof *r);
    r->ev = *ev;
    r->ev.text = NULL;
    r->tags_before = c->tag_calls;
    if (ev->type == FSC_EV_MARKER && ev->text != NULL) {
        size_t l = ev->text_len < sizeof r->text - 1 ? ev->text_len : sizeof r->text - 1;
        memcpy(r->text, ev->text, l);
    }
    tp_account(c, ev);
}

static inline int tp_on_header(void *ud, const fsc_trace_header_t *h)
{
    tp_col_t *c = ud;
    c->headers++;
    snprintf(c->producer, sizeof c->producer, "%s", h->producer ? h->producer : "");
    snprintf(c->config, sizeof c->config, "%s", h->config ? h->config : "");
    snprintf(c->backend, sizeof c->backend, "%s", h->backend ? h->backend : "");
    c->flags = h->flags;
    c->capacity = h->capacity;
    c->clock_origin_ns = h->clock_origin_ns;
    return 0;
}

static inline int tp_on_tag(void *ud, uint32_t parent, const char *name, size_t len,
                            uint32_t *out)
{
    tp_col_t *c = ud;
    c->tag_calls++;
    size_t klen = len + 12;
    char *key = malloc(klen);
    int kl = snprintf(key, klen, "%u\x01", parent);
    memcpy(key + kl, name, len);
    klen = (size_t)kl + len;
    tp_tag_t *t = NULL;
    HASH_FIND(hh, c->tags, key, klen, t);
    if (t != NULL) {
        free(key);
        *out = t->id;
        return 0;
    }
    t = calloc(1, sizeof *t);
    t->key = key;
    t->parent = parent;
    t->name = calloc(1, len + 1);
    memcpy(t->name, name, len);
    t->id = ++c->ntags;
    if (c->ntags > c->cap_tags) {
        c->cap_tags = c->cap_tags ? c->cap_tags * 2 : 64;
        c->by_id = realloc(c->by_id, c->cap_tags * sizeof *c->by_id);
    }
    c->by_id[t->id - 1] = t;
    HASH_ADD_KEYPTR(hh, c->tags, t->key, klen, t);
    *out = t->id;
    return 0;
}

static inline int tp_on_event(void *ud, const fsc_event_t *ev)
{
    tp_store(ud, ev);
    return 0;
}

/* Tag path of event i, root first, '/'-joined (a static buffer). */
static inline const char *tp_path_of(const tp_col_t *c, size_t i)
{
    static char buf[8192];
    tp_path(c, c->r[i].ev.tag, buf, sizeof buf);
    return buf;
}

static inline fsc_import_sink_t tp_sink(tp_col_t *c)
{
    fsc_import_sink_t s = {c, tp_on_header, tp_on_tag, tp_on_event};
    return s;
}

static inline void tp_free(tp_col_t *c)
{
    tp_tag_t *t, *tmp;
    HASH_ITER(hh, c->tags, t, tmp) {
        HASH_DEL(c->tags, t);
        free(t->key);
        free(t->name);
        free(t);
    }
    free(c->by_id);
    free(c->r);
    memset(c, 0, sizeof *c);
}

/* Import path into c; returns the import's code. */
static inline int tp_import(const char *path, int device, int lenient, tp_col_t *c,
                            fsc_import_stats_t *st, fsc_err_t *err)
{
    memset(c, 0, sizeof *c);
    fsc_import_opts_t o = FSC_IMPORT_OPTS_DEFAULT;
    o.pick_device = device >= 0; /* -1: the only device with history */
    o.device = device >= 0 ? device : 0;
    o.lenient = lenient;
    fsc_import_sink_t s = tp_sink(c);
    return fsc_pytorch_import(path, &o, &s, st, err);
}

/* The collector's node for a node of the reader's tag tree. */
static inline uint32_t tp_map_node(tp_col_t *c, fsc_trace_reader_t *r, uint32_t node,
                                   uint32_t **map, uint32_t *cap)
{
    if (node == 0)
        return 0;
    if (node >= *cap) {
        uint32_t n = *cap ? *cap : 256;
        while (n <= node)
            n *= 2;
        *map = realloc(*map, n * sizeof **map);
        memset(*map + *cap, 0, (n - *cap) * sizeof **map);
        *cap = n;
    }
    if ((*map)[node] != 0)
        return (*map)[node];
    const char *name = NULL;
    size_t len = 0;
    uint32_t parent = 0, id = 0;
    if (fsc_trace_tag(r, node, &name, &len, &parent) != 0)
        return 0;
    uint32_t p = tp_map_node(c, r, parent, map, cap);
    tp_on_tag(c, p, name, len, &id);
    (*map)[node] = id;
    return id;
}

/* 1 for the "pytorch.*" records an import keeps besides the events. */
static inline int tp_is_record(const fsc_event_t *ev)
{
    return ev->type == FSC_EV_MARKER && ev->text_len > 8 &&
           memcmp(ev->text, FSC_PYTORCH_META_PREFIX, 8) == 0;
}

/* Read a trace file into c (its tags re-interned in c's table), leaving out
 * pytorch.* records (they are not events; c->records counts them). */
static inline int tp_read_trace(const char *path, tp_col_t *c)
{
    memset(c, 0, sizeof *c);
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    int rc = fsc_trace_open(path, &r, &err);
    if (rc != 0)
        return rc;
    tp_on_header(c, fsc_trace_header(r));
    uint32_t *map = NULL, cap = 0;
    fsc_event_t ev;
    while ((rc = fsc_trace_next(r, &ev)) == 1) {
        if (tp_is_record(&ev)) {
            c->records++;
            continue;
        }
        ev.tag = tp_map_node(c, r, ev.tag, &map, &cap);
        tp_store(c, &ev);
    }
    free(map);
    fsc_trace_close(r);
    return rc < 0 ? rc : 0;
}

/* Index of the first differing event (skipping MARKERs, ignoring times when
 * asked), or -1 when both streams are the same; *why names the field. */
static inline long tp_diff(const tp_col_t *a, const tp_col_t *b, int skip_markers,
                           int ignore_time, const char **why)
{
    size_t i = 0, j = 0;
    *why = "";
    for (;;) {
        while (skip_markers && i < a->n && a->r[i].ev.type == FSC_EV_MARKER)
            i++;
        while (skip_markers && j < b->n && b->r[j].ev.type == FSC_EV_MARKER)
            j++;
        if (i == a->n || j == b->n) {
            if (i == a->n && j == b->n)
                return -1;
            *why = "length";
            return (long)i;
        }
        const fsc_event_t *x = &a->r[i].ev, *y = &b->r[j].ev;
#define TP_FIELD(f)          \
    if (x->f != y->f) {      \
        *why = #f;           \
        return (long)i;      \
    }
        if (!ignore_time && x->time_ns != y->time_ns) {
            *why = "time_ns";
            return (long)i;
        }
        TP_FIELD(type) TP_FIELD(pool) TP_FIELD(addr) TP_FIELD(size)
        TP_FIELD(requested) TP_FIELD(stream) TP_FIELD(segment) TP_FIELD(other)
        TP_FIELD(oom.allocated) TP_FIELD(oom.reserved) TP_FIELD(oom.device_free)
        TP_FIELD(oom.segment_size)
#undef TP_FIELD
        char pa[8192], pb[8192];
        tp_path(a, x->tag, pa, sizeof pa);
        tp_path(b, y->tag, pb, sizeof pb);
        if (strcmp(pa, pb) != 0) {
            *why = "tag path";
            return (long)i;
        }
        if (strcmp(a->r[i].text, b->r[j].text) != 0) {
            *why = "text";
            return (long)i;
        }
        i++;
        j++;
    }
}

#endif
