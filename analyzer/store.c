/*
 * store.c — the run database (docs/schema.md is the contract): creating it,
 * the prepared statements, and binding every row the analyzer hands over.
 * The only file, with store_writer.c and store_blocks.c (how block rows go
 * in), that touches SQLite when writing.
 *
 * The file is written under a temporary name with journaling and syncing
 * off and everything in one transaction: it is renamed into place only when
 * complete, so durability during the write buys nothing, and the per-row
 * cost must stay close to SQLite's bare insert cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/frames.h"
#include "store_internal.h"

static const char *const k_stmts[FSC__ST_COUNT] = {
    [FSC__ST_OTHER] = "INSERT INTO events_other VALUES(0,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_BLOCK] = "INSERT INTO blocks SELECT 0, * FROM fsc_block_rows(?)",
    [FSC__ST_SEGMENT] = "INSERT INTO segments VALUES(0,?,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_TAG] = "INSERT OR REPLACE INTO tags(id, parent, name) VALUES(?,?,?)",
    [FSC__ST_MARKER] = "INSERT OR REPLACE INTO markers VALUES(0,?,?,?)",
    [FSC__ST_WARNING] = "INSERT INTO warnings VALUES(0,?,?)",
    [FSC__ST_META] = "INSERT OR REPLACE INTO meta VALUES(0,?,?)",
    [FSC__ST_SUMMARY] = "INSERT OR REPLACE INTO summary VALUES(0,?,?,?)",
    [FSC__ST_TIMELINE] = "INSERT INTO timeline VALUES(0,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                         "?,?,?,?,?)",
    [FSC__ST_OOM] = "INSERT INTO ooms VALUES(0,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_OOM_SEG] = "INSERT INTO oom_segments VALUES(0,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_OOM_PIN] = "INSERT INTO oom_pinning_blocks VALUES(0,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_OOM_TAG] = "INSERT INTO oom_tags VALUES(0,?,?,?,?,?)",
    [FSC__ST_SNAP] = "INSERT INTO layout_snapshots VALUES(0,?,?,?,?,?,?,?)",
    [FSC__ST_LAYOUT] = "INSERT INTO layout VALUES(0,?,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_BIN] = "INSERT INTO bins VALUES(0,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_TAGSTAT] = "INSERT INTO tag_stats VALUES(0,?,?,?,?,?,?,?)",
    [FSC__ST_FRAG] = "INSERT INTO frag_classes VALUES(0,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_FRAG_BLOCK] = "INSERT INTO frag_hard_blocks VALUES(0,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_FRAG_TAG] = "INSERT INTO frag_hard_tags VALUES(0,?,?,?,?,?,?,?)",
    [FSC__ST_TIMELINE_FRAG] = "INSERT INTO timeline_frag VALUES(0,?,?,?,?,?,?,?,?)",
    [FSC__ST_TIMELINE_EXT] = "INSERT INTO timeline_external VALUES(0,?,?,?)",
    [FSC__ST_TAGFRAME] = "INSERT OR REPLACE INTO tag_frames VALUES(0,?,?,?,?,?)",
    [FSC__ST_PYMETA] = "INSERT INTO pytorch_meta VALUES(0,NULL,?,?,?)",
    [FSC__ST_DEVMEM] = "INSERT INTO device_memory VALUES(0,?,?,?,?,?,?)",
};

static int db_err(fsc__store_t *a, const char *what)
{
    return fsc_err_set(&a->err, FSC_ESQLITE, "%s: %s: %s", a->path, what,
                       a->db ? sqlite3_errmsg(a->db) : "cannot open");
}

static void bind_u64(sqlite3_stmt *s, int i, uint64_t v)
{
    sqlite3_bind_int64(s, i, (sqlite3_int64)v);
}

static void bind_opt(sqlite3_stmt *s, int i, int present, uint64_t v)
{
    if (present)
        sqlite3_bind_int64(s, i, (sqlite3_int64)v);
    else
        sqlite3_bind_null(s, i);
}

static int step(fsc__store_t *a, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return db_err(a, what);
    return 0;
}

const fsc_err_t *fsc__store_err(const fsc__store_t *s)
{
    return &s->err;
}

static int create(fsc__store_t *a, const char *tmp_path)
{
    unlink(tmp_path);
    /* One connection, one thread: no per-call mutex. */
    if (sqlite3_open_v2(tmp_path, &a->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        return db_err(a, "cannot create the database");
    if (fsc__store_blocks_module(a->db) != SQLITE_OK ||
        sqlite3_exec(a->db,
                     "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                     /* 16 MiB of page cache: SQLite writes the pages it
                      * holds at COMMIT, on the caller's thread after the
                      * writer has finished, and the rest as the cache
                      * fills, on the writer's thread while the replay
                      * runs; a smaller cache moves that work off the end
                      * (the same file, byte for byte, and less memory) */
                     "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-16384;"
                     "PRAGMA temp_store=MEMORY;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(a->db, fsc_rundb_schema(), NULL, NULL, NULL) != SQLITE_OK)
        return db_err(a, "cannot create the tables");
    for (int i = 0; i < FSC__ST_COUNT; i++)
        if (sqlite3_prepare_v3(a->db, k_stmts[i], -1, SQLITE_PREPARE_PERSISTENT, &a->st[i],
                               NULL) != SQLITE_OK)
            return db_err(a, "cannot prepare a statement");
    if (sqlite3_exec(a->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return db_err(a, "BEGIN");
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(a->db, "INSERT INTO event_types VALUES(0,?,?)", -1, &s, NULL) !=
        SQLITE_OK)
        return db_err(a, "event_types");
    for (int t = 1; t < FSC_EV__COUNT; t++) {
        sqlite3_bind_int(s, 1, t);
        sqlite3_bind_text(s, 2, fsc_event_type_name(t), -1, SQLITE_STATIC);
        if (step(a, s, "event_types") != 0) {
            sqlite3_finalize(s);
            return a->err.code;
        }
    }
    sqlite3_finalize(s);
    return 0;
}

static void close_db(fsc__store_t *a)
{
    for (int i = 0; i < FSC__ST_COUNT; i++) {
        sqlite3_finalize(a->st[i]);
        a->st[i] = NULL;
    }
    if (a->db != NULL)
        sqlite3_close(a->db);
    a->db = NULL;
}

int fsc__store_open(const char *tmp_path, const char *path, fsc__store_t **out, fsc_err_t *err)
{
    *out = NULL;
    fsc__store_t *a = calloc(1, sizeof *a);
    if (a == NULL || (a->path = strdup(path ? path : "")) == NULL) {
        free(a);
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    }
    int rc = create(a, tmp_path);
    if (rc != 0) {
        fsc_err_copy(err, &a->err);
        fsc__store_destroy(a);
        return rc;
    }
    fsc__writer_start(a);
    *out = a;
    return 0;
}

int fsc__store_end_bulk(fsc__store_t *a)
{
    return fsc__writer_stop(a);
}

int fsc__store_commit(fsc__store_t *a)
{
    int rc = fsc__writer_stop(a);
    if (rc == 0 && sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = db_err(a, "COMMIT");
    close_db(a);
    return rc;
}

void fsc__store_destroy(fsc__store_t *a)
{
    if (a == NULL)
        return;
    fsc__writer_stop(a);
    close_db(a);
    free(a->path);
    free(a);
}

static void bind_segment_row(sqlite3_stmt *s, const fsc__segrow_t *r)
{
    const fsc__seg_t *g = &r->seg;
    int freed = r->freed;
    bind_u64(s, 1, g->id);
    bind_u64(s, 2, g->base);
    bind_u64(s, 3, g->expandable ? g->peak_size : g->size);
    bind_u64(s, 4, g->pool);
    bind_u64(s, 5, g->stream);
    sqlite3_bind_int(s, 6, g->expandable);
    bind_u64(s, 7, g->created_seq);
    bind_u64(s, 8, g->created_time);
    bind_opt(s, 9, freed, r->freed_seq);
    bind_opt(s, 10, freed, r->freed_time);
    bind_u64(s, 11, g->tag);
    bind_u64(s, 12, g->pool_id);
}

/* Which columns an event type fills (events.h's table). */
enum { C_ADDR = 1, C_SIZE = 2, C_REQ = 4, C_STREAM = 8, C_POOL = 16, C_SEG = 32, C_OTHER = 64 };

static int columns_of(int type)
{
    switch (type) {
    case FSC_EV_SEGMENT_ALLOC:
    case FSC_EV_SEGMENT_FREE: return C_ADDR | C_SIZE | C_STREAM | C_POOL;
    case FSC_EV_SEGMENT_MAP:
    case FSC_EV_SEGMENT_UNMAP: return C_ADDR | C_SIZE | C_STREAM | C_POOL | C_SEG;
    case FSC_EV_ALLOC:
    case FSC_EV_FREE_REQUESTED:
    case FSC_EV_FREE_COMPLETED:
    case FSC_EV_SPLIT: return C_ADDR | C_SIZE | C_REQ | C_STREAM | C_POOL | C_SEG;
    case FSC_EV_MERGE: return C_ADDR | C_SIZE | C_STREAM | C_POOL | C_SEG | C_OTHER;
    case FSC_EV_OOM: return C_SIZE | C_REQ | C_STREAM | C_POOL;
    case FSC_EV_EMPTY_CACHE: return C_SIZE;
    case FSC_EV_GC: return C_SIZE | C_REQ;
    default: return 0;
    }
}

static void bind_other_row(sqlite3_stmt *s, const fsc_event_t *ev, uint64_t seq)
{
    int c = columns_of(ev->type);
    bind_u64(s, 1, seq);
    bind_u64(s, 2, ev->time_ns);
    sqlite3_bind_int(s, 3, ev->type);
    bind_opt(s, 4, c & C_ADDR, ev->addr);
    bind_opt(s, 5, c & C_SIZE, ev->size);
    bind_opt(s, 6, c & C_REQ, ev->requested);
    bind_opt(s, 7, c & C_STREAM, ev->stream);
    bind_opt(s, 8, c & C_POOL, ev->pool);
    bind_opt(s, 9, c & C_SEG, ev->segment);
    bind_u64(s, 10, ev->tag);
    bind_opt(s, 11, c & C_OTHER, ev->other);
}

static int step_only(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc;
}

/* A tag and its name as a frame (file, line and function apart:
 * fragscope/frames.h). */
static int exec_tag(sqlite3_stmt *const *st, uint32_t node, uint32_t parent, const char *name,
                    size_t len, const char **what)
{
    sqlite3_stmt *s = st[FSC__ST_TAG];
    bind_u64(s, 1, node);
    bind_opt(s, 2, node != 0, parent);
    sqlite3_bind_text(s, 3, name, (int)len, SQLITE_STATIC);
    *what = "tags";
    int rc = step_only(s);
    sqlite3_clear_bindings(s); /* the name is freed once written */
    if (rc != SQLITE_DONE || node == 0)
        return rc;
    s = st[FSC__ST_TAGFRAME];
    bind_u64(s, 1, node);
    fsc_frame_t fr;
    int is_frame = fsc_frame_parse(name, len, &fr);
    if (is_frame) {
        sqlite3_bind_text(s, 2, fr.file, (int)fr.file_len, SQLITE_STATIC);
        bind_opt(s, 3, fr.line <= (uint64_t)INT64_MAX, fr.line);
        sqlite3_bind_text(s, 4, fr.function, (int)fr.function_len, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(s, 2);
        sqlite3_bind_null(s, 3);
        sqlite3_bind_null(s, 4);
    }
    bind_u64(s, 5, (uint64_t)fsc_frame_class(&fr, is_frame));
    *what = "tag_frames";
    rc = step_only(s);
    sqlite3_clear_bindings(s);
    return rc;
}

static void bind_dev_row(sqlite3_stmt *s, uint64_t seq, uint64_t time, uint64_t dev_free,
                         uint64_t dev_total, uint64_t reserved)
{
    int known = dev_free != UINT64_MAX && dev_total != 0;
    bind_u64(s, 1, seq);
    bind_u64(s, 2, time);
    bind_opt(s, 3, dev_free != UINT64_MAX, dev_free);
    bind_opt(s, 4, dev_total != 0, dev_total);
    bind_u64(s, 5, reserved);
    bind_opt(s, 6, known,
             known && dev_total > dev_free + reserved ? dev_total - dev_free - reserved : 0);
}

int fsc__store_exec_op(sqlite3_stmt *const *st, const fsc__op_t *op, const char **what)
{
    sqlite3_stmt *s;
    const char *t = op->u.text.s;
    int rc;
    switch (op->kind) {
    case FSC__OP_BLOCK: {
        *what = "blocks";
        fsc__blocksrc_t one = {op, 0, 1, 1};
        return fsc__store_exec_blocks(st, &one);
    }
    case FSC__OP_SEGMENT:
        *what = "segments";
        s = st[FSC__ST_SEGMENT];
        bind_segment_row(s, &op->u.seg);
        break;
    case FSC__OP_TAG:
        return exec_tag(st, (uint32_t)op->u.text.a, (uint32_t)op->u.text.b, t ? t : "",
                        op->u.text.len, what);
    case FSC__OP_MARKER:
        *what = "markers";
        s = st[FSC__ST_MARKER];
        bind_u64(s, 1, op->u.text.a);
        bind_u64(s, 2, op->u.text.b);
        sqlite3_bind_text(s, 3, t ? t : "", t ? (int)op->u.text.len : 0, SQLITE_STATIC);
        break;
    case FSC__OP_PYMETA: {
        *what = "pytorch_meta";
        s = st[FSC__ST_PYMETA];
        size_t klen = strlen(t);
        bind_u64(s, 1, op->u.text.a);
        sqlite3_bind_text(s, 2, t, (int)klen, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, t + klen + 1, (int)op->u.text.len, SQLITE_STATIC);
        break;
    }
    case FSC__OP_WARNING:
        *what = "warnings";
        s = st[FSC__ST_WARNING];
        bind_u64(s, 1, op->u.text.a);
        sqlite3_bind_text(s, 2, t, (int)op->u.text.len, SQLITE_STATIC);
        break;
    case FSC__OP_DEVMEM:
        *what = "device_memory";
        s = st[FSC__ST_DEVMEM];
        bind_dev_row(s, op->u.dev.seq, op->u.dev.time, op->u.dev.dev_free, op->u.dev.dev_total,
                     op->u.dev.reserved);
        break;
    default:
        *what = "events";
        s = st[FSC__ST_OTHER];
        bind_other_row(s, &op->u.other.ev, op->u.other.seq);
        break;
    }
    rc = step_only(s);
    if (op->kind >= FSC__OP_TAG) {
        /* the statement must not keep pointing at text about to be freed */
        sqlite3_clear_bindings(s);
    }
    return rc;
}

void fsc__op_release(fsc__op_t *op)
{
    if (op->kind == FSC__OP_TAG || op->kind == FSC__OP_MARKER || op->kind == FSC__OP_PYMETA ||
        op->kind == FSC__OP_WARNING) {
        free(op->u.text.s);
        op->u.text.s = NULL;
    }
}

/* Every row goes to the writer thread when there is one. */
int fsc__store_op(fsc__store_t *a, const fsc__op_t *op)
{
    if (a->writer != NULL)
        return fsc__writer_push(a, op);
    const char *what = "";
    int rc = fsc__store_exec_op(a->st, op, &what);
    fsc__op_t done = *op;
    fsc__op_release(&done);
    if (rc != SQLITE_DONE)
        return db_err(a, what);
    return 0;
}

int fsc__store_ops(fsc__store_t *a, const fsc__rowsout_t *out)
{
    for (int i = 0; i < out->n; i++) {
        int rc = fsc__store_op(a, &out->op[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* A small table's row with text: a copy of the text (pre, NUL, text when
 * pre is given) travels with it. */
static int text_op(fsc__store_t *a, int kind, uint64_t x, uint64_t y, const char *pre,
                   const char *text, size_t len)
{
    size_t plen = pre ? strlen(pre) + 1 : 0;
    fsc__op_t op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    op.u.text.a = x;
    op.u.text.b = y;
    op.u.text.len = len;
    if ((op.u.text.s = malloc(plen + len + 1)) == NULL)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory");
    if (plen > 0)
        memcpy(op.u.text.s, pre, plen);
    if (len > 0)
        memcpy(op.u.text.s + plen, text, len);
    op.u.text.s[plen + len] = '\0';
    return fsc__store_op(a, &op);
}

int fsc__store_tag(fsc__store_t *a, uint32_t node, uint32_t parent, const char *name, size_t len)
{
    return text_op(a, FSC__OP_TAG, node, parent, NULL, name, len);
}

int fsc__store_pymeta(fsc__store_t *a, uint64_t seq, const char *kind, const char *json,
                      size_t len)
{
    return text_op(a, FSC__OP_PYMETA, seq, 0, kind, json, len);
}

int fsc__store_marker(fsc__store_t *a, uint64_t seq, uint64_t time, const char *text, size_t len)
{
    return text_op(a, FSC__OP_MARKER, seq, time, NULL, text, text ? len : 0);
}

int fsc__store_device_sample(fsc__store_t *a, uint64_t seq, uint64_t time, uint64_t dev_free,
                             uint64_t dev_total, uint64_t reserved)
{
    fsc__op_t op;
    memset(&op, 0, sizeof op);
    op.kind = FSC__OP_DEVMEM;
    op.u.dev.seq = seq;
    op.u.dev.time = time;
    op.u.dev.dev_free = dev_free;
    op.u.dev.dev_total = dev_total;
    op.u.dev.reserved = reserved;
    return fsc__store_op(a, &op);
}

int fsc__store_warning(fsc__store_t *a, uint64_t seq, const char *msg)
{
    return text_op(a, FSC__OP_WARNING, seq, 0, NULL, msg, strlen(msg));
}

static const char *state_name(int s)
{
    return s == FSC__ALLOCATED ? "allocated" : s == FSC__PENDING ? "pending" : "free";
}

int fsc__store_layout(fsc__store_t *a, const char *kind, uint64_t seq, uint64_t time,
                      int64_t oom_id, uint64_t allocated, uint64_t reserved,
                      const fsc__imgvec_t *v, uint64_t *id)
{
    int rc = fsc__writer_sync(a);
    if (rc != 0)
        return rc;
    uint64_t sid = a->snapshots++;
    sqlite3_stmt *s = a->st[FSC__ST_SNAP];
    bind_u64(s, 1, sid);
    sqlite3_bind_text(s, 2, kind, -1, SQLITE_STATIC);
    bind_u64(s, 3, seq);
    bind_u64(s, 4, time);
    bind_opt(s, 5, oom_id >= 0, (uint64_t)oom_id);
    bind_u64(s, 6, allocated);
    bind_u64(s, 7, reserved);
    rc = step(a, s, "layout_snapshots");
    if (rc != 0)
        return rc;
    s = a->st[FSC__ST_LAYOUT];
    for (size_t i = 0; i < v->n; i++) {
        const fsc__img_t *m = &v->v[i];
        int live = m->state != FSC__FREE;
        bind_u64(s, 1, sid);
        bind_u64(s, 2, m->segment);
        bind_u64(s, 3, m->addr);
        bind_u64(s, 4, m->size);
        bind_opt(s, 5, live, m->requested);
        sqlite3_bind_text(s, 6, state_name(m->state), -1, SQLITE_STATIC);
        bind_u64(s, 7, m->stream);
        bind_u64(s, 8, m->pool);
        bind_opt(s, 9, live, m->tag);
        bind_opt(s, 10, live, m->alloc_seq);
        bind_opt(s, 11, live, seq - m->alloc_seq);
        bind_opt(s, 12, live, time >= m->alloc_time ? time - m->alloc_time : 0);
        if ((rc = step(a, s, "layout")) != 0)
            return rc;
    }
    if (id)
        *id = sid;
    return 0;
}

static int oom_segments(fsc__store_t *a, const fsc__oom_t *f)
{
    int rc = 0;
    for (size_t i = 0; i < f->nsegs && rc == 0; i++) {
        const fsc__oom_seg_t *g = &f->segs[i];
        sqlite3_stmt *s = a->st[FSC__ST_OOM_SEG];
        bind_u64(s, 1, f->id);
        bind_u64(s, 2, i);
        bind_u64(s, 3, g->base);
        bind_u64(s, 4, g->size);
        bind_u64(s, 5, g->pool);
        bind_u64(s, 6, g->stream);
        bind_u64(s, 7, g->free_bytes);
        bind_u64(s, 8, g->largest_free);
        bind_u64(s, 9, g->nfree);
        bind_u64(s, 10, g->nlive);
        bind_u64(s, 11, g->live_bytes);
        if ((rc = step(a, s, "oom_segments")) != 0)
            break;
        s = a->st[FSC__ST_OOM_PIN];
        for (size_t j = 0; j < g->npins && rc == 0; j++) {
            const fsc__oom_pin_t *b = &g->pins[j];
            bind_u64(s, 1, f->id);
            bind_u64(s, 2, g->base);
            bind_u64(s, 3, b->addr);
            bind_u64(s, 4, b->size);
            bind_u64(s, 5, b->requested);
            sqlite3_bind_text(s, 6, b->pending ? "pending" : "allocated", -1, SQLITE_STATIC);
            bind_u64(s, 7, b->alloc_seq);
            bind_u64(s, 8, b->age_events);
            bind_u64(s, 9, b->age_ns);
            bind_u64(s, 10, b->tag);
            rc = step(a, s, "oom_pinning_blocks");
        }
    }
    return rc;
}

int fsc__store_oom(fsc__store_t *a, fsc__oom_t *f, const fsc__imgvec_t *layout)
{
    int rc = fsc__writer_sync(a); /* the diagnosis is written at once */
    if (rc != 0)
        return rc;
    if (f->has_snapshot) {
        rc = fsc__store_layout(a, "oom", f->seq, f->time, (int64_t)f->id, f->allocated_now,
                               f->reserved_now, layout, &f->snapshot);
        if (rc != 0)
            return rc;
    }
    sqlite3_stmt *s = a->st[FSC__ST_OOM];
    int k = 1;
    bind_u64(s, k++, f->id);
    bind_u64(s, k++, f->seq);
    bind_u64(s, k++, f->time);
    bind_u64(s, k++, f->requested);
    bind_u64(s, k++, f->rounded);
    bind_u64(s, k++, f->stream);
    bind_u64(s, k++, f->pool);
    bind_u64(s, k++, f->tag);
    bind_u64(s, k++, f->allocated);
    bind_u64(s, k++, f->reserved);
    bind_u64(s, k++, f->capacity);
    sqlite3_bind_int(s, k++, f->inferred);
    bind_u64(s, k++, f->lower);
    bind_u64(s, k++, f->upper);
    bind_u64(s, k++, f->segment_size);
    bind_opt(s, k++, f->device_free_known, f->device_free);
    bind_opt(s, k++, f->device_total != 0, f->device_total);
    bind_u64(s, k++, f->free_in_reserved);
    bind_u64(s, k++, f->largest_free);
    bind_u64(s, k++, f->largest_usable);
    sqlite3_bind_double(s, k++, f->external_frag);
    sqlite3_bind_text(s, k++, fsc_oom_cause_name(f->cause), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, k++, f->text, -1, SQLITE_TRANSIENT);
    bind_opt(s, k++, f->has_snapshot, f->snapshot);
    bind_opt(s, k++, f->external_known, f->external);
    if ((rc = step(a, s, "ooms")) != 0)
        return rc;
    if ((rc = oom_segments(a, f)) != 0)
        return rc;
    s = a->st[FSC__ST_OOM_TAG];
    for (size_t i = 0; i < f->ntags; i++) {
        bind_u64(s, 1, f->id);
        bind_u64(s, 2, i);
        bind_u64(s, 3, f->tags[i].tag);
        bind_u64(s, 4, f->tags[i].live_bytes);
        bind_u64(s, 5, f->tags[i].live_blocks);
        if ((rc = step(a, s, "oom_tags")) != 0)
            return rc;
    }
    return 0;
}

int fsc__store_timeline(fsc__store_t *a, const fsc__tlrow_t *r)
{
    const fsc__bucket_t *b = r->b;
    sqlite3_stmt *s = a->st[FSC__ST_TIMELINE];
    int k = 1;
    bind_u64(s, k++, r->index);
    bind_u64(s, k++, b->seq_first);
    bind_u64(s, k++, b->seq_last);
    bind_u64(s, k++, b->time_first);
    bind_u64(s, k++, b->time_last);
    bind_u64(s, k++, b->allocated);
    bind_u64(s, k++, b->requested);
    bind_u64(s, k++, b->active);
    bind_u64(s, k++, b->reserved);
    bind_u64(s, k++, b->internal);
    sqlite3_bind_double(s, k++, r->internal_ratio);
    bind_u64(s, k++, b->free_in_reserved);
    bind_u64(s, k++, b->largest_free);
    sqlite3_bind_double(s, k++, r->external_frag);
    bind_u64(s, k++, r->reserved_unallocated);
    bind_u64(s, k++, b->inactive_split_bytes);
    bind_u64(s, k++, b->segments);
    bind_u64(s, k++, b->live_blocks);
    bind_u64(s, k++, b->alloc_min);
    bind_u64(s, k++, b->alloc_max);
    bind_u64(s, k++, b->alloc_max_seq);
    bind_u64(s, k++, b->res_min);
    bind_u64(s, k++, b->res_max);
    bind_u64(s, k++, b->res_max_seq);
    bind_u64(s, k++, b->resunalloc_max);
    return step(a, s, "timeline");
}

int fsc__store_bin(fsc__store_t *a, const fsc__binrow_t *b)
{
    sqlite3_stmt *s = a->st[FSC__ST_BIN];
    int c = 1;
    bind_u64(s, c++, (uint64_t)b->bin);
    bind_u64(s, c++, b->lo);
    bind_u64(s, c++, b->hi);
    bind_u64(s, c++, b->requests);
    bind_u64(s, c++, b->requested_bytes);
    bind_u64(s, c++, b->allocated_bytes);
    bind_u64(s, c++, b->waste);
    bind_u64(s, c++, b->hits);
    bind_u64(s, c++, b->misses);
    sqlite3_bind_double(s, c++, b->hit_rate);
    bind_u64(s, c++, b->splits);
    bind_u64(s, c++, b->merges);
    bind_u64(s, c++, b->peak_live_blocks);
    bind_u64(s, c++, b->peak_live_bytes);
    bind_u64(s, c++, b->live_at_peak_blocks);
    bind_u64(s, c++, b->live_at_peak_bytes);
    bind_u64(s, c++, b->free_at_peak_blocks);
    bind_u64(s, c++, b->free_at_peak_bytes);
    return step(a, s, "bins");
}

int fsc__store_tagstat(fsc__store_t *a, const fsc__tagstat_t *r)
{
    sqlite3_stmt *s = a->st[FSC__ST_TAGSTAT];
    bind_u64(s, 1, r->tag);
    bind_u64(s, 2, r->allocs);
    bind_u64(s, 3, r->alloc_bytes);
    bind_u64(s, 4, r->peak_blocks);
    bind_u64(s, 5, r->peak_bytes);
    bind_u64(s, 6, r->live_blocks);
    bind_u64(s, 7, r->live_bytes);
    return step(a, s, "tag_stats");
}

int fsc__store_summary(fsc__store_t *a, const fsc__sumrow_t *r)
{
    sqlite3_stmt *s = a->st[FSC__ST_SUMMARY];
    sqlite3_bind_text(s, 1, r->key, -1, SQLITE_STATIC);
    if (r->is_real)
        sqlite3_bind_double(s, 2, r->value);
    else
        sqlite3_bind_int64(s, 2, (sqlite3_int64)r->value);
    sqlite3_bind_text(s, 3, r->unit, -1, SQLITE_STATIC);
    return step(a, s, "summary");
}

int fsc__store_run(fsc__store_t *a, int64_t rank, int64_t device, const char *host, int64_t pid,
                   const char *source, const char *kind)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(a->db, "INSERT INTO runs VALUES(0,?,?,?,?,?,?)", -1, &s, NULL) !=
        SQLITE_OK)
        return db_err(a, "runs");
    if (rank >= 0)
        sqlite3_bind_int64(s, 1, rank);
    if (device >= 0)
        sqlite3_bind_int64(s, 2, device);
    if (host != NULL && host[0] != '\0')
        sqlite3_bind_text(s, 3, host, -1, SQLITE_TRANSIENT);
    if (pid > 0)
        sqlite3_bind_int64(s, 4, pid);
    sqlite3_bind_text(s, 5, source ? source : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 6, kind, -1, SQLITE_STATIC);
    int rc = step(a, s, "runs");
    sqlite3_finalize(s);
    return rc;
}

int fsc__store_meta(fsc__store_t *a, const char *key, const char *text, int64_t ival)
{
    sqlite3_stmt *s = a->st[FSC__ST_META];
    sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
    if (text)
        sqlite3_bind_text(s, 2, text, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_int64(s, 2, ival);
    return step(a, s, "meta");
}

static const char *const k_pool_name[FSC__FRAG_NPOOLS] = {"small", "large", "all"};

int fsc__store_frag_point(fsc__store_t *a, const char *point, int64_t oom_id,
                          const fsc__frag_point_t *p)
{
    int rc = fsc__writer_sync(a);
    sqlite3_stmt *s = a->st[FSC__ST_FRAG];
    for (int k = FSC__FRAG_NPOOLS - 1; rc == 0 && k >= 0; k--) {
        const fsc__frag_t *c = &p->cls[k];
        int i = 1;
        sqlite3_bind_text(s, i++, point, -1, SQLITE_STATIC);
        bind_opt(s, i++, oom_id >= 0, (uint64_t)oom_id);
        sqlite3_bind_text(s, i++, k_pool_name[k], -1, SQLITE_STATIC);
        bind_u64(s, i++, p->seq);
        bind_u64(s, i++, p->time);
        bind_u64(s, i++, p->ask_stream);
        bind_u64(s, i++, p->reserved[k]);
        bind_u64(s, i++, p->allocated[k]);
        bind_u64(s, i++, p->reserved[k] - p->allocated[k]);
        bind_u64(s, i++, c->soft);
        bind_u64(s, i++, c->hard);
        bind_u64(s, i++, c->stream);
        bind_u64(s, i++, c->private_pool);
        bind_u64(s, i++, c->pending);
        rc = step(a, s, "frag_classes");
    }
    return rc;
}

int fsc__store_frag_pins(fsc__store_t *a, const char *point, int64_t oom_id,
                         const fsc__frag_pins_t *p)
{
    int rc = fsc__writer_sync(a);
    sqlite3_stmt *s = a->st[FSC__ST_FRAG_BLOCK];
    for (size_t r = 0; rc == 0 && r < p->nblocks; r++) {
        const fsc__frag_pinblk_t *m = &p->blocks[r];
        int i = 1;
        sqlite3_bind_text(s, i++, point, -1, SQLITE_STATIC);
        bind_opt(s, i++, oom_id >= 0, (uint64_t)oom_id);
        bind_u64(s, i++, r);
        bind_u64(s, i++, m->segment);
        bind_u64(s, i++, m->addr);
        bind_u64(s, i++, m->size);
        sqlite3_bind_text(s, i++, m->pending ? "pending" : "allocated", -1, SQLITE_STATIC);
        bind_u64(s, i++, m->tag);
        bind_u64(s, i++, m->hard);
        bind_u64(s, i++, m->alloc_seq);
        bind_u64(s, i++, m->age_events);
        rc = step(a, s, "frag_hard_blocks");
    }
    s = a->st[FSC__ST_FRAG_TAG];
    for (size_t r = 0; rc == 0 && r < p->ntags; r++) {
        int i = 1;
        sqlite3_bind_text(s, i++, point, -1, SQLITE_STATIC);
        bind_opt(s, i++, oom_id >= 0, (uint64_t)oom_id);
        bind_u64(s, i++, r);
        bind_u64(s, i++, p->tags[r].tag);
        bind_u64(s, i++, p->tags[r].hard);
        bind_u64(s, i++, p->tags[r].blocks);
        bind_u64(s, i++, p->tags[r].bytes);
        rc = step(a, s, "frag_hard_tags");
    }
    return rc;
}

int fsc__store_timeline_frag(fsc__store_t *a, uint64_t index, const fsc__frag_sample_t *x)
{
    static const char *const pool[FSC__FRAG_NPOOLS] = {"small", "large", "all"};
    sqlite3_stmt *s = a->st[FSC__ST_TIMELINE_FRAG];
    int rc = 0;
    for (int k = FSC__FRAG_NPOOLS - 1; rc == 0 && k >= 0; k--) {
        const fsc__frag_t *c = &x->cls[k];
        int i = 1;
        bind_u64(s, i++, index);
        sqlite3_bind_text(s, i++, pool[k], -1, SQLITE_STATIC);
        bind_u64(s, i++, x->ask_stream);
        bind_u64(s, i++, c->soft);
        bind_u64(s, i++, c->hard);
        bind_u64(s, i++, c->stream);
        bind_u64(s, i++, c->private_pool);
        bind_u64(s, i++, c->pending);
        rc = step(a, s, "timeline_frag");
    }
    return rc;
}

int fsc__store_timeline_external(fsc__store_t *a, const fsc__tlrow_t *r)
{
    if (!r->b->has_ext)
        return 0;
    sqlite3_stmt *s = a->st[FSC__ST_TIMELINE_EXT];
    bind_u64(s, 1, r->index);
    sqlite3_bind_double(s, 2, r->b->ext_max);
    bind_u64(s, 3, r->b->ext_max_seq);
    return step(a, s, "timeline_external");
}
