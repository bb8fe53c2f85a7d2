/*
 * cli_job.c — the options that pick one run of a job database, shared by
 * report, check and diff: --rank R and --run N (fragscope/rundb.h,
 * fsc_job_opts_t).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fragscope/rundb.h"

static int whole(const char *cmd, const char *opt, const char *val, int64_t *out)
{
    char *end = NULL;
    if (val == NULL || val[0] == '\0')
        return fsc_cli_usage_error(cmd, "%s needs a value", opt);
    errno = 0;
    long long v = strtoll(val, &end, 10);
    if (end == val || *end != '\0' || errno != 0 || v < 0)
        return fsc_cli_usage_error(cmd, "%s: '%s' is not a number of 0 or more", opt, val);
    *out = (int64_t)v;
    return 0;
}

int fsc_cli_job_option(const char *cmd, int argc, char **argv, int *i, struct fsc_job_opts *o,
                       int *rc)
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    *rc = 0;
    if (strcmp(a, "--rank") == 0) {
        *rc = whole(cmd, a, v, &o->rank);
        o->has_rank = 1;
    } else if (strcmp(a, "--run") == 0) {
        *rc = whole(cmd, a, v, &o->run);
        o->has_run = 1;
    } else {
        return 0;
    }
    (*i)++;
    return 1;
}
