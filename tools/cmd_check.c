/*
 * cmd_check.c — `fragscope check`: a CI gate on a run database's peak
 * memory, fragmentation, utilization and OOMs.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "diff_input.h"
#include "fragscope/rundb.h"

const char fsc_cmd_check_summary[] = "fail (exit 1) when a run exceeds memory/fragmentation limits";
const char fsc_cmd_check_usage[] =
    "usage: fragscope check RUN.db [--max-frag-ratio R] [--max-hard SIZE]\n"
    "                              [--max-hard-at-oom SIZE] [--max-stream SIZE]\n"
    "                              [--max-pending SIZE] [--max-peak-reserved SIZE]\n"
    "                              [--max-internal-frag R] [--min-utilization R]\n"
    "                              [--max-free-space-scatter R] [--no-oom]\n"
    "                              [--rank R | --run N] [--format text|json]\n"
    "                              [--baseline BASE --fail-on SPEC...]\n"
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
    "  --baseline BASE           a run database, trace or snapshot to compare with\n"
    "                            (with no other threshold, RUN may be a trace or\n"
    "                            snapshot too)\n"
    "  --fail-on SPEC            with --baseline: a threshold relative to it, as\n"
    "                            `fragscope diff --fail-on` takes them (peak-reserved:+2%,\n"
    "                            hard:+256MiB, oom, ...); repeatable; text only\n"
    "  --rank R, --run N         check only the run of rank R / run N of a job\n"
    "  --format F                text (default) or json: {database, runs_checked, ok,\n"
    "                            failures[]: run, rank, device, label, option,\n"
    "                            summary_key, value, limit, message}\n"    "\n"
    "exit status: 0 every threshold met, 1 at least one violated, 2 the file is\n"
    "missing or not a run database, or bad usage.\n";

#define MAX_FAIL_ON 32

/* --baseline: the thresholds relative to BASE, as `diff --fail-on` checks
 * them; one line per failed threshold. */
static int check_baseline(const char *base, const char *run, const fsc_diff_threshold_t *thr,
                          size_t n, int *failed)
{
    fsc_err_t err = {0};
    fsc__diff_input_t in[2];
    memset(in, 0, sizeof in);
    int rc = fsc__diff_input_open(base, -1, &in[0], &err);
    if (rc == 0)
        rc = fsc__diff_input_open(run, -1, &in[1], &err);
    if (rc == 0) {
        fsc_diff_opts_t o;
        memset(&o, 0, sizeof o);
        o.format = FSC_DIFF_TEXT;
        o.thresholds_only = 1;
        o.fail_on = thr;
        o.nfail_on = n;
        o.base_name = base;
        o.new_name = run;
        rc = fsc_diff_explain(in[0].db, in[1].db, &o, stdout, failed, &err);
    }
    fsc__diff_input_close(&in[0]);
    fsc__diff_input_close(&in[1]);
    if (rc != 0) {
        fsc_cli_error("%s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    return 0;
}

int fsc_cmd_check(int argc, char **argv)
{
    const char *db = NULL, *baseline = NULL;
    fsc_diff_threshold_t thr[MAX_FAIL_ON];
    size_t nthr = 0;
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
        } else if (strcmp(a, "--baseline") == 0) {
            if (v == NULL)
                return fsc_cli_usage_error("check", "--baseline needs a file");
            baseline = v;
            i++;
            continue;
        } else if (strcmp(a, "--fail-on") == 0) {
            fsc_err_t err = {0};
            if (v == NULL)
                return fsc_cli_usage_error("check", "--fail-on needs a threshold, e.g. "
                                           "peak-reserved:+2%%");
            if (nthr == MAX_FAIL_ON)
                return fsc_cli_usage_error("check", "at most %d --fail-on", MAX_FAIL_ON);
            if (fsc_diff_threshold_parse(v, &thr[nthr], &err) != 0)
                return fsc_cli_usage_error("check", "%s", fsc_err_msg(&err));
            nthr++;
            i++;
            continue;
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
    if (nthr > 0 && baseline == NULL)
        return fsc_cli_usage_error("check", "--fail-on is relative to a --baseline");
    if (baseline != NULL && nthr == 0)
        return fsc_cli_usage_error("check", "--baseline needs at least one --fail-on");
    if (baseline != NULL && json)
        return fsc_cli_usage_error("check", "--baseline is text only: `fragscope diff BASE RUN "
                                   "--format json --fail-on ...` gives the same in JSON");
    if (n == 0 && nthr == 0)
        return fsc_cli_usage_error("check", "no threshold given");
    fsc_err_t err = {0};
    int violations = 0, runs = 0, rc = 0;
    if (n > 0) {
        rc = fsc_check_job(db, &lim, &jo, json, stdout, &violations, &runs, &err);
        if (rc != 0) {
            fsc_cli_error("%s", fsc_err_msg(&err));
            return fsc_cli_exit_code(rc);
        }
    }
    if (nthr > 0) {
        int failed = 0;
        if ((rc = check_baseline(baseline, db, thr, nthr, &failed)) != 0)
            return rc;
        violations += failed;
        runs = runs > 1 ? runs : 1;
        n += (int)nthr;
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
