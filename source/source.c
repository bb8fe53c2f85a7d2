/*
 * source.c — one way in from a file (fragscope/source.h): detection, and a
 * trace or a snapshot read as header, tag definitions and events.
 *
 * The two readers differ in shape: the trace reader is pulled one event at
 * a time and knows its tag tree by trace ids, the snapshot importer pushes
 * events and asks for (parent, name) pairs to be interned. Both are turned
 * into the same pushed sequence here, so every consumer (analysis, what-if,
 * the commands) sees one kind of input.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "fragscope/source.h"
#include "fsc/vec.h"
#include "source_pipe.h"

#define PROGRESS_EVERY 0xffff

/* (parent, name) → node id, for snapshots. */
typedef struct tag_entry {
    UT_hash_handle hh;
    uint32_t id;
    size_t klen;
    char key[]; /* parent (4 bytes) + name */
} tag_entry_t;

struct fsc_source {
    char *path;
    int kind;
    fsc_source_opts_t opts;
    fsc_trace_reader_t *r;      /* traces */
    uint8_t *defined;           /* traces: node carried over already */
    size_t ndefined;
    uint32_t *chain;            /* traces: ancestors still to carry over */
    size_t chain_cap;
    tag_entry_t *tags;          /* snapshots */
    uint32_t next_tag;
    const fsc_source_sink_t *sink;
    fsc_err_t *err;             /* the run's */
    int sink_failed, have_header, ran;
    fsc_source_info_t info;
    fsc__pipe_t *pipe; /* snapshots: the sink's thread (source_pipe.c) */
};

int fsc_source_detect(const char *path)
{
    int kind = fsc_pytorch_detect(path);
    if (kind < 0)
        return kind;
    if (kind > 0)
        return FSC_SOURCE_SNAPSHOT;
    int t = fsc_trace_detect(path);
    if (t < 0)
        return t;
    return t ? FSC_SOURCE_TRACE : FSC_SOURCE_UNKNOWN;
}

int fsc_source_open(const char *path, const fsc_source_opts_t *opts, fsc_source_t **out,
                    fsc_err_t *err)
{
    if (path == NULL || out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "no input path");
    *out = NULL;
    /* a directory, a missing or unreadable file: bad input, said as such */
    int irc = fsc_infile_check(path, err);
    if (irc != 0)
        return irc;
    int kind = fsc_source_detect(path);
    if (kind < 0) {
        fsc_err_set(err, kind, "%s: %s", path,
                    kind == FSC_ENOENT ? "no such file" : "cannot read the file");
        return fsc_err_name_file(err, path);
    }
    fsc_source_t *s = calloc(1, sizeof *s);
    if (s == NULL || (s->path = strdup(path)) == NULL) {
        free(s);
        fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", path);
        return fsc_err_name_file(err, path);
    }
    if (opts != NULL)
        s->opts = *opts;
    s->kind = kind == FSC_SOURCE_SNAPSHOT ? FSC_SOURCE_SNAPSHOT : FSC_SOURCE_TRACE;
    s->info.kind = s->kind;
    if (s->kind == FSC_SOURCE_TRACE) {
        /* a file of neither kind is opened as a trace: the reader says why
         * it is not one */
        int rc = fsc_trace_open(path, &s->r, err);
        if (rc != 0) {
            fsc_source_close(s);
            /* no trace magic and no snapshot shape: say both were tried */
            if (kind == FSC_SOURCE_UNKNOWN && rc == FSC_EFORMAT)
                fsc_err_set(err, rc, "%s: neither a fragscope trace nor a PyTorch snapshot", path);
            return fsc_err_name_file(err, path);
        }
    }
    *out = s;
    return 0;
}

int fsc_source_kind(const fsc_source_t *s)
{
    return s ? s->kind : FSC_SOURCE_UNKNOWN;
}

void fsc_source_info(const fsc_source_t *s, fsc_source_info_t *out)
{
    if (s == NULL) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = s->info;
}

void fsc_source_close(fsc_source_t *s)
{
    if (s == NULL)
        return;
    fsc_trace_close(s->r);
    tag_entry_t *e, *tmp;
    HASH_ITER(hh, s->tags, e, tmp) {
        HASH_DEL(s->tags, e);
        free(e);
    }
    free(s->defined);
    free(s->chain);
    free(s->path);
    free(s);
}

/* ---- traces ----------------------------------------------------------- */

/* A sink callback failed: its error stands as it set it. */
static int fail(fsc_source_t *s, int rc)
{
    s->sink_failed = 1;
    return rc;
}

/* Carry node (and its ancestors) from the reader's tag tree over, the
 * outermost first. Iterative: a tag path can be as deep as the input is long
 * (PyTorch frames 20 000 deep are real), so no recursion per level. */
static int carry_tag(fsc_source_t *s, uint32_t node)
{
    size_t n = 0;
    for (uint32_t at = node; at != 0 && !(at < s->ndefined && s->defined[at]);) {
        if (fsc__vec_reserve_zero(&s->defined, &s->ndefined, (size_t)at + 1, 1) != 0 ||
            FSC__VEC_RESERVE(s->chain, s->chain_cap, n + 1) != 0)
            return fsc_err_set(s->err, FSC_ENOMEM, "out of memory");
        const char *name;
        size_t len;
        uint32_t parent;
        if (fsc_trace_tag(s->r, at, &name, &len, &parent) != 0)
            break; /* unknown to the reader: the consumer names it */
        s->defined[at] = 1;
        s->chain[n++] = at;
        if (parent == at)
            break;
        at = parent;
    }
    while (n > 0) {
        uint32_t at = s->chain[--n];
        const char *name;
        size_t len;
        uint32_t parent;
        if (fsc_trace_tag(s->r, at, &name, &len, &parent) != 0)
            continue;
        int rc = s->sink->tag(s->sink->ud, at, parent == at ? 0 : parent, name, len, s->err);
        if (rc != 0)
            return fail(s, rc);
    }
    return 0;
}

static int run_trace(fsc_source_t *s)
{
    const fsc_source_sink_t *k = s->sink;
    fsc_trace_header_t h = *fsc_trace_header(s->r);
    if (s->opts.device_memory != 0)
        h.device_total = s->opts.device_memory;
    int rc = k->header(k->ud, &h, s->err);
    if (rc != 0)
        fail(s, rc);
    fsc_event_t ev;
    int got = 0;
    while (rc == 0 && (got = fsc_trace_next(s->r, &ev)) == 1) {
        rc = carry_tag(s, ev.tag);
        if (rc == 0 && (rc = k->event(k->ud, &ev, s->err)) != 0)
            fail(s, rc);
        if (rc == 0 && (++s->info.events & PROGRESS_EVERY) == 0 && s->opts.progress != NULL) {
            fsc_trace_integrity_t in;
            fsc_trace_get_integrity(s->r, &in);
            s->opts.progress(s->opts.progress_ud, in.compressed_bytes, in.file_bytes);
        }
    }
    if (rc == 0 && got < 0)
        rc = fsc_err_set(s->err, got, "%s", fsc_trace_last_error(s->r));
    if (rc == 0 && fsc_trace_get_integrity(s->r, &s->info.integrity) == 0)
        s->info.have_integrity = 1;
    return rc;
}

/* ---- snapshots -------------------------------------------------------- */

static int on_header(void *ud, const fsc_trace_header_t *hdr)
{
    fsc_source_t *s = ud;
    if (s->have_header)
        return fail(s, fsc_err_set(s->err, FSC_EFORMAT, "%s: two headers", s->path));
    s->have_header = 1;
    fsc_trace_header_t h = *hdr;
    if (s->opts.device_memory != 0)
        h.device_total = s->opts.device_memory;
    int rc = s->sink->header(s->sink->ud, &h, s->err);
    if (rc != 0)
        return fail(s, rc);
    /* From here on the sink runs on a thread of its own, the import goes
     * on meanwhile (FRAGSCOPE_THREADS=1: the caller's thread only). */
    const char *t = getenv("FRAGSCOPE_THREADS");
    if ((t == NULL || strcmp(t, "1") != 0) && fsc__pipe_start(s->sink, &s->pipe) != 0)
        return fail(s, fsc_err_set(s->err, FSC_ENOMEM, "out of memory"));
    return 0;
}

static int on_tag(void *ud, uint32_t parent, const char *name, size_t len, uint32_t *node)
{
    fsc_source_t *s = ud;
    size_t klen = sizeof parent + len;
    tag_entry_t *e = NULL;
    char stack[256];
    char *key = klen <= sizeof stack ? stack : malloc(klen);
    if (key == NULL)
        return fail(s, fsc_err_set(s->err, FSC_ENOMEM, "out of memory"));
    memcpy(key, &parent, sizeof parent);
    if (len > 0)
        memcpy(key + sizeof parent, name, len);
    HASH_FIND(hh, s->tags, key, klen, e);
    int rc = 0;
    if (e == NULL) {
        e = malloc(sizeof *e + klen);
        if (e == NULL) {
            rc = fail(s, fsc_err_set(s->err, FSC_ENOMEM, "out of memory"));
        } else {
            e->id = ++s->next_tag;
            e->klen = klen;
            memcpy(e->key, key, klen);
            HASH_ADD(hh, s->tags, key, klen, e);
            rc = s->pipe != NULL ? fsc__pipe_tag(s->pipe, e->id, parent, name, len)
                                 : s->sink->tag(s->sink->ud, e->id, parent, name, len, s->err);
            if (rc != 0)
                fail(s, rc);
        }
    }
    if (key != stack)
        free(key);
    if (rc == 0)
        *node = e->id;
    return rc;
}

static int on_event(void *ud, const fsc_event_t *ev)
{
    fsc_source_t *s = ud;
    if (!s->have_header)
        return fail(s, fsc_err_set(s->err, FSC_EFORMAT, "%s: events before the header",
                                   s->path));
    int rc = s->pipe != NULL ? fsc__pipe_event(s->pipe, ev) : s->sink->event(s->sink->ud, ev, s->err);
    if (rc != 0)
        return fail(s, rc);
    if ((++s->info.events & PROGRESS_EVERY) == 0 && s->opts.progress != NULL)
        s->opts.progress(s->opts.progress_ud, s->info.events, 0);
    return 0;
}

static void on_import_bytes(void *ud, uint64_t done, uint64_t total)
{
    fsc_source_t *s = ud;
    if (s->opts.progress != NULL)
        s->opts.progress(s->opts.progress_ud, done, total);
}

static int run_snapshot(fsc_source_t *s)
{
    fsc_import_opts_t io = FSC_IMPORT_OPTS_DEFAULT;
    io.progress_bytes = on_import_bytes;
    io.progress_ud = s;
    io.lenient = s->opts.lenient;
    io.keep_records = s->opts.keep_records;
    io.pick_device = s->opts.pick_device;
    io.device = s->opts.device;
    io.skip_entries = s->opts.skip_entries;
    io.sizes = s->opts.sizes;
    io.nsizes = s->opts.nsizes;
    fsc_import_sink_t sink = {s, on_header, on_tag, on_event};
    fsc_err_t ierr;
    fsc_err_clear(&ierr);
    int rc = fsc_pytorch_import(s->path, &io, &sink, &s->info.import, &ierr);
    if (s->pipe != NULL) {
        /* the consumer's failure, if any, is the one that stopped the import */
        fsc_err_t perr;
        fsc_err_clear(&perr);
        int prc = fsc__pipe_finish(s->pipe, &perr);
        s->pipe = NULL;
        if (prc != 0) {
            s->sink_failed = 1;
            fsc_err_copy(s->err, &perr);
            rc = prc;
        }
    }
    if (rc != 0) {
        /* A sink's own error (the consumer naming an event) is the more
         * precise one. */
        if (!s->sink_failed)
            fsc_err_copy(s->err, &ierr);
        return rc;
    }
    if (!s->have_header)
        return fsc_err_set(s->err, FSC_EFORMAT, "%s: no header in the snapshot", s->path);
    return 0;
}

int fsc_source_run(fsc_source_t *s, const fsc_source_sink_t *sink, fsc_err_t *err)
{
    if (s == NULL || sink == NULL || sink->header == NULL || sink->tag == NULL ||
        sink->event == NULL)
        return fsc_err_set(err, FSC_EINVAL, "no source or sink");
    if (s->ran)
        return fsc_err_set(err, FSC_EINVAL, "%s: already read", s->path);
    s->ran = 1;
    s->sink = sink;
    s->err = err;
    int rc = s->kind == FSC_SOURCE_SNAPSHOT ? run_snapshot(s) : run_trace(s);
    if (rc != 0 && !s->sink_failed) {
        fsc_err_name_file(err, s->path); /* the readers' messages name it already */
        s->info.error_file = s->path;
    }
    return rc;
}
