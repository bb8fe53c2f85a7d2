/*
 * whatif_suggest.c — which allocator settings would have served a run
 * better: a small grid of PyTorch settings is replayed against the run's
 * own, each at the capacity of interest and, by bisection, at the smallest
 * capacity it needs.
 *
 * The bisection assumes the outcome is monotonic in the capacity (a config
 * that fits in C bytes fits in more). That holds for the cap check itself
 * but not strictly for everything a cap changes (retries release cached
 * blocks, GC is armed), so the figure is "a capacity that works, with the
 * next step down failing", not a proof that nothing smaller works.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whatif_internal.h"
#include "fsc/thread.h"

/* Single settings first, then a few combinations that are common advice. */
static const char *const k_grid[] = {
    "expandable_segments:True",
    "max_split_size_mb:64",
    "max_split_size_mb:128",
    "max_split_size_mb:256",
    "max_split_size_mb:512",
    "garbage_collection_threshold:0.6",
    "garbage_collection_threshold:0.8",
    "roundup_power2_divisions:4",
    "roundup_power2_divisions:8",
    "expandable_segments:True,garbage_collection_threshold:0.8",
    "max_split_size_mb:128,garbage_collection_threshold:0.8",
    "max_split_size_mb:256,garbage_collection_threshold:0.6",
    "max_split_size_mb:128,roundup_power2_divisions:4",
};
#define GRID_N (sizeof k_grid / sizeof k_grid[0])

static int fits(const fsc_request_stream_t *rs, const fsc_alloc_config_t *cfg, uint64_t cap,
                int *ok, fsc_err_t *err)
{
    fsc_whatif_opts_t o = {.capacity = cap, .threads = 1}; /* stops at the first OOM */
    fsc_whatif_result_t r;
    memset(&r, 0, sizeof r);
    int rc = fsc__whatif_replay_lean(rs, cfg, &o, &r, err);
    *ok = rc == 0 && !r.oom;
    return rc;
}

/* Bisection on k (capacity = k steps): fits(lo) is false, fits(hi) true. */
static int needed_cfg(const fsc_request_stream_t *rs, const fsc_alloc_config_t *cfg,
                      uint64_t limit, uint64_t *out, fsc_err_t *err)
{
    const uint64_t step = FSC_WHATIF_CAPACITY_STEP;
    *out = 0;
    fsc_whatif_opts_t o = {.threads = 1}; /* unlimited; stops at the first OOM */
    fsc_whatif_result_t r;
    memset(&r, 0, sizeof r);
    int rc = fsc__whatif_replay_lean(rs, cfg, &o, &r, err);
    if (rc != 0)
        return rc;
    if (r.oom)
        return 0; /* not even the whole (simulated) device is enough */
    if (limit == 0)
        limit = 4 * r.peak_reserved;
    /* Live requested bytes never exceed reserved bytes, so any capacity
     * below their peak fails; no replay is needed to know it. */
    uint64_t pr = rs->info.peak_requested;
    uint64_t lo = pr ? (pr - 1) / step : 0;
    uint64_t hi = (r.peak_reserved + step - 1) / step;
    if (hi <= lo)
        hi = lo + 1;
    int ok;
    /* With a cap, GC is armed and retries may differ: make sure hi works. */
    for (;;) {
        if ((rc = fits(rs, cfg, hi * step, &ok, err)) != 0)
            return rc;
        if (ok)
            break;
        lo = hi;
        if (hi * step >= limit)
            return 0;
        hi = hi + hi / 4 + 1;
        if (hi * step > limit)
            hi = (limit + step - 1) / step;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((rc = fits(rs, cfg, mid * step, &ok, err)) != 0)
            return rc;
        if (ok)
            hi = mid;
        else
            lo = mid;
    }
    *out = hi * step;
    return 0;
}

int fsc_whatif_needed_capacity(const fsc_request_stream_t *rs, const char *config,
                               uint64_t limit, uint64_t *out, fsc_err_t *err)
{
    if (rs == NULL || out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no stream or result");
    if (config == NULL)
        config = "";
    fsc_alloc_config_t cfg;
    fsc_err_t perr = {0, ""};
    int rc = fsc_alloc_config_parse(config, &cfg, &perr);
    if (rc != 0)
        return fsc_err_set(err, rc, "bad config \"%s\": %s", config, fsc_err_msg(&perr));
    return needed_cfg(rs, &cfg, limit, out, err);
}

/* One config's work: the replay at the capacity and the bisection. */
typedef struct cand {
    const char *config;
    fsc_alloc_config_t cfg;
    fsc_whatif_result_t at_cap;
    fsc_whatif_result_t at_upper; /* at capacity_upper - 1, when inferred */
    uint64_t needed;
    int rc;
    char error[FSC_ERR_MSG_MAX];
} cand_t;

typedef struct sjob {
    const fsc_request_stream_t *rs;
    cand_t *c;
    size_t n;
    uint64_t capacity, capacity_upper;
    atomic_size_t next;
    fsc_whatif_progress_fn progress;
    void *progress_ud;
    pthread_mutex_t mu; /* serializes progress calls */
    uint64_t done;
} sjob_t;

static void *sworker(void *arg)
{
    fsc__thread_name("fsc-suggest");
    sjob_t *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            break;
        cand_t *c = &j->c[i];
        fsc_err_t err = {0, ""};
        /* At the capacity of interest the replay stops at the first failed
         * request too: peaks measured past it would describe a run that
         * could not happen. */
        fsc_whatif_opts_t o = {.capacity = j->capacity, .threads = 1};
        c->rc = fsc__whatif_replay_cfg(j->rs, &c->cfg, &o, NULL, &c->at_cap, &err);
        if (c->rc == 0 && j->capacity_upper > j->capacity) {
            /* the highest cap the recording allows */
            fsc_whatif_opts_t u = {.capacity = j->capacity_upper - 1, .threads = 1};
            c->rc = fsc__whatif_replay_cfg(j->rs, &c->cfg, &u, NULL, &c->at_upper, &err);
        }
        if (c->rc == 0)
            c->rc = needed_cfg(j->rs, &c->cfg, 0, &c->needed, &err);
        if (c->rc != 0)
            snprintf(c->error, sizeof c->error, "%s", fsc_err_msg(&err));
        if (j->progress != NULL) {
            pthread_mutex_lock(&j->mu);
            j->progress(j->progress_ud, ++j->done, j->n);
            pthread_mutex_unlock(&j->mu);
        }
    }
    return NULL;
}

static void run_all(const fsc_request_stream_t *rs, cand_t *c, size_t n,
                    const fsc_whatif_opts_t *o)
{
    sjob_t j = {rs, c, n, o->capacity, o->capacity_upper, 0, o->progress, o->progress_ud,
                PTHREAD_MUTEX_INITIALIZER, 0};
    int nt = fsc__whatif_threads(o->threads, n);
    pthread_t th[64];
    int started = 0;
    for (; started < nt - 1 && started < 64; started++)
        if (pthread_create(&th[started], NULL, sworker, &j) != 0)
            break;
    sworker(&j);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&j.mu);
}

/* Served the request the baseline failed: at the cap, and where the cap
 * is only known to lie in a range, at its top as well. */
static int avoids(const cand_t *c, uint64_t upper)
{
    /* in every placement of segments tried, not only the model's */
    return c->at_cap.oom_variants == 0 && (upper == 0 || c->at_upper.oom_variants == 0);
}

/* Some placements tried serve the failed request and others do not. */
static int split_by_placement(const fsc_whatif_result_t *r)
{
    return r->oom_variants != 0 && r->oom_variants != r->placement_variants;
}

static int better(const cand_t *c, const cand_t *base, uint64_t upper)
{
    if (c->rc != 0)
        return 0;
    /* Where the baseline fails, only serving the request it failed is
     * better: a setting that fails too does not help, whatever it needs. */
    if (base->at_cap.oom)
        return avoids(c, upper);
    if (c->needed != 0 && (base->needed == 0 || c->needed < base->needed))
        return 1;
    /* lower over every placement tried, against the baseline's lowest */
    return !base->at_cap.oom && c->at_cap.oom_variants == 0 &&
           c->at_cap.peak_reserved_hi < base->at_cap.peak_reserved_lo;
}

static int cmp_sugg(const void *x, const void *y)
{
    const fsc_suggestion_t *a = x, *b = y;
    if (a->helps != b->helps)
        return b->helps - a->helps;
    if (a->avoids_oom != b->avoids_oom)
        return b->avoids_oom - a->avoids_oom;
    uint64_t na = a->needed_capacity ? a->needed_capacity : UINT64_MAX;
    uint64_t nb = b->needed_capacity ? b->needed_capacity : UINT64_MAX;
    if (na != nb)
        return na < nb ? -1 : 1;
    if (a->peak_reserved != b->peak_reserved)
        return a->peak_reserved < b->peak_reserved ? -1 : 1;
    return 0;
}

/* Sizes of one note are printed with the usual two decimals of GiB unless
 * two different ones would then read alike ("needs 3.00 GiB" against a
 * 3.00 GiB cap that it exceeds by 2 MiB): then all of them in MiB. */
#define NOTE_VALS 3

static void fmt_set(const uint64_t *v, size_t n, char (*out)[32])
{
    int clash = 0;
    for (size_t i = 0; i < n; i++)
        fsc_size_format(v[i], out[i], sizeof out[i]);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (v[i] != v[j] && strcmp(out[i], out[j]) == 0)
                clash = 1;
    if (clash)
        for (size_t i = 0; i < n; i++)
            snprintf(out[i], sizeof out[i], "%.0f MiB", (double)v[i] / (double)FSC_MiB);
}

static void note_for(const cand_t *c, const cand_t *base, uint64_t capacity, uint64_t upper,
                     const fsc_suggestion_t *g, int window, char *buf, size_t cap)
{
    /* A window of the run (a ring snapshot) is replayed from the state it
     * began in; what came before it was not recorded. */
    const char *before = window ? "everything in the recorded window before it"
                                : "everything recorded before it";
    const char *bname = base->config[0] ? base->config : "defaults";
    uint64_t v[NOTE_VALS] = {capacity, c->needed, base->needed};
    char s[NOTE_VALS][32], p[2][32], mg[32];
    fmt_set(v, NOTE_VALS, s);
    size_t w = 0;
    buf[0] = '\0';
    int complete = c->at_cap.run_complete;
    /* What a replay of a recording that ended at an OOM can show is that
     * the failed request would have been served: the rest of the run was
     * never recorded, so "avoids the OOM" would claim more than it knows. */
    if (base->at_cap.oom && !g->helps) {
        /* it fails too, at one end of the cap's range at least: say where,
         * then what it needs */
        uint64_t e[2] = {capacity, upper != 0 ? upper - 1 : capacity};
        char ends[2][32];
        fmt_set(e, 2, ends);
        if (g->placement_decides)
            w += (size_t)snprintf(buf, cap,
                                  "depends on where the driver places segments, which the "
                                  "recordings do not settle: serves the failed request in %d "
                                  "of the %d placements tried at %s",
                                  c->at_cap.placement_variants - c->at_cap.oom_variants,
                                  c->at_cap.placement_variants, ends[0]);
        else if (upper != 0 && g->avoids_at_lower != g->avoids_at_upper)
            w += (size_t)snprintf(buf, cap,
                                  "depends on the cap, which the recording does not say: serves "
                                  "the failed request at %s but not at %s (the %s cap it "
                                  "allows); give PyTorch's \"X GiB allowed\" with --capacity",
                                  ends[g->avoids_at_upper ? 1 : 0], ends[g->avoids_at_upper ? 0 : 1],
                                  g->avoids_at_upper ? "lowest" : "highest");
        else if (upper != 0)
            w += (size_t)snprintf(buf, cap,
                                  "does not help: runs out of memory at every cap the recording "
                                  "allows (%s and %s tried)",
                                  ends[0], ends[1]);
        else
            w += (size_t)snprintf(buf, cap, "does not help: runs out of memory at %s too",
                                  ends[0]);
        if (w < cap && c->needed != 0)
            snprintf(buf + w, cap - w, "; %s %s",
                     complete ? "needs" : window ? "the recorded window needs"
                                                 : "the recorded part needs",
                     s[1]);
        return;
    }
    if (base->at_cap.oom && !c->at_cap.oom && capacity != 0 && upper != 0) {
        char u[32];
        fsc_size_format(upper, u, sizeof u);
        if (complete)
            w += (size_t)snprintf(buf + w, cap - w,
                                  "completes the recorded run at every cap the recording "
                                  "allows, [%s, %s); ",
                                  s[0], u);
        else if (g->has_margin)
            w += (size_t)snprintf(buf + w, cap - w,
                                  "serves the request that failed at every cap the recording "
                                  "allows, [%s, %s), with at least %s left under the cap (at "
                                  "its %s end), and %s; the rest of the run was not recorded; ",
                                  s[0], u, fsc_size_format(g->margin, mg, sizeof mg),
                                  g->margin_at_upper ? "upper" : "lower", before);
        else
            w += (size_t)snprintf(buf + w, cap - w,
                                  "serves the request that failed at every cap the recording "
                                  "allows, [%s, %s), and %s; the rest of the run was not "
                                  "recorded; ",
                                  s[0], u, before);
    } else if (base->at_cap.oom && !c->at_cap.oom && capacity != 0) {
        if (complete)
            w += (size_t)snprintf(buf + w, cap - w, "completes the recorded run at %s; ", s[0]);
        else if (c->at_cap.has_margin)
            w += (size_t)snprintf(buf + w, cap - w,
                                  "serves the request that failed at %s, with %s left under "
                                  "the cap, and %s; the rest of the run was not recorded; ",
                                  s[0], fsc_size_format(c->at_cap.margin, mg, sizeof mg),
                                  before);
        else
            w += (size_t)snprintf(buf + w, cap - w,
                                  "serves the request that failed at %s and %s; the rest of "
                                  "the run was not recorded; ",
                                  s[0], before);
    }
    if (w >= cap)
        return;
    const char *what = complete ? "needs" : window ? "the recorded window needs"
                                                   : "the recorded part needs";
    if (c->needed != 0 && base->needed != 0)
        w += (size_t)snprintf(buf + w, cap - w, "%s %s instead of %s (%s)", what, s[1], s[2],
                              bname);
    else if (c->needed != 0)
        w += (size_t)snprintf(buf + w, cap - w, "%s %s (%s: no capacity found)", what, s[1],
                              bname);
    if (w >= cap)
        return;
    if (!c->at_cap.oom && !base->at_cap.oom &&
        c->at_cap.peak_reserved != base->at_cap.peak_reserved) {
        uint64_t pv[2] = {c->at_cap.peak_reserved, base->at_cap.peak_reserved};
        fmt_set(pv, 2, p);
        snprintf(buf + w, cap - w, "%speak reserved %s instead of %s", w ? "; " : "", p[0], p[1]);
    }
}

int fsc_whatif_suggest(const fsc_request_stream_t *rs, uint64_t capacity,
                       fsc_suggestion_t **out, size_t *n, fsc_err_t *err)
{
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    o.capacity = capacity;
    return fsc_whatif_suggest_opts(rs, &o, out, n, err);
}

int fsc_whatif_suggest_opts(const fsc_request_stream_t *rs, const fsc_whatif_opts_t *opts,
                            fsc_suggestion_t **out, size_t *n, fsc_err_t *err)
{
    if (rs == NULL || out == NULL || n == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no stream or output");
    *out = NULL;
    *n = 0;
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    if (opts != NULL)
        o = *opts;
    if (o.capacity == 0)
        o.capacity = rs->capacity;
    /* A recording that ran out of memory under a cap it does not record:
     * every cap in [lower, upper) fails where it failed. */
    if (o.capacity == 0 && rs->capacity == 0) {
        fsc_request_stream_info_t info;
        fsc_request_stream_info(rs, &info);
        if (info.capacity_lower != 0) {
            o.capacity = info.capacity_lower;
            o.capacity_upper = info.capacity_upper;
        }
    }
    if (o.capacity_upper <= o.capacity)
        o.capacity_upper = 0;
    uint64_t capacity = o.capacity, upper = o.capacity_upper;
    cand_t *c = calloc(GRID_N + 1, sizeof *c);
    if (c == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
    /* c[0] is the baseline: the run's own settings. */
    c[0].config = rs->config;
    fsc_err_t perr = {0, ""};
    int rc = fsc_alloc_config_parse(rs->config, &c[0].cfg, &perr);
    if (rc != 0) {
        free(c);
        return fsc_err_set(err, rc, "the recording's config \"%s\": %s", rs->config,
                           fsc_err_msg(&perr));
    }
    char canon_base[FSC_WHATIF_TEXT_MAX], canon[FSC_WHATIF_TEXT_MAX];
    fsc_alloc_config_format(&c[0].cfg, canon_base, sizeof canon_base);
    size_t m = 1;
    for (size_t i = 0; i < GRID_N; i++) {
        fsc_alloc_config_parse(k_grid[i], &c[m].cfg, NULL);
        fsc_alloc_config_format(&c[m].cfg, canon, sizeof canon);
        if (strcmp(canon, canon_base) == 0)
            continue; /* the baseline itself */
        c[m++].config = k_grid[i];
    }
    run_all(rs, c, m, &o);
    for (size_t i = 0; i < m; i++) {
        if (c[i].rc != 0) {
            rc = fsc_err_set(err, c[i].rc, "config \"%s\": %s", c[i].config, c[i].error);
            free(c);
            return rc;
        }
    }
    fsc_suggestion_t *s = calloc(m, sizeof *s);
    if (s == NULL) {
        free(c);
        return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
    }
    size_t k = 0;
    for (size_t i = 1; i < m; i++) {
        int helps = better(&c[i], &c[0], upper);
        if (!helps && !c[0].at_cap.oom)
            continue; /* no better, and no OOM to fail to help with */
        fsc_suggestion_t *g = &s[k++];
        g->helps = helps;
        g->capacity_upper = upper;
        g->avoids_at_lower = !c[i].at_cap.oom;
        g->avoids_at_upper = upper != 0 ? !c[i].at_upper.oom : g->avoids_at_lower;
        g->placement_decides = split_by_placement(&c[i].at_cap) ||
                               (upper != 0 && split_by_placement(&c[i].at_upper));
        snprintf(g->config, sizeof g->config, "%s", c[i].config);
        g->capacity = capacity;
        g->avoids_oom = avoids(&c[i], upper);
        g->first_oom_event = c[i].at_cap.oom ? c[i].at_cap.first_oom.event : 0;
        g->peak_reserved = c[i].at_cap.peak_reserved;
        g->peak_allocated = c[i].at_cap.peak_allocated;
        g->needed_capacity = c[i].needed;
        g->baseline_needed = c[0].needed;
        g->baseline_peak_reserved = c[0].at_cap.peak_reserved;
        g->baseline_oom = c[0].at_cap.oom;
        g->run_complete = c[i].at_cap.run_complete;
        g->has_margin = c[i].at_cap.has_margin;
        g->margin = c[i].at_cap.margin;
        if (upper != 0 && g->avoids_oom) {
            /* the claim holds over the range: its smaller margin */
            g->has_margin = c[i].at_cap.has_margin && c[i].at_upper.has_margin;
            g->margin_at_upper = c[i].at_upper.margin < c[i].at_cap.margin;
            if (g->margin_at_upper)
                g->margin = c[i].at_upper.margin;
        }
        note_for(&c[i], &c[0], capacity, upper, g, (rs->flags & FSC_TRACE_F_RECONSTRUCTED) != 0,
                 g->note, sizeof g->note);
    }
    free(c);
    qsort(s, k, sizeof *s, cmp_sugg);
    *out = s;
    *n = k;
    return 0;
}

void fsc_suggestions_free(fsc_suggestion_t *s)
{
    free(s);
}
