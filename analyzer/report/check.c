/*
 * check.c — the CI gate: compare a run's headline figures with thresholds
 * and say, one line each, which ones it violates.
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
                fprintf(out, "external fragmentation at the peak %.4f exceeds "
                             "--max-external-frag %.4f\n", v, lim->max_external_frag);
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
    fsc_rundb_close(db);
    if (rc == 0 && violations)
        *violations = n;
    return rc;
}
