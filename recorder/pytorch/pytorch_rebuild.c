/*
 * pytorch_rebuild.c — the state before the first history entry, for
 * snapshots whose history ring had wrapped (and for segment-only ones).
 *
 * Segments that existed before the first entry are the final segments the
 * history never created plus those it frees without creating; blocks live
 * at the start are the final allocated blocks the history never touches
 * (exact) plus addresses whose first entry is a free (sized from the request
 * by the split rules). The free space between them is exact, because every
 * block live at the start is either freed in the history or still live at
 * the end. See docs/pytorch.md.
 */
#include "pytorch_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc/vec.h"

/* An address's FSC__ADDR_* value (0: not met). A flat table, not uthash:
 * every history entry looks its address up in pass 1. */
static uint64_t addr_val(const fsc__imp_t *im, uint64_t addr)
{
    uint64_t v = 0;
    if (addr == 0)
        return im->addr0;
    fsc__u64map_get(&im->addrs, addr, &v);
    return v;
}

static int addr_set(fsc__imp_t *im, uint64_t addr, uint64_t v)
{
    if (addr == 0) {
        im->addr0 = v;
        return 0;
    }
    return fsc__u64map_put(&im->addrs, addr, v);
}

static fsc__seg_info_t *seg_get(fsc__imp_t *im, uint64_t base)
{
    fsc__seg_info_t *s = NULL;
    HASH_FIND(hh, im->segs, &base, sizeof base, s);
    if (s == NULL && (s = calloc(1, sizeof *s)) != NULL) {
        s->base = base;
        HASH_ADD(hh, im->segs, base, sizeof s->base, s);
    }
    return s;
}

static int add_pre(fsc__imp_t *im, const fsc__final_seg_t *f)
{
    if (FSC__VEC_RESERVE(im->pre, im->cap_pre, im->n_pre + 1) != 0)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    im->pre[im->n_pre++] = *f;
    return 0;
}

static int add_live(fsc__imp_t *im, const fsc__prelive_t *p)
{
    if (FSC__VEC_RESERVE(im->live, im->cap_live, im->n_live + 1) != 0)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    im->live[im->n_live++] = *p;
    return 0;
}

static int cmp_live(const void *a, const void *b)
{
    const fsc__prelive_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add_segev(fsc__imp_t *im, const fsc__entry_t *e)
{
    if (FSC__VEC_RESERVE(im->segev, im->cap_segev, im->n_segev + 1) != 0)
        return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
    im->segev[im->n_segev++] = (fsc__seg_entry_t){e->addr, e->size, e->stream, e->act};
    return 0;
}

static int add_idx(fsc__addr_idx_t **v, size_t *n, size_t *cap, uint64_t addr, uint64_t i)
{
    if (FSC__VEC_RESERVE(*v, *cap, *n + 1) != 0)
        return FSC_ENOMEM;
    (*v)[(*n)++] = (fsc__addr_idx_t){addr, i};
    return 0;
}

/* What history entry i says about the state before the first one.
 * Addresses are settled at once; segment entries wait (in order) for the
 * final segments. */
int fsc__imp_start_entry(fsc__imp_t *im, uint64_t i, const fsc__entry_t *e)
{
    uint64_t v = 0;
    switch (e->act) {
    case FSC__ACT_ALLOC:
        if (addr_val(im, e->addr) == 0 &&
            (addr_set(im, e->addr, FSC__ADDR_SEEN) != 0 ||
             add_idx(&im->firsts, &im->n_firsts, &im->cap_firsts, e->addr, i) != 0))
            goto oom;
        break;
    case FSC__ACT_FREE_REQUESTED:
    case FSC__ACT_FREE_COMPLETED:
    case FSC__ACT_FREE: {
        int completes = e->act != FSC__ACT_FREE_REQUESTED;
        v = addr_val(im, e->addr);
        if (v == 0) {
            /* freed before it is allocated: live before the first entry */
            v = FSC__ADDR_SEEN | FSC__ADDR_PRELIVE |
                (e->act == FSC__ACT_FREE_COMPLETED ? FSC__ADDR_PENDING : 0u) |
                e->size << FSC__ADDR_SHIFT;
        } else if ((v & (FSC__ADDR_PRELIVE | FSC__ADDR_DONE)) != FSC__ADDR_PRELIVE ||
                   !completes) {
            break;
        }
        if (completes) {
            /* the block merges with its free neighbours from here on */
            v |= FSC__ADDR_DONE;
            if (add_idx(&im->dones, &im->n_dones, &im->cap_dones, e->addr, i) != 0)
                goto oom;
        }
        if (addr_set(im, e->addr, v) != 0)
            goto oom;
        break;
    }
    case FSC__ACT_SEGMENT_ALLOC:
    case FSC__ACT_SEGMENT_FREE:
    case FSC__ACT_SEGMENT_MAP:
    case FSC__ACT_SEGMENT_UNMAP: return add_segev(im, e);
    default: break;
    }
    return 0;
oom:
    return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
}

static int cmp_idx_addr(const void *a, const void *b)
{
    const fsc__addr_idx_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The index of the entry that completed the free of addr (a block live at
 * the start); UINT64_MAX when the window never completes it. */
static uint64_t done_index(const fsc__imp_t *im, uint64_t addr)
{
    size_t lo = 0, hi = im->n_dones;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (im->dones[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < im->n_dones && im->dones[lo].addr == addr ? im->dones[lo].idx : UINT64_MAX;
}

/* The address of the earliest allocation in [lo, hi] before entry `before`
 * (0: none). The free space that follows a block live at the start is
 * allocated from its start first: PyTorch hands out the start of the block
 * it picks, and only a split makes a later address a block's start. */
static uint64_t first_alloc_in(const fsc__imp_t *im, uint64_t lo, uint64_t hi, uint64_t before)
{
    size_t a = 0, b = im->n_firsts;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (im->firsts[mid].addr < lo)
            a = mid + 1;
        else
            b = mid;
    }
    uint64_t best = 0, best_idx = before;
    for (; a < im->n_firsts && im->firsts[a].addr <= hi; a++)
        if (im->firsts[a].idx < best_idx) {
            best_idx = im->firsts[a].idx;
            best = im->firsts[a].addr;
        }
    return best;
}

/* Where a block live at the start, known only from its request, ends.
 * Its first `size` bytes (the rounded request) are certain; PyTorch may
 * have handed out more (a remainder it did not split off), up to the next
 * block live at the start or the segment's end (`limit`). What the rules
 * allow, and what the window proves, decide; a choice the window does not
 * prove is marked guessed. See docs/pytorch.md. */
static void settle_size(fsc__imp_t *im, fsc__prelive_t *p, uint64_t limit)
{
    for (size_t i = 0; i < im->opts.nsizes; i++)
        if (im->opts.sizes[i].addr == p->addr && im->opts.sizes[i].size >= p->size &&
            p->addr + im->opts.sizes[i].size <= limit) {
            /* settled by a later pass (what-if) */
            p->size = im->opts.sizes[i].size;
            im->st->reconstructed_settled++;
            return;
        }
    uint64_t end = p->addr + p->size;
    if (end >= limit)
        return; /* no room left, or an overlap (reported when placed) */
    uint64_t gap = limit - end;
    const fsc__final_seg_t *f = p->seg;
    int whole = 0; /* a no_split pool hands out whole free blocks */
    for (uint8_t i = 0; f->pool_id != 0 && i < im->m.n_no_split; i++)
        whole |= im->m.no_split[i] == f->pool_id;
    if (!whole && fsc_alloc_should_split(&im->cfg, (fsc_pool_t)f->pool, p->size + 512, p->size,
                                         f->expandable))
        return; /* every remainder is split off: small pool, expandable */
    /* The most PyTorch leaves unsplit in a block of the large pool: 1 MiB
     * (kSmallSize), or below max_non_split_rounding (default: the large
     * segment size) for an oversize one;
     * in a no_split pool, anything. */
    int oversize = im->cfg.max_split_size != 0 && p->size >= im->cfg.max_split_size;
    uint64_t tol = im->cfg.max_non_split_rounding ? im->cfg.max_non_split_rounding
                   : im->cfg.large_segment_size   ? im->cfg.large_segment_size
                                                  : 20 * FSC_MiB;
    uint64_t unsplit = whole ? gap : !oversize ? FSC_MiB : tol - 1;
    /* A free block of the large pool outside expandable segments always
     * holds more than 1 MiB (new segments, split remainders and freed
     * blocks all do), so a gap of at most 1 MiB is the block's own. */
    if (gap <= FSC_MiB) {
        p->size += gap;
        return;
    }
    /* Proved by the window: the first allocation after the certain bytes,
     * before this block's free completes, starts the free space there. */
    uint64_t hi = end + (unsplit < gap ? unsplit : gap - 1);
    uint64_t y = first_alloc_in(im, end, hi, done_index(im, p->addr));
    if (y != 0) {
        p->size = y - p->addr;
        return;
    }
    /* Not proved: the remainder split off (what a remainder of more than
     * 1 MiB gets), or all the room for a block that is never split. */
    p->split_end = end;
    p->max_end = unsplit < gap ? end + unsplit : limit;
    p->limit = limit;
    if (whole || (oversize && gap <= unsplit))
        p->size += gap;
    p->guessed = 1;
}

/* ---- expandable segments ----------------------------------------------------- */

/* Mapped ranges that far apart are not one address space's. PyTorch
 * reserves about the device's memory (x 1.125) per expandable segment, and
 * maps the lowest free pages first, so one segment's ranges lie close
 * together and two segments' are a reservation apart. */
#define XGROUP_GAP (32ull << 30)

typedef struct xrange {
    uint64_t addr, size, stream, pool_id;
    uint8_t pool, known;
} xrange_t;

static int cmp_xrange(const void *a, const void *b)
{
    const xrange_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

const fsc__xgroup_t *fsc__imp_xgroup(const fsc__imp_t *im, uint64_t addr, uint64_t stream)
{
    for (size_t i = 0; i < im->n_xgroups; i++) {
        const fsc__xgroup_t *g = &im->xgroups[i];
        if (g->stream == stream && g->lo <= addr && addr < g->hi)
            return g;
    }
    return NULL;
}

/* The expandable segments: every final expandable segment and every
 * mapping or unmapping of the history, grouped by stream, pool (where a
 * final segment tells it) and nearness. */
static int build_xgroups(fsc__imp_t *im)
{
    size_t n = 0;
    for (size_t i = 0; i < im->n_finals; i++)
        n += im->finals[i].expandable;
    for (size_t i = 0; i < im->n_segev; i++)
        n += im->segev[i].act == FSC__ACT_SEGMENT_MAP || im->segev[i].act == FSC__ACT_SEGMENT_UNMAP;
    if (n == 0)
        return 0;
    xrange_t *r = malloc(n * sizeof *r);
    if (r == NULL)
        return FSC_ENOMEM;
    n = 0;
    for (size_t i = 0; i < im->n_finals; i++) {
        const fsc__final_seg_t *f = &im->finals[i];
        if (f->expandable)
            r[n++] = (xrange_t){f->base, f->size, f->stream, f->pool_id, f->pool, f->pool_known};
    }
    for (size_t i = 0; i < im->n_segev; i++) {
        const fsc__seg_entry_t *g = &im->segev[i];
        if (g->act == FSC__ACT_SEGMENT_MAP || g->act == FSC__ACT_SEGMENT_UNMAP)
            r[n++] = (xrange_t){g->addr, g->size, g->stream, 0, 0, 0};
    }
    qsort(r, n, sizeof *r, cmp_xrange);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        fsc__xgroup_t *g = NULL;
        for (size_t k = im->n_xgroups; k-- > 0;) {
            fsc__xgroup_t *c = &im->xgroups[k];
            if (c->stream == r[i].stream && (r[i].addr < c->hi || r[i].addr - c->hi < XGROUP_GAP) &&
                (!c->known || !r[i].known ||
                 (c->pool == r[i].pool && c->pool_id == r[i].pool_id))) {
                g = c;
                break;
            }
        }
        if (g == NULL) {
            if (FSC__VEC_RESERVE(im->xgroups, im->cap_xgroups, im->n_xgroups + 1) != 0) {
                rc = FSC_ENOMEM;
                break;
            }
            g = &im->xgroups[im->n_xgroups++];
            memset(g, 0, sizeof *g);
            g->lo = g->hi = r[i].addr;
            g->stream = r[i].stream;
        }
        if (r[i].addr + r[i].size > g->hi)
            g->hi = r[i].addr + r[i].size;
        if (r[i].known && !g->known) {
            g->known = 1;
            g->pool = r[i].pool;
            g->pool_id = r[i].pool_id;
        }
    }
    free(r);
    return rc;
}

/* A set of disjoint address ranges, sorted. */
typedef struct ivs {
    uint64_t *lo, *hi;
    size_t n, cap;
} ivs_t;

static int ivs_add(ivs_t *v, uint64_t lo, uint64_t hi)
{
    size_t i = 0;
    while (i < v->n && v->hi[i] < lo)
        i++;
    size_t j = i;
    while (j < v->n && v->lo[j] <= hi) {
        if (v->lo[j] < lo)
            lo = v->lo[j];
        if (v->hi[j] > hi)
            hi = v->hi[j];
        j++;
    }
    if (j == i) { /* insert */
        if (v->n == v->cap) {
            size_t c = v->cap ? 2 * v->cap : 8;
            uint64_t *a = realloc(v->lo, c * sizeof *a);
            if (a == NULL)
                return FSC_ENOMEM;
            v->lo = a;
            if ((a = realloc(v->hi, c * sizeof *a)) == NULL)
                return FSC_ENOMEM;
            v->hi = a;
            v->cap = c;
        }
        memmove(v->lo + i + 1, v->lo + i, (v->n - i) * sizeof *v->lo);
        memmove(v->hi + i + 1, v->hi + i, (v->n - i) * sizeof *v->hi);
        v->n++;
        j = i + 1;
    }
    v->lo[i] = lo;
    v->hi[i] = hi;
    memmove(v->lo + i + 1, v->lo + j, (v->n - j) * sizeof *v->lo);
    memmove(v->hi + i + 1, v->hi + j, (v->n - j) * sizeof *v->hi);
    v->n -= j - i - 1;
    return 0;
}

static int ivs_sub(ivs_t *v, uint64_t lo, uint64_t hi)
{
    for (size_t i = 0; i < v->n; i++) {
        if (v->hi[i] <= lo || v->lo[i] >= hi)
            continue;
        uint64_t a = v->lo[i], b = v->hi[i];
        /* remove [a, b), put back what lies outside [lo, hi) */
        memmove(v->lo + i, v->lo + i + 1, (v->n - i - 1) * sizeof *v->lo);
        memmove(v->hi + i, v->hi + i + 1, (v->n - i - 1) * sizeof *v->hi);
        v->n--;
        if ((a < lo && ivs_add(v, a, lo) != 0) || (b > hi && ivs_add(v, hi, b) != 0))
            return FSC_ENOMEM;
        i = (size_t)-1; /* the set changed: from the start */
    }
    return 0;
}

/* The ranges of the expandable segments mapped before the first entry:
 * those mapped at the end, with the history's mappings and unmappings
 * undone from the last back to the first. */
static int add_pre_mappings(fsc__imp_t *im)
{
    int rc = 0;
    for (size_t k = 0; k < im->n_xgroups && rc == 0; k++) {
        const fsc__xgroup_t *g = &im->xgroups[k];
        ivs_t v = {0};
        for (size_t i = 0; i < im->n_finals && rc == 0; i++) {
            const fsc__final_seg_t *f = &im->finals[i];
            if (f->expandable && fsc__imp_xgroup(im, f->base, f->stream) == g)
                rc = ivs_add(&v, f->base, f->base + f->size);
        }
        for (size_t i = im->n_segev; i-- > 0 && rc == 0;) {
            const fsc__seg_entry_t *e = &im->segev[i];
            if ((e->act != FSC__ACT_SEGMENT_MAP && e->act != FSC__ACT_SEGMENT_UNMAP) ||
                fsc__imp_xgroup(im, e->addr, e->stream) != g)
                continue;
            rc = e->act == FSC__ACT_SEGMENT_MAP ? ivs_sub(&v, e->addr, e->addr + e->size)
                                                : ivs_add(&v, e->addr, e->addr + e->size);
        }
        for (size_t i = 0; i < v.n && rc == 0; i++) {
            fsc__final_seg_t pre;
            memset(&pre, 0, sizeof pre);
            pre.base = v.lo[i];
            pre.size = v.hi[i] - v.lo[i];
            pre.stream = g->stream;
            pre.expandable = 1;
            pre.pool_known = g->known;
            pre.pool = g->known ? g->pool
                                : (pre.size % (20 * FSC_MiB) == 0 ? FSC_POOL_LARGE : FSC_POOL_SMALL);
            pre.pool_id = g->pool_id;
            pre.vbase = g->lo;
            rc = add_pre(im, &pre);
        }
        free(v.lo);
        free(v.hi);
    }
    return rc;
}

/* Which segments and blocks existed before the first entry. */
int fsc__imp_find_start_state(fsc__imp_t *im)
{
    fsc__entry_t e;
    for (uint64_t i = 0; im->ents != NULL && i < im->n_ents; i++) {
        int rc = fsc__imp_read_entry(im, im->ents[i], i, &e);
        if (rc == 0)
            rc = fsc__imp_start_entry(im, i, &e);
        if (rc != 0)
            return rc;
    }
    for (size_t i = 0; i < im->n_segev; i++) {
        const fsc__seg_entry_t *g = &im->segev[i];
        fsc__seg_info_t *s = NULL;
        switch (g->act) {
        case FSC__ACT_SEGMENT_ALLOC:
            if ((s = seg_get(im, g->addr)) == NULL)
                goto oom;
            s->created = 1;
            break;
        case FSC__ACT_SEGMENT_FREE:
            if ((s = seg_get(im, g->addr)) == NULL)
                goto oom;
            if (!s->created && !s->pre) {
                s->pre = 1;
                s->size = g->size;
                s->stream = g->stream;
            }
            break;
        default: break; /* mappings: add_pre_mappings */
        }
    }
    /* Pre-existing segments. */
    for (fsc__seg_info_t *s = im->segs; s != NULL; s = s->hh.next) {
        if (!s->pre)
            continue;
        const fsc__final_seg_t *f = fsc__imp_final_at(im->finals, im->n_finals, s->base, 1);
        fsc__final_seg_t pre = {
            s->base, s->size, s->stream, s->size == 2 * FSC_MiB ? FSC_POOL_SMALL : FSC_POOL_LARGE,
            0,       0,       NULL,    0, 0};
        /* The final segment at that base is this one only when the window
         * does not create another there after freeing it. */
        if (f != NULL && f->size == s->size && f->pool_known && !s->created)
            pre.pool = f->pool;
        if (f != NULL && f->size == s->size && !s->created)
            pre.pool_id = f->pool_id;
        if (add_pre(im, &pre) != 0)
            return FSC_ENOMEM;
    }
    for (size_t i = 0; i < im->n_finals; i++) {
        fsc__seg_info_t *s = NULL;
        HASH_FIND(hh, im->segs, &im->finals[i].base, sizeof(uint64_t), s);
        if ((s != NULL && (s->created || s->pre)) || im->finals[i].expandable)
            continue;
        if (add_pre(im, &im->finals[i]) != 0)
            return FSC_ENOMEM;
    }
    if (build_xgroups(im) != 0 || add_pre_mappings(im) != 0)
        goto oom;
    if (im->n_pre > 1)
        qsort(im->pre, im->n_pre, sizeof *im->pre, fsc__imp_cmp_final);
    /* Live blocks: final allocated blocks the history never touches, in
     * the segment or mapped range of the start that holds them. */
    for (size_t i = 0; i < im->n_finals; i++) {
        const fsc__final_seg_t *fin = &im->finals[i];
        const fsc__final_seg_t *f = NULL;
        fsc__pv_t *const *b;
        uint32_t nb = fsc__pv_seq(fin->blocks, &b);
        uint64_t cursor = fin->base;
        for (uint32_t k = 0; k < nb; k++) {
            if (!fsc__imp_dict_ok(b[k]))
                return fsc__imp_bad(im, "a block of segment 0x%llx is not a dict",
                                    (unsigned long long)fin->base);
            fsc__prelive_t p = {0};
            if (!fsc__imp_u64(b[k], "size", &p.size) || p.size >= FSC__IMP_MAX_SIZE)
                return fsc__imp_bad(im, "a block of segment 0x%llx has no plausible 'size'",
                                    (unsigned long long)fin->base);
            if (!fsc__imp_u64(b[k], "address", &p.addr))
                p.addr = cursor; /* older snapshots: blocks are contiguous */
            cursor = p.addr + p.size;
            const fsc__pv_t *state = fsc__pv_get(b[k], "state");
            int pending = fsc__pv_is_str(state, "active_pending_free");
            if (!pending && !fsc__pv_is_str(state, "active_allocated"))
                continue;
            if (addr_val(im, p.addr) != 0)
                continue;
            if (f == NULL || p.addr < f->base || p.addr - f->base >= f->size)
                f = fsc__imp_final_at(im->pre, im->n_pre, p.addr, 0);
            if (f == NULL)
                return fsc__imp_bad(im,
                                    "block 0x%llx is live at the end, never mentioned by the "
                                    "history, and in no segment that existed before it",
                                    (unsigned long long)p.addr);
            /* PyTorch before 2.1: the request and frames are in the block's
             * 'history' (its first record), as memory_viz reads them */
            fsc__pv_t *const *hist;
            const fsc__pv_t *h0 =
                fsc__pv_seq(fsc__pv_get(b[k], "history"), &hist) > 0 ? hist[0] : NULL;
            if (!fsc__imp_u64(b[k], "requested_size", &p.requested) &&
                !(h0 != NULL && fsc__imp_u64(h0, "real_size", &p.requested) &&
                  p.requested <= p.size))
                p.requested = p.size;
            p.exact = 1;
            p.pending = (uint8_t)pending;
            p.frames = fsc__pv_get(b[k], "frames");
            if (p.frames == NULL && h0 != NULL && fsc__imp_dict_ok(h0))
                p.frames = fsc__pv_get(h0, "frames");
            p.seg = f;
            if (add_live(im, &p) != 0)
                return FSC_ENOMEM;
        }
    }
    /* Live blocks: addresses whose first entry frees them. Those outside
     * every pre-existing segment are left to the replay to report. */
    /* (in table order: they are sorted by address below) */
    size_t nslots = im->addrs.slots != NULL ? im->addrs.mask + 1 : 0;
    for (size_t i = 0; i <= nslots; i++) {
        uint64_t addr = i < nslots ? im->addrs.slots[i].key : 0;
        uint64_t v = i < nslots ? im->addrs.slots[i].val : im->addr0;
        if ((i < nslots && addr == 0) || !(v & FSC__ADDR_PRELIVE))
            continue;
        const fsc__final_seg_t *f = fsc__imp_final_at(im->pre, im->n_pre, addr, 0);
        if (f == NULL)
            continue;
        uint64_t requested = v >> FSC__ADDR_SHIFT;
        fsc__prelive_t p = {0};
        p.addr = addr;
        p.size = fsc_alloc_round_size(&im->cfg, requested);
        p.requested = requested;
        p.pending = (v & FSC__ADDR_PENDING) != 0;
        p.seg = f;
        if (add_live(im, &p) != 0)
            return FSC_ENOMEM;
    }
    if (im->n_live > 1)
        qsort(im->live, im->n_live, sizeof *im->live, cmp_live);
    /* Blocks sized from their requests: where each ends. */
    if (im->n_firsts > 1)
        qsort(im->firsts, im->n_firsts, sizeof *im->firsts, cmp_idx_addr);
    if (im->n_dones > 1)
        qsort(im->dones, im->n_dones, sizeof *im->dones, cmp_idx_addr);
    for (size_t i = 0; i < im->n_live; i++) {
        fsc__prelive_t *p = &im->live[i];
        if (p->exact)
            continue;
        uint64_t limit = p->seg->base + p->seg->size;
        if (i + 1 < im->n_live && im->live[i + 1].seg == p->seg)
            limit = im->live[i + 1].addr;
        settle_size(im, p, limit);
        if (p->guessed) {
            if (im->st->reconstructed_guessed < FSC_IMPORT_GUESSED_MAX)
                im->st->guessed_blocks[im->st->reconstructed_guessed] = p->addr;
            im->st->reconstructed_guessed++;
        }
    }
    im->st->reconstructed = im->n_pre > 0 || im->n_live > 0;
    return 0;
oom:
    return fsc_err_set(im->err, FSC_ENOMEM, "%s: out of memory", im->path);
}

int fsc__imp_emit_start_state(fsc__imp_t *im)
{
    size_t li = 0;
    for (size_t i = 0; i < im->n_pre; i++) {
        const fsc__final_seg_t *f = &im->pre[i];
        im->m.new_pool_id = f->pool_id;
        uint64_t base = f->expandable && f->vbase ? f->vbase : f->base;
        int rc = f->expandable
                     ? fsc__pm_map(&im->m, base, f->base, f->size, f->stream, f->pool)
                     : fsc__pm_segment_alloc(&im->m, f->base, f->size, f->stream, f->pool);
        if (rc != 0) {
            char what[96];
            snprintf(what, sizeof what, "rebuilding segment 0x%llx", (unsigned long long)f->base);
            /* final segments that contradict each other: a malformed
             * snapshot, which --lenient (it skips history entries) does
             * not get past, so not FSC_ESTATE */
            rc = fsc__imp_model_error(im, what);
            if (rc == FSC_ESTATE && im->err != NULL)
                im->err->code = rc = FSC_EFORMAT;
            return rc;
        }
        im->st->reconstructed_segments++;
        im->st->reconstructed_reserved += f->size;
        fsc__pseg_t *seg = fsc__pm_segment(&im->m, base);
        while (li < im->n_live && im->live[li].addr < f->base)
            li++;
        for (; li < im->n_live && im->live[li].seg == f; li++) {
            const fsc__prelive_t *p = &im->live[li];
            uint32_t tag = 0;
            if ((rc = fsc__imp_frames_tag(im, p->frames, &tag)) != 0)
                return rc;
            rc = fsc__pm_place(&im->m, seg, p->addr, p->size, p->requested, f->stream, tag);
            if (rc == 0 && p->pending)
                rc = fsc__pm_free_requested(&im->m, p->addr, tag);
            if (rc != 0) {
                if (im->opts.lenient && rc == FSC_ESTATE) {
                    fsc__imp_warn(im, "rebuilding block 0x%llx: %s", (unsigned long long)p->addr,
                                  im->merr.msg);
                    continue;
                }
                char what[96];
                snprintf(what, sizeof what, "rebuilding block 0x%llx", (unsigned long long)p->addr);
                return fsc__imp_model_error(im, what);
            }
            im->st->reconstructed_blocks++;
        }
    }
    return 0;
}
