/*
 * model_sql.c — the loader's SQLite helpers: statements, typed columns that
 * tell NULL apart, row loops, growable arrays, and the error messages that
 * tell a foreign file from a damaged one.
 */
#include "model_sql.h"

#include <stdlib.h>
#include <string.h>

char *fsc__ld_strdup(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* Grow *arr (of elem bytes) so that index n fits. */
int fsc__ld_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c <= n)
        c *= 2;
    void *p = realloc(*arr, c * elem);
    if (p == NULL)
        return -1;
    memset((char *)p + *cap * elem, 0, (c - *cap) * elem);
    *arr = p;
    *cap = c;
    return 0;
}

int fsc__ld_nomem(fsc__loader_t *L)
{
    return fsc_err_set(L->err, FSC_ENOMEM, "%s: out of memory while reading the database", L->path);
}

int fsc__ld_fail(fsc__loader_t *L, const char *what)
{
    int code = sqlite3_errcode(L->db);
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        return fsc_err_set(L->err, FSC_EFORMAT, "%s: not an SQLite database (%s)", L->path,
                           sqlite3_errmsg(L->db));
    if (code == SQLITE_ERROR)
        return fsc_err_set(L->err, FSC_EFORMAT, "%s: not a fragscope database (%s: %s)", L->path,
                           what, sqlite3_errmsg(L->db));
    return fsc_err_set(L->err, FSC_ESQLITE, "%s: SQLite error reading %s: %s", L->path, what,
                       sqlite3_errmsg(L->db));
}

int fsc__ld_prepare(fsc__loader_t *L, const char *sql, sqlite3_stmt **st, const char *what)
{
    if (sqlite3_prepare_v2(L->db, sql, -1, st, NULL) != SQLITE_OK) {
        *st = NULL;
        return fsc__ld_fail(L, what);
    }
    return 0;
}

int fsc__ld_has_table(fsc__loader_t *L, const char *name, int *out)
{
    sqlite3_stmt *st;
    int rc = fsc__ld_prepare(L, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?",
                     &st, "the table list");
    if (rc != 0)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    *out = s == SQLITE_ROW;
    sqlite3_finalize(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        return fsc__ld_fail(L, "the table list");
    return 0;
}

int64_t fsc__ld_col_i(sqlite3_stmt *st, int i, int64_t if_null)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? if_null : sqlite3_column_int64(st, i);
}

double fsc__ld_col_d(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? 0.0 : sqlite3_column_double(st, i);
}

int fsc__ld_col_s(fsc__loader_t *L, sqlite3_stmt *st, int i, char **out)
{
    *out = NULL;
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return 0;
    const unsigned char *s = sqlite3_column_text(st, i);
    *out = fsc__ld_strdup(s ? (const char *)s : "");
    return *out == NULL ? fsc__ld_nomem(L) : 0;
}

int fsc__ld_note_tag(fsc__loader_t *L, int64_t id)
{
    if (id < 0)
        return 0;
    if (fsc__ld_grow((void **)&L->tag_ids, &L->cap_tag_ids, L->ntag_ids, sizeof *L->tag_ids) != 0)
        return fsc__ld_nomem(L);
    L->tag_ids[L->ntag_ids++] = id;
    return 0;
}

int fsc__ld_each_row(fsc__loader_t *L, sqlite3_stmt *st, const char *what, fsc__ld_row_fn fn,
                     void *ud)
{
    int s, rc = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = fn(L, st, ud)) != 0)
            break;
    }
    if (rc == 0 && s != SQLITE_DONE && s != SQLITE_ROW)
        rc = fsc__ld_fail(L, what);
    sqlite3_finalize(st);
    return rc;
}

int fsc__ld_count(fsc__loader_t *L, const char *sql, const char *what, int64_t *out)
{
    sqlite3_stmt *st;
    int rc = fsc__ld_prepare(L, sql, &st, what);
    if (rc != 0)
        return rc;
    int s = sqlite3_step(st);
    *out = s == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return s == SQLITE_ROW || s == SQLITE_DONE ? 0 : fsc__ld_fail(L, what);
}

int fsc__ld_tagrow_row(fsc__loader_t *L, sqlite3_stmt *st, void *ud)
{
    fsc__ld_tagrows_t *t = ud;
    if (fsc__ld_grow((void **)t->arr, &t->cap, *t->n, sizeof **t->arr) != 0)
        return fsc__ld_nomem(L);
    fsc__vtagrow_t *r = &(*t->arr)[(*t->n)++];
    r->tag = fsc__ld_col_i(st, 0, 0);
    r->bytes = fsc__ld_col_i(st, 1, 0);
    r->blocks = fsc__ld_col_i(st, 2, 0);
    return fsc__ld_note_tag(L, r->tag);
}
