/*
 * model_layout.c — load the block layouts: the snapshot list (the peak
 * first, then the OOMs) and, in one pass over the layout table, the blocks
 * of the chosen snapshots, bounded in total.
 */
#include <stdio.h>
#include <string.h>

#include "model_sql.h"

typedef struct lay_ctx {
    fsc__vlayout_t *l;
    size_t cap, cap_seg;
    size_t *total; /* blocks loaded over all layouts */
} lay_ctx_t;

static int block_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    lay_ctx_t *c = ud;
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
    l->block_seg[l->nblocks++] = fsc__ld_col_i(st, 0, 0);
    b->addr = fsc__ld_col_i(st, 1, 0);
    b->size = fsc__ld_col_i(st, 2, 0);
    b->requested = fsc__ld_col_i(st, 3, -1);
    const unsigned char *state = sqlite3_column_text(st, 4);
    const char *s = state ? (const char *)state : "";
    b->state = strcmp(s, "allocated") == 0 ? FSC__BLK_ALLOC
             : strcmp(s, "pending") == 0   ? FSC__BLK_PENDING
                                           : FSC__BLK_FREE;
    b->tag = fsc__ld_col_i(st, 5, -1);
    b->age_events = fsc__ld_col_i(st, 6, -1);
    b->age_ns = fsc__ld_col_i(st, 7, -1);
    b->pool = (int)fsc__ld_col_i(st, 8, 0);
    if (b->state == FSC__BLK_FREE)
        b->tag = -1;
    return fsc__ld_note_tag(L, b->tag);
}

typedef struct layouts_ctx {
    lay_ctx_t *c;
    size_t n;
} layouts_ctx_t;

static int layout_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    layouts_ctx_t *all = ud;
    int64_t snap = fsc__ld_col_i(st, 9, -1);
    for (size_t i = 0; i < all->n; i++)
        if (all->c[i].l->id == snap)
            return block_row(L, st, &all->c[i]);
    return 0;
}

static int snap_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    fsc__ld_arr_t *a = ud;
    if (*a->n >= a->max)
        return 0;
    if (fsc__ld_grow(a->p, &a->cap, *a->n, sizeof(fsc__vlayout_t)) != 0)
        return fsc__ld_nomem(L);
    fsc__vlayout_t *l = (fsc__vlayout_t *)*a->p + (*a->n)++;
    l->id = fsc__ld_col_i(st, 0, 0);
    const unsigned char *kind = sqlite3_column_text(st, 1);
    snprintf(l->kind, sizeof l->kind, "%s", kind ? (const char *)kind : "");
    l->seq = fsc__ld_col_i(st, 2, 0);
    l->t = fsc__ld_col_i(st, 3, 0);
    l->oom_id = fsc__ld_col_i(st, 4, -1);
    l->allocated = fsc__ld_col_i(st, 5, 0);
    l->reserved = fsc__ld_col_i(st, 6, 0);
    return 0;
}

int fsc__model_load_layouts(fsc__loader_t *L, fsc__model_t *m)
{
    int h1 = 0, h2 = 0, rc;
    if ((rc = fsc__ld_has_table(L, "layout_snapshots", &h1)) != 0 || (rc = fsc__ld_has_table(L, "layout", &h2)) != 0)
        return rc;
    if (!h1 || !h2)
        return 0;
    sqlite3_stmt *st;
    /* The peak first, then the OOMs in order. */
    rc = fsc__ld_prepare(L,
                 "SELECT id, kind, seq, time_ns, oom_id, allocated, reserved FROM layout_snapshots"
                 " ORDER BY kind <> 'peak_allocated', oom_id, id",
                 &st, "layout_snapshots");
    if (rc != 0)
        return rc;
    fsc__ld_arr_t a = {(void **)&m->layouts, &m->nlayouts, 0, FSC__V_MAX_LAYOUTS};
    if ((rc = fsc__ld_each_row(L, st, "layout_snapshots", snap_row, &a)) != 0)
        return rc;
    if (m->nlayouts == 0)
        return 0;
    /* One pass over the table for every chosen snapshot: the layout table
     * holds every block of every snapshot, and it has no index to seek. */
    char sql[512 + FSC__V_MAX_LAYOUTS * 24];
    int len = snprintf(sql, sizeof sql,
                       "SELECT segment, addr, size, requested, state, tag, age_events, age_ns,"
                       " pool, snapshot FROM layout WHERE snapshot IN (");
    for (size_t i = 0; i < m->nlayouts; i++)
        len += snprintf(sql + len, sizeof sql - (size_t)len, "%s%lld", i ? "," : "",
                        (long long)m->layouts[i].id);
    snprintf(sql + len, sizeof sql - (size_t)len, ") ORDER BY snapshot, segment, addr");
    if ((rc = fsc__ld_prepare(L, sql, &st, "layout")) != 0)
        return rc;
    lay_ctx_t c[FSC__V_MAX_LAYOUTS];
    size_t total = 0;
    memset(c, 0, sizeof c);
    for (size_t i = 0; i < m->nlayouts; i++) {
        c[i].l = &m->layouts[i];
        c[i].total = &total;
    }
    layouts_ctx_t all = {c, m->nlayouts};
    return fsc__ld_each_row(L, st, "layout", layout_row, &all);
    return 0;
}
