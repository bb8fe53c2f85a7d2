/*
 * utf8.c — the UTF-8 sanitiser (fsc/utf8.h): ill-formed sequences become
 * U+FFFD, by maximal subparts, before text reaches a JSON, CSV or HTML
 * writer.
 */
#include "fsc/utf8.h"

#include <stdlib.h>
#include <string.h>

#include "fragscope/common.h"

int fsc__utf8_seq(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int len;
    unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* below: overlong */
        else if (c == 0xED)
            hi = 0x9F; /* above: a surrogate, U+D800-U+DFFF */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* below: overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above: beyond U+10FFFF */
    } else
        return -1; /* a continuation byte, C0/C1 (overlong) or F5-FF */
    /* The bytes that do continue a well-formed prefix are replaced with
     * the lead byte as one; the first byte that does not stays for the
     * next sequence. */
    int good = 1;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return -good;
        unsigned b = s[i];
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h)
            return -good;
        good++;
    }
    return len;
}

size_t fsc__utf8_invalid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t bad = 0;
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x80) { /* the common case, ASCII */
            i++;
            continue;
        }
        int k = fsc__utf8_seq(p + i, n - i);
        if (k < 0) {
            bad++;
            k = -k;
        }
        i += (size_t)k;
    }
    return bad;
}

int fsc__utf8_sanitize(const char *s, size_t n, char **out, size_t *out_n, size_t *replaced)
{
    size_t bad = fsc__utf8_invalid(s, n);
    /* each replacement is at most 3 bytes for at least 1 */
    size_t cap = n + 2 * bad + 1;
    char *o = malloc(cap);
    *out = o;
    if (o == NULL)
        return FSC_ENOMEM;
    const unsigned char *p = (const unsigned char *)s;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        int k = p[i] < 0x80 ? 1 : fsc__utf8_seq(p + i, n - i);
        if (k > 0) {
            memcpy(o + w, p + i, (size_t)k);
            w += (size_t)k;
            i += (size_t)k;
        } else {
            memcpy(o + w, FSC__UTF8_REPLACEMENT, 3);
            w += 3;
            i += (size_t)-k;
        }
    }
    o[w] = '\0';
    if (out_n != NULL)
        *out_n = w;
    if (replaced != NULL)
        *replaced = bad;
    return 0;
}
