/*
 * cmd_info.c — `fragscope info`: what a trace holds (header, events by type,
 * the top of the tag tree, chunks and bytes per event) and whether it is
 * whole: a clean close, or truncated with what was lost.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "fsc/utf8.h"
#include "fragscope/recorder.h"

const char fsc_cmd_info_summary[] = "describe a trace: header, events, tags, integrity";
const char fsc_cmd_info_usage[] =
    "usage: fragscope info TRACE.fstrace [--format text|json]\n"
    "\n"
    "Reads the whole trace and prints its header (producer, backend, allocator\n"
    "settings, capacity, start time, pid, rank, host), the number of events of\n"
    "each type, the tag tree's size and its top-level tags with their share of the\n"
    "events, the number of chunks and compressed bytes per event, and the\n"
    "integrity: \"clean close\", or \"truncated\" with the bytes and events lost\n"
    "(a trace whose program was killed still yields every complete chunk), and\n"
    "the recorded entries its producer left out (the native recorder's entries\n"
    "that its block model could not place or that it could not keep), by kind,\n"
    "with the first few.\n"
    "\n"
    "options:\n"
    "  --format F   text (default) or json; JSON keys: events (total),\n"
    "               events_by_type, tags {count, top}, chunks, compressed_bytes,\n"
    "               bytes_per_event, integrity {status, ..., skipped {total,\n"
    "               by_kind, first}}, header fields\n"
    "\n"
    "exit status: 0 ok, 2 the file is missing, not a trace or damaged inside a\n"
    "chunk, or bad options.\n";

#define TOP_TAGS 10    /* top-level tags shown */
#define TOP_CHILDREN 5 /* children shown under each */

typedef struct info {
    const char *path;
    const fsc_trace_header_t *h;
    fsc_trace_reader_t *r;
    uint64_t by_type[FSC_EV__COUNT];
    uint64_t *per_tag; /* subtree totals after scan() */
    uint32_t n_tags;
    uint64_t untagged;
    uint32_t top[TOP_TAGS];
    int n_top;
    fsc_trace_integrity_t in;
} info_t;

/* The (at most max) children of parent with the most events in their
 * subtrees, most first. */
static int top_children(const info_t *s, uint32_t parent, uint32_t *out, int max)
{
    int n = 0;
    for (uint32_t id = parent + 1; id <= s->n_tags; id++) {
        uint32_t p = UINT32_MAX;
        fsc_trace_tag(s->r, id, NULL, NULL, &p);
        if (p != parent)
            continue;
        int pos = n < max ? n++ : max;
        while (pos > 0 && s->per_tag[out[pos - 1]] < s->per_tag[id]) {
            if (pos < max)
                out[pos] = out[pos - 1];
            pos--;
        }
        if (pos < max)
            out[pos] = id;
    }
    return n;
}

static int scan(info_t *s)
{
    fsc_progress_t prog;
    fsc_progress_init(&prog, "reading");
    size_t cap = 0;
    fsc_event_t ev;
    int rc;
    uint64_t n = 0;
    while ((rc = fsc_trace_next(s->r, &ev)) == 1) {
        if (ev.type < FSC_EV__COUNT)
            s->by_type[ev.type]++;
        if (ev.tag >= cap) {
            size_t nc = cap ? cap : 256;
            while (nc <= ev.tag)
                nc *= 2;
            uint64_t *np = realloc(s->per_tag, nc * sizeof *np);
            if (np == NULL)
                return fsc_cli_error("out of memory");
            memset(np + cap, 0, (nc - cap) * sizeof *np);
            s->per_tag = np;
            cap = nc;
        }
        s->per_tag[ev.tag]++;
        if ((++n & 0xffff) == 0) {
            fsc_trace_get_integrity(s->r, &s->in);
            fsc_progress_update(&prog, s->in.compressed_bytes, s->in.file_bytes);
        }
    }
    fsc_progress_done(&prog);
    if (rc < 0)
        return fsc_cli_error("%s", fsc_trace_last_error(s->r));
    fsc_trace_get_integrity(s->r, &s->in);
    s->n_tags = fsc_trace_tag_count(s->r);
    uint64_t *tot = calloc((size_t)s->n_tags + 1, sizeof *tot);
    if (tot == NULL)
        return fsc_cli_error("out of memory");
    for (uint32_t i = 0; i < cap && i <= s->n_tags; i++)
        tot[i] = s->per_tag[i];
    s->untagged = tot[0];
    /* A parent's id is smaller than its children's: one backward pass
     * accumulates every subtree. */
    for (uint32_t id = s->n_tags; id >= 1; id--) {
        uint32_t parent = 0;
        fsc_trace_tag(s->r, id, NULL, NULL, &parent);
        tot[parent] += tot[id];
    }
    free(s->per_tag);
    s->per_tag = tot;
    s->n_top = top_children(s, 0, s->top, TOP_TAGS);
    return 0;
}

static void flags_text(uint32_t f, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s%s", f == 0 ? "none" : "",
             (f & FSC_TRACE_F_CAPACITY_UNKNOWN) ? "capacity-unknown " : "",
             (f & FSC_TRACE_F_RECONSTRUCTED) ? "reconstructed " : "",
             (f & FSC_TRACE_F_RING) ? "ring " : "");
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] == ' ')
        buf[n - 1] = '\0';
}

static void integrity_file_text(const fsc_trace_integrity_t *in, char *buf, size_t cap);

/* The file's state, then what the recorder left out, if anything: a
 * trace closed cleanly is not complete when entries were skipped. */
static void integrity_text(const fsc_trace_integrity_t *in, char *buf, size_t cap)
{
    integrity_file_text(in, buf, cap);
    if (in->skipped.total > 0) {
        size_t n = strlen(buf);
        char sk[1024];
        snprintf(buf + n, cap - n, "; but %s", fsc_trace_skips_text(&in->skipped, sk, sizeof sk));
    }
}

static void integrity_file_text(const fsc_trace_integrity_t *in, char *buf, size_t cap)
{
    if (in->clean_close) {
        snprintf(buf, cap, "clean close");
        return;
    }
    char lost[64];
    fsc_size_format(in->bytes_lost, lost, sizeof lost);
    const char *ev = in->events_lost == 1 ? "event" : "events";
    if (in->events_lost_known)
        snprintf(buf, cap, "truncated: %s after the last complete chunk, %" PRIu64 " %s lost",
                 lost, in->events_lost, ev);
    else if (in->bytes_lost > 0)
        snprintf(buf, cap,
                 "truncated: %s after the last complete chunk, at least %" PRIu64
                 " %s lost (the end record is missing)",
                 lost, in->events_lost, ev);
    else
        snprintf(buf, cap,
                 "truncated: no end record (the program stopped before closing the trace); "
                 "events after the last complete chunk, if any, are lost");
}

static void print_text(const info_t *s)
{
    const fsc_trace_header_t *h = s->h;
    char a[64], b[64], fl[96], when[64];
    time_t secs = (time_t)(h->clock_origin_ns / 1000000000ull);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    flags_text(h->flags, fl, sizeof fl);
    printf("%s\n", s->path);
    printf("  format     %u.%u\n", h->version_major, h->version_minor);
    printf("  producer   %s\n", h->producer[0] ? h->producer : "-");
    printf("  backend    %s\n", h->backend[0] ? h->backend : "-");
    printf("  config     %s\n", h->config[0] ? h->config : "(defaults)");
    printf("  capacity   %s\n", h->capacity ? fsc_size_format(h->capacity, a, sizeof a) : "unknown");
    printf("  device     %s\n",
           h->device_total ? fsc_size_format(h->device_total, b, sizeof b) : "unknown");
    printf("  started    %s\n", when);
    printf("  pid        %u\n", h->pid);
    printf("  rank       %d\n", h->rank);
    printf("  host       %s\n", h->host != NULL ? h->host : "-");
    printf("  flags      %s\n", fl);
    printf("events       %" PRIu64 "\n", s->in.events);
    for (int t = 1; t < FSC_EV__COUNT; t++)
        if (s->by_type[t] > 0)
            printf("  %-16s %" PRIu64 "\n", fsc_event_type_name(t), s->by_type[t]);
    if (s->in.events_dropped > 0)
        printf("  (ring mode: %" PRIu64 " older events were not kept)\n", s->in.events_dropped);
    printf("tags         %u nodes\n", s->n_tags);
    for (int i = 0; i < s->n_top; i++) {
        const char *name;
        size_t len;
        fsc_trace_tag(s->r, s->top[i], &name, &len, NULL);
        double share = s->in.events ? 100.0 * (double)s->per_tag[s->top[i]] / (double)s->in.events : 0;
        printf("  %-24.*s %" PRIu64 " events (%.1f%%)\n", (int)(len > 64 ? 64 : len), name,
               s->per_tag[s->top[i]], share);
        uint32_t kids[TOP_CHILDREN];
        int nk = top_children(s, s->top[i], kids, TOP_CHILDREN);
        for (int k = 0; k < nk; k++) {
            fsc_trace_tag(s->r, kids[k], &name, &len, NULL);
            share = s->in.events ? 100.0 * (double)s->per_tag[kids[k]] / (double)s->in.events : 0;
            printf("    %-22.*s %" PRIu64 " events (%.1f%%)\n", (int)(len > 64 ? 64 : len), name,
                   s->per_tag[kids[k]], share);
        }
    }
    if (s->n_tags > 0)
        printf("  %-24s %" PRIu64 " events\n", "(untagged)", s->untagged);
    double bpe = s->in.events ? (double)s->in.compressed_bytes / (double)s->in.events : 0;
    printf("chunks       %" PRIu64 ", %s compressed, %.2f bytes/event\n", s->in.chunks,
           fsc_size_format(s->in.compressed_bytes, a, sizeof a), bpe);
    char integ[1536];
    integrity_text(&s->in, integ, sizeof integ);
    printf("integrity    %s\n", integ);
    for (uint32_t i = 0; i < s->in.skipped.nshown; i++) {
        char line[512];
        printf("  %s %s\n", i == 0 ? "first:" : "      ",
               fsc_trace_skip_describe(&s->in.skipped.shown[i], line, sizeof line));
    }
}

/* Exact integers: cJSON numbers are doubles, which round above 2^53. */
static void add_u64(cJSON *o, const char *key, uint64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    cJSON_AddRawToObject(o, key, b);
}

static int print_json(const info_t *s)
{
    const fsc_trace_header_t *h = s->h;
    cJSON *o = cJSON_CreateObject();
    char ver[32];
    snprintf(ver, sizeof ver, "%u.%u", h->version_major, h->version_minor);
    cJSON_AddStringToObject(o, "path", s->path);
    cJSON_AddStringToObject(o, "format", ver);
    cJSON_AddStringToObject(o, "producer", h->producer);
    cJSON_AddStringToObject(o, "backend", h->backend);
    cJSON_AddStringToObject(o, "config", h->config);
    add_u64(o, "capacity", h->capacity);
    add_u64(o, "device_total", h->device_total);
    add_u64(o, "clock_origin_ns", h->clock_origin_ns);
    cJSON_AddNumberToObject(o, "pid", h->pid);
    if (h->host != NULL)
        cJSON_AddStringToObject(o, "host", h->host);
    else
        cJSON_AddNullToObject(o, "host");
    cJSON_AddNumberToObject(o, "rank", h->rank);
    cJSON *fl = cJSON_AddArrayToObject(o, "flags");
    if (h->flags & FSC_TRACE_F_CAPACITY_UNKNOWN)
        cJSON_AddItemToArray(fl, cJSON_CreateString("capacity-unknown"));
    if (h->flags & FSC_TRACE_F_RECONSTRUCTED)
        cJSON_AddItemToArray(fl, cJSON_CreateString("reconstructed"));
    if (h->flags & FSC_TRACE_F_RING)
        cJSON_AddItemToArray(fl, cJSON_CreateString("ring"));
    add_u64(o, "events", s->in.events);
    cJSON *bt = cJSON_AddObjectToObject(o, "events_by_type");
    for (int t = 1; t < FSC_EV__COUNT; t++)
        add_u64(bt, fsc_event_type_name(t), s->by_type[t]);
    cJSON *tags = cJSON_AddObjectToObject(o, "tags");
    cJSON_AddNumberToObject(tags, "count", s->n_tags);
    add_u64(tags, "untagged_events", s->untagged);
    cJSON *top = cJSON_AddArrayToObject(tags, "top");
    for (int i = 0; i < s->n_top; i++) {
        char path[512];
        fsc_trace_tag_path(s->r, s->top[i], path, sizeof path);
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", path);
        add_u64(t, "events", s->per_tag[s->top[i]]);
        cJSON *ch = cJSON_AddArrayToObject(t, "children");
        uint32_t kids[TOP_CHILDREN];
        int nk = top_children(s, s->top[i], kids, TOP_CHILDREN);
        for (int k = 0; k < nk; k++) {
            fsc_trace_tag_path(s->r, kids[k], path, sizeof path);
            cJSON *c = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "name", path);
            add_u64(c, "events", s->per_tag[kids[k]]);
            cJSON_AddItemToArray(ch, c);
        }
        cJSON_AddItemToArray(top, t);
    }
    add_u64(o, "chunks", s->in.chunks);
    add_u64(o, "compressed_bytes", s->in.compressed_bytes);
    add_u64(o, "file_bytes", s->in.file_bytes);
    cJSON_AddNumberToObject(o, "bytes_per_event",
                            s->in.events ? (double)s->in.compressed_bytes / (double)s->in.events
                                         : 0.0);
    cJSON *ig = cJSON_AddObjectToObject(o, "integrity");
    char integ[1536];
    integrity_text(&s->in, integ, sizeof integ);
    cJSON_AddStringToObject(ig, "status", s->in.clean_close ? "clean" : "truncated");
    cJSON_AddStringToObject(ig, "summary", integ);
    cJSON_AddBoolToObject(ig, "clean_close", s->in.clean_close);
    add_u64(ig, "bytes_lost", s->in.bytes_lost);
    add_u64(ig, "events_lost", s->in.events_lost);
    cJSON_AddBoolToObject(ig, "events_lost_known", s->in.events_lost_known);
    add_u64(ig, "events_dropped", s->in.events_dropped);
    /* what the recorder left out (a SKIPPED record): total, by kind, the first */
    cJSON *sk = cJSON_AddObjectToObject(ig, "skipped");
    add_u64(sk, "total", s->in.skipped.total);
    cJSON *bk = cJSON_AddObjectToObject(sk, "by_kind");
    for (uint32_t k = 0; k < FSC_TRACE_SKIP_KINDS; k++)
        add_u64(bk, fsc_trace_skip_kind_name(k), s->in.skipped.by_kind[k]);
    cJSON *fa = cJSON_AddArrayToObject(sk, "first");
    for (uint32_t i = 0; i < s->in.skipped.nshown; i++) {
        const fsc_trace_skip_t *k = &s->in.skipped.shown[i];
        cJSON *e = cJSON_CreateObject();
        char line[512];
        cJSON_AddStringToObject(e, "kind", fsc_trace_skip_kind_name(k->kind));
        add_u64(e, "action", k->action);
        add_u64(e, "device", k->device);
        if (k->index != UINT64_MAX)
            add_u64(e, "index", k->index);
        add_u64(e, "addr", k->addr);
        add_u64(e, "size", k->size);
        cJSON_AddStringToObject(e, "text", fsc_trace_skip_describe(k, line, sizeof line));
        cJSON_AddItemToArray(fa, e);
    }
    char *txt = cJSON_Print(o);
    cJSON_Delete(o);
    char *clean = NULL; /* names from the trace as UTF-8 (fsc/utf8.h) */
    if (txt != NULL)
        fsc__utf8_sanitize(txt, strlen(txt), &clean, NULL, NULL);
    cJSON_free(txt);
    if (clean == NULL)
        return fsc_cli_error("out of memory");
    printf("%s\n", clean);
    free(clean);
    return 0;
}

int fsc_cmd_info(int argc, char **argv)
{
    const char *path = NULL, *format = "text";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--format") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("info", "--format needs a value");
            format = argv[i];
        } else if (strncmp(a, "--format=", 9) == 0) {
            format = a + 9;
        } else if (a[0] == '-' && a[1] != '\0') {
            return fsc_cli_usage_error("info", "unknown option '%s'", a);
        } else if (path == NULL) {
            path = a;
        } else {
            return fsc_cli_usage_error("info", "one trace at a time ('%s' and '%s')", path, a);
        }
    }
    if (path == NULL)
        return fsc_cli_usage_error("info", "no trace given");
    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)
        return fsc_cli_usage_error("info", "--format: '%s' is neither text nor json", format);
    info_t s;
    memset(&s, 0, sizeof s);
    s.path = path;
    fsc_err_t err;
    fsc_err_clear(&err);
    int rc = fsc_trace_open(path, &s.r, &err);
    if (rc != 0)
        return fsc_cli_error("%s", fsc_err_msg(&err));
    s.h = fsc_trace_header(s.r);
    rc = scan(&s);
    if (rc == 0)
        rc = strcmp(format, "json") == 0 ? print_json(&s) : (print_text(&s), 0);
    free(s.per_tag);
    fsc_trace_close(s.r);
    return rc;
}
