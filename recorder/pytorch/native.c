/*
 * native.c — the native recorder (fragscope/native.h): PyTorch's own
 * allocator's trace entries, copied on the allocating thread into a
 * buffer per device, turned into fragscope events on a thread of ours.
 *
 * The hot path is fsc_native_push, called by the tracker under the
 * device's allocator lock: one producer at a time per device. Each device
 * has a chain of fixed blocks of entries; the producer appends and
 * publishes the count with a release store, links a new block when one
 * fills; the recorder's thread reads up to the published count with an
 * acquire load and frees a block it has read to the end once the next is
 * linked. No lock, no system call, malloc once per FSC__NB_ENTRIES
 * entries.
 *
 * The thread replays the entries through the importer's block model
 * (pytorch_blocks.c), the same code a snapshot goes through, and writes
 * the events with their thread's tag node (fsc_recorder_write_thread_tag)
 * into the device's trace. It runs every flush_interval_ms, at once after
 * an OOM entry, and on fsc_native_flush (the OOM observer's).
 *
 * Stacks (FSC_NATIVE_F_STACK) come later than their entries, from a Python
 * thread that names the frames (fsc_native_stacks); the thread converts a
 * device's entries up to the first whose stack has not come, and goes on
 * from there once it has.
 *
 * Nothing is left out without a word: an entry the block model cannot
 * place, or one lost before it was read (no memory for a block, no trace
 * for its device), is counted by kind, and the trace carries the counts
 * and the first few entries in a SKIPPED record (fsc_recorder_write_skips)
 * written whenever they change, so that every reader of the trace sees
 * them. A device declared but not begun (fsc_native_declare_device) keeps
 * its entries, and the thread begins its trace when the first arrives.
 */
#include "fragscope/native.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fragscope/allocator.h"
#include "fragscope/frames.h"
#include "fragscope/recorder.h"
#include "fsc/thread.h"
#include "pytorch_internal.h"
#include "../tags.h"

#define FSC__NB_ENTRIES 1024u
/* The most entries wait before they reach the trace's buffers (and its file
 * within the recorder's own time bound) while no block fills. */
#define FSC__PARTIAL_MS 100
#define FSC__NATIVE_MAX_DEVICES 64
/* Blocks the thread has read wait behind this many others before the
 * producer may fill them again (1.5 MiB a device): by then their lines
 * have left the thread's core, and the producer's stores into them do not
 * each wait for a line taken back from that core (which cost +20 to +30 ns
 * an entry in bench_native when the block last read was handed straight
 * back). */
#define FSC__COOL_BLOCKS 32u
/* (thread tag, stack) pairs whose joined tag node is remembered, a device */
#define FSC__JOIN_SLOTS 1024u
/* frames of a stack joined below a thread's tag (the rest are cut) */
#define FSC__STACK_DEPTH 1024u
/* No device has this much memory: a size above it is not a real one. */
#define FSC__ABSURD_SIZE (1ull << 48)

typedef struct join_slot {
    uint32_t tag, stack, node;
} join_slot_t;

typedef struct nblock {
    struct nblock *next;       /* published by the producer (release) */
    uint32_t count;            /* published by the producer (release) */
    fsc_native_entry_t e[FSC__NB_ENTRIES];
} nblock_t;

typedef struct fsc_native fsc_native_t;

/* The producer's fields and the recorder thread's live on cache lines of
 * their own: the two run on different cores at once. */
typedef struct ndev {
    /* producer's */
    _Alignas(64) nblock_t *tail;
    uint32_t wpos;
    uint64_t pushed; /* entries pushed for this device, kept or lost */
    /* entries lost in push, by kind (FSC_TRACE_SKIP_NO_MEMORY, _NOT_BEGUN),
     * and the first ones: the producer writes, the thread reads up to the
     * count published (release) */
    uint64_t lost_nomem, lost_notbegun;
    uint32_t nlost_shown;
    fsc_trace_skip_t lost_shown[FSC_TRACE_SKIP_SHOWN];
    /* shared: blocks read to the end, for the producer to reuse (a stack
     * that only the thread pushes and only the producer pops, so a pop
     * cannot be fooled by a block that came back: no ABA) */
    _Alignas(64) nblock_t *spare;
    int begun; /* release once the trace and the model are ready */
    int keep;  /* declared: entries are kept until the device begins */
    /* the recorder thread's (under n->mu) */
    _Alignas(64) fsc_native_t *n;
    nblock_t *head;
    uint32_t rd;
    /* blocks read to the end, cooling before they go back to the producer
     * (oldest first, linked through next) */
    nblock_t *cool_head, *cool_tail;
    uint32_t cool_len;
    /* stacks handed back (fsc_native_stacks), not yet joined to their
     * entries: stk[stk_head .. stk_len) */
    uint32_t *stk;
    size_t stk_head, stk_len, stk_cap;
    join_slot_t *join;
    fsc_recorder_t *rec;
    /* entries the thread read (the next one's index); those it left out, by
     * kind; the last SKIPPED record written into the trace */
    uint64_t nread;
    fsc_trace_skips_t sk, sk_written;
    /* a declared device (fsc_native_declare_device): what its trace's
     * header will say */
    fsc_native_device_t late;
    char *late_name, *late_config;
    fsc__pmodel_t m;
    fsc_alloc_config_t cfg;
    fsc_err_t merr;
    uint64_t capacity, total, origin_ns, last_ns;
    char path[4096];
} ndev_t;

struct fsc_native {
    /* What the producer reads on every entry, on a cache line that nothing
     * writes while entries come: sharing one with the converting thread's
     * counters or its mutex made every entry wait for that line to come
     * back from the thread's core (+50 ns an entry in bench_native). */
    _Alignas(64) int ndev;
    ndev_t *dev;
    int closed; /* set once, at close */
    /* written by the producer only when an entry is lost */
    _Alignas(64) uint64_t dropped;
    /* entries of a device out of range (any producer): counted, the first
     * ones described (a slot is claimed, filled, then marked ready) */
    uint64_t far_lost;
    uint32_t far_claimed;
    int far_ready[FSC_TRACE_SKIP_SHOWN];
    fsc_trace_skip_t far_shown[FSC_TRACE_SKIP_SHOWN];
    /* the converting thread's, flush's and close's */
    _Alignas(64) fsc_native_opts_t o;
    char *path_tmpl, *producer;
    int any_begun;
    pthread_mutex_t mu; /* the conversion: the thread, flush, close */
    pthread_cond_t cv;
    pthread_t thread;
    int has_thread, stop, wake;
    uint64_t entries, events, contradicted, unnamed;
    char message[FSC_ERR_MSG_MAX];
    fsc_err_t err; /* first error of writing */
};

static uint64_t now_unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t entry_ns(const fsc_native_t *n, uint64_t t)
{
    if (n->o.clock_ns_per_tick <= 0.0)
        return t;
    double d = ((double)t - (double)n->o.clock_origin_tick) * n->o.clock_ns_per_tick;
    double ns = (double)n->o.clock_origin_ns + d;
    return ns > 0 ? (uint64_t)ns : 0;
}

/* ---- the block model's events into the trace ------------------------------ */

static int on_event(void *ud, const fsc_event_t *ev)
{
    ndev_t *d = ud;
    d->n->events += ev->type != FSC_EV_DEVICE_MEMORY && ev->type != FSC_EV_MARKER;
    /* the model stamps tags of the entries' threads: process tag nodes */
    return fsc_recorder_write_thread_tag(d->rec, ev, ev->tag);
}

/* Count e, left out of the trace, as `kind`; the first ones described. */
static void skip_note(fsc_trace_skips_t *sk, uint32_t kind, const fsc_native_entry_t *e,
                      uint64_t index)
{
    sk->total++;
    sk->by_kind[kind]++;
    if (sk->nshown < FSC_TRACE_SKIP_SHOWN) {
        fsc_trace_skip_t *k = &sk->shown[sk->nshown++];
        k->kind = kind;
        k->action = e->action;
        k->device = e->device;
        k->index = index;
        k->addr = e->addr;
        k->size = e->size;
    }
}

/* Add b's counts and descriptions to a's (as many as fit). */
static void skips_add(fsc_trace_skips_t *a, const fsc_trace_skips_t *b)
{
    a->total += b->total;
    for (int k = 0; k < FSC_TRACE_SKIP_KINDS; k++)
        a->by_kind[k] += b->by_kind[k];
    for (uint32_t i = 0; i < b->nshown && a->nshown < FSC_TRACE_SKIP_SHOWN; i++)
        a->shown[a->nshown++] = b->shown[i];
}

/* Why the block model would refuse e before it is asked (a kind), or -1:
 * an action PyTorch does not have, a size no device has. */
static int precheck(const fsc_native_entry_t *e)
{
    if (e->action > FSC_NATIVE_USER_DEFINED)
        return FSC_TRACE_SKIP_UNKNOWN_ACTION;
    switch (e->action) {
    case FSC_NATIVE_ALLOC:
    case FSC_NATIVE_SEGMENT_ALLOC:
    case FSC_NATIVE_SEGMENT_FREE:
    case FSC_NATIVE_SEGMENT_MAP:
    case FSC_NATIVE_SEGMENT_UNMAP:
        if (e->size == 0)
            return FSC_TRACE_SKIP_ZERO_SIZE;
        if (e->size > FSC__ABSURD_SIZE || e->addr + e->size < e->addr)
            return FSC_TRACE_SKIP_ABSURD_SIZE;
        return -1;
    default: return -1;
    }
}

/* The kind of an entry the block model refused. */
static uint32_t refused_kind(const fsc_native_entry_t *e)
{
    switch (e->action) {
    case FSC_NATIVE_FREE_REQUESTED:
    case FSC_NATIVE_FREE_COMPLETED: return FSC_TRACE_SKIP_FREE_UNKNOWN;
    case FSC_NATIVE_SEGMENT_UNMAP: return FSC_TRACE_SKIP_UNMAP_UNMAPPED;
    case FSC_NATIVE_SEGMENT_FREE: return FSC_TRACE_SKIP_SEGMENT_UNKNOWN;
    default: return FSC_TRACE_SKIP_CONTRADICTED;
    }
}

static void contradiction(fsc_native_t *n, ndev_t *d, const fsc_native_entry_t *e, uint32_t kind)
{
    static const char *const names[] = {"alloc", "free_requested", "free_completed",
                                        "segment_alloc", "segment_free", "segment_map",
                                        "segment_unmap", "snapshot", "oom", "user_defined"};
    skip_note(&d->sk, kind, e, d->nread);
    if (n->contradicted++ == 0)
        snprintf(n->message, sizeof n->message, "%.200s: %s at 0x%llx, %llu bytes: %.200s", d->path,
                 e->action < 10 ? names[e->action] : "entry", (unsigned long long)e->addr,
                 (unsigned long long)e->size, d->merr.msg);
}

static int marker(ndev_t *d, const char *text, uint32_t tag)
{
    fsc_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = FSC_EV_MARKER;
    ev.time_ns = d->m.time_ns;
    ev.text = text;
    ev.text_len = (uint32_t)strlen(text);
    ev.tag = tag;
    return on_event(d, &ev);
}

/* The tag node of stack `stack` (a path below the root) below the thread's
 * tag `tag`: the stack's frame names interned again under tag. */
static uint32_t join_stack(ndev_t *d, uint32_t tag, uint32_t stack)
{
    if (stack == 0)
        return tag;
    if (tag == 0)
        return stack;
    if (d->join == NULL && (d->join = calloc(FSC__JOIN_SLOTS, sizeof *d->join)) == NULL)
        return tag;
    join_slot_t *js = &d->join[((tag * 0x9e3779b1u) ^ stack) % FSC__JOIN_SLOTS];
    if (js->tag == tag && js->stack == stack)
        return js->node;
    uint32_t path[FSC__STACK_DEPTH];
    size_t k = 0;
    for (uint32_t at = stack; at != 0 && k < FSC__STACK_DEPTH;) {
        const char *name;
        size_t len;
        uint32_t parent;
        if (fsc__tag_get(at, &parent, &name, &len) != 0)
            break;
        path[k++] = at;
        at = parent;
    }
    uint32_t node = tag;
    while (k-- > 0) {
        const char *name;
        size_t len;
        uint32_t parent, id;
        if (fsc__tag_get(path[k], &parent, &name, &len) != 0 ||
            (id = fsc__tag_intern(node, name, len)) == 0)
            break;
        node = id;
    }
    js->tag = tag;
    js->stack = stack;
    js->node = node;
    return node;
}

/* The entries push lost for device d (no memory, not begun), as skips. */
static void lost_of(const ndev_t *d, fsc_trace_skips_t *out)
{
    memset(out, 0, sizeof *out);
    out->by_kind[FSC_TRACE_SKIP_NO_MEMORY] = __atomic_load_n(&d->lost_nomem, __ATOMIC_RELAXED);
    out->by_kind[FSC_TRACE_SKIP_NOT_BEGUN] = __atomic_load_n(&d->lost_notbegun, __ATOMIC_RELAXED);
    out->total = out->by_kind[FSC_TRACE_SKIP_NO_MEMORY] + out->by_kind[FSC_TRACE_SKIP_NOT_BEGUN];
    uint32_t k = __atomic_load_n(&d->nlost_shown, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < k; i++)
        out->shown[out->nshown++] = d->lost_shown[i];
}

/* The entries of devices out of range, as skips. */
static void far_of(fsc_native_t *n, fsc_trace_skips_t *out)
{
    memset(out, 0, sizeof *out);
    out->total = out->by_kind[FSC_TRACE_SKIP_NOT_BEGUN] =
        __atomic_load_n(&n->far_lost, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < FSC_TRACE_SKIP_SHOWN; i++)
        if (__atomic_load_n(&n->far_ready[i], __ATOMIC_ACQUIRE))
            out->shown[out->nshown++] = n->far_shown[i];
}

/* The device whose trace also counts the entries that have no trace of
 * their own (devices never begun, or out of range): the first with a
 * trace. */
static ndev_t *home_device(fsc_native_t *n)
{
    for (int i = 0; i < n->ndev; i++)
        if (n->dev[i].rec != NULL)
            return &n->dev[i];
    return NULL;
}

/* What device d's trace must say it left out: its own entries the model
 * refused or push lost, and for the home device those with no trace. */
static void skips_of(fsc_native_t *n, ndev_t *d, fsc_trace_skips_t *out)
{
    fsc_trace_skips_t x;
    *out = d->sk;
    lost_of(d, &x);
    skips_add(out, &x);
    if (d != home_device(n))
        return;
    for (int i = 0; i < n->ndev; i++) {
        if (n->dev[i].rec != NULL)
            continue;
        lost_of(&n->dev[i], &x);
        skips_add(out, &x);
    }
    far_of(n, &x);
    skips_add(out, &x);
}

/* Write d's SKIPPED record when its counts changed; under n->mu. */
static int skips_sync(fsc_native_t *n, ndev_t *d)
{
    if (d->rec == NULL)
        return 0;
    fsc_trace_skips_t s;
    skips_of(n, d, &s);
    if (s.total == d->sk_written.total && s.nshown == d->sk_written.nshown &&
        memcmp(s.by_kind, d->sk_written.by_kind, sizeof s.by_kind) == 0)
        return 0;
    d->sk_written = s;
    return fsc_recorder_write_skips(d->rec, &s);
}

/* One entry, replayed through the block model. */
static void apply(fsc_native_t *n, ndev_t *d, const fsc_native_entry_t *e)
{
    fsc__pmodel_t *m = &d->m;
    uint64_t ns = entry_ns(n, e->time);
    uint64_t t = ns > d->origin_ns ? ns - d->origin_ns : 0;
    if (t < d->last_ns)
        t = d->last_ns; /* events of a trace never go back in time */
    d->last_ns = t;
    m->time_ns = t;
    m->tag = e->tag;
    int rc = 0;
    int pre = precheck(e);
    if (pre >= 0) {
        snprintf(d->merr.msg, sizeof d->merr.msg, "%s", fsc_trace_skip_kind_text((uint32_t)pre));
        n->entries++;
        contradiction(n, d, e, (uint32_t)pre);
        d->nread++;
        return;
    }
    switch (e->action) {
    case FSC_NATIVE_ALLOC: rc = fsc__pm_alloc(m, e->addr, e->size, e->stream, e->tag); break;
    case FSC_NATIVE_FREE_REQUESTED: rc = fsc__pm_free_requested(m, e->addr, e->tag); break;
    case FSC_NATIVE_FREE_COMPLETED: rc = fsc__pm_free_completed(m, e->addr, e->tag); break;
    case FSC_NATIVE_SEGMENT_ALLOC:
        m->new_pool_id = e->pool_id;
        rc = fsc__pm_segment_alloc(m, e->addr, e->size, e->stream,
                                   e->size == 2 * FSC_MiB ? FSC_POOL_SMALL : FSC_POOL_LARGE);
        break;
    case FSC_NATIVE_SEGMENT_FREE: rc = fsc__pm_segment_free(m, e->addr, e->size); break;
    case FSC_NATIVE_SEGMENT_MAP: {
        uint64_t base = e->addr;
        fsc__pseg_t *s = fsc__pm_expandable_base(m, e->addr, &base) ? fsc__pm_segment(m, base)
                                                                    : NULL;
        /* PyTorch maps 2 MiB pages for the small pool, 20 MiB ones for the
         * large: a new segment's first mapping tells which */
        fsc_pool_t pool = s != NULL ? (fsc_pool_t)s->pool
                          : e->size % (20 * FSC_MiB) == 0 ? FSC_POOL_LARGE
                                                           : FSC_POOL_SMALL;
        m->new_pool_id = e->pool_id;
        rc = fsc__pm_map(m, base, e->addr, e->size, e->stream, pool);
        break;
    }
    case FSC_NATIVE_SEGMENT_UNMAP: rc = fsc__pm_unmap(m, e->addr, e->size); break;
    case FSC_NATIVE_OOM:
        rc = fsc__pm_oom(m, e->size, e->stream, e->addr, d->capacity, d->total, e->tag);
        if (rc == 0)
            rc = skips_sync(n, d); /* the verdict reads the trace as it is now */
        if (rc == 0)
            rc = fsc_recorder_flush(d->rec);
        break;
    case FSC_NATIVE_SNAPSHOT: rc = marker(d, "snapshot", e->tag); break;
    case FSC_NATIVE_USER_DEFINED: rc = marker(d, "user_defined", e->tag); break;
    default:
        snprintf(d->merr.msg, sizeof d->merr.msg, "unknown action %u", e->action);
        rc = FSC_ESTATE;
        break;
    }
    n->entries++;
    if (rc == FSC_ESTATE)
        contradiction(n, d, e,
                      e->action > FSC_NATIVE_USER_DEFINED ? (uint32_t)FSC_TRACE_SKIP_UNKNOWN_ACTION
                                                          : refused_kind(e));
    else if (rc != 0 && n->err.code == 0)
        fsc_err_set(&n->err, rc, "%s: %s", d->path, fsc_recorder_last_error(d->rec));
    d->nread++;
}

static void spare_push(ndev_t *d, nblock_t *b)
{
    nblock_t *top = __atomic_load_n(&d->spare, __ATOMIC_RELAXED);
    do
        b->next = top;
    while (!__atomic_compare_exchange_n(&d->spare, &top, b, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

static nblock_t *spare_pop(ndev_t *d)
{
    nblock_t *top = __atomic_load_n(&d->spare, __ATOMIC_ACQUIRE);
    while (top != NULL && !__atomic_compare_exchange_n(&d->spare, &top, top->next, 1,
                                                       __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
        ;
    return top;
}

/* The entries the producer has published; under n->mu. Blocks it has
 * filled and left are read whenever the thread runs; the one it is filling
 * only when `all` (a flush, or the thread's timer), so that the two cores
 * rarely touch the same lines. */
static int begin_locked(fsc_native_t *n, ndev_t *d, const fsc_native_device_t *dv,
                        fsc_err_t *err);

/* Entries published and not read yet. */
static int has_entries(ndev_t *d)
{
    return d->rd < __atomic_load_n(&d->head->count, __ATOMIC_ACQUIRE) ||
           __atomic_load_n(&d->head->next, __ATOMIC_ACQUIRE) != NULL;
}

static void drain(fsc_native_t *n, ndev_t *d, int all, int final)
{
    int discard = 0;
    if (!__atomic_load_n(&d->begun, __ATOMIC_ACQUIRE)) {
        if (!has_entries(d))
            return;
        /* a declared device: its first entry begins it */
        fsc_err_t e = {0, ""};
        if (!__atomic_load_n(&d->keep, __ATOMIC_ACQUIRE) || begin_locked(n, d, &d->late, &e) != 0) {
            if (e.code != 0 && n->err.code == 0)
                n->err = e;
            __atomic_store_n(&d->keep, 0, __ATOMIC_RELEASE);
            discard = 1; /* counted as lost, in the home device's trace */
            all = 1;
        }
    }
    for (;;) {
        nblock_t *b = d->head;
        nblock_t *nx = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE);
        if (nx == NULL && !all)
            return;
        /* with next published, the count is final */
        uint32_t c = __atomic_load_n(&b->count, __ATOMIC_ACQUIRE);
        for (; d->rd < c; d->rd++) {
            const fsc_native_entry_t *e = &b->e[d->rd];
            if (discard) {
                __atomic_add_fetch(&d->lost_notbegun, 1, __ATOMIC_RELAXED);
                __atomic_add_fetch(&n->dropped, 1, __ATOMIC_RELAXED);
                continue;
            }
            if (!(e->flags & FSC_NATIVE_F_STACK)) {
                apply(n, d, e);
                continue;
            }
            /* its stack: the next one handed back; until it comes, wait
             * (at close, the thread's tag alone) */
            fsc_native_entry_t x = *e;
            if (d->stk_head < d->stk_len)
                x.tag = join_stack(d, e->tag, d->stk[d->stk_head++]);
            else if (!final)
                return;
            else
                n->unnamed++;
            apply(n, d, &x);
        }
        if (nx == NULL)
            return;
        d->head = nx;
        d->rd = 0;
        b->next = NULL;
        if (d->cool_tail != NULL)
            d->cool_tail->next = b;
        else
            d->cool_head = b;
        d->cool_tail = b;
        if (++d->cool_len > FSC__COOL_BLOCKS) {
            nblock_t *old = d->cool_head;
            d->cool_head = old->next;
            d->cool_len--;
            spare_push(d, old);
        }
    }
}

static void drain_all(fsc_native_t *n, int all, int final)
{
    for (int i = 0; i < n->ndev; i++)
        drain(n, &n->dev[i], all, final);
    for (int i = 0; i < n->ndev; i++) {
        ndev_t *d = &n->dev[i];
        int rc = skips_sync(n, d);
        if (rc != 0 && n->err.code == 0)
            fsc_err_set(&n->err, rc, "%s: %s", d->path, fsc_recorder_last_error(d->rec));
    }
}

static void *thread_main(void *arg)
{
    fsc_native_t *n = arg;
    fsc__thread_name("fsc-native");
    uint32_t ms = n->o.flush_interval_ms ? n->o.flush_interval_ms : 20;
    pthread_mutex_lock(&n->mu);
    /* The block being filled is read at most every FSC__PARTIAL_MS: while
     * entries keep coming, the blocks left full are enough. */
    uint64_t last_all = 0;
    while (!n->stop) {
        uint64_t now = now_unix_ns();
        int all = now - last_all >= (uint64_t)FSC__PARTIAL_MS * 1000000u;
        if (all)
            last_all = now;
        drain_all(n, all, 0);
        if (n->stop)
            break;
        if (!n->wake) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)ms * 1000000u;
            ts.tv_sec += (time_t)(ns / 1000000000u);
            ts.tv_nsec = (long)(ns % 1000000000u);
            pthread_cond_timedwait(&n->cv, &n->mu, &ts);
        }
        n->wake = 0;
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

/* ---- the hot path ------------------------------------------------------------ */

static void describe(fsc_trace_skip_t *k, uint32_t kind, const fsc_native_entry_t *e,
                     uint64_t index)
{
    k->kind = kind;
    k->action = e->action;
    k->device = e->device;
    k->index = index;
    k->addr = e->addr;
    k->size = e->size;
}

/* An entry push could not keep (the device's producer only). */
__attribute__((noinline)) static void lost(fsc_native_t *n, ndev_t *d, const fsc_native_entry_t *e,
                                           uint32_t kind, uint64_t index)
{
    __atomic_add_fetch(&n->dropped, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(kind == FSC_TRACE_SKIP_NO_MEMORY ? &d->lost_nomem : &d->lost_notbegun, 1,
                       __ATOMIC_RELAXED);
    uint32_t k = d->nlost_shown;
    if (k < FSC_TRACE_SKIP_SHOWN) {
        describe(&d->lost_shown[k], kind, e, index);
        __atomic_store_n(&d->nlost_shown, k + 1, __ATOMIC_RELEASE);
    }
}

/* An entry of a device out of range (any thread). */
__attribute__((noinline)) static void lost_far(fsc_native_t *n, const fsc_native_entry_t *e)
{
    __atomic_add_fetch(&n->dropped, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&n->far_lost, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&n->far_claimed, __ATOMIC_RELAXED) >= FSC_TRACE_SKIP_SHOWN)
        return;
    uint32_t k = __atomic_fetch_add(&n->far_claimed, 1, __ATOMIC_RELAXED);
    if (k < FSC_TRACE_SKIP_SHOWN) {
        describe(&n->far_shown[k], FSC_TRACE_SKIP_NOT_BEGUN, e, UINT64_MAX);
        __atomic_store_n(&n->far_ready[k], 1, __ATOMIC_RELEASE);
    }
}

int fsc_native_push(fsc_native_t *n, const fsc_native_entry_t *e)
{
    if (e->device >= n->ndev) {
        lost_far(n, e);
        return 0;
    }
    ndev_t *d = &n->dev[e->device];
    uint64_t index = d->pushed++;
    if (!(__atomic_load_n(&d->begun, __ATOMIC_ACQUIRE) ||
          __atomic_load_n(&d->keep, __ATOMIC_ACQUIRE)) ||
        __atomic_load_n(&n->closed, __ATOMIC_RELAXED)) {
        lost(n, d, e, FSC_TRACE_SKIP_NOT_BEGUN, index);
        return 0;
    }
    nblock_t *b = d->tail;
    uint32_t i = d->wpos;
    if (i == FSC__NB_ENTRIES) {
        nblock_t *nb = spare_pop(d);
        if (nb == NULL && (nb = malloc(sizeof *nb)) == NULL) {
            lost(n, d, e, FSC_TRACE_SKIP_NO_MEMORY, index);
            return 0;
        }
        nb->next = NULL;
        nb->count = 0;
        __atomic_store_n(&b->next, nb, __ATOMIC_RELEASE);
        d->tail = b = nb;
        i = 0;
    }
    b->e[i] = *e;
    d->wpos = i + 1;
    __atomic_store_n(&b->count, i + 1, __ATOMIC_RELEASE);
    if (e->action == FSC_NATIVE_OOM) {
        /* the trace gets the OOM at once (the thread may be asleep) */
        __atomic_store_n(&n->wake, 1, __ATOMIC_RELAXED);
        pthread_cond_signal(&n->cv);
    }
    return 1;
}

/* ---- stacks -------------------------------------------------------------------- */

uint32_t fsc_native_stack_node(const fsc_native_frame_t *frames, size_t nframes)
{
    char name[FSC_FRAME_NAME_MAX];
    uint32_t node = 0;
    for (size_t i = nframes; i-- > 0;) { /* outermost first */
        const fsc_native_frame_t *f = &frames[i];
        size_t len = fsc_frame_name(name, sizeof name, f->file, f->file_len, f->line,
                                    f->function, f->function_len);
        uint32_t id = fsc__tag_intern(node, name, len);
        if (id == 0)
            break;
        node = id;
    }
    return node;
}

int fsc_native_stacks(fsc_native_t *n, int device, const uint32_t *nodes, size_t count)
{
    if (n == NULL || device < 0 || device >= n->ndev || (count > 0 && nodes == NULL))
        return FSC_EINVAL;
    ndev_t *d = &n->dev[device];
    pthread_mutex_lock(&n->mu);
    int rc = 0;
    if (d->stk_head == d->stk_len)
        d->stk_head = d->stk_len = 0;
    if (d->stk_len + count > d->stk_cap && d->stk_head > 0) { /* keep the waiting ones only */
        memmove(d->stk, d->stk + d->stk_head, (d->stk_len - d->stk_head) * sizeof *d->stk);
        d->stk_len -= d->stk_head;
        d->stk_head = 0;
    }
    if (d->stk_len + count > d->stk_cap) {
        size_t cap = d->stk_cap ? d->stk_cap : 1024;
        while (cap < d->stk_len + count)
            cap *= 2;
        uint32_t *v = realloc(d->stk, cap * sizeof *v);
        if (v == NULL)
            rc = FSC_ENOMEM;
        else {
            d->stk = v;
            d->stk_cap = cap;
        }
    }
    if (rc == 0 && count > 0) {
        memcpy(d->stk + d->stk_len, nodes, count * sizeof *nodes);
        d->stk_len += count;
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

/* ---- open, begin, flush, close -------------------------------------------------- */

/* Zeroed memory on a cache line's boundary, for the structs whose fields
 * are laid out by cache line (free() releases it). */
static void *calloc_lines(size_t n, size_t size)
{
    void *p = NULL;
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    if (posix_memalign(&p, 64, n * size != 0 ? n * size : 64) != 0)
        return NULL;
    memset(p, 0, n * size);
    return p;
}

int fsc_native_open(const fsc_native_opts_t *opts, fsc_native_t **out, fsc_err_t *err)
{
    if (out == NULL || opts == NULL || opts->path == NULL || opts->path[0] == '\0')
        return fsc_err_set(err, FSC_EINVAL, "native recorder: no trace path");
    if (opts->devices < 1 || opts->devices > FSC__NATIVE_MAX_DEVICES)
        return fsc_err_set(err, FSC_EINVAL, "native recorder: %d devices (1 to %d)",
                           opts->devices, FSC__NATIVE_MAX_DEVICES);
    *out = NULL;
    fsc_native_t *n = calloc_lines(1, sizeof *n);
    if (n == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "native recorder: out of memory");
    n->o = *opts;
    const char *idle = getenv("FRAGSCOPE_NATIVE_INTERVAL_MS");
    if (idle != NULL && atoi(idle) > 0)
        n->o.flush_interval_ms = (uint32_t)atoi(idle);
    n->path_tmpl = strdup(opts->path);
    n->producer = strdup(opts->producer ? opts->producer : "fragscope native");
    n->ndev = opts->devices;
    n->dev = calloc_lines((size_t)n->ndev, sizeof *n->dev);
    int rc = n->path_tmpl && n->producer && n->dev ? 0 : FSC_ENOMEM;
    for (int i = 0; rc == 0 && i < n->ndev; i++) {
        nblock_t *b = malloc(sizeof *b);
        if (b == NULL) {
            rc = FSC_ENOMEM;
            break;
        }
        b->next = NULL;
        b->count = 0;
        n->dev[i].head = n->dev[i].tail = b;
        n->dev[i].n = n;
    }
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    if (rc == 0 && pthread_create(&n->thread, NULL, thread_main, n) != 0)
        rc = fsc_err_set(err, FSC_ENOMEM, "native recorder: cannot start its thread");
    else if (rc == 0)
        n->has_thread = 1;
    if (rc != 0) {
        if (rc == FSC_ENOMEM && err != NULL && err->code == 0)
            fsc_err_set(err, FSC_ENOMEM, "native recorder: out of memory");
        fsc_native_destroy(n);
        return rc;
    }
    *out = n;
    return 0;
}

/* Device d's trace path: the template for the first device, ".devD"
 * inserted for any other. */
static int device_path(fsc_native_t *n, int device, char *out, size_t cap, fsc_err_t *err)
{
    char base[4096];
    int rc = fsc_trace_path_expand(n->path_tmpl, (int)getpid(), fsc_recorder_env_rank(), 0,
                                   base, sizeof base);
    if (rc != 0)
        return fsc_err_set(err, rc, "native recorder: trace path too long: %s", n->path_tmpl);
    if (!n->any_begun) {
        snprintf(out, cap, "%s", base);
        return 0;
    }
    size_t l = strlen(base);
    static const char ext[] = ".fstrace";
    int w;
    if (l > sizeof ext - 1 && strcmp(base + l - (sizeof ext - 1), ext) == 0)
        w = snprintf(out, cap, "%.*s.dev%d%s", (int)(l - (sizeof ext - 1)), base, device, ext);
    else
        w = snprintf(out, cap, "%s.dev%d", base, device);
    return w < 0 || (size_t)w >= cap
               ? fsc_err_set(err, FSC_EINVAL, "native recorder: trace path too long: %s", base)
               : 0;
}

static int cmp_seg(const void *a, const void *b)
{
    const fsc_native_segment_t *x = *(const fsc_native_segment_t *const *)a;
    const fsc_native_segment_t *y = *(const fsc_native_segment_t *const *)b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The expandable segment a mapped range of the start belongs to: the lowest
 * range of the same stream, pool and size class that the ranges in between
 * join without a gap of another segment's. PyTorch's snapshot gives mapped
 * ranges, not the address space they belong to. */
static uint64_t start_base(const fsc_native_segment_t *const *v, size_t n, size_t k)
{
    uint64_t base = v[k]->addr;
    for (size_t j = k; j-- > 0;) {
        const fsc_native_segment_t *s = v[j];
        if (!s->expandable || s->stream != v[k]->stream || s->pool_id != v[k]->pool_id ||
            s->large != v[k]->large)
            break;
        base = s->addr;
    }
    (void)n;
    return base;
}

/* The state the device is in, as the first events (docs/native.md). */
static int emit_start(ndev_t *d, const fsc_native_device_t *dv)
{
    size_t ns = dv->nsegments;
    if (ns == 0)
        return 0;
    const fsc_native_segment_t **v = malloc(ns * sizeof *v);
    if (v == NULL)
        return FSC_ENOMEM;
    for (size_t i = 0; i < ns; i++)
        v[i] = &dv->segments[i];
    qsort(v, ns, sizeof *v, cmp_seg);
    fsc__pmodel_t *m = &d->m;
    int rc = 0;
    for (size_t i = 0; i < ns && rc == 0; i++) {
        const fsc_native_segment_t *s = v[i];
        fsc_pool_t pool = s->large ? FSC_POOL_LARGE : FSC_POOL_SMALL;
        uint64_t base = s->expandable ? start_base(v, ns, i) : s->addr;
        m->new_pool_id = s->pool_id;
        rc = s->expandable ? fsc__pm_map(m, base, s->addr, s->size, s->stream, pool)
                           : fsc__pm_segment_alloc(m, s->addr, s->size, s->stream, pool);
        fsc__pseg_t *seg = rc == 0 ? fsc__pm_segment(m, base) : NULL;
        uint64_t at = s->addr;
        for (size_t k = 0; rc == 0 && k < s->nblocks; k++) {
            const fsc_native_block_t *b = &s->blocks[k];
            uint64_t a = b->addr ? b->addr : at;
            at = a + b->size;
            if (!b->allocated && !b->pending)
                continue;
            rc = fsc__pm_place(m, seg, a, b->size, b->requested ? b->requested : b->size,
                               s->stream, b->tag);
            if (rc == 0 && b->pending)
                rc = fsc__pm_free_requested(m, a, b->tag);
        }
    }
    free(v);
    if (rc == 0)
        rc = marker(d, FSC_TRACE_HISTORY_MARKER, 0);
    return rc;
}

/* Open device d's trace and model; under n->mu, d not begun. On failure
 * nothing of d is left open (and nothing else was touched). */
static int begin_locked(fsc_native_t *n, ndev_t *d, const fsc_native_device_t *dv,
                        fsc_err_t *err)
{
    int rc = 0;
    const char *config = dv->config ? dv->config : "";
    fsc_err_t perr = {0, ""};
    if (fsc_alloc_config_parse(config, &d->cfg, &perr) != 0)
        rc = fsc_err_set(err, FSC_ECONFIG, "native recorder: the allocator settings \"%s\": %s",
                         config, fsc_err_msg(&perr));
    if (rc == 0)
        rc = device_path(n, dv->device, d->path, sizeof d->path, err);
    if (rc == 0) {
        char backend[192];
        snprintf(backend, sizeof backend, "cuda:%d%s%s", dv->device, dv->name ? " " : "",
                 dv->name ? dv->name : "");
        d->origin_ns = now_unix_ns();
        d->capacity = dv->capacity ? dv->capacity : dv->total;
        d->total = dv->total;
        fsc_trace_header_t h;
        memset(&h, 0, sizeof h);
        h.producer = n->producer;
        h.config = config;
        h.backend = backend;
        h.capacity = d->capacity;
        h.device_total = dv->total;
        h.clock_origin_ns = d->origin_ns;
        h.rank = -1;
        h.flags = (dv->nsegments > 0 ? FSC_TRACE_F_RECONSTRUCTED : 0u) |
                  (d->capacity == 0 ? FSC_TRACE_F_CAPACITY_UNKNOWN : 0u);
        fsc_recorder_opts_t ro = FSC_RECORDER_OPTS_DEFAULT;
        ro.ring_events = n->o.ring_events;
        ro.install_signal_handlers = 1;
        rc = fsc_recorder_open(d->path, &h, &ro, &d->rec, err);
    }
    if (rc == 0) {
        fsc__pm_init(&d->m, &d->cfg, on_event, d, &d->merr);
        rc = emit_start(d, dv);
        if (rc != 0)
            rc = fsc_err_set(err, rc, "%s: the state device %d is in: %s", d->path, dv->device,
                             d->merr.msg[0] ? d->merr.msg : fsc_recorder_last_error(d->rec));
    }
    if (rc == 0 && dv->total != 0 && dv->free != UINT64_MAX) {
        fsc_event_t ev;
        memset(&ev, 0, sizeof ev);
        ev.type = FSC_EV_DEVICE_MEMORY;
        ev.oom.device_free = dv->free;
        ev.oom.device_total = dv->total;
        rc = on_event(d, &ev);
    }
    if (rc == 0) {
        n->any_begun = 1;
        __atomic_store_n(&d->begun, 1, __ATOMIC_RELEASE);
    } else if (d->rec != NULL) {
        /* only the trace this call opened: d had none before it */
        fsc_recorder_close(d->rec);
        d->rec = NULL;
        fsc__pm_free(&d->m);
    }
    return rc;
}

int fsc_native_begin_device(fsc_native_t *n, const fsc_native_device_t *dv, fsc_err_t *err)
{
    if (n == NULL || dv == NULL || dv->device < 0 || dv->device >= n->ndev)
        return fsc_err_set(err, FSC_EINVAL, "native recorder: no such device %d",
                           dv ? dv->device : -1);
    ndev_t *d = &n->dev[dv->device];
    pthread_mutex_lock(&n->mu);
    int rc;
    /* A refused call leaves the device as it was: its live trace goes on. */
    if (__atomic_load_n(&d->begun, __ATOMIC_ACQUIRE))
        rc = fsc_err_set(err, FSC_ESTATE, "native recorder: device %d has begun already",
                         dv->device);
    else if (n->closed)
        rc = fsc_err_set(err, FSC_ESTATE, "native recorder: closed");
    else
        rc = begin_locked(n, d, dv, err);
    pthread_mutex_unlock(&n->mu);
    return rc;
}

int fsc_native_declare_device(fsc_native_t *n, const fsc_native_device_t *dv, fsc_err_t *err)
{
    if (n == NULL || dv == NULL || dv->device < 0 || dv->device >= n->ndev)
        return fsc_err_set(err, FSC_EINVAL, "native recorder: no such device %d",
                           dv ? dv->device : -1);
    if (dv->nsegments != 0)
        return fsc_err_set(err, FSC_EINVAL,
                           "native recorder: device %d is declared with segments (a declared "
                           "device begins empty)", dv->device);
    ndev_t *d = &n->dev[dv->device];
    pthread_mutex_lock(&n->mu);
    int rc = 0;
    fsc_alloc_config_t cfg;
    fsc_err_t perr = {0, ""};
    if (__atomic_load_n(&d->begun, __ATOMIC_ACQUIRE) || __atomic_load_n(&d->keep, __ATOMIC_ACQUIRE))
        rc = fsc_err_set(err, FSC_ESTATE, "native recorder: device %d has begun or been "
                                          "declared already", dv->device);
    else if (n->closed)
        rc = fsc_err_set(err, FSC_ESTATE, "native recorder: closed");
    else if (fsc_alloc_config_parse(dv->config ? dv->config : "", &cfg, &perr) != 0)
        rc = fsc_err_set(err, FSC_ECONFIG, "native recorder: the allocator settings \"%s\": %s",
                         dv->config, fsc_err_msg(&perr));
    if (rc == 0) {
        free(d->late_name);
        free(d->late_config);
        d->late_name = dv->name ? strdup(dv->name) : NULL;
        d->late_config = strdup(dv->config ? dv->config : "");
        if ((dv->name != NULL && d->late_name == NULL) || d->late_config == NULL)
            rc = fsc_err_set(err, FSC_ENOMEM, "native recorder: out of memory");
    }
    if (rc == 0) {
        d->late = *dv;
        d->late.name = d->late_name;
        d->late.config = d->late_config;
        d->late.free = UINT64_MAX; /* not known when it begins: no sample */
        d->late.segments = NULL;
        __atomic_store_n(&d->keep, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

int fsc_native_flush(fsc_native_t *n)
{
    if (n == NULL)
        return FSC_EINVAL;
    pthread_mutex_lock(&n->mu);
    drain_all(n, 1, 0);
    int rc = n->err.code;
    for (int i = 0; i < n->ndev; i++) {
        ndev_t *d = &n->dev[i];
        if (d->rec != NULL) {
            int r = fsc_recorder_flush(d->rec);
            if (rc == 0)
                rc = r;
        }
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

const char *fsc_native_trace_path(const fsc_native_t *n, int device)
{
    if (n == NULL || device < 0 || device >= n->ndev ||
        !__atomic_load_n(&n->dev[device].begun, __ATOMIC_ACQUIRE))
        return NULL;
    return n->dev[device].path;
}

void fsc_native_get_stats(fsc_native_t *n, fsc_native_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (n == NULL)
        return;
    pthread_mutex_lock(&n->mu);
    out->entries = n->entries;
    out->dropped = __atomic_load_n(&n->dropped, __ATOMIC_RELAXED);
    out->contradicted = n->contradicted;
    out->events = n->events;
    out->unnamed_stacks = n->unnamed;
    snprintf(out->message, sizeof out->message, "%s", n->message);
    fsc_trace_skips_t x;
    for (int i = 0; i < n->ndev; i++) {
        skips_add(&out->skipped, &n->dev[i].sk);
        lost_of(&n->dev[i], &x);
        skips_add(&out->skipped, &x);
    }
    far_of(n, &x);
    skips_add(&out->skipped, &x);
    pthread_mutex_unlock(&n->mu);
}

int fsc_native_close(fsc_native_t *n)
{
    if (n == NULL)
        return 0;
    pthread_mutex_lock(&n->mu);
    if (n->closed) {
        pthread_mutex_unlock(&n->mu);
        return n->err.code;
    }
    __atomic_store_n(&n->closed, 1, __ATOMIC_RELAXED);
    n->stop = 1;
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    if (n->has_thread)
        pthread_join(n->thread, NULL);
    n->has_thread = 0;
    pthread_mutex_lock(&n->mu);
    drain_all(n, 1, 1);
    int rc = n->err.code;
    for (int i = 0; i < n->ndev; i++) {
        ndev_t *d = &n->dev[i];
        if (d->rec != NULL) {
            int r = fsc_recorder_close(d->rec);
            if (rc == 0)
                rc = r;
            d->rec = NULL;
            fsc__pm_free(&d->m);
        }
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

void fsc_native_destroy(fsc_native_t *n)
{
    if (n == NULL)
        return;
    fsc_native_close(n);
    for (int i = 0; n->dev != NULL && i < n->ndev; i++) {
        nblock_t *b = n->dev[i].head, *nx;
        for (; b != NULL; b = nx) {
            nx = b->next;
            free(b);
        }
        for (b = n->dev[i].spare; b != NULL; b = nx) {
            nx = b->next;
            free(b);
        }
        for (b = n->dev[i].cool_head; b != NULL; b = nx) {
            nx = b->next;
            free(b);
        }
        free(n->dev[i].stk);
        free(n->dev[i].join);
        free(n->dev[i].late_name);
        free(n->dev[i].late_config);
    }
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
    free(n->dev);
    free(n->path_tmpl);
    free(n->producer);
    free(n);
}
