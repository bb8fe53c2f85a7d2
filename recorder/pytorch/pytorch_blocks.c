/*
 * pytorch_blocks.c — the block model of the snapshot importer: segments as
 * address-ordered lists of blocks, driven by the addresses PyTorch recorded,
 * emitting the events the fragscope allocator would emit for the same steps
 * (SPLIT before ALLOC, FREE_REQUESTED, FREE_COMPLETED, then MERGE with the
 * previous and next free block).
 *
 * PyTorch does not record block sizes, so the block an allocation took is
 * the free block starting at the returned address, split when
 * fsc_alloc_should_split says PyTorch would have split it. Expandable
 * segments may have holes (unmapped pages), so neighbours merge only when
 * they touch.
 */
#include "pytorch_internal.h"

#include <stdlib.h>
#include <string.h>

/* Live segments never overlap (every segment and mapping is checked), so in
 * base order the one below an address is the only one that can hold it. */
static int seg_cmp(const fsc__pseg_t *a, const fsc__pseg_t *b)
{
    return a->base < b->base ? -1 : a->base > b->base;
}
RB_PROTOTYPE(fsc__pseg_tree, fsc__pseg, rb, seg_cmp)
RB_GENERATE(fsc__pseg_tree, fsc__pseg, rb, seg_cmp)

static uint64_t seg_end(const fsc__pseg_t *s)
{
    return s->expandable ? s->end : s->base + s->size;
}

/* The live segment with the greatest base below hi (NULL: none). */
static fsc__pseg_t *seg_below(fsc__pmodel_t *m, uint64_t hi)
{
    fsc__pseg_t key;
    key.base = hi;
    fsc__pseg_t *n = RB_NFIND(fsc__pseg_tree, &m->by_base, &key);
    return n != NULL ? RB_PREV(fsc__pseg_tree, &m->by_base, n)
                     : RB_MAX(fsc__pseg_tree, &m->by_base);
}

void fsc__pm_init(fsc__pmodel_t *m, const fsc_alloc_config_t *cfg, fsc__pm_emit_fn emit,
                  void *ud, fsc_err_t *err)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->emit = emit;
    m->emit_ud = ud;
    m->err = err;
    RB_INIT(&m->by_base);
}

void fsc__pm_free(fsc__pmodel_t *m)
{
    for (size_t i = 0; m->blocks.slots != NULL && i <= m->blocks.mask; i++)
        if (m->blocks.slots[i].key != 0)
            free((void *)(uintptr_t)m->blocks.slots[i].val);
    fsc__u64map_free(&m->blocks);
    free(m->block0);
    m->block0 = NULL;
    fsc__pseg_t *s, *st;
    HASH_ITER(hh, m->segs, s, st) {
        HASH_DEL(m->segs, s);
        RB_REMOVE(fsc__pseg_tree, &m->by_base, s);
        free(s);
    }
}

fsc__pseg_t *fsc__pm_segment(fsc__pmodel_t *m, uint64_t base)
{
    fsc__pseg_t *s = NULL;
    HASH_FIND(hh, m->segs, &base, sizeof base, s);
    return s;
}

fsc__pseg_t *fsc__pm_segment_at(fsc__pmodel_t *m, uint64_t addr)
{
    if (addr == UINT64_MAX)
        return NULL;
    fsc__pseg_t *s = seg_below(m, addr + 1);
    return s != NULL && addr < seg_end(s) ? s : NULL;
}

static fsc__pblock_t *find_block(fsc__pmodel_t *m, uint64_t addr)
{
    return addr != 0 ? fsc__u64map_getp(&m->blocks, addr) : m->block0;
}

static int emit(fsc__pmodel_t *m, uint8_t type, const fsc__pblock_t *b, uint64_t size,
                uint64_t requested, uint64_t other, uint32_t tag)
{
    fsc_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = type;
    ev.time_ns = m->time_ns;
    ev.pool = b->seg->pool;
    ev.pool_id = b->seg->pool_id;
    ev.stream = b->seg->stream;
    ev.segment = b->seg->base;
    ev.addr = b->addr;
    ev.size = size;
    ev.requested = requested;
    ev.other = other;
    ev.tag = tag;
    return m->emit ? m->emit(m->emit_ud, &ev) : 0;
}

static int emit_segment(fsc__pmodel_t *m, uint8_t type, const fsc__pseg_t *s, uint64_t addr,
                        uint64_t size)
{
    fsc_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = type;
    ev.time_ns = m->time_ns;
    ev.tag = m->tag;
    ev.pool = s->pool;
    ev.pool_id = s->pool_id;
    ev.stream = s->stream;
    ev.segment = s->base;
    ev.addr = addr;
    ev.size = size;
    return m->emit ? m->emit(m->emit_ud, &ev) : 0;
}

static fsc__pblock_t *new_block(fsc__pmodel_t *m, fsc__pseg_t *s, uint64_t addr,
                                uint64_t size)
{
    fsc__pblock_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->addr = addr;
    b->size = size;
    b->seg = s;
    if (addr == 0)
        m->block0 = b;
    else if (fsc__u64map_putp(&m->blocks, addr, b) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

/* Link b after `after` (NULL = first) in its segment. */
static void link_after(fsc__pseg_t *s, fsc__pblock_t *after, fsc__pblock_t *b)
{
    b->prev = after;
    b->next = after ? after->next : s->first;
    if (b->next)
        b->next->prev = b;
    else
        s->last = b;
    if (after)
        after->next = b;
    else
        s->first = b;
}

static void unlink_block(fsc__pmodel_t *m, fsc__pblock_t *b)
{
    fsc__pseg_t *s = b->seg;
    if (b->prev)
        b->prev->next = b->next;
    else
        s->first = b->next;
    if (b->next)
        b->next->prev = b->prev;
    else
        s->last = b->prev;
    if (b->addr == 0)
        m->block0 = NULL;
    else
        fsc__u64map_delp(&m->blocks, b->addr);
    free(b);
}

static void reserved_add(fsc__pmodel_t *m, uint64_t n)
{
    m->reserved += n;
    if (m->reserved > m->peak_reserved)
        m->peak_reserved = m->reserved;
}

/* A live segment other than self that overlaps [lo, hi), or NULL. The
 * analyzer refuses a trace whose segments overlap (replay_segments.c), so
 * neither the import nor the export lets one through. A linear scan, like
 * fsc__pm_segment_at: segments are few. */
static const fsc__pseg_t *overlapping(fsc__pmodel_t *m, uint64_t lo, uint64_t hi,
                                      const fsc__pseg_t *self)
{
    /* none when the nearest segment below hi (other than self) ends by lo */
    fsc__pseg_t *p = seg_below(m, hi);
    if (p != NULL && p == self)
        p = RB_PREV(fsc__pseg_tree, &m->by_base, p);
    if (p == NULL || seg_end(p) <= lo)
        return NULL;
    /* one does: name the one the message always named (the oldest) */
    for (const fsc__pseg_t *s = m->segs; s != NULL; s = s->hh.next) {
        uint64_t end = s->expandable ? s->end : s->base + s->size;
        if (s != self && s->base < hi && lo < end)
            return s;
    }
    return NULL;
}

int fsc__pm_segment_alloc(fsc__pmodel_t *m, uint64_t base, uint64_t size, uint64_t stream,
                          fsc_pool_t pool)
{
    if (size == 0)
        return fsc_err_set(m->err, FSC_ESTATE, "segment of size 0");
    if (base + size < base)
        return fsc_err_set(m->err, FSC_ESTATE, "segment wraps around the address space");
    if (fsc__pm_segment(m, base) != NULL)
        return fsc_err_set(m->err, FSC_ESTATE, "a live segment already starts there");
    const fsc__pseg_t *o = overlapping(m, base, base + size, NULL);
    if (o != NULL)
        return fsc_err_set(m->err, FSC_ESTATE, "overlaps the segment at 0x%llx",
                           (unsigned long long)o->base);
    fsc__pseg_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return fsc_err_set(m->err, FSC_ENOMEM, "out of memory");
    s->base = base;
    s->size = size;
    s->end = base + size;
    s->stream = stream;
    s->pool = (uint8_t)pool;
    s->pool_id = m->new_pool_id;
    fsc__pblock_t *b = new_block(m, s, base, size);
    if (b == NULL) {
        free(s);
        return fsc_err_set(m->err, FSC_ENOMEM, "out of memory");
    }
    link_after(s, NULL, b);
    HASH_ADD(hh, m->segs, base, sizeof s->base, s);
    RB_INSERT(fsc__pseg_tree, &m->by_base, s);
    reserved_add(m, size);
    return emit_segment(m, FSC_EV_SEGMENT_ALLOC, s, base, size);
}

int fsc__pm_segment_free(fsc__pmodel_t *m, uint64_t base, uint64_t size)
{
    fsc__pseg_t *s = fsc__pm_segment(m, base);
    if (s == NULL || s->expandable)
        return fsc_err_set(m->err, FSC_ESTATE, "no segment starts there");
    if (s->size != size)
        return fsc_err_set(m->err, FSC_ESTATE, "the segment has %llu bytes, not %llu",
                           (unsigned long long)s->size, (unsigned long long)size);
    if (s->first != s->last || s->first->state != FSC__PB_FREE)
        return fsc_err_set(m->err, FSC_ESTATE, "the segment still holds live blocks");
    int rc = emit_segment(m, FSC_EV_SEGMENT_FREE, s, base, size);
    unlink_block(m, s->first);
    m->reserved -= s->size;
    HASH_DEL(m->segs, s);
    RB_REMOVE(fsc__pseg_tree, &m->by_base, s);
    free(s);
    return rc;
}

int fsc__pm_map(fsc__pmodel_t *m, uint64_t base, uint64_t addr, uint64_t size,
                uint64_t stream, fsc_pool_t pool)
{
    if (size == 0 || addr + size < addr || addr < base)
        return fsc_err_set(m->err, FSC_ESTATE, "bad mapping range");
    fsc__pseg_t *s = fsc__pm_segment(m, base);
    if (s != NULL && !s->expandable)
        return fsc_err_set(m->err, FSC_ESTATE, "maps pages into a segment that is not expandable");
    const fsc__pseg_t *o = overlapping(m, s != NULL ? addr : base, addr + size, s);
    if (o != NULL)
        return fsc_err_set(m->err, FSC_ESTATE, "overlaps the segment at 0x%llx",
                           (unsigned long long)o->base);
    fsc__pblock_t *after = NULL;
    if (s != NULL) {
        for (fsc__pblock_t *b = s->first; b != NULL; b = b->next) {
            if (b->addr < addr + size && addr < b->addr + b->size)
                return fsc_err_set(m->err, FSC_ESTATE, "maps pages that are already mapped");
            if (b->addr < addr)
                after = b;
        }
    } else {
        s = calloc(1, sizeof *s);
        if (s == NULL)
            return fsc_err_set(m->err, FSC_ENOMEM, "out of memory");
        s->base = base;
        s->stream = stream;
        s->pool = (uint8_t)pool;
        s->pool_id = m->new_pool_id;
        s->expandable = 1;
        HASH_ADD(hh, m->segs, base, sizeof s->base, s);
        RB_INSERT(fsc__pseg_tree, &m->by_base, s);
    }
    fsc__pblock_t *nb = new_block(m, s, addr, size);
    if (nb == NULL)
        return fsc_err_set(m->err, FSC_ENOMEM, "out of memory");
    link_after(s, after, nb);
    s->size += size;
    if (addr + size > s->end)
        s->end = addr + size;
    reserved_add(m, size);
    int rc = emit_segment(m, FSC_EV_SEGMENT_MAP, s, addr, size);
    /* New pages join the free space next to them (no MERGE: no block was
     * freed, the free block just grew). */
    fsc__pblock_t *p = nb->prev;
    if (p && p->state == FSC__PB_FREE && p->addr + p->size == nb->addr) {
        p->size += nb->size;
        unlink_block(m, nb);
        nb = p;
    }
    fsc__pblock_t *n = nb->next;
    if (n && n->state == FSC__PB_FREE && nb->addr + nb->size == n->addr) {
        nb->size += n->size;
        unlink_block(m, n);
    }
    return rc;
}

int fsc__pm_unmap(fsc__pmodel_t *m, uint64_t addr, uint64_t size)
{
    fsc__pseg_t *s = fsc__pm_segment_at(m, addr);
    if (s == NULL || !s->expandable)
        return fsc_err_set(m->err, FSC_ESTATE, "unmaps pages of no expandable segment");
    if (size == 0 || addr + size < addr)
        return fsc_err_set(m->err, FSC_ESTATE, "bad unmapping range");
    /* The range must be entirely free, mapped space. */
    uint64_t covered = 0;
    for (fsc__pblock_t *b = s->first; b != NULL; b = b->next) {
        uint64_t lo = b->addr > addr ? b->addr : addr;
        uint64_t bend = b->addr + b->size, hi = bend < addr + size ? bend : addr + size;
        if (lo >= hi)
            continue;
        if (b->state != FSC__PB_FREE)
            return fsc_err_set(m->err, FSC_ESTATE, "unmaps pages of a live block at 0x%llx",
                               (unsigned long long)b->addr);
        covered += hi - lo;
    }
    if (covered != size)
        return fsc_err_set(m->err, FSC_ESTATE, "unmaps pages that are not mapped");
    int rc = emit_segment(m, FSC_EV_SEGMENT_UNMAP, s, addr, size);
    for (fsc__pblock_t *b = s->first, *nx; b != NULL; b = nx) {
        nx = b->next;
        uint64_t bend = b->addr + b->size;
        if (bend <= addr || b->addr >= addr + size)
            continue;
        if (bend > addr + size) { /* keep the part above the range */
            fsc__pblock_t *hi = new_block(m, s, addr + size, bend - (addr + size));
            if (hi == NULL)
                return fsc_err_set(m->err, FSC_ENOMEM, "out of memory");
            link_after(s, b, hi);
            nx = hi->next;
        }
        if (b->addr < addr)
            b->size = addr - b->addr;
        else
            unlink_block(m, b);
    }
    s->size -= size;
    m->reserved -= size;
    return rc;
}

/* Split free block b into [addr, addr+first) and a free remainder. */
static int split(fsc__pmodel_t *m, fsc__pblock_t *b, uint64_t first)
{
    fsc__pblock_t *rest = new_block(m, b->seg, b->addr + first, b->size - first);
    if (rest == NULL)
        return fsc_err_set(m->err, FSC_ENOMEM, "out of memory");
    int rc = emit(m, FSC_EV_SPLIT, b, b->size, first, 0, m->tag);
    /* PyTorch keeps the free block's struct for the remainder, and with it
     * the request it last served (its snapshots show it on free blocks). */
    rest->requested = b->requested;
    link_after(b->seg, b, rest);
    b->size = first;
    m->splits++;
    return rc;
}

static int take(fsc__pmodel_t *m, fsc__pblock_t *b, uint64_t requested, uint32_t tag)
{
    b->state = FSC__PB_ALLOCATED;
    b->requested = requested;
    b->tag = tag;
    m->allocated += b->size;
    if (m->allocated > m->peak_allocated)
        m->peak_allocated = m->allocated;
    return emit(m, FSC_EV_ALLOC, b, b->size, requested, 0, tag);
}

int fsc__pm_alloc(fsc__pmodel_t *m, uint64_t addr, uint64_t requested, uint64_t stream,
                  uint32_t tag)
{
    (void)stream; /* a block serves the stream of its segment */
    fsc__pblock_t *b = find_block(m, addr);
    if (b == NULL)
        return fsc_err_set(m->err, FSC_ESTATE, "no free block starts at this address");
    if (b->state != FSC__PB_FREE)
        return fsc_err_set(m->err, FSC_ESTATE, "the block there is still allocated");
    uint64_t rounded = fsc_alloc_round_size(&m->cfg, requested);
    if (b->size < rounded)
        return fsc_err_set(m->err, FSC_ESTATE,
                           "the free block there has %llu bytes, less than the rounded "
                           "request of %llu",
                           (unsigned long long)b->size, (unsigned long long)rounded);
    int whole = 0; /* a no_split pool hands out whole blocks */
    for (uint8_t i = 0; b->seg->pool_id != 0 && i < m->n_no_split; i++)
        whole |= m->no_split[i] == b->seg->pool_id;
    if (!whole && fsc_alloc_should_split(&m->cfg, (fsc_pool_t)b->seg->pool, b->size, rounded,
                                         b->seg->expandable)) {
        int rc = split(m, b, rounded);
        if (rc != 0)
            return rc;
    }
    return take(m, b, requested, tag);
}

int fsc__pm_free_requested(fsc__pmodel_t *m, uint64_t addr, uint32_t tag)
{
    fsc__pblock_t *b = find_block(m, addr);
    if (b == NULL || b->state == FSC__PB_FREE)
        return fsc_err_set(m->err, FSC_ESTATE, "no allocated block starts at this address");
    if (b->state == FSC__PB_PENDING)
        return fsc_err_set(m->err, FSC_ESTATE, "the block was already freed");
    b->state = FSC__PB_PENDING;
    m->allocated -= b->size;
    return emit(m, FSC_EV_FREE_REQUESTED, b, b->size, b->requested, 0, tag);
}

int fsc__pm_free_completed(fsc__pmodel_t *m, uint64_t addr, uint32_t tag)
{
    fsc__pblock_t *b = find_block(m, addr);
    if (b == NULL || b->state == FSC__PB_FREE)
        return fsc_err_set(m->err, FSC_ESTATE, "no allocated block starts at this address");
    int rc = 0;
    if (b->state == FSC__PB_ALLOCATED && (rc = fsc__pm_free_requested(m, addr, tag)) != 0)
        return rc;
    b->state = FSC__PB_FREE;
    if ((rc = emit(m, FSC_EV_FREE_COMPLETED, b, b->size, b->requested, 0, tag)) != 0)
        return rc;
    /* The freed block's struct survives the merges in PyTorch, and keeps its
     * last request (shown for free blocks in snapshots). */
    uint64_t last_request = b->requested;
    fsc__pblock_t *p = b->prev;
    if (p && p->state == FSC__PB_FREE && p->addr + p->size == b->addr) {
        p->size += b->size;
        uint64_t gone = b->addr;
        unlink_block(m, b);
        b = p;
        m->merges++;
        if ((rc = emit(m, FSC_EV_MERGE, b, b->size, 0, gone, tag)) != 0)
            return rc;
    }
    fsc__pblock_t *n = b->next;
    if (n && n->state == FSC__PB_FREE && b->addr + b->size == n->addr) {
        b->size += n->size;
        uint64_t gone = n->addr;
        unlink_block(m, n);
        m->merges++;
        if ((rc = emit(m, FSC_EV_MERGE, b, b->size, 0, gone, tag)) != 0)
            return rc;
    }
    b->requested = last_request;
    b->tag = 0;
    return 0;
}

int fsc__pm_place(fsc__pmodel_t *m, fsc__pseg_t *seg, uint64_t addr, uint64_t size,
                  uint64_t requested, uint64_t stream, uint32_t tag)
{
    (void)stream;
    /* A free block starting at addr is found at once; otherwise blocks are
     * placed in address order, so the free block holding addr is normally
     * the segment's last one. */
    fsc__pblock_t *b = find_block(m, addr);
    if (b == NULL || b->seg != seg) {
        b = seg->last;
        while (b != NULL && b->addr > addr)
            b = b->prev;
    }
    if (b == NULL || b->state != FSC__PB_FREE || addr + size > b->addr + b->size ||
        addr + size < addr || size == 0)
        return fsc_err_set(m->err, FSC_ESTATE,
                           "block 0x%llx+%llu does not fit the free space of segment 0x%llx",
                           (unsigned long long)addr, (unsigned long long)size,
                           (unsigned long long)seg->base);
    int rc;
    if (b->addr < addr) {
        if ((rc = split(m, b, addr - b->addr)) != 0)
            return rc;
        b = b->next;
    }
    if (b->size > size && (rc = split(m, b, size)) != 0)
        return rc;
    return take(m, b, requested, tag);
}

int fsc__pm_oom(fsc__pmodel_t *m, uint64_t rounded, uint64_t stream, uint64_t device_free,
                uint64_t capacity, uint64_t device_total, uint32_t tag)
{
    fsc_event_t ev;
    memset(&ev, 0, sizeof ev);
    /* PyTorch writes the OOM entry's size after round_size: it is the block
     * size asked for, and the caller's own figure is not kept. Rounding it
     * again would change it under roundup_power2_divisions. */
    ev.type = FSC_EV_OOM;
    ev.time_ns = m->time_ns;
    ev.size = rounded;
    ev.requested = rounded;
    ev.stream = stream;
    ev.pool = (uint8_t)fsc_alloc_pool_of(rounded);
    ev.tag = tag;
    ev.oom.allocated = m->allocated;
    ev.oom.reserved = m->reserved;
    ev.oom.capacity = capacity;
    ev.oom.device_free = device_free;
    ev.oom.device_total = device_total;
    ev.oom.segment_size = fsc_alloc_segment_size(rounded);
    return m->emit ? m->emit(m->emit_ud, &ev) : 0;
}

int fsc__pm_expandable_base(fsc__pmodel_t *m, uint64_t addr, uint64_t *base)
{
    fsc__pseg_t *s = fsc__pm_segment_at(m, addr);
    if (s == NULL) {
        for (fsc__pseg_t *x = m->segs; x != NULL; x = x->hh.next)
            if (x->expandable && x->end == addr)
                s = x;
    }
    if (s == NULL || !s->expandable)
        return 0;
    *base = s->base;
    return 1;
}
