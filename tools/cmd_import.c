/*
 * cmd_import.c — `fragscope import`: a PyTorch memory snapshot (pickle or
 * JSON) into a .fstrace. The snapshot is read through the source layer,
 * which hands its tags and events to the recorder on a second thread (see
 * import_snapshot); the recorder cuts chunks by size only, so the trace
 * does not depend on timing or threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"
#include "fragscope/source.h"

const char fsc_cmd_import_summary[] = "convert a PyTorch memory snapshot into a trace";
const char fsc_cmd_import_usage[] =
    "usage: fragscope import SNAPSHOT -o run.fstrace [--device N] [--lenient]\n"
    "                        [--capacity SIZE]\n"
    "\n"
    "Reads what torch.cuda.memory._snapshot() returns, saved with pickle.dump or\n"
    "json.dump (or the list of segments of torch.cuda.memory_snapshot()), and\n"
    "writes the same run as a fragscope trace. PyTorch records requested sizes and\n"
    "addresses; the importer replays them through the allocator's block rules to\n"
    "recover block sizes, splits and merges. Python frames become tags. When the\n"
    "snapshot's history had wrapped, the state before its first entry is rebuilt\n"
    "from the final segments (the summary says so). The cap the run ran under\n"
    "is not in a snapshot, so the trace marks it unknown unless --capacity gives\n"
    "it. A trace holds at most 64 KiB of a marker's text: a longer user_defined\n"
    "entry keeps its first 64 KiB (the summary says how many were cut). Segments\n"
    "that overlap are refused, as analyze refuses them.\n"
    "\n"
    "options:\n"
    "  -o FILE        the trace to write (required)\n"
    "  --device N     the CUDA device to import (default: the only one with history)\n"
    "  --lenient      skip history entries that contradict the block model (they\n"
    "                 are counted in the summary) instead of failing\n"
    "  --capacity SIZE  the bytes the process was allowed to reserve (PyTorch's\n"
    "                 OOM message says it: \"... X GiB allowed\"); stored in the\n"
    "                 trace's header as a known capacity\n"
    "\n"
    "exit status: 0 imported, 2 bad options or a snapshot that cannot be read,\n"
    "3 the trace could not be written.\n";

typedef struct import_ctx {
    uint32_t *ids; /* the recorder's node id of each of the source's (0: root) */
    size_t nids;
    const char *tmp_path;
    const char *out; /* what the user named the trace: messages use it */
    fsc_recorder_t *rec;
    int rec_failed; /* the recorder, not the snapshot, failed */
    fsc_err_t rec_err;
    uint64_t capacity; /* --capacity; 0 = unknown */
    uint64_t cut_markers; /* markers longer than a trace holds */
} import_ctx_t;

/* Longest prefix of at most max bytes that does not end inside a UTF-8
 * sequence. */
static uint32_t utf8_cut(const char *s, uint32_t max)
{
    uint32_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static int on_header(void *ud, const fsc_trace_header_t *hdr)
{
    import_ctx_t *c = ud;
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    /* Chunks are compressed and written by the recorder's thread while the
     * import goes on; they are cut by size only (no time bound), so the
     * trace is the same whatever the timing. */
    o.flush_interval_ms = UINT32_MAX;
    o.name = c->out; /* the recorder writes tmp_path, the user knows out */
    fsc_trace_header_t h = *hdr;
    if (h.host == NULL)
        h.host = ""; /* not this machine's: the source names none */
    if (c->capacity != 0) {
        h.capacity = c->capacity;
        h.flags &= ~FSC_TRACE_F_CAPACITY_UNKNOWN;
    }
    int rc = fsc_recorder_open(c->tmp_path, &h, &o, &c->rec, &c->rec_err);
    if (rc != 0)
        c->rec_failed = 1;
    return rc;
}

static int on_tag(void *ud, uint32_t parent, const char *name, size_t len, uint32_t *out)
{
    import_ctx_t *c = ud;
    int rc = fsc_recorder_tag_node(c->rec, parent, name, len, out);
    if (rc != 0) {
        c->rec_failed = 1;
        fsc_err_set(&c->rec_err, rc, "%s", fsc_recorder_last_error(c->rec));
    }
    return rc;
}

static int on_event(void *ud, const fsc_event_t *ev)
{
    import_ctx_t *c = ud;
    fsc_event_t cut;
    if (ev->type == FSC_EV_MARKER && ev->text != NULL && ev->text_len > FSC_TRACE_MAX_TEXT) {
        /* A snapshot's user_defined text may be longer than a trace holds:
         * kept cut, and the summary says how many were. */
        cut = *ev;
        cut.text_len = utf8_cut(ev->text, FSC_TRACE_MAX_TEXT);
        ev = &cut;
        c->cut_markers++;
    }
    int rc = fsc_recorder_write(c->rec, ev);
    if (rc != 0) {
        c->rec_failed = 1;
        fsc_err_set(&c->rec_err, rc, "%s", fsc_recorder_last_error(c->rec));
    }
    return rc;
}

static void on_progress(void *ud, uint64_t done, uint64_t total)
{
    (void)total;
    fsc_progress_events(ud, done); /* history entries replayed */
}

static void on_progress_bytes(void *ud, uint64_t done, uint64_t total)
{
    fsc_progress_bytes(ud, done, total);
}

/* ---- a snapshot through the source layer --------------------------------
 * The source runs this sink on a thread of its own while the snapshot is
 * read (FRAGSCOPE_THREADS=1: on the caller's), so that writing the trace
 * (encoding every event) does not add to the reading. Tags come with the
 * source's node ids, each defined before its first use, in the order the
 * importer met them; the recorder interns them in that same order, so the
 * trace is the one the importer would write to it directly. */

static int src_header(void *ud, const fsc_trace_header_t *hdr, fsc_err_t *err)
{
    import_ctx_t *c = ud;
    int rc = on_header(ud, hdr);
    if (rc != 0)
        fsc_err_copy(err, &c->rec_err);
    return rc;
}

static int src_tag(void *ud, uint32_t node, uint32_t parent, const char *name, size_t len,
                   fsc_err_t *err)
{
    import_ctx_t *c = ud;
    if ((parent != 0 && (parent >= c->nids || c->ids[parent] == 0)) || node == 0)
        return fsc_err_set(err, FSC_EINVAL, "tag node %u defined under an unknown node %u", node,
                           parent);
    if (node >= c->nids) {
        size_t n = c->nids ? c->nids : 1024;
        while (n <= node)
            n *= 2;
        uint32_t *ni = realloc(c->ids, n * sizeof *ni);
        if (ni == NULL)
            return fsc_err_set(err, FSC_ENOMEM, "out of memory");
        memset(ni + c->nids, 0, (n - c->nids) * sizeof *ni);
        c->ids = ni;
        c->nids = n;
    }
    uint32_t id = 0;
    int rc = on_tag(ud, parent == 0 ? 0 : c->ids[parent], name, len, &id);
    if (rc != 0) {
        fsc_err_copy(err, &c->rec_err);
        return rc;
    }
    c->ids[node] = id;
    return 0;
}

static int src_event(void *ud, const fsc_event_t *ev, fsc_err_t *err)
{
    import_ctx_t *c = ud;
    fsc_event_t e = *ev;
    if (e.tag != 0) {
        if (e.tag >= c->nids || c->ids[e.tag] == 0)
            return fsc_err_set(err, FSC_EINVAL, "an event names tag node %u, never defined", e.tag);
        e.tag = c->ids[e.tag];
    }
    int rc = on_event(ud, &e);
    if (rc != 0)
        fsc_err_copy(err, &c->rec_err);
    return rc;
}

static void on_src_progress(void *ud, uint64_t done, uint64_t total)
{
    if (total == 0)
        fsc_progress_events(ud, done); /* events so far */
    else
        fsc_progress_bytes(ud, done, total);
}

/* The snapshot read into the recorder through the source layer; a file
 * that is not a snapshot goes to the importer directly, for its message. */
static int import_snapshot(const char *in, const fsc_import_opts_t *opts, import_ctx_t *c,
                           fsc_progress_t *prog, fsc_import_stats_t *st, fsc_err_t *err)
{
    if (fsc_source_detect(in) != FSC_SOURCE_SNAPSHOT) {
        fsc_import_sink_t sink = {c, on_header, on_tag, on_event};
        return fsc_pytorch_import(in, opts, &sink, st, err);
    }
    fsc_source_opts_t so;
    memset(&so, 0, sizeof so);
    so.lenient = opts->lenient;
    so.pick_device = opts->pick_device;
    so.device = opts->device;
    so.keep_records = opts->keep_records;
    so.progress = on_src_progress;
    so.progress_ud = prog;
    fsc_source_t *src = NULL;
    int rc = fsc_source_open(in, &so, &src, err);
    if (rc != 0)
        return rc;
    fsc_source_sink_t sink = {c, src_header, src_tag, src_event};
    rc = fsc_source_run(src, &sink, err);
    fsc_source_info_t info;
    fsc_source_info(src, &info);
    *st = info.import;
    fsc_source_close(src);
    return rc;
}

static int parse_device(const char *val, int *out)
{
    char *end = NULL;
    if (val == NULL || val[0] == '\0')
        return fsc_cli_usage_error("import", "--device needs a value");
    long v = strtol(val, &end, 10);
    if (*end != '\0' || v < 0 || v > 1023)
        return fsc_cli_usage_error("import", "--device: '%s' is not a device number", val);
    *out = (int)v;
    return 0;
}

static void print_summary(const char *in, const char *out, const fsc_import_stats_t *s)
{
    char pa[32], pr[32];
    printf("%s: %s snapshot, device %d%s\n", in,
           s->format == FSC_SNAP_PICKLE ? "pickle" : "JSON", s->device,
           s->segments_only ? " (segments only, no history)" : "");
    printf("  %llu history entries -> %llu events: %llu allocations, %llu frees, "
           "%llu segments allocated, %llu freed",
           (unsigned long long)s->entries, (unsigned long long)s->events,
           (unsigned long long)s->allocs, (unsigned long long)s->frees,
           (unsigned long long)s->segment_allocs, (unsigned long long)s->segment_frees);
    if (s->maps || s->unmaps)
        printf(", %llu maps, %llu unmaps", (unsigned long long)s->maps,
               (unsigned long long)s->unmaps);
    printf(", %llu OOMs\n", (unsigned long long)s->ooms);
    printf("  peak allocated %s, peak reserved %s\n",
           fsc_size_format(s->peak_allocated, pa, sizeof pa),
           fsc_size_format(s->peak_reserved, pr, sizeof pr));
    if (s->devices > 1)
        printf("  the snapshot has history for %u devices; imported device %d\n", s->devices,
               s->device);
    if (s->entries == 0) {
        char rv[32];
        printf("  no history: the snapshot's device_traces are empty (or it is a list of "
               "segments): the\n  trace holds the state at the moment of the snapshot only: "
               "%llu segments or mapped ranges\n  (%s reserved), %llu live blocks; record a "
               "history with\n  torch.cuda.memory._record_memory_history() before the run\n",
               (unsigned long long)s->reconstructed_segments,
               fsc_size_format(s->reconstructed_reserved, rv, sizeof rv),
               (unsigned long long)s->reconstructed_blocks);
    } else if (s->reconstructed) {
        char rv[32];
        printf("  the history starts mid-run (its ring had wrapped): the state before it was "
               "rebuilt from\n  the final segments: %llu segments or mapped ranges (%s "
               "reserved), %llu live blocks\n",
               (unsigned long long)s->reconstructed_segments,
               fsc_size_format(s->reconstructed_reserved, rv, sizeof rv),
               (unsigned long long)s->reconstructed_blocks);
        if (s->reconstructed_guessed > 0) {
            printf("  %llu of those blocks end where the history does not prove (a remainder "
                   "PyTorch may have\n  left unsplit, at most 1 MiB each; `fragscope whatif "
                   "--verify` settles what it can):",
                   (unsigned long long)s->reconstructed_guessed);
            for (uint64_t i = 0; i < s->reconstructed_guessed && i < 8; i++)
                printf("%s0x%llx", i ? ", " : " ", (unsigned long long)s->guessed_blocks[i]);
            printf("%s\n", s->reconstructed_guessed > 8 ? ", ..." : "");
        }
    }
    else
        printf("  history complete from the first segment on\n");
    if (s->unknown_lines)
        printf("  %llu frames with a line number beyond 64 bits (torch.compile's 2^64-1), "
               "tagged with line '?'\n",
               (unsigned long long)s->unknown_lines);
    if (s->warnings)
        printf("  %llu entries skipped (--lenient); first: %s\n",
               (unsigned long long)s->warnings, s->first_warning);
    if (s->unknown_actions || s->unknown_keys)
        printf("  not understood, kept: %llu entries with an unknown action, %llu unknown "
               "keys (%s)\n",
               (unsigned long long)s->unknown_actions, (unsigned long long)s->unknown_keys,
               s->not_understood);
    if (s->settings_not_modelled[0])
        printf("  settings not modelled: %s (replays cannot follow them: what-if results that "
               "depend on them are not exact)\n",
               s->settings_not_modelled);
    if (s->keys_not_modelled[0])
        printf("  snapshot keys not modelled: %s\n", s->keys_not_modelled);
    if (s->torch_inferred[0])
        printf("  PyTorch version: %s\n", s->torch_inferred);
    if (s->meta_records)
        printf("  %llu pytorch.* records keep what is not an allocator event "
               "(docs/pytorch.md)\n",
               (unsigned long long)s->meta_records);
    printf("wrote %s\n", out);
}

int fsc_cmd_import(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    uint64_t capacity = 0;
    fsc_import_opts_t opts = FSC_IMPORT_OPTS_DEFAULT;
    opts.keep_records = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("import", "%s needs a file name", a);
            out = argv[i];
        } else if (strcmp(a, "--device") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("import", "--device needs a value");
            if (parse_device(argv[i], &opts.device) != 0)
                return FSC_EXIT_BAD_INPUT;
            opts.pick_device = 1;
        } else if (strcmp(a, "--lenient") == 0) {
            opts.lenient = 1;
        } else if (strcmp(a, "--capacity") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("import", "--capacity needs a value");
            int rc = fsc_cli_size("import", a, argv[i], &capacity);
            if (rc != 0)
                return rc;
            if (capacity == 0)
                return fsc_cli_usage_error("import", "--capacity must be more than 0");
        } else if (a[0] == '-' && a[1] != '\0') {
            return fsc_cli_usage_error("import", "unknown option '%s'", a);
        } else if (in == NULL) {
            in = a;
        } else {
            return fsc_cli_usage_error("import", "more than one snapshot given ('%s')", a);
        }
    }
    if (in == NULL)
        return fsc_cli_usage_error("import", "no snapshot given");
    if (out == NULL)
        return fsc_cli_usage_error("import", "no output given (-o run.fstrace)");

    fsc_err_t err = {0};
    if (fsc_infile_check(in, &err) != 0)
        return fsc_cli_error("%s", fsc_err_msg(&err));
    fsc_outfile_t of;
    fsc_outfile_guard_input(in);
    if (fsc_outfile_init(&of, out, &err) != 0)
        return fsc_cli_error("%s", fsc_err_msg(&err));
    import_ctx_t c;
    memset(&c, 0, sizeof c);
    c.tmp_path = of.tmp_path;
    c.out = out;
    c.capacity = capacity;
    fsc_import_stats_t st;
    memset(&st, 0, sizeof st);
    fsc_progress_t prog;
    fsc_progress_init(&prog, "import");
    opts.progress = on_progress;
    opts.progress_bytes = on_progress_bytes;
    opts.progress_ud = &prog;
    int rc = import_snapshot(in, &opts, &c, &prog, &st, &err);
    fsc_progress_done(&prog);
    free(c.ids);
    int crc = fsc_recorder_close(c.rec);
    if (rc == 0 && crc != 0) {
        c.rec_failed = 1;
        fsc_err_set(&c.rec_err, crc, "%s: cannot write the trace", out);
        rc = crc;
    }
    if (rc != 0) {
        fsc_outfile_abort(&of);
        if (c.rec_failed) {
            const char *m = fsc_err_msg(&c.rec_err);
            if (strncmp(m, out, strlen(out)) == 0)
                fsc_cli_error("%s", m);
            else
                fsc_cli_error("%s: %s", out, m);
            return FSC_EXIT_FAILURE;
        }
        return fsc_cli_input_error("", rc, &err, opts.lenient);
    }
    if (fsc_outfile_commit(&of, &err) != 0) {
        fsc_outfile_abort(&of);
        fsc_cli_error("%s", fsc_err_msg(&err));
        return FSC_EXIT_FAILURE;
    }
    print_summary(in, out, &st);
    if (c.cut_markers > 0)
        printf("  %llu marker%s longer than %u bytes (user_defined entries) kept their first "
               "%u bytes; 'fragscope analyze' of the snapshot keeps them whole\n",
               (unsigned long long)c.cut_markers, c.cut_markers == 1 ? "" : "s",
               FSC_TRACE_MAX_TEXT, FSC_TRACE_MAX_TEXT);
    return FSC_EXIT_OK;
}
