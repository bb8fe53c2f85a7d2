/*
 * whatif_ops.c — the coding of the request stream's operations and the
 * cursor a replay reads them with.
 *
 * An operation is coded as a byte (kind, flags, whether a pool follows),
 * the distance in recorded events from the one before, then its fields as
 * LEB128 varints: sizes as they are or as the index of a recent size,
 * alloc ids as the distance back from the newest, recorded addresses as
 * the zigzag difference from the last one of that size (or of any size),
 * streams as their index among the stream's distinct ones (none for the
 * first, nor an address equal to its base: a header bit says so). Only
 * what a replay reads is kept: a free's call site is not, nor the id of a
 * free that completes at once, nor the recorded segment of a request when
 * no pools are inferred (a .fstrace names its pools). A request takes about 8 bytes and a free 3,
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

#include "whatif_cursor.h"

/* Room for the fixed fields of one op: a byte and at most 9 varints. */
#define OP_MAX 96
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

/* Codes op into the store's open block. */
static int encode(fsc_request_stream_t *rs, const fsc__wop_t *op)
{
    size_t text = op->kind == FSC__WOP_MARKER ? op->text_len : 0;
    uint8_t *start = fsc__wstore_room(&rs->store, OP_MAX + text);
    if (start == NULL)
        return FSC_ENOMEM;
    fsc__wcodec_t *st = &rs->enc;
    uint8_t *p = start;
    uint8_t h = (uint8_t)(op->kind | (op->flags & FSC__WOP_CODED_FLAGS) << 3);
    uint8_t *hp = p++;
    p = put_varint(p, op->event - st->event);
    st->event = op->event;
    switch (op->kind) {
    case FSC__WOP_ALLOC: {
        h = (uint8_t)(op->kind | (op->flags & FSC__WOP_F_RECORDED_OOM) << 3);
        uint64_t si = 0;
        if (stream_index(rs, op->stream, &si) != 0)
            return FSC_EINVAL;
        int oom = (op->flags & FSC__WOP_F_RECORDED_OOM) != 0;
        int k = oom ? -1 : recent_find(st, op->arg);
        if (k >= 0) {
            h |= FSC__WH_RECENT;
            p = put_varint(p, (uint64_t)k);
        } else {
            p = put_varint(p, op->arg);
        }
        if (si != 0)
            p = put_varint(p, si);
        else
            h |= FSC__WH_STREAM0;
        p = put_varint(p, op->tag);
        if (op->pool != 0) {
            h |= FSC__WH_POOL;
            p = put_varint(p, op->pool);
        }
        if (rs->infer_pools)
            p = put_varint(p, (uint32_t)(op->seg + 1));
        if (!oom) {
            p = put_varint(p, op->slot);
            uint64_t base = k >= 0 ? st->raddr[k] : st->addr;
            if (op->addr != base)
                p = put_varint(p, zigzag(op->addr - base));
            else
                h |= FSC__WH_SAME_ADDR;
            st->addr = op->addr;
            fsc__wrecent_note(st, k, op->arg, op->addr);
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

static int flush_tail(fsc_request_stream_t *rs)
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
    int rc = flush_tail(rs);
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
    c->rs = rs;
    c->p = c->end = NULL;
    c->left = 0;
    c->tail_done = 0;
    memset(&c->st, 0, sizeof c->st);
    c->st.allocs = rs->nseed_blocks; /* the starting state's blocks come first */
    c->index = c->k_fb = c->k_pool_only = 0;
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

int fsc__wcur_refill(fsc__wcur_t *c, const fsc__wop_t **out)
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
            /* the last op, not coded yet */
            c->tail_done = 1;
            if (!rs->has_tail)
                return 0;
            c->op = rs->tail;
            if (c->op.kind == FSC__WOP_ALLOC)
                c->op.id = c->st.allocs++;
            fsc__wresolve(c, &c->op, c->index++);
            *out = &c->op;
            return 1;
        }
        c->end = c->p + n;
        c->left = nops;
    }
    c->left--;
    int rc = fsc__wcur_decode(c, &c->op);
    *out = &c->op;
    return rc == 0 ? 1 : rc;
}
