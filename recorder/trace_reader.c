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
 * were lost. This file reads frames; trace_decode.c decodes the records of
 * a chunk once its frame has verified.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsc/vec.h"
#include "trace_reader.h"

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

/* ---- open --------------------------------------------------------------- */

/* The first 8 bytes of a trace: the header frame's magic and a length the
 * file can hold. */
static int header_frame_ok(const uint8_t fh[8], uint64_t file_bytes)
{
    return fsc__get_le32(fh) == FSC__SKIP_HEADER && fsc__get_le32(fh + 4) <= FSC__MAX_HEADER_BYTES &&
           fsc__get_le32(fh + 4) <= file_bytes - 8;
}

int fsc_trace_detect(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? FSC_ENOENT : FSC_EIO;
    struct stat st;
    uint8_t fh[8];
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 8 &&
             pread(fd, fh, 8, 0) == 8 && header_frame_ok(fh, (uint64_t)st.st_size);
    close(fd);
    return ok;
}

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
        /* missing or not ours to read: bad input (exit 2), not an I/O error */
        rc = fsc_err_set(err,
                         e == ENOENT || e == ENOTDIR ? FSC_ENOENT
                         : e == EACCES || e == EPERM ? FSC_EINVAL
                                                     : FSC_EIO,
                         "%s: cannot open: %s", path, strerror(e));
        goto fail;
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: not a fragscope trace (not a regular file)", path);
        goto fail;
    }
    r->file_bytes = (uint64_t)st.st_size;
    uint8_t fh[8];
    if (r->file_bytes < 8 || read_at(r, 0, fh, 8) != 0 || !header_frame_ok(fh, r->file_bytes)) {
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
    r->v1 = r->hs.h.version_major == 1;
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
        if (FSC__VEC_RESERVE(r->cbuf, r->ccap, d.csize) != 0 ||
            FSC__VEC_RESERVE(r->ubuf, r->ucap, d.usize ? d.usize : 1) != 0)
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
        r->chunk_off = off;
        r->in_chunk = 1;
        if (fsc__decode_columns(r, d.usize) != 0)
            return fsc__reader_bad(r, "bad column directory"); /* verified, yet malformed */
        r->off = foff + d.csize;
        r->chunk_expected = d.events;
        r->chunk_seen = 0;
        r->prev_time = r->prev_addr = r->prev_segment = r->prev_stream = 0;
        r->next_pool_id = 0;
        r->integ.chunks++;
        r->integ.compressed_bytes = r->off;
        return 1;
    }
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
        if (!r->in_chunk || *r->cp[FSC__COL_RECORDS] >= r->ce[FSC__COL_RECORDS]) {
            if (r->in_chunk) {
                if (r->chunk_seen != r->chunk_expected)
                    return fsc__reader_bad(r, "event count differs from its descriptor");
                for (int i = 0; i < FSC__NCOLS; i++)
                    if (*r->cp[i] != r->ce[i])
                        return fsc__reader_bad(r, "column longer than its records");
                r->in_chunk = 0;
            }
            int rc = next_chunk(r);
            if (rc <= 0)
                return rc;
            continue;
        }
        int rc = fsc__decode_record(r, ev);
        if (rc != 0)
            return rc; /* 1: an event; negative: an error */
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
