/*
 * pytorch_snapshot.c — finds out whether a file is a pickled or JSON memory
 * snapshot and maps it for the streaming readers (pickle.c,
 * pytorch_json_stream.c), which both give the value tree of pickle.h, so
 * that the importer walks one representation whatever the file format.
 */
#include "pytorch_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int detect_bytes(const unsigned char *b, size_t n)
{
    if (n >= 2 && b[0] == 0x80 && b[1] <= 5)
        return FSC_SNAP_PICKLE;
    /* Protocols 0 and 1 have no PROTO opcode: a snapshot starts with the
     * top-level dict or list ("(d", "(l", "}", "]"). */
    if (n >= 2 && ((b[0] == '(' && (b[1] == 'd' || b[1] == 'l')) || b[0] == '}' || b[0] == ']'))
        return FSC_SNAP_PICKLE;
    size_t i = 0;
    if (n >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf)
        i = 3; /* UTF-8 byte order mark */
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
        i++;
    if (i < n && (b[i] == '{' || b[i] == '['))
        return FSC_SNAP_JSON;
    return 0;
}

int fsc_pytorch_detect(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return errno == ENOENT ? FSC_ENOENT : FSC_EIO;
    unsigned char b[256];
    size_t n = fread(b, 1, sizeof b, f);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return FSC_EIO;
    return detect_bytes(b, n);
}

int fsc__snap_open(const char *path, fsc__snap_t *s, fsc_err_t *err)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return fsc_err_set(err, errno == ENOENT ? FSC_ENOENT : FSC_EIO, "%s: %s", path,
                           strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return fsc_err_set(err, FSC_EIO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) { /* a pipe: read it whole */
        size_t cap = 1 << 16, n = 0;
        uint8_t *buf = malloc(cap);
        for (ssize_t got = 1; buf != NULL && got > 0;) {
            if (n == cap) {
                uint8_t *nb = realloc(buf, cap * 2);
                if (nb == NULL) {
                    free(buf);
                    buf = NULL;
                    break;
                }
                buf = nb;
                cap *= 2;
            }
            got = read(fd, buf + n, cap - n);
            if (got < 0) {
                free(buf);
                close(fd);
                return fsc_err_set(err, FSC_EIO, "%s: read error", path);
            }
            n += (size_t)got;
        }
        close(fd);
        if (buf == NULL)
            return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory reading the file", path);
        s->data = buf;
        s->len = n;
        s->owned = 1;
    } else if ((s->len = (size_t)sb.st_size) > 0) {
        void *m = mmap(NULL, s->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return fsc_err_set(err, e == ENOMEM ? FSC_ENOMEM : FSC_EIO, "%s: cannot map: %s",
                               path, strerror(e));
        }
        madvise(m, s->len, MADV_SEQUENTIAL);
        s->data = m;
        close(fd);
    } else {
        s->data = (const uint8_t *)"";
        close(fd);
    }
    const uint8_t *buf = s->data;
    size_t len = s->len;
    int fmt = detect_bytes(buf, len);
    s->format = fmt;
    if (fmt != 0)
        return 0;
    int rc;
    if (len >= 4 && memcmp(buf, "PK\x03\x04", 4) == 0)
        rc = fsc_err_set(err, FSC_EFORMAT,
                         "%s: a zip archive (torch.save?), not a memory snapshot: save it with "
                         "pickle.dump(torch.cuda.memory._snapshot(), f)",
                         path);
    else
        rc = fsc_err_set(err, FSC_EFORMAT,
                         "%s: not a PyTorch memory snapshot (neither a pickle of protocol 0 "
                         "to 5 nor JSON)",
                         path);
    fsc__snap_close(s);
    return rc;
}

void fsc__snap_done_before(fsc__snap_t *s, size_t pos)
{
    size_t page = 4096;
    size_t keep = (size_t)8 << 20; /* some slack behind the reader */
    if (s->len == 0 || s->owned || pos < keep)
        return;
    size_t upto = (pos - keep) & ~(page - 1);
    if (upto <= s->dropped)
        return;
    madvise((void *)(s->data + s->dropped), upto - s->dropped, MADV_DONTNEED);
    s->dropped = upto;
}

void fsc__snap_close(fsc__snap_t *s)
{
    if (s->owned)
        free((void *)s->data);
    else if (s->len > 0 && s->data != NULL)
        munmap((void *)s->data, s->len);
    s->data = NULL;
    s->len = 0;
}
