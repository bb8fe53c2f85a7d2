/*
 * report.c — the run report in three forms: text for a terminal, Markdown
 * for a CI job summary (and `fragscope demo`'s report.md), JSON for tools.
 * Everything comes from the run database; the report is read into one
 * model first so the three printers say the same things.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc/utf8.h"
#include "report_job.h"
#include "report_model.h"

static double sv(const rep_t *r, const char *key)
{
    for (int i = 0; i < r->nsum; i++)
        if (strcmp(r->sum[i].key, key) == 0)
            return r->sum[i].v;
    return 0.0;
}

static uint64_t su(const rep_t *r, const char *key)
{
    double v = sv(r, key);
    return v > 0 ? (uint64_t)v : 0;
}

/* A tag's name shortened for a terminal or a table: names of frames
 * (fsc_rundb_tag_label) start with the innermost frame, so their start is
 * kept; tag-stack paths start at the root, so their end is. Cuts fall on
 * UTF-8 character boundaries. */
const char *fsc__report_tail(const char *path, size_t keep, char *buf, size_t cap)
{
    size_t n = strlen(path);
    if (n <= keep || cap < keep + 8)
        return path;
    if (strstr(path, " ← ") != NULL || strchr(path, '/') == NULL) {
        size_t k = keep;
        while (k > 0 && ((unsigned char)path[k] & 0xc0) == 0x80)
            k--;
        snprintf(buf, cap, "%.*s…", (int)k, path);
        return buf;
    }
    const char *t = path + n - keep;
    while (((unsigned char)*t & 0xc0) == 0x80)
        t++;
    const char *slash = strchr(t, '/');
    if (slash != NULL && slash[1] != '\0')
        t = slash + 1;
    snprintf(buf, cap, "…/%s", t);
    return buf;
}

static const char *tail(const char *path, char *buf, size_t cap)
{
    return fsc__report_tail(path, 96, buf, cap);
}

/* What a suggestion from a recording that ended at an OOM covers. */
#define FSC__REP_PREFIX_NOTE                                                                  \
    "this serves the request that failed and everything recorded before it; the rest of the " \
    "run was not recorded: record one run with more memory or without the cap, then "       \
    "`fragscope whatif RUN --capacity X`, for a complete answer"

#define SZ(i, v) fsc_size_format((uint64_t)(v), b[i], sizeof b[i])

static void capacity_text(const rep_t *r, char *out, size_t cap)
{
    char b[1][32];
    if (r->capacity_inferred || r->capacity == 0)
        snprintf(out, cap, "not recorded%s",
                 r->capacity_inferred && r->nooms > 0 ? " (bounded from the run at each OOM)" : "");
    else
        snprintf(out, cap, "%s", SZ(0, r->capacity));
}

/* What the device's free bytes at the OOM say: PyTorch records them
 * (cudaMemGetInfo) with every OOM; with the reserved bytes they tell a cap
 * from a full device, and with the device's total they give the memory
 * used outside this allocator. */
static void device_free_text(const rep_oom_t *o, char *out, size_t cap)
{
    char b[4][32];
    if (o->device_free == FSC_RUNDB_NULL || o->device_free < 0) {
        snprintf(out, cap, "device free at the OOM: not recorded");
        return;
    }
    if (o->device_total != FSC_RUNDB_NULL && o->device_total > 0) {
        int64_t outside = o->device_total - o->device_free - o->reserved;
        snprintf(out, cap, "device free at the OOM: %s of %s; memory used outside this "
                           "allocator: %s (total - free - %s reserved)",
                 SZ(0, o->device_free), SZ(1, o->device_total), SZ(2, outside > 0 ? outside : 0),
                 SZ(3, o->reserved));
        return;
    }
    int64_t need = o->segment_size != FSC_RUNDB_NULL && o->segment_size > 0 ? o->segment_size
                                                                             : o->rounded;
    if (o->device_free >= need)
        snprintf(out, cap, "device free at the OOM: %s, enough for the %s the allocator asked "
                           "for: a cap (set_per_process_memory_fraction) stopped it, not the "
                           "device", SZ(0, o->device_free), SZ(1, need));
    else
        snprintf(out, cap, "device free at the OOM: %s, less than the %s the allocator asked "
                           "for: the device was full; memory used outside this allocator = "
                           "device total - %s free - %s reserved (the total is not recorded)",
                 SZ(0, o->device_free), SZ(1, need), SZ(2, o->device_free), SZ(3, o->reserved));
}

/* ---- verdict ------------------------------------------------------------- */

/* A few lines on the run's last OOM, for the moment it happens (the native
 * recorder's OOM observer prints them before PyTorch's traceback). */
static void print_verdict(const rep_t *r, FILE *f)
{
    if (r->nooms == 0)
        return;
    if (r->rec_skipped)
        fprintf(f, "fragscope: warning: %s; the figures below cover only the entries the "
                   "recorder kept\n", r->rec_skipped_text);
    const rep_oom_t *o = &r->ooms[r->nooms - 1];
    char b[4][32], cap[64];
    capacity_text(r, cap, sizeof cap);
    fprintf(f, "fragscope: out of memory on %s: %s requested", r->backend,
            SZ(0, o->requested));
    if (o->site[0])
        fprintf(f, " at %s", o->site);
    fputc('\n', f);
    fprintf(f, "fragscope:   %s allocated, %s reserved, cap %s%s\n", SZ(0, o->allocated),
            SZ(1, o->reserved), o->inferred ? "not recorded" : SZ(2, o->capacity),
            o->inferred && o->upper > 0 ? " (bounded from the run)" : "");
    fprintf(f, "fragscope:   cause: %s: %s\n", o->cause,
            o->explanation ? o->explanation : "");
    if (o->nfix == 0) {
        if (strcmp(o->cause, "capacity") == 0 || strcmp(o->cause, "oversize") == 0)
            fprintf(f, "fragscope:   no allocator setting serves it: the live bytes and the "
                       "request exceed what the device allows\n");
        else if (strcmp(o->cause, "external") == 0)
            fprintf(f, "fragscope:   no allocator setting serves it: memory outside the "
                       "allocator took what it needed\n");
        else
            fprintf(f, "fragscope:   no setting of the what-if grid serves it\n");
    }
    for (int i = 0; i < o->nfix; i++)
        fprintf(f, "fragscope:   %s %s: %s\n", i == 0 ? "served by" : "       or", o->fix_cfg[i],
                o->fix_note[i]);
    int more = 0;
    for (const char *p = o->fixes; p != NULL && (p = strstr(p, "; ")) != NULL; p += 2)
        more++;
    if (more + 1 > o->nfix && o->nfix > 0)
        fprintf(f, "fragscope:   (%d more: fragscope report %s)\n", more + 1 - o->nfix,
                r->db_path);
    (void)b[3];
}

/* ---- text ---------------------------------------------------------------- */

/* Lines of text (joined by '\n'), the first as it is, the others after indent. */
static void print_indented(FILE *f, const char *text, const char *indent)
{
    for (int first = 1; *text; first = 0) {
        const char *e = strchr(text, '\n');
        size_t n = e ? (size_t)(e - text) : strlen(text);
        fprintf(f, "%s%.*s\n", first ? "" : indent, (int)n, text);
        text += n + (e != NULL);
    }
}

static void print_text(const rep_t *r, FILE *f)
{
    char b[6][32], cap[64];
    capacity_text(r, cap, sizeof cap);
    fprintf(f, "fragscope report: %s\n", r->db_path);
    fprintf(f, "  source      %s\n", r->source[0] ? r->source : "(api)");
    if (r->run_label != NULL)
        fprintf(f, "  run         %s\n", r->run_label);
    fprintf(f, "  producer    %s, backend %s\n", r->producer, r->backend);
    fprintf(f, "  config      %s\n", r->config[0] ? r->config : "(defaults)");
    if (r->settings_not_modelled[0])
        fprintf(f, "  not modelled  %s: fragscope's replay cannot follow these settings; "
                   "figures that depend on them (what-if, suggestions) are not exact\n",
                r->settings_not_modelled);
    if (r->keys_not_modelled[0])
        fprintf(f, "  not modelled  snapshot keys %s\n", r->keys_not_modelled);
    if (r->torch_inferred[0])
        fprintf(f, "  PyTorch     %s\n", r->torch_inferred);
    fprintf(f, "  capacity    %s\n", cap);
    fprintf(f, "  events      %.0f\n", sv(r, "events"));
    if (r->warnings)
        fprintf(f, "  warnings    %lld events contradicted the replay and were skipped\n",
                (long long)r->warnings);
    if (r->import_warnings)
        fprintf(f, "  import      %lld snapshot entries contradicted the block model and were "
                   "skipped (--lenient)\n", (long long)r->import_warnings);
    if (r->rec_skipped) {
        fprintf(f, "  recorder    %s; every figure covers only the entries it kept\n",
                r->rec_skipped_text);
        if (r->rec_skipped_first[0]) {
            fprintf(f, "              first: ");
            print_indented(f, r->rec_skipped_first, "                     ");
        }
    }
    if (r->unknown_actions || r->unknown_keys)
        fprintf(f, "  not understood  %lld entries with an unknown action, %lld unknown keys "
                   "(kept in table pytorch_meta): %s\n", (long long)r->unknown_actions,
                (long long)r->unknown_keys, r->not_understood);
    fsc__report_window_text(r, f);
    fprintf(f, "\nmemory%s\n", r->window.no_history ? " (at the snapshot)"
                                 : r->window.on        ? " (in the window)"
                                                       : "");
    fprintf(f, "  peak allocated          %12s  (event %.0f)\n",
            SZ(0, su(r, "peak_allocated_bytes")), sv(r, "peak_allocated_seq"));
    fprintf(f, "  peak reserved           %12s  (event %.0f)\n",
            SZ(0, su(r, "peak_reserved_bytes")), sv(r, "peak_reserved_seq"));
    fprintf(f, "  peak requested          %12s\n", SZ(0, su(r, "peak_requested_bytes")));
    fprintf(f, "  utilization             %11.1f%%  (peak allocated / peak reserved)\n",
            100.0 * sv(r, "utilization"));
    fprintf(f, "  final allocated         %12s  reserved %s\n",
            SZ(0, su(r, "final_allocated_bytes")), SZ(1, su(r, "final_reserved_bytes")));
    fsc__report_external_run_text(r, f);
    fsc__report_pools_text(r, f);
    fprintf(f, "\nfragmentation at the allocated peak\n");
    fprintf(f, "  internal                %12s  (%.1f%% of allocated)\n",
            SZ(0, su(r, "internal_frag_bytes_at_peak")),
            100.0 * sv(r, "internal_frag_ratio_at_peak"));
    fprintf(f, "  reserved − allocated    %12s  (max over the run %s)\n",
            SZ(0, su(r, "reserved_unallocated_at_peak")),
            SZ(1, su(r, "peak_reserved_unallocated_bytes")));
    fprintf(f, "  fragmentation ratio     %11.1f%%  ((reserved − allocated) / reserved at peak "
               "reserved)\n", 100.0 * sv(r, "frag_ratio_at_peak_reserved"));
    fprintf(f, "  free-space scatter      %11.1f%%  (1 − largest free block / free bytes: %s of "
               "%s;\n"
               "                                       how scattered the free bytes are, not how "
               "many: a\n"
               "                                       caching allocator's free space is spread "
               "over its\n"
               "                                       segments, so it reads high on healthy "
               "runs too)\n",
            100.0 * sv(r, "external_frag_at_peak"), SZ(0, su(r, "largest_free_at_peak")),
            SZ(1, su(r, "free_in_reserved_at_peak")));
    fprintf(f, "  inactive split          %12s  in %.0f blocks\n",
            SZ(0, su(r, "inactive_split_bytes_at_peak")),
            sv(r, "inactive_split_blocks_at_peak"));
    fsc__report_frag_text(r, f);
    fprintf(f, "\nallocator\n");
    fprintf(f, "  allocations %.0f, cache hit rate %.1f%%, segments created %.0f (peak %.0f), "
               "splits %.0f, merges %.0f\n",
            sv(r, "allocs"), 100.0 * sv(r, "cache_hit_rate"), sv(r, "segments_created"),
            sv(r, "peak_segments"), sv(r, "splits"), sv(r, "merges"));
    fprintf(f, "  still allocated at the end: %.0f blocks, %s\n", sv(r, "leaked_blocks"),
            SZ(0, su(r, "leaked_bytes")));

    fprintf(f, "\nOOMs: %d\n", r->nooms);
    for (int i = 0; i < r->nooms; i++) {
        const rep_oom_t *o = &r->ooms[i];
        fprintf(f, "  #%lld at event %lld: %s — requested %s, allocated %s, reserved %s\n",
                (long long)o->id, (long long)o->seq, o->cause, SZ(0, o->requested),
                SZ(1, o->allocated), SZ(2, o->reserved));
        fprintf(f, "    %s\n", o->explanation);
        fsc__report_frag_oom_text(o, f);
        char tb[128], dfree[256];
        if (o->site[0])
            fprintf(f, "    call site: %s%s%s%s\n", o->site, o->context[0] ? " [" : "",
                    o->context, o->context[0] ? "]" : "");
        device_free_text(o, dfree, sizeof dfree);
        fprintf(f, "    %s\n", dfree);
        if (o->top_tag[0])
            fprintf(f, "    tag holding the most: %s (%s)\n", tail(o->top_tag, tb, sizeof tb),
                    SZ(0, o->top_tag_bytes));
        if (o->fixes && r->run_complete == 0)
            fprintf(f, "    the request that failed would have been served with: %s\n"
                       "    (%s)\n", o->fixes, FSC__REP_PREFIX_NOTE);
        else if (o->fixes)
            fprintf(f, "    would have been avoided with: %s\n", o->fixes);
        for (int k = 0; k < o->nsegs; k++) {
            const rep_seg_t *g = &o->segs[k];
            fprintf(f, "    segment 0x%llx (%s): %s free, largest %s, pinned by %lld live "
                       "blocks (%s)\n", (unsigned long long)g->segment, SZ(0, g->size),
                    SZ(1, g->free_bytes), SZ(2, g->largest_free), (long long)g->live_blocks,
                    SZ(3, g->live_bytes));
            for (int q = 0; q < g->npins; q++)
                fprintf(f, "      0x%llx %10s  age %lld events  %s%s%s%s\n",
                        (unsigned long long)g->pins[q].addr, SZ(0, g->pins[q].size),
                        (long long)g->pins[q].age_events, tail(g->pins[q].tag, tb, sizeof tb),
                        g->pins[q].context[0] ? " [" : "", g->pins[q].context,
                        g->pins[q].context[0] ? "]" : "");
        }
    }
    if (r->nbins > 0) {
        fprintf(f, "\nbins (block sizes)\n");
        fprintf(f, "  %-24s %9s %6s %11s %11s %11s\n", "size class", "requests", "hit%",
                "waste", "peak live", "free@peak");
        for (int i = 0; i < r->nbins; i++) {
            const rep_bin_t *x = &r->bins[i];
            char cls[48];
            snprintf(cls, sizeof cls, "%s - %s", SZ(0, x->lo), SZ(1, x->hi));
            fprintf(f, "  %-24s %9lld %5.1f%% %11s %11s %11s\n", cls, (long long)x->requests,
                    100.0 * x->hit_rate, SZ(2, x->waste), SZ(3, x->peak_bytes),
                    SZ(4, x->free_at_peak));
        }
    }
    fsc__report_sites_text(r, f);
    char tb[128];
    if (r->npeak_tags > 0) {
        fprintf(f, "\nlive at the peak, by tag\n");
        for (int i = 0; i < r->npeak_tags; i++)
            fprintf(f, "  %12s  %6lld blocks  %s\n", SZ(0, r->peak_tags[i].bytes),
                    (long long)r->peak_tags[i].blocks, tail(r->peak_tags[i].path, tb, sizeof tb));
    }
    if (r->nleaks > 0) {
        fprintf(f, "\nstill allocated at the end, by tag\n");
        for (int i = 0; i < r->nleaks; i++)
            fprintf(f, "  %12s  %6lld blocks  %s\n", SZ(0, r->leaks[i].bytes),
                    (long long)r->leaks[i].blocks, tail(r->leaks[i].path, tb, sizeof tb));
    }
}

/* ---- markdown ------------------------------------------------------------ */

static void md_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '*' || *s == '_' || *s == '`' || *s == '<' || *s == '>')
            fputc('\\', f);
        fputc(*s, f);
    }
}

static void print_markdown(const rep_t *r, FILE *f)
{
    char b[6][32], cap[64];
    capacity_text(r, cap, sizeof cap);
    fprintf(f, "## fragscope report\n\n");
    fprintf(f, "Source: `%s` (%s, backend %s), config `%s`, capacity %s, %.0f events.\n\n",
            r->source[0] ? r->source : r->db_path, r->producer, r->backend,
            r->config[0] ? r->config : "defaults", cap, sv(r, "events"));
    if (r->run_label != NULL) {
        fprintf(f, "Run: ");
        md_escape(f, r->run_label);
        fprintf(f, ".\n\n");
    }
    if (r->warnings)
        fprintf(f, "**%lld events contradicted the replay and were skipped.**\n\n",
                (long long)r->warnings);
    if (r->import_warnings)
        fprintf(f, "**%lld snapshot entries contradicted the block model and were skipped "
                   "(--lenient).**\n\n", (long long)r->import_warnings);
    if (r->rec_skipped) {
        fprintf(f, "**The recorder left entries out: ");
        md_escape(f, r->rec_skipped_text);
        fprintf(f, ". Every figure covers only the entries it kept.**\n\n");
    }
    if (r->settings_not_modelled[0]) {
        fprintf(f, "**Settings not modelled: ");
        md_escape(f, r->settings_not_modelled);
        fprintf(f, ".** fragscope's replay cannot follow them; figures that depend on them "
                   "(what-if, suggestions) are not exact.\n\n");
    }
    if (r->keys_not_modelled[0]) {
        fprintf(f, "Snapshot keys not modelled: ");
        md_escape(f, r->keys_not_modelled);
        fprintf(f, ".\n\n");
    }
    if (r->torch_inferred[0]) {
        fprintf(f, "PyTorch version: ");
        md_escape(f, r->torch_inferred);
        fprintf(f, ".\n\n");
    }
    if (r->unknown_actions || r->unknown_keys) {
        fprintf(f, "Not understood (kept): %lld entries with an unknown action, %lld unknown "
                   "keys: ", (long long)r->unknown_actions, (long long)r->unknown_keys);
        md_escape(f, r->not_understood);
        fprintf(f, ".\n\n");
    }
    fsc__report_window_markdown(r, f);
    fprintf(f, "| metric | value |\n|---|---|\n");
    const char *wl = r->window.no_history ? " (at the snapshot)" : r->window.on ? " (window)" : "";
    fprintf(f, "| peak allocated%s | %s |\n", wl,
            SZ(0, su(r, "peak_allocated_bytes")));
    fprintf(f, "| peak reserved%s | %s |\n", wl,
            SZ(0, su(r, "peak_reserved_bytes")));
    fprintf(f, "| utilization (peak allocated / peak reserved) | %.1f%% |\n",
            100.0 * sv(r, "utilization"));
    fprintf(f, "| internal fragmentation at peak | %s (%.1f%%) |\n",
            SZ(0, su(r, "internal_frag_bytes_at_peak")),
            100.0 * sv(r, "internal_frag_ratio_at_peak"));
    fprintf(f, "| fragmentation ratio at peak reserved ((reserved − allocated) / reserved) | "
               "%.1f%% |\n", 100.0 * sv(r, "frag_ratio_at_peak_reserved"));
    fprintf(f, "| free-space scatter at peak (1 − largest free / free bytes) | %.1f%% |\n",
            100.0 * sv(r, "external_frag_at_peak"));
    fprintf(f, "| reserved but unallocated at peak | %s |\n",
            SZ(0, su(r, "reserved_unallocated_at_peak")));
    fprintf(f, "| inactive split at peak | %s |\n",
            SZ(0, su(r, "inactive_split_bytes_at_peak")));
    fprintf(f, "| cache hit rate | %.1f%% |\n", 100.0 * sv(r, "cache_hit_rate"));
    fprintf(f, "| segments created | %.0f |\n", sv(r, "segments_created"));
    fprintf(f, "| OOMs | %d |\n", r->nooms);
    fprintf(f, "| still allocated at the end | %s |\n", SZ(0, su(r, "leaked_bytes")));
    fsc__report_external_run_markdown(r, f);
    fsc__report_frag_markdown(r, f);
    fsc__report_pools_markdown(r, f);
    if (r->nooms > 0) {
        fprintf(f, "\n### OOMs\n\n| # | event | cause | requested | allocated | reserved |"
                   " capacity |\n|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < r->nooms; i++) {
            const rep_oom_t *o = &r->ooms[i];
            fprintf(f, "| %lld | %lld | **%s** | %s | %s | %s | %s%s |\n", (long long)o->id,
                    (long long)o->seq, o->cause, SZ(0, o->requested), SZ(1, o->allocated),
                    SZ(2, o->reserved), o->inferred ? "≥ " : "", SZ(3, o->capacity));
        }
        fputc('\n', f);
        for (int i = 0; i < r->nooms; i++) {
            fprintf(f, "> **OOM %lld (%s):** ", (long long)r->ooms[i].id, r->ooms[i].cause);
            md_escape(f, r->ooms[i].explanation);
            if (r->ooms[i].fixes && r->run_complete == 0) {
                fprintf(f, " The request that failed would have been served with: `%s` (%s).",
                        r->ooms[i].fixes, FSC__REP_PREFIX_NOTE);
            } else if (r->ooms[i].fixes) {
                fprintf(f, " Would have been avoided with: `%s`.", r->ooms[i].fixes);
            }
            if (r->ooms[i].site[0]) {
                fprintf(f, " Call site: ");
                md_escape(f, r->ooms[i].site);
                if (r->ooms[i].context[0]) {
                    fprintf(f, " (");
                    md_escape(f, r->ooms[i].context);
                    fprintf(f, ")");
                }
                fprintf(f, ".");
            }
            char dfree[256];
            device_free_text(&r->ooms[i], dfree, sizeof dfree);
            fprintf(f, " ");
            md_escape(f, dfree);
            fprintf(f, ".\n\n");
            const rep_oom_t *o = &r->ooms[i];
            if (o->nsegs > 0)
                fprintf(f, "| segment | size | free | largest free | pinned by | largest "
                           "pinning block |\n|---|---|---|---|---|---|\n");
            for (int k = 0; k < o->nsegs; k++) {
                const rep_seg_t *g = &o->segs[k];
                char tb[128];
                fprintf(f, "| 0x%llx | %s | %s | %s | %lld blocks, %s | ",
                        (unsigned long long)g->segment, SZ(0, g->size), SZ(1, g->free_bytes),
                        SZ(2, g->largest_free), (long long)g->live_blocks, SZ(3, g->live_bytes));
                if (g->npins > 0) {
                    fprintf(f, "%s, age %lld events, ", SZ(0, g->pins[0].size),
                            (long long)g->pins[0].age_events);
                    md_escape(f, tail(g->pins[0].tag, tb, sizeof tb));
                }
                fprintf(f, " |\n");
            }
            if (o->nsegs > 0)
                fputc('\n', f);
        }
    }
    if (r->nbins > 0) {
        fprintf(f, "\n### Bins\n\n| size class | requests | hit rate | waste | peak live |"
                   " free at peak |\n|---|---|---|---|---|---|\n");
        for (int i = 0; i < r->nbins; i++) {
            const rep_bin_t *x = &r->bins[i];
            fprintf(f, "| %s – %s | %lld | %.1f%% | %s | %s | %s |\n", SZ(0, x->lo),
                    SZ(1, x->hi), (long long)x->requests, 100.0 * x->hit_rate, SZ(2, x->waste),
                    SZ(3, x->peak_bytes), SZ(4, x->free_at_peak));
        }
    }
    if (r->nsites > 0) {
        fprintf(f, "\n");
        fsc__report_sites_markdown(r, f);
    }
    if (r->npeak_tags > 0) {
        fprintf(f, "\n### Live at the peak, by tag\n\n| tag | bytes | blocks |\n|---|---|---|\n");
        for (int i = 0; i < r->npeak_tags; i++) {
            char tb[128];
            fputs("| ", f);
            md_escape(f, tail(r->peak_tags[i].path, tb, sizeof tb));
            fprintf(f, " | %s | %lld |\n", SZ(0, r->peak_tags[i].bytes),
                    (long long)r->peak_tags[i].blocks);
        }
    }
}

/* ---- JSON ---------------------------------------------------------------- */

static cJSON *num(double v)
{
    return cJSON_CreateNumber(v);
}

static char *build_json(const rep_t *r, const job_t *job)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "database", r->db_path);
    fsc__report_job_json(job, root);
    cJSON *meta = cJSON_AddObjectToObject(root, "run");
    cJSON_AddStringToObject(meta, "source", r->source);
    cJSON_AddStringToObject(meta, "producer", r->producer);
    cJSON_AddStringToObject(meta, "backend", r->backend);
    cJSON_AddStringToObject(meta, "config", r->config);
    if (r->settings_not_modelled[0]) {
        /* only when there are some: reports of other runs stay as they were */
        cJSON *nm = cJSON_AddArrayToObject(meta, "settings_not_modelled");
        char tmp[sizeof r->settings_not_modelled];
        snprintf(tmp, sizeof tmp, "%s", r->settings_not_modelled);
        for (char *save = NULL, *k = strtok_r(tmp, ",", &save); k != NULL;
             k = strtok_r(NULL, ",", &save))
            cJSON_AddItemToArray(nm, cJSON_CreateString(k));
    }
    if (r->keys_not_modelled[0])
        cJSON_AddStringToObject(meta, "snapshot_keys_not_modelled", r->keys_not_modelled);
    if (r->torch_inferred[0])
        cJSON_AddStringToObject(meta, "torch_version_inferred", r->torch_inferred);
    cJSON_AddItemToObject(meta, "capacity_bytes", num((double)r->capacity));
    fsc__report_external_run_json(r, meta);
    fsc__report_pools_json(r, root);
    fsc__report_window_json(r, root);
    fsc__report_sites_json(r, root);
    cJSON_AddBoolToObject(meta, "capacity_inferred", r->capacity_inferred);
    cJSON_AddItemToObject(meta, "warnings", num((double)r->warnings));
    cJSON *wc = cJSON_AddObjectToObject(root, "warnings");
    cJSON_AddItemToObject(wc, "replay_skipped_events", num((double)r->warnings));
    cJSON_AddItemToObject(wc, "import_skipped_entries", num((double)r->import_warnings));
    /* the native recorder's: entries left out of the trace, by kind */
    cJSON_AddItemToObject(wc, "recorder_skipped_entries", num((double)r->rec_skipped));
    cJSON *rk = cJSON_AddObjectToObject(wc, "recorder_skipped_by_kind");
    for (int i = 0; i < r->nrec_skipped_kind; i++)
        cJSON_AddItemToObject(rk, r->rec_skipped_kind[i].kind,
                              num((double)r->rec_skipped_kind[i].n));
    cJSON *rf = cJSON_AddArrayToObject(wc, "recorder_skipped_first");
    for (const char *p = r->rec_skipped_first; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        cJSON_AddItemToArray(rf, cJSON_CreateString(line));
        p += n + (e != NULL);
    }
    cJSON_AddItemToObject(wc, "unknown_actions", num((double)r->unknown_actions));
    cJSON_AddItemToObject(wc, "unknown_keys", num((double)r->unknown_keys));
    cJSON_AddStringToObject(wc, "not_understood", r->not_understood);

    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    for (int i = 0; i < r->nsum; i++)
        cJSON_AddItemToObject(sum, r->sum[i].key, num(r->sum[i].v));

    cJSON *fr = cJSON_AddObjectToObject(root, "fragmentation");
    static const char *const fk[][2] = {
        {"internal_bytes_at_peak", "internal_frag_bytes_at_peak"},
        {"internal_ratio_at_peak", "internal_frag_ratio_at_peak"},
        {"peak_internal_bytes", "peak_internal_frag_bytes"},
        {"external_at_peak", "external_frag_at_peak"},
        {"external_small_at_peak", "external_frag_small_at_peak"},
        {"external_large_at_peak", "external_frag_large_at_peak"},
        {"external_final", "external_frag_final"},
        {"free_in_reserved_at_peak", "free_in_reserved_at_peak"},
        {"largest_free_at_peak", "largest_free_at_peak"},
        {"reserved_unallocated_at_peak", "reserved_unallocated_at_peak"},
        {"peak_reserved_unallocated_bytes", "peak_reserved_unallocated_bytes"},
        {"inactive_split_bytes_at_peak", "inactive_split_bytes_at_peak"},
        {"inactive_split_blocks_at_peak", "inactive_split_blocks_at_peak"},
        {"utilization", "utilization"},
        {"free_space_scatter_at_peak", "external_frag_at_peak"},
        {"frag_ratio_at_peak_reserved", "frag_ratio_at_peak_reserved"},
        {"max_hard_bytes_at_oom", "max_hard_bytes_at_oom"},
    };
    for (size_t i = 0; i < sizeof fk / sizeof fk[0]; i++)
        cJSON_AddItemToObject(fr, fk[i][0], num(sv(r, fk[i][1])));
    fsc__report_frag_json(&r->at_peak, cJSON_AddObjectToObject(fr, "at_peak"));
    fsc__report_frag_json(&r->at_peak_reserved, cJSON_AddObjectToObject(fr, "at_peak_reserved"));

    cJSON *ooms = cJSON_AddArrayToObject(root, "ooms");
    for (int i = 0; i < r->nooms; i++) {
        const rep_oom_t *o = &r->ooms[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "id", num((double)o->id));
        cJSON_AddItemToObject(j, "seq", num((double)o->seq));
        cJSON_AddStringToObject(j, "cause", o->cause);
        cJSON_AddItemToObject(j, "requested_bytes", num((double)o->requested));
        cJSON_AddItemToObject(j, "rounded_bytes", num((double)o->rounded));
        cJSON_AddItemToObject(j, "allocated_bytes", num((double)o->allocated));
        cJSON_AddItemToObject(j, "reserved_bytes", num((double)o->reserved));
        cJSON_AddItemToObject(j, "capacity_bytes", num((double)o->capacity));
        cJSON_AddBoolToObject(j, "capacity_inferred", o->inferred);
        cJSON_AddItemToObject(j, "capacity_lower_bytes", num((double)o->lower));
        cJSON_AddItemToObject(j, "capacity_upper_bytes", num((double)o->upper));
        cJSON_AddItemToObject(j, "free_in_reserved_bytes", num((double)o->free_in_reserved));
        cJSON_AddItemToObject(j, "largest_free_bytes", num((double)o->largest_free));
        cJSON_AddItemToObject(j, "largest_free_usable_bytes", num((double)o->largest_usable));
        cJSON_AddItemToObject(j, "external_frag", num(o->ext));
        fsc__report_external_json(o, j);
        cJSON_AddStringToObject(j, "explanation", o->explanation);
        fsc__report_frag_json(&o->frag, j);
        cJSON_AddStringToObject(j, "call_site", o->site);
        cJSON_AddStringToObject(j, "context", o->context);
        if (o->device_free == FSC_RUNDB_NULL || o->device_free < 0)
            cJSON_AddNullToObject(j, "device_free_bytes");
        else
            cJSON_AddItemToObject(j, "device_free_bytes", num((double)o->device_free));
        char dfree[256];
        device_free_text(o, dfree, sizeof dfree);
        cJSON_AddStringToObject(j, "device_free_note", dfree);
        cJSON *segs = cJSON_AddArrayToObject(j, "segments");
        for (int k = 0; k < o->nsegs; k++) {
            const rep_seg_t *g = &o->segs[k];
            cJSON *js = cJSON_CreateObject();
            cJSON_AddItemToObject(js, "segment", num((double)g->segment));
            cJSON_AddItemToObject(js, "size_bytes", num((double)g->size));
            cJSON_AddItemToObject(js, "free_bytes", num((double)g->free_bytes));
            cJSON_AddItemToObject(js, "largest_free_bytes", num((double)g->largest_free));
            cJSON_AddItemToObject(js, "live_blocks", num((double)g->live_blocks));
            cJSON_AddItemToObject(js, "live_bytes", num((double)g->live_bytes));
            cJSON *pins = cJSON_AddArrayToObject(js, "pinning_blocks");
            for (int q = 0; q < g->npins; q++) {
                cJSON *jp = cJSON_CreateObject();
                cJSON_AddItemToObject(jp, "addr", num((double)g->pins[q].addr));
                cJSON_AddItemToObject(jp, "size_bytes", num((double)g->pins[q].size));
                cJSON_AddItemToObject(jp, "age_events", num((double)g->pins[q].age_events));
                cJSON_AddItemToObject(jp, "age_ns", num((double)g->pins[q].age_ns));
                cJSON_AddStringToObject(jp, "tag", g->pins[q].tag);
                cJSON_AddStringToObject(jp, "context", g->pins[q].context);
                cJSON_AddItemToArray(pins, jp);
            }
            cJSON_AddItemToArray(segs, js);
        }
        if (r->run_complete < 0)
            cJSON_AddNullToObject(j, "run_complete");
        else
            cJSON_AddBoolToObject(j, "run_complete", r->run_complete != 0);
        cJSON *fx = cJSON_AddArrayToObject(j, "avoided_by");
        for (const char *p = o->fixes; p != NULL && *p;) {
            const char *e = strstr(p, "; ");
            size_t n = e ? (size_t)(e - p) : strlen(p);
            char one[1024];
            snprintf(one, sizeof one, "%.*s", (int)n, p);
            cJSON_AddItemToArray(fx, cJSON_CreateString(one));
            p = e ? e + 2 : p + n;
        }
        if (o->top_tag[0]) {
            cJSON_AddStringToObject(j, "top_tag", o->top_tag);
            cJSON_AddItemToObject(j, "top_tag_bytes", num((double)o->top_tag_bytes));
        }
        cJSON_AddItemToArray(ooms, j);
    }

    cJSON *bins = cJSON_AddArrayToObject(root, "bins");
    for (int i = 0; i < r->nbins; i++) {
        const rep_bin_t *x = &r->bins[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "bin", num((double)x->bin));
        cJSON_AddItemToObject(j, "lo_bytes", num((double)x->lo));
        cJSON_AddItemToObject(j, "hi_bytes", num((double)x->hi));
        cJSON_AddItemToObject(j, "requests", num((double)x->requests));
        cJSON_AddItemToObject(j, "requested_bytes", num((double)x->requested));
        cJSON_AddItemToObject(j, "allocated_bytes", num((double)x->allocated));
        cJSON_AddItemToObject(j, "internal_waste_bytes", num((double)x->waste));
        cJSON_AddItemToObject(j, "cache_hits", num((double)x->hits));
        cJSON_AddItemToObject(j, "cache_misses", num((double)x->misses));
        cJSON_AddItemToObject(j, "hit_rate", num(x->hit_rate));
        cJSON_AddItemToObject(j, "splits", num((double)x->splits));
        cJSON_AddItemToObject(j, "merges", num((double)x->merges));
        cJSON_AddItemToObject(j, "peak_live_blocks", num((double)x->peak_blocks));
        cJSON_AddItemToObject(j, "peak_live_bytes", num((double)x->peak_bytes));
        cJSON_AddItemToObject(j, "free_bytes_at_peak", num((double)x->free_at_peak));
        cJSON_AddItemToArray(bins, j);
    }
    for (int k = 0; k < 2; k++) {
        cJSON *arr = cJSON_AddArrayToObject(root, k == 0 ? "tags_at_peak" : "leaks");
        const rep_tag_t *v = k == 0 ? r->peak_tags : r->leaks;
        int n = k == 0 ? r->npeak_tags : r->nleaks;
        for (int i = 0; i < n; i++) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "tag", v[i].path);
            cJSON_AddItemToObject(j, "bytes", num((double)v[i].bytes));
            cJSON_AddItemToObject(j, "blocks", num((double)v[i].blocks));
            cJSON_AddItemToArray(arr, j);
        }
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    if (out == NULL)
        return NULL;
    /* Frame and file names come from pickles as bytes: a JSON consumer
     * needs them as UTF-8 (fsc/utf8.h). The structure is ASCII, so the
     * whole text is sanitised at once. */
    char *clean = NULL;
    fsc__utf8_sanitize(out, strlen(out), &clean, NULL, NULL);
    cJSON_free(out);
    return clean;
}

/* ---- entry points -------------------------------------------------------- */

int fsc_report_format_parse(const char *s, fsc_report_format_t *out)
{
    if (s == NULL)
        return FSC_EINVAL;
    if (strcmp(s, "text") == 0)
        *out = FSC_REPORT_TEXT;
    else if (strcmp(s, "json") == 0)
        *out = FSC_REPORT_JSON;
    else if (strcmp(s, "markdown") == 0 || strcmp(s, "md") == 0)
        *out = FSC_REPORT_MARKDOWN;
    else if (strcmp(s, "verdict") == 0)
        *out = FSC_REPORT_VERDICT;
    else
        return FSC_EINVAL;
    return 0;
}

/* Read the job (every run's figures), pick the run the detail is about,
 * and read that run's report. */
static int load_all(fsc_rundb_t *db, const fsc_job_opts_t *o, job_t *j, rep_t *r, fsc_err_t *err)
{
    int rc = fsc__report_job_load(db, j, err);
    if (rc == 0)
        rc = fsc__report_job_pick(j, o, err);
    if (rc != 0)
        return rc;
    const job_run_t *d = &j->runs[j->detail];
    if ((rc = fsc_rundb_select_run(db, d->run)) != 0) {
        fsc_err_copy(err, fsc_rundb_error(db));
        return rc;
    }
    /* A database of one run reads as before, with one line naming the run
     * when its rank is known. */
    if (j->n > 1 || d->rank != FSC_RUNDB_NULL)
        r->run_label = d->label;
    return fsc__report_load(db, r, err);
}

int fsc_report_write_job(const char *db_path, fsc_report_format_t fmt, const fsc_job_opts_t *o,
                         FILE *out, fsc_err_t *err)
{
    fsc_rundb_t *db = NULL;
    int rc = fsc_rundb_open(db_path, &db, err);
    if (rc != 0)
        return rc;
    rep_t *r = calloc(1, sizeof *r);
    job_t j;
    memset(&j, 0, sizeof j);
    if (r == NULL) {
        fsc_rundb_close(db);
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    }
    r->db_path = db_path;
    r->all_frames = (fmt & FSC_REPORT_F_ALL_FRAMES) != 0;
    fmt = (fsc_report_format_t)(fmt & ~FSC_REPORT_F_ALL_FRAMES);
    int all_ranks = o != NULL && o->all_ranks;
    rc = load_all(db, o, &j, r, err);
    fsc_rundb_close(db);
    if (rc == 0) {
        j.db_path = db_path;
        if (fmt == FSC_REPORT_JSON) {
            char *js = build_json(r, &j);
            if (js == NULL)
                rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
            else
                fprintf(out, "%s\n", js);
            free(js);
        } else if (fmt == FSC_REPORT_MARKDOWN) {
            if (j.n > 1)
                fsc__report_job_markdown(&j, all_ranks, out);
            print_markdown(r, out);
        } else if (fmt == FSC_REPORT_VERDICT) {
            print_verdict(r, out);
        } else {
            if (j.n > 1)
                fsc__report_job_text(&j, all_ranks, out);
            print_text(r, out);
        }
        if (rc == 0 && (fflush(out) != 0 || ferror(out)))
            rc = fsc_err_set(err, FSC_EIO, "cannot write the report: %s",
                             errno ? strerror(errno) : "write error");
    }
    fsc__report_free(r);
    free(r);
    fsc__report_job_free(&j);
    return rc;
}

int fsc_report_write(const char *db_path, fsc_report_format_t fmt, FILE *out, fsc_err_t *err)
{
    return fsc_report_write_job(db_path, fmt, NULL, out, err);
}

int fsc_report_write_job_file(const char *db_path, fsc_report_format_t fmt,
                              const fsc_job_opts_t *jo, const char *out_path, fsc_err_t *err)
{
    fsc_outfile_t o;
    int rc = fsc_outfile_init(&o, out_path, err);
    if (rc != 0)
        return rc;
    FILE *f = fopen(o.tmp_path, "w");
    if (f == NULL) {
        rc = fsc_err_set(err, FSC_EIO, "%s: cannot create: %s", out_path, strerror(errno));
        fsc_outfile_abort(&o);
        return rc;
    }
    rc = fsc_report_write_job(db_path, fmt, jo, f, err);
    if (fclose(f) != 0 && rc == 0)
        rc = fsc_err_set(err, FSC_EIO, "%s: cannot write", out_path);
    if (rc == 0)
        rc = fsc_outfile_commit(&o, err);
    else
        fsc_outfile_abort(&o);
    return rc;
}

int fsc_report_write_file(const char *db_path, fsc_report_format_t fmt, const char *out_path,
                          fsc_err_t *err)
{
    return fsc_report_write_job_file(db_path, fmt, NULL, out_path, err);
}
