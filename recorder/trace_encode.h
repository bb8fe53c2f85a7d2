/*
 * trace_encode.h — how one record is laid out in a chunk's content: event
 * records (type byte, field mask, fields) and the definitions of interned
 * strings and tag nodes. The reader's decoder (trace_reader.c) is the exact
 * inverse; docs/trace-format.md specifies both. Inline because the event
 * encoder is the recorder's hot path. Internal to recorder/.
 *
 * Only non-zero fields are written, and the ones that repeat or move in
 * small steps are written as differences (time, segment and stream against
 * the previous event of the chunk, addr against its segment, requested
 * against size, the merged block against addr), so that zstd sees short,
 * repetitive columns.
 */
#ifndef FSC_RECORDER_TRACE_ENCODE_H
#define FSC_RECORDER_TRACE_ENCODE_H

#include <string.h>

#include "trace_format.h"

typedef struct fsc__enc {
    uint64_t prev_time, prev_addr, prev_segment, prev_stream; /* reset at each chunk */
} fsc__enc_t;

/* Encode one event record at p (room: FSC__MAX_EVENT_REC + text_len) with
 * the tag, time and thread given apart from ev. Returns the end. */
__attribute__((always_inline)) static inline uint8_t *fsc__encode_event(fsc__enc_t *st, uint8_t *p, const fsc_event_t *ev, uint32_t tag,
                           uint64_t time_ns, uint32_t thread)
{
    if (__builtin_expect(ev->type == FSC_EV_DEVICE_MEMORY, 0)) {
        uint8_t body[32], *q = body;
        q = fsc__put_varint(q, time_ns);
        q = fsc__put_varint(q, ev->oom.device_free + 1); /* UINT64_MAX (unknown) -> 0 */
        q = fsc__put_varint(q, ev->oom.device_total);
        *p++ = FSC__REC_DEVICE_MEMORY;
        p = fsc__put_varint(p, (uint64_t)(q - body));
        memcpy(p, body, (size_t)(q - body));
        (void)thread;
        (void)tag;
        return p + (q - body);
    }
    if (__builtin_expect(ev->pool_id != 0, 0)) {
        /* 2.2: the event's private pool, in a record of its own that older
         * readers skip */
        uint8_t body[10], *q = fsc__put_varint(body, ev->pool_id);
        *p++ = FSC__REC_POOL;
        *p++ = (uint8_t)(q - body);
        memcpy(p, body, (size_t)(q - body));
        p += q - body;
    }
    /* Branch-free presence bits: this runs for every event. */
    const fsc_oom_state_t *o = &ev->oom;
    uint32_t mask = (uint32_t)(ev->addr != 0) * FSC__F_ADDR |
                    (uint32_t)(ev->size != 0) * FSC__F_SIZE |
                    (uint32_t)(ev->requested != 0) * FSC__F_REQUESTED |
                    (uint32_t)(ev->segment != 0) * FSC__F_SEGMENT |
                    (uint32_t)(tag != 0) * FSC__F_TAG |
                    (uint32_t)(ev->pool != 0) * FSC__F_POOL |
                    (uint32_t)(thread != 0) * FSC__F_THREAD |
                    (uint32_t)(ev->stream != 0) * FSC__F_STREAM |
                    (uint32_t)(ev->other != 0) * FSC__F_OTHER |
                    (uint32_t)(ev->text_len != 0) * FSC__F_TEXT |
                    (uint32_t)(ev->type == FSC_EV_OOM ||
                               (o->allocated | o->reserved | o->capacity | o->device_free |
                                o->device_total | o->segment_size) != 0) *
                        FSC__F_OOM |
                    (uint32_t)(ev->reserved0 != 0) * FSC__F_RESERVED0;

    *p++ = ev->type;
    p = fsc__put_varint(p, mask);
    p = fsc__put_varint(p, fsc__zigzag(time_ns, st->prev_time));
    st->prev_time = time_ns;
    /* Inside a segment, a block is its offset from the segment base: the
     * offsets repeat from step to step as the cache hands out the same
     * blocks, while the distance from the previous event's block does not. */
    if (mask & FSC__F_ADDR) {
        p = fsc__put_varint(p, fsc__zigzag(ev->addr, ev->segment ? ev->segment : st->prev_addr));
        st->prev_addr = ev->addr;
    }
    if (mask & FSC__F_SIZE)
        p = fsc__put_varint(p, ev->size);
    if (mask & FSC__F_REQUESTED)
        p = fsc__put_varint(p, fsc__zigzag(ev->size, ev->requested));
    if (mask & FSC__F_SEGMENT) {
        p = fsc__put_varint(p, fsc__zigzag(ev->segment, st->prev_segment));
        st->prev_segment = ev->segment;
    }
    if (mask & FSC__F_TAG)
        p = fsc__put_varint(p, tag);
    if (mask & FSC__F_POOL)
        p = fsc__put_varint(p, ev->pool);
    if (mask & FSC__F_THREAD)
        p = fsc__put_varint(p, thread);
    if (mask & FSC__F_STREAM) {
        p = fsc__put_varint(p, fsc__zigzag(ev->stream, st->prev_stream));
        st->prev_stream = ev->stream;
    }
    if (mask & FSC__F_OTHER)
        p = fsc__put_varint(p, fsc__zigzag(ev->other, ev->addr));
    if (mask & FSC__F_TEXT) {
        p = fsc__put_varint(p, ev->text_len);
        memcpy(p, ev->text, ev->text_len);
        p += ev->text_len;
    }
    if (mask & FSC__F_OOM) {
        p = fsc__put_varint(p, ev->oom.allocated);
        p = fsc__put_varint(p, ev->oom.reserved);
        p = fsc__put_varint(p, ev->oom.capacity);
        p = fsc__put_varint(p, ev->oom.device_free + 1); /* UINT64_MAX (unknown) -> 0 */
        p = fsc__put_varint(p, ev->oom.device_total);
        p = fsc__put_varint(p, ev->oom.segment_size);
    }
    if (mask & FSC__F_RESERVED0)
        p = fsc__put_varint(p, ev->reserved0);
    return p;
}

static inline uint8_t *fsc__encode_string(uint8_t *p, const char *s, size_t len)
{
    *p++ = FSC__REC_STRING;
    p = fsc__put_varint(p, len);
    memcpy(p, s, len);
    return p + len;
}

static inline uint8_t *fsc__encode_tag(uint8_t *p, uint32_t parent, uint32_t sid)
{
    *p++ = FSC__REC_TAG;
    p = fsc__put_varint(p, parent);
    return fsc__put_varint(p, sid);
}

#endif /* FSC_RECORDER_TRACE_ENCODE_H */
