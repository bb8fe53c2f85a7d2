/*
 * rows.h — which database row each replayed event goes into (rows.c), and
 * the bulk rows handed to the store: block lifetimes, segments and the
 * events that fold into neither. Internal to the analyzer.
 */
#ifndef FSC_ANALYZER_ROWS_H
#define FSC_ANALYZER_ROWS_H

#include "replay.h"

enum {
    FSC__OP_BLOCK = 1, FSC__OP_SEGMENT = 2, FSC__OP_OTHER = 3,
    /* rows of the small tables met during the replay (store.c), queued
     * with the bulk rows so that writing them does not wait for the queue
     * to drain */
    FSC__OP_TAG, FSC__OP_MARKER, FSC__OP_PYMETA, FSC__OP_WARNING, FSC__OP_DEVMEM
};

/* One row: a block, a segment, another event, or a small table's row. */
typedef struct fsc__op {
    int kind;
    union {
        fsc__brow_t row;
        fsc__segrow_t seg;
        struct {
            fsc_event_t ev; /* text is never kept */
            uint64_t seq;
        } other;
        struct {
            uint64_t a, b; /* tag: node, parent; marker: seq, time; pymeta, warning: seq */
            char *s;       /* owned (fsc__op_release); pymeta: kind, NUL, json */
            size_t len;    /* of s; pymeta: of the json */
        } text;
        struct {
            uint64_t seq, time, dev_free, dev_total, reserved;
        } dev;
    } u;
} fsc__op_t;

/* Free what a queued op owns (its text). */
void fsc__op_release(fsc__op_t *op);

/* The rows one event finished, in the order they are to be written. */
#define FSC__ROWS_MAX 4
typedef struct fsc__rowsout {
    fsc__op_t op[FSC__ROWS_MAX];
    int n;
} fsc__rowsout_t;

/* Rows waiting for the next event. */
typedef struct fsc__rows {
    fsc_event_t split;     /* a SPLIT, folded into the ALLOC it serves */
    uint64_t split_seq;
    int split_valid;
    fsc__brow_t row;       /* a freed block, waiting for its MERGEs */
} fsc__rows_t;

/* Before event r->seq is applied: what it cannot fold into goes out. */
void fsc__rows_before(fsc__rows_t *w, const fsc__replay_t *r, const fsc_event_t *ev,
                      fsc__rowsout_t *out);
/* After it was applied (or skipped, o->applied = 0): its own rows. */
void fsc__rows_event(fsc__rows_t *w, fsc__replay_t *r, const fsc_event_t *ev,
                     const fsc__outcome_t *o, fsc__rowsout_t *out);
/* The stream is over: everything still waiting goes out. */
void fsc__rows_flush(fsc__rows_t *w, fsc__rowsout_t *out);
/* Rows of what is still live at the end: each segment's live blocks, then
 * the segment. Calls emit for each; stops at its first error. */
int fsc__rows_live(const fsc__replay_t *r, int (*emit)(void *ud, const fsc__op_t *op),
                   void *ud, uint64_t *leaked_blocks, uint64_t *leaked_bytes);

#endif
