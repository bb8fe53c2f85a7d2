/*
 * sim.c — the simulated device: address arithmetic only, no memory touched.
 *
 * Addresses are deterministic: the lowest 2 MiB-aligned gap of the simulated
 * address space that fits (first fit), so runs replay identically. The
 * scripted variant hands out the addresses a recorded run really got, in
 * order, while the requested sizes match the recording, and after that the
 * addresses the CUDA driver would give (placement.c), anchored on the
 * recorded ones; PyTorch's best fit breaks address ties, so a replay needs
 * the real addresses, or the driver's order, to reproduce every block
 * address.
 */
#include <bsd/sys/tree.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fsc/vec.h"
#include "placement.h"

#define SIM_ALIGN (2ull << 20)
#define SIM_DEFAULT_TOTAL (80ull << 30)
#define SIM_DEFAULT_BASE 0x7f0000000000ull

/* The address ranges in use: a red-black tree by address (libbsd's
 * sys/tree.h), each node also holding what its subtree spans, so that
 * first fit, the overlap check and removal cost O(log n) rather than a walk
 * over every segment (a replay of n segments was O(n^2) here). */
typedef struct sim_range {
    RB_ENTRY(sim_range) rb;
    uint64_t addr, size;
    /* the subtree's: lowest address, highest end, and largest gap between
     * two of its ranges (from one's end, aligned up, to the next's start) */
    uint64_t lo, hi, gap;
} sim_range_t;

static int range_cmp(const sim_range_t *a, const sim_range_t *b)
{
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static uint64_t align_up(uint64_t x)
{
    return x > UINT64_MAX - (SIM_ALIGN - 1) ? UINT64_MAX & ~(SIM_ALIGN - 1)
                                            : (x + SIM_ALIGN - 1) & ~(SIM_ALIGN - 1);
}

/* The aligned room between an end and the next range's start. */
static uint64_t room(uint64_t end, uint64_t next)
{
    uint64_t a = align_up(end);
    return next > a ? next - a : 0;
}

static void range_fix(sim_range_t *n);

#undef RB_AUGMENT
#define RB_AUGMENT(x) range_fix(x)
RB_HEAD(sim_tree, sim_range);
RB_PROTOTYPE_INTERNAL(sim_tree, sim_range, rb, range_cmp, __attribute__((unused)) static)
RB_GENERATE_INTERNAL(sim_tree, sim_range, rb, range_cmp, __attribute__((unused)) static)

static void range_fix(sim_range_t *n)
{
    if (n == NULL)
        return;
    sim_range_t *l = RB_LEFT(n, rb), *r = RB_RIGHT(n, rb);
    uint64_t end = n->addr + n->size;
    n->lo = l ? l->lo : n->addr;
    n->hi = r ? r->hi : end;
    uint64_t g = 0;
    if (l) {
        g = l->gap;
        uint64_t m = room(l->hi, n->addr);
        g = m > g ? m : g;
    }
    if (r) {
        g = r->gap > g ? r->gap : g;
        uint64_t m = room(end, r->lo);
        g = m > g ? m : g;
    }
    n->gap = g;
}

static void range_fix_up(sim_range_t *n)
{
    for (; n != NULL; n = RB_PARENT(n, rb))
        range_fix(n);
}

typedef struct sim_vseg {
    uint64_t base, size;
} sim_vseg_t;

typedef struct sim {
    fsc_backend_t pub;
    uint64_t base;
    uint64_t phys_used;
    uint64_t taken; /* by others: fsc_backend_sim_set_taken */
    struct sim_tree ranges; /* non-overlapping */
    uint64_t *script_addrs, *script_sizes;
    size_t nscript, next;
    long diverged;
    uint64_t *va_script; /* recorded bases of expandable segments, in order */
    size_t nva, va_next;
    fsc__place_t *place; /* the driver's placement (scripted sims only) */
} sim_t;

/* The range with the highest address below `below`, or NULL. */
static sim_range_t *range_before(sim_t *s, uint64_t below)
{
    sim_range_t key;
    key.addr = below;
    sim_range_t *n = RB_NFIND(sim_tree, &s->ranges, &key);
    return n != NULL ? RB_PREV(sim_tree, &s->ranges, n) : RB_MAX(sim_tree, &s->ranges);
}

/* The range with the lowest address above `above`, or NULL. */
static sim_range_t *range_after(sim_t *s, uint64_t above)
{
    if (above == UINT64_MAX)
        return NULL;
    sim_range_t key;
    key.addr = above + 1;
    return RB_NFIND(sim_tree, &s->ranges, &key);
}

/* No range in use overlaps [addr, addr + size): only the last one to start
 * below its end can. */
static int range_free(sim_t *s, uint64_t addr, uint64_t size)
{
    if (addr + size < addr)
        return 0; /* wraps around */
    const sim_range_t *p = range_before(s, size != 0 ? addr + size : addr);
    return p == NULL || p->addr + p->size <= addr;
}

static int range_add(sim_t *s, uint64_t addr, uint64_t size)
{
    sim_range_t *n = calloc(1, sizeof *n);
    if (n == NULL)
        return FSC_ENOMEM;
    n->addr = addr;
    n->size = size;
    range_fix(n);
    if (RB_INSERT(sim_tree, &s->ranges, n) != NULL) {
        free(n); /* a range at that address already: callers check first */
        return FSC_ESTATE;
    }
    range_fix_up(n);
    return 0;
}

static void range_del(sim_t *s, uint64_t addr)
{
    sim_range_t key;
    key.addr = addr;
    sim_range_t *n = RB_FIND(sim_tree, &s->ranges, &key);
    if (n == NULL)
        return;
    sim_range_t *p = RB_PARENT(n, rb);
    RB_REMOVE(sim_tree, &s->ranges, n);
    range_fix_up(p);
    free(n);
}

/* Lowest aligned address >= max(prev_end aligned, base) inside subtree n's
 * span, before n's leftmost range or between two of its ranges, that fits
 * size; prev_end: the end of the range just before the subtree (or base).
 * UINT64_MAX: none in this subtree. */
static uint64_t fit_in(const sim_t *s, const sim_range_t *n, uint64_t prev_end, uint64_t size)
{
    if (n == NULL)
        return UINT64_MAX;
    uint64_t from = prev_end > s->base ? prev_end : s->base;
    if (room(from, n->lo) < size && n->gap < size)
        return UINT64_MAX;
    const sim_range_t *l = RB_LEFT(n, rb), *r = RB_RIGHT(n, rb);
    uint64_t a = fit_in(s, l, prev_end, size);
    if (a != UINT64_MAX)
        return a;
    uint64_t e = l != NULL ? l->hi : prev_end;
    uint64_t cand = align_up(e > s->base ? e : s->base);
    if (n->addr >= cand && n->addr - cand >= size)
        return cand;
    return fit_in(s, r, n->addr + n->size, size);
}

/* Lowest aligned gap at or above base that fits size. */
static uint64_t first_fit(const sim_t *s, uint64_t size)
{
    const sim_range_t *root = RB_ROOT(&s->ranges);
    uint64_t a = fit_in(s, root, s->base, size);
    if (a != UINT64_MAX)
        return a;
    if (root == NULL)
        return s->base;
    return align_up(root->hi > s->base ? root->hi : s->base);
}

/* The device's ranges as placement.c asks for them. */
static int space_next(void *ctx, uint64_t from, uint64_t *start, uint64_t *end)
{
    sim_t *s = ctx;
    const sim_range_t *n = from == UINT64_MAX ? NULL : range_before(s, from + 1);
    if (n == NULL || n->addr + n->size <= from)
        n = range_after(s, from);
    if (n == NULL)
        return 0;
    *start = n->addr;
    *end = n->addr + n->size;
    return 1;
}

static int space_is_free(void *ctx, uint64_t addr, uint64_t size)
{
    return range_free(ctx, addr, size);
}

static fsc__place_space_t space_of(sim_t *s)
{
    return (fsc__place_space_t){s, space_next, space_is_free};
}

/* An address for a segment the script does not give: the driver's, when
 * this sim follows it, anchored on the recording's first address while
 * nothing is placed; else (or when the model has none) first fit. */
static uint64_t invent(sim_t *s, uint64_t size)
{
    if (s->place != NULL) {
        fsc__place_space_t sp = space_of(s);
        uint64_t a;
        if (fsc__place_predict(s->place, &sp, size, &a) == 0)
            return a;
        if (s->nscript > 0 && range_free(s, s->script_addrs[0], size))
            return s->script_addrs[0];
    }
    return first_fit(s, size);
}

static int sim_place(sim_t *s, uint64_t size, uint64_t *addr, fsc_err_t *err)
{
    uint64_t a = 0;
    int scripted = 0;
    if (s->diverged < 0 && s->script_addrs != NULL) {
        if (s->next < s->nscript && s->script_sizes[s->next] == size &&
            range_free(s, s->script_addrs[s->next], size)) {
            a = s->script_addrs[s->next++];
            scripted = 1;
            if (s->place != NULL) {
                fsc__place_space_t sp = space_of(s);
                (void)fsc__place_observed(s->place, &sp, a, size);
            }
        } else {
            s->diverged = (long)s->next;
        }
    }
    if (!scripted)
        a = invent(s, size);
    if (range_add(s, a, size) != 0)
        return fsc_err_set(err, FSC_ENOMEM, "sim backend: out of host memory");
    if (s->place != NULL && fsc__place_placed(s->place, a, size) != 0) {
        range_del(s, a);
        return fsc_err_set(err, FSC_ENOMEM, "sim backend: out of host memory");
    }
    *addr = a;
    return 0;
}

static int sim_seg_alloc(fsc_backend_t *b, uint64_t size, uint64_t *addr, fsc_err_t *err)
{
    sim_t *s = (sim_t *)b;
    if (size > b->total || s->phys_used + s->taken + size > b->total)
        return FSC_EOOM;
    int rc = sim_place(s, size, addr, err);
    if (rc == 0)
        s->phys_used += size;
    return rc;
}

static void sim_seg_free(fsc_backend_t *b, uint64_t addr, uint64_t size)
{
    sim_t *s = (sim_t *)b;
    range_del(s, addr);
    s->phys_used -= size;
    if (s->place != NULL) {
        fsc__place_space_t sp = space_of(s);
        /* out of host memory here only forgets a given-back chunk */
        (void)fsc__place_released(s->place, &sp, addr);
    }
}

static int sim_va_reserve(fsc_backend_t *b, uint64_t size, uint64_t page, void **vseg,
                          uint64_t *base, fsc_err_t *err)
{
    sim_t *s = (sim_t *)b;
    (void)page;
    sim_vseg_t *v = malloc(sizeof *v);
    if (v == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "sim backend: out of host memory");
    v->size = size;
    /* A recorded base while the replay reserves in the recorded order, so
     * that addresses inside expandable segments match the recording. */
    uint64_t span = size;
    int scripted = 0;
    if (s->va_next < s->nva) {
        /* The recording's device may have been smaller than the sim's, so
         * its reservations lay closer together: this one ends where the
         * next recorded one begins. */
        uint64_t b0 = s->va_script[s->va_next];
        for (size_t k = 0; k < s->nva; k++)
            if (s->va_script[k] > b0 && s->va_script[k] - b0 < span)
                span = s->va_script[k] - b0;
        scripted = range_free(s, b0, span);
    }
    if (scripted) {
        v->base = s->va_script[s->va_next++];
    } else {
        s->nva = s->va_next; /* diverged: invented bases from here on */
        span = size;
        v->base = first_fit(s, size);
    }
    if (range_add(s, v->base, span) != 0) {
        free(v);
        return fsc_err_set(err, FSC_ENOMEM, "sim backend: out of host memory");
    }
    *vseg = v;
    *base = v->base;
    return 0;
}

static int sim_va_map(fsc_backend_t *b, void *vseg, uint64_t off, uint64_t len, fsc_err_t *err)
{
    sim_t *s = (sim_t *)b;
    (void)vseg;
    (void)off;
    (void)err;
    if (s->phys_used + s->taken + len > b->total)
        return FSC_EOOM;
    s->phys_used += len;
    return 0;
}

static void sim_va_unmap(fsc_backend_t *b, void *vseg, uint64_t off, uint64_t len)
{
    (void)vseg;
    (void)off;
    ((sim_t *)b)->phys_used -= len;
}

static void sim_va_release(fsc_backend_t *b, void *vseg)
{
    sim_vseg_t *v = vseg;
    range_del((sim_t *)b, v->base);
    free(v);
}

static int sim_seg_adopt(fsc_backend_t *b, uint64_t addr, uint64_t size, fsc_err_t *err)
{
    sim_t *s = (sim_t *)b;
    if (!range_free(s, addr, size))
        return fsc_err_set(err, FSC_ESTATE, "sim backend: 0x%llx+%llu overlaps a range in use",
                           (unsigned long long)addr, (unsigned long long)size);
    if (range_add(s, addr, size) != 0)
        return fsc_err_set(err, FSC_ENOMEM, "sim backend: out of host memory");
    if (s->place != NULL && fsc__place_placed(s->place, addr, size) != 0) {
        range_del(s, addr);
        return fsc_err_set(err, FSC_ENOMEM, "sim backend: out of host memory");
    }
    s->phys_used += size;
    return 0;
}

static int sim_va_adopt(fsc_backend_t *b, uint64_t base, uint64_t *sizep, void **vseg,
                        fsc_err_t *err)
{
    sim_t *s = (sim_t *)b;
    uint64_t size = *sizep;
    /* As for a scripted base: the range ends where the next range in use
     * or recorded base begins (the recording's device may have been
     * smaller than the sim's). */
    uint64_t span = size;
    const sim_range_t *nx = range_after(s, base);
    if (nx != NULL && nx->addr - base < span)
        span = nx->addr - base;
    for (size_t k = 0; k < s->nva; k++)
        if (s->va_script[k] > base && s->va_script[k] - base < span)
            span = s->va_script[k] - base;
    if (!range_free(s, base, span))
        return fsc_err_set(err, FSC_ESTATE, "sim backend: address space at 0x%llx is in use",
                           (unsigned long long)base);
    sim_vseg_t *v = malloc(sizeof *v);
    if (v == NULL || range_add(s, base, span) != 0) {
        free(v);
        return fsc_err_set(err, FSC_ENOMEM, "sim backend: out of host memory");
    }
    v->base = base;
    v->size = span;
    *vseg = v;
    *sizep = span;
    return 0;
}

static void sim_mem_info(fsc_backend_t *b, uint64_t *free_bytes, uint64_t *total)
{
    const sim_t *s = (const sim_t *)b;
    uint64_t used = s->phys_used + s->taken;
    *free_bytes = used < b->total ? b->total - used : 0;
    *total = b->total;
}

static void sim_destroy(fsc_backend_t *b)
{
    sim_t *s = (sim_t *)b;
    sim_range_t *n, *nx;
    for (n = RB_MIN(sim_tree, &s->ranges); n != NULL; n = nx) {
        nx = RB_NEXT(sim_tree, &s->ranges, n);
        RB_REMOVE(sim_tree, &s->ranges, n);
        free(n);
    }
    free(s->script_addrs);
    free(s->script_sizes);
    free(s->va_script);
    fsc__place_destroy(s->place);
    free(s);
}

static const fsc_backend_ops_t k_sim_ops = {
    .seg_alloc = sim_seg_alloc,
    .seg_free = sim_seg_free,
    .va_reserve = sim_va_reserve,
    .va_map = sim_va_map,
    .va_unmap = sim_va_unmap,
    .va_release = sim_va_release,
    .seg_adopt = sim_seg_adopt,
    .va_adopt = sim_va_adopt,
    .mem_info = sim_mem_info,
    .destroy = sim_destroy,
};

int fsc_backend_sim_create(uint64_t capacity, uint64_t base, fsc_backend_t **out)
{
    if (out == NULL)
        return FSC_EINVAL;
    sim_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return FSC_ENOMEM;
    s->pub.ops = &k_sim_ops;
    s->pub.total = capacity ? capacity : SIM_DEFAULT_TOTAL;
    s->base = base ? (base + SIM_ALIGN - 1) & ~(SIM_ALIGN - 1) : SIM_DEFAULT_BASE;
    s->diverged = -1;
    RB_INIT(&s->ranges);
    strcpy(s->pub.name, "sim");
    *out = &s->pub;
    return 0;
}

int fsc_backend_sim_set_taken(fsc_backend_t *b, uint64_t bytes)
{
    if (b == NULL || b->ops != &k_sim_ops)
        return FSC_EINVAL;
    ((sim_t *)b)->taken = bytes;
    return 0;
}

int fsc_backend_sim_create_scripted(uint64_t capacity, const uint64_t *addrs,
                                    const uint64_t *sizes, size_t n, fsc_backend_t **out)
{
    if (out == NULL || (n > 0 && (addrs == NULL || sizes == NULL)))
        return FSC_EINVAL;
    int rc = fsc_backend_sim_create(capacity, 0, out);
    if (rc != 0)
        return rc;
    sim_t *s = (sim_t *)*out;
    s->script_addrs = malloc((n ? n : 1) * sizeof *addrs);
    s->script_sizes = malloc((n ? n : 1) * sizeof *sizes);
    if (s->script_addrs == NULL || s->script_sizes == NULL || fsc__place_create(&s->place) != 0) {
        sim_destroy(*out);
        *out = NULL;
        return FSC_ENOMEM;
    }
    if (n > 0) {
        memcpy(s->script_addrs, addrs, n * sizeof *addrs);
        memcpy(s->script_sizes, sizes, n * sizeof *sizes);
    }
    s->nscript = n;
    strcpy(s->pub.name, "sim (scripted)");
    return 0;
}

int fsc_backend_sim_script_va(fsc_backend_t *b, const uint64_t *bases, size_t n)
{
    if (b == NULL || b->ops != &k_sim_ops || (n > 0 && bases == NULL))
        return FSC_EINVAL;
    sim_t *s = (sim_t *)b;
    uint64_t *v = malloc((n ? n : 1) * sizeof *v);
    if (v == NULL)
        return FSC_ENOMEM;
    if (n > 0)
        memcpy(v, bases, n * sizeof *bases);
    free(s->va_script);
    s->va_script = v;
    s->nva = n;
    s->va_next = 0;
    return 0;
}

long fsc_backend_sim_script_diverged(const fsc_backend_t *b)
{
    if (b == NULL || b->ops != &k_sim_ops)
        return -1;
    return ((const sim_t *)b)->diverged;
}

int fsc_backend_sim_set_placement(fsc_backend_t *b, int placement)
{
    if (b == NULL || b->ops != &k_sim_ops || ((sim_t *)b)->place == NULL)
        return FSC_EINVAL;
    return fsc__place_set_variant(((sim_t *)b)->place, placement);
}

int fsc_backend_sim_placement_uncertain(const fsc_backend_t *b, uint64_t *out)
{
    if (b == NULL || b->ops != &k_sim_ops || out == NULL)
        return FSC_EINVAL;
    *out = fsc__place_uncertain(((const sim_t *)b)->place);
    return 0;
}
