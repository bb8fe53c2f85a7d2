/*
 * trace_chunks.c — the recorder's chunk buffers and their way to disk:
 * filling (room for a record, closing a full chunk), the queue of full
 * chunks, transposition to columns + zstd + write(2) in file order, the
 * background thread with the time bound, and the end record.
 *
 * Buffers are recycled through a free list, so that after the first few
 * chunks the hot path writes into memory that is already warm and mapped;
 * compression and I/O never run under the recorder's spinlock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsc/vec.h"
#include "trace_writer.h"
#include "fsc/thread.h"

fsc__chunk_t *fsc__chunk_new(size_t cap)
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

void fsc__chunk_free(fsc__chunk_t *c)
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
        c = fsc__chunk_new(r->chunk_bytes + FSC__HEADROOM);
    if (c != NULL) {
        c->next = NULL;
        c->len = 0;
        c->events = 0;
        c->first_event = 0;
        c->born_ns = 0;
    }
    return c;
}

int fsc__chunk_rotate(fsc_recorder_t *r)
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

int fsc__chunk_ensure(fsc_recorder_t *r, size_t need, int *queued)
{
    fsc__chunk_t *c = r->cur;
    if (c->len + need <= c->cap)
        goto ok;
    if (c->len > 0) {
        int d = fsc__chunk_rotate(r);
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

int fsc__write_all(int fd, const uint8_t *p, size_t n)
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

/* Under io_mu: transpose and compress one chunk, append descriptor + frame. */
void fsc__chunk_write(fsc_recorder_t *r, fsc__chunk_t *c)
{
    if (r->io_failed || c->len == 0)
        return;
    size_t tneed = c->len + FSC__COLS_OVERHEAD;
    size_t bound = ZSTD_compressBound(tneed);
    if (FSC__VEC_RESERVE(r->tbuf, r->tcap, tneed) != 0 ||
        FSC__VEC_RESERVE(r->zbuf, r->zcap, bound) != 0) {
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
    if (fsc__write_all(r->fd, d, sizeof d) != 0 || fsc__write_all(r->fd, r->zbuf, csize) != 0) {
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
void fsc__drain(fsc_recorder_t *r)
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
        fsc__chunk_write(r, c);
        pthread_mutex_lock(&r->q_mu);
        c->next = r->free_list;
        r->free_list = c;
        pthread_mutex_unlock(&r->q_mu);
    }
    pthread_mutex_unlock(&r->io_mu);
}

void *fsc__writer_thread(void *arg)
{
    fsc__thread_name("fsc-trace");
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
        fsc__drain(r);
        int due = 0;
        fsc__spin_lock(&r->lock);
        if (!r->finished && r->cur->len > 0 && fsc_now_ns() - r->cur->born_ns >= interval)
            due = fsc__chunk_rotate(r) > 0;
        fsc__spin_unlock(&r->lock);
        if (due)
            fsc__drain(r);
        pthread_mutex_lock(&r->q_mu);
    }
    pthread_mutex_unlock(&r->q_mu);
    return NULL;
}

void fsc__write_end(fsc_recorder_t *r)
{
    uint8_t e[8 + FSC__END_LEN];
    fsc__put_le32(e, FSC__SKIP_END);
    fsc__put_le32(e + 4, FSC__END_LEN);
    fsc__put_le64(e + 8, r->events_written);
    fsc__put_le64(e + 16, r->chunks_written);
    fsc__put_le64(e + 24, r->ring.dropped);
    fsc__put_le32(e + 32, fsc__crc32(e + 8, FSC__END_LEN - 4));
    if (fsc__write_all(r->fd, e, sizeof e) != 0) {
        int err = errno;
        r->io_failed = 1;
        fsc__recorder_record_error(r, FSC_EIO, "%s: write failed: %s", r->path, strerror(err));
    }
}

/* Size the compression buffers and zstd's workspace for a full chunk now,
 * so that writing a chunk normally allocates nothing; the fatal-signal path
 * depends on it. */
int fsc__prepare_compression(fsc_recorder_t *r)
{
    size_t full = r->chunk_bytes + FSC__HEADROOM;
    if (FSC__VEC_RESERVE(r->tbuf, r->tcap, full + FSC__COLS_OVERHEAD) != 0 ||
        FSC__VEC_RESERVE(r->zbuf, r->zcap, ZSTD_compressBound(full + FSC__COLS_OVERHEAD)) != 0)
        return FSC_ENOMEM;
    memset(r->tbuf, 0, full);
    size_t z = ZSTD_compress2(r->cctx, r->zbuf, r->zcap, r->tbuf, full);
    return ZSTD_isError(z) ? FSC_EZSTD : 0;
}
