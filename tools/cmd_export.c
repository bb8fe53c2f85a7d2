/*
 * cmd_export.c — `fragscope export`: a trace out to another tool's format;
 * today a PyTorch memory snapshot pickle for PyTorch's memory_viz.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fragscope/pytorch.h"

const char fsc_cmd_export_summary[] = "write a trace as a PyTorch memory snapshot";
const char fsc_cmd_export_usage[] =
    "usage: fragscope export run.fstrace --pytorch-snapshot out.pickle\n"
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
    "options:\n"
    "  --pytorch-snapshot FILE   the pickle to write (required)\n"
    "\n"
    "exit status: 0 written, 2 bad options or an unreadable trace, 3 the output\n"
    "could not be written.\n";

int fsc_cmd_export(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--pytorch-snapshot") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("export", "%s needs a file name", a);
            out = argv[i];
        } else if (a[0] == '-' && a[1] != '\0') {
            return fsc_cli_usage_error("export", "unknown option '%s'", a);
        } else if (in == NULL) {
            in = a;
        } else {
            return fsc_cli_usage_error("export", "more than one trace given ('%s')", a);
        }
    }
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
