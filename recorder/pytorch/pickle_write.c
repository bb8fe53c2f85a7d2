/*
 * pickle_write.c — writes protocol-4 pickles that Python's pickle.load reads:
 * the subset the snapshot exporter needs (dicts, lists, tuples, str, int,
 * float, bool, None) with memoized strings so that repeated dict keys and
 * file names cost a memo reference instead of a copy.
 */
#include "pickle.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

typedef struct fsc__pw_str {
    UT_hash_handle hh;
    uint32_t memo;
    size_t len;
    char s[];
} fsc__pw_str_t;

/* Opcodes are a few bytes each: they gather in buf and reach the FILE in
 * runs of PW_BUF (a call of fwrite per opcode took half of an export). */
#define PW_BUF 65536

struct fsc__pw {
    FILE *f;
    int failed;     /* sticky: FSC_EIO or FSC_ENOMEM */
    uint32_t memo_n;
    fsc__pw_str_t *strs;
    size_t nbuf;
    unsigned char buf[PW_BUF];
};

static void flush_buf(fsc__pw_t *w)
{
    if (w->failed == 0 && w->nbuf > 0 && fwrite(w->buf, 1, w->nbuf, w->f) != w->nbuf)
        w->failed = FSC_EIO;
    w->nbuf = 0;
}

static void put(fsc__pw_t *w, const void *p, size_t n)
{
    if (w->failed != 0 || n == 0)
        return;
    if (w->nbuf + n > PW_BUF) {
        flush_buf(w);
        if (n > PW_BUF) {
            if (w->failed == 0 && fwrite(p, 1, n, w->f) != n)
                w->failed = FSC_EIO;
            return;
        }
    }
    memcpy(w->buf + w->nbuf, p, n);
    w->nbuf += n;
}

static void put1(fsc__pw_t *w, uint8_t b) { put(w, &b, 1); }

static void put_le(fsc__pw_t *w, uint64_t v, size_t n)
{
    uint8_t b[8];
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put(w, b, n);
}

int fsc__pw_open(FILE *f, fsc__pw_t **out)
{
    fsc__pw_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return FSC_ENOMEM;
    w->f = f;
    put1(w, 0x80); /* PROTO 4 */
    put1(w, 4);
    *out = w;
    return 0;
}

void fsc__pw_none(fsc__pw_t *w) { put1(w, 'N'); }
void fsc__pw_bool(fsc__pw_t *w, int v) { put1(w, v ? 0x88 : 0x89); }

void fsc__pw_int(fsc__pw_t *w, int64_t v)
{
    if (v >= 0 && v < 256) {
        put1(w, 'K');
        put1(w, (uint8_t)v);
    } else if (v >= 0 && v < 65536) {
        put1(w, 'M');
        put_le(w, (uint64_t)v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        put1(w, 'J');
        put_le(w, (uint64_t)(uint32_t)(int32_t)v, 4);
    } else {
        /* LONG1: shortest two's-complement little-endian form */
        uint8_t n = 8;
        while (n > 1) {
            int64_t hi = v >> (8 * (n - 1) - 1);
            if (hi != 0 && hi != -1)
                break;
            n--;
        }
        put1(w, 0x8a);
        put1(w, n);
        put_le(w, (uint64_t)v, n);
    }
}

void fsc__pw_uint(fsc__pw_t *w, uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX) {
        fsc__pw_int(w, (int64_t)v);
        return;
    }
    put1(w, 0x8a); /* 9 bytes: the top byte 0 keeps it positive */
    put1(w, 9);
    put_le(w, v, 8);
    put1(w, 0);
}

void fsc__pw_float(fsc__pw_t *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(bits >> (56 - 8 * i));
    put1(w, 'G');
    put(w, b, 8);
}

uint32_t fsc__pw_memoize(fsc__pw_t *w)
{
    put1(w, 0x94);
    return w->memo_n++;
}

void fsc__pw_get(fsc__pw_t *w, uint32_t memo_index)
{
    if (memo_index < 256) {
        put1(w, 'h');
        put1(w, (uint8_t)memo_index);
    } else {
        put1(w, 'j');
        put_le(w, memo_index, 4);
    }
}

void fsc__pw_str(fsc__pw_t *w, const char *s, size_t len)
{
    fsc__pw_str_t *e = NULL;
    HASH_FIND(hh, w->strs, s, len, e);
    if (e != NULL) {
        fsc__pw_get(w, e->memo);
        return;
    }
    if (len < 256) {
        put1(w, 0x8c);
        put1(w, (uint8_t)len);
    } else if (len <= UINT32_MAX) {
        put1(w, 'X');
        put_le(w, len, 4);
    } else {
        put1(w, 0x8d);
        put_le(w, len, 8);
    }
    put(w, s, len);
    uint32_t idx = fsc__pw_memoize(w);
    e = malloc(sizeof *e + len + 1);
    if (e == NULL) {
        w->failed = w->failed ? w->failed : FSC_ENOMEM;
        return;
    }
    e->memo = idx;
    e->len = len;
    memcpy(e->s, s, len);
    e->s[len] = '\0';
    HASH_ADD(hh, w->strs, s, len, e);
}

void fsc__pw_cstr(fsc__pw_t *w, const char *s) { fsc__pw_str(w, s, strlen(s)); }

void fsc__pw_dict_open(fsc__pw_t *w)
{
    put1(w, '}');
    put1(w, '(');
}

void fsc__pw_dict_close(fsc__pw_t *w) { put1(w, 'u'); }

void fsc__pw_list_open(fsc__pw_t *w)
{
    put1(w, ']');
    put1(w, '(');
}

void fsc__pw_list_close(fsc__pw_t *w) { put1(w, 'e'); }

void fsc__pw_list_batch(fsc__pw_t *w)
{
    put1(w, 'e');
    put1(w, '(');
}
void fsc__pw_tuple_open(fsc__pw_t *w) { put1(w, '('); }
void fsc__pw_tuple_close(fsc__pw_t *w) { put1(w, 't'); }

void fsc__pw_free(fsc__pw_t *w)
{
    if (w == NULL)
        return;
    fsc__pw_str_t *e, *tmp;
    HASH_ITER(hh, w->strs, e, tmp) {
        HASH_DEL(w->strs, e);
        free(e);
    }
    free(w);
}

int fsc__pw_finish(fsc__pw_t *w)
{
    put1(w, '.');
    flush_buf(w);
    if (w->failed == 0 && fflush(w->f) != 0)
        w->failed = FSC_EIO;
    int rc = w->failed;
    fsc__pw_free(w);
    return rc;
}
