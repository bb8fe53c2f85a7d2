/*
 * diff_job.c — two jobs side by side, rank by rank. The runs of the base
 * and the new job database are paired: same rank and device first, then
 * same rank, then (ranks unknown on both sides, as for the devices of one
 * snapshot) same device, then (nothing known) same run number, which the
 * line then says. Each pair is judged as `diff` judges two runs
 * (diff.c); runs without a partner are listed and not judged. The job's
 * verdict is the pairs' together: mixed when they disagree. Two databases of
 * one run each diff exactly as before.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_model.h"
#include "report_job.h"

#define DIFF_ROWS_ALL 20 /* up to this many pairs every one is listed */
#define DIFF_NAMED 5     /* pairs named in the verdict line */

enum { HOW_RANK_DEVICE = 1, HOW_RANK, HOW_DEVICE, HOW_RUN };

typedef struct side {
    fsc_rundb_t *db;
    job_t j;
} side_t;

static int open_side(const char *path, side_t *s, fsc_err_t *err)
{
    memset(s, 0, sizeof *s);
    int rc = fsc_rundb_open(path, &s->db, err);
    if (rc == 0)
        rc = fsc__report_job_load(s->db, &s->j, err);
    return rc;
}

static void close_side(side_t *s)
{
    fsc__report_job_free(&s->j);
    fsc_rundb_close(s->db);
    s->db = NULL;
}

static int eq(int64_t a, int64_t b)
{
    return a != FSC_RUNDB_NULL && a == b;
}

/* pa[i]: the new run paired with base run i (-1: none), how[i] by what. */
static void pair_runs(const job_t *A, const job_t *B, int *pa, int *pb, int *how)
{
    for (int i = 0; i < A->n; i++)
        pa[i] = -1, how[i] = 0;
    for (int k = 0; k < B->n; k++)
        pb[k] = -1;
    for (int pass = HOW_RANK_DEVICE; pass <= HOW_RUN; pass++)
        for (int i = 0; i < A->n; i++) {
            const job_run_t *a = &A->runs[i];
            for (int k = 0; k < B->n && pa[i] < 0; k++) {
                const job_run_t *b = &B->runs[k];
                int ok;
                if (pb[k] >= 0)
                    continue;
                switch (pass) {
                case HOW_RANK_DEVICE:
                    ok = eq(a->rank, b->rank) &&
                         (eq(a->device, b->device) ||
                          (a->device == FSC_RUNDB_NULL && b->device == FSC_RUNDB_NULL));
                    break;
                case HOW_RANK: ok = eq(a->rank, b->rank); break;
                case HOW_DEVICE:
                    ok = a->rank == FSC_RUNDB_NULL && b->rank == FSC_RUNDB_NULL &&
                         eq(a->device, b->device);
                    break;
                default:
                    ok = a->rank == FSC_RUNDB_NULL && b->rank == FSC_RUNDB_NULL &&
                         a->device == FSC_RUNDB_NULL && b->device == FSC_RUNDB_NULL &&
                         a->run == b->run;
                }
                if (ok) {
                    pa[i] = k;
                    pb[k] = i;
                    how[i] = pass;
                }
            }
        }
}

static const char *sz(int64_t v, char *buf, size_t cap)
{
    return fsc_size_format(v > 0 ? (uint64_t)v : 0, buf, cap);
}

static void change(int64_t a, int64_t b, char *buf, size_t cap)
{
    char x[32], y[32];
    if (a > 0)
        snprintf(buf, cap, "%s → %s (%+.1f%%)", sz(a, x, sizeof x), sz(b, y, sizeof y),
                 100.0 * (double)(b - a) / (double)a);
    else
        snprintf(buf, cap, "%s → %s", sz(a, x, sizeof x), sz(b, y, sizeof y));
}

static const char *verdict_word(int v)
{
    return v == 2 ? "mixed" : v == 1 ? "worse" : v == -1 ? "better" : "same";
}

typedef struct pair_res {
    int verdict;
    char worse[512];
} pair_res_t;

/* Each pair judged on the metrics of both runs, read for every run of
 * each database at once (fsc__report_job_values): the verdict needs no
 * more than the summary. */
static int judge_pairs(side_t *A, side_t *B, const int *pa, pair_res_t *res, fsc_err_t *err)
{
    enum { NK = FSC__DIFF_NMETRICS };
    const char *keys[NK];
    for (int k = 0; k < NK; k++)
        keys[k] = fsc__diff_key(k);
    double *va = malloc((size_t)A->j.n * NK * sizeof *va);
    double *vb = malloc((size_t)B->j.n * NK * sizeof *vb);
    unsigned char *ha = malloc((size_t)A->j.n * NK), *hb = malloc((size_t)B->j.n * NK);
    int rc = 0;
    if (!va || !vb || !ha || !hb)
        rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
    else if ((rc = fsc__report_job_values(A->db, &A->j, keys, NK, va, ha)) != 0)
        fsc_err_copy(err, fsc_rundb_error(A->db));
    else if ((rc = fsc__report_job_values(B->db, &B->j, keys, NK, vb, hb)) != 0)
        fsc_err_copy(err, fsc_rundb_error(B->db));
    for (int i = 0; rc == 0 && i < A->j.n; i++) {
        if (pa[i] < 0)
            continue;
        run_figs_t fa, fb;
        char better[512];
        memcpy(fa.v, va + (size_t)i * NK, sizeof fa.v);
        memcpy(fb.v, vb + (size_t)pa[i] * NK, sizeof fb.v);
        res[i].verdict = fsc__diff_judge(&fa, &fb, better, res[i].worse, sizeof res[i].worse);
    }
    free(va);
    free(vb);
    free(ha);
    free(hb);
    return rc;
}

/* Which pairs the table lists: every one up to DIFF_ROWS_ALL pairs (or with
 * --all-ranks), else the changed ones, worse and mixed first, up to
 * DIFF_ROWS_ALL. */
static void pick_rows(const job_t *ja, const int *pa, const pair_res_t *res, int all, int *show)
{
    int every = all || ja->n <= DIFF_ROWS_ALL, budget = DIFF_ROWS_ALL;
    for (int i = 0; i < ja->n; i++)
        show[i] = every && pa[i] >= 0;
    for (int pass = 0; pass < 2 && !every; pass++)
        for (int i = 0; i < ja->n && budget > 0; i++)
            if (pa[i] >= 0 && !show[i] &&
                (pass == 0 ? res[i].verdict >= 1 : res[i].verdict == -1)) {
                show[i] = 1;
                budget--;
            }
}

static void job_line(const char *what, const job_t *A, int ia, const job_t *B, int ib,
                     FILE *out)
{
    fprintf(out, "  %-18s %s → %s\n", what, ia >= 0 ? A->runs[ia].name : "none",
            ib >= 0 ? B->runs[ib].name : "none");
}

static int write_job(const side_t *A, const side_t *B, const int *pa, const int *pb,
                     const int *how, const pair_res_t *res, int all, FILE *out, int *verdict)
{
    const job_t *ja = &A->j, *jb = &B->j;
    int npairs = 0, by_run = 0;
    for (int i = 0; i < ja->n; i++) {
        npairs += pa[i] >= 0;
        by_run += how[i] == HOW_RUN;
    }
    fprintf(out, "job diff: %s (%d run%s) → %s (%d run%s): %d pairs by rank, then device%s\n",
            ja->db_path, ja->n, ja->n == 1 ? "" : "s", jb->db_path, jb->n, jb->n == 1 ? "" : "s",
            npairs, by_run ? ", then run number where neither is known" : "");
    fprintf(out, "  %-36s %-34s %-34s %-9s %s\n", "pair (base)", "peak allocated",
            "peak reserved", "OOMs", "verdict");
    int hidden = 0, same_hidden = 0;
    int *show = calloc((size_t)ja->n, sizeof *show);
    if (show == NULL)
        return FSC_ENOMEM;
    pick_rows(ja, pa, res, all, show);
    for (int i = 0; i < ja->n; i++) {
        if (pa[i] < 0)
            continue;
        if (!show[i]) {
            hidden++;
            same_hidden += res[i].verdict == 0;
            continue;
        }
        const job_run_t *a = &ja->runs[i], *b = &jb->runs[pa[i]];
        char ca[64], cr[64], oo[24];
        change(a->peak_allocated, b->peak_allocated, ca, sizeof ca);
        change(a->peak_reserved, b->peak_reserved, cr, sizeof cr);
        snprintf(oo, sizeof oo, "%lld → %lld", (long long)a->ooms, (long long)b->ooms);
        fprintf(out, "  %-36.36s %-34s %-34s %-9s %s", a->name, ca, cr, oo,
                verdict_word(res[i].verdict));
        if (strcmp(a->name, b->name) != 0)
            fprintf(out, "  (new: %s)", b->name);
        if (how[i] == HOW_RUN)
            fprintf(out, "  (paired by run number)");
        fputc('\n', out);
    }
    free(show);
    if (hidden > 0)
        fprintf(out, "  ... %d more pairs not listed (%d same): --all-ranks lists every pair\n",
                hidden, same_hidden);
    for (int i = 0; i < ja->n; i++)
        if (pa[i] < 0)
            fprintf(out, "  only in base: %s\n", ja->runs[i].name);
    for (int k = 0; k < jb->n; k++)
        if (pb[k] < 0)
            fprintf(out, "  only in new:  %s\n", jb->runs[k].name);
    char x[32], y[32];
    fprintf(out, "  %-18s %s (%s) → %s (%s)\n", "max peak reserved",
            sz(ja->reserved.max, x, sizeof x), ja->runs[ja->reserved.max_i].name,
            sz(jb->reserved.max, y, sizeof y), jb->runs[jb->reserved.max_i].name);
    job_line("least headroom", ja, ja->least, jb, jb->least, out);
    job_line("first OOM", ja, ja->noom ? ja->oom_order[0] : -1, jb,
             jb->noom ? jb->oom_order[0] : -1, out);

    /* the job's verdict: the pairs' together */
    int nb = 0, nw = 0, unpaired = 0;
    for (int i = 0; i < ja->n; i++) {
        if (pa[i] < 0)
            continue;
        nb += res[i].verdict == -1 || res[i].verdict == 2;
        nw += res[i].verdict >= 1;
    }
    for (int i = 0; i < ja->n; i++)
        unpaired += pa[i] < 0;
    for (int k = 0; k < jb->n; k++)
        unpaired += pb[k] < 0;
    int v = nw > 0 && nb > 0 ? 2 : nw > 0 ? 1 : nb > 0 ? -1 : 0;
    fprintf(out, "verdict: %s", verdict_word(v));
    if (v == 0)
        fprintf(out, " — no pair moved by more than 1%%");
    int named = 0;
    if (nw > 0) {
        fprintf(out, " — worse in %d pair%s: ", nw, nw == 1 ? "" : "s");
        for (int i = 0; i < ja->n && named < DIFF_NAMED; i++)
            if (pa[i] >= 0 && res[i].verdict >= 1)
                fprintf(out, "%s%s: %s", named++ ? "; " : "", ja->runs[i].name, res[i].worse);
        if (nw > named)
            fprintf(out, "; and %d more", nw - named);
    }
    if (nb > 0)
        fprintf(out, "%s better in %d pair%s", nw > 0 ? ";" : " —", nb, nb == 1 ? "" : "s");
    if (unpaired > 0)
        fprintf(out, " (%d run%s without a partner, not judged)", unpaired,
                unpaired == 1 ? "" : "s");
    fputc('\n', out);
    if (verdict)
        *verdict = v;
    return 0;
}

/* --rank / --run: the full table of that pair. */
static int write_detail(side_t *A, side_t *B, const int *pa, const fsc_job_opts_t *o, FILE *out,
                        fsc_err_t *err)
{
    int ia;
    int rc = fsc__report_job_find(&A->j, o, &ia, err);
    if (rc != 0 || ia < 0)
        return rc;
    if (pa[ia] < 0)
        return fsc_err_set(err, FSC_ENOENT, "%s: %s has no partner in %s", A->j.db_path,
                           A->j.runs[ia].name, B->j.db_path);
    run_figs_t fa, fb;
    if ((rc = fsc_rundb_select_run(A->db, A->j.runs[ia].run)) != 0 ||
        (rc = fsc__diff_read(A->db, &fa)) != 0) {
        fsc_err_copy(err, fsc_rundb_error(A->db));
        return rc;
    }
    if ((rc = fsc_rundb_select_run(B->db, B->j.runs[pa[ia]].run)) != 0 ||
        (rc = fsc__diff_read(B->db, &fb)) != 0) {
        fsc_err_copy(err, fsc_rundb_error(B->db));
        return rc;
    }
    fprintf(out, "\ndetail: %s → %s\n", A->j.runs[ia].name, B->j.runs[pa[ia]].name);
    fsc__diff_table(&fa, &fb, out, NULL);
    return 0;
}

int fsc_diff_write_job(const char *base_db, const char *new_db, const fsc_job_opts_t *o,
                       FILE *out, int *verdict, fsc_err_t *err)
{
    side_t A, B;
    memset(&B, 0, sizeof B);
    int rc = open_side(base_db, &A, err);
    if (rc == 0)
        rc = open_side(new_db, &B, err);
    if (rc == 0 && A.j.n == 1 && B.j.n == 1) {
        /* two runs: as before (a --rank / --run must name the base's run) */
        int ia;
        run_figs_t fa, fb;
        rc = fsc__report_job_find(&A.j, o, &ia, err);
        if (rc == 0 && (rc = fsc__diff_read(A.db, &fa)) != 0)
            fsc_err_copy(err, fsc_rundb_error(A.db));
        if (rc == 0 && (rc = fsc__diff_read(B.db, &fb)) != 0)
            fsc_err_copy(err, fsc_rundb_error(B.db));
        if (rc == 0)
            fsc__diff_table(&fa, &fb, out, verdict);
    } else if (rc == 0) {
        A.j.db_path = base_db;
        B.j.db_path = new_db;
        int *pa = malloc((size_t)A.j.n * sizeof *pa), *how = malloc((size_t)A.j.n * sizeof *how);
        int *pb = malloc((size_t)B.j.n * sizeof *pb);
        pair_res_t *res = calloc((size_t)A.j.n, sizeof *res);
        if (!pa || !pb || !how || !res)
            rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
        if (rc == 0) {
            pair_runs(&A.j, &B.j, pa, pb, how);
            rc = judge_pairs(&A, &B, pa, res, err);
        }
        if (rc == 0 && write_job(&A, &B, pa, pb, how, res, o != NULL && o->all_ranks, out,
                                 verdict) != 0)
            rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
        if (rc == 0)
            rc = write_detail(&A, &B, pa, o, out, err);
        free(pa);
        free(pb);
        free(how);
        free(res);
    }
    close_side(&A);
    close_side(&B);
    return rc;
}
