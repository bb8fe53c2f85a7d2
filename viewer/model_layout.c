/*
 * model_layout.c — load the block layouts: the snapshot list (the peak
 * first, then the OOMs) and, in one pass over the layout table, the blocks
 * of the chosen snapshots, bounded in total.
 */
#include <stdio.h>
#include <string.h>

#include "model_load.h"

typedef struct lay_ctx {
    fsc__vlayout_t *l;
    size_t cap, cap_seg;
    size_t *total; /* blocks loaded over all layouts */
} lay_ctx_t;

static int block_row(fsc__loader_t *L, const fsc_rundb_block_t *x, lay_ctx_t *c)
{
    fsc__vlayout_t *l = c->l;
    if (*c->total >= FSC__V_MAX_LAYOUT_BLOCKS) {
        l->truncated = 1;
        return 0;
    }
    (*c->total)++;
    if (fsc__ld_grow((void **)&l->blocks, &c->cap, l->nblocks, sizeof *l->blocks) != 0 ||
        fsc__ld_grow((void **)&l->block_seg, &c->cap_seg, l->nblocks, sizeof *l->block_seg) != 0)
        return fsc__ld_nomem(L);
    fsc__vblock_t *b = &l->blocks[l->nblocks];
    l->block_seg[l->nblocks++] = fsc__ld_i(x->segment, 0);
    b->addr = fsc__ld_i(x->addr, 0);
    b->size = fsc__ld_i(x->size, 0);
    b->requested = fsc__ld_i(x->requested, -1);
    const char *s = x->state ? x->state : "";
    b->state = strcmp(s, "allocated") == 0 ? FSC__BLK_ALLOC
             : strcmp(s, "pending") == 0   ? FSC__BLK_PENDING
                                           : FSC__BLK_FREE;
    b->tag = fsc__ld_i(x->tag, -1);
    b->age_events = fsc__ld_i(x->age_events, -1);
    b->age_ns = fsc__ld_i(x->age_ns, -1);
    b->pool = (int)fsc__ld_i(x->pool, 0);
    if (b->state == FSC__BLK_FREE)
        b->tag = -1;
    return fsc__ld_note_tag(L, b->tag);
}

typedef struct layouts_ctx {
    fsc__loader_t *L;
    lay_ctx_t *c;
    size_t n;
} layouts_ctx_t;

static int layout_row(void *ud, const fsc_rundb_block_t *x)
{
    layouts_ctx_t *all = ud;
    int64_t snap = fsc__ld_i(x->snapshot, -1);
    for (size_t i = 0; i < all->n; i++)
        if (all->c[i].l->id == snap)
            return block_row(all->L, x, &all->c[i]);
    return 0;
}

static int snap_row(void *ud, const fsc_rundb_snapshot_t *x)
{
    fsc__ld_arr_t *a = ud;
    if (*a->n >= a->max)
        return FSC_RUNDB_STOP;
    if (fsc__ld_grow(a->p, &a->cap, *a->n, sizeof(fsc__vlayout_t)) != 0)
        return fsc__ld_nomem(a->L);
    fsc__vlayout_t *l = (fsc__vlayout_t *)*a->p + (*a->n)++;
    l->id = fsc__ld_i(x->id, 0);
    snprintf(l->kind, sizeof l->kind, "%s", x->kind ? x->kind : "");
    l->seq = fsc__ld_i(x->seq, 0);
    l->t = fsc__ld_i(x->time_ns, 0);
    l->oom_id = fsc__ld_i(x->oom_id, -1);
    l->allocated = fsc__ld_i(x->allocated, 0);
    l->reserved = fsc__ld_i(x->reserved, 0);
    return 0;
}

int fsc__model_load_layouts(fsc__loader_t *L, fsc__model_t *m)
{
    int h = 0, rc = fsc__ld_read(L, fsc_rundb_has_table(L->db, "layout", &h));
    if (rc != 0 || !h)
        return rc;
    /* The peak first, then the OOMs in order. */
    fsc__ld_arr_t a = {L, (void **)&m->layouts, &m->nlayouts, 0, FSC__V_MAX_LAYOUTS};
    if ((rc = fsc__ld_read(L, fsc_rundb_snapshots(L->db, snap_row, &a))) != 0 || m->nlayouts == 0)
        return rc;
    int64_t ids[FSC__V_MAX_LAYOUTS];
    lay_ctx_t c[FSC__V_MAX_LAYOUTS];
    size_t total = 0;
    memset(c, 0, sizeof c);
    for (size_t i = 0; i < m->nlayouts; i++) {
        ids[i] = m->layouts[i].id;
        c[i].l = &m->layouts[i];
        c[i].total = &total;
    }
    layouts_ctx_t all = {L, c, m->nlayouts};
    return fsc__ld_read(L, fsc_rundb_layout(L->db, ids, m->nlayouts, layout_row, &all));
}
