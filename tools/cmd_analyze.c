/*
 * cmd_analyze.c — `fragscope analyze`: replay a trace or a PyTorch snapshot
 * into a run database (fsc_analyze_file), then, when the run hit an OOM,
 * add the what-if suggestions before the database is put in place.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fragscope/analyzer.h"
#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"
#include "fragscope/source.h"
#include "fragscope/whatif.h"

const char fsc_cmd_analyze_summary[] =
    "replay traces or PyTorch snapshots into a run (or job) database";
const char fsc_cmd_analyze_usage[] =
    "usage: fragscope analyze TRACE|SNAPSHOT... -o RUN.db [-j N] [--rank R]\n"
    "                         [--host NAME] [--device N] [--lenient] [--no-suggest]\n"
    "                         [--timeline-samples N] [--capacity SIZE]\n"
    "                         [--device-memory SIZE]\n"
    "\n"
    "Replays every event of a .fstrace trace, or of a PyTorch memory snapshot\n"
    "(torch.cuda.memory._snapshot(), pickle or JSON; detected from the content),\n"
    "and writes the run database described in docs/schema.md: blocks, segments,\n"
    "a bounded timeline, the block layout at the peak and at each OOM, the\n"
    "diagnosis of every OOM, bins and per-tag statistics. Metrics are defined\n"
    "in docs/metrics.md. The database, what-if suggestions included, is written\n"
    "under a temporary name, synced, and renamed when complete; the output may\n"
    "not be an input.\n"
    "\n"
    "Several inputs (the ranks of a job, traces and snapshots mixed) give one job\n"
    "database with one run per input, in input order, and one run per device of a\n"
    "snapshot with history on several devices (docs/jobs.md). The inputs are\n"
    "analyzed in parallel, each into a temporary database beside RUN.db, then\n"
    "merged as 'fragscope merge' does; memory is bounded by one input per worker.\n"
    "Any input that fails fails the command with its message, and nothing is\n"
    "written. Each run's rank is --rank, else the trace header's (the recorder's\n"
    "RANK), else the one the file name says (rank3, rank_3, rank-3, .r3.), else\n"
    "unknown. Its host is --host, else the trace header's (the recording machine's\n"
    "name, format 2.3 on), else unknown (PyTorch snapshots record none).\n"
    "\n"
    "options:\n"
    "  -o, --output FILE      the database to write (required)\n"
    "  -j, --jobs N           inputs analyzed at once (default: the online cores,\n"
    "                         at most the number of inputs)\n"
    "  --rank R               the rank of the run (one input only)\n"
    "  --host NAME            the host of the run (one input only; 1 to 255 bytes,\n"
    "                         no control characters)\n"
    "  --device N             the CUDA device of a snapshot (default: every device\n"
    "                         with history, one run each)\n"
    "  --lenient              count events that contradict the replayed state as\n"
    "                         warnings (stored in the database) instead of failing\n"
    "  --timeline-samples N   most rows of the timeline table (default 2000)\n"
    "  --no-suggest           when the run hit an OOM, do not replay it with other\n"
    "                         settings (what-if) to list those that would have\n"
    "                         avoided it (table suggestions; see 'fragscope help whatif')\n"
    "  --capacity SIZE        the bytes the run was allowed to reserve, for inputs that\n"
    "                         do not record it (PyTorch snapshots; PyTorch's OOM message\n"
    "                         says \"X GiB allowed\"): OOM causes become firm instead of\n"
    "                         bounded by what the run shows\n"
    "  --device-memory SIZE   the device's total memory, for inputs that do not record\n"
    "                         it (PyTorch snapshots; PyTorch's OOM message says \"total\n"
    "                         capacity of X\"): memory taken outside the allocator at an\n"
    "                         OOM (cause external) becomes a byte count instead of a bound\n"
    "\n"
    "exit status: 0 ok, 2 bad input (unreadable file, an event that contradicts\n"
    "the replay without --lenient) or usage, 3 cannot write the output.\n";

#include "analyze_job.h"

typedef fsc__analyze_job_t job_t;

static void on_progress(void *ud, uint64_t done, uint64_t total)
{
    if (total == 0)
        fsc_progress_events(ud, done); /* events so far */
    else
        fsc_progress_bytes(ud, done, total);
}

/* The database is complete and closed, still under its temporary name
 * (fsc_analysis_opts_t.before_commit): what-if adds the settings that would
 * have avoided its OOMs (in one transaction of its own), and only then is
 * the file renamed into place. A failure to compute them leaves the
 * database as analyzed and is reported as a warning; a failure to write
 * them (the output's disk) fails the command like any other write. */
int fsc__analyze_add_suggestions(void *ud, const char *tmp_db,
                                 const fsc_analysis_summary_t *sum, fsc_err_t *out_err)
{
    job_t *j = ud;
    if (j->no_suggest || sum->num_ooms == 0)
        return 0;
    if (sum->first_oom_cause == FSC_OOM_EXTERNAL) {
        j->external = 1; /* memory outside the allocator: no setting helps */
        return 0;
    }
    fsc_err_t err;
    fsc_err_clear(&err);
    fsc_request_stream_t *rs = NULL;
    size_t rows = 0;
    fsc_request_stream_info_t info;
    memset(&info, 0, sizeof info);
    int rc = fsc_request_stream_load_opts(j->in_path, j->device, j->lenient, &rs, &err);
    int loaded = rc == 0;
    if (rc == 0) {
        fsc_request_stream_info(rs, &info);
        rc = fsc_whatif_fill_db(tmp_db, rs, j->capacity, &rows, &err);
    }
    fsc_request_stream_destroy(rs);
    if (rc != 0 && loaded && (rc == FSC_EIO || rc == FSC_ESQLITE))
        return fsc_err_set(out_err, rc, "%s: cannot write the what-if suggestions: %s",
                           j->out_path, fsc_err_msg(&err));
    if (rc != 0) {
        snprintf(j->suggest_warning, sizeof j->suggest_warning, "%s", fsc_err_msg(&err));
        return 0;
    }
    j->suggested = 1;
    j->suggestions = rows;
    j->run_complete = info.run_complete;
    return 0;
}

/* --rank R / -j N: a number in [lo, hi], else a usage error. */
static int int_opt(const char *opt, const char *val, long lo, long hi, long *out)
{
    char *end = NULL;
    long v = val ? strtol(val, &end, 10) : 0;
    if (val == NULL || end == val || *end != '\0' || v < lo || v > hi)
        return fsc_cli_usage_error("analyze", "%s needs a number from %ld to %ld", opt, lo, hi);
    *out = v;
    return 0;
}

static int analyze(int argc, char **argv, const char **inputs)
{
    job_t j;
    memset(&j, 0, sizeof j);
    fsc_analyze_opts_t o;
    memset(&o, 0, sizeof o);
    j.device = -1;
    size_t ninputs = 0;
    long workers = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v = 0;
        if (strcmp(a, "--rank") == 0 || strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0) {
            int is_rank = strcmp(a, "--rank") == 0;
            int rc = int_opt(a, i + 1 < argc ? argv[i + 1] : NULL, is_rank ? 0 : 1,
                             is_rank ? 0x7fffffffL : 1024, &v);
            if (rc != 0)
                return rc;
            i++;
            if (is_rank) {
                o.analysis.has_rank = 1;
                o.analysis.rank = v;
            } else {
                workers = v;
            }
            continue;
        }
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) {
            j.out_path = argv[++i];
        } else if (strcmp(a, "--device") == 0) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[++i], &end, 10) : -1;
            if (end == NULL || end == argv[i] || *end != '\0' || v < 0 || v > 4095)
                return fsc_cli_usage_error("analyze", "--device needs a device number (0 to 4095)");
            j.device = (int)v;
            o.pick_device = 1;
            o.device = (int)v;
        } else if (strcmp(a, "--host") == 0) {
            const char *h = i + 1 < argc ? argv[++i] : NULL;
            size_t n = h != NULL ? strlen(h) : 0;
            int ok = n > 0 && n <= 255;
            for (size_t k = 0; ok && k < n; k++)
                ok = (unsigned char)h[k] >= 0x20 && h[k] != 0x7f;
            if (!ok)
                return fsc_cli_usage_error("analyze", "--host needs a name of 1 to 255 bytes "
                                           "without control characters");
            o.analysis.host = h;
        } else if (strcmp(a, "--lenient") == 0) {
            o.analysis.lenient = 1;
            j.lenient = 1;
        } else if (strcmp(a, "--no-suggest") == 0) {
            j.no_suggest = 1;
        } else if (strcmp(a, "--capacity") == 0 && i + 1 < argc) {
            int rc = fsc_cli_size("analyze", a, argv[++i], &j.capacity);
            if (rc != 0)
                return rc;
            if (j.capacity == 0)
                return fsc_cli_usage_error("analyze", "--capacity must be more than 0");
        } else if (strcmp(a, "--device-memory") == 0 && i + 1 < argc) {
            int rc = fsc_cli_size("analyze", a, argv[++i], &j.device_memory);
            if (rc != 0)
                return rc;
            if (j.device_memory == 0)
                return fsc_cli_usage_error("analyze", "--device-memory must be more than 0");
        } else if (strcmp(a, "--timeline-samples") == 0 && i + 1 < argc) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || v < 2 || v > 1000000)
                return fsc_cli_usage_error("analyze", "--timeline-samples: '%s' is not a number "
                                           "between 2 and 1000000", argv[i]);
            o.analysis.timeline_samples = (uint32_t)v;
        } else if (a[0] == '-' && a[1] != '\0') {
            return fsc_cli_usage_error("analyze", "unknown option '%s'", a);
        } else {
            inputs[ninputs++] = a;
        }
    }
    j.in_path = ninputs > 0 ? inputs[0] : NULL;
    int urc = 0;
    if (j.in_path == NULL)
        urc = fsc_cli_usage_error("analyze", "no input trace or snapshot given");
    else if (j.out_path == NULL)
        urc = fsc_cli_usage_error("analyze", "no output given (-o RUN.db)");
    else if (ninputs > 1 && o.analysis.has_rank)
        urc = fsc_cli_usage_error("analyze", "--rank applies to one input only (%zu given); "
                                  "ranks of several come from their headers or file names",
                                  ninputs);
    else if (ninputs > 1 && o.analysis.host != NULL)
        urc = fsc_cli_usage_error("analyze", "--host applies to one input only (%zu given); "
                                  "hosts of several come from their trace headers", ninputs);
    if (urc != 0)
        return urc;
    o.analysis.before_commit = fsc__analyze_add_suggestions;
    o.analysis.before_commit_ud = &j;
    o.capacity = j.capacity;
    o.device_memory = j.device_memory;
    if (ninputs > 1)
        return fsc__analyze_many(inputs, ninputs, j.out_path, &o, &j, (int)workers);
    o.progress = on_progress;
    o.progress_ud = &j.prog;
    fsc_outfile_guard_input(j.in_path);
    fsc_progress_init(&j.prog, "analyze");
    fsc_analysis_summary_t sum;
    fsc_source_info_t info;
    fsc_err_t err;
    fsc_err_clear(&err);
    int rc = fsc__analyze_settled(j.in_path, j.out_path, &o, &sum, &info, &err);
    fsc_progress_done(&j.prog);
    if (info.have_integrity && !info.integrity.clean_close)
        fprintf(stderr, "fragscope: %s: trace was not closed cleanly; analyzed the %llu "
                        "events of its complete chunks\n", j.in_path,
                (unsigned long long)info.integrity.events);
    if (info.have_integrity && info.integrity.skipped.total > 0) {
        char line[1024];
        fprintf(stderr, "fragscope: warning: %s: %s; every figure covers only the entries "
                        "the recorder kept (fragscope info %s)\n", j.in_path,
                fsc_trace_skips_text(&info.integrity.skipped, line, sizeof line), j.in_path);
    }
    /* a snapshot with history on several devices: one run per device */
    if (rc == FSC_EINVAL && !o.pick_device && info.kind == FSC_SOURCE_SNAPSHOT &&
        info.import.devices > 1 && info.import.device_mask != 0) {
        const char *one[1] = {j.in_path};
        return fsc__analyze_many(one, 1, j.out_path, &o, &j, (int)workers);
    }
    if (rc != 0) /* the message names info.error_file */
        return fsc_cli_input_error("", rc, &err, j.lenient);
    char b[2][32];
    printf("%s: %llu events, peak allocated %s, peak reserved %s, %llu OOM%s%s%s%s\n",
           j.out_path, (unsigned long long)sum.events,
           fsc_size_format(sum.peak_allocated, b[0], sizeof b[0]),
           fsc_size_format(sum.peak_reserved, b[1], sizeof b[1]),
           (unsigned long long)sum.num_ooms, sum.num_ooms == 1 ? "" : "s",
           sum.num_ooms ? " (first: " : "",
           sum.num_ooms ? fsc_oom_cause_name(sum.first_oom_cause) : "",
           sum.num_ooms ? ")" : "");
    if (info.kind == FSC_SOURCE_SNAPSHOT)
        fsc__analyze_window_note("", &info.import);
    if (info.kind == FSC_SOURCE_SNAPSHOT && info.import.keys_not_modelled[0] != '\0')
        printf("snapshot keys not modelled: %s\n", info.import.keys_not_modelled);
    if (sum.settings_not_modelled[0] != '\0')
        printf("settings not modelled: %s (the replay cannot follow them: figures that depend on "
               "them, what-if suggestions included, are not exact)\n",
               sum.settings_not_modelled);
    if (sum.warnings > 0)
        printf("%llu events contradicted the replay and were skipped (see table warnings)\n",
               (unsigned long long)sum.warnings);
    if (j.suggest_warning[0] != '\0')
        fprintf(stderr, "fragscope: warning: %s: no what-if suggestions: %s\n", j.out_path,
                j.suggest_warning);
    else if (j.external)
        printf("what-if: not run: the first OOM was memory taken outside the allocator "
               "(external), which no allocator setting avoids (fragscope report %s)\n",
               j.out_path);
    else if (j.suggested && j.run_complete)
        printf("what-if: %zu setting%s that would have avoided an OOM or needed less memory "
               "(fragscope report %s)\n", j.suggestions, j.suggestions == 1 ? "" : "s",
               j.out_path);
    else if (j.suggested)
        printf("what-if: %zu setting%s that would have served the request that failed, or "
               "needed less memory for the part recorded; the recording ends at an OOM and the "
               "rest of the run was not recorded (fragscope report %s)\n",
               j.suggestions, j.suggestions == 1 ? "" : "s", j.out_path);
    return FSC_EXIT_OK;
}

int fsc_cmd_analyze(int argc, char **argv)
{
    /* the inputs named on the command line (at most argc) */
    const char **inputs = calloc((size_t)argc, sizeof *inputs);
    if (inputs == NULL)
        return fsc_cli_error("out of memory");
    int rc = analyze(argc, argv, inputs);
    free(inputs);
    return rc;
}
