/*
 * source_pipe.c — a snapshot's events consumed on a second thread.
 *
 * Reading a large PyTorch snapshot (the pickle parse, the block model) and
 * analysing its events (the replay into the run database) each take about
 * a core's worth of time; one after the other they add up. The importer
 * pushes tag definitions and events into this pipe and goes on, a consumer
 * thread hands them to the sink in the same order, so what the sink sees,
 * and writes, is the same as when it is called directly.
 *
 * Items travel in batches (PIPE_ITEMS items, their names and texts copied
 * into the batch) through a queue of at most PIPE_DEPTH batches: memory is
 * bounded, and the producer waits when the consumer falls behind. Once the
 * consumer fails it stops calling the sink, drops what still comes, and the
 * producer's next push returns the failure, so the import stops.
 *
 * A small queue written here rather than taken from a library: it is a
 * mutex, two condition variables and a list (no Debian package offers a
 * bounded queue of batches for C).
 */
#include "source_pipe.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "fsc/thread.h"

#define PIPE_ITEMS 4096
#define PIPE_DEPTH 4

typedef struct item {
    fsc_event_t ev;        /* events; text resolved from off at the consumer */
    uint32_t node, parent; /* tags */
    uint32_t is_tag;
    size_t off, len; /* name or text in the batch's bytes */
} item_t;

typedef struct batch {
    struct batch *next;
    size_t n;
    char *bytes;
    size_t nbytes, capbytes;
    item_t items[PIPE_ITEMS];
} batch_t;

struct fsc__pipe {
    const fsc_source_sink_t *sink;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv_room, cv_work;
    batch_t *head, *tail; /* queued, oldest first */
    size_t queued;
    batch_t *spare; /* handed back by the consumer */
    batch_t *cur;   /* the producer's */
    int done;       /* the producer has finished */
    int failed;     /* the consumer's error code (atomic) */
    fsc_err_t err;  /* its message */
};

static void run_batch(fsc__pipe_t *p, batch_t *b)
{
    const fsc_source_sink_t *k = p->sink;
    for (size_t i = 0; i < b->n && __atomic_load_n(&p->failed, __ATOMIC_RELAXED) == 0; i++) {
        item_t *it = &b->items[i];
        const char *s = it->len > 0 ? b->bytes + it->off : NULL;
        int rc;
        if (it->is_tag) {
            rc = k->tag(k->ud, it->node, it->parent, s != NULL ? s : "", it->len, &p->err);
        } else {
            if (it->ev.text != NULL)
                it->ev.text = s != NULL ? s : "";
            rc = k->event(k->ud, &it->ev, &p->err);
        }
        if (rc != 0)
            __atomic_store_n(&p->failed, rc, __ATOMIC_RELAXED);
    }
}

static void *consumer(void *arg)
{
    fsc__thread_name("fsc-replay");
    fsc__pipe_t *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->head == NULL && !p->done)
            pthread_cond_wait(&p->cv_work, &p->mu);
        batch_t *b = p->head;
        if (b == NULL)
            break; /* done and drained */
        p->head = b->next;
        if (p->head == NULL)
            p->tail = NULL;
        p->queued--;
        pthread_cond_signal(&p->cv_room);
        pthread_mutex_unlock(&p->mu);
        run_batch(p, b);
        b->n = 0;
        b->nbytes = 0;
        pthread_mutex_lock(&p->mu);
        b->next = p->spare;
        p->spare = b;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static batch_t *new_batch(void)
{
    batch_t *b = malloc(sizeof *b);
    if (b != NULL) {
        b->next = NULL;
        b->n = 0;
        b->bytes = NULL;
        b->nbytes = b->capbytes = 0;
    }
    return b;
}

static void free_batches(batch_t *b)
{
    while (b != NULL) {
        batch_t *n = b->next;
        free(b->bytes);
        free(b);
        b = n;
    }
}

int fsc__pipe_start(const fsc_source_sink_t *sink, fsc__pipe_t **out)
{
    *out = NULL;
    fsc__pipe_t *p = calloc(1, sizeof *p);
    if (p == NULL || (p->cur = new_batch()) == NULL) {
        free(p);
        return FSC_ENOMEM;
    }
    p->sink = sink;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_room, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    if (pthread_create(&p->th, NULL, consumer, p) != 0) {
        pthread_cond_destroy(&p->cv_work);
        pthread_cond_destroy(&p->cv_room);
        pthread_mutex_destroy(&p->mu);
        free_batches(p->cur);
        free(p);
        return FSC_ENOMEM;
    }
    *out = p;
    return 0;
}

/* The producer's batch to the queue (waiting for room), a fresh one back. */
static int hand_over(fsc__pipe_t *p)
{
    batch_t *b = p->cur, *fresh = NULL;
    pthread_mutex_lock(&p->mu);
    while (p->queued >= PIPE_DEPTH)
        pthread_cond_wait(&p->cv_room, &p->mu);
    b->next = NULL;
    if (p->tail != NULL)
        p->tail->next = b;
    else
        p->head = b;
    p->tail = b;
    p->queued++;
    pthread_cond_signal(&p->cv_work);
    if (p->spare != NULL) {
        fresh = p->spare;
        p->spare = fresh->next;
        fresh->next = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    if (fresh == NULL && (fresh = new_batch()) == NULL) {
        p->cur = NULL;
        return FSC_ENOMEM;
    }
    p->cur = fresh;
    return 0;
}

static item_t *next_item(fsc__pipe_t *p, const char *s, size_t len, int *rc)
{
    int failed = __atomic_load_n(&p->failed, __ATOMIC_RELAXED);
    if (failed != 0) {
        *rc = failed;
        return NULL;
    }
    if (p->cur == NULL || (p->cur->n == PIPE_ITEMS && hand_over(p) != 0)) {
        *rc = FSC_ENOMEM;
        return NULL;
    }
    batch_t *b = p->cur;
    if (len > 0 && b->nbytes + len > b->capbytes) {
        size_t nc = b->capbytes ? b->capbytes : 65536;
        while (nc < b->nbytes + len)
            nc *= 2;
        char *nb = realloc(b->bytes, nc);
        if (nb == NULL) {
            *rc = FSC_ENOMEM;
            return NULL;
        }
        b->bytes = nb;
        b->capbytes = nc;
    }
    item_t *it = &b->items[b->n++];
    it->off = b->nbytes;
    it->len = len;
    if (len > 0) {
        memcpy(b->bytes + b->nbytes, s, len);
        b->nbytes += len;
    }
    *rc = 0;
    return it;
}

int fsc__pipe_tag(fsc__pipe_t *p, uint32_t node, uint32_t parent, const char *name, size_t len)
{
    int rc;
    item_t *it = next_item(p, name, len, &rc);
    if (it == NULL)
        return rc;
    it->is_tag = 1;
    it->node = node;
    it->parent = parent;
    return 0;
}

int fsc__pipe_event(fsc__pipe_t *p, const fsc_event_t *ev)
{
    int rc;
    item_t *it = next_item(p, ev->text, ev->text != NULL ? ev->text_len : 0, &rc);
    if (it == NULL)
        return rc;
    it->is_tag = 0;
    it->ev = *ev;
    return 0;
}

int fsc__pipe_finish(fsc__pipe_t *p, fsc_err_t *err)
{
    if (p == NULL)
        return 0;
    int rc = 0;
    if (p->cur != NULL && p->cur->n > 0)
        rc = hand_over(p);
    pthread_mutex_lock(&p->mu);
    p->done = 1;
    pthread_cond_signal(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    int failed = __atomic_load_n(&p->failed, __ATOMIC_RELAXED);
    if (failed != 0) {
        rc = failed;
        fsc_err_copy(err, &p->err);
    } else if (rc != 0) {
        fsc_err_set(err, rc, "out of memory");
    }
    free_batches(p->cur);
    free_batches(p->spare);
    free_batches(p->head);
    pthread_cond_destroy(&p->cv_work);
    pthread_cond_destroy(&p->cv_room);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return rc;
}
