/*
 * whatif_ops.c — the coding of the request stream's operations and the
 * cursor a replay reads them with.
 *
 * An operation is coded as a byte (kind, flags, whether a pool follows),
 * the distance in recorded events from the one before, then its fields as
 * LEB128 varints: sizes as they are or as the index of a recent size,
 * alloc ids as the distance back from the newest, recorded addresses as
 * the zigzag difference from the last one of that size (or of any size),
 * streams as their index among the stream's distinct ones. Only what a
 * replay reads is kept: a free's call site is not, nor the id of a free
 * that completes at once. A request takes about 8 bytes and a free 3,
 * instead of a 32-byte struct. No varint package is on Debian for C, and
 * these few lines are the whole of it.
 *
 * The stream may still change its last operation (a FREE_COMPLETED that
 * follows at once undoes the FREE's delay; a release burst learns what
 * follows it), so the last one is held as a struct (rs->tail) and coded
 * only when the next arrives; a cursor hands it out last.
 *
 * What is decided only once the whole stream is read is applied by the
 * cursor, not written back into the blocks: the pool of requests whose
 * segment whatif_pools.c assigned to an inferred pool (rs->seg_pool, per
 * recorded segment), the use_on_oom fallbacks replayed in the default
 * pool (rs->fb_ids, by alloc id) and the release bursts that only freed
 * private pools (rs->pool_only, by op index).
 */
#include <stdlib.h>
#include <string.h>

#include "whatif_internal.h"

/* Room for the fixed fields of one op: a byte and at most 9 varints. */
#define OP_MAX 96
/* Header byte: kind in bits 0-2, flags (FSC__WOP_F_*, but never POOL_ONLY,
 * which the cursor applies) in bits 3-5, then: */
#define H_RECENT 0x40 /* ALLOC: the size is one of the recent ones */
#define H_POOL 0x80   /* ALLOC: a pool index follows */
#define FLAG_BITS (FSC__WOP_F_DELAYED | FSC__WOP_F_RECORDED_OOM | FSC__WOP_F_EXPLAINED)

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint64_t zigzag(uint64_t v)
{
    return (v << 1) ^ (uint64_t)(-(int64_t)(v >> 63));
}

static uint64_t unzigzag(uint64_t v)
{
    return (v >> 1) ^ (uint64_t)(-(int64_t)(v & 1));
}

static int stream_index(const fsc_request_stream_t *rs, uint64_t stream, uint64_t *out)
{
    for (size_t i = 0; i < rs->nstreams; i++)
        if (rs->streams[i] == stream) {
            *out = i;
            return 0;
        }
    return FSC_EINVAL;
}

/* A training loop asks for the same sizes over and over, and a caching
 * allocator hands a size the block it handed that size before: a request
 * of one of the last FSC__WRECENT distinct sizes is coded as its index,
 * its address as the difference from that size's last address (often 0). */
static int recent_find(const fsc__wcodec_t *st, uint64_t size)
{
    for (int k = 0; k < FSC__WRECENT; k++)
        if (st->rsize[k] == size && st->rused[k])
            return k;
    return -1;
}

static void recent_note(fsc__wcodec_t *st, int k, uint64_t size, uint64_t addr)
{
    if (k < 0) {
        k = st->rnext;
        st->rnext = (uint8_t)((st->rnext + 1) % FSC__WRECENT);
        st->rsize[k] = size;
        st->rused[k] = 1;
    }
    st->raddr[k] = addr;
}

/* Codes op into the store's open block. */
static int encode(fsc_request_stream_t *rs, const fsc__wop_t *op)
{
    size_t text = op->kind == FSC__WOP_MARKER ? op->text_len : 0;
    uint8_t *start = fsc__wstore_room(&rs->store, OP_MAX + text);
    if (start == NULL)
        return FSC_ENOMEM;
    fsc__wcodec_t *st = &rs->enc;
    uint8_t *p = start;
    uint8_t h = (uint8_t)(op->kind | (op->flags & FLAG_BITS) << 3);
    uint8_t *hp = p++;
    p = put_varint(p, op->event - st->event);
    st->event = op->event;
    switch (op->kind) {
    case FSC__WOP_ALLOC: {
        uint64_t si = 0;
        if (stream_index(rs, op->stream, &si) != 0)
            return FSC_EINVAL;
        int oom = (op->flags & FSC__WOP_F_RECORDED_OOM) != 0;
        int k = oom ? -1 : recent_find(st, op->arg);
        if (k >= 0) {
            h |= H_RECENT;
            p = put_varint(p, (uint64_t)k);
        } else {
            p = put_varint(p, op->arg);
        }
        p = put_varint(p, si);
        p = put_varint(p, op->tag);
        if (op->pool != 0) {
            h |= H_POOL;
            p = put_varint(p, op->pool);
        }
        p = put_varint(p, (uint32_t)(op->seg + 1));
        if (!oom) {
            p = put_varint(p, op->slot);
            uint64_t base = k >= 0 ? st->raddr[k] : st->addr;
            p = put_varint(p, zigzag(op->addr - base));
            st->addr = op->addr;
            recent_note(st, k, op->arg, op->addr);
        }
        st->allocs++;
        break;
    }
    case FSC__WOP_FREE:
        /* the id names the pseudo stream of a delayed free only */
        if (op->flags & FSC__WOP_F_DELAYED)
            p = put_varint(p, st->allocs - 1 - op->arg);
        p = put_varint(p, op->slot);
        break;
    case FSC__WOP_COMPLETE:
        p = put_varint(p, st->allocs - 1 - op->arg);
        p = put_varint(p, op->slot);
        break;
    case FSC__WOP_MARKER:
        p = put_varint(p, text);
        if (text > 0)
            memcpy(p, op->text, text);
        p += text;
        break;
    case FSC__WOP_RELEASE:
        p = put_varint(p, op->arg);
        p = put_varint(p, op->stream);
        break;
    default:
        break; /* EMPTY: nothing more */
    }
    *hp = h;
    return fsc__wstore_commit(&rs->store, (size_t)(p - start));
}

int fsc__wops_flush(fsc_request_stream_t *rs)
{
    if (!rs->has_tail)
        return 0;
    int rc = encode(rs, &rs->tail);
    if (rc == 0)
        rs->has_tail = 0;
    return rc;
}

int fsc__wops_push(fsc_request_stream_t *rs, uint8_t kind, uint64_t arg, fsc__wop_t **out)
{
    int rc = fsc__wops_flush(rs);
    if (rc != 0)
        return rc;
    fsc__wop_t *op = &rs->tail;
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->arg = arg;
    op->event = rs->info.events;
    op->seg = UINT32_MAX;
    op->text = rs->tail_text;
    rs->has_tail = 1;
    rs->nops++;
    *out = op;
    return 0;
}

fsc__wop_t *fsc__wops_last(fsc_request_stream_t *rs)
{
    return rs->has_tail ? &rs->tail : NULL;
}

/* ---- cursor --------------------------------------------------------------------- */

void fsc__wcur_open(fsc__wcur_t *c, const fsc_request_stream_t *rs)
{
    memset(c, 0, sizeof *c);
    c->rs = rs;
    fsc__wreader_open(&c->rd, &rs->store);
}

void fsc__wcur_close(fsc__wcur_t *c)
{
    fsc__wreader_close(&c->rd);
}

const char *fsc__wcur_error(const fsc__wcur_t *c)
{
    return c->rd.msg[0] ? c->rd.msg : "what-if: the request stream is damaged";
}

/* The varint at c->p; most take one byte. Sets c->bad past the end. */
static inline uint64_t get_varint(fsc__wcur_t *c)
{
    const uint8_t *p = c->p;
    if (p < c->end && *p < 0x80) {
        c->p = p + 1;
        return *p;
    }
    uint64_t v = 0;
    unsigned shift = 0;
    while (p < c->end && shift < 64) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            c->p = p;
            return v;
        }
        shift += 7;
    }
    c->bad = 1;
    c->p = c->end;
    return 0;
}

static int decode(fsc__wcur_t *c, fsc__wop_t *op)
{
    const fsc_request_stream_t *rs = c->rs;
    fsc__wcodec_t *st = &c->st;
    if (c->p >= c->end)
        return FSC_EFORMAT;
    uint8_t h = *c->p++;
    op->kind = h & 7;
    op->flags = (h >> 3) & FLAG_BITS;
    op->event = st->event += get_varint(c);
    switch (op->kind) {
    case FSC__WOP_ALLOC: {
        int oom = (op->flags & FSC__WOP_F_RECORDED_OOM) != 0;
        int k = -1;
        if (h & H_RECENT) {
            uint64_t v = get_varint(c);
            if (v >= FSC__WRECENT || !st->rused[v])
                return FSC_EFORMAT;
            k = (int)v;
            op->arg = st->rsize[k];
        } else {
            op->arg = get_varint(c);
        }
        uint64_t si = get_varint(c);
        op->tag = (uint32_t)get_varint(c);
        op->pool = (h & H_POOL) ? (uint16_t)get_varint(c) : 0;
        op->seg = (uint32_t)get_varint(c) - 1;
        op->slot = 0;
        op->addr = 0;
        if (!oom) {
            op->slot = get_varint(c);
            uint64_t base = k >= 0 ? st->raddr[k] : st->addr;
            op->addr = base + unzigzag(get_varint(c));
            st->addr = op->addr;
            recent_note(st, k, op->arg, op->addr);
            if (op->slot >= rs->nslots)
                return FSC_EFORMAT;
        }
        if (si >= rs->nstreams)
            return FSC_EFORMAT;
        op->stream = rs->streams[si];
        op->id = st->allocs++;
        break;
    }
    case FSC__WOP_FREE:
        op->arg = (op->flags & FSC__WOP_F_DELAYED) ? st->allocs - 1 - get_varint(c) : 0;
        op->slot = get_varint(c);
        if (op->slot >= rs->nslots)
            return FSC_EFORMAT;
        break;
    case FSC__WOP_COMPLETE:
        op->arg = st->allocs - 1 - get_varint(c);
        op->slot = get_varint(c);
        if (op->slot >= rs->nslots)
            return FSC_EFORMAT;
        break;
    case FSC__WOP_MARKER: {
        uint64_t n = get_varint(c);
        if (n > (uint64_t)(c->end - c->p))
            return FSC_EFORMAT;
        op->text = (const char *)c->p;
        op->text_len = (size_t)n;
        c->p += n;
        break;
    }
    case FSC__WOP_RELEASE:
        op->arg = get_varint(c);
        op->stream = get_varint(c);
        break;
    case FSC__WOP_EMPTY:
        break;
    default:
        return FSC_EFORMAT;
    }
    return c->bad ? FSC_EFORMAT : 0;
}

/* What the stream decided after the op was coded (see the top comment). */
static void resolve(fsc__wcur_t *c, fsc__wop_t *op)
{
    const fsc_request_stream_t *rs = c->rs;
    size_t index = c->index++;
    if (op->kind == FSC__WOP_ALLOC) {
        if (!(op->flags & FSC__WOP_F_RECORDED_OOM) && op->seg < rs->nseg_pool &&
            rs->seg_pool[op->seg] != 0)
            op->pool = rs->seg_pool[op->seg];
        while (c->k_fb < rs->nfb_ids && rs->fb_ids[c->k_fb] < op->id)
            c->k_fb++;
        if (c->k_fb < rs->nfb_ids && rs->fb_ids[c->k_fb] == op->id)
            op->pool = 0;
    } else if (op->kind == FSC__WOP_RELEASE) {
        while (c->k_pool_only < rs->npool_only && rs->pool_only[c->k_pool_only] < index)
            c->k_pool_only++;
        if (c->k_pool_only < rs->npool_only && rs->pool_only[c->k_pool_only] == index)
            op->flags |= FSC__WOP_F_POOL_ONLY;
    }
}

int fsc__wcur_next(fsc__wcur_t *c, const fsc__wop_t **out)
{
    const fsc_request_stream_t *rs = c->rs;
    while (c->left == 0) {
        if (c->tail_done)
            return 0;
        size_t n = 0;
        uint32_t nops = 0;
        int rc = fsc__wreader_next(&c->rd, &c->p, &n, &nops);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            c->tail_done = 1;
            if (!rs->has_tail)
                return 0;
            c->op = rs->tail;
            if (c->op.kind == FSC__WOP_ALLOC)
                c->op.id = c->st.allocs++;
            resolve(c, &c->op);
            *out = &c->op;
            return 1;
        }
        c->end = c->p + n;
        c->left = nops;
    }
    if (decode(c, &c->op) != 0)
        return FSC_EFORMAT;
    c->left--;
    resolve(c, &c->op);
    *out = &c->op;
    return 1;
}
