/*
 * trace_reader.c — streaming reader of .fstrace files.
 *
 * One chunk is held in memory at a time. Every size read from the file is
 * checked against a fixed bound and against the bytes the file really has
 * before anything is allocated, every frame is checked (CRC-32 of
 * descriptors, zstd's checksum of chunk contents) before its records are
 * believed, and every step moves forward in the file, so a hostile or
 * damaged file ends the iteration instead of exhausting memory or looping.
 *
 * The first frame that is not intact ends the events: everything before it
 * was delivered, and fsc_trace_get_integrity says how many bytes (and, from
 * the descriptors that survive after the damage, about how many events)
 * were lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "trace_format.h"

#define MAX_DEFS (1u << 22)          /* strings or nodes in one trace */
#define MAX_STRING_TOTAL (256u << 20) /* bytes of all interned strings */

typedef struct rstr {
    char *s;
    uint32_t len;
} rstr_t;

typedef struct rnode {
    uint32_t parent, sid;
} rnode_t;

struct fsc_trace_reader {
    int fd;
    char *path;
    uint64_t file_bytes, off;
    uint64_t chunk_off; /* where the current chunk's descriptor starts */
    fsc__header_store_t hs;
    fsc_err_t err;
    ZSTD_DCtx *dctx;
    uint8_t *cbuf, *ubuf;
    size_t ccap, ucap;
    const uint8_t *cp[FSC__NCOLS], *ce[FSC__NCOLS]; /* column cursors of the chunk */
    int in_chunk;
    uint32_t chunk_expected, chunk_seen;
    uint64_t prev_time, prev_addr, prev_segment, prev_stream;
    rstr_t *strs;
    uint32_t n_strs, strs_cap;
    uint64_t str_bytes;
    rnode_t *nodes;
    uint32_t n_nodes, nodes_cap;
    int state; /* 0 reading, 1 ended, -1 failed */
    fsc_trace_integrity_t integ;
};

static int read_at(fsc_trace_reader_t *r, uint64_t off, void *buf, size_t n)
{
    uint8_t *b = buf;
    while (n > 0) {
        ssize_t got = pread(r->fd, b, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return fsc_err_set(&r->err, FSC_EIO, "%s: read failed: %s", r->path, strerror(errno));
        if (got == 0)
            return FSC_ETRUNC;
        b += got;
        off += (uint64_t)got;
        n -= (size_t)got;
    }
    return 0;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    uint8_t *nb = realloc(*buf, need);
    if (nb == NULL)
        return -1;
    *buf = nb;
    *cap = need;
    return 0;
}

/* ---- open --------------------------------------------------------------- */

int fsc_trace_open(const char *path, fsc_trace_reader_t **out, fsc_err_t *err)
{
    if (path == NULL || out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "no trace path given");
    *out = NULL;
    fsc_trace_reader_t *r = calloc(1, sizeof *r);
    if (r == NULL || (r->path = strdup(path)) == NULL) {
        free(r);
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", path);
    }
    int rc;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        int e = errno;
        rc = fsc_err_set(err, e == ENOENT ? FSC_ENOENT : FSC_EIO, "%s: cannot open: %s", path,
                         strerror(e));
        goto fail;
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: not a fragscope trace (not a regular file)", path);
        goto fail;
    }
    r->file_bytes = (uint64_t)st.st_size;
    uint8_t fh[8];
    if (r->file_bytes < 8 || read_at(r, 0, fh, 8) != 0 ||
        fsc__get_le32(fh) != FSC__SKIP_HEADER || fsc__get_le32(fh + 4) > FSC__MAX_HEADER_BYTES ||
        fsc__get_le32(fh + 4) > r->file_bytes - 8) {
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: not a fragscope trace", path);
        goto fail;
    }
    size_t hn = fsc__get_le32(fh + 4);
    uint8_t *hp = malloc(hn ? hn : 1);
    if (hp == NULL) {
        rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    if (read_at(r, 8, hp, hn) != 0) {
        free(hp);
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: not a fragscope trace", path);
        goto fail;
    }
    const char *why = NULL;
    rc = fsc__header_parse(hp, hn, &r->hs, &why);
    free(hp);
    if (rc == FSC_EVERSION) {
        rc = fsc_err_set(err, FSC_EVERSION,
                         "%s: trace format version %u.%u is newer than this fragscope reads "
                         "(%u.x); upgrade fragscope",
                         path, r->hs.h.version_major, r->hs.h.version_minor, FSC__TRACE_MAJOR);
        goto fail;
    }
    if (rc != 0) {
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: %s", path, why);
        goto fail;
    }
    r->dctx = ZSTD_createDCtx();
    if (r->dctx == NULL) {
        rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    r->off = 8 + hn;
    r->integ.file_bytes = r->file_bytes;
    r->integ.compressed_bytes = r->off;
    *out = r;
    return 0;
fail:
    fsc_trace_close(r);
    return rc;
}

void fsc_trace_close(fsc_trace_reader_t *r)
{
    if (r == NULL)
        return;
    if (r->fd >= 0)
        close(r->fd);
    fsc__header_store_free(&r->hs);
    ZSTD_freeDCtx(r->dctx);
    free(r->cbuf);
    free(r->ubuf);
    for (uint32_t i = 1; i <= r->n_strs; i++)
        free(r->strs[i].s);
    free(r->strs);
    free(r->nodes);
    free(r->path);
    free(r);
}

const fsc_trace_header_t *fsc_trace_header(const fsc_trace_reader_t *r)
{
    return r == NULL ? NULL : &r->hs.h;
}

const char *fsc_trace_last_error(const fsc_trace_reader_t *r)
{
    return r == NULL ? "" : fsc_err_msg(&r->err);
}

int fsc_trace_get_integrity(const fsc_trace_reader_t *r, fsc_trace_integrity_t *out)
{
    if (r == NULL || out == NULL)
        return FSC_EINVAL;
    *out = r->integ;
    return 0;
}

/* ---- frames ------------------------------------------------------------- */

typedef struct desc {
    uint64_t first;
    uint32_t events, csize, usize;
    uint32_t payload; /* descriptor payload bytes (>= FSC__CHUNK_DESC_LEN) */
} desc_t;

/* Read and check a chunk descriptor frame whose header is fh at off. */
static int read_desc(fsc_trace_reader_t *r, uint64_t off, const uint8_t *fh, desc_t *d)
{
    uint32_t n = fsc__get_le32(fh + 4);
    uint8_t b[FSC__CHUNK_DESC_LEN];
    if (n < FSC__CHUNK_DESC_LEN || n > 4096 || read_at(r, off + 8, b, sizeof b) != 0 ||
        fsc__crc32(b, FSC__CHUNK_DESC_LEN - 4) != fsc__get_le32(b + FSC__CHUNK_DESC_LEN - 4))
        return -1;
    d->first = fsc__get_le64(b);
    d->events = fsc__get_le32(b + 8);
    d->csize = fsc__get_le32(b + 12);
    d->usize = fsc__get_le32(b + 16);
    d->payload = n;
    return 0;
}

static int read_end(fsc_trace_reader_t *r, uint64_t off, const uint8_t *fh, uint64_t v[3])
{
    uint32_t n = fsc__get_le32(fh + 4);
    uint8_t b[FSC__END_LEN];
    if (n < FSC__END_LEN || n > 4096 || read_at(r, off + 8, b, sizeof b) != 0 ||
        fsc__crc32(b, FSC__END_LEN - 4) != fsc__get_le32(b + FSC__END_LEN - 4))
        return -1;
    v[0] = fsc__get_le64(b);
    v[1] = fsc__get_le64(b + 8);
    v[2] = fsc__get_le64(b + 16);
    return 0;
}

/* After damage at off: count the events of the descriptors that can still
 * be walked, and use the end record's total when it is reachable. */
static void account_loss(fsc_trace_reader_t *r, uint64_t off)
{
    r->integ.bytes_lost = r->file_bytes - off;
    uint64_t lost = 0;
    uint8_t fh[8];
    while (off + 8 <= r->file_bytes && read_at(r, off, fh, 8) == 0) {
        uint32_t magic = fsc__get_le32(fh), n = fsc__get_le32(fh + 4);
        uint64_t end[3];
        desc_t d;
        if (magic == FSC__SKIP_END && read_end(r, off, fh, end) == 0) {
            if (end[0] >= r->integ.events) {
                r->integ.events_lost = end[0] - r->integ.events;
                r->integ.events_lost_known = 1;
            }
            return;
        }
        if (magic == FSC__SKIP_CHUNK && read_desc(r, off, fh, &d) == 0) {
            lost += d.events;
            off += 8 + (uint64_t)d.payload + d.csize;
        } else if (magic >= FSC__SKIP_MIN && magic <= FSC__SKIP_MAX && magic != FSC__SKIP_CHUNK) {
            off += 8 + (uint64_t)n;
        } else {
            break;
        }
    }
    r->integ.events_lost = lost;
    r->integ.events_lost_known = 0;
}

static void damaged(fsc_trace_reader_t *r, uint64_t off)
{
    account_loss(r, off);
    r->state = 1;
}

/* Column directory of a decompressed chunk. Extra columns (a newer minor's)
 * are ignored; every length must fit in the content. */
static int set_columns(fsc_trace_reader_t *r, size_t usize)
{
    const uint8_t *p = r->ubuf, *end = r->ubuf + usize;
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
        r->cp[i] = p;
        r->ce[i] = p + lens[i];
        p += lens[i];
    }
    return 0;
}

/* Load the next chunk. Returns 1 when one is ready, 0 at the end of the
 * events (clean or damaged), negative on an I/O error. */
static int next_chunk(fsc_trace_reader_t *r)
{
    for (;;) {
        uint64_t off = r->off;
        if (off == r->file_bytes) {
            r->state = 1; /* cut exactly between frames: nothing lost we can see */
            return 0;
        }
        uint8_t fh[8];
        if (off + 8 > r->file_bytes || read_at(r, off, fh, 8) != 0) {
            damaged(r, off);
            return 0;
        }
        uint32_t magic = fsc__get_le32(fh), n = fsc__get_le32(fh + 4);
        if (magic == FSC__SKIP_END) {
            uint64_t v[3];
            if (off + 8 + n > r->file_bytes || read_end(r, off, fh, v) != 0) {
                damaged(r, off);
                return 0;
            }
            r->off = off + 8 + n;
            r->integ.compressed_bytes = r->off;
            r->integ.bytes_lost = r->file_bytes - r->off;
            r->integ.events_dropped = v[2];
            if (v[0] == r->integ.events && v[1] == r->integ.chunks) {
                r->integ.clean_close = 1;
            } else if (v[0] > r->integ.events) {
                r->integ.events_lost = v[0] - r->integ.events;
                r->integ.events_lost_known = 1;
            }
            r->state = 1;
            return 0;
        }
        if (magic != FSC__SKIP_CHUNK) {
            if (magic >= FSC__SKIP_MIN && magic <= FSC__SKIP_MAX && off + 8 + n <= r->file_bytes) {
                r->off = off + 8 + n; /* a newer minor's frame: skipped */
                r->integ.compressed_bytes = r->off;
                continue;
            }
            damaged(r, off);
            return 0;
        }
        desc_t d;
        uint64_t foff = off + 8 + (n >= FSC__CHUNK_DESC_LEN ? n : 0);
        if (read_desc(r, off, fh, &d) != 0 || d.csize > FSC__MAX_CHUNK_BYTES ||
            d.usize > FSC__MAX_CHUNK_BYTES || d.csize < 4 || foff + d.csize > r->file_bytes ||
            d.first != r->integ.events) {
            damaged(r, off);
            return 0;
        }
        if (grow(&r->cbuf, &r->ccap, d.csize) != 0 || grow(&r->ubuf, &r->ucap, d.usize ? d.usize : 1))
            return fsc_err_set(&r->err, FSC_ENOMEM, "%s: out of memory", r->path);
        int rc = read_at(r, foff, r->cbuf, d.csize);
        if (rc == FSC_EIO)
            return rc;
        /* Byte 4 is the frame header descriptor; bit 2 says the content
         * checksum is present, which the format requires. */
        if (rc != 0 || fsc__get_le32(r->cbuf) != FSC__ZSTD_MAGIC || d.csize < 6 ||
            !(r->cbuf[4] & 0x04) ||
            ZSTD_getFrameContentSize(r->cbuf, d.csize) != (unsigned long long)d.usize) {
            damaged(r, off);
            return 0;
        }
        size_t got = ZSTD_decompressDCtx(r->dctx, r->ubuf, d.usize, r->cbuf, d.csize);
        if (ZSTD_isError(got) || got != d.usize) {
            damaged(r, off);
            return 0;
        }
        if (set_columns(r, d.usize) != 0) {
            damaged(r, off);
            return 0;
        }
        r->chunk_off = off;
        r->off = foff + d.csize;
        r->in_chunk = 1;
        r->chunk_expected = d.events;
        r->chunk_seen = 0;
        r->prev_time = r->prev_addr = r->prev_segment = r->prev_stream = 0;
        r->integ.chunks++;
        r->integ.compressed_bytes = r->off;
        return 1;
    }
}

/* ---- records ------------------------------------------------------------ */

static int bad(fsc_trace_reader_t *r, const char *what)
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

static int def_string(fsc_trace_reader_t *r)
{
    uint64_t n;
    const uint8_t **p = &r->cp[FSC__COL_DEFS], *end = r->ce[FSC__COL_DEFS];
    if (fsc__get_varint(p, end, &n) != 0 || n > FSC__MAX_STRING_BYTES ||
        n > (uint64_t)(end - *p))
        return bad(r, "bad string definition");
    if (r->n_strs + 1 >= r->strs_cap) {
        if (r->strs_cap >= MAX_DEFS)
            return bad(r, "too many strings");
        uint32_t nc = r->strs_cap ? r->strs_cap * 2 : 64;
        rstr_t *ns = realloc(r->strs, nc * sizeof *ns);
        if (ns == NULL)
            return fsc_err_set(&r->err, FSC_ENOMEM, "%s: out of memory", r->path);
        r->strs = ns;
        r->strs_cap = nc;
    }
    if (r->str_bytes + n > MAX_STRING_TOTAL)
        return bad(r, "interned strings exceed 256 MiB");
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
    const uint8_t **p = &r->cp[FSC__COL_DEFS], *end = r->ce[FSC__COL_DEFS];
    if (fsc__get_varint(p, end, &parent) != 0 || fsc__get_varint(p, end, &sid) != 0 ||
        parent > r->n_nodes || sid == 0 ||
        sid > r->n_strs)
        return bad(r, "bad tag definition");
    if (r->n_nodes + 1 >= r->nodes_cap) {
        if (r->nodes_cap >= MAX_DEFS)
            return bad(r, "too many tag nodes");
        uint32_t nc = r->nodes_cap ? r->nodes_cap * 2 : 64;
        rnode_t *nn = realloc(r->nodes, nc * sizeof *nn);
        if (nn == NULL)
            return fsc_err_set(&r->err, FSC_ENOMEM, "%s: out of memory", r->path);
        r->nodes = nn;
        r->nodes_cap = nc;
    }
    r->n_nodes++;
    r->nodes[r->n_nodes].parent = (uint32_t)parent;
    r->nodes[r->n_nodes].sid = (uint32_t)sid;
    return 0;
}

/* Next varint of column col into v. */
#define GET(col, v)                                                     \
    do {                                                                \
        if (fsc__get_varint(&r->cp[col], r->ce[col], &(v)) != 0)       \
            return bad(r, "truncated event record");                    \
    } while (0)
#define FIELD(bit) (FSC__COL_FIELD0 + __builtin_ctz(bit))

static int decode_event(fsc_trace_reader_t *r, uint8_t type, fsc_event_t *ev)
{
    uint64_t mask, v;
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    GET(FSC__COL_RECORDS, mask);
    if (mask & ~(uint64_t)FSC__F_ALL)
        return bad(r, "unknown event fields");
    GET(FSC__COL_TIME, v);
    ev->time_ns = r->prev_time = fsc__unzigzag(r->prev_time, v);
    /* segment first: addr is coded against it */
    if (mask & FSC__F_SEGMENT) {
        GET(FIELD(FSC__F_SEGMENT), v);
        ev->segment = r->prev_segment = fsc__unzigzag(r->prev_segment, v);
    }
    if (mask & FSC__F_ADDR) {
        GET(FIELD(FSC__F_ADDR), v);
        ev->addr = r->prev_addr = fsc__unzigzag(ev->segment ? ev->segment : r->prev_addr, v);
    }
    if (mask & FSC__F_SIZE)
        GET(FIELD(FSC__F_SIZE), ev->size);
    if (mask & FSC__F_REQUESTED) {
        GET(FIELD(FSC__F_REQUESTED), v);
        ev->requested = ev->size - fsc__unzigzag(0, v);
    }

    if (mask & FSC__F_TAG) {
        GET(FIELD(FSC__F_TAG), v);
        if (v > r->n_nodes)
            return bad(r, "event uses an undefined tag node");
        ev->tag = (uint32_t)v;
    }
    if (mask & FSC__F_POOL) {
        GET(FIELD(FSC__F_POOL), v);
        if (v > 255)
            return bad(r, "bad pool");
        ev->pool = (uint8_t)v;
    }
    if (mask & FSC__F_THREAD) {
        GET(FIELD(FSC__F_THREAD), v);
        if (v > UINT32_MAX)
            return bad(r, "bad thread number");
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
        const uint8_t **tp = &r->cp[FIELD(FSC__F_TEXT)];
        if (v > FSC__MAX_STRING_BYTES || v > (uint64_t)(r->ce[FIELD(FSC__F_TEXT)] - *tp))
            return bad(r, "bad marker text");
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
            return bad(r, "bad reserved field");
        ev->reserved0 = (uint16_t)v;
    }
    return 0;
}

int fsc_trace_next(fsc_trace_reader_t *r, fsc_event_t *ev)
{
    if (r == NULL || ev == NULL)
        return FSC_EINVAL;
    if (r->state < 0)
        return r->err.code ? r->err.code : FSC_EFORMAT;
    for (;;) {
        if (r->state == 1)
            return 0;
        if (!r->in_chunk || r->cp[FSC__COL_RECORDS] >= r->ce[FSC__COL_RECORDS]) {
            if (r->in_chunk) {
                if (r->chunk_seen != r->chunk_expected)
                    return bad(r, "event count differs from its descriptor");
                for (int i = 0; i < FSC__NCOLS; i++)
                    if (r->cp[i] != r->ce[i])
                        return bad(r, "column longer than its records");
                r->in_chunk = 0;
            }
            int rc = next_chunk(r);
            if (rc <= 0)
                return rc;
            continue;
        }
        uint8_t t = *r->cp[FSC__COL_RECORDS]++;
        int rc;
        if (t >= 1 && t < FSC_EV__COUNT) {
            if ((rc = decode_event(r, t, ev)) != 0)
                return rc;
            r->chunk_seen++;
            r->integ.events++;
            return 1;
        }
        if (t == FSC__REC_STRING) {
            if ((rc = def_string(r)) != 0)
                return rc;
        } else if (t == FSC__REC_TAG) {
            if ((rc = def_tag(r)) != 0)
                return rc;
        } else if (t >= FSC__REC_EXT_MIN && t <= FSC__REC_EXT_MAX) {
            const uint8_t **p = &r->cp[FSC__COL_DEFS], *end = r->ce[FSC__COL_DEFS];
            uint64_t n;
            if (fsc__get_varint(p, end, &n) != 0 || n > (uint64_t)(end - *p))
                return bad(r, "bad extension record length");
            *p += n; /* a record type of a newer minor version */
        } else {
            return bad(r, "unknown record type");
        }
    }
}

/* ---- tag tree ----------------------------------------------------------- */

uint32_t fsc_trace_tag_count(const fsc_trace_reader_t *r)
{
    return r == NULL ? 0 : r->n_nodes;
}

int fsc_trace_tag(const fsc_trace_reader_t *r, uint32_t node, const char **name, size_t *name_len,
                  uint32_t *parent)
{
    if (r == NULL || node > r->n_nodes)
        return FSC_ENOENT;
    if (node == 0) {
        if (name)
            *name = "";
        if (name_len)
            *name_len = 0;
        if (parent)
            *parent = 0;
        return 0;
    }
    const rstr_t *s = &r->strs[r->nodes[node].sid];
    if (name)
        *name = s->s;
    if (name_len)
        *name_len = s->len;
    if (parent)
        *parent = r->nodes[node].parent;
    return 0;
}

int fsc_trace_tag_path(const fsc_trace_reader_t *r, uint32_t node, char *buf, size_t cap)
{
    if (r == NULL || buf == NULL || cap == 0)
        return FSC_EINVAL;
    if (node > r->n_nodes) {
        buf[0] = '\0';
        return FSC_ENOENT;
    }
    /* Parents always have smaller ids (defined first), so the walk ends. */
    uint32_t chain[256];
    size_t depth = 0;
    for (uint32_t n = node; n != 0 && depth < 256; n = r->nodes[n].parent)
        chain[depth++] = n;
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = depth; i-- > 0;) {
        const rstr_t *s = &r->strs[r->nodes[chain[i]].sid];
        size_t need = s->len + (i + 1 < depth ? 1 : 0);
        if (used + need + 1 > cap)
            break;
        if (i + 1 < depth)
            buf[used++] = '/';
        memcpy(buf + used, s->s, s->len);
        used += s->len;
        buf[used] = '\0';
    }
    return 0;
}
