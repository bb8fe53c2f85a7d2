/*
 * model.c — load the report's data from a run database (docs/schema.md).
 *
 * The database is opened read-only and checked first (an SQLite file with a
 * meta table that says schema_version 1), so a foreign file fails with one
 * clear message instead of an SQL error deep inside a query. Only bounded
 * tables are read; the one that grows with the live state (layout) is read
 * for a few snapshots and capped (model_layout.c); the OOM evidence is in
 * model_oom.c, the SQLite helpers in model_sql.c.
 */
#include "model_sql.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FSC__SCHEMA_VERSION 1

/* ---- meta and summary ------------------------------------------------- */

typedef struct kvs {
    fsc__vkv_t **arr;
    size_t *n, cap;
} kvs_t;

static int kv_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    kvs_t *k = ud;
    if (fsc__ld_grow((void **)k->arr, &k->cap, *k->n, sizeof **k->arr) != 0)
        return fsc__ld_nomem(L);
    fsc__vkv_t *e = &(*k->arr)[*k->n];
    int rc = fsc__ld_col_s(L, st, 0, &e->key);
    if (rc != 0)
        return rc;
    if (e->key == NULL) /* NULL key (a damaged file): the row names nothing */
        return 0;
    (*k->n)++;
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
        return fsc__ld_col_s(L, st, 1, &e->text);
    }
    return 0;
}

static int load_kv(fsc__loader_t *L, const char *table, fsc__vkv_t **arr, size_t *n)
{
    /* Text is cut where the page would cut it, so a huge value costs nothing. */
    char sql[192];
    snprintf(sql, sizeof sql,
             "SELECT key, CASE WHEN typeof(value) IN ('text', 'blob')"
             " THEN substr(value, 1, " FSC__V_SQL_STR ") ELSE value END FROM %s", table);
    sqlite3_stmt *st;
    int rc = fsc__ld_prepare(L, sql, &st, table);
    if (rc != 0)
        return rc;
    kvs_t k = {arr, n, 0};
    return fsc__ld_each_row(L, st, table, kv_row, &k);
}

/* The gate: SQLite, a meta table, schema_version 1. */
static int check_database(fsc__loader_t *L, fsc__model_t *m)
{
    int has_meta = 0, has_summary = 0;
    int rc = fsc__ld_has_table(L, "meta", &has_meta);
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
    if ((rc = fsc__ld_has_table(L, "summary", &has_summary)) != 0)
        return rc;
    if (!has_summary)
        return fsc_err_set(L->err, FSC_EFORMAT, "%s: not a fragscope database (no summary table)",
                           L->path);
    return load_kv(L, "summary", &m->summary, &m->nsummary);
}

/* ---- timeline and markers ---------------------------------------------- */

/* Rows read in order, `group` at a time folded into one element, so a table
 * longer than the cap is still read to its end. */
typedef struct thin {
    fsc__ld_arr_t a;
    uint64_t row, group;
} thin_t;

static uint64_t group_for(int64_t rows, size_t max)
{
    return rows > (int64_t)max ? ((uint64_t)rows + max - 1) / max : 1;
}

static int sample_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    thin_t *th = ud;
    fsc__vsample_t r;
    r.t = fsc__ld_col_i(st, 0, 0);
    r.seq = fsc__ld_col_i(st, 1, 0);
    r.seq_last = fsc__ld_col_i(st, 2, r.seq);
    r.t_last = fsc__ld_col_i(st, 9, r.t);
    r.allocated = fsc__ld_col_i(st, 3, 0);
    r.requested = fsc__ld_col_i(st, 4, 0);
    r.reserved = fsc__ld_col_i(st, 5, 0);
    r.internal = fsc__ld_col_i(st, 6, 0);
    r.rbu = fsc__ld_col_i(st, 7, 0);
    r.external = fsc__ld_col_d(st, 8);
    if (th->row++ % th->group != 0 && *th->a.n > 0) {
        /* Fold into the current group: maxima stay maxima, the rest are the
         * values at the group's end. */
        fsc__vsample_t *g = (fsc__vsample_t *)*th->a.p + *th->a.n - 1;
        g->allocated = r.allocated > g->allocated ? r.allocated : g->allocated;
        g->reserved = r.reserved > g->reserved ? r.reserved : g->reserved;
        g->rbu = r.rbu > g->rbu ? r.rbu : g->rbu;
        g->seq_last = r.seq_last;
        g->t_last = r.t_last;
        g->requested = r.requested;
        g->internal = r.internal;
        g->external = r.external;
        return 0;
    }
    if (fsc__ld_grow(th->a.p, &th->a.cap, *th->a.n, sizeof(fsc__vsample_t)) != 0)
        return fsc__ld_nomem(L);
    ((fsc__vsample_t *)*th->a.p)[(*th->a.n)++] = r;
    return 0;
}

static int marker_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    thin_t *th = ud;
    if (th->row++ % th->group != 0) /* every group-th marker, over the whole run */
        return 0;
    if (fsc__ld_grow(th->a.p, &th->a.cap, *th->a.n, sizeof(fsc__vmarker_t)) != 0)
        return fsc__ld_nomem(L);
    fsc__vmarker_t *mk = (fsc__vmarker_t *)*th->a.p + *th->a.n;
    mk->seq = fsc__ld_col_i(st, 0, 0);
    mk->t = fsc__ld_col_i(st, 1, 0);
    int rc = fsc__ld_col_s(L, st, 2, &mk->text);
    if (rc == 0 && mk->text == NULL && (mk->text = fsc__ld_strdup("")) == NULL)
        rc = fsc__ld_nomem(L);
    (*th->a.n)++;
    return rc;
}

static int load_timeline(fsc__loader_t *L, fsc__model_t *m)
{
    int have = 0, rc = fsc__ld_has_table(L, "timeline", &have);
    if (rc != 0 || !have)
        return rc;
    int64_t rows = 0;
    if ((rc = fsc__ld_count(L, "SELECT count(*) FROM timeline", "timeline", &rows)) != 0)
        return rc;
    /* Each bucket is drawn from its first event on, with the bucket's maxima
     * of allocated, reserved and reserved-but-unallocated, so a spike inside
     * a bucket still shows; the other series are the values at its end. */
    sqlite3_stmt *st;
    rc = fsc__ld_prepare(L,
                         "SELECT time_first_ns, seq_first, seq_last, allocated_max, requested,"
                         " reserved_max, internal_frag, reserved_unallocated_max, external_frag,"
                         " time_last_ns FROM timeline ORDER BY seq_first",
                         &st, "timeline");
    if (rc != 0)
        return rc;
    thin_t th = {{(void **)&m->timeline, &m->ntimeline, 0, 0}, 0,
                 group_for(rows, FSC__V_MAX_TIMELINE)};
    if ((rc = fsc__ld_each_row(L, st, "timeline", sample_row, &th)) != 0)
        return rc;
    m->bucket_events = fsc__model_meta_i(m, "timeline_bucket_events", 1) * (int64_t)th.group;

    if ((rc = fsc__ld_has_table(L, "markers", &have)) != 0 || !have)
        return rc;
    if ((rc = fsc__ld_count(L, "SELECT count(*) FROM markers", "markers", &m->markers_total)) != 0)
        return rc;
    rc = fsc__ld_prepare(L,
                         "SELECT seq, time_ns, substr(text, 1, " FSC__V_SQL_STR ") FROM markers"
                         " ORDER BY seq", &st, "markers");
    if (rc != 0)
        return rc;
    thin_t mt = {{(void **)&m->markers, &m->nmarkers, 0, 0}, 0,
                 group_for(m->markers_total, FSC__V_MAX_MARKERS)};
    return fsc__ld_each_row(L, st, "markers", marker_row, &mt);
}

/* ---- bins and tags ---------------------------------------------------- */

static int bin_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    fsc__ld_arr_t *a = ud;
    if (fsc__ld_grow(a->p, &a->cap, *a->n, sizeof(fsc__vbin_t)) != 0)
        return fsc__ld_nomem(L);
    fsc__vbin_t *b = (fsc__vbin_t *)*a->p + (*a->n)++;
    int64_t *f[] = {&b->bin, &b->lo, &b->hi, &b->requests, &b->requested, &b->allocated,
                    &b->waste, &b->hits, &b->misses, &b->splits, &b->merges, &b->peak_blocks,
                    &b->peak_bytes, &b->live_bytes_at_peak, &b->free_bytes_at_peak};
    for (int i = 0; i < (int)(sizeof f / sizeof f[0]); i++)
        *f[i] = fsc__ld_col_i(st, i, 0);
    return 0;
}

static int load_bins_tags(fsc__loader_t *L, fsc__model_t *m)
{
    int have = 0, rc = fsc__ld_has_table(L, "bins", &have);
    sqlite3_stmt *st;
    if (rc != 0)
        return rc;
    if (have) {
        rc = fsc__ld_prepare(L,
                     "SELECT bin, lo, hi, requests, requested_bytes, allocated_bytes, internal_waste,"
                     " cache_hits, cache_misses, splits, merges, peak_live_blocks, peak_live_bytes,"
                     " live_bytes_at_peak, free_bytes_at_peak FROM bins"
                     " WHERE requests > 0 OR free_blocks_at_peak > 0 ORDER BY bin LIMIT 64",
                     &st, "bins");
        if (rc != 0)
            return rc;
        fsc__ld_arr_t a = {(void **)&m->bins, &m->nbins, 0, 64};
        if ((rc = fsc__ld_each_row(L, st, "bins", bin_row, &a)) != 0)
            return rc;
    }
    if ((rc = fsc__ld_has_table(L, "tag_stats", &have)) != 0 || !have)
        return rc;
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT tag, live_bytes_at_peak, live_blocks_at_peak FROM tag_stats"
             " WHERE live_bytes_at_peak > 0 ORDER BY live_bytes_at_peak DESC, tag LIMIT %d",
             FSC__V_MAX_TAG_ROWS);
    if ((rc = fsc__ld_prepare(L, sql, &st, "tag_stats")) != 0)
        return rc;
    fsc__ld_tagrows_t t = {&m->top_tags, &m->ntop_tags, 0};
    if ((rc = fsc__ld_each_row(L, st, "tag_stats", fsc__ld_tagrow_row, &t)) != 0)
        return rc;
    snprintf(sql, sizeof sql,
             "SELECT tag, live_bytes_end, live_blocks_end FROM tag_stats"
             " WHERE live_bytes_end > 0 ORDER BY live_bytes_end DESC, tag LIMIT %d",
             FSC__V_MAX_TAG_ROWS);
    if ((rc = fsc__ld_prepare(L, sql, &st, "tag_stats")) != 0)
        return rc;
    fsc__ld_tagrows_t u = {&m->leaks, &m->nleaks, 0};
    return fsc__ld_each_row(L, st, "tag_stats", fsc__ld_tagrow_row, &u);
}

/* ---- tag paths -------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int load_tag_paths(fsc__loader_t *L, fsc__model_t *m)
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
        return fsc__ld_nomem(L);
    int have = 0, rc = fsc__ld_has_table(L, "tags", &have);
    if (rc != 0)
        return rc;
    sqlite3_stmt *st = NULL;
    /* The tail of the path: the innermost names are what the page shows. */
    if (have && (rc = fsc__ld_prepare(L, "SELECT substr(path, -" FSC__V_SQL_STR ")"
                                         " FROM tags WHERE id = ?", &st, "tags")) != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        fsc__vtag_t *t = &m->tags[m->ntags++];
        t->id = L->tag_ids[i];
        if (st != NULL) {
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, t->id);
            int s = sqlite3_step(st);
            if (s == SQLITE_ROW) {
                if ((rc = fsc__ld_col_s(L, st, 0, &t->path)) != 0)
                    break;
            } else if (s != SQLITE_DONE) {
                rc = fsc__ld_fail(L, "tags");
                break;
            }
        }
        if (t->path == NULL) {
            char buf[48];
            if (t->id == 0)
                buf[0] = '\0';
            else
                snprintf(buf, sizeof buf, "tag %lld", (long long)t->id);
            if ((t->path = fsc__ld_strdup(buf)) == NULL) {
                rc = fsc__ld_nomem(L);
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
    m->db_name = fsc__ld_strdup(base ? base + 1 : db_path);
    if (m->db_name == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");

    fsc__loader_t L = {NULL, db_path, err, NULL, 0, 0};
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
        rc = fsc__model_load_ooms(&L, m);
    if (rc == 0)
        rc = load_bins_tags(&L, m);
    if (rc == 0)
        rc = fsc__model_load_layouts(&L, m);
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
