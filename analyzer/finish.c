/*
 * finish.c — the tables derived once the stream has ended: what is still
 * live (blocks, segments, leaks), the figures at the allocated peak (from
 * the peak layout), bins, tag statistics, the headline summary and meta.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ana_internal.h"

/* Figures at the allocated peak, from its layout. */
typedef struct peak_facts {
    uint64_t reserved, internal, free_bytes[2], largest[2];
    uint64_t inactive_blocks, inactive_bytes;
    uint64_t *tag_blocks, *tag_bytes; /* [ntags] */
    uint64_t bin_live_blocks[FSC__NBINS], bin_live_bytes[FSC__NBINS];
    uint64_t bin_free_blocks[FSC__NBINS], bin_free_bytes[FSC__NBINS];
} peak_facts_t;

static double ext_frag(uint64_t largest, uint64_t free_bytes)
{
    return free_bytes ? 1.0 - fsc__ratio(largest, free_bytes) : 0.0;
}

static int peak_facts(fsc_analysis_t *a, peak_facts_t *p)
{
    memset(p, 0, sizeof *p);
    p->tag_blocks = calloc(a->ntags + 1, sizeof *p->tag_blocks);
    p->tag_bytes = calloc(a->ntags + 1, sizeof *p->tag_bytes);
    if (p->tag_blocks == NULL || p->tag_bytes == NULL)
        return FSC_ENOMEM;
    const fsc__imgvec_t *v = &a->peak_layout;
    for (size_t i = 0; i < v->n;) {
        /* Blocks of one segment are contiguous in address order. */
        size_t j = i;
        uint64_t fb = 0, fn = 0;
        while (j < v->n && v->v[j].segment == v->v[i].segment) {
            const fsc__img_t *m = &v->v[j];
            int k = fsc__bin_of(m->size);
            p->reserved += m->size;
            if (m->state == FSC__FREE) {
                p->free_bytes[m->pool] += m->size;
                if (m->size > p->largest[m->pool])
                    p->largest[m->pool] = m->size;
                p->bin_free_blocks[k]++;
                p->bin_free_bytes[k] += m->size;
                fb += m->size;
                fn++;
            } else if (m->state == FSC__ALLOCATED) {
                p->internal += m->size - m->requested;
                p->bin_live_blocks[k]++;
                p->bin_live_bytes[k] += m->size;
                if (m->tag < a->ntags) {
                    p->tag_blocks[m->tag]++;
                    p->tag_bytes[m->tag] += m->size;
                }
            }
            j++;
        }
        if (j - i > 1) {
            p->inactive_blocks += fn;
            p->inactive_bytes += fb;
        }
        i = j;
    }
    return 0;
}

static int put_summary(fsc_analysis_t *a, const char *key, double v, int is_real,
                       const char *unit)
{
    sqlite3_stmt *s = a->st[FSC__ST_SUMMARY];
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    if (is_real)
        sqlite3_bind_double(s, 2, v);
    else
        sqlite3_bind_int64(s, 2, (sqlite3_int64)v);
    sqlite3_bind_text(s, 3, unit, -1, SQLITE_STATIC);
    return fsc__step(a, s, "summary");
}

#define SUMI(k, v, u) if (rc == 0) rc = put_summary(a, (k), (double)(v), 0, (u))
#define SUMR(k, v) if (rc == 0) rc = put_summary(a, (k), (v), 1, "ratio")

static int put_meta(fsc_analysis_t *a, const char *key, const char *text, int64_t ival)
{
    sqlite3_stmt *s = a->st[FSC__ST_META];
    sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
    if (text)
        sqlite3_bind_text(s, 2, text, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_int64(s, 2, ival);
    return fsc__step(a, s, "meta");
}

static int write_meta(fsc_analysis_t *a)
{
    char buf[64];
    int rc = 0;
    const fsc_trace_header_t *h = &a->hdr;
    snprintf(buf, sizeof buf, "%u.%u", h->version_major, h->version_minor);
#define MT(k, t) if (rc == 0) rc = put_meta(a, (k), (t), 0)
#define MI(k, i) if (rc == 0) rc = put_meta(a, (k), NULL, (int64_t)(i))
    MI("schema_version", FSC_DB_SCHEMA_VERSION);
    MT("fragscope_version", FSC_VERSION_STRING);
    MT("producer", a->producer);
    MT("config", a->config);
    MT("backend", a->backend);
    MI("capacity", a->capacity_unknown ? 0 : h->capacity);
    MI("capacity_inferred", a->capacity_unknown);
    MI("device_total", h->device_total);
    MI("clock_origin_ns", h->clock_origin_ns);
    MI("pid", h->pid);
    MI("rank", h->rank);
    MI("trace_flags", h->flags);
    MT("trace_version", buf);
    MT("source_path", a->source_path);
    MT("source_kind", a->source_kind);
    MI("lenient", a->opts.lenient ? 1 : 0);
    MI("warnings", a->warnings);
    MI("events_total", a->seq);
    MI("timeline_bucket_events", a->tl.width);
    for (int t = 1; t < FSC_EV__COUNT; t++) {
        if (a->type_count[t] == 0)
            continue;
        snprintf(buf, sizeof buf, "events.%s", fsc_event_type_name(t));
        MI(buf, a->type_count[t]);
    }
    for (const fsc__kv_t *kv = a->meta; kv != NULL && rc == 0; kv = kv->next)
        rc = put_meta(a, kv->key, kv->text, kv->ival);
#undef MT
#undef MI
    return rc;
}

static int write_live(fsc_analysis_t *a, uint64_t *leaked_blocks, uint64_t *leaked_bytes)
{
    int rc = 0;
    for (size_t i = 0; i < a->nseg && rc == 0; i++) {
        const fsc__seg_t *g = a->seg_sorted[i];
        for (const fsc__blk_t *b = g->head; b != NULL && rc == 0; b = b->next) {
            if (b->state == FSC__FREE)
                continue;
            if (b->state == FSC__ALLOCATED) {
                (*leaked_blocks)++;
                *leaked_bytes += b->size;
            }
            fsc__brow_t row;
            fsc__brow_of(b, &row);
            rc = fsc__db_block_row(a, &row);
        }
        if (rc == 0)
            rc = fsc__db_segment_row(a, g, 0, 0, 0);
    }
    return rc;
}

static int write_bins(fsc_analysis_t *a, const peak_facts_t *p)
{
    sqlite3_stmt *s = a->st[FSC__ST_BIN];
    int top = a->max_bin;
    for (int k = 0; k < FSC__NBINS; k++)
        if (p->bin_free_blocks[k] && k > top)
            top = k;
    for (int k = 0; k <= top; k++) {
        const fsc__bin_t *b = &a->bins[k];
        int c = 1;
        fsc__bind_u64(s, c++, (uint64_t)k);
        fsc__bind_u64(s, c++, (uint64_t)512 << k);
        fsc__bind_u64(s, c++, (uint64_t)512 << (k + 1)); /* k < 48: fits */
        fsc__bind_u64(s, c++, b->requests);
        fsc__bind_u64(s, c++, b->requested_bytes);
        fsc__bind_u64(s, c++, b->allocated_bytes);
        fsc__bind_u64(s, c++, b->allocated_bytes - b->requested_bytes);
        fsc__bind_u64(s, c++, b->hits);
        fsc__bind_u64(s, c++, b->misses);
        sqlite3_bind_double(s, c++, fsc__ratio(b->hits, b->requests));
        fsc__bind_u64(s, c++, b->splits);
        fsc__bind_u64(s, c++, b->merges);
        fsc__bind_u64(s, c++, b->peak_live_blocks);
        fsc__bind_u64(s, c++, b->peak_live_bytes);
        fsc__bind_u64(s, c++, p->bin_live_blocks[k]);
        fsc__bind_u64(s, c++, p->bin_live_bytes[k]);
        fsc__bind_u64(s, c++, p->bin_free_blocks[k]);
        fsc__bind_u64(s, c++, p->bin_free_bytes[k]);
        int rc = fsc__step(a, s, "bins");
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int write_tag_stats(fsc_analysis_t *a, const peak_facts_t *p)
{
    sqlite3_stmt *s = a->st[FSC__ST_TAGSTAT];
    for (size_t t = 0; t < a->ntags; t++) {
        const fsc__tag_t *g = &a->tags[t];
        if (g->allocs == 0)
            continue;
        fsc__bind_u64(s, 1, t);
        fsc__bind_u64(s, 2, g->allocs);
        fsc__bind_u64(s, 3, g->alloc_bytes);
        fsc__bind_u64(s, 4, p->tag_blocks[t]);
        fsc__bind_u64(s, 5, p->tag_bytes[t]);
        fsc__bind_u64(s, 6, g->live_blocks);
        fsc__bind_u64(s, 7, g->live_bytes);
        int rc = fsc__step(a, s, "tag_stats");
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int write_summary(fsc_analysis_t *a, const peak_facts_t *p, fsc_analysis_summary_t *o)
{
    int rc = 0;
    uint64_t pfree = p->free_bytes[0] + p->free_bytes[1];
    uint64_t plargest = p->largest[0] > p->largest[1] ? p->largest[0] : p->largest[1];
    uint64_t ffree = a->heap[0].bytes + a->heap[1].bytes;
    o->events = a->seq;
    o->peak_allocated = a->peak_allocated;
    o->peak_allocated_seq = a->peak_allocated_seq;
    o->peak_reserved = a->peak_reserved;
    o->peak_reserved_seq = a->peak_reserved_seq;
    o->peak_active = a->peak_active;
    o->peak_requested = a->peak_requested;
    o->final_allocated = a->allocated;
    o->final_reserved = a->reserved;
    o->internal_frag_at_peak = p->internal;
    o->internal_frag_ratio_at_peak = fsc__ratio(p->internal, a->peak_allocated);
    o->external_frag_at_peak = ext_frag(plargest, pfree);
    o->utilization = fsc__ratio(a->peak_allocated, a->peak_reserved);
    o->segments_created = a->segments_created;
    o->num_ooms = a->num_ooms;
    o->first_oom_cause = a->first_oom_cause;
    o->warnings = a->warnings;

    SUMI("events", a->seq, "count");
    SUMI("duration_ns", a->seq ? a->max_time - a->first_time : 0, "ns");
    SUMI("peak_allocated_bytes", a->peak_allocated, "bytes");
    SUMI("peak_allocated_seq", a->peak_allocated_seq, "seq");
    SUMI("peak_allocated_time_ns", a->peak_allocated_time, "ns");
    SUMI("peak_reserved_bytes", a->peak_reserved, "bytes");
    SUMI("peak_reserved_seq", a->peak_reserved_seq, "seq");
    SUMI("peak_reserved_time_ns", a->peak_reserved_time, "ns");
    SUMI("peak_active_bytes", a->peak_active, "bytes");
    SUMI("peak_requested_bytes", a->peak_requested, "bytes");
    SUMI("final_allocated_bytes", a->allocated, "bytes");
    SUMI("final_reserved_bytes", a->reserved, "bytes");
    SUMI("final_active_bytes", a->active, "bytes");
    SUMI("final_requested_bytes", a->requested, "bytes");
    SUMR("utilization", o->utilization);
    SUMI("internal_frag_bytes_at_peak", p->internal, "bytes");
    SUMR("internal_frag_ratio_at_peak", o->internal_frag_ratio_at_peak);
    SUMI("peak_internal_frag_bytes", a->peak_internal, "bytes");
    SUMI("free_in_reserved_at_peak", pfree, "bytes");
    SUMI("largest_free_at_peak", plargest, "bytes");
    SUMR("external_frag_at_peak", o->external_frag_at_peak);
    SUMR("free_space_scatter_at_peak", o->external_frag_at_peak); /* its plain name */
    SUMR("external_frag_small_at_peak", ext_frag(p->largest[0], p->free_bytes[0]));
    SUMR("external_frag_large_at_peak", ext_frag(p->largest[1], p->free_bytes[1]));
    SUMI("reserved_unallocated_at_peak",
         p->reserved >= a->peak_allocated ? p->reserved - a->peak_allocated : 0, "bytes");
    SUMI("peak_reserved_unallocated_bytes", a->peak_resunalloc, "bytes");
    SUMI("inactive_split_blocks_at_peak", p->inactive_blocks, "count");
    SUMI("inactive_split_bytes_at_peak", p->inactive_bytes, "bytes");
    SUMI("peak_inactive_split_bytes", a->peak_inactive_split, "bytes");
    SUMR("external_frag_final", ext_frag(fsc__largest_free(a, -1), ffree));
    SUMI("internal_frag_bytes_final", a->internal, "bytes");
    SUMI("segments_created", a->segments_created, "count");
    SUMI("segments_freed", a->segments_freed, "count");
    SUMI("peak_segments", a->peak_segments, "count");
    SUMI("final_segments", a->nseg, "count");
    SUMI("segment_maps", a->type_count[FSC_EV_SEGMENT_MAP], "count");
    SUMI("segment_unmaps", a->type_count[FSC_EV_SEGMENT_UNMAP], "count");
    SUMI("allocs", a->hits + a->misses, "count");
    SUMI("frees", a->type_count[FSC_EV_FREE_REQUESTED], "count");
    SUMI("cache_hits", a->hits, "count");
    SUMI("cache_misses", a->misses, "count");
    SUMR("cache_hit_rate", fsc__ratio(a->hits, a->hits + a->misses));
    SUMI("splits", a->type_count[FSC_EV_SPLIT], "count");
    SUMI("merges", a->type_count[FSC_EV_MERGE], "count");
    SUMI("num_ooms", a->num_ooms, "count");
    SUMI("empty_cache_calls", a->type_count[FSC_EV_EMPTY_CACHE], "count");
    SUMI("gc_passes", a->type_count[FSC_EV_GC], "count");
    SUMI("markers", a->type_count[FSC_EV_MARKER], "count");
    SUMI("leaked_blocks", o->leaked_blocks, "count");
    SUMI("leaked_bytes", o->leaked_bytes, "bytes");
    return rc;
}

int fsc__finish_tables(fsc_analysis_t *a, fsc_analysis_summary_t *sum)
{
    peak_facts_t p;
    fsc__replay_end(a);
    int rc = fsc__db_flush_pending(a);
    if (rc == 0)
        rc = fsc__timeline_write(a);
    if (rc == 0 && a->peak_allocated > 0) {
        if (a->peak_tracking)
            rc = fsc__peak_materialize(a);
    }
    memset(&p, 0, sizeof p);
    if (rc == 0 && peak_facts(a, &p) != 0)
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    if (rc == 0 && a->peak_allocated > 0)
        rc = fsc__layout_write(a, "peak_allocated", a->peak_allocated_seq,
                               a->peak_allocated_time, -1, a->peak_allocated, p.reserved,
                               &a->peak_layout, NULL);
    if (rc == 0)
        rc = write_live(a, &sum->leaked_blocks, &sum->leaked_bytes);
    if (rc == 0)
        rc = write_bins(a, &p);
    if (rc == 0)
        rc = write_tag_stats(a, &p);
    if (rc == 0)
        rc = write_summary(a, &p, sum);
    if (rc == 0)
        rc = fsc__frag_finish(a);
    if (rc == 0)
        rc = write_meta(a);
    free(p.tag_blocks);
    free(p.tag_bytes);
    return rc;
}
