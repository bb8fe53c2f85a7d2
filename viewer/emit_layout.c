/*
 * emit_layout.c — the block layouts of the data block, within a block budget.
 *
 * A layout over its share of the budget is reduced in three steps, each only
 * if the previous one was not enough: neighbouring blocks of the same state
 * and tag are merged into runs; then neighbouring blocks of the same state;
 * then the smallest segments are left out (their count and bytes are
 * reported so the page can say so). A merged run shows its largest block's
 * tag and age.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"

typedef struct run {
    int64_t off, size, requested, largest, tag, age_events, age_ns, count;
    int state;
} run_t;

typedef struct seg {
    int64_t addr, size;
    int pool;
    size_t first, n; /* runs[first .. first+n) */
    int keep;
} seg_t;

/* Merge neighbouring runs of a segment that have the same state (and the
 * same tag when by_tag). The merged run shows its largest block's tag/age. */
static size_t merge_runs(run_t *r, size_t n, int by_tag)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out > 0) {
            run_t *p = &r[out - 1];
            if (p->state == r[i].state && (!by_tag || p->tag == r[i].tag) &&
                p->off + p->size == r[i].off) {
                if (r[i].largest > p->largest) {
                    p->largest = r[i].largest;
                    p->tag = r[i].tag;
                    p->age_events = r[i].age_events;
                    p->age_ns = r[i].age_ns;
                }
                p->size += r[i].size;
                p->requested += r[i].requested;
                p->count += r[i].count;
                continue;
            }
        }
        r[out++] = r[i];
    }
    return out;
}

/* Compact each segment's runs in place; returns the new total. */
static size_t merge_all(run_t *runs, seg_t *segs, size_t nsegs, int by_tag)
{
    size_t total = 0, w = 0;
    for (size_t s = 0; s < nsegs; s++) {
        size_t n = merge_runs(runs + segs[s].first, segs[s].n, by_tag);
        memmove(runs + w, runs + segs[s].first, n * sizeof *runs);
        segs[s].first = w;
        segs[s].n = n;
        w += n;
        total += n;
    }
    return total;
}

static int cmp_seg_size_desc(const void *a, const void *b)
{
    const seg_t *x = *(const seg_t *const *)a, *y = *(const seg_t *const *)b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

static void layout_name(const fsc__vlayout_t *l, char *buf, size_t cap)
{
    if (l->oom_id >= 0)
        snprintf(buf, cap, "at OOM #%lld", (long long)l->oom_id); /* ooms.id */
    else if (strcmp(l->kind, "peak_allocated") == 0)
        snprintf(buf, cap, "at the allocated peak");
    else
        snprintf(buf, cap, "snapshot %lld", (long long)l->id);
}

/* One layout on its way into the page. */
typedef struct work {
    run_t *runs;
    seg_t *segs;
    size_t nsegs, total; /* segments, runs over all of them */
    int merged;
    size_t dropped;      /* segments left out */
    int64_t dropped_bytes;
} work_t;

static void work_free(work_t *w)
{
    free(w->runs);
    free(w->segs);
}

/* One run per block, segments in address order (the model's order). */
static int work_build(work_t *w, const fsc__vlayout_t *l)
{
    size_t n = l->nblocks;
    memset(w, 0, sizeof *w);
    w->runs = malloc((n ? n : 1) * sizeof *w->runs);
    w->segs = malloc((n ? n : 1) * sizeof *w->segs);
    if (w->runs == NULL || w->segs == NULL)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const fsc__vblock_t *b = &l->blocks[i];
        int64_t base = l->block_seg[i];
        if (w->nsegs == 0 || w->segs[w->nsegs - 1].addr != base)
            w->segs[w->nsegs++] = (seg_t){base, 0, b->pool, i, 0, 1};
        seg_t *s = &w->segs[w->nsegs - 1];
        int free_ = b->state == FSC__BLK_FREE;
        w->runs[i] = (run_t){b->addr - base, b->size, free_ || b->requested < 0 ? 0 : b->requested,
                             b->size, free_ ? -1 : b->tag, b->age_events, b->age_ns, 1, b->state};
        s->n++;
        /* A segment's extent is where its last block ends. */
        if (b->addr - base + b->size > s->size)
            s->size = b->addr - base + b->size;
    }
    w->total = n;
    return 0;
}

/* Bring the run count to at most cap (see the top of the file). */
static int work_reduce(work_t *w, size_t cap)
{
    if (w->total > cap) {
        w->total = merge_all(w->runs, w->segs, w->nsegs, 1);
        w->merged = 1;
    }
    if (w->total > cap)
        w->total = merge_all(w->runs, w->segs, w->nsegs, 0);
    if (w->total <= cap)
        return 0;
    seg_t **order = malloc(w->nsegs * sizeof *order);
    if (order == NULL)
        return -1;
    for (size_t s = 0; s < w->nsegs; s++)
        order[s] = &w->segs[s];
    qsort(order, w->nsegs, sizeof *order, cmp_seg_size_desc);
    size_t used = 0;
    for (size_t s = 0; s < w->nsegs; s++) {
        order[s]->keep = used + order[s]->n <= cap;
        if (order[s]->keep) {
            used += order[s]->n;
        } else {
            w->dropped++;
            w->dropped_bytes += order[s]->size;
        }
    }
    w->total = used;
    free(order);
    return 0;
}

static void write_segment(fsc__js_t *js, const work_t *w, const seg_t *s, fsc__vtagmap_t *tm)
{
    fsc__js_obj(js, NULL);
    fsc__js_int(js, "addr", s->addr);
    fsc__js_int(js, "size", s->size);
    fsc__js_int(js, "pool", s->pool);
    fsc__js_arr(js, "blocks");
    for (size_t i = s->first; i < s->first + s->n; i++) {
        const run_t *r = &w->runs[i];
        int free_ = r->state == FSC__BLK_FREE;
        /* [offset, size, requested, state, tag, age_events, age_ns(, count)],
         * written directly: these rows are most of the page. */
        fsc__sb_printf(js->sb, "%s[%lld,%lld,%lld,%d,%ld,%lld,%lld", i > s->first ? "," : "",
                       (long long)r->off, (long long)r->size, (long long)r->requested, r->state,
                       free_ ? -1L : fsc__vtagmap_index(tm, r->tag),
                       (long long)(free_ ? 0 : r->age_events), (long long)(free_ ? 0 : r->age_ns));
        if (r->count > 1)
            fsc__sb_printf(js->sb, ",%lld", (long long)r->count);
        fsc__sb_puts(js->sb, "]");
    }
    js->has_item[js->depth] = s->n > 0;
    fsc__js_end(js, ']');
    fsc__js_end(js, '}');
}

static void emit_layout(fsc__js_t *js, const fsc__vlayout_t *l, size_t cap, fsc__vtagmap_t *tm)
{
    work_t w;
    if (work_build(&w, l) != 0 || work_reduce(&w, cap) != 0) {
        js->sb->failed = 1;
        work_free(&w);
        return;
    }
    char name[64];
    layout_name(l, name, sizeof name);
    fsc__js_obj(js, NULL);
    fsc__js_str(js, "name", name, 0);
    fsc__js_str(js, "kind", l->oom_id >= 0 ? "oom" : "peak", 0);
    fsc__js_int(js, "oom", l->oom_id);
    fsc__js_int(js, "t", l->t);
    fsc__js_int(js, "seq", l->seq);
    fsc__js_int(js, "allocated", l->allocated);
    fsc__js_int(js, "reserved", l->reserved);
    fsc__js_int(js, "segments_dropped", (int64_t)w.dropped);
    fsc__js_int(js, "bytes_dropped", w.dropped_bytes);
    fsc__js_bool(js, "blocks_merged", w.merged);
    fsc__js_bool(js, "truncated", l->truncated);
    fsc__js_arr(js, "segments");
    for (size_t s = 0; s < w.nsegs; s++)
        if (w.segs[s].keep)
            write_segment(js, &w, &w.segs[s], tm);
    fsc__js_end(js, ']');
    fsc__js_end(js, '}');
    work_free(&w);
}

void fsc__emit_layouts(fsc__js_t *js, const fsc__model_t *m, const fsc__vcaps_t *caps,
                       fsc__vtagmap_t *tm, long *layout_of_oom)
{
    size_t n = m->nlayouts < caps->layouts ? m->nlayouts : caps->layouts;
    fsc__js_arr(js, "layouts");
    for (size_t i = 0; i < n; i++) {
        size_t cap = caps->layout_blocks / (n ? n : 1);
        emit_layout(js, &m->layouts[i], cap > 0 ? cap : 1, tm);
        for (size_t k = 0; k < m->nooms; k++)
            if (m->ooms[k].id == m->layouts[i].oom_id && layout_of_oom[k] < 0)
                layout_of_oom[k] = (long)i;
    }
    fsc__js_end(js, ']');
}
