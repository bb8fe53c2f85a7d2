/*
 * cmd_merge.c — `fragscope merge`: run databases into one job database
 * (fsc_rundb_merge; docs/jobs.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fragscope/rundb.h"

const char fsc_cmd_merge_summary[] = "merge run databases into one job database";
const char fsc_cmd_merge_usage[] =
    "usage: fragscope merge RUN.db... -o JOB.db\n"
    "\n"
    "Copies every run of every input (a database of one run from analyze, or a\n"
    "job database from an earlier merge or from analyze of several inputs) into\n"
    "JOB.db, renumbered in input order after the runs JOB.db already holds\n"
    "(table runs: rank, device, host, source of each; docs/schema.md). Merging is\n"
    "idempotent: a run JOB.db already holds (same source, kind, rank, device and\n"
    "host, same summary) is skipped, so a merge can be repeated, or done as a tree\n"
    "(per node, then of the nodes), and each run is in the job once. It is\n"
    "streaming: each input is attached and copied table by table inside SQLite.\n"
    "JOB.db is written under a temporary name beside it and renamed when complete\n"
    "(an existing JOB.db is copied in first), so it is never half-written.\n"
    "Databases of schema 1 (older fragscope) are read as one run each.\n"
    "Two runs claiming one rank on one device (RANK unset in the launcher, or\n"
    "one run under two names) are both kept, with a warning on stderr naming\n"
    "both input files, meta merge.duplicate_rank on the second, and the job\n"
    "report's duplicate_ranks (docs/jobs.md).\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   the job database to write or extend (required)\n"
    "\n"
    "exit status: 0 merged, 2 bad usage or an input that is not a run database\n"
    "(nothing written), 3 the output could not be written.\n";

int fsc_cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const char **in = calloc((size_t)argc, sizeof *in);
    size_t n = 0;
    if (in == NULL)
        return fsc_cli_error("out of memory");
    int rc = FSC_EXIT_OK;
    for (int i = 1; i < argc && rc == FSC_EXIT_OK; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc)
                rc = fsc_cli_usage_error("merge", "%s needs a file name", a);
            else
                out = argv[++i];
        } else if (strcmp(a, "--") == 0) {
            while (++i < argc)
                in[n++] = argv[i];
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = fsc_cli_usage_error("merge", "unknown option '%s'", a);
        } else {
            in[n++] = a;
        }
    }
    if (rc == FSC_EXIT_OK && n == 0)
        rc = fsc_cli_usage_error("merge", "no run database given");
    if (rc == FSC_EXIT_OK && out == NULL)
        rc = fsc_cli_usage_error("merge", "no output given (-o JOB.db)");
    if (rc != FSC_EXIT_OK) {
        free(in);
        return rc;
    }
    fsc_rundb_merge_stats_t st;
    memset(&st, 0, sizeof st);
    fsc_err_t err;
    fsc_err_clear(&err);
    int r = fsc_rundb_merge(in, n, out, &st, &err);
    free(in);
    if (r != 0) {
        fsc_cli_error("%s", fsc_err_msg(&err));
        return fsc_cli_exit_code(r);
    }
    for (uint64_t k = 0; k < st.duplicate_ranks && k < FSC_RUNDB_MERGE_WARNINGS; k++)
        fprintf(stderr, "fragscope: warning: %s\n", st.warnings[k]);
    if (st.duplicate_ranks > FSC_RUNDB_MERGE_WARNINGS)
        fprintf(stderr, "fragscope: warning: %llu runs in all claim another's rank and device "
                        "(meta merge.duplicate_rank of each)\n",
                (unsigned long long)st.duplicate_ranks);
    printf("%s: %llu run%s (%llu there before, %llu added, %llu skipped as already there);"
           " %llu rows from %llu database%s\n",
           out, (unsigned long long)st.runs, st.runs == 1 ? "" : "s",
           (unsigned long long)st.runs_existing, (unsigned long long)st.runs_added,
           (unsigned long long)st.runs_skipped, (unsigned long long)st.rows,
           (unsigned long long)st.inputs, st.inputs == 1 ? "" : "s");
    return FSC_EXIT_OK;
}
