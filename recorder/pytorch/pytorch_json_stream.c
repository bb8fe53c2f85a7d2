/*
 * pytorch_json_stream.c — reads a JSON memory snapshot (the dict of
 * torch.cuda.memory._snapshot() written with json.dump) without building
 * its history: see pytorch_json_stream.h for the contract, which is the
 * one of fsc__pickle_stream.
 *
 * Written by hand, not with cJSON (which the project links): cJSON builds
 * the whole document as its own tree before anything can be read, so a
 * snapshot of a few hundred MB costs many times its size in memory, and it
 * keeps every number as a double, which rounds addresses and times above
 * 2^53 and turns PyTorch's 2^64 - 1 "unknown line" into a float. The small
 * scanner of pytorch_json.c reads the JSON of records, whose values are
 * small and trusted to be well formed once their span is found; a snapshot
 * needs one forward pass that checks everything as it goes and builds
 * values in two places, so this is a separate reader.
 *
 * What it builds is what the pickle reader builds for the same dict: STR
 * (UTF-8, escapes decoded, \uXXXX surrogate pairs joined; a lone surrogate
 * is kept as its three-byte form, the bytes pickle writes for it), INT
 * for integers in int64 and BIGINT (its decimal text) beyond, FLOAT for
 * numbers with a fraction or exponent, BOOL, NONE, LIST and DICT. Python's
 * json module also reads NaN, Infinity and -Infinity and json.dump writes
 * them: so does this reader. Duplicate keys are all kept; fsc__pv_get
 * returns the last, as a Python dict would hold.
 *
 * Memory: values outside the history go to the document's arena; an
 * entry's values go to a scratch arena rewound once the entry has been
 * handed over, and its strings without escapes point into the input (the
 * passes that read no stack step over the entries' 'frames', checking them
 * as usual but building nothing). The
 * parser keeps an explicit stack (no recursion), nesting is limited to
 * FSC__PICKLE_MAX_DEPTH levels, every number to FSC__JSON_MAX_NUMBER
 * characters, and all memory (document, scratch, stacks) to
 * FSC__PICKLE_MEM_FACTOR bytes per input byte + 1 MiB, checked before
 * each allocation. Input bytes are checked as UTF-8 inside strings; raw
 * control characters there are refused, as Python's json.load does.
 */
#include "pytorch_json_stream.h"
#include "text_codec.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "fsc/vec.h"

/* ---- scratch arena: one entry's values -------------------------------- */

typedef struct jchunk {
    struct jchunk *next;
    size_t cap, used;
    max_align_t data[];
} jchunk_t;

#define JCHUNK_MIN ((size_t)64 * 1024)

enum { R_OTHER = 0, R_ROOT, R_TRACES, R_DEVLIST, R_FRAMES };

typedef struct jframe {
    uint8_t kind;        /* FSC__PV_LIST or FSC__PV_DICT */
    uint8_t role;        /* R_* */
    uint8_t quiet;       /* R_TRACES/R_DEVLIST of a 'device_traces' not streamed */
    uint8_t traces_next; /* R_ROOT: the key just read is 'device_traces' */
    uint8_t skip_next;   /* an entry: the key just read is 'frames', not wanted */
    uint8_t frames_next; /* an entry: the key just read is 'frames' (R_FRAMES) */
    uint8_t drop_next;   /* R_ROOT: leave the next value and its key out */
    uint16_t maxd;       /* deepest item so far */
    size_t base;         /* first item in the value stack */
    size_t at;           /* offset of the opening bracket */
    fsc__pv_t *dev;      /* R_DEVLIST: the kept list, counting its entries */
    uint32_t devidx;
} jframe_t;

typedef struct jparse {
    const uint8_t *s;
    size_t len, pos;
    const char *name;
    fsc_err_t *err;
    const fsc__pstream_t *cb;
    int cb_rc;
    fsc__pdoc_t *d;
    size_t budget, mem; /* mem: bytes of scratch, stacks and buffers */
    jchunk_t *chunks, *cur;
    fsc__pv_t **vs;
    size_t vn, vcap;
    jframe_t fr[FSC__PICKLE_MAX_DEPTH];
    size_t nf;
    size_t entry_level; /* nonzero inside a history entry: frames below it are kept */
    size_t skip_level;  /* nonzero inside an entry's 'frames' that cb->skip_frames
                           steps over: checked as usual, nothing built */
    char *tbuf;         /* decoded strings and numbers of the kept tree */
    size_t tcap;
    size_t traces_at, streamed_at, last_traces;
    uint32_t traces_seen;
    fsc__pv_t none, yes, no; /* the entries' shared constants */
    fsc__pv_t dropped;       /* what values stepped over are read into */
    struct jframe_dict *frames; /* the entries' frame dicts met, by their text */
    size_t frames_bytes;        /* what they hold */
} jparse_t;

static int jerr(jparse_t *p, int code, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int jerr(jparse_t *p, int code, size_t at, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fsc_err_set(p->err, code, "%s: offset %zu: %s", p->name, at, what);
}

static int nomem(jparse_t *p)
{
    return jerr(p, FSC_ELIMIT, p->pos, "needs more memory than allowed for a %zu-byte input",
                p->len);
}

/* Room for n more bytes under the budget. */
static int take(jparse_t *p, size_t n)
{
    size_t used = fsc__pdoc_mem(p->d) + p->mem;
    if (n > p->budget || used > p->budget - n)
        return nomem(p);
    return 0;
}

static void *s_alloc(jparse_t *p, size_t n)
{
    n = (n + 7u) & ~(size_t)7u;
    jchunk_t *c = p->cur;
    if (c != NULL && c->cap - c->used >= n) {
        void *r = (char *)c->data + c->used;
        c->used += n;
        return r;
    }
    jchunk_t *next = c != NULL ? c->next : p->chunks;
    if (next == NULL || next->cap < n) {
        size_t cap = n > JCHUNK_MIN ? n : JCHUNK_MIN;
        if (take(p, cap + sizeof *next) != 0)
            return NULL;
        jchunk_t *nc = malloc(sizeof *nc + cap);
        if (nc == NULL) {
            jerr(p, FSC_ENOMEM, p->pos, "out of memory");
            return NULL;
        }
        p->mem += cap + sizeof *nc;
        nc->cap = cap;
        nc->next = next;
        if (c != NULL)
            c->next = nc;
        else
            p->chunks = nc;
        next = nc;
    }
    next->used = n;
    p->cur = next;
    return next->data;
}

static void s_rewind(jparse_t *p)
{
    if (p->chunks != NULL)
        p->chunks->used = 0;
    p->cur = p->chunks;
}

static int tbuf_room(jparse_t *p, size_t n)
{
    if (n <= p->tcap)
        return 0;
    if (take(p, n - p->tcap) != 0)
        return FSC_ELIMIT;
    char *nb = realloc(p->tbuf, n);
    if (nb == NULL)
        return jerr(p, FSC_ENOMEM, p->pos, "out of memory");
    p->mem += n - p->tcap;
    p->tbuf = nb;
    p->tcap = n;
    return 0;
}

/* ---- values ------------------------------------------------------------ */

static int in_entry(const jparse_t *p) { return p->entry_level != 0; }

static fsc__pv_t *scalar(jparse_t *p, fsc__pv_kind_t kind)
{
    fsc__pv_t *v;
    if (p->skip_level != 0)
        return &p->dropped; /* not kept: add_value drops it */
    if (in_entry(p)) {
        v = s_alloc(p, sizeof *v);
        if (v != NULL) {
            memset(v, 0, sizeof *v);
            v->kind = (uint8_t)kind;
            v->depth = 1;
        }
        return v;
    }
    if (take(p, 2 * sizeof *v) != 0)
        return NULL;
    if ((v = fsc__pdoc_scalar(p->d, kind)) == NULL)
        jerr(p, FSC_ENOMEM, p->pos, "out of memory");
    return v;
}

/* A string (or BIGINT text) of n bytes at s. In an entry it points to s,
 * which is the input or the scratch arena; in the tree it is copied. */
static fsc__pv_t *text(jparse_t *p, fsc__pv_kind_t kind, const char *s, size_t n)
{
    if (n > UINT32_MAX) {
        jerr(p, FSC_ELIMIT, p->pos, "a string of %zu bytes is too long", n);
        return NULL;
    }
    fsc__pv_t *v;
    if (p->skip_level != 0)
        return &p->dropped;
    if (in_entry(p)) {
        if ((v = scalar(p, kind)) != NULL) {
            v->u.s = s;
            v->len = (uint32_t)n;
        }
        return v;
    }
    if (take(p, 2 * sizeof *v + n + 8) != 0)
        return NULL;
    if ((v = fsc__pdoc_str(p->d, s, n)) == NULL) {
        jerr(p, FSC_ENOMEM, p->pos, "out of memory");
        return NULL;
    }
    v->kind = (uint8_t)kind;
    return v;
}

static int vpush(jparse_t *p, fsc__pv_t *v)
{
    if (p->vn == p->vcap) {
        size_t cap = p->vcap;
        size_t ncap = cap < 64 ? 64 : cap * 2;
        if (take(p, (ncap - cap) * sizeof *p->vs) != 0)
            return FSC_ELIMIT;
        if (fsc__vec_reserve(&p->vs, &cap, ncap, sizeof *p->vs) != 0)
            return jerr(p, FSC_ENOMEM, p->pos, "out of memory");
        p->mem += (cap - p->vcap) * sizeof *p->vs;
        p->vcap = cap;
    }
    p->vs[p->vn++] = v;
    return 0;
}

/* A complete value: the root, an item of the open container, or an entry
 * of a history list (handed over, then its memory reused). */
static int add_value(jparse_t *p, fsc__pv_t *v)
{
    if (p->nf == 0) {
        fsc__pdoc_set_root(p->d, v);
        return 0;
    }
    if (p->skip_level != 0) {
        if (p->nf > p->skip_level)
            return 0; /* inside the frames stepped over */
        p->skip_level = 0;
        v = &p->none; /* the entry holds None there, as from a pickle */
    }
    jframe_t *f = &p->fr[p->nf - 1];
    if (f->role == R_DEVLIST) {
        fsc__pv_t *dl = f->dev;
        if (!f->quiet && p->cb != NULL && p->cb->entry != NULL) {
            int rc = p->cb->entry(p->cb->ud, f->devidx, dl->aux, v);
            if (rc != 0) {
                p->cb_rc = rc;
                return rc;
            }
        }
        if (dl->aux == UINT32_MAX)
            return jerr(p, FSC_ELIMIT, p->pos, "more than %u history entries in one list",
                        UINT32_MAX);
        dl->aux++;
        p->entry_level = 0;
        s_rewind(p);
        return 0;
    }
    if (f->drop_next) { /* a 'device_traces' Python would not keep, and its key */
        f->drop_next = 0;
        p->vn--;
        return 0;
    }
    if (v->depth > f->maxd)
        f->maxd = v->depth;
    return vpush(p, v);
}

/* Frame dicts: an entry's stack spells out every frame, and the same
 * frames recur in every step. Each distinct one (by its text) is kept once,
 * so the importer finds it by address, as it finds the frame dicts a
 * pickle shares through its memo, instead of naming it anew per entry.
 * Bounded: past FRAMES_MAX bytes, frames stay in the scratch arena. */
typedef struct jframe_dict {
    UT_hash_handle hh;
    const fsc__pv_t *node; /* in the document */
    char text[];           /* the key: a copy, the file's pages are handed back */
} jframe_dict_t;

#define FRAMES_MAX ((size_t)64 << 20)

/* v, built in the scratch arena, copied into the document. */
static fsc__pv_t *keep_copy(jparse_t *p, const fsc__pv_t *v)
{
    fsc__pv_t *c = NULL;
    switch (v->kind) {
    case FSC__PV_STR:
    case FSC__PV_BIGINT:
        if (take(p, 2 * sizeof *c + v->len + 8) != 0)
            return NULL;
        if ((c = fsc__pdoc_str(p->d, v->u.s, v->len)) != NULL)
            c->kind = v->kind;
        break;
    case FSC__PV_LIST:
    case FSC__PV_DICT: {
        uint32_t n = v->kind == FSC__PV_DICT ? 2 * v->len : v->len;
        if (take(p, 2 * sizeof *c + (size_t)n * sizeof *c->u.items) != 0)
            return NULL;
        if ((c = fsc__pdoc_container(p->d, (fsc__pv_kind_t)v->kind, v->len)) == NULL)
            break;
        for (uint32_t i = 0; i < n; i++) {
            fsc__pv_t *it = keep_copy(p, v->u.items[i]);
            if (it == NULL)
                return NULL;
            if (fsc__pdoc_push(p->d, c, it) != 0)
                c = NULL; /* not reached: the depth was checked */
            if (c == NULL)
                break;
        }
        break;
    }
    default:
        if (take(p, 2 * sizeof *c) != 0)
            return NULL;
        if ((c = fsc__pdoc_scalar(p->d, (fsc__pv_kind_t)v->kind)) != NULL)
            c->u = v->u;
        break;
    }
    if (c == NULL)
        jerr(p, FSC_ENOMEM, p->pos, "out of memory");
    return c;
}

/* The frame dict whose text is s[at, end), built as v: the kept one. */
static fsc__pv_t *frame_dict(jparse_t *p, size_t at, size_t end, fsc__pv_t *v)
{
    const uint8_t *key = p->s + at;
    size_t klen = end - at;
    jframe_dict_t *e = NULL;
    HASH_FIND(hh, p->frames, key, klen, e);
    if (e != NULL)
        return (fsc__pv_t *)e->node;
    size_t before = fsc__pdoc_mem(p->d), own = sizeof *e + klen;
    if (p->frames_bytes > FRAMES_MAX || take(p, own) != 0)
        return v;
    fsc__pv_t *k = keep_copy(p, v);
    if (k == NULL)
        return NULL;
    if ((e = malloc(own)) == NULL) {
        jerr(p, FSC_ENOMEM, p->pos, "out of memory");
        return NULL;
    }
    memcpy(e->text, key, klen);
    e->node = k;
    HASH_ADD_KEYPTR(hh, p->frames, e->text, klen, e);
    p->mem += own;
    p->frames_bytes += own + (fsc__pdoc_mem(p->d) - before);
    return k;
}

/* The items above f->base become the container of frame f. */
static int close_container(jparse_t *p)
{
    jframe_t *f = &p->fr[--p->nf];
    size_t n = p->vn - f->base;
    fsc__pv_t **items = p->vs + f->base;
    fsc__pv_t *c;
    if (p->skip_level != 0) {
        c = &p->dropped;
    } else if (f->role == R_DEVLIST) {
        c = f->dev;
    } else {
        int dict = f->kind == FSC__PV_DICT;
        size_t pairs = dict ? n / 2 : n;
        if (pairs > UINT32_MAX / 2)
            return jerr(p, FSC_ELIMIT, f->at, "a container of %zu items is too large", pairs);
        if (in_entry(p)) {
            c = s_alloc(p, sizeof *c + n * sizeof *items);
            if (c == NULL)
                return FSC_ELIMIT;
            memset(c, 0, sizeof *c);
            c->kind = f->kind;
            c->depth = (uint16_t)(f->maxd + 1);
            c->len = (uint32_t)pairs;
            c->cap = (uint32_t)n;
            c->u.items = (fsc__pv_t **)(c + 1);
            if (n > 0)
                memcpy(c->u.items, items, n * sizeof *items);
            if (dict && p->nf > 0 && p->fr[p->nf - 1].role == R_FRAMES &&
                (c = frame_dict(p, f->at, p->pos, c)) == NULL)
                return FSC_ELIMIT;
        } else {
            if (take(p, 2 * sizeof *c + n * sizeof *items) != 0)
                return FSC_ELIMIT;
            c = fsc__pdoc_container(p->d, (fsc__pv_kind_t)f->kind, (uint32_t)pairs);
            if (c == NULL)
                return jerr(p, FSC_ENOMEM, f->at, "out of memory");
            for (size_t i = 0; i < n; i++) {
                int rc = fsc__pdoc_push(p->d, c, items[i]);
                if (rc != 0)
                    return rc == FSC_ELIMIT ? jerr(p, rc, f->at,
                                                   "JSON nested deeper than %d levels",
                                                   FSC__PICKLE_MAX_DEPTH)
                                            : jerr(p, rc, f->at, "out of memory");
            }
        }
    }
    p->vn = f->base;
    return add_value(p, c);
}

/* ---- tokens ------------------------------------------------------------ */

static int ends(jparse_t *p, size_t at, const char *inside)
{
    return jerr(p, FSC_EFORMAT, p->len, "invalid JSON: the text ends inside %s (from offset %zu)",
                inside, at);
}

static void skip_ws(jparse_t *p)
{
    const uint8_t *s = p->s;
    size_t i = p->pos, n = p->len;
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
        i++;
    p->pos = i;
}

/* Length of the UTF-8 sequence at s[0] (a byte >= 0x80), or 0 when it is
 * not well formed (overlong, surrogate, beyond U+10FFFF, cut). */
static size_t utf8_len(const uint8_t *s, size_t left)
{
    uint8_t c = s[0];
    size_t n;
    uint8_t lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (left < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* The escapes of s[a, b) (a string's body, already checked to end) into o,
 * which has room for b - a bytes (no escape decodes longer than itself). */
static int unescape(jparse_t *p, size_t a, size_t b, char *o, size_t *olen)
{
    const uint8_t *s = p->s;
    size_t n = 0;
    for (size_t i = a; i < b;) {
        if (s[i] != '\\') {
            o[n++] = (char)s[i++];
            continue;
        }
        size_t at = i;
        uint8_t c = s[i + 1]; /* the body never ends with a lone backslash */
        i += 2;
        switch (c) {
        case '"': o[n++] = '"'; break;
        case '\\': o[n++] = '\\'; break;
        case '/': o[n++] = '/'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (b - i < 4 || !fsc__hex_read(s + i, 4, &cp))
                return jerr(p, FSC_EFORMAT, at,
                            "invalid JSON: \\u is not followed by four hex digits");
            i += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && b - i >= 6 && s[i] == '\\' && s[i + 1] == 'u' &&
                fsc__hex_read(s + i + 2, 4, &lo) && lo >= 0xdc00 && lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                i += 6;
            }
            n += fsc__utf8_put(o + n, cp);
            break;
        }
        default:
            if (c < 0x20 || c >= 0x7f)
                return jerr(p, FSC_EFORMAT, at, "invalid JSON: bad escape \\x%02x", c);
            return jerr(p, FSC_EFORMAT, at, "invalid JSON: bad escape \\%c", c);
        }
    }
    *olen = n;
    return 0;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* The first byte at or after i that is not plain string text (a quote, a
 * backslash, a control character or a byte >= 0x80), or n: eight bytes at
 * a time while none of them is (most of a snapshot is file names). */
static size_t plain_run(const uint8_t *s, size_t i, size_t n)
{
    while (n - i >= 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
        uint64_t hit = ((q - ONES) & ~q) | ((b - ONES) & ~b) | (w - ONES * 0x20) | w;
        if (hit & HIGHS)
            break;
        i += 8;
    }
    while (i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
        i++;
    return i;
}

/* The string at p->pos (its opening quote) as a STR value; with match !=
 * NULL also whether it is that text (*is). */
static int read_string(jparse_t *p, fsc__pv_t **out, const char *match, int *is)
{
    const uint8_t *s = p->s;
    size_t start = p->pos, i = start + 1, n = p->len;
    int esc = 0;
    for (;;) {
        i = plain_run(s, i, n);
        if (i >= n)
            return ends(p, start, "a string");
        uint8_t c = s[i];
        if (c == '"')
            break;
        if (c == '\\') {
            if (i + 1 >= n)
                return ends(p, start, "a string");
            esc = 1;
            i += 2;
        } else if (c < 0x20) {
            return jerr(p, FSC_EFORMAT, i,
                        "invalid JSON: control character 0x%02x inside a string", c);
        } else {
            size_t k = utf8_len(s + i, n - i);
            if (k == 0)
                return jerr(p, FSC_EFORMAT, i, "invalid UTF-8 byte 0x%02x inside a string", c);
            i += k;
        }
    }
    p->pos = i + 1;
    const char *body = (const char *)s + start + 1;
    size_t blen = i - start - 1;
    if (esc) {
        char *o;
        if (in_entry(p)) {
            if ((o = s_alloc(p, blen)) == NULL)
                return FSC_ELIMIT;
        } else {
            int rc = tbuf_room(p, blen);
            if (rc != 0)
                return rc;
            o = p->tbuf;
        }
        int rc = unescape(p, start + 1, i, o, &blen);
        if (rc != 0)
            return rc;
        body = o;
    }
    if (match != NULL)
        *is = blen == strlen(match) && memcmp(body, match, blen) == 0;
    return (*out = text(p, FSC__PV_STR, body, blen)) != NULL ? 0 : FSC_ELIMIT;
}

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

static int read_number(jparse_t *p, fsc__pv_t **out)
{
    const uint8_t *s = p->s;
    size_t start = p->pos, i = start, n = p->len;
    int neg = 0, frac = 0;
    if (s[i] == '-') {
        neg = 1;
        i++;
        if (n - i >= 8 && memcmp(s + i, "Infinity", 8) == 0) {
            p->pos = i + 8;
            if ((*out = scalar(p, FSC__PV_FLOAT)) != NULL)
                (*out)->u.f = -(double)INFINITY;
            return *out != NULL ? 0 : FSC_ELIMIT;
        }
    }
    if (i >= n)
        return ends(p, start, "a number");
    uint64_t v = 0;
    int fits = 1;
    if (s[i] == '0') {
        i++;
    } else if (is_digit(s[i])) {
        for (; i < n && is_digit(s[i]); i++) {
            unsigned dg = (unsigned)(s[i] - '0');
            if (v > (UINT64_MAX - dg) / 10)
                fits = 0;
            else
                v = v * 10 + dg;
        }
    } else {
        return jerr(p, FSC_EFORMAT, start, "invalid JSON: '-' is not followed by a digit");
    }
    if (i < n && s[i] == '.') {
        frac = 1;
        if (++i >= n || !is_digit(s[i]))
            return jerr(p, FSC_EFORMAT, start,
                        "invalid JSON: a number's '.' is not followed by a digit");
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        frac = 1;
        if (++i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !is_digit(s[i]))
            return jerr(p, FSC_EFORMAT, start,
                        "invalid JSON: a number's exponent has no digits");
        while (i < n && is_digit(s[i]))
            i++;
    }
    size_t len = i - start;
    if (len > FSC__JSON_MAX_NUMBER)
        return jerr(p, FSC_ELIMIT, start, "a number of %zu characters (at most %d)", len,
                    FSC__JSON_MAX_NUMBER);
    p->pos = i;
    if (frac) {
        char buf[FSC__JSON_MAX_NUMBER + 1];
        memcpy(buf, s + start, len);
        buf[len] = '\0';
        double x = strtod(buf, NULL); /* beyond the double range: +-inf, as in Python */
        if ((*out = scalar(p, FSC__PV_FLOAT)) != NULL)
            (*out)->u.f = x;
    } else if (fits && (neg ? v <= (uint64_t)INT64_MAX + 1u : v <= (uint64_t)INT64_MAX)) {
        if ((*out = scalar(p, FSC__PV_INT)) != NULL)
            (*out)->u.i = neg ? (int64_t)(0u - v) : (int64_t)v;
    } else {
        *out = text(p, FSC__PV_BIGINT, (const char *)s + start, len);
    }
    return *out != NULL ? 0 : FSC_ELIMIT;
}

/* true, false, null, NaN, Infinity. */
static int read_word(jparse_t *p, fsc__pv_t **out)
{
    static const struct {
        const char *w;
        size_t n;
        int kind;
    } k_words[] = {{"true", 4, FSC__PV_BOOL},   {"false", 5, FSC__PV_BOOL},
                   {"null", 4, FSC__PV_NONE},   {"NaN", 3, FSC__PV_FLOAT},
                   {"Infinity", 8, FSC__PV_FLOAT}};
    const uint8_t *s = p->s + p->pos;
    size_t left = p->len - p->pos;
    for (size_t k = 0; k < sizeof k_words / sizeof k_words[0]; k++) {
        size_t n = k_words[k].n;
        if (memcmp(s, k_words[k].w, left < n ? left : n) != 0)
            continue;
        if (left < n)
            return ends(p, p->pos, "a literal");
        p->pos += n;
        if (in_entry(p) && k_words[k].kind != FSC__PV_FLOAT) {
            *out = k == 0 ? &p->yes : k == 1 ? &p->no : &p->none;
            return 0;
        }
        if ((*out = scalar(p, (fsc__pv_kind_t)k_words[k].kind)) == NULL)
            return FSC_ELIMIT;
        if (k == 0)
            (*out)->u.i = 1;
        else if (k == 3)
            (*out)->u.f = (double)NAN;
        else if (k == 4)
            (*out)->u.f = (double)INFINITY;
        return 0;
    }
    uint8_t c = s[0];
    if (c >= 0x20 && c < 0x7f)
        return jerr(p, FSC_EFORMAT, p->pos, "invalid JSON: unexpected '%c'", c);
    return jerr(p, FSC_EFORMAT, p->pos, "invalid JSON: unexpected byte 0x%02x", c);
}

/* ---- structure --------------------------------------------------------- */

/* A '[' or '{' at p->pos opens a container: its role follows from where
 * it is (the top-level dict; its 'device_traces' list; the lists in it). */
static int open_container(jparse_t *p, uint8_t kind)
{
    if (p->nf == FSC__PICKLE_MAX_DEPTH)
        return jerr(p, FSC_ELIMIT, p->pos, "JSON nested deeper than %d levels",
                    FSC__PICKLE_MAX_DEPTH);
    jframe_t *up = p->nf > 0 ? &p->fr[p->nf - 1] : NULL;
    jframe_t *f = &p->fr[p->nf];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->base = p->vn;
    f->at = p->pos;
    if (up == NULL) {
        f->role = kind == FSC__PV_DICT ? R_ROOT : R_OTHER;
    } else if (up->role == R_ROOT && up->traces_next && kind == FSC__PV_LIST) {
        f->role = R_TRACES;
        f->quiet = up->drop_next;
    } else if (up->frames_next && kind == FSC__PV_LIST) {
        f->role = R_FRAMES;
    } else if (up->role == R_TRACES && kind == FSC__PV_LIST) {
        size_t idx = p->vn - up->base;
        if (take(p, 2 * sizeof *f->dev) != 0)
            return FSC_ELIMIT;
        if ((f->dev = fsc__pdoc_container(p->d, FSC__PV_LIST, 0)) == NULL)
            return jerr(p, FSC_ENOMEM, p->pos, "out of memory");
        f->role = R_DEVLIST;
        f->quiet = up->quiet;
        f->devidx = idx > UINT32_MAX ? UINT32_MAX : (uint32_t)idx;
    }
    if (up != NULL)
        up->traces_next = up->frames_next = 0;
    p->nf++;
    p->pos++;
    return 0;
}

/* Before a value inside frame f: note a top-level 'device_traces' (which
 * one is streamed) and the start of a history entry. */
static void value_starts(jparse_t *p, jframe_t *f)
{
    if (f->role == R_DEVLIST) {
        p->entry_level = p->nf;
    } else if (f->role == R_ROOT && f->traces_next) {
        int streamed = p->traces_at == 0 ? p->traces_seen == 0 : p->pos == p->traces_at;
        if (streamed)
            p->streamed_at = p->pos;
        else
            f->drop_next = 1;
        p->last_traces = p->pos;
        if (p->traces_seen < UINT32_MAX)
            p->traces_seen++;
    }
}

enum { S_VALUE, S_FIRST_ITEM, S_FIRST_KEY, S_KEY, S_AFTER, S_DONE };

static int run(jparse_t *p)
{
    int state = S_VALUE, rc = 0;
    size_t every = (size_t)4 << 20, next_progress = every;
    if (p->len >= 3 && memcmp(p->s, "\xef\xbb\xbf", 3) == 0)
        p->pos = 3; /* a UTF-8 byte order mark */
    while (rc == 0) {
        skip_ws(p);
        if (p->pos >= next_progress && p->cb != NULL && p->cb->progress != NULL) {
            p->cb->progress(p->cb->ud, p->pos, p->len);
            next_progress = p->pos + every;
        }
        if (state == S_DONE) {
            if (p->pos < p->len)
                return jerr(p, FSC_EFORMAT, p->pos,
                            "invalid JSON: more data after the end of the document");
            return 0;
        }
        if (p->pos >= p->len) {
            if (p->nf == 0)
                return jerr(p, FSC_EFORMAT, p->pos, "invalid JSON: no value");
            jframe_t *f = &p->fr[p->nf - 1];
            return ends(p, f->at, f->kind == FSC__PV_DICT ? "an object" : "an array");
        }
        uint8_t c = p->s[p->pos];
        jframe_t *f = p->nf > 0 ? &p->fr[p->nf - 1] : NULL;
        switch (state) {
        case S_FIRST_ITEM:
            if (c == ']') {
                p->pos++;
                rc = close_container(p);
                state = p->nf == 0 ? S_DONE : S_AFTER;
                break;
            }
            /* fall through */
        case S_VALUE: {
            if (f != NULL && f->skip_next) {
                f->skip_next = 0;
                p->skip_level = p->nf;
            }
            if (f != NULL)
                value_starts(p, f);
            fsc__pv_t *v = NULL;
            if (c == '[' || c == '{') {
                rc = open_container(p, c == '[' ? FSC__PV_LIST : FSC__PV_DICT);
                state = c == '[' ? S_FIRST_ITEM : S_FIRST_KEY;
                break;
            }
            if (p->nf >= FSC__PICKLE_MAX_DEPTH)
                return jerr(p, FSC_ELIMIT, p->pos, "JSON nested deeper than %d levels",
                            FSC__PICKLE_MAX_DEPTH);
            if (c == '"')
                rc = read_string(p, &v, NULL, NULL);
            else if (c == '-' || is_digit(c))
                rc = read_number(p, &v);
            else
                rc = read_word(p, &v);
            if (rc == 0) {
                if (f != NULL)
                    f->traces_next = f->frames_next = 0;
                rc = add_value(p, v);
            }
            state = p->nf == 0 ? S_DONE : S_AFTER;
            break;
        }
        case S_FIRST_KEY:
            if (c == '}') {
                p->pos++;
                rc = close_container(p);
                state = p->nf == 0 ? S_DONE : S_AFTER;
                break;
            }
            /* fall through */
        case S_KEY: {
            if (c != '"')
                return jerr(p, FSC_EFORMAT, p->pos,
                            "invalid JSON: expected a string key in the object from offset %zu",
                            f->at);
            fsc__pv_t *k = NULL;
            int is = 0;
            /* an entry's own keys: 'frames' may be stepped over */
            int entry_dict = p->entry_level != 0 && p->nf == p->entry_level + 1 &&
                             f->kind == FSC__PV_DICT;
            const char *match = f->role == R_ROOT ? "device_traces"
                                : entry_dict      ? "frames"
                                                  : NULL;
            if ((rc = read_string(p, &k, match, &is)) != 0)
                break;
            if (p->skip_level == 0 && (rc = vpush(p, k)) != 0)
                break;
            f->traces_next = (uint8_t)(is && f->role == R_ROOT);
            int skip = is && entry_dict && p->cb != NULL && p->cb->skip_frames;
            f->skip_next = (uint8_t)skip;
            f->frames_next = (uint8_t)(is && entry_dict && !skip);
            skip_ws(p);
            if (p->pos >= p->len)
                return ends(p, f->at, "an object");
            if (p->s[p->pos] != ':')
                return jerr(p, FSC_EFORMAT, p->pos, "invalid JSON: expected ':' after a key");
            p->pos++;
            state = S_VALUE;
            break;
        }
        case S_AFTER:
            if (c == ',') {
                p->pos++;
                state = f->kind == FSC__PV_DICT ? S_KEY : S_VALUE;
            } else if (c == (f->kind == FSC__PV_DICT ? '}' : ']')) {
                p->pos++;
                rc = close_container(p);
                state = p->nf == 0 ? S_DONE : S_AFTER;
            } else {
                return jerr(p, FSC_EFORMAT, p->pos, "invalid JSON: expected ',' or '%c'",
                            f->kind == FSC__PV_DICT ? '}' : ']');
            }
            break;
        default: return jerr(p, FSC_EFORMAT, p->pos, "invalid JSON"); /* not reached */
        }
    }
    return rc;
}

int fsc__json_stream(const void *data, size_t len, const char *name, size_t traces_at,
                     const fsc__pstream_t *cb, fsc__pdoc_t **out, size_t *redo_at,
                     fsc_err_t *err)
{
    *out = NULL;
    if (redo_at != NULL)
        *redo_at = 0;
    jparse_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
    p->s = data;
    p->len = len;
    p->name = name;
    p->err = err;
    p->cb = cb;
    p->traces_at = traces_at;
    p->budget = len > (SIZE_MAX - (1u << 20)) / FSC__PICKLE_MEM_FACTOR
                    ? SIZE_MAX
                    : len * FSC__PICKLE_MEM_FACTOR + (1u << 20);
    p->none.kind = FSC__PV_NONE;
    p->yes.kind = p->no.kind = FSC__PV_BOOL;
    p->yes.u.i = 1;
    p->none.depth = p->yes.depth = p->no.depth = p->dropped.depth = 1;
    int rc = fsc__pdoc_new(&p->d);
    if (rc != 0)
        rc = fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
    else
        rc = run(p);
    if (p->cb_rc != 0)
        rc = p->cb_rc;
    if (rc == 0 && redo_at != NULL && p->traces_seen > 1 && p->last_traces != p->streamed_at)
        *redo_at = p->last_traces;
    for (jchunk_t *c = p->chunks, *nx; c != NULL; c = nx) {
        nx = c->next;
        free(c);
    }
    free(p->vs);
    free(p->tbuf);
    jframe_dict_t *e, *et;
    HASH_ITER (hh, p->frames, e, et) {
        HASH_DEL(p->frames, e);
        free(e);
    }
    if (rc == 0)
        *out = p->d;
    else
        fsc__pdoc_free(p->d);
    free(p);
    return rc;
}
