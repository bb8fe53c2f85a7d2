/*
 * cmd_view.c — `fragscope view run.db -o report.html`: the HTML report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fragscope/viewer.h"

const char fsc_cmd_view_summary[] = "write a self-contained HTML report of a run database";
const char fsc_cmd_view_usage[] =
    "usage: fragscope view RUN.db [-o REPORT.html] [--title TEXT] [--max-size SIZE]\n"
    "                      [--bands N]\n"
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
    "The file is written under a temporary name and renamed when complete.\n"
    "Exit codes: 0 written, 2 bad input (missing file, not a fragscope database,\n"
    "bad option), 3 other failure (e.g. the output cannot be written).\n";

int fsc_cmd_view(int argc, char **argv)
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
