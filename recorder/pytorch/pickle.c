/*
 * pickle.c — reads the pickle subset of PyTorch memory snapshots into a
 * value tree (see pickle.h for the guarantees: shared memo references,
 * sealed containers, bounded depth and memory).
 *
 * The input is untrusted: every length is checked against the bytes left,
 * every memo index against what was stored, and all allocation goes through
 * one budget proportional to the input size, so no input can make the reader
 * allocate without bound, recurse, or loop.
 */
#include "pickle.h"
#include "text_codec.h"
#include "pickle_scan.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fsc/vec.h"
#include "fsc/thread.h"

/* ---- arenas ------------------------------------------------------------ */

/* A bump allocator over a list of chunks. 'pos' counts every byte handed
 * out since the arena began (chunk tails skipped included), so a position
 * taken earlier can be returned to: everything allocated after it is freed
 * at once (the streaming parser does this after each batch of history
 * entries; nothing else may point there, see fsc__pickle_stream). */
typedef struct fsc__achunk {
    struct fsc__achunk *next;
    size_t used, cap;
    uint64_t start; /* arena position of data[0] */
    max_align_t data[];
} fsc__achunk_t;

typedef struct fsc__arena {
    fsc__achunk_t *chunks; /* newest first */
    fsc__achunk_t *spare;  /* one freed chunk kept for reuse */
    uint64_t pos;
} fsc__arena_t;

struct fsc__pdoc {
    fsc__arena_t keep; /* nodes that stay: the tree, memo entries referenced again */
    fsc__arena_t tmp;  /* streaming: nodes of the batch being read */
    size_t mem;        /* bytes allocated (arenas + parser stacks) */
    size_t budget;     /* 0 = unlimited (documents built by hand) */
    char *input;       /* copy of the parsed bytes (strings point into it); NULL if borrowed */
    const fsc__pv_t *root;
    fsc__pv_t none, yes, no;
    /* streaming: kept lists get their items from the heap (F_HEAP), so
     * that a list read for the last time can give them back; all of them
     * are listed here to be freed with the document */
    int heap_lists;
    fsc__pv_t **heap;
    size_t nheap, capheap;
};

/* Flags in fsc__pv_t.sealed. */
#define F_SEALED 1u   /* placed inside another container */
#define F_KEY 2u      /* dict: a key waits for its value */
#define F_KEEP 4u     /* in the 'keep' arena: outlives a streamed batch */
#define F_OWNTEXT 8u  /* STR: bytes decoded into the arena, not the input */
#define F_ROLE_SHIFT 4 /* 2 bits: list role for streaming (R_*) */
#define F_HEAP 64u    /* kept LIST whose items array is malloc'd (streaming) */
#define F_HELD 128u   /* held by a container that may outlive the batch of history
                          entries being read (a kept one, or any container built
                          outside such a batch): its items are never freed */
enum { R_UNKNOWN = 0, R_OTHER = 1, R_TRACES = 2, R_DEVLIST = 3 };

#define FSC__ACHUNK_MIN (64u * 1024u)

static int budget_take(fsc__pdoc_t *d, size_t n)
{
    if (d->budget != 0 && (n > d->budget || d->mem > d->budget - n))
        return FSC_ELIMIT;
    d->mem += n;
    return 0;
}

static void *arena_alloc(fsc__pdoc_t *d, fsc__arena_t *a, size_t n)
{
    n = (n + 7u) & ~(size_t)7u;
    fsc__achunk_t *c = a->chunks;
    if (c == NULL || c->cap - c->used < n) {
        if (c != NULL)
            a->pos = c->start + c->used;
        size_t cap = n > FSC__ACHUNK_MIN ? n : FSC__ACHUNK_MIN;
        if (a->spare != NULL && a->spare->cap >= cap) {
            c = a->spare;
            a->spare = NULL;
        } else {
            if (budget_take(d, cap) != 0)
                return NULL;
            c = malloc(sizeof *c + cap);
            if (c == NULL)
                return NULL;
            c->cap = cap;
        }
        c->used = 0;
        c->start = a->pos;
        c->next = a->chunks;
        a->chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    a->pos = c->start + c->used;
    return p;
}

static void arena_reset(fsc__pdoc_t *d, fsc__arena_t *a, uint64_t pos)
{
    while (a->chunks != NULL && a->chunks->start > pos) {
        fsc__achunk_t *c = a->chunks;
        a->chunks = c->next;
        if (a->spare == NULL && c->cap == FSC__ACHUNK_MIN) {
            a->spare = c;
        } else {
            d->mem -= c->cap;
            free(c);
        }
    }
    if (a->chunks != NULL && pos - a->chunks->start <= a->chunks->used)
        a->chunks->used = (size_t)(pos - a->chunks->start);
    a->pos = pos;
}

static void arena_free(fsc__arena_t *a)
{
    for (fsc__achunk_t *c = a->chunks, *n; c != NULL; c = n) {
        n = c->next;
        free(c);
    }
    free(a->spare);
    memset(a, 0, sizeof *a);
}

int fsc__pdoc_new(fsc__pdoc_t **out)
{
    fsc__pdoc_t *d = calloc(1, sizeof *d);
    if (d == NULL)
        return FSC_ENOMEM;
    d->none.kind = FSC__PV_NONE;
    d->yes.kind = d->no.kind = FSC__PV_BOOL;
    d->yes.u.i = 1;
    d->none.depth = d->yes.depth = d->no.depth = 1;
    d->none.sealed = d->yes.sealed = d->no.sealed = F_KEEP;
    *out = d;
    return 0;
}

void fsc__pdoc_free(fsc__pdoc_t *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->nheap; i++)
        free(d->heap[i]->u.items);
    free(d->heap);
    arena_free(&d->keep);
    arena_free(&d->tmp);
    free(d->input);
    free(d);
}

const fsc__pv_t *fsc__pdoc_root(const fsc__pdoc_t *d) { return d ? d->root : NULL; }
size_t fsc__pdoc_mem(const fsc__pdoc_t *d) { return d ? d->mem : 0; }
void fsc__pdoc_set_root(fsc__pdoc_t *d, const fsc__pv_t *root) { d->root = root; }

/* A node's fields but its value set one by one: a compound literal made
 * GCC clear the 24 bytes with `rep stos` first, which cost a quarter of the
 * parse's time in taking records over. Every node the history's decoders
 * fill in place is set with it. */
static inline void pv_set(fsc__pv_t *v, fsc__pv_kind_t kind, uint16_t depth, uint32_t len,
                          uint32_t cap)
{
    v->kind = (uint8_t)kind;
    v->sealed = 0;
    v->depth = depth;
    v->len = len;
    v->cap = cap;
    v->aux = 0;
}

static fsc__pv_t *node_in(fsc__pdoc_t *d, fsc__arena_t *a, fsc__pv_kind_t kind)
{
    fsc__pv_t *v = arena_alloc(d, a, sizeof *v);
    if (v != NULL) {
        memset(v, 0, sizeof *v);
        v->kind = (uint8_t)kind;
        v->depth = 1;
        if (a == &d->keep)
            v->sealed = F_KEEP;
    }
    return v;
}

fsc__pv_t *fsc__pdoc_scalar(fsc__pdoc_t *d, fsc__pv_kind_t kind)
{
    return node_in(d, &d->keep, kind);
}

fsc__pv_t *fsc__pdoc_str(fsc__pdoc_t *d, const char *s, size_t len)
{
    if (len > UINT32_MAX)
        return NULL;
    fsc__pv_t *v = fsc__pdoc_scalar(d, FSC__PV_STR);
    char *copy = arena_alloc(d, &d->keep, len + 1);
    if (v == NULL || copy == NULL)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    v->u.s = copy;
    v->len = (uint32_t)len;
    v->sealed |= F_OWNTEXT;
    return v;
}

static fsc__pv_t *container_in(fsc__pdoc_t *d, fsc__arena_t *a, fsc__pv_kind_t kind, uint32_t cap)
{
    fsc__pv_t *v = node_in(d, a, kind);
    if (v == NULL)
        return NULL;
    if (cap > 0) {
        if (kind == FSC__PV_DICT)
            cap *= 2;
        v->u.items = arena_alloc(d, a, (size_t)cap * sizeof(fsc__pv_t *));
        if (v->u.items == NULL)
            return NULL;
        v->cap = cap;
    }
    return v;
}

fsc__pv_t *fsc__pdoc_container(fsc__pdoc_t *d, fsc__pv_kind_t kind, uint32_t cap)
{
    return container_in(d, &d->keep, kind, cap);
}

static int is_container(const fsc__pv_t *v)
{
    return v->kind == FSC__PV_LIST || v->kind == FSC__PV_TUPLE || v->kind == FSC__PV_DICT;
}

/* Room for ncap (> cap) item pointers in c, the old ones kept: in c's arena,
 * or on the heap for a list marked F_HEAP. */
static int items_room(fsc__pdoc_t *d, fsc__pv_t *c, uint32_t ncap)
{
    if (c->sealed & F_HEAP) {
        size_t add = (size_t)(ncap - c->cap) * sizeof *c->u.items;
        if (budget_take(d, add) != 0)
            return FSC_ELIMIT;
        fsc__pv_t **ni = realloc(c->u.items, (size_t)ncap * sizeof *ni);
        if (ni == NULL) {
            d->mem -= add;
            return FSC_ELIMIT;
        }
        c->u.items = ni;
        c->cap = ncap;
        return 0;
    }
    fsc__pv_t **ni =
        arena_alloc(d, (c->sealed & F_KEEP) ? &d->keep : &d->tmp, (size_t)ncap * sizeof *ni);
    if (ni == NULL)
        return FSC_ELIMIT;
    if (c->cap > 0)
        memcpy(ni, c->u.items, (size_t)c->cap * sizeof *ni);
    c->u.items = ni;
    c->cap = ncap;
    return 0;
}

/* Append one item; for dicts the caller pushes key and value, and len counts
 * pairs (a pending key is kept in slot 2*len until its value arrives). The
 * items array lives in the container's arena. */
static int push_raw(fsc__pdoc_t *d, fsc__pv_t *c, fsc__pv_t *item, uint32_t slot)
{
    if (slot >= c->cap) {
        if (c->cap >= (UINT32_MAX / 2))
            return FSC_ELIMIT;
        uint32_t ncap = c->cap < 4 ? 4 : c->cap * 2;
        int rc = items_room(d, c, ncap);
        if (rc != 0)
            return rc;
    }
    c->u.items[slot] = item;
    if (item->depth + 1 > c->depth)
        c->depth = (uint16_t)(item->depth + 1);
    if (is_container(item))
        item->sealed |= (uint8_t)(F_SEALED | ((c->sealed & F_KEEP) ? F_HELD : 0u));
    return 0;
}

int fsc__pdoc_push(fsc__pdoc_t *d, fsc__pv_t *c, fsc__pv_t *item)
{
    if (item->depth + 1 > FSC__PICKLE_MAX_DEPTH)
        return FSC_ELIMIT;
    if (c->kind == FSC__PV_DICT) {
        if (c->sealed & F_KEY) {
            int rc = push_raw(d, c, item, c->len * 2 + 1);
            if (rc == 0) {
                c->len++;
                c->sealed &= (uint8_t)~F_KEY;
            }
            return rc;
        }
        int rc = push_raw(d, c, item, c->len * 2);
        if (rc == 0)
            c->sealed |= F_KEY;
        return rc;
    }
    int rc = push_raw(d, c, item, c->len);
    if (rc == 0)
        c->len++;
    return rc;
}

/* ---- accessors --------------------------------------------------------- */

const fsc__pv_t *fsc__pv_get(const fsc__pv_t *v, const char *key)
{
    if (v == NULL || v->kind != FSC__PV_DICT)
        return NULL;
    size_t kl = strlen(key);
    for (uint32_t i = v->len; i-- > 0;) {
        const fsc__pv_t *k = v->u.items[2 * i];
        if (k->kind == FSC__PV_STR && k->len == kl && memcmp(k->u.s, key, kl) == 0)
            return v->u.items[2 * i + 1];
    }
    return NULL;
}

int fsc__pv_is_str(const fsc__pv_t *v, const char *s)
{
    size_t n = strlen(s);
    return v != NULL && v->kind == FSC__PV_STR && v->len == n && memcmp(v->u.s, s, n) == 0;
}

int fsc__pv_int(const fsc__pv_t *v, int64_t *out)
{
    if (v != NULL && (v->kind == FSC__PV_INT || v->kind == FSC__PV_BOOL)) {
        *out = v->u.i; /* exact: never through a double */
        return 1;
    }
    double f;
    if (!fsc__pv_num(v, &f) || !(f >= -9.2e18 && f <= 9.2e18) || f != (double)(int64_t)f)
        return 0; /* not a number, or a float with no exact integer value */
    *out = (int64_t)f;
    return 1;
}

int fsc__pv_num(const fsc__pv_t *v, double *out)
{
    if (v == NULL)
        return 0;
    if (v->kind == FSC__PV_INT || v->kind == FSC__PV_BOOL) {
        *out = (double)v->u.i;
        return 1;
    }
    if (v->kind == FSC__PV_FLOAT) {
        *out = v->u.f;
        return 1;
    }
    return 0;
}

uint32_t fsc__pv_seq(const fsc__pv_t *v, fsc__pv_t *const **items)
{
    if (v == NULL || (v->kind != FSC__PV_LIST && v->kind != FSC__PV_TUPLE)) {
        *items = NULL;
        return 0;
    }
    *items = v->u.items;
    return v->len;
}

uint64_t fsc__pv_count(const fsc__pv_t *v)
{
    if (v == NULL || (v->kind != FSC__PV_LIST && v->kind != FSC__PV_TUPLE))
        return 0;
    return (uint64_t)v->len + v->aux;
}

_Static_assert(F_KEEP == FSC__PV_F_KEEP, "pickle.h's copy of F_KEEP");

/* ---- parser ------------------------------------------------------------ */

/* A list of device_traces found while streaming: where its entries go. */
typedef struct fsc__pdev {
    const fsc__pv_t *list, *outer;
    uint32_t dev;
} fsc__pdev_t;

#define FSC__PICKLE_MAX_DEVLISTS 1024
#define FSC__HP_MAX_THREADS 16
#define FSC__HP_PH 2048
#define FSC__FAST_PAIRS 64
#define FSC__MCACHE 4096 /* memo reads cached: keys, actions, the frame dicts of stacks */
/* Longest list of memo references the fast path reads (frames of a stack:
 * tens to a few hundred); longer ones go through the generic parser. */
#define FSC__FAST_LIST 1000

typedef struct fsc__hpool fsc__hpool_t;

typedef struct fsc__pparse {
    fsc__pdoc_t *d;
    fsc__arena_t *a; /* where new nodes go: tmp when streaming, else keep */
    const uint8_t *p;
    size_t len, pos, op_pos;
    const char *name;
    fsc_err_t *err;
    fsc__pv_t **stack;
    uint64_t *wm; /* tmp arena position after each stack slot was pushed */
    size_t sp, scap, wcap;
    size_t *marks;
    size_t mp, mcap;
    fsc__pv_t **memo;
    size_t memo_n, memo_cap;
    /* streaming */
    const fsc__pscan_t *scan;
    const fsc__pstream_t *cb;
    int cb_rc; /* the callback's failure, returned as is */
    fsc__pdev_t devs[16];
    fsc__pdev_t *devv; /* all devlists (devs while few) */
    size_t ndev, devcap;
    size_t next_progress;
    /* streaming: memo reads by index, direct-mapped (keys and action
     * strings are read again and again: this spares the rank lookup) */
    struct {
        uint64_t idx;
        fsc__pv_t *v;
    } mcache[FSC__MCACHE];
    /* fast path: one history entry decoded without allocating */
    fsc__pv_t fe_vals[FSC__FAST_PAIRS];
    fsc__pv_t *fe_items[2 * FSC__FAST_PAIRS];
    fsc__pv_t fe_dict;
    /* streaming: reads left per memo slot (the scan's counts), so that a
     * kept list is freed after its last read. Lists whose last read is in
     * a batch of history entries wait in 'dead' until the batch has been
     * handed over; mark_dead[m] is ndead when mark m was pushed, so the
     * batch's own are those after its MARK. The fast path's reads count
     * only once its entry is taken (fe_rd). */
    uint8_t *left;
    fsc__pv_t **dead;
    size_t ndead, capdead;
    size_t *mark_dead;
    size_t mdcap, popped_dead;
    uint64_t fe_rd[2 * FSC__FAST_PAIRS + FSC__FAST_LIST];
    size_t fe_nrd;
    /* the items of an entry's list that is not kept (one per entry) */
    fsc__pv_t *fe_list[FSC__FAST_LIST];
    int fe_list_used;
    size_t batch_mp; /* mp while inside a batch of history entries (MARK above a
                        history list); 0 outside */
    /* skip_frames: the memo value of everything defined inside skipped
     * frames (never handed out: reading it elsewhere ends the parse with
     * FSC__PICKLE_ESKIPPED), and the key string 'frames' once met */
    fsc__pv_t skipped;
    const fsc__pv_t *frames_key;
    int skip_pending; /* the generic parser read a skipped value in this batch */
    int skip_any;     /* ... in any batch */
    /* the history on several threads (see fsc__hpool): the pool while it
     * runs; in a worker's parser, the main parser's placeholder for skipped
     * values, the memo indices it may read (those the main parser defined
     * before the range was taken) and the skipped ones its range defines */
    fsc__hpool_t *hp;
    int hp_tried;
    int worker;
    const fsc__pv_t *skipv;
    uint64_t memo_lim;
    uint64_t *wdefs;
    size_t nwdefs, capwdefs;
    /* a worker's stand-ins in the entry being decoded: memo entries the
     * main parser resolves when it takes the range (HV_MREF), lists kept
     * in the memo that it builds then (HV_LDEF, items in wl) */
    fsc__pv_t wph[FSC__HP_PH];
    struct fsc__hph {
        uint64_t idx;
        size_t off;
        uint32_t n;
    } wphi[FSC__HP_PH];
    size_t nph;
    fsc__pv_t **wl;
    size_t nwl, capwl;
} fsc__pparse_t;

/* skip_frames: v holds a skipped value (outside an entry's 'frames', for
 * an entry: key_frames). Depth is bounded by the reader's limit. */
static int holds_skipped(const fsc__pparse_t *ps, const fsc__pv_t *v, int entry)
{
    if (v == &ps->skipped)
        return 1;
    if (v->kind != FSC__PV_LIST && v->kind != FSC__PV_TUPLE && v->kind != FSC__PV_DICT)
        return 0;
    uint32_t n = v->kind == FSC__PV_DICT ? 2 * v->len : v->len;
    for (uint32_t i = 0; i < n; i++) {
        if (entry && v->kind == FSC__PV_DICT && (i & 1u) &&
            fsc__pv_is_str(v->u.items[i - 1], "frames"))
            continue;
        if (holds_skipped(ps, v->u.items[i], 0))
            return 1;
    }
    return 0;
}

/* The kept value of memo index idx, or NULL (streaming). */
static inline fsc__pv_t *memo_at(fsc__pparse_t *ps, uint64_t idx, size_t memo_n)
{
    size_t h = (size_t)(idx & (FSC__MCACHE - 1));
    if (ps->mcache[h].v != NULL && ps->mcache[h].idx == idx)
        return ps->mcache[h].v;
    size_t slot = idx < memo_n && idx < ps->memo_lim ? scan_slot(ps->scan, idx) : SIZE_MAX;
    fsc__pv_t *v = slot == SIZE_MAX ? NULL : ps->memo[slot];
    if (v != NULL) {
        ps->mcache[h].idx = idx;
        ps->mcache[h].v = v;
    }
    return v;
}


static int perr(fsc__pparse_t *ps, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int perr(fsc__pparse_t *ps, int code, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fsc_err_set(ps->err, code, "%s: offset %zu: %s", ps->name, ps->op_pos, what);
}

/* fsc/vec.h's array, with the growth charged to the input's memory budget
 * first (the capacity it grows to is computed here to know the charge). */
static int grow(fsc__pparse_t *ps, void *arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap < 64 ? 64 : *cap;
    while (ncap < need)
        ncap *= 2;
    if (budget_take(ps->d, (ncap - *cap) * elem) != 0)
        return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input",
                    ps->len);
    if (fsc__vec_reserve(arr, cap, ncap, elem) != 0)
        return perr(ps, FSC_ENOMEM, "out of memory");
    return 0;
}

static int nomem(fsc__pparse_t *ps)
{
    return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input", ps->len);
}

static int push(fsc__pparse_t *ps, fsc__pv_t *v)
{
    if (v == NULL)
        return nomem(ps);
    if (ps->sp >= ps->scap) {
        int rc = grow(ps, &ps->stack, &ps->scap, ps->sp + 1, sizeof *ps->stack);
        if (rc == 0 && ps->scan != NULL)
            rc = grow(ps, &ps->wm, &ps->wcap, ps->scap, sizeof *ps->wm);
        if (rc != 0)
            return rc;
    }
    if (ps->scan != NULL)
        ps->wm[ps->sp] = ps->d->tmp.pos;
    ps->stack[ps->sp++] = v;
    return 0;
}

static fsc__pv_t *pnode(fsc__pparse_t *ps, fsc__pv_kind_t kind) { return node_in(ps->d, ps->a, kind); }

static fsc__pv_t *pcont(fsc__pparse_t *ps, fsc__pv_kind_t kind, uint32_t cap)
{
    return container_in(ps->d, ps->a, kind, cap);
}

static void release(fsc__pparse_t *ps, fsc__pv_t *v);

static fsc__pdev_t *dev_of(fsc__pparse_t *ps, const fsc__pv_t *list)
{
    for (size_t i = ps->ndev; i-- > 0;)
        if (ps->devv[i].list == list)
            return &ps->devv[i];
    return NULL;
}

/* A copy of v in the keep arena (v itself when it is there): what a memo
 * entry that is read again, or an item of such a container, must be. Depth
 * is bounded, so is the recursion. */
/* Lists whose items are on the heap, listed to be freed with the document. */
static int heap_add(fsc__pdoc_t *d, fsc__pv_t *c)
{
    if (d->nheap == d->capheap) {
        size_t nc = d->capheap ? d->capheap * 2 : 1024;
        fsc__pv_t **nh = realloc(d->heap, nc * sizeof *nh);
        if (nh == NULL || budget_take(d, (nc - d->capheap) * sizeof *nh) != 0) {
            if (nh != NULL)
                d->heap = nh;
            return FSC_ENOMEM;
        }
        d->heap = nh;
        d->capheap = nc;
    }
    d->heap[d->nheap++] = c;
    return 0;
}

static fsc__pv_t *persist(fsc__pparse_t *ps, fsc__pv_t *v)
{
    if (v->sealed & F_KEEP)
        return v;
    fsc__pdoc_t *d = ps->d;
    fsc__pv_t *c = arena_alloc(d, &d->keep, sizeof *c);
    if (c == NULL)
        return NULL;
    *c = *v;
    c->sealed |= F_KEEP;
    if (is_container(v)) {
        uint32_t n = v->kind == FSC__PV_DICT ? 2 * v->len + ((v->sealed & F_KEY) ? 1u : 0u) : v->len;
        c->cap = 0;
        c->u.items = NULL;
        if (v->kind == FSC__PV_LIST && d->heap_lists) {
            if (heap_add(d, c) != 0)
                return NULL;
            c->sealed |= F_HEAP;
        }
        if (n > 0 && items_room(d, c, n) != 0)
            return NULL;
        for (uint32_t i = 0; i < n; i++) {
            if ((c->u.items[i] = persist(ps, v->u.items[i])) == NULL)
                return NULL;
            if (is_container(c->u.items[i]))
                c->u.items[i]->sealed |= F_HELD;
        }
        fsc__pdev_t *dv = ((v->sealed >> F_ROLE_SHIFT) & 3u) == R_DEVLIST ? dev_of(ps, v) : NULL;
        if (dv != NULL)
            dv->list = c;
        for (size_t i = 0; i < ps->ndev; i++)
            if (ps->devv[i].outer == v)
                ps->devv[i].outer = c;
    } else if (v->sealed & F_OWNTEXT) {
        char *t = arena_alloc(d, &d->keep, (size_t)v->len + 1);
        if (t == NULL)
            return NULL;
        memcpy(t, v->u.s, v->len);
        t[v->len] = '\0';
        c->u.s = t;
    }
    return c;
}

static int need(fsc__pparse_t *ps, size_t n, const char *op)
{
    if (ps->len - ps->pos < n)
        return perr(ps, FSC_EFORMAT, "truncated: %s needs %zu more bytes, %zu left", op, n,
                    ps->len - ps->pos);
    return 0;
}

static int top_mark(fsc__pparse_t *ps, const char *op, size_t *base)
{
    if (ps->mp == 0)
        return perr(ps, FSC_EFORMAT, "%s without a MARK", op);
    *base = ps->marks[--ps->mp];
    ps->popped_dead = ps->mark_dead != NULL ? ps->mark_dead[ps->mp] : ps->ndead;
    if (ps->mp < ps->batch_mp)
        ps->batch_mp = 0;
    return 0;
}

static int pop_one(fsc__pparse_t *ps, const char *op, fsc__pv_t **out)
{
    size_t floor = ps->mp > 0 ? ps->marks[ps->mp - 1] : 0;
    if (ps->sp <= floor)
        return perr(ps, FSC_EFORMAT, "%s on an empty stack", op);
    *out = ps->stack[--ps->sp];
    return 0;
}

static int add_item(fsc__pparse_t *ps, fsc__pv_t *c, fsc__pv_t *item, const char *op)
{
    if (c->sealed & F_SEALED)
        return perr(ps, FSC_EFORMAT,
                    "%s modifies a container already nested in another one (unsupported)", op);
    if (item == c)
        return perr(ps, FSC_EFORMAT, "%s puts a container inside itself", op);
    if (item->depth + 1 > FSC__PICKLE_MAX_DEPTH)
        return perr(ps, FSC_ELIMIT, "nesting deeper than %d levels", FSC__PICKLE_MAX_DEPTH);
    /* A kept container holds only kept values. */
    if ((c->sealed & F_KEEP) && !(item->sealed & F_KEEP) && (item = persist(ps, item)) == NULL)
        return nomem(ps);
    if (fsc__pdoc_push(ps->d, c, item) != 0)
        return nomem(ps);
    /* Outside a batch of entries the container may live on (the snapshot's
     * other parts): what it holds is never freed. */
    if (ps->left != NULL && is_container(item) && (ps->batch_mp == 0 || ps->mp < ps->batch_mp))
        item->sealed |= F_HELD;
    return 0;
}

/* ---- streaming: which list is device_traces[d] ------------------------- */

static unsigned role_get(const fsc__pv_t *v) { return (v->sealed >> F_ROLE_SHIFT) & 3u; }
static void role_set(fsc__pv_t *v, unsigned r)
{
    v->sealed = (uint8_t)((v->sealed & ~(3u << F_ROLE_SHIFT)) | (r << F_ROLE_SHIFT));
}

/* The list at stack[i] is the value of a 'device_traces' key: the key is
 * the value right below it (Python's pickler writes key, value in order). */
static int is_traces(fsc__pparse_t *ps, size_t i)
{
    fsc__pv_t *v = ps->stack[i];
    if (v->kind != FSC__PV_LIST)
        return 0;
    unsigned r = role_get(v);
    if (r == R_UNKNOWN && i >= 1 && fsc__pv_is_str(ps->stack[i - 1], "device_traces")) {
        role_set(v, R_TRACES);
        r = R_TRACES;
    }
    return r == R_TRACES;
}

/* Role of the list at stack[i], decided the first time items are placed in
 * it. A list is device_traces[d] when the list below it is the history list
 * (one item, APPEND) or when it follows a MARK above the history list with
 * only lists (the earlier devices) in between (APPENDS). Its index is what
 * the history list already holds plus its position above the MARK. The
 * guess is checked at STOP. */
static unsigned list_role(fsc__pparse_t *ps, size_t i)
{
    fsc__pv_t *v = ps->stack[i];
    unsigned r = role_get(v);
    if (r != R_UNKNOWN)
        return r;
    if (is_traces(ps, i))
        return R_TRACES;
    r = R_OTHER;
    size_t outer = SIZE_MAX, dev = 0;
    if (i >= 1 && is_traces(ps, i - 1)) {
        outer = i - 1;
    } else {
        size_t k = ps->mp;
        while (k > 0 && ps->marks[k - 1] > i)
            k--;
        size_t h = k > 0 ? ps->marks[k - 1] : 0;
        if (h >= 1 && i - h < 64 && is_traces(ps, h - 1)) {
            int siblings = 1;
            for (size_t j = h; j < i && siblings; j++)
                siblings = ps->stack[j]->kind == FSC__PV_LIST;
            if (siblings) {
                outer = h - 1;
                dev = i - h;
            }
        }
    }
    if (outer != SIZE_MAX && ps->ndev < FSC__PICKLE_MAX_DEVLISTS) {
        if (ps->ndev == ps->devcap) {
            size_t nc = ps->devcap * 2;
            fsc__pdev_t *nv = ps->devv == ps->devs ? malloc(nc * sizeof *nv)
                                                    : realloc(ps->devv, nc * sizeof *nv);
            if (nv == NULL)
                return R_OTHER;
            if (ps->devv == ps->devs)
                memcpy(nv, ps->devs, sizeof ps->devs);
            ps->devv = nv;
            ps->devcap = nc;
        }
        const fsc__pv_t *o = ps->stack[outer];
        ps->devv[ps->ndev++] = (fsc__pdev_t){v, o, (uint32_t)(o->len + dev)};
        r = R_DEVLIST;
    }
    role_set(v, r);
    return r;
}

/* Hand the items stack[base..sp) of the history list at stack[ci] to the
 * callback instead of storing them, then free everything the tmp arena
 * gave out since that list was pushed: only these items (and what they
 * hold) can have been allocated there since, and nothing kept points to
 * them (kept values hold kept values only). */
static int stream_items(fsc__pparse_t *ps, size_t ci, size_t base)
{
    fsc__pv_t *c = ps->stack[ci];
    if (c->sealed & F_SEALED)
        return perr(ps, FSC_EFORMAT,
                    "APPEND modifies a container already nested in another one (unsupported)");
    const fsc__pdev_t *dv = dev_of(ps, c);
    if (ps->skip_pending) {
        for (size_t i = base; i < ps->sp; i++)
            if (holds_skipped(ps, ps->stack[i], 1))
                return FSC__PICKLE_ESKIPPED;
        ps->skip_pending = 0;
    }
    for (size_t i = base; i < ps->sp; i++) {
        if (ps->stack[i] == c)
            return perr(ps, FSC_EFORMAT, "APPEND puts a container inside itself");
        if (ps->cb->entry != NULL) {
            int rc = ps->cb->entry(ps->cb->ud, dv->dev, (uint64_t)c->len + c->aux, ps->stack[i]);
            if (rc != 0) {
                ps->cb_rc = rc;
                return rc;
            }
        }
        if (c->aux == UINT32_MAX)
            return perr(ps, FSC_ELIMIT, "more than %u history entries in one list", UINT32_MAX);
        c->aux++;
    }
    ps->sp = base;
    arena_reset(ps->d, &ps->d->tmp, ps->wm[ci]);
    /* the batch's lists read for the last time (a lone APPEND's stay) */
    for (size_t i = ps->popped_dead; i < ps->ndead; i++)
        release(ps, ps->dead[i]);
    if (ps->popped_dead < ps->ndead)
        ps->ndead = ps->popped_dead;
    return 0;
}

static int streams(fsc__pparse_t *ps, size_t ci)
{
    return ps->scan != NULL && ps->stack[ci]->kind == FSC__PV_LIST &&
           list_role(ps, ci) == R_DEVLIST;
}

/* Items stack[base..sp) into the container below them. */
static int fill_from(fsc__pparse_t *ps, size_t base, fsc__pv_kind_t want, const char *op)
{
    if (base == 0)
        return perr(ps, FSC_EFORMAT, "%s with no container below the MARK", op);
    fsc__pv_t *c = ps->stack[base - 1];
    if (c->kind != want)
        return perr(ps, FSC_EFORMAT, "%s on a value that is not a %s", op,
                    want == FSC__PV_DICT ? "dict" : "list");
    if (want == FSC__PV_DICT && ((ps->sp - base) & 1u))
        return perr(ps, FSC_EFORMAT, "%s with an odd number of items", op);
    if (want == FSC__PV_LIST && ps->sp > base && streams(ps, base - 1))
        return stream_items(ps, base - 1, base);
    /* room for all the items at once */
    size_t slots = (want == FSC__PV_DICT ? 2u * c->len + ((c->sealed & F_KEY) ? 1u : 0u) : c->len) +
                   (ps->sp - base);
    if (slots > c->cap && slots < UINT32_MAX / 2 && !(c->sealed & F_SEALED) &&
        items_room(ps->d, c, (uint32_t)slots) != 0)
        return nomem(ps);
    for (size_t i = base; i < ps->sp; i++) {
        int rc = add_item(ps, c, ps->stack[i], op);
        if (rc != 0)
            return rc;
    }
    ps->sp = base;
    return 0;
}

/* At STOP: every list streamed as device_traces[d] is the d-th item of the
 * root dict's 'device_traces'. */
static int check_streamed(fsc__pparse_t *ps, const fsc__pv_t *root)
{
    const fsc__pv_t *traces = fsc__pv_get(root, "device_traces");
    for (size_t i = 0; i < ps->ndev; i++) {
        const fsc__pdev_t *dv = &ps->devv[i];
        if (dv->outer != traces || dv->dev >= traces->len ||
            traces->u.items[dv->dev] != dv->list)
            return perr(ps, FSC_EFORMAT,
                        "a list of history entries is not where a memory snapshot keeps "
                        "them (device_traces[%u])",
                        dv->dev);
    }
    return 0;
}

static int make_tuple(fsc__pparse_t *ps, size_t base, const char *op)
{
    size_t n = ps->sp - base;
    fsc__pv_t *t = pcont(ps, FSC__PV_TUPLE, (uint32_t)(n ? n : 0));
    if (t == NULL)
        return nomem(ps);
    for (size_t i = base; i < ps->sp; i++) {
        int rc = add_item(ps, t, ps->stack[i], op);
        if (rc != 0)
            return rc;
    }
    ps->sp = base;
    return push(ps, t);
}

static int memo_put(fsc__pparse_t *ps, uint64_t idx, const char *op)
{
    if (ps->sp == 0)
        return perr(ps, FSC_EFORMAT, "%s on an empty stack", op);
    /* Each memo entry costs at least one byte of input, so no valid index
     * can exceed the input size. */
    if (idx >= ps->len)
        return perr(ps, FSC_EFORMAT, "%s index %llu out of range", op, (unsigned long long)idx);
    if (ps->scan != NULL) {
        /* Streaming: only entries read again are kept, in the keep arena. */
        if (idx >= ps->memo_n)
            ps->memo_n = idx + 1;
        size_t slot = scan_slot(ps->scan, idx);
        if (slot == SIZE_MAX)
            return 0;
        fsc__pv_t *v = persist(ps, ps->stack[ps->sp - 1]);
        if (v == NULL)
            return nomem(ps);
        ps->stack[ps->sp - 1] = v;
        ps->memo[slot] = v;
        ps->mcache[idx & (FSC__MCACHE - 1)].v = NULL;
        return 0;
    }
    if (idx >= ps->memo_n) {
        size_t old = ps->memo_cap;
        int rc = grow(ps, &ps->memo, &ps->memo_cap, idx + 1, sizeof *ps->memo);
        if (rc != 0)
            return rc;
        if (ps->memo_cap > old)
            memset(ps->memo + old, 0, (ps->memo_cap - old) * sizeof *ps->memo);
        ps->memo_n = idx + 1;
    }
    ps->memo[idx] = ps->stack[ps->sp - 1];
    return 0;
}

/* Frees the items of a kept list read for the last time, unless a kept
 * container holds it. */
static void release(fsc__pparse_t *ps, fsc__pv_t *v)
{
    if ((v->sealed & (F_HEAP | F_HELD)) != F_HEAP || v->u.items == NULL)
        return;
    if (ps->cb != NULL && ps->cb->dropped != NULL)
        ps->cb->dropped(ps->cb->ud, v);
    free(v->u.items);
    ps->d->mem -= (size_t)v->cap * sizeof *v->u.items;
    v->u.items = NULL;
    v->cap = 0;
    v->len = 0;
}

/* One read of memo entry idx (value v) done: 1 when it was the last one of
 * a list that can be freed. */
static int read_done(fsc__pparse_t *ps, uint64_t idx, const fsc__pv_t *v)
{
    if (ps->left == NULL || !(v->sealed & F_HEAP))
        return 0;
    size_t slot = scan_slot(ps->scan, idx);
    if (slot == SIZE_MAX || ps->left[slot] == FSC__PSCAN_MANY || ps->left[slot] == 0)
        return 0;
    return --ps->left[slot] == 0;
}

static int memo_get(fsc__pparse_t *ps, uint64_t idx, const char *op)
{
    fsc__pv_t *v = NULL;
    if (ps->scan != NULL) {
        v = memo_at(ps, idx, ps->memo_n);
        if (v == &ps->skipped) {
            /* inside an entry, harmless in its frames (checked when the
             * entry is handed over); anywhere else, a value we lack */
            if (ps->batch_mp == 0)
                return FSC__PICKLE_ESKIPPED;
            ps->skip_pending = ps->skip_any = 1;
        }
        if (v != NULL && read_done(ps, idx, v)) {
            if (ps->ndead == ps->capdead) {
                int rc = grow(ps, &ps->dead, &ps->capdead, ps->ndead + 1, sizeof *ps->dead);
                if (rc != 0)
                    return rc;
            }
            ps->dead[ps->ndead++] = v;
        }
    } else if (idx < ps->memo_n) {
        v = ps->memo[idx];
    }
    if (v == NULL)
        return perr(ps, FSC_EFORMAT, "%s: memo reference %llu out of range (%zu stored)", op,
                    (unsigned long long)idx, ps->memo_n);
    return push(ps, v);
}

static int push_str_at(fsc__pparse_t *ps, const uint8_t *at, size_t n)
{
    fsc__pv_t *v = pnode(ps, FSC__PV_STR);
    if (v != NULL) {
        v->u.s = (const char *)at;
        v->len = (uint32_t)n;
    }
    return push(ps, v);
}

static int push_str(fsc__pparse_t *ps, size_t lenbytes, fsc__pv_kind_t kind, const char *op)
{
    int rc = need(ps, lenbytes, op);
    if (rc != 0)
        return rc;
    uint64_t n = rd_le(ps->p + ps->pos, lenbytes);
    ps->pos += lenbytes;
    if (n > ps->len - ps->pos)
        return perr(ps, FSC_EFORMAT, "%s length %llu goes past the end (%zu bytes left)", op,
                    (unsigned long long)n, ps->len - ps->pos);
    if (n > UINT32_MAX)
        return perr(ps, FSC_ELIMIT, "%s length %llu too large", op, (unsigned long long)n);
    fsc__pv_t *v = pnode(ps, kind);
    if (v != NULL) {
        v->u.s = (const char *)ps->p + ps->pos;
        v->len = (uint32_t)n;
    }
    ps->pos += (size_t)n;
    return push(ps, v);
}

static int push_int(fsc__pparse_t *ps, int64_t i)
{
    fsc__pv_t *v = pnode(ps, FSC__PV_INT);
    if (v != NULL)
        v->u.i = i;
    return push(ps, v);
}

static int push_bigint(fsc__pparse_t *ps, const uint8_t *at, size_t n)
{
    if (n > UINT32_MAX)
        return perr(ps, FSC_ELIMIT, "integer of %zu bytes too large", n);
    fsc__pv_t *v = pnode(ps, FSC__PV_BIGINT);
    if (v != NULL) {
        v->u.s = (const char *)at;
        v->len = (uint32_t)n;
    }
    return push(ps, v);
}

/* LONG1/LONG4: n bytes of little-endian two's complement. Values that fit
 * int64 (after dropping redundant sign bytes) are INT, others BIGINT. */
static int push_long(fsc__pparse_t *ps, size_t lenbytes, const char *op)
{
    int rc = need(ps, lenbytes, op);
    if (rc != 0)
        return rc;
    uint64_t n = rd_le(ps->p + ps->pos, lenbytes);
    ps->pos += lenbytes;
    if (n > ps->len - ps->pos)
        return perr(ps, FSC_EFORMAT, "truncated: %s needs %llu more bytes, %zu left", op,
                    (unsigned long long)n, ps->len - ps->pos);
    const uint8_t *b = ps->p + ps->pos;
    ps->pos += (size_t)n;
    size_t m = (size_t)n;
    uint8_t sign = (m > 0 && (b[m - 1] & 0x80u)) ? 0xffu : 0x00u;
    while (m > 8 && b[m - 1] == sign && ((b[m - 2] & 0x80u) == (sign & 0x80u)))
        m--;
    if (m > 8)
        return push_bigint(ps, b, (size_t)n);
    uint64_t v = rd_le(b, m);
    if (m > 0 && m < 8 && (b[m - 1] & 0x80u))
        v |= ~0ull << (8 * m); /* sign-extend */
    return push_int(ps, (int64_t)v);
}

/* ---- protocols 0 and 1: text arguments ending at a newline ------------- */

/* The argument of a text opcode: bytes up to the next '\n' (excluded). */
static int text_arg(fsc__pparse_t *ps, const char *op, const uint8_t **s, size_t *n)
{
    const uint8_t *start = ps->p + ps->pos;
    const uint8_t *nl = memchr(start, '\n', ps->len - ps->pos);
    if (nl == NULL)
        return perr(ps, FSC_EFORMAT, "truncated: %s has no end of line", op);
    *s = start;
    *n = (size_t)(nl - start);
    ps->pos += *n + 1;
    return 0;
}

/* Decimal digits with an optional sign (and, for LONG, a trailing 'L'). */
static int parse_dec(const uint8_t *s, size_t n, int64_t *out, int *fits)
{
    size_t i = 0;
    int neg = 0;
    if (n > 0 && s[n - 1] == 'L')
        n--;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i == n)
        return 0;
    uint64_t v = 0;
    *fits = 1;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            *fits = 0;
        else
            v = v * 10 + d;
    }
    if (*fits && (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX))
        *fits = 0;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

static int push_text_int(fsc__pparse_t *ps, const char *op)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc = text_arg(ps, op, &s, &n);
    if (rc != 0)
        return rc;
    if (op[0] == 'I' && n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1'))
        return push(ps, s[1] == '1' ? &ps->d->yes : &ps->d->no);
    int64_t v = 0;
    int fits = 0;
    if (!parse_dec(s, n, &v, &fits))
        return perr(ps, FSC_EFORMAT, "%s argument is not an integer", op);
    return fits ? push_int(ps, v) : push_bigint(ps, s, n);
}

static int push_text_float(fsc__pparse_t *ps)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc = text_arg(ps, "FLOAT", &s, &n);
    if (rc != 0)
        return rc;
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return perr(ps, FSC_EFORMAT, "FLOAT argument is not a number");
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end = NULL;
    double x = strtod(buf, &end);
    if (end != buf + n)
        return perr(ps, FSC_EFORMAT, "FLOAT argument is not a number");
    fsc__pv_t *v = pnode(ps, FSC__PV_FLOAT);
    if (v != NULL)
        v->u.f = x;
    return push(ps, v);
}

static int hex_run(const uint8_t *s, size_t n, size_t i, size_t k, uint32_t *out)
{
    return n - i >= k && fsc__hex_read(s + i, k, out);
}

/* UNICODE (protocol 0): raw-unicode-escape, i.e. Latin-1 bytes with
 * \uXXXX and \UXXXXXXXX escapes, decoded to UTF-8 in the arena. STRING: a
 * Python bytes repr in quotes ('...' or "..."), kept as its Latin-1 bytes
 * in UTF-8. */
static int push_text_str(fsc__pparse_t *ps, int quoted, const char *op)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc = text_arg(ps, op, &s, &n);
    if (rc != 0)
        return rc;
    if (quoted) {
        if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
            return perr(ps, FSC_EFORMAT, "%s argument is not a quoted string", op);
        s++;
        n -= 2;
    }
    size_t plain = 0;
    while (plain < n && s[plain] < 0x80 && s[plain] != '\\')
        plain++;
    if (plain == n) /* pure ASCII without escapes: points into the input */
        return push_str_at(ps, s, n);
    if (n > (SIZE_MAX - 1) / 4)
        return perr(ps, FSC_ELIMIT, "%s argument too long", op);
    char *o = arena_alloc(ps->d, ps->a, n * 4 + 1);
    if (o == NULL)
        return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input",
                    ps->len);
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c = s[i];
        if (c == '\\' && i + 1 < n) {
            uint8_t e = s[i + 1];
            uint32_t x;
            if (!quoted && e == 'u' && hex_run(s, n, i + 2, 4, &x)) {
                c = x;
                i += 6;
            } else if (!quoted && e == 'U' && hex_run(s, n, i + 2, 8, &x) && x <= 0x10ffff) {
                c = x;
                i += 10;
            } else if (quoted && e == 'x' && hex_run(s, n, i + 2, 2, &x)) {
                c = x;
                i += 4;
            } else if (quoted && (e == '\\' || e == '\'' || e == '"')) {
                c = e;
                i += 2;
            } else if (quoted && (e == 'n' || e == 't' || e == 'r')) {
                c = e == 'n' ? '\n' : e == 't' ? '\t' : '\r';
                i += 2;
            } else {
                i++;
            }
        } else {
            i++;
        }
        w += fsc__utf8_put(o + w, c);
    }
    o[w] = '\0';
    int prc = push_str_at(ps, (const uint8_t *)o, w);
    if (prc == 0)
        ps->stack[ps->sp - 1]->sealed |= F_OWNTEXT;
    return prc;
}

static int text_index(fsc__pparse_t *ps, const char *op, uint64_t *idx)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc = text_arg(ps, op, &s, &n);
    if (rc != 0)
        return rc;
    int64_t v = 0;
    int fits = 0;
    if (!parse_dec(s, n, &v, &fits) || !fits || v < 0)
        return perr(ps, FSC_EFORMAT, "%s index is not a non-negative integer", op);
    *idx = (uint64_t)v;
    return 0;
}

/* DICT / LIST (protocol 0): a new container of the items above the MARK. */
static int make_from_mark(fsc__pparse_t *ps, fsc__pv_kind_t kind, const char *op)
{
    size_t base = 0;
    int rc = top_mark(ps, op, &base);
    if (rc != 0)
        return rc;
    size_t n = ps->sp - base;
    if (kind == FSC__PV_DICT && (n & 1u))
        return perr(ps, FSC_EFORMAT, "%s with an odd number of items", op);
    fsc__pv_t *c = pcont(ps, kind, 0);
    if (c == NULL)
        return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input",
                    ps->len);
    for (size_t i = base; i < ps->sp; i++)
        if ((rc = add_item(ps, c, ps->stack[i], op)) != 0)
            return rc;
    ps->sp = base;
    return push(ps, c);
}

/* ---- streaming fast path: a history entry without the generic machinery
 *
 * Nearly all of a snapshot is history entries of one shape: a dict of a
 * dozen keys read from the memo, with integers, memoized strings and memo
 * references (the shared frame lists) as values. When such a dict starts
 * right where the next entry of a history list goes, it is decoded here in
 * one loop into nodes of the parser itself and handed to the callback: no
 * stack traffic, no allocation. Anything else (a value that is a new
 * container, a dict that is itself read again, an unusual next opcode)
 * rewinds and leaves the dict to the generic parser, which gives the same
 * values; errors are always reported by the generic parser. */

/* Skips FRAME opcodes (their lengths checked as step does); 0 if bad. */
static inline int fe_skip_frames(fsc__pparse_t *ps, size_t *pos)
{
    if (*pos < ps->len && ps->p[*pos] != 0x95)
        return 1;
    while (*pos < ps->len && ps->p[*pos] == 0x95) {
        if (ps->len - *pos < 9 || rd_le(ps->p + *pos + 1, 8) > ps->len - *pos - 9)
            return 0;
        *pos += 9;
    }
    return *pos < ps->len;
}

/* An optional memo store after a value; the value must not be one that is
 * read again (*referenced then says so). Returns 0 on a bad index. */
static int fe_memo(fsc__pparse_t *ps, size_t *pos, int *referenced, uint64_t *idx_out,
                   size_t *memo_n)
{
    *referenced = 0;
    if (!fe_skip_frames(ps, pos))
        return 0;
    uint8_t op = ps->p[*pos];
    uint64_t idx;
    if (op == 0x94) {
        idx = *memo_n;
        *pos += 1;
    } else if (op == 'q' && ps->len - *pos >= 2) {
        idx = ps->p[*pos + 1];
        *pos += 2;
    } else if (op == 'r' && ps->len - *pos >= 5) {
        idx = rd_le(ps->p + *pos + 1, 4);
        *pos += 5;
    } else {
        return 1; /* no memo store */
    }
    if (idx >= ps->len)
        return 0;
    if (idx >= *memo_n)
        *memo_n = idx + 1;
    *referenced = scan_slot(ps->scan, idx) != SIZE_MAX;
    *idx_out = idx;
    return 1;
}

/* A worker's memo read: the main parser's node when it was defined before
 * the range was taken (only its kind and depth are read: the main parser
 * may seal a container or free its items meanwhile), else a stand-in it
 * resolves when it takes the range. Reads of lists (the only values freed
 * after their last read) and of stand-ins are noted (fe_rd), for the main
 * parser to count. */
static int hp_ref(fsc__pparse_t *w, uint64_t idx, size_t memo_n, fsc__pv_t **out)
{
    if (idx >= memo_n)
        return 0; /* not stored yet: the generic parser reports it */
    fsc__pv_t *v = NULL;
    if (idx < w->memo_lim) {
        if ((v = memo_at(w, idx, memo_n)) == NULL || v == w->skipv)
            return 0;
    } else {
        if (w->nph == FSC__HP_PH)
            return 0;
        v = &w->wph[w->nph];
        /* not a key (keys are read before the range); depth 1, checked
         * again by the main parser */
        pv_set(v, FSC__PV_NONE, 1, 0, 0);
        v->u.i = 0;
        w->wphi[w->nph].idx = idx;
        w->wphi[w->nph].n = UINT32_MAX; /* HV_MREF */
        w->nph++;
    }
    if (v->kind == FSC__PV_LIST || v->kind == FSC__PV_NONE) { /* kept lists, stand-ins */
        if (w->fe_nrd == sizeof w->fe_rd / sizeof w->fe_rd[0])
            return 0;
        w->fe_rd[w->fe_nrd++] = idx;
    }
    *out = v;
    return 1;
}

static int fe_memo_ref(fsc__pparse_t *ps, size_t *pos, fsc__pv_t **out, size_t memo_n)
{
    const uint8_t *p = ps->p;
    size_t n = p[*pos] == 'h' ? 1 : 4;
    if (ps->len - *pos - 1 < n)
        return 0;
    uint64_t idx = rd_le(p + *pos + 1, n);
    if (ps->worker) {
        if (!hp_ref(ps, idx, memo_n, out))
            return 0;
        *pos += 1 + n;
        return 1;
    }
    if ((*out = memo_at(ps, idx, memo_n)) == NULL || *out == ps->skipv)
        return 0;
    if ((*out)->sealed & F_HEAP) {
        if (ps->fe_nrd == sizeof ps->fe_rd / sizeof ps->fe_rd[0])
            return 0;
        ps->fe_rd[ps->fe_nrd++] = idx;
    }
    *pos += 1 + n;
    return 1;
}

/* The list read again of memo index idx, holding items[0..n), kept as the
 * parse keeps such lists (its items on the heap when they are freed after
 * the last read); NULL when it cannot be made here: no memory, or the
 * registry of heap lists full and grow 0. */
static fsc__pv_t *kept_list(fsc__pparse_t *ps, uint64_t idx, fsc__pv_t *const *items, uint32_t n,
                            int grow)
{
    fsc__pdoc_t *d = ps->d;
    size_t slot = scan_slot(ps->scan, idx);
    fsc__pv_t *c;
    if (slot == SIZE_MAX || (c = node_in(d, &d->keep, FSC__PV_LIST)) == NULL)
        return NULL;
    if (d->heap_lists) {
        if ((!grow && d->nheap == d->capheap) || heap_add(d, c) != 0)
            return NULL;
        c->sealed |= F_HEAP;
    }
    if (n > 0) {
        if (items_room(d, c, n) != 0)
            return NULL;
        memcpy(c->u.items, items, (size_t)n * sizeof *items);
    }
    ps->memo[slot] = c;
    ps->mcache[idx & (FSC__MCACHE - 1)].v = NULL;
    return c;
}

/* The items of a list whose ']' (and memo store, idx when ref) were read:
 * none, one memo reference then APPEND, or MARK, memo references, APPENDS;
 * as the generic parser would build it: kept (in the memo) when read
 * again, else valid during the entry's callback. */
static int fe_list(fsc__pparse_t *ps, size_t *pos, fsc__pv_t *mine, fsc__pv_t **out,
                   size_t *memo_n, int ref, uint64_t idx)
{
    const uint8_t *p = ps->p;
    size_t q = *pos;
    fsc__pv_t **items = ps->fe_list;
    uint32_t n = 0;
    uint16_t depth = 1;
    if (!fe_skip_frames(ps, &q))
        return 0;
    int batch = p[q] == '(';
    if (batch || p[q] == 'h' || p[q] == 'j') {
        if (batch)
            q++;
        for (;;) {
            if (!fe_skip_frames(ps, &q))
                return 0;
            if (batch && p[q] == 'e' && n > 0) {
                q++;
                break;
            }
            if ((p[q] != 'h' && p[q] != 'j') || n == FSC__FAST_LIST)
                return 0;
            fsc__pv_t *v = NULL;
            if (!fe_memo_ref(ps, &q, &v, *memo_n))
                return 0;
            if (v->depth + 1 > depth)
                depth = (uint16_t)(v->depth + 1);
            items[n++] = v;
            if (!batch) {
                if (!fe_skip_frames(ps, &q) || p[q] != 'a')
                    return 0;
                q++;
                break;
            }
        }
    }
    if (depth > FSC__PICKLE_MAX_DEPTH)
        return 0;
    /* more items (APPENDS again, a second APPEND) go the generic way */
    if (!fe_skip_frames(ps, &q) || p[q] == '(' || p[q] == 'a' || p[q] == 'e')
        return 0;
    fsc__pv_t *c = mine;
    if (ps->worker) { /* the main parser seals the items and builds a kept list */
        if (!ref) {
            if (n > 0 && ps->fe_list_used)
                return 0;
            ps->fe_list_used = n > 0;
            c->u.items = items;
            c->cap = n;
        } else {
            if (ps->nph == FSC__HP_PH)
                return 0;
            if (ps->capwl - ps->nwl < n) {
                size_t nc = ps->capwl ? ps->capwl : 4096;
                while (nc - ps->nwl < n)
                    nc *= 2;
                fsc__pv_t **nw = realloc(ps->wl, nc * sizeof *nw);
                if (nw == NULL)
                    return 0;
                ps->wl = nw;
                ps->capwl = nc;
            }
            c = &ps->wph[ps->nph];
            pv_set(c, FSC__PV_LIST, 0, 0, 0);
            c->u.items = NULL;
            ps->wphi[ps->nph].idx = idx;
            ps->wphi[ps->nph].off = ps->nwl;
            ps->wphi[ps->nph].n = n;
            ps->nph++;
            if (n > 0)
                memcpy(ps->wl + ps->nwl, items, (size_t)n * sizeof *items);
            ps->nwl += n;
        }
        c->len = n;
        c->depth = depth;
        *pos = q;
        *out = c;
        return 1;
    }
    if (ref) {
        /* (a full registry of heap lists grows on the generic path) */
        if ((c = kept_list(ps, idx, items, n, 0)) == NULL)
            return 0;
    } else {
        if (n > 0 && ps->fe_list_used)
            return 0;
        ps->fe_list_used = n > 0;
        c->u.items = items;
        c->cap = n;
    }
    c->len = n;
    c->depth = depth;
    for (uint32_t i = 0; i < n; i++)
        if (is_container(items[i]))
            items[i]->sealed |= (uint8_t)(F_SEALED | (ref ? F_HELD : 0u));
    *pos = q;
    *out = c;
    return 1;
}

/* One value at *pos into *out (a node of ours or a memo entry). */
static int fe_value(fsc__pparse_t *ps, size_t *pos, fsc__pv_t *mine, fsc__pv_t **out,
                    size_t *memo_n, int is_key)
{
    if (!fe_skip_frames(ps, pos))
        return 0;
    const uint8_t *p = ps->p;
    size_t left = ps->len - *pos - 1, at = *pos + 1;
    uint8_t op = p[*pos];
    uint64_t idx = 0;
    switch (op) {
    case 'h':
    case 'j':
        if (!fe_memo_ref(ps, pos, out, *memo_n))
            return 0;
        return !is_key || (*out)->kind == FSC__PV_STR;
    case 0x8c:
    case 'X': {
        size_t n = op == 0x8c ? 1 : 4;
        if (left < n)
            return 0;
        uint64_t len = rd_le(p + at, n);
        if (len > left - n)
            return 0;
        pv_set(mine, FSC__PV_STR, 1, (uint32_t)len, 0);
        mine->u.s = (const char *)p + at + n;
        *pos = at + n + (size_t)len;
        int ref = 0;
        if (!fe_memo(ps, pos, &ref, &idx, memo_n) || ref)
            return 0; /* a string read again: the generic path keeps it */
        *out = mine;
        return 1;
    }
    default: break;
    }
    if (is_key)
        return 0;
    pv_set(mine, FSC__PV_INT, 1, 0, 0);
    mine->u.i = 0;
    switch (op) {
    case 'K':
        if (left < 1)
            return 0;
        mine->u.i = p[at];
        *pos = at + 1;
        break;
    case 'M':
        if (left < 2)
            return 0;
        mine->u.i = (int64_t)rd_le(p + at, 2);
        *pos = at + 2;
        break;
    case 'J':
        if (left < 4)
            return 0;
        mine->u.i = (int32_t)(uint32_t)rd_le(p + at, 4);
        *pos = at + 4;
        break;
    case 0x8a: {
        if (left < 1 || p[at] > 8 || left - 1 < p[at])
            return 0;
        size_t n = p[at];
        uint64_t v = rd_le(p + at + 1, n);
        if (n > 0 && n < 8 && (p[at + n] & 0x80u))
            v |= ~0ull << (8 * n);
        mine->u.i = (int64_t)v;
        *pos = at + 1 + n;
        break;
    }
    case 'N': *out = &ps->d->none; *pos = at; return 1;
    case 0x88: *out = &ps->d->yes; *pos = at; return 1;
    case 0x89: *out = &ps->d->no; *pos = at; return 1;
    case ']': {
        /* a list: empty (frames of an entry without a stack), or of memo
         * references (the frames of a stack, each frame dict met before) */
        mine->kind = FSC__PV_LIST;
        *pos = at;
        int ref = 0;
        if (!fe_memo(ps, pos, &ref, &idx, memo_n))
            return 0;
        if (*pos < ps->len && (p[*pos] == '(' || p[*pos] == 'a' || p[*pos] == 0x95 || ref))
            return fe_list(ps, pos, mine, out, memo_n, ref, idx);
        break;
    }
    default: return 0;
    }
    *out = mine;
    return 1;
}

/* skip_frames: a memo store inside skipped frames. Returns 0 on a bad
 * index (the generic parser reports it). */
static int skip_memo(fsc__pparse_t *ps, size_t *q, size_t *memo_n)
{
    int ref = 0;
    uint64_t idx = 0;
    size_t at = *q;
    if (!fe_memo(ps, q, &ref, &idx, memo_n) || *q == at)
        return 0; /* a bad index, or a store cut short: the generic parser says so */
    if (ref && ps->worker) { /* the main parser stores it when it takes the range */
        if (ps->nwdefs == ps->capwdefs) {
            size_t nc = ps->capwdefs ? 2 * ps->capwdefs : 256;
            uint64_t *nd = realloc(ps->wdefs, nc * sizeof *nd);
            if (nd == NULL)
                return 0;
            ps->wdefs = nd;
            ps->capwdefs = nc;
        }
        ps->wdefs[ps->nwdefs++] = idx;
    } else if (ref) {
        ps->memo[scan_slot(ps->scan, idx)] = &ps->skipped;
        ps->mcache[idx & (FSC__MCACHE - 1)].v = NULL;
    }
    return 1;
}

/* skip_frames: steps over one opcode inside a MARK of skipped frames:
 * *depth counts the MARKs open. Returns 0 on anything unusual (the generic
 * parser then reads the entry). */
static int skip_op(fsc__pparse_t *ps, size_t *q, size_t *memo_n, unsigned *depth)
{
    const uint8_t *p = ps->p;
    size_t left = ps->len - *q - 1;
    size_t n = 0;
    switch (p[*q]) {
    case 0x94: case 'q': case 'r': return skip_memo(ps, q, memo_n);
    case '(':
        if (++*depth > FSC__PICKLE_MAX_DEPTH)
            return 0;
        *q += 1;
        return 1;
    case 'e': case 'u': case 't': case 'l': case 'd':
        --*depth;
        *q += 1;
        return 1;
    case '}': case ']': case ')': case 'N': case 0x88: case 0x89: case 's': case 'a':
    case 0x85: case 0x86: case 0x87:
        *q += 1;
        return 1;
    case 'h': case 'K': n = 1; break;
    case 'M': n = 2; break;
    case 'j': case 'J': n = 4; break;
    case 'G': n = 8; break;
    case 0x8a: /* LONG1 */
        if (left < 1 || left - 1 < p[*q + 1])
            return 0;
        *q += 2 + (size_t)p[*q + 1];
        return 1;
    case 0x8c: case 'X': case 0x8d: { /* SHORT_BINUNICODE, BINUNICODE, BINUNICODE8 */
        size_t w = p[*q] == 0x8c ? 1 : p[*q] == 'X' ? 4 : 8;
        if (left < w)
            return 0;
        uint64_t sl = rd_le(p + *q + 1, w);
        if (sl > left - w)
            return 0;
        *q += 1 + w + (size_t)sl;
        return 1;
    }
    default: return 0;
    }
    if (left < n)
        return 0;
    *q += 1 + n;
    return 1;
}

/* skip_frames: steps over the value of 'frames' at *q: a memo reference,
 * None, or a list (with its memo store, batches of APPENDS and single
 * APPENDs) whose items are not built. Returns 0 to let the generic parser
 * read the entry. */
static int fe_skip(fsc__pparse_t *ps, size_t *q, size_t *memo_n)
{
    const uint8_t *p = ps->p;
    uint8_t op = p[*q];
    if (op == 'h' || op == 'j') {
        unsigned depth = 0;
        return skip_op(ps, q, memo_n, &depth);
    }
    if (op == 'N') {
        *q += 1;
        return 1;
    }
    if (op != ']')
        return 0;
    *q += 1;
    for (;;) {
        if (!fe_skip_frames(ps, q))
            return 0;
        op = p[*q];
        if (op == 0x94 || op == 'q' || op == 'r') {
            if (!skip_memo(ps, q, memo_n))
                return 0;
            continue;
        }
        if (op == '(') { /* a batch: up to its APPENDS */
            unsigned depth = 0;
            do {
                if (depth > 0) { /* the usual items: memo references to frame dicts */
                    size_t r = *q;
                    while (ps->len - r >= 5 && (p[r] == 'h' || p[r] == 'j'))
                        r += p[r] == 'h' ? 2 : 5;
                    *q = r;
                }
                if (!fe_skip_frames(ps, q) || !skip_op(ps, q, memo_n, &depth))
                    return 0;
            } while (depth > 0);
            if (p[*q - 1] != 'e')
                return 0;
            continue;
        }
        if (op == 'h' || op == 'j') { /* one item, then APPEND? */
            size_t r = *q;
            unsigned depth = 0;
            if (!skip_op(ps, &r, memo_n, &depth) || !fe_skip_frames(ps, &r))
                return 0;
            if (p[r] != 'a')
                return 1; /* the next key: the list ended */
            *q = r + 1;
            continue;
        }
        if (op == '}') { /* one new dict, then APPEND */
            unsigned depth = 0;
            *q += 1;
            for (;;) {
                if (!fe_skip_frames(ps, q))
                    return 0;
                op = p[*q];
                if (op == 'a' && depth == 0)
                    break;
                if (depth == 0 && op != '(' && op != 0x94 && op != 'q' && op != 'r')
                    return 0;
                if (!skip_op(ps, q, memo_n, &depth))
                    return 0;
            }
            *q += 1;
            continue;
        }
        return 1;
    }
}

/* The dict of a history entry from just after its '}' through its
 * SETITEMS into fe_items (*n pairs), *pos then past the 'u'. 0: not one
 * the fast path takes. */
static int fe_decode(fsc__pparse_t *ps, size_t *posp, size_t *memo_np, uint32_t *np)
{
    size_t pos = *posp, memo_n = *memo_np;
    uint64_t idx;
    int ref = 0;
    if (!fe_memo(ps, &pos, &ref, &idx, &memo_n) || ref)
        return 0;
    if (!fe_skip_frames(ps, &pos) || ps->p[pos] != '(')
        return 0;
    pos++;
    uint32_t n = 0;
    for (;;) {
        if (!fe_skip_frames(ps, &pos))
            return 0;
        if (ps->p[pos] == 'u')
            break;
        if (n == FSC__FAST_PAIRS)
            return 0;
        fsc__pv_t *k = NULL, *v = NULL;
        fsc__pv_t kbuf;
        if (!fe_value(ps, &pos, &kbuf, &k, &memo_n, 1))
            return 0;
        if (ps->cb->skip_frames && k != &kbuf &&
            (k == ps->frames_key ||
             (k->kind == FSC__PV_STR && k->len == 6 && memcmp(k->u.s, "frames", 6) == 0))) {
            ps->frames_key = k;
            if (!fe_skip_frames(ps, &pos) || !fe_skip(ps, &pos, &memo_n))
                return 0;
            v = &ps->d->none;
        } else if (k == &kbuf) { /* a key string that is not memoized again */
            ps->fe_vals[n] = kbuf;
            k = &ps->fe_vals[n];
            if (!fe_value(ps, &pos, &kbuf, &v, &memo_n, 0) || v == &kbuf)
                return 0; /* two nodes of ours in one pair: rare, generic */
        } else if (!fe_value(ps, &pos, &ps->fe_vals[n], &v, &memo_n, 0)) {
            return 0;
        }
        ps->fe_items[2 * n] = k;
        ps->fe_items[2 * n + 1] = v;
        n++;
    }
    *posp = pos + 1; /* 'u' */
    *memo_np = memo_n;
    *np = n;
    return 1;
}

/* The entry of n pairs in fe_items as a dict (fe_dict), or NULL when too
 * deep for the fast path. */
static fsc__pv_t *fe_dict_of(fsc__pparse_t *ps, uint32_t n)
{
    fsc__pv_t *e = &ps->fe_dict;
    pv_set(e, FSC__PV_DICT, 2, n, 2 * n);
    e->u.items = ps->fe_items;
    for (uint32_t i = 0; i < 2 * n; i++)
        if (ps->fe_items[i]->depth + 1 > e->depth)
            e->depth = (uint16_t)(ps->fe_items[i]->depth + 1);
    return e->depth > FSC__PICKLE_MAX_DEPTH ? NULL : e;
}

/* ---- the history on several threads --------------------------------------
 *
 * The passes that step over the frames (the importer's first ones) spend
 * most of their time decoding history entries one after the other. On a
 * large pickle whose first scan was cut into ranges (pickle_scan.c: each
 * range start an opcode boundary, with the MEMOIZE count before it), those
 * passes decode the entries of the ranges ahead on a pool of threads while
 * this parser hands them over in order:
 *
 *   - once this parser has handed over FSC__HP_WARMUP entries of a history
 *     list (their keys and action names are then in the memo), the ranges
 *     past that point are taken by the pool, in order, at most
 *     FSC__HP_AHEAD more than there are threads ahead of this parser;
 *   - a worker steps over opcodes from its range's start, counting memo
 *     stores, to the first '}' that opens a dict whose first key is read
 *     from the memo index of the entries' first key ('action'); from there
 *     it decodes entries with the fast path's decoder (fe_decode), and the
 *     APPENDS and MARKs between batches, into compact records, until an
 *     entry starts at or past the next range's start (where the next
 *     worker began, if the guess was right) or until anything the fast path
 *     does not take: the end of the list, a new string, a value kept in the
 *     memo, an opcode it does not expect;
 *   - a worker reads from the memo only strings this parser had defined
 *     when the range was taken (they never change); memo indices defined
 *     inside the skipped frames of its range are passed back, and stored by
 *     this parser when it takes the range;
 *   - this parser takes a range's records only when it reaches, as an entry
 *     start, exactly the worker's first entry, in the same state (inside a
 *     batch or not) and with the same memo count; the records' APPENDS and
 *     MARKs go through step() like any opcode, the entries to the callback
 *     as the fast path hands them; it then goes on where the worker
 *     stopped. A range that does not join that way (a wrong guess, an
 *     entry the worker left) is read by this parser as before, so the
 *     callback sees the same entries, in the same order, with the same
 *     values, whatever the threads do.
 *
 * Memory: the records of at most threads + FSC__HP_AHEAD ranges, and those
 * ranges' pages of the input. A range is at most 2 MiB; its records take
 * up to about four times its bytes (a frame met before is a 2-byte memo
 * read in the input and an 8-byte pointer in a record): on 16 threads and
 * real recordings, about 200 MB more than one thread holds.
 */
#define FSC__HP_WARMUP 1000u
#define FSC__HP_AHEAD 2u

enum { HI_ENTRY = 1, HI_OP = 2 };
/* HV_SSTR: a string of at most FSC__HP_SSTR bytes, its bytes in the record
 * (the parse then reads them with the record, not from the input where the
 * worker met them, a cache miss on the parse's core: PyTorch writes each
 * entry's compile_context 'N/A' as a string of its own). */
enum { HV_NODE = 0, HV_INT, HV_STR, HV_ILIST, HV_MREF, HV_LDEF, HV_SSTR };
#define FSC__HP_SSTR 11u /* a record's item takes at most 13 bytes */
/* An entry record's pair count with this bit: its keys are the previous
 * entry record's of the range (entries share their key nodes through the
 * memo), and only its values follow. */
#define FSC__HP_SAME_KEYS 0x80000000u
#define FSC__HP_KEYS 16u

typedef struct hrange {
    size_t cut, next_cut; /* the range, from the scan */
    uint64_t cut_memo;    /* MEMOIZEs before cut */
    size_t start;         /* its first entry's '}'; SIZE_MAX: none */
    int start_out;        /* no MARK above the list there (1) or one (0) */
    uint64_t start_memo;
    size_t end;           /* where the parser goes on after the records */
    uint64_t end_memo;
    uint64_t nentries;
    uint8_t *rec;
    size_t nrec, caprec;
    uint64_t *defs; /* memo indices defined in skipped frames, read again */
    size_t ndefs;
    int done; /* under the pool's lock */
    /* the last record's keys, when all are nodes (0: none): an entry with
     * the same ones is written without them (FSC__HP_SAME_KEYS) */
    uint32_t nlastk;
    const fsc__pv_t *lastk[FSC__HP_KEYS];
} hrange_t;

struct fsc__hpool {
    fsc__pparse_t *ps; /* the main parser */
    hrange_t *r;
    size_t nr;
    size_t next;   /* next range to take */
    size_t cur;    /* next range the main parser looks at */
    size_t ahead;  /* ranges taken past cur, at most */
    uint64_t lim;  /* memo indices the main parser has defined */
    uint64_t akey; /* memo index of the entries' first key */
    int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv_take, cv_done;
    pthread_t th[FSC__HP_MAX_THREADS];
    fsc__pparse_t *wps[FSC__HP_MAX_THREADS];
    unsigned nth;
    unsigned nw;  /* worker parsers handed out */
};

static int step(fsc__pparse_t *ps);

/* Steps over one opcode at *q whatever it means, counting MEMOIZEs; 0 on
 * one that is not expected in a history (or cut short). */
static int hp_skip_op(const uint8_t *p, size_t len, size_t *q, uint64_t *memo)
{
    size_t at = *q, left = len - at - 1, fixed = 0, lenbytes = 0;
    switch (p[at]) {
    case 0x94: ++*memo; *q = at + 1; return 1;
    case '}': case ']': case ')': case 'N': case 0x88: case 0x89: case '(': case '0': case '1':
    case '2': case 's': case 'u': case 'a': case 'e': case 't': case 0x85: case 0x86: case 0x87:
    case 'd': case 'l':
        *q = at + 1;
        return 1;
    case 0x80: case 'K': case 'h': fixed = 1; break;
    case 'M': fixed = 2; break;
    case 'J': case 'j': fixed = 4; break;
    case 'G': case 0x95: fixed = 8; break;
    case 0x8a: case 0x8c: case 'C': case 'U': lenbytes = 1; break;
    case 'X': case 'B': case 'T': case 0x8b: lenbytes = 4; break;
    case 0x8d: case 0x8e: case 0x96: lenbytes = 8; break;
    default: return 0; /* STOP, text opcodes, PUTs, unsupported */
    }
    if (lenbytes > 0) {
        if (left < lenbytes)
            return 0;
        uint64_t n = rd_le(p + at + 1, lenbytes);
        if (n > left - lenbytes)
            return 0;
        *q = at + 1 + lenbytes + (size_t)n;
        return 1;
    }
    if (left < fixed)
        return 0;
    *q = at + 1 + fixed;
    return 1;
}

static size_t hp_frames(const uint8_t *p, size_t len, size_t r)
{
    while (r < len && p[r] == 0x95 && len - r >= 9)
        r += 9;
    return r;
}

/* The '}' at q opens an entry: [MEMOIZE] MARK, then a read of akey. */
static int hp_entry_at(const fsc__hpool_t *hp, size_t q)
{
    const uint8_t *p = hp->ps->p;
    size_t len = hp->ps->len, r = hp_frames(p, len, q + 1);
    if (r < len && p[r] == 0x94)
        r = hp_frames(p, len, r + 1);
    if (r >= len || p[r] != '(')
        return 0;
    r = hp_frames(p, len, r + 1);
    if (r + 1 < len && p[r] == 'h')
        return p[r + 1] == hp->akey;
    return len - r > 4 && p[r] == 'j' && rd_le(p + r + 1, 4) == hp->akey;
}

static int hp_room(hrange_t *r, size_t n)
{
    if (r->caprec - r->nrec >= n)
        return 1;
    size_t nc = r->caprec ? r->caprec : 65536;
    while (nc - r->nrec < n)
        nc *= 2;
    uint8_t *nb = realloc(r->rec, nc);
    if (nb == NULL)
        return 0;
    r->rec = nb;
    r->caprec = nc;
    return 1;
}

/* One item of a record: a node of the main parser's (memo, None, ...), a
 * value of the worker's own (an int, a string in the input, a list of
 * items), or a stand-in (hp_ref, fe_list). */
static int hp_is(const fsc__pv_t *v, const fsc__pv_t *arr, size_t n)
{
    uintptr_t a = (uintptr_t)v, lo = (uintptr_t)arr, hi = (uintptr_t)(arr + n);
    return a >= lo && a < hi;
}

/* The items of a list: the main parser's nodes alone (the usual stack of
 * frame dicts met before), as raw pointers with the list's depth, else
 * each with its kind. */
static uint8_t *hp_put_items(uint8_t *b, const fsc__pparse_t *w, fsc__pv_t *const *it, uint32_t n,
                             uint16_t depth);

static uint8_t *hp_put_item(uint8_t *b, const fsc__pparse_t *w, const fsc__pv_t *v, int in_list)
{
    if (hp_is(v, w->wph, FSC__HP_PH)) {
        const struct fsc__hph *h = &w->wphi[v - w->wph];
        int ldef = h->n != UINT32_MAX;
        if (ldef && in_list)
            return NULL;
        *b++ = ldef ? HV_LDEF : HV_MREF;
        memcpy(b, &h->idx, 8);
        b += 8;
        return ldef ? hp_put_items(b, w, w->wl + h->off, h->n, v->depth) : b;
    }
    if (!hp_is(v, w->fe_vals, FSC__FAST_PAIRS)) {
        *b++ = HV_NODE;
        memcpy(b, &v, sizeof v);
        return b + sizeof v;
    }
    if (in_list)
        return NULL;
    if (v->kind == FSC__PV_INT) {
        *b++ = HV_INT;
        memcpy(b, &v->u.i, 8);
        return b + 8;
    }
    if (v->kind == FSC__PV_STR && v->len <= FSC__HP_SSTR) {
        *b++ = HV_SSTR;
        *b++ = (uint8_t)v->len;
        if (v->len > 0)
            memcpy(b, v->u.s, v->len);
        return b + v->len;
    }
    if (v->kind == FSC__PV_STR) {
        *b++ = HV_STR;
        memcpy(b, &v->u.s, sizeof v->u.s);
        b += sizeof v->u.s;
        memcpy(b, &v->len, 4);
        return b + 4;
    }
    if (v->kind != FSC__PV_LIST)
        return NULL;
    *b++ = HV_ILIST;
    return hp_put_items(b, w, v->u.items, v->len, v->depth);
}

static uint8_t *hp_put_items(uint8_t *b, const fsc__pparse_t *w, fsc__pv_t *const *it, uint32_t n,
                             uint16_t depth)
{
    memcpy(b, &n, 4);
    b += 4;
    int raw = 1;
    for (uint32_t i = 0; i < n && raw; i++)
        raw = !hp_is(it[i], w->wph, FSC__HP_PH);
    *b++ = (uint8_t)raw;
    if (raw) {
        memcpy(b, &depth, 2);
        b += 2;
        if (n > 0)
            memcpy(b, it, (size_t)n * sizeof *it);
        return b + (size_t)n * sizeof *it;
    }
    for (uint32_t i = 0; i < n; i++)
        if ((b = hp_put_item(b, w, it[i], 1)) == NULL)
            return NULL;
    return b;
}

/* The decoded entry (w's fe_items, n pairs; its '}' at pos, memo count
 * memo there) as a record, with its depth when no stand-in for a memo
 * entry makes it unknown. */
static int hp_put_entry(hrange_t *r, const fsc__pparse_t *w, uint32_t n, size_t pos, uint64_t memo)
{
    /* at most 13 bytes an item, a list's items 9 each, 8 a read */
    size_t need = 1 + 8 + 8 + 4 + 2 + (size_t)2 * n * 16 + 4 + (size_t)w->fe_nrd * 8;
    need += (size_t)w->nwl * 9 + FSC__FAST_LIST * 9;
    if (!hp_room(r, need))
        return 0;
    uint16_t depth = w->fe_dict.depth; /* fe_dict_of ran */
    for (size_t i = 0; i < w->nph && depth != 0; i++)
        if (w->wphi[i].n == UINT32_MAX)
            depth = 0;
    int same = n <= FSC__HP_KEYS && n == r->nlastk;
    for (uint32_t i = 0; same && i < n; i++)
        same = w->fe_items[2 * i] == r->lastk[i];
    uint8_t *b = r->rec + r->nrec;
    *b++ = HI_ENTRY;
    memcpy(b, &pos, 8);
    memcpy(b + 8, &memo, 8);
    uint32_t nw = same ? n | FSC__HP_SAME_KEYS : n;
    memcpy(b + 16, &nw, 4);
    memcpy(b + 20, &depth, 2);
    b += 22;
    for (uint32_t i = same ? 1 : 0; i < 2 * n; i += same ? 2 : 1)
        if ((b = hp_put_item(b, w, w->fe_items[i], 0)) == NULL)
            return 0;
    if (!same) { /* keys that are nodes (HV_NODE) the next record may share */
        r->nlastk = n <= FSC__HP_KEYS ? n : 0;
        for (uint32_t i = 0; i < r->nlastk; i++) {
            const fsc__pv_t *k = w->fe_items[2 * i];
            if (hp_is(k, w->wph, FSC__HP_PH) || hp_is(k, w->fe_vals, FSC__FAST_PAIRS)) {
                r->nlastk = 0;
                break;
            }
            r->lastk[i] = k;
        }
    }
    uint32_t nrd = (uint32_t)w->fe_nrd;
    memcpy(b, &nrd, 4);
    b += 4;
    if (nrd > 0)
        memcpy(b, w->fe_rd, (size_t)nrd * 8);
    b += (size_t)nrd * 8;
    r->nrec = (size_t)(b - r->rec);
    return 1;
}

static int hp_put_op(hrange_t *r, size_t at)
{
    if (!hp_room(r, 9))
        return 0;
    r->rec[r->nrec] = HI_OP;
    memcpy(r->rec + r->nrec + 1, &at, 8);
    r->nrec += 9;
    return 1;
}

/* A worker's part: range r decoded with parser w, reading memo indices
 * below lim only. */
static void hp_range(fsc__hpool_t *hp, fsc__pparse_t *w, hrange_t *r, uint64_t lim)
{
    const uint8_t *p = w->p;
    size_t len = w->len, q = r->cut;
    uint64_t memo = r->cut_memo;
    w->memo_lim = lim;
    w->nwdefs = 0;
    r->start = SIZE_MAX;
    r->nlastk = 0;
    while (q < r->next_cut && !(p[q] == '}' && hp_entry_at(hp, q)))
        if (!hp_skip_op(p, len, &q, &memo))
            return;
    if (q >= r->next_cut)
        return;
    r->start = q;
    r->start_memo = memo;
    int out = -1;
    size_t pos = q;
    for (;;) { /* pos: an entry's '}' */
        if (pos >= r->next_cut)
            break;
        size_t at = pos + 1, mn = (size_t)memo, after;
        uint32_t n = 0;
        size_t ndefs = w->nwdefs;
        w->fe_nrd = 0;
        w->fe_list_used = 0;
        w->nph = 0;
        w->nwl = 0;
        int ok = fe_decode(w, &at, &mn, &n);
        after = at;
        ok = ok && fe_skip_frames(w, &after);
        int o = !ok ? -1 : p[after] == 'a' ? 1 : p[after] == '}' || p[after] == 'e' ? 0 : -1;
        if (o < 0 || (out >= 0 && o != out) || fe_dict_of(w, n) == NULL ||
            !hp_put_entry(r, w, n, pos, memo)) {
            w->nwdefs = ndefs;
            break;
        }
        if (out < 0)
            r->start_out = out = o;
        r->nentries++;
        memo = mn;
        pos = o ? after + 1 : at;
        for (;;) { /* between entries: FRAMEs, the APPENDS and MARK of a new batch */
            size_t f = pos;
            if (!fe_skip_frames(w, &f))
                goto end;
            uint8_t op = p[f];
            if (op == '}' && hp_entry_at(hp, f)) {
                pos = f;
                break;
            }
            if (!((op == 'e' && out == 0) || (op == '(' && out == 1)) || !hp_put_op(r, f))
                goto end;
            out = !out;
            pos = f + 1;
        }
    }
end:
    r->end = pos;
    r->end_memo = memo;
    if (w->nwdefs > 0 && (r->defs = malloc(w->nwdefs * sizeof *r->defs)) != NULL) {
        memcpy(r->defs, w->wdefs, w->nwdefs * sizeof *r->defs);
        r->ndefs = w->nwdefs;
    } else if (w->nwdefs > 0) {
        r->nentries = 0; /* out of memory: the main parser reads the range */
    }
}

static void *hp_worker(void *arg)
{
    fsc__thread_name("fsc-decode");
    fsc__hpool_t *hp = arg;
    pthread_mutex_lock(&hp->mu);
    fsc__pparse_t *w = hp->wps[hp->nw++];
    for (;;) {
        while (!hp->stop && hp->next < hp->nr && hp->next >= hp->cur + hp->ahead)
            pthread_cond_wait(&hp->cv_take, &hp->mu);
        if (hp->stop || hp->next >= hp->nr)
            break;
        if (hp->next < hp->cur)
            hp->next = hp->cur; /* passed by the main parser already */
        hrange_t *r = &hp->r[hp->next++];
        uint64_t lim = hp->lim;
        pthread_mutex_unlock(&hp->mu);
        hp_range(hp, w, r, lim);
        pthread_mutex_lock(&hp->mu);
        r->done = 1;
        pthread_cond_broadcast(&hp->cv_done);
    }
    pthread_mutex_unlock(&hp->mu);
    return NULL;
}

static void hp_free(fsc__pparse_t *ps)
{
    fsc__hpool_t *hp = ps->hp;
    if (hp == NULL)
        return;
    pthread_mutex_lock(&hp->mu);
    hp->stop = 1;
    pthread_cond_broadcast(&hp->cv_take);
    pthread_mutex_unlock(&hp->mu);
    for (unsigned t = 0; t < hp->nth; t++)
        pthread_join(hp->th[t], NULL);
    for (unsigned t = 0; t < FSC__HP_MAX_THREADS; t++) {
        if (hp->wps[t] != NULL) {
            free(hp->wps[t]->wdefs);
            free(hp->wps[t]->wl);
        }
        free(hp->wps[t]);
    }
    for (size_t i = 0; i < hp->nr; i++) {
        free(hp->r[i].rec);
        free(hp->r[i].defs);
    }
    free(hp->r);
    pthread_mutex_destroy(&hp->mu);
    pthread_cond_destroy(&hp->cv_take);
    pthread_cond_destroy(&hp->cv_done);
    free(hp);
    ps->hp = NULL;
}

/* At the '}' of entry c->aux of history list c: start the pool once
 * enough entries are read (see above). */
static void hp_start(fsc__pparse_t *ps, const fsc__pv_t *c)
{
    const fsc__pscan_t *sc = ps->scan;
    unsigned warmup = ps->cb->warmup ? ps->cb->warmup : FSC__HP_WARMUP;
    if (sc->ncuts < 2) {
        ps->hp_tried = 1;
        return;
    }
    if (c->aux < warmup)
        return;
    /* the entries' first key: a memo read right after this '}' */
    size_t r = hp_frames(ps->p, ps->len, ps->pos);
    if (r < ps->len && ps->p[r] == 0x94)
        r = hp_frames(ps->p, ps->len, r + 1);
    if (r >= ps->len || ps->p[r] != '(')
        return;
    r = hp_frames(ps->p, ps->len, r + 1);
    uint64_t akey;
    if (r + 1 < ps->len && ps->p[r] == 'h')
        akey = ps->p[r + 1];
    else if (ps->len - r > 4 && ps->p[r] == 'j')
        akey = rd_le(ps->p + r + 1, 4);
    else
        return;
    const fsc__pv_t *k = memo_at(ps, akey, ps->memo_n);
    if (k == NULL || k->kind != FSC__PV_STR)
        return;
    ps->hp_tried = 1;
    unsigned threads = ps->cb->threads ? ps->cb->threads : fsc__pickle_scan_threads();
    if (threads > FSC__HP_MAX_THREADS)
        threads = FSC__HP_MAX_THREADS;
    size_t first = 0;
    while (first < sc->ncuts && sc->cut[first] <= ps->op_pos)
        first++;
    if (threads < 2 || sc->ncuts - first < 2)
        return;
    fsc__hpool_t *hp = calloc(1, sizeof *hp);
    if (hp == NULL)
        return;
    hp->ps = ps;
    hp->nr = sc->ncuts - first;
    hp->ahead = (size_t)threads + FSC__HP_AHEAD;
    hp->lim = ps->memo_n;
    hp->akey = akey;
    hp->r = calloc(hp->nr, sizeof *hp->r);
    int ok = hp->r != NULL;
    for (size_t i = 0; ok && i < hp->nr; i++) {
        hp->r[i].cut = sc->cut[first + i];
        hp->r[i].next_cut = first + i + 1 < sc->ncuts ? sc->cut[first + i + 1] : ps->len;
        hp->r[i].cut_memo = sc->cut_memo[first + i];
    }
    for (unsigned t = 0; ok && t < threads; t++) {
        fsc__pparse_t *w = calloc(1, sizeof *w);
        if ((hp->wps[t] = w) == NULL) {
            ok = 0;
            break;
        }
        w->d = ps->d;
        w->p = ps->p;
        w->len = ps->len;
        w->name = ps->name;
        w->scan = ps->scan;
        w->cb = ps->cb;
        w->memo = ps->memo;
        w->worker = 1;
        w->skipv = &ps->skipped;
        w->frames_key = ps->frames_key;
    }
    if (ok && (pthread_mutex_init(&hp->mu, NULL) != 0 || pthread_cond_init(&hp->cv_take, NULL) != 0 ||
               pthread_cond_init(&hp->cv_done, NULL) != 0))
        ok = 0; /* (an init that fails leaves nothing to destroy on Linux) */
    if (!ok) {
        for (unsigned t = 0; t < FSC__HP_MAX_THREADS; t++)
            free(hp->wps[t]);
        free(hp->r);
        free(hp);
        return;
    }
    ps->hp = hp;
    for (unsigned t = 0; t < threads; t++) {
        if (pthread_create(&hp->th[hp->nth], NULL, hp_worker, hp) != 0)
            break;
        hp->nth++;
    }
    if (hp->nth == 0)
        hp_free(ps);
}

/* Range cur looked at: its records go, the next ranges may be taken. */
static void hp_next(fsc__pparse_t *ps)
{
    fsc__hpool_t *hp = ps->hp;
    hrange_t *r = &hp->r[hp->cur];
    pthread_mutex_lock(&hp->mu);
    free(r->rec);
    free(r->defs);
    r->rec = NULL;
    r->defs = NULL;
    r->nrec = r->caprec = r->ndefs = 0;
    hp->cur++;
    hp->lim = ps->memo_n;
    pthread_cond_broadcast(&hp->cv_take);
    pthread_mutex_unlock(&hp->mu);
}

/* A stand-in's node (NULL: none the fast path would read, see hp_take). */
static fsc__pv_t *hp_resolve(fsc__pparse_t *ps, uint64_t idx)
{
    fsc__pv_t *v = memo_at(ps, idx, SIZE_MAX);
    return v == &ps->skipped ? NULL : v;
}

/* One item of a record into *out (for an inline value, in *val); a kept
 * list is built as fe_list builds it. 0: the entry is left to the parser. */
static inline __attribute__((always_inline)) int hp_get_item(fsc__pparse_t *ps, const uint8_t **bp,
                                                           fsc__pv_t *val, fsc__pv_t **out)
{
    const uint8_t *b = *bp;
    uint8_t kind = *b++;
    uint64_t idx = 0;
    uint32_t n;
    switch (kind) {
    case HV_NODE:
        memcpy(out, b, sizeof *out);
        *bp = b + sizeof *out;
        return 1;
    case HV_MREF:
        memcpy(&idx, b, 8);
        *bp = b + 8;
        return (*out = hp_resolve(ps, idx)) != NULL;
    case HV_INT: {
        int64_t i;
        memcpy(&i, b, 8);
        pv_set(val, FSC__PV_INT, 1, 0, 0);
        val->u.i = i;
        *bp = b + 8;
        *out = val;
        return 1;
    }
    case HV_SSTR:
        n = b[0];
        pv_set(val, FSC__PV_STR, 1, n, 0);
        val->u.s = (const char *)b + 1;
        *bp = b + 1 + n;
        *out = val;
        return 1;
    case HV_STR: {
        const char *t;
        uint32_t n;
        memcpy(&t, b, sizeof t);
        memcpy(&n, b + sizeof t, 4);
        pv_set(val, FSC__PV_STR, 1, n, 0);
        val->u.s = t;
        *bp = b + sizeof t + 4;
        *out = val;
        return 1;
    }
    default: break;
    }
    /* a list: its items (memo entries) first */
    int ldef = kind == HV_LDEF;
    if (ldef) {
        memcpy(&idx, b, 8);
        b += 8;
    }
    memcpy(&n, b, 4);
    int raw = b[4];
    b += 5;
    if (n > FSC__FAST_LIST || (!ldef && n > 0 && ps->fe_list_used))
        return 0;
    fsc__pv_t **items = ps->fe_list;
    uint16_t depth = 1;
    if (raw) { /* nodes of this parser's, and their depth */
        memcpy(&depth, b, 2);
        b += 2;
        if (n > 0)
            memcpy(items, b, (size_t)n * sizeof *items);
        b += (size_t)n * sizeof *items;
    }
    for (uint32_t i = 0; i < n && !raw; i++) {
        if (*b == HV_NODE) {
            memcpy(&items[i], b + 1, sizeof *items);
            b += 1 + sizeof *items;
        } else {
            uint64_t ii;
            memcpy(&ii, b + 1, 8);
            b += 9;
            if ((items[i] = hp_resolve(ps, ii)) == NULL)
                return 0;
        }
        if (items[i]->depth + 1 > depth)
            depth = (uint16_t)(items[i]->depth + 1);
    }
    *bp = b;
    if (depth > FSC__PICKLE_MAX_DEPTH)
        return 0;
    fsc__pv_t *c = val;
    if (ldef) {
        if ((c = kept_list(ps, idx, items, n, 1)) == NULL)
            return 0;
    } else {
        pv_set(c, FSC__PV_LIST, 0, 0, 0);
        ps->fe_list_used = n > 0;
        c->u.items = n > 0 ? items : NULL;
        c->cap = n;
    }
    c->len = n;
    c->depth = depth;
    /* Written only when it changes: the workers read these nodes (a frame
     * dict is in thousands of stacks), and a store on every use would move
     * their cache lines back and forth between the cores. */
    uint8_t seal = (uint8_t)(F_SEALED | (ldef ? F_HELD : 0u));
    for (uint32_t i = 0; i < n; i++)
        if (is_container(items[i]) && (items[i]->sealed & seal) != seal)
            items[i]->sealed |= seal;
    *out = c;
    return 1;
}

/* Range r's records handed over, as the fast path would (the list c, its
 * state and memo count checked by the caller): 1, the parser then at
 * r->end, or at an entry the fast path would not take as recorded (a memo
 * entry that is not there, a value too deep: the parser reads it). */
static int hp_take(fsc__pparse_t *ps, fsc__pv_t *c, const hrange_t *r)
{
    for (size_t i = 0; i < r->ndefs; i++) {
        size_t slot = scan_slot(ps->scan, r->defs[i]);
        if (slot != SIZE_MAX) {
            ps->memo[slot] = &ps->skipped;
            ps->mcache[r->defs[i] & (FSC__MCACHE - 1)].v = NULL;
        }
    }
    const fsc__pdev_t *dv = dev_of(ps, c);
    const uint8_t *b = r->rec, *end = r->rec + r->nrec;
    uint32_t nlk = 0; /* the last entry record's keys (see hp_put_entry) */
    fsc__pv_t *lk[FSC__HP_KEYS];
    while (b < end) {
        if (*b == HI_OP) {
            size_t at;
            memcpy(&at, b + 1, 8);
            b += 9;
            ps->pos = at;
            int rc = step(ps);
            if (rc < 0)
                return rc;
            continue;
        }
        size_t at;
        uint64_t memo;
        uint32_t n, nrd;
        uint16_t depth;
        memcpy(&at, b + 1, 8);
        memcpy(&memo, b + 9, 8);
        memcpy(&n, b + 17, 4);
        memcpy(&depth, b + 21, 2);
        b += 23;
        ps->fe_list_used = 0;
        fsc__pv_t *e = NULL;
        uint32_t i = 0;
        if (n & FSC__HP_SAME_KEYS) {
            n &= ~FSC__HP_SAME_KEYS;
            if (n != nlk) { /* (cannot happen) read from its '}' */
                ps->pos = at;
                ps->memo_n = memo;
                return 1;
            }
            for (; i < 2 * n; i += 2) {
                ps->fe_items[i] = lk[i / 2];
                if (!hp_get_item(ps, &b, &ps->fe_vals[i / 2], &ps->fe_items[i + 1]))
                    break;
            }
        } else {
            for (; i < 2 * n; i++)
                if (!hp_get_item(ps, &b, &ps->fe_vals[i / 2], &ps->fe_items[i]))
                    break;
            nlk = i == 2 * n && n <= FSC__HP_KEYS ? n : 0;
            for (uint32_t k = 0; k < nlk; k++)
                lk[k] = ps->fe_items[2 * k];
        }
        if (i == 2 * n && depth != 0) { /* as the worker found it */
            e = &ps->fe_dict;
            pv_set(e, FSC__PV_DICT, depth, n, 2 * n);
            e->u.items = ps->fe_items;
        } else if (i == 2 * n) {
            e = fe_dict_of(ps, n);
        }
        if (e == NULL) { /* read from its '}' as if the pool had stopped there */
            ps->pos = at;
            ps->memo_n = memo;
            return 1;
        }
        if (ps->cb->entry != NULL) {
            int rc = ps->cb->entry(ps->cb->ud, dv->dev, (uint64_t)c->len + c->aux, e);
            if (rc != 0) {
                ps->cb_rc = rc;
                return rc;
            }
        }
        c->aux++;
        memcpy(&nrd, b, 4);
        b += 4;
        for (uint32_t k = 0; k < nrd; k++, b += 8) {
            uint64_t idx;
            memcpy(&idx, b, 8);
            fsc__pv_t *v = memo_at(ps, idx, SIZE_MAX);
            if (v != NULL && read_done(ps, idx, v))
                release(ps, v);
        }
    }
    ps->pos = r->end;
    ps->memo_n = r->end_memo;
    return 1;
}

/* At the '}' (op_pos) of an entry of list c the fast path may take (single:
 * no MARK above c): 1 when ranges decoded by the pool were handed over
 * from here (the parser goes on after them), 0 to read the entry here, or
 * the callback's failure. */
static int hp_at(fsc__pparse_t *ps, fsc__pv_t *c, int single)
{
    fsc__hpool_t *hp = ps->hp;
    if (hp == NULL) {
        hp_start(ps, c);
        return 0;
    }
    while (hp->cur < hp->nr) {
        hrange_t *r = &hp->r[hp->cur];
        if (ps->op_pos < r->cut)
            return 0;
        pthread_mutex_lock(&hp->mu);
        while (!r->done)
            pthread_cond_wait(&hp->cv_done, &hp->mu);
        pthread_mutex_unlock(&hp->mu);
        if (r->start != SIZE_MAX && ps->op_pos < r->start)
            return 0;
        if (r->start == ps->op_pos && r->nentries > 0 && r->start_out == single &&
            r->start_memo == ps->memo_n && c->aux <= UINT32_MAX - r->nentries) {
            int rc = hp_take(ps, c, r);
            if (ps->cb->taken != NULL)
                ++*ps->cb->taken;
            hp_next(ps);
            return rc;
        }
        hp_next(ps); /* passed, or not joined: read here */
    }
    return 0;
}

/* Try the entry starting at ps->pos (its '}' already read at op_pos).
 * Returns 1 when handed over, 0 to let the generic parser read it, or a
 * negative code from the callback. */
static int fast_entry(fsc__pparse_t *ps)
{
    size_t c_at;
    int single;
    if (ps->sp == 0)
        return 0;
    if (ps->mp > 0 && ps->marks[ps->mp - 1] < ps->sp && ps->marks[ps->mp - 1] > 0 &&
        ps->batch_mp == ps->mp) {
        /* Entries the generic parser read wait above the batch's MARK:
         * handed over now, as APPENDS would, so that this one can go the
         * fast way after them (else one unusual entry, a new string say,
         * sends the rest of its batch the slow way). */
        size_t base = ps->marks[ps->mp - 1];
        fsc__pv_t *l = ps->stack[base - 1];
        if (l->kind == FSC__PV_LIST && !(l->sealed & F_SEALED) &&
            list_role(ps, base - 1) == R_DEVLIST) {
            ps->popped_dead = ps->mark_dead != NULL ? ps->mark_dead[ps->mp - 1] : ps->ndead;
            int rc = stream_items(ps, base - 1, base);
            if (rc != 0)
                return rc;
        }
    }
    if (ps->mp > 0 && ps->marks[ps->mp - 1] == ps->sp) {
        single = 0;
    } else if (ps->mp == 0 || ps->marks[ps->mp - 1] < ps->sp) {
        single = 1;
    } else {
        return 0;
    }
    c_at = ps->sp - 1;
    fsc__pv_t *c = ps->stack[c_at];
    if (c->kind != FSC__PV_LIST || (c->sealed & F_SEALED) || list_role(ps, c_at) != R_DEVLIST)
        return 0;
    if (ps->hp != NULL || !ps->hp_tried) {
        int rc = hp_at(ps, c, single);
        if (rc != 0)
            return rc;
    }
    ps->fe_nrd = 0;
    ps->fe_list_used = 0;
    size_t pos = ps->pos, memo_n = ps->memo_n;
    uint32_t n = 0;
    if (!fe_decode(ps, &pos, &memo_n, &n))
        return 0;
    size_t after = pos;
    if (!fe_skip_frames(ps, &after))
        return 0;
    uint8_t next = ps->p[after];
    if (single ? next != 'a' : (next != '}' && next != 'e'))
        return 0;
    fsc__pv_t *e = fe_dict_of(ps, n);
    if (e == NULL)
        return 0;
    if (c->aux == UINT32_MAX)
        return 0;
    ps->memo_n = memo_n;
    ps->pos = single ? after + 1 : pos;
    if (ps->cb->entry != NULL) {
        const fsc__pdev_t *dv = dev_of(ps, c);
        int rc = ps->cb->entry(ps->cb->ud, dv->dev, (uint64_t)c->len + c->aux, e);
        if (rc != 0) {
            ps->cb_rc = rc;
            return rc;
        }
    }
    c->aux++;
    for (size_t i = 0; i < ps->fe_nrd; i++) {
        fsc__pv_t *v = memo_at(ps, ps->fe_rd[i], ps->memo_n);
        if (v != NULL && read_done(ps, ps->fe_rd[i], v))
            release(ps, v);
    }
    return 1;
}

/* One opcode. Returns 0 to continue, 1 at STOP, negative on error. */
static int step(fsc__pparse_t *ps)
{
    ps->op_pos = ps->pos;
    uint8_t op = ps->p[ps->pos++];
    fsc__pv_t *a = NULL;
    size_t base = 0;
    int rc = 0;
    switch (op) {
    case 0x80: /* PROTO */
        if ((rc = need(ps, 1, "PROTO")) != 0)
            return rc;
        if (ps->p[ps->pos] > 5)
            return perr(ps, FSC_EFORMAT, "pickle protocol %u not supported (0 to 5 are)",
                        ps->p[ps->pos]);
        ps->pos++;
        return 0;
    case 0x95: /* FRAME: only a hint for buffering; its length must fit */
        if ((rc = need(ps, 8, "FRAME")) != 0)
            return rc;
        if (rd_le(ps->p + ps->pos, 8) > ps->len - ps->pos - 8)
            return perr(ps, FSC_EFORMAT, "FRAME length %llu goes past the end",
                        (unsigned long long)rd_le(ps->p + ps->pos, 8));
        ps->pos += 8;
        return 0;
    case '.': /* STOP */
        if (ps->sp != 1 || ps->mp != 0)
            return perr(ps, FSC_EFORMAT, "STOP with %zu values and %zu marks on the stack",
                        ps->sp, ps->mp);
        if (ps->ndev > 0 && (rc = check_streamed(ps, ps->stack[0])) != 0)
            return rc;
        if (ps->skip_any && holds_skipped(ps, ps->stack[0], 0))
            return FSC__PICKLE_ESKIPPED; /* kept in a value outside the history */
        ps->d->root = ps->stack[0];
        return 1;
    case '}':
        if (ps->scan != NULL && (rc = fast_entry(ps)) != 0)
            return rc < 0 ? rc : 0;
        return push(ps, pcont(ps, FSC__PV_DICT, 0));
    case ']': return push(ps, pcont(ps, FSC__PV_LIST, 0));
    case ')': return push(ps, pcont(ps, FSC__PV_TUPLE, 0));
    case 'N': return push(ps, &ps->d->none);
    case 0x88: return push(ps, &ps->d->yes);
    case 0x89: return push(ps, &ps->d->no);
    case '(': /* MARK */
        if ((rc = grow(ps, &ps->marks, &ps->mcap, ps->mp + 1, sizeof *ps->marks)) != 0)
            return rc;
        if (ps->left != NULL) {
            if ((rc = grow(ps, &ps->mark_dead, &ps->mdcap, ps->mp + 1, sizeof *ps->mark_dead)) != 0)
                return rc;
            ps->mark_dead[ps->mp] = ps->ndead;
            if (ps->batch_mp == 0 && ps->sp > 0 && ps->stack[ps->sp - 1]->kind == FSC__PV_LIST &&
                !(ps->stack[ps->sp - 1]->sealed & F_SEALED) && list_role(ps, ps->sp - 1) == R_DEVLIST)
                ps->batch_mp = ps->mp + 1;
        }
        ps->marks[ps->mp++] = ps->sp;
        return 0;
    case '0': /* POP */
        if (ps->mp > 0 && ps->marks[ps->mp - 1] == ps->sp) {
            ps->mp--; /* Python pops a mark when it is on top */
            if (ps->mp < ps->batch_mp)
                ps->batch_mp = 0;
            return 0;
        }
        return pop_one(ps, "POP", &a);
    case '1': /* POP_MARK */
        if ((rc = top_mark(ps, "POP_MARK", &base)) != 0)
            return rc;
        ps->sp = base;
        return 0;
    case '2': /* DUP */
        if (ps->sp == 0)
            return perr(ps, FSC_EFORMAT, "DUP on an empty stack");
        if (ps->scan != NULL) { /* two references: the value must be kept */
            fsc__pv_t *k = persist(ps, ps->stack[ps->sp - 1]);
            if (k == NULL)
                return nomem(ps);
            ps->stack[ps->sp - 1] = k;
        }
        return push(ps, ps->stack[ps->sp - 1]);
    case 's': { /* SETITEM */
        fsc__pv_t *k = NULL, *v = NULL;
        if ((rc = pop_one(ps, "SETITEM", &v)) != 0 || (rc = pop_one(ps, "SETITEM", &k)) != 0)
            return rc;
        size_t floor = ps->mp > 0 ? ps->marks[ps->mp - 1] : 0;
        if (ps->sp <= floor || ps->stack[ps->sp - 1]->kind != FSC__PV_DICT)
            return perr(ps, FSC_EFORMAT, "SETITEM on a value that is not a dict");
        if ((rc = add_item(ps, ps->stack[ps->sp - 1], k, "SETITEM")) != 0)
            return rc;
        return add_item(ps, ps->stack[ps->sp - 1], v, "SETITEM");
    }
    case 'u': /* SETITEMS */
        if ((rc = top_mark(ps, "SETITEMS", &base)) != 0)
            return rc;
        return fill_from(ps, base, FSC__PV_DICT, "SETITEMS");
    case 'a': { /* APPEND */
        fsc__pv_t *v = NULL;
        if ((rc = pop_one(ps, "APPEND", &v)) != 0)
            return rc;
        size_t floor = ps->mp > 0 ? ps->marks[ps->mp - 1] : 0;
        if (ps->sp <= floor || ps->stack[ps->sp - 1]->kind != FSC__PV_LIST)
            return perr(ps, FSC_EFORMAT, "APPEND on a value that is not a list");
        if (streams(ps, ps->sp - 1)) {
            ps->sp++; /* v is still in its slot */
            ps->popped_dead = ps->ndead;
            return stream_items(ps, ps->sp - 2, ps->sp - 1);
        }
        return add_item(ps, ps->stack[ps->sp - 1], v, "APPEND");
    }
    case 'e': /* APPENDS */
        if ((rc = top_mark(ps, "APPENDS", &base)) != 0)
            return rc;
        return fill_from(ps, base, FSC__PV_LIST, "APPENDS");
    case 't': /* TUPLE */
        if ((rc = top_mark(ps, "TUPLE", &base)) != 0)
            return rc;
        return make_tuple(ps, base, "TUPLE");
    case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
        size_t n = (size_t)(op - 0x84);
        size_t floor = ps->mp > 0 ? ps->marks[ps->mp - 1] : 0;
        if (ps->sp - floor < n)
            return perr(ps, FSC_EFORMAT, "TUPLE%zu needs %zu values on the stack", n, n);
        return make_tuple(ps, ps->sp - n, "TUPLE");
    }
    case 'J':
        if ((rc = need(ps, 4, "BININT")) != 0)
            return rc;
        rc = push_int(ps, (int32_t)(uint32_t)rd_le(ps->p + ps->pos, 4));
        ps->pos += 4;
        return rc;
    case 'K':
        if ((rc = need(ps, 1, "BININT1")) != 0)
            return rc;
        return push_int(ps, ps->p[ps->pos++]);
    case 'M':
        if ((rc = need(ps, 2, "BININT2")) != 0)
            return rc;
        rc = push_int(ps, (int64_t)rd_le(ps->p + ps->pos, 2));
        ps->pos += 2;
        return rc;
    case 0x8a: return push_long(ps, 1, "LONG1");
    case 0x8b: return push_long(ps, 4, "LONG4");
    case 'G': {
        if ((rc = need(ps, 8, "BINFLOAT")) != 0)
            return rc;
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++)
            bits = (bits << 8) | ps->p[ps->pos + i];
        ps->pos += 8;
        fsc__pv_t *v = pnode(ps, FSC__PV_FLOAT);
        if (v != NULL)
            memcpy(&v->u.f, &bits, sizeof bits);
        return push(ps, v);
    }
    case 0x8c: return push_str(ps, 1, FSC__PV_STR, "SHORT_BINUNICODE");
    case 'X': return push_str(ps, 4, FSC__PV_STR, "BINUNICODE");
    case 0x8d: return push_str(ps, 8, FSC__PV_STR, "BINUNICODE8");
    case 'U': return push_str(ps, 1, FSC__PV_STR, "SHORT_BINSTRING");
    case 'T': return push_str(ps, 4, FSC__PV_STR, "BINSTRING");
    case 'C': return push_str(ps, 1, FSC__PV_BYTES, "SHORT_BINBYTES");
    case 'B': return push_str(ps, 4, FSC__PV_BYTES, "BINBYTES");
    case 0x8e: return push_str(ps, 8, FSC__PV_BYTES, "BINBYTES8");
    case 0x96: return push_str(ps, 8, FSC__PV_BYTES, "BYTEARRAY8");
    case 'q':
        if ((rc = need(ps, 1, "BINPUT")) != 0)
            return rc;
        return memo_put(ps, ps->p[ps->pos++], "BINPUT");
    case 'r':
        if ((rc = need(ps, 4, "LONG_BINPUT")) != 0)
            return rc;
        ps->pos += 4;
        return memo_put(ps, rd_le(ps->p + ps->pos - 4, 4), "LONG_BINPUT");
    case 0x94: return memo_put(ps, ps->memo_n, "MEMOIZE");
    case 'h':
        if ((rc = need(ps, 1, "BINGET")) != 0)
            return rc;
        return memo_get(ps, ps->p[ps->pos++], "BINGET");
    case 'j':
        if ((rc = need(ps, 4, "LONG_BINGET")) != 0)
            return rc;
        ps->pos += 4;
        return memo_get(ps, rd_le(ps->p + ps->pos - 4, 4), "LONG_BINGET");
    /* protocols 0 and 1 */
    case 'I': return push_text_int(ps, "INT");
    case 'L': return push_text_int(ps, "LONG");
    case 'F': return push_text_float(ps);
    case 'V': return push_text_str(ps, 0, "UNICODE");
    case 'S': return push_text_str(ps, 1, "STRING");
    case 'd': return make_from_mark(ps, FSC__PV_DICT, "DICT");
    case 'l': return make_from_mark(ps, FSC__PV_LIST, "LIST");
    case 'p': {
        uint64_t idx = 0;
        if ((rc = text_index(ps, "PUT", &idx)) != 0)
            return rc;
        return memo_put(ps, idx, "PUT");
    }
    case 'g': {
        uint64_t idx = 0;
        if ((rc = text_index(ps, "GET", &idx)) != 0)
            return rc;
        return memo_get(ps, idx, "GET");
    }
    default:
        return perr(ps, FSC_EFORMAT, "opcode 0x%02x not supported in a memory snapshot", op);
    }
}

static int run_parser(fsc__pparse_t *ps)
{
    int rc = 0;
    size_t every = (size_t)4 << 20;
    ps->next_progress = every;
    while (rc == 0) {
        if (ps->pos >= ps->len) {
            ps->op_pos = ps->pos;
            rc = perr(ps, FSC_EFORMAT, "truncated: the pickle ends without a STOP opcode");
            break;
        }
        rc = step(ps);
        if (ps->pos >= ps->next_progress && ps->cb != NULL && ps->cb->progress != NULL) {
            ps->cb->progress(ps->cb->ud, ps->pos, ps->len);
            ps->next_progress = ps->pos + every;
        }
    }
    hp_free(ps); /* its threads read the memo */
    free(ps->stack);
    free(ps->wm);
    free(ps->marks);
    free(ps->memo);
    free(ps->left);
    free(ps->dead);
    free(ps->mark_dead);
    if (ps->devv != ps->devs)
        free(ps->devv);
    return rc < 0 ? rc : 0;
}

int fsc__pickle_parse(const void *data, size_t len, const char *name, fsc__pdoc_t **out,
                      fsc_err_t *err)
{
    *out = NULL;
    fsc__pdoc_t *d = NULL;
    if (fsc__pdoc_new(&d) != 0)
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
    d->budget = len * FSC__PICKLE_MEM_FACTOR + (1u << 20);
    d->input = malloc(len ? len : 1);
    if (d->input == NULL) {
        fsc__pdoc_free(d);
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
    }
    if (len > 0)
        memcpy(d->input, data, len);
    fsc__pparse_t ps = {.d = d, .a = &d->keep, .p = (const uint8_t *)d->input, .len = len,
                        .name = name, .err = err};
    int rc = run_parser(&ps);
    if (rc < 0) {
        fsc__pdoc_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

int fsc__pickle_stream(const void *data, size_t len, const char *name, const fsc__pscan_t *scan,
                       const fsc__pstream_t *cb, fsc__pdoc_t **out, fsc_err_t *err)
{
    *out = NULL;
    fsc__pdoc_t *d = NULL;
    if (fsc__pdoc_new(&d) != 0)
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
    d->budget = len * FSC__PICKLE_MEM_FACTOR + (1u << 20);
    /* on the heap: the caches make it too large for a small stack */
    fsc__pparse_t *ps = calloc(1, sizeof *ps);
    if (ps == NULL) {
        fsc__pdoc_free(d);
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
    }
    ps->d = d;
    ps->a = &d->tmp;
    ps->p = data;
    ps->len = len;
    ps->name = name;
    ps->err = err;
    ps->scan = scan;
    ps->cb = cb;
    ps->devcap = 16;
    ps->devv = ps->devs;
    ps->skipped.kind = FSC__PV_NONE;
    ps->skipped.depth = 1;
    ps->skipped.sealed = F_KEEP | F_SEALED;
    ps->skipv = &ps->skipped;
    ps->memo_lim = UINT64_MAX;
    int rc = 0;
    if (scan->refs > 0) {
        ps->memo_cap = scan->refs;
        if (budget_take(d, scan->refs * sizeof *ps->memo) != 0)
            rc = nomem(ps);
        else if ((ps->memo = calloc(scan->refs, sizeof *ps->memo)) == NULL)
            rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
        if (rc == 0 && scan->reads != NULL) {
            if (budget_take(d, scan->refs) != 0)
                rc = nomem(ps);
            else if ((ps->left = malloc(scan->refs)) == NULL)
                rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
            else
                memcpy(ps->left, scan->reads, scan->refs);
            d->heap_lists = 1;
        }
    }
    if (rc == 0) {
        rc = run_parser(ps);
    } else {
        free(ps->memo);
        free(ps->left);
    }
    int cb_rc = ps->cb_rc;
    free(ps);
    if (rc < 0) {
        fsc__pdoc_free(d);
        return cb_rc != 0 ? cb_rc : rc;
    }
    *out = d;
    return 0;
}
