/*
 * whatif_store.c — where the request stream's coded operations live: a
 * list of blocks, each a few thousand operations (whatif_ops.c codes them),
 * so that the stream costs a few bytes per operation instead of a struct,
 * and past a small bound nothing of it in memory.
 *
 * Blocks stay in memory while all the blocks so far fit under the bound
 * (FSC__WSTORE_LIMIT, 32 MiB: about 4 M operations); past it every new
 * block goes to a temporary file, made with mkstemp in $TMPDIR (else /tmp)
 * and unlinked at once, so that nothing is left behind whatever happens.
 * The block being filled is always in memory. A block bound for the file
 * is compressed with zstd when that makes it at least a quarter smaller
 * (it halves them: what the varints leave is repeated tags and address
 * differences); blocks in memory are not, since every replay would
 * decompress them again: on a 2 M-op recording that cost about 7 % of a
 * replay's time to save 9 MB.
 *
 * Readers (fsc__wreader_t, one per replay, several threads at once) take
 * the blocks in order, each with its own buffers; spilled blocks are read
 * with pread, so that the threads share no file offset. The store is only
 * read while replays run: nothing here locks.
 *
 * Two knobs, read here only, exist to exercise the spill on small inputs
 * (tests): FRAGSCOPE_WHATIF_SPILL_BYTES (the bound, bytes) and
 * FRAGSCOPE_WHATIF_BLOCK_OPS (operations per block).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "whatif_internal.h"

#define DEFAULT_BLOCK_OPS 4096
#define ZSTD_LEVEL 1

static size_t env_size(const char *name, size_t dflt, size_t min)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return dflt;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0')
        return dflt;
    return v < min ? min : (size_t)v;
}

void fsc__wstore_init(fsc__wstore_t *s)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->limit = env_size("FRAGSCOPE_WHATIF_SPILL_BYTES", FSC__WSTORE_LIMIT, 0);
    s->block_ops = (uint32_t)env_size("FRAGSCOPE_WHATIF_BLOCK_OPS", DEFAULT_BLOCK_OPS, 1);
    if (s->block_ops > 1u << 20)
        s->block_ops = 1u << 20;
}

void fsc__wstore_free(fsc__wstore_t *s)
{
    for (size_t i = 0; i < s->nblocks; i++)
        free(s->blocks[i].mem);
    free(s->blocks);
    free(s->open);
    free(s->zbuf);
    ZSTD_freeCCtx(s->cctx);
    if (s->fd >= 0)
        close(s->fd);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

static int store_fail(fsc__wstore_t *s, int rc, const char *what, int e)
{
    snprintf(s->msg, sizeof s->msg, "what-if: %s (%s)", what, strerror(e));
    return rc;
}

/* The temporary file, made on the first spill and unlinked at once. */
static int spill_open(fsc__wstore_t *s)
{
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || *dir == '\0')
        dir = "/tmp";
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/fragscope-whatif-XXXXXX", dir) >= sizeof path)
        return store_fail(s, FSC_EIO, "temporary directory name too long", ENAMETOOLONG);
    int fd = mkstemp(path);
    if (fd < 0) {
        int e = errno;
        snprintf(s->msg, sizeof s->msg, "what-if: cannot create a temporary file in %.160s (%s)",
                 dir, strerror(e));
        return FSC_EIO;
    }
    if (unlink(path) != 0) {
        int e = errno;
        close(fd);
        snprintf(s->msg, sizeof s->msg, "what-if: cannot unlink the temporary file %.160s (%s)",
                 path, strerror(e));
        return FSC_EIO;
    }
    s->fd = fd;
    return 0;
}

static int spill_write(fsc__wstore_t *s, const uint8_t *p, size_t n, uint64_t *off)
{
    if (s->fd < 0) {
        int rc = spill_open(s);
        if (rc != 0)
            return rc;
    }
    *off = s->fsize;
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(s->fd, p + done, n - done, (off_t)(s->fsize + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return store_fail(s, FSC_EIO, "cannot write the temporary file",
                              w < 0 ? errno : ENOSPC);
        done += (size_t)w;
    }
    s->fsize += n;
    return 0;
}

uint8_t *fsc__wstore_room(fsc__wstore_t *s, size_t n)
{
    if (FSC__VEC_RESERVE(s->open, s->cap_open, s->nopen + n + FSC__WSLACK) != 0)
        return NULL;
    return s->open + s->nopen;
}

static int seal(fsc__wstore_t *s)
{
    if (s->open_ops == 0)
        return 0;
    if (FSC__VEC_RESERVE(s->blocks, s->cap_blocks, s->nblocks + 1) != 0)
        return FSC_ENOMEM;
    size_t raw = s->nopen;
    const uint8_t *data = s->open;
    size_t size = raw;
    uint8_t zstd = 0;
    int to_file = s->fd >= 0 || s->mem + raw > s->limit;
    if (to_file) {
        size_t bound = ZSTD_compressBound(raw);
        if (s->cctx == NULL && (s->cctx = ZSTD_createCCtx()) == NULL)
            return FSC_ENOMEM;
        if (FSC__VEC_RESERVE(s->zbuf, s->cap_zbuf, bound) != 0)
            return FSC_ENOMEM;
        size_t z = ZSTD_compressCCtx(s->cctx, s->zbuf, bound, s->open, raw, ZSTD_LEVEL);
        if (!ZSTD_isError(z) && z < raw - raw / 4) {
            data = s->zbuf;
            size = z;
            zstd = 1;
        }
    }
    fsc__wblock_t *b = &s->blocks[s->nblocks];
    memset(b, 0, sizeof *b);
    b->size = (uint32_t)size;
    b->raw = (uint32_t)raw;
    b->nops = s->open_ops;
    b->zstd = zstd;
    if (!to_file) {
        if ((b->mem = malloc(size + FSC__WSLACK)) == NULL)
            return FSC_ENOMEM;
        memcpy(b->mem, data, size);
        memset(b->mem + size, 0, FSC__WSLACK);
        s->mem += size;
    } else {
        int rc = spill_write(s, data, size, &b->off);
        if (rc != 0)
            return rc;
        s->spilled += size;
    }
    s->nblocks++;
    s->nopen = 0;
    s->open_ops = 0;
    return 0;
}

int fsc__wstore_commit(fsc__wstore_t *s, size_t n)
{
    s->nopen += n;
    if (++s->open_ops >= s->block_ops)
        return seal(s);
    return 0;
}

/* ---- readers ------------------------------------------------------------------ */

void fsc__wreader_open(fsc__wreader_t *r, const fsc__wstore_t *s)
{
    memset(r, 0, sizeof *r);
    r->s = s;
}

void fsc__wreader_close(fsc__wreader_t *r)
{
    free(r->buf);
    free(r->zin);
    ZSTD_freeDCtx(r->dctx);
    memset(r, 0, sizeof *r);
}

static int reader_fail(fsc__wreader_t *r, int rc, const char *what, int e)
{
    snprintf(r->msg, sizeof r->msg, "what-if: %s (%s)", what, e ? strerror(e) : "damaged");
    return rc;
}

int fsc__wreader_next(fsc__wreader_t *r, const uint8_t **p, size_t *n, uint32_t *nops)
{
    const fsc__wstore_t *s = r->s;
    if (r->next > s->nblocks)
        return 0;
    if (r->next == s->nblocks) {
        /* the block being filled, last (fsc__wstore_room keeps the slack) */
        r->next++;
        *p = s->open;
        *n = s->nopen;
        *nops = s->open_ops;
        return s->open_ops > 0 ? 1 : 0;
    }
    const fsc__wblock_t *b = &s->blocks[r->next++];
    const uint8_t *src = b->mem;
    if (src == NULL) {
        if (FSC__VEC_RESERVE(r->zin, r->cap_zin, b->size + FSC__WSLACK) != 0)
            return FSC_ENOMEM;
        memset(r->zin + b->size, 0, FSC__WSLACK);
        size_t done = 0;
        while (done < b->size) {
            ssize_t got = pread(s->fd, r->zin + done, b->size - done, (off_t)(b->off + done));
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                return reader_fail(r, FSC_EIO, "cannot read the temporary file",
                                   got < 0 ? errno : 0);
            done += (size_t)got;
        }
        src = r->zin;
    }
    if (!b->zstd) {
        *p = src;
        *n = b->size;
        *nops = b->nops;
        return 1;
    }
    if (r->dctx == NULL && (r->dctx = ZSTD_createDCtx()) == NULL)
        return FSC_ENOMEM;
    if (FSC__VEC_RESERVE(r->buf, r->cap_buf, b->raw + FSC__WSLACK) != 0)
        return FSC_ENOMEM;
    memset(r->buf + b->raw, 0, FSC__WSLACK);
    size_t got = ZSTD_decompressDCtx(r->dctx, r->buf, b->raw, src, b->size);
    if (ZSTD_isError(got) || got != b->raw)
        return reader_fail(r, FSC_EZSTD, "a block of the request stream does not decompress", 0);
    *p = r->buf;
    *n = b->raw;
    *nops = b->nops;
    return 1;
}
