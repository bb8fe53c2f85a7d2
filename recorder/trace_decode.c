/*
 * trace_decode.c — the records inside a verified chunk: the column
 * directory, string and tag definitions, extension records (skipped), and
 * event records with their delta state. The exact inverse of the writer's
 * encoder plus transposition (trace_encode.h, trace_columns.c).
 *
 * A chunk's content has passed zstd's checksum, so anything malformed here
 * comes from a faulty or hostile writer: it is a format error that ends the
 * iteration, never a crash, an unbounded allocation or a loop.
 */
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"
#include "fsc/vec.h"

/* Column directory of a decompressed chunk. Extra columns (a newer minor's)
 * are ignored; every length must fit in the content. */
int fsc__decode_columns(fsc_trace_reader_t *r, size_t usize)
{
    const uint8_t *p = r->ubuf, *end = r->ubuf + usize;
    if (r->v1) {
        r->row = p;
        for (int i = 0; i < FSC__NCOLS; i++) {
            r->cp[i] = &r->row;
            r->ce[i] = end;
        }
        return 0;
    }
    uint64_t ncols, len;
    if (fsc__get_varint(&p, end, &ncols) != 0 || ncols < FSC__NCOLS || ncols > 256)
        return -1;
    uint64_t lens[256];
    uint64_t total = 0;
    for (uint64_t i = 0; i < ncols; i++) {
        if (fsc__get_varint(&p, end, &len) != 0 || len > usize)
            return -1;
        lens[i] = len;
        total += len;
    }
    if (total > (uint64_t)(end - p))
        return -1;
    for (int i = 0; i < FSC__NCOLS; i++) {
        r->col[i] = p;
        r->cp[i] = &r->col[i];
        r->ce[i] = p + lens[i];
        p += lens[i];
    }
    return 0;
}

int fsc__reader_bad(fsc_trace_reader_t *r, const char *what)
{
    /* The chunk verified but its records do not parse: count it as lost
     * (its events delivered so far stay delivered). */
    if (r->in_chunk) {
        r->integ.compressed_bytes = r->chunk_off;
        r->integ.bytes_lost = r->file_bytes - r->chunk_off;
        r->in_chunk = 0;
    }
    r->state = -1;
    return fsc_err_set(&r->err, FSC_EFORMAT, "%s: chunk %llu: %s", r->path,
                       (unsigned long long)r->integ.chunks, what);
}

/* Room for entry n + 1 of a definition table (ids count from 1), within
 * the format's limit. */
static int defs_room(fsc_trace_reader_t *r, void *arr, size_t *cap, uint32_t n, size_t elem,
                     const char *too_many)
{
    if ((size_t)n + 1 < *cap)
        return 0;
    if (*cap >= FSC__MAX_DEFS)
        return fsc__reader_bad(r, too_many);
    if (fsc__vec_reserve(arr, cap, (size_t)n + 2, elem) != 0)
        return fsc_err_set(&r->err, FSC_ENOMEM, "%s: out of memory", r->path);
    return 0;
}

static int def_string(fsc_trace_reader_t *r)
{
    uint64_t n;
    const uint8_t **p = r->cp[FSC__COL_DEFS], *end = r->ce[FSC__COL_DEFS];
    if (fsc__get_varint(p, end, &n) != 0 || n > FSC__MAX_STRING_BYTES ||
        n > (uint64_t)(end - *p))
        return fsc__reader_bad(r, "bad string definition");
    int rc = defs_room(r, &r->strs, &r->strs_cap, r->n_strs, sizeof *r->strs, "too many strings");
    if (rc != 0)
        return rc;
    if (r->str_bytes + n > FSC__MAX_STRING_TOTAL)
        return fsc__reader_bad(r, "interned strings exceed 256 MiB");
    r->str_bytes += n;
    char *s = malloc((size_t)n + 1);
    if (s == NULL)
        return fsc_err_set(&r->err, FSC_ENOMEM, "%s: out of memory", r->path);
    memcpy(s, *p, (size_t)n);
    s[n] = '\0';
    *p += n;
    r->n_strs++;
    r->strs[r->n_strs].s = s;
    r->strs[r->n_strs].len = (uint32_t)n;
    return 0;
}

static int def_tag(fsc_trace_reader_t *r)
{
    uint64_t parent, sid;
    const uint8_t **p = r->cp[FSC__COL_DEFS], *end = r->ce[FSC__COL_DEFS];
    if (fsc__get_varint(p, end, &parent) != 0 || fsc__get_varint(p, end, &sid) != 0 ||
        parent > r->n_nodes || sid == 0 ||
        sid > r->n_strs)
        return fsc__reader_bad(r, "bad tag definition");
    int rc = defs_room(r, &r->nodes, &r->nodes_cap, r->n_nodes, sizeof *r->nodes,
                       "too many tag nodes");
    if (rc != 0)
        return rc;
    r->n_nodes++;
    r->nodes[r->n_nodes].parent = (uint32_t)parent;
    r->nodes[r->n_nodes].sid = (uint32_t)sid;
    return 0;
}

/* Next varint of column col into v. */
#define GET(col, v)                                                          \
    do {                                                                     \
        if (fsc__get_varint(r->cp[col], r->ce[col], &(v)) != 0)             \
            return fsc__reader_bad(r, "truncated event record");             \
    } while (0)
#define FIELD(bit) (FSC__COL_FIELD0 + __builtin_ctz(bit))

static int decode_event(fsc_trace_reader_t *r, uint8_t type, fsc_event_t *ev)
{
    uint64_t mask, v;
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    GET(FSC__COL_RECORDS, mask);
    if (mask & ~(uint64_t)FSC__F_ALL)
        return fsc__reader_bad(r, "unknown event fields");
    GET(FSC__COL_TIME, v);
    ev->time_ns = r->prev_time = fsc__unzigzag(r->prev_time, v);
    if (r->v1) {
        /* 1.x: addr against the previous addr; segment (below) against addr */
        if (mask & FSC__F_ADDR) {
            GET(FIELD(FSC__F_ADDR), v);
            ev->addr = r->prev_addr = fsc__unzigzag(r->prev_addr, v);
        }
    } else {
        /* segment first: addr is coded against it */
        if (mask & FSC__F_SEGMENT) {
            GET(FIELD(FSC__F_SEGMENT), v);
            ev->segment = r->prev_segment = fsc__unzigzag(r->prev_segment, v);
        }
        if (mask & FSC__F_ADDR) {
            GET(FIELD(FSC__F_ADDR), v);
            ev->addr = r->prev_addr =
                fsc__unzigzag(ev->segment ? ev->segment : r->prev_addr, v);
        }
    }
    if (mask & FSC__F_SIZE)
        GET(FIELD(FSC__F_SIZE), ev->size);
    if (mask & FSC__F_REQUESTED) {
        GET(FIELD(FSC__F_REQUESTED), v);
        ev->requested = ev->size - fsc__unzigzag(0, v);
    }
    if (r->v1 && (mask & FSC__F_SEGMENT)) {
        GET(FIELD(FSC__F_SEGMENT), v);
        ev->segment = ev->addr - fsc__unzigzag(0, v);
    }

    if (mask & FSC__F_TAG) {
        GET(FIELD(FSC__F_TAG), v);
        if (v > r->n_nodes)
            return fsc__reader_bad(r, "event uses an undefined tag node");
        ev->tag = (uint32_t)v;
    }
    if (mask & FSC__F_POOL) {
        GET(FIELD(FSC__F_POOL), v);
        if (v > 255)
            return fsc__reader_bad(r, "bad pool");
        ev->pool = (uint8_t)v;
    }
    if (mask & FSC__F_THREAD) {
        GET(FIELD(FSC__F_THREAD), v);
        if (v > UINT32_MAX)
            return fsc__reader_bad(r, "bad thread number");
        ev->thread = (uint32_t)v;
    }
    if (mask & FSC__F_STREAM) {
        GET(FIELD(FSC__F_STREAM), v);
        ev->stream = r->prev_stream = fsc__unzigzag(r->prev_stream, v);
    }
    if (mask & FSC__F_OTHER) {
        GET(FIELD(FSC__F_OTHER), v);
        ev->other = fsc__unzigzag(ev->addr, v);
    }
    if (mask & FSC__F_TEXT) {
        GET(FIELD(FSC__F_TEXT), v);
        const uint8_t **tp = r->cp[FIELD(FSC__F_TEXT)];
        if (v > FSC__MAX_STRING_BYTES || v > (uint64_t)(r->ce[FIELD(FSC__F_TEXT)] - *tp))
            return fsc__reader_bad(r, "bad marker text");
        ev->text = (const char *)*tp;
        ev->text_len = (uint32_t)v;
        *tp += v;
    }
    if (mask & FSC__F_OOM) {
        GET(FIELD(FSC__F_OOM), ev->oom.allocated);
        GET(FIELD(FSC__F_OOM), ev->oom.reserved);
        GET(FIELD(FSC__F_OOM), ev->oom.capacity);
        GET(FIELD(FSC__F_OOM), v);
        ev->oom.device_free = v - 1;
        GET(FIELD(FSC__F_OOM), ev->oom.device_total);
        GET(FIELD(FSC__F_OOM), ev->oom.segment_size);
    }
    if (mask & FSC__F_RESERVED0) {
        GET(FIELD(FSC__F_RESERVED0), v);
        if (v > UINT16_MAX)
            return fsc__reader_bad(r, "bad reserved field");
        ev->reserved0 = (uint16_t)v;
    }
    return 0;
}

int fsc__decode_record(fsc_trace_reader_t *r, fsc_event_t *ev)
{
    uint8_t t = *(*r->cp[FSC__COL_RECORDS])++;
    int rc;
    if (t >= 1 && t < FSC_EV_DEVICE_MEMORY) { /* the types with event records */
        if ((rc = decode_event(r, t, ev)) != 0)
            return rc;
        ev->pool_id = r->next_pool_id; /* a POOL record before it (2.2) */
        r->next_pool_id = 0;
        r->chunk_seen++;
        r->integ.events++;
        return 1;
    }
    if (t == FSC__REC_STRING)
        return def_string(r);
    if (t == FSC__REC_TAG)
        return def_tag(r);
    if (t >= FSC__REC_EXT_MIN && t <= FSC__REC_EXT_MAX) {
        const uint8_t **p = r->cp[FSC__COL_DEFS], *end = r->ce[FSC__COL_DEFS];
        uint64_t n;
        if (fsc__get_varint(p, end, &n) != 0 || n > (uint64_t)(end - *p))
            return fsc__reader_bad(r, "bad extension record length");
        if (t == FSC__REC_DEVICE_MEMORY) {
            const uint8_t *q = *p, *qe = *p + n;
            uint64_t tm, fr, tot;
            if (fsc__get_varint(&q, qe, &tm) != 0 || fsc__get_varint(&q, qe, &fr) != 0 ||
                fsc__get_varint(&q, qe, &tot) != 0)
                return fsc__reader_bad(r, "bad device memory record");
            *p += n; /* fields a newer minor appends are skipped */
            memset(ev, 0, sizeof *ev);
            ev->type = FSC_EV_DEVICE_MEMORY;
            ev->time_ns = tm;
            ev->oom.device_free = fr - 1;
            ev->oom.device_total = tot;
            return 1; /* an event, not counted against the chunk's events */
        }
        if (t == FSC__REC_POOL) {
            const uint8_t *q = *p;
            if (fsc__get_varint(&q, *p + n, &r->next_pool_id) != 0 || r->next_pool_id == 0)
                return fsc__reader_bad(r, "bad pool record");
        }
        if (t == FSC__REC_SKIPPED && fsc__skips_decode(*p, (size_t)n, &r->integ.skipped) != 0)
            return fsc__reader_bad(r, "bad skipped-records record");
        *p += n; /* a record type of a newer minor version, or fields it appends */
        return 0;
    }
    return fsc__reader_bad(r, "unknown record type");
}
