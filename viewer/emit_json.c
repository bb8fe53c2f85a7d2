/*
 * emit_json.c — the JSON data block of the report (data model in
 * docs/viewer.md).
 *
 * Everything is capped by the size level: the timeline is re-bucketed
 * (keeping maxima so no peak is lost), markers are thinned evenly, the
 * block layouts are aggregated (emit_layout.c), the evidence of the later
 * OOMs is left out. Tag ids become indices into one "tags" string table
 * holding only the tags the page refers to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "emit.h"

void fsc__vcaps_for_level(int level, fsc__vcaps_t *c)
{
    c->timeline = 4000;
    c->markers = 500;
    c->ooms = 200;
    c->oom_detail = 16;
    c->pins = 12;
    c->layouts = 9;
    c->layout_blocks = 30000;
    c->tag_rows = 50;
    c->str_chars = FSC__V_STR_CHARS;
    c->text_chars = FSC__V_TEXT_CHARS;
    c->level = level;
    for (int i = 0; i < level; i++) {
        c->timeline = c->timeline > 200 ? c->timeline / 2 : c->timeline;
        c->markers /= 2;
        c->ooms = c->ooms > 8 ? c->ooms / 2 : c->ooms;
        c->oom_detail /= 2;
        c->pins /= 2;
        c->layouts = c->layouts > 1 ? c->layouts / 2 : c->layouts;
        c->layout_blocks = c->layout_blocks > 500 ? c->layout_blocks / 2 : c->layout_blocks;
        c->tag_rows = c->tag_rows > 5 ? c->tag_rows / 2 : c->tag_rows;
        c->str_chars = c->str_chars > 40 ? c->str_chars / 2 : c->str_chars;
        c->text_chars = c->text_chars > 200 ? c->text_chars / 2 : c->text_chars;
    }
}

/* ---- tag table -------------------------------------------------------- */


long fsc__vtagmap_index(fsc__vtagmap_t *tm, int64_t id)
{
    if (id < 0 || tm->index == NULL)
        return -1;
    size_t lo = 0, hi = tm->m->ntags;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tm->m->tags[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= tm->m->ntags || tm->m->tags[lo].id != id)
        return -1;
    if (tm->index[lo] < 0) {
        tm->index[lo] = (long)tm->n;
        tm->order[tm->n++] = lo;
    }
    return tm->index[lo];
}

/* ---- timeline ---------------------------------------------------------- */

static void emit_timeline(fsc__js_t *js, const fsc__model_t *m, const fsc__vcaps_t *caps)
{
    size_t n = m->ntimeline, group = 1;
    if (caps->timeline > 0 && n > caps->timeline)
        group = (n + caps->timeline - 1) / caps->timeline;
    static const char *const k_cols[] = {"t", "seq", "seq_last", "allocated", "requested",
                                         "reserved", "internal", "rbu", "external",
                                         "external_max"};
    fsc__js_obj(js, "timeline");
    fsc__js_int(js, "bucket_events", m->bucket_events * (int64_t)group);
    fsc__js_int(js, "t_end", n ? m->timeline[n - 1].t_last : 0);
    fsc__js_int(js, "seq_end", n ? m->timeline[n - 1].seq_last : 0);
    for (size_t c = 0; c < sizeof k_cols / sizeof k_cols[0]; c++) {
        fsc__js_arr(js, k_cols[c]);
        for (size_t i = 0; i < n; i += group) {
            size_t end = i + group < n ? i + group : n;
            const fsc__vsample_t *first = &m->timeline[i], *last = &m->timeline[end - 1];
            int64_t amax = 0, rmax = 0, umax = 0;
            double emax = -1;
            for (size_t j = i; j < end; j++) {
                const fsc__vsample_t *s = &m->timeline[j];
                emax = s->external_max > emax ? s->external_max : emax;
                amax = s->allocated > amax ? s->allocated : amax;
                rmax = s->reserved > rmax ? s->reserved : rmax;
                umax = s->rbu > umax ? s->rbu : umax;
            }
            switch (c) {
            case 0: fsc__js_int(js, NULL, first->t); break;
            case 1: fsc__js_int(js, NULL, first->seq); break;
            case 2: fsc__js_int(js, NULL, last->seq_last); break;
            case 3: fsc__js_int(js, NULL, amax); break;
            case 4: fsc__js_int(js, NULL, last->requested); break;
            case 5: fsc__js_int(js, NULL, rmax); break;
            case 6: fsc__js_int(js, NULL, last->internal); break;
            case 7: fsc__js_int(js, NULL, umax); break;
            case 8: fsc__js_num(js, NULL, last->external); break;
            default:
                if (emax >= 0)
                    fsc__js_num(js, NULL, emax);
                else
                    fsc__js_null(js, NULL);
                break;
            }
        }
        fsc__js_end(js, ']');
    }
    /* reserved per private pool: the most within each (merged) sample */
    fsc__js_arr(js, "pools");
    for (size_t p = 0; p < m->npools; p++) {
        fsc__js_obj(js, NULL);
        /* PyTorch's (a, b) pool id, stored as a × 2^32 + b */
        fsc__js_int(js, "a", (int64_t)((uint64_t)m->pool_ids[p] >> 32));
        fsc__js_int(js, "b", (int64_t)((uint64_t)m->pool_ids[p] & 0xffffffffu));
        fsc__js_arr(js, "reserved");
        for (size_t i = 0; i < n; i += group) {
            size_t end = i + group < n ? i + group : n;
            int64_t mx = 0;
            for (size_t j = i; j < end; j++)
                mx = m->pool_res[p * n + j] > mx ? m->pool_res[p * n + j] : mx;
            fsc__js_int(js, NULL, mx);
        }
        fsc__js_end(js, ']');
        fsc__js_end(js, '}');
    }
    fsc__js_end(js, ']');
    fsc__js_int(js, "pools_dropped", (int64_t)m->pools_dropped);
    fsc__js_end(js, '}');
}

static void emit_markers(fsc__js_t *js, const fsc__model_t *m, const fsc__vcaps_t *caps)
{
    size_t n = m->nmarkers, keep = n < caps->markers ? n : caps->markers;
    fsc__js_arr(js, "markers");
    for (size_t k = 0; k < keep; k++) {
        /* Evenly spread over the run when there are too many to draw. */
        size_t i = keep == n ? k : (size_t)((double)k * (double)n / (double)keep);
        fsc__js_obj(js, NULL);
        fsc__js_int(js, "t", m->markers[i].t);
        fsc__js_int(js, "seq", m->markers[i].seq);
        fsc__js_str(js, "text", m->markers[i].text, caps->str_chars);
        fsc__js_end(js, '}');
    }
    fsc__js_end(js, ']');
    fsc__js_int(js, "markers_total", m->markers_total);
}

/* ---- OOMs, bins, tags ------------------------------------------------- */

static void emit_tagrows(fsc__js_t *js, const char *key, const fsc__vtagrow_t *r, size_t n,
                         size_t cap, fsc__vtagmap_t *tm)
{
    fsc__js_arr(js, key);
    for (size_t i = 0; i < n && i < cap; i++) {
        fsc__js_obj(js, NULL);
        fsc__js_int(js, "tag", fsc__vtagmap_index(tm, r[i].tag));
        fsc__js_int(js, "bytes", r[i].bytes);
        fsc__js_int(js, "blocks", r[i].blocks);
        fsc__js_end(js, '}');
    }
    fsc__js_end(js, ']');
}

static void emit_oom_detail(fsc__js_t *js, const fsc__voom_t *o, const fsc__vcaps_t *caps,
                            fsc__vtagmap_t *tm)
{
    fsc__js_arr(js, "segments");
    for (size_t i = 0; i < o->nsegs; i++) {
        const fsc__vooseg_t *s = &o->segs[i];
        fsc__js_obj(js, NULL);
        fsc__js_int(js, "segment", s->addr);
        fsc__js_int(js, "size_bytes", s->size);
        fsc__js_int(js, "free_bytes", s->free);
        fsc__js_int(js, "largest_free_bytes", s->largest_free);
        fsc__js_int(js, "free_blocks", s->free_blocks);
        fsc__js_int(js, "live_blocks", s->live_blocks);
        fsc__js_int(js, "live_bytes", s->live_bytes);
        fsc__js_arr(js, "pinning_blocks");
        for (size_t j = 0; j < s->npins && j < caps->pins; j++) {
            const fsc__vpin_t *p = &s->pins[j];
            fsc__js_obj(js, NULL);
            fsc__js_int(js, "addr", p->addr);
            fsc__js_int(js, "size_bytes", p->size);
            fsc__js_int(js, "requested_bytes", p->requested);
            fsc__js_bool(js, "pending", p->pending);
            fsc__js_int(js, "age_events", p->age_events);
            fsc__js_int(js, "age_ns", p->age_ns);
            fsc__js_int(js, "tag", fsc__vtagmap_index(tm, p->tag));
            fsc__js_end(js, '}');
        }
        fsc__js_end(js, ']');
        fsc__js_end(js, '}');
    }
    fsc__js_end(js, ']');
    emit_tagrows(js, "tags", o->tags, o->ntags, caps->tag_rows, tm);
    fsc__js_arr(js, "suggestions");
    for (size_t i = 0; i < o->nsuggs; i++) {
        fsc__js_obj(js, NULL);
        fsc__js_str(js, "config", o->suggs[i].config, caps->str_chars);
        if (o->suggs[i].needed_capacity >= 0)
            fsc__js_int(js, "needed_capacity", o->suggs[i].needed_capacity);
        else
            fsc__js_null(js, "needed_capacity");
        fsc__js_bool(js, "avoids", o->suggs[i].avoids);
        fsc__js_str(js, "note", o->suggs[i].note, caps->str_chars);
        fsc__js_end(js, '}');
    }
    fsc__js_end(js, ']');
}

static void opt_int(fsc__js_t *js, const char *key, int64_t v)
{
    if (v >= 0)
        fsc__js_int(js, key, v);
    else
        fsc__js_null(js, key);
}

static void emit_ooms(fsc__js_t *js, const fsc__model_t *m, const fsc__vcaps_t *caps,
                      fsc__vtagmap_t *tm, const long *layout_of_oom)
{
    fsc__js_arr(js, "ooms");
    for (size_t i = 0; i < m->nooms && i < caps->ooms; i++) {
        const fsc__voom_t *o = &m->ooms[i];
        fsc__js_obj(js, NULL);
        fsc__js_int(js, "id", o->id);
        fsc__js_int(js, "seq", o->seq);
        fsc__js_int(js, "t", o->t);
        fsc__js_int(js, "requested_bytes", o->requested);
        fsc__js_int(js, "rounded_bytes", o->rounded);
        fsc__js_int(js, "pool", o->pool);
        fsc__js_int(js, "tag", fsc__vtagmap_index(tm, o->tag));
        fsc__js_int(js, "allocated_bytes", o->allocated);
        fsc__js_int(js, "reserved_bytes", o->reserved);
        fsc__js_int(js, "capacity_bytes", o->capacity);
        fsc__js_bool(js, "capacity_inferred", o->capacity_inferred);
        opt_int(js, "capacity_lower_bytes", o->cap_lo);
        opt_int(js, "capacity_upper_bytes", o->cap_hi);
        opt_int(js, "device_free_bytes", o->device_free);
        fsc__js_int(js, "free_in_reserved_bytes", o->free_reserved);
        fsc__js_int(js, "largest_free_bytes", o->largest_free);
        fsc__js_str(js, "cause", o->cause, 32);
        fsc__js_str(js, "explanation", o->explanation, caps->text_chars);
        fsc__js_int(js, "layout", layout_of_oom[i]);
        fsc__js_bool(js, "detail", i < caps->oom_detail);
        if (i < caps->oom_detail)
            emit_oom_detail(js, o, caps, tm);
        fsc__js_end(js, '}');
    }
    fsc__js_end(js, ']');
    fsc__js_int(js, "ooms_total", m->ooms_total);
}

static void emit_bins(fsc__js_t *js, const fsc__model_t *m)
{
    fsc__js_arr(js, "bins");
    for (size_t i = 0; i < m->nbins; i++) {
        const fsc__vbin_t *b = &m->bins[i];
        fsc__js_obj(js, NULL);
        fsc__js_int(js, "bin", b->bin);
        fsc__js_int(js, "lo", b->lo);
        fsc__js_int(js, "hi", b->hi);
        fsc__js_int(js, "requests", b->requests);
        fsc__js_int(js, "requested", b->requested);
        fsc__js_int(js, "allocated", b->allocated);
        fsc__js_int(js, "waste", b->waste);
        fsc__js_int(js, "hits", b->hits);
        fsc__js_int(js, "misses", b->misses);
        fsc__js_int(js, "splits", b->splits);
        fsc__js_int(js, "merges", b->merges);
        fsc__js_int(js, "peak_blocks", b->peak_blocks);
        fsc__js_int(js, "peak_bytes", b->peak_bytes);
        fsc__js_int(js, "live_at_peak", b->live_bytes_at_peak);
        fsc__js_int(js, "free_at_peak", b->free_bytes_at_peak);
        fsc__js_end(js, '}');
    }
    fsc__js_end(js, ']');
}

static void emit_summary_numbers(fsc__js_t *js, const fsc__model_t *m)
{
    static const char *const k_keys[] = {
        "peak_allocated_bytes", "peak_reserved_bytes", "peak_allocated_time_ns", "peak_allocated_seq",
        "peak_reserved_time_ns", "utilization", "leaked_bytes", "leaked_blocks", "num_ooms",
        "events", "duration_ns"};
    fsc__js_obj(js, "summary");
    for (size_t i = 0; i < sizeof k_keys / sizeof k_keys[0]; i++) {
        const fsc__vkv_t *v = fsc__model_sum(m, k_keys[i]);
        if (v == NULL || v->text != NULL)
            continue;
        if (v->is_int)
            fsc__js_int(js, k_keys[i], v->i);
        else
            fsc__js_num(js, k_keys[i], v->num);
    }
    fsc__js_end(js, '}');
}

/* What the recorder left out of the trace (meta recorder.skipped*), when
 * anything: the count and the words the summary table shows. */
static void emit_recorder_skipped(fsc__js_t *js, const fsc__model_t *m)
{
    int64_t n = fsc__model_meta_i(m, "recorder.skipped", 0);
    if (n <= 0)
        return;
    char buf[2048];
    fsc__js_obj(js, "recorder_skipped");
    fsc__js_int(js, "total", n);
    fsc__js_str(js, "text", fsc__model_meta_s(m, "recorder.skipped_text", buf, sizeof buf), 0);
    fsc__js_str(js, "first", fsc__model_meta_s(m, "recorder.skipped_first", buf, sizeof buf), 0);
    fsc__js_end(js, '}');
}

/* The call sites of the page's tags: "sites" holds each label once,
 * "tag_site" and "tag_mine" index it per entry of "tags" (the allocating
 * line; the first frame in the program's own code), "mine_found" says per
 * site whether it is one of the program's frames. Live bytes summed by
 * these indices are what report prints "by line of code". */
typedef struct site_ix {
    const char *label;
    long ix;
    UT_hash_handle hh;
} site_ix_t;

static long site_index(site_ix_t **map, site_ix_t *pool, long *n, const char *label)
{
    site_ix_t *e;
    HASH_FIND_STR(*map, label, e);
    if (e != NULL)
        return e->ix;
    e = &pool[*n];
    e->label = label;
    e->ix = (*n)++;
    HASH_ADD_KEYPTR(hh, *map, e->label, strlen(e->label), e);
    return e->ix;
}

static void emit_sites(fsc__js_t *js, const fsc__model_t *m, const fsc__vtagmap_t *tm,
                       fsc__sb_t *sb)
{
    site_ix_t *pool = calloc(2 * tm->n + 1, sizeof *pool), *map = NULL;
    long *ls = malloc((tm->n + 1) * sizeof *ls), *lm = malloc((tm->n + 1) * sizeof *lm), n = 0;
    if (pool == NULL || ls == NULL || lm == NULL) {
        sb->failed = 1;
        goto out;
    }
    for (size_t i = 0; i < tm->n; i++) {
        const fsc__vtag_t *t = &m->tags[tm->order[i]];
        /* -1: the site is the tag's path (plain tags), already in "tags" */
        ls[i] = t->site_is_path ? -1 : site_index(&map, pool, &n, t->site ? t->site : "");
        lm[i] = t->site_is_path && !t->mine_found ? -1
                                                  : site_index(&map, pool, &n, t->mine ? t->mine : "");
    }
    fsc__js_arr(js, "sites");
    for (long k = 0; k < n; k++)
        fsc__js_str(js, NULL, pool[k].label, 0);
    fsc__js_end(js, ']');
    fsc__js_arr(js, "tag_site");
    for (size_t i = 0; i < tm->n; i++)
        fsc__js_int(js, NULL, ls[i]);
    fsc__js_end(js, ']');
    fsc__js_arr(js, "tag_mine");
    for (size_t i = 0; i < tm->n; i++)
        fsc__js_int(js, NULL, lm[i]);
    fsc__js_end(js, ']');
    /* per site: 1 when some tag reaches it as a frame of the program's code */
    fsc__js_arr(js, "site_mine");
    {
        char *flag = calloc((size_t)n + 1, 1);
        if (flag == NULL) {
            sb->failed = 1;
            goto out;
        }
        for (size_t i = 0; i < tm->n; i++)
            if (m->tags[tm->order[i]].mine_found && lm[i] >= 0)
                flag[lm[i]] = 1;
        for (long k = 0; k < n; k++)
            fsc__js_int(js, NULL, flag[k]);
        free(flag);
    }
    fsc__js_end(js, ']');
out:
    HASH_CLEAR(hh, map);
    free(pool);
    free(ls);
    free(lm);
}

void fsc__emit_json(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps)
{
    fsc__vtagmap_t tm = {m, NULL, NULL, 0};
    long *layout_of_oom = malloc((m->nooms ? m->nooms : 1) * sizeof *layout_of_oom);
    if (m->ntags > 0) {
        tm.index = malloc(m->ntags * sizeof *tm.index);
        tm.order = malloc(m->ntags * sizeof *tm.order);
    }
    if (layout_of_oom == NULL || (m->ntags > 0 && (tm.index == NULL || tm.order == NULL))) {
        sb->failed = 1;
        goto out;
    }
    for (size_t i = 0; i < m->ntags; i++)
        tm.index[i] = -1;
    for (size_t i = 0; i < m->nooms; i++)
        layout_of_oom[i] = -1;

    fsc__js_t js;
    fsc__js_init(&js, sb);
    fsc__js_obj(&js, NULL);
    fsc__js_int(&js, "format", 1);
    emit_summary_numbers(&js, m);
    emit_recorder_skipped(&js, m);
    /* what is still live at the end, split at the first step (model.c) */
    fsc__js_obj(&js, "end_split");
    fsc__js_int(&js, "boundary", m->end.boundary);
    fsc__js_str(&js, "why", m->step_why, 0);
    fsc__js_int(&js, "persistent_bytes", m->end.persistent_bytes);
    fsc__js_int(&js, "persistent_blocks", m->end.persistent_blocks);
    fsc__js_int(&js, "growth_bytes", m->end.growth_bytes);
    fsc__js_int(&js, "growth_blocks", m->end.growth_blocks);
    fsc__js_int(&js, "recording_ends_at_oom", fsc__model_meta_i(m, "run_complete", -1) == 0);
    fsc__js_end(&js, '}');
    /* imported snapshots: which events are the replay's own, ascending, as
     * differences, so the page names every other event's device_traces entry */
    if (m->trace_ok) {
        fsc__js_obj(&js, "trace_index");
        fsc__js_int(&js, "device", m->trace_device);
        fsc__js_arr(&js, "derived");
        for (size_t i = 0; i < m->ntrace_derived; i++)
            fsc__js_int(&js, NULL, m->trace_derived[i] - (i ? m->trace_derived[i - 1] : 0));
        fsc__js_end(&js, ']');
        fsc__js_end(&js, '}');
    }
    emit_timeline(&js, m, caps);
    emit_markers(&js, m, caps);
    fsc__emit_layouts(&js, m, caps, &tm, layout_of_oom);
    emit_ooms(&js, m, caps, &tm, layout_of_oom);
    emit_bins(&js, m);
    emit_tagrows(&js, "top_tags", m->top_tags, m->ntop_tags, caps->tag_rows, &tm);
    emit_tagrows(&js, "leaks", m->leaks, m->nleaks, caps->tag_rows, &tm);
    fsc__emit_state_views(&js, m, caps, &tm);
    fsc__emit_tag_ancestors(m, &tm);
    /* Last, so it holds exactly the tags referenced above. */
    fsc__js_arr(&js, "tags");
    for (size_t i = 0; i < tm.n; i++) {
        const char *path = m->tags[tm.order[i]].path;
        /* Keep the end of a long path: the innermost names say the most. */
        const char *tail = fsc__utf8_tail(path, caps->str_chars);
        if (tail > path) {
            size_t n = strlen(tail);
            char *t = malloc(n + 4);
            if (t == NULL) {
                sb->failed = 1;
                break;
            }
            memcpy(t, "\xe2\x80\xa6", 3);
            memcpy(t + 3, tail, n + 1);
            fsc__js_str(&js, NULL, t, 0);
            free(t);
        } else {
            fsc__js_str(&js, NULL, path, 0);
        }
    }
    fsc__js_end(&js, ']');
    emit_sites(&js, m, &tm, sb);
    fsc__emit_tag_tree(&js, m, caps, &tm);
    fsc__js_end(&js, '}');
out:
    free(layout_of_oom);
    free(tm.index);
    free(tm.order);
}
