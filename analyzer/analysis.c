/*
 * analysis.c — the public face of the analysis: create, tag definitions,
 * feed one event, extra meta rows, destroy. Replay lives in replay.c, the
 * derived tables in finish.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ana_internal.h"
#include "fsc/vec.h"
#include "writer.h"

#define MAX_TAG_ID (1u << 26)

const char *fsc_oom_cause_name(int cause)
{
    switch (cause) {
#define FSC__OOM_NAME(name, val, str) case val: return str;
        FSC_OOM_CAUSE_MAP(FSC__OOM_NAME)
#undef FSC__OOM_NAME
    default: return "unknown";
    }
}

double fsc__ratio(uint64_t num, uint64_t den)
{
    return den == 0 ? 0.0 : (double)num / (double)den;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

int fsc__warn_or_fail(fsc_analysis_t *a, const fsc_event_t *ev, const char *fmt, ...)
{
    char what[384], msg[FSC_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *tn = fsc_event_type_name(ev->type);
    switch (ev->type) {
    case FSC_EV_OOM:
    case FSC_EV_EMPTY_CACHE:
    case FSC_EV_GC:
    case FSC_EV_MARKER:
        snprintf(msg, sizeof msg, "event %llu (%s): %s", (unsigned long long)a->seq, tn, what);
        break;
    default:
        snprintf(msg, sizeof msg, "event %llu (%s at 0x%llx): %s", (unsigned long long)a->seq,
                 tn, (unsigned long long)ev->addr, what);
        break;
    }
    if (!a->opts.lenient)
        return fsc_err_set(&a->err, FSC_ESTATE, "%s", msg);
    if (a->warnings++ < FSC__MAX_WARNINGS_STORED) {
        int rc = fsc__writer_sync(a);
        if (rc != 0)
            return rc;
        sqlite3_stmt *s = a->st[FSC__ST_WARNING];
        fsc__bind_u64(s, 1, a->seq);
        sqlite3_bind_text(s, 2, msg, -1, SQLITE_TRANSIENT);
        rc = fsc__step(a, s, "warnings");
        if (rc != 0)
            return rc;
    }
    return 1;
}

static int tags_grow(fsc_analysis_t *a, uint32_t id)
{
    if (id < a->ntags)
        return 0;
    if (id >= MAX_TAG_ID)
        return fsc_err_set(&a->err, FSC_ELIMIT, "tag id %u is too large", id);
    if (fsc__vec_reserve_zero(&a->tags, &a->ntags, (size_t)id + 1, sizeof *a->tags) != 0)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for tags");
    return 0;
}

static int tag_store(fsc_analysis_t *a, uint32_t node, uint32_t parent, const char *name,
                     size_t len)
{
    const char *ppath = node == 0 || a->tags[parent].path == NULL ? "" : a->tags[parent].path;
    size_t plen = strlen(ppath);
    char *path = malloc(plen + len + 2);
    if (path == NULL)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for tags");
    if (plen > 0) {
        memcpy(path, ppath, plen);
        path[plen++] = '/';
    }
    memcpy(path + plen, name, len);
    path[plen + len] = '\0';
    fsc__tag_t *t = &a->tags[node];
    free(t->path);
    t->path = path;
    t->parent = parent;
    t->defined = 1;
    int rc = fsc__writer_sync(a);
    if (rc != 0)
        return rc;
    sqlite3_stmt *s = a->st[FSC__ST_TAG];
    fsc__bind_u64(s, 1, node);
    fsc__bind_opt(s, 2, node != 0, parent);
    sqlite3_bind_text(s, 3, name, (int)len, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, path, -1, SQLITE_STATIC);
    return fsc__step(a, s, "tags");
}

int fsc__tag_ensure(fsc_analysis_t *a, uint32_t tag)
{
    if (tag < a->ntags && a->tags[tag].defined)
        return 0;
    int rc = tags_grow(a, tag);
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
    int rc = tags_grow(a, node > parent ? node : parent);
    if (rc == 0)
        rc = fsc__tag_ensure(a, parent);
    if (rc != 0)
        return rc;
    if (name == NULL)
        name = "";
    fsc__tag_t *t = &a->tags[node];
    if (t->defined && t->parent == parent) {
        /* same definition again: path = parent's path [+ '/'] + name */
        const char *pp = a->tags[parent].path;
        size_t plen = parent == 0 ? 0 : strlen(pp);
        size_t tlen = strlen(t->path);
        if (tlen == plen + (plen ? 1 : 0) + len &&
            (len == 0 || memcmp(t->path + tlen - len, name, len) == 0))
            return 0;
    }
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
    a->opts.source_path = a->source_path;
    a->opts.source_kind = a->source_kind;
    a->capacity_unknown = (hdr->flags & FSC_TRACE_F_CAPACITY_UNKNOWN) || hdr->capacity == 0;
    /* A ring trace keeps only the last events before each write: it starts
     * mid-run and has gaps, so contradictions are expected, not errors. */
    a->ring = (hdr->flags & FSC_TRACE_F_RING) != 0;
    if (a->ring)
        a->opts.lenient = 1;
    a->first_oom_cause = -1;
    a->last_free_bin = -1;
    fsc__u64map_init(&a->blocks);
    fsc__u64map_init(&a->segs);
    fsc__u64map_init(&a->peak_delta);
    fsc__slab_init(&a->blk_slab, sizeof(fsc__blk_t), 4096);
    fsc__frag_init(&a->frag);
    int rc = 0;
    if (!a->producer || !a->config || !a->backend || !a->source_path || !a->source_kind)
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    if (rc == 0)
        rc = fsc_outfile_init(&a->out, db_path, &a->err);
    if (rc == 0 && fsc__timeline_init(&a->tl, a->opts.timeline_samples) != 0)
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    if (rc == 0)
        rc = fsc__db_open(a);
    if (rc == 0)
        rc = tags_grow(a, 0);
    if (rc == 0)
        rc = tag_store(a, 0, 0, "", 0);
    if (rc == 0)
        fsc__writer_start(a);
    if (rc != 0) {
        fsc_err_copy(err, &a->err);
        fsc_analysis_destroy(a);
        return rc;
    }
    *out = a;
    return 0;
}

int fsc_analysis_feed(fsc_analysis_t *a, const fsc_event_t *ev)
{
    if (a == NULL || ev == NULL)
        return FSC_EINVAL;
    if (a->failed || a->finished)
        return fsc_err_set(&a->err, FSC_EINVAL, "analysis already ended");
    /* Reconstructed starts of imported runs may sit at time 0 after later
     * events; the duration spans the smallest and largest time seen. */
    if (a->seq == 0 || ev->time_ns < a->first_time)
        a->first_time = ev->time_ns;
    if (a->seq == 0 || ev->time_ns > a->max_time)
        a->max_time = ev->time_ns;
    a->last_time = ev->time_ns;
    int rc = fsc__tag_ensure(a, ev->tag);
    int applied = 0;
    fsc__timeline_before(a, ev->type);
    if (rc == 0)
        rc = fsc__db_before(a, ev);
    if (rc == 0)
        rc = fsc__replay_apply(a, ev, &applied);
    if (rc == 0)
        rc = fsc__db_event(a, ev, applied);
    if (rc == 0 && ev->type == FSC_EV_MARKER)
        rc = fsc__writer_sync(a);
    if (rc == 0 && ev->type == FSC_EV_MARKER) {
        sqlite3_stmt *s = a->st[FSC__ST_MARKER];
        fsc__bind_u64(s, 1, a->seq);
        fsc__bind_u64(s, 2, ev->time_ns);
        sqlite3_bind_text(s, 3, ev->text ? ev->text : "", ev->text ? (int)ev->text_len : 0,
                          SQLITE_TRANSIENT);
        rc = fsc__step(a, s, "markers");
    }
    if (rc != 0) {
        a->failed = 1;
        return rc;
    }
    if (ev->type < FSC_EV__COUNT)
        a->type_count[ev->type]++;
    fsc__timeline_event(a, ev->time_ns);
    a->seq++;
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

int fsc_analysis_finish(fsc_analysis_t *a, fsc_analysis_summary_t *out)
{
    if (a == NULL)
        return FSC_EINVAL;
    if (a->failed || a->finished)
        return fsc_err_set(&a->err, FSC_EINVAL, "analysis already ended");
    fsc_analysis_summary_t sum;
    memset(&sum, 0, sizeof sum);
    int rc = fsc__writer_stop(a);
    if (rc == 0)
        rc = fsc__finish_tables(a, &sum);
    if (rc == 0 && sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = fsc__db_err(a, "COMMIT");
    fsc__db_close(a);
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
    fsc__writer_stop(a);
    fsc__db_close(a);
    if (!a->finished)
        fsc_outfile_abort(&a->out);
    fsc__replay_free(a);
    fsc__timeline_free(&a->tl);
    fsc__frag_free(&a->frag);
    fsc__u64map_free(&a->peak_delta);
    fsc__imgvec_free(&a->peak_imgs);
    fsc__imgvec_free(&a->peak_layout);
    for (size_t i = 0; i < a->ntags; i++)
        free(a->tags[i].path);
    free(a->tags);
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
    free(a->source_path);
    free(a->source_kind);
    free(a);
}
