/*
 * diff_explain.c — why peak reserved changed between two runs: the change
 * split into what the program asked for (by call site, at each run's
 * allocated peak) and what the allocator added (rounding, the classes of
 * reserved − allocated at each run's reserved peak, and the live bytes that
 * differ between the moments of the two peaks), so that the parts add up
 * to the change exactly (rundb.h, docs/metrics.md "What changed"). Also the
 * peaks of each step where both runs carry step markers, and the CI
 * thresholds. Everything is read from the two run databases; the output is
 * diff_explain_out.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "diff_explain.h"

const char *const fsc__dx_class_names[DX_NCLS] = {"soft", "hard", "stream", "private_pool",
                                                  "pending"};

/* ---- thresholds ------------------------------------------------------------ */

static const struct {
    const char *name;
    fsc_diff_metric_t m;
} k_metric_names[] = {
    {"peak-reserved", FSC_DIFF_M_PEAK_RESERVED}, {"peak-allocated", FSC_DIFF_M_PEAK_ALLOCATED},
    {"frag", FSC_DIFF_M_FRAG},                   {"soft", FSC_DIFF_M_SOFT},
    {"hard", FSC_DIFF_M_HARD},                   {"stream", FSC_DIFF_M_STREAM},
    {"pool", FSC_DIFF_M_POOL},                   {"pending", FSC_DIFF_M_PENDING},
    {"rounding", FSC_DIFF_M_ROUNDING},           {"oom", FSC_DIFF_M_OOM},
};
#define NMETRIC_NAMES (sizeof k_metric_names / sizeof k_metric_names[0])

const char *fsc__dx_metric_name(fsc_diff_metric_t m)
{
    for (size_t i = 0; i < NMETRIC_NAMES; i++)
        if (k_metric_names[i].m == m)
            return k_metric_names[i].name;
    return "?";
}

int fsc_diff_format_parse(const char *s, fsc_diff_format_t *out)
{
    if (strcmp(s, "text") == 0)
        *out = FSC_DIFF_TEXT;
    else if (strcmp(s, "markdown") == 0 || strcmp(s, "md") == 0)
        *out = FSC_DIFF_MARKDOWN;
    else if (strcmp(s, "json") == 0)
        *out = FSC_DIFF_JSON;
    else if (strcmp(s, "junit") == 0)
        *out = FSC_DIFF_JUNIT;
    else if (strcmp(s, "html") == 0)
        *out = FSC_DIFF_HTML;
    else
        return FSC_EINVAL;
    return 0;
}

int fsc_diff_threshold_parse(const char *spec, fsc_diff_threshold_t *out, fsc_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (strlen(spec) >= sizeof out->spec)
        return fsc_err_set(err, FSC_EINVAL, "--fail-on '%.40s...': too long", spec);
    snprintf(out->spec, sizeof out->spec, "%s", spec);
    const char *colon = strchr(spec, ':');
    size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    size_t i;
    for (i = 0; i < NMETRIC_NAMES; i++)
        if (strlen(k_metric_names[i].name) == nlen &&
            strncmp(k_metric_names[i].name, spec, nlen) == 0)
            break;
    if (i == NMETRIC_NAMES)
        return fsc_err_set(err, FSC_EINVAL,
                           "--fail-on '%s': unknown figure '%.*s' (peak-reserved, "
                           "peak-allocated, frag, soft, hard, stream, pool, pending, "
                           "rounding, oom)",
                           spec, (int)nlen, spec);
    out->metric = k_metric_names[i].m;
    if (out->metric == FSC_DIFF_M_OOM) {
        if (colon != NULL)
            return fsc_err_set(err, FSC_EINVAL, "--fail-on '%s': oom takes no limit", spec);
        return 0;
    }
    if (colon == NULL || colon[1] == '\0')
        return fsc_err_set(err, FSC_EINVAL,
                           "--fail-on '%s': needs a limit, e.g. %.*s:+2%% or %.*s:+256MiB", spec,
                           (int)nlen, spec, (int)nlen, spec);
    const char *v = colon + 1;
    if (*v == '+')
        v++;
    size_t vl = strlen(v);
    if (vl > 0 && v[vl - 1] == '%') {
        char num[48];
        char *end;
        if (vl - 1 == 0 || vl - 1 >= sizeof num)
            return fsc_err_set(err, FSC_EINVAL, "--fail-on '%s': bad percentage", spec);
        memcpy(num, v, vl - 1);
        num[vl - 1] = '\0';
        double p = strtod(num, &end);
        if (*end != '\0' || !(p >= 0) || p > 1e9)
            return fsc_err_set(err, FSC_EINVAL,
                               "--fail-on '%s': '%s' is not a percentage of 0 or more", spec,
                               colon + 1);
        out->relative = 1;
        out->limit = p;
        return 0;
    }
    uint64_t b;
    if (fsc_size_parse(v, &b) != 0)
        return fsc_err_set(err, FSC_EINVAL,
                           "--fail-on '%s': '%s' is not a size (256MiB) or a percentage (2%%)",
                           spec, colon + 1);
    out->limit = (double)b;
    return 0;
}

int64_t fsc__dx_metric(const dx_t *d, int k, fsc_diff_metric_t m)
{
    const dx_run_t *r = &d->run[k];
    switch (m) {
    case FSC_DIFF_M_PEAK_RESERVED: return r->peak_res;
    case FSC_DIFF_M_PEAK_ALLOCATED: return r->peak_alloc;
    case FSC_DIFF_M_FRAG: return fsc__dx_sub(r->res_at_res, r->alloc_at_res);
    case FSC_DIFF_M_SOFT: return r->cls[DX_SOFT];
    case FSC_DIFF_M_HARD: return r->cls[DX_HARD];
    case FSC_DIFF_M_STREAM: return r->cls[DX_STREAM];
    case FSC_DIFF_M_POOL: return r->cls[DX_POOL];
    case FSC_DIFF_M_PENDING: return r->cls[DX_PENDING];
    case FSC_DIFF_M_ROUNDING: return fsc__dx_sub(r->live_bytes, r->live_req);
    case FSC_DIFF_M_OOM: return r->ooms;
    }
    return 0;
}

static int threshold_fails(const fsc_diff_threshold_t *t, int64_t a, int64_t b)
{
    if (t->metric == FSC_DIFF_M_OOM)
        return b > a;
    double delta = (double)b - (double)a;
    if (!t->relative)
        return delta > t->limit;
    if (a <= 0)
        return delta > 0;
    return 100.0 * delta / (double)a > t->limit;
}

const char *fsc__dx_site_status(const dx_site_t *s)
{
    if (s->bytes[0] == 0 && s->bytes[1] > 0)
        return "new";
    if (s->bytes[0] > 0 && s->bytes[1] == 0)
        return "gone";
    return s->bytes[1] > s->bytes[0] ? "grown" : s->bytes[1] < s->bytes[0] ? "shrunk" : "same";
}

/* ---- one run --------------------------------------------------------------- */

typedef struct live {
    int64_t tag, size, req;
} live_t;

typedef struct live_vec {
    live_t *v;
    size_t n, cap;
    int64_t snap;
    int64_t window_first_seq; /* -1: not a window */
} live_vec_t;

/* The site of the blocks a ring window's history begins with and whose
 * frames the snapshot does not give (freed before the snapshot was
 * taken): where they were allocated is not recorded. */
#define TAG_BEFORE_WINDOW (-1)
#define NAME_BEFORE_WINDOW "(live when the window began; site not recorded)"

static int find_peak_snap(void *ud, const fsc_rundb_snapshot_t *s)
{
    live_vec_t *lv = ud;
    if (s->kind != NULL && strcmp(s->kind, "peak_allocated") == 0) {
        lv->snap = s->id;
        return FSC_RUNDB_STOP;
    }
    return 0;
}

static int take_live(void *ud, const fsc_rundb_block_t *b)
{
    live_vec_t *lv = ud;
    if (b->state == NULL || strcmp(b->state, "allocated") != 0)
        return 0;
    if (lv->n == lv->cap) {
        size_t nc = lv->cap ? lv->cap * 2 : 256;
        live_t *nv = realloc(lv->v, nc * sizeof *nv);
        if (nv == NULL)
            return FSC_ENOMEM;
        lv->v = nv;
        lv->cap = nc;
    }
    live_t *l = &lv->v[lv->n++];
    l->tag = b->tag == FSC_RUNDB_NULL ? 0 : b->tag;
    if (l->tag == 0 && lv->window_first_seq >= 0 && b->alloc_seq != FSC_RUNDB_NULL &&
        b->alloc_seq < lv->window_first_seq)
        l->tag = TAG_BEFORE_WINDOW;
    l->size = b->size == FSC_RUNDB_NULL ? 0 : b->size;
    l->req = b->requested == FSC_RUNDB_NULL ? l->size : b->requested;
    return 0;
}

static int take_class(void *ud, const fsc_rundb_frag_class_t *c)
{
    dx_run_t *r = ud;
    if (c->point == NULL || strcmp(c->point, "peak_reserved") != 0 || c->pool == NULL ||
        strcmp(c->pool, "all") != 0)
        return 0;
    r->has_classes = 1;
    r->res_at_res = c->reserved;
    r->alloc_at_res = c->allocated;
    r->cls[DX_SOFT] = c->soft;
    r->cls[DX_HARD] = c->hard;
    r->cls[DX_STREAM] = c->stream;
    r->cls[DX_POOL] = c->private_pool;
    r->cls[DX_PENDING] = c->pending;
    for (int i = 0; i < DX_NCLS; i++)
        if (r->cls[i] == FSC_RUNDB_NULL)
            r->cls[i] = 0;
    return FSC_RUNDB_STOP;
}

/* ---- steps ----------------------------------------------------------------- */

typedef struct i64vec {
    int64_t *v;
    size_t n, cap;
} i64vec_t;

static int push(i64vec_t *x, int64_t a)
{
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 64;
        int64_t *nv = realloc(x->v, nc * sizeof *nv);
        if (nv == NULL)
            return FSC_ENOMEM;
        x->v = nv;
        x->cap = nc;
    }
    x->v[x->n++] = a;
    return 0;
}

/* A step ends at a marker the program writes after each optimizer step:
 * "step N" (fragscope_torch.watch_optimizer, the native recorder) or
 * PyTorch's "END Optimizer.step#..." annotation (a snapshot recorded with
 * global_record_annotations). */
static int take_marker(void *ud, const fsc_rundb_marker_t *m)
{
    const char *t = m->text ? m->text : "";
    if ((strncmp(t, "step ", 5) == 0 && t[5] >= '0' && t[5] <= '9') ||
        strncmp(t, "END Optimizer.step#", 19) == 0)
        return push(ud, m->seq);
    return 0;
}

/* the changes of allocated bytes: +size at an ALLOC, -size at its
 * FREE_REQUESTED (a pending block no longer counts as allocated) */
typedef struct change {
    int64_t seq, delta;
} change_t;

typedef struct sweep {
    change_t *v;
    size_t n, cap;
} sweep_t;

static int push_change(sweep_t *s, int64_t seq, int64_t delta)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 1024;
        change_t *nv = realloc(s->v, nc * sizeof *nv);
        if (nv == NULL)
            return FSC_ENOMEM;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n].seq = seq;
    s->v[s->n++].delta = delta;
    return 0;
}

static int take_alloc(void *ud, const fsc_rundb_alloc_t *a)
{
    sweep_t *s = ud;
    int64_t size = a->size == FSC_RUNDB_NULL ? 0 : a->size;
    int64_t fseq = a->free_requested_seq != FSC_RUNDB_NULL ? a->free_requested_seq
                                                           : a->free_completed_seq;
    int rc = push_change(s, a->alloc_seq, size);
    if (rc == 0 && fseq != FSC_RUNDB_NULL)
        rc = push_change(s, fseq, fsc__dx_sub(0, size));
    return rc;
}

/* reserved bytes: +size at SEGMENT_ALLOC, -size at SEGMENT_FREE; an
 * expandable segment grows and shrinks by mappings the table does not
 * hold, so a run with one takes the timeline's buckets instead */
typedef struct seg_sweep {
    sweep_t s;
    int expandable;
} seg_sweep_t;

static int take_segment(void *ud, const fsc_rundb_segment_t *g)
{
    seg_sweep_t *x = ud;
    if (g->expandable > 0) {
        x->expandable = 1;
        return FSC_RUNDB_STOP;
    }
    int64_t size = g->size == FSC_RUNDB_NULL ? 0 : g->size;
    int rc = push_change(&x->s, g->created_seq, size);
    if (rc == 0 && g->freed_seq != FSC_RUNDB_NULL)
        rc = push_change(&x->s, g->freed_seq, fsc__dx_sub(0, size));
    return rc;
}

static int cmp_change(const void *a, const void *b)
{
    int64_t x = ((const change_t *)a)->seq, y = ((const change_t *)b)->seq;
    return x < y ? -1 : x > y;
}

typedef struct step_res {
    dx_run_t *r;
    const int64_t *bound;
} step_res_t;

static int take_bucket(void *ud, const fsc_rundb_timeline_t *t)
{
    step_res_t *c = ud;
    dx_run_t *r = c->r;
    /* every step the bucket overlaps: its maximum bounds theirs */
    for (int i = 0; i < r->nsteps; i++) {
        int64_t lo = i == 0 ? INT64_MIN : c->bound[i - 1]; /* exclusive */
        int64_t hi = c->bound[i];
        if (t->seq_first <= hi && t->seq_last > lo && t->reserved_max > r->step_res[i])
            r->step_res[i] = t->reserved_max;
    }
    return 0;
}

/* Each step: the most at any event in (previous marker, its marker],
 * counting what was there on entering it. */
static void sweep_max(const sweep_t *s, const int64_t *bound, int nsteps, int64_t *out)
{
    int64_t cur = 0;
    size_t k = 0;
    for (int i = 0; i < nsteps; i++) {
        int64_t mx = cur;
        while (k < s->n && s->v[k].seq <= bound[i]) {
            cur = fsc__dx_add(cur, s->v[k++].delta);
            if (cur > mx)
                mx = cur;
        }
        out[i] = mx;
    }
}

static int load_steps(fsc_rundb_t *db, dx_run_t *r)
{
    i64vec_t b = {0};
    int rc = fsc_rundb_markers(db, take_marker, &b);
    if (rc != 0 || b.n == 0) {
        free(b.v);
        return rc;
    }
    r->nsteps = (int)b.n;
    r->step_alloc = calloc(b.n, sizeof *r->step_alloc);
    r->step_res = calloc(b.n, sizeof *r->step_res);
    sweep_t s = {NULL, 0, 0};
    if (r->step_alloc == NULL || r->step_res == NULL)
        rc = FSC_ENOMEM;
    if (rc == 0)
        rc = fsc_rundb_allocs(db, take_alloc, &s);
    if (rc == 0) {
        if (s.n > 1)
            qsort(s.v, s.n, sizeof *s.v, cmp_change);
        /* each step: the most allocated at any event in (previous marker,
         * its marker], counting what was live on entering it */
        sweep_max(&s, b.v, r->nsteps, r->step_alloc);
        seg_sweep_t g = {{NULL, 0, 0}, 0};
        rc = fsc_rundb_segments(db, take_segment, &g);
        if (rc == 0 && !g.expandable) {
            if (g.s.n > 1)
                qsort(g.s.v, g.s.n, sizeof *g.s.v, cmp_change);
            sweep_max(&g.s, b.v, r->nsteps, r->step_res);
        } else if (rc == 0) {
            step_res_t c = {r, b.v};
            rc = fsc_rundb_timeline(db, take_bucket, &c);
            int64_t be = 1;
            if (rc == 0)
                rc = fsc_rundb_meta_int(db, "timeline_bucket_events", 1, &be);
            r->steps_res_sampled = be > 1;
        }
        free(g.s.v);
    }
    free(s.v);
    free(b.v);
    return rc;
}

/* ---- sites ----------------------------------------------------------------- */

/* A site of one run before the two are merged. */
typedef struct site1 {
    char *name;
    int run;
    int64_t bytes, req, blocks;
    char *files;
} site1_t;

static int cmp_live_tag(const void *a, const void *b)
{
    int64_t x = ((const live_t *)a)->tag, y = ((const live_t *)b)->tag;
    return x < y ? -1 : x > y;
}

static int cmp_site1(const void *a, const void *b)
{
    const site1_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : x->run - y->run;
}

typedef struct site1_vec {
    site1_t *v;
    size_t n, cap;
} site1_vec_t;

/* The live blocks at run k's allocated peak, summed per tag and named. */
static int collect_sites(fsc_rundb_t *db, int k, dx_run_t *r, site1_vec_t *out, fsc_err_t *err)
{
    live_vec_t lv = {NULL, 0, 0, FSC_RUNDB_NULL, -1};
    int rc = fsc_rundb_meta_int(db, "window.first_seq", -1, &lv.window_first_seq);
    if (rc == 0)
        rc = fsc_rundb_snapshots(db, find_peak_snap, &lv);
    if (rc == 0 && lv.snap != FSC_RUNDB_NULL)
        rc = fsc_rundb_layout(db, &lv.snap, 1, take_live, &lv);
    if (rc != 0) {
        free(lv.v);
        return rc == FSC_ENOMEM ? fsc_err_set(err, FSC_ENOMEM, "out of memory")
                                : fsc_err_copy(err, fsc_rundb_error(db));
    }
    r->has_layout = lv.snap != FSC_RUNDB_NULL;
    if (lv.n > 1)
        qsort(lv.v, lv.n, sizeof *lv.v, cmp_live_tag);
    for (size_t i = 0; rc == 0 && i < lv.n;) {
        size_t j = i;
        int64_t bytes = 0, req = 0;
        while (j < lv.n && lv.v[j].tag == lv.v[i].tag) {
            bytes = fsc__dx_add(bytes, lv.v[j].size);
            req = fsc__dx_add(req, lv.v[j].req);
            j++;
        }
        r->live_bytes = fsc__dx_add(r->live_bytes, bytes);
        r->live_req = fsc__dx_add(r->live_req, req);
        if (out->n == out->cap) {
            size_t nc = out->cap ? out->cap * 2 : 128;
            site1_t *nv = realloc(out->v, nc * sizeof *nv);
            if (nv == NULL) {
                rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
                break;
            }
            out->v = nv;
            out->cap = nc;
        }
        char name[512], files[8192];
        if (lv.v[i].tag == TAG_BEFORE_WINDOW) {
            snprintf(name, sizeof name, "%s", NAME_BEFORE_WINDOW);
            files[0] = '\0';
        } else {
            rc = fsc_rundb_tag_label(db, lv.v[i].tag, 0, 2, name, sizeof name);
            if (rc == 0)
                rc = fsc_rundb_tag_files(db, lv.v[i].tag, files, sizeof files);
        }
        if (rc != 0) {
            fsc_err_copy(err, fsc_rundb_error(db));
            break;
        }
        site1_t *s = &out->v[out->n];
        s->name = strdup(name);
        s->files = strdup(files);
        if (s->name == NULL || s->files == NULL) {
            free(s->name);
            free(s->files);
            rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
            break;
        }
        out->n++;
        s->run = k;
        s->bytes = bytes;
        s->req = req;
        s->blocks = (int64_t)(j - i);
        i = j;
    }
    free(lv.v);
    return rc;
}

/* Both runs' sites, merged by name: a site is the same in both runs when
 * `report` names it alike (tag ids differ between databases). */
static int merge_sites(dx_t *d, site1_vec_t *sv, fsc_err_t *err)
{
    if (sv->n > 1)
        qsort(sv->v, sv->n, sizeof *sv->v, cmp_site1);
    d->sites = calloc(sv->n ? sv->n : 1, sizeof *d->sites);
    if (d->sites == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    for (size_t i = 0; i < sv->n;) {
        dx_site_t *s = &d->sites[d->nsites++];
        s->name = sv->v[i].name;
        s->files = NULL;
        size_t j = i;
        for (; j < sv->n && strcmp(sv->v[j].name, s->name) == 0; j++) {
            site1_t *x = &sv->v[j];
            s->bytes[x->run] = fsc__dx_add(s->bytes[x->run], x->bytes);
            s->req[x->run] = fsc__dx_add(s->req[x->run], x->req);
            s->blocks[x->run] += x->blocks;
            /* where it points: the new run's frame (the checkout's code) */
            if (s->files == NULL || (x->run == 1 && x->files[0] != '\0')) {
                free(s->files);
                s->files = x->files;
                x->files = NULL;
            }
            if (j != i)
                free(x->name);
        }
        for (size_t k = i; k < j; k++)
            free(sv->v[k].files);
        i = j;
    }
    free(sv->v);
    sv->v = NULL;
    return 0;
}

static uint64_t absdelta(const dx_site_t *s)
{
    return fsc__dx_abs(fsc__dx_sub(s->bytes[1], s->bytes[0]));
}

static int cmp_site_change(const void *a, const void *b)
{
    const dx_site_t *x = a, *y = b;
    uint64_t dx = absdelta(x), dy = absdelta(y);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* ---- the whole explanation -------------------------------------------------- */

static int read_run(fsc_rundb_t *db, int k, dx_run_t *r, site1_vec_t *sv, fsc_err_t *err)
{
    int64_t window = 0;
    int rc = fsc_rundb_summary_int(db, "peak_allocated_bytes", 0, &r->peak_alloc);
    if (rc == 0)
        rc = fsc_rundb_summary_int(db, "peak_allocated_seq", -1, &r->peak_alloc_seq);
    if (rc == 0)
        rc = fsc_rundb_summary_int(db, "peak_reserved_bytes", 0, &r->peak_res);
    if (rc == 0)
        rc = fsc_rundb_summary_int(db, "peak_reserved_seq", -1, &r->peak_res_seq);
    if (rc == 0)
        rc = fsc_rundb_summary_int(db, "num_ooms", 0, &r->ooms);
    if (rc == 0)
        rc = fsc_rundb_meta_text(db, "config", r->config, sizeof r->config);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "capacity", 0, &r->capacity);
    int64_t inferred = 0;
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "capacity_inferred", 0, &inferred);
    r->capacity_inferred = inferred != 0;
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "device_total", 0, &r->device_total);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "import.reconstructed", 0, &window);
    r->window = window != 0;
    if (rc == 0)
        rc = fsc_rundb_frag_classes(db, take_class, r);
    if (rc == 0)
        rc = load_steps(db, r);
    if (rc != 0)
        return rc == FSC_ENOMEM ? fsc_err_set(err, FSC_ENOMEM, "out of memory")
                                : fsc_err_copy(err, fsc_rundb_error(db));
    return collect_sites(db, k, r, sv, err);
}

static void compute(dx_t *d)
{
    const dx_run_t *a = &d->run[0], *b = &d->run[1];
    d->d_res = fsc__dx_sub(b->peak_res, a->peak_res);
    d->d_alloc = fsc__dx_sub(b->peak_alloc, a->peak_alloc);
    d->program = fsc__dx_sub(b->live_req, a->live_req);
    d->rounding = fsc__dx_sub(fsc__dx_sub(b->live_bytes, b->live_req),
                              fsc__dx_sub(a->live_bytes, a->live_req));
    d->frag = 0;
    for (int i = 0; i < DX_NCLS; i++) {
        d->cls[i] = fsc__dx_sub(b->cls[i], a->cls[i]);
        d->frag = fsc__dx_add(d->frag, d->cls[i]);
    }
    /* moment: allocated at the reserved peak − allocated at the allocated
     * peak (0 or less in each run), since reserved at its peak = allocated
     * there + the classes */
    d->moment = fsc__dx_sub(fsc__dx_sub(b->alloc_at_res, b->peak_alloc),
                            fsc__dx_sub(a->alloc_at_res, a->peak_alloc));
    d->allocator = fsc__dx_add(fsc__dx_add(d->rounding, d->frag), d->moment);
    /* the split holds exactly when every part was stored and agrees with the
     * summary's peaks */
    d->exact = 1;
    for (int k = 0; k < 2; k++) {
        const dx_run_t *r = &d->run[k];
        int64_t cls = 0;
        for (int i = 0; i < DX_NCLS; i++)
            cls = fsc__dx_add(cls, r->cls[i]);
        if (!r->has_layout || !r->has_classes || r->live_bytes != r->peak_alloc ||
            r->res_at_res != r->peak_res || fsc__dx_add(r->alloc_at_res, cls) != r->res_at_res ||
            /* a saturated part (a damaged file) breaks the sum */
            fsc__dx_add(d->program, fsc__dx_add(d->rounding, fsc__dx_add(d->frag, d->moment))) !=
                d->d_res)
            d->exact = 0;
    }
    d->first_step_diff = -1;
    if (a->nsteps > 0 && b->nsteps > 0) {
        d->first_step_diff = 0;
        int n = a->nsteps < b->nsteps ? a->nsteps : b->nsteps;
        for (int i = 0; i < n && d->first_step_diff == 0; i++)
            if (a->step_alloc[i] != b->step_alloc[i] || a->step_res[i] != b->step_res[i])
                d->first_step_diff = i + 1;
        if (d->first_step_diff == 0 && a->nsteps != b->nsteps)
            d->first_step_diff = n + 1;
    }
}

static int check_comparable(fsc_rundb_t *A, fsc_rundb_t *B, const dx_t *d, fsc_err_t *err)
{
    int64_t na = 0, nb = 0;
    int rc = fsc_rundb_run_count(A, &na);
    if (rc == 0)
        rc = fsc_rundb_run_count(B, &nb);
    if (rc != 0)
        return fsc_err_copy(err, fsc_rundb_error(rc == 0 ? B : A));
    if (na > 1 && nb > 1)
        return fsc_err_set(err, FSC_EINVAL,
                           "%s and %s are jobs (%lld and %lld runs): they are compared rank by "
                           "rank (fsc_diff_write_job), one run with one run here",
                           fsc_rundb_path(A), fsc_rundb_path(B), (long long)na, (long long)nb);
    if ((na > 1) != (nb > 1))
        return fsc_err_set(err, FSC_EINVAL,
                           "%s holds %lld runs (a job) but %s holds %lld: diff compares a run "
                           "with a run, or a job with a job",
                           fsc_rundb_path(na > 1 ? A : B), (long long)(na > 1 ? na : nb),
                           fsc_rundb_path(na > 1 ? B : A), (long long)(na > 1 ? nb : na));
    /* a simulated run may stand for a real one (the demo against a
     * recording): the backends may differ, the devices' memory may not */
    const dx_run_t *a = &d->run[0], *b = &d->run[1];
    if (a->device_total > 0 && b->device_total > 0 && a->device_total != b->device_total) {
        char x[32], y[32];
        return fsc_err_set(err, FSC_EINVAL,
                           "%s ran on a device of %s but %s on one of %s: different devices",
                           fsc_rundb_path(A), fsc_size_format((uint64_t)a->device_total, x, sizeof x),
                           fsc_rundb_path(B), fsc_size_format((uint64_t)b->device_total, y, sizeof y));
    }
    return 0;
}

static void dx_free(dx_t *d)
{
    for (size_t i = 0; i < d->nsites; i++) {
        free(d->sites[i].name);
        free(d->sites[i].files);
    }
    free(d->sites);
    for (int k = 0; k < 2; k++) {
        free(d->run[k].step_alloc);
        free(d->run[k].step_res);
    }
    free(d->thr_base);
    free(d->thr_new);
    free(d->thr_failed);
}

int fsc_diff_explain(const char *base_db, const char *new_db, const fsc_diff_opts_t *o,
                     FILE *out, int *failed, fsc_err_t *err)
{
    fsc_diff_opts_t dflt;
    if (o == NULL) {
        memset(&dflt, 0, sizeof dflt);
        o = &dflt;
    }
    fsc_rundb_t *db[2] = {NULL, NULL};
    dx_t d;
    memset(&d, 0, sizeof d);
    site1_vec_t sv = {NULL, 0, 0};
    int rc = fsc_rundb_open(base_db, &db[0], err);
    if (rc == 0)
        rc = fsc_rundb_open(new_db, &db[1], err);
    d.run[0].name = o->base_name ? o->base_name : base_db;
    d.run[1].name = o->new_name ? o->new_name : new_db;
    for (int k = 0; rc == 0 && k < 2; k++)
        rc = read_run(db[k], k, &d.run[k], &sv, err);
    if (rc == 0)
        rc = check_comparable(db[0], db[1], &d, err);
    if (rc == 0)
        rc = merge_sites(&d, &sv, err);
    for (size_t i = 0; i < sv.n && sv.v != NULL; i++) {
        free(sv.v[i].name);
        free(sv.v[i].files);
    }
    free(sv.v);
    if (rc == 0) {
        compute(&d);
        if (d.nsites > 1)
            qsort(d.sites, d.nsites, sizeof *d.sites, cmp_site_change);
        d.settings = o->settings;
        d.thr = o->fail_on;
        d.nthr = o->nfail_on;
        d.thr_base = calloc(d.nthr + 1, sizeof *d.thr_base);
        d.thr_new = calloc(d.nthr + 1, sizeof *d.thr_new);
        d.thr_failed = calloc(d.nthr + 1, sizeof *d.thr_failed);
        if (!d.thr_base || !d.thr_new || !d.thr_failed)
            rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
        for (size_t i = 0; rc == 0 && i < d.nthr; i++) {
            d.thr_base[i] = fsc__dx_metric(&d, 0, d.thr[i].metric);
            d.thr_new[i] = fsc__dx_metric(&d, 1, d.thr[i].metric);
            d.thr_failed[i] = threshold_fails(&d.thr[i], d.thr_base[i], d.thr_new[i]);
            d.failed += d.thr_failed[i];
        }
    }
    if (rc == 0 && (rc = fsc__dx_write(&d, o, out)) != 0)
        fsc_err_set(err, rc, "out of memory");
    if (rc == 0 && o->annotations)
        fsc__dx_annotations(&d, o->source_root, o->annotations);
    if (failed)
        *failed = rc == 0 ? d.failed : 0;
    dx_free(&d);
    fsc_rundb_close(db[0]);
    fsc_rundb_close(db[1]);
    return rc;
}
