/*
 * pickle_scan.h — what the first pass over a pickle (pickle_scan.c) hands
 * to the streaming parser (pickle.c): which memo indices are read again,
 * their slots and how often each is read. Private to the pickle reader.
 */
#ifndef FSC_PICKLE_SCAN_H
#define FSC_PICKLE_SCAN_H

#include "pickle.h"

#include <stdint.h>
#include <stddef.h>
#include <string.h>

struct fsc__pscan {
    uint64_t *bits; /* bit i: memo index i is read by a GET */
    uint32_t *rank; /* rank[w]: bits set in bits[0..w) */
    size_t words;
    size_t refs;    /* bits set */
    /* GETs per memo entry, saturating at FSC__PSCAN_MANY (never freed):
     * by index during the scan, then by slot. */
    uint8_t *reads;
    size_t nreads;
    /* ranges walked in parallel whose counts make the result (up to the one
     * where the walk stops); 0: one walk. The result is the same. */
    size_t ranges;
    /* Those ranges' starts, each an opcode boundary (checked by the walk),
     * and the MEMOIZE opcodes before each: where the history can be parsed
     * on several threads (pickle.c). None (ncuts 0) after one walk or when
     * the input holds a PUT, whose explicit indices these counts miss. */
    size_t *cut;
    uint64_t *cut_memo;
    size_t ncuts;
};

#define FSC__PSCAN_MANY 255u

/* n bytes little-endian, as pickle opcodes write their arguments (the
 * widths of 1, 4 and 8 bytes load at once; memcpy, since the input has no
 * alignment). */
static inline uint64_t rd_le(const uint8_t *p, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n == 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    if (n == 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    if (n == 1)
        return p[0];
#endif
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Bits set in x (portable: the build does not assume a popcount
 * instruction, and libgcc's fallback is slower than this). */
static inline unsigned popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* Slot of a referenced memo index, or SIZE_MAX when it is never read. */
static inline size_t scan_slot(const fsc__pscan_t *sc, uint64_t idx)
{
    size_t w = (size_t)(idx >> 6);
    if (w >= sc->words)
        return SIZE_MAX;
    uint64_t b = sc->bits[w], bit = 1ull << (idx & 63);
    if (!(b & bit))
        return SIZE_MAX;
    return sc->rank[w] + popcount64(b & (bit - 1));
}

/* fsc__pickle_scan with the input cut into at most 'ranges' ranges at
 * frame boundaries, walked on at most 'threads' threads (the caller's one
 * included), whatever the input's length; ranges <= 1: one walk. The result
 * is the same in every case (tests force many small ranges with it). */
int fsc__pickle_scan_split(const void *data, size_t len, const fsc__pstream_t *cb,
                           size_t ranges, unsigned threads, fsc__pscan_t **out);
/* In threads: every range is walked even once an earlier one stopped, so
 * that the later ones' counts are always there to be voided (tests). */
#define FSC__PSCAN_ALL 0x10000u
/* Threads fsc__pickle_scan uses on a large input: the CPUs this process
 * may run on, at most 16; 1 under FRAGSCOPE_THREADS=1. */
unsigned fsc__pickle_scan_threads(void);
/* How many ranges fsc__pickle_scan asks for on an input of len bytes. */
size_t fsc__pickle_scan_ranges(size_t len, unsigned threads);
/* Where fsc__pickle_scan_split cuts: up to 'want' (>= 1) starts of ranges
 * of about equal length into cuts; cuts[0] is 0, the others FRAME opcodes
 * found by hopping the chain of frames (hints: the walk checks them).
 * Returns how many (1: no frames to cut at). */
size_t fsc__pickle_scan_cuts(const void *data, size_t len, size_t want, size_t *cuts);

#endif
