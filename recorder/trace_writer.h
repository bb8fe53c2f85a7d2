/*
 * trace_writer.h — the recorder's internals shared by the writer's files:
 * the handle, the chunk buffers, the record encoders, the event ring and
 * the registry of open recorders. Internal to recorder/.
 *
 * Locking (outermost first; never taken in the other order):
 *   r->lock (spinlock)  the chunk being filled, encoder state, intern
 *                       tables, ring; held for one event on the hot path
 *   r->io_mu            compression and writes, in file order
 *   r->q_mu             the queue of full chunks and the free buffers
 * Compression and write(2) never run under r->lock: whoever fills a chunk
 * queues it, drops the spinlock, and drains (or lets the thread drain).
 */
#ifndef FSC_RECORDER_TRACE_WRITER_H
#define FSC_RECORDER_TRACE_WRITER_H

#include <pthread.h>
#include <stdint.h>
#include <zstd.h>

#include "fragscope/recorder.h"
#include "trace_encode.h"
#include "trace_format.h"

/* ---- the ring of ring mode (ring.c) ------------------------------------ */

typedef struct fsc__ring {
    fsc_event_t *ev; /* text owned (malloc'd) when text_len > 0 */
    uint64_t cap, head, count, dropped;
} fsc__ring_t;

int fsc__ring_init(fsc__ring_t *g, uint64_t cap);
void fsc__ring_free(fsc__ring_t *g);
/* Copy ev in (text too), overwriting the oldest when full. FSC_ENOMEM when
 * the text cannot be copied (the event is then kept without it). */
int fsc__ring_push(fsc__ring_t *g, const fsc_event_t *ev);
/* i-th oldest kept event, 0 <= i < count. */
const fsc_event_t *fsc__ring_at(const fsc__ring_t *g, uint64_t i);
/* Forget every kept event (frees texts); dropped is kept. */
void fsc__ring_clear(fsc__ring_t *g);

/* ---- chunk buffers and the handle --------------------------------------- */

typedef struct fsc__chunk {
    struct fsc__chunk *next;
    uint8_t *data;
    size_t len, cap;
    uint64_t first_event;
    uint32_t events;
    uint64_t born_ns; /* when its first record was added */
} fsc__chunk_t;

struct fsc__strent;
struct fsc__nodeent;

typedef struct fsc__fnode {
    uint32_t parent, sid;
} fsc__fnode_t;

struct fsc_recorder {
    int lock;       /* spinlock, see above */
    int finished;   /* closed or finalized at exit: events are ignored */
    fsc__chunk_t *cur;
    fsc__enc_t enc;
    uint64_t events; /* events placed in chunks so far (file order index) */
    uint64_t origin_ns;
    size_t chunk_bytes;

    /* process tag node -> trace node id (0 = not mapped yet) */
    uint32_t *gmap;
    uint32_t gmap_cap;
    /* trace tag tree: nodes[1..n_nodes], strings 1..n_strings */
    fsc__fnode_t *nodes;
    uint32_t n_nodes;
    size_t nodes_cap;
    uint32_t n_strings;
    struct fsc__strent *str_index;
    struct fsc__nodeent *node_index;

    fsc__ring_t ring;
    int ring_mode;

    /* The sink's clock (trace_clock.h), under r->lock. */
    uint64_t clk_tsc, clk_ns, clk_mult, clk_last;
    int clk_tsc_ok;

    pthread_mutex_t io_mu;
    ZSTD_CCtx *cctx;
    uint8_t *zbuf, *tbuf; /* compressed frame; chunk in column layout */
    size_t zcap, tcap;
    int fd;
    int pid;          /* the process that opened it; a forked child never writes */
    int io_failed;
    uint64_t chunks_written, events_written, bytes_written;

    pthread_mutex_t q_mu;
    pthread_cond_t q_cv;
    fsc__chunk_t *q_head, *q_tail, *free_list;
    unsigned q_len;
    int stop;
    int has_thread;
    pthread_t thread;

    pthread_mutex_t err_mu;
    fsc_err_t err;

    fsc_recorder_opts_t opts;
    fsc__header_store_t hdr;
    char *path;
    struct fsc_recorder *reg_next;
};

#define FSC__HEADROOM (2 * FSC__MAX_EVENT_REC) /* chunk buffer room past chunk_bytes */
#define FSC__MAX_QUEUED 8u /* deeper than this, producers compress themselves */

/* ---- the recorder's spinlock -------------------------------------------- */

#include <sched.h>

static inline void fsc__spin_lock(int *l)
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

static inline int fsc__spin_trylock(int *l)
{
    return !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE);
}

static inline void fsc__spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* ---- chunks and I/O (trace_chunks.c) ------------------------------------ */

fsc__chunk_t *fsc__chunk_new(size_t cap);
void fsc__chunk_free(fsc__chunk_t *c);
/* Under r->lock: queue the chunk being filled (if it holds anything) and
 * start a fresh one. Returns the queue depth, 0 if nothing was queued, or a
 * negative code when no buffer could be had (the current one is kept). */
int fsc__chunk_rotate(fsc_recorder_t *r);
/* Under r->lock: room for one record of need bytes in the current chunk
 * (sets *queued when a full chunk was queued to make it). */
int fsc__chunk_ensure(fsc_recorder_t *r, size_t need, int *queued);
/* Under io_mu: transpose, compress and append one chunk. */
void fsc__chunk_write(fsc_recorder_t *r, fsc__chunk_t *c);
/* Not under r->lock: write every queued chunk, in order. */
void fsc__drain(fsc_recorder_t *r);
void *fsc__writer_thread(void *arg);
/* Under io_mu: the end frame. */
void fsc__write_end(fsc_recorder_t *r);
int fsc__write_all(int fd, const uint8_t *p, size_t n);
/* Size buffers and zstd's workspace for a full chunk (at open). */
int fsc__prepare_compression(fsc_recorder_t *r);

/* ---- interning (trace_intern.c), under r->lock -------------------------- */

/* Trace id of a process tag node, defining it (and its ancestors) in the
 * trace the first time. 0 (root) when it cannot be had. */
uint32_t fsc__map_global(fsc_recorder_t *r, uint32_t g, int *queued);
void fsc__intern_free(fsc_recorder_t *r);

/* ---- registry of open recorders (trace_registry.c) ---------------------- */

void fsc__registry_add(fsc_recorder_t *r);
void fsc__registry_remove(fsc_recorder_t *r);

/* Writer internals used by the registry (trace_writer.c). */
int fsc__recorder_finalize(fsc_recorder_t *r);
void fsc__recorder_emergency_flush(fsc_recorder_t *r);
int fsc__recorder_record_error(fsc_recorder_t *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int fsc__recorder_first_error(fsc_recorder_t *r);

#endif /* FSC_RECORDER_TRACE_WRITER_H */
