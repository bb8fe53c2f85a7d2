/*
 * report_sites.c — live bytes by line of code at the allocated peak and at
 * each OOM, in the report's three formats.
 *
 * The tag tables rank whole call stacks; one line of code reached through
 * several stacks is split over several of them, so a line can read third
 * when it holds the most. These lists rank lines instead
 * (fsc_rundb_sites_at): by the allocating line (the innermost frame the
 * frame filter keeps) and by the first frame in the program's own code. The
 * viewer's "by line of code" table groups the same way, with the same
 * labels.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/frames.h"
#include "report_model.h"

static int load_one(fsc_rundb_t *db, rep_sites_t *s)
{
    int rc = fsc_rundb_sites_at(db, s->seq, FSC_SITE_LINE, &s->line, &s->nline);
    if (rc == 0)
        rc = fsc_rundb_sites_at(db, s->seq, FSC_SITE_MINE, &s->mine, &s->nmine);
    for (size_t i = 0; i < s->nline; i++) {
        s->total += s->line[i].bytes;
        s->blocks += s->line[i].blocks;
    }
    return rc;
}

int fsc__report_sites_load(fsc_rundb_t *db, rep_t *r)
{
    int has = 0;
    if (fsc_rundb_has_table(db, "blocks", &has) != 0 || !has)
        return 0;
    int64_t n = 0;
    if (fsc_rundb_count(db, "blocks", &n) != 0 || n == 0)
        return 0;
    int want = 1 + (r->nooms < REP_OOMS_DETAILED ? r->nooms : REP_OOMS_DETAILED);
    r->sites = calloc((size_t)want, sizeof *r->sites);
    if (r->sites == NULL)
        return FSC_ENOMEM;
    int rc = 0;
    for (int i = 0; i < want && rc == 0; i++) {
        rep_sites_t *s = &r->sites[r->nsites++];
        if (i == 0) {
            int64_t seq = 0;
            for (int k = 0; k < r->nsum; k++)
                if (strcmp(r->sum[k].key, "peak_allocated_seq") == 0)
                    seq = (int64_t)r->sum[k].v;
            s->what = "the allocated peak";
            s->seq = seq;
            s->oom_id = -1;
        } else {
            s->what = "OOM";
            s->seq = r->ooms[i - 1].seq;
            s->oom_id = r->ooms[i - 1].id;
        }
        rc = load_one(db, s);
    }
    return rc;
}

void fsc__report_sites_free(rep_t *r)
{
    for (int i = 0; i < r->nsites; i++) {
        free(r->sites[i].line);
        free(r->sites[i].mine);
    }
    free(r->sites);
    r->sites = NULL;
    r->nsites = 0;
}

static void heading(const rep_sites_t *s, char *buf, size_t cap)
{
    if (s->oom_id < 0)
        snprintf(buf, cap, "at the allocated peak (event %lld)", (long long)s->seq);
    else
        snprintf(buf, cap, "at OOM #%lld (event %lld)", (long long)s->oom_id,
                 (long long)s->seq);
}

static void list_text(FILE *f, const fsc_rundb_site_t *v, size_t n, size_t shown, int64_t total,
                      int mine)
{
    char b[32];
    for (size_t i = 0; i < n && i < shown; i++)
        fprintf(f, "    %12s %5.1f%% %6lld blocks  %s%s\n",
                fsc_size_format((uint64_t)v[i].bytes, b, sizeof b),
                total ? 100.0 * (double)v[i].bytes / (double)total : 0.0,
                (long long)v[i].blocks, v[i].label,
                mine && !v[i].mine ? "  (no frame of the program's own code)" : "");
    if (n > shown) {
        int64_t rest = 0;
        for (size_t i = shown; i < n; i++)
            rest += v[i].bytes;
        fprintf(f, "    %12s        %zu more lines\n",
                fsc_size_format((uint64_t)rest, b, sizeof b), n - shown);
    }
}

void fsc__report_sites_text(const rep_t *r, FILE *f)
{
    for (int i = 0; i < r->nsites; i++) {
        const rep_sites_t *s = &r->sites[i];
        char h[96], b[32];
        heading(s, h, sizeof h);
        fprintf(f, "\nlive bytes by line of code %s: %s in %lld blocks, %zu lines\n", h,
                fsc_size_format((uint64_t)s->total, b, sizeof b), (long long)s->blocks,
                s->nline);
        fprintf(f, "  by allocating line (innermost frame):\n");
        list_text(f, s->line, s->nline, i == 0 ? REP_SITES_SHOWN : REP_MINE_SHOWN, s->total, 0);
        fprintf(f, "  by first frame in the program's own code (site-packages, torch and the "
                   "standard library skipped):\n");
        list_text(f, s->mine, s->nmine, REP_MINE_SHOWN, s->total, 1);
    }
}

static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '*' || *s == '_' || *s == '`' || *s == '<' || *s == '>')
            fputc('\\', f);
        fputc(*s, f);
    }
}

static void list_md(FILE *f, const char *title, const fsc_rundb_site_t *v, size_t n,
                    size_t shown, int64_t total)
{
    char b[32];
    fprintf(f, "| %s | live bytes | share | blocks |\n|---|---:|---:|---:|\n", title);
    for (size_t i = 0; i < n && i < shown; i++) {
        fprintf(f, "| ");
        md_cell(f, v[i].label);
        fprintf(f, " | %s | %.1f%% | %lld |\n", fsc_size_format((uint64_t)v[i].bytes, b, sizeof b),
                total ? 100.0 * (double)v[i].bytes / (double)total : 0.0,
                (long long)v[i].blocks);
    }
    if (n > shown) {
        int64_t rest = 0;
        for (size_t i = shown; i < n; i++)
            rest += v[i].bytes;
        fprintf(f, "| %zu more lines | %s | | |\n", n - shown,
                fsc_size_format((uint64_t)rest, b, sizeof b));
    }
    fprintf(f, "\n");
}

void fsc__report_sites_markdown(const rep_t *r, FILE *f)
{
    for (int i = 0; i < r->nsites; i++) {
        const rep_sites_t *s = &r->sites[i];
        char h[96], b[32];
        heading(s, h, sizeof h);
        fprintf(f, "### Live bytes by line of code %s\n\n%s in %lld blocks over %zu lines.\n\n", h,
                fsc_size_format((uint64_t)s->total, b, sizeof b), (long long)s->blocks,
                s->nline);
        list_md(f, "allocating line", s->line, s->nline,
                i == 0 ? REP_SITES_SHOWN : REP_MINE_SHOWN, s->total);
        list_md(f, "first frame in the program's own code", s->mine, s->nmine, REP_MINE_SHOWN,
                s->total);
    }
}

static cJSON *list_json(const fsc_rundb_site_t *v, size_t n, int mine)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "site", v[i].label);
        cJSON_AddNumberToObject(o, "bytes", (double)v[i].bytes);
        cJSON_AddNumberToObject(o, "blocks", (double)v[i].blocks);
        if (mine)
            cJSON_AddBoolToObject(o, "own_code", v[i].mine);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

void fsc__report_sites_json(const rep_t *r, cJSON *root)
{
    cJSON *a = cJSON_AddArrayToObject(root, "live_by_line");
    for (int i = 0; i < r->nsites; i++) {
        const rep_sites_t *s = &r->sites[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "point", s->oom_id < 0 ? "peak_allocated" : "oom");
        if (s->oom_id >= 0)
            cJSON_AddNumberToObject(o, "oom_id", (double)s->oom_id);
        cJSON_AddNumberToObject(o, "seq", (double)s->seq);
        cJSON_AddNumberToObject(o, "live_bytes", (double)s->total);
        cJSON_AddNumberToObject(o, "live_blocks", (double)s->blocks);
        cJSON_AddItemToObject(o, "by_line", list_json(s->line, s->nline, 0));
        cJSON_AddItemToObject(o, "by_own_code", list_json(s->mine, s->nmine, 1));
        cJSON_AddItemToArray(a, o);
    }
}
