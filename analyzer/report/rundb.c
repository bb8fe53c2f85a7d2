/*
 * rundb.c — opening a run database for reading: the one check every reader
 * goes through (a regular, non-empty SQLite file with a meta table, a
 * schema_version this fragscope reads, and a summary table), the errors it
 * gives, and the lookups of single values (meta and summary keys, tag
 * paths). The row iterators are in rundb_rows.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rundb_internal.h"

int fsc__rundb_fail(fsc_rundb_t *db, const char *table)
{
    int code = sqlite3_errcode(db->h);
    if (code == SQLITE_ERROR || code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        return fsc_err_set(&db->err, FSC_EFORMAT, "%s: damaged run database: %s (reading %s)",
                           db->path, sqlite3_errmsg(db->h), table);
    if (code == SQLITE_NOMEM)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory reading %s", db->path,
                           table);
    return fsc_err_set(&db->err, FSC_ESQLITE, "%s: cannot read the run database: %s (reading %s)",
                       db->path, sqlite3_errmsg(db->h), table);
}

int fsc_rundb_has_table(fsc_rundb_t *db, const char *table, int *out)
{
    sqlite3_stmt *st = NULL;
    *out = 0;
    if (sqlite3_prepare_v2(db->h,
                           "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view')"
                           " AND name = ?", -1, &st, NULL) != SQLITE_OK)
        return fsc__rundb_fail(db, "the table list");
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    *out = s == SQLITE_ROW;
    int rc = s == SQLITE_ROW || s == SQLITE_DONE ? 0 : fsc__rundb_fail(db, "the table list");
    sqlite3_finalize(st);
    return rc;
}

int fsc__rundb_prepare(fsc_rundb_t *db, const char *table, const char *sql, sqlite3_stmt **st)
{
    *st = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, st, NULL) == SQLITE_OK)
        return 0;
    int rc = fsc__rundb_fail(db, table), have = 1;
    /* Only meta and summary are required (checked at open); a database
     * without the other tables reads as one without rows in them. */
    if (fsc_rundb_has_table(db, table, &have) == 0 && !have) {
        fsc_err_clear(&db->err);
        return 1;
    }
    return rc;
}

/* ---- opening ----------------------------------------------------------- */

static int not_rundb(fsc_err_t *err, const char *path, const char *why)
{
    return fsc_err_set(err, FSC_EFORMAT, "%s: not a fragscope run database (%s)", path, why);
}

static int check(fsc_rundb_t *db, fsc_err_t *err)
{
    const char *path = db->path;
    int have = 0;
    /* The first read of the file: SQLite says here whether it is SQLite. */
    if (fsc_rundb_has_table(db, "meta", &have) != 0) {
        if (sqlite3_extended_errcode(db->h) == SQLITE_NOTADB)
            return not_rundb(err, path, "not an SQLite database");
        return fsc_err_copy(err, &db->err);
    }
    if (!have)
        return not_rundb(err, path, "no meta table");
    int64_t version = 0;
    int rc = fsc_rundb_meta_int(db, "schema_version", 0, &version);
    if (rc != 0)
        return fsc_err_copy(err, &db->err);
    if (version < 1)
        return not_rundb(err, path, "no schema version");
    if (version > FSC_RUNDB_SCHEMA_VERSION)
        return fsc_err_set(err, FSC_EVERSION,
                           "%s: run database schema version %lld is newer than this fragscope "
                           "reads (%d); upgrade fragscope",
                           path, (long long)version, FSC_RUNDB_SCHEMA_VERSION);
    /* Schema 2: the lowest run is the one read until another is selected. */
    if (fsc__rundb_select_first(db) != 0)
        return fsc_err_copy(err, &db->err);
    /* An analysis that failed never renames its file into place, so a
     * database without its summary was damaged or made by something else. */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT key, value, unit FROM summary LIMIT 1", -1, &st, NULL) !=
        SQLITE_OK) {
        fsc__rundb_fail(db, "summary");
        return fsc_err_copy(err, &db->err);
    }
    sqlite3_finalize(st);
    return 0;
}

int fsc_rundb_open(const char *path, fsc_rundb_t **out, fsc_err_t *err)
{
    *out = NULL;
    if (path == NULL || path[0] == '\0')
        return fsc_err_set(err, FSC_EINVAL, "no run database given");
    struct stat sb;
    if (stat(path, &sb) != 0)
        return fsc_err_set(err, errno == ENOENT || errno == ENOTDIR ? FSC_ENOENT : FSC_EIO,
                           "%s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return fsc_err_set(err, FSC_EFORMAT, "%s: not a regular file", path);
    int irc = fsc_infile_check(path, err); /* no permission: bad input, not an I/O error */
    if (irc != 0)
        return irc;
    if (sb.st_size == 0)
        return not_rundb(err, path, "empty file");
    fsc_rundb_t *db = calloc(1, sizeof *db);
    if (db == NULL || (db->path = strdup(path)) == NULL) {
        free(db);
        return fsc_err_set(err, FSC_ENOMEM, "%s: out of memory", path);
    }
    int rc;
    /* One handle, one thread at a time: no per-call mutex (every column of
     * every row is a call). */
    if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK)
        rc = fsc_err_set(err, FSC_EIO, "%s: cannot open: %s", path,
                         db->h ? sqlite3_errmsg(db->h) : "out of memory");
    else
        rc = check(db, err);
    if (rc != 0) {
        fsc_rundb_close(db);
        return rc;
    }
    *out = db;
    return 0;
}

void fsc_rundb_close(fsc_rundb_t *db)
{
    if (db == NULL)
        return;
    for (int i = 0; i < FSC__RQ_COUNT; i++)
        sqlite3_finalize(db->cache[i]);
    sqlite3_close(db->h);
    free(db->path);
    free(db);
}

const char *fsc_rundb_path(const fsc_rundb_t *db)
{
    return db->path;
}

const fsc_err_t *fsc_rundb_error(const fsc_rundb_t *db)
{
    return &db->err;
}

int fsc_rundb_count(fsc_rundb_t *db, const char *table, int64_t *out)
{
    *out = 0;
    char *sql = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", table);
    if (sql == NULL)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    sqlite3_stmt *st;
    int rc = fsc__rundb_prepare(db, table, sql, &st);
    sqlite3_free(sql);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else
        rc = fsc__rundb_fail(db, table);
    sqlite3_finalize(st);
    return rc;
}

/* ---- single values ------------------------------------------------------ */

static const char *const k_cached_sql[FSC__RQ_COUNT] = {
    [FSC__RQ_META_VALUE] = "SELECT value FROM meta WHERE key = ?1",
    [FSC__RQ_SUMMARY_VALUE] = "SELECT value FROM summary WHERE key = ?1",
    [FSC__RQ_TAG_PATH] = "SELECT parent, name FROM tags WHERE id = ?1",
    [FSC__RQ_TAG_NODE] = "SELECT parent, name FROM tags WHERE id = ?1",
    [FSC__RQ_PYMETA_ENTRY] = ("SELECT json FROM pytorch_meta WHERE seq = ?1 AND kind = 'entry'"
                              " ORDER BY id DESC LIMIT 1"),
    [FSC__RQ_PYMETA_SNAP] = "SELECT json FROM pytorch_meta WHERE kind = ?1 ORDER BY id LIMIT 1",
};

static const char *const k_cached_table[FSC__RQ_COUNT] = {
    [FSC__RQ_META_VALUE] = "meta",
    [FSC__RQ_SUMMARY_VALUE] = "summary",
    [FSC__RQ_TAG_PATH] = "tags",
    [FSC__RQ_TAG_NODE] = "tags",
    [FSC__RQ_PYMETA_ENTRY] = "pytorch_meta",
    [FSC__RQ_PYMETA_SNAP] = "pytorch_meta",
};

/* Run cached query q with its text key or integer id: 1 and *st on the
 * (first) row, 0 when there is none (or the table is missing), negative on
 * error. The caller resets *st when done with the row. */
static int lookup(fsc_rundb_t *db, int q, const char *key, int64_t id, int64_t arg2,
                  sqlite3_stmt **st)
{
    if (db->cache[q] == NULL) {
        int rc = fsc__rundb_prepare(db, k_cached_table[q], k_cached_sql[q], &db->cache[q]);
        if (rc != 0)
            return rc > 0 ? 0 : rc;
    }
    sqlite3_stmt *s = db->cache[q];
    sqlite3_reset(s);
    if (key != NULL)
        sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_int64(s, 1, id);
    if (sqlite3_bind_parameter_count(s) >= 2)
        sqlite3_bind_int64(s, 2, arg2);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW) {
        *st = s;
        return 1;
    }
    int rc = r == SQLITE_DONE ? 0 : fsc__rundb_fail(db, k_cached_table[q]);
    sqlite3_reset(s);
    return rc;
}

int fsc__rundb_lookup(fsc_rundb_t *db, int q, const char *key, int64_t id, int64_t arg2,
                      sqlite3_stmt **st)
{
    return lookup(db, q, key, id, arg2, st);
}

static int value_int(fsc_rundb_t *db, int q, const char *key, int64_t dflt, int64_t *out)
{
    sqlite3_stmt *s = NULL;
    *out = dflt;
    int rc = lookup(db, q, key, 0, 0, &s);
    if (rc <= 0)
        return rc;
    if (sqlite3_column_type(s, 0) != SQLITE_NULL)
        *out = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return 0;
}

int fsc_rundb_meta_int(fsc_rundb_t *db, const char *key, int64_t dflt, int64_t *out)
{
    return value_int(db, FSC__RQ_META_VALUE, key, dflt, out);
}

int fsc_rundb_summary_int(fsc_rundb_t *db, const char *key, int64_t dflt, int64_t *out)
{
    return value_int(db, FSC__RQ_SUMMARY_VALUE, key, dflt, out);
}

int fsc_rundb_summary_real(fsc_rundb_t *db, const char *key, double dflt, double *out)
{
    sqlite3_stmt *s = NULL;
    *out = dflt;
    int rc = lookup(db, FSC__RQ_SUMMARY_VALUE, key, 0, 0, &s);
    if (rc <= 0)
        return rc;
    if (sqlite3_column_type(s, 0) != SQLITE_NULL)
        *out = sqlite3_column_double(s, 0);
    sqlite3_reset(s);
    return 0;
}

int fsc_rundb_meta_text(fsc_rundb_t *db, const char *key, char *buf, size_t cap)
{
    sqlite3_stmt *s = NULL;
    if (cap > 0)
        buf[0] = '\0';
    int rc = lookup(db, FSC__RQ_META_VALUE, key, 0, 0, &s);
    if (rc <= 0)
        return rc;
    const unsigned char *t = sqlite3_column_text(s, 0);
    if (t != NULL && cap > 0)
        snprintf(buf, cap, "%s", (const char *)t);
    sqlite3_reset(s);
    return 0;
}

/* The path is built from the parent links, innermost name first, so that a
 * tail of tail_chars characters costs only the names it shows: tags are
 * stored as (parent, name), never as full paths (a tree 20 000 deep would
 * make those quadratic). Walks at most FSC__TAG_MAX_DEPTH links (a cycle in
 * a damaged database ends there). */
#define FSC__TAG_MAX_DEPTH (1u << 22)

static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0u) != 0x80u;
    return c;
}

int fsc_rundb_tag_path(fsc_rundb_t *db, int64_t id, size_t tail_chars, char **out)
{
    *out = NULL;
    char *buf = NULL; /* names joined innermost first, each reversed in place later */
    size_t len = 0, cap = 0, chars = 0;
    int rc = 0, found = 0;
    for (uint32_t depth = 0; depth < FSC__TAG_MAX_DEPTH; depth++) {
        sqlite3_stmt *s = NULL;
        int r = lookup(db, FSC__RQ_TAG_PATH, NULL, id, 0, &s);
        if (r < 0) {
            rc = r;
            break;
        }
        if (r == 0)
            break; /* no such tag (or the parent of a placeholder) */
        found = 1;
        int root = sqlite3_column_type(s, 0) == SQLITE_NULL;
        int64_t parent = sqlite3_column_int64(s, 0);
        const char *name = (const char *)sqlite3_column_text(s, 1);
        size_t n = name != NULL ? (size_t)sqlite3_column_bytes(s, 1) : 0;
        if (root || parent == id) {
            sqlite3_reset(s);
            break; /* the root's name is not part of paths */
        }
        if (len + n + 2 > cap) {
            size_t nc = cap ? cap * 2 : 256;
            while (nc < len + n + 2)
                nc *= 2;
            char *nb = realloc(buf, nc);
            if (nb == NULL) {
                sqlite3_reset(s);
                rc = fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
                break;
            }
            buf = nb;
            cap = nc;
        }
        /* each name stored reversed, so the whole reversed at the end reads
         * outermost first */
        if (len > 0)
            buf[len++] = '/';
        for (size_t i = 0; i < n; i++)
            buf[len + i] = name[n - 1 - i];
        len += n;
        chars += utf8_chars(name, n) + 1;
        sqlite3_reset(s);
        id = parent;
        if (tail_chars > 0 && chars > tail_chars)
            break;
    }
    if (rc != 0 || !found) {
        free(buf);
        return rc;
    }
    if (buf == NULL && (buf = malloc(1)) == NULL)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    for (size_t i = 0; i < len / 2; i++) {
        char t = buf[i];
        buf[i] = buf[len - 1 - i];
        buf[len - 1 - i] = t;
    }
    buf[len] = '\0';
    /* the reversal of a multi-byte character restored its byte order: the
     * string now reads outermost first, characters intact */
    if (tail_chars > 0 && utf8_chars(buf, len) > tail_chars) {
        size_t skip = utf8_chars(buf, len) - tail_chars, i = 0;
        for (size_t c = 0; i < len; i++) {
            if (((unsigned char)buf[i] & 0xc0u) != 0x80u) {
                if (c == skip)
                    break;
                c++;
            }
        }
        memmove(buf, buf + i, len - i + 1);
    }
    *out = buf;
    return 0;
}
