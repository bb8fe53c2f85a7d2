/*
 * diff.c — two runs side by side: the headline figures, their deltas, and
 * a one-line verdict. A figure counts as changed when it moves by more than
 * 1% (ratios: by more than 0.01); the verdict weighs only the figures where
 * a direction is clearly better (less memory, fewer OOMs, less
 * fragmentation, higher utilization).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rundb.h"

typedef enum { K_BYTES, K_RATIO, K_COUNT } kind_t;

typedef struct metric {
    const char *key, *label;
    kind_t kind;
    int better; /* -1 lower is better, +1 higher is better, 0 neutral */
} metric_t;

static const metric_t k_metrics[] = {
    {"peak_allocated_bytes", "peak allocated", K_BYTES, -1},
    {"peak_reserved_bytes", "peak reserved", K_BYTES, -1},
    {"utilization", "utilization", K_RATIO, +1},
    {"internal_frag_ratio_at_peak", "internal frag at peak", K_RATIO, -1},
    {"external_frag_at_peak", "external frag at peak", K_RATIO, -1},
    {"reserved_unallocated_at_peak", "reserved-allocated at peak", K_BYTES, -1},
    {"peak_inactive_split_bytes", "peak inactive split", K_BYTES, -1},
    {"num_ooms", "OOMs", K_COUNT, -1},
    {"segments_created", "segments created", K_COUNT, 0},
    {"cache_hit_rate", "cache hit rate", K_RATIO, +1},
    {"leaked_bytes", "still allocated at end", K_BYTES, 0},
    {"events", "events", K_COUNT, 0},
};

static void fmt_value(kind_t k, double v, char *buf, size_t cap)
{
    if (k == K_BYTES)
        fsc_size_format(v > 0 ? (uint64_t)v : 0, buf, cap);
    else if (k == K_RATIO)
        snprintf(buf, cap, "%.2f%%", 100.0 * v);
    else
        snprintf(buf, cap, "%.0f", v);
}

static int changed(kind_t k, double a, double b)
{
    if (k == K_RATIO)
        return fabs(b - a) > 0.01;
    if (k == K_COUNT && (a == 0 || b == 0))
        return a != b;
    double base = fabs(a) > 0 ? fabs(a) : 1.0;
    return fabs(b - a) / base > 0.01;
}

/* "capacity at event 512", or "none". */
static void first_oom(sqlite3 *db, char *buf, size_t cap)
{
    sqlite3_stmt *s = NULL;
    snprintf(buf, cap, "none");
    if (sqlite3_prepare_v2(db, "SELECT cause, seq FROM ooms ORDER BY id LIMIT 1", -1, &s,
                           NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        snprintf(buf, cap, "%s at event %lld", (const char *)sqlite3_column_text(s, 0),
                 (long long)sqlite3_column_int64(s, 1));
    sqlite3_finalize(s);
}

int fsc_diff_write(const char *base_db, const char *new_db, FILE *out, int *verdict,
                   fsc_err_t *err)
{
    sqlite3 *a = NULL, *b = NULL;
    int rc = fsc_rundb_open(base_db, &a, err);
    if (rc == 0)
        rc = fsc_rundb_open(new_db, &b, err);
    if (rc != 0) {
        sqlite3_close(a);
        return rc;
    }
    char better[512] = "", worse[512] = "";
    int nb = 0, nw = 0;
    fprintf(out, "%-28s %14s %14s %22s\n", "", "base", "new", "delta");
    for (size_t i = 0; i < sizeof k_metrics / sizeof k_metrics[0]; i++) {
        const metric_t *m = &k_metrics[i];
        double va = fsc__rundb_summary(a, m->key, 0.0), vb = fsc__rundb_summary(b, m->key, 0.0);
        char sa[32], sb[32], sd[48];
        fmt_value(m->kind, va, sa, sizeof sa);
        fmt_value(m->kind, vb, sb, sizeof sb);
        if (m->kind == K_RATIO) {
            snprintf(sd, sizeof sd, "%+.2f pts", 100.0 * (vb - va));
        } else if (m->kind == K_BYTES) {
            char s[32];
            fsc_size_format((uint64_t)fabs(vb - va), s, sizeof s);
            if (va > 0)
                snprintf(sd, sizeof sd, "%s%s (%+.1f%%)", vb >= va ? "+" : "-", s,
                         100.0 * (vb - va) / va);
            else
                snprintf(sd, sizeof sd, "%s%s", vb >= va ? "+" : "-", s);
        } else {
            snprintf(sd, sizeof sd, "%+.0f", vb - va);
        }
        fprintf(out, "%-28s %14s %14s %22s\n", m->label, sa, sb, sd);
        if (m->better == 0 || !changed(m->kind, va, vb))
            continue;
        int good = (vb < va) == (m->better < 0);
        char *dst = good ? better : worse;
        size_t len = strlen(dst);
        snprintf(dst + len, 512 - len, "%s%s %s → %s", len ? ", " : "", m->label, sa, sb);
        if (good)
            nb++;
        else
            nw++;
    }
    char oa[96], ob[96];
    first_oom(a, oa, sizeof oa);
    first_oom(b, ob, sizeof ob);
    if (strcmp(oa, "none") != 0 || strcmp(ob, "none") != 0)
        fprintf(out, "%-28s %s → %s\n", "first OOM", oa, ob);
    int v;
    if (nw > 0 && nb > 0) {
        v = 2;
        fprintf(out, "verdict: mixed — better: %s; worse: %s\n", better, worse);
    } else if (nw > 0) {
        v = 1;
        fprintf(out, "verdict: worse — %s\n", worse);
    } else if (nb > 0) {
        v = -1;
        fprintf(out, "verdict: better — %s\n", better);
    } else {
        v = 0;
        fprintf(out, "verdict: same — no figure moved by more than 1%%\n");
    }
    sqlite3_close(a);
    sqlite3_close(b);
    if (verdict)
        *verdict = v;
    return 0;
}
