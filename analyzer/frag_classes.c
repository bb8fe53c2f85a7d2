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
 * block sharing them), which gives the tables frag_hard_blocks and
 * frag_hard_tags.
 */
#include <stdlib.h>
#include <string.h>

#include "ana_internal.h"
#include "fsc/vec.h"
#include "writer.h"

#define TOP_TAGS 20
#define TOP_BLOCKS 10

static const char *const k_pool_name[FSC__FRAG_NPOOLS] = {"small", "large", "all"};

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

int fsc__frag_seg_new(fsc_analysis_t *a, fsc__seg_t *s)
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

static void apply(fsc_analysis_t *a, const fsc__seg_t *s, int add)
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

void fsc__frag_seg_out(fsc_analysis_t *a, const fsc__seg_t *s)
{
    apply(a, s, 0);
}

void fsc__frag_seg_in(fsc_analysis_t *a, const fsc__seg_t *s)
{
    apply(a, s, 1);
}

void fsc__frag_pending_add(fsc_analysis_t *a, fsc__seg_t *s, uint64_t size)
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

void fsc__frag_now(const fsc_analysis_t *a, uint64_t ask_stream, fsc__frag_point_t *out)
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

void fsc__frag_sample(const fsc_analysis_t *a, fsc__frag_sample_t *out)
{
    fsc__frag_point_t p;
    fsc__frag_now(a, a->frag.ask_stream, &p);
    out->ask_stream = p.ask_stream;
    out->cls = p.cls[FSC__FRAG_ALL];
}

void fsc__frag_event(fsc_analysis_t *a, int type, uint64_t stream, uint64_t addr)
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

/* ---- database ------------------------------------------------------------ */

static int prep(fsc_analysis_t *a, const char *sql, sqlite3_stmt **st)
{
    if (sqlite3_prepare_v2(a->db, sql, -1, st, NULL) != SQLITE_OK)
        return fsc__db_err(a, "cannot prepare a statement");
    return 0;
}

static int write_point(fsc_analysis_t *a, const char *point, int64_t oom_id,
                       const fsc__frag_point_t *p)
{
    sqlite3_stmt *s;
    int rc = prep(a, "INSERT INTO frag_classes VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &s);
    for (int k = FSC__FRAG_NPOOLS - 1; rc == 0 && k >= 0; k--) {
        const fsc__frag_t *c = &p->cls[k];
        int i = 1;
        sqlite3_bind_text(s, i++, point, -1, SQLITE_STATIC);
        fsc__bind_opt(s, i++, oom_id >= 0, (uint64_t)oom_id);
        sqlite3_bind_text(s, i++, k_pool_name[k], -1, SQLITE_STATIC);
        fsc__bind_u64(s, i++, p->seq);
        fsc__bind_u64(s, i++, p->time);
        fsc__bind_u64(s, i++, p->ask_stream);
        fsc__bind_u64(s, i++, p->reserved[k]);
        fsc__bind_u64(s, i++, p->allocated[k]);
        fsc__bind_u64(s, i++, p->reserved[k] - p->allocated[k]);
        fsc__bind_u64(s, i++, c->soft);
        fsc__bind_u64(s, i++, c->hard);
        fsc__bind_u64(s, i++, c->stream);
        fsc__bind_u64(s, i++, c->private_pool);
        fsc__bind_u64(s, i++, c->pending);
        rc = fsc__step(a, s, "frag_classes");
    }
    sqlite3_finalize(s);
    return rc;
}

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
static int write_pins(fsc_analysis_t *a, const char *point, int64_t oom_id, uint64_t seq,
                      const fsc__img_t *v, size_t n, uint64_t ask)
{
    shares_t sh = {0};
    fsc__frag_point_t pt;
    walk(v, n, ask, &pt, &sh);
    tagsum_t *tags = NULL;
    sqlite3_stmt *s = NULL;
    int rc = 0;
    if (sh.failed)
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for the hard pinning blocks");
    if (rc == 0 && sh.n > 0) {
        qsort(sh.v, sh.n, sizeof *sh.v, cmp_share_hard);
        rc = prep(a, "INSERT INTO frag_hard_blocks VALUES(?,?,?,?,?,?,?,?,?,?,?)", &s);
        for (size_t r = 0; rc == 0 && r < sh.n && r < TOP_BLOCKS; r++) {
            const fsc__img_t *m = &v[sh.v[r].img];
            int i = 1;
            sqlite3_bind_text(s, i++, point, -1, SQLITE_STATIC);
            fsc__bind_opt(s, i++, oom_id >= 0, (uint64_t)oom_id);
            fsc__bind_u64(s, i++, r);
            fsc__bind_u64(s, i++, m->segment);
            fsc__bind_u64(s, i++, m->addr);
            fsc__bind_u64(s, i++, m->size);
            sqlite3_bind_text(s, i++, m->state == FSC__PENDING ? "pending" : "allocated", -1,
                              SQLITE_STATIC);
            fsc__bind_u64(s, i++, m->tag);
            fsc__bind_u64(s, i++, sh.v[r].hard);
            fsc__bind_u64(s, i++, m->alloc_seq);
            fsc__bind_u64(s, i++, seq >= m->alloc_seq ? seq - m->alloc_seq : 0);
            rc = fsc__step(a, s, "frag_hard_blocks");
        }
        sqlite3_finalize(s);
        s = NULL;
    }
    size_t nt = 0;
    if (rc == 0 && sh.n > 0) {
        qsort(sh.v, sh.n, sizeof *sh.v, cmp_share_tag);
        tags = malloc(sh.n * sizeof *tags);
        if (tags == NULL)
            rc = fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for the hard pinning tags");
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
        rc = prep(a, "INSERT INTO frag_hard_tags VALUES(?,?,?,?,?,?,?)", &s);
        for (size_t r = 0; rc == 0 && r < nt && r < TOP_TAGS; r++) {
            int i = 1;
            sqlite3_bind_text(s, i++, point, -1, SQLITE_STATIC);
            fsc__bind_opt(s, i++, oom_id >= 0, (uint64_t)oom_id);
            fsc__bind_u64(s, i++, r);
            fsc__bind_u64(s, i++, tags[r].tag);
            fsc__bind_u64(s, i++, tags[r].hard);
            fsc__bind_u64(s, i++, tags[r].blocks);
            fsc__bind_u64(s, i++, tags[r].bytes);
            rc = fsc__step(a, s, "frag_hard_tags");
        }
        sqlite3_finalize(s);
    }
    free(tags);
    free(sh.v);
    return rc;
}

int fsc__frag_oom(fsc_analysis_t *a, uint64_t oom_id, uint64_t ask_stream, uint64_t time)
{
    fsc__frag_point_t p;
    fsc__frag_now(a, ask_stream, &p);
    p.time = time;
    if (p.cls[FSC__FRAG_ALL].hard > a->frag.max_hard_oom)
        a->frag.max_hard_oom = p.cls[FSC__FRAG_ALL].hard;
    int rc = write_point(a, "oom", (int64_t)oom_id, &p);
    if (rc != 0 || oom_id >= FSC__OOM_LAYOUTS)
        return rc;
    fsc__imgvec_t cur = {0};
    rc = fsc__layout_current(a, &cur);
    if (rc == 0)
        rc = write_pins(a, "oom", (int64_t)oom_id, a->seq, cur.v, cur.n, ask_stream);
    fsc__imgvec_free(&cur);
    return rc;
}

static int write_timeline(fsc_analysis_t *a)
{
    sqlite3_stmt *s;
    int rc = prep(a, "INSERT INTO timeline_frag VALUES(?,?,?,?,?,?,?)", &s);
    for (size_t r = 0; rc == 0 && r < a->tl.n; r++) {
        const fsc__frag_sample_t *x = &a->tl.rows[r].frag;
        int i = 1;
        fsc__bind_u64(s, i++, r);
        fsc__bind_u64(s, i++, x->ask_stream);
        fsc__bind_u64(s, i++, x->cls.soft);
        fsc__bind_u64(s, i++, x->cls.hard);
        fsc__bind_u64(s, i++, x->cls.stream);
        fsc__bind_u64(s, i++, x->cls.private_pool);
        fsc__bind_u64(s, i++, x->cls.pending);
        rc = fsc__step(a, s, "timeline_frag");
    }
    sqlite3_finalize(s);
    return rc;
}

static int put(fsc_analysis_t *a, const char *key, double v, int is_real, const char *unit)
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

static int write_summary(fsc_analysis_t *a)
{
    const fsc__frag_state_t *f = &a->frag;
    const fsc__frag_t *c = &f->peak_alloc.cls[FSC__FRAG_ALL];
    const fsc__frag_point_t *r = &f->peak_res;
    uint64_t rr = r->reserved[FSC__FRAG_ALL], ra = r->allocated[FSC__FRAG_ALL];
    int rc = 0;
#define PI(k, v) if (rc == 0) rc = put(a, (k), (double)(v), 0, "bytes")
#define PR(k, v) if (rc == 0) rc = put(a, (k), (v), 1, "ratio")
    PI("soft_bytes_at_peak", c->soft);
    PI("hard_bytes_at_peak", c->hard);
    PI("stream_bytes_at_peak", c->stream);
    PI("private_pool_bytes_at_peak", c->private_pool);
    PI("pending_bytes_at_peak", c->pending);
    PI("max_hard_bytes_at_oom", f->max_hard_oom);
    PI("allocated_at_peak_reserved", ra);
    PI("reserved_unallocated_at_peak_reserved", rr - ra);
    PR("frag_ratio_at_peak_reserved", fsc__ratio(rr - ra, rr));
#undef PI
#undef PR
    return rc;
}

int fsc__frag_finish(fsc_analysis_t *a)
{
    fsc__frag_state_t *f = &a->frag;
    int rc = 0;
    if (f->peak_alloc.valid) {
        rc = write_point(a, "peak_allocated", -1, &f->peak_alloc);
        if (rc == 0 && a->peak_materialized)
            rc = write_pins(a, "peak_allocated", -1, f->peak_alloc.seq, a->peak_layout.v,
                            a->peak_layout.n, f->peak_alloc.ask_stream);
    }
    if (rc == 0 && f->peak_res.valid)
        rc = write_point(a, "peak_reserved", -1, &f->peak_res);
    if (rc == 0)
        rc = write_timeline(a);
    if (rc == 0)
        rc = write_summary(a);
    return rc;
}
