/*
 * cmd_check.c — `fragscope check`: a CI gate on a run database's peak
 * memory, fragmentation, utilization and OOMs.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fragscope/rundb.h"

const char fsc_cmd_check_summary[] = "fail (exit 1) when a run exceeds memory/fragmentation limits";
const char fsc_cmd_check_usage[] =
    "usage: fragscope check RUN.db [--max-peak-reserved SIZE] [--max-external-frag R]\n"
    "                              [--max-internal-frag R] [--min-utilization R] [--no-oom]\n"
    "\n"
    "Compares the run's figures with the given thresholds and prints one line per\n"
    "violated threshold. Ratios R are between 0 and 1, or percentages (\"30%\").\n"
    "\n"
    "  --max-peak-reserved SIZE  peak reserved bytes (e.g. 18GiB)\n"
    "  --max-external-frag R     external fragmentation at the allocated peak\n"
    "  --max-internal-frag R     internal fragmentation at the peak, as a ratio of\n"
    "                            allocated bytes\n"
    "  --min-utilization R       peak allocated / peak reserved\n"
    "  --no-oom                  the run must not have hit an OOM\n"
    "\n"
    "exit status: 0 every threshold met, 1 at least one violated, 2 the file is\n"
    "missing or not a run database, or bad usage.\n";

int fsc_cmd_check(int argc, char **argv)
{
    const char *db = NULL;
    fsc_check_limits_t lim;
    memset(&lim, 0, sizeof lim);
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (strcmp(a, "--max-peak-reserved") == 0) {
            rc = fsc_cli_size("check", a, v, &lim.max_peak_reserved);
            lim.has_max_peak_reserved = 1;
            i++;
        } else if (strcmp(a, "--max-external-frag") == 0) {
            rc = fsc_cli_ratio("check", a, v, &lim.max_external_frag);
            lim.has_max_external_frag = 1;
            i++;
        } else if (strcmp(a, "--max-internal-frag") == 0) {
            rc = fsc_cli_ratio("check", a, v, &lim.max_internal_frag);
            lim.has_max_internal_frag = 1;
            i++;
        } else if (strcmp(a, "--min-utilization") == 0) {
            rc = fsc_cli_ratio("check", a, v, &lim.min_utilization);
            lim.has_min_utilization = 1;
            i++;
        } else if (strcmp(a, "--no-oom") == 0) {
            lim.no_oom = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            return fsc_cli_usage_error("check", "unknown option '%s'", a);
        } else if (db == NULL) {
            db = a;
            continue;
        } else {
            return fsc_cli_usage_error("check", "one database only ('%s')", a);
        }
        if (rc != 0)
            return rc;
        n++;
    }
    if (db == NULL)
        return fsc_cli_usage_error("check", "no run database given");
    if (n == 0)
        return fsc_cli_usage_error("check", "no threshold given");
    fsc_err_t err = {0};
    int violations = 0;
    int rc = fsc_check_run(db, &lim, stdout, &violations, &err);
    if (rc != 0) {
        fsc_cli_error("%s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    if (violations > 0)
        return FSC_EXIT_CHECK_FAILED;
    printf("ok: %s meets %d threshold%s\n", db, n, n == 1 ? "" : "s");
    return FSC_EXIT_OK;
}
