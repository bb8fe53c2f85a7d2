/*
 * diff.c — two runs side by side: the headline figures, their deltas, and
 * a one-line verdict. A figure counts as changed when it moves by more than
 * 1% (ratios: by more than 0.01); the verdict weighs only the figures where
 * a direction is clearly better (less memory, fewer OOMs, less
 * fragmentation, higher utilization).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_model.h"

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
    {"frag_ratio_at_peak_reserved", "frag ratio at peak reserved", K_RATIO, -1},
    {"reserved_unallocated_at_peak", "reserved-allocated at peak", K_BYTES, -1},
    {"soft_bytes_at_peak", "  soft (empty_cache frees)", K_BYTES, 0},
    {"hard_bytes_at_peak", "  hard (pinned)", K_BYTES, -1},
    {"stream_bytes_at_peak", "  stream (other streams)", K_BYTES, -1},
    {"private_pool_bytes_at_peak", "  private pools", K_BYTES, 0},
    {"pending_bytes_at_peak", "  pending (stream frees)", K_BYTES, 0},
    {"max_hard_bytes_at_oom", "hard at an OOM", K_BYTES, -1},
    {"external_frag_at_peak", "free-space scatter at peak", K_RATIO, 0},
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
typedef struct first_oom {
    char *buf;
    size_t cap;
} first_oom_t;

static int take_first(void *ud, const fsc_rundb_oom_t *o)
{
    first_oom_t *f = ud;
    snprintf(f->buf, f->cap, "%s at event %lld", o->cause ? o->cause : "",
             o->seq == FSC_RUNDB_NULL ? 0LL : (long long)o->seq);
    return FSC_RUNDB_STOP;
}

static int first_oom(fsc_rundb_t *db, char *buf, size_t cap)
{
    first_oom_t f = {buf, cap};
    snprintf(buf, cap, "none");
    return fsc_rundb_ooms(db, take_first, &f);
}

_Static_assert(sizeof k_metrics / sizeof k_metrics[0] == FSC__DIFF_NMETRICS,
               "FSC__DIFF_NMETRICS is the number of metrics");
#define NMETRICS FSC__DIFF_NMETRICS
#define HARD_TAGS FSC__DIFF_HARD_TAGS

typedef struct hard_ctx {
    fsc_rundb_t *db;
    run_figs_t *r;
} hard_ctx_t;

static int hard_row(void *ud, const fsc_rundb_frag_hard_tag_t *t)
{
    hard_ctx_t *c = ud;
    run_figs_t *r = c->r;
    if (r->nhard >= HARD_TAGS)
        return FSC_RUNDB_STOP;
    r->hard_tag_id[r->nhard] = t->tag == FSC_RUNDB_NULL ? 0 : t->tag;
    int rc = fsc_rundb_tag_label(c->db, r->hard_tag_id[r->nhard], 0, 2, r->hard_tag[r->nhard],
                                 sizeof r->hard_tag[0]);
    r->hard_tag_bytes[r->nhard++] = t->hard_bytes == FSC_RUNDB_NULL ? 0 : (double)t->hard_bytes;
    return rc;
}

const char *fsc__diff_key(int i)
{
    return k_metrics[i].key;
}

int fsc__diff_read(fsc_rundb_t *db, run_figs_t *r)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < NMETRICS; i++)
        rc = fsc_rundb_summary_real(db, k_metrics[i].key, 0.0, &r->v[i]);
    if (rc == 0)
        rc = first_oom(db, r->first_oom, sizeof r->first_oom);
    int64_t split = INT64_MIN;
    if (rc == 0)
        rc = fsc_rundb_summary_int(db, "hard_bytes_at_peak", INT64_MIN, &split);
    r->has_split = split != INT64_MIN;
    r->nhard = 0;
    hard_ctx_t hc = {db, r};
    if (rc == 0)
        rc = fsc_rundb_frag_hard_tags(db, FSC_RUNDB_NULL, hard_row, &hc);
    /* two tags that read alike: each gets the frame where their paths part */
    for (int i = 0; rc == 0 && i < r->nhard; i++)
        for (int k = i + 1; rc == 0 && k < r->nhard; k++)
            if (r->hard_tag_id[i] != r->hard_tag_id[k] &&
                strcmp(r->hard_tag[i], r->hard_tag[k]) == 0) {
                rc = fsc_rundb_tag_label_apart(db, r->hard_tag_id[i], r->hard_tag_id[k], 0,
                                               r->hard_tag[i], sizeof r->hard_tag[0]);
                if (rc == 0)
                    rc = fsc_rundb_tag_label_apart(db, r->hard_tag_id[k], r->hard_tag_id[i], 0,
                                                   r->hard_tag[k], sizeof r->hard_tag[0]);
            }
    return rc;
}

int fsc__diff_judge(const run_figs_t *a, const run_figs_t *b, char *better, char *worse,
                    size_t cap)
{
    int nb = 0, nw = 0;
    better[0] = worse[0] = '\0';
    for (size_t i = 0; i < NMETRICS; i++) {
        const metric_t *m = &k_metrics[i];
        double va = a->v[i], vb = b->v[i];
        if (m->better == 0 || !changed(m->kind, va, vb))
            continue;
        char sa[32], sb[32];
        fmt_value(m->kind, va, sa, sizeof sa);
        fmt_value(m->kind, vb, sb, sizeof sb);
        int good = (vb < va) == (m->better < 0);
        char *dst = good ? better : worse;
        size_t len = strlen(dst);
        snprintf(dst + len, cap - len, "%s%s %s → %s", len ? ", " : "",
                 m->label + strspn(m->label, " "), sa, sb);
        if (good)
            nb++;
        else
            nw++;
    }
    return nw > 0 && nb > 0 ? 2 : nw > 0 ? 1 : nb > 0 ? -1 : 0;
}

void fsc__diff_table(const run_figs_t *a, const run_figs_t *b, FILE *out, int *verdict)
{
    char better[512], worse[512];
    const char *oa = a->first_oom, *ob = b->first_oom;
    fprintf(out, "%-28s %14s %14s %22s\n", "", "base", "new", "delta");
    for (size_t i = 0; i < NMETRICS; i++) {
        const metric_t *m = &k_metrics[i];
        double va = a->v[i], vb = b->v[i];
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
    }
    int v = fsc__diff_judge(a, b, better, worse, sizeof better);
    if (strcmp(oa, "none") != 0 || strcmp(ob, "none") != 0)
        fprintf(out, "%-28s %s → %s\n", "first OOM", oa, ob);
    if (!a->has_split || !b->has_split)
        fprintf(out, "the split of reserved − allocated is not in the %s database (written "
                     "before it existed): its figures read 0 there\n",
                !a->has_split && !b->has_split ? "base and new" : !a->has_split ? "base" : "new");
    const run_figs_t *runs[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        if (runs[k]->nhard == 0)
            continue;
        fprintf(out, "hard at peak pinned most by (%s):", k ? "new" : "base");
        for (int i = 0; i < runs[k]->nhard; i++) {
            char s[32];
            fsc_size_format((uint64_t)runs[k]->hard_tag_bytes[i], s, sizeof s);
            fprintf(out, "%s %s %s", i ? "," : "", s, runs[k]->hard_tag[i]);
        }
        fputc('\n', out);
    }
    if (v == 2)
        fprintf(out, "verdict: mixed — better: %s; worse: %s\n", better, worse);
    else if (v == 1)
        fprintf(out, "verdict: worse — %s\n", worse);
    else if (v == -1)
        fprintf(out, "verdict: better — %s\n", better);
    else
        fprintf(out, "verdict: same — no figure moved by more than 1%%\n");
    if (verdict)
        *verdict = v;
}

int fsc_diff_write(const char *base_db, const char *new_db, FILE *out, int *verdict,
                   fsc_err_t *err)
{
    return fsc_diff_write_job(base_db, new_db, NULL, out, verdict, err);
}
