/*
 * pytorch_replay_thread.c — the block model and its events on a thread of
 * their own while a streamed history is parsed (pass 3 of pytorch_stream.c).
 *
 * The parse's thread reads each entry, finds its tag through the caches of
 * frames → tag, and for an entry of the usual kind (an allocator action
 * whose keys need no record and whose stack needs no new tag) hands a copy
 * of its numbers and its tag here, in order. This thread replays them
 * (annotation markers up to the entry's time, the block model, the events
 * to the sink). Any other entry is replayed on the parse's thread after
 * this one has replayed everything handed to it and waits (fsc__rq_sync):
 * so the sink is called by one thread at a time, in the order one thread
 * gives, and the trace does not depend on timing.
 *
 * Entries travel in batches of RQ_ITEMS through a ring of RQ_DEPTH batches
 * (memory bounded; the parse waits when this thread falls behind). Once a
 * replay fails this thread stops; the parse's next hand-over returns the
 * failure, whose message is in im->err. A failure of the parse after
 * entries were handed over is the later one, so the replay's, if any,
 * is the one reported (pytorch_stream.c).
 *
 * A ring written here rather than taken from a library, like
 * source/source_pipe.c's: a mutex, two condition variables and indices.
 */
#include "pytorch_import.h"

#include <pthread.h>
#include <stdlib.h>

#include "fsc/thread.h"

#define RQ_ITEMS 2048
#define RQ_DEPTH 8

typedef struct rq_batch {
    size_t n;
    fsc__rop_t op[RQ_ITEMS];
} rq_batch_t;

struct fsc__rq {
    fsc__imp_t *im;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv_room, cv_work, cv_idle;
    rq_batch_t *b[RQ_DEPTH];
    size_t head, tail; /* batches handed over / replayed (ever) */
    size_t cur;        /* the producer fills b[cur % RQ_DEPTH] (cur == tail) */
    int busy;          /* the consumer is replaying a batch */
    int done;          /* no more batches will come */
    int failed;        /* the consumer's code (atomic); message in im->err */
};

static void *consumer(void *arg)
{
    fsc__thread_name("fsc-blocks");
    fsc__rq_t *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->head == q->tail && !q->done)
            pthread_cond_wait(&q->cv_work, &q->mu);
        if (q->head == q->tail)
            break; /* done and drained */
        rq_batch_t *b = q->b[q->head % RQ_DEPTH];
        q->busy = 1;
        pthread_mutex_unlock(&q->mu);
        for (size_t i = 0; i < b->n && __atomic_load_n(&q->failed, __ATOMIC_RELAXED) == 0; i++) {
            int rc = fsc__imp_replay_op(q->im, &b->op[i]);
            if (rc != 0)
                __atomic_store_n(&q->failed, rc, __ATOMIC_RELAXED);
        }
        b->n = 0;
        pthread_mutex_lock(&q->mu);
        q->busy = 0;
        q->head++;
        pthread_cond_signal(&q->cv_room);
        if (q->head == q->tail)
            pthread_cond_signal(&q->cv_idle);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int fsc__rq_start(fsc__imp_t *im, fsc__rq_t **out)
{
    *out = NULL;
    fsc__rq_t *q = calloc(1, sizeof *q);
    if (q == NULL)
        return FSC_ENOMEM;
    q->im = im;
    for (size_t i = 0; i < RQ_DEPTH; i++) {
        if ((q->b[i] = malloc(sizeof *q->b[i])) == NULL) {
            while (i-- > 0)
                free(q->b[i]);
            free(q);
            return FSC_ENOMEM;
        }
        q->b[i]->n = 0;
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv_room, NULL);
    pthread_cond_init(&q->cv_work, NULL);
    pthread_cond_init(&q->cv_idle, NULL);
    if (pthread_create(&q->th, NULL, consumer, q) != 0) {
        pthread_cond_destroy(&q->cv_idle);
        pthread_cond_destroy(&q->cv_work);
        pthread_cond_destroy(&q->cv_room);
        pthread_mutex_destroy(&q->mu);
        for (size_t i = 0; i < RQ_DEPTH; i++)
            free(q->b[i]);
        free(q);
        return FSC_ENOMEM;
    }
    *out = q;
    return 0;
}

/* The producer's batch to the consumer; waits for a free one. */
static void hand_over(fsc__rq_t *q)
{
    pthread_mutex_lock(&q->mu);
    q->tail++;
    pthread_cond_signal(&q->cv_work);
    while (q->tail - q->head >= RQ_DEPTH)
        pthread_cond_wait(&q->cv_room, &q->mu);
    pthread_mutex_unlock(&q->mu);
    q->cur = q->tail;
}

int fsc__rq_push(fsc__rq_t *q, const fsc__rop_t *op)
{
    int failed = __atomic_load_n(&q->failed, __ATOMIC_RELAXED);
    if (failed != 0)
        return failed;
    rq_batch_t *b = q->b[q->cur % RQ_DEPTH];
    b->op[b->n++] = *op;
    if (b->n == RQ_ITEMS)
        hand_over(q);
    return 0;
}

int fsc__rq_sync(fsc__rq_t *q)
{
    if (q->b[q->cur % RQ_DEPTH]->n > 0)
        hand_over(q);
    pthread_mutex_lock(&q->mu);
    while (q->head != q->tail || q->busy)
        pthread_cond_wait(&q->cv_idle, &q->mu);
    pthread_mutex_unlock(&q->mu);
    return __atomic_load_n(&q->failed, __ATOMIC_RELAXED);
}

int fsc__rq_finish(fsc__rq_t *q)
{
    if (q == NULL)
        return 0;
    if (q->b[q->cur % RQ_DEPTH]->n > 0 && __atomic_load_n(&q->failed, __ATOMIC_RELAXED) == 0)
        hand_over(q);
    pthread_mutex_lock(&q->mu);
    q->done = 1;
    pthread_cond_signal(&q->cv_work);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->th, NULL);
    int rc = __atomic_load_n(&q->failed, __ATOMIC_RELAXED);
    pthread_cond_destroy(&q->cv_idle);
    pthread_cond_destroy(&q->cv_work);
    pthread_cond_destroy(&q->cv_room);
    pthread_mutex_destroy(&q->mu);
    for (size_t i = 0; i < RQ_DEPTH; i++)
        free(q->b[i]);
    free(q);
    return rc;
}
