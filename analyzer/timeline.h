/*
 * timeline.h — a bounded number of samples of the memory figures over the
 * run (timeline.c). Internal to the analyzer.
 */
#ifndef FSC_ANALYZER_TIMELINE_H
#define FSC_ANALYZER_TIMELINE_H

#include "replay.h"

typedef struct fsc__bucket {
    uint64_t seq_first, seq_last, time_first, time_last;
    uint64_t allocated, requested, active, reserved, internal;
    uint64_t free_in_reserved, largest_free, inactive_split_bytes;
    uint64_t segments, live_blocks;
    uint64_t alloc_min, alloc_max, alloc_max_seq;
    uint64_t res_min, res_max, res_max_seq;
    uint64_t resunalloc_max;
    double ext_max;       /* largest external fragmentation at a step boundary */
    uint64_t ext_max_seq; /* its event */
    int has_ext;
    fsc__frag_sample_t frag;
    uint64_t n; /* events in it */
} fsc__bucket_t;

typedef struct fsc__timeline {
    fsc__bucket_t *rows;
    size_t n, cap;       /* cap = most rows (even) */
    uint64_t width;      /* events per bucket */
    fsc__bucket_t cur;
} fsc__timeline_t;

/* One row of table timeline: a bucket and the figures derived from it. */
typedef struct fsc__tlrow {
    uint64_t index;
    const fsc__bucket_t *b;
    double internal_ratio, external_frag;
    uint64_t reserved_unallocated;
} fsc__tlrow_t;

int fsc__timeline_init(fsc__timeline_t *t, uint32_t samples);
void fsc__timeline_free(fsc__timeline_t *t);
/* Before event r->seq is applied: close a full bucket at a step boundary. */
void fsc__timeline_before(fsc__timeline_t *t, const fsc__replay_t *r, int type);
/* After it: the event joins the current bucket. */
void fsc__timeline_event(fsc__timeline_t *t, const fsc__replay_t *r, uint64_t time);
/* The stream is over: close the partial last bucket. */
void fsc__timeline_end(fsc__timeline_t *t, const fsc__replay_t *r);
/* Row i < t->n. */
void fsc__timeline_row(const fsc__timeline_t *t, size_t i, fsc__tlrow_t *row);

#endif
