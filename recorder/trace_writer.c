/*
 * trace_writer.c — the recorder: turns events into chunk buffers on the
 * caller's thread and gets those chunks compressed and onto disk.
 *
 * The hot path (fsc_recorder_sink) takes a spinlock, encodes one record into
 * the chunk being filled and returns; a full chunk is queued and compressed
 * either by the recorder's thread (background mode) or by the caller right
 * after it drops the spinlock (background off, or when the queue is deep).
 * An OOM event is different: its chunk is written before the sink returns,
 * because the allocator hands the error to the program right afterwards and
 * the program may die of it.
 *
 * Tag nodes and their names get trace ids the first time an event needs
 * them, and their definitions go into the chunk just before that event;
 * definitions stay valid for the rest of the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "tags.h"
#include "trace_clock.h"
#include "trace_writer.h"

#define DEFAULT_CHUNK (256u << 10)
#define MIN_CHUNK 64u
#define HEADROOM (2 * FSC__MAX_EVENT_REC)
#define MAX_QUEUED 8u /* deeper than this, producers compress themselves */
#define MAX_RING (1ull << 28)

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

/* ---- spinlock ----------------------------------------------------------- */

static inline void spin_lock(int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
        unsigned n = 0;
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++n >= 64) {
                sched_yield();
                n = 0;
            } else {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
        }
    }
}

static inline int spin_trylock(int *l)
{
    return !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE);
}

static inline void spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

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

static int first_error(fsc_recorder_t *r)
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

/* ---- chunk buffers and the queue ---------------------------------------- */

static fsc__chunk_t *chunk_new(size_t cap)
{
    fsc__chunk_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->data = malloc(cap);
    if (c->data == NULL) {
        free(c);
        return NULL;
    }
    c->cap = cap;
    return c;
}

static void chunk_free(fsc__chunk_t *c)
{
    if (c != NULL) {
        free(c->data);
        free(c);
    }
}

static fsc__chunk_t *chunk_get(fsc_recorder_t *r)
{
    pthread_mutex_lock(&r->q_mu);
    fsc__chunk_t *c = r->free_list;
    if (c != NULL)
        r->free_list = c->next;
    pthread_mutex_unlock(&r->q_mu);
    if (c == NULL)
        c = chunk_new(r->chunk_bytes + HEADROOM);
    if (c != NULL) {
        c->next = NULL;
        c->len = 0;
        c->events = 0;
        c->first_event = 0;
        c->born_ns = 0;
    }
    return c;
}

/* Under r->lock: queue the chunk being filled (if it holds anything) and
 * start a fresh one. Returns the queue depth, 0 if nothing was queued, or a
 * negative code when no buffer could be had (the current one is kept). */
static int rotate(fsc_recorder_t *r)
{
    if (r->cur->len == 0)
        return 0;
    fsc__chunk_t *fresh = chunk_get(r);
    if (fresh == NULL)
        return fsc__recorder_record_error(r, FSC_ENOMEM, "%s: out of memory for a chunk buffer",
                                          r->path);
    fsc__chunk_t *full = r->cur;
    r->cur = fresh;
    fresh->first_event = r->events;
    memset(&r->enc, 0, sizeof r->enc);
    pthread_mutex_lock(&r->q_mu);
    if (r->q_tail != NULL)
        r->q_tail->next = full;
    else
        r->q_head = full;
    r->q_tail = full;
    int depth = (int)__atomic_add_fetch(&r->q_len, 1, __ATOMIC_RELAXED);
    if (r->has_thread)
        pthread_cond_signal(&r->q_cv);
    pthread_mutex_unlock(&r->q_mu);
    return depth;
}

/* Under r->lock: room for one record of `need` bytes in the current chunk. */
static int ensure(fsc_recorder_t *r, size_t need, int *queued)
{
    fsc__chunk_t *c = r->cur;
    if (c->len + need <= c->cap)
        goto ok;
    if (c->len > 0) {
        int d = rotate(r);
        if (d < 0)
            return d;
        *queued = 1;
        c = r->cur;
    }
    if (need > c->cap) {
        uint8_t *nd = realloc(c->data, need);
        if (nd == NULL)
            return fsc__recorder_record_error(r, FSC_ENOMEM, "%s: out of memory", r->path);
        c->data = nd;
        c->cap = need;
    }
ok:
    if (c->len == 0)
        c->born_ns = fsc_now_ns();
    return 0;
}

/* ---- compression and I/O ------------------------------------------------ */

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    uint8_t *nb = realloc(*buf, need);
    if (nb == NULL)
        return -1;
    *buf = nb;
    *cap = need;
    return 0;
}

/* Under io_mu: transpose and compress one chunk, append descriptor + frame. */
static void write_chunk(fsc_recorder_t *r, fsc__chunk_t *c)
{
    if (r->io_failed || c->len == 0)
        return;
    size_t tneed = c->len + FSC__COLS_OVERHEAD;
    size_t bound = ZSTD_compressBound(tneed);
    if (grow(&r->tbuf, &r->tcap, tneed) != 0 || grow(&r->zbuf, &r->zcap, bound) != 0) {
        r->io_failed = 1;
        fsc__recorder_record_error(r, FSC_ENOMEM, "%s: out of memory compressing", r->path);
        return;
    }
    size_t usize = fsc__chunk_transpose(c->data, c->len, r->tbuf);
    size_t csize = ZSTD_compress2(r->cctx, r->zbuf, r->zcap, r->tbuf, usize);
    if (ZSTD_isError(csize)) {
        r->io_failed = 1;
        fsc__recorder_record_error(r, FSC_EZSTD, "%s: zstd: %s", r->path, ZSTD_getErrorName(csize));
        return;
    }
    uint8_t d[8 + FSC__CHUNK_DESC_LEN];
    fsc__put_le32(d, FSC__SKIP_CHUNK);
    fsc__put_le32(d + 4, FSC__CHUNK_DESC_LEN);
    fsc__put_le64(d + 8, c->first_event);
    fsc__put_le32(d + 16, c->events);
    fsc__put_le32(d + 20, (uint32_t)csize);
    fsc__put_le32(d + 24, (uint32_t)usize);
    fsc__put_le32(d + 28, fsc__crc32(d + 8, FSC__CHUNK_DESC_LEN - 4));
    if (write_all(r->fd, d, sizeof d) != 0 || write_all(r->fd, r->zbuf, csize) != 0) {
        int e = errno;
        r->io_failed = 1;
        fsc__recorder_record_error(r, FSC_EIO, "%s: write failed: %s", r->path, strerror(e));
        return;
    }
    r->chunks_written++;
    r->events_written += c->events;
    r->bytes_written += sizeof d + csize;
}

/* Write every queued chunk, in order. Not under r->lock. */
static void drain(fsc_recorder_t *r)
{
    if (getpid() != r->pid)
        return; /* a forked child shares the descriptor but not the trace */
    pthread_mutex_lock(&r->io_mu);
    for (;;) {
        pthread_mutex_lock(&r->q_mu);
        fsc__chunk_t *c = r->q_head;
        if (c != NULL) {
            r->q_head = c->next;
            if (r->q_head == NULL)
                r->q_tail = NULL;
            __atomic_sub_fetch(&r->q_len, 1, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&r->q_mu);
        if (c == NULL)
            break;
        write_chunk(r, c);
        pthread_mutex_lock(&r->q_mu);
        c->next = r->free_list;
        r->free_list = c;
        pthread_mutex_unlock(&r->q_mu);
    }
    pthread_mutex_unlock(&r->io_mu);
}

/* ---- interning (under r->lock) ------------------------------------------ */

static uint32_t intern_string(fsc_recorder_t *r, const char *s, size_t len, int *queued)
{
    struct fsc__strent *e = NULL;
    HASH_FIND(hh, r->str_index, s, len, e);
    if (e != NULL)
        return e->id;
    if (ensure(r, 1 + 10 + len, queued) != 0)
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
    if (r->n_nodes + 1 >= r->nodes_cap) {
        uint32_t nc = r->nodes_cap ? r->nodes_cap * 2 : 64;
        fsc__fnode_t *nn = realloc(r->nodes, nc * sizeof *nn);
        if (nn == NULL)
            goto oom;
        r->nodes = nn;
        r->nodes_cap = nc;
    }
    if (ensure(r, 1 + 20, queued) != 0)
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

/* Trace id of a process tag node, defining it (and its ancestors) in the
 * trace the first time. 0 (root) when it cannot be had. */
static uint32_t map_global(fsc_recorder_t *r, uint32_t g, int *queued)
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
    uint32_t parent = map_global(r, gparent, queued);
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

/* ---- appending events (under r->lock) ----------------------------------- */

static int append_event(fsc_recorder_t *r, const fsc_event_t *ev, uint32_t tag, uint64_t t,
                        uint32_t thread, int *queued)
{
    int rc = ensure(r, FSC__MAX_EVENT_REC + ev->text_len, queued);
    if (rc != 0)
        return rc;
    fsc__chunk_t *c = r->cur;
    c->len = (size_t)(fsc__encode_event(&r->enc, c->data + c->len, ev, tag, t, thread) - c->data);
    c->events++;
    r->events++;
    if (c->len >= r->chunk_bytes && rotate(r) > 0)
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
    spin_lock(&r->lock);
    if (r->finished) {
        spin_unlock(&r->lock);
        return FSC_ESTATE;
    }
    if (t == 0 && stamp)
        t = fsc__clock_now(r);
    if (gtag != 0)
        tag = (gtag < r->gmap_cap && r->gmap[gtag] != 0) ? r->gmap[gtag]
                                                          : map_global(r, gtag, &queued);
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
        rotate(r);
        sync = 1;
    }
    spin_unlock(&r->lock);
    if (sync || (queued && (!r->has_thread || __atomic_load_n(&r->q_len, __ATOMIC_RELAXED) > MAX_QUEUED)))
        drain(r);
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
    c->events++;
    r->events++;
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
    spin_lock(&r->lock);
    /* Stamped under the lock, so stamps follow the order of the events. */
    if (t == 0)
        t = fsc__clock_now(r);
    if (sink_fast(r, ev, tag, gtag, t, thread, &full)) {
        int queued = full && rotate(r) > 0;
        spin_unlock(&r->lock);
        if (queued && (!r->has_thread || __atomic_load_n(&r->q_len, __ATOMIC_RELAXED) > MAX_QUEUED))
            drain(r);
        return;
    }
    spin_unlock(&r->lock);
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
    return rc != 0 ? rc : first_error(r);
}

int fsc_recorder_tag_node(fsc_recorder_t *r, uint32_t parent, const char *name, size_t len,
                          uint32_t *out)
{
    if (r == NULL || out == NULL || (name == NULL && len > 0))
        return FSC_EINVAL;
    int queued = 0;
    spin_lock(&r->lock);
    if (parent > r->n_nodes) {
        spin_unlock(&r->lock);
        return fsc__recorder_record_error(r, FSC_EINVAL, "%s: tag node %u was never defined",
                                          r->path, parent);
    }
    uint32_t id = intern_node(r, parent, name ? name : "", len, &queued);
    spin_unlock(&r->lock);
    if (queued && !r->has_thread)
        drain(r);
    if (id == 0)
        return first_error(r) ? first_error(r) : FSC_ENOMEM;
    *out = id;
    return 0;
}

/* ---- flush, background thread, close ------------------------------------ */

int fsc_recorder_flush(fsc_recorder_t *r)
{
    if (r == NULL)
        return FSC_EINVAL;
    int queued = 0;
    spin_lock(&r->lock);
    if (!r->finished) {
        if (r->ring_mode)
            spill_ring(r, &queued);
        rotate(r);
    }
    spin_unlock(&r->lock);
    drain(r);
    return first_error(r);
}

static void *bg_main(void *arg)
{
    fsc_recorder_t *r = arg;
    uint64_t interval = (uint64_t)r->opts.flush_interval_ms * 1000000ull;
    uint64_t nap = interval / 4 < 1000000ull ? 1000000ull : interval / 4;
    pthread_mutex_lock(&r->q_mu);
    while (!r->stop) {
        if (r->q_len == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t ns = (uint64_t)ts.tv_nsec + nap;
            ts.tv_sec += (time_t)(ns / 1000000000ull);
            ts.tv_nsec = (long)(ns % 1000000000ull);
            pthread_cond_timedwait(&r->q_cv, &r->q_mu, &ts);
        }
        pthread_mutex_unlock(&r->q_mu);
        drain(r);
        int due = 0;
        spin_lock(&r->lock);
        if (!r->finished && r->cur->len > 0 && fsc_now_ns() - r->cur->born_ns >= interval)
            due = rotate(r) > 0;
        spin_unlock(&r->lock);
        if (due)
            drain(r);
        pthread_mutex_lock(&r->q_mu);
    }
    pthread_mutex_unlock(&r->q_mu);
    return NULL;
}

static void write_end(fsc_recorder_t *r)
{
    uint8_t e[8 + FSC__END_LEN];
    fsc__put_le32(e, FSC__SKIP_END);
    fsc__put_le32(e + 4, FSC__END_LEN);
    fsc__put_le64(e + 8, r->events_written);
    fsc__put_le64(e + 16, r->chunks_written);
    fsc__put_le64(e + 24, r->ring.dropped);
    fsc__put_le32(e + 32, fsc__crc32(e + 8, FSC__END_LEN - 4));
    if (write_all(r->fd, e, sizeof e) != 0) {
        int err = errno;
        r->io_failed = 1;
        fsc__recorder_record_error(r, FSC_EIO, "%s: write failed: %s", r->path, strerror(err));
    }
}

int fsc__recorder_finalize(fsc_recorder_t *r)
{
    int queued = 0;
    spin_lock(&r->lock);
    if (r->finished) {
        spin_unlock(&r->lock);
        return first_error(r);
    }
    if (r->ring_mode)
        spill_ring(r, &queued);
    rotate(r);
    r->finished = 1;
    spin_unlock(&r->lock);
    if (r->has_thread) {
        pthread_mutex_lock(&r->q_mu);
        r->stop = 1;
        pthread_cond_signal(&r->q_cv);
        pthread_mutex_unlock(&r->q_mu);
        pthread_join(r->thread, NULL);
        r->has_thread = 0;
    }
    drain(r);
    if (getpid() == r->pid) {
        pthread_mutex_lock(&r->io_mu);
        if (!r->io_failed)
            write_end(r);
        if (r->fd >= 0 && close(r->fd) != 0 && !r->io_failed) {
            int e = errno;
            fsc__recorder_record_error(r, FSC_EIO, "%s: close failed: %s", r->path, strerror(e));
        }
        r->fd = -1;
        pthread_mutex_unlock(&r->io_mu);
    }
    return first_error(r);
}

void fsc__recorder_emergency_flush(fsc_recorder_t *r)
{
    /* From a fatal-signal handler: only proceed when nobody holds the locks
     * (the crashing thread may be inside the recorder). Best effort. */
    if (getpid() != r->pid || !spin_trylock(&r->lock))
        return;
    if (!r->finished && pthread_mutex_trylock(&r->io_mu) == 0) {
        if (r->ring_mode) {
            int queued = 0;
            spill_ring(r, &queued);
        }
        if (pthread_mutex_trylock(&r->q_mu) == 0) {
            for (fsc__chunk_t *c = r->q_head; c != NULL; c = c->next) {
                write_chunk(r, c);
                c->len = 0;
            }
            pthread_mutex_unlock(&r->q_mu);
            write_chunk(r, r->cur);
            r->cur->len = 0;
            /* Everything the recorder received is on disk: say so. */
            if (!r->io_failed)
                write_end(r);
        }
        pthread_mutex_unlock(&r->io_mu);
    }
    r->finished = 1;
    spin_unlock(&r->lock);
}

static void recorder_free(fsc_recorder_t *r)
{
    chunk_free(r->cur);
    for (fsc__chunk_t *c = r->q_head, *n; c != NULL; c = n) {
        n = c->next;
        chunk_free(c);
    }
    for (fsc__chunk_t *c = r->free_list, *n; c != NULL; c = n) {
        n = c->next;
        chunk_free(c);
    }
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
    if (r->fd < 0)
        return fsc_err_set(err, FSC_EIO, "%s: cannot create: %s", path, strerror(errno));
    uint8_t *hb = NULL;
    size_t hl = 0;
    rc = fsc__header_encode(&r->hdr.h, &hb, &hl);
    if (rc != 0) {
        fsc_outfile_abort(&of);
        return fsc_err_set(err, rc, "%s: header strings too long (max %u bytes each)", path,
                           FSC__MAX_STRING_BYTES);
    }
    if (write_all(r->fd, hb, hl) != 0) {
        int e = errno;
        free(hb);
        fsc_outfile_abort(&of);
        return fsc_err_set(err, FSC_EIO, "%s: write failed: %s", path, strerror(e));
    }
    free(hb);
    r->bytes_written = hl;
    return fsc_outfile_commit(&of, err);
}

/* Size the compression buffers and zstd's workspace for a full chunk now,
 * so that writing a chunk normally allocates nothing; the fatal-signal path
 * depends on it. */
static int prepare_compression(fsc_recorder_t *r)
{
    size_t full = r->chunk_bytes + HEADROOM;
    if (grow(&r->tbuf, &r->tcap, full + FSC__COLS_OVERHEAD) != 0 ||
        grow(&r->zbuf, &r->zcap, ZSTD_compressBound(full + FSC__COLS_OVERHEAD)) != 0)
        return FSC_ENOMEM;
    memset(r->tbuf, 0, full);
    size_t z = ZSTD_compress2(r->cctx, r->zbuf, r->zcap, r->tbuf, full);
    return ZSTD_isError(z) ? FSC_EZSTD : 0;
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
    if (o.chunk_bytes == 0)
        o.chunk_bytes = DEFAULT_CHUNK;
    if (o.chunk_bytes < MIN_CHUNK || o.chunk_bytes > FSC__MAX_WRITER_CHUNK)
        return fsc_err_set(err, FSC_EINVAL, "%s: chunk size %zu outside [%u, %u] bytes", path,
                           o.chunk_bytes, MIN_CHUNK, FSC__MAX_WRITER_CHUNK);
    if (o.flush_interval_ms == 0)
        o.flush_interval_ms = 100;
    if (o.zstd_level == 0)
        o.zstd_level = 3;
    if (o.ring_events > MAX_RING)
        return fsc_err_set(err, FSC_ELIMIT, "%s: ring of %llu events exceeds %llu", path,
                           (unsigned long long)o.ring_events, (unsigned long long)MAX_RING);

    fsc_recorder_t *r = calloc(1, sizeof *r);
    if (r == NULL || init_sync(r) != 0) {
        free(r);
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", path);
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
    r->path = strdup(path);
    r->cur = chunk_new(r->chunk_bytes + HEADROOM);
    r->cctx = ZSTD_createCCtx();
    int rc = FSC_ENOMEM;
    if (r->hdr.producer == NULL || r->hdr.config == NULL || r->hdr.backend == NULL ||
        r->path == NULL || r->cur == NULL || r->cctx == NULL) {
        fsc_err_set(err, rc, "%s: out of memory", path);
        goto fail;
    }
    ZSTD_CCtx_setParameter(r->cctx, ZSTD_c_compressionLevel, o.zstd_level);
    ZSTD_CCtx_setParameter(r->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(r->cctx, ZSTD_c_contentSizeFlag, 1);
    if (prepare_compression(r) != 0) {
        rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    if (r->ring_mode && (rc = fsc__ring_init(&r->ring, o.ring_events)) != 0) {
        fsc_err_set(err, rc, "%s: cannot hold a ring of %llu events", path,
                    (unsigned long long)o.ring_events);
        goto fail;
    }
    if ((rc = open_file(r, path, err)) != 0)
        goto fail;
    /* Ring mode writes only on OOM, flush and exit: no thread needed. */
    if (o.background && !r->ring_mode) {
        if (pthread_create(&r->thread, NULL, bg_main, r) != 0) {
            rc = fsc_err_set(err, FSC_ENOMEM, "%s: cannot start the writer thread", path);
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
