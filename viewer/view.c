/*
 * view.c — fsc_view_render / fsc_view_write: load the model, fill the
 * embedded template, keep the page under its size bound, write atomically.
 *
 * The template (template.html) holds @NAME@ placeholders; the style sheet,
 * the script, the static summary and the JSON data are inserted verbatim
 * (each already escaped for its context by its writer). The inserted pieces
 * are not scanned again, so data can never inject a placeholder.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "fragscope/viewer.h"
#include "job.h"
#include "split_view.h"

/* Generated from the template files by embed.cmake. */
extern const unsigned char fsc__asset_template_html[];
extern const size_t fsc__asset_template_html_len;
extern const unsigned char fsc__asset_viewer_css[];
extern const size_t fsc__asset_viewer_css_len;
extern const unsigned char fsc__asset_viewer_js[];
extern const size_t fsc__asset_viewer_js_len;
extern const unsigned char fsc__asset_viewer_runs_js[];
extern const size_t fsc__asset_viewer_runs_js_len;

/* The pieces a job page adds (all empty for a one-run page). */
typedef struct job_parts {
    fsc__sb_t overview; /* the small multiples and the picker */
    fsc__sb_t extra;    /* the other carried runs: static HTML and data */
} job_parts_t;

/* Does s[0..n) contain needle, ignoring ASCII case? */
static int contains_ci(const unsigned char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++) {
        size_t j = 0;
        while (j < k && tolower(s[i + j]) == tolower((unsigned char)needle[j]))
            j++;
        if (j == k)
            return 1;
    }
    return 0;
}

/* The inline script and style must not be able to end their own element. */
static int check_assets(fsc_err_t *err)
{
    if (contains_ci(fsc__asset_viewer_js, fsc__asset_viewer_js_len, "</script") ||
        contains_ci(fsc__asset_viewer_js, fsc__asset_viewer_js_len, "<!--"))
        return fsc_err_set(err, FSC_EINVAL, "viewer template: viewer.js contains '</script' or '<!--'");
    if (contains_ci(fsc__asset_viewer_runs_js, fsc__asset_viewer_runs_js_len, "</script") ||
        contains_ci(fsc__asset_viewer_runs_js, fsc__asset_viewer_runs_js_len, "<!--"))
        return fsc_err_set(err, FSC_EINVAL, "viewer template: viewer_runs.js contains '</script' or '<!--'");
    if (contains_ci(fsc__asset_viewer_css, fsc__asset_viewer_css_len, "</style"))
        return fsc_err_set(err, FSC_EINVAL, "viewer template: viewer.css contains '</style'");
    return 0;
}

static void fill(fsc__sb_t *sb, const char *name, size_t len, const fsc__model_t *m,
                 const fsc_view_opts_t *opts, const fsc__vcaps_t *caps, const job_parts_t *job)
{
#define IS(lit) (len == sizeof(lit) - 1 && memcmp(name, lit, len) == 0)
    if (IS("CSS")) {
        fsc__sb_put(sb, fsc__asset_viewer_css, fsc__asset_viewer_css_len);
    } else if (IS("JS")) {
        fsc__sb_put(sb, fsc__asset_viewer_js, fsc__asset_viewer_js_len);
    } else if (IS("RUNSJS")) {
        fsc__sb_put(sb, fsc__asset_viewer_runs_js, fsc__asset_viewer_runs_js_len);
    } else if (IS("RUNS")) {
        if (job != NULL)
            fsc__sb_put(sb, job->overview.p, job->overview.len);
    } else if (IS("RUNDATA")) {
        if (job != NULL)
            fsc__sb_put(sb, job->extra.p, job->extra.len);
    } else if (IS("NAVRUNS")) {
        if (job != NULL)
            fsc__job_emit_nav(sb);
    } else if (IS("DATA")) {
        fsc__emit_json(sb, m, caps);
    } else if (IS("SUMMARY")) {
        fsc__emit_summary(sb, m, caps);
    } else if (IS("SPLIT")) {
        fsc__emit_split(sb, m, caps);
    } else if (IS("TITLE") || IS("H1")) {
        if (opts->title != NULL)
            fsc__sb_html(sb, opts->title, 200);
        else
            fsc__emit_title(sb, m);
    } else if (IS("VERSION")) {
        fsc__sb_puts(sb, FSC_VERSION_STRING);
    } else if (IS("DBNAME")) {
        fsc__sb_html(sb, m->db_name, 200);
    } else {
        /* Not a placeholder: keep the text as it was. */
        fsc__sb_put(sb, "@", 1);
        fsc__sb_put(sb, name, len);
        fsc__sb_put(sb, "@", 1);
    }
#undef IS
}

static void render_page(fsc__sb_t *sb, const fsc__model_t *m, const fsc_view_opts_t *opts,
                        const fsc__vcaps_t *caps, const job_parts_t *job)
{
    const char *t = (const char *)fsc__asset_template_html;
    size_t n = fsc__asset_template_html_len, i = 0;
    while (i < n) {
        const char *at = memchr(t + i, '@', n - i);
        if (at == NULL) {
            fsc__sb_put(sb, t + i, n - i);
            break;
        }
        size_t a = (size_t)(at - t);
        fsc__sb_put(sb, t + i, a - i);
        size_t j = a + 1;
        while (j < n && ((t[j] >= 'A' && t[j] <= 'Z') || (t[j] >= '0' && t[j] <= '9') || t[j] == '_'))
            j++;
        if (j < n && t[j] == '@' && j > a + 1) {
            fill(sb, t + a + 1, j - a - 1, m, opts, caps, job);
            i = j + 1;
        } else {
            fsc__sb_put(sb, "@", 1);
            i = a + 1;
        }
    }
}

/* The page's fixed cost: the template, its style sheet and scripts. */
static size_t fixed_bytes(void)
{
    return fsc__asset_template_html_len + fsc__asset_viewer_css_len + fsc__asset_viewer_js_len +
           fsc__asset_viewer_runs_js_len;
}

/* Another carried run of a job page: its static summary (in a <template>
 * the picker clones) and its data block, at the first size level at which
 * they and the page's fixed cost fit the bound, as a one-run page would. */
static int render_extra(const char *db_path, const fsc_view_opts_t *opts, uint64_t max,
                        int64_t run, fsc__sb_t *out, fsc_err_t *err)
{
    fsc__model_t m;
    int rc = fsc__model_load_run(db_path, run, opts->bands, &m, err);
    if (rc != 0)
        return rc;
    size_t got = 0;
    int done = 0;
    for (int level = 0; level < FSC__VIEW_LEVELS && !done; level++) {
        fsc__vcaps_t caps;
        fsc__vcaps_for_level(level, &caps);
        fsc__sb_t sb = {0};
        fsc__sb_printf(&sb, "<template id=\"static-run-%lld\">\n", (long long)run);
        fsc__emit_summary(&sb, &m, &caps);
        fsc__emit_split(&sb, &m, &caps);
        fsc__sb_printf(&sb, "</template>\n<script type=\"application/json\" id=\"data-run-%lld\">",
                       (long long)run);
        fsc__emit_json(&sb, &m, &caps);
        fsc__sb_puts(&sb, "</script>\n");
        if (fsc__sb_failed(&sb)) {
            fsc__sb_free(&sb);
            rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory while building the report", db_path);
            break;
        }
        got = sb.len;
        if ((uint64_t)(sb.len + fixed_bytes()) <= max) {
            fsc__sb_put(out, sb.p, sb.len);
            done = 1;
        }
        fsc__sb_free(&sb);
    }
    if (rc == 0 && !done)
        rc = fsc_err_set(err, FSC_ELIMIT,
                         "%s: the detail of run %lld needs %zu bytes even at its smallest, over the "
                         "bound of %llu bytes", db_path, (long long)run, got + fixed_bytes(),
                         (unsigned long long)max);
    fsc__model_free(&m);
    return rc;
}

int fsc_view_render(const char *db_path, const fsc_view_opts_t *opts_in, char **html,
                    size_t *len, fsc_err_t *err)
{
    if (html == NULL)
        return fsc_err_set(err, FSC_EINVAL, "fsc_view_render: no output buffer");
    *html = NULL;
    if (len != NULL)
        *len = 0;
    fsc_view_opts_t opts = FSC_VIEW_OPTS_DEFAULT;
    if (opts_in != NULL)
        opts = *opts_in;
    uint64_t max = opts.max_bytes ? opts.max_bytes : FSC_VIEW_MAX_BYTES_DEFAULT;
    int rc = check_assets(err);
    if (rc != 0)
        return rc;
    /* A job database: the overview, then the other carried runs one at a
     * time; the page itself is that of the run shown first. */
    fsc__vjob_t job;
    if ((rc = fsc__job_load(db_path, &opts, &job, err)) != 0)
        return rc;
    job_parts_t parts = {{0}, {0}};
    int64_t open_run = -1;
    if (job.n > 1) {
        open_run = job.runs[job.open].run;
        fsc__job_emit_overview(&parts.overview, &job);
        for (size_t k = 0; k < job.n && rc == 0; k++) {
            const fsc__vrun_t *v = &job.runs[job.order[k]];
            if (v->detail && v->run != open_run)
                rc = render_extra(db_path, &opts, max, v->run, &parts.extra, err);
        }
        if (rc == 0 && (fsc__sb_failed(&parts.overview) || fsc__sb_failed(&parts.extra)))
            rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory while building the report", db_path);
    }
    fsc__job_free(&job);
    fsc__model_t m;
    if (rc == 0 && (rc = fsc__model_load_run(db_path, open_run, opts.bands, &m, err)) == 0) {
        size_t got = 0, added = parts.overview.len + parts.extra.len;
        for (int level = 0; level < FSC__VIEW_LEVELS; level++) {
            fsc__vcaps_t caps;
            fsc__vcaps_for_level(level, &caps);
            fsc__sb_t sb = {0};
            render_page(&sb, &m, &opts, &caps, open_run >= 0 ? &parts : NULL);
            if (fsc__sb_failed(&sb)) {
                fsc__sb_free(&sb);
                rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory while building the report", db_path);
                break;
            }
            /* The bound is that of the run shown: the other runs' parts were
             * bounded alike, the overview has a fixed size per run. */
            got = sb.len - added;
            if ((uint64_t)got <= max) {
                *html = fsc__sb_take(&sb, len);
                break;
            }
            fsc__sb_free(&sb);
        }
        if (rc == 0 && *html == NULL)
            rc = fsc_err_set(err, FSC_ELIMIT,
                             "%s: the report needs %zu bytes even at its smallest, over the bound of "
                             "%llu bytes", db_path, got, (unsigned long long)max);
        fsc__model_free(&m);
    }
    fsc__sb_free(&parts.overview);
    fsc__sb_free(&parts.extra);
    return rc;
}

int fsc_view_write_opts(const char *db_path, const char *out_html, const fsc_view_opts_t *opts,
                        fsc_err_t *err)
{
    fsc_outfile_t of;
    int rc = fsc_outfile_init(&of, out_html, err);
    if (rc != 0)
        return rc;
    char *html = NULL;
    size_t len = 0;
    /* Render fully before creating anything, so bad input leaves no file. */
    if ((rc = fsc_view_render(db_path, opts, &html, &len, err)) != 0) {
        fsc_outfile_abort(&of);
        return rc;
    }
    FILE *f = fopen(of.tmp_path, "wb");
    if (f == NULL) {
        rc = fsc_err_set(err, FSC_EIO, "%s: cannot create: %s", out_html, strerror(errno));
        fsc_outfile_abort(&of);
        free(html);
        return rc;
    }
    size_t w = fwrite(html, 1, len, f);
    int bad = w != len || fflush(f) != 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    free(html);
    if (bad) {
        fsc_outfile_abort(&of);
        return fsc_err_set(err, FSC_EIO, "%s: write failed: %s", out_html, strerror(e));
    }
    return fsc_outfile_commit(&of, err);
}

int fsc_view_write(const char *db_path, const char *out_html, fsc_err_t *err)
{
    return fsc_view_write_opts(db_path, out_html, NULL, err);
}
