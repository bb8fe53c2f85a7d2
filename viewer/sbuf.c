/*
 * sbuf.c — growable output buffer, HTML and JSON escaping, JSON writer.
 *
 * Escaping walks the input as UTF-8: well-formed sequences are copied (so
 * tags in any script survive), anything else becomes U+FFFD (the common
 * sanitiser's rule, fsc/utf8.h). Truncation
 * counts characters, never cutting a sequence in half.
 */
#include "sbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/common.h"
#include "fsc/utf8.h"

void fsc__sb_free(fsc__sb_t *sb)
{
    free(sb->p);
    memset(sb, 0, sizeof *sb);
}

int fsc__sb_failed(const fsc__sb_t *sb)
{
    return sb->failed;
}

char *fsc__sb_take(fsc__sb_t *sb, size_t *len)
{
    fsc__sb_put(sb, "", 0); /* make sure a buffer exists */
    if (sb->failed) {
        fsc__sb_free(sb);
        return NULL;
    }
    char *p = sb->p;
    if (len != NULL)
        *len = sb->len;
    memset(sb, 0, sizeof *sb);
    return p;
}

static int reserve(fsc__sb_t *sb, size_t extra)
{
    if (sb->failed)
        return -1;
    if (sb->len + extra + 1 <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 4096;
    while (cap < sb->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            sb->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    char *p = realloc(sb->p, cap);
    if (p == NULL) {
        sb->failed = 1;
        return -1;
    }
    sb->p = p;
    sb->cap = cap;
    return 0;
}

void fsc__sb_put(fsc__sb_t *sb, const void *s, size_t n)
{
    if (reserve(sb, n) != 0)
        return;
    if (n > 0)
        memcpy(sb->p + sb->len, s, n);
    sb->len += n;
    sb->p[sb->len] = '\0';
}

void fsc__sb_puts(fsc__sb_t *sb, const char *s)
{
    fsc__sb_put(sb, s, strlen(s));
}

void fsc__sb_printf(fsc__sb_t *sb, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        fsc__sb_put(sb, small, (size_t)n);
        return;
    }
    if (reserve(sb, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(sb->p + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

static const char k_ellipsis[] = "\xe2\x80\xa6";
static const char k_replacement[] = FSC__UTF8_REPLACEMENT;

void fsc__sb_html(fsc__sb_t *sb, const char *s, size_t max_chars)
{
    if (s == NULL)
        return;
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    size_t chars = 0;
    while (*p != '\0') {
        if (max_chars > 0 && chars == max_chars) {
            fsc__sb_puts(sb, k_ellipsis);
            return;
        }
        chars++;
        int n = fsc__utf8_seq(p, (size_t)(end - p));
        if (n < 0) {
            fsc__sb_puts(sb, k_replacement);
            p += -n;
            continue;
        }
        if (n > 1) {
            fsc__sb_put(sb, p, (size_t)n);
            p += n;
            continue;
        }
        switch (*p) {
        case '&': fsc__sb_puts(sb, "&amp;"); break;
        case '<': fsc__sb_puts(sb, "&lt;"); break;
        case '>': fsc__sb_puts(sb, "&gt;"); break;
        case '"': fsc__sb_puts(sb, "&quot;"); break;
        case '\'': fsc__sb_puts(sb, "&#39;"); break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t')
                fsc__sb_puts(sb, k_replacement);
            else
                fsc__sb_put(sb, p, 1);
        }
        p++;
    }
}

void fsc__sb_html_size(fsc__sb_t *sb, uint64_t bytes)
{
    char buf[64];
    fsc__sb_html(sb, fsc_size_format(bytes, buf, sizeof buf), 0);
}

void fsc__sb_json_str(fsc__sb_t *sb, const char *s, size_t max_chars)
{
    if (s == NULL) {
        fsc__sb_puts(sb, "null");
        return;
    }
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    size_t chars = 0;
    fsc__sb_put(sb, "\"", 1);
    while (*p != '\0') {
        if (max_chars > 0 && chars == max_chars) {
            fsc__sb_puts(sb, k_ellipsis);
            break;
        }
        chars++;
        int n = fsc__utf8_seq(p, (size_t)(end - p));
        if (n < 0) {
            fsc__sb_puts(sb, "\\ufffd");
            p += -n;
            continue;
        }
        if (n > 1) {
            /* U+2028/U+2029 are legal JSON but not legal in older JS
             * string literals; escape them for any consumer. */
            if (n == 3 && p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9))
                fsc__sb_printf(sb, "\\u%04x", 0x2000u | (p[2] == 0xA8 ? 0x28u : 0x29u));
            else
                fsc__sb_put(sb, p, (size_t)n);
            p += n;
            continue;
        }
        switch (*p) {
        case '"': fsc__sb_puts(sb, "\\\""); break;
        case '\\': fsc__sb_puts(sb, "\\\\"); break;
        case '\n': fsc__sb_puts(sb, "\\n"); break;
        case '\t': fsc__sb_puts(sb, "\\t"); break;
        case '\r': fsc__sb_puts(sb, "\\r"); break;
        case '<': fsc__sb_puts(sb, "\\u003c"); break;
        case '>': fsc__sb_puts(sb, "\\u003e"); break;
        case '&': fsc__sb_puts(sb, "\\u0026"); break;
        default:
            if (*p < 0x20)
                fsc__sb_printf(sb, "\\u%04x", (unsigned)*p);
            else
                fsc__sb_put(sb, p, 1);
        }
        p++;
    }
    fsc__sb_put(sb, "\"", 1);
}

const char *fsc__utf8_tail(const char *s, size_t max_chars)
{
    const char *p = s + strlen(s);
    size_t chars = 0;
    while (p > s && chars < max_chars) {
        p--;
        if (((unsigned char)*p & 0xC0) != 0x80) /* not a continuation byte */
            chars++;
    }
    return p;
}

/* ---- JSON writer -------------------------------------------------------- */

void fsc__js_init(fsc__js_t *js, fsc__sb_t *sb)
{
    memset(js, 0, sizeof *js);
    js->sb = sb;
}

static void member(fsc__js_t *js, const char *key)
{
    if (js->has_item[js->depth])
        fsc__sb_put(js->sb, ",", 1);
    js->has_item[js->depth] = 1;
    if (key != NULL) {
        fsc__sb_json_str(js->sb, key, 0);
        fsc__sb_put(js->sb, ":", 1);
    }
}

static void open_(fsc__js_t *js, const char *key, char c)
{
    member(js, key);
    fsc__sb_put(js->sb, &c, 1);
    if (js->depth + 1 >= FSC__JS_DEPTH) {
        js->sb->failed = 1; /* a programming error: nesting is fixed */
        return;
    }
    js->depth++;
    js->has_item[js->depth] = 0;
}

void fsc__js_obj(fsc__js_t *js, const char *key)
{
    open_(js, key, '{');
}

void fsc__js_arr(fsc__js_t *js, const char *key)
{
    open_(js, key, '[');
}

void fsc__js_end(fsc__js_t *js, char close)
{
    if (js->depth > 0)
        js->depth--;
    fsc__sb_put(js->sb, &close, 1);
}

void fsc__js_int(fsc__js_t *js, const char *key, int64_t v)
{
    member(js, key);
    fsc__sb_printf(js->sb, "%lld", (long long)v);
}

void fsc__js_num(fsc__js_t *js, const char *key, double v)
{
    member(js, key);
    if (!isfinite(v))
        fsc__sb_puts(js->sb, "null");
    else if (v == floor(v) && fabs(v) < 9.0e15)
        fsc__sb_printf(js->sb, "%lld", (long long)v);
    else
        fsc__sb_printf(js->sb, "%.6g", v);
}

void fsc__js_bool(fsc__js_t *js, const char *key, int v)
{
    member(js, key);
    fsc__sb_puts(js->sb, v ? "true" : "false");
}

void fsc__js_null(fsc__js_t *js, const char *key)
{
    member(js, key);
    fsc__sb_puts(js->sb, "null");
}

void fsc__js_str(fsc__js_t *js, const char *key, const char *s, size_t max_chars)
{
    member(js, key);
    fsc__sb_json_str(js->sb, s, max_chars);
}
