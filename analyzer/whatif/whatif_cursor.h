/*
 * whatif_cursor.h — decoding the request stream's ops (whatif_ops.c codes
 * them), inline in the loops that read them: a replay's loop decodes an
 * op and at once dispatches on its kind, so that the processor predicts
 * the second branch on the kind from the first.
 */
#ifndef FSC_WHATIF_CURSOR_H
#define FSC_WHATIF_CURSOR_H

#include <string.h>

#include "whatif_internal.h"

/* Header byte: kind in bits 0-2, flags (FSC__WOP_F_*, but never POOL_ONLY,
 * which the cursor applies) in bits 3-5, then: */
#define FSC__WH_RECENT 0x40 /* ALLOC: the size is one of the recent ones */
#define FSC__WH_POOL 0x80   /* ALLOC: a pool index follows */
/* ALLOC uses the bits of the flags that are not its own (DELAYED, EXPLAINED): */
#define FSC__WH_STREAM0 (FSC__WOP_F_DELAYED << 3)     /* the first stream (no index) */
#define FSC__WH_SAME_ADDR (FSC__WOP_F_EXPLAINED << 3) /* the address of the base (below) */
#define FSC__WOP_CODED_FLAGS (FSC__WOP_F_DELAYED | FSC__WOP_F_RECORDED_OOM | FSC__WOP_F_EXPLAINED)

static inline uint64_t fsc__wunzigzag(uint64_t v)
{
    return (v >> 1) ^ (uint64_t)(-(int64_t)(v & 1));
}

static inline void fsc__wrecent_note(fsc__wcodec_t *st, int k, uint64_t size, uint64_t addr)
{
    if (k < 0) {
        k = st->rnext;
        st->rnext = (uint8_t)((st->rnext + 1) % FSC__WRECENT);
        st->rsize[k] = size;
        st->rused[k] = 1;
    }
    st->raddr[k] = addr;
}

/* The varint at p, most often one byte. Blocks are followed by
 * FSC__WSLACK readable bytes (whatif_store.c), so that the bytes of a
 * damaged varint are read without a bound check; the op's end is checked
 * against the block's once it is decoded. A varint never takes more than
 * 10 bytes: an 11th sets *bad. */
static inline uint64_t fsc__wgetv(const uint8_t **pp, int *bad)
{
    const uint8_t *p = *pp;
    uint64_t v = p[0];
    if (v < 0x80) {
        *pp = p + 1;
        return v;
    }
    v &= 0x7f;
    for (unsigned i = 1; i < 10; i++) {
        uint64_t b = p[i];
        v |= (b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *pp = p + i + 1;
            return v;
        }
    }
    *bad = 1;
    *pp = p + 10;
    return 0;
}

#define FSC__WGETV(out) ((out) = fsc__wgetv(&p, &bad))

/* What the stream decided after the op was coded (see the top comment). */
static inline void fsc__wresolve(fsc__wcur_t *c, fsc__wop_t *op, size_t index)
{
    const fsc_request_stream_t *rs = c->rs;
    if (op->kind == FSC__WOP_ALLOC) {
        if (op->seg < rs->nseg_pool && rs->seg_pool[op->seg] != 0 &&
            !(op->flags & FSC__WOP_F_RECORDED_OOM))
            op->pool = rs->seg_pool[op->seg];
        if (rs->nfb_ids > 0) {
            while (c->k_fb < rs->nfb_ids && rs->fb_ids[c->k_fb] < op->id)
                c->k_fb++;
            if (c->k_fb < rs->nfb_ids && rs->fb_ids[c->k_fb] == op->id)
                op->pool = 0;
        }
    } else if (op->kind == FSC__WOP_RELEASE && rs->npool_only > 0) {
        while (c->k_pool_only < rs->npool_only && rs->pool_only[c->k_pool_only] < index)
            c->k_pool_only++;
        if (c->k_pool_only < rs->npool_only && rs->pool_only[c->k_pool_only] == index)
            op->flags |= FSC__WOP_F_POOL_ONLY;
    }
}

/* Decodes the op at c->p into op. */
static inline int fsc__wcur_decode(fsc__wcur_t *c, fsc__wop_t *op)
{
    const fsc_request_stream_t *rs = c->rs;
    fsc__wcodec_t *st = &c->st;
    const uint8_t *p = c->p, *end = c->end;
    uint64_t event = st->event, allocs = st->allocs, addr = st->addr;
    uint64_t nslots = rs->nslots, nstreams = rs->nstreams;
    int bad = 0;
    if (p >= end)
        return FSC_EFORMAT;
    uint8_t h = *p++;
    uint64_t v;
    op->kind = h & 7;
    op->flags = (h >> 3) & FSC__WOP_CODED_FLAGS;
    FSC__WGETV(v);
    event += v;
    op->event = event;
    switch (op->kind) {
    case FSC__WOP_ALLOC: {
        int k = -1;
        if (h & FSC__WH_RECENT) {
            FSC__WGETV(v);
            if (v >= FSC__WRECENT || !st->rused[v])
                return FSC_EFORMAT;
            k = (int)v;
            op->arg = st->rsize[k];
        } else {
            FSC__WGETV(op->arg);
        }
        op->flags &= FSC__WOP_F_RECORDED_OOM;
        uint64_t si = 0;
        if (!(h & FSC__WH_STREAM0))
            FSC__WGETV(si);
        FSC__WGETV(v);
        op->tag = (uint32_t)v;
        op->pool = 0;
        if (h & FSC__WH_POOL) {
            FSC__WGETV(v);
            op->pool = (uint32_t)v;
        }
        op->seg = UINT32_MAX;
        if (rs->infer_pools) {
            FSC__WGETV(v);
            op->seg = (uint32_t)v - 1;
        }
        op->slot = 0;
        op->addr = 0;
        if (!(op->flags & FSC__WOP_F_RECORDED_OOM)) {
            FSC__WGETV(op->slot);
            v = 0;
            if (!(h & FSC__WH_SAME_ADDR))
                FSC__WGETV(v);
            addr = (k >= 0 ? st->raddr[k] : addr) + fsc__wunzigzag(v);
            op->addr = addr;
            fsc__wrecent_note(st, k, op->arg, addr);
            if (op->slot >= nslots)
                return FSC_EFORMAT;
        }
        if (si >= nstreams)
            return FSC_EFORMAT;
        op->stream = rs->streams[si];
        op->id = allocs++;
        break;
    }
    case FSC__WOP_FREE:
        op->arg = 0;
        if (op->flags & FSC__WOP_F_DELAYED) {
            FSC__WGETV(v);
            op->arg = allocs - 1 - v;
        }
        FSC__WGETV(op->slot);
        if (op->slot >= nslots)
            return FSC_EFORMAT;
        break;
    case FSC__WOP_COMPLETE:
        FSC__WGETV(v);
        op->arg = allocs - 1 - v;
        FSC__WGETV(op->slot);
        if (op->slot >= nslots)
            return FSC_EFORMAT;
        break;
    case FSC__WOP_MARKER:
        FSC__WGETV(v);
        if (v > (uint64_t)(end - p))
            return FSC_EFORMAT;
        op->text = (const char *)p;
        op->text_len = (size_t)v;
        p += v;
        break;
    case FSC__WOP_RELEASE:
        FSC__WGETV(op->arg);
        FSC__WGETV(op->stream);
        break;
    case FSC__WOP_EMPTY:
        break;
    default:
        return FSC_EFORMAT;
    }
    if (bad || p > end)
        return FSC_EFORMAT;
    st->event = event;
    st->allocs = allocs;
    st->addr = addr;
    c->p = p;
    fsc__wresolve(c, op, c->index++);
    return 0;
}

/* Loads the next block and decodes its first op, or hands out the last
 * op (whatif_ops.c). */
int fsc__wcur_refill(fsc__wcur_t *c, const fsc__wop_t **op);

/* 1 and *op (valid until the next call), 0 at the end, or a negative
 * FSC_E*: fsc__wcur_error says why. */
static inline int fsc__wcur_next(fsc__wcur_t *c, const fsc__wop_t **op)
{
    if (c->left > 0) {
        c->left--;
        int rc = fsc__wcur_decode(c, &c->op);
        *op = &c->op;
        return rc == 0 ? 1 : rc;
    }
    return fsc__wcur_refill(c, op);
}

#endif
