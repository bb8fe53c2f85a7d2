/*
 * cmd_report.c — `fragscope report`: the run report as text, Markdown or
 * JSON (rundb.h's fsc_report_write does the work).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fragscope/rundb.h"

const char fsc_cmd_report_summary[] = "summarize a run database (text, JSON or Markdown)";
const char fsc_cmd_report_usage[] =
    "usage: fragscope report RUN.db [--format text|json|markdown|verdict] [-o FILE]\n"
    "                        [--all-frames] [--rank R | --run N] [--all-ranks]\n"
    "\n"
    "Prints the headline figures of an analyzed run: peak allocated and reserved,\n"
    "utilization, internal and external fragmentation at the peak, reserved but\n"
    "unallocated memory, cache hit rate, every OOM with its cause and\n"
    "explanation, the bins (power-of-two size classes), live bytes by line of code\n"
    "at the allocated peak and at each OOM (by the allocating line, the innermost\n"
    "frame, and by the first frame in the program's own code, skipping\n"
    "site-packages, torch and the standard library; one line reached through\n"
    "several stacks is one entry; JSON `live_by_line`), the tags holding the most\n"
    "memory at the peak and what was still allocated at the end.\n"
    "\n"
    "A job database (several runs: ranks, devices; `analyze A B ...`, `merge`)\n"
    "starts with the job section: per run its peaks, capacity and headroom (or\n"
    "what bounds the capacity when it is unknown), the run with the least\n"
    "headroom, the run that ran out of memory first (and on what clock that order\n"
    "rests) with its cause, and the spread of the peaks (min, median, max,\n"
    "max/min). Beyond 20 runs the table lists only the runs those figures name.\n"
    "Then the report of one run: by default the one that ran out of memory\n"
    "first, else the one with the least headroom, else the highest peak reserved.\n"
    "\n"
    "options:\n"
    "  --format F   text (default, for a terminal), markdown (for a CI job\n"
    "               summary) or json (keys: summary.*, fragmentation.*, ooms[],\n"
    "               bins[], tags_at_peak[], leaks[], ranks[], job.*, detail_run;\n"
    "               see docs/metrics.md), or verdict (a few lines on the last OOM:\n"
    "               cause, bytes, call site, the settings that would have served\n"
    "               it, with what that covers; what the native recorder prints\n"
    "               at the OOM)\n"
    "  -o FILE      write to FILE (through a temporary file) instead of stdout\n"
    "  --all-frames name tags by their innermost frames as recorded; by default\n"
    "               a tag is named by its innermost user frame (Python, or a plain\n"
    "               tag) and its callers, leaving out interpreter, unwinder,\n"
    "               dispatcher and allocator frames (docs/pytorch.md lists them)\n"
    "  --rank R     the detailed report is about the run of rank R\n"
    "  --run N      the detailed report is about run N (runs.run)\n"
    "  --all-ranks  the job table lists every run, however many\n"
    "\n"
    "exit status: 0 ok, 2 the file is missing or not a run database, no such run,\n"
    "or bad usage.\n";

int fsc_cmd_report(int argc, char **argv)
{
    const char *db = NULL, *out = NULL;
    fsc_report_format_t fmt = FSC_REPORT_TEXT;
    int all_frames = 0, rc = 0;
    fsc_job_opts_t jo;
    memset(&jo, 0, sizeof jo);
    for (int i = 1; i < argc; i++) {
        if (fsc_cli_job_option("report", argc, argv, &i, &jo, &rc)) {
            if (rc != 0)
                return rc;
        } else if (strcmp(argv[i], "--all-frames") == 0) {
            all_frames = 1;
        } else if (strcmp(argv[i], "--all-ranks") == 0) {
            jo.all_ranks = 1;
        } else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            if (fsc_report_format_parse(argv[++i], &fmt) != 0)
                return fsc_cli_usage_error("report", "--format: '%s' is not text, json, "
                                           "markdown or verdict", argv[i]);
        } else if (strncmp(argv[i], "--format=", 9) == 0) {
            if (fsc_report_format_parse(argv[i] + 9, &fmt) != 0)
                return fsc_cli_usage_error("report", "--format: '%s' is not text, json, "
                                           "markdown or verdict", argv[i] + 9);
        } else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) &&
                   i + 1 < argc) {
            out = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return fsc_cli_usage_error("report", "unknown option '%s'", argv[i]);
        } else if (db == NULL) {
            db = argv[i];
        } else {
            return fsc_cli_usage_error("report", "one database only ('%s')", argv[i]);
        }
    }
    if (db == NULL)
        return fsc_cli_usage_error("report", "no run database given");
    fsc_err_t err = {0};
    fsc_outfile_guard_input(db);
    if (all_frames)
        fmt = (fsc_report_format_t)(fmt | FSC_REPORT_F_ALL_FRAMES);
    rc = out ? fsc_report_write_job_file(db, fmt, &jo, out, &err)
             : fsc_report_write_job(db, fmt, &jo, stdout, &err);
    if (rc != 0 && out == NULL && rc == FSC_EIO && ferror(stdout)) {
        const char *m = fsc_err_msg(&err), *why = strstr(m, ": ");
        fprintf(stderr, "fragscope report: cannot write standard output: %s\n",
                why ? why + 2 : m);
        return FSC_EXIT_FAILURE;
    }
    if (rc != 0) {
        fsc_cli_error("%s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    return FSC_EXIT_OK;
}
