/*
 * analyze_file.c — a file in, a run database out (fsc_analyze_file): the
 * source (fragscope/source.h) feeds the analysis, and what reading found
 * (a trace's integrity, a snapshot's import figures) goes into meta.
 */
#include <stdio.h>
#include <string.h>

#include "fragscope/analyzer.h"
#include "fragscope/source.h"

typedef struct job {
    const char *in_path, *out_path;
    fsc_analysis_opts_t ao;
    uint64_t capacity, device_memory;
    fsc_analysis_t *a;
} job_t;

/* The analysis' message (it names the event) as the error. */
static int from_analysis(job_t *j, int rc, fsc_err_t *err)
{
    return fsc_err_set(err, rc, "%s", fsc_analysis_last_error(j->a));
}

static int on_header(void *ud, const fsc_trace_header_t *hdr, fsc_err_t *err)
{
    job_t *j = ud;
    fsc_trace_header_t h = *hdr;
    if (j->capacity != 0) {
        h.capacity = j->capacity;
        h.flags &= ~FSC_TRACE_F_CAPACITY_UNKNOWN;
    }
    if (j->device_memory != 0)
        h.device_total = j->device_memory;
    return fsc_analysis_create(j->out_path, &h, &j->ao, &j->a, err);
}

static int on_tag(void *ud, uint32_t node, uint32_t parent, const char *name, size_t len,
                  fsc_err_t *err)
{
    job_t *j = ud;
    int rc = fsc_analysis_define_tag(j->a, node, parent, name, len);
    return rc != 0 ? from_analysis(j, rc, err) : 0;
}

static int on_event(void *ud, const fsc_event_t *ev, fsc_err_t *err)
{
    job_t *j = ud;
    int rc = fsc_analysis_feed(j->a, ev);
    return rc != 0 ? from_analysis(j, rc, err) : 0;
}

/* What the recorder left out of the trace (a SKIPPED record, docs/schema.md
 * "recorder.skipped"): the total always, each kind met, the summary line
 * and the first entries described. */
static void put_skipped(fsc_analysis_t *a, const fsc_trace_skips_t *s)
{
    fsc_analysis_set_meta_int(a, "recorder.skipped", (int64_t)s->total);
    if (s->total == 0)
        return;
    char key[64], line[1024];
    for (uint32_t k = 0; k < FSC_TRACE_SKIP_KINDS; k++) {
        if (s->by_kind[k] == 0)
            continue;
        snprintf(key, sizeof key, "recorder.skipped.%s", fsc_trace_skip_kind_name(k));
        fsc_analysis_set_meta_int(a, key, (int64_t)s->by_kind[k]);
    }
    fsc_analysis_set_meta_text(a, "recorder.skipped_text", fsc_trace_skips_text(s, line, sizeof line));
    char first[FSC_TRACE_SKIP_SHOWN * 200] = "";
    size_t at = 0;
    for (uint32_t i = 0; i < s->nshown && at < sizeof first; i++) {
        int w = snprintf(first + at, sizeof first - at, "%s%s", i ? "\n" : "",
                         fsc_trace_skip_describe(&s->shown[i], line, sizeof line));
        at = w > 0 ? at + (size_t)w : at;
    }
    fsc_analysis_set_meta_text(a, "recorder.skipped_first", first);
}

static void put_meta(fsc_analysis_t *a, const fsc_source_info_t *in)
{
    if (in->kind == FSC_SOURCE_TRACE && in->have_integrity) {
        const fsc_trace_integrity_t *g = &in->integrity;
        fsc_analysis_set_meta_int(a, "integrity.clean_close", g->clean_close);
        fsc_analysis_set_meta_int(a, "integrity.chunks", (int64_t)g->chunks);
        fsc_analysis_set_meta_int(a, "integrity.file_bytes", (int64_t)g->file_bytes);
        fsc_analysis_set_meta_int(a, "integrity.bytes_lost", (int64_t)g->bytes_lost);
        fsc_analysis_set_meta_int(a, "integrity.events_lost", (int64_t)g->events_lost);
        fsc_analysis_set_meta_int(a, "integrity.events_lost_known", g->events_lost_known);
        put_skipped(a, &g->skipped);
    } else if (in->kind == FSC_SOURCE_SNAPSHOT) {
        const fsc_import_stats_t *st = &in->import;
        fsc_analysis_set_meta_int(a, "import.device", st->device);
        fsc_analysis_set_meta_int(a, "import.entries", (int64_t)st->entries);
        fsc_analysis_set_meta_int(a, "import.reconstructed", st->reconstructed);
        fsc_analysis_set_meta_int(a, "import.warnings", (int64_t)st->warnings);
        if (st->warnings > 0)
            fsc_analysis_set_meta_text(a, "import.first_warning", st->first_warning);
        fsc_analysis_set_meta_int(a, "import.devices", st->devices);
        fsc_analysis_set_meta_int(a, "import.unknown_actions", (int64_t)st->unknown_actions);
        fsc_analysis_set_meta_int(a, "import.unknown_keys", (int64_t)st->unknown_keys);
        fsc_analysis_set_meta_int(a, "import.records", (int64_t)st->meta_records);
        if (st->unknown_actions || st->unknown_keys)
            fsc_analysis_set_meta_text(a, "import.not_understood", st->not_understood);
        if (st->keys_not_modelled[0])
            fsc_analysis_set_meta_text(a, "import.keys_not_modelled", st->keys_not_modelled);
        if (st->torch_inferred[0])
            fsc_analysis_set_meta_text(a, "import.torch_inferred", st->torch_inferred);
    }
}

/* Which file the error is about: the output when its message names it
 * (the store and the output file name it), else the input, named in front
 * when the message does not start with it. */
static const char *name_file(const job_t *j, fsc_err_t *err)
{
    size_t no = strlen(j->out_path);
    if (strncmp(err->msg, j->in_path, strlen(j->in_path)) != 0 && no > 0 &&
        strncmp(err->msg, j->out_path, no) == 0)
        return j->out_path;
    fsc_err_name_file(err, j->in_path);
    return j->in_path;
}

int fsc_analyze_file(const char *in_path, const char *out_path, const fsc_analyze_opts_t *opts,
                     fsc_analysis_summary_t *sum, struct fsc_source_info *info, fsc_err_t *err)
{
    if (in_path == NULL || out_path == NULL)
        return fsc_err_set(err, FSC_EINVAL, "no input or output path");
    fsc_analyze_opts_t o;
    memset(&o, 0, sizeof o);
    if (opts != NULL)
        o = *opts;
    job_t j = {in_path, out_path, o.analysis, o.capacity, o.device_memory, NULL};
    j.ao.source_path = in_path;
    fsc_source_opts_t so;
    memset(&so, 0, sizeof so);
    so.lenient = j.ao.lenient;
    so.pick_device = o.pick_device;
    so.device = o.device;
    so.skip_entries = o.skip_entries;
    so.sizes = o.sizes;
    so.nsizes = o.nsizes;
    so.keep_records = 1; /* table pytorch_meta */
    so.progress = o.progress;
    so.progress_ud = o.progress_ud;
    fsc_source_t *src = NULL;
    fsc_source_info_t in;
    memset(&in, 0, sizeof in);
    int rc = fsc_source_open(in_path, &so, &src, err);
    if (rc == 0) {
        j.ao.source_kind = fsc_source_kind(src) == FSC_SOURCE_SNAPSHOT ? "pytorch_snapshot"
                                                                       : "trace";
        fsc_source_sink_t sink = {&j, on_header, on_tag, on_event};
        rc = fsc_source_run(src, &sink, err);
        fsc_source_info(src, &in);
    }
    if (rc == 0)
        put_meta(j.a, &in);
    fsc_analysis_summary_t s;
    memset(&s, 0, sizeof s);
    if (rc == 0 && (rc = fsc_analysis_finish(j.a, &s)) != 0)
        from_analysis(&j, rc, err);
    fsc_analysis_destroy(j.a);
    fsc_source_close(src);
    if (rc != 0)
        in.error_file = name_file(&j, err);
    if (info != NULL)
        *info = in;
    if (rc != 0)
        return rc;
    if (sum != NULL)
        *sum = s;
    return 0;
}
