/*
 * whatif_load.c — building a request stream from a file, a .fstrace or a
 * PyTorch snapshot, through the one way in from a file (fragscope/source.h).
 */
#include <stdlib.h>
#include <string.h>

#include "fragscope/pytorch.h"
#include "whatif_internal.h"

static int on_header(void *ud, const fsc_trace_header_t *hdr, fsc_err_t *err)
{
    return fsc_request_stream_set_header(ud, hdr, err);
}

static int on_tag(void *ud, uint32_t node, uint32_t parent, const char *name, size_t len,
                  fsc_err_t *err)
{
    return fsc_request_stream_define_tag(ud, node, parent, name, len, err);
}

static int on_event(void *ud, const fsc_event_t *ev, fsc_err_t *err)
{
    /* an imported snapshot's records (fragscope/pytorch.h) are not markers
     * of the program */
    static const char pre[] = FSC_PYTORCH_META_PREFIX;
    if (ev->type == FSC_EV_MARKER && ev->text != NULL && ev->text_len > sizeof pre - 1 &&
        memcmp(ev->text, pre, sizeof pre - 1) == 0)
        return fsc__wseed_record(ud, ev->text, ev->text_len) != 0
                   ? fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory")
                   : 0;
    return fsc_request_stream_add(ud, ev, err);
}

int fsc_request_stream_load(const char *path, fsc_request_stream_t **out, fsc_err_t *err)
{
    return fsc_request_stream_load_device(path, -1, out, err);
}

int fsc_request_stream_load_device(const char *path, int device, fsc_request_stream_t **out,
                                   fsc_err_t *err)
{
    return fsc_request_stream_load_opts(path, device, 0, out, err);
}

int fsc_request_stream_load_opts(const char *path, int device, int lenient,
                                 fsc_request_stream_t **out, fsc_err_t *err)
{
    fsc_source_opts_t so;
    memset(&so, 0, sizeof so);
    so.pick_device = device >= 0;
    so.device = device;
    so.lenient = lenient;
    return fsc_request_stream_load_source(path, &so, out, err);
}

/* One pass: the file into a stream, its guessed block sizes refined. */
static int load_once(const char *path, int kind, const fsc_source_opts_t *so,
                     fsc_request_stream_t **out, fsc_err_t *err)
{
    fsc_source_t *src = NULL;
    int rc = fsc_source_open(path, so, &src, err);
    if (rc != 0)
        return rc;
    fsc_request_stream_t *rs;
    rc = fsc_request_stream_create(&rs, err);
    if (rc == 0) {
        /* A snapshot names the pools of its final segments only. */
        rs->infer_pools = kind == FSC_SOURCE_SNAPSHOT;
        fsc_source_sink_t sink = {rs, on_header, on_tag, on_event};
        rc = fsc_source_run(src, &sink, err);
        if (rc == 0)
            rc = fsc__wstream_end_seed(rs, err);
        if (rc == 0 && fsc__wpools_finish(rs) != 0)
            rc = fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
        if (rc == 0)
            rc = fsc__wseed_refine(rs, err);
    }
    fsc_source_info_t info;
    fsc_source_info(src, &info);
    fsc_source_close(src);
    if (rc != 0) {
        fsc_request_stream_destroy(rs);
        return rc;
    }
    if (info.have_integrity && !info.integrity.clean_close)
        rs->truncated = 1; /* the rest of the run never reached the disk */
    if (info.have_integrity)
        rs->rec_skipped = info.integrity.skipped;
    rs->settled_before = so->nsizes;
    if (so->nsizes > 0) {
        rs->sizes_before = malloc(so->nsizes * sizeof *rs->sizes_before);
        if (rs->sizes_before == NULL) {
            fsc_request_stream_destroy(rs);
            return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
        }
        memcpy(rs->sizes_before, so->sizes, so->nsizes * sizeof *rs->sizes_before);
    }
    *out = rs;
    return 0;
}

int fsc_request_stream_settled(const fsc_request_stream_t *rs, fsc_import_size_t **out,
                               size_t *n)
{
    if (rs == NULL || out == NULL || n == NULL)
        return FSC_EINVAL;
    size_t total = rs->settled_before + rs->settled;
    *out = NULL;
    *n = 0;
    if (total == 0)
        return 0;
    fsc_import_size_t *v = malloc(total * sizeof *v);
    if (v == NULL)
        return FSC_ENOMEM;
    if (rs->settled_before > 0)
        memcpy(v, rs->sizes_before, rs->settled_before * sizeof *v);
    *n = rs->settled_before + fsc__wseed_settled_sizes(rs, v + rs->settled_before);
    *out = v;
    return 0;
}

int fsc_request_stream_load_source(const char *path, const fsc_source_opts_t *opts,
                                   fsc_request_stream_t **out, fsc_err_t *err)
{
    if (path == NULL || out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no path");
    *out = NULL;
    /* a directory, a missing or unreadable file: bad input, said as such */
    int irc = fsc_infile_check(path, err);
    if (irc != 0)
        return irc;
    int kind = fsc_source_detect(path);
    if (kind < 0)
        return fsc_err_set(err, kind, "%s: cannot read the file", path);
    if (kind == FSC_SOURCE_UNKNOWN)
        return fsc_err_set(err, FSC_EFORMAT, "%s: neither a fragscope trace nor a PyTorch snapshot",
                           path);
    fsc_source_opts_t so;
    memset(&so, 0, sizeof so);
    if (opts != NULL)
        so = *opts;
    so.keep_records = 1; /* for the rebuild record (whatif_seed.c); the rest are dropped */
    /* A snapshot whose guessed block sizes the replay settled is imported
     * again with them, so that every recorded figure (the window's
     * allocated bytes and their peak) rests on the settled sizes; a few
     * rounds at most, each settling more. */
    fsc_import_size_t *sizes = NULL;
    size_t nsizes = so.nsizes;
    if (nsizes > 0) {
        sizes = malloc(nsizes * sizeof *sizes);
        if (sizes == NULL)
            return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
        memcpy(sizes, so.sizes, nsizes * sizeof *sizes);
    }
    fsc_request_stream_t *rs = NULL;
    int rc = 0;
    for (int round = 0; round < 4; round++) {
        so.sizes = sizes;
        so.nsizes = nsizes;
        rc = load_once(path, kind, &so, &rs, err);
        if (rc != 0 || kind != FSC_SOURCE_SNAPSHOT || rs->settled == 0 || round == 3)
            break;
        fsc_import_size_t *more = realloc(sizes, (nsizes + rs->settled) * sizeof *sizes);
        if (more == NULL) {
            rc = fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
            break;
        }
        sizes = more;
        nsizes += fsc__wseed_settled_sizes(rs, sizes + nsizes);
        fsc_request_stream_destroy(rs);
        rs = NULL;
    }
    free(sizes);
    if (rc != 0) {
        fsc_request_stream_destroy(rs);
        return rc;
    }
    *out = rs;
    return 0;
}
