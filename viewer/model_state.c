/*
 * model_state.c — load what the state-at-any-event view, the active memory
 * timeline and the stacks view need (state.h says what they are), in one
 * pass over the blocks table and one over segments.
 *
 * Memory stays bounded whatever the run: the block lifetimes kept for the
 * state view are capped (when the cap is reached the lowest-priority window
 * is given up and its blocks dropped), the band allocations are a heap of
 * the largest ones, and the summed bands are per-tag arrays of a fixed
 * number of samples for a fixed number of tags.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_load.h"
#include "state.h"

typedef struct ctx {
    fsc__loader_t *L;
    fsc__vstate_t *s;
    size_t cap_blocks, cap_segs_alloc, cap_blocks_alloc;
    int64_t maxlive;
    /* segments sorted by (addr, created): indices into s->segs */
    size_t *seg_order;
    /* the top-band heap, by score (smallest first) */
    fsc__vlife_t *heap;
    double *heap_score;
    size_t nheap;
    /* summed bands: one diff array of nsamples+1 per slot, slot FSC__VS_AGG_SLOTS = other */
    int64_t *slot_tag;
    size_t nslots;
    int64_t *diff;
} ctx_t;

static int64_t nn(int64_t v) { return v == FSC_RUNDB_NULL ? -1 : v; }

/* The windows a lifetime [a, end) meets. */
static uint64_t win_mask(const fsc__vstate_t *s, int64_t a, int64_t end)
{
    uint64_t m = 0;
    for (size_t i = 0; i < s->nwin; i++)
        if (a <= s->win[i].hi && end > s->win[i].lo)
            m |= (uint64_t)1 << i;
    return m;
}

/* ---- windows ---------------------------------------------------------- */

static int timeline_live(void *ud, const fsc_rundb_timeline_t *r)
{
    ctx_t *c = ud;
    if (r->live_blocks != FSC_RUNDB_NULL && r->live_blocks > c->maxlive)
        c->maxlive = r->live_blocks;
    return 0;
}

static void add_window(fsc__vstate_t *s, int64_t center, int64_t width, const char *why)
{
    if (s->nwin >= FSC__VS_MAX_WINDOWS || center < 0 || center >= s->events)
        return;
    for (size_t i = 0; i < s->nwin; i++)
        if (s->win[i].center == center)
            return;
    fsc__vwin_t *w = &s->win[s->nwin++];
    w->center = center;
    w->lo = center - width / 2;
    w->hi = w->lo + width - 1;
    if (w->lo < 0) {
        w->hi -= w->lo;
        w->lo = 0;
    }
    if (w->hi > s->events - 1)
        w->hi = s->events - 1;
    snprintf(w->why, sizeof w->why, "%s", why);
}

static void choose_windows(ctx_t *c, const fsc__model_t *m)
{
    fsc__vstate_t *s = c->s;
    if (s->blocks_total <= FSC__VS_BLOCKS) {
        s->exact_all = 1;
        s->nwin = 1;
        s->win[0].lo = 0;
        s->win[0].hi = s->events - 1;
        s->win[0].center = 0;
        snprintf(s->win[0].why, sizeof s->win[0].why, "run");
        return;
    }
    size_t W = 24;
    int64_t live = c->maxlive > 0 ? c->maxlive : 1;
    if ((int64_t)W * live > FSC__VS_BLOCKS / 2)
        W = (size_t)(FSC__VS_BLOCKS / 2 / live) > 0 ? (size_t)(FSC__VS_BLOCKS / 2 / live) : 1;
    double rate = (double)s->blocks_total / (double)s->events;
    double d = ((double)FSC__VS_BLOCKS - (double)W * (double)live) / ((double)W * rate);
    int64_t width = d < 1 ? 1 : (int64_t)d;
    if (width > s->events)
        width = s->events;
    add_window(s, fsc__model_sum_i(m, "peak_allocated_seq", -1), width, "peak");
    for (size_t i = 0; i < m->nooms && i < 8; i++)
        add_window(s, m->ooms[i].seq, width, "oom");
    /* Evenly spread points in van der Corput order: 1/2, 1/4, 3/4, 1/8 ... */
    for (unsigned j = 1; s->nwin < W && j < 4096; j++) {
        double f = 0, b = 0.5;
        for (unsigned k = j; k; k >>= 1, b /= 2)
            if (k & 1)
                f += b;
        add_window(s, (int64_t)(f * (double)s->events), width, "even");
    }
}

/* ---- segments --------------------------------------------------------- */

static int seg_row(void *ud, const fsc_rundb_segment_t *r)
{
    ctx_t *c = ud;
    fsc__vstate_t *s = c->s;
    if (s->nsegs >= FSC__VS_MAX_SEGS) {
        s->segs_truncated = 1;
        return FSC_RUNDB_STOP;
    }
    int64_t created = nn(r->created_seq), freed = nn(r->freed_seq);
    if (created < 0)
        created = 0;
    uint64_t mask = win_mask(s, created, freed >= 0 ? freed : s->events);
    if (mask == 0)
        return 0;
    if (fsc__ld_grow((void **)&s->segs, &c->cap_segs_alloc, s->nsegs, sizeof *s->segs) != 0)
        return fsc__ld_nomem(c->L);
    fsc__vseg_t *g = &s->segs[s->nsegs++];
    g->addr = nn(r->addr);
    g->size = nn(r->size) > 0 ? r->size : 0;
    g->pool = nn(r->pool);
    g->stream = nn(r->stream);
    g->created = created;
    g->freed = freed;
    g->expandable = r->expandable == 1;
    g->mask = mask;
    return 0;
}

static const fsc__vseg_t *g_sort_segs;
static int cmp_seg(const void *x, const void *y)
{
    const fsc__vseg_t *a = &g_sort_segs[*(const size_t *)x], *b = &g_sort_segs[*(const size_t *)y];
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a->created < b->created ? -1 : a->created > b->created;
}

/* The segment with base addr that exists at seq: the last one created at or
 * before seq. */
static int64_t find_seg(const ctx_t *c, int64_t addr, int64_t seq)
{
    const fsc__vstate_t *s = c->s;
    size_t lo = 0, hi = s->nsegs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const fsc__vseg_t *g = &s->segs[c->seg_order[mid]];
        if (g->addr < addr || (g->addr == addr && g->created <= seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || s->segs[c->seg_order[lo - 1]].addr != addr)
        return -1;
    return (int64_t)c->seg_order[lo - 1];
}

/* ---- blocks ----------------------------------------------------------- */

/* Give up the lowest-priority window and the blocks only it needed. */
static void drop_last_window(fsc__vstate_t *s)
{
    if (s->nwin <= 1)
        return;
    s->nwin--;
    uint64_t keep = ((uint64_t)1 << s->nwin) - 1;
    size_t n = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        s->blocks[i].mask &= keep;
        if (s->blocks[i].mask)
            s->blocks[n++] = s->blocks[i];
    }
    s->nblocks = n;
}

static void heap_sift_down(ctx_t *c, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < c->nheap && c->heap_score[l] < c->heap_score[m])
            m = l;
        if (r < c->nheap && c->heap_score[r] < c->heap_score[m])
            m = r;
        if (m == i)
            return;
        fsc__vlife_t t = c->heap[i];
        c->heap[i] = c->heap[m];
        c->heap[m] = t;
        double d = c->heap_score[i];
        c->heap_score[i] = c->heap_score[m];
        c->heap_score[m] = d;
        i = m;
    }
}

static void heap_offer(ctx_t *c, const fsc__vlife_t *b, double score)
{
    size_t want = c->s->want_top;
    if (want == 0)
        return;
    if (c->nheap < want) {
        size_t i = c->nheap++;
        c->heap[i] = *b;
        c->heap_score[i] = score;
        while (i > 0 && c->heap_score[(i - 1) / 2] > c->heap_score[i]) {
            size_t p = (i - 1) / 2;
            fsc__vlife_t t = c->heap[i];
            c->heap[i] = c->heap[p];
            c->heap[p] = t;
            double d = c->heap_score[i];
            c->heap_score[i] = c->heap_score[p];
            c->heap_score[p] = d;
            i = p;
        }
    } else if (score > c->heap_score[0]) {
        c->heap[0] = *b;
        c->heap_score[0] = score;
        heap_sift_down(c, 0);
    }
}

static size_t agg_slot(ctx_t *c, int64_t tag)
{
    for (size_t i = 0; i < c->nslots; i++)
        if (c->slot_tag[i] == tag)
            return i;
    if (c->nslots < FSC__VS_AGG_SLOTS) {
        c->slot_tag[c->nslots] = tag;
        return c->nslots++;
    }
    return FSC__VS_AGG_SLOTS; /* other */
}

/* First sample index whose seq is >= v. */
static int64_t sample_lb(const fsc__vstate_t *s, int64_t v)
{
    size_t lo = 0, hi = s->nsamples;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->sample_seq[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int64_t)lo;
}

/* Add (sign 1) or remove (-1) a lifetime [a, end) from its tag's summed band. */
static void agg_add(ctx_t *c, const fsc__vlife_t *b, int64_t sign)
{
    const fsc__vstate_t *s = c->s;
    int64_t end = b->c >= 0 ? b->c : s->events;
    int64_t j0 = sample_lb(s, b->a), j1 = sample_lb(s, end);
    if (j0 >= j1)
        return;
    int64_t *d = c->diff + agg_slot(c, b->tag) * (s->nsamples + 1);
    d[j0] += sign * b->size;
    d[j1] -= sign * b->size;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* Evenly spaced sample events, plus the allocated peak and the OOMs, so the
 * summed bands are exact at those moments. */
static int choose_samples(ctx_t *c, const fsc__model_t *m)
{
    fsc__vstate_t *s = c->s;
    size_t even = (size_t)(s->events < FSC__VS_SAMPLES ? s->events : FSC__VS_SAMPLES);
    s->sample_seq = malloc((even + 1 + 8) * sizeof *s->sample_seq);
    if (s->sample_seq == NULL)
        return fsc__ld_nomem(c->L);
    size_t n = 0;
    for (size_t j = 0; j < even; j++)
        s->sample_seq[n++] = (int64_t)j * s->events / (int64_t)even;
    int64_t peak = fsc__model_sum_i(m, "peak_allocated_seq", -1);
    if (peak >= 0 && peak < s->events)
        s->sample_seq[n++] = peak;
    for (size_t i = 0; i < m->nooms && i < 8; i++)
        if (m->ooms[i].seq >= 0 && m->ooms[i].seq < s->events)
            s->sample_seq[n++] = m->ooms[i].seq;
    qsort(s->sample_seq, n, sizeof *s->sample_seq, cmp_i64);
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        if (k == 0 || s->sample_seq[k - 1] != s->sample_seq[j])
            s->sample_seq[k++] = s->sample_seq[j];
    s->nsamples = k;
    return 0;
}

static int block_row(void *ud, const fsc_rundb_alloc_t *r)
{
    ctx_t *c = ud;
    fsc__vstate_t *s = c->s;
    fsc__vlife_t b;
    b.a = nn(r->alloc_seq);
    if (b.a < 0 || b.a >= s->events)
        return 0;
    b.r = nn(r->free_requested_seq);
    b.c = nn(r->free_completed_seq);
    if (b.c >= 0 && b.c < b.a)
        b.c = b.a;
    if (b.r >= 0 && b.c >= 0 && b.r > b.c)
        b.r = b.c;
    b.ta = nn(r->alloc_time_ns);
    b.tr = nn(r->free_requested_time_ns);
    b.tc = nn(r->free_completed_time_ns);
    b.addr = nn(r->addr);
    b.size = nn(r->size) > 0 ? r->size : 0;
    b.requested = nn(r->requested);
    b.tag = nn(r->tag);
    b.stream = nn(r->stream);
    b.pool = nn(r->pool);
    b.seg = -1;
    int64_t end = b.c >= 0 ? b.c : s->events;
    b.mask = win_mask(s, b.a, end);
    if (b.mask) {
        b.seg = find_seg(c, nn(r->segment), b.a);
        while (s->nblocks >= c->cap_blocks && s->nwin > 1) {
            drop_last_window(s);
            b.mask &= ((uint64_t)1 << s->nwin) - 1;
        }
        if (b.mask && s->nblocks < c->cap_blocks) {
            if (fsc__ld_grow((void **)&s->blocks, &c->cap_blocks_alloc, s->nblocks,
                             sizeof *s->blocks) != 0)
                return fsc__ld_nomem(c->L);
            s->blocks[s->nblocks++] = b;
        }
    }
    heap_offer(c, &b, (double)b.size * (double)(end - b.a));
    agg_add(c, &b, 1);
    return 0;
}

/* ---- tag tree --------------------------------------------------------- */

static int tree_row(void *ud, const fsc_rundb_tag_t *r)
{
    ctx_t *c = ud;
    fsc__vstate_t *s = c->s;
    fsc__vtnode_t *t = &s->tree[s->ntree];
    t->id = r->id;
    t->parent = nn(r->parent);
    int rc = fsc__ld_str(c->L, r->name ? r->name : "", 120, &t->name);
    if (rc != 0)
        return rc;
    s->ntree++;
    return s->ntree >= FSC__VS_MAX_TREE ? FSC_RUNDB_STOP : 0;
}

long fsc__vstate_tree_find(const fsc__vstate_t *s, int64_t id)
{
    size_t lo = 0, hi = s->ntree;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->tree[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->ntree && s->tree[lo].id == id ? (long)lo : -1;
}

/* Note tag and its ancestors for the page's tag table (once each). */
static int note_chain(ctx_t *c, char *used, int64_t tag)
{
    fsc__vstate_t *s = c->s;
    if (s->ntree == 0)
        return tag >= 0 ? fsc__ld_note_tag(c->L, tag) : 0;
    for (int depth = 0; tag >= 0 && depth < 4096; depth++) {
        long i = fsc__vstate_tree_find(s, tag);
        if (i < 0)
            return fsc__ld_note_tag(c->L, tag);
        if (used[i])
            return 0;
        used[i] = 1;
        int rc = fsc__ld_note_tag(c->L, tag);
        if (rc != 0)
            return rc;
        tag = s->tree[i].parent;
    }
    return 0;
}

static int cmp_life_a(const void *x, const void *y)
{
    const fsc__vlife_t *a = x, *b = y;
    return a->a < b->a ? -1 : a->a > b->a;
}

/* ---- entry point ------------------------------------------------------ */

static int load(ctx_t *c, fsc__model_t *m)
{
    fsc__loader_t *L = c->L;
    fsc__vstate_t *s = c->s;
    int rc;
    if ((rc = fsc__ld_read(L, fsc_rundb_meta_int(L->db, "events_total", 0, &s->events))) != 0)
        return rc;
    if (s->events <= 0)
        s->events = fsc__model_sum_i(m, "events", 0);
    if ((rc = fsc__ld_read(L, fsc_rundb_count(L->db, "blocks", &s->blocks_total))) != 0 ||
        (rc = fsc__ld_read(L, fsc_rundb_count(L->db, "segments", &s->segs_total))) != 0)
        return rc;
    if (s->events <= 0 || s->blocks_total <= 0)
        return 0;
    if ((rc = fsc__ld_read(L, fsc_rundb_timeline(L->db, timeline_live, c))) != 0)
        return rc;
    choose_windows(c, m);

    if ((rc = fsc__ld_read(L, fsc_rundb_segments(L->db, seg_row, c))) != 0 || L->failed)
        return rc ? rc : -1;
    c->seg_order = malloc((s->nsegs ? s->nsegs : 1) * sizeof *c->seg_order);
    if (c->seg_order == NULL)
        return fsc__ld_nomem(L);
    for (size_t i = 0; i < s->nsegs; i++)
        c->seg_order[i] = i;
    g_sort_segs = s->segs;
    qsort(c->seg_order, s->nsegs, sizeof *c->seg_order, cmp_seg);

    if ((rc = choose_samples(c, m)) != 0)
        return rc;
    c->heap = malloc((s->want_top ? s->want_top : 1) * sizeof *c->heap);
    c->heap_score = malloc((s->want_top ? s->want_top : 1) * sizeof *c->heap_score);
    c->slot_tag = malloc(FSC__VS_AGG_SLOTS * sizeof *c->slot_tag);
    c->diff = calloc((FSC__VS_AGG_SLOTS + 1) * (s->nsamples + 1), sizeof *c->diff);
    if (c->heap == NULL || c->heap_score == NULL || c->slot_tag == NULL || c->diff == NULL)
        return fsc__ld_nomem(L);
    c->cap_blocks = 3 * FSC__VS_BLOCKS;
    if ((rc = fsc__ld_read(L, fsc_rundb_allocs(L->db, block_row, c))) != 0 || L->failed)
        return rc ? rc : -1;

    /* Segments of windows given up while reading are not needed. */
    uint64_t keep = s->nwin >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << s->nwin) - 1);
    for (size_t i = 0; i < s->nsegs; i++)
        s->segs[i].mask &= keep;

    /* The band allocations, by alloc seq, out of the summed bands. */
    s->top = c->heap;
    s->ntop = c->nheap;
    c->heap = NULL;
    for (size_t i = 0; i < s->ntop; i++)
        agg_add(c, &s->top[i], -1);
    qsort(s->top, s->ntop, sizeof *s->top, cmp_life_a);

    /* Summed bands: prefix sums, then the tags with the most bytes x samples
     * keep a band, the rest are one "other tags" band. */
    size_t S = s->nsamples, nslot = c->nslots + 1;
    double *area = calloc(nslot, sizeof *area);
    if (area == NULL)
        return fsc__ld_nomem(L);
    for (size_t k = 0; k < nslot; k++) {
        size_t slot = k < c->nslots ? k : FSC__VS_AGG_SLOTS;
        int64_t *d = c->diff + slot * (S + 1), run = 0;
        for (size_t j = 0; j < S; j++) {
            run += d[j];
            d[j] = run;
            area[k] += (double)run;
        }
    }
    size_t shown[FSC__VS_AGG_SHOWN], nshown = 0;
    for (size_t r = 0; r < FSC__VS_AGG_SHOWN; r++) {
        size_t best = nslot;
        for (size_t k = 0; k + 1 < nslot; k++)
            if (area[k] > 0 && (best == nslot || area[k] > area[best]))
                best = k;
        if (best == nslot)
            break;
        shown[nshown++] = best;
        area[best] = -1;
    }
    s->nagg = nshown + 1;
    s->agg_tag = malloc(s->nagg * sizeof *s->agg_tag);
    s->agg = calloc(s->nagg * (S ? S : 1), sizeof *s->agg);
    if (s->agg_tag == NULL || s->agg == NULL) {
        free(area);
        return fsc__ld_nomem(L);
    }
    for (size_t k = 0; k < nshown; k++) {
        s->agg_tag[k] = c->slot_tag[shown[k]];
        memcpy(s->agg + k * S, c->diff + shown[k] * (S + 1), S * sizeof *s->agg);
    }
    s->agg_tag[nshown] = -2;
    for (size_t k = 0; k < nslot; k++) {
        if (area[k] < 0)
            continue;
        size_t slot = k < c->nslots ? k : FSC__VS_AGG_SLOTS;
        for (size_t j = 0; j < S; j++)
            s->agg[nshown * S + j] += c->diff[slot * (S + 1) + j];
    }
    free(area);

    /* The tag tree, and every tag the views refer to with its ancestors. */
    int64_t ntags = 0;
    if ((rc = fsc__ld_read(L, fsc_rundb_count(L->db, "tags", &ntags))) != 0)
        return rc;
    if (ntags > 0 && ntags <= FSC__VS_MAX_TREE) {
        s->tree = calloc((size_t)ntags, sizeof *s->tree);
        if (s->tree == NULL)
            return fsc__ld_nomem(L);
        if ((rc = fsc__ld_read(L, fsc_rundb_tags(L->db, tree_row, c))) != 0 || L->failed)
            return rc ? rc : -1;
    }
    char *used = calloc(s->ntree ? s->ntree : 1, 1);
    if (used == NULL)
        return fsc__ld_nomem(L);
    for (size_t i = 0; rc == 0 && i < s->nblocks; i++)
        rc = note_chain(c, used, s->blocks[i].tag);
    for (size_t i = 0; rc == 0 && i < s->ntop; i++)
        rc = note_chain(c, used, s->top[i].tag);
    for (size_t i = 0; rc == 0 && i < nshown; i++)
        rc = note_chain(c, used, s->agg_tag[i]);
    /* The stacks view at the peak and the OOMs walks the layouts' tags up. */
    for (size_t l = 0; rc == 0 && l < m->nlayouts; l++)
        for (size_t i = 0; rc == 0 && i < m->layouts[l].nblocks; i++)
            if (m->layouts[l].blocks[i].tag >= 0)
                rc = note_chain(c, used, m->layouts[l].blocks[i].tag);
    free(used);
    return rc;
}

int fsc__model_load_state(fsc__loader_t *L, fsc__model_t *m, size_t bands)
{
    fsc__vstate_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return fsc__ld_nomem(L);
    m->state = s;
    s->want_top = bands == 0 ? FSC__VS_BANDS_DEFAULT : bands;
    if (s->want_top > FSC__VS_BANDS_MAX)
        s->want_top = FSC__VS_BANDS_MAX;
    ctx_t c;
    memset(&c, 0, sizeof c);
    c.L = L;
    c.s = s;
    int rc = load(&c, m);
    free(c.seg_order);
    free(c.heap);
    free(c.heap_score);
    free(c.slot_tag);
    free(c.diff);
    return rc;
}

void fsc__model_free_state(fsc__vstate_t *s)
{
    if (s == NULL)
        return;
    free(s->segs);
    free(s->blocks);
    free(s->top);
    free(s->sample_seq);
    free(s->agg_tag);
    free(s->agg);
    for (size_t i = 0; i < s->ntree; i++)
        free(s->tree[i].name);
    free(s->tree);
    free(s);
}
