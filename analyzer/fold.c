/*
 * fold.c — which database row each replayed event goes into.
 *
 * Allocators emit SPLIT right before the ALLOC it serves and MERGEs right
 * after a FREE_COMPLETED; stored as rows of their own they would nearly
 * double the rows written. A SPLIT is folded into the block row when the
 * next event is the ALLOC of its first part with the same tag; up to two
 * MERGEs are folded into the freed block's row when they follow its
 * FREE_COMPLETED directly with the tag of its free, in its segment.
 * Anything else is stored in events_other, so the events view is exact
 * either way.
 */
#include "ana_internal.h"

static int split_folds(const fsc_analysis_t *a, const fsc_event_t *ev)
{
    const fsc_event_t *sp = &a->split_pending.ev;
    return a->split_pending.valid && ev->type == FSC_EV_ALLOC && ev->addr == sp->addr &&
           ev->size == sp->requested && ev->tag == sp->tag && sp->size != 0;
}

static int merge_folds(const fsc_analysis_t *a, const fsc_event_t *ev)
{
    const fsc__brow_t *r = &a->row_pending;
    if (!r->valid || ev->type != FSC_EV_MERGE || r->nmerges >= 2 ||
        a->seq != r->fc_seq + 1 + r->nmerges || ev->tag != r->free_tag)
        return 0;
    const fsc__blk_t *lo = fsc__u64map_getp(&a->blocks, ev->addr);
    return lo != NULL && lo->seg->base == r->segment; /* the view shows the row's segment */
}

int fsc__db_flush_pending(fsc_analysis_t *a)
{
    int rc = 0;
    if (a->split_pending.valid) {
        a->split_pending.valid = 0;
        rc = fsc__db_other_row(a, &a->split_pending.ev, a->split_pending.seq);
    }
    if (rc == 0 && a->row_pending.valid) {
        a->row_pending.valid = 0;
        rc = fsc__db_block_row(a, &a->row_pending);
    }
    return rc;
}

int fsc__db_before(fsc_analysis_t *a, const fsc_event_t *ev)
{
    int rc = 0;
    if (a->split_pending.valid && !split_folds(a, ev)) {
        a->split_pending.valid = 0;
        rc = fsc__db_other_row(a, &a->split_pending.ev, a->split_pending.seq);
    }
    if (rc == 0 && a->row_pending.valid && !merge_folds(a, ev)) {
        a->row_pending.valid = 0;
        rc = fsc__db_block_row(a, &a->row_pending);
    }
    return rc;
}

int fsc__db_event(fsc_analysis_t *a, const fsc_event_t *ev, int applied)
{
    if (!applied) {
        /* skipped (lenient): it stays an event of its own */
        int rc = fsc__db_flush_pending(a);
        return rc != 0 ? rc : fsc__db_other_row(a, ev, a->seq);
    }
    switch (ev->type) {
    case FSC_EV_SPLIT:
        a->split_pending.ev = *ev;
        a->split_pending.ev.text = NULL;
        a->split_pending.seq = a->seq;
        a->split_pending.valid = 1;
        return 0;
    case FSC_EV_ALLOC: {
        /* The block struct outlives one allocation (a cached block is
         * allocated again at the same address): this lifetime's row carries
         * a SPLIT only when one folded into it just now. */
        fsc__blk_t *b = fsc__u64map_getp(&a->blocks, ev->addr);
        b->split_size = 0;
        b->split_time = 0;
        if (a->split_pending.valid) { /* fsc__db_before checked that it folds */
            b->split_size = a->split_pending.ev.size;
            b->split_time = a->split_pending.ev.time_ns;
            a->split_pending.valid = 0;
        }
        return 0;
    }
    case FSC_EV_FREE_REQUESTED:
    case FSC_EV_FREE_COMPLETED:
        return 0; /* in the block's row */
    case FSC_EV_MERGE:
        if (a->row_pending.valid) { /* fsc__db_before checked that it folds */
            fsc__brow_t *r = &a->row_pending;
            int m = r->nmerges++;
            r->m_addr[m] = ev->addr;
            r->m_size[m] = ev->size;
            r->m_other[m] = ev->other;
            r->m_time[m] = ev->time_ns;
            return 0;
        }
        return fsc__db_other_row(a, ev, a->seq);
    default:
        return fsc__db_other_row(a, ev, a->seq);
    }
}
