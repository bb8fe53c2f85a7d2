/*
 * diff_explain_html.c — the compare page: the explanation of diff_explain.c
 * as one self-contained HTML file (inline CSS and SVG, no script, nothing
 * fetched), for a CI artifact or a pull-request link. A waterfall from the
 * base's peak reserved through the parts to the new one, the call sites
 * with bars for their change, the steps of both runs as lines, the settings
 * replay and the thresholds. Every figure is the one the text and JSON
 * outputs give.
 */
#include <stdlib.h>
#include <string.h>

#include "diff_explain.h"

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *sz(int64_t v, char *buf, size_t cap)
{
    return fsc_size_format(v > 0 ? (uint64_t)v : 0, buf, cap);
}

static const char *sgn(int64_t v, char *buf, size_t cap)
{
    if (cap < 2)
        return buf;
    size_t o = v != 0;
    buf[0] = v > 0 ? '+' : '-';
    fsc_size_format(fsc__dx_abs(v), buf + o, cap - o);
    return buf;
}

static const char k_css[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
    "table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #eee;"
    "text-align:right;white-space:nowrap}td.l,th.l{text-align:left;white-space:normal}.up{color:#b3261e}.down{color:#1b6e3a}"
    ".note{color:#555;font-size:13px}.bar{display:inline-block;height:10px}"
    ".fail{color:#b3261e;font-weight:600}.ok{color:#1b6e3a}svg text{font-size:11px}";

/* the waterfall: base PR, each part, new PR */
static void waterfall(const dx_t *d, FILE *f)
{
    struct {
        const char *label;
        int64_t v;
        int total;
    } rows[12];
    int n = 0;
    rows[n].label = "base peak reserved", rows[n].v = d->run[0].peak_res, rows[n++].total = 1;
    rows[n].label = "program (requested)", rows[n].v = d->program, rows[n++].total = 0;
    rows[n].label = "rounding", rows[n].v = d->rounding, rows[n++].total = 0;
    /* in this order every running total is a sum of one run's figures, so
     * none is negative: PR_A + Δ PA = PA_B + (PR_A − PA_A), then + moment
     * = allocated_B at its reserved peak + (PR_A − allocated_A there) */
    rows[n].label = "the peaks' moments", rows[n].v = d->moment, rows[n++].total = 0;
    for (int i = 0; i < DX_NCLS; i++)
        rows[n].label = fsc__dx_class_names[i], rows[n].v = d->cls[i], rows[n++].total = 0;
    rows[n].label = "new peak reserved", rows[n].v = d->run[1].peak_res, rows[n++].total = 1;
    /* the axis spans the running totals, not 0: the parts are small next
     * to the peaks (in double: a damaged file may hold any value) */
    double cum = 0, lo = 1e300, hi = -1e300;
    for (int i = 0; i < n; i++) {
        double v = (double)rows[i].v;
        double a = rows[i].total ? v : cum, b = rows[i].total ? v : cum + v;
        lo = a < lo ? a : lo;
        lo = b < lo ? b : lo;
        hi = a > hi ? a : hi;
        hi = b > hi ? b : hi;
        cum = b;
    }
    double pad = (hi - lo) / 10 + 1;
    lo = lo - pad > 0 ? lo - pad : 0;
    hi += pad;
    const int W = 1000, L = 170, R = 120, H = 22;
    double scale = (double)(W - L - R) / (hi - lo);
    fprintf(f, "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"waterfall\">\n", W,
            H * n + 20);
    cum = 0;
    char x[32];
    for (int i = 0; i < n; i++) {
        double v = (double)rows[i].v, a, b;
        if (rows[i].total) {
            a = lo;
            b = v;
            cum = v;
        } else {
            a = cum;
            b = cum + v;
            cum = b;
        }
        double x0 = a < b ? a : b, x1 = a < b ? b : a;
        double px = L + (x0 - lo) * scale, pw = (x1 - x0) * scale;
        const char *col = rows[i].total ? "#777" : rows[i].v > 0 ? "#d9534f" : "#3c9a5f";
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", L - 6, i * H + 15);
        esc(f, rows[i].label);
        fprintf(f, "</text><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"14\" "
                   "fill=\"%s\"/>",
                px, i * H + 4, pw < 1 ? 1 : pw, col);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s</text>\n", px + (pw < 1 ? 1 : pw) + 4,
                i * H + 15, rows[i].total ? sz(rows[i].v, x, sizeof x) : sgn(rows[i].v, x, sizeof x));
    }
    fprintf(f, "</svg>\n");
}

static void steps_svg(const dx_t *d, FILE *f)
{
    const dx_run_t *a = &d->run[0], *b = &d->run[1];
    int n = a->nsteps > b->nsteps ? a->nsteps : b->nsteps;
    int64_t hi = 1;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < d->run[k].nsteps; i++)
            if (d->run[k].step_res[i] > hi)
                hi = d->run[k].step_res[i];
    const int W = 1000, H = 220, L = 80, B = 24;
    double sx = n > 1 ? (double)(W - L - 20) / (n - 1) : 0, sy = (double)(H - B - 10) / (double)hi;
    char x[32];
    fprintf(f, "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"steps\">\n", W, H);
    fprintf(f, "<text x=\"4\" y=\"14\">%s</text><text x=\"4\" y=\"%d\">0 B</text>\n",
            sz(hi, x, sizeof x), H - B);
    static const char *const colors[2][2] = {{"#1f77b4", "#9ecae9"}, {"#d62728", "#f4a6a6"}};
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 2; s++) {
            const dx_run_t *r = &d->run[k];
            if (r->nsteps == 0)
                continue;
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"",
                    colors[k][s], s ? " stroke-dasharray=\"5 3\"" : "");
            for (int i = 0; i < r->nsteps; i++)
                fprintf(f, "%.1f,%.1f ", L + i * sx,
                        H - B - (double)(s ? r->step_res[i] : r->step_alloc[i]) * sy);
            fprintf(f, "\"/>\n");
        }
    for (int i = 0; i < n; i++)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\"%s>%d</text>", L + i * sx,
                H - 6, i + 1 == d->first_step_diff ? " font-weight=\"bold\"" : "", i + 1);
    fprintf(f, "\n</svg>\n<p class=\"note\">Solid: peak allocated per step; dashed: peak "
               "reserved%s. Blue: base, red: new.%s</p>\n",
            a->steps_res_sampled || b->steps_res_sampled
                ? " (from timeline buckets: an upper bound)" : "",
            d->first_step_diff > 0 ? " The step number in bold is the first that differs." : "");
}

void fsc__dx_html(const dx_t *d, const fsc_diff_opts_t *o, FILE *f)
{
    (void)o;
    const dx_run_t *a = &d->run[0], *b = &d->run[1];
    char x[32], y[32], z[32];
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<title>fragscope compare</title><style>%s</style></head><body>\n", k_css);
    fprintf(f, "<h1>fragscope compare: ");
    esc(f, a->name);
    fprintf(f, " → ");
    esc(f, b->name);
    fprintf(f, "</h1>\n<table><tr><th></th><th>base</th><th>new</th><th>change</th></tr>\n");
    fprintf(f, "<tr><td class=\"l\">peak allocated</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
            sz(a->peak_alloc, x, sizeof x), sz(b->peak_alloc, y, sizeof y),
            sgn(d->d_alloc, z, sizeof z));
    fprintf(f, "<tr><td class=\"l\">peak reserved</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
            sz(a->peak_res, x, sizeof x), sz(b->peak_res, y, sizeof y),
            sgn(d->d_res, z, sizeof z));
    fprintf(f, "<tr><td class=\"l\">OOMs</td><td>%lld</td><td>%lld</td><td>%+lld</td></tr>"
               "</table>\n",
            (long long)a->ooms, (long long)b->ooms, (long long)fsc__dx_sub(b->ooms, a->ooms));
    for (int k = 0; k < 2; k++)
        if (d->run[k].window)
            fprintf(f, "<p class=\"note\">The %s snapshot's history starts mid-run (a ring): "
                       "its figures cover the window.</p>\n", k ? "new" : "base");

    fprintf(f, "<h2>Why peak reserved changed by %s</h2>\n", sgn(d->d_res, x, sizeof x));
    char u[32], v[32];
    fprintf(f, "<p class=\"note\">program (requested bytes live at the allocated peak) %s, "
               "allocator %s: rounding %s, reserved − allocated at the reserved peak %s, the "
               "peaks' moments %s. %s</p>\n",
            sgn(d->program, x, sizeof x), sgn(d->allocator, y, sizeof y),
            sgn(d->rounding, z, sizeof z), sgn(d->frag, u, sizeof u),
            sgn(d->moment, v, sizeof v),
            d->exact ? "The parts add up to the change exactly."
                     : "Not exact: a database lacks the layout at its allocated peak or the "
                       "split at its reserved peak (fragscope diff says which).");
    waterfall(d, f);

    fprintf(f, "<h2>Call sites at the allocated peak</h2>\n<p class=\"note\">Block bytes live "
               "at each run's allocated peak; the %zu sites add up to the change of peak "
               "allocated, %s.</p>\n",
            d->nsites, sgn(d->d_alloc, x, sizeof x));
    int64_t mx = 1;
    for (size_t i = 0; i < d->nsites; i++) {
        int64_t v = fsc__dx_sub(d->sites[i].bytes[1], d->sites[i].bytes[0]);
        v = (int64_t)(fsc__dx_abs(v) > INT64_MAX ? INT64_MAX : fsc__dx_abs(v));
        mx = v > mx ? v : mx;
    }
    fprintf(f, "<table><tr><th>change</th><th></th><th>base</th><th>new</th><th class=\"l\">"
               "</th><th class=\"l\">site</th></tr>\n");
    size_t shown = 0, max = o && o->max_sites > 0 ? (size_t)o->max_sites : 50;
    for (size_t i = 0; i < d->nsites && shown < max; i++) {
        const dx_site_t *s = &d->sites[i];
        int64_t v = fsc__dx_sub(s->bytes[1], s->bytes[0]);
        if (v == 0)
            continue;
        shown++;
        double w = 120.0 * (double)fsc__dx_abs(v) / (double)mx;
        fprintf(f, "<tr><td class=\"%s\">%s</td><td class=\"l\"><span class=\"bar\" "
                   "style=\"width:%.0fpx;background:%s\"></span></td><td>%s</td><td>%s</td>"
                   "<td class=\"l\">%s</td><td class=\"l\">",
                v > 0 ? "up" : "down", sgn(v, x, sizeof x), w < 1 ? 1 : w,
                v > 0 ? "#d9534f" : "#3c9a5f", sz(s->bytes[0], y, sizeof y),
                sz(s->bytes[1], z, sizeof z), fsc__dx_site_status(s));
        esc(f, s->name);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n");
    if (shown == 0)
        fprintf(f, "<p>No site changed.</p>\n");

    const fsc_diff_settings_t *st = d->settings;
    if (st != NULL && st->differ) {
        fprintf(f, "<h2>Settings</h2>\n<p>Base: <code>");
        esc(f, st->base_config[0] ? st->base_config : "defaults");
        fprintf(f, "</code>, new: <code>");
        esc(f, st->new_config[0] ? st->new_config : "defaults");
        fprintf(f, "</code>. ");
        if (st->replayed)
            fprintf(f, "The base's requests replayed under both reserve %s and %s at the peak: "
                       "the settings alone explain %s. ",
                    sz((int64_t)st->base_peak_reserved, x, sizeof x),
                    sz((int64_t)st->new_peak_reserved, y, sizeof y),
                    sgn((int64_t)st->new_peak_reserved - (int64_t)st->base_peak_reserved, z,
                        sizeof z));
        else
            fprintf(f, "Not replayed: ");
        esc(f, st->note);
        fprintf(f, "</p>\n");
    }
    if (a->nsteps > 0 && b->nsteps > 0) {
        fprintf(f, "<h2>Steps</h2>\n");
        steps_svg(d, f);
    }
    if (d->nthr > 0) {
        fprintf(f, "<h2>Thresholds (%d of %zu failed)</h2>\n<ul>\n", d->failed, d->nthr);
        for (size_t i = 0; i < d->nthr; i++) {
            fprintf(f, "<li class=\"%s\">%s ", d->thr_failed[i] ? "fail" : "ok",
                    d->thr_failed[i] ? "fails" : "ok");
            esc(f, d->thr[i].spec);
            fprintf(f, "</li>\n");
        }
        fprintf(f, "</ul>\n");
    }
    fprintf(f, "<p class=\"note\">fragscope diff; docs/metrics.md, \"What changed\", defines "
               "every figure.</p>\n</body></html>\n");
}
