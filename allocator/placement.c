/*
 * placement.c — the CUDA driver's placement of cudaMalloc segments, as
 * learned from real recordings (docs/allocator.md, "Where the driver places
 * segments"; bench/placement_learn.py scores it).
 *
 * The driver reserves address space in chunks and fills a chunk before it
 * takes a new one. A segment that fits in no chunk opens one at its own
 * address, of its size rounded up to 32 MiB (2 MiB for segments of 2 MiB
 * and less); the rest of the chunk takes later segments, first fit from the
 * chunk's bottom, the newest chunk first; a chunk whose room the driver
 * passed over in the recording takes no more (something the recording does
 * not show holds it). The first chunk a segment over
 * 2 MiB and under 32 MiB opens lies above every other (a region of its own;
 * how far above, the recordings do not tell). A new chunk goes at the top of
 * the highest gap between chunks that holds a chunk given back earlier (the
 * driver reuses the address space it got back), else just below the lowest
 * chunk: the driver grows down. A chunk is given back when its last segment
 * is freed. Which gap a new chunk takes once chunks were given back is the
 * rule the recordings settle least (docs/allocator.md): three variants of it
 * (the lowest such gap, the one given back last, or none) let a what-if say
 * when it decides.
 *
 * PyTorch's best fit breaks ties between equal-sized free blocks by address,
 * so this order decides which block a request takes in a replay; the exact
 * addresses matter only through it.
 */
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fragscope/common.h"
#include "fsc/vec.h"
#include "placement.h"

#define MiB (1ull << 20)
#define SMALL_SEG (2 * MiB) /* PyTorch's small-pool segment */
#define FINE (2 * MiB)      /* the driver's page: every segment starts on one */
#define COARSE (32 * MiB)   /* the chunk granule of larger segments */

typedef struct chunk {
    uint64_t base, end;
    int passed; /* the driver put a segment elsewhere although it had room */
} chunk_t;

struct fsc__place {
    chunk_t *chunks; /* oldest first */
    size_t n, cap;
    uint64_t *freed; /* bases of chunks given back, sorted, unique */
    size_t nfreed, capfreed;
    uint64_t *recent; /* the same bases in the order given back, the latest last */
    size_t nrecent, caprecent;
    chunk_t *sorted; /* scratch for predict: chunks by base */
    size_t capsorted;
    int above;          /* the chunk of rule 5 was opened */
    int variant;        /* FSC_SIM_PLACE_* */
    uint64_t uncertain; /* new chunks placed where a given-back range could hold them */
};

static uint64_t granule(uint64_t size)
{
    return size <= SMALL_SEG ? FINE : COARSE;
}

static uint64_t down(uint64_t x, uint64_t a)
{
    return x / a * a;
}

/* Rounds up; UINT64_MAX when that overflows. */
static uint64_t up(uint64_t x, uint64_t a)
{
    return x > UINT64_MAX - (a - 1) ? UINT64_MAX : (x + a - 1) / a * a;
}

int fsc__place_create(fsc__place_t **out)
{
    if (out == NULL)
        return FSC_EINVAL;
    *out = calloc(1, sizeof **out);
    return *out != NULL ? 0 : FSC_ENOMEM;
}

void fsc__place_destroy(fsc__place_t *p)
{
    if (p == NULL)
        return;
    free(p->chunks);
    free(p->freed);
    free(p->recent);
    free(p->sorted);
    free(p);
}

int fsc__place_set_variant(fsc__place_t *p, int variant)
{
    if (p == NULL || variant < 0 || variant >= FSC_SIM_PLACE_N)
        return FSC_EINVAL;
    p->variant = variant;
    return 0;
}

uint64_t fsc__place_uncertain(const fsc__place_t *p)
{
    return p != NULL ? p->uncertain : 0;
}

/* Larger than a small-pool segment, smaller than one coarse granule: a
 * chunk of a single 32 MiB granule. */
static int medium(uint64_t size)
{
    return size > SMALL_SEG && size < COARSE;
}

/* The end of the highest chunk or range in use. */
static uint64_t top_end(const fsc__place_t *p, const fsc__place_space_t *sp)
{
    uint64_t top = 0, s, e, from = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->chunks[i].end > top)
            top = p->chunks[i].end;
    /* ranges in use outside every chunk (adopted or scripted ones) count too */
    from = top;
    while (sp->next(sp->ctx, from, &s, &e) && e > from) {
        top = e;
        from = e;
    }
    return top;
}

/* First fit of size inside chunk c, from its bottom, around the ranges in
 * use: the address, or UINT64_MAX. */
static uint64_t fit_in_chunk(const fsc__place_space_t *sp, const chunk_t *c, uint64_t size)
{
    uint64_t cur = c->base, s, e;
    while (sp->next(sp->ctx, cur, &s, &e) && s < c->end) {
        uint64_t a = up(cur, FINE);
        if (s >= a && s - a >= size)
            return a;
        if (e <= cur)
            break; /* cannot happen for a well-behaved space */
        cur = e;
    }
    uint64_t a = up(cur, FINE);
    return a < c->end && c->end - a >= size ? a : UINT64_MAX;
}

/* The chunk whose room takes a segment of size: the newest one with room
 * that the driver has not passed over; its index and *addr, or -1. */
static size_t room_in(const fsc__place_t *p, const fsc__place_space_t *sp, uint64_t size,
                      uint64_t *addr)
{
    for (size_t i = p->n; i-- > 0;) {
        if (p->chunks[i].passed)
            continue;
        uint64_t a = fit_in_chunk(sp, &p->chunks[i], size);
        if (a != UINT64_MAX) {
            *addr = a;
            return i;
        }
    }
    return (size_t)-1;
}

static int cmp_chunk(const void *x, const void *y)
{
    const chunk_t *a = x, *b = y;
    return a->base < b->base ? -1 : a->base > b->base;
}

/* Is a given-back chunk's base in [lo, hi)? */
static int freed_in(const fsc__place_t *p, uint64_t lo, uint64_t hi)
{
    size_t l = 0, r = p->nfreed;
    while (l < r) {
        size_t m = l + (r - l) / 2;
        if (p->freed[m] < lo)
            l = m + 1;
        else
            r = m;
    }
    return l < p->nfreed && p->freed[l] < hi;
}

/* 1 + the position, in the order given back, of the latest chunk given
 * back whose base is in [lo, hi); 0 when none. */
static size_t given_back_rank(const fsc__place_t *p, uint64_t lo, uint64_t hi)
{
    for (size_t k = p->nrecent; k-- > 0;)
        if (p->recent[k] >= lo && p->recent[k] < hi)
            return k + 1;
    return 0;
}

int fsc__place_predict(fsc__place_t *p, const fsc__place_space_t *sp, uint64_t size,
                       uint64_t *addr)
{
    if (p == NULL || sp == NULL || addr == NULL || size == 0)
        return FSC_EINVAL;
    if (p->n == 0)
        return FSC_ENOENT;
    size_t i = room_in(p, sp, size, addr);
    if (i != (size_t)-1)
        return 0;
    if (FSC__VEC_RESERVE(p->sorted, p->capsorted, p->n) != 0)
        return FSC_ENOMEM;
    memcpy(p->sorted, p->chunks, p->n * sizeof *p->chunks);
    qsort(p->sorted, p->n, sizeof *p->sorted, cmp_chunk);
    if (!p->above && medium(size)) {
        /* The first chunk for a segment under 32 MiB lies above every
         * other, in a region of its own whose distance the recordings do
         * not tell: just above the highest chunk keeps the order, which is
         * all a replay's ties depend on. */
        uint64_t a = up(top_end(p, sp), COARSE);
        if (a != UINT64_MAX && a <= UINT64_MAX - size && sp->is_free(sp->ctx, a, size)) {
            *addr = a;
            return 0;
        }
    }
    uint64_t g = granule(size);
    /* A gap between chunks that held one given back: the top of the highest
     * (the model), of the lowest, or of the one given back last (variants);
     * the recordings explain only part of these choices, so each one is
     * counted. */
    uint64_t pick = UINT64_MAX;
    size_t pick_age = 0;
    for (size_t i = 0; i + 1 < p->n; i++) {
        uint64_t lo = p->sorted[i].end, hi = p->sorted[i + 1].base;
        if (hi < lo || hi < size)
            continue;
        uint64_t a = down(hi - size, g);
        if (a < lo || !freed_in(p, lo, hi) || !sp->is_free(sp->ctx, a, size))
            continue;
        if (p->variant == FSC_SIM_PLACE_REUSE_RECENT) {
            size_t age = given_back_rank(p, lo, hi);
            if (pick == UINT64_MAX || age > pick_age) {
                pick = a;
                pick_age = age;
            }
        } else if (pick == UINT64_MAX || p->variant != FSC_SIM_PLACE_REUSE_LOWEST) {
            pick = a;
        }
    }
    if (pick != UINT64_MAX) {
        p->uncertain++;
        if (p->variant != FSC_SIM_PLACE_NO_REUSE) {
            *addr = pick;
            return 0;
        }
    }
    /* Below the lowest chunk. */
    uint64_t span = up(size, g), lo = p->sorted[0].base;
    if (span != UINT64_MAX && lo >= span) {
        uint64_t a = down(lo - span, g);
        if (sp->is_free(sp->ctx, a, size)) {
            *addr = a;
            return 0;
        }
    }
    return FSC_ENOENT;
}

static size_t chunk_at(const fsc__place_t *p, uint64_t addr)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->chunks[i].base <= addr && addr < p->chunks[i].end)
            return i;
    return (size_t)-1;
}

static void chunk_remove(fsc__place_t *p, size_t i)
{
    memmove(&p->chunks[i], &p->chunks[i + 1], (p->n - i - 1) * sizeof *p->chunks);
    p->n--;
}

int fsc__place_observed(fsc__place_t *p, const fsc__place_space_t *sp, uint64_t addr,
                        uint64_t size)
{
    if (p == NULL || sp == NULL || size == 0)
        return FSC_EINVAL;
    uint64_t a;
    size_t i = room_in(p, sp, size, &a);
    /* Room the driver did not use is taken by what the recording does not
     * show (libraries' own cudaMalloc calls, the runtime): later segments
     * will not get it either. */
    if (i != (size_t)-1 && (addr < p->chunks[i].base || addr >= p->chunks[i].end))
        p->chunks[i].passed = 1;
    return 0;
}

int fsc__place_placed(fsc__place_t *p, uint64_t addr, uint64_t size)
{
    if (p == NULL || size == 0)
        return FSC_EINVAL;
    size_t i = chunk_at(p, addr);
    if (i != (size_t)-1 && addr + size <= p->chunks[i].end)
        return 0; /* inside a chunk */
    /* A chunk of its own; one that it outgrew is replaced. */
    if (FSC__VEC_RESERVE(p->chunks, p->cap, p->n + 1) != 0)
        return FSC_ENOMEM;
    if (i != (size_t)-1)
        chunk_remove(p, i);
    uint64_t span = up(size, granule(size));
    uint64_t end = span > UINT64_MAX - addr ? UINT64_MAX : addr + span;
    if (medium(size) && p->n > 0) {
        int highest = 1;
        for (size_t k = 0; k < p->n; k++)
            highest &= p->chunks[k].end <= addr;
        p->above |= highest;
    }
    p->chunks[p->n++] = (chunk_t){addr, end, 0};
    return 0;
}

int fsc__place_released(fsc__place_t *p, const fsc__place_space_t *sp, uint64_t addr)
{
    if (p == NULL || sp == NULL)
        return FSC_EINVAL;
    size_t i = chunk_at(p, addr);
    if (i == (size_t)-1)
        return 0;
    chunk_t c = p->chunks[i];
    uint64_t from = c.base, s, e;
    while (sp->next(sp->ctx, from, &s, &e) && s < c.end) {
        if (s >= c.base)
            return 0; /* a segment still starts inside */
        if (e <= from)
            break;
        from = e;
    }
    if (FSC__VEC_RESERVE(p->freed, p->capfreed, p->nfreed + 1) != 0 ||
        FSC__VEC_RESERVE(p->recent, p->caprecent, p->nrecent + 1) != 0)
        return FSC_ENOMEM;
    chunk_remove(p, i);
    size_t r = 0;
    while (r < p->nrecent && p->recent[r] != c.base)
        r++;
    if (r < p->nrecent) /* given back again: now the latest */
        memmove(&p->recent[r], &p->recent[r + 1], (p->nrecent - r - 1) * sizeof *p->recent);
    else
        p->nrecent++;
    p->recent[p->nrecent - 1] = c.base;
    size_t k = 0;
    while (k < p->nfreed && p->freed[k] < c.base)
        k++;
    if (k < p->nfreed && p->freed[k] == c.base)
        return 0;
    memmove(&p->freed[k + 1], &p->freed[k], (p->nfreed - k) * sizeof *p->freed);
    p->freed[k] = c.base;
    p->nfreed++;
    return 0;
}
