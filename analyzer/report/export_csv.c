/*
 * export_csv.c — one table or view of a run (or job) database as CSV
 * (RFC 4180), for DuckDB, Spark, pandas or a spreadsheet: fragscope export
 * --table T --format csv.
 *
 * Every run's rows, with the run column first, as the table holds them (a
 * schema-1 file gets run 0 in front). The file is checked by the one
 * reader (fsc_rundb_open) and then read through a plain read-only
 * connection, without the reader's per-run views, so that views such as
 * events read every run. Rows are streamed: memory does not grow with the
 * table.
 *
 * RFC 4180: a header line of column names, CRLF line ends, a field quoted
 * when it holds a comma, a double quote, CR or LF, its quotes doubled.
 * NULL is an empty field; integers in decimal; reals with 17 significant
 * digits (exact round trip); text and blobs as their bytes, as UTF-8.
 *
 * Names in the tables come from the user's files (frame names, file names,
 * markers): a text cell that a spreadsheet would take for a formula is
 * neutralised (write_text_cell says how).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc/utf8.h"
#include "rundb_internal.h"

static int write_field(FILE *f, const char *s, int n)
{
    int quote = 0;
    for (int i = 0; i < n && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
    if (!quote)
        return fwrite(s, 1, (size_t)n, f) == (size_t)n ? 0 : -1;
    if (fputc('"', f) == EOF)
        return -1;
    for (int i = 0; i < n; i++) {
        if (s[i] == '"' && fputc('"', f) == EOF)
            return -1;
        if (fputc(s[i], f) == EOF)
            return -1;
    }
    return fputc('"', f) == EOF ? -1 : 0;
}

/* A spreadsheet takes a cell that starts with one of these for a formula
 * (=HYPERLINK(...), @SUM(...), +cmd|...): OWASP's CSV-injection advice and
 * ASVS 1.2.10 name = + - @, tab, carriage return and NUL. */
static int formula_start(const char *s, int n)
{
    return n > 0 && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' ||
                     s[0] == '\t' || s[0] == '\r' || s[0] == '\0');
}

/* A text (or blob) cell: its bytes as UTF-8 (ill-formed sequences become
 * U+FFFD, fsc/utf8.h), and, when it would start a formula, behind a single
 * quote inside a quoted field, as OWASP advises: a spreadsheet then shows
 * the text and evaluates nothing. Numbers never come here: a negative
 * integer or real cell stays a number. */
static int write_text_cell(FILE *f, const char *s, int n)
{
    char *clean = NULL;
    size_t len = 0;
    if (fsc__utf8_sanitize(s, (size_t)n, &clean, &len, NULL) != 0 || len > INT32_MAX) {
        free(clean);
        return -1;
    }
    int rc;
    if (formula_start(clean, (int)len)) {
        rc = fputs("\"'", f) == EOF ? -1 : 0;
        for (size_t i = 0; rc == 0 && i < len; i++)
            if ((clean[i] == '"' && fputc('"', f) == EOF) || fputc(clean[i], f) == EOF)
                rc = -1;
        if (rc == 0 && fputc('"', f) == EOF)
            rc = -1;
    } else
        rc = write_field(f, clean, (int)len);
    free(clean);
    return rc;
}

/* The tables and views of the file, ", "-joined, for the message that
 * lists them. */
static char *table_list(sqlite3 *h)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(h,
                           "SELECT group_concat(name, ', ') FROM (SELECT name FROM sqlite_master"
                           " WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite^_%'"
                           " ESCAPE '^' ORDER BY name)",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    char *out = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
        out = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
}

int fsc_rundb_export_csv(const char *db_path, const char *table, FILE *out, uint64_t *rows,
                         fsc_err_t *err)
{
    if (rows != NULL)
        *rows = 0;
    fsc_rundb_t *rd = NULL;
    int rc = fsc_rundb_open(db_path, &rd, err);
    fsc_rundb_close(rd);
    if (rc != 0)
        return rc;
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(db_path, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rc = fsc_err_set(err, FSC_EIO, "%s: cannot open: %s", db_path,
                         h ? sqlite3_errmsg(h) : "out of memory");
        sqlite3_close(h);
        return rc;
    }
    sqlite3_stmt *st = NULL;
    int known = 0, has_run = 0;
    if (sqlite3_prepare_v2(h,
                           "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view')"
                           " AND name = ?1 AND name NOT LIKE 'sqlite^_%' ESCAPE '^'",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        known = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (!known) {
        char *list = table_list(h);
        rc = fsc_err_set(err, FSC_EUSAGE, "%s: no table or view '%s' (there are: %s)", db_path,
                         table, list ? list : "none");
        free(list);
        sqlite3_close(h);
        return rc;
    }
    char *q = sqlite3_mprintf("SELECT 1 FROM pragma_table_info(%Q) WHERE name = 'run'", table);
    if (q != NULL && sqlite3_prepare_v2(h, q, -1, &st, NULL) == SQLITE_OK)
        has_run = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    sqlite3_free(q);
    st = NULL;
    char *sql = sqlite3_mprintf("SELECT %s* FROM \"%w\"", has_run ? "" : "0 AS run, ", table);
    if (sql == NULL || sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: damaged run database: %s (reading %s)", db_path,
                         sqlite3_errmsg(h), table);
        sqlite3_free(sql);
        sqlite3_close(h);
        return rc;
    }
    sqlite3_free(sql);
    int nc = sqlite3_column_count(st), werr = 0;
    for (int c = 0; c < nc && !werr; c++) {
        const char *name = sqlite3_column_name(st, c);
        werr |= (c > 0 && fputc(',', out) == EOF) || write_field(out, name, (int)strlen(name));
    }
    werr |= fputs("\r\n", out) == EOF;
    int s = SQLITE_DONE;
    uint64_t n = 0;
    while (!werr && (s = sqlite3_step(st)) == SQLITE_ROW) {
        for (int c = 0; c < nc && !werr; c++) {
            if (c > 0 && fputc(',', out) == EOF) {
                werr = 1;
                break;
            }
            switch (sqlite3_column_type(st, c)) {
            case SQLITE_NULL:
                break;
            case SQLITE_INTEGER:
                werr |= fprintf(out, "%lld", (long long)sqlite3_column_int64(st, c)) < 0;
                break;
            case SQLITE_FLOAT:
                werr |= fprintf(out, "%.17g", sqlite3_column_double(st, c)) < 0;
                break;
            default: {
                const char *t = (const char *)sqlite3_column_blob(st, c);
                werr |= write_text_cell(out, t ? t : "", sqlite3_column_bytes(st, c));
            }
            }
        }
        werr |= fputs("\r\n", out) == EOF;
        n++;
    }
    if (werr)
        rc = fsc_err_set(err, FSC_EIO, "cannot write the CSV of %s", table);
    else if (s != SQLITE_DONE)
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: damaged run database: %s (reading %s)", db_path,
                         sqlite3_errmsg(h), table);
    sqlite3_finalize(st);
    sqlite3_close(h);
    if (rc == 0 && rows != NULL)
        *rows = n;
    return rc;
}
