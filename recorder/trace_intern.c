/*
 * trace_intern.c — the trace's string and tag-node tables. Trace ids are
 * dense (1, 2, ... in order of definition) and a definition record goes
 * into the chunk being filled the moment an id is handed out, so that it
 * always precedes the first event using it. Nodes of the process-wide tag
 * tree (fsc_tag_push) are mapped to trace ids on first use; importers
 * create trace nodes directly (fsc_recorder_tag_node). All under r->lock.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "tags.h"
#include "trace_writer.h"
#include "fsc/vec.h"

struct fsc__strent {
    UT_hash_handle hh;
    uint32_t id;
    uint32_t len;
    char s[];
};

struct fsc__nodeent {
    UT_hash_handle hh;
    uint64_t key; /* parent << 32 | string id */
    uint32_t id;
};

static uint32_t intern_string(fsc_recorder_t *r, const char *s, size_t len, int *queued)
{
    struct fsc__strent *e = NULL;
    HASH_FIND(hh, r->str_index, s, len, e);
    if (e != NULL)
        return e->id;
    if (fsc__chunk_ensure(r, 1 + 10 + len, queued) != 0)
        return 0;
    e = malloc(sizeof *e + len + 1);
    if (e == NULL) {
        fsc__recorder_record_error(r, FSC_ENOMEM, "%s: out of memory", r->path);
        return 0;
    }
    memcpy(e->s, s, len);
    e->s[len] = '\0';
    e->len = (uint32_t)len;
    e->id = ++r->n_strings;
    HASH_ADD_KEYPTR(hh, r->str_index, e->s, len, e);
    fsc__chunk_t *c = r->cur;
    c->len = (size_t)(fsc__encode_string(c->data + c->len, s, len) - c->data);
    return e->id;
}

static uint32_t intern_node(fsc_recorder_t *r, uint32_t parent, const char *name, size_t len,
                            int *queued)
{
    if (len > FSC_TAG_NAME_MAX)
        len = FSC_TAG_NAME_MAX;
    uint32_t sid = intern_string(r, name, len, queued);
    if (sid == 0)
        return 0;
    uint64_t key = (uint64_t)parent << 32 | sid;
    struct fsc__nodeent *e = NULL;
    HASH_FIND(hh, r->node_index, &key, sizeof key, e);
    if (e != NULL)
        return e->id;
    if (FSC__VEC_RESERVE(r->nodes, r->nodes_cap, (size_t)r->n_nodes + 2) != 0)
        goto oom;
    if (fsc__chunk_ensure(r, 1 + 20, queued) != 0)
        return 0;
    e = malloc(sizeof *e);
    if (e == NULL)
        goto oom;
    e->key = key;
    e->id = r->n_nodes + 1;
    __atomic_store_n(&r->n_nodes, e->id, __ATOMIC_RELAXED);
    r->nodes[e->id].parent = parent;
    r->nodes[e->id].sid = sid;
    HASH_ADD(hh, r->node_index, key, sizeof key, e);
    fsc__chunk_t *c = r->cur;
    c->len = (size_t)(fsc__encode_tag(c->data + c->len, parent, sid) - c->data);
    return e->id;
oom:
    fsc__recorder_record_error(r, FSC_ENOMEM, "%s: out of memory", r->path);
    return 0;
}

uint32_t fsc__map_global(fsc_recorder_t *r, uint32_t g, int *queued)
{
    if (g == 0)
        return 0;
    if (g < r->gmap_cap && r->gmap[g] != 0)
        return r->gmap[g];
    uint32_t gparent;
    const char *name;
    size_t len;
    if (fsc__tag_get(g, &gparent, &name, &len) != 0)
        return 0;
    /* Recursion depth is bounded by the tag stack depth. */
    uint32_t parent = fsc__map_global(r, gparent, queued);
    uint32_t id = intern_node(r, parent, name, len, queued);
    if (id == 0)
        return 0;
    if (g >= r->gmap_cap) {
        uint32_t nc = r->gmap_cap ? r->gmap_cap : 256;
        while (nc <= g)
            nc *= 2;
        uint32_t *nm = realloc(r->gmap, (size_t)nc * sizeof *nm);
        if (nm == NULL)
            return id;
        memset(nm + r->gmap_cap, 0, (size_t)(nc - r->gmap_cap) * sizeof *nm);
        r->gmap = nm;
        r->gmap_cap = nc;
    }
    r->gmap[g] = id;
    return id;
}

int fsc_recorder_tag_node(fsc_recorder_t *r, uint32_t parent, const char *name, size_t len,
                          uint32_t *out)
{
    if (r == NULL || out == NULL || (name == NULL && len > 0))
        return FSC_EINVAL;
    int queued = 0;
    fsc__spin_lock(&r->lock);
    if (parent > r->n_nodes) {
        fsc__spin_unlock(&r->lock);
        return fsc__recorder_record_error(r, FSC_EINVAL, "%s: tag node %u was never defined",
                                          r->path, parent);
    }
    uint32_t id = intern_node(r, parent, name ? name : "", len, &queued);
    fsc__spin_unlock(&r->lock);
    if (queued && !r->has_thread)
        fsc__drain(r);
    if (id == 0)
        return fsc__recorder_first_error(r) ? fsc__recorder_first_error(r) : FSC_ENOMEM;
    *out = id;
    return 0;
}

void fsc__intern_free(fsc_recorder_t *r)
{
    struct fsc__strent *s, *st;
    HASH_ITER(hh, r->str_index, s, st) {
        HASH_DEL(r->str_index, s);
        free(s);
    }
    struct fsc__nodeent *n, *nt;
    HASH_ITER(hh, r->node_index, n, nt) {
        HASH_DEL(r->node_index, n);
        free(n);
    }
    free(r->nodes);
    free(r->gmap);
    r->nodes = NULL;
    r->gmap = NULL;
}
