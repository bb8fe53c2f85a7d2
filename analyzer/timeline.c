/*
 * timeline.c — a bounded number of samples of the memory figures over the
 * run, without knowing the run's length in advance.
 *
 * Each sample is a bucket of consecutive events. Buckets start one event
 * wide (plus the rest of an allocator step that is under way: a bucket ends
 * between steps); when the table is full, neighbouring buckets are merged
 * pairwise and the width doubles, so the row count stays between half the bound and the
 * bound. Besides the figures after its last event, a bucket keeps the min
 * and max of allocated and reserved over all its events, so the peaks and
 * any short spike survive every merge exactly. External fragmentation is
 * taken at every step boundary (never inside a split or a free, where two
 * free neighbours are not merged yet) and its maximum kept the same way
 * (table timeline_external).
 */
#include <stdlib.h>
#include <string.h>

#include "timeline.h"

int fsc__timeline_init(fsc__timeline_t *t, uint32_t samples)
{
    memset(t, 0, sizeof *t);
    size_t cap = samples ? samples : 2000;
    cap &= ~(size_t)1;
    if (cap < 2)
        cap = 2;
    t->rows = calloc(cap, sizeof *t->rows);
    if (t->rows == NULL)
        return FSC_ENOMEM;
    t->cap = cap;
    t->width = 1;
    return 0;
}

void fsc__timeline_free(fsc__timeline_t *t)
{
    free(t->rows);
    memset(t, 0, sizeof *t);
}

/* b absorbs its successor c. */
static void merge_into(fsc__bucket_t *b, const fsc__bucket_t *c)
{
    fsc__bucket_t m = *c; /* end-of-bucket figures come from the later one */
    m.seq_first = b->seq_first;
    m.time_first = b->time_first;
    m.alloc_min = b->alloc_min < c->alloc_min ? b->alloc_min : c->alloc_min;
    m.res_min = b->res_min < c->res_min ? b->res_min : c->res_min;
    if (b->alloc_max >= c->alloc_max) {
        m.alloc_max = b->alloc_max;
        m.alloc_max_seq = b->alloc_max_seq;
    }
    if (b->res_max >= c->res_max) {
        m.res_max = b->res_max;
        m.res_max_seq = b->res_max_seq;
    }
    if (b->resunalloc_max > m.resunalloc_max)
        m.resunalloc_max = b->resunalloc_max;
    if (b->has_ext && (!m.has_ext || b->ext_max >= m.ext_max)) {
        m.ext_max = b->ext_max;
        m.ext_max_seq = b->ext_max_seq;
        m.has_ext = 1;
    }
    m.n = b->n + c->n;
    *b = m;
}

static void close_bucket(fsc__timeline_t *t, const fsc__replay_t *a)
{
    fsc__bucket_t *c = &t->cur;
    c->allocated = a->allocated;
    c->requested = a->requested;
    c->active = a->active;
    c->reserved = a->reserved;
    c->internal = a->internal;
    c->free_in_reserved = a->heap[0].bytes + a->heap[1].bytes;
    c->largest_free = fsc__largest_free(a, -1);
    c->inactive_split_bytes = a->inactive_split_bytes;
    c->segments = a->nseg;
    c->live_blocks = a->live_blocks;
    fsc__frag_sample(a, &c->frag);
    t->rows[t->n++] = *c;
    c->n = 0;
    if (t->n == t->cap) {
        size_t j = 0;
        for (size_t i = 0; i + 1 < t->n; i += 2) {
            t->rows[j] = t->rows[i];
            merge_into(&t->rows[j], &t->rows[i + 1]);
            j++;
        }
        t->n = j;
        t->width *= 2;
    }
}

void fsc__timeline_event(fsc__timeline_t *t, const fsc__replay_t *a, uint64_t time)
{
    fsc__bucket_t *c = &t->cur;
    uint64_t al = a->allocated, re = a->reserved;
    uint64_t ru = fsc_metric_unallocated(re, al);
    if (c->n == 0) {
        c->seq_first = a->seq;
        c->time_first = time;
        c->alloc_min = c->alloc_max = al;
        c->alloc_max_seq = a->seq;
        c->res_min = c->res_max = re;
        c->res_max_seq = a->seq;
        c->resunalloc_max = ru;
    } else {
        if (al < c->alloc_min)
            c->alloc_min = al;
        if (al > c->alloc_max) {
            c->alloc_max = al;
            c->alloc_max_seq = a->seq;
        }
        if (re < c->res_min)
            c->res_min = re;
        if (re > c->res_max) {
            c->res_max = re;
            c->res_max_seq = a->seq;
        }
        if (ru > c->resunalloc_max)
            c->resunalloc_max = ru;
    }
    c->seq_last = a->seq;
    c->time_last = time;
    c->n++;
}

/* External fragmentation right after event seq, a step boundary. */
static void note_external(fsc__timeline_t *t, const fsc__replay_t *a, uint64_t seq)
{
    fsc__bucket_t *c = &t->cur;
    if (c->n == 0)
        return;
    uint64_t free = a->heap[0].bytes + a->heap[1].bytes;
    double ext = fsc_metric_external_frag(fsc__largest_free(a, -1), free);
    if (!c->has_ext || ext > c->ext_max) {
        c->ext_max = ext;
        c->ext_max_seq = seq;
        c->has_ext = 1;
    }
}

void fsc__timeline_before(fsc__timeline_t *t, const fsc__replay_t *a, int type)
{
    /* A full bucket ends at the next step boundary, so that its end figures
     * never show the inside of a split or a free (see replay.c). */
    int boundary = !fsc__step_continues(a, type);
    if (boundary && a->seq > 0)
        note_external(t, a, a->seq - 1);
    if (t->cur.n >= t->width && boundary)
        close_bucket(t, a);
}

void fsc__timeline_end(fsc__timeline_t *t, const fsc__replay_t *a)
{
    if (t->cur.n > 0) {
        note_external(t, a, a->seq - 1);
        close_bucket(t, a); /* the partial last bucket; may merge, never overflows */
    }
}

void fsc__timeline_row(const fsc__timeline_t *t, size_t i, fsc__tlrow_t *row)
{
    const fsc__bucket_t *b = &t->rows[i];
    row->index = i;
    row->b = b;
    row->internal_ratio = fsc_metric_ratio(b->internal, b->allocated);
    row->external_frag = fsc_metric_external_frag(b->largest_free, b->free_in_reserved);
    row->reserved_unallocated = fsc_metric_unallocated(b->reserved, b->allocated);
}
