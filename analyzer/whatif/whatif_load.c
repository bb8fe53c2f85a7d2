/*
 * whatif_load.c — building a request stream from a file: a .fstrace through
 * the trace reader, or a PyTorch snapshot through the importer's sink (which
 * synthesizes the same events a recording would hold).
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "fragscope/pytorch.h"
#include "whatif_internal.h"

static int load_trace(const char *path, fsc_request_stream_t *rs, fsc_err_t *err)
{
    fsc_trace_reader_t *r = NULL;
    int rc = fsc_trace_open(path, &r, err);
    if (rc == FSC_EFORMAT && strstr(fsc_err_msg(err), "not a fragscope trace") != NULL)
        return fsc_err_set(err, rc, "%s: neither a fragscope trace nor a PyTorch snapshot", path);
    if (rc != 0)
        return rc;
    rc = fsc_request_stream_set_header(rs, fsc_trace_header(r), err);
    fsc_event_t ev;
    while (rc == 0) {
        int more = fsc_trace_next(r, &ev);
        if (more < 0) {
            rc = fsc_err_set(err, more, "%s", fsc_trace_last_error(r)); /* names the file */
            break;
        }
        if (more == 0)
            break;
        rc = fsc_request_stream_add(rs, &ev, err);
    }
    /* Tag nodes are only needed to name OOM sites, so they are copied once
     * the reader has seen every definition. */
    uint32_t ntags = fsc_trace_tag_count(r);
    for (uint32_t node = 1; rc == 0 && node <= ntags; node++) {
        const char *name;
        size_t len;
        uint32_t parent;
        if (fsc_trace_tag(r, node, &name, &len, &parent) == 0)
            rc = fsc_request_stream_define_tag(rs, node, parent, name, len, err);
    }
    fsc_trace_integrity_t integ;
    if (rc == 0 && fsc_trace_get_integrity(r, &integ) == 0 && !integ.clean_close)
        rs->truncated = 1; /* the rest of the run never reached the disk */
    fsc_trace_close(r);
    return rc;
}

/* The importer asks for (parent, name) -> id interning. */
typedef struct tag_key {
    UT_hash_handle hh;
    uint32_t id;
    size_t klen;
    char key[]; /* parent (4 bytes) + name */
} tag_key_t;

typedef struct import_ctx {
    fsc_request_stream_t *rs;
    tag_key_t *tags;
    uint32_t next_id;
    fsc_err_t *err;
} import_ctx_t;

static int on_header(void *ud, const fsc_trace_header_t *hdr)
{
    import_ctx_t *c = ud;
    return fsc_request_stream_set_header(c->rs, hdr, c->err);
}

static int on_tag(void *ud, uint32_t parent, const char *name, size_t len, uint32_t *node_out)
{
    import_ctx_t *c = ud;
    size_t klen = sizeof parent + len;
    tag_key_t *k = malloc(sizeof *k + klen);
    if (k == NULL)
        return fsc_err_set(c->err, FSC_ENOMEM, "what-if: out of host memory");
    memcpy(k->key, &parent, sizeof parent);
    if (len > 0)
        memcpy(k->key + sizeof parent, name, len);
    k->klen = klen;
    tag_key_t *found = NULL;
    HASH_FIND(hh, c->tags, k->key, klen, found);
    if (found != NULL) {
        free(k);
        *node_out = found->id;
        return 0;
    }
    k->id = ++c->next_id;
    int rc = fsc_request_stream_define_tag(c->rs, k->id, parent, name, len, c->err);
    if (rc != 0) {
        free(k);
        return rc;
    }
    HASH_ADD_KEYPTR(hh, c->tags, k->key, klen, k);
    *node_out = k->id;
    return 0;
}

static int on_event(void *ud, const fsc_event_t *ev)
{
    import_ctx_t *c = ud;
    return fsc_request_stream_add(c->rs, ev, c->err);
}

static int load_snapshot(const char *path, int device, fsc_request_stream_t *rs, fsc_err_t *err)
{
    import_ctx_t c = {rs, NULL, 0, err};
    fsc_import_sink_t sink = {&c, on_header, on_tag, on_event};
    fsc_import_opts_t opts = FSC_IMPORT_OPTS_DEFAULT;
    opts.device = device;
    int rc = fsc_pytorch_import(path, &opts, &sink, NULL, err);
    tag_key_t *k, *tmp;
    HASH_ITER(hh, c.tags, k, tmp) {
        HASH_DEL(c.tags, k);
        free(k);
    }
    return rc;
}

int fsc_request_stream_load(const char *path, fsc_request_stream_t **out, fsc_err_t *err)
{
    return fsc_request_stream_load_device(path, -1, out, err);
}

int fsc_request_stream_load_device(const char *path, int device, fsc_request_stream_t **out,
                                   fsc_err_t *err)
{
    if (path == NULL || out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no path");
    *out = NULL;
    int kind = fsc_pytorch_detect(path);
    if (kind < 0)
        return fsc_err_set(err, kind, "%s: cannot read the file", path);
    fsc_request_stream_t *rs;
    int rc = fsc_request_stream_create(&rs, err);
    if (rc != 0)
        return rc;
    rc = kind > 0 ? load_snapshot(path, device, rs, err) : load_trace(path, rs, err);
    if (rc != 0) {
        fsc_request_stream_destroy(rs);
        return rc;
    }
    *out = rs;
    return 0;
}
