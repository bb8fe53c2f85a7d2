/*
 * report.c — the run report in three forms: text for a terminal, Markdown
 * for a CI job summary (and `fragscope demo`'s report.md), JSON for tools.
 * Everything comes from the run database; the report is read into one
 * model first so the three printers say the same things.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/events.h"
#include "rundb.h"

#define MAX_SUM 96
#define TOP_N 10

typedef struct rep_sum {
    char key[64], unit[8];
    double v;
    int is_real;
} rep_sum_t;

typedef struct rep_oom {
    int64_t id, seq, requested, rounded, allocated, reserved, capacity, lower, upper;
    int64_t free_in_reserved, largest_free, largest_usable;
    int inferred;
    double ext;
    char cause[24];
    char *explanation;
    char top_tag[4096];
    int64_t top_tag_bytes;
    char *fixes; /* configs that would have avoided it, "; "-separated (what-if) */
} rep_oom_t;

typedef struct rep_bin {
    int64_t bin, lo, hi, requests, requested, allocated, waste, hits, misses, splits, merges;
    int64_t peak_blocks, peak_bytes, free_at_peak;
    double hit_rate;
} rep_bin_t;

typedef struct rep_tag {
    char path[4096];
    int64_t bytes, blocks;
} rep_tag_t;

typedef struct rep {
    const char *db_path;
    char producer[256], config[512], backend[256], source[1024];
    int64_t capacity, device_total, warnings;
    int capacity_inferred;
    rep_sum_t sum[MAX_SUM];
    int nsum;
    rep_oom_t *ooms;
    int nooms;
    rep_bin_t bins[64];
    int nbins;
    rep_tag_t peak_tags[TOP_N], leaks[TOP_N];
    int npeak_tags, nleaks;
} rep_t;

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

static int load(sqlite3 *db, rep_t *r, fsc_err_t *err)
{
    fsc__rundb_meta_text(db, "producer", r->producer, sizeof r->producer);
    fsc__rundb_meta_text(db, "config", r->config, sizeof r->config);
    fsc__rundb_meta_text(db, "backend", r->backend, sizeof r->backend);
    fsc__rundb_meta_text(db, "source_path", r->source, sizeof r->source);
    r->capacity = fsc__rundb_meta_int(db, "capacity", 0);
    r->capacity_inferred = (int)fsc__rundb_meta_int(db, "capacity_inferred", 0);
    r->device_total = fsc__rundb_meta_int(db, "device_total", 0);
    r->warnings = fsc__rundb_meta_int(db, "warnings", 0);

    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT key, value, unit FROM summary ORDER BY rowid", -1, &s,
                           NULL) != SQLITE_OK)
        goto bad;
    while (sqlite3_step(s) == SQLITE_ROW && r->nsum < MAX_SUM) {
        rep_sum_t *e = &r->sum[r->nsum++];
        snprintf(e->key, sizeof e->key, "%s", (const char *)sqlite3_column_text(s, 0));
        e->is_real = sqlite3_column_type(s, 1) == SQLITE_FLOAT;
        e->v = sqlite3_column_double(s, 1);
        const unsigned char *u = sqlite3_column_text(s, 2);
        snprintf(e->unit, sizeof e->unit, "%s", u ? (const char *)u : "");
    }
    sqlite3_finalize(s);

    if (sqlite3_prepare_v2(db,
                           "SELECT id, seq, requested, rounded, allocated, reserved, capacity,"
                           " capacity_lower, capacity_upper, free_in_reserved, largest_free,"
                           " largest_free_usable, capacity_inferred, external_frag, cause,"
                           " explanation,"
                           " (SELECT t.path FROM oom_tags o JOIN tags t ON t.id = o.tag"
                           "   WHERE o.oom_id = ooms.id AND o.rank = 0),"
                           " (SELECT o.live_bytes FROM oom_tags o"
                           "   WHERE o.oom_id = ooms.id AND o.rank = 0)"
                           " FROM ooms ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK)
        goto bad;
    while (sqlite3_step(s) == SQLITE_ROW) {
        rep_oom_t *no = realloc(r->ooms, (size_t)(r->nooms + 1) * sizeof *no);
        if (no == NULL) {
            sqlite3_finalize(s);
            return fsc_err_set(err, FSC_ENOMEM, "out of memory");
        }
        r->ooms = no;
        rep_oom_t *o = &r->ooms[r->nooms++];
        memset(o, 0, sizeof *o);
        int64_t *f[] = {&o->id, &o->seq, &o->requested, &o->rounded, &o->allocated,
                        &o->reserved, &o->capacity, &o->lower, &o->upper,
                        &o->free_in_reserved, &o->largest_free, &o->largest_usable};
        for (int i = 0; i < 12; i++)
            *f[i] = sqlite3_column_int64(s, i);
        o->inferred = sqlite3_column_int(s, 12);
        o->ext = sqlite3_column_double(s, 13);
        snprintf(o->cause, sizeof o->cause, "%s", (const char *)sqlite3_column_text(s, 14));
        const unsigned char *ex = sqlite3_column_text(s, 15);
        o->explanation = strdup(ex ? (const char *)ex : "");
        const unsigned char *tp = sqlite3_column_text(s, 16);
        snprintf(o->top_tag, sizeof o->top_tag, "%s", tp ? (const char *)tp : "");
        o->top_tag_bytes = sqlite3_column_int64(s, 17);
    }
    sqlite3_finalize(s);

    /* What-if's suggestions, when it has filled them in. */
    if (sqlite3_prepare_v2(db,
                           "SELECT group_concat(CASE WHEN config = '' THEN '(defaults)'"
                           " ELSE config END, '; ') FROM suggestions"
                           " WHERE avoids_oom = 1 AND (oom_id = ? OR oom_id IS NULL)",
                           -1, &s, NULL) == SQLITE_OK) {
        for (int i = 0; i < r->nooms; i++) {
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, r->ooms[i].id);
            if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0) != NULL)
                r->ooms[i].fixes = strdup((const char *)sqlite3_column_text(s, 0));
        }
        sqlite3_finalize(s);
    }

    if (sqlite3_prepare_v2(db,
                           "SELECT bin, lo, hi, requests, requested_bytes, allocated_bytes,"
                           " internal_waste, cache_hits, cache_misses, splits, merges,"
                           " peak_live_blocks, peak_live_bytes, free_bytes_at_peak, hit_rate"
                           " FROM bins WHERE requests > 0 OR free_bytes_at_peak > 0"
                           " ORDER BY bin",
                           -1, &s, NULL) != SQLITE_OK)
        goto bad;
    while (sqlite3_step(s) == SQLITE_ROW && r->nbins < 64) {
        rep_bin_t *b = &r->bins[r->nbins++];
        int64_t *f[] = {&b->bin, &b->lo, &b->hi, &b->requests, &b->requested, &b->allocated,
                        &b->waste, &b->hits, &b->misses, &b->splits, &b->merges,
                        &b->peak_blocks, &b->peak_bytes, &b->free_at_peak};
        for (int i = 0; i < 14; i++)
            *f[i] = sqlite3_column_int64(s, i);
        b->hit_rate = sqlite3_column_double(s, 14);
    }
    sqlite3_finalize(s);

    static const char *const tag_sql[2] = {
        "SELECT t.path, s.live_bytes_at_peak, s.live_blocks_at_peak FROM tag_stats s"
        " JOIN tags t ON t.id = s.tag WHERE s.live_bytes_at_peak > 0"
        " ORDER BY s.live_bytes_at_peak DESC, s.tag LIMIT 10",
        "SELECT t.path, s.live_bytes_end, s.live_blocks_end FROM tag_stats s"
        " JOIN tags t ON t.id = s.tag WHERE s.live_bytes_end > 0"
        " ORDER BY s.live_bytes_end DESC, s.tag LIMIT 10"};
    for (int k = 0; k < 2; k++) {
        rep_tag_t *v = k == 0 ? r->peak_tags : r->leaks;
        int *n = k == 0 ? &r->npeak_tags : &r->nleaks;
        if (sqlite3_prepare_v2(db, tag_sql[k], -1, &s, NULL) != SQLITE_OK)
            goto bad;
        while (sqlite3_step(s) == SQLITE_ROW && *n < TOP_N) {
            rep_tag_t *t = &v[(*n)++];
            const unsigned char *p = sqlite3_column_text(s, 0);
            snprintf(t->path, sizeof t->path, "%s", p && p[0] ? (const char *)p : "(untagged)");
            t->bytes = sqlite3_column_int64(s, 1);
            t->blocks = sqlite3_column_int64(s, 2);
        }
        sqlite3_finalize(s);
    }
    return 0;
bad:
    return fsc_err_set(err, FSC_EFORMAT, "%s: damaged run database: %s", r->db_path,
                       sqlite3_errmsg(db));
}

/* Tag paths of imported snapshots are whole Python stacks, outermost
 * first; on a terminal or in a table the innermost frames say the most. */
static const char *tail(const char *path, char *buf, size_t cap)
{
    size_t n = strlen(path), keep = 72;
    if (n <= keep || cap < keep + 8)
        return path;
    const char *t = path + n - keep;
    const char *slash = strchr(t, '/');
    if (slash != NULL && slash[1] != '\0')
        t = slash + 1;
    snprintf(buf, cap, "…/%s", t);
    return buf;
}

static void rep_free(rep_t *r)
{
    for (int i = 0; i < r->nooms; i++) {
        free(r->ooms[i].explanation);
        free(r->ooms[i].fixes);
    }
    free(r->ooms);
}

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

/* ---- text ---------------------------------------------------------------- */

static void print_text(const rep_t *r, FILE *f)
{
    char b[6][32], cap[64];
    capacity_text(r, cap, sizeof cap);
    fprintf(f, "fragscope report: %s\n", r->db_path);
    fprintf(f, "  source      %s\n", r->source[0] ? r->source : "(api)");
    fprintf(f, "  producer    %s, backend %s\n", r->producer, r->backend);
    fprintf(f, "  config      %s\n", r->config[0] ? r->config : "(defaults)");
    fprintf(f, "  capacity    %s\n", cap);
    fprintf(f, "  events      %.0f\n", sv(r, "events"));
    if (r->warnings)
        fprintf(f, "  warnings    %lld events contradicted the replay and were skipped\n",
                (long long)r->warnings);
    fprintf(f, "\nmemory\n");
    fprintf(f, "  peak allocated          %12s  (event %.0f)\n",
            SZ(0, su(r, "peak_allocated_bytes")), sv(r, "peak_allocated_seq"));
    fprintf(f, "  peak reserved           %12s  (event %.0f)\n",
            SZ(0, su(r, "peak_reserved_bytes")), sv(r, "peak_reserved_seq"));
    fprintf(f, "  peak requested          %12s\n", SZ(0, su(r, "peak_requested_bytes")));
    fprintf(f, "  utilization             %11.1f%%  (peak allocated / peak reserved)\n",
            100.0 * sv(r, "utilization"));
    fprintf(f, "  final allocated         %12s  reserved %s\n",
            SZ(0, su(r, "final_allocated_bytes")), SZ(1, su(r, "final_reserved_bytes")));
    fprintf(f, "\nfragmentation at the allocated peak\n");
    fprintf(f, "  internal                %12s  (%.1f%% of allocated)\n",
            SZ(0, su(r, "internal_frag_bytes_at_peak")),
            100.0 * sv(r, "internal_frag_ratio_at_peak"));
    fprintf(f, "  external                %11.1f%%  (largest free block %s of %s free)\n",
            100.0 * sv(r, "external_frag_at_peak"), SZ(0, su(r, "largest_free_at_peak")),
            SZ(1, su(r, "free_in_reserved_at_peak")));
    fprintf(f, "  reserved − allocated    %12s  (max over the run %s)\n",
            SZ(0, su(r, "reserved_unallocated_at_peak")),
            SZ(1, su(r, "peak_reserved_unallocated_bytes")));
    fprintf(f, "  inactive split          %12s  in %.0f blocks\n",
            SZ(0, su(r, "inactive_split_bytes_at_peak")),
            sv(r, "inactive_split_blocks_at_peak"));
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
        char tb[128];
        if (o->top_tag[0])
            fprintf(f, "    largest tag: %s (%s)\n", tail(o->top_tag, tb, sizeof tb),
                    SZ(0, o->top_tag_bytes));
        if (o->fixes)
            fprintf(f, "    would have been avoided with: %s\n", o->fixes);
    }
    if (r->nbins > 0) {
        fprintf(f, "\nbins (block sizes)\n");
        fprintf(f, "  %-22s %9s %6s %11s %11s %11s\n", "size class", "requests", "hit%",
                "waste", "peak live", "free@peak");
        for (int i = 0; i < r->nbins; i++) {
            const rep_bin_t *x = &r->bins[i];
            char cls[48];
            snprintf(cls, sizeof cls, "%s–%s", SZ(0, x->lo), SZ(1, x->hi));
            fprintf(f, "  %-22s %9lld %5.1f%% %11s %11s %11s\n", cls, (long long)x->requests,
                    100.0 * x->hit_rate, SZ(2, x->waste), SZ(3, x->peak_bytes),
                    SZ(4, x->free_at_peak));
        }
    }
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
    if (r->warnings)
        fprintf(f, "**%lld events contradicted the replay and were skipped.**\n\n",
                (long long)r->warnings);
    fprintf(f, "| metric | value |\n|---|---|\n");
    fprintf(f, "| peak allocated | %s |\n", SZ(0, su(r, "peak_allocated_bytes")));
    fprintf(f, "| peak reserved | %s |\n", SZ(0, su(r, "peak_reserved_bytes")));
    fprintf(f, "| utilization (peak allocated / peak reserved) | %.1f%% |\n",
            100.0 * sv(r, "utilization"));
    fprintf(f, "| internal fragmentation at peak | %s (%.1f%%) |\n",
            SZ(0, su(r, "internal_frag_bytes_at_peak")),
            100.0 * sv(r, "internal_frag_ratio_at_peak"));
    fprintf(f, "| external fragmentation at peak | %.1f%% |\n",
            100.0 * sv(r, "external_frag_at_peak"));
    fprintf(f, "| reserved but unallocated at peak | %s |\n",
            SZ(0, su(r, "reserved_unallocated_at_peak")));
    fprintf(f, "| inactive split at peak | %s |\n",
            SZ(0, su(r, "inactive_split_bytes_at_peak")));
    fprintf(f, "| cache hit rate | %.1f%% |\n", 100.0 * sv(r, "cache_hit_rate"));
    fprintf(f, "| segments created | %.0f |\n", sv(r, "segments_created"));
    fprintf(f, "| OOMs | %d |\n", r->nooms);
    fprintf(f, "| still allocated at the end | %s |\n", SZ(0, su(r, "leaked_bytes")));
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
            if (r->ooms[i].fixes) {
                fprintf(f, " Would have been avoided with: `%s`.", r->ooms[i].fixes);
            }
            fprintf(f, "\n\n");
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

static char *build_json(const rep_t *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "database", r->db_path);
    cJSON *meta = cJSON_AddObjectToObject(root, "run");
    cJSON_AddStringToObject(meta, "source", r->source);
    cJSON_AddStringToObject(meta, "producer", r->producer);
    cJSON_AddStringToObject(meta, "backend", r->backend);
    cJSON_AddStringToObject(meta, "config", r->config);
    cJSON_AddItemToObject(meta, "capacity_bytes", num((double)r->capacity));
    cJSON_AddBoolToObject(meta, "capacity_inferred", r->capacity_inferred);
    cJSON_AddItemToObject(meta, "warnings", num((double)r->warnings));

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
    };
    for (size_t i = 0; i < sizeof fk / sizeof fk[0]; i++)
        cJSON_AddItemToObject(fr, fk[i][0], num(sv(r, fk[i][1])));

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
        cJSON_AddStringToObject(j, "explanation", o->explanation);
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
    return out;
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
    else
        return FSC_EINVAL;
    return 0;
}

int fsc_report_write(const char *db_path, fsc_report_format_t fmt, FILE *out, fsc_err_t *err)
{
    sqlite3 *db = NULL;
    int rc = fsc_rundb_open(db_path, &db, err);
    if (rc != 0)
        return rc;
    rep_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        sqlite3_close(db);
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    }
    r->db_path = db_path;
    rc = load(db, r, err);
    sqlite3_close(db);
    if (rc == 0) {
        if (fmt == FSC_REPORT_JSON) {
            char *js = build_json(r);
            if (js == NULL)
                rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
            else
                fprintf(out, "%s\n", js);
            cJSON_free(js);
        } else if (fmt == FSC_REPORT_MARKDOWN) {
            print_markdown(r, out);
        } else {
            print_text(r, out);
        }
        if (rc == 0 && ferror(out))
            rc = fsc_err_set(err, FSC_EIO, "cannot write the report");
    }
    rep_free(r);
    free(r);
    return rc;
}

int fsc_report_write_file(const char *db_path, fsc_report_format_t fmt, const char *out_path,
                          fsc_err_t *err)
{
    fsc_outfile_t o;
    int rc = fsc_outfile_init(&o, out_path, err);
    if (rc != 0)
        return rc;
    FILE *f = fopen(o.tmp_path, "w");
    if (f == NULL)
        return fsc_err_set(err, FSC_EIO, "%s: cannot create", out_path);
    rc = fsc_report_write(db_path, fmt, f, err);
    if (fclose(f) != 0 && rc == 0)
        rc = fsc_err_set(err, FSC_EIO, "%s: cannot write", out_path);
    if (rc == 0)
        rc = fsc_outfile_commit(&o, err);
    else
        fsc_outfile_abort(&o);
    return rc;
}
