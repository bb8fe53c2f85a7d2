/*
 * store_writer.c — the row-writing thread (see store_internal.h).
 *
 * SQLite's per-row cost is most of an analysis, and the replay does not
 * need the rows back, so the two run side by side: the replay fills a local
 * batch of rows and hands full batches to a ring under one lock; the writer
 * takes everything queued, writes it without the lock, then frees the
 * slots. Rows are written in the order they were queued, so the database
 * is the same as when written inline.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "fsc/thread.h"

#define RING_OPS 8192  /* ~1.7 MiB of rows in flight */
#define BATCH_OPS 256
/* Block rows held back to be handed over in key order (alloc_seq): they are
 * finished when their block is freed, mostly a few hundred allocations
 * later, and SQLite inserts rows faster in key order (the right edge of
 * the tree). Rows that stay out longer than the window (blocks that live
 * long) go in out of order, as before. ~0.9 MiB. The min-heap is written
 * here (two sift loops): analyzer/heap.c is an indexed max-heap of blocks by
 * size, and a tree from libbsd's sys/tree.h would allocate a node per row. */
#define WINDOW_OPS 4096

typedef struct hent {
    uint64_t key;
    uint32_t slot;
} hent_t;

struct fsc__writer {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t nonempty, nonfull, idle;
    fsc__op_t *ring;
    size_t head, tail;  /* under mu; slots [head, tail) are queued */
    int busy, stop, failed;
    fsc_err_t err;      /* under mu */
    /* replay thread only */
    fsc__op_t batch[BATCH_OPS];
    size_t nbatch;
    fsc__op_t *win;            /* the block rows held back, in slots */
    hent_t *heap;              /* a min-heap of them on alloc_seq */
    uint32_t *freeslot;        /* slots of win[] popped, to reuse */
    size_t nheap, nfree;
    /* read-only for the thread */
    sqlite3_stmt *const *st;
    sqlite3 *db;
    const char *path;
};

static void *run(void *arg)
{
    fsc__thread_name("fsc-db-writer");
    fsc__writer_t *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->head == w->tail && !w->stop) {
            w->busy = 0;
            pthread_cond_broadcast(&w->idle);
            pthread_cond_wait(&w->nonempty, &w->mu);
        }
        if (w->head == w->tail)
            break;
        size_t h = w->head, t = w->tail;
        int failed = w->failed;
        w->busy = 1;
        pthread_mutex_unlock(&w->mu);
        int rc = SQLITE_DONE, was_failed = failed;
        const char *what = "";
        for (size_t i = h; i < t;) {
            /* a run of block rows goes in as one statement */
            size_t n = 0;
            while (i + n < t && w->ring[(i + n) % RING_OPS].kind == FSC__OP_BLOCK)
                n++;
            if (n > 0) {
                fsc__blocksrc_t src = {w->ring, i % RING_OPS, n, RING_OPS};
                what = "blocks";
                if (!failed && (rc = fsc__store_exec_blocks(w->st, &src)) != SQLITE_DONE)
                    failed = 1;
                i += n; /* block rows own nothing */
                continue;
            }
            fsc__op_t *op = &w->ring[i % RING_OPS];
            if (!failed && (rc = fsc__store_exec_op(w->st, op, &what)) != SQLITE_DONE)
                failed = 1;
            fsc__op_release(op);
            i++;
        }
        pthread_mutex_lock(&w->mu);
        if (failed && !was_failed && !w->failed) {
            w->failed = 1;
            fsc_err_set(&w->err, FSC_ESQLITE, "%s: %s: %s", w->path, what,
                        sqlite3_errmsg(w->db));
        }
        w->head = t;
        pthread_cond_broadcast(&w->nonfull);
    }
    w->busy = 0;
    pthread_cond_broadcast(&w->idle);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void writer_free(fsc__writer_t *w)
{
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->nonempty);
    pthread_cond_destroy(&w->nonfull);
    pthread_cond_destroy(&w->idle);
    free(w->ring);
    free(w->win);
    free(w->heap);
    free(w->freeslot);
    free(w);
}

void fsc__writer_start(fsc__store_t *a)
{
    fsc__writer_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return;
    w->ring = malloc(RING_OPS * sizeof *w->ring);
    w->win = malloc(WINDOW_OPS * sizeof *w->win);
    w->heap = malloc(WINDOW_OPS * sizeof *w->heap);
    w->freeslot = malloc(WINDOW_OPS * sizeof *w->freeslot);
    w->st = a->st;
    w->db = a->db;
    w->path = a->path;
    if (w->ring == NULL || w->win == NULL || w->heap == NULL || w->freeslot == NULL) {
        free(w->ring);
        free(w->win);
        free(w->heap);
        free(w->freeslot);
        free(w);
        return;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->nonempty, NULL);
    pthread_cond_init(&w->nonfull, NULL);
    pthread_cond_init(&w->idle, NULL);
    if (pthread_create(&w->th, NULL, run, w) != 0) {
        writer_free(w);
        return; /* rows are written inline */
    }
    a->writer = w;
}

static int failure(fsc__store_t *a, fsc__writer_t *w)
{
    /* called with w->mu held */
    return fsc_err_copy(&a->err, &w->err);
}

/* Hand the local batch over to the ring. */
static int flush_batch(fsc__store_t *a)
{
    fsc__writer_t *w = a->writer;
    size_t n = w->nbatch;
    if (n == 0)
        return 0;
    pthread_mutex_lock(&w->mu);
    while (!w->failed && RING_OPS - (w->tail - w->head) < n)
        pthread_cond_wait(&w->nonfull, &w->mu);
    if (w->failed) {
        int rc = failure(a, w);
        pthread_mutex_unlock(&w->mu);
        for (size_t i = 0; i < n; i++) /* dropped: nothing more is written */
            fsc__op_release(&w->batch[i]);
        w->nbatch = 0;
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        w->ring[(w->tail + i) % RING_OPS] = w->batch[i];
    w->tail += n;
    w->nbatch = 0;
    pthread_cond_signal(&w->nonempty);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static int batch_push(fsc__store_t *a, const fsc__op_t *op)
{
    fsc__writer_t *w = a->writer;
    w->batch[w->nbatch++] = *op;
    return w->nbatch == BATCH_OPS ? flush_batch(a) : 0;
}

/* The held-back block row of least key, to the batch. */
static int pop_block(fsc__store_t *a)
{
    fsc__writer_t *w = a->writer;
    hent_t top = w->heap[0], x = w->heap[--w->nheap];
    size_t i = 0, n = w->nheap;
    for (;;) { /* x sifts down from the root */
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && w->heap[c + 1].key < w->heap[c].key)
            c++;
        if (x.key <= w->heap[c].key)
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n > 0)
        w->heap[i] = x;
    w->freeslot[w->nfree++] = top.slot;
    return batch_push(a, &w->win[top.slot]);
}

static int push_block(fsc__store_t *a, const fsc__op_t *op)
{
    fsc__writer_t *w = a->writer;
    int rc;
    if (w->nheap == WINDOW_OPS && (rc = pop_block(a)) != 0)
        return rc;
    /* slots in use are [0, nheap + nfree): a free one, else the next */
    uint32_t slot = w->nfree > 0 ? w->freeslot[--w->nfree] : (uint32_t)w->nheap;
    w->win[slot] = *op;
    hent_t x = {op->u.row.alloc_seq, slot};
    size_t i = w->nheap++;
    while (i > 0 && w->heap[(i - 1) / 2].key > x.key) { /* x sifts up */
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = x;
    return 0;
}

int fsc__writer_push(fsc__store_t *a, const fsc__op_t *op)
{
    return op->kind == FSC__OP_BLOCK ? push_block(a, op) : batch_push(a, op);
}

int fsc__writer_sync(fsc__store_t *a)
{
    fsc__writer_t *w = a->writer;
    if (w == NULL)
        return 0;
    int rc = 0;
    while (rc == 0 && w->nheap > 0)
        rc = pop_block(a);
    w->nheap = w->nfree = 0; /* after a failure: block rows own nothing */
    if (rc == 0)
        rc = flush_batch(a);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&w->mu);
    while (!w->failed && (w->head != w->tail || w->busy))
        pthread_cond_wait(&w->idle, &w->mu);
    rc = w->failed ? failure(a, w) : 0;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int fsc__writer_stop(fsc__store_t *a)
{
    fsc__writer_t *w = a->writer;
    if (w == NULL)
        return 0;
    int rc = fsc__writer_sync(a);
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->nonempty);
    pthread_mutex_unlock(&w->mu);
    /* The thread drains the queue before it ends (after a failure it only
     * frees what the rows own: it may still be in a slice when sync
     * returns), so only the rows never handed over are left here. */
    pthread_join(w->th, NULL);
    for (size_t i = w->head; i < w->tail; i++)
        fsc__op_release(&w->ring[i % RING_OPS]);
    for (size_t i = 0; i < w->nbatch; i++)
        fsc__op_release(&w->batch[i]);
    w->nbatch = 0;
    writer_free(w);
    a->writer = NULL;
    return rc;
}
