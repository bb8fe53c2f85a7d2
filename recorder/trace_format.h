/*
 * trace_format.h — the constants and small codecs of the .fstrace format,
 * shared by the writer, the reader and the format tests. Internal to
 * recorder/ (not API); docs/trace-format.md is the specification these
 * numbers implement, and any change here must change that document and the
 * golden file under tests/data.
 */
#ifndef FSC_RECORDER_TRACE_FORMAT_H
#define FSC_RECORDER_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/recorder.h"

/* Format version (independent of the software version). A reader refuses a
 * newer major; a newer minor only adds length-prefixed record types, header
 * fields after the known ones, columns, and skippable frames of unknown
 * magic. 2.0 stores chunk contents by column; 1.0 (records one after the
 * other, addr against the previous addr, segment against addr) is still
 * read. */
#define FSC__TRACE_MAJOR 2u
#define FSC__TRACE_MINOR 4u

/* zstd skippable frames: magic (LE u32) in 0x184D2A50..0x184D2A5F, then the
 * payload size (LE u32), then the payload. */
#define FSC__ZSTD_MAGIC 0xFD2FB528u
#define FSC__SKIP_MIN 0x184D2A50u
#define FSC__SKIP_MAX 0x184D2A5Fu
#define FSC__SKIP_HEADER 0x184D2A5Fu  /* file header, payload starts "FSCTRACE" */
#define FSC__SKIP_CHUNK 0x184D2A5Eu   /* chunk descriptor, precedes each data frame */
#define FSC__SKIP_END 0x184D2A5Du     /* end record, last frame of a clean file */

#define FSC__TRACE_MAGIC "FSCTRACE"
#define FSC__TRACE_MAGIC_LEN 8

#define FSC__CHUNK_DESC_LEN 24 /* u64 first, u32 events, u32 csize, u32 usize, u32 crc */
#define FSC__END_LEN 28        /* u64 events, u64 chunks, u64 dropped, u32 crc */

/* Bounds a reader enforces before it allocates anything sized by the file. */
#define FSC__MAX_HEADER_BYTES (1u << 20)
#define FSC__MAX_CHUNK_BYTES (64u << 20)   /* compressed or content size */
#define FSC__MAX_STRING_BYTES (1u << 16)   /* interned strings, marker text */
#define FSC__MAX_HOST_BYTES 255u           /* the header's host name (2.3) */
#define FSC__MAX_WRITER_CHUNK (16u << 20)  /* largest chunk_bytes a writer accepts */

/* Record types (first byte of every record in a chunk's content).
 * 0x01..0x1F event records (type byte = fsc_event_type_t)
 * 0x20..0x3F definitions and other fixed-layout records
 * 0x40..0x7F length-prefixed records: type, varint length, payload; a reader
 *            skips the ones it does not know (how newer minors extend)
 * 0x00, 0x80..0xFF never valid */
enum {
    FSC__REC_STRING = 0x20, /* varint len, bytes: next string id */
    FSC__REC_TAG = 0x21,    /* varint parent node, varint string id: next node id */
    FSC__REC_EXT_MIN = 0x40,
    /* 2.1: a DEVICE_MEMORY event (not counted among a chunk's events, so
     * that 2.0 readers, which skip it, agree on the counts): varint length,
     * then varint time_ns (absolute: it leaves the events' deltas alone),
     * varint device_free + 1 (0 = unknown), varint device_total */
    FSC__REC_DEVICE_MEMORY = 0x40,
    /* 2.2: the private pool (CUDA graph pool, MemPool) of the next event
     * record: varint length, then varint pool id (PyTorch's (a, b) as
     * a << 32 | b). Written before every event whose pool id is not 0; a
     * 2.0 or 2.1 reader skips it and reads the event as the default pool's. */
    FSC__REC_POOL = 0x41,
    /* 2.4: records the producer left out (fsc_trace_skips_t, cumulative; the
     * last one read holds them all): varint length, then varint total,
     * varint K, K varint counts by kind, varint D, D descriptions each a
     * varint field count F and F varints (kind, action, device, index,
     * addr, size). Not an event; older readers skip it. */
    FSC__REC_SKIPPED = 0x42,
    FSC__REC_EXT_MAX = 0x7F
};

/* Presence bits of an event record's field mask (varint after the type). A
 * field whose bit is clear is 0. Order is the order of the fields in the
 * record; the low bits are the fields most events carry. */
enum {
    FSC__F_ADDR = 1u << 0,      /* zigzag(addr - segment), or zigzag(addr -
                                   previous addr) when segment is 0 */
    FSC__F_SIZE = 1u << 1,      /* varint */
    FSC__F_REQUESTED = 1u << 2, /* zigzag(size - requested) */
    FSC__F_SEGMENT = 1u << 3,   /* zigzag(segment - previous segment) */
    FSC__F_TAG = 1u << 4,       /* varint node id */
    FSC__F_POOL = 1u << 5,      /* varint */
    FSC__F_THREAD = 1u << 6,    /* varint */
    FSC__F_STREAM = 1u << 7,    /* zigzag(stream - previous stream) */
    FSC__F_OTHER = 1u << 8,     /* zigzag(other - addr) */
    FSC__F_TEXT = 1u << 9,      /* varint len, bytes */
    FSC__F_OOM = 1u << 10,      /* 6 varints: allocated, reserved, capacity,
                                   device_free + 1 (0 = UINT64_MAX),
                                   device_total, segment_size */
    FSC__F_RESERVED0 = 1u << 11, /* varint */
    FSC__F_ALL = (1u << 12) - 1
};

/* Chunk content is stored by column: a directory (varint column count,
 * then each column's byte length) and the columns one after the other.
 * Writers encode records row by row (one record = type byte, mask, fields,
 * contiguous) and transpose each chunk before compressing it; readers read
 * each field from its column. Records keep their order through column
 * RECORDS, which holds the type byte of every record (and the mask of every
 * event). Event field with mask bit b lives in column FSC__COL_FIELD0 + b. */
enum {
    FSC__COL_RECORDS = 0, /* type byte, + varint mask for events */
    FSC__COL_TIME = 1,    /* varint per event */
    FSC__COL_FIELD0 = 2,  /* columns 2..13: one per mask bit, in bit order */
    FSC__COL_DEFS = 14,   /* STRING and TAG payloads, extension records' length + payload */
    FSC__NCOLS = 15       /* columns of version 1.0; a newer minor may append more */
};

/* Largest encoding of one event record, text excluded. */
#define FSC__MAX_EVENT_REC (1 + 2 + 10 * 16 + 3 + FSC__MAX_POOL_REC)
/* A POOL record (2.2): type, length, a varint pool id. */
#define FSC__MAX_POOL_REC (1 + 1 + 10)

/* Largest SKIPPED record: type, length, the payload. */
#define FSC__MAX_SKIPPED_REC (1 + 2 + 10 + 1 + 10 * FSC_TRACE_SKIP_KINDS + 1 + \
                              FSC_TRACE_SKIP_SHOWN * (1 + 6 * 10))

/* The payload of a SKIPPED record at p (room: FSC__MAX_SKIPPED_REC - 3);
 * returns its end. */
uint8_t *fsc__skips_encode(uint8_t *p, const fsc_trace_skips_t *s);
/* Decode a SKIPPED payload of n bytes into *s; -1 when malformed. */
int fsc__skips_decode(const uint8_t *p, size_t n, fsc_trace_skips_t *s);

/* ---- little-endian fixed-width ---------------------------------------- */

static inline void fsc__put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void fsc__put_le64(uint8_t *p, uint64_t v)
{
    fsc__put_le32(p, (uint32_t)v);
    fsc__put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t fsc__get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t fsc__get_le64(const uint8_t *p)
{
    return (uint64_t)fsc__get_le32(p) | (uint64_t)fsc__get_le32(p + 4) << 32;
}

/* ---- varints (LEB128, at most 10 bytes) and zigzag --------------------- */

static inline uint8_t *fsc__put_varint(uint8_t *p, uint64_t v)
{
    if (v < 0x80) { /* most fields: small deltas, ids, flags */
        *p = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Decode one varint from [*pp, end). Returns 0 and advances *pp, or -1 on a
 * varint that runs past end or past 10 bytes / 64 bits. */
static inline int fsc__get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* Differences are taken modulo 2^64, so every pair of values round-trips. */
static inline uint64_t fsc__zigzag(uint64_t a, uint64_t b)
{
    int64_t d = (int64_t)(a - b);
    return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

static inline uint64_t fsc__unzigzag(uint64_t base, uint64_t z)
{
    uint64_t d = (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
    return base + d;
}

/* ---- chunk transposition (trace_columns.c) ------------------------------ */

/* Rewrite a chunk's row-encoded records (as fsc__encode_* write them) into
 * the column layout at out (room: n + FSC__COLS_OVERHEAD). Returns the
 * length written. The rows must be well formed (they come from the
 * writer's own encoder). */
#define FSC__COLS_OVERHEAD (1 + FSC__NCOLS * 10)
size_t fsc__chunk_transpose(const uint8_t *rows, size_t n, uint8_t *out);

/* ---- checksums and header codec (trace_header.c) ----------------------- */

uint32_t fsc__crc32(const uint8_t *p, size_t n);

/* Encode the header frame (skippable frame header included) into a malloc'd
 * buffer. Returns 0 or FSC_ENOMEM / FSC_EINVAL (a string over the limit). */
int fsc__header_encode(const fsc_trace_header_t *h, uint8_t **out, size_t *len);

/* Parsed header: the public struct plus the storage of its strings. */
typedef struct fsc__header_store {
    fsc_trace_header_t h;
    char *producer, *config, *backend, *host;
} fsc__header_store_t;

/* A host name the header may carry: 1..FSC__MAX_HOST_BYTES bytes, none a
 * control character (it is printed by info and in report labels). */
int fsc__host_ok(const char *s, size_t n);

/* Parse a header frame's payload (after the 8-byte skippable frame header).
 * Returns 0, FSC_EFORMAT (not a trace / damaged header; *why says which) or
 * FSC_EVERSION (newer major, version in h). Strings are malloc'd into st. */
int fsc__header_parse(const uint8_t *p, size_t n, fsc__header_store_t *st, const char **why);
void fsc__header_store_free(fsc__header_store_t *st);

#endif /* FSC_RECORDER_TRACE_FORMAT_H */
