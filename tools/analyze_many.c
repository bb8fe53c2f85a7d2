/*
 * analyze_many.c — `fragscope analyze IN... -o JOB.db`: several inputs (the
 * ranks of a job), or one snapshot with history on several devices, into
 * one job database.
 *
 * Each input is analyzed exactly as a single-input analyze does
 * (fsc_analyze_file, what-if suggestions included) into a temporary
 * database beside the output, "JOB.db.inK[.dD].tmp.PID", by a pool of
 * threads; the main thread merges those in input order as they complete
 * (fsc_rundb_merger_*) into the output's own temporary, removes each once
 * merged, and renames the output into place at the end. Memory is bounded
 * by one input per worker (each analysis is streaming); disk by a window
 * of inputs ahead of the merge (a worker does not start an input more than
 * 2 × workers ahead of the last one merged). Every temporary is listed in
 * common/outfile.c's table, so an interrupting signal removes them all;
 * any failing input stops the pool and leaves nothing behind.
 *
 * Threads rather than processes: the analysis keeps all its state in its
 * handle, and the temporaries' table is shared by the threads for free.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze_job.h"
#include "fragscope/rundb.h"
#include "fragscope/source.h"
#include "fragscope/whatif.h"
#include "fsc/thread.h"

#define MAX_WORKERS 64

typedef struct part {
    int device;          /* -1: the input's own */
    fsc_outfile_t file;  /* the temporary database, listed for signals */
    int have_file;
    fsc__analyze_job_t job;
    fsc_analysis_summary_t sum;
    fsc_source_info_t info;
} part_t;

typedef struct input {
    const char *path;
    part_t *parts;
    size_t nparts;
    int done, rc;
    fsc_err_t err;
} input_t;

typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    input_t *in;
    size_t n, next, merged, window;
    int stop;
    const char *out;
    const fsc_analyze_opts_t *o;
    const fsc__analyze_job_t *tmpl;
} pool_t;

static int run_part(pool_t *p, size_t idx, input_t *in, part_t *pt, fsc_err_t *err)
{
    char name[4096];
    if (pt->device >= 0 && p->tmpl->device < 0)
        snprintf(name, sizeof name, "%s.in%zu.d%d", p->out, idx, pt->device);
    else
        snprintf(name, sizeof name, "%s.in%zu", p->out, idx);
    int rc = fsc_outfile_init(&pt->file, name, err);
    if (rc != 0)
        return rc;
    pt->have_file = 1;
    pt->job = *p->tmpl;
    pt->job.in_path = in->path;
    pt->job.out_path = p->out;
    pt->job.device = pt->device;
    fsc_analyze_opts_t ao = *p->o;
    ao.pick_device = pt->device >= 0;
    ao.device = pt->device >= 0 ? pt->device : 0;
    ao.progress = NULL;
    ao.progress_ud = NULL;
    ao.analysis.before_commit_ud = &pt->job;
    ao.analysis.no_sync = 1; /* merged, then removed: only JOB.db is synced */
    unlink(pt->file.tmp_path);
    return fsc__analyze_settled(in->path, pt->file.tmp_path, &ao, &pt->sum, &pt->info, err);
}

static int add_part(input_t *in, int device)
{
    part_t *np = realloc(in->parts, (in->nparts + 1) * sizeof *np);
    if (np == NULL)
        return FSC_ENOMEM;
    in->parts = np;
    part_t *pt = &in->parts[in->nparts++];
    memset(pt, 0, sizeof *pt);
    pt->device = device;
    return 0;
}

/* One input: as given, or, for a snapshot with history on several devices
 * and no --device, one part per device. */
static int analyze_input(pool_t *p, size_t idx, input_t *in)
{
    fsc_err_t *err = &in->err;
    if (add_part(in, p->tmpl->device) != 0)
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", in->path);
    int rc = run_part(p, idx, in, &in->parts[0], err);
    const fsc_source_info_t *info = &in->parts[0].info;
    uint64_t mask = info->import.device_mask;
    if (rc == FSC_EINVAL && p->tmpl->device < 0 && info->kind == FSC_SOURCE_SNAPSHOT &&
        info->import.devices > 1 && mask != 0) {
        fsc_outfile_abort(&in->parts[0].file);
        in->nparts = 0;
        fsc_err_clear(err);
        rc = 0;
        for (int d = 0; d < 64 && rc == 0; d++) {
            if (!(mask & (1ull << d)))
                continue;
            if (add_part(in, d) != 0)
                return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", in->path);
            rc = run_part(p, idx, in, &in->parts[in->nparts - 1], err);
        }
    }
    return rc;
}

static void *worker(void *ud)
{
    fsc__thread_name("fsc-analyze");
    pool_t *p = ud;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next < p->n && p->next >= p->merged + p->window)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop || p->next >= p->n)
            break;
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        input_t *in = &p->in[i];
        int rc = analyze_input(p, i, in);
        pthread_mutex_lock(&p->mu);
        in->rc = rc;
        in->done = 1;
        if (rc != 0)
            p->stop = 1;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int fsc__analyze_settled(const char *in, const char *out, const fsc_analyze_opts_t *o,
                         fsc_analysis_summary_t *sum, struct fsc_source_info *info,
                         fsc_err_t *err)
{
    int rc = fsc_analyze_file(in, out, o, sum, info, err);
    if (rc != 0 || info->kind != FSC_SOURCE_SNAPSHOT || info->import.reconstructed_guessed == 0)
        return rc;
    fsc_source_opts_t so;
    memset(&so, 0, sizeof so);
    so.pick_device = 1;
    so.device = info->import.device;
    so.lenient = o->analysis.lenient;
    so.skip_entries = o->skip_entries;
    fsc_request_stream_t *rs = NULL;
    fsc_import_size_t *sizes = NULL;
    size_t n = 0;
    fsc_err_t werr;
    fsc_err_clear(&werr);
    /* the analysis stands as it is when what-if cannot settle anything */
    if (fsc_request_stream_load_source(in, &so, &rs, &werr) == 0 &&
        fsc_request_stream_settled(rs, &sizes, &n) == 0 && n > 0) {
        fsc_analyze_opts_t o2 = *o;
        o2.sizes = sizes;
        o2.nsizes = n;
        rc = fsc_analyze_file(in, out, &o2, sum, info, err);
    }
    free(sizes);
    fsc_request_stream_destroy(rs);
    return rc;
}

void fsc__analyze_window_note(const char *prefix, const fsc_import_stats_t *st)
{
    char r[32];
    if (st->entries == 0) { /* no history at all: the snapshot's state is the run */
        printf("%sno history: the snapshot's device_traces are empty (or it is a list of "
               "segments): the\n%s  database holds the state at the moment of the snapshot "
               "only (%s reserved);\n%s  record a history with "
               "torch.cuda.memory._record_memory_history() before the run\n",
               prefix, prefix, fsc_size_format(st->reconstructed_reserved, r, sizeof r), prefix);
        return;
    }
    if (!st->reconstructed || st->segments_only)
        return;
    printf("%swindow: the snapshot's history starts mid-run (PyTorch kept the last %llu "
           "entries):\n%s  the peaks are the window's; the run reserved at least %s before it",
           prefix, (unsigned long long)st->entries, prefix,
           fsc_size_format(st->reconstructed_reserved, r, sizeof r));
    if (st->reconstructed_settled)
        printf("; %llu block sizes settled by what-if", (unsigned long long)st->reconstructed_settled);
    if (st->reconstructed_guessed)
        printf("; %llu block sizes guessed", (unsigned long long)st->reconstructed_guessed);
    printf(" (fragscope report)\n");
}

static void print_part(const char *out, const input_t *in, const part_t *pt)
{
    char b[2][32], dev[32] = "";
    const fsc_analysis_summary_t *s = &pt->sum;
    if (pt->info.have_integrity && !pt->info.integrity.clean_close)
        fprintf(stderr, "fragscope: %s: trace was not closed cleanly; analyzed the %llu "
                        "events of its complete chunks\n", in->path,
                (unsigned long long)pt->info.integrity.events);
    if (pt->info.have_integrity && pt->info.integrity.skipped.total > 0) {
        char line[1024];
        fprintf(stderr, "fragscope: warning: %s: %s; every figure covers only the entries "
                        "the recorder kept (fragscope info %s)\n", in->path,
                fsc_trace_skips_text(&pt->info.integrity.skipped, line, sizeof line), in->path);
    }
    if (pt->info.kind == FSC_SOURCE_SNAPSHOT && in->nparts > 1)
        snprintf(dev, sizeof dev, " device %d", pt->info.import.device);
    printf("%s: %s%s: %llu events, peak allocated %s, peak reserved %s, %llu OOM%s%s%s%s\n",
           out, in->path, dev, (unsigned long long)s->events,
           fsc_size_format(s->peak_allocated, b[0], sizeof b[0]),
           fsc_size_format(s->peak_reserved, b[1], sizeof b[1]),
           (unsigned long long)s->num_ooms, s->num_ooms == 1 ? "" : "s",
           s->num_ooms ? " (first: " : "", s->num_ooms ? fsc_oom_cause_name(s->first_oom_cause) : "",
           s->num_ooms ? ")" : "");
    if (pt->info.kind == FSC_SOURCE_SNAPSHOT)
        fsc__analyze_window_note("  ", &pt->info.import);
    if (s->warnings > 0)
        printf("%s%s: %llu events contradicted the replay and were skipped (see table "
               "warnings)\n", in->path, dev, (unsigned long long)s->warnings);
    if (pt->job.suggest_warning[0] != '\0')
        fprintf(stderr, "fragscope: warning: %s%s: no what-if suggestions: %s\n", in->path, dev,
                pt->job.suggest_warning);
}

/* The output may not be one of the inputs (any name of it). */
static int output_is_input(const char *out, const char *const *inputs, size_t n)
{
    struct stat so, si;
    if (stat(out, &so) != 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
            return fsc_cli_error("%s: the output is the input %s; writing it would destroy the "
                                 "input (choose another output file)", out, inputs[i]);
    return 0;
}

int fsc__analyze_many(const char *const *inputs, size_t n, const char *out,
                      const fsc_analyze_opts_t *o, const fsc__analyze_job_t *tmpl, int workers)
{
    int rc = output_is_input(out, inputs, n);
    if (rc != 0)
        return rc;
    if (workers <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        workers = c > 0 ? (int)c : 1;
    }
    if ((size_t)workers > n)
        workers = (int)n;
    if (workers > MAX_WORKERS)
        workers = MAX_WORKERS;
    pool_t p;
    memset(&p, 0, sizeof p);
    p.in = calloc(n, sizeof *p.in);
    if (p.in == NULL)
        return fsc_cli_error("out of memory");
    for (size_t i = 0; i < n; i++)
        p.in[i].path = inputs[i];
    p.n = n;
    p.window = 2 * (size_t)workers;
    p.out = out;
    p.o = o;
    p.tmpl = tmpl;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);

    fsc_err_t err;
    fsc_err_clear(&err);
    fsc_rundb_merger_t *m = NULL;
    rc = fsc_rundb_merger_open(out, 0, &m, &err);
    pthread_t th[MAX_WORKERS];
    int started = 0;
    for (; rc == 0 && started < workers; started++)
        if (pthread_create(&th[started], NULL, worker, &p) != 0) {
            if (started == 0)
                rc = fsc_err_set(&err, FSC_ENOMEM, "cannot start a worker thread");
            break;
        }
    /* merge in input order as the inputs complete */
    for (size_t i = 0; i < n && rc == 0; i++) {
        input_t *in = &p.in[i];
        pthread_mutex_lock(&p.mu);
        while (!in->done)
            pthread_cond_wait(&p.cv, &p.mu);
        pthread_mutex_unlock(&p.mu);
        if (in->rc != 0) {
            rc = in->rc;
            fsc_err_copy(&err, &in->err);
            break;
        }
        for (size_t k = 0; k < in->nparts && rc == 0; k++) {
            part_t *pt = &in->parts[k];
            rc = fsc_rundb_merger_add(m, pt->file.tmp_path, &err);
            fsc_outfile_abort(&pt->file);
            pt->have_file = 0;
            if (rc == 0)
                print_part(out, in, pt);
        }
        pthread_mutex_lock(&p.mu);
        p.merged = i + 1;
        pthread_cond_broadcast(&p.cv);
        pthread_mutex_unlock(&p.mu);
    }
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    fsc_rundb_merge_stats_t st;
    memset(&st, 0, sizeof st);
    if (rc == 0)
        rc = fsc_rundb_merger_commit(m, &st, &err);
    else
        fsc_rundb_merger_abort(m);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < p.in[i].nparts; k++)
            if (p.in[i].parts[k].have_file)
                fsc_outfile_abort(&p.in[i].parts[k].file);
        free(p.in[i].parts);
    }
    free(p.in);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    if (rc != 0)
        return fsc_cli_input_error("", rc, &err, tmpl->lenient);
    for (uint64_t k = 0; k < st.duplicate_ranks && k < FSC_RUNDB_MERGE_WARNINGS; k++)
        fprintf(stderr, "fragscope: warning: %s\n", st.warnings[k]);
    if (st.duplicate_ranks > FSC_RUNDB_MERGE_WARNINGS)
        fprintf(stderr, "fragscope: warning: %llu runs in all claim another's rank and device "
                        "(meta merge.duplicate_rank of each)\n",
                (unsigned long long)st.duplicate_ranks);
    printf("%s: %llu run%s from %zu input%s", out, (unsigned long long)st.runs,
           st.runs == 1 ? "" : "s", n, n == 1 ? "" : "s");
    if (st.runs_skipped > 0)
        printf(" (%llu run%s given twice, kept once)", (unsigned long long)st.runs_skipped,
               st.runs_skipped == 1 ? "" : "s");
    printf(" (fragscope report %s)\n", out);
    return FSC_EXIT_OK;
}
