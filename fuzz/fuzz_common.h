/*
 * fuzz_common.h — what every fuzz entry point uses: the property check
 * that aborts (libFuzzer keeps the input; the regression suite sees the
 * abort), inputs as anonymous memory files (/proc/self/fd/N, so fuzzing
 * never touches the disk) or C strings, and a growable byte buffer.
 */
#ifndef FSC_FUZZ_COMMON_H
#define FSC_FUZZ_COMMON_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fragscope/allocator.h"
#include "fragscope/common.h"
#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"
#include "fragscope/whatif.h"
#include "pickle.h"
#include "trace_format.h"

#include <zstd.h>

#define FSC_FUZZ_ASSERT(cond)                                                       \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                      \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* Path of a memory file holding exactly data[0..len); the file is reused by
 * later calls. NULL when the memory file cannot be made. */
static inline const char *fsc__fuzz_memfile(const uint8_t *data, size_t len)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fsc-fuzz", MFD_CLOEXEC);
        if (fd < 0)
            return NULL;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0)
        return NULL;
    size_t off = 0;
    while (off < len) {
        ssize_t w = pwrite(fd, data + off, len - off, (off_t)off);
        if (w <= 0)
            return NULL;
        off += (size_t)w;
    }
    return path;
}

/* A string of the input, NUL-terminated (the parsers take C strings). */
static inline char *fsc__fuzz_cstr(const uint8_t *data, size_t len)
{
    char *s = malloc(len + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, data, len);
    s[len] = '\0';
    return s;
}

/* Append n bytes to a growable buffer; -1 when memory runs out. */
static inline int fsc__fuzz_append(uint8_t **buf, size_t *len, size_t *cap, const void *p,
                                   size_t n)
{
    if (*len + n > *cap) {
        size_t c = (*cap ? *cap * 2 : 4096) + n;
        uint8_t *b = realloc(*buf, c);
        if (b == NULL)
            return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

static inline uint32_t fsc__fuzz_le32(const uint8_t *p) { return fsc__get_le32(p); }

#endif
