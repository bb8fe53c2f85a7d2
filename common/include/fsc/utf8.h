/*
 * fsc/utf8.h — the one UTF-8 sanitiser: every writer of JSON, CSV or HTML
 * passes text taken from user files through it.
 *
 * Names of frames, files and tags come from pickles and traces as bytes;
 * a pickle may carry invalid UTF-8 or a lone surrogate (Python strings may
 * hold U+D800-U+DFFF alone; pickle writes them as ED A0..BF xx, which is
 * not UTF-8). JSON and CSV consumers reject or mangle such bytes, so each
 * ill-formed sequence becomes U+FFFD (EF BF BD). The sequences replaced are
 * the "maximal subparts" of the Unicode standard (chapter 3, U+FFFD
 * substitution), which is what Python's decode(errors="replace") and the
 * WHATWG encoding standard do: the longest prefix of a well-formed sequence
 * gives one U+FFFD, any other bad byte one U+FFFD of its own.
 *
 * Internal to fragscope (fsc__ names), shared by the parts through
 * fsc_common.
 */
#ifndef FSC_UTF8_H
#define FSC_UTF8_H

#include <stddef.h>

/* U+FFFD REPLACEMENT CHARACTER in UTF-8. */
#define FSC__UTF8_REPLACEMENT "\xef\xbf\xbd"

/* At s, with n bytes available: the length (1-4) of the well-formed UTF-8
 * sequence that starts there, or minus the number of bytes to replace by
 * one U+FFFD (-1 to -3) when it is ill-formed: a stray continuation byte,
 * an overlong form, a surrogate, a code point above U+10FFFF, or a
 * sequence cut short. n == 0 gives 0. */
int fsc__utf8_seq(const unsigned char *s, size_t n);

/* The number of ill-formed sequences in s[0..n) (0: valid UTF-8). */
size_t fsc__utf8_invalid(const char *s, size_t n);

/* A copy of s[0..n) with each ill-formed sequence replaced by U+FFFD,
 * NUL-terminated, in *out (malloc'd, the caller frees it); its length in
 * *out_n (may be NULL), the number of replacements in *replaced (may be
 * NULL). Returns 0 or FSC_ENOMEM (*out NULL). */
int fsc__utf8_sanitize(const char *s, size_t n, char **out, size_t *out_n, size_t *replaced);

#endif
