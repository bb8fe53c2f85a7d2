/*
 * check.c — the CI gate: compare a run's headline figures with thresholds
 * and say, one line each, which ones it violates (docs/metrics.md, "CI
 * thresholds"). In a job database every threshold applies to every run
 * (or to the one --rank / --run picks), and each line names its run. The
 * failures are collected first, so the text and the JSON say the same.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc/utf8.h"
#include "report_job.h"

/* One violated threshold of one run. */
typedef struct failure {
    int run_i; /* index into the job's runs */
    const char *option, *key;
    double value, limit;
    char msg[512];
} failure_t;

typedef struct fails {
    failure_t *v;
    int n, cap;
    int run_i;      /* the run being checked */
    int collecting; /* 0: count only */
} fails_t;

/* A new failure of the run being checked (NULL when out of memory or only
 * counting: the count still goes up). */
static failure_t *add_fail(fails_t *F, int *n, const char *option, const char *key, double v,
                           double limit)
{
    (*n)++;
    if (!F->collecting)
        return NULL;
    if (F->n == F->cap) {
        int nc = F->cap ? F->cap * 2 : 16;
        failure_t *nv = realloc(F->v, (size_t)nc * sizeof *nv);
        if (nv == NULL)
            return NULL;
        F->v = nv;
        F->cap = nc;
    }
    failure_t *x = &F->v[F->n++];
    x->run_i = F->run_i;
    x->option = option;
    x->key = key;
    x->value = v;
    x->limit = limit;
    x->msg[0] = '\0';
    return x;
}

/* The summary values of one run the thresholds compare, read for every run
 * at once (fsc__report_job_values). */
static const char *const k_keys[] = {
    "peak_reserved_bytes", "external_frag_at_peak", "internal_frag_ratio_at_peak", "utilization",
    "num_ooms", "frag_ratio_at_peak_reserved", "hard_bytes_at_peak", "max_hard_bytes_at_oom",
    "stream_bytes_at_peak", "pending_bytes_at_peak"};
#define NKEYS ((int)(sizeof k_keys / sizeof k_keys[0]))

typedef struct vals {
    const double *v;          /* NKEYS values of the run */
    const unsigned char *have; /* which are present */
    const job_run_t *run;
} vals_t;

static int v_real(const vals_t *V, const char *key, double dflt, double *out)
{
    *out = dflt;
    for (int k = 0; k < NKEYS; k++)
        if (strcmp(k_keys[k], key) == 0 && V->have[k])
            *out = V->v[k];
    return 0;
}

static int v_int(const vals_t *V, const char *key, int64_t dflt, int64_t *out)
{
    *out = dflt;
    for (int k = 0; k < NKEYS; k++)
        if (strcmp(k_keys[k], key) == 0 && V->have[k])
            *out = (int64_t)V->v[k];
    return 0;
}

/* The thresholds on the split of reserved − allocated: one table, so each
 * is read and reported the same way. */
typedef struct split_check {
    const char *key, *opt, *what;
    int is_ratio;
} split_check_t;

static const split_check_t k_split[] = {
    {"frag_ratio_at_peak_reserved", "--max-frag-ratio",
     "fragmentation ratio at peak reserved ((reserved − allocated) / reserved)", 1},
    {"hard_bytes_at_peak", "--max-hard",
     "hard bytes at the allocated peak (free but pinned by live blocks)", 0},
    {"max_hard_bytes_at_oom", "--max-hard-at-oom",
     "hard bytes at an OOM (free but pinned by live blocks when the request failed)", 0},
    {"stream_bytes_at_peak", "--max-stream",
     "stream bytes at the allocated peak (pinned on other streams)", 0},
    {"pending_bytes_at_peak", "--max-pending",
     "pending bytes at the allocated peak (frees waiting on other streams)", 0},
};

static int split_limit(const fsc_check_limits_t *lim, size_t i, double *limit)
{
    switch (i) {
    case 0: *limit = lim->max_frag_ratio; return lim->has_max_frag_ratio;
    case 1: *limit = (double)lim->max_hard; return lim->has_max_hard;
    case 2: *limit = (double)lim->max_hard_at_oom; return lim->has_max_hard_at_oom;
    case 3: *limit = (double)lim->max_stream; return lim->has_max_stream;
    default: *limit = (double)lim->max_pending; return lim->has_max_pending;
    }
}

static int split_checks(const vals_t *V, const char *path, const fsc_check_limits_t *lim,
                        fails_t *F, int *n, const char *who, fsc_err_t *err)
{
    char b[2][32];
    for (size_t i = 0; i < sizeof k_split / sizeof k_split[0]; i++) {
        const split_check_t *c = &k_split[i];
        double limit, v = 0.0;
        int64_t present = 0;
        if (!split_limit(lim, i, &limit))
            continue;
        int rc = v_int(V, c->key, INT64_MIN, &present);
        if (rc == 0 && present == INT64_MIN)
            return fsc_err_set(err, FSC_EFORMAT,
                               "%s: %s%sno summary.%s for %s (written by a fragscope without the "
                               "split of reserved − allocated: analyze the run again)",
                               path, who ? who : "", who ? ": " : "", c->key,
                               c->opt);
        if (rc == 0)
            rc = v_real(V, c->key, 0.0, &v);
        if (rc != 0)
            return rc;
        if (v <= limit)
            continue;
        failure_t *x = add_fail(F, n, c->opt, c->key, v, limit);
        if (x == NULL)
            continue;
        if (c->is_ratio)
            snprintf(x->msg, sizeof x->msg, "%s %.4f exceeds %s %.4f", c->what, v, c->opt, limit);
        else
            snprintf(x->msg, sizeof x->msg, "%s %s (%.0f bytes) exceeds %s %s", c->what,
                     fsc_size_format((uint64_t)v, b[0], sizeof b[0]), v, c->opt,
                     fsc_size_format((uint64_t)limit, b[1], sizeof b[1]));
    }
    return 0;
}

static int run_checks(const vals_t *V, const fsc_check_limits_t *lim, fails_t *F, int *n)
{
    failure_t *x;
    char b[2][32];
    int rc = 0;
    if (lim->has_max_peak_reserved) {
        int64_t got = 0;
        if ((rc = v_int(V, "peak_reserved_bytes", 0, &got)) != 0)
            return rc;
        uint64_t v = (uint64_t)got;
        if (v > lim->max_peak_reserved &&
            (x = add_fail(F, n, "--max-peak-reserved", "peak_reserved_bytes", (double)v,
                          (double)lim->max_peak_reserved)) != NULL)
            snprintf(x->msg, sizeof x->msg,
                     "peak reserved %s (%llu bytes) exceeds --max-peak-reserved %s",
                     fsc_size_format(v, b[0], sizeof b[0]), (unsigned long long)v,
                     fsc_size_format(lim->max_peak_reserved, b[1], sizeof b[1]));
    }
    if (lim->has_max_external_frag) {
        double v = 0.0;
        if ((rc = v_real(V, "external_frag_at_peak", 0.0, &v)) != 0)
            return rc;
        if (v > lim->max_external_frag &&
            (x = add_fail(F, n, "--max-free-space-scatter", "external_frag_at_peak", v,
                          lim->max_external_frag)) != NULL)
            snprintf(x->msg, sizeof x->msg,
                     "free-space scatter at the peak (1 − largest free block / free "
                     "bytes) %.4f exceeds --max-free-space-scatter %.4f", v,
                     lim->max_external_frag);
    }
    if (lim->has_max_internal_frag) {
        double v = 0.0;
        if ((rc = v_real(V, "internal_frag_ratio_at_peak", 0.0, &v)) != 0)
            return rc;
        if (v > lim->max_internal_frag &&
            (x = add_fail(F, n, "--max-internal-frag", "internal_frag_ratio_at_peak", v,
                          lim->max_internal_frag)) != NULL)
            snprintf(x->msg, sizeof x->msg,
                     "internal fragmentation at the peak %.4f exceeds --max-internal-frag %.4f",
                     v, lim->max_internal_frag);
    }
    if (lim->has_min_utilization) {
        double v = 0.0;
        if ((rc = v_real(V, "utilization", 0.0, &v)) != 0)
            return rc;
        if (v < lim->min_utilization &&
            (x = add_fail(F, n, "--min-utilization", "utilization", v, lim->min_utilization)) !=
                NULL)
            snprintf(x->msg, sizeof x->msg, "utilization %.4f is below --min-utilization %.4f", v,
                     lim->min_utilization);
    }
    if (lim->no_oom) {
        int64_t v = 0;
        if ((rc = v_int(V, "num_ooms", 0, &v)) != 0)
            return rc;
        if (v > 0 && (x = add_fail(F, n, "--no-oom", "num_ooms", (double)v, 0.0)) != NULL) {
            const job_run_t *r = V->run;
            snprintf(x->msg, sizeof x->msg, "%lld OOM%s (the first: %s, at event %lld) but --no-oom",
                     (long long)v, v == 1 ? "" : "s", r->oom_cause,
                     r->oom_seq == FSC_RUNDB_NULL ? 0LL : (long long)r->oom_seq);
        }
    }
    return 0;
}

static void write_text(const job_t *j, const fails_t *F, FILE *out)
{
    for (int i = 0; i < F->n; i++) {
        if (j->n > 1)
            fprintf(out, "%s: ", j->runs[F->v[i].run_i].label);
        fprintf(out, "%s\n", F->v[i].msg);
    }
}

static int write_json(const job_t *j, const fails_t *F, int nruns, FILE *out, fsc_err_t *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "database", j->db_path);
    cJSON_AddNumberToObject(root, "runs_checked", nruns);
    cJSON_AddBoolToObject(root, "ok", F->n == 0);
    cJSON *arr = cJSON_AddArrayToObject(root, "failures");
    for (int i = 0; i < F->n; i++) {
        const failure_t *x = &F->v[i];
        const job_run_t *r = &j->runs[x->run_i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "run", (double)r->run);
        if (r->rank == FSC_RUNDB_NULL)
            cJSON_AddNullToObject(o, "rank");
        else
            cJSON_AddNumberToObject(o, "rank", (double)r->rank);
        if (r->device == FSC_RUNDB_NULL)
            cJSON_AddNullToObject(o, "device");
        else
            cJSON_AddNumberToObject(o, "device", (double)r->device);
        cJSON_AddStringToObject(o, "label", r->label);
        cJSON_AddStringToObject(o, "option", x->option);
        cJSON_AddStringToObject(o, "summary_key", x->key);
        cJSON_AddNumberToObject(o, "value", x->value);
        cJSON_AddNumberToObject(o, "limit", x->limit);
        cJSON_AddStringToObject(o, "message", x->msg);
        cJSON_AddItemToArray(arr, o);
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    char *clean = NULL; /* names from user files as UTF-8 (fsc/utf8.h) */
    if (s != NULL)
        fsc__utf8_sanitize(s, strlen(s), &clean, NULL, NULL);
    cJSON_free(s);
    if (clean == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    fprintf(out, "%s\n", clean);
    free(clean);
    return 0;
}

int fsc_check_job(const char *db_path, const fsc_check_limits_t *lim, const fsc_job_opts_t *o,
                  int json, FILE *out, int *violations, int *runs_checked, fsc_err_t *err)
{
    fsc_rundb_t *db = NULL;
    int rc = fsc_rundb_open(db_path, &db, err);
    if (rc != 0)
        return rc;
    job_t j;
    memset(&j, 0, sizeof j);
    fails_t F = {NULL, 0, 0, 0, out != NULL};
    int n = 0, only = -1, nruns = 0;
    double *vals = NULL;
    unsigned char *have = NULL;
    rc = fsc__report_job_load(db, &j, err);
    if (rc == 0)
        rc = fsc__report_job_find(&j, o, &only, err);
    if (rc == 0) {
        vals = malloc((size_t)j.n * NKEYS * sizeof *vals);
        have = malloc((size_t)j.n * NKEYS);
        if (vals == NULL || have == NULL)
            rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
        else if ((rc = fsc__report_job_values(db, &j, k_keys, NKEYS, vals, have)) != 0)
            fsc_err_copy(err, fsc_rundb_error(db));
    }
    for (int i = 0; rc == 0 && i < j.n; i++) {
        if (only >= 0 && i != only)
            continue;
        nruns++;
        F.run_i = i;
        vals_t V = {vals + (size_t)i * NKEYS, have + (size_t)i * NKEYS, &j.runs[i]};
        rc = run_checks(&V, lim, &F, &n);
        if (rc == 0)
            rc = split_checks(&V, db_path, lim, &F, &n, j.n > 1 ? j.runs[i].label : NULL, err);
    }
    free(vals);
    free(have);
    if (rc == 0 && F.collecting && F.n < n)
        rc = fsc_err_set(err, FSC_ENOMEM, "out of memory");
    if (rc == 0 && out != NULL) {
        j.db_path = db_path;
        if (json)
            rc = write_json(&j, &F, nruns, out, err);
        else
            write_text(&j, &F, out);
    }
    fsc_rundb_close(db);
    fsc__report_job_free(&j);
    free(F.v);
    if (rc == 0 && violations)
        *violations = n;
    if (rc == 0 && runs_checked)
        *runs_checked = nruns;
    return rc;
}

int fsc_check_run(const char *db_path, const fsc_check_limits_t *lim, FILE *out,
                  int *violations, fsc_err_t *err)
{
    return fsc_check_job(db_path, lim, NULL, 0, out, violations, NULL, err);
}
