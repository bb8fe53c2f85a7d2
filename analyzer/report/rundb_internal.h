/*
 * rundb_internal.h — the reader's handle and what its two files share
 * (rundb.c: opening, checking, errors, single values; rundb_rows.c: the row
 * iterators). Internal to the report part.
 */
#ifndef FSC_REPORT_RUNDB_INTERNAL_H
#define FSC_REPORT_RUNDB_INTERNAL_H

#include <sqlite3.h>

#include "fragscope/rundb.h"

/* Statements prepared once per handle and reused (the per-OOM and per-tag
 * lookups run many times). */
enum {
    FSC__RQ_META_VALUE,
    FSC__RQ_SUMMARY_VALUE,
    FSC__RQ_TAG_PATH,
    FSC__RQ_TAG_NODE,     /* parent and name of a tag (rundb_frames.c) */
    FSC__RQ_PYMETA_ENTRY, /* the pytorch.entry record of an event */
    FSC__RQ_PYMETA_SNAP,  /* the pytorch.snapshot record */
    FSC__RQ_COUNT
};

struct fsc_rundb {
    sqlite3 *h;
    char *path;
    fsc_err_t err;
    sqlite3_stmt *cache[FSC__RQ_COUNT];
    int has_runs;     /* schema 2: a runs table, every table with a run column */
    int64_t selected; /* the run the per-run views show (rundb_select.c) */
};

/* The CREATE TEMP VIEW statement of view `name` (events, tag_paths) over
 * the reader's per-run views of the tables, or NULL for another name
 * (schema.c). */
const char *fsc__rundb_run_view(const char *name);

/* After the checks of fsc_rundb_open: note the layout and select the lowest
 * run (rundb_select.c). */
int fsc__rundb_select_first(fsc_rundb_t *db);

/* The error of the last SQLite call on db, while reading table: a file
 * SQLite cannot read as a database, or a table or column missing, is a
 * damaged run database (FSC_EFORMAT); anything else is FSC_ESQLITE. */
int fsc__rundb_fail(fsc_rundb_t *db, const char *table);

/* Prepare sql for reading table into *st. Returns 0, 1 when the statement
 * failed because table does not exist (an optional table: no rows), or a
 * negative error. */
int fsc__rundb_prepare(fsc_rundb_t *db, const char *table, const char *sql, sqlite3_stmt **st);

/* Run cached query q (FSC__RQ_*) with a text key or an integer id: 1 and
 * *st on the first row (reset it when done), 0 when there is none or the
 * table is missing, negative on error. */
int fsc__rundb_lookup(fsc_rundb_t *db, int q, const char *key, int64_t id, int64_t arg2,
                      sqlite3_stmt **st);

#endif
