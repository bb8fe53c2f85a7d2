/*
 * config.c — the allocator configuration string (PYTORCH_CUDA_ALLOC_CONF
 * syntax) parsed into fsc_alloc_config_t and formatted back, key by key as
 * the settings table (settings.c) says: the table names the key, its kind
 * and its field; this file holds one reader and one writer per kind.
 *
 * The lexer splits on ',', ':', '[' and ']' and drops spaces, as PyTorch's
 * does, so every string PyTorch accepts parses to the same settings. Values
 * are checked more strictly than PyTorch's stoi ("12abc" is an error here).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"

#define FSC__TOK_MAX 256
#define FSC__TOK_LEN 64

typedef struct fsc__lex {
    char tok[FSC__TOK_MAX][FSC__TOK_LEN];
    size_t n;
} fsc__lex_t;

static int lex(const char *s, fsc__lex_t *lx, fsc_err_t *err)
{
    char buf[FSC__TOK_LEN];
    size_t blen = 0;
    lx->n = 0;
    for (const char *p = s;; p++) {
        int sep = (*p == ',' || *p == ':' || *p == '[' || *p == ']' || *p == '\0');
        if (sep && blen > 0) {
            if (lx->n >= FSC__TOK_MAX)
                return fsc_err_set(err, FSC_ECONFIG, "allocator config too long");
            buf[blen] = '\0';
            memcpy(lx->tok[lx->n++], buf, blen + 1);
            blen = 0;
        }
        if (*p == '\0')
            break;
        if (sep) {
            if (lx->n >= FSC__TOK_MAX)
                return fsc_err_set(err, FSC_ECONFIG, "allocator config too long");
            lx->tok[lx->n][0] = *p;
            lx->tok[lx->n][1] = '\0';
            lx->n++;
        } else if (*p != ' ') {
            if (blen + 1 >= FSC__TOK_LEN)
                return fsc_err_set(err, FSC_ECONFIG,
                                   "allocator config: token too long near '%.20s'", p - blen);
            buf[blen++] = *p;
        }
    }
    return 0;
}

static const char *tok_at(const fsc__lex_t *lx, size_t i)
{
    return i < lx->n ? lx->tok[i] : "";
}

static int is_pow2(uint64_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

static int log2_floor(uint64_t v)
{
    return 63 - __builtin_clzll(v);
}

/* Whole-token unsigned decimal. */
static int parse_u64(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    if (strcmp(s, "True") == 0 || strcmp(s, "true") == 0) {
        *out = 1;
        return 0;
    }
    if (strcmp(s, "False") == 0 || strcmp(s, "false") == 0) {
        *out = 0;
        return 0;
    }
    return -1;
}

static int expect(const fsc__lex_t *lx, size_t i, char c, const char *key, fsc_err_t *err)
{
    const char *t = tok_at(lx, i);
    if (t[0] != c || t[1] != '\0')
        return fsc_err_set(err, FSC_ECONFIG, "allocator config: expected '%c' after '%s', got '%s'",
                           c, key, t);
    return 0;
}

static int bad_value(fsc_err_t *err, const char *key, const char *val, const char *why)
{
    return fsc_err_set(err, FSC_ECONFIG, "allocator config: bad value '%s' for %s: %s", val, key,
                       why);
}

/* The list or scalar after "roundup_power2_divisions:"; *pi at the value. */
static int parse_roundup(const fsc__lex_t *lx, size_t *pi, fsc_alloc_config_t *c, fsc_err_t *err)
{
    static const char key[] = "roundup_power2_divisions";
    size_t i = *pi;
    uint64_t v;
    if (strcmp(tok_at(lx, i), "[") != 0) {
        if (parse_u64(tok_at(lx, i), &v) != 0 || !is_pow2(v) || v > 1u << 30)
            return bad_value(err, key, tok_at(lx, i), "divisions must be a power of two");
        for (int k = 0; k < FSC_ROUNDUP_INTERVALS; k++)
            c->roundup_power2_divisions[k] = (uint32_t)v;
        return 0;
    }
    int first = 1;
    size_t last_index = 0;
    for (i++; i < lx->n && strcmp(lx->tok[i], "]") != 0; i++) {
        const char *iv = lx->tok[i];
        int r = expect(lx, ++i, ':', iv, err);
        if (r)
            return r;
        const char *dv = tok_at(lx, ++i);
        if (parse_u64(dv, &v) != 0 || (v != 0 && !is_pow2(v)) || v > 1u << 30)
            return bad_value(err, key, dv, "divisions must be a power of two or 0");
        if (strcmp(iv, ">") == 0) {
            /* PyTorch 2.9 on fills the intervals after the previous
             * entry's (all of them when '>' comes first): the snapshot of
             * a 2.11 run with [256:1,512:2,1024:4,>:8] records 1024 -> 4
             * and 2048 -> 8. The older CUDA parser filled from the
             * previous entry's own interval on, overwriting it. */
            size_t from = first ? 0
                          : c->parser_rules == FSC_PARSER_OLD ? last_index
                                                              : last_index + 1;
            for (size_t k = from; k < FSC_ROUNDUP_INTERVALS; k++)
                c->roundup_power2_divisions[k] = (uint32_t)v;
        } else {
            uint64_t mb;
            if (parse_u64(iv, &mb) != 0 || !is_pow2(mb))
                return bad_value(err, key, iv, "interval must be a power of two (MiB)");
            size_t idx = (size_t)log2_floor(mb);
            if (idx > FSC_ROUNDUP_INTERVALS - 1)
                idx = FSC_ROUNDUP_INTERVALS - 1;
            if (first) {
                for (size_t k = 0; k < idx; k++)
                    c->roundup_power2_divisions[k] = (uint32_t)v;
                first = 0;
            }
            c->roundup_power2_divisions[idx] = (uint32_t)v;
            last_index = idx;
        }
        if (strcmp(tok_at(lx, i + 1), "]") != 0) {
            r = expect(lx, ++i, ',', key, err);
            if (r)
                return r;
        }
    }
    if (i >= lx->n)
        return fsc_err_set(err, FSC_ECONFIG, "allocator config: missing ']' in %s", key);
    *pi = i;
    return 0;
}

/* A reserve: a positive fraction of the device, or NG for N GiB (stored
 * negative). */
static int parse_reserve(const char *key, const char *val, double *out, fsc_err_t *err)
{
    size_t n = strlen(val);
    int gib = n > 0 && (val[n - 1] == 'G' || val[n - 1] == 'g');
    char num[FSC__TOK_LEN];
    memcpy(num, val, n + 1);
    if (gib)
        num[n - 1] = '\0';
    char *end;
    errno = 0;
    double d = strtod(num, &end);
    if (num[0] == '\0' || errno != 0 || *end != '\0' || !(d > 0.0) || d > 1e15)
        return bad_value(err, key, val, "expected a positive fraction (0.5) or GiB (40G)");
    *out = gib ? -d : d;
    return 0;
}

/* The fewest digits (15 to 17) that parse back to the same double: "0.6"
 * stays short, and no setting changes on a round trip. */
static void short_double(double d, char *num, size_t cap)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(num, cap, "%.*g", prec, d);
        if (strtod(num, NULL) == d)
            break;
    }
}

/* A reserve as written: a fraction, or GiB with a G. */
static void reserve_text(double d, char *b, size_t cap)
{
    short_double(d < 0 ? -d : d, b, cap - 1);
    size_t n = strlen(b);
    if (d < 0) {
        b[n] = 'G';
        b[n + 1] = '\0';
    }
}

/* "[class:reserve,...]" after expandable_segments_reserve_by_class:. */
static int parse_reserve_list(const fsc__lex_t *lx, size_t *pi, fsc_alloc_config_t *c,
                              fsc_err_t *err)
{
    static const char key[] = "expandable_segments_reserve_by_class";
    size_t i = *pi;
    int r = expect(lx, i, '[', key, err);
    if (r)
        return r;
    char out[sizeof c->reserve_by_class];
    size_t len = 0;
    out[len++] = '[';
    for (i++; i < lx->n && strcmp(lx->tok[i], "]") != 0; i++) {
        const char *name = lx->tok[i];
        if (strchr(",:[]", name[0]) != NULL && name[1] == '\0')
            return fsc_err_set(err, FSC_ECONFIG, "allocator config: %s: expected a class name, "
                               "got '%s'", key, name);
        if ((r = expect(lx, ++i, ':', name, err)) != 0)
            return r;
        double d;
        if ((r = parse_reserve(key, tok_at(lx, ++i), &d, err)) != 0)
            return r;
        char num[40];
        reserve_text(d, num, sizeof num);
        int w = snprintf(out + len, sizeof out - len, "%s%s:%s", len > 1 ? "," : "", name, num);
        if (w < 0 || (size_t)w >= sizeof out - len - 1)
            return fsc_err_set(err, FSC_ECONFIG, "allocator config: %s too long", key);
        len += (size_t)w;
        if (strcmp(tok_at(lx, i + 1), "]") != 0 && (r = expect(lx, ++i, ',', key, err)) != 0)
            return r;
    }
    if (i >= lx->n)
        return fsc_err_set(err, FSC_ECONFIG, "allocator config: missing ']' in %s", key);
    out[len++] = ']';
    out[len] = '\0';
    memcpy(c->reserve_by_class, out, len + 1);
    *pi = i;
    return 0;
}

static void *field(fsc_alloc_config_t *c, const fsc_alloc_setting_t *s)
{
    return (char *)c + s->offset;
}

static const void *cfield(const fsc_alloc_config_t *c, const fsc_alloc_setting_t *s)
{
    return (const char *)c + s->offset;
}

/* One value of the table's kind; *pi at the value, left at its last token. */
static int parse_value(const fsc__lex_t *lx, size_t *pi, const fsc_alloc_setting_t *s,
                       size_t idx, fsc_alloc_config_t *c, fsc_err_t *err)
{
    const char *key = s->name;
    const char *val = tok_at(lx, *pi);
    uint64_t u;
    int b;
    switch (s->kind) {
    case FSC_SETTING_MIB:
        if (parse_u64(val, &u) != 0)
            return bad_value(err, key, val, "expected a whole number of MiB");
        /* The large-segment minimum is checked once every key is read
         * (PyTorch reads large_segment_size_mb first, wherever it is). */
        if (!(s->flags & FSC_SETTING_MIN_LSS) && (double)u < s->min) {
            char why[48];
            snprintf(why, sizeof why, "must be > %.0f", s->min - 1);
            return bad_value(err, key, val, why);
        }
        if ((double)u > s->max)
            u = (uint64_t)s->max;
        if (s->offset >= 0)
            *(uint64_t *)field(c, s) = u * FSC_MiB;
        else
            c->extra[idx] = (double)u;
        return 0;
    case FSC_SETTING_BOOL:
        if (parse_bool(val, &b) != 0)
            return bad_value(err, key, val, "expected True or False");
        if (s->offset >= 0)
            *(int *)field(c, s) = b;
        else
            c->extra[idx] = b;
        return 0;
    case FSC_SETTING_FRACTION: {
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        int open = (s->flags & FSC_SETTING_OPEN) != 0;
        int ok = errno == 0 && *end == '\0' && end != val;
        if (ok)
            ok = open ? (d > s->min && d < s->max) : (d >= s->min && d <= s->max);
        if (!ok) {
            char why[48];
            snprintf(why, sizeof why, "must be in %c%.1f, %.1f%c", open ? '(' : '[', s->min,
                     s->max, open ? ')' : ']');
            return bad_value(err, key, val, why);
        }
        if (s->offset >= 0)
            *(double *)field(c, s) = d;
        else
            c->extra[idx] = d;
        return 0;
    }
    case FSC_SETTING_DIVISIONS:
        return parse_roundup(lx, pi, c, err);
    case FSC_SETTING_BACKEND:
        if (strcmp(val, "native") != 0)
            return bad_value(err, key, val, "only the native caching allocator is modelled");
        return 0;
    case FSC_SETTING_RESERVE:
        return parse_reserve(key, val, &c->extra[idx], err);
    case FSC_SETTING_RESERVE_LIST:
        return parse_reserve_list(lx, pi, c, err);
    case FSC_SETTING_ACCEPTED:
        if (parse_bool(val, &b) != 0 && parse_u64(val, &u) != 0)
            return bad_value(err, key, val, "expected True, False or a number");
        return 0;
    case FSC_SETTING_COUNT:
        if (parse_u64(val, &u) != 0 || (double)u < s->min || (double)u > s->max ||
            ((s->flags & FSC_SETTING_POW2) && !is_pow2(u))) {
            char why[64];
            snprintf(why, sizeof why, "expected a whole number%s in %.0f..%.0f",
                     (s->flags & FSC_SETTING_POW2) ? " (a power of two)" : "", s->min, s->max);
            return bad_value(err, key, val, why);
        }
        c->extra[idx] = (double)u;
        return 0;
    }
    return fsc_err_set(err, FSC_ECONFIG, "allocator config: %s: no rule for its kind", key);
}

static int parse_key(const fsc__lex_t *lx, size_t *pi, fsc_alloc_config_t *c, fsc_err_t *err)
{
    size_t i = *pi;
    const char *key = lx->tok[i];
    size_t idx;
    const fsc_alloc_setting_t *s = fsc_alloc_setting_find(key, &idx);
    if (s == NULL)
        return fsc_err_set(err, FSC_ECONFIG, "allocator config: unknown key '%s'", key);
    int r = expect(lx, ++i, ':', key, err);
    if (r)
        return r;
    ++i;
    if (i >= lx->n)
        return fsc_err_set(err, FSC_ECONFIG, "allocator config: missing value for %s", key);
    r = parse_value(lx, &i, s, idx, c, err);
    if (r == 0 && idx < 64)
        c->set_mask |= 1ull << idx;
    *pi = i;
    return r;
}

/* The minima that depend on large_segment_size_mb (20 MiB unless set). */
static int check_minima(const fsc_alloc_config_t *c, fsc_err_t *err)
{
    size_t n;
    const fsc_alloc_setting_t *t = fsc_alloc_settings(&n);
    uint64_t lss_mb = c->large_segment_size ? c->large_segment_size / FSC_MiB : 20;
    for (size_t i = 0; i < n; i++) {
        if (!(t[i].flags & FSC_SETTING_MIN_LSS) || !fsc_alloc_config_is_set(c, i))
            continue;
        uint64_t mb = t[i].offset >= 0 ? *(const uint64_t *)cfield(c, &t[i]) / FSC_MiB
                                       : (uint64_t)c->extra[i];
        if (mb < lss_mb) {
            char val[24], why[48];
            snprintf(val, sizeof val, "%llu", (unsigned long long)mb);
            snprintf(why, sizeof why, "must be >= %llu", (unsigned long long)lss_mb);
            return bad_value(err, t[i].name, val, why);
        }
    }
    return 0;
}

int fsc_alloc_config_parse_rules(const char *s, int rules, fsc_alloc_config_t *out,
                                 fsc_err_t *err)
{
    if (out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "allocator config: no output");
    fsc_alloc_config_t c = FSC_ALLOC_CONFIG_DEFAULT;
    c.parser_rules = rules;
    if (s == NULL) {
        *out = c;
        return 0;
    }
    fsc__lex_t *lx = malloc(sizeof *lx);
    if (lx == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "allocator config: out of memory");
    int r = lex(s, lx, err);
    for (size_t i = 0; r == 0 && i < lx->n; i++) {
        const char *t = lx->tok[i];
        if (t[1] == '\0' && strchr(",:[]", t[0]) != NULL) {
            r = fsc_err_set(err, FSC_ECONFIG, "allocator config: unexpected '%s' in \"%s\"", t, s);
            break;
        }
        r = parse_key(lx, &i, &c, err);
        if (r == 0 && i + 1 < lx->n) {
            const char *prev = lx->tok[i];
            i++;
            r = expect(lx, i, ',', prev, err);
        }
    }
    free(lx);
    if (r == 0)
        r = check_minima(&c, err);
    if (r == 0)
        *out = c;
    return r;
}

int fsc_alloc_config_parse(const char *s, fsc_alloc_config_t *out, fsc_err_t *err)
{
    return fsc_alloc_config_parse_rules(s, FSC_PARSER_NEW, out, err);
}

/* Appends to buf at *len; overflow is reported at the end. */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = *len < cap ? cap - *len : 0;
    int n = vsnprintf(room ? buf + *len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len += (size_t)n;
}

static void format_roundup(const uint32_t *d, char *buf, size_t cap, size_t *len)
{
    int all_same = 1;
    for (int k = 1; k < FSC_ROUNDUP_INTERVALS; k++)
        if (d[k] != d[0])
            all_same = 0;
    if (all_same) {
        put(buf, cap, len, "roundup_power2_divisions:%u", d[0]);
        return;
    }
    /* The first entry also fills every interval below it, and ">" fills the
     * intervals after the last entry's: emit the fewest entries that parse
     * back (the leading run ends at start, the trailing run begins at tail,
     * start < tail since not all are the same). */
    int start = 0;
    while (start + 1 < FSC_ROUNDUP_INTERVALS && d[start + 1] == d[0])
        start++;
    int tail = FSC_ROUNDUP_INTERVALS - 1;
    while (tail > 0 && d[tail - 1] == d[FSC_ROUNDUP_INTERVALS - 1])
        tail--;
    put(buf, cap, len, "roundup_power2_divisions:[");
    for (int k = start; k < tail; k++)
        put(buf, cap, len, "%s%llu:%u", k == start ? "" : ",", 1ull << k, d[k]);
    put(buf, cap, len, ",>:%u", d[tail]);
    put(buf, cap, len, "]");
}

/* One entry in canonical form, or nothing when it is at its default (the
 * fields) or unset (values without a field). */
static void format_one(const fsc_alloc_config_t *c, const fsc_alloc_setting_t *s, size_t idx,
                       char *buf, size_t cap, size_t *len, const char **sep)
{
    int set = fsc_alloc_config_is_set(c, idx);
    int own = s->offset >= 0;
    char num[48];
    switch (s->kind) {
    case FSC_SETTING_MIB: {
        uint64_t mb = own ? *(const uint64_t *)cfield(c, s) / FSC_MiB : (uint64_t)c->extra[idx];
        if (own ? mb == 0 : !set)
            return;
        put(buf, cap, len, "%s%s:%llu", *sep, s->name, (unsigned long long)mb);
        break;
    }
    case FSC_SETTING_BOOL: {
        int b = own ? *(const int *)cfield(c, s) : c->extra[idx] != 0.0;
        if (own ? !b : !set)
            return;
        put(buf, cap, len, "%s%s:%s", *sep, s->name, b ? "True" : "False");
        break;
    }
    case FSC_SETTING_FRACTION: {
        double d = own ? *(const double *)cfield(c, s) : c->extra[idx];
        /* A field that is 0 by default prints when above it; one whose 0 is
         * a value (per_process_memory_fraction) when the string set it. */
        if ((s->flags & FSC_SETTING_OPEN) ? !(d > 0.0) : !set)
            return;
        short_double(d, num, sizeof num);
        put(buf, cap, len, "%s%s:%s", *sep, s->name, num);
        break;
    }
    case FSC_SETTING_DIVISIONS: {
        int any = 0;
        for (int k = 0; k < FSC_ROUNDUP_INTERVALS; k++)
            any |= c->roundup_power2_divisions[k] != 0;
        if (!any)
            return;
        put(buf, cap, len, "%s", *sep);
        format_roundup(c->roundup_power2_divisions, buf, cap, len);
        break;
    }
    case FSC_SETTING_RESERVE:
        if (!set)
            return;
        reserve_text(c->extra[idx], num, sizeof num);
        put(buf, cap, len, "%s%s:%s", *sep, s->name, num);
        break;
    case FSC_SETTING_RESERVE_LIST:
        if (!set)
            return;
        put(buf, cap, len, "%s%s:%s", *sep, s->name, c->reserve_by_class);
        break;
    case FSC_SETTING_COUNT:
        if (!set)
            return;
        put(buf, cap, len, "%s%s:%.0f", *sep, s->name, c->extra[idx]);
        break;
    case FSC_SETTING_BACKEND:
    case FSC_SETTING_ACCEPTED:
        return;
    }
    *sep = ",";
}

int fsc_alloc_config_format(const fsc_alloc_config_t *c, char *buf, size_t cap)
{
    if (c == NULL || buf == NULL || cap == 0)
        return FSC_EINVAL;
    size_t len = 0, n;
    buf[0] = '\0';
    const char *sep = "";
    const fsc_alloc_setting_t *t = fsc_alloc_settings(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].flags & FSC_SETTING_PRINTED)
            format_one(c, &t[i], i, buf, cap, &len, &sep);
    if (len >= cap) {
        buf[cap - 1] = '\0';
        return FSC_ELIMIT;
    }
    return 0;
}
