/*
 * job_emit.c — the overview of a job page as static HTML: one small chart
 * per run (static SVG written here, so the overview reads without
 * JavaScript and costs the same for every run: FSC__VJOB_POINTS points of
 * allocated and reserved, the capacity line where known, up to
 * FSC__VJOB_OOM_MARKS OOM marks), sorted by rank, with the job's marks
 * (first OOM, least headroom), which runs the page carries in detail and
 * how to get another's, and the rank picker (a native select, so it works
 * from the keyboard). viewer_runs.js swaps the detail when a run is picked.
 *
 * Beyond the overview limit (256 runs by default) only the runs that
 * matter get a chart (job_model.c picks them); the others are one
 * aggregated chart, the min, median and max of their reserved bytes at
 * each of the FSC__VJOB_POINTS parts of their own spans, and a list of
 * their run numbers as ranges, so the overview stays about limit x 3 KB.
 */
#include "job.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/rundb.h"

#define W 240 /* the chart's viewBox: W x H, the data in [TOP, H] */
#define H 64
#define TOP 4

static double ypos(const fsc__vjob_t *job, int64_t v)
{
    if (v < 0)
        v = 0;
    return H - (double)(H - TOP) * (double)v / (double)job->ymax;
}

static double xpos_seq(const fsc__vrun_t *v, int64_t seq)
{
    double span = (double)(v->seq_end - v->seq0 + 1);
    double x = (double)W * (double)(seq - v->seq0) / span;
    return x < 0 ? 0 : x > W ? W : x;
}

static void size_text(fsc__sb_t *sb, int64_t bytes)
{
    if (bytes < 0)
        fsc__sb_puts(sb, "unknown");
    else
        fsc__sb_html_size(sb, (uint64_t)bytes);
}

static void label(fsc__sb_t *sb, const fsc__vrun_t *v)
{
    fsc__sb_html(sb, v->label, 120);
}

/* The step line of one series, as bucket maxima from the left edge. */
static void steps(fsc__sb_t *sb, const fsc__vjob_t *job, const fsc__vrun_t *v, const int64_t *s,
                  int area)
{
    if (v->npts == 0)
        return;
    if (area)
        fsc__sb_printf(sb, "M0 %dV%.1f", H, ypos(job, s[0]));
    else
        fsc__sb_printf(sb, "M0 %.1f", ypos(job, s[0]));
    for (size_t i = 1; i < v->npts; i++) {
        int x = (int)((i * W + v->npts / 2) / v->npts);
        fsc__sb_printf(sb, "H%dV%.1f", x, ypos(job, s[i]));
    }
    fsc__sb_printf(sb, "H%d", W);
    if (area)
        fsc__sb_printf(sb, "V%dZ", H);
}

static void figures_line(fsc__sb_t *sb, const fsc__vrun_t *v)
{
    fsc__sb_puts(sb, "<div class=\"run-figs\">reserved <b class=\"rf-res\">");
    size_text(sb, v->peak_res);
    fsc__sb_puts(sb, "</b> &middot; allocated <b class=\"rf-alloc\">");
    size_text(sb, v->peak_alloc);
    fsc__sb_puts(sb, "</b></div>\n<div class=\"run-figs\">");
    if (v->capacity > 0 && v->peak_res >= 0) {
        fsc__sb_puts(sb, "headroom <b class=\"rf-head\">");
        if (v->capacity >= v->peak_res)
            fsc__sb_html_size(sb, (uint64_t)(v->capacity - v->peak_res));
        else {
            fsc__sb_puts(sb, "&minus;");
            fsc__sb_html_size(sb, (uint64_t)(v->peak_res - v->capacity));
        }
        fsc__sb_puts(sb, "</b> of ");
        fsc__sb_html_size(sb, (uint64_t)v->capacity);
    } else if (v->cap_lower > 0 && v->cap_upper > 0) {
        /* the range the run's page and report give too */
        fsc__sb_puts(sb, "capacity <b class=\"rf-cap\">");
        fsc__sb_html_size(sb, (uint64_t)v->cap_lower);
        fsc__sb_puts(sb, " &ndash; ");
        fsc__sb_html_size(sb, (uint64_t)v->cap_upper);
        fsc__sb_puts(sb, "</b> (inferred): no firm headroom");
    } else if (v->cap_lower > 0) {
        fsc__sb_puts(sb, "capacity not recorded, at least <b class=\"rf-cap\">");
        fsc__sb_html_size(sb, (uint64_t)v->cap_lower);
        fsc__sb_puts(sb, "</b>: no firm headroom");
    } else {
        fsc__sb_puts(sb, "capacity unknown: no headroom");
    }
    fsc__sb_puts(sb, "</div>\n<div class=\"run-figs\">");
    if (v->nooms > 0) {
        fsc__sb_printf(sb, "<b class=\"rf-ooms\">%" PRId64 "</b> OOM%s, the first at event %" PRId64
                       " (", v->nooms, v->nooms == 1 ? "" : "s", v->first_oom_seq);
        fsc__sb_html(sb, v->first_cause, 0);
        fsc__sb_puts(sb, ")");
        if (strcmp(v->first_cause, "external") == 0)
            fsc__sb_puts(sb, ": memory outside the allocator took the device, whatever the headroom");
    } else {
        fsc__sb_puts(sb, "no OOM");
    }
    fsc__sb_puts(sb, "</div>\n");
}

static void chart(fsc__sb_t *sb, const fsc__vjob_t *job, const fsc__vrun_t *v)
{
    fsc__sb_printf(sb, "<svg class=\"spark\" viewBox=\"0 0 %d %d\" preserveAspectRatio=\"none\" "
                   "role=\"img\" aria-label=\"", W, H);
    label(sb, v);
    fsc__sb_puts(sb, ": reserved and allocated bytes over its events\"><title>");
    label(sb, v);
    fsc__sb_puts(sb, ": peak reserved ");
    size_text(sb, v->peak_res);
    fsc__sb_puts(sb, ", peak allocated ");
    size_text(sb, v->peak_alloc);
    fsc__sb_puts(sb, ", capacity ");
    if (v->capacity < 0 && v->cap_lower > 0 && v->cap_upper > 0) {
        size_text(sb, v->cap_lower);
        fsc__sb_puts(sb, " &ndash; ");
        size_text(sb, v->cap_upper);
        fsc__sb_puts(sb, " (inferred)");
    } else {
        size_text(sb, v->capacity);
    }
    fsc__sb_printf(sb, "; events %" PRId64 " to %" PRId64 "; %" PRId64 " OOM%s%s</title>\n",
                   v->seq0, v->seq_end, v->nooms, v->nooms == 1 ? "" : "s",
                   v->nooms > (int64_t)v->nmarks ? " (the first ones marked)" : "");
    if (v->npts > 0) {
        fsc__sb_puts(sb, "<path class=\"sp-res\" d=\"");
        steps(sb, job, v, v->res, 1);
        fsc__sb_puts(sb, "\"/><path class=\"sp-alloc\" d=\"");
        steps(sb, job, v, v->alloc, 0);
        fsc__sb_puts(sb, "\"/>\n");
    }
    if (v->capacity > 0) {
        double y = ypos(job, v->capacity);
        fsc__sb_printf(sb, "<line class=\"sp-cap\" x1=\"0\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>\n", W, y, y);
    }
    for (size_t k = 0; k < v->nmarks; k++) {
        double x = xpos_seq(v, v->mark_seq[k]);
        fsc__sb_printf(sb, "<line class=\"sp-oom\" x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%d\"/>\n", x, x, H);
    }
    fsc__sb_puts(sb, "</svg>\n");
}

static const char *mark_words(int marks)
{
    if (marks & FSC__VJOB_FIRST_OOM)
        return "first to run out of memory";
    return NULL;
}

static void flags(fsc__sb_t *sb, const fsc__vrun_t *v)
{
    if (!(v->marks & (FSC__VJOB_FIRST_OOM | FSC__VJOB_LEAST_HEADROOM | FSC__VJOB_HIGHEST_PEAK)))
        return;
    fsc__sb_puts(sb, "<div class=\"run-flags\">");
    if (mark_words(v->marks))
        fsc__sb_printf(sb, "<span class=\"flag first-oom\">%s</span>", mark_words(v->marks));
    if (v->marks & FSC__VJOB_LEAST_HEADROOM)
        fsc__sb_puts(sb, "<span class=\"flag least-headroom\">least headroom</span>");
    if (v->marks & FSC__VJOB_HIGHEST_PEAK)
        fsc__sb_puts(sb, "<span class=\"flag highest-peak\">highest peak reserved</span>");
    fsc__sb_puts(sb, "</div>\n");
}

static void more_hint(fsc__sb_t *sb, const fsc__vjob_t *job, int64_t run)
{
    fsc__sb_puts(sb, "<code>fragscope view ");
    fsc__sb_html(sb, job->db_name, 120);
    fsc__sb_printf(sb, " --runs %" PRId64 "</code>", run);
}

static void card(fsc__sb_t *sb, const fsc__vjob_t *job, const fsc__vrun_t *v)
{
    fsc__sb_printf(sb, "<a class=\"run-card%s%s%s%s\" href=\"#run-%" PRId64 "\" id=\"run-card-%" PRId64
                   "\" data-run=\"%" PRId64 "\"", v->detail ? "" : " no-detail",
                   v->marks & FSC__VJOB_FIRST_OOM ? " first-oom" : "",
                   v->marks & FSC__VJOB_LEAST_HEADROOM ? " least-headroom" : "",
                   v->marks & FSC__VJOB_HIGHEST_PEAK ? " highest-peak" : "", v->run, v->run, v->run);
    if (v->rank != FSC_RUNDB_NULL)
        fsc__sb_printf(sb, " data-rank=\"%" PRId64 "\"", v->rank);
    fsc__sb_printf(sb, " data-peak-reserved=\"%" PRId64 "\" data-peak-allocated=\"%" PRId64 "\">\n",
                   v->peak_res, v->peak_alloc);
    fsc__sb_puts(sb, "<div class=\"run-label\">");
    label(sb, v);
    fsc__sb_puts(sb, "</div>\n");
    chart(sb, job, v);
    figures_line(sb, v);
    flags(sb, v);
    if (!v->detail) {
        fsc__sb_puts(sb, "<div class=\"run-nodetail\">no detail in this page: ");
        more_hint(sb, job, v->run);
        fsc__sb_puts(sb, "</div>\n");
    }
    fsc__sb_puts(sb, "</a>\n");
}

static void job_mark(fsc__sb_t *sb, const fsc__vjob_t *job, long i, const char *what)
{
    const fsc__vrun_t *v = &job->runs[i];
    fsc__sb_printf(sb, "<li>%s: <a href=\"#run-%" PRId64 "\">", what, v->run);
    label(sb, v);
    fsc__sb_puts(sb, "</a>");
}

static void marks_list(fsc__sb_t *sb, const fsc__vjob_t *job)
{
    fsc__sb_puts(sb, "<ul class=\"job-marks\">\n");
    if (job->first_oom >= 0) {
        const fsc__vrun_t *v = &job->runs[job->first_oom];
        job_mark(sb, job, job->first_oom, "First to run out of memory");
        fsc__sb_printf(sb, " (event %" PRId64 ", cause ", v->first_oom_seq);
        fsc__sb_html(sb, v->first_cause, 0);
        fsc__sb_puts(sb, job->oom_wall_clock
                             ? "; the runs' first OOMs compared on the wall clock)</li>\n"
                             : "; the runs' first OOMs compared by the time since each run's start, "
                               "as some runs do not record their wall-clock origin)</li>\n");
    } else {
        fsc__sb_puts(sb, "<li>No run ran out of memory.</li>\n");
    }
    if (job->least_headroom >= 0) {
        const fsc__vrun_t *v = &job->runs[job->least_headroom];
        job_mark(sb, job, job->least_headroom, "Least headroom");
        fsc__sb_puts(sb, " (peak reserved ");
        fsc__sb_html_size(sb, (uint64_t)v->peak_res);
        fsc__sb_puts(sb, " of a capacity of ");
        fsc__sb_html_size(sb, (uint64_t)v->capacity);
        fsc__sb_puts(sb, "; among the runs whose capacity is known)</li>\n");
    } else if (job->highest_peak >= 0) {
        const fsc__vrun_t *v = &job->runs[job->highest_peak];
        job_mark(sb, job, job->highest_peak, "No run's capacity is known, so no headroom: highest peak reserved");
        fsc__sb_puts(sb, " (");
        fsc__sb_html_size(sb, (uint64_t)v->peak_res);
        fsc__sb_puts(sb, ")</li>\n");
    }
    fsc__sb_puts(sb, "</ul>\n");
}

static void detail_note(fsc__sb_t *sb, const fsc__vjob_t *job)
{
    fsc__sb_puts(sb, "<p class=\"muted\" id=\"runs-detail-note\">");
    if (job->ndetail == job->n) {
        fsc__sb_printf(sb, "This page carries the detail of all %zu runs.", job->n);
    } else {
        fsc__sb_printf(sb, "This page carries the detail of %zu of the %zu runs (every run up to %zu; "
                       "beyond that the first to run out of memory, the least headroom and those "
                       "named with <code>--runs</code>): ", job->ndetail, job->n, job->limit);
        size_t shown = 0;
        for (size_t k = 0; k < job->n; k++) {
            const fsc__vrun_t *v = &job->runs[job->order[k]];
            if (!v->detail)
                continue;
            fsc__sb_puts(sb, shown++ ? ", " : "");
            fsc__sb_printf(sb, "<a href=\"#run-%" PRId64 "\">", v->run);
            label(sb, v);
            fsc__sb_puts(sb, "</a>");
        }
        fsc__sb_puts(sb, ". To see another run's detail, write a page that carries it, e.g. ");
        int64_t other = -1;
        for (size_t k = 0; k < job->n && other < 0; k++)
            if (!job->runs[job->order[k]].detail)
                other = job->runs[job->order[k]].run;
        more_hint(sb, job, other);
        fsc__sb_puts(sb, " (a list: <code>--runs 3,17,40-47</code>).");
    }
    fsc__sb_puts(sb, "</p>\n");
}

static void picker(fsc__sb_t *sb, const fsc__vjob_t *job)
{
    const fsc__vrun_t *open = &job->runs[job->open];
    fsc__sb_printf(sb, "<div id=\"run-bar\" class=\"run-bar\"><label>Detail below of <select id=\"run-pick\" "
                   "data-default=\"%" PRId64 "\" data-db=\"", open->run);
    fsc__sb_html(sb, job->db_name, 120);
    fsc__sb_puts(sb, "\" aria-label=\"the run whose detail is shown\">\n");
    for (size_t k = 0; k < job->n; k++) {
        const fsc__vrun_t *v = &job->runs[job->order[k]];
        if (!v->detail)
            continue;
        fsc__sb_printf(sb, "<option value=\"%" PRId64 "\"%s>", v->run, v == open ? " selected" : "");
        label(sb, v);
        if (v->marks & FSC__VJOB_FIRST_OOM)
            fsc__sb_puts(sb, " &mdash; first to run out of memory");
        if (v->marks & FSC__VJOB_LEAST_HEADROOM)
            fsc__sb_puts(sb, " &mdash; least headroom");
        if (v->marks & FSC__VJOB_HIGHEST_PEAK)
            fsc__sb_puts(sb, " &mdash; highest peak reserved");
        fsc__sb_puts(sb, "</option>\n");
    }
    fsc__sb_printf(sb, "</select></label> <span class=\"muted\">%zu of %zu runs carried; link to one "
                   "with <code>#run-N</code>, to a view of it with <code>#run-N/state?event=E</code> or "
                   "<code>#run-N/oom-0</code></span> <span id=\"run-note\" class=\"muted\"></span></div>\n",
                   job->ndetail, job->n);
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* The runs without a chart of their own, as one chart: at each part, the
 * min and max of their reserved bytes (area) and the median (line). */
static void aggregate(fsc__sb_t *sb, const fsc__vjob_t *job)
{
    size_t m = job->n - job->ndrawn, noom = 0;
    int64_t *vals = malloc((m ? m : 1) * sizeof *vals);
    int64_t *peaks = malloc((m ? m : 1) * sizeof *peaks);
    if (vals == NULL || peaks == NULL) {
        free(vals);
        free(peaks);
        return;
    }
    int64_t lo[FSC__VJOB_POINTS], med[FSC__VJOB_POINTS], hi[FSC__VJOB_POINTS];
    for (size_t p = 0; p < FSC__VJOB_POINTS; p++) {
        size_t c = 0;
        for (size_t i = 0; i < job->n; i++) {
            const fsc__vrun_t *v = &job->runs[i];
            if (v->drawn || v->npts == 0)
                continue;
            vals[c++] = v->res[p * v->npts / FSC__VJOB_POINTS];
        }
        if (c == 0) {
            lo[p] = med[p] = hi[p] = 0;
            continue;
        }
        qsort(vals, c, sizeof *vals, cmp_i64);
        lo[p] = vals[0];
        med[p] = vals[c / 2];
        hi[p] = vals[c - 1];
    }
    size_t np = 0;
    for (size_t i = 0; i < job->n; i++) {
        const fsc__vrun_t *v = &job->runs[i];
        if (v->drawn)
            continue;
        peaks[np++] = v->peak_res;
        noom += v->nooms > 0;
    }
    qsort(peaks, np, sizeof *peaks, cmp_i64);
    fsc__sb_printf(sb, "<div class=\"run-card run-aggregate\" id=\"runs-aggregate\" data-runs=\"%zu\" "
                   "data-ooms=\"%zu\">\n<div class=\"run-label\">The other %zu runs, as one chart</div>\n",
                   m, noom, m);
    fsc__sb_printf(sb, "<svg class=\"spark\" viewBox=\"0 0 %d %d\" preserveAspectRatio=\"none\" role=\"img\" "
                   "aria-label=\"the other %zu runs: min, median and max of reserved bytes\"><title>the other "
                   "%zu runs: at each of %d parts of each run's own events, the least and most reserved "
                   "(area) and the median (line)</title>\n<path class=\"sp-res\" d=\"",
                   W, H, m, m, FSC__VJOB_POINTS);
    /* the band: max left to right, then min right to left */
    fsc__sb_printf(sb, "M0 %.1f", ypos(job, hi[0]));
    for (size_t p = 1; p < FSC__VJOB_POINTS; p++)
        fsc__sb_printf(sb, "H%dV%.1f", (int)(p * W / FSC__VJOB_POINTS), ypos(job, hi[p]));
    fsc__sb_printf(sb, "H%dV%.1f", W, ypos(job, lo[FSC__VJOB_POINTS - 1]));
    for (size_t p = FSC__VJOB_POINTS - 1; p > 0; p--)
        fsc__sb_printf(sb, "H%dV%.1f", (int)(p * W / FSC__VJOB_POINTS), ypos(job, lo[p - 1]));
    fsc__sb_puts(sb, "H0Z\"/><path class=\"sp-alloc\" d=\"");
    fsc__sb_printf(sb, "M0 %.1f", ypos(job, med[0]));
    for (size_t p = 1; p < FSC__VJOB_POINTS; p++)
        fsc__sb_printf(sb, "H%dV%.1f", (int)(p * W / FSC__VJOB_POINTS), ypos(job, med[p]));
    fsc__sb_printf(sb, "H%d\"/>\n</svg>\n", W);
    fsc__sb_puts(sb, "<div class=\"run-figs\">peak reserved: least <b>");
    size_text(sb, np ? peaks[0] : -1);
    fsc__sb_puts(sb, "</b> &middot; median <b>");
    size_text(sb, np ? peaks[np / 2] : -1);
    fsc__sb_puts(sb, "</b> &middot; most <b>");
    size_text(sb, np ? peaks[np - 1] : -1);
    fsc__sb_printf(sb, "</b></div>\n<div class=\"run-figs\">%zu of them ran out of memory</div>\n"
                   "<div class=\"run-figs\">runs ", noom);
    /* their run numbers as ranges, in run order */
    size_t i = 0, shown = 0;
    while (i < job->n) {
        if (job->runs[i].drawn) {
            i++;
            continue;
        }
        size_t j = i;
        while (j + 1 < job->n && !job->runs[j + 1].drawn && job->runs[j + 1].run == job->runs[j].run + 1)
            j++;
        fsc__sb_puts(sb, shown++ ? ", " : "");
        if (j > i)
            fsc__sb_printf(sb, "%" PRId64 "&ndash;%" PRId64, job->runs[i].run, job->runs[j].run);
        else
            fsc__sb_printf(sb, "%" PRId64, job->runs[i].run);
        i = j + 1;
    }
    fsc__sb_puts(sb, "</div>\n</div>\n");
    free(vals);
    free(peaks);
}

static void drawn_note(fsc__sb_t *sb, const fsc__vjob_t *job)
{
    if (job->ndrawn == job->n)
        return;
    fsc__sb_printf(sb, "<p class=\"muted\" id=\"runs-drawn-note\" data-drawn=\"%zu\" data-runs=\"%zu\">"
                   "%zu of the %zu runs are drawn as a chart each (every run up to %zu, <code>"
                   "--overview-limit N</code>; beyond that the first to run out of memory, the least "
                   "headroom, the runs carried in detail or named with <code>--runs</code>, the largest "
                   "and smallest peaks reserved and the runs with OOMs while fewer than %zu are drawn); "
                   "the other %zu are one chart at the end, the least, median and most reserved bytes "
                   "over them. To draw one of them (and carry its detail), name it: ",
                   job->ndrawn, job->n, job->ndrawn, job->n, job->olimit, job->olimit,
                   job->n - job->ndrawn);
    int64_t other = -1;
    for (size_t k = 0; k < job->n && other < 0; k++)
        if (!job->runs[job->order[k]].drawn)
            other = job->runs[job->order[k]].run;
    more_hint(sb, job, other);
    fsc__sb_puts(sb, ".</p>\n");
}

void fsc__job_emit_overview(fsc__sb_t *sb, const fsc__vjob_t *job)
{
    fsc__sb_printf(sb, "<section id=\"runs\" class=\"panel\" data-runs=\"%zu\">\n<h2>Runs of this job</h2>\n",
                   job->n);
    fsc__sb_printf(sb, "<p class=\"hint\">%zu runs, sorted by rank (runs without a known rank after them, by run number). Each chart spans its own run's events, "
                   "first to last, in %d equal parts, each drawn at its maxima: reserved (orange area) and "
                   "allocated (blue line) bytes, the capacity (dashed) where known, out-of-memory errors "
                   "(red lines, the first %d). All charts share one byte scale, 0 to ",
                   job->n, FSC__VJOB_POINTS, FSC__VJOB_OOM_MARKS);
    fsc__sb_html_size(sb, (uint64_t)job->ymax);
    fsc__sb_puts(sb, ". Click a chart, or pick a run below, to show its detail.</p>\n");
    marks_list(sb, job);
    detail_note(sb, job);
    drawn_note(sb, job);
    fsc__sb_puts(sb, "<div class=\"run-grid\">\n");
    for (size_t k = 0; k < job->n; k++)
        if (job->runs[job->order[k]].drawn)
            card(sb, job, &job->runs[job->order[k]]);
    if (job->ndrawn < job->n)
        aggregate(sb, job);
    fsc__sb_puts(sb, "</div>\n</section>\n");
    picker(sb, job);
}

void fsc__job_emit_nav(fsc__sb_t *sb)
{
    fsc__sb_puts(sb, "<a href=\"#runs\">Runs</a>\n    ");
}
