/*
 * trace_writer.c — the recorder's life and its event paths: open, the sink
 * and write, ring mode, flush, close, and the exit and fatal-signal ends.
 *
 * The hot path (fsc_recorder_sink) takes a spinlock, encodes one record into
 * the chunk being filled and returns; a full chunk is queued and compressed
 * either by the recorder's thread (background mode) or by the caller right
 * after it drops the spinlock (background off, or when the queue is deep);
 * see trace_chunks.c. An OOM event is different: its chunk is written
 * before the sink returns, because the allocator hands the error to the
 * program right afterwards and the program may die of it. Tag nodes get
 * trace ids when an event first needs them (trace_intern.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tags.h"
#include "trace_clock.h"
#include "trace_writer.h"

#define DEFAULT_CHUNK (256u << 10)
#define MIN_CHUNK 64u
#define MAX_RING (1ull << 28)

/* ---- errors ------------------------------------------------------------- */

int fsc__recorder_record_error(fsc_recorder_t *r, int code, const char *fmt, ...)
{
    pthread_mutex_lock(&r->err_mu);
    if (r->err.code == 0) {
        va_list ap;
        va_start(ap, fmt);
        fsc_err_vset(&r->err, code, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&r->err_mu);
    return code;
}

int fsc__recorder_first_error(fsc_recorder_t *r)
{
    pthread_mutex_lock(&r->err_mu);
    int c = r->err.code;
    pthread_mutex_unlock(&r->err_mu);
    return c;
}

const char *fsc_recorder_last_error(const fsc_recorder_t *r)
{
    return r == NULL ? "" : fsc_err_msg(&r->err);
}

/* ---- appending events (under r->lock) ----------------------------------- */

static int append_event(fsc_recorder_t *r, const fsc_event_t *ev, uint32_t tag, uint64_t t,
                        uint32_t thread, int *queued)
{
    int rc = fsc__chunk_ensure(r, FSC__MAX_EVENT_REC + ev->text_len, queued);
    if (rc != 0)
        return rc;
    fsc__chunk_t *c = r->cur;
    c->len = (size_t)(fsc__encode_event(&r->enc, c->data + c->len, ev, tag, t, thread) - c->data);
    /* a DEVICE_MEMORY sample is an extension record, not a counted event */
    c->events += ev->type != FSC_EV_DEVICE_MEMORY;
    r->events += ev->type != FSC_EV_DEVICE_MEMORY;
    if (c->len >= r->chunk_bytes && fsc__chunk_rotate(r) > 0)
        *queued = 1;
    return 0;
}

/* Encode every event the ring holds, oldest first, and forget them. */
static void spill_ring(fsc_recorder_t *r, int *queued)
{
    for (uint64_t i = 0; i < r->ring.count; i++) {
        const fsc_event_t *e = fsc__ring_at(&r->ring, i);
        if (append_event(r, e, e->tag, e->time_ns, e->thread, queued) != 0)
            break;
    }
    fsc__ring_clear(&r->ring);
}

static int valid_type(uint8_t t)
{
    return t >= 1 && t < FSC_EV__COUNT;
}

/* Shared by sink and write: place the event, then write what must be
 * written now. tag is already a trace id (or gtag a process node to map).
 * stamp: a time of 0 means "now" (the sink); without it 0 is kept (write). */
__attribute__((noinline)) static int record(fsc_recorder_t *r, const fsc_event_t *ev,
                                            uint32_t tag, uint64_t t, uint32_t thread,
                                            uint32_t gtag, int stamp)
{
    int queued = 0, rc = 0, sync = 0;
    fsc__spin_lock(&r->lock);
    if (r->finished) {
        fsc__spin_unlock(&r->lock);
        return FSC_ESTATE;
    }
    if (t == 0 && stamp)
        t = fsc__clock_now(r);
    if (gtag != 0)
        tag = (gtag < r->gmap_cap && r->gmap[gtag] != 0) ? r->gmap[gtag]
                                                          : fsc__map_global(r, gtag, &queued);
    if (r->ring_mode) {
        fsc_event_t e = *ev;
        e.tag = tag;
        e.time_ns = t;
        e.thread = thread;
        rc = fsc__ring_push(&r->ring, &e);
        if (ev->type == FSC_EV_OOM)
            spill_ring(r, &queued);
    } else {
        rc = append_event(r, ev, tag, t, thread, &queued);
    }
    if (ev->type == FSC_EV_OOM) {
        fsc__chunk_rotate(r);
        sync = 1;
    }
    fsc__spin_unlock(&r->lock);
    if (sync || (queued && (!r->has_thread || __atomic_load_n(&r->q_len, __ATOMIC_RELAXED) > FSC__MAX_QUEUED)))
        fsc__drain(r);
    return rc;
}

/* The common case, under r->lock: a streaming recorder, an event whose tag
 * is already mapped, room in a chunk already started, not an OOM. Returns 1
 * when the event was placed, 0 to take the general path. */
static inline int sink_fast(fsc_recorder_t *r, const fsc_event_t *ev, uint32_t tag,
                            uint32_t gtag, uint64_t t, uint32_t thread, int *full)
{
    if (r->finished | r->ring_mode | (ev->type == FSC_EV_OOM))
        return 0;
    if (gtag != 0) {
        if (gtag >= r->gmap_cap || (tag = r->gmap[gtag]) == 0)
            return 0;
    }
    fsc__chunk_t *c = r->cur;
    if (c->len == 0 || c->len + FSC__MAX_EVENT_REC + ev->text_len > c->cap)
        return 0;
    c->len = (size_t)(fsc__encode_event(&r->enc, c->data + c->len, ev, tag, t, thread) - c->data);
    c->events += ev->type != FSC_EV_DEVICE_MEMORY;
    r->events += ev->type != FSC_EV_DEVICE_MEMORY;
    *full = c->len >= r->chunk_bytes;
    return 1;
}

void fsc_recorder_sink(void *ud, const fsc_event_t *ev)
{
    fsc_recorder_t *r = ud;
    if (r == NULL || ev == NULL || !valid_type(ev->type))
        return;
    uint64_t t = ev->time_ns;
    uint32_t thread = ev->thread ? ev->thread : fsc__thread_number();
    uint32_t tag = ev->tag, gtag = 0;
    if (tag == 0)
        gtag = fsc__t_tag;
    else if (tag > __atomic_load_n(&r->n_nodes, __ATOMIC_RELAXED))
        tag = 0;
    if (ev->text_len > FSC__MAX_STRING_BYTES || (ev->text_len > 0 && ev->text == NULL)) {
        fsc_event_t e = *ev;
        e.text_len = e.text == NULL ? 0 : FSC__MAX_STRING_BYTES;
        record(r, &e, tag, t, thread, gtag, 1);
        return;
    }
    int full = 0;
    fsc__spin_lock(&r->lock);
    /* Stamped under the lock, so stamps follow the order of the events. */
    if (t == 0)
        t = fsc__clock_now(r);
    if (sink_fast(r, ev, tag, gtag, t, thread, &full)) {
        int queued = full && fsc__chunk_rotate(r) > 0;
        fsc__spin_unlock(&r->lock);
        if (queued && (!r->has_thread || __atomic_load_n(&r->q_len, __ATOMIC_RELAXED) > FSC__MAX_QUEUED))
            fsc__drain(r);
        return;
    }
    fsc__spin_unlock(&r->lock);
    record(r, ev, tag, t, thread, gtag, 1);
}

int fsc_recorder_write(fsc_recorder_t *r, const fsc_event_t *ev)
{
    if (r == NULL || ev == NULL)
        return FSC_EINVAL;
    if (!valid_type(ev->type))
        return fsc__recorder_record_error(r, FSC_EINVAL, "%s: event type %u is not valid",
                                          r->path, ev->type);
    if (ev->text_len > FSC__MAX_STRING_BYTES || (ev->text_len > 0 && ev->text == NULL))
        return fsc__recorder_record_error(r, FSC_EINVAL, "%s: marker text of %u bytes",
                                          r->path, ev->text_len);
    if (ev->tag > __atomic_load_n(&r->n_nodes, __ATOMIC_RELAXED))
        return fsc__recorder_record_error(r, FSC_EINVAL, "%s: tag node %u was never defined",
                                          r->path, ev->tag);
    int rc = record(r, ev, ev->tag, ev->time_ns, ev->thread, 0, 0);
    if (rc == FSC_ESTATE)
        return fsc__recorder_record_error(r, FSC_ESTATE, "%s: recorder is closed", r->path);
    return rc != 0 ? rc : fsc__recorder_first_error(r);
}

int fsc_recorder_write_thread_tag(fsc_recorder_t *r, const fsc_event_t *ev, uint32_t node)
{
    if (r == NULL || ev == NULL)
        return FSC_EINVAL;
    if (!valid_type(ev->type))
        return fsc__recorder_record_error(r, FSC_EINVAL, "%s: event type %u is not valid",
                                          r->path, ev->type);
    if (ev->text_len > FSC__MAX_STRING_BYTES || (ev->text_len > 0 && ev->text == NULL))
        return fsc__recorder_record_error(r, FSC_EINVAL, "%s: marker text of %u bytes",
                                          r->path, ev->text_len);
    int rc = record(r, ev, 0, ev->time_ns, ev->thread, node, 0);
    if (rc == FSC_ESTATE)
        return fsc__recorder_record_error(r, FSC_ESTATE, "%s: recorder is closed", r->path);
    return rc != 0 ? rc : fsc__recorder_first_error(r);
}

/* ---- flush, background thread, close ------------------------------------ */

int fsc_recorder_flush(fsc_recorder_t *r)
{
    if (r == NULL)
        return FSC_EINVAL;
    int queued = 0;
    fsc__spin_lock(&r->lock);
    if (!r->finished) {
        if (r->ring_mode)
            spill_ring(r, &queued);
        fsc__chunk_rotate(r);
    }
    fsc__spin_unlock(&r->lock);
    fsc__drain(r);
    return fsc__recorder_first_error(r);
}

int fsc__recorder_finalize(fsc_recorder_t *r)
{
    int queued = 0;
    fsc__spin_lock(&r->lock);
    if (r->finished) {
        fsc__spin_unlock(&r->lock);
        return fsc__recorder_first_error(r);
    }
    if (r->ring_mode)
        spill_ring(r, &queued);
    fsc__chunk_rotate(r);
    r->finished = 1;
    fsc__spin_unlock(&r->lock);
    if (r->has_thread) {
        pthread_mutex_lock(&r->q_mu);
        r->stop = 1;
        pthread_cond_signal(&r->q_cv);
        pthread_mutex_unlock(&r->q_mu);
        pthread_join(r->thread, NULL);
        r->has_thread = 0;
    }
    fsc__drain(r);
    if (getpid() == r->pid) {
        pthread_mutex_lock(&r->io_mu);
        if (!r->io_failed)
            fsc__write_end(r);
        if (r->fd >= 0 && close(r->fd) != 0 && !r->io_failed) {
            int e = errno;
            fsc__recorder_record_error(r, FSC_EIO, "%s: close failed: %s", r->path, strerror(e));
        }
        r->fd = -1;
        pthread_mutex_unlock(&r->io_mu);
    }
    return fsc__recorder_first_error(r);
}

void fsc__recorder_emergency_flush(fsc_recorder_t *r)
{
    /* From a fatal-signal handler: only proceed when nobody holds the locks
     * (the crashing thread may be inside the recorder). Best effort. */
    if (getpid() != r->pid || !fsc__spin_trylock(&r->lock))
        return;
    if (!r->finished && pthread_mutex_trylock(&r->io_mu) == 0) {
        if (r->ring_mode) {
            int queued = 0;
            spill_ring(r, &queued);
        }
        if (pthread_mutex_trylock(&r->q_mu) == 0) {
            for (fsc__chunk_t *c = r->q_head; c != NULL; c = c->next) {
                fsc__chunk_write(r, c);
                c->len = 0;
            }
            pthread_mutex_unlock(&r->q_mu);
            fsc__chunk_write(r, r->cur);
            r->cur->len = 0;
            /* Everything the recorder received is on disk: say so. */
            if (!r->io_failed)
                fsc__write_end(r);
        }
        pthread_mutex_unlock(&r->io_mu);
    }
    r->finished = 1;
    fsc__spin_unlock(&r->lock);
}

static void recorder_free(fsc_recorder_t *r)
{
    fsc__chunk_free(r->cur);
    for (fsc__chunk_t *c = r->q_head, *n; c != NULL; c = n) {
        n = c->next;
        fsc__chunk_free(c);
    }
    for (fsc__chunk_t *c = r->free_list, *n; c != NULL; c = n) {
        n = c->next;
        fsc__chunk_free(c);
    }
    fsc__intern_free(r);
    fsc__ring_free(&r->ring);
    ZSTD_freeCCtx(r->cctx);
    free(r->zbuf);
    free(r->tbuf);
    fsc__header_store_free(&r->hdr);
    free(r->path);
    pthread_mutex_destroy(&r->io_mu);
    pthread_mutex_destroy(&r->q_mu);
    pthread_mutex_destroy(&r->err_mu);
    pthread_cond_destroy(&r->q_cv);
    free(r);
}

int fsc_recorder_close(fsc_recorder_t *r)
{
    if (r == NULL)
        return 0;
    fsc__registry_remove(r);
    int rc = fsc__recorder_finalize(r);
    if (r->fd >= 0)
        close(r->fd);
    recorder_free(r);
    return rc;
}

/* ---- open --------------------------------------------------------------- */

static char *dup_or_empty(const char *s)
{
    return strdup(s != NULL ? s : "");
}

static int open_file(fsc_recorder_t *r, const char *path, fsc_err_t *err)
{
    fsc_outfile_t of;
    int rc = fsc_outfile_init(&of, path, err);
    if (rc != 0)
        return rc;
    r->fd = open(of.tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (r->fd < 0) {
        int e = errno;
        fsc_outfile_abort(&of);
        return fsc_err_set(err, FSC_EIO, "%s: cannot create: %s", r->path, strerror(e));
    }
    uint8_t *hb = NULL;
    size_t hl = 0;
    rc = fsc__header_encode(&r->hdr.h, &hb, &hl);
    if (rc != 0) {
        fsc_outfile_abort(&of);
        return fsc_err_set(err, rc, "%s: header strings too long (max %u bytes each)", r->path,
                           FSC__MAX_STRING_BYTES);
    }
    if (fsc__write_all(r->fd, hb, hl) != 0) {
        int e = errno;
        free(hb);
        fsc_outfile_abort(&of);
        return fsc_err_set(err, FSC_EIO, "%s: write failed: %s", r->path, strerror(e));
    }
    free(hb);
    r->bytes_written = hl;
    /* The trace carries its real name from its header on (readable after a
     * kill) and stays locked while open: a second recorder of the same path
     * is refused instead of writing over this one. */
    return fsc_outfile_claim(&of, r->fd, err);
}

static int init_sync(fsc_recorder_t *r)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int bad = pthread_cond_init(&r->q_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&r->io_mu, NULL);
    pthread_mutex_init(&r->q_mu, NULL);
    pthread_mutex_init(&r->err_mu, NULL);
    return bad ? FSC_ENOMEM : 0;
}

int fsc_recorder_open(const char *path, const fsc_trace_header_t *hdr,
                      const fsc_recorder_opts_t *opts, fsc_recorder_t **out, fsc_err_t *err)
{
    if (out == NULL || path == NULL || path[0] == '\0')
        return fsc_err_set(err, FSC_EINVAL, "no trace path given");
    *out = NULL;
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    if (opts != NULL)
        o = *opts;
    const char *name = o.name != NULL ? o.name : path; /* in messages */
    if (o.chunk_bytes == 0)
        o.chunk_bytes = DEFAULT_CHUNK;
    if (o.chunk_bytes < MIN_CHUNK || o.chunk_bytes > FSC__MAX_WRITER_CHUNK)
        return fsc_err_set(err, FSC_EINVAL, "%s: chunk size %zu outside [%u, %u] bytes", name,
                           o.chunk_bytes, MIN_CHUNK, FSC__MAX_WRITER_CHUNK);
    if (o.flush_interval_ms == 0)
        o.flush_interval_ms = 100;
    if (o.zstd_level == 0)
        o.zstd_level = 3;
    if (o.ring_events > MAX_RING)
        return fsc_err_set(err, FSC_ELIMIT, "%s: ring of %llu events exceeds %llu", name,
                           (unsigned long long)o.ring_events, (unsigned long long)MAX_RING);

    if (hdr != NULL && hdr->host != NULL && hdr->host[0] != '\0' &&
        !fsc__host_ok(hdr->host, strlen(hdr->host)))
        return fsc_err_set(err, FSC_EINVAL, "%s: host name unusable in a trace (1..%u bytes, "
                           "no control characters)", name, FSC__MAX_HOST_BYTES);

    fsc_recorder_t *r = calloc(1, sizeof *r);
    if (r == NULL || init_sync(r) != 0) {
        free(r);
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
    }
    r->fd = -1;
    r->pid = (int)getpid();
    r->opts = o;
    r->chunk_bytes = o.chunk_bytes;
    r->ring_mode = o.ring_events > 0;
    r->origin_ns = fsc_now_ns();
    fsc__clock_init(r);

    fsc_trace_header_t h = {0};
    if (hdr != NULL)
        h = *hdr;
    else
        h.rank = -1;
    h.version_major = FSC__TRACE_MAJOR;
    h.version_minor = FSC__TRACE_MINOR;
    if (h.clock_origin_ns == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        h.clock_origin_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    if (h.pid == 0)
        h.pid = (uint32_t)getpid();
    if (r->ring_mode)
        h.flags |= FSC_TRACE_F_RING;
    r->hdr.h = h;
    r->hdr.producer = dup_or_empty(h.producer);
    r->hdr.config = dup_or_empty(h.config);
    r->hdr.backend = dup_or_empty(h.backend);
    r->hdr.h.producer = r->hdr.producer;
    r->hdr.h.config = r->hdr.config;
    r->hdr.h.backend = r->hdr.backend;
    /* The host, when the producer gave none: FRAGSCOPE_HOST (a container's
     * own name is not its node's; set and empty = none), else the machine's
     * name. One the header cannot carry (too long, control bytes) is left
     * out rather than losing the recording. */
    char hostbuf[FSC__MAX_HOST_BYTES + 2] = "";
    const char *host = h.host;
    if (host == NULL) {
        const char *env = getenv("FRAGSCOPE_HOST");
        if (env != NULL)
            snprintf(hostbuf, sizeof hostbuf, "%s", env);
        else if (gethostname(hostbuf, sizeof hostbuf) != 0)
            hostbuf[0] = '\0';
        hostbuf[sizeof hostbuf - 1] = '\0';
        host = fsc__host_ok(hostbuf, strlen(hostbuf)) ? hostbuf : "";
    }
    if (host[0] != '\0')
        r->hdr.host = strdup(host);
    r->hdr.h.host = r->hdr.host;
    r->path = strdup(name);
    r->cur = fsc__chunk_new(r->chunk_bytes + FSC__HEADROOM);
    r->cctx = ZSTD_createCCtx();
    int rc = FSC_ENOMEM;
    if (r->hdr.producer == NULL || r->hdr.config == NULL || r->hdr.backend == NULL ||
        (host[0] != '\0' && r->hdr.host == NULL) || r->path == NULL || r->cur == NULL || r->cctx == NULL) {
        fsc_err_set(err, rc, "%s: out of memory", name);
        goto fail;
    }
    ZSTD_CCtx_setParameter(r->cctx, ZSTD_c_compressionLevel, o.zstd_level);
    ZSTD_CCtx_setParameter(r->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(r->cctx, ZSTD_c_contentSizeFlag, 1);
    if (fsc__prepare_compression(r) != 0) {
        rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
        goto fail;
    }
    if (r->ring_mode && (rc = fsc__ring_init(&r->ring, o.ring_events)) != 0) {
        fsc_err_set(err, rc, "%s: cannot hold a ring of %llu events", name,
                    (unsigned long long)o.ring_events);
        goto fail;
    }
    if ((rc = open_file(r, path, err)) != 0)
        goto fail;
    /* Ring mode writes only on OOM, flush and exit: no thread needed. */
    if (!o.synchronous && !r->ring_mode) {
        if (pthread_create(&r->thread, NULL, fsc__writer_thread, r) != 0) {
            rc = fsc_err_set(err, FSC_ENOMEM, "%s: cannot start the writer thread", name);
            close(r->fd);
            r->fd = -1;
            unlink(path);
            goto fail;
        }
        r->has_thread = 1;
    }
    fsc__registry_add(r);
    *out = r;
    return 0;
fail:
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    recorder_free(r);
    return rc;
}
