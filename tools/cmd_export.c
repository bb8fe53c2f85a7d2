/*
 * cmd_export.c — `fragscope export`: a trace out to another tool's format
 * (a PyTorch memory snapshot pickle for PyTorch's memory_viz), or a table
 * of a run or job database as CSV (fsc_rundb_export_csv) for DuckDB, Spark
 * and spreadsheets.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fragscope/pytorch.h"
#include "fragscope/rundb.h"

const char fsc_cmd_export_summary[] =
    "write a trace as a PyTorch memory snapshot, or a database table as CSV";
const char fsc_cmd_export_usage[] =
    "usage: fragscope export run.fstrace --pytorch-snapshot out.pickle\n"
    "       fragscope export --table T --format csv RUN.db [-o FILE]\n"
    "\n"
    "Writes the trace as the pickle torch.cuda.memory._snapshot() would have\n"
    "produced: 'device_traces' (one history entry per allocation, free and segment\n"
    "event, with requested sizes as PyTorch records them), 'segments' (the layout\n"
    "at the end of the trace, with its blocks) and 'allocator_settings' (from the\n"
    "trace's configuration). Tags become Python frames. The file opens with\n"
    "pickle.load and in PyTorch's memory viewer (pytorch.org/memory_viz).\n"
    "A ring-mode trace (record --ring N) starts mid-run and has gaps, as PyTorch's\n"
    "own history does: every kept event becomes an entry, and 'segments' holds the\n"
    "layout the kept events show (a note on stderr says how many events fall\n"
    "outside it). The output may not be the trace itself.\n"
    "\n"
    "With --table, writes one table or view of a run or job database\n"
    "(docs/schema.md) as CSV (RFC 4180: a header line, CRLF line ends, fields\n"
    "quoted where they hold a comma, a quote or a line break; NULL is an empty\n"
    "field), every run's rows with the run column first, to FILE or standard\n"
    "output. DuckDB also reads the database itself (docs/jobs.md).\n"
    "Text comes out as UTF-8: bytes of a name that are not (a pickle may hold\n"
    "lone surrogates or stray bytes) become U+FFFD. Names come from the\n"
    "recorded program, so a text field a spreadsheet would take for a formula\n"
    "(its first character = + - @, a tab, a carriage return or NUL) is written\n"
    "quoted with a single quote in front, as OWASP advises against CSV\n"
    "injection: '=HYPERLINK(...) shows as text. Numbers are never changed: -5\n"
    "in an integer column stays -5.\n"
    "\n"
    "options:\n"
    "  --pytorch-snapshot FILE   the pickle to write\n"
    "  --table T                 the table or view to write (an unknown name lists\n"
    "                            the database's)\n"
    "  --format csv              the format of --table (csv, the default, only)\n"
    "  -o, --output FILE         where --table writes (default: standard output)\n"
    "\n"
    "exit status: 0 written, 2 bad options, an unreadable trace or database, or an\n"
    "unknown table, 3 the output could not be written.\n";

static int export_table(const char *db, const char *table, const char *out)
{
    fsc_err_t err = {0};
    fsc_outfile_t of;
    FILE *f = stdout;
    int rc = 0;
    if (out != NULL) {
        fsc_outfile_guard_input(db);
        if ((rc = fsc_outfile_init(&of, out, &err)) == 0 &&
            (f = fopen(of.tmp_path, "w")) == NULL) {
            rc = fsc_err_set(&err, FSC_EIO, "%s: cannot create: %s", out, strerror(errno));
            fsc_outfile_abort(&of);
        }
        if (rc != 0) {
            fsc_cli_error("%s", fsc_err_msg(&err));
            return fsc_cli_exit_code(rc);
        }
    }
    uint64_t rows = 0;
    rc = fsc_rundb_export_csv(db, table, f, &rows, &err);
    if (out != NULL) {
        if (fclose(f) != 0 && rc == 0)
            rc = fsc_err_set(&err, FSC_EIO, "%s: cannot write: %s", out, strerror(errno));
        if (rc == 0)
            rc = fsc_outfile_commit(&of, &err);
        else
            fsc_outfile_abort(&of);
    }
    if (rc == FSC_EIO && out != NULL && strncmp(fsc_err_msg(&err), out, strlen(out)) != 0)
        fsc_err_name_file(&err, out);
    if (rc != 0) {
        fsc_cli_error("%s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    if (out != NULL)
        printf("wrote %s: %llu rows of %s\n", out, (unsigned long long)rows, table);
    return FSC_EXIT_OK;
}

int fsc_cmd_export(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *table = NULL, *csv_out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--table") == 0 || strcmp(a, "--format") == 0 || strcmp(a, "-o") == 0 ||
            strcmp(a, "--output") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("export", "%s needs a value", a);
            if (strcmp(a, "--table") == 0)
                table = argv[i];
            else if (strcmp(a, "--format") == 0 && strcmp(argv[i], "csv") != 0)
                return fsc_cli_usage_error("export", "--format: '%s' is not a format of "
                                           "--table (csv; for Parquet, see docs/jobs.md)",
                                           argv[i]);
            else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0)
                csv_out = argv[i];
            continue;
        }
        if (strcmp(a, "--pytorch-snapshot") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("export", "%s needs a file name", a);
            out = argv[i];
        } else if (a[0] == '-' && a[1] != '\0') {
            return fsc_cli_usage_error("export", "unknown option '%s'", a);
        } else if (in == NULL) {
            in = a;
        } else {
            return fsc_cli_usage_error("export", "more than one input given ('%s')", a);
        }
    }
    if (table != NULL && out != NULL)
        return fsc_cli_usage_error("export", "--table and --pytorch-snapshot are two exports: "
                                   "give one");
    if (table != NULL && in == NULL)
        return fsc_cli_usage_error("export", "no run database given");
    if (table != NULL)
        return export_table(in, table, csv_out);
    if (csv_out != NULL)
        return fsc_cli_usage_error("export", "-o is for --table (the snapshot goes to "
                                   "--pytorch-snapshot FILE)");
    if (in == NULL)
        return fsc_cli_usage_error("export", "no trace given");
    if (out == NULL)
        return fsc_cli_usage_error("export", "no output format given (--pytorch-snapshot FILE)");
    fsc_err_t err = {0};
    fsc_export_stats_t st;
    fsc_outfile_guard_input(in);
    int rc = fsc_pytorch_export(in, out, &st, &err);
    if (rc != 0) {
        fsc_cli_error("%s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    printf("wrote %s: %llu history entries, %llu segments", out,
           (unsigned long long)st.entries, (unsigned long long)st.segments);
    if (st.annotations)
        printf(", %llu annotations", (unsigned long long)st.annotations);
    printf("\n");
    if (st.ring)
        fprintf(stderr,
                "fragscope export: note: %s is a ring-mode trace (only the events before each "
                "write were kept): the history is made of its %llu kept events, %llu of them on "
                "blocks or segments the kept events do not show, and 'segments' only the "
                "layout they show\n",
                in, (unsigned long long)st.integrity.events, (unsigned long long)st.untracked);
    if (!st.integrity.clean_close)
        fprintf(stderr,
                "fragscope export: warning: %s was not closed cleanly; %llu bytes after its "
                "last complete chunk were lost, the snapshot holds the %llu events before\n",
                in, (unsigned long long)st.integrity.bytes_lost,
                (unsigned long long)st.integrity.events);
    return FSC_EXIT_OK;
}
