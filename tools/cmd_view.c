/*
 * cmd_view.c — `fragscope view run.db -o report.html`: the HTML report; and
 * `fragscope view run.pickle -o report.html`, any input analyze takes (a
 * trace, a snapshot), analyzed first into a database in a temporary folder
 * that is removed afterwards.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fragscope/source.h"
#include "fragscope/viewer.h"

const char fsc_cmd_view_summary[] = "write a self-contained HTML report of a run database";
const char fsc_cmd_view_usage[] =
    "usage: fragscope view RUN.db|TRACE|SNAPSHOT [-o REPORT.html] [--title TEXT]\n"
    "       fragscope view BASE NEW -o COMPARE.html [--device N]\n"
    "                      [--max-size SIZE] [--bands N] [--runs LIST]\n"
    "                      [--run N | --rank R] [--detail-limit N]\n"
    "                      [--overview-limit N] [--lenient] [--device N]\n"
    "                      [--capacity SIZE] [--device-memory SIZE]\n"
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
    "Given a trace (.fstrace) or a PyTorch snapshot (pickle or JSON) instead of\n"
    "a database, view analyzes it first, as 'fragscope analyze' does (what-if\n"
    "suggestions included), into a database in a temporary folder ($TMPDIR, else\n"
    "/tmp) that is removed once the page is written: one command from snapshot\n"
    "to page. Keep the database with 'fragscope analyze IN -o RUN.db' and view\n"
    "that. analyze's options for such an input:\n"
    "  --lenient           skip entries that contradict the block model\n"
    "  --device N          the CUDA device of a snapshot to show\n"
    "  --capacity SIZE     the bytes the process was allowed to reserve\n"
    "  --device-memory SIZE  the device's memory (see 'fragscope help analyze')\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   report path (default: the input with .html in place\n"
    "                      of .db, .fstrace, .pickle, .pkl or .json)\n"
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
    "Two inputs (run databases, traces or snapshots) make the compare page of\n"
    "'fragscope diff BASE NEW --format html': the verdict, why peak reserved\n"
    "changed (program by call site, allocator, settings), and each step's peaks\n"
    "side by side; -o is needed, and --device N picks the device of snapshots\n"
    "with several.\n"
    "\n"
    "The file is written under a temporary name and renamed when complete.\n"
    "Exit codes: 0 written, 2 bad input (missing file, not a fragscope database,\n"
    "trace or snapshot, an entry that contradicts the replay without --lenient,\n"
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

/* analyze's options for an input that is not a database (NULL: not given). */
typedef struct view_analyze {
    int lenient;
    const char *device, *capacity, *device_memory;
} view_analyze_t;

/* A trace or snapshot analyzed as `fragscope analyze` would, into a folder
 * made for it: *dir gets the folder, hold the database. The database's
 * path is hold->tmp_path, so that an interrupting signal removes it with
 * every other temporary (common/outfile.c); analyze writes it under a
 * temporary name of its own first. analyze's summary line names that
 * path, which is not the user's: its standard output is discarded (its
 * errors and warnings, on stderr, name the input). The page is made from
 * *shown, a link in the folder named as the input, because the page names
 * the file it was made from. Returns an exit status. */
static int analyze_into_temp(const char *in, const view_analyze_t *an, char *dir, size_t dcap,
                             fsc_outfile_t *hold, char *shown, size_t scap)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    if (snprintf(dir, dcap, "%s/fragscope-view.XXXXXX", tmp) >= (int)dcap || mkdtemp(dir) == NULL) {
        dir[0] = '\0';
        return fsc_cli_error("view: cannot make a temporary folder in %s for the analysis of %s",
                             tmp, in);
    }
    char db[4200];
    snprintf(db, sizeof db, "%s/run.db", dir);
    fsc_err_t err = {0};
    if (fsc_outfile_init(hold, db, &err) != 0) {
        rmdir(dir);
        dir[0] = '\0';
        return fsc_cli_error("view: %s", fsc_err_msg(&err));
    }
    char *argv[16];
    int argc = 0;
    argv[argc++] = (char *)"analyze";
    argv[argc++] = (char *)in;
    argv[argc++] = (char *)"-o";
    argv[argc++] = hold->tmp_path;
    if (an->lenient)
        argv[argc++] = (char *)"--lenient";
    if (an->device != NULL) {
        argv[argc++] = (char *)"--device";
        argv[argc++] = (char *)an->device;
    }
    if (an->capacity != NULL) {
        argv[argc++] = (char *)"--capacity";
        argv[argc++] = (char *)an->capacity;
    }
    if (an->device_memory != NULL) {
        argv[argc++] = (char *)"--device-memory";
        argv[argc++] = (char *)an->device_memory;
    }
    argv[argc] = NULL;
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && null >= 0)
        dup2(null, STDOUT_FILENO);
    int rc = fsc_cmd_analyze(argc, argv);
    fflush(stdout);
    if (saved >= 0) {
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
    if (null >= 0)
        close(null);
    const char *base = strrchr(in, '/') ? strrchr(in, '/') + 1 : in;
    snprintf(shown, scap, "%s", hold->tmp_path);
    char link[4400];
    if (rc == FSC_EXIT_OK && snprintf(link, sizeof link, "%s/%s", dir, base) < (int)sizeof link &&
        symlink(hold->tmp_path, link) == 0)
        snprintf(shown, scap, "%s", link);
    return rc;
}

/* The folder of analyze_into_temp and what is in it, removed. */
static void remove_temp(char *dir, fsc_outfile_t *hold, const char *shown)
{
    if (dir[0] == '\0')
        return;
    if (strcmp(shown, hold->tmp_path) != 0)
        unlink(shown);
    fsc_outfile_abort(hold);
    rmdir(dir);
    dir[0] = '\0';
}

/* Two inputs: the compare page, which diff writes (--format html). */
static int view_compare(const char *base, const char *cur, const char *out,
                        const view_analyze_t *an, const char *analyze_opts,
                        const char *other_opts)
{
    if (out == NULL)
        return fsc_cli_usage_error("view", "comparing %s with %s needs -o COMPARE.html", base,
                                   cur);
    if (other_opts != NULL)
        return fsc_cli_usage_error("view", "%s is for one run's page, not for the compare page "
                                   "of two inputs", other_opts);
    if (analyze_opts != NULL && strcmp(analyze_opts, "--device") != 0)
        return fsc_cli_usage_error("view", "%s is not taken by the compare page of two inputs "
                                   "(analyze each with it, then view the databases)",
                                   analyze_opts);
    char *argv[10];
    int argc = 0;
    argv[argc++] = (char *)"diff";
    argv[argc++] = (char *)base;
    argv[argc++] = (char *)cur;
    argv[argc++] = (char *)"--format";
    argv[argc++] = (char *)"html";
    argv[argc++] = (char *)"-o";
    argv[argc++] = (char *)out;
    if (an->device != NULL) {
        argv[argc++] = (char *)"--device";
        argv[argc++] = (char *)an->device;
    }
    argv[argc] = NULL;
    return fsc_cmd_diff(argc, argv);
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
    const char *db = NULL, *db2 = NULL, *out = NULL;
    const char *analyze_opts = NULL; /* the last of analyze's options given */
    const char *other_opts = NULL;   /* the last option for one run's page */
    view_analyze_t an = {0, NULL, NULL, NULL};
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
            other_opts = a;
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--title needs a value");
            opts.title = argv[i];
        } else if (strcmp(a, "--max-size") == 0) {
            other_opts = a;
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--max-size needs a size");
            int rc = fsc_cli_size("view", "--max-size", argv[i], &opts.max_bytes);
            if (rc != 0)
                return rc;
            if (opts.max_bytes == 0)
                return fsc_cli_usage_error("view", "--max-size must be more than 0");
        } else if (strcmp(a, "--bands") == 0) {
            other_opts = a;
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--bands needs a number");
            char *end = NULL;
            long long v = strtoll(argv[i], &end, 10);
            if (end == argv[i] || *end != '\0' || v < 1 || v > 20000)
                return fsc_cli_usage_error("view", "--bands must be a number from 1 to 20000, not '%s'",
                                           argv[i]);
            opts.bands = (size_t)v;
        } else if (strcmp(a, "--runs") == 0) {
            other_opts = a;
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--runs needs a list of run numbers");
            int rc = parse_runs(argv[i], runs, &opts.nruns, cap);
            if (rc != 0)
                return rc;
            opts.runs = *runs;
        } else if (strcmp(a, "--run") == 0 || strcmp(a, "--rank") == 0) {
            other_opts = a;
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
            other_opts = a;
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--detail-limit needs a number");
            long long v = 0;
            int rc = number_opt(a, argv[i], 1, 1000000, &v);
            if (rc != 0)
                return rc;
            opts.detail_limit = (size_t)v;
        } else if (strcmp(a, "--overview-limit") == 0) {
            other_opts = a;
            if (++i >= argc)
                return fsc_cli_usage_error("view", "--overview-limit needs a number");
            long long v = 0;
            int rc = number_opt(a, argv[i], 1, 1000000, &v);
            if (rc != 0)
                return rc;
            opts.overview_limit = (size_t)v;
        } else if (strcmp(a, "--lenient") == 0) {
            an.lenient = 1;
            analyze_opts = a;
        } else if (strcmp(a, "--device") == 0 || strcmp(a, "--capacity") == 0 ||
                   strcmp(a, "--device-memory") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("view", "%s needs a value", a);
            if (strcmp(a, "--device") == 0) {
                long long v = 0;
                int rc = number_opt(a, argv[i], 0, 4095, &v);
                if (rc != 0)
                    return rc;
                an.device = argv[i];
            } else {
                uint64_t v = 0;
                int rc = fsc_cli_size("view", a, argv[i], &v);
                if (rc != 0)
                    return rc;
                if (v == 0)
                    return fsc_cli_usage_error("view", "%s must be more than 0", a);
                *(strcmp(a, "--capacity") == 0 ? &an.capacity : &an.device_memory) = argv[i];
            }
            analyze_opts = a;
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
        } else if (db2 == NULL) {
            db2 = a;
        } else {
            return fsc_cli_usage_error("view", "unexpected argument '%s'", a);
        }
    }
    if (db == NULL)
        return fsc_cli_usage_error("view", "no database, trace or snapshot given");
    if (db2 != NULL)
        return view_compare(db, db2, out, &an, analyze_opts, other_opts);

    char def[4096];
    if (out == NULL) {
        static const char *const k_ext[] = {".db", ".fstrace", ".pickle", ".pkl", ".json"};
        size_t n = strlen(db);
        for (size_t k = 0; k < sizeof k_ext / sizeof k_ext[0]; k++) {
            size_t e = strlen(k_ext[k]);
            if (n > e && strcmp(db + n - e, k_ext[k]) == 0) {
                n -= e;
                break;
            }
        }
        if (snprintf(def, sizeof def, "%.*s.html", (int)n, db) >= (int)sizeof def)
            return fsc_cli_usage_error("view", "input path too long");
        out = def;
    }
    fsc_err_t err = {0};
    fsc_outfile_guard_input(db);
    int kind = fsc_source_detect(db);
    int analyze_first = kind == FSC_SOURCE_TRACE || kind == FSC_SOURCE_SNAPSHOT;
    if (!analyze_first && analyze_opts != NULL)
        return fsc_cli_usage_error("view", "%s is for a trace or snapshot, which view analyzes "
                                   "first; %s is not one", analyze_opts, db);
    char dir[4096] = "", shown[4400] = "";
    fsc_outfile_t hold;
    const char *src = db;
    if (analyze_first) {
        /* an output that cannot be written is said before the analysis */
        if (fsc_outfile_check(out, &err) != 0 || fsc_outfile_check_dest(out, &err) != 0)
            return fsc_cli_error("view: %s", fsc_err_msg(&err));
        int arc = analyze_into_temp(db, &an, dir, sizeof dir, &hold, shown, sizeof shown);
        if (arc != FSC_EXIT_OK) {
            remove_temp(dir, &hold, shown);
            return arc;
        }
        src = shown;
    }
    int rc = fsc_view_write_opts(src, out, &opts, &err);
    remove_temp(dir, &hold, shown);
    if (rc != 0) {
        fsc_cli_error("view: %s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    return FSC_EXIT_OK;
}
