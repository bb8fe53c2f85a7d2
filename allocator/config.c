/*
 * config.c — the allocator configuration string (PYTORCH_CUDA_ALLOC_CONF
 * syntax) parsed into fsc_alloc_config_t and formatted back.
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
            /* PyTorch fills the intervals after the previous entry's (all of
             * them when '>' comes first): the snapshot of a run with
             * [256:1,512:2,1024:4,>:8] records 1024 -> 4 and 2048 -> 8. */
            for (size_t k = first ? 0 : last_index + 1; k < FSC_ROUNDUP_INTERVALS; k++)
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

static int parse_mb_at_least_20(const char *key, const char *val, uint64_t *out, fsc_err_t *err)
{
    uint64_t mb;
    if (parse_u64(val, &mb) != 0)
        return bad_value(err, key, val, "expected a whole number of MiB");
    if (mb < 20)
        return bad_value(err, key, val, "must be >= 20");
    if (mb > UINT64_MAX / FSC_MiB)
        mb = UINT64_MAX / FSC_MiB;
    *out = mb * FSC_MiB;
    return 0;
}

/* Keys PyTorch accepts that do not change where blocks go. */
static int is_ignored_key(const char *k)
{
    static const char *const keys[] = {
        "release_lock_on_cudamalloc", "release_lock_on_hipmalloc",
        "pinned_use_cuda_host_register", "pinned_use_hip_host_register",
        "pinned_num_register_threads", "pinned_use_background_threads",
        "pinned_reserve_segment_size_mb", "graph_capture_record_stream_reuse",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(k, keys[i]) == 0)
            return 1;
    return 0;
}

static int parse_key(const fsc__lex_t *lx, size_t *pi, fsc_alloc_config_t *c, fsc_err_t *err)
{
    size_t i = *pi;
    const char *key = lx->tok[i];
    int r = expect(lx, ++i, ':', key, err);
    if (r)
        return r;
    const char *val = tok_at(lx, ++i);
    if (i >= lx->n)
        return fsc_err_set(err, FSC_ECONFIG, "allocator config: missing value for %s", key);
    if (strcmp(key, "max_split_size_mb") == 0) {
        r = parse_mb_at_least_20(key, val, &c->max_split_size, err);
    } else if (strcmp(key, "max_non_split_rounding_mb") == 0) {
        r = parse_mb_at_least_20(key, val, &c->max_non_split_rounding, err);
    } else if (strcmp(key, "garbage_collection_threshold") == 0) {
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        if (errno != 0 || *end != '\0' || end == val || !(d > 0.0 && d < 1.0))
            return bad_value(err, key, val, "must be in (0.0, 1.0)");
        c->garbage_collection_threshold = d;
    } else if (strcmp(key, "expandable_segments") == 0) {
        if (parse_bool(val, &c->expandable_segments) != 0)
            return bad_value(err, key, val, "expected True or False");
    } else if (strcmp(key, "roundup_power2_divisions") == 0) {
        r = parse_roundup(lx, &i, c, err);
    } else if (strcmp(key, "backend") == 0) {
        if (strcmp(val, "native") != 0)
            return bad_value(err, key, val, "only the native caching allocator is modelled");
    } else if (is_ignored_key(key)) {
        uint64_t u;
        int b;
        if (parse_bool(val, &b) != 0 && parse_u64(val, &u) != 0)
            return bad_value(err, key, val, "expected True, False or a number");
    } else {
        return fsc_err_set(err, FSC_ECONFIG, "allocator config: unknown key '%s'", key);
    }
    *pi = i;
    return r;
}

int fsc_alloc_config_parse(const char *s, fsc_alloc_config_t *out, fsc_err_t *err)
{
    if (out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "allocator config: no output");
    fsc_alloc_config_t c = FSC_ALLOC_CONFIG_DEFAULT;
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
        *out = c;
    return r;
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

int fsc_alloc_config_format(const fsc_alloc_config_t *c, char *buf, size_t cap)
{
    if (c == NULL || buf == NULL || cap == 0)
        return FSC_EINVAL;
    size_t len = 0;
    buf[0] = '\0';
    const char *sep = "";
    if (c->max_split_size != 0) {
        put(buf, cap, &len, "max_split_size_mb:%llu", (unsigned long long)(c->max_split_size / FSC_MiB));
        sep = ",";
    }
    if (c->max_non_split_rounding != 0) {
        put(buf, cap, &len, "%smax_non_split_rounding_mb:%llu", sep,
            (unsigned long long)(c->max_non_split_rounding / FSC_MiB));
        sep = ",";
    }
    int any_roundup = 0;
    for (int k = 0; k < FSC_ROUNDUP_INTERVALS; k++)
        if (c->roundup_power2_divisions[k] != 0)
            any_roundup = 1;
    if (any_roundup) {
        put(buf, cap, &len, "%s", sep);
        format_roundup(c->roundup_power2_divisions, buf, cap, &len);
        sep = ",";
    }
    if (c->garbage_collection_threshold > 0.0) {
        /* The fewest digits (15 to 17) that parse back to the same double:
         * "0.6" stays short, and no setting changes on a round trip. */
        double d = c->garbage_collection_threshold;
        char num[40];
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(num, sizeof num, "%.*g", prec, d);
            if (strtod(num, NULL) == d)
                break;
        }
        put(buf, cap, &len, "%sgarbage_collection_threshold:%s", sep, num);
        sep = ",";
    }
    if (c->expandable_segments)
        put(buf, cap, &len, "%sexpandable_segments:True", sep);
    if (len >= cap) {
        buf[cap - 1] = '\0';
        return FSC_ELIMIT;
    }
    return 0;
}
