/*
 * model_sql.h — what the parts of the model loader share (internal): the
 * loader state and small SQLite helpers. Every helper that can fail records
 * a message naming the database file and returns a negative FSC_E* code.
 */
#ifndef FSC_VIEWER_MODEL_SQL_H
#define FSC_VIEWER_MODEL_SQL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef struct fsc__loader {
    sqlite3 *db;
    const char *path;
    fsc_err_t *err;
    int64_t *tag_ids; /* every tag id referenced, for the tag table */
    size_t ntag_ids, cap_tag_ids;
} fsc__loader_t;

char *fsc__ld_strdup(const char *s);
/* Grow *arr (of elem bytes each, zero-filled) so that index n fits. */
int fsc__ld_grow(void **arr, size_t *cap, size_t n, size_t elem);
int fsc__ld_nomem(fsc__loader_t *L);
/* The error of the last SQLite call: FSC_EFORMAT "not an SQLite database"
 * or "not a fragscope database (what: ...)" for schema mismatches, else
 * FSC_ESQLITE with SQLite's message. */
int fsc__ld_fail(fsc__loader_t *L, const char *what);
int fsc__ld_prepare(fsc__loader_t *L, const char *sql, sqlite3_stmt **st, const char *what);
/* *out = whether a table or view of that name exists. */
int fsc__ld_has_table(fsc__loader_t *L, const char *name, int *out);
int64_t fsc__ld_col_i(sqlite3_stmt *st, int i, int64_t if_null);
double fsc__ld_col_d(sqlite3_stmt *st, int i);
/* A malloc'd copy of a TEXT column, NULL for SQL NULL. */
int fsc__ld_col_s(fsc__loader_t *L, sqlite3_stmt *st, int i, char **out);
/* Remember a tag id the page will refer to (its path is loaded at the end). */
int fsc__ld_note_tag(fsc__loader_t *L, int64_t id);

/* Run a prepared statement row by row: fn(L, st, ud) per row; stops on its
 * error; finalizes the statement. */
typedef int (*fsc__ld_row_fn)(fsc__loader_t *L, sqlite3_stmt *st, void *ud);
int fsc__ld_each_row(fsc__loader_t *L, sqlite3_stmt *st, const char *what, fsc__ld_row_fn fn,
                     void *ud);
/* The single integer a query returns (0 when no row). */
int fsc__ld_count(fsc__loader_t *L, const char *sql, const char *what, int64_t *out);

/* A growable array filled by a row function, keeping at most max rows. */
typedef struct fsc__ld_arr {
    void **p;
    size_t *n, cap, max;
} fsc__ld_arr_t;

/* Rows (tag, bytes, blocks) into a fsc__vtagrow_t array. */
typedef struct fsc__ld_tagrows {
    fsc__vtagrow_t **arr;
    size_t *n, cap;
} fsc__ld_tagrows_t;
int fsc__ld_tagrow_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud);

/* The parts of the model that have their own file. */
int fsc__model_load_ooms(fsc__loader_t *L, fsc__model_t *m);
int fsc__model_load_layouts(fsc__loader_t *L, fsc__model_t *m);

#endif
