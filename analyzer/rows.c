/*
 * rows.c — which database row each replayed event goes into.
 *
 * Allocators emit SPLIT right before the ALLOC it serves and MERGEs right
 * after a FREE_COMPLETED; stored as rows of their own they would nearly
 * double the rows written. A SPLIT is folded into the block row when the
 * next event is the ALLOC of its first part with the same tag; up to two
 * MERGEs are folded into the freed block's row when they follow its
 * FREE_COMPLETED directly with the tag of its free, in its segment.
 * Anything else is stored in events_other, so the events view is exact
 * either way. The rows are handed out; the store writes them.
 */
#include <string.h>

#include "rows.h"

static void put_block(fsc__rowsout_t *out, const fsc__brow_t *r)
{
    fsc__op_t *op = &out->op[out->n++];
    op->kind = FSC__OP_BLOCK;
    op->u.row = *r;
}

static void put_other(fsc__rowsout_t *out, const fsc_event_t *ev, uint64_t seq)
{
    fsc__op_t *op = &out->op[out->n++];
    op->kind = FSC__OP_OTHER;
    op->u.other.ev = *ev;
    op->u.other.ev.text = NULL;
    op->u.other.seq = seq;
}

static int split_folds(const fsc__rows_t *w, const fsc_event_t *ev)
{
    const fsc_event_t *sp = &w->split;
    return w->split_valid && ev->type == FSC_EV_ALLOC && ev->addr == sp->addr &&
           ev->size == sp->requested && ev->tag == sp->tag && sp->size != 0;
}

static int merge_folds(const fsc__rows_t *w, const fsc__replay_t *a, const fsc_event_t *ev)
{
    const fsc__brow_t *r = &w->row;
    if (!r->valid || ev->type != FSC_EV_MERGE || r->nmerges >= 2 ||
        a->seq != r->fc_seq + 1 + r->nmerges || ev->tag != r->free_tag)
        return 0;
    const fsc__blk_t *lo = fsc__replay_block(a, ev->addr);
    return lo != NULL && lo->seg->base == r->segment; /* the view shows the row's segment */
}

void fsc__rows_flush(fsc__rows_t *w, fsc__rowsout_t *out)
{
    if (w->split_valid) {
        w->split_valid = 0;
        put_other(out, &w->split, w->split_seq);
    }
    if (w->row.valid) {
        w->row.valid = 0;
        put_block(out, &w->row);
    }
}

void fsc__rows_before(fsc__rows_t *w, const fsc__replay_t *a, const fsc_event_t *ev,
                      fsc__rowsout_t *out)
{
    if (w->split_valid && !split_folds(w, ev)) {
        w->split_valid = 0;
        put_other(out, &w->split, w->split_seq);
    }
    if (w->row.valid && !merge_folds(w, a, ev)) {
        w->row.valid = 0;
        put_block(out, &w->row);
    }
}

void fsc__rows_event(fsc__rows_t *w, fsc__replay_t *a, const fsc_event_t *ev,
                     const fsc__outcome_t *o, fsc__rowsout_t *out)
{
    if (o->has_seg) {
        fsc__op_t *op = &out->op[out->n++];
        op->kind = FSC__OP_SEGMENT;
        op->u.seg = o->seg;
    }
    if (!o->applied) {
        /* skipped (lenient): it stays an event of its own */
        fsc__rows_flush(w, out);
        put_other(out, ev, a->seq);
        return;
    }
    switch (ev->type) {
    case FSC_EV_SPLIT:
        w->split = *ev;
        w->split.text = NULL;
        w->split_seq = a->seq;
        w->split_valid = 1;
        return;
    case FSC_EV_ALLOC: {
        /* The block struct outlives one allocation (a cached block is
         * allocated again at the same address): this lifetime's row carries
         * a SPLIT only when one folded into it just now. */
        fsc__blk_t *b = fsc__replay_block(a, ev->addr);
        b->split_size = 0;
        b->split_time = 0;
        if (w->split_valid) { /* fsc__rows_before checked that it folds */
            b->split_size = w->split.size;
            b->split_time = w->split.time_ns;
            w->split_valid = 0;
        }
        return;
    }
    case FSC_EV_FREE_REQUESTED:
        return; /* in the block's row */
    case FSC_EV_FREE_COMPLETED:
        w->row = o->row; /* waits for the MERGEs that follow */
        return;
    case FSC_EV_MERGE:
        if (w->row.valid) { /* fsc__rows_before checked that it folds */
            fsc__brow_t *r = &w->row;
            int m = r->nmerges++;
            r->m_addr[m] = ev->addr;
            r->m_size[m] = ev->size;
            r->m_other[m] = ev->other;
            r->m_time[m] = ev->time_ns;
            return;
        }
        put_other(out, ev, a->seq);
        return;
    default:
        put_other(out, ev, a->seq);
        return;
    }
}

int fsc__rows_live(const fsc__replay_t *a, int (*emit)(void *ud, const fsc__op_t *op),
                   void *ud, uint64_t *leaked_blocks, uint64_t *leaked_bytes)
{
    int rc = 0;
    fsc__op_t op;
    for (size_t i = 0; i < a->nseg && rc == 0; i++) {
        const fsc__seg_t *g = a->seg_sorted[i];
        for (const fsc__blk_t *b = g->head; b != NULL && rc == 0; b = b->next) {
            if (b->state == FSC__FREE)
                continue;
            if (b->state == FSC__ALLOCATED) {
                (*leaked_blocks)++;
                *leaked_bytes += b->size;
            }
            op.kind = FSC__OP_BLOCK;
            fsc__brow_of(b, &op.u.row);
            rc = emit(ud, &op);
        }
        if (rc == 0) {
            op.kind = FSC__OP_SEGMENT;
            memset(&op.u.seg, 0, sizeof op.u.seg);
            op.u.seg.seg = *g;
            rc = emit(ud, &op);
        }
    }
    return rc;
}
