/*
 * model.c — load the report's data from a run database (docs/schema.md).
 *
 * The database is opened and checked by the run database reader
 * (fragscope/rundb.h), so a foreign file fails with the same one-line
 * message as in every other command. Only bounded tables are read; the one
 * that grows with the live state (layout) is read for a few snapshots and
 * capped (model_layout.c); the OOM evidence is in model_oom.c, the helpers
 * in model_load.c.
 */
#include "fragscope/frames.h"
#include "model_load.h"
#include "sbuf.h"
#include "split_view.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- meta and summary ------------------------------------------------- */

typedef struct kvs {
    fsc__loader_t *L;
    fsc__vkv_t **arr;
    size_t *n, cap;
} kvs_t;

static int kv_row(void *ud, const fsc_rundb_kv_t *kv)
{
    kvs_t *k = ud;
    fsc__loader_t *L = k->L;
    if (kv->key == NULL) /* NULL key (a damaged file): the row names nothing */
        return 0;
    if (fsc__ld_grow((void **)k->arr, &k->cap, *k->n, sizeof **k->arr) != 0)
        return fsc__ld_nomem(L);
    fsc__vkv_t *e = &(*k->arr)[*k->n];
    if ((e->key = fsc__ld_strdup(kv->key)) == NULL)
        return fsc__ld_nomem(L);
    (*k->n)++;
    switch (kv->type) {
    case FSC_RUNDB_T_INT:
        e->is_int = 1;
        e->i = kv->i;
        e->num = (double)e->i;
        break;
    case FSC_RUNDB_T_REAL:
        e->num = kv->d;
        break;
    case FSC_RUNDB_T_NULL:
        break;
    default:
        /* Text is cut where the page would cut it, so a huge value costs
         * nothing. */
        return fsc__ld_str(L, kv->text, FSC__V_STR_CHARS + 1, &e->text);
    }
    return 0;
}

static int load_meta_summary(fsc__loader_t *L, fsc__model_t *m)
{
    kvs_t meta = {L, &m->meta, &m->nmeta, 0}, sum = {L, &m->summary, &m->nsummary, 0};
    int rc = fsc__ld_read(L, fsc_rundb_meta(L->db, kv_row, &meta));
    if (rc == 0)
        rc = fsc__ld_read(L, fsc_rundb_summary(L->db, kv_row, &sum));
    return rc;
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

static int sample_row(void *ud, const fsc_rundb_timeline_t *x)
{
    thin_t *th = ud;
    fsc__vsample_t r;
    r.t = fsc__ld_i(x->time_first_ns, 0);
    r.seq = fsc__ld_i(x->seq_first, 0);
    r.seq_last = fsc__ld_i(x->seq_last, r.seq);
    r.t_last = fsc__ld_i(x->time_last_ns, r.t);
    r.allocated = fsc__ld_i(x->allocated_max, 0);
    r.requested = fsc__ld_i(x->requested, 0);
    r.reserved = fsc__ld_i(x->reserved_max, 0);
    r.internal = fsc__ld_i(x->internal_frag, 0);
    r.rbu = fsc__ld_i(x->reserved_unallocated_max, 0);
    r.external = x->external_frag;
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
        return fsc__ld_nomem(th->a.L);
    ((fsc__vsample_t *)*th->a.p)[(*th->a.n)++] = r;
    return 0;
}

static int marker_row(void *ud, const fsc_rundb_marker_t *x)
{
    thin_t *th = ud;
    fsc__loader_t *L = th->a.L;
    if (th->row++ % th->group != 0) /* every group-th marker, over the whole run */
        return 0;
    if (fsc__ld_grow(th->a.p, &th->a.cap, *th->a.n, sizeof(fsc__vmarker_t)) != 0)
        return fsc__ld_nomem(L);
    fsc__vmarker_t *mk = (fsc__vmarker_t *)*th->a.p + *th->a.n;
    mk->seq = fsc__ld_i(x->seq, 0);
    mk->t = fsc__ld_i(x->time_ns, 0);
    int rc = fsc__ld_str(L, x->text ? x->text : "", FSC__V_STR_CHARS + 1, &mk->text);
    (*th->a.n)++;
    return rc;
}

/* A bucket's external fragmentation maximum goes to the sample holding
 * the event where it was reached (samples may be folded buckets). */
static int external_row(void *ud, const fsc_rundb_timeline_external_t *r)
{
    fsc__model_t *m = ud;
    size_t lo = 0, hi = m->ntimeline;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->timeline[mid].seq_last < r->external_frag_max_seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->ntimeline && m->timeline[lo].seq <= r->external_frag_max_seq &&
        r->external_frag_max > m->timeline[lo].external_max)
        m->timeline[lo].external_max = r->external_frag_max;
    return 0;
}

static int load_timeline(fsc__loader_t *L, fsc__model_t *m)
{
    int have = 0, rc = fsc__ld_read(L, fsc_rundb_has_table(L->db, "timeline", &have));
    if (rc != 0 || !have)
        return rc;
    int64_t rows = 0;
    if ((rc = fsc__ld_read(L, fsc_rundb_count(L->db, "timeline", &rows))) != 0)
        return rc;
    /* Each bucket is drawn from its first event on, with the bucket's maxima
     * of allocated, reserved and reserved-but-unallocated, so a spike inside
     * a bucket still shows; the other series are the values at its end. */
    thin_t th = {{L, (void **)&m->timeline, &m->ntimeline, 0, 0}, 0,
                 group_for(rows, FSC__V_MAX_TIMELINE)};
    if ((rc = fsc__ld_read(L, fsc_rundb_timeline(L->db, sample_row, &th))) != 0)
        return rc;
    m->bucket_events = fsc__model_meta_i(m, "timeline_bucket_events", 1) * (int64_t)th.group;
    for (size_t i = 0; i < m->ntimeline; i++)
        m->timeline[i].external_max = -1;
    if ((rc = fsc__ld_read(L, fsc_rundb_timeline_external(L->db, external_row, m))) != 0)
        return rc;

    if ((rc = fsc__ld_read(L, fsc_rundb_has_table(L->db, "markers", &have))) != 0 || !have)
        return rc;
    if ((rc = fsc__ld_read(L, fsc_rundb_count(L->db, "markers", &m->markers_total))) != 0)
        return rc;
    thin_t mt = {{L, (void **)&m->markers, &m->nmarkers, 0, 0}, 0,
                 group_for(m->markers_total, FSC__V_MAX_MARKERS)};
    return fsc__ld_read(L, fsc_rundb_markers(L->db, marker_row, &mt));
}

/* ---- bins and tags ---------------------------------------------------- */

static int bin_row(void *ud, const fsc_rundb_bin_t *x)
{
    fsc__ld_arr_t *a = ud;
    if (!(x->requests > 0 || x->free_blocks_at_peak > 0))
        return 0;
    if (*a->n >= a->max)
        return FSC_RUNDB_STOP;
    if (fsc__ld_grow(a->p, &a->cap, *a->n, sizeof(fsc__vbin_t)) != 0)
        return fsc__ld_nomem(a->L);
    fsc__vbin_t *b = (fsc__vbin_t *)*a->p + (*a->n)++;
    const int64_t from[] = {x->bin, x->lo, x->hi, x->requests, x->requested_bytes,
                            x->allocated_bytes, x->internal_waste, x->cache_hits,
                            x->cache_misses, x->splits, x->merges, x->peak_live_blocks,
                            x->peak_live_bytes, x->live_bytes_at_peak, x->free_bytes_at_peak};
    int64_t *to[] = {&b->bin, &b->lo, &b->hi, &b->requests, &b->requested, &b->allocated,
                     &b->waste, &b->hits, &b->misses, &b->splits, &b->merges, &b->peak_blocks,
                     &b->peak_bytes, &b->live_bytes_at_peak, &b->free_bytes_at_peak};
    for (size_t i = 0; i < sizeof to / sizeof to[0]; i++)
        *to[i] = fsc__ld_i(from[i], 0);
    return 0;
}

static int peak_tag_row(void *ud, const fsc_rundb_tag_stat_t *s)
{
    return fsc__ld_tagrow(ud, s->tag, s->live_bytes_at_peak, s->live_blocks_at_peak);
}

static int end_tag_row(void *ud, const fsc_rundb_tag_stat_t *s)
{
    return fsc__ld_tagrow(ud, s->tag, s->live_bytes_end, s->live_blocks_end);
}

static int load_bins_tags(fsc__loader_t *L, fsc__model_t *m)
{
    fsc__ld_arr_t bins = {L, (void **)&m->bins, &m->nbins, 0, 64};
    int rc = fsc__ld_read(L, fsc_rundb_bins(L->db, bin_row, &bins));
    if (rc != 0)
        return rc;
    fsc__ld_arr_t top = {L, (void **)&m->top_tags, &m->ntop_tags, 0, FSC__V_MAX_TAG_ROWS};
    if ((rc = fsc__ld_read(L, fsc_rundb_tag_stats(L->db, FSC_RUNDB_AT_PEAK, peak_tag_row, &top))) != 0)
        return rc;
    fsc__ld_arr_t leaks = {L, (void **)&m->leaks, &m->nleaks, 0, FSC__V_MAX_TAG_ROWS};
    return fsc__ld_read(L, fsc_rundb_tag_stats(L->db, FSC_RUNDB_AT_END, end_tag_row, &leaks));
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
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        fsc__vtag_t *t = &m->tags[m->ntags++];
        t->id = L->tag_ids[i];
        /* The tail of the path: the innermost names are what the page shows. */
        if ((rc = fsc__ld_read(L, fsc_rundb_tag_path(L->db, t->id, FSC__V_STR_CHARS + 1,
                                                     &t->path))) != 0)
            break;
        char lb[512];
        if ((rc = fsc__ld_read(L, fsc_rundb_tag_label(L->db, t->id, 0, 2, lb, sizeof lb))) != 0 ||
            (t->label = fsc__ld_strdup(lb)) == NULL)
            break;
        if ((rc = fsc__ld_read(L, fsc_rundb_tag_site(L->db, t->id, FSC_SITE_LINE, lb, sizeof lb,
                                                     NULL))) != 0 ||
            (t->site = fsc__ld_strdup(lb)) == NULL)
            break;
        if ((rc = fsc__ld_read(L, fsc_rundb_tag_site(L->db, t->id, FSC_SITE_MINE, lb, sizeof lb,
                                                     &t->mine_found))) != 0 ||
            (t->mine = fsc__ld_strdup(lb)) == NULL)
            break;
        /* A path of plain tags (the tag-stack API) is its own site: the page
         * then names it by its path and carries no second copy. */
        if (t->path != NULL && strcmp(fsc__utf8_tail(t->site, FSC__V_STR_CHARS + 1), t->path) == 0)
            t->site_is_path = 1;
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
    return rc;
}

/* ---- the verdict's facts ---------------------------------------------- */

#define VSITES_KEPT 5

static int load_verdict(fsc__loader_t *L, fsc__model_t *m)
{
    int64_t seq = m->nooms > 0 ? m->ooms[0].seq : fsc__model_sum_i(m, "peak_allocated_seq", -1);
    int rc = 0;
    if (seq >= 0) {
        fsc_rundb_site_t *v = NULL;
        size_t n = 0;
        if ((rc = fsc__ld_read(L, fsc_rundb_sites_at(L->db, seq, FSC_SITE_LINE, &v, &n))) != 0)
            return rc;
        for (size_t i = 0; i < n; i++)
            m->vsites_total += v[i].bytes;
        m->vsites = v;
        m->nvsites = n < VSITES_KEPT ? n : VSITES_KEPT;
        m->vsites_seq = seq;
    }
    /* the first step: the first marker that names one, else the first free */
    int64_t first = -1;
    for (size_t i = 0; i < m->nmarkers && first < 0; i++) {
        const char *t = m->markers[i].text ? m->markers[i].text : "";
        if ((t[0] == 's' || t[0] == 'S') && strncmp(t + 1, "tep", 3) == 0) {
            first = m->markers[i].seq;
            snprintf(m->step_why, sizeof m->step_why, "the first step marker (event %lld)",
                     (long long)first);
        }
    }
    if ((rc = fsc__ld_read(L, fsc_rundb_end_split(L->db, first, &m->end))) != 0)
        return rc;
    if (m->ntimeline > 0) {
        int64_t *lo = malloc(m->ntimeline * sizeof *lo), *hi = malloc(m->ntimeline * sizeof *hi);
        if (lo == NULL || hi == NULL) {
            free(lo);
            free(hi);
            return fsc__ld_nomem(L);
        }
        for (size_t i = 0; i < m->ntimeline; i++) {
            lo[i] = m->timeline[i].seq;
            hi[i] = m->timeline[i].seq_last;
        }
        rc = fsc__ld_read(L, fsc_rundb_pool_reserved(L->db, lo, hi, m->ntimeline, 8, &m->pool_ids,
                                                     &m->npools, &m->pool_res,
                                                     &m->pools_dropped));
        free(lo);
        free(hi);
        if (rc != 0)
            return rc;
    }
    if ((rc = fsc__ld_read(L, fsc_rundb_trace_derived(L->db, &m->trace_ok, &m->trace_device,
                                                      &m->trace_derived,
                                                      &m->ntrace_derived))) != 0)
        return rc;
    if (first < 0 && m->end.boundary >= 0)
        snprintf(m->step_why, sizeof m->step_why,
                 "no step markers: the first free (event %lld) stands for the first step",
                 (long long)m->end.boundary);
    else if (first < 0)
        snprintf(m->step_why, sizeof m->step_why, "nothing was ever freed");
    return 0;
}

/* ---- entry points ----------------------------------------------------- */

int fsc__model_load(const char *db_path, fsc__model_t *m, fsc_err_t *err)
{
    return fsc__model_load_opts(db_path, 0, m, err);
}

int fsc__model_load_opts(const char *db_path, size_t bands, fsc__model_t *m, fsc_err_t *err)
{
    return fsc__model_load_run(db_path, -1, bands, m, err);
}

int fsc__model_load_run(const char *db_path, int64_t run, size_t bands, fsc__model_t *m,
                        fsc_err_t *err)
{
    memset(m, 0, sizeof *m);
    fsc__loader_t L = {NULL, db_path, err, 0, NULL, 0, 0};
    int rc = fsc_rundb_open(db_path, &L.db, err);
    if (rc != 0)
        return rc;
    if (run >= 0 && (rc = fsc__ld_read(&L, fsc_rundb_select_run(L.db, run))) != 0) {
        fsc_rundb_close(L.db);
        return rc;
    }
    const char *base = strrchr(db_path, '/');
    m->db_name = fsc__ld_strdup(base ? base + 1 : db_path);
    if (m->db_name == NULL)
        rc = fsc__ld_nomem(&L);
    if (rc == 0)
        rc = load_meta_summary(&L, m);
    if (rc == 0)
        rc = load_timeline(&L, m);
    if (rc == 0)
        rc = fsc__model_load_ooms(&L, m);
    if (rc == 0)
        rc = load_bins_tags(&L, m);
    if (rc == 0)
        rc = fsc__model_load_layouts(&L, m);
    if (rc == 0)
        rc = fsc__model_load_state(&L, m, bands);
    if (rc == 0)
        rc = fsc__model_load_split(&L, m);
    if (rc == 0)
        rc = load_tag_paths(&L, m);
    if (rc == 0)
        rc = load_verdict(&L, m);
    free(L.tag_ids);
    fsc_rundb_close(L.db);
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
    fsc__model_free_state(m->state);
    fsc__model_free_split(m);
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
    free(m->vsites);
    free(m->trace_derived);
    free(m->pool_ids);
    free(m->pool_res);
    for (size_t i = 0; i < m->ntags; i++) {
        free(m->tags[i].path);
        free(m->tags[i].label);
        free(m->tags[i].site);
        free(m->tags[i].mine);
    }
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

const char *fsc__model_tag_label(const fsc__model_t *m, int64_t id)
{
    size_t lo = 0, hi = m->ntags;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->tags[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->ntags && m->tags[lo].id == id ? m->tags[lo].label : NULL;
}

int64_t fsc__model_trace_entry(const fsc__model_t *m, int64_t seq)
{
    if (!m->trace_ok || seq < 0)
        return -1;
    size_t lo = 0, hi = m->ntrace_derived; /* how many derived events are below seq */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->trace_derived[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->ntrace_derived && m->trace_derived[lo] == seq)
        return -1;
    return seq - (int64_t)lo;
}
