/*
 * cmd_diff.c — `fragscope diff`: two run databases side by side.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fragscope/rundb.h"

const char fsc_cmd_diff_summary[] = "compare two run databases, with a one-line verdict";
const char fsc_cmd_diff_usage[] =
    "usage: fragscope diff BASE.db NEW.db [--fail-on-worse] [--rank R | --run N]\n"
    "                     [--all-ranks]\n"
    "\n"
    "Prints the headline figures of both runs side by side with their deltas\n"
    "(peak allocated and reserved, utilization, fragmentation, OOMs, segments,\n"
    "cache hit rate, leaks) and a last line \"verdict: better|worse|mixed|same\"\n"
    "naming the figures that moved by more than 1% (ratios: 1 point).\n"
    "\n"
    "Two job databases (either with several runs) are compared rank by rank: the\n"
    "runs are paired by rank and device, then rank, then device (ranks unknown),\n"
    "then run number (neither known); one line per pair with its peaks, OOMs and\n"
    "verdict (beyond 20 pairs only the changed ones), the runs without a partner,\n"
    "and the job's verdict: mixed when the pairs disagree.\n"
    "\n"
    "options:\n"
    "  --fail-on-worse   exit 1 when the verdict is worse or mixed\n"
    "  --rank R, --run N with job databases, also the full table of the pair of\n"
    "                    the base's rank R / run N\n"
    "  --all-ranks       list every pair\n"
    "\n"
    "exit status: 0 ok, 1 worse (with --fail-on-worse), 2 a file is missing or not\n"
    "a run database, or bad usage.\n";

int fsc_cmd_diff(int argc, char **argv)
{
    const char *p[2] = {NULL, NULL};
    int np = 0, fail_on_worse = 0, rc = 0;
    fsc_job_opts_t jo;
    memset(&jo, 0, sizeof jo);
    for (int i = 1; i < argc; i++) {
        if (fsc_cli_job_option("diff", argc, argv, &i, &jo, &rc)) {
            if (rc != 0)
                return rc;
        } else if (strcmp(argv[i], "--fail-on-worse") == 0)
            fail_on_worse = 1;
        else if (strcmp(argv[i], "--all-ranks") == 0)
            jo.all_ranks = 1;
        else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return fsc_cli_usage_error("diff", "unknown option '%s'", argv[i]);
        else if (np < 2)
            p[np++] = argv[i];
        else
            return fsc_cli_usage_error("diff", "two databases only ('%s')", argv[i]);
    }
    if (np != 2)
        return fsc_cli_usage_error("diff", "needs BASE.db and NEW.db");
    fsc_err_t err = {0};
    int verdict = 0;
    rc = fsc_diff_write_job(p[0], p[1], &jo, stdout, &verdict, &err);
    if (rc != 0) {
        fsc_cli_error("%s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    return fail_on_worse && verdict > 0 ? FSC_EXIT_CHECK_FAILED : FSC_EXIT_OK;
}
