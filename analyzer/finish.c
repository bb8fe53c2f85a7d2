/*
 * finish.c — the figures derived once the stream has ended: the state at
 * the allocated peak (from the peak layout), bins, tag statistics and the
 * headline summary, handed to the store as rows (finish.h).
 */
#include <stdlib.h>
#include <string.h>

#include "finish.h"

int fsc__peak_facts(const fsc__replay_t *a, fsc__peak_t *p)
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
            int k = fsc_metric_bin(m->size);
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

void fsc__peak_free(fsc__peak_t *p)
{
    free(p->tag_blocks);
    free(p->tag_bytes);
    p->tag_blocks = p->tag_bytes = NULL;
}

void fsc__bin_rows(const fsc__replay_t *a, const fsc__peak_t *p, fsc__binrow_t *rows, size_t *n)
{
    int top = a->max_bin;
    for (int k = 0; k < FSC__NBINS; k++)
        if (p->bin_free_blocks[k] && k > top)
            top = k;
    *n = 0;
    for (int k = 0; k <= top; k++) {
        const fsc__bin_t *b = &a->bins[k];
        fsc__binrow_t *r = &rows[(*n)++];
        r->bin = k;
        r->lo = (uint64_t)512 << k;
        r->hi = (uint64_t)512 << (k + 1); /* k < 48: fits */
        r->requests = b->requests;
        r->requested_bytes = b->requested_bytes;
        r->allocated_bytes = b->allocated_bytes;
        r->waste = b->allocated_bytes - b->requested_bytes;
        r->hits = b->hits;
        r->misses = b->misses;
        r->hit_rate = fsc_metric_ratio(b->hits, b->requests);
        r->splits = b->splits;
        r->merges = b->merges;
        r->peak_live_blocks = b->peak_live_blocks;
        r->peak_live_bytes = b->peak_live_bytes;
        r->live_at_peak_blocks = p->bin_live_blocks[k];
        r->live_at_peak_bytes = p->bin_live_bytes[k];
        r->free_at_peak_blocks = p->bin_free_blocks[k];
        r->free_at_peak_bytes = p->bin_free_bytes[k];
    }
}

int fsc__tagstat_row(const fsc__replay_t *a, const fsc__peak_t *p, size_t t, fsc__tagstat_t *r)
{
    const fsc__tag_t *g = &a->tags[t];
    if (g->allocs == 0)
        return 0;
    r->tag = t;
    r->allocs = g->allocs;
    r->alloc_bytes = g->alloc_bytes;
    r->peak_blocks = p->tag_blocks[t];
    r->peak_bytes = p->tag_bytes[t];
    r->live_blocks = g->live_blocks;
    r->live_bytes = g->live_bytes;
    return 1;
}

static double ext_frag(uint64_t largest, uint64_t free_bytes)
{
    return fsc_metric_external_frag(largest, free_bytes);
}

#define SUM(k, v, real, u)                                                          \
    do {                                                                            \
        rows[*n].key = (k);                                                         \
        rows[*n].value = (v);                                                       \
        rows[*n].is_real = (real);                                                  \
        rows[*n].unit = (u);                                                        \
        (*n)++;                                                                     \
    } while (0)
#define SUMI(k, v, u) SUM((k), (double)(v), 0, (u))
#define SUMR(k, v) SUM((k), (v), 1, "ratio")

void fsc__summary_rows(const fsc__replay_t *a, const fsc__peak_t *p, const fsc__run_counts_t *c,
                       fsc__sumrow_t *rows, size_t *n, fsc_analysis_summary_t *o)
{
    *n = 0;
    uint64_t pfree = p->free_bytes[0] + p->free_bytes[1];
    uint64_t plargest = p->largest[0] > p->largest[1] ? p->largest[0] : p->largest[1];
    uint64_t ffree = a->heap[0].bytes + a->heap[1].bytes;
    o->events = c->events;
    o->peak_allocated = a->peak_allocated;
    o->peak_allocated_seq = a->peak_allocated_seq;
    o->peak_reserved = a->peak_reserved;
    o->peak_reserved_seq = a->peak_reserved_seq;
    o->peak_active = a->peak_active;
    o->peak_requested = a->peak_requested;
    o->final_allocated = a->allocated;
    o->final_reserved = a->reserved;
    o->internal_frag_at_peak = p->internal;
    o->internal_frag_ratio_at_peak = fsc_metric_ratio(p->internal, a->peak_allocated);
    o->external_frag_at_peak = ext_frag(plargest, pfree);
    o->utilization = fsc_metric_ratio(a->peak_allocated, a->peak_reserved);
    o->segments_created = a->segments_created;
    o->num_ooms = c->num_ooms;
    o->first_oom_cause = c->first_oom_cause;
    o->warnings = c->warnings;
    o->leaked_blocks = c->leaked_blocks;
    o->leaked_bytes = c->leaked_bytes;

    SUMI("events", c->events, "count");
    SUMI("duration_ns", c->events ? c->max_time - c->first_time : 0, "ns");
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
    SUMI("private_pools", a->nprivate, "count");
    SUMI("private_pool_peak_reserved_bytes", a->peak_private_reserved, "bytes");
    SUMI("private_pool_final_reserved_bytes", a->private_reserved, "bytes");
    SUMI("segment_maps", c->type_count[FSC_EV_SEGMENT_MAP], "count");
    SUMI("segment_unmaps", c->type_count[FSC_EV_SEGMENT_UNMAP], "count");
    SUMI("allocs", a->hits + a->misses, "count");
    SUMI("frees", c->type_count[FSC_EV_FREE_REQUESTED], "count");
    SUMI("cache_hits", a->hits, "count");
    SUMI("cache_misses", a->misses, "count");
    SUMR("cache_hit_rate", fsc_metric_ratio(a->hits, a->hits + a->misses));
    SUMI("splits", c->type_count[FSC_EV_SPLIT], "count");
    SUMI("merges", c->type_count[FSC_EV_MERGE], "count");
    SUMI("num_ooms", c->num_ooms, "count");
    SUMI("empty_cache_calls", c->type_count[FSC_EV_EMPTY_CACHE], "count");
    SUMI("gc_passes", c->type_count[FSC_EV_GC], "count");
    SUMI("markers", c->type_count[FSC_EV_MARKER], "count");
    SUMI("leaked_blocks", c->leaked_blocks, "count");
    SUMI("leaked_bytes", c->leaked_bytes, "bytes");

    /* where reserved − allocated sits (frag_classes.c) */
    const fsc__frag_state_t *f = &a->frag;
    const fsc__frag_t *fc = &f->peak_alloc.cls[FSC__FRAG_ALL];
    const fsc__frag_point_t *fr = &f->peak_res;
    uint64_t rr = fr->reserved[FSC__FRAG_ALL], ra = fr->allocated[FSC__FRAG_ALL];
    SUMI("soft_bytes_at_peak", fc->soft, "bytes");
    SUMI("hard_bytes_at_peak", fc->hard, "bytes");
    SUMI("stream_bytes_at_peak", fc->stream, "bytes");
    SUMI("private_pool_bytes_at_peak", fc->private_pool, "bytes");
    SUMI("pending_bytes_at_peak", fc->pending, "bytes");
    SUMI("max_hard_bytes_at_oom", f->max_hard_oom, "bytes");
    SUMI("allocated_at_peak_reserved", ra, "bytes");
    SUMI("reserved_unallocated_at_peak_reserved", rr - ra, "bytes");
    SUMR("frag_ratio_at_peak_reserved", fsc_metric_ratio(rr - ra, rr));
}

