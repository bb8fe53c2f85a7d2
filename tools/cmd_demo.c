/*
 * cmd_demo.c — `fragscope demo`: the whole pipeline on one realistic case.
 *
 * GPT-2 small is trained on the simulated device under a 17 GiB cap. With
 * the default allocator settings it dies of a fragmentation OOM in its first
 * seq-1024 step (docs/workloads.md). The demo records that run, replays it
 * into a run database, asks the what-if replay which settings would have
 * avoided the OOM, and writes the Markdown and HTML reports.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "fragscope/analyzer.h"
#include "fragscope/recorder.h"
#include "fragscope/rundb.h"
#include "fragscope/viewer.h"
#include "fragscope/whatif.h"
#include "workload.h"
#include "fsc/vec.h"

#define DEMO_STEPS 24
#define DEMO_CAPACITY ((uint64_t)17 << 30)

const char fsc_cmd_demo_summary[] = "record, analyze and report a simulated fragmentation OOM";
const char fsc_cmd_demo_usage[] =
    "usage: fragscope demo [-o DIR]\n"
    "\n"
    "Shows the whole pipeline on the simulated device, no GPU needed: trains GPT-2\n"
    "small (variable sequence length, AdamW) for up to 24 steps under a 17 GiB cap\n"
    "with PyTorch's default allocator settings. The run dies of a fragmentation OOM.\n"
    "The demo records it, analyzes it, asks the what-if replay which settings would\n"
    "have avoided the OOM, and writes into DIR (default: fragscope-demo):\n"
    "\n"
    "  run.fstrace   the recorded trace\n"
    "  run.db        the run database (sqlite3 run.db 'SELECT * FROM ooms')\n"
    "  report.md     the report in Markdown\n"
    "  report.html   the interactive report (one self-contained file)\n"
    "\n"
    "Existing files of these names in DIR are replaced. Exit codes: 0 done, 2 bad\n"
    "option, 3 a step failed (the message says which).\n";

static void on_step(void *ud, int step, int steps)
{
    fsc_progress_update(ud, (uint64_t)step, (uint64_t)steps);
}

/* The first OOM's cause and explanation, and the settings that avoid it. */
static int first_oom(void *ud, const fsc_rundb_oom_t *o)
{
    (void)ud;
    printf("  diagnosis: %s\n", o->cause ? o->cause : "");
    if (o->explanation != NULL && o->explanation[0])
        printf("    %s\n", o->explanation);
    return FSC_RUNDB_STOP;
}

typedef struct fix {
    int64_t peak_reserved;
    char *config, *note;
    size_t order;
} fix_t;

typedef struct fixes {
    fix_t *v;
    size_t n, cap;
} fixes_t;

static int fix_row(void *ud, const fsc_rundb_suggestion_t *s)
{
    fixes_t *f = ud;
    if (s->avoids_oom != 1)
        return 0;
    if (FSC__VEC_RESERVE(f->v, f->cap, f->n + 1) != 0)
        return FSC_ENOMEM;
    fix_t *x = &f->v[f->n];
    x->peak_reserved = s->peak_reserved;
    x->config = strdup(s->config ? s->config : "");
    x->note = strdup(s->note ? s->note : "");
    x->order = f->n++;
    return x->config && x->note ? 0 : FSC_ENOMEM;
}

/* Least peak reserved first, then by config. */
static int fix_cmp(const void *pa, const void *pb)
{
    const fix_t *a = pa, *b = pb;
    if (a->peak_reserved != b->peak_reserved)
        return a->peak_reserved < b->peak_reserved ? -1 : 1;
    int c = strcmp(a->config, b->config);
    return c != 0 ? c : (a->order > b->order) - (a->order < b->order);
}

static void print_diagnosis(const char *db)
{
    fsc_rundb_t *h = NULL;
    fsc_err_t err = {0, ""};
    if (fsc_rundb_open(db, &h, &err) != 0) {
        fprintf(stderr, "fragscope demo: %s\n", fsc_err_msg(&err));
        return;
    }
    fixes_t f = {NULL, 0, 0};
    /* The simulation stops at the OOM, as a program would: a setting can
     * only be shown to serve the failed request, not the rest of the run. */
    int64_t complete = -1;
    fsc_rundb_meta_int(h, "run_complete", -1, &complete);
    const char *label = complete == 1 ? "avoided by:" : "serves it: ";
    if (fsc_rundb_ooms(h, first_oom, NULL) == 0 &&
        fsc_rundb_suggestions(h, FSC_RUNDB_NULL, fix_row, &f) == 0) {
        qsort(f.v, f.n, sizeof *f.v, fix_cmp);
        for (size_t i = 0; i < f.n && i < 3; i++) /* the rest are in the reports */
            printf("  %s %s%s%s\n", i == 0 ? label : "           ",
                   f.v[i].config[0] ? f.v[i].config : "(defaults)", f.v[i].note[0] ? " — " : "",
                   f.v[i].note);
        if (f.n > 3)
            printf("              and %zu more settings (see the reports)\n", f.n - 3);
        else if (f.n == 0)
            printf("  no setting tried by the what-if replay avoids it\n");
    }
    for (size_t i = 0; i < f.n; i++) {
        free(f.v[i].config);
        free(f.v[i].note);
    }
    free(f.v);
    fsc_rundb_close(h);
}

/* A step of the pipeline failed: one line, exit status 3. */
static int demo_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int demo_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fragscope demo: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return FSC_EXIT_FAILURE;
}

static int join(char *buf, size_t cap, const char *dir, const char *name)
{
    return snprintf(buf, cap, "%s/%s", dir, name) < (int)cap ? 0 : -1;
}

int fsc_cmd_demo(int argc, char **argv)
{
    const char *dir = "fragscope-demo";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("demo", "%s needs a directory", argv[i - 1]);
            dir = argv[i];
        } else {
            return fsc_cli_usage_error("demo", "unknown option '%s'", argv[i]);
        }
    }
    if (dir[0] == '\0')
        return fsc_cli_usage_error("demo", "-o needs a directory");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return fsc_cli_error("demo: cannot create %s: %s", dir, strerror(errno));
    char trace[4096], db[4096], md[4096], html[4096];
    if (join(trace, sizeof trace, dir, "run.fstrace") || join(db, sizeof db, dir, "run.db") ||
        join(md, sizeof md, dir, "report.md") || join(html, sizeof html, dir, "report.html"))
        return fsc_cli_usage_error("demo", "directory name too long");

    fsc_err_t err = {0, ""};
    static fsc_sim_result_t res; /* large: keep it off the stack */
    fsc_sim_opts_t so = FSC_SIM_OPTS_DEFAULT;
    so.workload = "gpt2";
    so.steps = DEMO_STEPS;
    so.capacity = DEMO_CAPACITY;
    so.output = trace;
    so.use_env = 0;
    so.producer = "demo";
    fsc_progress_t prog;
    fsc_progress_init(&prog, "demo: simulating");
    so.on_step = on_step;
    so.ud = &prog;
    int rc = fsc_sim_run(&so, &res, &err);
    fsc_progress_done(&prog);
    if (rc != 0)
        return demo_fail("simulation failed: %s", fsc_err_msg(&err));

    fsc_analysis_summary_t sum;
    if ((rc = fsc_analyze_file(trace, db, NULL, &sum, NULL, &err)) != 0)
        return demo_fail("%s", fsc_err_msg(&err)); /* names the trace or the database */
    fsc_request_stream_t *rs = NULL;
    size_t rows = 0;
    if ((rc = fsc_request_stream_load(trace, &rs, &err)) == 0)
        rc = fsc_whatif_fill_db(db, rs, 0, &rows, &err);
    fsc_request_stream_destroy(rs);
    if (rc != 0)
        return demo_fail("what-if: %s", fsc_err_msg(&err));
    if ((rc = fsc_report_write_file(db, FSC_REPORT_MARKDOWN, md, &err)) != 0)
        return demo_fail("writing %s: %s", md, fsc_err_msg(&err));
    if ((rc = fsc_view_write(db, html, &err)) != 0)
        return demo_fail("writing %s: %s", html, fsc_err_msg(&err));

    char a[32], b[32];
    fsc_size_format(DEMO_CAPACITY, a, sizeof a);
    printf("GPT-2 small, AdamW, batch 8, seq 128-1024: %d steps under a %s cap, default "
           "allocator settings (simulated device)\n",
           DEMO_STEPS, a);
    if (res.oom) {
        fsc_size_format(res.oom_request, a, sizeof a);
        uint64_t room = res.capacity > res.oom_allocated ? res.capacity - res.oom_allocated : 0;
        fsc_size_format(room, b, sizeof b);
        printf("  OOM at step %d (%s): tried to allocate %s while %s under the cap were "
               "unallocated\n",
               res.wl.failed_step, res.wl.failed_tag, a, b);
        print_diagnosis(db);
    } else {
        printf("  completed %d steps without an OOM\n", res.wl.steps_done);
    }
    fsc_size_format(sum.peak_allocated, a, sizeof a);
    fsc_size_format(sum.peak_reserved, b, sizeof b);
    printf("  peak allocated %s, peak reserved %s, %llu events\n", a, b,
           (unsigned long long)sum.events);
    printf("trace:    %s\ndatabase: %s\nreport:   %s\n          %s\n", trace, db, md, html);
    return FSC_EXIT_OK;
}
