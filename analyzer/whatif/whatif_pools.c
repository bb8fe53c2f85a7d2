/*
 * whatif_pools.c — the private pools of a recording that its snapshot no
 * longer names, and the points where the program released a pool.
 *
 * A PyTorch snapshot gives segment_pool_id only for the segments still
 * there at the end; its history entries carry no pool. A MemPool or CUDA
 * graph pool released before the snapshot leaves segments that look like
 * the default pool's, and replaying their requests there serves them from
 * the default pool's free blocks: the replay drifts from the first such
 * request on. This file infers the missing pools from what the recorded
 * allocator decided, which it could only decide pool by pool:
 *
 *   - best fit within a pool: a request served from block B (or from a new
 *     segment) proves that no free block of B's pool, on that stream and
 *     of that size class, fitted better (fitted at all). Every segment that
 *     held such a block is in another pool than B's segment. These
 *     "different pool" pairs are collected while the stream is read,
 *     against a model of the free blocks (each segment's gaps between
 *     active blocks; free neighbours always merge outside expandable
 *     segments, whose blocks are left out).
 *   - a pool keeps one expandable segment per stream and size class (its
 *     address space is the device's): a second one, mapped while the
 *     first holds pages, is another pool's.
 *   - a private pool still in the snapshot was never released, so a
 *     segment released before the end is not one of its segments.
 *
 * After the stream is read, each released segment of the default pool id
 * gets a pool, in creation order: the pool of the request made just before
 * the one that created it (programs switch pools rarely), else the default
 * pool, else an inferred pool, else a new inferred pool, the first of
 * these that no pair forbids. Then the explanation with the fewest program
 * actions is taken: when every default-pool segment released in a burst
 * alongside an inferred pool's segments may belong to that pool, it does,
 * and the burst is that pool's release alone (a MemPool's destructor
 * releases its own segments, not the default pool's). The result is
 * consistent with every recorded placement; it is an inference, and the
 * stream says so (fsc_request_stream_info_t.inferred_pools).
 *
 * Pool releases: a private pool's segments are freed only after the
 * program released the pool, so the first release burst that frees one of
 * them is where the replay releases the pool (releasePool and the pool's
 * own emptyCache, as a MemPool's destructor does). A burst that freed only
 * private pools' segments is not replayed as empty_cache().
 *
 * The pairs are kept per segment, as a row of the segments it shares no
 * pool with (wp_row_t): a small set of indices while it is sparse, a
 * bitmap over the segments once that is smaller. A recording of one pool
 * has few pairs; one whose pools run side by side (each pool's requests
 * skipped the others' free blocks) has pairs between most of its
 * segments, which as bits cost nsegs^2 / 8 bytes in all (11 MB for
 * 9 500 segments, where a hash set of pairs took 3.5 GB). A request that
 * skipped the free blocks of many segments keeps them as a clique instead
 * (wp_clique_t, below), which later requests that skip the same set join.
 *
 * The model costs a tree lookup per allocation and a walk over the
 * segment's blocks per allocation and free (segments hold few blocks). It
 * keeps nothing per allocation: each request's op carries its recorded
 * segment (fsc__wop_t.seg), and what the labelling needs of the requests
 * around a segment's first one, or around a fallback, is noted as they
 * pass. The labels reach the replay through rs->seg_pool and rs->fb_ids,
 * which the cursor applies (whatif_ops.c).
 */
#include <bsd/sys/tree.h>
#include <stdlib.h>
#include <string.h>

#include "whatif_internal.h"

#define NONE UINT32_MAX
/* The pairs' budget (struct fsc__wpools): real recordings walk about one
 * free block per request (tests/data: at most 284 steps in all), and the
 * side-by-side stress inputs of docs/BENCHMARKS.md (9 500 segments of 38
 * pools), whose skipped sets are kept as cliques, stay inside a quarter of
 * it (the same results with a floor of 2^20). It was 2^27 before the
 * cliques, which those inputs needed as pairs. */
#define WP_WALK_FLOOR (1ull << 22)
#define WP_WALK_PER_EVENT 64ull
#define WP_ROW_BYTES ((size_t)256 << 20)
/* A new segment's request that skipped free blocks of this many segments
 * keeps them as a clique (wp_clique_t) rather than as pairs. */
#define WP_CLIQUE_MIN 16u
/* Changes since the cached walk, past which it is walked again. */
#define WP_LOG_MIN 1024u
/* Sets kept up to date at once, one per (stream, size class, request
 * size): a program that alternates between a few sizes reuses each. */
#define WP_CACHES 4
/* Inferred pools get ids no PyTorch pool has (its ids are small counters). */
#define INFERRED_BASE 0xfffffff000000000ull

typedef struct wp_gap {
    RB_ENTRY(wp_gap) rb;
    uint64_t stream, size, addr;
    uint32_t seg;
    uint8_t small;
} wp_gap_t;

static int gap_cmp(const wp_gap_t *a, const wp_gap_t *b)
{
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->small != b->small)
        return a->small < b->small ? -1 : 1;
    if (a->size != b->size)
        return a->size < b->size ? -1 : 1;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return 0;
}

RB_HEAD(fsc__wp_tree, wp_gap);
RB_PROTOTYPE(fsc__wp_tree, wp_gap, rb, gap_cmp)
RB_GENERATE(fsc__wp_tree, wp_gap, rb, gap_cmp)

typedef struct wp_piece {
    uint64_t addr, size;
    wp_gap_t *gap; /* NULL: an active block (allocated or its free pending) */
} wp_piece_t;

/* The segments one segment shares no pool with. slot: a set of cap
 * (a power of two, or 0) slots holding index + 1 (0: empty), at most half
 * full; bits: once the set would take more bytes than a bitmap over the
 * segments, a bitmap of nwords words instead (slot is then NULL). Written
 * here: a set of 32-bit indices per segment, which neither uthash (a
 * 56-byte handle per item) nor fsc/u64map.h (16 bytes a slot) keeps small. */
typedef struct wp_row {
    uint32_t *slot;
    uint64_t *bits;
    uint32_t cap, n, nwords;
} wp_row_t;

typedef struct wp_seg {
    uint64_t base, size, stream, pool_id;
    uint32_t prev; /* segment of the request before the one that created it */
    uint32_t label; /* 0 default, k = pool_ids[k - 1] of the stream */
    size_t burst;   /* 1 + op index of the release burst that freed it; 0 alive */
    uint64_t first; /* id of the request that created it; UINT64_MAX unknown */
    uint32_t after; /* segment of the first later request in another segment; NONE */
    uint64_t nallocs; /* requests served from it */
    uint64_t mapped; /* expandable: bytes mapped now */
    uint8_t small, expandable;
    wp_piece_t *pc;
    size_t npc, cap_pc;
    wp_row_t row; /* the segments proved to be in another pool */
    uint32_t *mb; /* cliques it is in: clique << 1 | 0 (a requester), | 1 (skipped) */
    size_t nmb, cap_mb;
} wp_seg_t;

/* The labels of one side of a clique, counted (labelling only). */
typedef struct wp_side {
    struct wp_lc {
        uint32_t label, n;
    } *c;
    size_t n, cap;
} wp_side_t;

/* A clique of "different pool" pairs: every requester (members with side
 * 0) against every segment in z (side 1), itself excepted. A request that
 * opened a segment, or took a block, while many free blocks of the same
 * size class would have fitted better skipped every one of them: pools
 * used side by side make each such request skip the same set again, so
 * the set is kept once and each request joins it, instead of a pair per
 * skipped segment (the pairs of the side-by-side inputs of
 * docs/BENCHMARKS.md grew with segments^2). */
typedef struct wp_clique {
    uint32_t *z;
    size_t nz;
    wp_side_t lx, lz;
} wp_clique_t;

struct fsc__wpools {
    fsc_alloc_config_t cfg;
    wp_seg_t *segs;
    size_t nsegs, cap_segs;
    fsc__u64map_t live; /* base -> segment index */
    struct fsc__wp_tree gaps;
    uint32_t cur_seg; /* segment of the request being added (then of the last one) */
    uint32_t *wait;   /* segments whose `after` is not known yet (one or two) */
    size_t nwait, cap_wait;
    int infer; /* model the free blocks and collect pairs (snapshots) */
    uint32_t last_alloc_seg, created; /* segment created by the last event */
    /* Requests served from a cached block of a named private pool: maybe a
     * use_on_oom fallback of a default-pool request (finish decides). */
    struct wp_fallback {
        uint64_t id, reserved, rounded, pool_id;
        uint32_t seg, prev_seg, next_seg; /* of this request, the one before, after */
        int flagged;
    } *fb;
    size_t nfb, cap_fb;
    uint64_t no_split[16]; /* pools seen handing out a block whole that splits */
    size_t n_no_split;
    /* The bound on the pairs' cost, whatever the input (a file crafted so
     * that every request skips every free block costs segments² steps and
     * bits otherwise): steps of the walk over better-fitting free blocks,
     * and bytes of the rows. Past either, no more pairs are collected and
     * the stream says the inference was cut short (info.pool_inference_capped). */
    uint64_t walked, events, walk_floor;
    size_t row_bytes;
    int capped;
    wp_clique_t *cl;
    size_t ncl, cap_cl;
    /* The free blocks a new segment's request skipped last (stream, size
     * class, rounded size), as segment -> count, kept up to date by the
     * model's changes since (log) so that the next such request need not
     * walk them again; clique: the clique of that set, NONE while the set
     * has changed since or is small. */
    struct wp_cache {
        int valid;
        uint64_t used; /* when last used: the least recent goes first */
        uint8_t small;
        uint64_t stream, r;
        int end_inf;  /* the range runs to the size class's end, */
        wp_gap_t end; /* else up to this key (not included) */
        fsc__u64map_t cnt; /* segment + 1 -> its free blocks in the range */
        fsc__u64map_t zset; /* segment + 1 -> 1: the clique's skipped set */
        uint64_t ndiff;     /* segments in one of cnt's keys and zset, not both */
        uint32_t clique;
        struct wp_logent {
            uint64_t size;
            uint32_t seg;
            int8_t d;
        } *log;
        size_t nlog, cap_log;
        int overflow;
    } wc[WP_CACHES];
    uint64_t wc_tick;
};

static int seg_index(const struct fsc__wpools *w, uint64_t base, uint32_t *out)
{
    uint64_t v;
    if (!fsc__u64map_get(&w->live, base, &v))
        return 0;
    *out = (uint32_t)v;
    return 1;
}

static int piece_insert(wp_seg_t *s, size_t at, wp_piece_t p)
{
    if (FSC__VEC_RESERVE(s->pc, s->cap_pc, s->npc + 1) != 0)
        return FSC_ENOMEM;
    memmove(&s->pc[at + 1], &s->pc[at], (s->npc - at) * sizeof *s->pc);
    s->pc[at] = p;
    s->npc++;
    return 0;
}

static void piece_remove(wp_seg_t *s, size_t at)
{
    memmove(&s->pc[at], &s->pc[at + 1], (s->npc - at - 1) * sizeof *s->pc);
    s->npc--;
}

static void cache_log(struct fsc__wpools *w, const wp_gap_t *g, int d);

static wp_gap_t *gap_new(struct fsc__wpools *w, uint32_t seg, uint64_t addr, uint64_t size)
{
    wp_gap_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    const wp_seg_t *s = &w->segs[seg];
    g->stream = s->stream;
    g->small = s->small;
    g->size = size;
    g->addr = addr;
    g->seg = seg;
    RB_INSERT(fsc__wp_tree, &w->gaps, g);
    cache_log(w, g, 1);
    return g;
}

static void gap_drop(struct fsc__wpools *w, wp_gap_t *g)
{
    if (g != NULL) {
        cache_log(w, g, -1);
        RB_REMOVE(fsc__wp_tree, &w->gaps, g);
        free(g);
    }
}

static uint32_t row_hash(uint32_t x, uint32_t mask)
{
    x ^= x >> 16;
    x *= 0x45d9f3bu;
    x ^= x >> 16;
    return x & mask;
}

static int row_has(const wp_row_t *r, uint32_t b)
{
    if (r->bits != NULL)
        return b / 64 < r->nwords && (r->bits[b / 64] >> (b % 64) & 1) != 0;
    if (r->cap == 0)
        return 0;
    for (uint32_t i = row_hash(b, r->cap - 1);; i = (i + 1) & (r->cap - 1)) {
        if (r->slot[i] == b + 1)
            return 1;
        if (r->slot[i] == 0)
            return 0;
    }
}

static void set_put(uint32_t *slot, uint32_t cap, uint32_t b)
{
    uint32_t i = row_hash(b, cap - 1);
    while (slot[i] != 0)
        i = (i + 1) & (cap - 1);
    slot[i] = b + 1;
}

/* Adds b (not in the row yet); nsegs: the segments so far; *bytes: the
 * rows' bytes, kept under WP_ROW_BYTES (FSC_ELIMIT past it, the row as it
 * was). */
static int row_add(wp_row_t *r, uint32_t b, size_t nsegs, size_t *bytes)
{
    if (r->bits == NULL && (r->n + 1) * 2 > r->cap) {
        uint32_t ncap = r->cap ? r->cap * 2 : 8;
        size_t words = (nsegs + 63) / 64;
        if (words <= b / 64)
            words = b / 64 + 1;
        size_t had = (size_t)r->cap * sizeof(uint32_t);
        size_t want = (size_t)ncap * sizeof(uint32_t) > words * sizeof(uint64_t)
                          ? words * sizeof(uint64_t)
                          : (size_t)ncap * sizeof(uint32_t);
        if (*bytes - had + want > WP_ROW_BYTES)
            return FSC_ELIMIT;
        *bytes = *bytes - had + want;
        if ((size_t)ncap * sizeof(uint32_t) > words * sizeof(uint64_t)) {
            uint64_t *bits = calloc(words, sizeof *bits);
            if (bits == NULL)
                return FSC_ENOMEM;
            for (uint32_t i = 0; i < r->cap; i++)
                if (r->slot[i] != 0)
                    bits[(r->slot[i] - 1) / 64] |= 1ull << ((r->slot[i] - 1) % 64);
            free(r->slot);
            r->slot = NULL;
            r->cap = 0;
            r->bits = bits;
            r->nwords = (uint32_t)words;
        } else {
            uint32_t *ns = calloc(ncap, sizeof *ns);
            if (ns == NULL)
                return FSC_ENOMEM;
            for (uint32_t i = 0; i < r->cap; i++)
                if (r->slot[i] != 0)
                    set_put(ns, ncap, r->slot[i] - 1);
            free(r->slot);
            r->slot = ns;
            r->cap = ncap;
        }
    }
    r->n++;
    if (r->bits == NULL) {
        set_put(r->slot, r->cap, b);
        return 0;
    }
    if (b / 64 >= r->nwords) {
        size_t words = (size_t)r->nwords + r->nwords / 2 + 1;
        if (words <= b / 64)
            words = b / 64 + 1;
        if (*bytes + (words - r->nwords) * sizeof(uint64_t) > WP_ROW_BYTES) {
            r->n--;
            return FSC_ELIMIT;
        }
        *bytes += (words - r->nwords) * sizeof(uint64_t);
        uint64_t *nb = realloc(r->bits, words * sizeof *nb);
        if (nb == NULL)
            return FSC_ENOMEM;
        memset(nb + r->nwords, 0, (words - r->nwords) * sizeof *nb);
        r->bits = nb;
        r->nwords = (uint32_t)words;
    }
    r->bits[b / 64] |= 1ull << (b % 64);
    return 0;
}

static void row_free(wp_row_t *r)
{
    free(r->slot);
    free(r->bits);
    memset(r, 0, sizeof *r);
}

static int add_pair(struct fsc__wpools *w, uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    wp_seg_t *sa = &w->segs[a], *sb = &w->segs[b];
    if (sa->pool_id != 0 && sb->pool_id != 0)
        return 0; /* both known */
    if (w->capped || row_has(&sa->row, b))
        return 0;
    int rc = row_add(&sa->row, b, w->nsegs, &w->row_bytes);
    if (rc == 0)
        rc = row_add(&sb->row, a, w->nsegs, &w->row_bytes);
    if (rc == FSC_ELIMIT) {
        w->capped = 1; /* a pair half kept only forbids what the other half would */
        return 0;
    }
    return rc != 0 ? FSC_ENOMEM : 0;
}

/* Would PyTorch's get_free_block hand block size `have` to a request of
 * `r` bytes (rounded)? The oversize rules of max_split_size. */
static int fits(const fsc_alloc_config_t *c, uint64_t have, uint64_t r)
{
    if (have < r)
        return 0;
    uint64_t ms = c->max_split_size ? c->max_split_size : UINT64_MAX;
    uint64_t tol = c->max_non_split_rounding ? c->max_non_split_rounding : 20 * FSC_MiB;
    if (r < ms && have >= ms)
        return 0;
    if (r >= ms && have >= r + tol)
        return 0;
    return 1;
}

/* ---- cliques: the segments a request's best fit skipped, kept once ---- */

/* A free block's key in the cached range [(stream, class, r, 0), end). */
static int in_range(const struct wp_cache *c, const wp_gap_t *g)
{
    return g->stream == c->stream && g->small == c->small && g->size >= c->r &&
           (c->end_inf || gap_cmp(g, &c->end) < 0);
}

static void cache_log(struct fsc__wpools *w, const wp_gap_t *g, int d)
{
    for (int k = 0; k < WP_CACHES; k++) {
        struct wp_cache *c = &w->wc[k];
        if (!c->valid || c->overflow || !in_range(c, g))
            continue;
        if (FSC__VEC_RESERVE(c->log, c->cap_log, c->nlog + 1) != 0) {
            c->overflow = 1;
            continue;
        }
        c->log[c->nlog++] = (struct wp_logent){g->size, g->seg, (int8_t)d};
        if (c->nlog > WP_LOG_MIN && c->nlog > c->cnt.count)
            c->overflow = 1; /* walking again costs less than the log */
    }
}

static void cache_reset(struct wp_cache *c)
{
    c->valid = 0;
    c->overflow = 0;
    c->nlog = 0;
    c->ndiff = 0;
    c->clique = NONE;
    fsc__u64map_clear(&c->cnt);
    fsc__u64map_clear(&c->zset);
}

/* Segment j entered (d > 0) or left the skipped set: the difference from
 * the clique's set follows. */
static void cache_moved(struct wp_cache *c, uint32_t j, int d)
{
    if (c->clique == NONE)
        return;
    int in_z = fsc__u64map_get(&c->zset, (uint64_t)j + 1, NULL);
    if (in_z == (d > 0))
        c->ndiff--;
    else
        c->ndiff++;
}

static int cache_count(struct wp_cache *c, uint32_t j, int d)
{
    uint64_t v = 0;
    fsc__u64map_get(&c->cnt, (uint64_t)j + 1, &v);
    if (d > 0) {
        if (v == 0)
            cache_moved(c, j, 1);
        return fsc__u64map_put(&c->cnt, (uint64_t)j + 1, v + 1) != 0 ? FSC_ENOMEM : 0;
    }
    if (v <= 1) {
        if (v == 1)
            cache_moved(c, j, -1);
        fsc__u64map_del(&c->cnt, (uint64_t)j + 1, NULL);
    } else if (fsc__u64map_put(&c->cnt, (uint64_t)j + 1, v - 1) != 0) {
        return FSC_ENOMEM;
    }
    return 0;
}

static int budget_step(struct fsc__wpools *w)
{
    if (++w->walked > w->walk_floor + WP_WALK_PER_EVENT * w->events)
        w->capped = 1;
    return !w->capped;
}

/* Counts the fitting free blocks from `from` (a key) on, while before
 * `to` (NULL: the size class's end), with sign d. */
static int cache_walk(struct fsc__wpools *w, struct wp_cache *c, wp_gap_t *from,
                      const wp_gap_t *to, int d)
{
    for (wp_gap_t *g = RB_NFIND(fsc__wp_tree, &w->gaps, from);
         g != NULL && g->stream == c->stream && g->small == c->small &&
         (to == NULL || gap_cmp(g, to) < 0);
         g = RB_NEXT(fsc__wp_tree, &w->gaps, g)) {
        if (!budget_step(w))
            return 0;
        if (fits(&w->cfg, g->size, c->r) && cache_count(c, g->seg, d) != 0)
            return FSC_ENOMEM;
    }
    return 0;
}

/* The cached set made that of the range [key, b) (b NULL: to the class's
 * end): brought up to date from the log and its end moved, or walked
 * afresh. */
static int cache_update(struct fsc__wpools *w, wp_gap_t *key, uint64_t r, const wp_gap_t *b,
                        struct wp_cache **out)
{
    struct wp_cache *c = &w->wc[0];
    for (int k = 0; k < WP_CACHES; k++) {
        struct wp_cache *e = &w->wc[k];
        if (e->valid && !e->overflow && e->stream == key->stream && e->small == key->small &&
            e->r == r) {
            c = e;
            break;
        }
        if (!e->valid || e->overflow || (c->valid && !c->overflow && e->used < c->used))
            c = e; /* the least recently used, or a free one */
    }
    c->used = ++w->wc_tick;
    *out = c;
    if (c->valid && !c->overflow && c->stream == key->stream && c->small == key->small &&
        c->r == r) {
        for (size_t i = 0; i < c->nlog; i++) {
            const struct wp_logent *e = &c->log[i];
            if (!budget_step(w))
                return 0;
            if (fits(&w->cfg, e->size, r) && cache_count(c, e->seg, e->d) != 0)
                return FSC_ENOMEM;
        }
        c->nlog = 0;
        int rc = 0;
        if (b == NULL && !c->end_inf) {
            rc = cache_walk(w, c, &c->end, NULL, 1); /* the range grows to the end */
        } else if (b != NULL && c->end_inf) {
            wp_gap_t from = *b;
            rc = cache_walk(w, c, &from, NULL, -1); /* shrinks to b */
        } else if (b != NULL && gap_cmp(b, &c->end) > 0) {
            rc = cache_walk(w, c, &c->end, b, 1);
        } else if (b != NULL && gap_cmp(b, &c->end) < 0) {
            wp_gap_t from = *b;
            rc = cache_walk(w, c, &from, &c->end, -1);
        }
        c->end_inf = b == NULL;
        if (b != NULL)
            c->end = *b;
        return rc;
    }
    cache_reset(c);
    c->valid = 1;
    c->stream = key->stream;
    c->small = key->small;
    c->r = r;
    c->end_inf = b == NULL;
    if (b != NULL)
        c->end = *b;
    return cache_walk(w, c, key, b, 1);
}

static int mb_add(wp_seg_t *s, uint32_t v, size_t *bytes)
{
    if (s->nmb > 0 && s->mb[s->nmb - 1] == v)
        return 0; /* the same request's segment again */
    if (FSC__VEC_RESERVE(s->mb, s->cap_mb, s->nmb + 1) != 0)
        return FSC_ENOMEM;
    s->mb[s->nmb++] = v;
    *bytes += sizeof v;
    return 0;
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* A clique of the cached set less x, the requester that found it. */
static int clique_new(struct fsc__wpools *w, struct wp_cache *c, uint32_t x)
{
    if (w->ncl >= (NONE >> 1) || FSC__VEC_RESERVE(w->cl, w->cap_cl, w->ncl + 1) != 0)
        return FSC_ENOMEM;
    wp_clique_t *q = &w->cl[w->ncl];
    memset(q, 0, sizeof *q);
    q->z = malloc((c->cnt.count ? c->cnt.count : 1) * sizeof *q->z);
    if (q->z == NULL)
        return FSC_ENOMEM;
    fsc__u64map_clear(&c->zset);
    for (size_t i = 0; c->cnt.slots != NULL && i <= c->cnt.mask; i++) {
        uint64_t k = c->cnt.slots[i].key;
        if (k == 0 || k - 1 == x)
            continue;
        q->z[q->nz++] = (uint32_t)(k - 1);
        if (fsc__u64map_put(&c->zset, k, 1) != 0) {
            free(q->z);
            return FSC_ENOMEM;
        }
    }
    qsort(q->z, q->nz, sizeof *q->z, u32_cmp);
    uint32_t id = (uint32_t)w->ncl++;
    w->row_bytes += q->nz * sizeof *q->z;
    w->walked += q->nz;
    for (size_t i = 0; i < q->nz; i++)
        if (mb_add(&w->segs[q->z[i]], id << 1 | 1, &w->row_bytes) != 0)
            return FSC_ENOMEM;
    c->clique = id;
    c->ndiff = fsc__u64map_get(&c->cnt, (uint64_t)x + 1, NULL); /* x itself */
    return 0;
}

/* A request served from free block b of segment x (b NULL: from a new
 * segment x) skipped every free block that fits of its stream and size
 * class that best fit would take before b: x shares no pool with their
 * segments. */
static int skipped_evidence(fsc_request_stream_t *rs, struct fsc__wpools *w, uint32_t x,
                            wp_gap_t *key, uint64_t r, const wp_gap_t *b)
{
    struct wp_cache *c = NULL;
    if (w->capped)
        return 0;
    if (cache_update(w, key, r, b, &c) != 0)
        return FSC_ENOMEM;
    if (w->capped) {
        cache_reset(c);
        return 0;
    }
    if (c->cnt.count < WP_CLIQUE_MIN) {
        for (size_t i = 0; c->cnt.slots != NULL && i <= c->cnt.mask; i++) {
            uint64_t k = c->cnt.slots[i].key;
            if (k != 0 && k - 1 != x && add_pair(rs->wpools, x, (uint32_t)(k - 1)) != 0)
                return FSC_ENOMEM;
        }
        c->clique = NONE;
        return 0;
    }
    /* the clique's set is the set less x when they differ in x at most */
    int x_differs = c->clique != NONE && (fsc__u64map_get(&c->cnt, (uint64_t)x + 1, NULL) !=
                                          fsc__u64map_get(&c->zset, (uint64_t)x + 1, NULL));
    if (c->clique == NONE || c->ndiff != (uint64_t)x_differs)
        if (clique_new(w, c, x) != 0)
            return FSC_ENOMEM;
    if (mb_add(&w->segs[x], c->clique << 1, &w->row_bytes) != 0)
        return FSC_ENOMEM;
    if (w->row_bytes > WP_ROW_BYTES)
        w->capped = 1;
    return 0;
}

/* The least cap the recording may have run under, as known so far: a
 * fallback whose new segment fits under it was no fallback (use_on_oom). */
static uint64_t cap_so_far(const fsc_request_stream_t *rs)
{
    if ((rs->flags & FSC_TRACE_F_CAPACITY_UNKNOWN) == 0)
        return rs->capacity;
    return rs->info.recorded_peak_reserved; /* the end's figure is at least this */
}

static int on_alloc(fsc_request_stream_t *rs, struct fsc__wpools *w, const fsc_event_t *ev)
{
    uint64_t id = rs->nallocs;
    uint32_t prev_seg = w->cur_seg;
    w->cur_seg = NONE;
    struct wp_fallback *last_fb = w->nfb > 0 && w->fb[w->nfb - 1].id + 1 == id
                                      ? &w->fb[w->nfb - 1]
                                      : NULL;
    uint32_t x;
    if (ev->type != FSC_EV_ALLOC || !seg_index(w, ev->segment, &x))
        return 0;
    w->cur_seg = x;
    if (last_fb != NULL)
        last_fb->next_seg = x;
    uint32_t created = w->created;
    w->created = NONE;
    w->last_alloc_seg = x;
    wp_seg_t *s = &w->segs[x];
    s->nallocs++;
    for (size_t k = 0; k < w->nwait;) {
        if (w->wait[k] != x) {
            w->segs[w->wait[k]].after = x;
            w->wait[k] = w->wait[--w->nwait];
        } else {
            k++;
        }
    }
    if (created == x) {
        s->first = id;
        if (FSC__VEC_RESERVE(w->wait, w->cap_wait, w->nwait + 1) != 0)
            return FSC_ENOMEM;
        w->wait[w->nwait++] = x;
    }
    if (ev->pool_id != 0 && !s->expandable) {
        /* MemPool(no_split=True): a block the split rule would split, whole */
        uint64_t r = fsc_alloc_round_size(&w->cfg, ev->requested ? ev->requested : ev->size);
        if (ev->size > r && fsc_alloc_should_split(&w->cfg, (fsc_pool_t)ev->pool, ev->size, r, 0)) {
            size_t j = 0;
            while (j < w->n_no_split && w->no_split[j] != ev->pool_id)
                j++;
            if (j == w->n_no_split && j < sizeof w->no_split / sizeof w->no_split[0])
                w->no_split[w->n_no_split++] = ev->pool_id;
        }
    }
    if (s->pool_id != 0 && created != x && w->infer) {
        uint64_t rounded = fsc_alloc_round_size(&w->cfg, ev->requested ? ev->requested : ev->size);
        if (rs->cur_reserved + fsc_alloc_segment_size(rounded) > cap_so_far(rs)) {
            if (FSC__VEC_RESERVE(w->fb, w->cap_fb, w->nfb + 1) != 0)
                return FSC_ENOMEM;
            w->fb[w->nfb++] = (struct wp_fallback){
                id, rs->cur_reserved, rounded, ev->pool_id, x, prev_seg, NONE, 0};
        }
    }
    if (s->expandable || !w->infer)
        return 0;
    size_t k = 0;
    while (k < s->npc && s->pc[k].addr != ev->addr)
        k++;
    if (k == s->npc || s->pc[k].gap == NULL || s->pc[k].size < ev->size)
        return 0; /* not the model's free block: nothing to learn */
    wp_gap_t *b = s->pc[k].gap;
    uint64_t r = fsc_alloc_round_size(&w->cfg, ev->requested ? ev->requested : ev->size);
    int is_new = created == x && s->npc == 1;
    /* Free blocks a same-pool request would have taken instead. */
    wp_gap_t key = {.stream = s->stream, .small = r <= FSC_MiB, .size = r, .addr = 0};
    if (skipped_evidence(rs, w, x, &key, r, is_new ? NULL : b) != 0)
        return FSC_ENOMEM;
    /* Carve the block out of the gap. */
    uint64_t rest = s->pc[k].size - ev->size;
    gap_drop(w, b);
    s->pc[k].gap = NULL;
    s->pc[k].size = ev->size;
    if (rest > 0) {
        wp_piece_t p = {ev->addr + ev->size, rest, gap_new(w, x, ev->addr + ev->size, rest)};
        if (p.gap == NULL || piece_insert(s, k + 1, p) != 0)
            return FSC_ENOMEM;
    }
    return 0;
}

/* The segment of ev whose free blocks the model keeps (not expandable,
 * while inferring), and its index; NULL otherwise. */
static wp_seg_t *modelled_seg(struct fsc__wpools *w, const fsc_event_t *ev, uint32_t *x)
{
    if (!seg_index(w, ev->segment, x))
        return NULL;
    wp_seg_t *s = &w->segs[*x];
    return s->expandable || !w->infer ? NULL : s;
}

static int on_free(struct fsc__wpools *w, const fsc_event_t *ev)
{
    uint32_t x;
    wp_seg_t *s = modelled_seg(w, ev, &x);
    if (s == NULL)
        return 0;
    size_t k = 0;
    while (k < s->npc && s->pc[k].addr != ev->addr)
        k++;
    if (k == s->npc || s->pc[k].gap != NULL)
        return 0;
    uint64_t addr = s->pc[k].addr, size = s->pc[k].size;
    if (k + 1 < s->npc && s->pc[k + 1].gap != NULL) {
        size += s->pc[k + 1].size;
        gap_drop(w, s->pc[k + 1].gap);
        piece_remove(s, k + 1);
    }
    if (k > 0 && s->pc[k - 1].gap != NULL) {
        addr = s->pc[k - 1].addr;
        size += s->pc[k - 1].size;
        gap_drop(w, s->pc[k - 1].gap);
        piece_remove(s, k - 1);
        k--;
    }
    s->pc[k].addr = addr;
    s->pc[k].size = size;
    s->pc[k].gap = gap_new(w, x, addr, size);
    return s->pc[k].gap == NULL ? FSC_ENOMEM : 0;
}

static int on_segment(fsc_request_stream_t *rs, struct fsc__wpools *w, const fsc_event_t *ev)
{
    int map = ev->type == FSC_EV_SEGMENT_MAP;
    uint64_t base = map ? ev->segment : ev->addr;
    uint32_t x;
    if (map && seg_index(w, base, &x)) {
        w->segs[x].mapped += ev->size; /* an expandable segment grows */
        return 0;
    }
    if (w->nsegs >= NONE - 1 || FSC__VEC_RESERVE(w->segs, w->cap_segs, w->nsegs + 1) != 0)
        return FSC_ENOMEM;
    x = (uint32_t)w->nsegs++;
    wp_seg_t *s = &w->segs[x];
    memset(s, 0, sizeof *s);
    s->base = base;
    s->size = ev->size;
    s->stream = ev->stream;
    s->pool_id = ev->pool_id;
    s->prev = w->last_alloc_seg;
    s->first = UINT64_MAX;
    s->after = NONE;
    s->expandable = (uint8_t)map;
    s->small = map ? ev->pool == FSC_POOL_SMALL : ev->size == 2 * FSC_MiB;
    s->mapped = map ? ev->size : 0;
    w->created = x;
    if (fsc__u64map_put(&w->live, base, x) != 0)
        return FSC_ENOMEM;
    if (map && w->infer) {
        /* A pool keeps one expandable segment per stream and size class
         * (its address space is the device's, never exhausted): a second
         * one, while the first is mapped, is another pool's. */
        for (uint32_t y = 0; y < x; y++) {
            const wp_seg_t *o = &w->segs[y];
            if (o->expandable && o->mapped > 0 && o->stream == s->stream && o->small == s->small &&
                add_pair(w, x, y) != 0)
                return FSC_ENOMEM;
        }
    }
    if (map || !w->infer)
        return 0;
    wp_piece_t p = {base, ev->size, gap_new(w, x, base, ev->size)};
    (void)rs;
    return p.gap == NULL ? FSC_ENOMEM : piece_insert(s, 0, p);
}

static void on_segment_free(fsc_request_stream_t *rs, struct fsc__wpools *w,
                            const fsc_event_t *ev)
{
    uint32_t x;
    uint64_t base = ev->type == FSC_EV_SEGMENT_UNMAP ? ev->segment : ev->addr;
    if (!seg_index(w, base, &x))
        return;
    wp_seg_t *s = &w->segs[x];
    if (ev->type == FSC_EV_SEGMENT_UNMAP) {
        /* released when nothing of it is mapped any more */
        s->mapped -= ev->size < s->mapped ? ev->size : s->mapped;
        if (s->mapped == 0) {
            s->burst = rs->open_release;
            uint64_t v;
            fsc__u64map_del(&w->live, base, &v);
        }
        return;
    }
    s->burst = rs->open_release; /* 1 + op index of the burst (whatif_stream.c) */
    for (size_t k = 0; k < s->npc; k++)
        gap_drop(w, s->pc[k].gap);
    free(s->pc);
    s->pc = NULL;
    s->npc = s->cap_pc = 0;
    uint64_t v;
    fsc__u64map_del(&w->live, base, &v);
}

static struct fsc__wpools *model_get(fsc_request_stream_t *rs)
{
    struct fsc__wpools *w = rs->wpools;
    if (w == NULL) {
        if ((w = calloc(1, sizeof *w)) == NULL)
            return NULL;
        if (fsc_alloc_config_parse(rs->config, &w->cfg, NULL) != 0) {
            fsc_alloc_config_t d = FSC_ALLOC_CONFIG_DEFAULT;
            w->cfg = d;
        }
        fsc__u64map_init(&w->live);
        RB_INIT(&w->gaps);
        for (int k = 0; k < WP_CACHES; k++) {
            fsc__u64map_init(&w->wc[k].cnt);
            fsc__u64map_init(&w->wc[k].zset);
            w->wc[k].clique = NONE;
        }
        w->last_alloc_seg = w->created = w->cur_seg = NONE;
        w->infer = rs->infer_pools;
        /* FRAGSCOPE_WHATIF_PAIR_STEPS: the walk's fixed allowance (tests) */
        w->walk_floor = WP_WALK_FLOOR;
        const char *e = getenv("FRAGSCOPE_WHATIF_PAIR_STEPS");
        if (e != NULL && *e != '\0') {
            char *end = NULL;
            unsigned long long v = strtoull(e, &end, 10);
            if (end != e && *end == '\0')
                w->walk_floor = v;
        }
        rs->wpools = w;
    }
    return w;
}

/* A live block of the starting state: carved out of the gap that holds it
 * (it need not start one), with nothing learnt: no request chose it. */
static int seed_block(struct fsc__wpools *w, const fsc_event_t *ev)
{
    uint32_t x;
    wp_seg_t *s = modelled_seg(w, ev, &x);
    if (s == NULL)
        return 0;
    size_t k = 0;
    while (k < s->npc && s->pc[k].addr + s->pc[k].size <= ev->addr)
        k++;
    if (k == s->npc || s->pc[k].gap == NULL || s->pc[k].addr > ev->addr ||
        ev->addr + ev->size > s->pc[k].addr + s->pc[k].size)
        return 0;
    uint64_t lo = s->pc[k].addr, hi = lo + s->pc[k].size, end = ev->addr + ev->size;
    gap_drop(w, s->pc[k].gap);
    s->pc[k] = (wp_piece_t){ev->addr, ev->size, NULL};
    if (end < hi) {
        wp_piece_t p = {end, hi - end, gap_new(w, x, end, hi - end)};
        if (p.gap == NULL || piece_insert(s, k + 1, p) != 0)
            return FSC_ENOMEM;
    }
    if (lo < ev->addr) {
        wp_piece_t p = {lo, ev->addr - lo, gap_new(w, x, lo, ev->addr - lo)};
        if (p.gap == NULL || piece_insert(s, k, p) != 0)
            return FSC_ENOMEM;
    }
    return 0;
}

uint32_t fsc__wpools_seg_of(const fsc_request_stream_t *rs, uint64_t base)
{
    uint32_t x;
    return rs->wpools != NULL && seg_index(rs->wpools, base, &x) ? x : NONE;
}

int fsc__wpools_on_seed(fsc_request_stream_t *rs, const fsc_event_t *ev)
{
    struct fsc__wpools *w = model_get(rs);
    if (w == NULL)
        return FSC_ENOMEM;
    int rc = 0;
    switch (ev->type) {
    case FSC_EV_SEGMENT_ALLOC:
    case FSC_EV_SEGMENT_MAP:
        rc = on_segment(rs, w, ev);
        w->created = NONE; /* no request of the window created it */
        return rc;
    case FSC_EV_ALLOC: return seed_block(w, ev);
    default: return 0;
    }
}

int fsc__wpools_on_event(fsc_request_stream_t *rs, const fsc_event_t *ev, int after)
{
    struct fsc__wpools *w = model_get(rs);
    if (w == NULL)
        return FSC_ENOMEM;
    w->events += !after;
    if (!after) {
        /* Before the stream takes the event: alloc ids are still the event's. */
        return ev->type == FSC_EV_ALLOC || ev->type == FSC_EV_OOM ? on_alloc(rs, w, ev) : 0;
    }
    switch (ev->type) {
    case FSC_EV_FREE_COMPLETED: return on_free(w, ev);
    case FSC_EV_SEGMENT_ALLOC:
    case FSC_EV_SEGMENT_MAP: return on_segment(rs, w, ev);
    case FSC_EV_SEGMENT_FREE:
    case FSC_EV_SEGMENT_UNMAP: on_segment_free(rs, w, ev); return 0;
    default: return 0;
    }
}

static void model_free(struct fsc__wpools *w)
{
    if (w == NULL)
        return;

    for (size_t i = 0; i < w->nsegs; i++) {
        free(w->segs[i].pc);
        free(w->segs[i].mb);
        row_free(&w->segs[i].row);
    }
    for (size_t i = 0; i < w->ncl; i++) {
        free(w->cl[i].z);
        free(w->cl[i].lx.c);
        free(w->cl[i].lz.c);
    }
    free(w->cl);
    for (int k = 0; k < WP_CACHES; k++) {
        fsc__u64map_free(&w->wc[k].cnt);
        fsc__u64map_free(&w->wc[k].zset);
        free(w->wc[k].log);
    }
    wp_gap_t *g, *n;
    for (g = RB_MIN(fsc__wp_tree, &w->gaps); g != NULL; g = n) {
        n = RB_NEXT(fsc__wp_tree, &w->gaps, g);
        RB_REMOVE(fsc__wp_tree, &w->gaps, g);
        free(g);
    }
    free(w->segs);
    free(w->wait);
    free(w->fb);
    fsc__u64map_free(&w->live);
    free(w);
}

void fsc__wpools_free(fsc_request_stream_t *rs)
{
    model_free(rs->wpools);
    rs->wpools = NULL;
    free(rs->pool_rel);
    rs->pool_rel = NULL;
    rs->npool_rel = 0;
    free(rs->pool_flags);
    rs->pool_flags = NULL;
}

/* ---- MemPool use_on_oom ----------------------------------------------------- */

/* 1 when a request landed in segment seg, a default-pool one. */
static int in_default(const struct fsc__wpools *w, uint32_t seg)
{
    return seg != NONE && w->segs[seg].label == 0;
}

/* A request served from a cached block of private pool P between
 * default-pool requests, when a new segment for it would not have fit
 * under the cap the recording ran under, is a default-pool request that
 * PyTorch's try_mempool_fallback handed to P: P was created with
 * use_on_oom. Replayed as a default-pool request, with P flagged, so that
 * other settings and caps fall back only when they need to. Returns the
 * number of requests so recognised. */
static uint64_t use_on_oom(fsc_request_stream_t *rs, struct fsc__wpools *w)
{
    uint64_t cap = fsc__wstream_recorded_cap(rs), n = 0;
    if (cap == 0)
        return 0; /* no cap: nothing refused a new segment but the device */
    for (size_t i = 0; i < w->nfb; i++) {
        struct wp_fallback *f = &w->fb[i];
        if (f->id == 0 || !in_default(w, f->prev_seg))
            continue;
        if (f->next_seg != NONE && !in_default(w, f->next_seg))
            continue;
        if (f->reserved + fsc_alloc_segment_size(f->rounded) <= cap)
            continue;
        f->flagged = 1;
        n++;
    }
    return n;
}

/* ---- labelling ------------------------------------------------------------- */

/* Calls fn(ud, j) for each segment j in row r until fn returns nonzero;
 * returns that value, or 0. */
static int row_each(const wp_row_t *r, int (*fn)(void *, uint32_t), void *ud)
{
    int rc = 0;
    if (r->bits != NULL) {
        for (uint32_t k = 0; k < r->nwords && rc == 0; k++)
            for (uint64_t x = r->bits[k]; x != 0 && rc == 0; x &= x - 1)
                rc = fn(ud, k * 64 + (uint32_t)__builtin_ctzll(x));
        return rc;
    }
    for (uint32_t i = 0; i < r->cap && rc == 0; i++)
        if (r->slot[i] != 0)
            rc = fn(ud, r->slot[i] - 1);
    return rc;
}

typedef struct {
    const struct fsc__wpools *w;
    uint32_t label, stamp;
    uint32_t *mark;
} label_walk_t;

static int has_label(void *ud, uint32_t j)
{
    const label_walk_t *lw = ud;
    return lw->w->segs[j].label == lw->label;
}

/* ---- the cliques' labels, counted per side ---- */

static int side_add(wp_side_t *sd, uint32_t label, int d)
{
    if (label == NONE)
        return 0;
    for (size_t i = 0; i < sd->n; i++)
        if (sd->c[i].label == label) {
            sd->c[i].n += (uint32_t)d;
            return 0;
        }
    if (d < 0)
        return 0;
    if (FSC__VEC_RESERVE(sd->c, sd->cap, sd->n + 1) != 0)
        return FSC_ENOMEM;
    sd->c[sd->n++] = (struct wp_lc){label, (uint32_t)d};
    return 0;
}

static wp_side_t *side_of(struct fsc__wpools *w, uint32_t m, int other)
{
    wp_clique_t *q = &w->cl[m >> 1];
    return ((m & 1) != 0) != (other != 0) ? &q->lz : &q->lx;
}

/* Every segment's label into the counts of the cliques it is in. */
static int count_labels(struct fsc__wpools *w)
{
    for (size_t i = 0; i < w->nsegs; i++)
        for (size_t k = 0; k < w->segs[i].nmb; k++)
            if (side_add(side_of(w, w->segs[i].mb[k], 0), w->segs[i].label, 1) != 0)
                return FSC_ENOMEM;
    return 0;
}

static int set_label(struct fsc__wpools *w, uint32_t s, uint32_t l)
{
    wp_seg_t *g = &w->segs[s];
    if (g->label == l)
        return 0;
    for (size_t k = 0; k < g->nmb; k++) {
        wp_side_t *sd = side_of(w, g->mb[k], 0);
        side_add(sd, g->label, -1);
        if (side_add(sd, l, 1) != 0)
            return FSC_ENOMEM;
    }
    g->label = l;
    return 0;
}

/* How many of segment s's own places in clique m's other side there are
 * (s requested from a set it is in): its label there is not a pair. */
static uint32_t self_in_other(const wp_seg_t *g, uint32_t m)
{
    uint32_t n = 0;
    for (size_t k = 0; k < g->nmb; k++)
        n += g->mb[k] == (m ^ 1);
    return n;
}

/* The labels the cliques of segment s forbid it: mark[l] = stamp, or,
 * with mark NULL, 1 when they forbid l. */
static int cliques_forbid(struct fsc__wpools *w, uint32_t s, uint32_t l, uint32_t *mark,
                          uint32_t stamp)
{
    const wp_seg_t *g = &w->segs[s];
    for (size_t k = 0; k < g->nmb; k++) {
        const wp_side_t *sd = side_of(w, g->mb[k], 1);
        for (size_t i = 0; i < sd->n; i++) {
            uint32_t n = sd->c[i].n;
            if (n != 0 && sd->c[i].label == g->label) {
                uint32_t self = self_in_other(g, g->mb[k]);
                n -= self <= n ? self : n;
            }
            if (n == 0)
                continue;
            if (mark != NULL)
                mark[sd->c[i].label] = stamp;
            else if (sd->c[i].label == l)
                return 1;
        }
    }
    return 0;
}

/* 1 when no pair forbids segment s the label l. */
static int allowed(struct fsc__wpools *w, uint32_t s, uint32_t l)
{
    label_walk_t lw = {w, l, 0, NULL};
    return !row_each(&w->segs[s].row, has_label, &lw) && !cliques_forbid(w, s, l, NULL, 0);
}

static int note_label(void *ud, uint32_t j)
{
    const label_walk_t *lw = ud;
    uint32_t l = lw->w->segs[j].label;
    if (l != NONE)
        lw->mark[l] = lw->stamp;
    return 0;
}

/* Every label segment s's pairs forbid: mark[l] = stamp (labels are below
 * npools + nsegs + 2, label_segments). One walk of the row however many labels are
 * tried, so that a recording of many pools is not labelled in cubic time. */
static void mark_forbidden(struct fsc__wpools *w, uint32_t s, uint32_t *mark, uint32_t stamp)
{
    label_walk_t lw = {w, NONE, stamp, mark};
    row_each(&w->segs[s].row, note_label, &lw);
    cliques_forbid(w, s, NONE, mark, stamp);
}

static int unknown(const wp_seg_t *s)
{
    return s->pool_id == 0 && s->burst != 0;
}

static int pool_label(fsc_request_stream_t *rs, uint64_t id, uint32_t *label)
{
    return fsc__wstream_pool_index(rs, id, label);
}

typedef struct {
    size_t burst;
    uint32_t seg;
} burst_seg_t;

/* qsort order: by release burst, then segment index. */
static int by_burst(const void *pa, const void *pb)
{
    const burst_seg_t *a = pa, *b = pb;
    if (a->burst != b->burst)
        return a->burst < b->burst ? -1 : 1;
    return a->seg < b->seg ? -1 : a->seg > b->seg;
}

static int label_segments(fsc_request_stream_t *rs, struct fsc__wpools *w)
{
    uint32_t first_inferred = 0, ninferred = 0;
    for (size_t i = 0; i < w->nsegs; i++) {
        wp_seg_t *s = &w->segs[i];
        s->label = unknown(s) ? NONE : 0; /* undecided matches no label */
        if (s->pool_id != 0 && pool_label(rs, s->pool_id, &s->label) != 0)
            return FSC_ENOMEM;
    }
    if (count_labels(w) != 0)
        return FSC_ENOMEM;
    /* labels: the pools named so far, and at most one inferred per segment */
    uint32_t *mark = calloc(rs->npools + w->nsegs + 2, sizeof *mark); /* stamp: i + 1 */
    if (mark == NULL)
        return FSC_ENOMEM;
    for (size_t i = 0; i < w->nsegs; i++) {
        wp_seg_t *s = &w->segs[i];
        if (!unknown(s))
            continue;
        uint32_t stamp = (uint32_t)i + 1;
        mark_forbidden(w, (uint32_t)i, mark, stamp);
        uint32_t want = NONE, pick = NONE;
        if (s->prev != NONE) {
            uint32_t pl = w->segs[s->prev].label;
            if (pl == 0 || (ninferred > 0 && pl >= first_inferred))
                want = pl;
        }
        if (want != NONE && mark[want] != stamp)
            pick = want;
        else if (mark[0] != stamp)
            pick = 0;
        for (uint32_t l = first_inferred;
             pick == NONE && ninferred > 0 && l < first_inferred + ninferred; l++)
            if (mark[l] != stamp)
                pick = l;
        if (pick == NONE) {
            if (pool_label(rs, INFERRED_BASE + ninferred + 1, &pick) != 0) {
                free(mark);
                return FSC_ENOMEM;
            }
            if (ninferred == 0)
                first_inferred = pick;
            ninferred++;
        }
        if (set_label(w, (uint32_t)i, pick) != 0) {
            free(mark);
            return FSC_ENOMEM;
        }
    }
    free(mark);
    if (ninferred == 0)
        return 0;
    /* The segments of each release burst, in index order: grp[gat[i]] up
     * to grp[gend[i]] are those of segment i's burst (released segments
     * only). The two passes below look within a burst alone, so a long
     * recording of many bursts is not compared segment by segment. */
    uint32_t *grp = NULL, *gat = NULL, *gend = NULL;
    burst_seg_t *bs = NULL;
    size_t ng = 0;
    int rc = 0;
    fsc__u64map_t done; /* burst << 32 | label: that burst checked for that pool */
    fsc__u64map_init(&done);
    if ((bs = malloc((w->nsegs + 1) * sizeof *bs)) == NULL ||
        (grp = malloc((w->nsegs + 1) * sizeof *grp)) == NULL ||
        (gat = malloc((w->nsegs + 1) * sizeof *gat)) == NULL ||
        (gend = malloc((w->nsegs + 1) * sizeof *gend)) == NULL) {
        rc = FSC_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < w->nsegs; i++)
        if (w->segs[i].burst != 0)
            bs[ng++] = (burst_seg_t){w->segs[i].burst, (uint32_t)i};
    qsort(bs, ng, sizeof *bs, by_burst);
    for (size_t k = 0; k < ng; k++)
        grp[k] = bs[k].seg;
    free(bs);
    bs = NULL;
    for (size_t k = 0; k < ng;) {
        size_t e = k + 1;
        while (e < ng && w->segs[grp[e]].burst == w->segs[grp[k]].burst)
            e++;
        for (size_t m = k; m < e; m++) {
            gat[grp[m]] = (uint32_t)k;
            gend[grp[m]] = (uint32_t)e;
        }
        k = e;
    }
    /* Requests between two of an inferred pool's were made in that pool
     * too (the program was inside one use_mem_pool or capture): a segment
     * labelled default whose creating request sits between requests of
     * pool L, freed where L was released, is L's when nothing forbids. */
    for (size_t i = 0; i < w->nsegs; i++) {
        wp_seg_t *s = &w->segs[i];
        if (!unknown(s) || s->label != 0 || s->first == UINT64_MAX)
            continue;
        uint32_t next = s->after != NONE ? w->segs[s->after].label : NONE;
        uint32_t prev = s->prev != NONE ? w->segs[s->prev].label : NONE;
        if (next == NONE || next == 0 || next < first_inferred || (prev != NONE && prev != next))
            continue;
        int same_burst = 0;
        for (size_t m = gat[i]; m < gend[i] && !same_burst; m++)
            same_burst = grp[m] != i && w->segs[grp[m]].label == next;
        if (same_burst && allowed(w, (uint32_t)i, next) && set_label(w, (uint32_t)i, next) != 0) {
            rc = FSC_ENOMEM;
            goto out;
        }
    }
    /* Fewest program actions: a burst that freed an inferred pool's
     * segments is that pool's release alone when its default-labelled
     * segments may all be that pool's. (Checking a burst for a pool a
     * second time changes nothing: each burst and pool once.) */
    for (size_t i = 0; i < w->nsegs; i++) {
        const wp_seg_t *p = &w->segs[i];
        if (!unknown(p) || p->label < first_inferred)
            continue;
        uint64_t key = (uint64_t)p->burst << 32 | p->label, seen;
        if (fsc__u64map_get(&done, key, &seen))
            continue;
        if (fsc__u64map_put(&done, key, 1) != 0) {
            rc = FSC_ENOMEM;
            goto out;
        }
        int ok = 1, any = 0;
        for (size_t m = gat[i]; m < gend[i] && ok; m++) {
            wp_seg_t *q = &w->segs[grp[m]];
            if (!unknown(q) || q->label != 0)
                continue;
            any = 1;
            if (set_label(w, grp[m], NONE) != 0) {
                rc = FSC_ENOMEM;
                goto out;
            }
            ok = allowed(w, grp[m], p->label);
            if (set_label(w, grp[m], 0) != 0) {
                rc = FSC_ENOMEM;
                goto out;
            }
        }
        if (!any || !ok)
            continue;
        for (size_t m = gat[i]; m < gend[i]; m++) {
            wp_seg_t *q = &w->segs[grp[m]];
            if (unknown(q) && q->label == 0 && allowed(w, grp[m], p->label) &&
                set_label(w, grp[m], p->label) != 0) {
                rc = FSC_ENOMEM;
                goto out;
            }
        }
    }
out:
    free(bs);
    free(grp);
    free(gat);
    free(gend);
    fsc__u64map_free(&done);
    return rc;
}

static int release_points(fsc_request_stream_t *rs, const struct fsc__wpools *w)
{
    size_t cap_pool_only = 0;
    free(rs->pool_only);
    rs->pool_only = NULL;
    rs->npool_only = 0;
    for (size_t i = 0; i < w->nsegs; i++) {
        const wp_seg_t *s = &w->segs[i];
        if (s->label == 0 || s->burst == 0)
            continue;
        size_t op = s->burst - 1;
        size_t k = 0;
        while (k < rs->npool_rel && rs->pool_rel[k].pool != s->label)
            k++;
        if (k < rs->npool_rel) {
            if (rs->pool_rel[k].op > op)
                rs->pool_rel[k].op = op;
            continue;
        }
        if (FSC__VEC_RESERVE(rs->pool_rel, rs->cap_pool_rel, rs->npool_rel + 1) != 0)
            return FSC_ENOMEM;
        rs->pool_rel[rs->npool_rel++] = (fsc__wpool_rel_t){op, s->label};
    }
    /* In op order (few entries). */
    for (size_t i = 1; i < rs->npool_rel; i++)
        for (size_t j = i; j > 0 && rs->pool_rel[j - 1].op > rs->pool_rel[j].op; j--) {
            fsc__wpool_rel_t t = rs->pool_rel[j];
            rs->pool_rel[j] = rs->pool_rel[j - 1];
            rs->pool_rel[j - 1] = t;
        }
    /* Bursts that freed no default-pool segment are pool releases only. */
    for (size_t k = 0; k < rs->npool_rel; k++) {
        size_t op = rs->pool_rel[k].op;
        int dflt = 0;
        for (size_t i = 0; i < w->nsegs && !dflt; i++)
            dflt = w->segs[i].burst == op + 1 && w->segs[i].label == 0;
        /* the op at a burst's index is its RELEASE (whatif_stream.c) */
        if (!dflt && op < rs->nops) {
            if (FSC__VEC_RESERVE(rs->pool_only, cap_pool_only, rs->npool_only + 1) != 0)
                return FSC_ENOMEM;
            rs->pool_only[rs->npool_only++] = op;
        }
    }
    return 0;
}

int fsc__wpools_finish(fsc_request_stream_t *rs)
{
    struct fsc__wpools *w = rs->wpools;
    if (w == NULL)
        return 0;
    int rc = 0;
    if (label_segments(rs, w) != 0) {
        rc = FSC_ENOMEM;
        goto out;
    }
    free(rs->seg_pool);
    free(rs->fb_ids);
    rs->seg_pool = calloc(w->nsegs ? w->nsegs : 1, sizeof *rs->seg_pool);
    rs->fb_ids = NULL;
    rs->nseg_pool = rs->nfb_ids = 0;
    if (rs->seg_pool == NULL ||
        FSC__VEC_RESERVE(rs->pool_flags, rs->cap_pool_flags, rs->npools + 1) != 0) {
        rc = FSC_ENOMEM;
        goto out;
    }
    rs->nseg_pool = w->nsegs;
    memset(rs->pool_flags, 0, rs->cap_pool_flags);
    if (w->nfb > 0)
        rs->info.use_on_oom_allocs = use_on_oom(rs, w);
    /* Requests follow their segment's pool (the cursor applies it). */
    for (size_t i = 0; i < w->nsegs; i++) {
        const wp_seg_t *s = &w->segs[i];
        if (unknown(s) && s->label != 0) {
            rs->seg_pool[i] = s->label;
            rs->info.inferred_pool_allocs += s->nallocs;
        }
    }
    /* A fallback is replayed as the default-pool request it was, its pool
     * flagged use_on_oom. */
    size_t cap_fb_ids = 0;
    for (size_t i = 0; i < w->nfb; i++) {
        const struct wp_fallback *f = &w->fb[i];
        if (!f->flagged)
            continue;
        uint32_t pool = rs->seg_pool[f->seg];
        uint64_t k1;
        if (pool == 0 && f->pool_id != 0 && fsc__u64map_get(&rs->pool_index, f->pool_id, &k1))
            pool = (uint32_t)k1;
        if (pool == 0)
            continue;
        rs->pool_flags[pool - 1] |= FSC_POOL_USE_ON_OOM;
        if (FSC__VEC_RESERVE(rs->fb_ids, cap_fb_ids, rs->nfb_ids + 1) != 0) {
            rc = FSC_ENOMEM;
            goto out;
        }
        rs->fb_ids[rs->nfb_ids++] = f->id;
    }
    for (size_t k = 0; k < rs->npools; k++) {
        for (size_t j = 0; j < w->n_no_split; j++)
            if (rs->pool_ids[k] == w->no_split[j])
                rs->pool_flags[k] |= FSC_POOL_NO_SPLIT;
        rs->info.use_on_oom_pools += (rs->pool_flags[k] & FSC_POOL_USE_ON_OOM) != 0;
        rs->info.no_split_pools += (rs->pool_flags[k] & FSC_POOL_NO_SPLIT) != 0;
    }
    for (size_t i = 0; i < w->nsegs; i++)
        if (unknown(&w->segs[i]) && w->segs[i].label != 0)
            rs->info.inferred_pool_segments++;
    for (size_t k = 0; k < rs->npools; k++)
        if (rs->pool_ids[k] > INFERRED_BASE)
            rs->info.inferred_pools++;
    rs->info.pool_inference_capped = w->capped;
    rc = release_points(rs, w);
out:
    model_free(w);
    rs->wpools = NULL;
    return rc;
}

uint32_t fsc__wpools_alloc_seg(const fsc_request_stream_t *rs)
{
    return rs->wpools != NULL ? rs->wpools->cur_seg : NONE;
}

int fsc__wpool_is_inferred(uint64_t pool_id)
{
    return pool_id > INFERRED_BASE;
}
