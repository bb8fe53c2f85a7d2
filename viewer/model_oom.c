/*
 * model_oom.c — load the OOM diagnoses: one row per OOM from ooms, and for
 * the first ones their evidence (oom_segments with oom_pinning_blocks,
 * oom_tags) and the what-if suggestions.
 */
#include <stdlib.h>
#include <string.h>

#include "model_load.h"

/* Evidence rows loaded per OOM (the database holds at most 10 segments,
 * 20 pinning blocks per segment and 20 tags). */
#define MAX_SEGS 10
#define MAX_PINS 20
#define MAX_TAGS 20
#define MAX_SUGGS 20

static int oom_row(void *ud, const fsc_rundb_oom_t *x)
{
    fsc__ld_arr_t *a = ud;
    fsc__loader_t *L = a->L;
    if (*a->n >= a->max)
        return FSC_RUNDB_STOP;
    if (fsc__ld_grow(a->p, &a->cap, *a->n, sizeof(fsc__voom_t)) != 0)
        return fsc__ld_nomem(L);
    fsc__voom_t *o = (fsc__voom_t *)*a->p + (*a->n)++;
    o->id = fsc__ld_i(x->id, 0);
    o->seq = fsc__ld_i(x->seq, 0);
    o->t = fsc__ld_i(x->time_ns, 0);
    o->requested = fsc__ld_i(x->requested, 0);
    o->rounded = fsc__ld_i(x->rounded, 0);
    o->pool = fsc__ld_i(x->pool, 0);
    o->tag = fsc__ld_i(x->tag, 0);
    o->allocated = fsc__ld_i(x->allocated, 0);
    o->reserved = fsc__ld_i(x->reserved, 0);
    o->capacity = fsc__ld_i(x->capacity, 0);
    o->capacity_inferred = (int)fsc__ld_i(x->capacity_inferred, 0);
    o->cap_lo = fsc__ld_i(x->capacity_lower, -1);
    o->cap_hi = fsc__ld_i(x->capacity_upper, -1);
    o->device_free = fsc__ld_i(x->device_free, -1);
    o->free_reserved = fsc__ld_i(x->free_in_reserved, 0);
    o->largest_free = fsc__ld_i(x->largest_free, 0);
    o->layout_snapshot = fsc__ld_i(x->layout_snapshot, -1);
    /* A cause is one short word; 33 characters are enough to see that a
     * stranger one was longer than the 32 the page shows. */
    int rc = fsc__ld_str(L, x->cause, 33, &o->cause);
    if (rc == 0)
        rc = fsc__ld_str(L, x->explanation, FSC__V_TEXT_CHARS + 1, &o->explanation);
    if (rc == 0)
        rc = fsc__ld_note_tag(L, o->tag);
    return rc;
}

typedef struct oom_ctx {
    fsc__loader_t *L;
    fsc__voom_t *o;
    size_t cap;
} oom_ctx_t;

static int ooseg_row(void *ud, const fsc_rundb_oom_segment_t *x)
{
    oom_ctx_t *c = ud;
    if (c->o->nsegs >= MAX_SEGS)
        return FSC_RUNDB_STOP;
    if (fsc__ld_grow((void **)&c->o->segs, &c->cap, c->o->nsegs, sizeof *c->o->segs) != 0)
        return fsc__ld_nomem(c->L);
    fsc__vooseg_t *s = &c->o->segs[c->o->nsegs++];
    s->addr = fsc__ld_i(x->segment, 0);
    s->size = fsc__ld_i(x->size, 0);
    s->free = fsc__ld_i(x->free_bytes, 0);
    s->largest_free = fsc__ld_i(x->largest_free, 0);
    s->free_blocks = fsc__ld_i(x->free_blocks, 0);
    s->live_blocks = fsc__ld_i(x->live_blocks, 0);
    s->live_bytes = fsc__ld_i(x->live_bytes, 0);
    return 0;
}

typedef struct pin_ctx {
    fsc__loader_t *L;
    fsc__vooseg_t *s;
    size_t cap;
} pin_ctx_t;

static int pin_row(void *ud, const fsc_rundb_pin_t *x)
{
    pin_ctx_t *c = ud;
    if (c->s->npins >= MAX_PINS)
        return FSC_RUNDB_STOP;
    if (fsc__ld_grow((void **)&c->s->pins, &c->cap, c->s->npins, sizeof *c->s->pins) != 0)
        return fsc__ld_nomem(c->L);
    fsc__vpin_t *p = &c->s->pins[c->s->npins++];
    p->addr = fsc__ld_i(x->addr, 0);
    p->size = fsc__ld_i(x->size, 0);
    p->requested = fsc__ld_i(x->requested, 0);
    p->pending = x->state != NULL && strcmp(x->state, "pending") == 0;
    p->age_events = fsc__ld_i(x->age_events, -1);
    p->age_ns = fsc__ld_i(x->age_ns, -1);
    p->tag = fsc__ld_i(x->tag, 0);
    return fsc__ld_note_tag(c->L, p->tag);
}

static int oom_tag_row(void *ud, const fsc_rundb_oom_tag_t *x)
{
    return fsc__ld_tagrow(ud, x->tag, x->live_bytes, x->live_blocks);
}

typedef struct sugg_ctx {
    fsc__loader_t *L;
    fsc__voom_t *o;
    size_t cap;
} sugg_ctx_t;

static int sugg_row(void *ud, const fsc_rundb_suggestion_t *x)
{
    sugg_ctx_t *c = ud;
    if (fsc__ld_grow((void **)&c->o->suggs, &c->cap, c->o->nsuggs, sizeof *c->o->suggs) != 0)
        return fsc__ld_nomem(c->L);
    fsc__vsugg_t *s = &c->o->suggs[c->o->nsuggs++];
    s->needed_capacity = fsc__ld_i(x->needed_capacity, -1);
    s->avoids = (int)fsc__ld_i(x->avoids_oom, 0);
    int rc = fsc__ld_str(c->L, x->config, FSC__V_STR_CHARS + 1, &s->config);
    if (rc == 0)
        rc = fsc__ld_str(c->L, x->note, FSC__V_STR_CHARS + 1, &s->note);
    return rc;
}

/* Best first: those that avoid the OOM, then by the capacity they need
 * (not searched last); ties keep what-if's order. */
static int sugg_before(const fsc__vsugg_t *a, const fsc__vsugg_t *b)
{
    if (a->avoids != b->avoids)
        return a->avoids > b->avoids;
    if ((a->needed_capacity < 0) != (b->needed_capacity < 0))
        return a->needed_capacity >= 0;
    return a->needed_capacity < b->needed_capacity;
}

static void sort_suggestions(fsc__voom_t *o)
{
    for (size_t i = 1; i < o->nsuggs; i++) { /* insertion sort: stable, a few rows */
        fsc__vsugg_t v = o->suggs[i];
        size_t j = i;
        for (; j > 0 && sugg_before(&v, &o->suggs[j - 1]); j--)
            o->suggs[j] = o->suggs[j - 1];
        o->suggs[j] = v;
    }
    for (size_t i = MAX_SUGGS; i < o->nsuggs; i++) {
        free(o->suggs[i].config);
        free(o->suggs[i].note);
    }
    if (o->nsuggs > MAX_SUGGS)
        o->nsuggs = MAX_SUGGS;
}

static int load_oom_detail(fsc__loader_t *L, fsc__voom_t *o)
{
    oom_ctx_t c = {L, o, 0};
    int rc = fsc__ld_read(L, fsc_rundb_oom_segments(L->db, o->id, ooseg_row, &c));
    for (size_t i = 0; rc == 0 && i < o->nsegs; i++) {
        pin_ctx_t p = {L, &o->segs[i], 0};
        rc = fsc__ld_read(L, fsc_rundb_oom_pins(L->db, o->id, o->segs[i].addr, pin_row, &p));
    }
    if (rc != 0)
        return rc;
    fsc__ld_arr_t t = {L, (void **)&o->tags, &o->ntags, 0, MAX_TAGS};
    if ((rc = fsc__ld_read(L, fsc_rundb_oom_tags(L->db, o->id, oom_tag_row, &t))) != 0)
        return rc;
    sugg_ctx_t g = {L, o, 0};
    rc = fsc__ld_read(L, fsc_rundb_suggestions(L->db, o->id, sugg_row, &g));
    sort_suggestions(o);
    return rc;
}

int fsc__model_load_ooms(fsc__loader_t *L, fsc__model_t *m)
{
    int rc = fsc__ld_read(L, fsc_rundb_count(L->db, "ooms", &m->ooms_total));
    if (rc != 0)
        return rc;
    fsc__ld_arr_t a = {L, (void **)&m->ooms, &m->nooms, 0, FSC__V_MAX_OOMS};
    if ((rc = fsc__ld_read(L, fsc_rundb_ooms(L->db, oom_row, &a))) != 0)
        return rc;
    for (size_t i = 0; i < m->nooms && i < FSC__V_MAX_OOM_DETAIL; i++)
        if ((rc = load_oom_detail(L, &m->ooms[i])) != 0)
            return rc;
    return 0;
}
