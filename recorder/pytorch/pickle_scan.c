/*
 * pickle_scan.c — the first pass of the streaming pickle reader: one walk
 * over the opcodes that notes which memo indices a GET reads again and how
 * often, so that the parse (pickle.c) keeps those memo entries and no
 * others, and frees each after its last read.
 */
#include "pickle_scan.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rd_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int scan_ref(fsc__pscan_t *sc, uint64_t idx, size_t len)
{
    if (idx >= len)
        return 0; /* out of range: the parser reports it */
    size_t w = (size_t)(idx >> 6);
    if (w >= sc->words) {
        size_t nw = sc->words ? sc->words : 1024;
        while (nw <= w)
            nw *= 2;
        uint64_t *nb = realloc(sc->bits, nw * sizeof *nb);
        if (nb == NULL)
            return FSC_ENOMEM;
        memset(nb + sc->words, 0, (nw - sc->words) * sizeof *nb);
        sc->bits = nb;
        sc->words = nw;
    }
    sc->bits[w] |= 1ull << (idx & 63);
    if (idx >= sc->nreads) {
        size_t nn = sc->nreads ? sc->nreads : 65536;
        while (nn <= idx)
            nn *= 2;
        uint8_t *nr = realloc(sc->reads, nn);
        if (nr == NULL)
            return FSC_ENOMEM;
        memset(nr + sc->nreads, 0, nn - sc->nreads);
        sc->reads = nr;
        sc->nreads = nn;
    }
    if (sc->reads[idx] < FSC__PSCAN_MANY)
        sc->reads[idx]++;
    return 0;
}

static size_t text_end(const uint8_t *p, size_t len, size_t pos)
{
    const uint8_t *nl = memchr(p + pos, '\n', len - pos);
    return nl == NULL ? SIZE_MAX : (size_t)(nl - p) + 1;
}

int fsc__pickle_scan(const void *data, size_t len, const fsc__pstream_t *cb, fsc__pscan_t **out)
{
    const uint8_t *p = data;
    fsc__pscan_t *sc = calloc(1, sizeof *sc);
    if (sc == NULL)
        return FSC_ENOMEM;
    size_t pos = 0;
    int rc = 0;
    /* Walks the opcodes as the parser does and stops quietly wherever the
     * parser will stop with an error (or at STOP): references past that
     * point are never resolved. */
    size_t every = (size_t)4 << 20, next_progress = every;
    while (rc == 0 && pos < len) {
        if (pos >= next_progress && cb != NULL && cb->progress != NULL) {
            cb->progress(cb->ud, pos, len);
            next_progress = pos + every;
        }
        uint8_t op = p[pos++];
        size_t fixed = 0, lenbytes = 0;
        switch (op) {
        case '.': pos = len; continue;
        case 0x80: case 'K': case 'q': case 'U': case 'C': case 0x8a: case 0x8c: fixed = 1; break;
        case 'M': fixed = 2; break;
        case 'J': case 'r': case 'X': case 'T': case 'B': case 0x8b: fixed = 4; break;
        case 'G': case 0x95: case 0x8d: case 0x8e: case 0x96: fixed = 8; break;
        case 'h':
            if (pos + 1 > len)
                pos = len;
            else
                rc = scan_ref(sc, p[pos++], len);
            continue;
        case 'j':
            if (pos + 4 > len)
                pos = len;
            else {
                rc = scan_ref(sc, rd_le(p + pos, 4), len);
                pos += 4;
            }
            continue;
        case 'I': case 'L': case 'F': case 'V': case 'S': case 'p': case 'g': {
            size_t e = text_end(p, len, pos);
            if (e == SIZE_MAX) {
                pos = len;
                continue;
            }
            if (op == 'g') {
                uint64_t v = 0;
                size_t i = pos;
                for (; i + 1 < e && p[i] >= '0' && p[i] <= '9' && v < len; i++)
                    v = v * 10 + (uint64_t)(p[i] - '0');
                if (i + 1 == e && i > pos)
                    rc = scan_ref(sc, v, len);
            }
            pos = e;
            continue;
        }
        case '}': case ']': case ')': case 'N': case 0x88: case 0x89: case '(': case '0':
        case '1': case '2': case 's': case 'u': case 'a': case 'e': case 't': case 0x85:
        case 0x86: case 0x87: case 'd': case 'l': case 0x94:
            continue;
        default: pos = len; continue; /* unsupported: the parser stops here */
        }
        /* opcodes with a fixed argument, some of them a length */
        if (op == 0x8a || op == 0x8b || op == 0x8c || op == 'X' || op == 0x8d || op == 'U' ||
            op == 'T' || op == 'C' || op == 'B' || op == 0x8e || op == 0x96)
            lenbytes = fixed;
        if (len - pos < fixed) {
            pos = len;
            continue;
        }
        if (lenbytes) {
            uint64_t n = rd_le(p + pos, lenbytes);
            pos += lenbytes;
            if (n > len - pos)
                pos = len;
            else
                pos += (size_t)n;
        } else {
            pos += fixed;
        }
    }
    if (rc == 0 && sc->words > 0 && (sc->rank = malloc(sc->words * sizeof *sc->rank)) == NULL)
        rc = FSC_ENOMEM;
    if (rc != 0) {
        fsc__pscan_free(sc);
        return rc;
    }
    size_t n = 0;
    for (size_t w = 0; w < sc->words; w++) {
        sc->rank[w] = (uint32_t)n;
        n += popcount64(sc->bits[w]);
    }
    sc->refs = n;
    /* reads by slot (slots are the referenced indices in order), in place */
    size_t slot = 0;
    for (size_t w = 0; w < sc->words; w++) {
        for (uint64_t b = sc->bits[w]; b != 0; b &= b - 1) {
            size_t idx = (w << 6) + (size_t)__builtin_ctzll(b);
            sc->reads[slot++] = sc->reads[idx];
        }
    }
    *out = sc;
    return 0;
}

void fsc__pscan_free(fsc__pscan_t *sc)
{
    if (sc == NULL)
        return;
    free(sc->bits);
    free(sc->rank);
    free(sc->reads);
    free(sc);
}

size_t fsc__pscan_refs(const fsc__pscan_t *sc) { return sc ? sc->refs : 0; }
