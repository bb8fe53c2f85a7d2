/*
 * diff_explain_out.c — the explanation of diff_explain.c written out: text
 * for a terminal, Markdown for a CI job summary or a pull-request comment,
 * JSON for scripts, JUnit XML (one testcase per threshold) for CI test
 * reports, and GitHub Actions annotations that put a warning on the source
 * line of each call site that grew. Every figure says what it covers; where
 * the parts cannot add up exactly (a database without the peak layout or
 * the split) the output says so in words and in JSON ("exact": false).
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diff_explain.h"

#define DEFAULT_SITES 15
#define MAX_ANNOTATIONS 10 /* GitHub shows 10 warnings of one step */

static const char *const k_class_label[DX_NCLS] = {
    "soft (empty_cache would free)", "hard (pinned by live blocks)", "stream (other streams)",
    "private pools", "pending (frees waiting on streams)"};

/* "+1.50 MiB", "-512 B", "0 B" */
static const char *sgn(int64_t v, char *buf, size_t cap)
{
    if (cap < 2)
        return buf;
    size_t o = v != 0;
    buf[0] = v > 0 ? '+' : '-';
    fsc_size_format(fsc__dx_abs(v), buf + o, cap - o);
    return buf;
}

static const char *sz(int64_t v, char *buf, size_t cap)
{
    return fsc_size_format(v > 0 ? (uint64_t)v : 0, buf, cap);
}

static const char *pct(int64_t a, int64_t b, char *buf, size_t cap)
{
    if (a > 0)
        snprintf(buf, cap, " (%+.1f%%)", 100.0 * ((double)b - (double)a) / (double)a);
    else
        buf[0] = '\0';
    return buf;
}

static void fmt_figure(fsc_diff_metric_t m, int64_t v, char *buf, size_t cap)
{
    if (m == FSC_DIFF_M_OOM)
        snprintf(buf, cap, "%lld", (long long)v);
    else
        sz(v, buf, cap);
}

/* "peak-reserved 7.67 GiB → 7.90 GiB (+3.0%), limit +2%: fails" */
static void threshold_line(const dx_t *d, size_t i, char *buf, size_t cap)
{
    const fsc_diff_threshold_t *t = &d->thr[i];
    char a[32], b[32], lim[48], p[32];
    fmt_figure(t->metric, d->thr_base[i], a, sizeof a);
    fmt_figure(t->metric, d->thr_new[i], b, sizeof b);
    if (t->metric == FSC_DIFF_M_OOM) {
        snprintf(buf, cap, "%s: OOMs %s → %s (no new OOM allowed): %s", t->spec, a, b,
                 d->thr_failed[i] ? "fails" : "ok");
        return;
    }
    if (t->relative)
        snprintf(lim, sizeof lim, "+%g%%", t->limit);
    else
        fsc_size_format(t->limit >= 1.8e19 ? UINT64_MAX : (uint64_t)t->limit, lim, sizeof lim);
    pct(d->thr_base[i], d->thr_new[i], p, sizeof p);
    snprintf(buf, cap, "%s: %s %s → %s%s, limit %s%s: %s", t->spec,
             fsc__dx_metric_name(t->metric), a, b, p, t->relative ? "" : "+", lim,
             d->thr_failed[i] ? "fails" : "ok");
}

static int64_t sites_delta(const dx_t *d)
{
    int64_t s = 0;
    for (size_t i = 0; i < d->nsites; i++)
        s = fsc__dx_add(s, fsc__dx_sub(d->sites[i].bytes[1], d->sites[i].bytes[0]));
    return s;
}

/* Why the split does not add up, or "" */
static void exact_note(const dx_t *d, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int k = 0; k < 2; k++) {
        const dx_run_t *r = &d->run[k];
        const char *who = k ? "new" : "base";
        size_t len = strlen(buf);
        if (!r->has_layout)
            snprintf(buf + len, cap - len, "%sthe %s database has no layout at its allocated "
                     "peak (sites unknown)", len ? "; " : "", who);
        else if (r->live_bytes != r->peak_alloc)
            snprintf(buf + len, cap - len, "%sthe %s run's blocks at its allocated peak add up "
                     "to %lld B, not its peak allocated %lld B", len ? "; " : "", who,
                     (long long)r->live_bytes, (long long)r->peak_alloc);
        len = strlen(buf);
        if (!r->has_classes)
            snprintf(buf + len, cap - len, "%sthe %s database has no split of reserved − "
                     "allocated at its reserved peak (written before it existed)",
                     len ? "; " : "", who);
        else if (r->res_at_res != r->peak_res)
            snprintf(buf + len, cap - len, "%sthe %s run's split was taken at %lld B reserved, "
                     "not at its peak %lld B", len ? "; " : "", who,
                     (long long)r->res_at_res, (long long)r->peak_res);
    }
}

static const char *settings_config(const char *c)
{
    return c[0] ? c : "defaults";
}

/* "settings: base 'defaults', new 'expandable_segments:True' ..." lines */
static void settings_text(const dx_t *d, FILE *f, int md)
{
    const fsc_diff_settings_t *s = d->settings;
    if (s == NULL || !s->differ)
        return;
    char a[32], b[32], x[32], t[32];
    fprintf(f, md ? "\n**Settings.** " : "\nsettings: ");
    fprintf(f, "base ran under `%s`", settings_config(s->base_config));
    if (s->base_capacity)
        fprintf(f, " capped at %s", sz((int64_t)s->base_capacity, a, sizeof a));
    fprintf(f, ", new under `%s`", settings_config(s->new_config));
    if (s->new_capacity)
        fprintf(f, " capped at %s", sz((int64_t)s->new_capacity, b, sizeof b));
    fprintf(f, ".%s", md ? " " : "\n  ");
    if (!s->replayed) {
        fprintf(f, "Not replayed: %s\n", s->note);
        return;
    }
    int64_t dr = fsc__dx_sub((int64_t)s->new_peak_reserved, (int64_t)s->base_peak_reserved);
    fprintf(f, "The base's requests replayed under the base's settings reserve %s at the peak, "
               "under the new settings %s: the settings alone explain %s of the %s change",
            sz((int64_t)s->base_peak_reserved, a, sizeof a),
            sz((int64_t)s->new_peak_reserved, b, sizeof b), sgn(dr, x, sizeof x),
            sgn(d->d_res, t, sizeof t));
    if (d->d_res != 0)
        fprintf(f, " (%.0f%%)", 100.0 * (double)dr / (double)d->d_res);
    fprintf(f, ".%s", md ? " " : "\n  ");
    if (s->base_oom || s->new_oom)
        fprintf(f, "The replay under the %s settings ran out of memory. ",
                s->base_oom && s->new_oom ? "base and the new" : s->base_oom ? "base" : "new");
    fprintf(f, "%s\n", s->note);
}

static void steps_text(const dx_t *d, FILE *f, int md)
{
    const dx_run_t *a = &d->run[0], *b = &d->run[1];
    if (a->nsteps == 0 && b->nsteps == 0)
        return;
    if (a->nsteps == 0 || b->nsteps == 0) {
        fprintf(f, md ? "\n**Steps.** Only the %s run carries step markers: steps not compared.\n"
                      : "\nsteps: only the %s run carries step markers: not compared\n",
                a->nsteps ? "base" : "new");
        return;
    }
    int n = a->nsteps > b->nsteps ? a->nsteps : b->nsteps;
    char x[32], y[32], z[32], w[32];
    if (md) {
        fprintf(f, "\n**Steps** (peaks between step markers%s)\n\n", 
                a->steps_res_sampled || b->steps_res_sampled
                    ? "; reserved from timeline buckets, an upper bound" : "");
        fprintf(f, "| step | base allocated | new allocated | base reserved | new reserved |\n"
                   "|---:|---:|---:|---:|---:|\n");
    } else {
        fprintf(f, "\nsteps (peaks between step markers%s):\n  %4s %14s %14s %14s %14s\n",
                a->steps_res_sampled || b->steps_res_sampled
                    ? "; reserved from timeline buckets, an upper bound" : "",
                "step", "base alloc", "new alloc", "base reserved", "new reserved");
    }
    for (int i = 0; i < n; i++) {
        const char *na = "—", *nb = "—", *ra = "—", *rb = "—";
        if (i < a->nsteps) {
            na = sz(a->step_alloc[i], x, sizeof x);
            ra = sz(a->step_res[i], z, sizeof z);
        }
        if (i < b->nsteps) {
            nb = sz(b->step_alloc[i], y, sizeof y);
            rb = sz(b->step_res[i], w, sizeof w);
        }
        const char *mark = i + 1 == d->first_step_diff ? " ← first that differs" : "";
        if (md)
            fprintf(f, "| %d%s | %s | %s | %s | %s |\n", i + 1,
                    mark[0] ? " (first that differs)" : "", na, nb, ra, rb);
        else
            fprintf(f, "  %4d %14s %14s %14s %14s%s\n", i + 1, na, nb, ra, rb, mark);
    }
    if (d->first_step_diff == 0)
        fprintf(f, md ? "\nEvery step has the same peaks.\n" : "  every step has the same peaks\n");
}

static void md_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (strchr("|*_`<>[]\\", *s))
            fputc('\\', f);
        fputc(*s, f);
    }
}

static void write_text(const dx_t *d, const fsc_diff_opts_t *o, FILE *f, int md)
{
    const dx_run_t *a = &d->run[0], *b = &d->run[1];
    char x[32], y[32], z[32], p[32];
    if (md) {
        fprintf(f, "### fragscope diff: ");
        md_escape(f, a->name);
        fprintf(f, " → ");
        md_escape(f, b->name);
        fprintf(f, "\n\n| | base | new | change |\n|---|---:|---:|---:|\n");
        fprintf(f, "| peak allocated | %s | %s | %s%s |\n", sz(a->peak_alloc, x, sizeof x),
                sz(b->peak_alloc, y, sizeof y), sgn(d->d_alloc, z, sizeof z),
                pct(a->peak_alloc, b->peak_alloc, p, sizeof p));
        fprintf(f, "| peak reserved | %s | %s | %s%s |\n", sz(a->peak_res, x, sizeof x),
                sz(b->peak_res, y, sizeof y), sgn(d->d_res, z, sizeof z),
                pct(a->peak_res, b->peak_res, p, sizeof p));
        fprintf(f, "| OOMs | %lld | %lld | %+lld |\n", (long long)a->ooms, (long long)b->ooms,
                (long long)fsc__dx_sub(b->ooms, a->ooms));
    } else if (!o->after_table) {
        fprintf(f, "diff: %s → %s\n", a->name, b->name);
        fprintf(f, "  %-16s %14s %14s %24s\n", "", "base", "new", "change");
        fprintf(f, "  %-16s %14s %14s %13s%-11s\n", "peak allocated", sz(a->peak_alloc, x, sizeof x),
                sz(b->peak_alloc, y, sizeof y), sgn(d->d_alloc, z, sizeof z),
                pct(a->peak_alloc, b->peak_alloc, p, sizeof p));
        fprintf(f, "  %-16s %14s %14s %13s%-11s\n", "peak reserved", sz(a->peak_res, x, sizeof x),
                sz(b->peak_res, y, sizeof y), sgn(d->d_res, z, sizeof z),
                pct(a->peak_res, b->peak_res, p, sizeof p));
        fprintf(f, "  %-16s %14lld %14lld %13lld\n", "OOMs", (long long)a->ooms,
                (long long)b->ooms, (long long)fsc__dx_sub(b->ooms, a->ooms));
    }
    for (int k = 0; k < 2; k++)
        if (d->run[k].window)
            fprintf(f, md ? "\nThe %s snapshot's history starts mid-run (a ring): its figures "
                            "cover the window.\n"
                          : "  the %s snapshot's history starts mid-run (a ring): its figures "
                            "cover the window\n",
                    k ? "new" : "base");

    char note[1024];
    exact_note(d, note, sizeof note);
    /* the split */
    if (md)
        fprintf(f, "\n**Why peak reserved changed by %s** (the parts add up to it%s)\n\n"
                   "| part | change |\n|---|---:|\n",
                sgn(d->d_res, x, sizeof x), d->exact ? " exactly" : "; not exactly, see below");
    else
        fprintf(f, "\nwhy peak reserved changed by %s (the parts add up to it%s):\n",
                sgn(d->d_res, x, sizeof x), d->exact ? " exactly" : "; not exactly, see below");
    struct {
        int indent;
        const char *label;
        int64_t v;
    } rows[16];
    int nr = 0;
    rows[nr].indent = 0, rows[nr].label = "program: requested bytes live at the allocated peak",
    rows[nr++].v = d->program;
    rows[nr].indent = 0, rows[nr].label = "allocator", rows[nr++].v = d->allocator;
    rows[nr].indent = 1,
    rows[nr].label = "rounding: block − requested bytes at the allocated peak",
    rows[nr++].v = d->rounding;
    rows[nr].indent = 1, rows[nr].label = "reserved − allocated at the reserved peak",
    rows[nr++].v = d->frag;
    for (int i = 0; i < DX_NCLS; i++)
        rows[nr].indent = 2, rows[nr].label = k_class_label[i], rows[nr++].v = d->cls[i];
    rows[nr].indent = 1,
    rows[nr].label = "moments: allocated at the reserved peak − at the allocated peak",
    rows[nr++].v = d->moment;
    for (int i = 0; i < nr; i++) {
        if (md)
            fprintf(f, "| %s%s | %s |\n", rows[i].indent == 2 ? "&nbsp;&nbsp;&nbsp;&nbsp;"
                                          : rows[i].indent ? "&nbsp;&nbsp;" : "",
                    rows[i].label, sgn(rows[i].v, x, sizeof x));
        else
            fprintf(f, "  %*s%-*s %14s\n", 2 * rows[i].indent, "", 68 - 2 * rows[i].indent,
                    rows[i].label, sgn(rows[i].v, x, sizeof x));
    }
    if (!d->exact)
        fprintf(f, md ? "\nNot exact: %s.\n" : "  not exact: %s\n", note);

    /* the sites */
    size_t max = o->max_sites > 0 ? (size_t)o->max_sites : DEFAULT_SITES, shown = 0;
    int64_t rest = 0;
    size_t nrest = 0, changed = 0;
    for (size_t i = 0; i < d->nsites; i++)
        changed += d->sites[i].bytes[0] != d->sites[i].bytes[1];
    if (md)
        fprintf(f, "\n**Program by call site**: block bytes live at each run's allocated peak; "
                   "the %zu site%s add%s up to the change of peak allocated, %s (%zu changed)\n\n"
                   "| change | base | new | | site |\n|---:|---:|---:|---|---|\n",
                d->nsites, d->nsites == 1 ? "" : "s", d->nsites == 1 ? "s" : "",
                sgn(sites_delta(d), x, sizeof x), changed);
    else
        fprintf(f, "\nprogram by call site (block bytes live at each run's allocated peak; the "
                   "%zu site%s add%s up to the change of peak allocated, %s; %zu changed):\n",
                d->nsites, d->nsites == 1 ? "" : "s", d->nsites == 1 ? "s" : "",
                sgn(sites_delta(d), x, sizeof x), changed);
    for (size_t i = 0; i < d->nsites; i++) {
        const dx_site_t *s = &d->sites[i];
        int64_t dv = fsc__dx_sub(s->bytes[1], s->bytes[0]);
        if (dv == 0)
            continue;
        if (shown >= max) {
            rest = fsc__dx_add(rest, dv);
            nrest++;
            continue;
        }
        shown++;
        if (md) {
            fprintf(f, "| %s | %s | %s | %s | ", sgn(dv, x, sizeof x), sz(s->bytes[0], y, sizeof y),
                    sz(s->bytes[1], z, sizeof z), fsc__dx_site_status(s));
            md_escape(f, s->name);
            fprintf(f, " |\n");
        } else {
            fprintf(f, "  %12s %12s → %-12s %-6s %s\n", sgn(dv, x, sizeof x),
                    sz(s->bytes[0], y, sizeof y), sz(s->bytes[1], z, sizeof z),
                    fsc__dx_site_status(s), s->name);
        }
    }
    if (nrest > 0)
        fprintf(f, md ? "| %s | | | | and %zu more changed sites |\n"
                      : "  %12s %zu more changed sites\n",
                sgn(rest, x, sizeof x), nrest);
    if (changed == 0)
        fprintf(f, md ? "\nNo site changed.\n" : "  no site changed\n");

    settings_text(d, f, md);
    steps_text(d, f, md);

    if (d->nthr > 0) {
        fprintf(f, md ? "\n**Thresholds** (%d of %zu failed)\n\n" : "\nthresholds (%d of %zu failed):\n",
                d->failed, d->nthr);
        for (size_t i = 0; i < d->nthr; i++) {
            char line[512];
            threshold_line(d, i, line, sizeof line);
            fprintf(f, md ? "- %s %s\n" : "  %s%s\n",
                    md ? (d->thr_failed[i] ? ":x:" : ":white_check_mark:") : "", line);
        }
    }
}

/* check --baseline: only the thresholds, one line each, failures first
 * spoken as check speaks. */
static void write_thresholds(const dx_t *d, FILE *f)
{
    for (size_t i = 0; i < d->nthr; i++) {
        char line[512];
        threshold_line(d, i, line, sizeof line);
        if (d->thr_failed[i])
            fprintf(f, "%s (against %s)\n", line, d->run[0].name);
    }
}

/* ---- JSON ------------------------------------------------------------------ */

static cJSON *run_json(const dx_t *d, int k)
{
    const dx_run_t *r = &d->run[k];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "input", r->name);
    cJSON_AddNumberToObject(j, "peak_allocated_bytes", (double)r->peak_alloc);
    cJSON_AddNumberToObject(j, "peak_reserved_bytes", (double)r->peak_res);
    cJSON_AddNumberToObject(j, "peak_allocated_seq", (double)r->peak_alloc_seq);
    cJSON_AddNumberToObject(j, "peak_reserved_seq", (double)r->peak_res_seq);
    cJSON_AddNumberToObject(j, "requested_at_peak_allocated_bytes", (double)r->live_req);
    cJSON_AddNumberToObject(j, "rounding_at_peak_allocated_bytes",
                            (double)fsc__dx_sub(r->live_bytes, r->live_req));
    cJSON_AddNumberToObject(j, "allocated_at_peak_reserved_bytes", (double)r->alloc_at_res);
    cJSON_AddNumberToObject(j, "reserved_unallocated_at_peak_reserved_bytes",
                            (double)fsc__dx_sub(r->res_at_res, r->alloc_at_res));
    cJSON *c = cJSON_AddObjectToObject(j, "classes_at_peak_reserved");
    for (int i = 0; i < DX_NCLS; i++)
        cJSON_AddNumberToObject(c, fsc__dx_class_names[i], (double)r->cls[i]);
    cJSON_AddBoolToObject(j, "layout_recorded", r->has_layout);
    cJSON_AddBoolToObject(j, "split_recorded", r->has_classes);
    cJSON_AddNumberToObject(j, "ooms", (double)r->ooms);
    cJSON_AddStringToObject(j, "config", r->config);
    if (r->capacity > 0 && !r->capacity_inferred)
        cJSON_AddNumberToObject(j, "capacity_bytes", (double)r->capacity);
    else
        cJSON_AddNullToObject(j, "capacity_bytes");
    cJSON_AddBoolToObject(j, "window", r->window);
    cJSON_AddNumberToObject(j, "steps", r->nsteps);
    return j;
}

static cJSON *settings_json(const dx_t *d)
{
    const fsc_diff_settings_t *s = d->settings;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "measured", s != NULL);
    if (s == NULL)
        return j;
    cJSON_AddBoolToObject(j, "differ", s->differ);
    cJSON_AddStringToObject(j, "base_config", s->base_config);
    cJSON_AddStringToObject(j, "new_config", s->new_config);
    cJSON_AddNumberToObject(j, "base_capacity_bytes", (double)s->base_capacity);
    cJSON_AddNumberToObject(j, "new_capacity_bytes", (double)s->new_capacity);
    cJSON_AddBoolToObject(j, "replayed", s->replayed);
    if (s->replayed) {
        cJSON_AddNumberToObject(j, "replay_base_peak_reserved_bytes", (double)s->base_peak_reserved);
        cJSON_AddNumberToObject(j, "replay_new_peak_reserved_bytes", (double)s->new_peak_reserved);
        cJSON_AddNumberToObject(j, "replay_base_peak_allocated_bytes",
                                (double)s->base_peak_allocated);
        cJSON_AddNumberToObject(j, "replay_new_peak_allocated_bytes", (double)s->new_peak_allocated);
        cJSON_AddNumberToObject(j, "explained_bytes",
                                (double)((int64_t)s->new_peak_reserved -
                                         (int64_t)s->base_peak_reserved));
        cJSON_AddBoolToObject(j, "replay_base_oom", s->base_oom);
        cJSON_AddBoolToObject(j, "replay_new_oom", s->new_oom);
        cJSON_AddNumberToObject(j, "replay_capacity_bytes", (double)s->capacity);
        cJSON_AddBoolToObject(j, "run_complete", s->run_complete);
    }
    cJSON_AddStringToObject(j, "note", s->note);
    return j;
}

static cJSON *steps_json(const dx_t *d)
{
    cJSON *j = cJSON_CreateObject();
    int cmp = d->first_step_diff >= 0;
    cJSON_AddBoolToObject(j, "compared", cmp);
    if (!cmp)
        cJSON_AddStringToObject(j, "note", d->run[0].nsteps == 0 && d->run[1].nsteps == 0
                                               ? "neither run carries step markers"
                                               : "only one run carries step markers");
    if (d->first_step_diff > 0)
        cJSON_AddNumberToObject(j, "first_differing_step", d->first_step_diff);
    else
        cJSON_AddNullToObject(j, "first_differing_step");
    cJSON_AddBoolToObject(j, "reserved_from_samples",
                          d->run[0].steps_res_sampled || d->run[1].steps_res_sampled);
    for (int k = 0; k < 2; k++) {
        cJSON *arr = cJSON_AddArrayToObject(j, k ? "new" : "base");
        for (int i = 0; i < d->run[k].nsteps; i++) {
            cJSON *s = cJSON_CreateObject();
            cJSON_AddNumberToObject(s, "step", i + 1);
            cJSON_AddNumberToObject(s, "peak_allocated_bytes", (double)d->run[k].step_alloc[i]);
            cJSON_AddNumberToObject(s, "peak_reserved_bytes", (double)d->run[k].step_res[i]);
            cJSON_AddItemToArray(arr, s);
        }
    }
    return j;
}

static int write_json(const dx_t *d, FILE *f)
{
    cJSON *root = cJSON_CreateObject();
    if (root == NULL)
        return FSC_ENOMEM;
    cJSON_AddItemToObject(root, "base", run_json(d, 0));
    cJSON_AddItemToObject(root, "new", run_json(d, 1));
    cJSON *dl = cJSON_AddObjectToObject(root, "delta");
    cJSON_AddNumberToObject(dl, "peak_reserved_bytes", (double)d->d_res);
    cJSON_AddNumberToObject(dl, "peak_allocated_bytes", (double)d->d_alloc);
    cJSON_AddNumberToObject(dl, "ooms", (double)fsc__dx_sub(d->run[1].ooms, d->run[0].ooms));
    char note[1024];
    exact_note(d, note, sizeof note);
    cJSON_AddBoolToObject(root, "exact", d->exact);
    if (!d->exact)
        cJSON_AddStringToObject(root, "exact_note", note);

    cJSON *pg = cJSON_AddObjectToObject(root, "program");
    cJSON_AddNumberToObject(pg, "delta_bytes", (double)d->program);
    cJSON_AddNumberToObject(pg, "sites_delta_bytes", (double)sites_delta(d));
    cJSON *arr = cJSON_AddArrayToObject(pg, "sites");
    for (size_t i = 0; i < d->nsites; i++) {
        const dx_site_t *s = &d->sites[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "site", s->name);
        cJSON_AddStringToObject(o, "status", fsc__dx_site_status(s));
        cJSON_AddNumberToObject(o, "delta_bytes", (double)(fsc__dx_sub(s->bytes[1], s->bytes[0])));
        cJSON_AddNumberToObject(o, "base_bytes", (double)s->bytes[0]);
        cJSON_AddNumberToObject(o, "new_bytes", (double)s->bytes[1]);
        cJSON_AddNumberToObject(o, "base_requested_bytes", (double)s->req[0]);
        cJSON_AddNumberToObject(o, "new_requested_bytes", (double)s->req[1]);
        cJSON_AddNumberToObject(o, "base_blocks", (double)s->blocks[0]);
        cJSON_AddNumberToObject(o, "new_blocks", (double)s->blocks[1]);
        cJSON *fr = cJSON_AddArrayToObject(o, "frames");
        for (const char *l = s->files; l != NULL && *l;) {
            const char *nl = strchr(l, '\n');
            size_t n = nl ? (size_t)(nl - l) : strlen(l);
            char *x = strndup(l, n);
            if (x != NULL)
                cJSON_AddItemToArray(fr, cJSON_CreateString(x));
            free(x);
            l = nl ? nl + 1 : l + n;
        }
        cJSON_AddItemToArray(arr, o);
    }
    cJSON *al = cJSON_AddObjectToObject(root, "allocator");
    cJSON_AddNumberToObject(al, "delta_bytes", (double)d->allocator);
    cJSON_AddNumberToObject(al, "rounding_bytes", (double)d->rounding);
    cJSON_AddNumberToObject(al, "reserved_unallocated_bytes", (double)d->frag);
    cJSON *c = cJSON_AddObjectToObject(al, "classes");
    for (int i = 0; i < DX_NCLS; i++)
        cJSON_AddNumberToObject(c, fsc__dx_class_names[i], (double)d->cls[i]);
    cJSON_AddNumberToObject(al, "moment_bytes", (double)d->moment);
    cJSON_AddItemToObject(root, "settings", settings_json(d));
    cJSON_AddItemToObject(root, "steps", steps_json(d));
    cJSON *th = cJSON_AddArrayToObject(root, "thresholds");
    for (size_t i = 0; i < d->nthr; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "spec", d->thr[i].spec);
        cJSON_AddStringToObject(o, "figure", fsc__dx_metric_name(d->thr[i].metric));
        cJSON_AddNumberToObject(o, "base", (double)d->thr_base[i]);
        cJSON_AddNumberToObject(o, "new", (double)d->thr_new[i]);
        cJSON_AddNumberToObject(o, "limit", d->thr[i].limit);
        cJSON_AddBoolToObject(o, "relative", d->thr[i].relative);
        cJSON_AddBoolToObject(o, "failed", d->thr_failed[i]);
        cJSON_AddItemToArray(th, o);
    }
    cJSON_AddNumberToObject(root, "failed", d->failed);
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (s == NULL)
        return FSC_ENOMEM;
    fprintf(f, "%s\n", s);
    free(s);
    return 0;
}

/* ---- JUnit ----------------------------------------------------------------- */

static void xml_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void write_junit(const dx_t *d, FILE *f)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
               "  <testsuite name=\"fragscope diff\" tests=\"%zu\" failures=\"%d\">\n",
            d->nthr, d->failed);
    for (size_t i = 0; i < d->nthr; i++) {
        char line[512];
        threshold_line(d, i, line, sizeof line);
        fprintf(f, "    <testcase classname=\"fragscope.diff\" name=\"");
        xml_escape(f, d->thr[i].spec);
        fprintf(f, "\">");
        if (d->thr_failed[i]) {
            fprintf(f, "\n      <failure message=\"");
            xml_escape(f, line);
            fprintf(f, "\">");
            xml_escape(f, d->run[0].name);
            fprintf(f, " → ");
            xml_escape(f, d->run[1].name);
            fprintf(f, "</failure>\n    ");
        }
        fprintf(f, "</testcase>\n");
    }
    fprintf(f, "  </testsuite>\n</testsuites>\n");
}

int fsc__dx_write(const dx_t *d, const fsc_diff_opts_t *o, FILE *out)
{
    switch (o->format) {
    case FSC_DIFF_JSON: return write_json(d, out);
    case FSC_DIFF_JUNIT: write_junit(d, out); return 0;
    case FSC_DIFF_HTML: fsc__dx_html(d, o, out); return 0;
    case FSC_DIFF_MARKDOWN: write_text(d, o, out, 1); return 0;
    default:
        if (o->thresholds_only)
            write_thresholds(d, out);
        else
            write_text(d, o, out, 0);
        return 0;
    }
}

/* ---- annotations ------------------------------------------------------------ */

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The path, relative to root, of the checkout's copy of file: the file
 * itself when it lies under root, else the longest tail of its path that
 * names a file under root (the recording ran in another checkout). */
static int resolve(const char *root, const char *file, char *rel, size_t cap)
{
    char buf[PATH_MAX + 8];
    size_t rl = strlen(root);
    if (file[0] == '/' && strncmp(file, root, rl) == 0 && file[rl] == '/' && is_file(file)) {
        snprintf(rel, cap, "%s", file + rl + 1);
        return 1;
    }
    for (const char *t = file; t != NULL && *t; t = strchr(t, '/')) {
        while (*t == '/')
            t++;
        if (*t == '\0' || strncmp(t, "../", 3) == 0)
            continue;
        if ((size_t)snprintf(buf, sizeof buf, "%s/%s", root, t) >= sizeof buf)
            continue;
        if (is_file(buf)) {
            snprintf(rel, cap, "%s", t);
            return 1;
        }
    }
    return 0;
}

/* GitHub's escaping of a workflow command: the message's %, CR, LF; a
 * property's also ':' and ','. */
static void gh_escape(FILE *f, const char *s, int prop)
{
    for (; *s; s++) {
        if (*s == '%')
            fputs("%25", f);
        else if (*s == '\r')
            fputs("%0D", f);
        else if (*s == '\n')
            fputs("%0A", f);
        else if (prop && *s == ':')
            fputs("%3A", f);
        else if (prop && *s == ',')
            fputs("%2C", f);
        else
            fputc(*s, f);
    }
}

/* The first of a site's frames (innermost first) whose file the checkout
 * has: *rel its path under root, *line. */
static int site_location(const char *root, const char *files, char *rel, size_t cap,
                         long long *line)
{
    for (const char *l = files; l != NULL && *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        const char *colon = NULL;
        for (const char *c = l; c < l + n; c++)
            if (*c == ':')
                colon = c;
        char file[PATH_MAX];
        if (colon != NULL && (size_t)(colon - l) < sizeof file) {
            memcpy(file, l, (size_t)(colon - l));
            file[colon - l] = '\0';
            *line = strtoll(colon + 1, NULL, 10);
            if (*line > 0 && resolve(root, file, rel, cap))
                return 1;
        }
        l = nl ? nl + 1 : l + n;
    }
    return 0;
}

/* One annotation: a source line and the grown sites whose first frame in
 * the checkout is that line. */
typedef struct loc {
    char rel[PATH_MAX];
    long long line;
    int64_t grew;
    int nsites;
    char names[768];
} loc_t;

void fsc__dx_annotations(const dx_t *d, const char *root, FILE *out)
{
    char rootbuf[PATH_MAX];
    if (realpath(root ? root : ".", rootbuf) == NULL)
        return;
    loc_t *locs = calloc(MAX_ANNOTATIONS, sizeof *locs);
    if (locs == NULL)
        return;
    int n = 0;
    /* sites are sorted by the size of their change: the largest growths
     * first; sites called from one line share its annotation */
    for (size_t i = 0; i < d->nsites; i++) {
        const dx_site_t *s = &d->sites[i];
        int64_t dv = fsc__dx_sub(s->bytes[1], s->bytes[0]);
        char rel[PATH_MAX], x[32];
        long long line = 0;
        if (dv <= 0 || !site_location(rootbuf, s->files, rel, sizeof rel, &line))
            continue;
        int k = 0;
        while (k < n && (locs[k].line != line || strcmp(locs[k].rel, rel) != 0))
            k++;
        if (k == n) {
            if (n == MAX_ANNOTATIONS)
                continue;
            snprintf(locs[k].rel, sizeof locs[k].rel, "%s", rel);
            locs[k].line = line;
            n++;
        }
        loc_t *l = &locs[k];
        l->grew = fsc__dx_add(l->grew, dv);
        size_t len = strlen(l->names);
        if (l->nsites < 3)
            snprintf(l->names + len, sizeof l->names - len, "%s%s (%s)", l->nsites ? ", " : "",
                     s->name, sgn(dv, x, sizeof x));
        l->nsites++;
    }
    for (int k = 0; k < n; k++) {
        const loc_t *l = &locs[k];
        char x[32], w[32], msg[1200];
        snprintf(msg, sizeof msg,
                 "fragscope: %s more live at the allocated peak from %d call site%s reached from "
                 "here: %s%s; peak reserved %s overall",
                 sgn(l->grew, x, sizeof x), l->nsites, l->nsites == 1 ? "" : "s", l->names,
                 l->nsites > 3 ? ", ..." : "", sgn(d->d_res, w, sizeof w));
        fputs("::warning file=", out);
        gh_escape(out, l->rel, 1);
        fprintf(out, ",line=%lld,title=", l->line);
        gh_escape(out, "memory grew", 1);
        fputs("::", out);
        gh_escape(out, msg, 0);
        fputc('\n', out);
    }
    free(locs);
}
