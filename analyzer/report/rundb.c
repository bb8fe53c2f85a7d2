/*
 * rundb.c — opening a run database for reading (report, check, diff) and
 * the small query helpers they share.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "rundb.h"

int fsc_rundb_open(const char *path, sqlite3 **out, fsc_err_t *err)
{
    struct stat st;
    *out = NULL;
    if (path == NULL || stat(path, &st) != 0)
        return fsc_err_set(err, FSC_ENOENT, "%s: %s", path ? path : "(null)",
                           path ? strerror(errno) : "no path");
    if (!S_ISREG(st.st_mode))
        return fsc_err_set(err, FSC_EFORMAT, "%s: not a regular file", path);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        int rc = fsc_err_set(err, FSC_EIO, "%s: cannot open: %s", path,
                             db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return rc;
    }
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema_version'", -1,
                                &s, NULL);
    if (rc == SQLITE_NOTADB || sqlite3_errcode(db) == SQLITE_NOTADB) {
        sqlite3_close(db);
        return fsc_err_set(err, FSC_EFORMAT, "%s: not a fragscope run database (not SQLite)",
                           path);
    }
    if (rc != SQLITE_OK) {
        sqlite3_close(db);
        return fsc_err_set(err, FSC_EFORMAT,
                           "%s: not a fragscope run database (no meta table)", path);
    }
    int64_t version = -1;
    if (sqlite3_step(s) == SQLITE_ROW)
        version = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (version < 1) {
        sqlite3_close(db);
        return fsc_err_set(err, FSC_EFORMAT,
                           "%s: not a fragscope run database (no schema version)", path);
    }
    if (version > FSC_DB_SCHEMA_VERSION) {
        sqlite3_close(db);
        return fsc_err_set(err, FSC_EVERSION,
                           "%s: run database schema %lld is newer than this fragscope (%d)",
                           path, (long long)version, FSC_DB_SCHEMA_VERSION);
    }
    /* An analysis that failed never renames its file into place, so a
     * database without its summary was damaged or made by something else. */
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM summary LIMIT 1", -1, &s, NULL) !=
        SQLITE_OK) {
        rc = fsc_err_set(err, FSC_EFORMAT, "%s: damaged run database: %s", path,
                         sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc;
    }
    sqlite3_finalize(s);
    *out = db;
    return 0;
}

static int one(sqlite3 *db, const char *sql, const char *key, sqlite3_stmt **out)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_ROW || sqlite3_column_type(s, 0) == SQLITE_NULL) {
        sqlite3_finalize(s);
        return 0;
    }
    *out = s;
    return 1;
}

double fsc__rundb_summary(sqlite3 *db, const char *key, double dflt)
{
    sqlite3_stmt *s;
    if (!one(db, "SELECT value FROM summary WHERE key=?", key, &s))
        return dflt;
    double v = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    return v;
}

int64_t fsc__rundb_summary_int(sqlite3 *db, const char *key, int64_t dflt)
{
    sqlite3_stmt *s;
    if (!one(db, "SELECT value FROM summary WHERE key=?", key, &s))
        return dflt;
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

int64_t fsc__rundb_meta_int(sqlite3 *db, const char *key, int64_t dflt)
{
    sqlite3_stmt *s;
    if (!one(db, "SELECT value FROM meta WHERE key=?", key, &s))
        return dflt;
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

void fsc__rundb_meta_text(sqlite3 *db, const char *key, char *buf, size_t cap)
{
    sqlite3_stmt *s;
    buf[0] = '\0';
    if (!one(db, "SELECT value FROM meta WHERE key=?", key, &s))
        return;
    const unsigned char *t = sqlite3_column_text(s, 0);
    snprintf(buf, cap, "%s", t ? (const char *)t : "");
    sqlite3_finalize(s);
}
