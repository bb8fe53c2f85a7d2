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
    "usage: fragscope check RUN.db [--max-frag-ratio R] [--max-hard SIZE]\n"
    "                              [--max-hard-at-oom SIZE] [--max-stream SIZE]\n"
    "                              [--max-pending SIZE] [--max-peak-reserved SIZE]\n"
    "                              [--max-internal-frag R] [--min-utilization R]\n"
    "                              [--max-free-space-scatter R] [--no-oom]\n"
    "                              [--rank R | --run N] [--format text|json]\n"
    "\n"
    "Compares the run's figures with the given thresholds and prints one line per\n"
    "violated threshold. Ratios R are between 0 and 1, or percentages (\"30%\").\n"
    "In a job database (several runs) every threshold applies to every run, and\n"
    "each line starts with the run it is about (\"rank 3 (device 0, host n1): peak\n"
    "reserved ...\").\n"
    "Where reserved - allocated sits (soft, hard, stream, pending) is defined in\n"
    "docs/metrics.md.\n"
    "\n"
    "  --max-frag-ratio R        (reserved - allocated) / reserved at peak reserved\n"
    "  --max-hard SIZE           hard bytes at the allocated peak: free bytes in\n"
    "                            segments pinned by live blocks (e.g. 2GiB)\n"
    "  --max-hard-at-oom SIZE    hard bytes at any OOM: free memory the failed request's\n"
    "                            stream held but live blocks kept from being released\n"
    "                            (0 without an OOM)\n"
    "  --max-stream SIZE         bytes pinned on other streams at the allocated peak\n"
    "  --max-pending SIZE        bytes freed but waiting on other streams' work, at the\n"
    "                            allocated peak\n"
    "  --max-peak-reserved SIZE  peak reserved bytes (e.g. 18GiB)\n"
    "  --max-internal-frag R     internal fragmentation at the peak, as a ratio of\n"
    "                            allocated bytes\n"
    "  --min-utilization R       peak allocated / peak reserved\n"
    "  --max-free-space-scatter R  1 - largest free block / free bytes at the\n"
    "                            allocated peak (old name --max-external-frag): how\n"
    "                            scattered the free bytes are; high on healthy runs\n"
    "  --no-oom                  the run must not have hit an OOM\n"
    "  --rank R, --run N         check only the run of rank R / run N of a job\n"
    "  --format F                text (default) or json: {database, runs_checked, ok,\n"
    "                            failures[]: run, rank, device, label, option,\n"
    "                            summary_key, value, limit, message}\n"    "\n"
    "exit status: 0 every threshold met, 1 at least one violated, 2 the file is\n"
    "missing or not a run database, or bad usage.\n";

int fsc_cmd_check(int argc, char **argv)
{
    const char *db = NULL;
    fsc_check_limits_t lim;
    memset(&lim, 0, sizeof lim);
    int n = 0, json = 0;
    fsc_job_opts_t jo;
    memset(&jo, 0, sizeof jo);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (fsc_cli_job_option("check", argc, argv, &i, &jo, &rc)) {
            if (rc != 0)
                return rc;
            continue;
        } else if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0) {
            const char *f = a[8] == '=' ? a + 9 : v;
            if (f == NULL || (strcmp(f, "json") != 0 && strcmp(f, "text") != 0))
                return fsc_cli_usage_error("check", "--format: '%s' is not text or json",
                                           f ? f : "");
            json = strcmp(f, "json") == 0;
            i += a[8] != '=';
            continue;
        } else if (strcmp(a, "--max-peak-reserved") == 0) {
            rc = fsc_cli_size("check", a, v, &lim.max_peak_reserved);
            lim.has_max_peak_reserved = 1;
            i++;
        } else if (strcmp(a, "--max-frag-ratio") == 0) {
            rc = fsc_cli_ratio("check", a, v, &lim.max_frag_ratio);
            lim.has_max_frag_ratio = 1;
            i++;
        } else if (strcmp(a, "--max-hard") == 0) {
            rc = fsc_cli_size("check", a, v, &lim.max_hard);
            lim.has_max_hard = 1;
            i++;
        } else if (strcmp(a, "--max-hard-at-oom") == 0) {
            rc = fsc_cli_size("check", a, v, &lim.max_hard_at_oom);
            lim.has_max_hard_at_oom = 1;
            i++;
        } else if (strcmp(a, "--max-stream") == 0) {
            rc = fsc_cli_size("check", a, v, &lim.max_stream);
            lim.has_max_stream = 1;
            i++;
        } else if (strcmp(a, "--max-pending") == 0) {
            rc = fsc_cli_size("check", a, v, &lim.max_pending);
            lim.has_max_pending = 1;
            i++;
        } else if (strcmp(a, "--max-free-space-scatter") == 0 ||
                   strcmp(a, "--max-external-frag") == 0) {
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
    int violations = 0, runs = 0;
    int rc = fsc_check_job(db, &lim, &jo, json, stdout, &violations, &runs, &err);
    if (rc != 0) {
        fsc_cli_error("%s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    if (violations > 0)
        return FSC_EXIT_CHECK_FAILED;
    if (json)
        return FSC_EXIT_OK;
    if (runs > 1)
        printf("ok: %s: every one of its %d runs meets %d threshold%s\n", db, runs, n,
               n == 1 ? "" : "s");
    else
        printf("ok: %s meets %d threshold%s\n", db, n, n == 1 ? "" : "s");
    return FSC_EXIT_OK;
}
