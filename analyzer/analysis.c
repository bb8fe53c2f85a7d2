/*
 * analysis.c — the public face of the analysis and the driver of its
 * sequence: for each event, the replay (replay.c) applies it, the rows it
 * finished are folded (rows.c) and handed to the store (store.c), an OOM is
 * diagnosed (oom.c) and stored, the timeline (timeline.c) samples the
 * figures; at the end the derived tables (finish.c) go to the store and the
 * file is committed. Also here: tag names, meta rows, and the choice
 * between failing on a contradicting event and keeping it as a warning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "fragscope/allocator.h"
#include "pymeta.h"
#include "report/run_facts.h"
#include "fsc/vec.h"

#define MAX_TAG_ID (1u << 26)
#define MAX_WARNINGS_STORED 1000

/* A tag node: its parent and its own name ("" for the root). Paths are
 * never stored: a tree 20 000 deep would hold 20 000 paths averaging
 * 10 000 names (run.db's readers walk the parent links instead). */
typedef struct fsc__tagname {
    uint32_t parent;
    uint8_t defined;
    uint32_t len;
    char *name; /* malloc'd */
} fsc__tagname_t;

typedef struct fsc__kv {
    struct fsc__kv *next;
    char *key;
    char *text;          /* NULL: integer */
    int64_t ival;
} fsc__kv_t;

struct fsc_analysis {
    fsc_err_t err;
    int failed, finished;
    fsc_analysis_opts_t opts;
    fsc_outfile_t out;
    fsc__store_t *store;

    /* run facts */
    char *producer, *config, *backend, *source_path, *source_kind;
    char *host; /* the option's, else the header's; NULL = unknown */
    fsc_trace_header_t hdr;
    fsc__oom_run_t run;
    uint64_t first_time, max_time; /* smallest and largest event time */
    uint64_t type_count[FSC_EV__COUNT];
    uint64_t warnings, num_ooms;
    int first_oom_cause;
    /* DEVICE_MEMORY samples: how many, the largest memory outside the
     * allocator (total − free − reserved) and its event */
    uint64_t dev_samples, ext_max, ext_max_seq;
    int ext_known;
    /* A recording that began mid-run (FSC_TRACE_F_RECONSTRUCTED): its
     * first events are the rebuilt starting state, up to the history
     * marker; window_seq is that marker's seq (-1 while in the state). */
    int window;
    int64_t window_seq;
    uint64_t window_reserved, window_allocated;
    fsc__tagname_t *names;
    size_t nnames;                 /* entries allocated in names[] */
    fsc__kv_t *meta;

    /* the parts */
    fsc__replay_t rp;
    fsc__timeline_t tl;
    fsc__rows_t rows;
    fsc__outcome_t outcome;        /* of the event being fed */
    fsc__rowsout_t rowsout;        /* its rows */
    fsc__oom_t *oom;               /* diagnosis being stored; allocated at the first OOM */
    fsc__pymeta_t pymeta;          /* records of imported snapshots */
};

fsc__replay_t *fsc__analysis_replay(fsc_analysis_t *a)
{
    return &a->rp;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* Errors of the parts become the analysis' error. */
static int from_store(fsc_analysis_t *a, int rc)
{
    if (rc != 0)
        fsc_err_copy(&a->err, fsc__store_err(a->store));
    return rc;
}

static int from_replay(fsc_analysis_t *a, int rc)
{
    if (rc != 0)
        fsc_err_copy(&a->err, &a->rp.err);
    return rc;
}

/* An event the replay skipped: an error, or in a lenient run a counted
 * warning stored with the event's number and what contradicted it. */
static int skipped(fsc_analysis_t *a, const fsc_event_t *ev, const char *why)
{
    char msg[FSC_ERR_MSG_MAX];
    const char *tn = fsc_event_type_name(ev->type);
    switch (ev->type) {
    case FSC_EV_OOM:
    case FSC_EV_EMPTY_CACHE:
    case FSC_EV_GC:
    case FSC_EV_MARKER:
    case FSC_EV_DEVICE_MEMORY:
        snprintf(msg, sizeof msg, "event %llu (%s): %s", (unsigned long long)a->rp.seq, tn, why);
        break;
    default:
        snprintf(msg, sizeof msg, "event %llu (%s at 0x%llx): %s", (unsigned long long)a->rp.seq,
                 tn, (unsigned long long)ev->addr, why);
        break;
    }
    if (!a->opts.lenient)
        return fsc_err_set(&a->err, FSC_ESTATE, "%s", msg);
    if (a->warnings++ < MAX_WARNINGS_STORED)
        return from_store(a, fsc__store_warning(a->store, a->rp.seq, msg));
    return 0;
}

static int names_grow(fsc_analysis_t *a, uint32_t id)
{
    if (id < a->nnames)
        return 0;
    if (id >= MAX_TAG_ID)
        return fsc_err_set(&a->err, FSC_ELIMIT, "tag id %u is too large", id);
    if (fsc__vec_reserve_zero(&a->names, &a->nnames, (size_t)id + 1, sizeof *a->names) != 0)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for tags");
    return 0;
}

static int tag_store(fsc_analysis_t *a, uint32_t node, uint32_t parent, const char *name,
                     size_t len)
{
    if (len > UINT32_MAX)
        return fsc_err_set(&a->err, FSC_ELIMIT, "tag name too long");
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for tags");
    if (len > 0)
        memcpy(copy, name, len);
    copy[len] = '\0';
    fsc__tagname_t *t = &a->names[node];
    free(t->name);
    t->name = copy;
    t->len = (uint32_t)len;
    t->parent = parent;
    t->defined = 1;
    return from_store(a, fsc__store_tag(a->store, node, parent, name, len));
}

static int tag_ensure(fsc_analysis_t *a, uint32_t tag)
{
    if (tag < a->nnames && a->names[tag].defined)
        return 0;
    int rc = names_grow(a, tag);
    if (rc != 0)
        return rc;
    char name[24];
    int n = snprintf(name, sizeof name, "#%u", tag);
    return tag_store(a, tag, 0, name, (size_t)n);
}

int fsc_analysis_define_tag(fsc_analysis_t *a, uint32_t node, uint32_t parent,
                            const char *name, size_t len)
{
    if (a == NULL || (name == NULL && len > 0))
        return FSC_EINVAL;
    if (a->failed || a->finished)
        return fsc_err_set(&a->err, FSC_EINVAL, "analysis already ended");
    if (node == 0)
        return 0; /* the root is fixed */
    if (node == parent)
        return fsc_err_set(&a->err, FSC_EFORMAT, "tag %u is its own parent", node);
    int rc = names_grow(a, node > parent ? node : parent);
    if (rc == 0)
        rc = tag_ensure(a, parent);
    if (rc != 0)
        return rc;
    if (name == NULL)
        name = "";
    fsc__tagname_t *t = &a->names[node];
    if (t->defined && t->parent == parent && t->len == len &&
        (len == 0 || memcmp(t->name, name, len) == 0))
        return 0; /* same definition again */
    return tag_store(a, node, parent, name, len);
}

int fsc_analysis_create(const char *db_path, const fsc_trace_header_t *hdr,
                        const fsc_analysis_opts_t *opts, fsc_analysis_t **out,
                        fsc_err_t *err)
{
    if (out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "no output handle");
    *out = NULL;
    fsc_analysis_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    fsc_analysis_opts_t def = FSC_ANALYSIS_OPTS_DEFAULT;
    a->opts = opts ? *opts : def;
    fsc_trace_header_t h0;
    memset(&h0, 0, sizeof h0);
    if (hdr == NULL) {
        h0.rank = -1;
        hdr = &h0;
    }
    a->hdr = *hdr;
    a->producer = dup_or_empty(hdr->producer);
    a->config = dup_or_empty(hdr->config);
    a->backend = dup_or_empty(hdr->backend);
    a->source_path = dup_or_empty(a->opts.source_path);
    a->source_kind = dup_or_empty(a->opts.source_kind ? a->opts.source_kind : "api");
    a->hdr.producer = a->producer;
    a->hdr.config = a->config;
    a->hdr.backend = a->backend;
    const char *host = a->opts.host != NULL ? a->opts.host : hdr->host;
    if (host != NULL && host[0] != '\0')
        a->host = strdup(host);
    a->hdr.host = a->host;
    a->opts.host = a->host;
    a->opts.source_path = a->source_path;
    a->opts.source_kind = a->source_kind;
    a->run.capacity_unknown = (hdr->flags & FSC_TRACE_F_CAPACITY_UNKNOWN) || hdr->capacity == 0;
    a->run.capacity = hdr->capacity;
    a->run.device_total = hdr->device_total;
    /* A ring trace keeps only the last events before each write: it starts
     * mid-run and has gaps, so contradictions are expected, not errors. */
    a->run.ring = (hdr->flags & FSC_TRACE_F_RING) != 0;
    a->window = (hdr->flags & FSC_TRACE_F_RECONSTRUCTED) != 0;
    a->window_seq = -1;
    if (a->run.ring)
        a->opts.lenient = 1;
    a->first_oom_cause = -1;
    fsc__replay_init(&a->rp);
    int rc = 0;
    if (!a->producer || !a->config || !a->backend || !a->source_path || !a->source_kind ||
        (host != NULL && host[0] != '\0' && a->host == NULL))
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    if (rc == 0)
        rc = fsc_outfile_init(&a->out, db_path, &a->err);
    if (rc == 0)
        a->out.no_sync = a->opts.no_sync;
    if (rc == 0 && fsc__timeline_init(&a->tl, a->opts.timeline_samples) != 0)
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    if (rc == 0)
        rc = fsc__store_open(a->out.tmp_path, a->out.path, &a->store, &a->err);
    if (rc == 0)
        rc = names_grow(a, 0);
    if (rc == 0)
        rc = tag_store(a, 0, 0, "", 0);
    if (rc != 0) {
        fsc_err_copy(err, &a->err);
        fsc_analysis_destroy(a);
        return rc;
    }
    *out = a;
    return 0;
}

/* Who pins the hard bytes of a layout, stored. */
static int frag_pins(fsc_analysis_t *a, const char *point, int64_t oom_id, uint64_t seq,
                     const fsc__imgvec_t *v, uint64_t ask)
{
    fsc__frag_pins_t *p = malloc(sizeof *p);
    int rc = p == NULL ? FSC_ENOMEM : fsc__frag_pins(v->v, v->n, ask, seq, p);
    if (rc != 0)
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for the hard pinning blocks");
    else
        rc = from_store(a, fsc__store_frag_pins(a->store, point, oom_id, p));
    free(p);
    return rc;
}

/* The OOM event being fed: its diagnosis and, for the first ones, the
 * layout it happened in. */
static int diagnose(fsc_analysis_t *a, const fsc_event_t *ev)
{
    if (a->oom == NULL && (a->oom = malloc(sizeof *a->oom)) == NULL)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory diagnosing an OOM");
    uint64_t id = a->num_ooms++;
    int rc = fsc__oom_diagnose(&a->rp, &a->run, ev, id, a->oom);
    if (rc != 0)
        return fsc_err_set(&a->err, rc, "out of memory diagnosing an OOM");
    if (id == 0)
        a->first_oom_cause = a->oom->cause;
    fsc__imgvec_t cur = {0};
    if (a->oom->has_snapshot)
        rc = from_replay(a, fsc__layout_current(&a->rp, &cur));
    if (rc == 0)
        rc = from_store(a, fsc__store_oom(a->store, a->oom, &cur));
    /* where reserved − allocated sat, for the stream that asked */
    fsc__frag_point_t fp;
    fsc__frag_oom(&a->rp, ev->stream, ev->time_ns, &fp);
    if (rc == 0)
        rc = from_store(a, fsc__store_frag_point(a->store, "oom", (int64_t)id, &fp));
    if (rc == 0 && a->oom->has_snapshot)
        rc = frag_pins(a, "oom", (int64_t)id, a->rp.seq, &cur, ev->stream);
    fsc__imgvec_free(&cur);
    return rc;
}

int fsc_analysis_feed(fsc_analysis_t *a, const fsc_event_t *ev)
{
    if (a == NULL || ev == NULL)
        return FSC_EINVAL;
    if (a->failed || a->finished)
        return fsc_err_set(&a->err, FSC_EINVAL, "analysis already ended");
    int mrc = fsc__pymeta_feed(&a->pymeta, a->store, a->rp.seq, ev, &a->err);
    if (mrc < 0) {
        a->failed = 1;
        if (a->err.code == 0)
            from_store(a, mrc);
        return mrc;
    }
    if (mrc > 0)
        return 0; /* a pytorch.* record, not an event */
    if (a->window && a->window_seq < 0 && ev->type == FSC_EV_MARKER && ev->text != NULL &&
        ev->text_len == sizeof FSC_TRACE_HISTORY_MARKER - 1 &&
        memcmp(ev->text, FSC_TRACE_HISTORY_MARKER, ev->text_len) == 0) {
        a->window_seq = (int64_t)a->rp.seq;
        a->window_reserved = a->rp.reserved;
        a->window_allocated = a->rp.allocated;
    }
    /* Reconstructed starts of imported runs may sit at time 0 after later
     * events; the duration spans the smallest and largest time seen. */
    if (a->rp.seq == 0 || ev->time_ns < a->first_time)
        a->first_time = ev->time_ns;
    if (a->rp.seq == 0 || ev->time_ns > a->max_time)
        a->max_time = ev->time_ns;
    fsc__outcome_t *o = &a->outcome;
    a->rowsout.n = 0;
    int rc = tag_ensure(a, ev->tag);
    fsc__timeline_before(&a->tl, &a->rp, ev->type);
    if (rc == 0) {
        fsc__rows_before(&a->rows, &a->rp, ev, &a->rowsout);
        rc = from_replay(a, fsc__replay_apply(&a->rp, ev, o));
    }
    if (rc == 0 && !o->applied)
        rc = skipped(a, ev, o->why);
    if (rc == 0 && o->applied && ev->type == FSC_EV_OOM)
        rc = diagnose(a, ev);
    if (rc == 0) {
        fsc__rows_event(&a->rows, &a->rp, ev, o, &a->rowsout);
        rc = from_store(a, fsc__store_ops(a->store, &a->rowsout));
    }
    if (rc == 0 && ev->type == FSC_EV_MARKER)
        rc = from_store(a, fsc__store_marker(a->store, a->rp.seq, ev->time_ns, ev->text,
                                             ev->text_len));
    if (rc == 0 && ev->type == FSC_EV_DEVICE_MEMORY) {
        uint64_t fr = ev->oom.device_free, tot = ev->oom.device_total, rs = a->rp.reserved;
        a->dev_samples++;
        if (fr != UINT64_MAX && tot != 0) {
            uint64_t x = tot > fr + rs ? tot - fr - rs : 0;
            if (!a->ext_known || x > a->ext_max) {
                a->ext_max = x;
                a->ext_max_seq = a->rp.seq;
            }
            a->ext_known = 1;
        }
        rc = from_store(a, fsc__store_device_sample(a->store, a->rp.seq, ev->time_ns, fr, tot, rs));
    }
    if (rc != 0) {
        a->failed = 1;
        return rc;
    }
    if (ev->type < FSC_EV__COUNT)
        a->type_count[ev->type]++;
    fsc__timeline_event(&a->tl, &a->rp, ev->time_ns);
    a->rp.seq++;
    return 0;
}

static int kv_set(fsc_analysis_t *a, const char *key, const char *text, int64_t ival)
{
    if (a == NULL || key == NULL)
        return FSC_EINVAL;
    fsc__kv_t *kv = a->meta;
    while (kv != NULL && strcmp(kv->key, key) != 0)
        kv = kv->next;
    if (kv == NULL) {
        kv = calloc(1, sizeof *kv);
        if (kv == NULL || (kv->key = strdup(key)) == NULL) {
            free(kv);
            return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
        }
        kv->next = a->meta;
        a->meta = kv;
    }
    free(kv->text);
    kv->text = NULL;
    if (text != NULL && (kv->text = strdup(text)) == NULL)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    kv->ival = ival;
    return 0;
}

int fsc_analysis_set_meta_int(fsc_analysis_t *a, const char *key, int64_t value)
{
    return kv_set(a, key, NULL, value);
}

int fsc_analysis_set_meta_text(fsc_analysis_t *a, const char *key, const char *value)
{
    return kv_set(a, key, value ? value : "", 0);
}

const char *fsc_analysis_last_error(const fsc_analysis_t *a)
{
    return a ? fsc_err_msg(&a->err) : "no analysis";
}

static int write_meta(fsc_analysis_t *a)
{
    char buf[64];
    int rc = 0;
    const fsc_trace_header_t *h = &a->hdr;
    fsc__store_t *s = a->store;
    snprintf(buf, sizeof buf, "%u.%u", h->version_major, h->version_minor);
#define MT(k, t) if (rc == 0) rc = fsc__store_meta(s, (k), (t), 0)
#define MI(k, i) if (rc == 0) rc = fsc__store_meta(s, (k), NULL, (int64_t)(i))
    MI("schema_version", FSC_DB_SCHEMA_VERSION);
    MT("fragscope_version", FSC_VERSION_STRING);
    MT("producer", a->producer);
    MT("config", a->config);
    char unmodelled[256];
    if (fsc_alloc_config_unmodelled_str(a->config, unmodelled, sizeof unmodelled) > 0)
        MT("settings.not_modelled", unmodelled);
    MT("backend", a->backend);
    MI("capacity", a->run.capacity_unknown ? 0 : h->capacity);
    MI("capacity_inferred", a->run.capacity_unknown);
    MI("device_total", h->device_total);
    MI("clock_origin_ns", h->clock_origin_ns);
    MI("pid", h->pid);
    MI("rank", h->rank);
    if (a->host != NULL)
        MT("host", a->host);
    MI("trace_flags", h->flags);
    MT("trace_version", buf);
    MT("source_path", a->source_path);
    MT("source_kind", a->source_kind);
    MI("lenient", a->opts.lenient ? 1 : 0);
    MI("warnings", a->warnings);
    MI("events_total", a->rp.seq);
    MI("timeline_bucket_events", a->tl.width);
    MI("device_samples", a->dev_samples);
    if (a->window) {
        /* no history marker: the whole recording is the starting state */
        MI("window.first_seq", a->window_seq >= 0 ? a->window_seq : (int64_t)a->rp.seq);
        MI("window.start_reserved", a->window_seq >= 0 ? a->window_reserved : a->rp.reserved);
        MI("window.start_allocated", a->window_seq >= 0 ? a->window_allocated : a->rp.allocated);
    }
    if (a->ext_known) {
        MI("external_max_bytes", a->ext_max);
        MI("external_max_seq", a->ext_max_seq);
    }
    for (int t = 1; t < FSC_EV__COUNT; t++) {
        if (a->type_count[t] == 0)
            continue;
        snprintf(buf, sizeof buf, "events.%s", fsc_event_type_name(t));
        MI(buf, a->type_count[t]);
    }
    for (const fsc__kv_t *kv = a->meta; kv != NULL && rc == 0; kv = kv->next)
        rc = fsc__store_meta(s, kv->key, kv->text, kv->ival);
    /* the runs row (run 0): rank from the caller, the header or the file
     * name, said in meta.rank_source */
    int64_t rank = -1, name_rank = -1;
    const char *rank_source = NULL;
    if (a->opts.has_rank && a->opts.rank >= 0) {
        rank = a->opts.rank;
        rank_source = "option";
    } else if (h->rank >= 0) {
        rank = h->rank;
        rank_source = "trace header";
    } else if (fsc_rundb_rank_from_name(a->source_path, &name_rank)) {
        rank = name_rank;
        rank_source = "file name";
    }
    if (rank_source != NULL)
        MT("rank_source", rank_source);
    int64_t device = fsc__run_device_from_backend(a->backend);
    for (const fsc__kv_t *kv = a->meta; kv != NULL; kv = kv->next)
        if (strcmp(kv->key, "import.device") == 0 && kv->text == NULL)
            device = kv->ival;
    if (rc == 0)
        rc = fsc__store_run(s, rank, device == FSC_RUNDB_NULL ? -1 : device, a->host, h->pid,
                            a->source_path, fsc__run_kind(a->source_kind));
#undef MT
#undef MI
    return from_store(a, rc);
}

static int emit_op(void *ud, const fsc__op_t *op)
{
    return fsc__store_op(ud, op);
}

/* The tables derived once the stream has ended. */
static int finish_tables(fsc_analysis_t *a, fsc_analysis_summary_t *sum)
{
    fsc__replay_t *r = &a->rp;
    fsc__store_t *s = a->store;
    fsc__replay_end(r);
    a->rowsout.n = 0;
    fsc__rows_flush(&a->rows, &a->rowsout);
    int rc = from_store(a, fsc__store_ops(s, &a->rowsout));
    fsc__timeline_end(&a->tl, r);
    for (size_t i = 0; i < a->tl.n && rc == 0; i++) {
        fsc__tlrow_t row;
        fsc__timeline_row(&a->tl, i, &row);
        rc = from_store(a, fsc__store_timeline(s, &row));
    }
    for (size_t i = 0; i < a->tl.n && rc == 0; i++) {
        fsc__tlrow_t row;
        fsc__timeline_row(&a->tl, i, &row);
        rc = from_store(a, fsc__store_timeline_external(s, &row));
    }
    if (rc == 0 && r->peak_allocated > 0 && r->peak_tracking)
        rc = from_replay(a, fsc__peak_materialize(r));
    fsc__peak_t p;
    memset(&p, 0, sizeof p);
    if (rc == 0 && fsc__peak_facts(r, &p) != 0)
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    if (rc == 0 && r->peak_allocated > 0)
        rc = from_store(a, fsc__store_layout(s, "peak_allocated", r->peak_allocated_seq,
                                             r->peak_allocated_time, -1, r->peak_allocated,
                                             p.reserved, &r->peak_layout, NULL));
    fsc__run_counts_t c = {
        .events = r->seq, .first_time = a->first_time, .max_time = a->max_time,
        .warnings = a->warnings, .num_ooms = a->num_ooms,
        .first_oom_cause = a->first_oom_cause, .type_count = a->type_count,
    };
    if (rc == 0)
        rc = from_store(a, fsc__rows_live(r, emit_op, s, &c.leaked_blocks, &c.leaked_bytes));
    if (rc == 0) {
        fsc__binrow_t bins[FSC__NBINS];
        size_t n;
        fsc__bin_rows(r, &p, bins, &n);
        for (size_t k = 0; k < n && rc == 0; k++)
            rc = from_store(a, fsc__store_bin(s, &bins[k]));
    }
    for (size_t t = 0; t < r->ntags && rc == 0; t++) {
        fsc__tagstat_t row;
        if (fsc__tagstat_row(r, &p, t, &row))
            rc = from_store(a, fsc__store_tagstat(s, &row));
    }
    if (rc == 0) {
        fsc__sumrow_t rows[FSC__SUMMARY_MAX];
        size_t n;
        fsc__summary_rows(r, &p, &c, rows, &n, sum);
        for (size_t k = 0; k < n && rc == 0; k++)
            rc = from_store(a, fsc__store_summary(s, &rows[k]));
    }
    const fsc__frag_state_t *f = &r->frag;
    if (rc == 0 && f->peak_alloc.valid) {
        rc = from_store(a, fsc__store_frag_point(s, "peak_allocated", -1, &f->peak_alloc));
        if (rc == 0 && r->peak_materialized)
            rc = frag_pins(a, "peak_allocated", -1, f->peak_alloc.seq, &r->peak_layout,
                           f->peak_alloc.ask_stream);
    }
    if (rc == 0 && f->peak_res.valid)
        rc = from_store(a, fsc__store_frag_point(s, "peak_reserved", -1, &f->peak_res));
    for (size_t i = 0; i < a->tl.n && rc == 0; i++)
        rc = from_store(a, fsc__store_timeline_frag(s, i, &a->tl.rows[i].frag));
    if (rc == 0)
        rc = write_meta(a);
    fsc__peak_free(&p);
    return rc;
}

int fsc_analysis_finish(fsc_analysis_t *a, fsc_analysis_summary_t *out)
{
    if (a == NULL)
        return FSC_EINVAL;
    if (a->failed || a->finished)
        return fsc_err_set(&a->err, FSC_EINVAL, "analysis already ended");
    fsc_analysis_summary_t sum;
    memset(&sum, 0, sizeof sum);
    int rc = from_store(a, fsc__pymeta_finish(&a->pymeta, a->store, a->rp.seq));
    if (rc == 0)
        rc = from_store(a, fsc__store_end_bulk(a->store));
    if (rc == 0)
        rc = finish_tables(a, &sum);
    fsc_alloc_config_unmodelled_str(a->config, sum.settings_not_modelled,
                                    sizeof sum.settings_not_modelled);
    if (rc == 0)
        rc = from_store(a, fsc__store_commit(a->store));
    fsc__store_destroy(a->store);
    a->store = NULL;
    if (rc == 0 && a->opts.before_commit != NULL)
        rc = a->opts.before_commit(a->opts.before_commit_ud, a->out.tmp_path, &sum, &a->err);
    if (rc == 0)
        rc = fsc_outfile_commit(&a->out, &a->err);
    if (rc != 0) {
        a->failed = 1;
        return rc;
    }
    a->finished = 1;
    if (out)
        *out = sum;
    return 0;
}

void fsc_analysis_destroy(fsc_analysis_t *a)
{
    if (a == NULL)
        return;
    fsc__store_destroy(a->store);
    fsc__pymeta_free(&a->pymeta);
    if (!a->finished)
        fsc_outfile_abort(&a->out);
    fsc__replay_free(&a->rp);
    fsc__timeline_free(&a->tl);
    for (size_t i = 0; i < a->nnames; i++)
        free(a->names[i].name);
    free(a->names);
    free(a->oom);
    while (a->meta != NULL) {
        fsc__kv_t *n = a->meta->next;
        free(a->meta->key);
        free(a->meta->text);
        free(a->meta);
        a->meta = n;
    }
    free(a->producer);
    free(a->config);
    free(a->backend);
    free(a->host);
    free(a->source_path);
    free(a->source_kind);
    free(a);
}
