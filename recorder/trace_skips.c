/*
 * trace_skips.c — the SKIPPED record (format 2.4): how many records a
 * producer left out of a trace, by kind, and the first few of them. A
 * producer that converts another allocator's records (the native recorder)
 * writes it whenever its counts change, so that a trace never looks
 * complete when it is not; the reader keeps the last one it meets
 * (fsc_trace_integrity_t.skipped), and every report says what it holds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "trace_format.h"
#include "trace_writer.h"

static const char *const k_names[FSC_TRACE_SKIP_KINDS] = {
    "unknown_action", "free_unknown", "unmap_unmapped", "segment_unknown", "zero_size",
    "absurd_size", "contradicted", "no_memory", "not_begun"};
static const char *const k_texts[FSC_TRACE_SKIP_KINDS] = {
    "unknown action",
    "free of an unknown address",
    "unmap of an unmapped range",
    "segment free of an unknown segment",
    "size 0",
    "absurd size",
    "contradiction of the block model",
    "lost for want of memory",
    "lost before its device's recording began"};
/* PyTorch's TraceEntry::Action names (c10/cuda/CUDACachingAllocator.h) */
static const char *const k_actions[] = {"alloc", "free_requested", "free_completed",
                                        "segment_alloc", "segment_free", "segment_map",
                                        "segment_unmap", "snapshot", "oom", "user_defined"};

const char *fsc_trace_skip_kind_name(uint32_t kind)
{
    return kind < FSC_TRACE_SKIP_KINDS ? k_names[kind] : "other";
}

const char *fsc_trace_skip_kind_text(uint32_t kind)
{
    return kind < FSC_TRACE_SKIP_KINDS ? k_texts[kind] : "a kind this version does not know";
}

char *fsc_trace_skips_text(const fsc_trace_skips_t *s, char *buf, size_t cap)
{
    if (cap == 0)
        return buf;
    buf[0] = '\0';
    if (s == NULL || s->total == 0)
        return buf;
    size_t at = 0;
    int w = snprintf(buf, cap, "%" PRIu64 " recorded entr%s left out of the trace: ", s->total,
                     s->total == 1 ? "y" : "ies");
    at = w > 0 && (size_t)w < cap ? (size_t)w : cap - 1;
    uint64_t known = 0;
    const char *sep = "";
    for (uint32_t k = 0; k < FSC_TRACE_SKIP_KINDS; k++) {
        if (s->by_kind[k] == 0)
            continue;
        known += s->by_kind[k];
        w = snprintf(buf + at, cap - at, "%s%" PRIu64 " %s", sep, s->by_kind[k], k_texts[k]);
        at = w > 0 && (size_t)w < cap - at ? at + (size_t)w : cap - 1;
        sep = ", ";
    }
    if (known < s->total) {
        w = snprintf(buf + at, cap - at, "%s%" PRIu64 " of kinds this version does not know",
                     sep, s->total - known);
        at = w > 0 && (size_t)w < cap - at ? at + (size_t)w : cap - 1;
    }
    return buf;
}

char *fsc_trace_skip_describe(const fsc_trace_skip_t *k, char *buf, size_t cap)
{
    char act[32];
    if (k->action < sizeof k_actions / sizeof k_actions[0])
        snprintf(act, sizeof act, "%s", k_actions[k->action]);
    else
        snprintf(act, sizeof act, "action %" PRIu32, k->action);
    char idx[32] = "entry unknown";
    if (k->index != UINT64_MAX)
        snprintf(idx, sizeof idx, "entry %" PRIu64, k->index);
    snprintf(buf, cap, "%s at 0x%" PRIx64 ", %" PRIu64 " bytes (device %" PRIu32 ", %s): %s",
             act, k->addr, k->size, k->device, idx, fsc_trace_skip_kind_text(k->kind));
    return buf;
}

uint8_t *fsc__skips_encode(uint8_t *p, const fsc_trace_skips_t *s)
{
    p = fsc__put_varint(p, s->total);
    p = fsc__put_varint(p, FSC_TRACE_SKIP_KINDS);
    for (uint32_t k = 0; k < FSC_TRACE_SKIP_KINDS; k++)
        p = fsc__put_varint(p, s->by_kind[k]);
    uint32_t d = s->nshown < FSC_TRACE_SKIP_SHOWN ? s->nshown : FSC_TRACE_SKIP_SHOWN;
    p = fsc__put_varint(p, d);
    for (uint32_t i = 0; i < d; i++) {
        const fsc_trace_skip_t *k = &s->shown[i];
        p = fsc__put_varint(p, 6);
        p = fsc__put_varint(p, k->kind);
        p = fsc__put_varint(p, k->action);
        p = fsc__put_varint(p, k->device);
        p = fsc__put_varint(p, k->index);
        p = fsc__put_varint(p, k->addr);
        p = fsc__put_varint(p, k->size);
    }
    return p;
}

int fsc__skips_decode(const uint8_t *p, size_t n, fsc_trace_skips_t *s)
{
    const uint8_t *end = p + n;
    fsc_trace_skips_t t;
    memset(&t, 0, sizeof t);
    uint64_t nk, nd, v;
    if (fsc__get_varint(&p, end, &t.total) != 0 || fsc__get_varint(&p, end, &nk) != 0 ||
        nk > n)
        return -1;
    for (uint64_t k = 0; k < nk; k++) {
        if (fsc__get_varint(&p, end, &v) != 0)
            return -1;
        if (k < FSC_TRACE_SKIP_KINDS)
            t.by_kind[k] = v; /* a newer writer's kinds count in total only */
    }
    if (fsc__get_varint(&p, end, &nd) != 0 || nd > n)
        return -1;
    for (uint64_t i = 0; i < nd; i++) {
        uint64_t nf, f[6] = {0, 0, 0, 0, 0, 0};
        if (fsc__get_varint(&p, end, &nf) != 0 || nf > n)
            return -1;
        for (uint64_t j = 0; j < nf; j++) {
            if (fsc__get_varint(&p, end, &v) != 0)
                return -1;
            if (j < 6)
                f[j] = v;
        }
        if (i >= FSC_TRACE_SKIP_SHOWN)
            continue;
        fsc_trace_skip_t *k = &t.shown[t.nshown++];
        k->kind = f[0] > UINT32_MAX ? UINT32_MAX : (uint32_t)f[0];
        k->action = f[1] > UINT32_MAX ? UINT32_MAX : (uint32_t)f[1];
        k->device = f[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)f[2];
        k->index = f[3];
        k->addr = f[4];
        k->size = f[5];
    }
    *s = t; /* fields a newer minor appends after these are skipped */
    return 0;
}

int fsc_recorder_write_skips(fsc_recorder_t *r, const fsc_trace_skips_t *s)
{
    if (r == NULL || s == NULL)
        return FSC_EINVAL;
    uint8_t body[FSC__MAX_SKIPPED_REC];
    size_t len = (size_t)(fsc__skips_encode(body, s) - body);
    int queued = 0, rc = 0;
    fsc__spin_lock(&r->lock);
    if (r->finished)
        rc = FSC_ESTATE;
    if (rc == 0)
        rc = fsc__chunk_ensure(r, len + 3, &queued);
    if (rc == 0) {
        fsc__chunk_t *c = r->cur;
        uint8_t *p = c->data + c->len;
        *p++ = FSC__REC_SKIPPED;
        p = fsc__put_varint(p, len);
        memcpy(p, body, len);
        c->len = (size_t)(p + len - c->data);
        if (c->len >= r->chunk_bytes && fsc__chunk_rotate(r) > 0)
            queued = 1;
    }
    fsc__spin_unlock(&r->lock);
    if (queued && !r->has_thread)
        fsc__drain(r);
    if (rc == FSC_ESTATE)
        return fsc__recorder_record_error(r, FSC_ESTATE, "%s: recorder is closed", r->path);
    return rc;
}
