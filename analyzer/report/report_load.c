/*
 * report_load.c — reads a run database into the report model: meta,
 * summary, OOMs with their diagnosis, the segments and blocks behind each,
 * what-if's suggestions, bins and tags.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_model.h"

/* The segments holding the most free space at each OOM, and the largest
 * live blocks pinning each. */
static int load_segments(sqlite3 *db, rep_t *r)
{
    sqlite3_stmt *sg = NULL, *pn = NULL;
    if (sqlite3_prepare_v2(db, "SELECT segment, size, free_bytes, largest_free, live_blocks,"
                               " live_bytes FROM oom_segments WHERE oom_id = ? ORDER BY rank"
                               " LIMIT 3", -1, &sg, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT p.addr, p.size, p.age_events, p.age_ns,"
                               " substr(t.path, -255) FROM oom_pinning_blocks p"
                               " LEFT JOIN tags t ON t.id = p.tag"
                               " WHERE p.oom_id = ? AND p.segment = ?"
                               " ORDER BY p.size DESC, p.addr LIMIT 3", -1, &pn, NULL) != SQLITE_OK) {
        sqlite3_finalize(sg);
        return -1;
    }
    for (int i = 0; i < r->nooms && i < REP_OOMS_DETAILED; i++) {
        rep_oom_t *o = &r->ooms[i];
        sqlite3_reset(sg);
        sqlite3_bind_int64(sg, 1, o->id);
        while (sqlite3_step(sg) == SQLITE_ROW && o->nsegs < REP_SEGS) {
            rep_seg_t *g = &o->segs[o->nsegs++];
            int64_t *f[] = {&g->segment, &g->size, &g->free_bytes, &g->largest_free,
                            &g->live_blocks, &g->live_bytes};
            for (int k = 0; k < 6; k++)
                *f[k] = sqlite3_column_int64(sg, k);
            sqlite3_reset(pn);
            sqlite3_bind_int64(pn, 1, o->id);
            sqlite3_bind_int64(pn, 2, g->segment);
            while (sqlite3_step(pn) == SQLITE_ROW && g->npins < REP_PINS) {
                rep_pin_t *b = &g->pins[g->npins++];
                b->addr = sqlite3_column_int64(pn, 0);
                b->size = sqlite3_column_int64(pn, 1);
                b->age_events = sqlite3_column_int64(pn, 2);
                b->age_ns = sqlite3_column_int64(pn, 3);
                const unsigned char *t = sqlite3_column_text(pn, 4);
                snprintf(b->tag, sizeof b->tag, "%s", t && t[0] ? (const char *)t : "(untagged)");
            }
        }
    }
    sqlite3_finalize(sg);
    sqlite3_finalize(pn);
    return 0;
}

int fsc__report_load(sqlite3 *db, rep_t *r, fsc_err_t *err)
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

    if (load_segments(db, r) != 0)
        goto bad;

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

void fsc__report_free(rep_t *r)
{
    for (int i = 0; i < r->nooms; i++) {
        free(r->ooms[i].explanation);
        free(r->ooms[i].fixes);
    }
    free(r->ooms);
}

