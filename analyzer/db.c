/*
 * db.c — creating the run database (docs/schema.md is the contract) and the
 * prepared statements every other file writes through.
 *
 * The file is written under a temporary name with journaling and syncing
 * off and everything in one transaction: it is renamed into place only when
 * complete, so durability during the write buys nothing, and the per-row
 * cost must stay close to SQLite's bare insert cost.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ana_internal.h"
#include "writer.h"

static const char *const k_stmts[FSC__ST_COUNT] = {
    [FSC__ST_OTHER] = "INSERT INTO events_other VALUES(?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_BLOCK] = "INSERT INTO blocks VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                      "?,?,?,?)",
    [FSC__ST_SEGMENT] = "INSERT INTO segments VALUES(?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_TAG] = "INSERT OR REPLACE INTO tags VALUES(?,?,?,?)",
    [FSC__ST_MARKER] = "INSERT OR REPLACE INTO markers VALUES(?,?,?)",
    [FSC__ST_WARNING] = "INSERT INTO warnings VALUES(?,?)",
    [FSC__ST_META] = "INSERT OR REPLACE INTO meta VALUES(?,?)",
    [FSC__ST_SUMMARY] = "INSERT OR REPLACE INTO summary VALUES(?,?,?)",
    [FSC__ST_TIMELINE] = "INSERT INTO timeline VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                         "?,?,?,?,?)",
    [FSC__ST_OOM] = "INSERT INTO ooms VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_OOM_SEG] = "INSERT INTO oom_segments VALUES(?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_OOM_PIN] = "INSERT INTO oom_pinning_blocks VALUES(?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_OOM_TAG] = "INSERT INTO oom_tags VALUES(?,?,?,?,?)",
    [FSC__ST_SNAP] = "INSERT INTO layout_snapshots VALUES(?,?,?,?,?,?,?)",
    [FSC__ST_LAYOUT] = "INSERT INTO layout VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_BIN] = "INSERT INTO bins VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [FSC__ST_TAGSTAT] = "INSERT INTO tag_stats VALUES(?,?,?,?,?,?,?)",
};

int fsc__db_err(fsc_analysis_t *a, const char *what)
{
    return fsc_err_set(&a->err, FSC_ESQLITE, "%s: %s: %s", a->out.path, what,
                       a->db ? sqlite3_errmsg(a->db) : "cannot open");
}

void fsc__bind_u64(sqlite3_stmt *s, int i, uint64_t v)
{
    sqlite3_bind_int64(s, i, (sqlite3_int64)v);
}

void fsc__bind_opt(sqlite3_stmt *s, int i, int present, uint64_t v)
{
    if (present)
        sqlite3_bind_int64(s, i, (sqlite3_int64)v);
    else
        sqlite3_bind_null(s, i);
}

int fsc__step(fsc_analysis_t *a, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return fsc__db_err(a, what);
    return 0;
}

int fsc__db_open(fsc_analysis_t *a)
{
    unlink(a->out.tmp_path);
    /* One connection, one thread: no per-call mutex. */
    if (sqlite3_open_v2(a->out.tmp_path, &a->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        return fsc__db_err(a, "cannot create the database");
    if (sqlite3_exec(a->db,
                     "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                     "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-65536;"
                     "PRAGMA temp_store=MEMORY;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(a->db, fsc_rundb_schema(), NULL, NULL, NULL) != SQLITE_OK)
        return fsc__db_err(a, "cannot create the tables");
    for (int i = 0; i < FSC__ST_COUNT; i++)
        if (sqlite3_prepare_v3(a->db, k_stmts[i], -1, SQLITE_PREPARE_PERSISTENT, &a->st[i],
                               NULL) != SQLITE_OK)
            return fsc__db_err(a, "cannot prepare a statement");
    if (sqlite3_exec(a->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return fsc__db_err(a, "BEGIN");
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(a->db, "INSERT INTO event_types VALUES(?,?)", -1, &s, NULL) !=
        SQLITE_OK)
        return fsc__db_err(a, "event_types");
    for (int t = 1; t < FSC_EV__COUNT; t++) {
        sqlite3_bind_int(s, 1, t);
        sqlite3_bind_text(s, 2, fsc_event_type_name(t), -1, SQLITE_STATIC);
        if (fsc__step(a, s, "event_types") != 0) {
            sqlite3_finalize(s);
            return a->err.code;
        }
    }
    sqlite3_finalize(s);
    return 0;
}

void fsc__db_close(fsc_analysis_t *a)
{
    for (int i = 0; i < FSC__ST_COUNT; i++) {
        sqlite3_finalize(a->st[i]);
        a->st[i] = NULL;
    }
    if (a->db != NULL)
        sqlite3_close(a->db);
    a->db = NULL;
}

void fsc__brow_of(const fsc__blk_t *b, fsc__brow_t *r)
{
    memset(r, 0, sizeof *r);
    r->alloc_seq = b->alloc_seq;
    r->alloc_time = b->alloc_time;
    r->addr = b->addr;
    r->size = b->size;
    r->requested = b->requested;
    r->stream = b->seg->stream;
    r->segment = b->seg->base;
    r->pool = b->seg->pool;
    r->tag = b->tag;
    r->cache_hit = b->cache_hit;
    r->freed = b->state == FSC__PENDING;
    r->freereq_seq = b->freereq_seq;
    r->freereq_time = b->freereq_time;
    r->free_tag = b->free_tag;
    r->split_size = b->split_size;
    r->split_time = b->split_time;
    r->valid = 1;
}

static void bind_block_row(sqlite3_stmt *s, const fsc__brow_t *r)
{
    int k = 1;
    fsc__bind_u64(s, k++, r->alloc_seq);
    fsc__bind_u64(s, k++, r->alloc_time);
    fsc__bind_u64(s, k++, r->addr);
    fsc__bind_u64(s, k++, r->size);
    fsc__bind_u64(s, k++, r->requested);
    fsc__bind_u64(s, k++, r->stream);
    fsc__bind_u64(s, k++, r->pool);
    fsc__bind_u64(s, k++, r->segment);
    fsc__bind_u64(s, k++, r->tag);
    sqlite3_bind_int(s, k++, fsc__bin_of(r->size));
    sqlite3_bind_int(s, k++, r->cache_hit);
    fsc__bind_opt(s, k++, r->freed, r->freereq_seq);
    fsc__bind_opt(s, k++, r->freed, r->freereq_time);
    fsc__bind_opt(s, k++, r->freed, r->free_tag);
    fsc__bind_opt(s, k++, r->completed, r->fc_seq);
    fsc__bind_opt(s, k++, r->completed, r->fc_time);
    fsc__bind_opt(s, k++, r->split_size != 0, r->split_size);
    fsc__bind_opt(s, k++, r->split_size != 0, r->split_time);
    for (int m = 0; m < 2; m++) {
        int has = r->nmerges > m;
        fsc__bind_opt(s, k++, has, r->m_addr[m]);
        fsc__bind_opt(s, k++, has, r->m_size[m]);
        fsc__bind_opt(s, k++, has, r->m_other[m]);
        fsc__bind_opt(s, k++, has, r->m_time[m]);
    }
}

static void bind_segment_row(sqlite3_stmt *s, const fsc__segrow_t *r)
{
    const fsc__seg_t *g = &r->seg;
    int freed = r->freed;
    fsc__bind_u64(s, 1, g->id);
    fsc__bind_u64(s, 2, g->base);
    fsc__bind_u64(s, 3, g->expandable ? g->peak_size : g->size);
    fsc__bind_u64(s, 4, g->pool);
    fsc__bind_u64(s, 5, g->stream);
    sqlite3_bind_int(s, 6, g->expandable);
    fsc__bind_u64(s, 7, g->created_seq);
    fsc__bind_u64(s, 8, g->created_time);
    fsc__bind_opt(s, 9, freed, r->freed_seq);
    fsc__bind_opt(s, 10, freed, r->freed_time);
    fsc__bind_u64(s, 11, g->tag);
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
    fsc__bind_u64(s, 1, seq);
    fsc__bind_u64(s, 2, ev->time_ns);
    sqlite3_bind_int(s, 3, ev->type);
    fsc__bind_opt(s, 4, c & C_ADDR, ev->addr);
    fsc__bind_opt(s, 5, c & C_SIZE, ev->size);
    fsc__bind_opt(s, 6, c & C_REQ, ev->requested);
    fsc__bind_opt(s, 7, c & C_STREAM, ev->stream);
    fsc__bind_opt(s, 8, c & C_POOL, ev->pool);
    fsc__bind_opt(s, 9, c & C_SEG, ev->segment);
    fsc__bind_u64(s, 10, ev->tag);
    fsc__bind_opt(s, 11, c & C_OTHER, ev->other);
}

int fsc__db_exec_op(sqlite3_stmt *const *st, const fsc__op_t *op)
{
    sqlite3_stmt *s;
    switch (op->kind) {
    case FSC__OP_BLOCK:
        s = st[FSC__ST_BLOCK];
        bind_block_row(s, &op->u.row);
        break;
    case FSC__OP_SEGMENT:
        s = st[FSC__ST_SEGMENT];
        bind_segment_row(s, &op->u.seg);
        break;
    default:
        s = st[FSC__ST_OTHER];
        bind_other_row(s, &op->u.other.ev, op->u.other.seq);
        break;
    }
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc;
}

const char *fsc__op_table(int kind)
{
    return kind == FSC__OP_BLOCK ? "blocks" : kind == FSC__OP_SEGMENT ? "segments" : "events";
}

/* The bulk rows go to the writer thread when there is one. */
static int route(fsc_analysis_t *a, const fsc__op_t *op)
{
    if (a->writer != NULL)
        return fsc__writer_push(a, op);
    if (fsc__db_exec_op(a->st, op) != SQLITE_DONE)
        return fsc__db_err(a, fsc__op_table(op->kind));
    return 0;
}

int fsc__db_block_row(fsc_analysis_t *a, const fsc__brow_t *r)
{
    fsc__op_t op;
    op.kind = FSC__OP_BLOCK;
    op.u.row = *r;
    return route(a, &op);
}

int fsc__db_segment_row(fsc_analysis_t *a, const fsc__seg_t *g, int freed, uint64_t freed_seq,
                        uint64_t freed_time)
{
    fsc__op_t op;
    op.kind = FSC__OP_SEGMENT;
    op.u.seg.seg = *g;
    op.u.seg.freed = freed;
    op.u.seg.freed_seq = freed_seq;
    op.u.seg.freed_time = freed_time;
    return route(a, &op);
}

int fsc__db_other_row(fsc_analysis_t *a, const fsc_event_t *ev, uint64_t seq)
{
    fsc__op_t op;
    op.kind = FSC__OP_OTHER;
    op.u.other.ev = *ev;
    op.u.other.ev.text = NULL;
    op.u.other.seq = seq;
    return route(a, &op);
}
