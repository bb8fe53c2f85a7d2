/*
 * sbuf.h — the viewer's output buffer and its escaping writers (internal).
 *
 * The report is assembled in memory (it is small by construction) and each
 * piece of text goes in through the writer of its context: HTML text and
 * attributes, or JSON strings embedded in a <script> block. Both writers
 * replace invalid UTF-8 with U+FFFD so a corrupt tag cannot produce a broken
 * page. An allocation failure is sticky: later writes are ignored and
 * fsc__sb_failed() reports it once at the end.
 */
#ifndef FSC_VIEWER_SBUF_H
#define FSC_VIEWER_SBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct fsc__sb {
    char *p;
    size_t len, cap;
    int failed;
} fsc__sb_t;

void fsc__sb_free(fsc__sb_t *sb);
int fsc__sb_failed(const fsc__sb_t *sb);
/* Hand the buffer (NUL-terminated) to the caller; sb is left empty. */
char *fsc__sb_take(fsc__sb_t *sb, size_t *len);

void fsc__sb_put(fsc__sb_t *sb, const void *s, size_t n);
void fsc__sb_puts(fsc__sb_t *sb, const char *s);
void fsc__sb_printf(fsc__sb_t *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* HTML text or attribute value: & < > " ' become character references.
 * max_chars > 0 truncates after that many characters, adding "…". */
void fsc__sb_html(fsc__sb_t *sb, const char *s, size_t max_chars);
/* Byte count in HTML with binary units ("20.51 GiB"). */
void fsc__sb_html_size(fsc__sb_t *sb, uint64_t bytes);

/* A quoted JSON string safe inside <script>: '<', '>' and '&' are written as
 * \u003c, \u003e, \u0026, so no data can close the script element. NULL is
 * written as null. max_chars as above. */
void fsc__sb_json_str(fsc__sb_t *sb, const char *s, size_t max_chars);

/* Start of the last max_chars characters of s (s itself when it is not
 * longer): long tag paths are shown by their tail, the innermost names. */
const char *fsc__utf8_tail(const char *s, size_t max_chars);

/* ---- a small JSON writer over an fsc__sb_t ---------------------------- */

#define FSC__JS_DEPTH 32

typedef struct fsc__js {
    fsc__sb_t *sb;
    int depth;
    unsigned char has_item[FSC__JS_DEPTH];
} fsc__js_t;

void fsc__js_init(fsc__js_t *js, fsc__sb_t *sb);
/* key is the member name inside an object, NULL inside an array. */
void fsc__js_obj(fsc__js_t *js, const char *key);
void fsc__js_arr(fsc__js_t *js, const char *key);
void fsc__js_end(fsc__js_t *js, char close);
void fsc__js_int(fsc__js_t *js, const char *key, int64_t v);
/* Non-finite numbers are written as null. */
void fsc__js_num(fsc__js_t *js, const char *key, double v);
void fsc__js_bool(fsc__js_t *js, const char *key, int v);
void fsc__js_null(fsc__js_t *js, const char *key);
void fsc__js_str(fsc__js_t *js, const char *key, const char *s, size_t max_chars);

#endif
