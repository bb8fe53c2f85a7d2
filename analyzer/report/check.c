/*
 * check.c — the CI gate: compare a run's headline figures with thresholds
 * and say, one line each, which ones it violates (docs/metrics.md, "CI
 * thresholds").
 */
#include <stdio.h>

#include "fragscope/rundb.h"

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

static int split_checks(fsc_rundb_t *db, const fsc_check_limits_t *lim, FILE *out, int *n,
                        fsc_err_t *err)
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
                               "%s: no summary.%s for %s (written by a fragscope without the "
                               "split of reserved − allocated: analyze the run again)",
                               fsc_rundb_path(db), c->key, c->opt);
        if (rc == 0)
            rc = fsc_rundb_summary_real(db, c->key, 0.0, &v);
        if (rc != 0) {
            fsc_err_copy(err, fsc_rundb_error(db));
            return rc;
        }
        if (v <= limit)
            continue;
        (*n)++;
        if (out == NULL)
            continue;
        if (c->is_ratio)
            fprintf(out, "%s %.4f exceeds %s %.4f\n", c->what, v, c->opt, limit);
        else
            fprintf(out, "%s %s (%.0f bytes) exceeds %s %s\n", c->what,
                    fsc_size_format((uint64_t)v, b[0], sizeof b[0]), v, c->opt,
                    fsc_size_format((uint64_t)limit, b[1], sizeof b[1]));
    }
    return 0;
}

static int run_checks(fsc_rundb_t *db, const fsc_check_limits_t *lim, FILE *out, int *n)
{
    char b[2][32];
    int rc = 0;
    if (lim->has_max_peak_reserved) {
        int64_t got = 0;
        if ((rc = fsc_rundb_summary_int(db, "peak_reserved_bytes", 0, &got)) != 0)
            return rc;
        uint64_t v = (uint64_t)got;
        if (v > lim->max_peak_reserved) {
            (*n)++;
            if (out)
                fprintf(out, "peak reserved %s (%llu bytes) exceeds --max-peak-reserved %s\n",
                        fsc_size_format(v, b[0], sizeof b[0]), (unsigned long long)v,
                        fsc_size_format(lim->max_peak_reserved, b[1], sizeof b[1]));
        }
    }
    if (lim->has_max_external_frag) {
        double v = 0.0;
        if ((rc = fsc_rundb_summary_real(db, "external_frag_at_peak", 0.0, &v)) != 0)
            return rc;
        if (v > lim->max_external_frag) {
            (*n)++;
            if (out)
                fprintf(out, "free-space scatter at the peak (1 − largest free block / free "
                             "bytes) %.4f exceeds --max-free-space-scatter %.4f\n", v,
                        lim->max_external_frag);
        }
    }
    if (lim->has_max_internal_frag) {
        double v = 0.0;
        if ((rc = fsc_rundb_summary_real(db, "internal_frag_ratio_at_peak", 0.0, &v)) != 0)
            return rc;
        if (v > lim->max_internal_frag) {
            (*n)++;
            if (out)
                fprintf(out, "internal fragmentation at the peak %.4f exceeds "
                             "--max-internal-frag %.4f\n", v, lim->max_internal_frag);
        }
    }
    if (lim->has_min_utilization) {
        double v = 0.0;
        if ((rc = fsc_rundb_summary_real(db, "utilization", 0.0, &v)) != 0)
            return rc;
        if (v < lim->min_utilization) {
            (*n)++;
            if (out)
                fprintf(out, "utilization %.4f is below --min-utilization %.4f\n", v,
                        lim->min_utilization);
        }
    }
    if (lim->no_oom) {
        int64_t v = 0;
        if ((rc = fsc_rundb_summary_int(db, "num_ooms", 0, &v)) != 0)
            return rc;
        if (v > 0) {
            (*n)++;
            first_oom_t f = {"", 0};
            if (out && (rc = fsc_rundb_ooms(db, take_first, &f)) != 0)
                return rc;
            if (out)
                fprintf(out, "%lld OOM%s (the first: %s, at event %lld) but --no-oom\n",
                        (long long)v, v == 1 ? "" : "s", f.cause, f.seq);
        }
    }
    return 0;
}

int fsc_check_run(const char *db_path, const fsc_check_limits_t *lim, FILE *out,
                  int *violations, fsc_err_t *err)
{
    fsc_rundb_t *db = NULL;
    int rc = fsc_rundb_open(db_path, &db, err);
    if (rc != 0)
        return rc;
    int n = 0;
    rc = run_checks(db, lim, out, &n);
    if (rc != 0)
        fsc_err_copy(err, fsc_rundb_error(db));
    else
        rc = split_checks(db, lim, out, &n, err);
    fsc_rundb_close(db);
    if (rc == 0 && violations)
        *violations = n;
    return rc;
}
