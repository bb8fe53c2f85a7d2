/*
 * store_internal.h — what store.c and store_writer.c share: the connection,
 * the prepared statements and the writer thread. Private to those two.
 *
 * The SQLite connection is used by one thread at a time: while the writer
 * runs, the replay thread hands rows over (the bulk rows, and the rows of
 * the small tables met during the replay: tags, markers, PyTorch keys,
 * warnings, device samples) and touches SQLite only after fsc__writer_sync
 * (OOM diagnoses, layouts, the tables written at the end).
 */
#ifndef FSC_ANALYZER_STORE_INTERNAL_H
#define FSC_ANALYZER_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store.h"

/* Prepared statements, all used inside the one transaction. */
enum {
    FSC__ST_OTHER, FSC__ST_BLOCK, FSC__ST_SEGMENT, FSC__ST_TAG, FSC__ST_MARKER,
    FSC__ST_WARNING, FSC__ST_META, FSC__ST_SUMMARY, FSC__ST_TIMELINE, FSC__ST_OOM,
    FSC__ST_OOM_SEG, FSC__ST_OOM_PIN, FSC__ST_OOM_TAG, FSC__ST_SNAP, FSC__ST_LAYOUT,
    FSC__ST_BIN, FSC__ST_TAGSTAT, FSC__ST_FRAG, FSC__ST_FRAG_BLOCK, FSC__ST_FRAG_TAG,
    FSC__ST_TIMELINE_FRAG, FSC__ST_TIMELINE_EXT, FSC__ST_TAGFRAME, FSC__ST_PYMETA,
    FSC__ST_DEVMEM, FSC__ST_COUNT
};

/* A block row's columns but run: the values of fsc_block_rows, in the
 * blocks table's order. */
#define FSC__BLOCK_COLUMNS 26

/* A run of block rows: ops[(first + i) % cap].u.row for i < n, every op
 * of kind FSC__OP_BLOCK (a stretch of the writer's ring, or one op). */
typedef struct fsc__blocksrc {
    const fsc__op_t *ops;
    size_t first, n, cap;
} fsc__blocksrc_t;

typedef struct fsc__writer fsc__writer_t;

struct fsc__store {
    fsc_err_t err;
    char *path;                   /* named in messages */
    sqlite3 *db;
    sqlite3_stmt *st[FSC__ST_COUNT];
    fsc__writer_t *writer;        /* thread writing the bulk rows, or NULL */
    uint64_t snapshots;           /* layout_snapshots rows written */
};

/* Bind and step one row on its statement; returns SQLite's code, and in
 * *what the table last written (for messages). The op keeps what it owns
 * (fsc__op_release). */
int fsc__store_exec_op(sqlite3_stmt *const *st, const fsc__op_t *op, const char **what);
/* A run of block rows in one statement (FSC__ST_BLOCK, through the table-
 * valued function fsc_block_rows: store_blocks.c); returns SQLite's code. */
int fsc__store_exec_blocks(sqlite3_stmt *const *st, const fsc__blocksrc_t *src);
/* Register fsc_block_rows on the connection; returns SQLite's code. */
int fsc__store_blocks_module(sqlite3 *db);
/* A block row's values, and in *nulls bit i set where value i is NULL. */
void fsc__block_values(const fsc__brow_t *r, sqlite3_int64 v[FSC__BLOCK_COLUMNS],
                       uint32_t *nulls);

/* Start the thread (s->writer); when it cannot be started the rows are
 * written on the caller's thread instead (s->writer stays NULL). */
void fsc__writer_start(fsc__store_t *s);
/* Queue one row. Fails with the writer's error once it has failed. */
int fsc__writer_push(fsc__store_t *s, const fsc__op_t *op);
/* Wait until every queued row is written; returns the writer's error, if
 * any (copied into s->err). No-op without a writer. */
int fsc__writer_sync(fsc__store_t *s);
/* Sync, stop and join the thread; s->writer becomes NULL. */
int fsc__writer_stop(fsc__store_t *s);

#endif
