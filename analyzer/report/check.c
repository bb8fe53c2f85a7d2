/*
 * check.c — the CI gate: compare a run's headline figures with thresholds
 * and say, one line each, which ones it violates.
 */
#include <stdio.h>

#include "rundb.h"

int fsc_check_run(const char *db_path, const fsc_check_limits_t *lim, FILE *out,
                  int *violations, fsc_err_t *err)
{
    sqlite3 *db = NULL;
    int rc = fsc_rundb_open(db_path, &db, err);
    if (rc != 0)
        return rc;
    int n = 0;
    char b[2][32];
    if (lim->has_max_peak_reserved) {
        uint64_t v = (uint64_t)fsc__rundb_summary_int(db, "peak_reserved_bytes", 0);
        if (v > lim->max_peak_reserved) {
            n++;
            if (out)
                fprintf(out, "peak reserved %s (%llu bytes) exceeds --max-peak-reserved %s\n",
                        fsc_size_format(v, b[0], sizeof b[0]), (unsigned long long)v,
                        fsc_size_format(lim->max_peak_reserved, b[1], sizeof b[1]));
        }
    }
    if (lim->has_max_external_frag) {
        double v = fsc__rundb_summary(db, "external_frag_at_peak", 0.0);
        if (v > lim->max_external_frag) {
            n++;
            if (out)
                fprintf(out, "external fragmentation at the peak %.4f exceeds "
                             "--max-external-frag %.4f\n", v, lim->max_external_frag);
        }
    }
    if (lim->has_max_internal_frag) {
        double v = fsc__rundb_summary(db, "internal_frag_ratio_at_peak", 0.0);
        if (v > lim->max_internal_frag) {
            n++;
            if (out)
                fprintf(out, "internal fragmentation at the peak %.4f exceeds "
                             "--max-internal-frag %.4f\n", v, lim->max_internal_frag);
        }
    }
    if (lim->has_min_utilization) {
        double v = fsc__rundb_summary(db, "utilization", 0.0);
        if (v < lim->min_utilization) {
            n++;
            if (out)
                fprintf(out, "utilization %.4f is below --min-utilization %.4f\n", v,
                        lim->min_utilization);
        }
    }
    if (lim->no_oom) {
        int64_t v = fsc__rundb_summary_int(db, "num_ooms", 0);
        if (v > 0) {
            n++;
            if (out) {
                char cause[32] = "";
                sqlite3_stmt *s = NULL;
                long long seq = 0;
                if (sqlite3_prepare_v2(db, "SELECT cause, seq FROM ooms ORDER BY id LIMIT 1", -1,
                                       &s, NULL) == SQLITE_OK &&
                    sqlite3_step(s) == SQLITE_ROW) {
                    snprintf(cause, sizeof cause, "%s", sqlite3_column_text(s, 0));
                    seq = sqlite3_column_int64(s, 1);
                }
                sqlite3_finalize(s);
                fprintf(out, "%lld OOM%s (the first: %s, at event %lld) but --no-oom\n",
                        (long long)v, v == 1 ? "" : "s", cause, seq);
            }
        }
    }
    sqlite3_close(db);
    if (violations)
        *violations = n;
    return 0;
}
