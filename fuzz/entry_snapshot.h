/*
 * entry_snapshot.h — the pickle reader and the PyTorch snapshot importer.
 * Part of the fuzz entry points (fuzz_entry.h).
 */
#ifndef FSC_FUZZ_ENTRY_SNAPSHOT_H
#define FSC_FUZZ_ENTRY_SNAPSHOT_H

#include "fuzz_common.h"

/* ---- pickle reader ----------------------------------------------------- */

/* Visit the tree. Memo references share nodes, so the tree is a DAG whose
 * unfolding can be exponential (a "billion laughs" pickle): the walk stops
 * after *budget visits. */
static inline void fsc__fuzz_walk(const fsc__pv_t *v, int depth, size_t *budget)
{
    if (*budget == 0)
        return;
    (*budget)--;
    FSC_FUZZ_ASSERT(depth <= FSC__PICKLE_MAX_DEPTH + 1);
    switch (v->kind) {
    case FSC__PV_STR:
    case FSC__PV_BYTES:
    case FSC__PV_BIGINT: {
        /* A shared string costs its length each time it is reached. */
        size_t cost = v->len / 16;
        *budget -= cost < *budget ? cost : *budget;
        volatile uint8_t sum = 0;
        for (uint32_t i = 0; i < v->len; i++)
            sum += (uint8_t)v->u.s[i];
        (void)sum;
        break;
    }
    case FSC__PV_LIST:
    case FSC__PV_TUPLE:
        for (uint32_t i = 0; i < v->len && *budget > 0; i++)
            fsc__fuzz_walk(v->u.items[i], depth + 1, budget);
        break;
    case FSC__PV_DICT:
        for (uint32_t i = 0; i < 2 * v->len && *budget > 0; i++)
            fsc__fuzz_walk(v->u.items[i], depth + 1, budget);
        (void)fsc__pv_get(v, "segments");
        break;
    default:
        break;
    }
}

static inline int fsc_fuzz_pickle(const uint8_t *data, size_t len)
{
    fsc__pdoc_t *d = NULL;
    fsc_err_t err;
    if (fsc__pickle_parse(data, len, "fuzz", &d, &err) == 0) {
        const fsc__pv_t *root = fsc__pdoc_root(d);
        FSC_FUZZ_ASSERT(root != NULL);
        /* The arena bound the header promises. */
        FSC_FUZZ_ASSERT(fsc__pdoc_mem(d) <= (size_t)FSC__PICKLE_MEM_FACTOR * len + (1u << 20));
        size_t budget = 16 * len + 1024;
        fsc__fuzz_walk(root, 1, &budget);
    } else {
        FSC_FUZZ_ASSERT(d == NULL && err.code < 0);
    }
    fsc__pdoc_free(d);
    return 0;
}

/* ---- PyTorch snapshot importer (pickle and JSON) ------------------------ */

typedef struct fsc__fuzz_sink {
    uint32_t next_tag;
    uint64_t events;
    int headers;
} fsc__fuzz_sink_t;

static inline int fsc__fuzz_header(void *ud, const fsc_trace_header_t *hdr)
{
    fsc__fuzz_sink_t *s = ud;
    s->headers++;
    if (hdr->config != NULL)
        (void)strlen(hdr->config);
    return 0;
}

static inline int fsc__fuzz_tag(void *ud, uint32_t parent, const char *name, size_t len,
                                uint32_t *node_out)
{
    fsc__fuzz_sink_t *s = ud;
    FSC_FUZZ_ASSERT(parent < s->next_tag + 1);
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < len; i++)
        sum += (uint8_t)name[i];
    (void)sum;
    *node_out = ++s->next_tag;
    return 0;
}

static inline int fsc__fuzz_event(void *ud, const fsc_event_t *ev)
{
    fsc__fuzz_sink_t *s = ud;
    FSC_FUZZ_ASSERT(s->headers == 1);
    FSC_FUZZ_ASSERT(ev->type >= 1 && ev->type < FSC_EV__COUNT);
    s->events++;
    return 0;
}

static inline int fsc_fuzz_pytorch(const uint8_t *data, size_t len)
{
    const char *path = fsc__fuzz_memfile(data, len);
    if (path == NULL)
        return 0;
    for (int lenient = 0; lenient <= 1; lenient++) {
        fsc__fuzz_sink_t s = {0, 0, 0};
        fsc_import_sink_t sink = {&s, fsc__fuzz_header, fsc__fuzz_tag, fsc__fuzz_event};
        fsc_import_opts_t opts = FSC_IMPORT_OPTS_DEFAULT;
        opts.lenient = lenient;
        fsc_import_stats_t st;
        fsc_err_t err;
        int rc = fsc_pytorch_import(path, &opts, &sink, &st, &err);
        if (rc == 0)
            FSC_FUZZ_ASSERT(st.events == s.events);
        else
            FSC_FUZZ_ASSERT(rc < 0 && err.msg[0] != '\0');
    }
    return 0;
}

#endif
