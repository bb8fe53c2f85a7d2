/*
 * trace_columns.c — turns a chunk of row-encoded records into the column
 * layout stored in the file (see trace_format.h and docs/trace-format.md).
 *
 * Rows are what the hot path can write fastest: one contiguous record per
 * event. Columns are what zstd compresses best: times next to times,
 * addresses next to addresses, so that each column's regularities (steps
 * that repeat, sizes from a small set) are not broken up by the others.
 * The writer pays for the transposition on the compressing side.
 */
#include <string.h>

#include "trace_format.h"

/* Walk the rows once; for each piece of a record, call emit(column, bytes). */
typedef struct cols {
    size_t len[FSC__NCOLS];
    uint8_t *at[FSC__NCOLS];
} cols_t;

static inline void put(cols_t *c, int col, const uint8_t *p, size_t n, int write)
{
    if (write) {
        memcpy(c->at[col], p, n);
        c->at[col] += n;
    } else {
        c->len[col] += n;
    }
}

/* Length of the varint at p (rows are trusted, so no bound is needed
 * beyond the 10-byte maximum). */
static inline size_t vlen(const uint8_t *p)
{
    size_t n = 1;
    while ((p[n - 1] & 0x80) && n < 10)
        n++;
    return n;
}

static void walk(const uint8_t *rows, size_t n, cols_t *c, int write)
{
    const uint8_t *p = rows, *end = rows + n;
    while (p < end) {
        uint8_t t = *p;
        if (t == FSC__REC_STRING || (t >= FSC__REC_EXT_MIN && t <= FSC__REC_EXT_MAX)) {
            /* a length-prefixed body: string definitions and extension
             * records alike go to the definitions column */
            put(c, FSC__COL_RECORDS, p, 1, write);
            const uint8_t *q = p + 1;
            uint64_t len = 0;
            fsc__get_varint(&q, end, &len);
            size_t k = (size_t)(q - (p + 1)) + (size_t)len;
            put(c, FSC__COL_DEFS, p + 1, k, write);
            p += 1 + k;
        } else if (t == FSC__REC_TAG) {
            put(c, FSC__COL_RECORDS, p, 1, write);
            size_t k = vlen(p + 1);
            k += vlen(p + 1 + k);
            put(c, FSC__COL_DEFS, p + 1, k, write);
            p += 1 + k;
        } else {
            const uint8_t *q = p + 1;
            uint64_t mask = 0;
            fsc__get_varint(&q, end, &mask);
            put(c, FSC__COL_RECORDS, p, (size_t)(q - p), write);
            size_t k = vlen(q);
            put(c, FSC__COL_TIME, q, k, write);
            q += k;
            for (int b = 0; b < FSC__NCOLS - FSC__COL_FIELD0 - 1; b++) {
                if (!(mask & (1u << b)))
                    continue;
                if ((1u << b) == FSC__F_TEXT) {
                    const uint8_t *s = q;
                    uint64_t len = 0;
                    fsc__get_varint(&s, end, &len);
                    k = (size_t)(s - q) + (size_t)len;
                } else if ((1u << b) == FSC__F_OOM) {
                    k = 0;
                    for (int i = 0; i < 6; i++)
                        k += vlen(q + k);
                } else {
                    k = vlen(q);
                }
                put(c, FSC__COL_FIELD0 + b, q, k, write);
                q += k;
            }
            p = q;
        }
    }
}

size_t fsc__chunk_transpose(const uint8_t *rows, size_t n, uint8_t *out)
{
    cols_t c;
    memset(&c, 0, sizeof c);
    walk(rows, n, &c, 0);
    uint8_t *p = fsc__put_varint(out, FSC__NCOLS);
    for (int i = 0; i < FSC__NCOLS; i++)
        p = fsc__put_varint(p, c.len[i]);
    for (int i = 0; i < FSC__NCOLS; i++) {
        c.at[i] = p;
        p += c.len[i];
    }
    walk(rows, n, &c, 1);
    return (size_t)(p - out);
}
