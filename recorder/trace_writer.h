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
    uint32_t n_nodes, nodes_cap;
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

/* ---- registry of open recorders (trace_registry.c) ---------------------- */

void fsc__registry_add(fsc_recorder_t *r);
void fsc__registry_remove(fsc_recorder_t *r);

/* Writer internals used by the registry (trace_writer.c). */
int fsc__recorder_finalize(fsc_recorder_t *r);
void fsc__recorder_emergency_flush(fsc_recorder_t *r);
int fsc__recorder_record_error(fsc_recorder_t *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* FSC_RECORDER_TRACE_WRITER_H */
