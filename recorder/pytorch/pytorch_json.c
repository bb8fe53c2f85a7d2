/*
 * pytorch_json.c — the JSON of "pytorch.*" records (pytorch_keys.c) written
 * back as pickle values, and a scanner over their members.
 *
 * Written by hand rather than through cJSON because cJSON keeps numbers as
 * doubles: addresses and times above 2^53 and PyTorch's 2^64 - 1 "unknown
 * line" must come back exactly. The text comes from a trace, which is user
 * data, so every step is bounded by the text's end and by a nesting depth.
 */
#include "pytorch_json.h"
#include "text_codec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

static const char *ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
        p++;
    return p;
}

/* End of the string starting at p (on its opening quote), or NULL. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

const char *fsc__json_skip(const char *p, const char *end, int depth)
{
    p = ws(p, end);
    if (p >= end || depth > JSON_MAX_DEPTH)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = ws(p + 1, end);
        if (p < end && *p == close)
            return p + 1;
        for (;;) {
            if (close == '}') {
                if (p >= end || *p != '"' || (p = skip_string(p, end)) == NULL)
                    return NULL;
                p = ws(p, end);
                if (p >= end || *p != ':')
                    return NULL;
                p++;
            }
            if ((p = fsc__json_skip(p, end, depth + 1)) == NULL)
                return NULL;
            p = ws(p, end);
            if (p >= end)
                return NULL;
            if (*p == close)
                return p + 1;
            if (*p != ',')
                return NULL;
            p = ws(p + 1, end);
        }
    }
    const char *s = p;
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n')
        p++;
    return p > s ? p : NULL;
}

int fsc__json_members(const char *p, const char *end, fsc__json_member_t *out, int cap)
{
    p = ws(p, end);
    if (p >= end || *p != '{')
        return -1;
    p = ws(p + 1, end);
    int n = 0;
    if (p < end && *p == '}')
        return 0;
    for (;;) {
        if (p >= end || *p != '"')
            return -1;
        const char *ks = p;
        if ((p = skip_string(p, end)) == NULL)
            return -1;
        const char *ke = p;
        p = ws(p, end);
        if (p >= end || *p != ':')
            return -1;
        const char *vs = ws(p + 1, end);
        const char *ve = fsc__json_skip(vs, end, 1);
        if (ve == NULL)
            return -1;
        if (n < cap) {
            out[n].key = ks + 1;
            out[n].key_len = (size_t)(ke - ks - 2);
            out[n].val = vs;
            out[n].val_end = ve;
        }
        n++;
        p = ws(ve, end);
        if (p < end && *p == '}')
            return n;
        if (p >= end || *p != ',')
            return -1;
        p = ws(p + 1, end);
    }
}

int fsc__json_key_is(const fsc__json_member_t *m, const char *k)
{
    return strlen(k) == m->key_len && memcmp(m->key, k, m->key_len) == 0;
}

/* The string at p (quoted) unescaped into a malloc'd buffer. */
char *fsc__json_string(const char *p, const char *end, size_t *len)
{
    const char *e = skip_string(p, end);
    if (e == NULL)
        return NULL;
    char *o = malloc((size_t)(e - p) + 4);
    if (o == NULL)
        return NULL;
    size_t n = 0;
    for (p++; p < e - 1; p++) {
        if (*p != '\\') {
            o[n++] = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'n': o[n++] = '\n'; break;
        case 't': o[n++] = '\t'; break;
        case 'r': o[n++] = '\r'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'u': {
            uint32_t cp;
            if (e - (p + 1) < 4 || !fsc__hex_read((const uint8_t *)p + 1, 4, &cp)) {
                free(o);
                return NULL;
            }
            p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && e - p > 6 && p[1] == '\\' && p[2] == 'u') {
                uint32_t lo;
                if (e - (p + 3) >= 4 && fsc__hex_read((const uint8_t *)p + 3, 4, &lo) &&
                    lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    p += 6;
                }
            }
            n += fsc__utf8_put(o + n, cp);
            break;
        }
        default: o[n++] = *p; break;
        }
    }
    o[n] = '\0';
    *len = n;
    return o;
}

static int write_number(fsc__pw_t *w, const char *p, const char *e)
{
    char buf[64];
    size_t n = (size_t)(e - p);
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end = NULL;
    if (strpbrk(buf, ".eE") == NULL) {
        if (buf[0] == '-') {
            long long v = strtoll(buf, &end, 10);
            if (*end == '\0') {
                fsc__pw_int(w, v);
                return 0;
            }
        } else {
            unsigned long long v = strtoull(buf, &end, 10);
            if (*end == '\0') {
                fsc__pw_uint(w, v);
                return 0;
            }
        }
        return -1;
    }
    double d = strtod(buf, &end);
    if (*end != '\0')
        return -1;
    fsc__pw_float(w, d);
    return 0;
}

static int write_value(fsc__pw_t *w, const char *p, const char *end, int depth);

static int write_special(fsc__pw_t *w, const fsc__json_member_t *m, int depth)
{
    if (fsc__json_key_is(m, "__tuple__")) {
        const char *p = ws(m->val, m->val_end);
        if (p >= m->val_end || *p != '[')
            return -1;
        fsc__pw_tuple_open(w);
        p = ws(p + 1, m->val_end);
        while (p < m->val_end && *p != ']') {
            const char *ve = fsc__json_skip(p, m->val_end, depth + 1);
            if (ve == NULL || write_value(w, p, ve, depth + 1) != 0)
                return -1;
            p = ws(ve, m->val_end);
            if (p < m->val_end && *p == ',')
                p = ws(p + 1, m->val_end);
        }
        fsc__pw_tuple_close(w);
        return 0;
    }
    size_t len = 0;
    char *s = fsc__json_string(ws(m->val, m->val_end), m->val_end, &len);
    if (s == NULL)
        return -1;
    int rc = 0;
    if (fsc__json_key_is(m, "__float__")) {
        fsc__pw_float(w, strcmp(s, "nan") == 0 ? (double)NAN
                         : s[0] == '-'         ? -(double)INFINITY
                                               : (double)INFINITY);
    } else if (fsc__json_key_is(m, "__bytes__")) {
        /* written as a str of the hex text: the writer has no bytes */
        fsc__pw_str(w, s, len);
    } else {
        fsc__pw_str(w, s, len); /* __dropped__: the note itself */
    }
    free(s);
    return rc;
}

static int write_value(fsc__pw_t *w, const char *p, const char *end, int depth)
{
    p = ws(p, end);
    if (p >= end || depth > JSON_MAX_DEPTH)
        return -1;
    if (*p == '"') {
        size_t len = 0;
        char *s = fsc__json_string(p, end, &len);
        if (s == NULL)
            return -1;
        fsc__pw_str(w, s, len);
        free(s);
        return 0;
    }
    if (*p == '[') {
        fsc__pw_list_open(w);
        p = ws(p + 1, end);
        uint32_t k = 0;
        while (p < end && *p != ']') {
            const char *ve = fsc__json_skip(p, end, depth + 1);
            if (ve == NULL || write_value(w, p, ve, depth + 1) != 0)
                return -1;
            if (++k % 1000 == 0)
                fsc__pw_list_batch(w);
            p = ws(ve, end);
            if (p < end && *p == ',')
                p = ws(p + 1, end);
        }
        fsc__pw_list_close(w);
        return 0;
    }
    if (*p == '{') {
        fsc__json_member_t m[1];
        const char *ve = fsc__json_skip(p, end, depth);
        if (ve == NULL)
            return -1;
        int n = fsc__json_members(p, ve, m, 1);
        if (n < 0)
            return -1;
        if (n == 1 && m[0].key_len > 4 && memcmp(m[0].key, "__", 2) == 0 &&
            !fsc__json_key_is(&m[0], "__pairs__"))
            return write_special(w, &m[0], depth);
        if (n == 1 && fsc__json_key_is(&m[0], "__pairs__")) {
            fsc__pw_dict_open(w);
            const char *q = ws(m[0].val, m[0].val_end);
            if (q >= m[0].val_end || *q != '[')
                return -1;
            q = ws(q + 1, m[0].val_end);
            while (q < m[0].val_end && *q == '[') {
                const char *pe = fsc__json_skip(q, m[0].val_end, depth + 1);
                if (pe == NULL)
                    return -1;
                const char *a = ws(q + 1, pe);
                const char *ae = fsc__json_skip(a, pe, depth + 2);
                if (ae == NULL || write_value(w, a, ae, depth + 2) != 0)
                    return -1;
                const char *b = ws(ae, pe);
                if (b >= pe || *b != ',')
                    return -1;
                const char *be = fsc__json_skip(b + 1, pe, depth + 2);
                if (be == NULL || write_value(w, b + 1, be, depth + 2) != 0)
                    return -1;
                q = ws(pe, m[0].val_end);
                if (q < m[0].val_end && *q == ',')
                    q = ws(q + 1, m[0].val_end);
            }
            fsc__pw_dict_close(w);
            return 0;
        }
        fsc__pw_dict_open(w);
        p = ws(p + 1, ve);
        while (p < ve && *p == '"') {
            size_t kl = 0;
            char *k = fsc__json_string(p, ve, &kl);
            if (k == NULL)
                return -1;
            fsc__pw_str(w, k, kl);
            free(k);
            p = skip_string(p, ve);
            p = ws(p, ve);
            if (p >= ve || *p != ':')
                return -1;
            const char *vs = p + 1, *vend = fsc__json_skip(vs, ve, depth + 1);
            if (vend == NULL || write_value(w, vs, vend, depth + 1) != 0)
                return -1;
            p = ws(vend, ve);
            if (p < ve && *p == ',')
                p = ws(p + 1, ve);
        }
        fsc__pw_dict_close(w);
        return 0;
    }
    const char *e = fsc__json_skip(p, end, depth);
    if (e == NULL)
        return -1;
    size_t n = (size_t)(e - p);
    if (n == 4 && memcmp(p, "null", 4) == 0)
        fsc__pw_none(w);
    else if (n == 4 && memcmp(p, "true", 4) == 0)
        fsc__pw_bool(w, 1);
    else if (n == 5 && memcmp(p, "false", 5) == 0)
        fsc__pw_bool(w, 0);
    else
        return write_number(w, p, e);
    return 0;
}

int fsc__json_write_pickle(fsc__pw_t *w, const char *p, const char *end)
{
    return write_value(w, p, end, 0);
}
