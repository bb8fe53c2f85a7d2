/*
 * pickle.c — reads the pickle subset of PyTorch memory snapshots into a
 * value tree (see pickle.h for the guarantees: shared memo references,
 * sealed containers, bounded depth and memory).
 *
 * The input is untrusted: every length is checked against the bytes left,
 * every memo index against what was stored, and all allocation goes through
 * one budget proportional to the input size, so no input can make the reader
 * allocate without bound, recurse, or loop.
 */
#include "pickle.h"

#include <stdlib.h>
#include <string.h>

#include "fsc/vec.h"

/* ---- arena ------------------------------------------------------------- */

typedef struct fsc__achunk {
    struct fsc__achunk *next;
    size_t used, cap;
    max_align_t data[];
} fsc__achunk_t;

struct fsc__pdoc {
    fsc__achunk_t *chunks;
    size_t mem;        /* bytes allocated (arena + parser stacks) */
    size_t budget;     /* 0 = unlimited (documents built by hand) */
    char *input;       /* copy of the parsed bytes (strings point into it) */
    const fsc__pv_t *root;
    fsc__pv_t none, yes, no;
};

#define FSC__ACHUNK_MIN (64u * 1024u)

static int budget_take(fsc__pdoc_t *d, size_t n)
{
    if (d->budget != 0 && (n > d->budget || d->mem > d->budget - n))
        return FSC_ELIMIT;
    d->mem += n;
    return 0;
}

static void *arena_alloc(fsc__pdoc_t *d, size_t n)
{
    n = (n + 7u) & ~(size_t)7u;
    fsc__achunk_t *c = d->chunks;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = n > FSC__ACHUNK_MIN ? n : FSC__ACHUNK_MIN;
        if (budget_take(d, cap) != 0)
            return NULL;
        c = malloc(sizeof *c + cap);
        if (c == NULL)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = d->chunks;
        d->chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

int fsc__pdoc_new(fsc__pdoc_t **out)
{
    fsc__pdoc_t *d = calloc(1, sizeof *d);
    if (d == NULL)
        return FSC_ENOMEM;
    d->none.kind = FSC__PV_NONE;
    d->yes.kind = d->no.kind = FSC__PV_BOOL;
    d->yes.u.i = 1;
    d->none.depth = d->yes.depth = d->no.depth = 1;
    *out = d;
    return 0;
}

void fsc__pdoc_free(fsc__pdoc_t *d)
{
    if (d == NULL)
        return;
    for (fsc__achunk_t *c = d->chunks, *n; c != NULL; c = n) {
        n = c->next;
        free(c);
    }
    free(d->input);
    free(d);
}

const fsc__pv_t *fsc__pdoc_root(const fsc__pdoc_t *d) { return d ? d->root : NULL; }
size_t fsc__pdoc_mem(const fsc__pdoc_t *d) { return d ? d->mem : 0; }
void fsc__pdoc_set_root(fsc__pdoc_t *d, const fsc__pv_t *root) { d->root = root; }

fsc__pv_t *fsc__pdoc_scalar(fsc__pdoc_t *d, fsc__pv_kind_t kind)
{
    fsc__pv_t *v = arena_alloc(d, sizeof *v);
    if (v != NULL) {
        memset(v, 0, sizeof *v);
        v->kind = (uint8_t)kind;
        v->depth = 1;
    }
    return v;
}

fsc__pv_t *fsc__pdoc_str(fsc__pdoc_t *d, const char *s, size_t len)
{
    if (len > UINT32_MAX)
        return NULL;
    fsc__pv_t *v = fsc__pdoc_scalar(d, FSC__PV_STR);
    char *copy = arena_alloc(d, len + 1);
    if (v == NULL || copy == NULL)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    v->u.s = copy;
    v->len = (uint32_t)len;
    return v;
}

fsc__pv_t *fsc__pdoc_container(fsc__pdoc_t *d, fsc__pv_kind_t kind, uint32_t cap)
{
    fsc__pv_t *v = fsc__pdoc_scalar(d, kind);
    if (v == NULL)
        return NULL;
    if (cap > 0) {
        if (kind == FSC__PV_DICT)
            cap *= 2;
        v->u.items = arena_alloc(d, (size_t)cap * sizeof(fsc__pv_t *));
        if (v->u.items == NULL)
            return NULL;
        v->cap = cap;
    }
    return v;
}

static int is_container(const fsc__pv_t *v)
{
    return v->kind == FSC__PV_LIST || v->kind == FSC__PV_TUPLE || v->kind == FSC__PV_DICT;
}

/* Append one item; for dicts the caller pushes key and value, and len counts
 * pairs (a pending key is kept in slot 2*len until its value arrives). */
static int push_raw(fsc__pdoc_t *d, fsc__pv_t *c, fsc__pv_t *item, uint32_t slot)
{
    if (slot >= c->cap) {
        if (c->cap >= (UINT32_MAX / 2))
            return FSC_ELIMIT;
        uint32_t ncap = c->cap < 4 ? 4 : c->cap * 2;
        fsc__pv_t **ni = arena_alloc(d, (size_t)ncap * sizeof *ni);
        if (ni == NULL)
            return FSC_ELIMIT;
        if (c->cap > 0)
            memcpy(ni, c->u.items, (size_t)c->cap * sizeof *ni);
        c->u.items = ni;
        c->cap = ncap;
    }
    c->u.items[slot] = item;
    if (item->depth + 1 > c->depth)
        c->depth = (uint16_t)(item->depth + 1);
    if (is_container(item))
        item->sealed |= 1u;
    return 0;
}

int fsc__pdoc_push(fsc__pdoc_t *d, fsc__pv_t *c, fsc__pv_t *item)
{
    if (item->depth + 1 > FSC__PICKLE_MAX_DEPTH)
        return FSC_ELIMIT;
    if (c->kind == FSC__PV_DICT) {
        /* Bit 1 of 'sealed' marks a key waiting for its value. */
        if (c->sealed & 2u) {
            int rc = push_raw(d, c, item, c->len * 2 + 1);
            if (rc == 0) {
                c->len++;
                c->sealed &= (uint8_t)~2u;
            }
            return rc;
        }
        int rc = push_raw(d, c, item, c->len * 2);
        if (rc == 0)
            c->sealed |= 2u;
        return rc;
    }
    int rc = push_raw(d, c, item, c->len);
    if (rc == 0)
        c->len++;
    return rc;
}

/* ---- accessors --------------------------------------------------------- */

const fsc__pv_t *fsc__pv_get(const fsc__pv_t *v, const char *key)
{
    if (v == NULL || v->kind != FSC__PV_DICT)
        return NULL;
    size_t kl = strlen(key);
    for (uint32_t i = v->len; i-- > 0;) {
        const fsc__pv_t *k = v->u.items[2 * i];
        if (k->kind == FSC__PV_STR && k->len == kl && memcmp(k->u.s, key, kl) == 0)
            return v->u.items[2 * i + 1];
    }
    return NULL;
}

int fsc__pv_is_str(const fsc__pv_t *v, const char *s)
{
    size_t n = strlen(s);
    return v != NULL && v->kind == FSC__PV_STR && v->len == n && memcmp(v->u.s, s, n) == 0;
}

int fsc__pv_int(const fsc__pv_t *v, int64_t *out)
{
    if (v == NULL)
        return 0;
    if (v->kind == FSC__PV_INT || v->kind == FSC__PV_BOOL) {
        *out = v->u.i;
        return 1;
    }
    if (v->kind == FSC__PV_FLOAT) {
        double f = v->u.f;
        if (f >= -9.2e18 && f <= 9.2e18 && f == (double)(int64_t)f) {
            *out = (int64_t)f;
            return 1;
        }
    }
    return 0;
}

int fsc__pv_num(const fsc__pv_t *v, double *out)
{
    if (v == NULL)
        return 0;
    if (v->kind == FSC__PV_INT || v->kind == FSC__PV_BOOL) {
        *out = (double)v->u.i;
        return 1;
    }
    if (v->kind == FSC__PV_FLOAT) {
        *out = v->u.f;
        return 1;
    }
    return 0;
}

uint32_t fsc__pv_seq(const fsc__pv_t *v, fsc__pv_t *const **items)
{
    if (v == NULL || (v->kind != FSC__PV_LIST && v->kind != FSC__PV_TUPLE)) {
        *items = NULL;
        return 0;
    }
    *items = v->u.items;
    return v->len;
}

/* ---- parser ------------------------------------------------------------ */

typedef struct fsc__pparse {
    fsc__pdoc_t *d;
    const uint8_t *p;
    size_t len, pos, op_pos;
    const char *name;
    fsc_err_t *err;
    fsc__pv_t **stack;
    size_t sp, scap;
    size_t *marks;
    size_t mp, mcap;
    fsc__pv_t **memo;
    size_t memo_n, memo_cap;
} fsc__pparse_t;

static int perr(fsc__pparse_t *ps, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int perr(fsc__pparse_t *ps, int code, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fsc_err_set(ps->err, code, "%s: offset %zu: %s", ps->name, ps->op_pos, what);
}

/* fsc/vec.h's array, with the growth charged to the input's memory budget
 * first (the capacity it grows to is computed here to know the charge). */
static int grow(fsc__pparse_t *ps, void *arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap < 64 ? 64 : *cap;
    while (ncap < need)
        ncap *= 2;
    if (budget_take(ps->d, (ncap - *cap) * elem) != 0)
        return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input",
                    ps->len);
    if (fsc__vec_reserve(arr, cap, ncap, elem) != 0)
        return perr(ps, FSC_ENOMEM, "out of memory");
    return 0;
}

static int push(fsc__pparse_t *ps, fsc__pv_t *v)
{
    if (v == NULL)
        return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input",
                    ps->len);
    int rc = grow(ps, &ps->stack, &ps->scap, ps->sp + 1, sizeof *ps->stack);
    if (rc != 0)
        return rc;
    ps->stack[ps->sp++] = v;
    return 0;
}

static int need(fsc__pparse_t *ps, size_t n, const char *op)
{
    if (ps->len - ps->pos < n)
        return perr(ps, FSC_EFORMAT, "truncated: %s needs %zu more bytes, %zu left", op, n,
                    ps->len - ps->pos);
    return 0;
}

static uint64_t rd_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int top_mark(fsc__pparse_t *ps, const char *op, size_t *base)
{
    if (ps->mp == 0)
        return perr(ps, FSC_EFORMAT, "%s without a MARK", op);
    *base = ps->marks[--ps->mp];
    return 0;
}

static int pop_one(fsc__pparse_t *ps, const char *op, fsc__pv_t **out)
{
    size_t floor = ps->mp > 0 ? ps->marks[ps->mp - 1] : 0;
    if (ps->sp <= floor)
        return perr(ps, FSC_EFORMAT, "%s on an empty stack", op);
    *out = ps->stack[--ps->sp];
    return 0;
}

static int add_item(fsc__pparse_t *ps, fsc__pv_t *c, fsc__pv_t *item, const char *op)
{
    if (c->sealed & 1u)
        return perr(ps, FSC_EFORMAT,
                    "%s modifies a container already nested in another one (unsupported)", op);
    if (item == c)
        return perr(ps, FSC_EFORMAT, "%s puts a container inside itself", op);
    int rc = fsc__pdoc_push(ps->d, c, item);
    if (rc == FSC_ELIMIT && item->depth + 1 > FSC__PICKLE_MAX_DEPTH)
        return perr(ps, FSC_ELIMIT, "nesting deeper than %d levels", FSC__PICKLE_MAX_DEPTH);
    if (rc != 0)
        return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input",
                    ps->len);
    return 0;
}

/* Items stack[base..sp) into the container below them. */
static int fill_from(fsc__pparse_t *ps, size_t base, fsc__pv_kind_t want, const char *op)
{
    if (base == 0)
        return perr(ps, FSC_EFORMAT, "%s with no container below the MARK", op);
    fsc__pv_t *c = ps->stack[base - 1];
    if (c->kind != want)
        return perr(ps, FSC_EFORMAT, "%s on a value that is not a %s", op,
                    want == FSC__PV_DICT ? "dict" : "list");
    if (want == FSC__PV_DICT && ((ps->sp - base) & 1u))
        return perr(ps, FSC_EFORMAT, "%s with an odd number of items", op);
    for (size_t i = base; i < ps->sp; i++) {
        int rc = add_item(ps, c, ps->stack[i], op);
        if (rc != 0)
            return rc;
    }
    ps->sp = base;
    return 0;
}

static int make_tuple(fsc__pparse_t *ps, size_t base, const char *op)
{
    size_t n = ps->sp - base;
    fsc__pv_t *t = fsc__pdoc_container(ps->d, FSC__PV_TUPLE, (uint32_t)(n ? n : 0));
    if (t == NULL)
        return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input",
                    ps->len);
    for (size_t i = base; i < ps->sp; i++) {
        int rc = add_item(ps, t, ps->stack[i], op);
        if (rc != 0)
            return rc;
    }
    ps->sp = base;
    return push(ps, t);
}

static int memo_put(fsc__pparse_t *ps, uint64_t idx, const char *op)
{
    if (ps->sp == 0)
        return perr(ps, FSC_EFORMAT, "%s on an empty stack", op);
    /* Each memo entry costs at least one byte of input, so no valid index
     * can exceed the input size. */
    if (idx >= ps->len)
        return perr(ps, FSC_EFORMAT, "%s index %llu out of range", op, (unsigned long long)idx);
    if (idx >= ps->memo_n) {
        size_t old = ps->memo_cap;
        int rc = grow(ps, &ps->memo, &ps->memo_cap, idx + 1, sizeof *ps->memo);
        if (rc != 0)
            return rc;
        if (ps->memo_cap > old)
            memset(ps->memo + old, 0, (ps->memo_cap - old) * sizeof *ps->memo);
        ps->memo_n = idx + 1;
    }
    ps->memo[idx] = ps->stack[ps->sp - 1];
    return 0;
}

static int memo_get(fsc__pparse_t *ps, uint64_t idx, const char *op)
{
    if (idx >= ps->memo_n || ps->memo[idx] == NULL)
        return perr(ps, FSC_EFORMAT, "%s: memo reference %llu out of range (%zu stored)", op,
                    (unsigned long long)idx, ps->memo_n);
    return push(ps, ps->memo[idx]);
}

static int push_str_at(fsc__pparse_t *ps, const uint8_t *at, size_t n)
{
    fsc__pv_t *v = fsc__pdoc_scalar(ps->d, FSC__PV_STR);
    if (v != NULL) {
        v->u.s = (const char *)at;
        v->len = (uint32_t)n;
    }
    return push(ps, v);
}

static int push_str(fsc__pparse_t *ps, size_t lenbytes, fsc__pv_kind_t kind, const char *op)
{
    int rc = need(ps, lenbytes, op);
    if (rc != 0)
        return rc;
    uint64_t n = rd_le(ps->p + ps->pos, lenbytes);
    ps->pos += lenbytes;
    if (n > ps->len - ps->pos)
        return perr(ps, FSC_EFORMAT, "%s length %llu goes past the end (%zu bytes left)", op,
                    (unsigned long long)n, ps->len - ps->pos);
    if (n > UINT32_MAX)
        return perr(ps, FSC_ELIMIT, "%s length %llu too large", op, (unsigned long long)n);
    fsc__pv_t *v = fsc__pdoc_scalar(ps->d, kind);
    if (v != NULL) {
        v->u.s = ps->d->input + ps->pos;
        v->len = (uint32_t)n;
    }
    ps->pos += (size_t)n;
    return push(ps, v);
}

static int push_int(fsc__pparse_t *ps, int64_t i)
{
    fsc__pv_t *v = fsc__pdoc_scalar(ps->d, FSC__PV_INT);
    if (v != NULL)
        v->u.i = i;
    return push(ps, v);
}

static int push_bigint(fsc__pparse_t *ps, const uint8_t *at, size_t n)
{
    if (n > UINT32_MAX)
        return perr(ps, FSC_ELIMIT, "integer of %zu bytes too large", n);
    fsc__pv_t *v = fsc__pdoc_scalar(ps->d, FSC__PV_BIGINT);
    if (v != NULL) {
        v->u.s = (const char *)at;
        v->len = (uint32_t)n;
    }
    return push(ps, v);
}

/* LONG1/LONG4: n bytes of little-endian two's complement. Values that fit
 * int64 (after dropping redundant sign bytes) are INT, others BIGINT. */
static int push_long(fsc__pparse_t *ps, size_t lenbytes, const char *op)
{
    int rc = need(ps, lenbytes, op);
    if (rc != 0)
        return rc;
    uint64_t n = rd_le(ps->p + ps->pos, lenbytes);
    ps->pos += lenbytes;
    if (n > ps->len - ps->pos)
        return perr(ps, FSC_EFORMAT, "truncated: %s needs %llu more bytes, %zu left", op,
                    (unsigned long long)n, ps->len - ps->pos);
    const uint8_t *b = ps->p + ps->pos;
    ps->pos += (size_t)n;
    size_t m = (size_t)n;
    uint8_t sign = (m > 0 && (b[m - 1] & 0x80u)) ? 0xffu : 0x00u;
    while (m > 8 && b[m - 1] == sign && ((b[m - 2] & 0x80u) == (sign & 0x80u)))
        m--;
    if (m > 8)
        return push_bigint(ps, b, (size_t)n);
    uint64_t v = rd_le(b, m);
    if (m > 0 && m < 8 && (b[m - 1] & 0x80u))
        v |= ~0ull << (8 * m); /* sign-extend */
    return push_int(ps, (int64_t)v);
}

/* ---- protocols 0 and 1: text arguments ending at a newline ------------- */

/* The argument of a text opcode: bytes up to the next '\n' (excluded). */
static int text_arg(fsc__pparse_t *ps, const char *op, const uint8_t **s, size_t *n)
{
    const uint8_t *start = ps->p + ps->pos;
    const uint8_t *nl = memchr(start, '\n', ps->len - ps->pos);
    if (nl == NULL)
        return perr(ps, FSC_EFORMAT, "truncated: %s has no end of line", op);
    *s = start;
    *n = (size_t)(nl - start);
    ps->pos += *n + 1;
    return 0;
}

/* Decimal digits with an optional sign (and, for LONG, a trailing 'L'). */
static int parse_dec(const uint8_t *s, size_t n, int64_t *out, int *fits)
{
    size_t i = 0;
    int neg = 0;
    if (n > 0 && s[n - 1] == 'L')
        n--;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i == n)
        return 0;
    uint64_t v = 0;
    *fits = 1;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            *fits = 0;
        else
            v = v * 10 + d;
    }
    if (*fits && (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX))
        *fits = 0;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

static int push_text_int(fsc__pparse_t *ps, const char *op)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc = text_arg(ps, op, &s, &n);
    if (rc != 0)
        return rc;
    if (op[0] == 'I' && n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1'))
        return push(ps, s[1] == '1' ? &ps->d->yes : &ps->d->no);
    int64_t v = 0;
    int fits = 0;
    if (!parse_dec(s, n, &v, &fits))
        return perr(ps, FSC_EFORMAT, "%s argument is not an integer", op);
    return fits ? push_int(ps, v) : push_bigint(ps, s, n);
}

static int push_text_float(fsc__pparse_t *ps)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc = text_arg(ps, "FLOAT", &s, &n);
    if (rc != 0)
        return rc;
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return perr(ps, FSC_EFORMAT, "FLOAT argument is not a number");
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end = NULL;
    double x = strtod(buf, &end);
    if (end != buf + n)
        return perr(ps, FSC_EFORMAT, "FLOAT argument is not a number");
    fsc__pv_t *v = fsc__pdoc_scalar(ps->d, FSC__PV_FLOAT);
    if (v != NULL)
        v->u.f = x;
    return push(ps, v);
}

static size_t put_utf8(char *o, uint32_t c)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xc0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xe0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        o[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

static int hexval(uint8_t c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static int hex_run(const uint8_t *s, size_t n, size_t i, size_t k, uint32_t *out)
{
    if (n - i < k)
        return 0;
    uint32_t c = 0;
    for (size_t j = 0; j < k; j++) {
        int h = hexval(s[i + j]);
        if (h < 0)
            return 0;
        c = c * 16 + (uint32_t)h;
    }
    *out = c;
    return 1;
}

/* UNICODE (protocol 0): raw-unicode-escape, i.e. Latin-1 bytes with
 * \uXXXX and \UXXXXXXXX escapes, decoded to UTF-8 in the arena. STRING: a
 * Python bytes repr in quotes ('...' or "..."), kept as its Latin-1 bytes
 * in UTF-8. */
static int push_text_str(fsc__pparse_t *ps, int quoted, const char *op)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc = text_arg(ps, op, &s, &n);
    if (rc != 0)
        return rc;
    if (quoted) {
        if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
            return perr(ps, FSC_EFORMAT, "%s argument is not a quoted string", op);
        s++;
        n -= 2;
    }
    size_t plain = 0;
    while (plain < n && s[plain] < 0x80 && s[plain] != '\\')
        plain++;
    if (plain == n) /* pure ASCII without escapes: points into the input */
        return push_str_at(ps, s, n);
    if (n > (SIZE_MAX - 1) / 4)
        return perr(ps, FSC_ELIMIT, "%s argument too long", op);
    char *o = arena_alloc(ps->d, n * 4 + 1);
    if (o == NULL)
        return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input",
                    ps->len);
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c = s[i];
        if (c == '\\' && i + 1 < n) {
            uint8_t e = s[i + 1];
            uint32_t x;
            if (!quoted && e == 'u' && hex_run(s, n, i + 2, 4, &x)) {
                c = x;
                i += 6;
            } else if (!quoted && e == 'U' && hex_run(s, n, i + 2, 8, &x) && x <= 0x10ffff) {
                c = x;
                i += 10;
            } else if (quoted && e == 'x' && hex_run(s, n, i + 2, 2, &x)) {
                c = x;
                i += 4;
            } else if (quoted && (e == '\\' || e == '\'' || e == '"')) {
                c = e;
                i += 2;
            } else if (quoted && (e == 'n' || e == 't' || e == 'r')) {
                c = e == 'n' ? '\n' : e == 't' ? '\t' : '\r';
                i += 2;
            } else {
                i++;
            }
        } else {
            i++;
        }
        w += put_utf8(o + w, c);
    }
    o[w] = '\0';
    return push_str_at(ps, (const uint8_t *)o, w);
}

static int text_index(fsc__pparse_t *ps, const char *op, uint64_t *idx)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc = text_arg(ps, op, &s, &n);
    if (rc != 0)
        return rc;
    int64_t v = 0;
    int fits = 0;
    if (!parse_dec(s, n, &v, &fits) || !fits || v < 0)
        return perr(ps, FSC_EFORMAT, "%s index is not a non-negative integer", op);
    *idx = (uint64_t)v;
    return 0;
}

/* DICT / LIST (protocol 0): a new container of the items above the MARK. */
static int make_from_mark(fsc__pparse_t *ps, fsc__pv_kind_t kind, const char *op)
{
    size_t base = 0;
    int rc = top_mark(ps, op, &base);
    if (rc != 0)
        return rc;
    size_t n = ps->sp - base;
    if (kind == FSC__PV_DICT && (n & 1u))
        return perr(ps, FSC_EFORMAT, "%s with an odd number of items", op);
    fsc__pv_t *c = fsc__pdoc_container(ps->d, kind, 0);
    if (c == NULL)
        return perr(ps, FSC_ELIMIT, "needs more memory than allowed for a %zu-byte input",
                    ps->len);
    for (size_t i = base; i < ps->sp; i++)
        if ((rc = add_item(ps, c, ps->stack[i], op)) != 0)
            return rc;
    ps->sp = base;
    return push(ps, c);
}

/* One opcode. Returns 0 to continue, 1 at STOP, negative on error. */
static int step(fsc__pparse_t *ps)
{
    ps->op_pos = ps->pos;
    uint8_t op = ps->p[ps->pos++];
    fsc__pv_t *a = NULL;
    size_t base = 0;
    int rc = 0;
    switch (op) {
    case 0x80: /* PROTO */
        if ((rc = need(ps, 1, "PROTO")) != 0)
            return rc;
        if (ps->p[ps->pos] > 5)
            return perr(ps, FSC_EFORMAT, "pickle protocol %u not supported (0 to 5 are)",
                        ps->p[ps->pos]);
        ps->pos++;
        return 0;
    case 0x95: /* FRAME: only a hint for buffering; its length must fit */
        if ((rc = need(ps, 8, "FRAME")) != 0)
            return rc;
        if (rd_le(ps->p + ps->pos, 8) > ps->len - ps->pos - 8)
            return perr(ps, FSC_EFORMAT, "FRAME length %llu goes past the end",
                        (unsigned long long)rd_le(ps->p + ps->pos, 8));
        ps->pos += 8;
        return 0;
    case '.': /* STOP */
        if (ps->sp != 1 || ps->mp != 0)
            return perr(ps, FSC_EFORMAT, "STOP with %zu values and %zu marks on the stack",
                        ps->sp, ps->mp);
        ps->d->root = ps->stack[0];
        return 1;
    case '}': return push(ps, fsc__pdoc_container(ps->d, FSC__PV_DICT, 0));
    case ']': return push(ps, fsc__pdoc_container(ps->d, FSC__PV_LIST, 0));
    case ')': return push(ps, fsc__pdoc_container(ps->d, FSC__PV_TUPLE, 0));
    case 'N': return push(ps, &ps->d->none);
    case 0x88: return push(ps, &ps->d->yes);
    case 0x89: return push(ps, &ps->d->no);
    case '(': /* MARK */
        if ((rc = grow(ps, &ps->marks, &ps->mcap, ps->mp + 1, sizeof *ps->marks)) != 0)
            return rc;
        ps->marks[ps->mp++] = ps->sp;
        return 0;
    case '0': /* POP */
        if (ps->mp > 0 && ps->marks[ps->mp - 1] == ps->sp) {
            ps->mp--; /* Python pops a mark when it is on top */
            return 0;
        }
        return pop_one(ps, "POP", &a);
    case '1': /* POP_MARK */
        if ((rc = top_mark(ps, "POP_MARK", &base)) != 0)
            return rc;
        ps->sp = base;
        return 0;
    case '2': /* DUP */
        if (ps->sp == 0)
            return perr(ps, FSC_EFORMAT, "DUP on an empty stack");
        return push(ps, ps->stack[ps->sp - 1]);
    case 's': { /* SETITEM */
        fsc__pv_t *k = NULL, *v = NULL;
        if ((rc = pop_one(ps, "SETITEM", &v)) != 0 || (rc = pop_one(ps, "SETITEM", &k)) != 0)
            return rc;
        size_t floor = ps->mp > 0 ? ps->marks[ps->mp - 1] : 0;
        if (ps->sp <= floor || ps->stack[ps->sp - 1]->kind != FSC__PV_DICT)
            return perr(ps, FSC_EFORMAT, "SETITEM on a value that is not a dict");
        if ((rc = add_item(ps, ps->stack[ps->sp - 1], k, "SETITEM")) != 0)
            return rc;
        return add_item(ps, ps->stack[ps->sp - 1], v, "SETITEM");
    }
    case 'u': /* SETITEMS */
        if ((rc = top_mark(ps, "SETITEMS", &base)) != 0)
            return rc;
        return fill_from(ps, base, FSC__PV_DICT, "SETITEMS");
    case 'a': { /* APPEND */
        fsc__pv_t *v = NULL;
        if ((rc = pop_one(ps, "APPEND", &v)) != 0)
            return rc;
        size_t floor = ps->mp > 0 ? ps->marks[ps->mp - 1] : 0;
        if (ps->sp <= floor || ps->stack[ps->sp - 1]->kind != FSC__PV_LIST)
            return perr(ps, FSC_EFORMAT, "APPEND on a value that is not a list");
        return add_item(ps, ps->stack[ps->sp - 1], v, "APPEND");
    }
    case 'e': /* APPENDS */
        if ((rc = top_mark(ps, "APPENDS", &base)) != 0)
            return rc;
        return fill_from(ps, base, FSC__PV_LIST, "APPENDS");
    case 't': /* TUPLE */
        if ((rc = top_mark(ps, "TUPLE", &base)) != 0)
            return rc;
        return make_tuple(ps, base, "TUPLE");
    case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
        size_t n = (size_t)(op - 0x84);
        size_t floor = ps->mp > 0 ? ps->marks[ps->mp - 1] : 0;
        if (ps->sp - floor < n)
            return perr(ps, FSC_EFORMAT, "TUPLE%zu needs %zu values on the stack", n, n);
        return make_tuple(ps, ps->sp - n, "TUPLE");
    }
    case 'J':
        if ((rc = need(ps, 4, "BININT")) != 0)
            return rc;
        rc = push_int(ps, (int32_t)(uint32_t)rd_le(ps->p + ps->pos, 4));
        ps->pos += 4;
        return rc;
    case 'K':
        if ((rc = need(ps, 1, "BININT1")) != 0)
            return rc;
        return push_int(ps, ps->p[ps->pos++]);
    case 'M':
        if ((rc = need(ps, 2, "BININT2")) != 0)
            return rc;
        rc = push_int(ps, (int64_t)rd_le(ps->p + ps->pos, 2));
        ps->pos += 2;
        return rc;
    case 0x8a: return push_long(ps, 1, "LONG1");
    case 0x8b: return push_long(ps, 4, "LONG4");
    case 'G': {
        if ((rc = need(ps, 8, "BINFLOAT")) != 0)
            return rc;
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++)
            bits = (bits << 8) | ps->p[ps->pos + i];
        ps->pos += 8;
        fsc__pv_t *v = fsc__pdoc_scalar(ps->d, FSC__PV_FLOAT);
        if (v != NULL)
            memcpy(&v->u.f, &bits, sizeof bits);
        return push(ps, v);
    }
    case 0x8c: return push_str(ps, 1, FSC__PV_STR, "SHORT_BINUNICODE");
    case 'X': return push_str(ps, 4, FSC__PV_STR, "BINUNICODE");
    case 0x8d: return push_str(ps, 8, FSC__PV_STR, "BINUNICODE8");
    case 'U': return push_str(ps, 1, FSC__PV_STR, "SHORT_BINSTRING");
    case 'T': return push_str(ps, 4, FSC__PV_STR, "BINSTRING");
    case 'C': return push_str(ps, 1, FSC__PV_BYTES, "SHORT_BINBYTES");
    case 'B': return push_str(ps, 4, FSC__PV_BYTES, "BINBYTES");
    case 0x8e: return push_str(ps, 8, FSC__PV_BYTES, "BINBYTES8");
    case 0x96: return push_str(ps, 8, FSC__PV_BYTES, "BYTEARRAY8");
    case 'q':
        if ((rc = need(ps, 1, "BINPUT")) != 0)
            return rc;
        return memo_put(ps, ps->p[ps->pos++], "BINPUT");
    case 'r':
        if ((rc = need(ps, 4, "LONG_BINPUT")) != 0)
            return rc;
        ps->pos += 4;
        return memo_put(ps, rd_le(ps->p + ps->pos - 4, 4), "LONG_BINPUT");
    case 0x94: return memo_put(ps, ps->memo_n, "MEMOIZE");
    case 'h':
        if ((rc = need(ps, 1, "BINGET")) != 0)
            return rc;
        return memo_get(ps, ps->p[ps->pos++], "BINGET");
    case 'j':
        if ((rc = need(ps, 4, "LONG_BINGET")) != 0)
            return rc;
        ps->pos += 4;
        return memo_get(ps, rd_le(ps->p + ps->pos - 4, 4), "LONG_BINGET");
    /* protocols 0 and 1 */
    case 'I': return push_text_int(ps, "INT");
    case 'L': return push_text_int(ps, "LONG");
    case 'F': return push_text_float(ps);
    case 'V': return push_text_str(ps, 0, "UNICODE");
    case 'S': return push_text_str(ps, 1, "STRING");
    case 'd': return make_from_mark(ps, FSC__PV_DICT, "DICT");
    case 'l': return make_from_mark(ps, FSC__PV_LIST, "LIST");
    case 'p': {
        uint64_t idx = 0;
        if ((rc = text_index(ps, "PUT", &idx)) != 0)
            return rc;
        return memo_put(ps, idx, "PUT");
    }
    case 'g': {
        uint64_t idx = 0;
        if ((rc = text_index(ps, "GET", &idx)) != 0)
            return rc;
        return memo_get(ps, idx, "GET");
    }
    default:
        return perr(ps, FSC_EFORMAT, "opcode 0x%02x not supported in a memory snapshot", op);
    }
}

int fsc__pickle_parse(const void *data, size_t len, const char *name, fsc__pdoc_t **out,
                      fsc_err_t *err)
{
    *out = NULL;
    fsc__pdoc_t *d = NULL;
    if (fsc__pdoc_new(&d) != 0)
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
    d->budget = len * FSC__PICKLE_MEM_FACTOR + (1u << 20);
    d->input = malloc(len ? len : 1);
    if (d->input == NULL) {
        fsc__pdoc_free(d);
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", name);
    }
    if (len > 0)
        memcpy(d->input, data, len);
    fsc__pparse_t ps = {.d = d, .p = (const uint8_t *)d->input, .len = len, .name = name,
                        .err = err};
    int rc = 0;
    while (rc == 0) {
        if (ps.pos >= ps.len) {
            ps.op_pos = ps.pos;
            rc = perr(&ps, FSC_EFORMAT, "truncated: the pickle ends without a STOP opcode");
            break;
        }
        rc = step(&ps);
    }
    free(ps.stack);
    free(ps.marks);
    free(ps.memo);
    if (rc < 0) {
        fsc__pdoc_free(d);
        return rc;
    }
    *out = d;
    return 0;
}
