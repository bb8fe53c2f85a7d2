/*
 * pytorch_stream.c — the import of a pickled or JSON snapshot without its
 * whole tree, in bounded memory whatever the length of the history.
 *
 * The history cannot be replayed in one pass: the allocator settings and
 * the annotations follow it in the file, and the state before the first
 * entry depends on what the whole history does (addresses freed before
 * they are allocated). So the file, mapped, is read three times, each pass
 * keeping only what the next needs:
 *
 *   scan     the opcodes only: which memo entries are read again
 *            (fsc__pickle_scan), so the parses keep those and no others;
 *   pass 1   the snapshot's tree without its history (segments, settings,
 *            annotations, each device's entry count), and for the first
 *            device with history what the starting state needs (per
 *            address: freed before allocated; segment entries in order);
 *   pass 2   only when another device is imported: pass 1's bookkeeping
 *            for that device;
 *   pass 3   the history replayed entry by entry through the block model.
 *
 * An entry's values live until its batch of entries has been handed over;
 * frame lists and frame dicts shared between entries are kept (they are
 * the memo entries read again), so tags are still built once per distinct
 * frame. Errors in the entries found by pass 1 are reported after the
 * snapshot's other parts are checked, in the order the tree reader checks
 * them. Pages of the file already read are handed back to the kernel as
 * the passes go (fsc__snap_done_before).
 *
 * A JSON snapshot takes the same passes through fsc__json_stream; it has
 * no memo, so no scan. Python keeps the last of duplicate keys: when a
 * later top-level 'device_traces' follows the one pass 1 streamed, pass 1
 * is run again on that one (only crafted files do this).
 */
#include "pytorch_import.h"
#include "pickle_scan.h"
#include "pytorch_json_stream.h"

#include <stdlib.h>
#include <string.h>

typedef struct stream_ctx {
    fsc__imp_t *im;
    fsc__snap_t *snap;
    fsc__pscan_t *scan;
    uint64_t t0_us;
    int has_t0;
    int pass;          /* 1..3 */
    uint64_t total;    /* bytes of all passes, for progress */
    size_t traces_at;  /* JSON: the 'device_traces' streamed (0: the first) */
    size_t redo_at;    /* JSON: a later one that wins, after pass 1 */
    int no_skip;       /* the frames are built in every pass (see parse_start) */
    fsc__rq_t *rq;     /* pass 3: the block model's thread (NULL: none) */
} stream_ctx_t;

static void on_progress(void *ud, size_t done, size_t total)
{
    stream_ctx_t *c = ud;
    fsc__snap_done_before(c->snap, done);
    fsc__imp_t *im = c->im;
    if (im->opts.progress_bytes != NULL) {
        /* scan and pass 1 as the first third, pass 2 (if any) the second */
        uint64_t base = (uint64_t)(c->pass == 3 ? 2 : c->pass - 1) * total;
        im->opts.progress_bytes(im->opts.progress_ud, base + done, c->total);
    }
}

/* Passes 1 and 2: what the starting state needs, for pass_dev. */
static int on_entry_start(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v)
{
    stream_ctx_t *c = ud;
    fsc__imp_t *im = c->im;
    if (im->pass_dev < 0)
        im->pass_dev = (int)dev;
    if ((int)dev != im->pass_dev || im->entry_rc != 0 || idx < im->opts.skip_entries)
        return 0;
    idx -= im->opts.skip_entries; /* a window of the history (skip_entries) */
    int device = im->device;
    im->device = (int)dev; /* for messages */
    fsc__entry_t e;
    int rc = fsc__imp_read_entry(im, v, idx, &e);
    if (rc == 0 && idx == 0) {
        c->t0_us = im->pass_t0_us = e.time_us;
        c->has_t0 = im->pass_has_t0 = 1;
    }
    if (rc == 0)
        rc = fsc__imp_start_entry(im, idx, &e);
    im->device = device;
    if (rc == FSC_ENOMEM)
        return rc;
    if (rc != 0) {
        im->entry_rc = rc;
        im->entry_err = *im->err;
        fsc_err_clear(im->err);
    }
    return 0;
}

/* Pass 3: the replay of the imported device's history. */
static int on_entry_replay(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v)
{
    stream_ctx_t *c = ud;
    fsc__imp_t *im = c->im;
    if ((int)dev != im->device || idx < im->opts.skip_entries)
        return 0;
    idx -= im->opts.skip_entries;
    fsc__entry_t e;
    int rc = fsc__imp_read_entry(im, v, idx, &e);
    if (rc != 0)
        return rc;
    return c->rq != NULL ? fsc__imp_replay_async(im, c->rq, idx, &e)
                         : fsc__imp_replay_one(im, idx, &e);
}

/* A frame list read for the last time: its tag is not looked up again. */
static void on_dropped(void *ud, const fsc__pv_t *v)
{
    stream_ctx_t *c = ud;
    fsc__imp_t *im = c->im;
    fsc__tag_cache_t *t = NULL;
    HASH_FIND_PTR(im->tags, &v, t);
    if (t != NULL) {
        HASH_DEL(im->tags, t);
        free(t);
    }
    size_t h = ((uintptr_t)v >> 4) & (FSC__IMP_FCACHE - 1);
    if (im->fcache[h].frames == v)
        im->fcache[h].frames = NULL;
}

static int parse(stream_ctx_t *c, int pass, fsc__pdoc_t **doc)
{
    fsc__imp_t *im = c->im;
    c->pass = pass;
    /* Passes 1 and 2 need no stack: they step over the frames. */
    fsc__pstream_t cb = {c, pass == 3 ? on_entry_replay : on_entry_start, on_progress,
                         on_dropped, pass != 3 && !c->no_skip, 0, 0, NULL};
    c->snap->dropped = 0;
    fsc__imp_cache_reset(im);
    int rc = c->snap->format == FSC_SNAP_JSON
                 ? fsc__json_stream(c->snap->data, c->snap->len, im->path, c->traces_at, &cb,
                                    doc, &c->redo_at, im->rerr)
                 : fsc__pickle_stream(c->snap->data, c->snap->len, im->path, c->scan, &cb, doc,
                                      im->rerr);
    fsc__snap_done_before(c->snap, c->snap->len + ((size_t)8 << 20));
    return rc;
}

static void forget_start_state(fsc__imp_t *im);

/* Passes 1 and 2: a file that reads a value defined inside the frames
 * elsewhere is read again with the frames built (and every later pass). */
static int parse_start(stream_ctx_t *c, int pass, fsc__pdoc_t **doc)
{
    int rc = parse(c, pass, doc);
    if (rc != FSC__PICKLE_ESKIPPED)
        return rc;
    fsc__imp_t *im = c->im;
    forget_start_state(im);
    im->pass_dev = pass == 1 ? -1 : im->device;
    im->pass_has_t0 = 0;
    c->has_t0 = 0;
    c->no_skip = 1;
    return parse(c, pass, doc);
}

static void forget_start_state(fsc__imp_t *im)
{
    fsc__u64map_free(&im->addrs);
    im->addr0 = 0;
    im->n_segev = 0;
    im->n_firsts = im->n_dones = 0;
    im->entry_rc = 0;
    fsc_err_clear(&im->entry_err);
}

static int pass2(fsc__imp_t *im)
{
    stream_ctx_t *c = im->stream;
    forget_start_state(im);
    im->pass_dev = im->device;
    c->has_t0 = 0;
    fsc__pdoc_t *doc = NULL;
    int rc = parse_start(c, 2, &doc);
    fsc__pdoc_free(doc);
    return rc;
}

/* Pass 3, with the block model on a thread of its own when there are
 * CPUs for it (pytorch_replay_thread.c). The parse's messages go to a
 * buffer of its own meanwhile: a failure of the replay concerns an earlier
 * entry than any the parse meets after it, so it is the one reported. */
static int replay_pass(stream_ctx_t *c, fsc__pdoc_t **doc)
{
    fsc__imp_t *im = c->im;
    if (fsc__pickle_scan_threads() < 2 || fsc__rq_start(im, &c->rq) != 0)
        return parse(c, 3, doc);
    fsc_err_t perr;
    fsc_err_clear(&perr);
    im->rerr = &perr;
    int rc = parse(c, 3, doc);
    int qrc = fsc__rq_finish(c->rq);
    c->rq = NULL;
    im->rerr = im->err;
    if (qrc != 0)
        return qrc; /* its message is in im->err */
    if (rc != 0 && perr.code != 0)
        fsc_err_copy(im->err, &perr);
    return rc;
}

int fsc__imp_stream(fsc__imp_t *im, fsc__snap_t *snap)
{
    stream_ctx_t c;
    memset(&c, 0, sizeof c);
    c.im = im;
    c.snap = snap;
    c.total = 3 * (uint64_t)snap->len;
    fsc__pstream_t scb = {&c, NULL, on_progress, NULL, 0, 0, 0, NULL};
    c.pass = 1;
    if (snap->format != FSC_SNAP_JSON) {
        if (fsc__pickle_scan(snap->data, snap->len, &scb, &c.scan) != 0)
            return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
        fsc__snap_done_before(snap, snap->len + ((size_t)8 << 20));
    }
    im->stream = &c;
    im->history_pass = pass2;
    im->pass_dev = -1;
    fsc__pdoc_t *doc = NULL, *doc3 = NULL;
    int rc = parse_start(&c, 1, &doc);
    if (rc == 0 && c.redo_at != 0) {
        fsc__pdoc_free(doc);
        doc = NULL;
        forget_start_state(im);
        im->pass_dev = -1;
        c.has_t0 = 0;
        c.traces_at = c.redo_at;
        rc = parse_start(&c, 1, &doc);
    }
    if (rc == 0)
        rc = fsc__imp_begin(im, fsc__pdoc_root(doc), c.t0_us, c.has_t0);
    if (rc == 0 && im->ents != NULL) {
        /* The history was not streamed (a layout the stream reader does
         * not recognise as device_traces): it is in the tree. */
        fsc__entry_t e;
        for (uint64_t i = 0; rc == 0 && i < im->n_ents; i++) {
            rc = fsc__imp_read_entry(im, im->ents[i], i, &e);
            if (rc == 0)
                rc = fsc__imp_replay_one(im, i, &e);
        }
    } else if (rc == 0 && im->n_ents > 0) {
        rc = replay_pass(&c, &doc3);
    }
    if (rc == 0)
        rc = fsc__imp_end(im);
    fsc__pdoc_free(doc3);
    fsc__pdoc_free(doc);
    fsc__pscan_free(c.scan);
    im->stream = NULL;
    return rc;
}
