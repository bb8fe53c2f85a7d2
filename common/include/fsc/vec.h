/*
 * fsc/vec.h — the growable array every part uses: a plain (pointer,
 * capacity) pair that the caller owns, grown by doubling.
 *
 * Internal to fragscope (fsc__ names): shared by the parts through
 * fsc_common, not part of the public API in include/fragscope/. Written
 * here rather than taken from a package because the only candidates on
 * Debian (uthash's utarray, GLib's GArray) either copy elements through
 * callbacks or bring a whole runtime; the callers want their own typed
 * pointer and capacity fields and one realloc.
 */
#ifndef FSC_VEC_H
#define FSC_VEC_H

#include <stddef.h>

/* Make room for `need` elements of `elem` bytes in the array whose pointer
 * is at `pptr` (the address of a T *, T of size elem) and whose capacity is
 * *cap. The capacity doubles from 16 until it holds `need`; new elements are
 * left uninitialised. Returns 0, or FSC_ENOMEM (array and capacity
 * unchanged) when memory runs out or the size overflows. */
int fsc__vec_reserve(void *pptr, size_t *cap, size_t need, size_t elem);

/* The same, zeroing every element added beyond the old capacity. */
int fsc__vec_reserve_zero(void *pptr, size_t *cap, size_t need, size_t elem);

/* FSC__VEC_RESERVE(p, cap, need) for a typed pointer p. */
#define FSC__VEC_RESERVE(p, cap, need) fsc__vec_reserve(&(p), &(cap), (need), sizeof *(p))

#endif
