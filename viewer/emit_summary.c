/*
 * emit_summary.c — the static part of the report: headline numbers, the
 * run's facts and the list of OOMs, as plain HTML written here in C, so they
 * are readable with JavaScript off, in a text browser or by grep. Every
 * string from the database goes through fsc__sb_html.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "emit.h"

static void fmt_time(char *buf, size_t cap, int64_t ns)
{
    if (ns < 0)
        snprintf(buf, cap, "-");
    else if (ns >= 1000000000)
        snprintf(buf, cap, "%.3f s", (double)ns / 1e9);
    else if (ns >= 1000000)
        snprintf(buf, cap, "%.3f ms", (double)ns / 1e6);
    else if (ns >= 1000)
        snprintf(buf, cap, "%.3f \xc2\xb5s", (double)ns / 1e3);
    else
        snprintf(buf, cap, "%" PRId64 " ns", ns);
}

static void fmt_pct(char *buf, size_t cap, double r)
{
    /* Two decimals below 1 %, so a small but non-zero share is not "0.0 %". */
    double p = 100.0 * r;
    snprintf(buf, cap, p > 0.0 && p < 1.0 ? "%.2f %%" : "%.1f %%", p);
}

static void fmt_count(char *buf, size_t cap, int64_t n)
{
    /* 1234567 -> "1,234,567" */
    char raw[32];
    int len = snprintf(raw, sizeof raw, "%" PRId64, n < 0 ? -n : n);
    size_t o = 0;
    if (n < 0 && o + 1 < cap)
        buf[o++] = '-';
    for (int i = 0; i < len && o + 2 < cap; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
}

/* One card: label, value (HTML-escaped), optional sub line. */
static void card(fsc__sb_t *sb, const char *id, const char *label, const char *value,
                 const char *sub, int bad)
{
    fsc__sb_printf(sb, "<div class=\"card%s\" id=\"%s\"><div class=\"label\">", bad ? " bad" : "", id);
    fsc__sb_html(sb, label, 0);
    fsc__sb_puts(sb, "</div><div class=\"value\">");
    fsc__sb_html(sb, value, 0);
    fsc__sb_puts(sb, "</div>");
    if (sub != NULL && sub[0] != '\0') {
        fsc__sb_puts(sb, "<div class=\"sub\">");
        fsc__sb_html(sb, sub, 0);
        fsc__sb_puts(sb, "</div>");
    }
    fsc__sb_puts(sb, "</div>\n");
}

static void kv_row(fsc__sb_t *sb, const char *key, const char *value, size_t max_chars)
{
    fsc__sb_puts(sb, "<tr><th>");
    fsc__sb_html(sb, key, 0);
    fsc__sb_puts(sb, "</th><td>");
    fsc__sb_html(sb, value, max_chars);
    fsc__sb_puts(sb, "</td></tr>\n");
}

static void cards(fsc__sb_t *sb, const fsc__model_t *m)
{
    char v[96], sub[256], a[64], b[64];
    int64_t pa = fsc__model_sum_i(m, "peak_allocated_bytes", 0);
    int64_t pr = fsc__model_sum_i(m, "peak_reserved_bytes", 0);

    fsc_size_format((uint64_t)pa, v, sizeof v);
    fmt_time(a, sizeof a, fsc__model_sum_i(m, "peak_allocated_time_ns", -1));
    snprintf(sub, sizeof sub, "first reached at %s (event %" PRId64 ")", a,
             fsc__model_sum_i(m, "peak_allocated_seq", 0));
    card(sb, "sum-peak-allocated", "Peak allocated", v, sub, 0);

    fsc_size_format((uint64_t)pr, v, sizeof v);
    fmt_time(a, sizeof a, fsc__model_sum_i(m, "peak_reserved_time_ns", -1));
    snprintf(sub, sizeof sub, "first reached at %s (event %" PRId64 ")", a,
             fsc__model_sum_i(m, "peak_reserved_seq", 0));
    card(sb, "sum-peak-reserved", "Peak reserved", v, sub, 0);

    fmt_pct(v, sizeof v, fsc__model_sum_d(m, "utilization", 0.0));
    card(sb, "sum-utilization", "Utilization", v, "peak allocated / peak reserved", 0);

    fsc_size_format((uint64_t)fsc__model_sum_i(m, "internal_frag_bytes_at_peak", 0), v, sizeof v);
    fmt_pct(a, sizeof a, fsc__model_sum_d(m, "internal_frag_ratio_at_peak", 0.0));
    snprintf(sub, sizeof sub, "%s of allocated, at the peak", a);
    card(sb, "sum-internal", "Internal fragmentation", v, sub, 0);

    fmt_pct(v, sizeof v, fsc__model_sum_d(m, "external_frag_at_peak", 0.0));
    fsc_size_format((uint64_t)fsc__model_sum_i(m, "largest_free_at_peak", 0), a, sizeof a);
    fsc_size_format((uint64_t)fsc__model_sum_i(m, "free_in_reserved_at_peak", 0), b, sizeof b);
    snprintf(sub, sizeof sub, "largest free block %s of %s free, at the peak", a, b);
    card(sb, "sum-external", "Free-space scatter", v, sub, 0);

    fsc_size_format((uint64_t)fsc__model_sum_i(m, "reserved_unallocated_at_peak", 0), v, sizeof v);
    fsc_size_format((uint64_t)fsc__model_sum_i(m, "peak_reserved_unallocated_bytes", 0), a, sizeof a);
    snprintf(sub, sizeof sub, "at the peak; at most %s during the run", a);
    card(sb, "sum-rbu", "Reserved but unallocated", v, sub, 0);

    int64_t nooms = fsc__model_sum_i(m, "num_ooms", (int64_t)m->ooms_total);
    snprintf(v, sizeof v, "%" PRId64, nooms);
    sub[0] = '\0';
    static const char *const k_causes[] = {"capacity", "fragmentation", "external", "oversize",
                                            "undetermined"};
    for (size_t c = 0; c < sizeof k_causes / sizeof k_causes[0]; c++) {
        int64_t k = 0;
        for (size_t i = 0; i < m->nooms; i++)
            if (m->ooms[i].cause != NULL && strcmp(m->ooms[i].cause, k_causes[c]) == 0)
                k++;
        if (k > 0) {
            size_t len = strlen(sub);
            snprintf(sub + len, sizeof sub - len, "%s%" PRId64 " %s", len ? ", " : "", k, k_causes[c]);
        }
    }
    card(sb, "sum-ooms", "Out-of-memory errors", v, nooms > 0 ? sub : "none", nooms > 0);

    fsc_size_format((uint64_t)fsc__model_sum_i(m, "leaked_bytes", 0), v, sizeof v);
    fmt_count(a, sizeof a, fsc__model_sum_i(m, "leaked_blocks", 0));
    if (m->end.persistent_blocks + m->end.growth_blocks > 0) {
        fsc_size_format((uint64_t)m->end.persistent_bytes, b, sizeof b);
        char g[64];
        fsc_size_format((uint64_t)m->end.growth_bytes, g, sizeof g);
        snprintf(sub, sizeof sub, "%s blocks: %s persistent (allocated before the first step), "
                 "%s growth", a, b, g);
    } else {
        snprintf(sub, sizeof sub, "%s blocks still allocated at the end", a);
    }
    card(sb, "sum-leaks", "Still live at the end", v, sub, 0);
}

/* "7.67 GiB – 9.11 GiB (inferred ...)", "12.00 GiB" or "not recorded": the
 * one capacity figure the page gives everywhere (the OOM cards give the
 * same bounds). */
static void capacity_text(const fsc__model_t *m, char *buf, size_t cap)
{
    int64_t c = fsc__model_meta_i(m, "capacity", 0);
    if (fsc__model_meta_i(m, "capacity_inferred", 0)) {
        for (size_t i = 0; i < m->nooms; i++) {
            const fsc__voom_t *o = &m->ooms[i];
            if (o->cap_lo > 0 && o->cap_hi > 0) {
                char lo[32], hi[32];
                fsc_size_format((uint64_t)o->cap_lo, lo, sizeof lo);
                fsc_size_format((uint64_t)o->cap_hi, hi, sizeof hi);
                snprintf(buf, cap, "%s \xe2\x80\x93 %s, inferred from the run at OOM #%lld "
                         "(the cap was not recorded)", lo, hi, (long long)o->id);
                return;
            }
        }
        snprintf(buf, cap, "not recorded (bounded from the run at each OOM)");
    } else if (c > 0) {
        fsc_size_format((uint64_t)c, buf, cap);
    } else {
        snprintf(buf, cap, "not recorded");
    }
}

/* The page's first paragraph: what happened, why, under which cap, and
 * what would have served it: the facts report and the OOM diagnosis give,
 * in one place. */
static void verdict(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps)
{
    char a[64], b[64], c[64], capt[200];
    capacity_text(m, capt, sizeof capt);
    const fsc__voom_t *o = m->nooms > 0 ? &m->ooms[0] : NULL;
    fsc__sb_printf(sb, "<div id=\"verdict\" class=\"verdict%s\"><p>", o ? " bad" : "");
    if (o != NULL) {
        fsc_size_format((uint64_t)o->requested, a, sizeof a);
        fsc_size_format((uint64_t)o->allocated, b, sizeof b);
        fsc_size_format((uint64_t)o->reserved, c, sizeof c);
        char entry[96] = "";
        int64_t k = fsc__model_trace_entry(m, o->seq);
        if (k >= 0)
            snprintf(entry, sizeof entry, ", the snapshot's device_traces[%" PRId64 "][%" PRId64 "]",
                     m->trace_device, k);
        fsc__sb_printf(sb, "<b>Out of memory at event %" PRId64 "%s (<a href=\"#oom-%" PRId64
                       "\">OOM #%" PRId64 "</a>%s):</b> a request of %s failed with %s "
                       "allocated and %s reserved. Cause: <span class=\"cause ",
                       o->seq, entry, o->id, o->id,
                       m->ooms_total > 1 ? ", the first of several" : "", a, b, c);
        const char *cause = o->cause ? o->cause : "unknown";
        for (const char *x = cause; *x; x++)
            if (*x >= 'a' && *x <= 'z')
                fsc__sb_put(sb, x, 1);
        fsc__sb_puts(sb, "\">");
        fsc__sb_html(sb, cause, 32);
        fsc__sb_puts(sb, "</span>. ");
        if (o->explanation != NULL && o->explanation[0] != '\0') {
            fsc__sb_html(sb, o->explanation, caps->text_chars);
            fsc__sb_puts(sb, " ");
        }
        fsc__sb_puts(sb, "<span id=\"verdict-cap\">Cap: ");
        fsc__sb_html(sb, capt, 0);
        fsc__sb_puts(sb, ".</span> ");
        if (o->device_free >= 0) {
            int64_t want = o->rounded > 0 ? o->rounded : o->requested;
            fsc_size_format((uint64_t)o->device_free, a, sizeof a);
            fsc_size_format((uint64_t)want, b, sizeof b);
            if (o->device_free >= want)
                fsc__sb_printf(sb, "<span id=\"verdict-device\">The device still had %s free, "
                               "enough for the %s asked: the per-process cap "
                               "(<code>set_per_process_memory_fraction</code>) stopped it, "
                               "not the device.</span> ", a, b);
            else
                fsc__sb_printf(sb, "<span id=\"verdict-device\">The device had only %s free, "
                               "less than the %s asked: the device itself was full.</span> ",
                               a, b);
        }
        fsc__sb_puts(sb, "<span id=\"verdict-whatif\">");
        size_t served = 0;
        for (size_t i = 0; i < o->nsuggs; i++)
            if (o->suggs[i].avoids)
                served++;
        if (o->nsuggs == 0) {
            /* analyze keeps only the settings that would have served it;
             * report's verdict words an empty list the same way */
            fsc__sb_puts(sb, "No setting of the what-if grid serves it.");
        } else if (served == 0) {
            fsc__sb_printf(sb, "None of the %zu settings replayed would have served it.",
                           o->nsuggs);
        } else {
            fsc__sb_puts(sb, "Would have served it: ");
            size_t k = 0;
            for (size_t i = 0; i < o->nsuggs && k < 3; i++) {
                const fsc__vsugg_t *g = &o->suggs[i];
                if (!g->avoids)
                    continue;
                fsc__sb_puts(sb, k++ ? "; <code>" : "<code>");
                /* a setting string breaks only after a comma, never mid-token */
                const char *cfg = g->config && g->config[0] ? g->config : "(defaults)";
                for (const char *p = cfg; *p;) {
                    size_t len = strcspn(p, ",");
                    char part[256];
                    snprintf(part, sizeof part, "%.*s", (int)(len < 255 ? len : 255), p);
                    fsc__sb_html(sb, part, 0);
                    if (p[len] == ',') {
                        fsc__sb_puts(sb, ",<wbr>");
                        len++;
                    }
                    p += len;
                }
                fsc__sb_puts(sb, "</code>");
                if (g->needed_capacity > 0) {
                    fsc_size_format((uint64_t)g->needed_capacity, a, sizeof a);
                    fsc__sb_printf(sb, " (needs %s)", a);
                }
            }
            if (served > k)
                fsc__sb_printf(sb, "; %zu more", served - k);
            fsc__sb_puts(sb, ".");
        }
        if (fsc__model_meta_i(m, "run_complete", -1) == 0)
            fsc__sb_puts(sb, " The recording ends at this OOM: the rest of the run is unknown.");
        fsc__sb_puts(sb, "</span>");
    } else {
        fsc_size_format((uint64_t)fsc__model_sum_i(m, "peak_allocated_bytes", 0), a, sizeof a);
        fsc_size_format((uint64_t)fsc__model_sum_i(m, "peak_reserved_bytes", 0), b, sizeof b);
        fsc__sb_printf(sb, "<b>No out-of-memory error.</b> Peak allocated %s (event %" PRId64
                       ") with %s reserved at most. <span id=\"verdict-cap\">Cap: ",
                       a, fsc__model_sum_i(m, "peak_allocated_seq", 0), b);
        fsc__sb_html(sb, capt, 0);
        fsc__sb_puts(sb, ".</span>");
    }
    if (m->nvsites > 0) {
        fsc_size_format((uint64_t)m->vsites_total, a, sizeof a);
        fsc__sb_printf(sb, " <span id=\"verdict-lines\">Live %s by line of code (of %s): ",
                       o ? "at the OOM" : "at the peak", a);
        for (size_t i = 0; i < m->nvsites && i < 3; i++) {
            fsc_size_format((uint64_t)m->vsites[i].bytes, b, sizeof b);
            fsc__sb_puts(sb, i ? ", <code>" : "<code>");
            fsc__sb_html(sb, m->vsites[i].label, 120);
            fsc__sb_printf(sb, "</code> %s", b);
        }
        fsc__sb_puts(sb, " (<a href=\"#stacks\">all lines</a>).</span>");
    }
    fsc__sb_puts(sb, "</p></div>\n");
}

/* Memory of the device outside this allocator (docs/metrics.md, "Memory
 * outside the allocator"): the most at a device sample, and at the first
 * OOM whose device free bytes are known, total − free − reserved. */
static void external_rows(fsc__sb_t *sb, const fsc__model_t *m)
{
    char a[64], line[192];
    int64_t samples = fsc__model_meta_i(m, "device_samples", 0);
    int64_t most = fsc__model_meta_i(m, "external_max_bytes", -1);
    if (samples > 0 && most >= 0) {
        fsc_size_format((uint64_t)most, a, sizeof a);
        snprintf(line, sizeof line, "%s at most (event %" PRId64 "; %" PRId64 " device samples)",
                 a, fsc__model_meta_i(m, "external_max_seq", -1), samples);
        kv_row(sb, "outside the allocator", line, 0);
    }
    int64_t dev = fsc__model_meta_i(m, "device_total", 0);
    for (size_t i = 0; i < m->nooms; i++) {
        const fsc__voom_t *o = &m->ooms[i];
        if (o->device_free < 0)
            continue;
        if (dev > 0) {
            int64_t x = dev - o->device_free - o->reserved;
            fsc_size_format((uint64_t)(x > 0 ? x : 0), a, sizeof a);
            snprintf(line, sizeof line, "%s at OOM #%lld (device total − free − reserved)", a,
                     (long long)o->id);
        } else {
            snprintf(line, sizeof line, "unknown at OOM #%lld: the device's total was not "
                     "recorded (analyze --device-memory SIZE)", (long long)o->id);
        }
        kv_row(sb, "outside the allocator", line, 0);
        break;
    }
}

static void facts(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps)
{
    char buf[128], a[64], b[64];
    fsc__sb_puts(sb, "<table class=\"kv\" id=\"run-facts\">\n");
    kv_row(sb, "producer", fsc__model_meta_s(m, "producer", buf, sizeof buf), caps->str_chars);
    kv_row(sb, "backend", fsc__model_meta_s(m, "backend", buf, sizeof buf), caps->str_chars);
    const char *config = fsc__model_meta_s(m, "config", buf, sizeof buf);
    kv_row(sb, "allocator config", config[0] ? config : "(defaults)", caps->str_chars);
    char capt[200];
    capacity_text(m, capt, sizeof capt);
    kv_row(sb, "capacity", capt, 0);
    int64_t dev = fsc__model_meta_i(m, "device_total", 0);
    if (dev > 0) {
        fsc_size_format((uint64_t)dev, b, sizeof b);
        kv_row(sb, "device memory", b, 0);
    }
    kv_row(sb, "source", fsc__model_meta_s(m, "source_path", buf, sizeof buf), caps->str_chars);
    fmt_count(a, sizeof a, fsc__model_sum_i(m, "events", fsc__model_meta_i(m, "events_total", 0)));
    fmt_time(b, sizeof b, fsc__model_sum_i(m, "duration_ns", 0));
    char line[1280];
    snprintf(line, sizeof line, "%s events over %s", a, b);
    kv_row(sb, "run", line, 0);
    if (fsc__model_meta(m, "integrity.clean_close") != NULL) {
        int64_t lost = fsc__model_meta_i(m, "integrity.events_lost", 0);
        if (fsc__model_meta_i(m, "integrity.clean_close", 0) && lost == 0)
            snprintf(line, sizeof line, "complete (closed cleanly)");
        else
            snprintf(line, sizeof line, "cut short: %" PRId64 " events, %" PRId64 " bytes lost", lost,
                     fsc__model_meta_i(m, "integrity.bytes_lost", 0));
        kv_row(sb, "trace", line, 0);
    }
    int64_t wfirst = fsc__model_meta_i(m, "window.first_seq", -1);
    if (wfirst >= 0 && wfirst >= fsc__model_meta_i(m, "events_total", INT64_MAX)) {
        /* no history at all: the rebuilt state is the whole run */
        fsc_size_format((uint64_t)fsc__model_meta_i(m, "window.start_reserved", 0), a, sizeof a);
        char wl[320];
        snprintf(wl, sizeof wl,
                 "none recorded (the snapshot's device_traces are empty): every figure is the "
                 "state at the moment of the snapshot (%s reserved); record a history with "
                 "torch.cuda.memory._record_memory_history() before the run",
                 a);
        kv_row(sb, "history", wl, 0);
    } else if (fsc__model_meta(m, "window.first_seq") != NULL) {
        /* a ring snapshot: its figures are the window's (docs/whatif.md) */
        fsc_size_format((uint64_t)fsc__model_meta_i(m, "window.start_reserved", 0), a, sizeof a);
        char wl[320];
        snprintf(wl, sizeof wl,
                 "began mid-run (the history ring had wrapped): every figure covers the "
                 "recorded window from event %" PRId64 "; the run reserved at least %s before "
                 "it, and its earlier peaks are unknown",
                 fsc__model_meta_i(m, "window.first_seq", 0), a);
        kv_row(sb, "window", wl, 0);
    }
    int64_t warnings = fsc__model_meta_i(m, "warnings", 0);
    if (warnings > 0) {
        snprintf(line, sizeof line, "%" PRId64 " events contradicted the replay and were skipped", warnings);
        kv_row(sb, "warnings", line, 0);
    }
    if (fsc__model_meta_i(m, "recorder.skipped", 0) > 0) {
        char sk[1024];
        snprintf(line, sizeof line, "%s; every figure covers only the entries the recorder kept",
                 fsc__model_meta_s(m, "recorder.skipped_text", sk, sizeof sk));
        kv_row(sb, "recorder", line, 0);
    }
    external_rows(sb, m);
    fsc__sb_puts(sb, "</table>\n");
}

static void oom_list(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps)
{
    if (m->nooms == 0)
        return;
    size_t shown = m->nooms < 20 ? m->nooms : 20;
    fsc__sb_puts(sb, "<h3>Out-of-memory errors</h3>\n<ul class=\"ooms-static\" id=\"oom-static\">\n");
    for (size_t i = 0; i < shown; i++) {
        const fsc__voom_t *o = &m->ooms[i];
        char t[64], req[64], al[64], re[64];
        fmt_time(t, sizeof t, o->t);
        fsc_size_format((uint64_t)o->requested, req, sizeof req);
        fsc_size_format((uint64_t)o->allocated, al, sizeof al);
        fsc_size_format((uint64_t)o->reserved, re, sizeof re);
        fsc__sb_printf(sb, "<li><b>OOM #%" PRId64 "</b> at %s (event %" PRId64 "): <span class=\"cause ",
                       o->id, t, o->seq);
        const char *cause = o->cause ? o->cause : "unknown";
        for (const char *c = cause; *c; c++) /* a class name: letters only */
            if (*c >= 'a' && *c <= 'z')
                fsc__sb_put(sb, c, 1);
        fsc__sb_puts(sb, "\">");
        fsc__sb_html(sb, cause, 32);
        fsc__sb_printf(sb, "</span> &mdash; requested %s with %s allocated and %s reserved", req, al, re);
        const char *tag = fsc__model_tag_path(m, o->tag);
        const char *label = fsc__model_tag_label(m, o->tag);
        if (tag != NULL && tag[0] != '\0') {
            /* named as report names the call site; the whole path on hover */
            fsc__sb_puts(sb, ", in <code title=\"");
            fsc__sb_html(sb, tag, caps->str_chars);
            fsc__sb_puts(sb, "\">");
            fsc__sb_html(sb, label && label[0] ? label : tag, caps->str_chars);
            fsc__sb_puts(sb, "</code>");
        }
        if (i == 0) {
            fsc__sb_puts(sb, " <span class=\"muted\">(the verdict above explains it)</span>");
        } else if (o->explanation != NULL && o->explanation[0] != '\0') {
            fsc__sb_puts(sb, "<br><span class=\"muted\">");
            fsc__sb_html(sb, o->explanation, caps->text_chars);
            fsc__sb_puts(sb, "</span>");
        }
        fsc__sb_puts(sb, "</li>\n");
    }
    if ((int64_t)shown < m->ooms_total)
        fsc__sb_printf(sb, "<li>&hellip; and %" PRId64 " more</li>\n", m->ooms_total - (int64_t)shown);
    fsc__sb_puts(sb, "</ul>\n");
}

void fsc__emit_summary(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps)
{
    fsc__sb_puts(sb, "<section id=\"summary\" class=\"panel\">\n<h2>Summary</h2>\n");
    verdict(sb, m, caps);
    fsc__sb_puts(sb, "<div class=\"cards\">\n");
    cards(sb, m);
    fsc__sb_puts(sb, "</div>\n");
    facts(sb, m, caps);
    oom_list(sb, m, caps);
    fsc__sb_puts(sb, "</section>\n");
}

void fsc__emit_title(fsc__sb_t *sb, const fsc__model_t *m)
{
    char buf[64];
    const char *producer = fsc__model_meta_s(m, "producer", buf, sizeof buf);
    fsc__sb_html(sb, "Memory report", 0);
    fsc__sb_puts(sb, " &mdash; ");
    fsc__sb_html(sb, m->db_name, 120);
    if (producer[0] != '\0') {
        fsc__sb_puts(sb, " (");
        fsc__sb_html(sb, producer, 80);
        fsc__sb_puts(sb, ")");
    }
}
