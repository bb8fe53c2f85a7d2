/*
 * cmd_analyze.c — `fragscope analyze`: replay a trace or a PyTorch snapshot
 * into a run database. The glue between the readers (recorder.h,
 * pytorch.h) and the analysis (analyzer.h): tag trees are carried over node
 * by node, events are fed one at a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "cli.h"
#include "fragscope/analyzer.h"
#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"
#include "fragscope/whatif.h"

const char fsc_cmd_analyze_summary[] = "replay a trace or PyTorch snapshot into a run database";
const char fsc_cmd_analyze_usage[] =
    "usage: fragscope analyze TRACE|SNAPSHOT -o RUN.db [--lenient] [--timeline-samples N]\n"
    "                         [--no-suggest] [--capacity SIZE]\n"
    "\n"
    "Replays every event of a .fstrace trace, or of a PyTorch memory snapshot\n"
    "(torch.cuda.memory._snapshot(), pickle or JSON; detected from the content),\n"
    "and writes the run database described in docs/schema.md: blocks, segments,\n"
    "a bounded timeline, the block layout at the peak and at each OOM, the\n"
    "diagnosis of every OOM, bins and per-tag statistics. Metrics are defined\n"
    "in docs/metrics.md. The database is written under a temporary name and\n"
    "renamed when complete.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE      the database to write (required)\n"
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
    "\n"
    "exit status: 0 ok, 2 bad input (unreadable file, an event that contradicts\n"
    "the replay without --lenient) or usage, 3 cannot write the output.\n";

/* ---- tags of imported snapshots: (parent, name) → node id -------------- */

typedef struct tag_entry {
    UT_hash_handle hh;
    uint32_t id;
    size_t klen;
    char key[]; /* parent (4 bytes) + name */
} tag_entry_t;

typedef struct job {
    const char *in_path, *out_path;
    fsc_analysis_opts_t opts;
    fsc_analysis_t *a;
    fsc_err_t err;
    tag_entry_t *tags;
    uint32_t next_tag;
    uint8_t *defined; /* trace input: node carried over already */
    size_t ndefined;
    fsc_progress_t prog;
    uint64_t events;
    uint64_t capacity; /* --capacity; 0 = the input's */
    int no_suggest, suggested;
    size_t suggestions;
    int run_complete; /* of the request stream the suggestions replayed */
    char suggest_warning[FSC_ERR_MSG_MAX];
} job_t;

/* Keep the analysis's message (it names the event) as the job's error. */
static int from_analysis(job_t *j, int rc)
{
    return fsc_err_set(&j->err, rc, "%s", fsc_analysis_last_error(j->a));
}

static int sink_header(void *ud, const fsc_trace_header_t *hdr)
{
    job_t *j = ud;
    if (j->a != NULL)
        return fsc_err_set(&j->err, FSC_EFORMAT, "%s: two headers", j->in_path);
    fsc_trace_header_t h = *hdr;
    if (j->capacity != 0) {
        h.capacity = j->capacity;
        h.flags &= ~FSC_TRACE_F_CAPACITY_UNKNOWN;
    }
    int rc = fsc_analysis_create(j->out_path, &h, &j->opts, &j->a, &j->err);
    return rc;
}

static int sink_tag(void *ud, uint32_t parent, const char *name, size_t len, uint32_t *node)
{
    job_t *j = ud;
    size_t klen = 4 + len;
    tag_entry_t *e = NULL;
    char stack[256];
    char *key = klen <= sizeof stack ? stack : malloc(klen);
    if (key == NULL)
        return fsc_err_set(&j->err, FSC_ENOMEM, "out of memory");
    memcpy(key, &parent, 4);
    memcpy(key + 4, name, len);
    HASH_FIND(hh, j->tags, key, klen, e);
    if (e == NULL) {
        e = malloc(sizeof *e + klen);
        if (e == NULL) {
            if (key != stack)
                free(key);
            return fsc_err_set(&j->err, FSC_ENOMEM, "out of memory");
        }
        e->id = ++j->next_tag;
        e->klen = klen;
        memcpy(e->key, key, klen);
        HASH_ADD(hh, j->tags, key, klen, e);
        int rc = fsc_analysis_define_tag(j->a, e->id, parent, name, len);
        if (rc != 0) {
            if (key != stack)
                free(key);
            return from_analysis(j, rc);
        }
    }
    if (key != stack)
        free(key);
    *node = e->id;
    return 0;
}

static int sink_event(void *ud, const fsc_event_t *ev)
{
    job_t *j = ud;
    if (j->a == NULL)
        return fsc_err_set(&j->err, FSC_EFORMAT, "%s: events before the header", j->in_path);
    int rc = fsc_analysis_feed(j->a, ev);
    if (rc != 0)
        return from_analysis(j, rc);
    if ((++j->events & 0xffff) == 0)
        fsc_progress_update(&j->prog, j->events, 0);
    return 0;
}

/* ---- trace input ------------------------------------------------------- */

/* Carry node (and its ancestors) from the reader's tag tree over. */
static int carry_tag(job_t *j, fsc_trace_reader_t *r, uint32_t node)
{
    if (node == 0 || (node < j->ndefined && j->defined[node]))
        return 0;
    if (node >= j->ndefined) {
        size_t n = j->ndefined ? j->ndefined : 256;
        while (n <= node)
            n *= 2;
        uint8_t *nd = realloc(j->defined, n);
        if (nd == NULL)
            return fsc_err_set(&j->err, FSC_ENOMEM, "out of memory");
        memset(nd + j->ndefined, 0, n - j->ndefined);
        j->defined = nd;
        j->ndefined = n;
    }
    const char *name;
    size_t len;
    uint32_t parent;
    if (fsc_trace_tag(r, node, &name, &len, &parent) != 0)
        return 0; /* unknown to the reader: the analysis names it "#id" */
    j->defined[node] = 1;
    if (parent != node) {
        int rc = carry_tag(j, r, parent);
        if (rc != 0)
            return rc;
    }
    int rc = fsc_analysis_define_tag(j->a, node, parent == node ? 0 : parent, name, len);
    return rc != 0 ? from_analysis(j, rc) : 0;
}

static int run_trace(job_t *j)
{
    fsc_trace_reader_t *r = NULL;
    int rc = fsc_trace_open(j->in_path, &r, &j->err);
    if (rc != 0)
        return rc;
    j->opts.source_kind = "trace";
    rc = sink_header(j, fsc_trace_header(r));
    fsc_event_t ev;
    int got = 0;
    fsc_trace_integrity_t in;
    while (rc == 0 && (got = fsc_trace_next(r, &ev)) == 1) {
        rc = carry_tag(j, r, ev.tag);
        if (rc == 0 && (rc = fsc_analysis_feed(j->a, &ev)) != 0)
            from_analysis(j, rc);
        if (rc == 0 && (++j->events & 0xffff) == 0) {
            fsc_trace_get_integrity(r, &in);
            fsc_progress_update(&j->prog, in.compressed_bytes, in.file_bytes);
        }
    }
    if (rc == 0 && got < 0)
        rc = fsc_err_set(&j->err, got, "%s", fsc_trace_last_error(r));
    if (rc == 0 && fsc_trace_get_integrity(r, &in) == 0) {
        fsc_analysis_set_meta_int(j->a, "integrity.clean_close", in.clean_close);
        fsc_analysis_set_meta_int(j->a, "integrity.chunks", (int64_t)in.chunks);
        fsc_analysis_set_meta_int(j->a, "integrity.file_bytes", (int64_t)in.file_bytes);
        fsc_analysis_set_meta_int(j->a, "integrity.bytes_lost", (int64_t)in.bytes_lost);
        fsc_analysis_set_meta_int(j->a, "integrity.events_lost", (int64_t)in.events_lost);
        fsc_analysis_set_meta_int(j->a, "integrity.events_lost_known", in.events_lost_known);
        if (!in.clean_close)
            fprintf(stderr, "fragscope: %s: trace was not closed cleanly; analyzed the %llu "
                            "events of its complete chunks\n", j->in_path,
                    (unsigned long long)in.events);
    }
    fsc_trace_close(r);
    return rc;
}

static int run_snapshot(job_t *j)
{
    j->opts.source_kind = "pytorch_snapshot";
    fsc_import_opts_t io = FSC_IMPORT_OPTS_DEFAULT;
    io.lenient = j->opts.lenient;
    fsc_import_sink_t sink = {j, sink_header, sink_tag, sink_event};
    fsc_import_stats_t st;
    memset(&st, 0, sizeof st);
    fsc_err_t ierr = {0};
    int rc = fsc_pytorch_import(j->in_path, &io, &sink, &st, &ierr);
    if (rc != 0) {
        /* A sink's own error (the analysis naming an event) is the more
         * precise one. */
        if (j->err.code == 0)
            fsc_err_copy(&j->err, &ierr);
        return rc;
    }
    if (j->a == NULL)
        return fsc_err_set(&j->err, FSC_EFORMAT, "%s: no header in the snapshot", j->in_path);
    fsc_analysis_set_meta_int(j->a, "import.device", st.device);
    fsc_analysis_set_meta_int(j->a, "import.entries", (int64_t)st.entries);
    fsc_analysis_set_meta_int(j->a, "import.reconstructed", st.reconstructed);
    fsc_analysis_set_meta_int(j->a, "import.warnings", (int64_t)st.warnings);
    if (st.warnings > 0)
        fsc_analysis_set_meta_text(j->a, "import.first_warning", st.first_warning);
    return 0;
}

/* The database is complete and closed, still under its temporary name
 * (fsc_analysis_opts_t.before_commit): what-if adds the settings that would
 * have avoided its OOMs (in one transaction of its own), and only then is
 * the file renamed into place. A failure to compute them leaves the
 * database as analyzed and is reported as a warning; a failure to write
 * them (the output's disk) fails the command like any other write. */
static int add_suggestions(void *ud, const char *tmp_db, const fsc_analysis_summary_t *sum,
                           fsc_err_t *out_err)
{
    job_t *j = ud;
    if (j->no_suggest || sum->num_ooms == 0)
        return 0;
    fsc_err_t err;
    fsc_err_clear(&err);
    fsc_request_stream_t *rs = NULL;
    size_t rows = 0;
    fsc_request_stream_info_t info;
    memset(&info, 0, sizeof info);
    int rc = fsc_request_stream_load(j->in_path, &rs, &err);
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

int fsc_cmd_analyze(int argc, char **argv)
{
    job_t j;
    memset(&j, 0, sizeof j);
    fsc_analysis_opts_t def = FSC_ANALYSIS_OPTS_DEFAULT;
    j.opts = def;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) {
            j.out_path = argv[++i];
        } else if (strcmp(a, "--lenient") == 0) {
            j.opts.lenient = 1;
        } else if (strcmp(a, "--no-suggest") == 0) {
            j.no_suggest = 1;
        } else if (strcmp(a, "--capacity") == 0 && i + 1 < argc) {
            int rc = fsc_cli_size("analyze", a, argv[++i], &j.capacity);
            if (rc != 0)
                return rc;
            if (j.capacity == 0)
                return fsc_cli_usage_error("analyze", "--capacity must be more than 0");
        } else if (strcmp(a, "--timeline-samples") == 0 && i + 1 < argc) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || v < 2 || v > 1000000)
                return fsc_cli_usage_error("analyze", "--timeline-samples: '%s' is not a "
                                           "number between 2 and 1000000", argv[i]);
            j.opts.timeline_samples = (uint32_t)v;
        } else if (a[0] == '-' && a[1] != '\0') {
            return fsc_cli_usage_error("analyze", "unknown option '%s'", a);
        } else if (j.in_path == NULL) {
            j.in_path = a;
        } else {
            return fsc_cli_usage_error("analyze", "one input only ('%s')", a);
        }
    }
    if (j.in_path == NULL)
        return fsc_cli_usage_error("analyze", "no input trace or snapshot given");
    if (j.out_path == NULL)
        return fsc_cli_usage_error("analyze", "no output given (-o RUN.db)");
    j.opts.source_path = j.in_path;
    j.opts.before_commit = add_suggestions;
    j.opts.before_commit_ud = &j;
    fsc_outfile_guard_input(j.in_path);
    fsc_progress_init(&j.prog, "analyze");

    int kind = fsc_pytorch_detect(j.in_path);
    int rc;
    if (kind < 0)
        rc = fsc_err_set(&j.err, kind, "%s: %s", j.in_path,
                         kind == FSC_ENOENT ? "no such file" : "cannot read the file");
    else if (kind > 0)
        rc = run_snapshot(&j);
    else
        rc = run_trace(&j);
    fsc_analysis_summary_t sum;
    if (rc == 0 && (rc = fsc_analysis_finish(j.a, &sum)) != 0)
        from_analysis(&j, rc);
    fsc_progress_done(&j.prog);
    const char *msg = fsc_err_msg(&j.err);
    fsc_analysis_destroy(j.a);
    tag_entry_t *e, *tmp;
    HASH_ITER(hh, j.tags, e, tmp) {
        HASH_DEL(j.tags, e);
        free(e);
    }
    free(j.defined);
    if (rc != 0) {
        int named = strncmp(msg, j.in_path, strlen(j.in_path)) == 0 ||
                    strncmp(msg, j.out_path, strlen(j.out_path)) == 0;
        fsc_cli_error("%s%s%s", named ? "" : j.in_path, named ? "" : ": ", msg);
        return fsc_cli_exit_code(rc);
    }
    char b[2][32];
    printf("%s: %llu events, peak allocated %s, peak reserved %s, %llu OOM%s%s%s%s\n",
           j.out_path, (unsigned long long)sum.events,
           fsc_size_format(sum.peak_allocated, b[0], sizeof b[0]),
           fsc_size_format(sum.peak_reserved, b[1], sizeof b[1]),
           (unsigned long long)sum.num_ooms, sum.num_ooms == 1 ? "" : "s",
           sum.num_ooms ? " (first: " : "",
           sum.num_ooms ? fsc_oom_cause_name(sum.first_oom_cause) : "",
           sum.num_ooms ? ")" : "");
    if (sum.warnings > 0)
        printf("%llu events contradicted the replay and were skipped (see table warnings)\n",
               (unsigned long long)sum.warnings);
    if (j.suggest_warning[0] != '\0')
        fprintf(stderr, "fragscope: warning: %s: no what-if suggestions: %s\n", j.out_path,
                j.suggest_warning);
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
