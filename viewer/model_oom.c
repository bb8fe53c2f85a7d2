/*
 * model_oom.c — load the OOM diagnoses: one row per OOM from ooms, and for
 * the first ones their evidence (oom_segments with oom_pinning_blocks,
 * oom_tags) and the what-if suggestions.
 */
#include <string.h>

#include "model_sql.h"

static int oom_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    fsc__ld_arr_t *a = ud;
    if (*a->n >= a->max)
        return 0;
    if (fsc__ld_grow(a->p, &a->cap, *a->n, sizeof(fsc__voom_t)) != 0)
        return fsc__ld_nomem(L);
    fsc__voom_t *o = (fsc__voom_t *)*a->p + (*a->n)++;
    int c = 0;
    o->id = fsc__ld_col_i(st, c++, 0);
    o->seq = fsc__ld_col_i(st, c++, 0);
    o->t = fsc__ld_col_i(st, c++, 0);
    o->requested = fsc__ld_col_i(st, c++, 0);
    o->rounded = fsc__ld_col_i(st, c++, 0);
    o->pool = fsc__ld_col_i(st, c++, 0);
    o->tag = fsc__ld_col_i(st, c++, 0);
    o->allocated = fsc__ld_col_i(st, c++, 0);
    o->reserved = fsc__ld_col_i(st, c++, 0);
    o->capacity = fsc__ld_col_i(st, c++, 0);
    o->capacity_inferred = (int)fsc__ld_col_i(st, c++, 0);
    o->cap_lo = fsc__ld_col_i(st, c++, -1);
    o->cap_hi = fsc__ld_col_i(st, c++, -1);
    o->device_free = fsc__ld_col_i(st, c++, -1);
    o->free_reserved = fsc__ld_col_i(st, c++, 0);
    o->largest_free = fsc__ld_col_i(st, c++, 0);
    int rc = fsc__ld_col_s(L, st, c++, &o->cause);
    if (rc == 0)
        rc = fsc__ld_col_s(L, st, c++, &o->explanation);
    else
        c++;
    o->layout_snapshot = fsc__ld_col_i(st, c++, -1);
    if (rc == 0)
        rc = fsc__ld_note_tag(L, o->tag);
    return rc;
}

typedef struct oom_ctx {
    fsc__voom_t *o;
    size_t cap;
} oom_ctx_t;

static int ooseg_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    oom_ctx_t *c = ud;
    if (fsc__ld_grow((void **)&c->o->segs, &c->cap, c->o->nsegs, sizeof *c->o->segs) != 0)
        return fsc__ld_nomem(L);
    fsc__vooseg_t *s = &c->o->segs[c->o->nsegs++];
    s->addr = fsc__ld_col_i(st, 0, 0);
    s->size = fsc__ld_col_i(st, 1, 0);
    s->free = fsc__ld_col_i(st, 2, 0);
    s->largest_free = fsc__ld_col_i(st, 3, 0);
    s->free_blocks = fsc__ld_col_i(st, 4, 0);
    s->live_blocks = fsc__ld_col_i(st, 5, 0);
    s->live_bytes = fsc__ld_col_i(st, 6, 0);
    return 0;
}

typedef struct pin_ctx {
    fsc__vooseg_t *s;
    size_t cap;
} pin_ctx_t;

static int pin_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    pin_ctx_t *c = ud;
    if (fsc__ld_grow((void **)&c->s->pins, &c->cap, c->s->npins, sizeof *c->s->pins) != 0)
        return fsc__ld_nomem(L);
    fsc__vpin_t *p = &c->s->pins[c->s->npins++];
    p->addr = fsc__ld_col_i(st, 0, 0);
    p->size = fsc__ld_col_i(st, 1, 0);
    p->requested = fsc__ld_col_i(st, 2, 0);
    const unsigned char *state = sqlite3_column_text(st, 3);
    p->pending = state != NULL && strcmp((const char *)state, "pending") == 0;
    p->age_events = fsc__ld_col_i(st, 4, -1);
    p->age_ns = fsc__ld_col_i(st, 5, -1);
    p->tag = fsc__ld_col_i(st, 6, 0);
    return fsc__ld_note_tag(L, p->tag);
}

typedef struct sugg_ctx {
    fsc__voom_t *o;
    size_t cap;
} sugg_ctx_t;

static int sugg_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    sugg_ctx_t *c = ud;
    if (fsc__ld_grow((void **)&c->o->suggs, &c->cap, c->o->nsuggs, sizeof *c->o->suggs) != 0)
        return fsc__ld_nomem(L);
    fsc__vsugg_t *s = &c->o->suggs[c->o->nsuggs++];
    s->needed_capacity = fsc__ld_col_i(st, 1, -1);
    s->avoids = (int)fsc__ld_col_i(st, 2, 0);
    int rc = fsc__ld_col_s(L, st, 0, &s->config);
    if (rc == 0)
        rc = fsc__ld_col_s(L, st, 3, &s->note);
    return rc;
}

static int load_oom_detail(fsc__loader_t *L, fsc__voom_t *o, int have_segs, int have_pins,
                           int have_tags, int have_suggs)
{
    sqlite3_stmt *st;
    int rc;
    if (have_segs) {
        rc = fsc__ld_prepare(L,
                     "SELECT segment, size, free_bytes, largest_free, free_blocks, live_blocks,"
                     " live_bytes FROM oom_segments WHERE oom_id = ? ORDER BY rank LIMIT 10",
                     &st, "oom_segments");
        if (rc != 0)
            return rc;
        sqlite3_bind_int64(st, 1, o->id);
        oom_ctx_t c = {o, 0};
        if ((rc = fsc__ld_each_row(L, st, "oom_segments", ooseg_row, &c)) != 0)
            return rc;
    }
    for (size_t i = 0; have_pins && i < o->nsegs; i++) {
        rc = fsc__ld_prepare(L,
                     "SELECT addr, size, requested, state, age_events, age_ns, tag"
                     " FROM oom_pinning_blocks WHERE oom_id = ? AND segment = ?"
                     " ORDER BY size DESC, addr LIMIT 20",
                     &st, "oom_pinning_blocks");
        if (rc != 0)
            return rc;
        sqlite3_bind_int64(st, 1, o->id);
        sqlite3_bind_int64(st, 2, o->segs[i].addr);
        pin_ctx_t c = {&o->segs[i], 0};
        if ((rc = fsc__ld_each_row(L, st, "oom_pinning_blocks", pin_row, &c)) != 0)
            return rc;
    }
    if (have_tags) {
        rc = fsc__ld_prepare(L,
                     "SELECT tag, live_bytes, live_blocks FROM oom_tags WHERE oom_id = ?"
                     " ORDER BY rank LIMIT 20",
                     &st, "oom_tags");
        if (rc != 0)
            return rc;
        sqlite3_bind_int64(st, 1, o->id);
        fsc__ld_tagrows_t t = {&o->tags, &o->ntags, 0};
        if ((rc = fsc__ld_each_row(L, st, "oom_tags", fsc__ld_tagrow_row, &t)) != 0)
            return rc;
    }
    if (have_suggs) {
        rc = fsc__ld_prepare(L,
                     "SELECT substr(config, 1, " FSC__V_SQL_STR "), needed_capacity, avoids_oom,"
                     " substr(note, 1, " FSC__V_SQL_STR ") FROM suggestions"
                     " WHERE oom_id = ? OR oom_id IS NULL ORDER BY avoids_oom DESC,"
                     " needed_capacity IS NULL, needed_capacity LIMIT 20",
                     &st, "suggestions");
        if (rc != 0)
            return rc;
        sqlite3_bind_int64(st, 1, o->id);
        sugg_ctx_t c = {o, 0};
        if ((rc = fsc__ld_each_row(L, st, "suggestions", sugg_row, &c)) != 0)
            return rc;
    }
    return 0;
}

int fsc__model_load_ooms(fsc__loader_t *L, fsc__model_t *m)
{
    int have = 0, rc = fsc__ld_has_table(L, "ooms", &have);
    if (rc != 0 || !have)
        return rc;
    if ((rc = fsc__ld_count(L, "SELECT count(*) FROM ooms", "ooms", &m->ooms_total)) != 0)
        return rc;
    sqlite3_stmt *st;
    rc = fsc__ld_prepare(L,
                 "SELECT id, seq, time_ns, requested, rounded, pool, tag, allocated, reserved,"
                 " capacity, capacity_inferred, capacity_lower, capacity_upper, device_free,"
                 " free_in_reserved, largest_free, substr(cause, 1, 33),"
                 " substr(explanation, 1, " FSC__V_SQL_TEXT "), layout_snapshot"
                 " FROM ooms ORDER BY id",
                 &st, "ooms");
    if (rc != 0)
        return rc;
    fsc__ld_arr_t a = {(void **)&m->ooms, &m->nooms, 0, FSC__V_MAX_OOMS};
    if ((rc = fsc__ld_each_row(L, st, "ooms", oom_row, &a)) != 0)
        return rc;
    int hs = 0, hp = 0, ht = 0, hg = 0;
    if ((rc = fsc__ld_has_table(L, "oom_segments", &hs)) != 0 || (rc = fsc__ld_has_table(L, "oom_pinning_blocks", &hp)) != 0 ||
        (rc = fsc__ld_has_table(L, "oom_tags", &ht)) != 0 || (rc = fsc__ld_has_table(L, "suggestions", &hg)) != 0)
        return rc;
    for (size_t i = 0; i < m->nooms && i < FSC__V_MAX_OOM_DETAIL; i++)
        if ((rc = load_oom_detail(L, &m->ooms[i], hs, hp, ht, hg)) != 0)
            return rc;
    return 0;
}
