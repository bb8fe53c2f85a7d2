/*
 * cmd_diff.c — `fragscope diff`: two runs side by side, and why peak
 * reserved changed: the program's part by call site, the allocator's
 * (rounding, fragmentation classes, the moments of the peaks), what the
 * settings alone explain, the steps; CI thresholds with text, Markdown,
 * JSON or JUnit output and GitHub Actions annotations. Two job databases
 * are compared rank by rank (fsc_diff_write_job).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diff_input.h"
#include "fragscope/rundb.h"

const char fsc_cmd_diff_summary[] = "compare two runs: what grew, and what the allocator added";
const char fsc_cmd_diff_usage[] =
    "usage: fragscope diff BASE NEW [--format text|markdown|json|junit|html]\n"
    "                     [-o FILE]\n"
    "                     [--fail-on SPEC]... [--annotations] [--sites N]\n"
    "                     [--no-replay] [--device N] [--fail-on-worse]\n"
    "                     [--rank R | --run N]\n"
    "                     [--all-ranks]\n"
    "\n"
    "BASE and NEW are run databases, .fstrace traces or PyTorch snapshots (ring\n"
    "windows too); traces and snapshots are analyzed into temporary databases.\n"
    "\n"
    "Prints the headline figures of both runs with their deltas and a verdict line\n"
    "(\"verdict: better|worse|mixed|same\", figures that moved by more than 1%,\n"
    "ratios 1 point), then why peak reserved changed, in parts that add up to\n"
    "the change exactly (docs/metrics.md, \"What changed\"):\n"
    "  program    the requested bytes live at each run's allocated peak, by call\n"
    "             site as `report` names it (grown, shrunk, new, gone); the sites'\n"
    "             block bytes add up to the change of peak allocated\n"
    "  allocator  rounding (block - requested bytes at the allocated peak), the\n"
    "             classes of reserved - allocated at each run's reserved peak\n"
    "             (soft, hard, stream, private pool, pending), and the peaks'\n"
    "             moments (allocated at the reserved peak - at the allocated peak)\n"
    "When the runs' allocator settings or caps differ, the base's requests are\n"
    "replayed under both settings (fragscope/whatif.h): the difference is what\n"
    "the settings alone explain. Where both runs carry step markers (\"step N\",\n"
    "or PyTorch's \"END Optimizer.step\" annotations), each step's peaks side by\n"
    "side and the first step that differs.\n"
    "\n"
    "Two job databases (either with several runs) are compared rank by rank: the\n"
    "runs are paired by rank and device, then rank, then device (ranks unknown),\n"
    "then run number (neither known); one line per pair with its peaks, OOMs and\n"
    "verdict (beyond 20 pairs only the changed ones), the runs without a partner,\n"
    "and the job's verdict: mixed when the pairs disagree; in text only (--format,\n"
    "--fail-on and --annotations take one run on each side). A job against a\n"
    "single run is refused.\n"
    "\n"
    "options:\n"
    "  --format F        text (default), markdown (a CI job summary or pull-request\n"
    "                    comment), json (keys in docs/metrics.md), junit (one\n"
    "                    testcase per --fail-on threshold), html (the compare\n"
    "                    page: one self-contained file, no script)\n"
    "  -o FILE           write to FILE (through a temporary file) instead of stdout\n"
    "  --fail-on SPEC    exit 1 when NEW exceeds BASE by more than SPEC allows;\n"
    "                    repeatable. FIGURE:+N% (of the base's figure) or\n"
    "                    FIGURE:+SIZE, FIGURE one of peak-reserved, peak-allocated,\n"
    "                    frag (reserved - allocated at the reserved peak), soft,\n"
    "                    hard, stream, pool, pending (its classes there), rounding;\n"
    "                    or oom (NEW has more OOMs than BASE)\n"
    "  --annotations     also print GitHub Actions lines \"::warning file=F,line=L::\"\n"
    "                    for the call sites that grew: one per source line (up to\n"
    "                    10), the innermost frame whose file exists under the\n"
    "                    current directory (the checkout; the longest tail of the\n"
    "                    recorded path that does)\n"
    "  --sites N         call sites listed in text and Markdown (default 15)\n"
    "  --no-replay       do not replay the base under the new run's settings\n"
    "  --device N        snapshots with history on several CUDA devices: compare\n"
    "                    device N of each\n"
    "  --fail-on-worse   exit 1 when the verdict is worse or mixed\n"
    "  --rank R, --run N with job databases, also the full table of the pair of\n"
    "                    the base's rank R / run N\n"
    "  --all-ranks       list every pair\n"
    "\n"
    "exit status: 0 ok, 1 a threshold failed (or worse with --fail-on-worse), 2 a\n"
    "file is missing or not a run, trace or snapshot, a job against a single run,\n"
    "different devices, or bad usage.\n";

#define MAX_FAIL_ON 32

typedef struct diff_args {
    const char *p[2];
    int np, fail_on_worse, annotations, no_replay, sites, device;
    fsc_diff_format_t fmt;
    const char *out;
    fsc_diff_threshold_t thr[MAX_FAIL_ON];
    size_t nthr;
    fsc_job_opts_t jo;
} diff_args_t;

static int parse(int argc, char **argv, diff_args_t *a)
{
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (fsc_cli_job_option("diff", argc, argv, &i, &a->jo, &rc)) {
            if (rc != 0)
                return rc;
        } else if (strcmp(s, "--fail-on-worse") == 0) {
            a->fail_on_worse = 1;
        } else if (strcmp(s, "--all-ranks") == 0) {
            a->jo.all_ranks = 1;
        } else if (strcmp(s, "--annotations") == 0) {
            a->annotations = 1;
        } else if (strcmp(s, "--no-replay") == 0) {
            a->no_replay = 1;
        } else if (strcmp(s, "--format") == 0 || strncmp(s, "--format=", 9) == 0) {
            const char *f = s[8] == '=' ? s + 9 : v;
            if (f == NULL || fsc_diff_format_parse(f, &a->fmt) != 0)
                return fsc_cli_usage_error("diff", "--format: '%s' is not text, markdown, json, "
                                           "junit or html", f ? f : "");
            i += s[8] != '=';
        } else if (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0) {
            if (v == NULL)
                return fsc_cli_usage_error("diff", "%s needs a file", s);
            a->out = v;
            i++;
        } else if (strcmp(s, "--device") == 0) {
            char *end;
            long n = v ? strtol(v, &end, 10) : -1;
            if (v == NULL || *end != '\0' || n < 0 || n > 1023)
                return fsc_cli_usage_error("diff", "--device: '%s' is not a CUDA device number",
                                           v ? v : "");
            a->device = (int)n;
            i++;
        } else if (strcmp(s, "--sites") == 0) {
            char *end;
            long n = v ? strtol(v, &end, 10) : 0;
            if (v == NULL || *end != '\0' || n < 1 || n > 100000)
                return fsc_cli_usage_error("diff", "--sites: '%s' is not a count from 1",
                                           v ? v : "");
            a->sites = (int)n;
            i++;
        } else if (strcmp(s, "--fail-on") == 0 || strncmp(s, "--fail-on=", 10) == 0) {
            const char *spec = s[9] == '=' ? s + 10 : v;
            fsc_err_t err = {0};
            if (spec == NULL)
                return fsc_cli_usage_error("diff", "--fail-on needs a threshold, e.g. "
                                           "peak-reserved:+2%%");
            if (a->nthr == MAX_FAIL_ON)
                return fsc_cli_usage_error("diff", "at most %d --fail-on", MAX_FAIL_ON);
            if (fsc_diff_threshold_parse(spec, &a->thr[a->nthr], &err) != 0)
                return fsc_cli_usage_error("diff", "%s", fsc_err_msg(&err));
            a->nthr++;
            i += s[9] != '=';
        } else if (s[0] == '-' && s[1] != '\0') {
            return fsc_cli_usage_error("diff", "unknown option '%s'", s);
        } else if (a->np < 2) {
            a->p[a->np++] = s;
        } else {
            return fsc_cli_usage_error("diff", "two inputs only ('%s')", s);
        }
    }
    if (a->np != 2)
        return fsc_cli_usage_error("diff", "needs BASE and NEW");
    return 0;
}

static int runs_of(const char *db, int64_t *n, fsc_err_t *err)
{
    fsc_rundb_t *h = NULL;
    int rc = fsc_rundb_open(db, &h, err);
    if (rc == 0 && (rc = fsc_rundb_run_count(h, n)) != 0)
        fsc_err_copy(err, fsc_rundb_error(h));
    fsc_rundb_close(h);
    return rc;
}

/* The whole output into f. */
static int write_all(const diff_args_t *a, const fsc__diff_input_t *in, int job,
                     const fsc_diff_settings_t *set, FILE *f, int *verdict, int *failed,
                     fsc_err_t *err)
{
    if (job)
        return fsc_diff_write_job(in[0].db, in[1].db, &a->jo, f, verdict, err);
    fsc_diff_opts_t o;
    memset(&o, 0, sizeof o);
    o.format = a->fmt;
    o.fail_on = a->thr;
    o.nfail_on = a->nthr;
    o.base_name = in[0].path;
    o.new_name = in[1].path;
    o.settings = a->no_replay ? NULL : set;
    o.max_sites = a->sites;
    if (a->fmt == FSC_DIFF_TEXT)
        o.after_table = 1;
    /* the explanation first, into memory: its refusals (different devices)
     * come before anything is written */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    int rc = fsc_diff_explain(in[0].db, in[1].db, &o, m, failed, err);
    fclose(m);
    if (rc == 0 && a->fmt == FSC_DIFF_TEXT) {
        fprintf(f, "diff: %s → %s\n", in[0].path, in[1].path);
        rc = fsc_diff_write(in[0].db, in[1].db, f, verdict, err);
    } else if (rc == 0 && a->fail_on_worse) {
        /* the verdict without its table */
        FILE *null = fopen("/dev/null", "w");
        if (null == NULL)
            rc = fsc_err_set(err, FSC_EIO, "/dev/null: %s", strerror(errno));
        else {
            rc = fsc_diff_write(in[0].db, in[1].db, null, verdict, err);
            fclose(null);
        }
    }
    if (rc == 0 && len > 0)
        fwrite(buf, 1, len, f);
    free(buf);
    return rc;
}

int fsc_cmd_diff(int argc, char **argv)
{
    diff_args_t a;
    memset(&a, 0, sizeof a);
    a.device = -1;
    int rc = parse(argc, argv, &a);
    if (rc != 0)
        return rc;
    fsc_err_t err = {0};
    fsc__diff_input_t in[2];
    memset(in, 0, sizeof in);
    int64_t n[2] = {0, 0};
    int verdict = 0, failed = 0, job = 0;
    fsc_diff_settings_t set;
    memset(&set, 0, sizeof set);
    for (int k = 0; rc == 0 && k < 2; k++)
        if ((rc = fsc__diff_input_open(a.p[k], a.device, &in[k], &err)) == 0)
            rc = runs_of(in[k].db, &n[k], &err);
    if (rc == 0 && (n[0] > 1) != (n[1] > 1))
        rc = fsc_err_set(&err, FSC_EINVAL,
                         "%s holds %lld runs (a job) but %s holds one: diff compares a run "
                         "with a run, or a job with a job",
                         a.p[n[0] > 1 ? 0 : 1], (long long)(n[0] > 1 ? n[0] : n[1]),
                         a.p[n[0] > 1 ? 1 : 0]);
    job = rc == 0 && n[0] > 1;
    if (rc == 0 && job && (a.fmt != FSC_DIFF_TEXT || a.nthr > 0 || a.annotations)) {
        fsc__diff_input_close(&in[0]);
        fsc__diff_input_close(&in[1]);
        return fsc_cli_usage_error("diff", "two job databases compare rank by rank, in text: "
                                   "--format, --fail-on and --annotations take one run each");
    }
    if (rc == 0 && !job && !a.no_replay)
        fsc__diff_settings(&in[0], &in[1], &set);
    if (rc == 0 && a.out == NULL) {
        rc = write_all(&a, in, job, &set, stdout, &verdict, &failed, &err);
    } else if (rc == 0) {
        fsc_outfile_t of;
        FILE *f = NULL;
        if ((rc = fsc_outfile_init(&of, a.out, &err)) == 0) {
            if ((f = fopen(of.tmp_path, "w")) == NULL) {
                rc = fsc_err_set(&err, FSC_EIO, "%s: cannot create: %s", a.out, strerror(errno));
                fsc_outfile_abort(&of);
            }
        }
        if (f != NULL) {
            rc = write_all(&a, in, job, &set, f, &verdict, &failed, &err);
            if (fclose(f) != 0 && rc == 0)
                rc = fsc_err_set(&err, FSC_EIO, "%s: cannot write", a.out);
            if (rc == 0)
                rc = fsc_outfile_commit(&of, &err);
            else
                fsc_outfile_abort(&of);
        }
    }
    if (rc == 0 && a.annotations) {
        /* the annotations go to stdout, where the runner reads them */
        fsc_diff_opts_t o;
        memset(&o, 0, sizeof o);
        o.format = FSC_DIFF_JSON;
        o.annotations = stdout;
        FILE *null = fopen("/dev/null", "w");
        if (null == NULL)
            rc = fsc_err_set(&err, FSC_EIO, "/dev/null: %s", strerror(errno));
        else {
            rc = fsc_diff_explain(in[0].db, in[1].db, &o, null, NULL, &err);
            fclose(null);
        }
    }
    fsc__diff_input_close(&in[0]);
    fsc__diff_input_close(&in[1]);
    if (rc != 0) {
        fsc_cli_error("%s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    if (failed > 0 || (a.fail_on_worse && verdict > 0))
        return FSC_EXIT_CHECK_FAILED;
    return FSC_EXIT_OK;
}
