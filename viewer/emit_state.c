/*
 * emit_state.c — the "state", "bands" and "tag_tree" members of the data
 * block (format in docs/viewer.md): the block lifetimes of the exact
 * windows, the band allocations with the summed per-tag bands, and the tag
 * tree the stacks view walks.
 *
 * The lifetimes are written as columns with small numbers (alloc seq as a
 * difference from the previous block, the frees relative to the alloc,
 * offsets and sizes in units of 512 bytes when every one is a multiple), so
 * tens of thousands of blocks fit in about a megabyte. A smaller size level
 * keeps a prefix of the windows (they are in priority order), fewer bands
 * and every second sample.
 */
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "fragscope/frames.h"
#include "state.h"

static int64_t seg_addr(const fsc__vstate_t *s, const fsc__vlife_t *b)
{
    return b->seg >= 0 ? s->segs[b->seg].addr : b->addr;
}

static int cmp_win_lo(const void *x, const void *y)
{
    const fsc__vwin_t *a = *(const fsc__vwin_t *const *)x, *b = *(const fsc__vwin_t *const *)y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static void emit_state_blocks(fsc__js_t *js, const fsc__vstate_t *s, uint64_t keep,
                              fsc__vtagmap_t *tm)
{
    /* Segment indices of the page: the kept segments in creation order. */
    long *segidx = malloc((s->nsegs ? s->nsegs : 1) * sizeof *segidx);
    if (segidx == NULL) {
        js->sb->failed = 1;
        return;
    }
    long nseg = 0;
    for (size_t i = 0; i < s->nsegs; i++)
        segidx[i] = (s->segs[i].mask & keep) ? nseg++ : -1;
    int64_t unit = 512;
    for (size_t i = 0; i < s->nblocks && unit > 1; i++) {
        const fsc__vlife_t *b = &s->blocks[i];
        if (!(b->mask & keep))
            continue;
        if (b->size % 512 != 0 || (b->addr - seg_addr(s, b)) % 512 != 0)
            unit = 1;
    }
    fsc__js_int(js, "unit", unit);

    static const char *const k_seg_cols[] = {"addr", "size", "pool", "stream", "c", "f", "x"};
    fsc__js_obj(js, "segs");
    for (size_t k = 0; k < sizeof k_seg_cols / sizeof *k_seg_cols; k++) {
        fsc__js_arr(js, k_seg_cols[k]);
        for (size_t i = 0; i < s->nsegs; i++) {
            const fsc__vseg_t *g = &s->segs[i];
            if (segidx[i] < 0)
                continue;
            int64_t v = k == 0 ? g->addr : k == 1 ? g->size : k == 2 ? g->pool : k == 3 ? g->stream
                      : k == 4 ? g->created : k == 5 ? g->freed : g->expandable;
            fsc__js_int(js, NULL, v);
        }
        fsc__js_end(js, ']');
    }
    fsc__js_end(js, '}');

    static const char *const k_cols[] = {"a", "r", "c", "s", "o", "z", "w", "g"};
    fsc__js_obj(js, "blocks");
    for (size_t k = 0; k < sizeof k_cols / sizeof *k_cols; k++) {
        fsc__js_arr(js, k_cols[k]);
        int64_t prev = 0;
        for (size_t i = 0; i < s->nblocks; i++) {
            const fsc__vlife_t *b = &s->blocks[i];
            if (!(b->mask & keep))
                continue;
            int64_t v;
            switch (k) {
            case 0: v = b->a - prev; prev = b->a; break;
            case 1: v = b->r >= 0 ? b->r - b->a : -1; break;
            case 2: v = b->c >= 0 ? b->c - b->a : -1; break;
            case 3: v = b->seg >= 0 ? segidx[b->seg] : -1; break;
            case 4: v = (b->addr - seg_addr(s, b)) / unit; break;
            case 5: v = b->size / unit; break;
            case 6: v = b->requested >= 0 ? b->size - b->requested : 0; break;
            default: v = fsc__vtagmap_index(tm, b->tag); break;
            }
            fsc__js_int(js, NULL, v);
        }
        fsc__js_end(js, ']');
    }
    fsc__js_end(js, '}');
    free(segidx);
}

static void emit_state(fsc__js_t *js, const fsc__vstate_t *s, const fsc__vcaps_t *caps,
                       fsc__vtagmap_t *tm)
{
    fsc__js_obj(js, "state");
    fsc__js_int(js, "events", s->events);
    fsc__js_int(js, "blocks_total", s->blocks_total);
    size_t nwin = s->nwin >> caps->level;
    if (nwin == 0 && s->nwin > 0)
        nwin = 1;
    /* A run that fits whole is dropped before the rest shrinks too far. */
    int omit = s->nwin == 0 || caps->level >= 5 || (s->exact_all && caps->level >= 3);
    fsc__js_bool(js, "exact_all", s->exact_all && !omit);
    fsc__js_bool(js, "omitted", omit && s->nwin > 0);
    fsc__js_bool(js, "segs_truncated", s->segs_truncated);
    if (omit)
        nwin = 0;
    uint64_t keep = nwin >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << nwin) - 1);
    const fsc__vwin_t *order[FSC__VS_MAX_WINDOWS];
    for (size_t i = 0; i < nwin; i++)
        order[i] = &s->win[i];
    qsort(order, nwin, sizeof *order, cmp_win_lo);
    fsc__js_arr(js, "windows");
    for (size_t i = 0; i < nwin; i++) {
        fsc__js_arr(js, NULL);
        fsc__js_int(js, NULL, order[i]->lo);
        fsc__js_int(js, NULL, order[i]->hi);
        fsc__js_int(js, NULL, order[i]->center);
        fsc__js_str(js, NULL, order[i]->why, 8);
        fsc__js_end(js, ']');
    }
    fsc__js_end(js, ']');
    emit_state_blocks(js, s, omit ? 0 : keep, tm);
    fsc__js_end(js, '}');
}

static double score(const fsc__vlife_t *b, int64_t events)
{
    return (double)b->size * (double)((b->c >= 0 ? b->c : events) - b->a);
}

static const fsc__vlife_t *g_top;
static int64_t g_events;
static int cmp_score(const void *x, const void *y)
{
    double a = score(&g_top[*(const size_t *)x], g_events);
    double b = score(&g_top[*(const size_t *)y], g_events);
    if (a != b)
        return a > b ? -1 : 1;
    return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

static void emit_bands(fsc__js_t *js, const fsc__vstate_t *s, const fsc__vcaps_t *caps,
                       fsc__vtagmap_t *tm)
{
    size_t want = s->want_top >> caps->level;
    size_t n = s->ntop < want ? s->ntop : want;
    /* The n largest by size x lifetime, written in alloc order. */
    size_t *pick = malloc((s->ntop ? s->ntop : 1) * sizeof *pick);
    char *in = calloc(s->ntop ? s->ntop : 1, 1);
    if (pick == NULL || in == NULL) {
        free(pick);
        free(in);
        js->sb->failed = 1;
        return;
    }
    for (size_t i = 0; i < s->ntop; i++)
        pick[i] = i;
    g_top = s->top;
    g_events = s->events;
    qsort(pick, s->ntop, sizeof *pick, cmp_score);
    for (size_t i = 0; i < n; i++)
        in[pick[i]] = 1;
    free(pick);

    fsc__js_obj(js, "bands");
    fsc__js_int(js, "events", s->events);
    fsc__js_int(js, "allocations", s->blocks_total);
    fsc__js_int(js, "asked", (int64_t)s->want_top);
    static const char *const k_cols[] = {"a", "r", "c", "ta", "tr", "tc", "addr", "size",
                                         "req", "tag", "stream", "pool"};
    for (size_t k = 0; k < sizeof k_cols / sizeof *k_cols; k++) {
        fsc__js_arr(js, k_cols[k]);
        for (size_t i = 0; i < s->ntop; i++) {
            const fsc__vlife_t *b = &s->top[i];
            if (!in[i])
                continue;
            int64_t v = k == 0 ? b->a : k == 1 ? b->r : k == 2 ? b->c : k == 3 ? b->ta
                      : k == 4 ? b->tr : k == 5 ? b->tc : k == 6 ? b->addr : k == 7 ? b->size
                      : k == 8 ? b->requested : k == 10 ? b->stream : k == 11 ? b->pool : 0;
            if (k == 9)
                v = fsc__vtagmap_index(tm, b->tag);
            fsc__js_int(js, NULL, v);
        }
        fsc__js_end(js, ']');
    }
    free(in);
    size_t step = (size_t)1 << (caps->level < 4 ? caps->level : 4);
    fsc__js_arr(js, "samples");
    for (size_t j = 0; j < s->nsamples; j += step)
        fsc__js_int(js, NULL, s->sample_seq[j]);
    fsc__js_end(js, ']');
    fsc__js_arr(js, "agg");
    for (size_t k = 0; k < s->nagg; k++) {
        fsc__js_obj(js, NULL);
        fsc__js_int(js, "tag", s->agg_tag[k] == -2 ? -2 : fsc__vtagmap_index(tm, s->agg_tag[k]));
        fsc__js_arr(js, "v");
        /* Each kept sample is the largest of those it stands for. */
        for (size_t j = 0; j < s->nsamples; j += step) {
            int64_t mx = 0;
            for (size_t q = j; q < j + step && q < s->nsamples; q++)
                if (s->agg[k * s->nsamples + q] > mx)
                    mx = s->agg[k * s->nsamples + q];
            fsc__js_int(js, NULL, mx);
        }
        fsc__js_end(js, ']');
        fsc__js_end(js, '}');
    }
    fsc__js_end(js, ']');
    fsc__js_end(js, '}');
}

void fsc__emit_state_views(fsc__js_t *js, const fsc__model_t *m, const fsc__vcaps_t *caps,
                           fsc__vtagmap_t *tm)
{
    const fsc__vstate_t *s = m->state;
    if (s == NULL || s->events <= 0)
        return;
    emit_state(js, s, caps, tm);
    emit_bands(js, s, caps, tm);
}

/* Give every ancestor of a tag in the page's table a place in it too. */
void fsc__emit_tag_ancestors(const fsc__model_t *m, fsc__vtagmap_t *tm)
{
    const fsc__vstate_t *s = m->state;
    if (s == NULL || s->ntree == 0)
        return;
    for (size_t i = 0; i < tm->n; i++) {
        long k = fsc__vstate_tree_find(s, m->tags[tm->order[i]].id);
        if (k >= 0 && s->tree[k].parent >= 0)
            fsc__vtagmap_index(tm, s->tree[k].parent);
    }
}

/* Parent (page index, -1 for none) and name of every tag in the page's
 * table; written after the table is complete, so nothing is added here. */
void fsc__emit_tag_tree(fsc__js_t *js, const fsc__model_t *m, const fsc__vcaps_t *caps,
                        const fsc__vtagmap_t *tm)
{
    const fsc__vstate_t *s = m->state;
    fsc__js_obj(js, "tag_tree");
    fsc__js_arr(js, "parent");
    for (size_t i = 0; i < tm->n; i++) {
        int64_t id = m->tags[tm->order[i]].id;
        long page = -1;
        for (size_t lo = 0, hi = s ? s->ntree : 0; lo < hi;) {
            size_t mid = (lo + hi) / 2;
            if (s->tree[mid].id < id) {
                lo = mid + 1;
            } else if (s->tree[mid].id > id) {
                hi = mid;
            } else {
                int64_t p = s->tree[mid].parent;
                /* The parent's page index, if the page has it. */
                size_t a = 0, b = m->ntags;
                while (a < b) {
                    size_t c = (a + b) / 2;
                    if (m->tags[c].id < p)
                        a = c + 1;
                    else
                        b = c;
                }
                if (p >= 0 && a < m->ntags && m->tags[a].id == p)
                    page = tm->index[a];
                break;
            }
        }
        fsc__js_int(js, NULL, page);
    }
    fsc__js_end(js, ']');
    fsc__js_arr(js, "name");
    for (size_t i = 0; i < tm->n; i++) {
        int64_t id = m->tags[tm->order[i]].id;
        const char *name = NULL;
        for (size_t lo = 0, hi = s ? s->ntree : 0; lo < hi;) {
            size_t mid = (lo + hi) / 2;
            if (s->tree[mid].id < id)
                lo = mid + 1;
            else if (s->tree[mid].id > id)
                hi = mid;
            else {
                name = s->tree[mid].name;
                break;
            }
        }
        if (name == NULL) {
            fsc__js_null(js, NULL);
            continue;
        }
        const char *tail = fsc__utf8_tail(name, caps->str_chars);
        fsc__js_str(js, NULL, tail, 0);
    }
    fsc__js_end(js, ']');
    /* What each node is worth when naming a stack (fsc_frame_class: 0
     * noise, 1 C++, 2 Python or a plain tag), so the icicles can leave out
     * the frames report leaves out. */
    fsc__js_arr(js, "kind");
    for (size_t i = 0; i < tm->n; i++) {
        long k = s ? fsc__vstate_tree_find(s, m->tags[tm->order[i]].id) : -1;
        const char *name = k >= 0 ? s->tree[k].name : NULL;
        fsc_frame_t f;
        int is_frame = name ? fsc_frame_parse(name, strlen(name), &f) : 0;
        fsc__js_int(js, NULL, name ? fsc_frame_class(&f, is_frame) : FSC_FRAME_USER);
    }
    fsc__js_end(js, ']');
    fsc__js_end(js, '}');
}
