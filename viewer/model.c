/*
 * model.c — load the report's data from a run database (docs/schema.md).
 *
 * The database is opened read-only and checked first (an SQLite file with a
 * meta table that says schema_version 1), so a foreign file fails with one
 * clear message instead of an SQL error deep inside a query. Only bounded
 * tables are read; the one that grows with the live state (layout) is read
 * for a few snapshots and capped.
 */
#include "model.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FSC__SCHEMA_VERSION 1

typedef struct loader {
    sqlite3 *db;
    const char *path;
    fsc_err_t *err;
    int64_t *tag_ids; /* every tag id referenced, for the tag table */
    size_t ntag_ids, cap_tag_ids;
} loader_t;

static char *dupstr(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* Grow *arr (of elem bytes) so that index n fits. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c <= n)
        c *= 2;
    void *p = realloc(*arr, c * elem);
    if (p == NULL)
        return -1;
    memset((char *)p + *cap * elem, 0, (c - *cap) * elem);
    *arr = p;
    *cap = c;
    return 0;
}

static int nomem(loader_t *L)
{
    return fsc_err_set(L->err, FSC_ENOMEM, "%s: out of memory while reading the database", L->path);
}

static int sql_fail(loader_t *L, const char *what)
{
    int code = sqlite3_errcode(L->db);
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        return fsc_err_set(L->err, FSC_EFORMAT, "%s: not an SQLite database (%s)", L->path,
                           sqlite3_errmsg(L->db));
    if (code == SQLITE_ERROR)
        return fsc_err_set(L->err, FSC_EFORMAT, "%s: not a fragscope database (%s: %s)", L->path,
                           what, sqlite3_errmsg(L->db));
    return fsc_err_set(L->err, FSC_ESQLITE, "%s: SQLite error reading %s: %s", L->path, what,
                       sqlite3_errmsg(L->db));
}

static int prepare(loader_t *L, const char *sql, sqlite3_stmt **st, const char *what)
{
    if (sqlite3_prepare_v2(L->db, sql, -1, st, NULL) != SQLITE_OK) {
        *st = NULL;
        return sql_fail(L, what);
    }
    return 0;
}

static int has_table(loader_t *L, const char *name, int *out)
{
    sqlite3_stmt *st;
    int rc = prepare(L, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?",
                     &st, "the table list");
    if (rc != 0)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    *out = s == SQLITE_ROW;
    sqlite3_finalize(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        return sql_fail(L, "the table list");
    return 0;
}

static int64_t col_i(sqlite3_stmt *st, int i, int64_t if_null)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? if_null : sqlite3_column_int64(st, i);
}

static double col_d(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? 0.0 : sqlite3_column_double(st, i);
}

static int col_s(loader_t *L, sqlite3_stmt *st, int i, char **out)
{
    *out = NULL;
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return 0;
    const unsigned char *s = sqlite3_column_text(st, i);
    *out = dupstr(s ? (const char *)s : "");
    return *out == NULL ? nomem(L) : 0;
}

static int note_tag(loader_t *L, int64_t id)
{
    if (id < 0)
        return 0;
    if (grow((void **)&L->tag_ids, &L->cap_tag_ids, L->ntag_ids, sizeof *L->tag_ids) != 0)
        return nomem(L);
    L->tag_ids[L->ntag_ids++] = id;
    return 0;
}

/* Run a query row by row: fn(L, st, ud) per row; stops on its error. */
typedef int (*row_fn)(loader_t *L, sqlite3_stmt *st, void *ud);

static int each_row(loader_t *L, sqlite3_stmt *st, const char *what, row_fn fn, void *ud)
{
    int s, rc = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = fn(L, st, ud)) != 0)
            break;
    }
    if (rc == 0 && s != SQLITE_DONE && s != SQLITE_ROW)
        rc = sql_fail(L, what);
    sqlite3_finalize(st);
    return rc;
}

/* ---- meta and summary ------------------------------------------------- */

typedef struct kvs {
    fsc__vkv_t **arr;
    size_t *n, cap;
} kvs_t;

static int kv_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    kvs_t *k = ud;
    if (grow((void **)k->arr, &k->cap, *k->n, sizeof **k->arr) != 0)
        return nomem(L);
    fsc__vkv_t *e = &(*k->arr)[*k->n];
    int rc = col_s(L, st, 0, &e->key);
    if (rc != 0)
        return rc;
    (*k->n)++;
    if (e->key == NULL)
        return nomem(L);
    switch (sqlite3_column_type(st, 1)) {
    case SQLITE_INTEGER:
        e->is_int = 1;
        e->i = sqlite3_column_int64(st, 1);
        e->num = (double)e->i;
        break;
    case SQLITE_FLOAT:
        e->num = sqlite3_column_double(st, 1);
        break;
    case SQLITE_NULL:
        break;
    default:
        return col_s(L, st, 1, &e->text);
    }
    return 0;
}

static int load_kv(loader_t *L, const char *table, fsc__vkv_t **arr, size_t *n)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT key, value FROM %s", table);
    sqlite3_stmt *st;
    int rc = prepare(L, sql, &st, table);
    if (rc != 0)
        return rc;
    kvs_t k = {arr, n, 0};
    return each_row(L, st, table, kv_row, &k);
}

/* The gate: SQLite, a meta table, schema_version 1. */
static int check_database(loader_t *L, fsc__model_t *m)
{
    int has_meta = 0, has_summary = 0;
    int rc = has_table(L, "meta", &has_meta);
    if (rc != 0)
        return rc;
    if (!has_meta)
        return fsc_err_set(L->err, FSC_EFORMAT, "%s: not a fragscope database (no meta table)",
                           L->path);
    if ((rc = load_kv(L, "meta", &m->meta, &m->nmeta)) != 0)
        return rc;
    const fsc__vkv_t *v = fsc__model_meta(m, "schema_version");
    if (v == NULL)
        return fsc_err_set(L->err, FSC_EFORMAT,
                           "%s: not a fragscope database (meta has no schema_version)", L->path);
    long long version = v->text != NULL ? atoll(v->text) : v->is_int ? (long long)v->i : -1;
    if (version != FSC__SCHEMA_VERSION)
        return fsc_err_set(L->err, FSC_EVERSION,
                           "%s: database schema version %lld is not supported (this viewer reads %d)",
                           L->path, version, FSC__SCHEMA_VERSION);
    if ((rc = has_table(L, "summary", &has_summary)) != 0)
        return rc;
    if (!has_summary)
        return fsc_err_set(L->err, FSC_EFORMAT, "%s: not a fragscope database (no summary table)",
                           L->path);
    return load_kv(L, "summary", &m->summary, &m->nsummary);
}

/* ---- timeline and markers ---------------------------------------------- */

typedef struct arr {
    void **p;
    size_t *n, cap, max;
} arr_t;

static int sample_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    arr_t *a = ud;
    if (*a->n >= a->max)
        return 0;
    if (grow(a->p, &a->cap, *a->n, sizeof(fsc__vsample_t)) != 0)
        return nomem(L);
    fsc__vsample_t *s = (fsc__vsample_t *)*a->p + (*a->n)++;
    s->t = col_i(st, 0, 0);
    s->seq = col_i(st, 1, 0);
    s->seq_last = col_i(st, 2, s->seq);
    s->t_last = col_i(st, 9, s->t);
    s->allocated = col_i(st, 3, 0);
    s->requested = col_i(st, 4, 0);
    s->reserved = col_i(st, 5, 0);
    s->internal = col_i(st, 6, 0);
    s->rbu = col_i(st, 7, 0);
    s->external = col_d(st, 8);
    return 0;
}

static int marker_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    arr_t *a = ud;
    if (*a->n >= a->max)
        return 0;
    if (grow(a->p, &a->cap, *a->n, sizeof(fsc__vmarker_t)) != 0)
        return nomem(L);
    fsc__vmarker_t *mk = (fsc__vmarker_t *)*a->p + *a->n;
    mk->seq = col_i(st, 0, 0);
    mk->t = col_i(st, 1, 0);
    int rc = col_s(L, st, 2, &mk->text);
    if (rc == 0 && mk->text == NULL && (mk->text = dupstr("")) == NULL)
        rc = nomem(L);
    (*a->n)++;
    return rc;
}

static int count_rows(loader_t *L, const char *sql, const char *what, int64_t *out)
{
    sqlite3_stmt *st;
    int rc = prepare(L, sql, &st, what);
    if (rc != 0)
        return rc;
    int s = sqlite3_step(st);
    *out = s == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return s == SQLITE_ROW || s == SQLITE_DONE ? 0 : sql_fail(L, what);
}

static int load_timeline(loader_t *L, fsc__model_t *m)
{
    int have = 0, rc = has_table(L, "timeline", &have);
    if (rc != 0 || !have)
        return rc;
    /* Each bucket is drawn from its first event on, with the bucket's maxima
     * of allocated, reserved and reserved-but-unallocated, so a spike inside
     * a bucket still shows; the other series are the values at its end. */
    sqlite3_stmt *st;
    rc = prepare(L,
                 "SELECT time_first_ns, seq_first, seq_last, allocated_max, requested, reserved_max,"
                 " internal_frag, reserved_unallocated_max, external_frag, time_last_ns FROM timeline"
                 " ORDER BY seq_first",
                 &st, "timeline");
    if (rc != 0)
        return rc;
    arr_t a = {(void **)&m->timeline, &m->ntimeline, 0, FSC__V_MAX_TIMELINE};
    if ((rc = each_row(L, st, "timeline", sample_row, &a)) != 0)
        return rc;
    m->bucket_events = fsc__model_meta_i(m, "timeline_bucket_events", 1);

    if ((rc = has_table(L, "markers", &have)) != 0 || !have)
        return rc;
    if ((rc = count_rows(L, "SELECT count(*) FROM markers", "markers", &m->markers_total)) != 0)
        return rc;
    if ((rc = prepare(L, "SELECT seq, time_ns, text FROM markers ORDER BY seq", &st, "markers")) != 0)
        return rc;
    arr_t b = {(void **)&m->markers, &m->nmarkers, 0, FSC__V_MAX_MARKERS};
    return each_row(L, st, "markers", marker_row, &b);
}

/* ---- OOMs ------------------------------------------------------------- */

static int oom_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    arr_t *a = ud;
    if (*a->n >= a->max)
        return 0;
    if (grow(a->p, &a->cap, *a->n, sizeof(fsc__voom_t)) != 0)
        return nomem(L);
    fsc__voom_t *o = (fsc__voom_t *)*a->p + (*a->n)++;
    int c = 0;
    o->id = col_i(st, c++, 0);
    o->seq = col_i(st, c++, 0);
    o->t = col_i(st, c++, 0);
    o->requested = col_i(st, c++, 0);
    o->rounded = col_i(st, c++, 0);
    o->pool = col_i(st, c++, 0);
    o->tag = col_i(st, c++, 0);
    o->allocated = col_i(st, c++, 0);
    o->reserved = col_i(st, c++, 0);
    o->capacity = col_i(st, c++, 0);
    o->capacity_inferred = (int)col_i(st, c++, 0);
    o->cap_lo = col_i(st, c++, -1);
    o->cap_hi = col_i(st, c++, -1);
    o->device_free = col_i(st, c++, -1);
    o->free_reserved = col_i(st, c++, 0);
    o->largest_free = col_i(st, c++, 0);
    int rc = col_s(L, st, c++, &o->cause);
    if (rc == 0)
        rc = col_s(L, st, c++, &o->explanation);
    else
        c++;
    o->layout_snapshot = col_i(st, c++, -1);
    if (rc == 0)
        rc = note_tag(L, o->tag);
    return rc;
}

typedef struct oom_ctx {
    fsc__voom_t *o;
    size_t cap;
} oom_ctx_t;

static int ooseg_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    oom_ctx_t *c = ud;
    if (grow((void **)&c->o->segs, &c->cap, c->o->nsegs, sizeof *c->o->segs) != 0)
        return nomem(L);
    fsc__vooseg_t *s = &c->o->segs[c->o->nsegs++];
    s->addr = col_i(st, 0, 0);
    s->size = col_i(st, 1, 0);
    s->free = col_i(st, 2, 0);
    s->largest_free = col_i(st, 3, 0);
    s->free_blocks = col_i(st, 4, 0);
    s->live_blocks = col_i(st, 5, 0);
    s->live_bytes = col_i(st, 6, 0);
    return 0;
}

typedef struct pin_ctx {
    fsc__vooseg_t *s;
    size_t cap;
} pin_ctx_t;

static int pin_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    pin_ctx_t *c = ud;
    if (grow((void **)&c->s->pins, &c->cap, c->s->npins, sizeof *c->s->pins) != 0)
        return nomem(L);
    fsc__vpin_t *p = &c->s->pins[c->s->npins++];
    p->addr = col_i(st, 0, 0);
    p->size = col_i(st, 1, 0);
    p->requested = col_i(st, 2, 0);
    const unsigned char *state = sqlite3_column_text(st, 3);
    p->pending = state != NULL && strcmp((const char *)state, "pending") == 0;
    p->age_events = col_i(st, 4, -1);
    p->age_ns = col_i(st, 5, -1);
    p->tag = col_i(st, 6, 0);
    return note_tag(L, p->tag);
}

typedef struct tagrows {
    fsc__vtagrow_t **arr;
    size_t *n, cap;
} tagrows_t;

static int tagrow_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    tagrows_t *t = ud;
    if (grow((void **)t->arr, &t->cap, *t->n, sizeof **t->arr) != 0)
        return nomem(L);
    fsc__vtagrow_t *r = &(*t->arr)[(*t->n)++];
    r->tag = col_i(st, 0, 0);
    r->bytes = col_i(st, 1, 0);
    r->blocks = col_i(st, 2, 0);
    return note_tag(L, r->tag);
}

typedef struct sugg_ctx {
    fsc__voom_t *o;
    size_t cap;
} sugg_ctx_t;

static int sugg_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    sugg_ctx_t *c = ud;
    if (grow((void **)&c->o->suggs, &c->cap, c->o->nsuggs, sizeof *c->o->suggs) != 0)
        return nomem(L);
    fsc__vsugg_t *s = &c->o->suggs[c->o->nsuggs++];
    s->needed_capacity = col_i(st, 1, -1);
    s->avoids = (int)col_i(st, 2, 0);
    int rc = col_s(L, st, 0, &s->config);
    if (rc == 0)
        rc = col_s(L, st, 3, &s->note);
    return rc;
}

static int load_oom_detail(loader_t *L, fsc__voom_t *o, int have_segs, int have_pins,
                           int have_tags, int have_suggs)
{
    sqlite3_stmt *st;
    int rc;
    if (have_segs) {
        rc = prepare(L,
                     "SELECT segment, size, free_bytes, largest_free, free_blocks, live_blocks,"
                     " live_bytes FROM oom_segments WHERE oom_id = ? ORDER BY rank LIMIT 10",
                     &st, "oom_segments");
        if (rc != 0)
            return rc;
        sqlite3_bind_int64(st, 1, o->id);
        oom_ctx_t c = {o, 0};
        if ((rc = each_row(L, st, "oom_segments", ooseg_row, &c)) != 0)
            return rc;
    }
    for (size_t i = 0; have_pins && i < o->nsegs; i++) {
        rc = prepare(L,
                     "SELECT addr, size, requested, state, age_events, age_ns, tag"
                     " FROM oom_pinning_blocks WHERE oom_id = ? AND segment = ?"
                     " ORDER BY size DESC, addr LIMIT 20",
                     &st, "oom_pinning_blocks");
        if (rc != 0)
            return rc;
        sqlite3_bind_int64(st, 1, o->id);
        sqlite3_bind_int64(st, 2, o->segs[i].addr);
        pin_ctx_t c = {&o->segs[i], 0};
        if ((rc = each_row(L, st, "oom_pinning_blocks", pin_row, &c)) != 0)
            return rc;
    }
    if (have_tags) {
        rc = prepare(L,
                     "SELECT tag, live_bytes, live_blocks FROM oom_tags WHERE oom_id = ?"
                     " ORDER BY rank LIMIT 20",
                     &st, "oom_tags");
        if (rc != 0)
            return rc;
        sqlite3_bind_int64(st, 1, o->id);
        tagrows_t t = {&o->tags, &o->ntags, 0};
        if ((rc = each_row(L, st, "oom_tags", tagrow_row, &t)) != 0)
            return rc;
    }
    if (have_suggs) {
        rc = prepare(L,
                     "SELECT config, needed_capacity, avoids_oom, note FROM suggestions"
                     " WHERE oom_id = ? OR oom_id IS NULL ORDER BY avoids_oom DESC,"
                     " needed_capacity IS NULL, needed_capacity LIMIT 20",
                     &st, "suggestions");
        if (rc != 0)
            return rc;
        sqlite3_bind_int64(st, 1, o->id);
        sugg_ctx_t c = {o, 0};
        if ((rc = each_row(L, st, "suggestions", sugg_row, &c)) != 0)
            return rc;
    }
    return 0;
}

static int load_ooms(loader_t *L, fsc__model_t *m)
{
    int have = 0, rc = has_table(L, "ooms", &have);
    if (rc != 0 || !have)
        return rc;
    if ((rc = count_rows(L, "SELECT count(*) FROM ooms", "ooms", &m->ooms_total)) != 0)
        return rc;
    sqlite3_stmt *st;
    rc = prepare(L,
                 "SELECT id, seq, time_ns, requested, rounded, pool, tag, allocated, reserved,"
                 " capacity, capacity_inferred, capacity_lower, capacity_upper, device_free,"
                 " free_in_reserved, largest_free, cause, explanation, layout_snapshot"
                 " FROM ooms ORDER BY id",
                 &st, "ooms");
    if (rc != 0)
        return rc;
    arr_t a = {(void **)&m->ooms, &m->nooms, 0, FSC__V_MAX_OOMS};
    if ((rc = each_row(L, st, "ooms", oom_row, &a)) != 0)
        return rc;
    int hs = 0, hp = 0, ht = 0, hg = 0;
    if ((rc = has_table(L, "oom_segments", &hs)) != 0 || (rc = has_table(L, "oom_pinning_blocks", &hp)) != 0 ||
        (rc = has_table(L, "oom_tags", &ht)) != 0 || (rc = has_table(L, "suggestions", &hg)) != 0)
        return rc;
    for (size_t i = 0; i < m->nooms && i < FSC__V_MAX_OOM_DETAIL; i++)
        if ((rc = load_oom_detail(L, &m->ooms[i], hs, hp, ht, hg)) != 0)
            return rc;
    return 0;
}

/* ---- bins and tags ---------------------------------------------------- */

static int bin_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    arr_t *a = ud;
    if (grow(a->p, &a->cap, *a->n, sizeof(fsc__vbin_t)) != 0)
        return nomem(L);
    fsc__vbin_t *b = (fsc__vbin_t *)*a->p + (*a->n)++;
    int64_t *f[] = {&b->bin, &b->lo, &b->hi, &b->requests, &b->requested, &b->allocated,
                    &b->waste, &b->hits, &b->misses, &b->splits, &b->merges, &b->peak_blocks,
                    &b->peak_bytes, &b->live_bytes_at_peak, &b->free_bytes_at_peak};
    for (int i = 0; i < (int)(sizeof f / sizeof f[0]); i++)
        *f[i] = col_i(st, i, 0);
    return 0;
}

static int load_bins_tags(loader_t *L, fsc__model_t *m)
{
    int have = 0, rc = has_table(L, "bins", &have);
    sqlite3_stmt *st;
    if (rc != 0)
        return rc;
    if (have) {
        rc = prepare(L,
                     "SELECT bin, lo, hi, requests, requested_bytes, allocated_bytes, internal_waste,"
                     " cache_hits, cache_misses, splits, merges, peak_live_blocks, peak_live_bytes,"
                     " live_bytes_at_peak, free_bytes_at_peak FROM bins"
                     " WHERE requests > 0 OR free_blocks_at_peak > 0 ORDER BY bin LIMIT 64",
                     &st, "bins");
        if (rc != 0)
            return rc;
        arr_t a = {(void **)&m->bins, &m->nbins, 0, 64};
        if ((rc = each_row(L, st, "bins", bin_row, &a)) != 0)
            return rc;
    }
    if ((rc = has_table(L, "tag_stats", &have)) != 0 || !have)
        return rc;
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT tag, live_bytes_at_peak, live_blocks_at_peak FROM tag_stats"
             " WHERE live_bytes_at_peak > 0 ORDER BY live_bytes_at_peak DESC, tag LIMIT %d",
             FSC__V_MAX_TAG_ROWS);
    if ((rc = prepare(L, sql, &st, "tag_stats")) != 0)
        return rc;
    tagrows_t t = {&m->top_tags, &m->ntop_tags, 0};
    if ((rc = each_row(L, st, "tag_stats", tagrow_row, &t)) != 0)
        return rc;
    snprintf(sql, sizeof sql,
             "SELECT tag, live_bytes_end, live_blocks_end FROM tag_stats"
             " WHERE live_bytes_end > 0 ORDER BY live_bytes_end DESC, tag LIMIT %d",
             FSC__V_MAX_TAG_ROWS);
    if ((rc = prepare(L, sql, &st, "tag_stats")) != 0)
        return rc;
    tagrows_t u = {&m->leaks, &m->nleaks, 0};
    return each_row(L, st, "tag_stats", tagrow_row, &u);
}

/* ---- layouts ---------------------------------------------------------- */

typedef struct lay_ctx {
    fsc__vlayout_t *l;
    size_t cap, cap_seg;
    size_t *total; /* blocks loaded over all layouts */
} lay_ctx_t;

static int block_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    lay_ctx_t *c = ud;
    fsc__vlayout_t *l = c->l;
    if (*c->total >= FSC__V_MAX_LAYOUT_BLOCKS) {
        l->truncated = 1;
        return 0;
    }
    (*c->total)++;
    if (grow((void **)&l->blocks, &c->cap, l->nblocks, sizeof *l->blocks) != 0 ||
        grow((void **)&l->block_seg, &c->cap_seg, l->nblocks, sizeof *l->block_seg) != 0)
        return nomem(L);
    fsc__vblock_t *b = &l->blocks[l->nblocks];
    l->block_seg[l->nblocks++] = col_i(st, 0, 0);
    b->addr = col_i(st, 1, 0);
    b->size = col_i(st, 2, 0);
    b->requested = col_i(st, 3, -1);
    const unsigned char *state = sqlite3_column_text(st, 4);
    const char *s = state ? (const char *)state : "";
    b->state = strcmp(s, "allocated") == 0 ? FSC__BLK_ALLOC
             : strcmp(s, "pending") == 0   ? FSC__BLK_PENDING
                                           : FSC__BLK_FREE;
    b->tag = col_i(st, 5, -1);
    b->age_events = col_i(st, 6, -1);
    b->age_ns = col_i(st, 7, -1);
    b->pool = (int)col_i(st, 8, 0);
    if (b->state == FSC__BLK_FREE)
        b->tag = -1;
    return note_tag(L, b->tag);
}

typedef struct layouts_ctx {
    lay_ctx_t *c;
    size_t n;
} layouts_ctx_t;

static int layout_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    layouts_ctx_t *all = ud;
    int64_t snap = col_i(st, 9, -1);
    for (size_t i = 0; i < all->n; i++)
        if (all->c[i].l->id == snap)
            return block_row(L, st, &all->c[i]);
    return 0;
}

static int snap_row(loader_t *L, sqlite3_stmt *st, void *ud)
{
    arr_t *a = ud;
    if (*a->n >= a->max)
        return 0;
    if (grow(a->p, &a->cap, *a->n, sizeof(fsc__vlayout_t)) != 0)
        return nomem(L);
    fsc__vlayout_t *l = (fsc__vlayout_t *)*a->p + (*a->n)++;
    l->id = col_i(st, 0, 0);
    const unsigned char *kind = sqlite3_column_text(st, 1);
    snprintf(l->kind, sizeof l->kind, "%s", kind ? (const char *)kind : "");
    l->seq = col_i(st, 2, 0);
    l->t = col_i(st, 3, 0);
    l->oom_id = col_i(st, 4, -1);
    l->allocated = col_i(st, 5, 0);
    l->reserved = col_i(st, 6, 0);
    return 0;
}

static int load_layouts(loader_t *L, fsc__model_t *m)
{
    int h1 = 0, h2 = 0, rc;
    if ((rc = has_table(L, "layout_snapshots", &h1)) != 0 || (rc = has_table(L, "layout", &h2)) != 0)
        return rc;
    if (!h1 || !h2)
        return 0;
    sqlite3_stmt *st;
    /* The peak first, then the OOMs in order. */
    rc = prepare(L,
                 "SELECT id, kind, seq, time_ns, oom_id, allocated, reserved FROM layout_snapshots"
                 " ORDER BY kind <> 'peak_allocated', oom_id, id",
                 &st, "layout_snapshots");
    if (rc != 0)
        return rc;
    arr_t a = {(void **)&m->layouts, &m->nlayouts, 0, FSC__V_MAX_LAYOUTS};
    if ((rc = each_row(L, st, "layout_snapshots", snap_row, &a)) != 0)
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
    if ((rc = prepare(L, sql, &st, "layout")) != 0)
        return rc;
    lay_ctx_t c[FSC__V_MAX_LAYOUTS];
    size_t total = 0;
    memset(c, 0, sizeof c);
    for (size_t i = 0; i < m->nlayouts; i++) {
        c[i].l = &m->layouts[i];
        c[i].total = &total;
    }
    layouts_ctx_t all = {c, m->nlayouts};
    return each_row(L, st, "layout", layout_row, &all);
    return 0;
}

/* ---- tag paths -------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int load_tag_paths(loader_t *L, fsc__model_t *m)
{
    if (L->ntag_ids == 0)
        return 0;
    qsort(L->tag_ids, L->ntag_ids, sizeof *L->tag_ids, cmp_i64);
    size_t n = 0;
    for (size_t i = 0; i < L->ntag_ids; i++)
        if (n == 0 || L->tag_ids[n - 1] != L->tag_ids[i])
            L->tag_ids[n++] = L->tag_ids[i];
    m->tags = calloc(n, sizeof *m->tags);
    if (m->tags == NULL)
        return nomem(L);
    int have = 0, rc = has_table(L, "tags", &have);
    if (rc != 0)
        return rc;
    sqlite3_stmt *st = NULL;
    if (have && (rc = prepare(L, "SELECT path FROM tags WHERE id = ?", &st, "tags")) != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        fsc__vtag_t *t = &m->tags[m->ntags++];
        t->id = L->tag_ids[i];
        if (st != NULL) {
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, t->id);
            int s = sqlite3_step(st);
            if (s == SQLITE_ROW) {
                if ((rc = col_s(L, st, 0, &t->path)) != 0)
                    break;
            } else if (s != SQLITE_DONE) {
                rc = sql_fail(L, "tags");
                break;
            }
        }
        if (t->path == NULL) {
            char buf[48];
            if (t->id == 0)
                buf[0] = '\0';
            else
                snprintf(buf, sizeof buf, "tag %lld", (long long)t->id);
            if ((t->path = dupstr(buf)) == NULL) {
                rc = nomem(L);
                break;
            }
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---- entry points ----------------------------------------------------- */

int fsc__model_load(const char *db_path, fsc__model_t *m, fsc_err_t *err)
{
    memset(m, 0, sizeof *m);
    if (db_path == NULL || db_path[0] == '\0')
        return fsc_err_set(err, FSC_EINVAL, "no database path given");
    struct stat sb;
    if (stat(db_path, &sb) != 0)
        return fsc_err_set(err, errno == ENOENT ? FSC_ENOENT : FSC_EIO, "%s: %s", db_path,
                           strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return fsc_err_set(err, FSC_EFORMAT, "%s: not a regular file", db_path);
    if (sb.st_size == 0)
        return fsc_err_set(err, FSC_EFORMAT, "%s: empty file, not a fragscope database", db_path);

    const char *base = strrchr(db_path, '/');
    m->db_name = dupstr(base ? base + 1 : db_path);
    if (m->db_name == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");

    loader_t L = {NULL, db_path, err, NULL, 0, 0};
    if (sqlite3_open_v2(db_path, &L.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        int rc = fsc_err_set(err, FSC_ESQLITE, "%s: cannot open: %s", db_path,
                             L.db ? sqlite3_errmsg(L.db) : "out of memory");
        sqlite3_close(L.db);
        fsc__model_free(m);
        return rc;
    }
    int rc = check_database(&L, m);
    if (rc == 0)
        rc = load_timeline(&L, m);
    if (rc == 0)
        rc = load_ooms(&L, m);
    if (rc == 0)
        rc = load_bins_tags(&L, m);
    if (rc == 0)
        rc = load_layouts(&L, m);
    if (rc == 0)
        rc = load_tag_paths(&L, m);
    free(L.tag_ids);
    sqlite3_close(L.db);
    if (rc != 0)
        fsc__model_free(m);
    return rc;
}

static void free_kvs(fsc__vkv_t *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].text);
    }
    free(kv);
}

void fsc__model_free(fsc__model_t *m)
{
    if (m == NULL)
        return;
    free(m->db_name);
    free_kvs(m->meta, m->nmeta);
    free_kvs(m->summary, m->nsummary);
    free(m->timeline);
    for (size_t i = 0; i < m->nmarkers; i++)
        free(m->markers[i].text);
    free(m->markers);
    for (size_t i = 0; i < m->nooms; i++) {
        fsc__voom_t *o = &m->ooms[i];
        free(o->cause);
        free(o->explanation);
        for (size_t j = 0; j < o->nsegs; j++)
            free(o->segs[j].pins);
        free(o->segs);
        free(o->tags);
        for (size_t j = 0; j < o->nsuggs; j++) {
            free(o->suggs[j].config);
            free(o->suggs[j].note);
        }
        free(o->suggs);
    }
    free(m->ooms);
    free(m->bins);
    free(m->top_tags);
    free(m->leaks);
    for (size_t i = 0; i < m->nlayouts; i++) {
        free(m->layouts[i].blocks);
        free(m->layouts[i].block_seg);
    }
    free(m->layouts);
    for (size_t i = 0; i < m->ntags; i++)
        free(m->tags[i].path);
    free(m->tags);
    memset(m, 0, sizeof *m);
}

static const fsc__vkv_t *find_kv(const fsc__vkv_t *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (kv[i].key != NULL && strcmp(kv[i].key, key) == 0)
            return &kv[i];
    return NULL;
}

const fsc__vkv_t *fsc__model_meta(const fsc__model_t *m, const char *key)
{
    return find_kv(m->meta, m->nmeta, key);
}

const fsc__vkv_t *fsc__model_sum(const fsc__model_t *m, const char *key)
{
    return find_kv(m->summary, m->nsummary, key);
}

static int64_t kv_i(const fsc__vkv_t *v, int64_t dflt)
{
    if (v == NULL || v->text != NULL)
        return dflt;
    if (v->is_int)
        return v->i;
    if (v->num >= (double)INT64_MIN && v->num < (double)INT64_MAX)
        return (int64_t)v->num;
    return dflt;
}

int64_t fsc__model_sum_i(const fsc__model_t *m, const char *key, int64_t dflt)
{
    return kv_i(fsc__model_sum(m, key), dflt);
}

double fsc__model_sum_d(const fsc__model_t *m, const char *key, double dflt)
{
    const fsc__vkv_t *v = fsc__model_sum(m, key);
    return v == NULL || v->text != NULL ? dflt : v->num;
}

int64_t fsc__model_meta_i(const fsc__model_t *m, const char *key, int64_t dflt)
{
    return kv_i(fsc__model_meta(m, key), dflt);
}

const char *fsc__model_meta_s(const fsc__model_t *m, const char *key, char *buf, size_t cap)
{
    const fsc__vkv_t *v = fsc__model_meta(m, key);
    if (v == NULL)
        return "";
    if (v->text != NULL)
        return v->text;
    if (v->is_int)
        snprintf(buf, cap, "%lld", (long long)v->i);
    else
        snprintf(buf, cap, "%g", v->num);
    return buf;
}

const char *fsc__model_tag_path(const fsc__model_t *m, int64_t id)
{
    size_t lo = 0, hi = m->ntags;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->tags[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->ntags && m->tags[lo].id == id ? m->tags[lo].path : NULL;
}
