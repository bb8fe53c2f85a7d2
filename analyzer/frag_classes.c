/*
 * frag_classes.c — the split of reserved − allocated into soft, hard,
 * stream, private_pool and pending bytes (frag_classes.h says why and how it
 * is fed; docs/metrics.md defines each class).
 *
 * Incremental part: every segment contributes fixed parts (reserved,
 * pending, private_pool, soft, pinned) that do not depend on who asks; the
 * pinned bytes are summed per stream, so the split for any asking stream
 * is O(1): hard = the asking stream's pinned bytes, stream = the others'.
 * The stream table is a u64map from stream id to a small array slot (the
 * default stream, id 0, which the map cannot hold, has its own field); a
 * segment remembers its slot.
 *
 * Layout part: at the allocated peak and at each OOM the same parts are
 * worked out from a block layout, and the hard bytes of every segment are
 * attributed to the live blocks pinning them (whole segments: in proportion
 * to the blocks' sizes; expandable segments: the partial pages to the live
 * block sharing them), which gives the rows of frag_hard_blocks and
 * frag_hard_tags. The store writes all of it (store.c).
 */
#include <stdlib.h>
#include <string.h>

#include "fsc/vec.h"
#include "replay.h"

#define TOP_TAGS FSC__FRAG_TOP_TAGS
#define TOP_BLOCKS FSC__FRAG_TOP_BLOCKS

void fsc__frag_init(fsc__frag_state_t *f)
{
    memset(f, 0, sizeof *f);
    fsc__u64map_init(&f->stream_idx);
}

void fsc__frag_free(fsc__frag_state_t *f)
{
    fsc__u64map_free(&f->stream_idx);
    free(f->streams);
    f->streams = NULL;
    f->nstreams = f->cap = 0;
}

/* ---- the parts of one segment ------------------------------------------- */

static uint64_t page_of(int pool)
{
    return pool ? FSC__FRAG_PAGE_LARGE : FSC__FRAG_PAGE_SMALL;
}

/* Whole pages of [addr, addr+size), pages counted from the segment base. */
static uint64_t paged(uint64_t base, int pool, int expandable, uint64_t addr, uint64_t size)
{
    if (!expandable || addr < base)
        return 0;
    uint64_t pg = page_of(pool), lo = addr - base, hi = lo + size;
    uint64_t up = (lo + pg - 1) / pg * pg, down = hi / pg * pg;
    return down > up ? down - up : 0;
}

uint64_t fsc__frag_paged(const fsc__seg_t *s, uint64_t addr, uint64_t size)
{
    return paged(s->base, s->pool, s->expandable, addr, size);
}

/* The parts from a segment's figures: pending first, then free bytes of a
 * private pool, then free bytes empty_cache() returns (the whole segment
 * when nothing in it is live; only whole free pages of an expandable
 * segment otherwise), the rest pinned by its live blocks. */
static void parts_from(uint64_t size, uint64_t nblocks, uint64_t live, uint64_t free_bytes,
                       uint64_t paged_free, uint64_t pending, uint64_t pool_id, int expandable,
                       fsc__frag_parts_t *p)
{
    memset(p, 0, sizeof *p);
    if (nblocks == 0)
        return; /* being released, or nothing mapped */
    p->reserved = size;
    p->pending = pending;
    if (pool_id != 0) {
        p->private_pool = free_bytes;
        return;
    }
    p->soft = live == 0 ? free_bytes : expandable ? paged_free : 0;
    p->pinned = free_bytes - p->soft;
}

static void parts_of_seg(const fsc__seg_t *s, fsc__frag_parts_t *p)
{
    parts_from(s->size, s->nblocks, s->nblocks - s->nfree, s->free_bytes, s->paged_free,
               s->pending_bytes, s->pool_id, s->expandable, p);
}

/* ---- incremental state -------------------------------------------------- */

/* Index + 1 of a stream's slot, 0 when it has none. */
static uint64_t slot_of(const fsc__frag_state_t *f, uint64_t stream)
{
    uint64_t i = 0;
    if (stream == 0)
        return f->zero_si;
    return fsc__u64map_get(&f->stream_idx, stream, &i) ? i : 0;
}

int fsc__frag_seg_new(fsc__replay_t *a, fsc__seg_t *s)
{
    fsc__frag_state_t *f = &a->frag;
    uint64_t i = slot_of(f, s->stream);
    if (i == 0) {
        if (FSC__VEC_RESERVE(f->streams, f->cap, f->nstreams + 1) != 0)
            return FSC_ENOMEM;
        if (s->stream == 0)
            f->zero_si = (uint32_t)(f->nstreams + 1);
        else if (fsc__u64map_put(&f->stream_idx, s->stream, f->nstreams + 1) != 0)
            return FSC_ENOMEM;
        memset(&f->streams[f->nstreams], 0, sizeof f->streams[0]);
        f->streams[f->nstreams].stream = s->stream;
        i = ++f->nstreams;
    }
    s->frag_si = (uint32_t)i;
    return 0;
}

void fsc__frag_free_add(fsc__seg_t *s, const fsc__blk_t *b)
{
    s->paged_free += fsc__frag_paged(s, b->addr, b->size);
}

void fsc__frag_free_sub(fsc__seg_t *s, const fsc__blk_t *b)
{
    s->paged_free -= fsc__frag_paged(s, b->addr, b->size);
}

static void apply(fsc__replay_t *a, const fsc__seg_t *s, int add)
{
    fsc__frag_state_t *f = &a->frag;
    fsc__frag_parts_t p;
    parts_of_seg(s, &p);
    int k = s->pool ? 1 : 0;
    uint64_t *pin = s->frag_si ? &f->streams[s->frag_si - 1].pinned[k] : NULL;
#define MOVE(dst, v) ((dst) = add ? (dst) + (v) : (dst) - (v))
    MOVE(f->reserved[k], p.reserved);
    MOVE(f->pending[k], p.pending);
    MOVE(f->private_pool[k], p.private_pool);
    MOVE(f->soft[k], p.soft);
    MOVE(f->pinned[k], p.pinned);
    if (pin != NULL)
        MOVE(*pin, p.pinned);
#undef MOVE
}

void fsc__frag_seg_out(fsc__replay_t *a, const fsc__seg_t *s)
{
    apply(a, s, 0);
}

void fsc__frag_seg_in(fsc__replay_t *a, const fsc__seg_t *s)
{
    apply(a, s, 1);
}

void fsc__frag_pending_add(fsc__replay_t *a, fsc__seg_t *s, uint64_t size)
{
    apply(a, s, 0);
    s->pending_bytes += size;
    apply(a, s, 1);
}

static uint64_t pinned_of(const fsc__frag_state_t *f, uint64_t stream, int k)
{
    uint64_t i = slot_of(f, stream);
    return i ? f->streams[i - 1].pinned[k] : 0;
}

void fsc__frag_now(const fsc__replay_t *a, uint64_t ask_stream, fsc__frag_point_t *out)
{
    const fsc__frag_state_t *f = &a->frag;
    memset(out, 0, sizeof *out);
    out->seq = a->seq;
    out->time = a->last_time;
    out->ask_stream = ask_stream;
    for (int k = 0; k < 2; k++) {
        fsc__frag_t *c = &out->cls[k];
        uint64_t hard = pinned_of(f, ask_stream, k);
        c->pending = f->pending[k];
        c->private_pool = f->private_pool[k];
        c->soft = f->soft[k];
        c->hard = hard;
        c->stream = f->pinned[k] - hard;
        out->reserved[k] = f->reserved[k];
        out->allocated[k] =
            f->reserved[k] - (f->pending[k] + f->private_pool[k] + f->soft[k] + f->pinned[k]);
    }
    fsc__frag_t *t = &out->cls[FSC__FRAG_ALL];
    for (int k = 0; k < 2; k++) {
        t->soft += out->cls[k].soft;
        t->hard += out->cls[k].hard;
        t->stream += out->cls[k].stream;
        t->private_pool += out->cls[k].private_pool;
        t->pending += out->cls[k].pending;
        out->reserved[FSC__FRAG_ALL] += out->reserved[k];
        out->allocated[FSC__FRAG_ALL] += out->allocated[k];
    }
    out->valid = 1;
}

void fsc__frag_sample(const fsc__replay_t *a, fsc__frag_sample_t *out)
{
    fsc__frag_point_t p;
    fsc__frag_now(a, a->frag.ask_stream, &p);
    out->ask_stream = p.ask_stream;
    memcpy(out->cls, p.cls, sizeof out->cls);
}

void fsc__frag_event(fsc__replay_t *a, int type, uint64_t stream, uint64_t addr)
{
    fsc__frag_state_t *f = &a->frag;
    if (type == FSC_EV_ALLOC)
        f->ask_stream = stream;
    if (a->peak_allocated > f->last_peak_alloc) {
        f->last_peak_alloc = a->peak_allocated;
        fsc__frag_now(a, f->ask_stream, &f->peak_alloc);
    }
    /* Peak reserved is reached by a SEGMENT_ALLOC or SEGMENT_MAP; the split
     * is taken once the allocator step it belongs to is over, after the
     * SPLIT and ALLOC the new memory was created for. */
    if (a->peak_reserved > f->last_peak_res) {
        f->last_peak_res = a->peak_reserved;
        fsc__frag_now(a, stream, &f->peak_res);
        f->peak_res_open = type == FSC_EV_SEGMENT_ALLOC || type == FSC_EV_SEGMENT_MAP;
    } else if (f->peak_res_open) {
        const fsc__blk_t *b = type == FSC_EV_ALLOC ? fsc__u64map_getp(&a->blocks, addr) : NULL;
        if ((type == FSC_EV_SPLIT && a->pending_miss_seg != 0) ||
            (b != NULL && !b->cache_hit)) {
            fsc__frag_now(a, stream, &f->peak_res);
            f->peak_res_open = type == FSC_EV_SPLIT;
        } else {
            f->peak_res_open = 0;
        }
    }
}

/* ---- the same from a block layout, and who pins the hard bytes ---------- */

typedef struct share {
    size_t img;        /* index of the pinning block */
    uint64_t hard;     /* hard bytes attributed to it */
    uint64_t addr;     /* its address and tag, for sorting */
    uint32_t tag;
} share_t;

typedef struct shares {
    share_t *v;
    size_t n, cap;
    int failed;
} shares_t;

static void share_add(shares_t *s, const fsc__img_t *v, size_t img, uint64_t bytes)
{
    if (bytes == 0 || s == NULL)
        return;
    if (s->n > 0 && s->v[s->n - 1].img == img) {
        s->v[s->n - 1].hard += bytes;
        return;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        share_t *nv = realloc(s->v, nc * sizeof *nv);
        if (nv == NULL) {
            s->failed = 1;
            return;
        }
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n].img = img;
    s->v[s->n].hard = bytes;
    s->v[s->n].addr = v[img].addr;
    s->v[s->n].tag = v[img].tag;
    s->n++;
}

static int is_live(const fsc__img_t *m)
{
    return m->state != FSC__FREE;
}

/* Hard bytes of segment [i, j) to its live blocks. A segment returns to
 * the device only when all its blocks are free, so every live block pins
 * all of it: the bytes go to them in proportion to their sizes (the
 * rounding remainder to the largest). In an expandable segment only the
 * partial pages at the ends of each free block are pinned, by the live
 * block next to them on that side. */
static void attribute(const fsc__img_t *v, size_t i, size_t j, uint64_t pinned, shares_t *out)
{
    size_t big = i;
    uint64_t live = 0;
    for (size_t x = i; x < j; x++)
        if (is_live(&v[x])) {
            live += v[x].size;
            if (!is_live(&v[big]) || v[x].size > v[big].size)
                big = x;
        }
    if (live == 0 || pinned == 0)
        return;
    if (!v[i].expandable) {
        uint64_t given = 0;
        size_t first = out ? out->n : 0;
        for (size_t x = i; x < j; x++) {
            if (!is_live(&v[x]))
                continue;
            uint64_t s = (uint64_t)((long double)pinned * (long double)v[x].size /
                                    (long double)live);
            if (s > pinned - given)
                s = pinned - given;
            given += s;
            share_add(out, v, x, s);
        }
        /* the remainder goes to the largest block */
        if (out != NULL && given < pinned) {
            for (size_t q = first; q < out->n; q++)
                if (out->v[q].img == big) {
                    out->v[q].hard += pinned - given;
                    return;
                }
            share_add(out, v, big, pinned - given);
        }
        return;
    }
    uint64_t base = v[i].segment, pg = page_of(v[i].pool);
    for (size_t x = i; x < j; x++) {
        const fsc__img_t *m = &v[x];
        if (is_live(m))
            continue;
        uint64_t inner = paged(base, m->pool, 1, m->addr, m->size);
        uint64_t part = m->size - inner, head, tail;
        if (part == 0)
            continue;
        uint64_t lo = m->addr - base, up = (lo + pg - 1) / pg * pg;
        head = up - lo < m->size ? up - lo : m->size;
        if (head > part)
            head = part;
        tail = part - head;
        int prev = x > i && is_live(&v[x - 1]) && v[x - 1].addr + v[x - 1].size == m->addr;
        int next = x + 1 < j && is_live(&v[x + 1]) && m->addr + m->size == v[x + 1].addr;
        size_t hp = prev ? x - 1 : next ? x + 1 : big;
        size_t tp = next ? x + 1 : prev ? x - 1 : big;
        share_add(out, v, hp, head);
        share_add(out, v, tp, tail);
    }
}

/* Walk a layout: the split (into *pt) and, when out is not NULL, the hard
 * bytes of each pinning block. */
static void walk(const fsc__img_t *v, size_t n, uint64_t ask, fsc__frag_point_t *pt,
                 shares_t *out)
{
    memset(pt, 0, sizeof *pt);
    pt->ask_stream = ask;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t size = 0, free_bytes = 0, paged_free = 0, pending = 0, live = 0;
        while (j < n && v[j].segment == v[i].segment) {
            const fsc__img_t *m = &v[j];
            size += m->size;
            if (m->state == FSC__FREE) {
                free_bytes += m->size;
                paged_free += paged(m->segment, m->pool, m->expandable, m->addr, m->size);
            } else {
                live++;
                if (m->state == FSC__PENDING)
                    pending += m->size;
            }
            j++;
        }
        fsc__frag_parts_t p;
        parts_from(size, j - i, live, free_bytes, paged_free, pending, v[i].pool_id,
                   v[i].expandable, &p);
        int k = v[i].pool ? 1 : 0;
        fsc__frag_t *c = &pt->cls[k];
        pt->reserved[k] += p.reserved;
        pt->allocated[k] += p.reserved - p.pending - p.private_pool - p.soft - p.pinned;
        c->pending += p.pending;
        c->private_pool += p.private_pool;
        c->soft += p.soft;
        if (v[i].stream == ask) {
            c->hard += p.pinned;
            attribute(v, i, j, p.pinned, out);
        } else {
            c->stream += p.pinned;
        }
        i = j;
    }
    fsc__frag_t *t = &pt->cls[FSC__FRAG_ALL];
    for (int k = 0; k < 2; k++) {
        t->soft += pt->cls[k].soft;
        t->hard += pt->cls[k].hard;
        t->stream += pt->cls[k].stream;
        t->private_pool += pt->cls[k].private_pool;
        t->pending += pt->cls[k].pending;
        pt->reserved[FSC__FRAG_ALL] += pt->reserved[k];
        pt->allocated[FSC__FRAG_ALL] += pt->allocated[k];
    }
    pt->valid = 1;
}

void fsc__frag_of_layout(const fsc__img_t *v, size_t n, uint64_t ask_stream,
                         fsc__frag_point_t *out)
{
    walk(v, n, ask_stream, out, NULL);
}

/* ---- who pins the hard bytes, as rows ------------------------------------ */

typedef struct tagsum {
    uint32_t tag;
    uint64_t hard, blocks, bytes;
} tagsum_t;

static int cmp_share_tag(const void *x, const void *y)
{
    const share_t *p = x, *q = y;
    return p->tag < q->tag ? -1 : p->tag > q->tag;
}

static int cmp_share_hard(const void *x, const void *y)
{
    const share_t *p = x, *q = y;
    if (p->hard != q->hard)
        return p->hard > q->hard ? -1 : 1;
    return p->addr < q->addr ? -1 : p->addr > q->addr;
}

static int cmp_tag_hard(const void *x, const void *y)
{
    const tagsum_t *p = x, *q = y;
    if (p->hard != q->hard)
        return p->hard > q->hard ? -1 : 1;
    return p->tag < q->tag ? -1 : p->tag > q->tag;
}

/* The blocks and tags pinning the hard bytes of a layout. */
int fsc__frag_pins(const fsc__img_t *v, size_t n, uint64_t ask, uint64_t seq, fsc__frag_pins_t *out)
{
    shares_t sh = {0};
    fsc__frag_point_t pt;
    walk(v, n, ask, &pt, &sh);
    tagsum_t *tags = NULL;
    int rc = 0;
    out->nblocks = out->ntags = 0;
    if (sh.failed)
        rc = FSC_ENOMEM;
    if (rc == 0 && sh.n > 0) {
        qsort(sh.v, sh.n, sizeof *sh.v, cmp_share_hard);
        for (size_t r = 0; r < sh.n && r < TOP_BLOCKS; r++) {
            const fsc__img_t *m = &v[sh.v[r].img];
            fsc__frag_pinblk_t *b = &out->blocks[out->nblocks++];
            b->segment = m->segment;
            b->addr = m->addr;
            b->size = m->size;
            b->pending = m->state == FSC__PENDING;
            b->tag = m->tag;
            b->hard = sh.v[r].hard;
            b->alloc_seq = m->alloc_seq;
            b->age_events = seq >= m->alloc_seq ? seq - m->alloc_seq : 0;
        }
    }
    size_t nt = 0;
    if (rc == 0 && sh.n > 0) {
        qsort(sh.v, sh.n, sizeof *sh.v, cmp_share_tag);
        tags = malloc(sh.n * sizeof *tags);
        if (tags == NULL)
            rc = FSC_ENOMEM;
        for (size_t r = 0; rc == 0 && r < sh.n; r++) {
            const fsc__img_t *m = &v[sh.v[r].img];
            if (nt == 0 || tags[nt - 1].tag != m->tag) {
                memset(&tags[nt], 0, sizeof tags[nt]);
                tags[nt++].tag = m->tag;
            }
            tags[nt - 1].hard += sh.v[r].hard;
            tags[nt - 1].blocks++;
            tags[nt - 1].bytes += m->size;
        }
    }
    if (rc == 0 && nt > 0) {
        qsort(tags, nt, sizeof *tags, cmp_tag_hard);
        for (size_t r = 0; r < nt && r < TOP_TAGS; r++) {
            fsc__frag_pintag_t *t = &out->tags[out->ntags++];
            t->tag = tags[r].tag;
            t->hard = tags[r].hard;
            t->blocks = tags[r].blocks;
            t->bytes = tags[r].bytes;
        }
    }
    free(tags);
    free(sh.v);
    return rc;
}

void fsc__frag_oom(fsc__replay_t *a, uint64_t ask_stream, uint64_t time, fsc__frag_point_t *p)
{
    fsc__frag_now(a, ask_stream, p);
    p->time = time;
    if (p->cls[FSC__FRAG_ALL].hard > a->frag.max_hard_oom)
        a->frag.max_hard_oom = p->cls[FSC__FRAG_ALL].hard;
}
