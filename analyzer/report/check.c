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

typedef struct first_oom {
    char cause[32];
    long long seq;
} first_oom_t;

static int take_first(void *ud, const fsc_rundb_oom_t *o)
{
    first_oom_t *f = ud;
    snprintf(f->cause, sizeof f->cause, "%s", o->cause ? o->cause : "");
    f->seq = o->seq == FSC_RUNDB_NULL ? 0 : (long long)o->seq;
    return FSC_RUNDB_STOP;
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

static int split_checks(fsc_rundb_t *db, const fsc_check_limits_t *lim, fails_t *F, int *n,
                        const char *who, fsc_err_t *err)
{
    char b[2][32];
    for (size_t i = 0; i < sizeof k_split / sizeof k_split[0]; i++) {
        const split_check_t *c = &k_split[i];
        double limit, v = 0.0;
        int64_t present = 0;
        if (!split_limit(lim, i, &limit))
            continue;
        int rc = fsc_rundb_summary_int(db, c->key, INT64_MIN, &present);
        if (rc == 0 && present == INT64_MIN)
            return fsc_err_set(err, FSC_EFORMAT,
                               "%s: %s%sno summary.%s for %s (written by a fragscope without the "
                               "split of reserved − allocated: analyze the run again)",
                               fsc_rundb_path(db), who ? who : "", who ? ": " : "", c->key,
                               c->opt);
        if (rc == 0)
            rc = fsc_rundb_summary_real(db, c->key, 0.0, &v);
        if (rc != 0) {
            fsc_err_copy(err, fsc_rundb_error(db));
            return rc;
        }
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

static int run_checks(fsc_rundb_t *db, const fsc_check_limits_t *lim, fails_t *F, int *n)
{
    failure_t *x;
    char b[2][32];
    int rc = 0;
    if (lim->has_max_peak_reserved) {
        int64_t got = 0;
        if ((rc = fsc_rundb_summary_int(db, "peak_reserved_bytes", 0, &got)) != 0)
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
        if ((rc = fsc_rundb_summary_real(db, "external_frag_at_peak", 0.0, &v)) != 0)
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
        if ((rc = fsc_rundb_summary_real(db, "internal_frag_ratio_at_peak", 0.0, &v)) != 0)
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
        if ((rc = fsc_rundb_summary_real(db, "utilization", 0.0, &v)) != 0)
            return rc;
        if (v < lim->min_utilization &&
            (x = add_fail(F, n, "--min-utilization", "utilization", v, lim->min_utilization)) !=
                NULL)
            snprintf(x->msg, sizeof x->msg, "utilization %.4f is below --min-utilization %.4f", v,
                     lim->min_utilization);
    }
    if (lim->no_oom) {
        int64_t v = 0;
        if ((rc = fsc_rundb_summary_int(db, "num_ooms", 0, &v)) != 0)
            return rc;
        if (v > 0 && (x = add_fail(F, n, "--no-oom", "num_ooms", (double)v, 0.0)) != NULL) {
            first_oom_t f = {"", 0};
            if ((rc = fsc_rundb_ooms(db, take_first, &f)) != 0)
                return rc;
            snprintf(x->msg, sizeof x->msg, "%lld OOM%s (the first: %s, at event %lld) but --no-oom",
                     (long long)v, v == 1 ? "" : "s", f.cause, f.seq);
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
    if (s == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    fprintf(out, "%s\n", s);
    cJSON_free(s);
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
    rc = fsc__report_job_load(db, &j, err);
    if (rc == 0)
        rc = fsc__report_job_find(&j, o, &only, err);
    for (int i = 0; rc == 0 && i < j.n; i++) {
        if (only >= 0 && i != only)
            continue;
        nruns++;
        F.run_i = i;
        if ((rc = fsc_rundb_select_run(db, j.runs[i].run)) != 0 ||
            (rc = run_checks(db, lim, &F, &n)) != 0) {
            fsc_err_copy(err, fsc_rundb_error(db));
            break;
        }
        rc = split_checks(db, lim, &F, &n, j.n > 1 ? j.runs[i].label : NULL, err);
    }
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
