/*
 * store_blocks.c — how block rows reach SQLite: a table-valued function
 * over the rows themselves, fsc_block_rows(src), so that one statement,
 *
 *     INSERT INTO blocks SELECT 0, * FROM fsc_block_rows(?1)
 *
 * writes a whole run of rows (see store_internal.h). Binding each row's
 * 26 values cost a bind call per value, about a quarter of the writer's
 * time; a virtual table's column call hands a value over for a fraction
 * of that, and the statement's own cost (its statement journal included)
 * is paid once per run of rows rather than once per 16 rows.
 * docs/BENCHMARKS.md has the figures.
 *
 * The function is eponymous-only (no CREATE VIRTUAL TABLE: nothing of it
 * is stored in the database), exists only on the writer's connection, is
 * direct-only (not from views or triggers) and reads only a pointer bound
 * with sqlite3_bind_pointer (SQLite 3.20) under its own type name, which
 * SQL text cannot forge: from SQL it is an empty table.
 */
#include <string.h>

#include "fragscope/analyzer.h"
#include "store_internal.h"

/* The pointer type's name: sqlite3_value_pointer returns NULL for any
 * other. */
#define SRC_TYPE "fsc_blocksrc"

void fsc__block_values(const fsc__brow_t *r, sqlite3_int64 v[FSC__BLOCK_COLUMNS],
                       uint32_t *nulls)
{
    uint32_t n = 0;
    int k = 0;
#define VAL(x) (v[k++] = (sqlite3_int64)(x))
#define OPT(has, x) (n |= (has) ? 0u : 1u << k, VAL(x))
    VAL(r->alloc_seq);
    VAL(r->alloc_time);
    VAL(r->addr);
    VAL(r->size);
    VAL(r->requested);
    VAL(r->stream);
    VAL(r->pool);
    VAL(r->segment);
    VAL(r->tag);
    VAL(fsc_metric_bin(r->size));
    VAL(r->cache_hit);
    OPT(r->freed, r->freereq_seq);
    OPT(r->freed, r->freereq_time);
    OPT(r->freed, r->free_tag);
    OPT(r->completed, r->fc_seq);
    OPT(r->completed, r->fc_time);
    OPT(r->split_size != 0, r->split_size);
    OPT(r->split_size != 0, r->split_time);
    for (int m = 0; m < 2; m++) {
        int has = r->nmerges > m;
        OPT(has, r->m_addr[m]);
        OPT(has, r->m_size[m]);
        OPT(has, r->m_other[m]);
        OPT(has, r->m_time[m]);
    }
#undef OPT
#undef VAL
    *nulls = n;
}

typedef struct cursor {
    sqlite3_vtab_cursor base;
    const fsc__blocksrc_t *src;
    size_t i;
    uint32_t nulls;
    sqlite3_int64 v[FSC__BLOCK_COLUMNS];
} cursor_t;

static void load(cursor_t *c)
{
    const fsc__blocksrc_t *s = c->src;
    if (s != NULL && c->i < s->n)
        fsc__block_values(&s->ops[(s->first + c->i) % s->cap].u.row, c->v, &c->nulls);
}

/* The columns are named after blocks' (run apart), in its order; the
 * hidden one takes the source. */
static int vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **err)
{
    (void)aux, (void)argc, (void)argv, (void)err;
    int rc = sqlite3_declare_vtab(
        db, "CREATE TABLE x(alloc_seq, alloc_time_ns, addr, size, requested, stream, pool,"
            " segment, tag, bin, cache_hit, free_requested_seq, free_requested_time_ns,"
            " free_tag, free_completed_seq, free_completed_time_ns, split_size, split_time_ns,"
            " merge1_addr, merge1_size, merge1_other, merge1_time_ns, merge2_addr, merge2_size,"
            " merge2_other, merge2_time_ns, src HIDDEN)");
    if (rc != SQLITE_OK)
        return rc;
#ifdef SQLITE_VTAB_DIRECTONLY /* SQLite 3.31 */
    sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
#endif
    sqlite3_vtab *t = sqlite3_malloc(sizeof *t);
    if (t == NULL)
        return SQLITE_NOMEM;
    memset(t, 0, sizeof *t);
    *out = t;
    return SQLITE_OK;
}

static int vt_disconnect(sqlite3_vtab *t)
{
    sqlite3_free(t);
    return SQLITE_OK;
}

/* Only a scan given its source: fsc_block_rows(?). */
static int vt_best_index(sqlite3_vtab *t, sqlite3_index_info *ii)
{
    (void)t;
    for (int i = 0; i < ii->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &ii->aConstraint[i];
        if (c->iColumn == FSC__BLOCK_COLUMNS && c->op == SQLITE_INDEX_CONSTRAINT_EQ &&
            c->usable) {
            ii->aConstraintUsage[i].argvIndex = 1;
            ii->aConstraintUsage[i].omit = 1;
            ii->estimatedCost = 1.0;
            return SQLITE_OK;
        }
    }
    return SQLITE_CONSTRAINT;
}

static int vt_open(sqlite3_vtab *t, sqlite3_vtab_cursor **out)
{
    (void)t;
    cursor_t *c = sqlite3_malloc(sizeof *c);
    if (c == NULL)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static int vt_close(sqlite3_vtab_cursor *c)
{
    sqlite3_free(c);
    return SQLITE_OK;
}

static int vt_filter(sqlite3_vtab_cursor *base, int idx, const char *idxstr, int argc,
                     sqlite3_value **argv)
{
    (void)idx, (void)idxstr;
    cursor_t *c = (cursor_t *)base;
    c->src = argc == 1 ? sqlite3_value_pointer(argv[0], SRC_TYPE) : NULL;
    c->i = 0;
    load(c);
    return SQLITE_OK;
}

static int vt_next(sqlite3_vtab_cursor *base)
{
    cursor_t *c = (cursor_t *)base;
    c->i++;
    load(c);
    return SQLITE_OK;
}

static int vt_eof(sqlite3_vtab_cursor *base)
{
    const cursor_t *c = (const cursor_t *)base;
    return c->src == NULL || c->i >= c->src->n;
}

static int vt_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col)
{
    const cursor_t *c = (const cursor_t *)base;
    if (col < 0 || col >= FSC__BLOCK_COLUMNS || (c->nulls >> col & 1u))
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int64(ctx, c->v[col]);
    return SQLITE_OK;
}

static int vt_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid)
{
    *rowid = (sqlite3_int64)((const cursor_t *)base)->i;
    return SQLITE_OK;
}

static const sqlite3_module k_module = {
    .iVersion = 0,
    .xConnect = vt_connect,
    .xBestIndex = vt_best_index,
    .xDisconnect = vt_disconnect,
    .xOpen = vt_open,
    .xClose = vt_close,
    .xFilter = vt_filter,
    .xNext = vt_next,
    .xEof = vt_eof,
    .xColumn = vt_column,
    .xRowid = vt_rowid,
};

int fsc__store_blocks_module(sqlite3 *db)
{
    return sqlite3_create_module(db, "fsc_block_rows", &k_module, NULL);
}

int fsc__store_exec_blocks(sqlite3_stmt *const *st, const fsc__blocksrc_t *src)
{
    sqlite3_stmt *s = st[FSC__ST_BLOCK];
    sqlite3_bind_pointer(s, 1, (void *)src, SRC_TYPE, NULL);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    /* no pointer left behind; after a failure the statement is not run
     * again, and a bind would clear the connection's message */
    if (rc == SQLITE_DONE)
        sqlite3_bind_null(s, 1);
    return rc;
}
