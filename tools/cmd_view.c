/*
 * cmd_view.c — `fragscope view run.db -o report.html`: the HTML report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fragscope/viewer.h"

const char fsc_cmd_view_summary[] = "write a self-contained HTML report of a run database";
const char fsc_cmd_view_usage[] =
    "usage: fragscope view RUN.db [-o REPORT.html] [--title TEXT] [--max-size SIZE]\n"
    "                      [--bands N] [--runs LIST] [--run N | --rank R]\n"
    "                      [--detail-limit N] [--overview-limit N]\n"
    "\n"
    "Write one self-contained HTML file (no network access of any kind; opens from\n"
    "file:// in any current browser) showing the run analyzed into RUN.db by\n"
    "'fragscope analyze': the active memory timeline (the largest allocations as\n"
    "bands, the rest summed per tag), the allocator state (segment map) at any\n"
    "event, live bytes by tag path as an icicle, memory and fragmentation over\n"
    "time (zoom and pan), the segment map at the peak and at each OOM, the OOM\n"
    "diagnoses, the size-class (bin) table, and the top tags at the peak and at\n"
    "the end (leaks). The summary numbers are plain HTML and readable without\n"
    "JavaScript.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   report path (default: RUN.db with .html in place of .db)\n"
    "  --title TEXT        page title (default: from the database)\n"
    "  --max-size SIZE     upper bound of the file size (default 3MB); the embedded\n"
    "                      tables are thinned until the page fits\n"
    "  --bands N           allocations drawn as their own band in the active memory\n"
    "                      timeline, the largest by size x lifetime (default 2000,\n"
    "                      at most 20000); the others are summed per tag\n"
    "\n"
    "A job database (several runs: ranks, devices, inputs) gets an overview at\n"
    "the top, one small chart per run sorted by rank, the run that ran out of\n"
    "memory first and the least headroom marked, and a rank picker that shows\n"
    "the whole detail for the run picked (anchors #run-N, #run-N/oom-0, ...).\n"
    "The page carries the detail of every run up to --detail-limit, beyond that\n"
    "of the first to run out of memory, the least headroom and --runs:\n"
    "  --runs LIST         also carry these runs' detail (run numbers: 3,17,40-47)\n"
    "  --run N, --rank R   carry this run and show it first (default: the first\n"
    "                      to run out of memory, else the least headroom)\n"
    "  --detail-limit N    carry every run's detail up to N runs (default 8)\n"
    "  --overview-limit N  draw every run's chart up to N runs (default 256);\n"
    "                      beyond that the marked, carried, largest and smallest\n"
    "                      peaks and OOM runs, the others as one aggregated chart\n"
    "Each run's detail is bounded by --max-size as a one-run page is.\n"
    "\n"
    "The file is written under a temporary name and renamed when complete.\n"
    "Exit codes: 0 written, 2 bad input (missing file, not a fragscope database,\n"
    "bad option), 3 other failure (e.g. the output cannot be written).\n";

/* "3,17,40-47" appended to *runs; 0 or a usage error. */
static int parse_runs(const char *s, int64_t **runs, size_t *n, size_t *cap)
{
    const char *p = s;
    while (*p != '\0') {
        char *end = NULL;
        long long a = strtoll(p, &end, 10), b = a;
        if (end == p || a < 0)
            return fsc_cli_usage_error("view", "--runs takes run numbers such as 3,17,40-47, not '%s'", s);
        p = end;
        if (*p == '-') {
            b = strtoll(p + 1, &end, 10);
            if (end == p + 1 || b < a || b - a >= 100000)
                return fsc_cli_usage_error("view", "--runs takes run numbers such as 3,17,40-47, not '%s'", s);
            p = end;
        }
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return fsc_cli_usage_error("view", "--runs takes run numbers such as 3,17,40-47, not '%s'", s);
        for (long long v = a; v <= b; v++) {
            if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 16;
                int64_t *q = realloc(*runs, nc * sizeof *q);
                if (q == NULL)
                    return fsc_cli_usage_error("view", "out of memory");
                *runs = q;
                *cap = nc;
            }
            (*runs)[(*n)++] = v;
        }
    }
    return 0;
}

static int number_opt(const char *opt, const char *val, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    long long v = strtoll(val, &end, 10);
    if (end == val || *end != '\0' || v < lo || v > hi)
        return fsc_cli_usage_error("view", "%s must be a number from %lld to %lld, not '%s'", opt, lo,
                                   hi, val);
    *out = v;
    return 0;
}

static int view_main(int argc, char **argv, int64_t **runs, size_t *cap);

int fsc_cmd_view(int argc, char **argv)
{
    int64_t *runs = NULL;
    size_t cap = 0;
    int rc = view_main(argc, argv, &runs, &cap);
    free(runs);
    return rc;
}

static int view_main(int argc, char **argv, int64_t **runs, size_t *cap)
{
    const char *db = NULL, *out = NULL;
    fsc_view_opts_t opts = FSC_VIEW_OPTS_DEFAULT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("view", "%s needs a file name", a);
            out = argv[i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            out = a + 9;
        } else if (strcmp(a, "--title") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--title needs a value");
            opts.title = argv[i];
        } else if (strcmp(a, "--max-size") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--max-size needs a size");
            int rc = fsc_cli_size("view", "--max-size", argv[i], &opts.max_bytes);
            if (rc != 0)
                return rc;
            if (opts.max_bytes == 0)
                return fsc_cli_usage_error("view", "--max-size must be more than 0");
        } else if (strcmp(a, "--bands") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--bands needs a number");
            char *end = NULL;
            long long v = strtoll(argv[i], &end, 10);
            if (end == argv[i] || *end != '\0' || v < 1 || v > 20000)
                return fsc_cli_usage_error("view", "--bands must be a number from 1 to 20000, not '%s'",
                                           argv[i]);
            opts.bands = (size_t)v;
        } else if (strcmp(a, "--runs") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--runs needs a list of run numbers");
            int rc = parse_runs(argv[i], runs, &opts.nruns, cap);
            if (rc != 0)
                return rc;
            opts.runs = *runs;
        } else if (strcmp(a, "--run") == 0 || strcmp(a, "--rank") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("view", "%s needs a number", a);
            if (opts.open_by != FSC_VIEW_OPEN_AUTO)
                return fsc_cli_usage_error("view", "give one of --run and --rank, once");
            long long v = 0;
            int rc = number_opt(a, argv[i], 0, INT64_MAX, &v);
            if (rc != 0)
                return rc;
            opts.open_by = strcmp(a, "--run") == 0 ? FSC_VIEW_OPEN_RUN : FSC_VIEW_OPEN_RANK;
            opts.open_value = v;
        } else if (strcmp(a, "--detail-limit") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--detail-limit needs a number");
            long long v = 0;
            int rc = number_opt(a, argv[i], 1, 1000000, &v);
            if (rc != 0)
                return rc;
            opts.detail_limit = (size_t)v;
        } else if (strcmp(a, "--overview-limit") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--overview-limit needs a number");
            long long v = 0;
            int rc = number_opt(a, argv[i], 1, 1000000, &v);
            if (rc != 0)
                return rc;
            opts.overview_limit = (size_t)v;
        } else if (strcmp(a, "--") == 0) {
            if (i + 1 < argc && db == NULL)
                db = argv[++i];
            if (i + 1 < argc)
                return fsc_cli_usage_error("view", "unexpected argument '%s'", argv[i + 1]);
            break;
        } else if (a[0] == '-' && a[1] != '\0') {
            return fsc_cli_usage_error("view", "unknown option '%s'", a);
        } else if (db == NULL) {
            db = a;
        } else {
            return fsc_cli_usage_error("view", "unexpected argument '%s'", a);
        }
    }
    if (db == NULL)
        return fsc_cli_usage_error("view", "no database given");

    char def[4096];
    if (out == NULL) {
        size_t n = strlen(db);
        if (n > 3 && strcmp(db + n - 3, ".db") == 0)
            n -= 3;
        if (snprintf(def, sizeof def, "%.*s.html", (int)n, db) >= (int)sizeof def)
            return fsc_cli_usage_error("view", "database path too long");
        out = def;
    }
    fsc_err_t err = {0};
    fsc_outfile_guard_input(db);
    int rc = fsc_view_write_opts(db, out, &opts, &err);
    if (rc != 0) {
        fsc_cli_error("view: %s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    return FSC_EXIT_OK;
}
