/*
 * rundb_frames.c — names for tags and the PyTorch entry behind an event,
 * read from run.db: a tag is named by its innermost user frame plus its
 * callers (the frame filter of fragscope/frames.h decides what is noise),
 * never by the '/'-joined path, which reads as C++ noise for stacks='all'
 * snapshots and cannot tell a '/' of a file name from one between frames.
 * The naming itself is fsc_frame_label's (common/frames.c), which whatif
 * uses for its request streams too; here the names are read.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/frames.h"
#include "rundb_internal.h"

/* The node names from id up to the root, innermost first (at most
 * FSC_FRAME_LABEL_WALK), malloc'd into names/lens; *n their count. */
static int chain(fsc_rundb_t *db, int64_t id, char **names, size_t *lens, size_t *n)
{
    *n = 0;
    for (int64_t t = id; t != 0 && *n < FSC_FRAME_LABEL_WALK;) {
        sqlite3_stmt *s;
        int rc = fsc__rundb_lookup(db, FSC__RQ_TAG_NODE, NULL, t, 0, &s);
        if (rc <= 0)
            return rc;
        int64_t parent = sqlite3_column_type(s, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 0);
        const char *nm = (const char *)sqlite3_column_text(s, 1);
        size_t len = nm ? (size_t)sqlite3_column_bytes(s, 1) : 0;
        char *x = malloc(len + 1);
        if (x == NULL) {
            sqlite3_reset(s);
            return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
        }
        memcpy(x, nm ? nm : "", len);
        x[len] = '\0';
        sqlite3_reset(s);
        names[*n] = x;
        lens[(*n)++] = len;
        t = parent == t ? 0 : parent;
    }
    return 0;
}

typedef struct path {
    char *names[FSC_FRAME_LABEL_WALK];
    size_t lens[FSC_FRAME_LABEL_WALK];
    size_t n;
} path_t;

static void path_free(path_t *p)
{
    for (size_t i = 0; p != NULL && i < p->n; i++)
        free(p->names[i]);
    free(p);
}

static int nomem(fsc_rundb_t *db)
{
    return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
}

int fsc_rundb_tag_label(fsc_rundb_t *db, int64_t id, int all_frames, int depth, char *buf,
                        size_t cap)
{
    if (cap == 0)
        return FSC_EINVAL;
    buf[0] = '\0';
    if (id == 0) {
        snprintf(buf, cap, "(untagged)");
        return 0;
    }
    path_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return nomem(db);
    int rc = chain(db, id, p->names, p->lens, &p->n);
    if (rc == 0 && p->n == 0)
        snprintf(buf, cap, "#%lld", (long long)id);
    else if (rc == 0 && fsc_frame_label((const char *const *)p->names, p->lens, p->n,
                                        all_frames, depth, buf, cap) != 0)
        rc = nomem(db);
    path_free(p);
    return rc;
}

int fsc_rundb_tag_label_apart(fsc_rundb_t *db, int64_t id, int64_t other, int all_frames,
                              char *buf, size_t cap)
{
    if (id == other || id == 0)
        return fsc_rundb_tag_label(db, id, all_frames, 2, buf, cap);
    path_t *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    int rc = a == NULL || b == NULL ? nomem(db) : 0;
    if (rc == 0)
        rc = chain(db, id, a->names, a->lens, &a->n);
    if (rc == 0)
        rc = chain(db, other, b->names, b->lens, &b->n);
    if (rc == 0 && a->n == 0)
        rc = fsc_rundb_tag_label(db, id, all_frames, 2, buf, cap);
    else if (rc == 0 &&
             fsc_frame_label_apart((const char *const *)a->names, a->lens, a->n,
                                   (const char *const *)b->names, b->lens, b->n, all_frames,
                                   2, buf, cap) != 0)
        rc = nomem(db);
    path_free(a);
    path_free(b);
    return rc;
}

/* The string under key in the JSON object text (or "" when absent). */
static int json_text(const char *json, const char *key, char *buf, size_t cap, int *found)
{
    cJSON *o = cJSON_Parse(json);
    *found = 0;
    if (o == NULL)
        return 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v)) {
        snprintf(buf, cap, "%s", v->valuestring);
        *found = 1;
    }
    cJSON_Delete(o);
    return 0;
}

int fsc_rundb_entry_text(fsc_rundb_t *db, int64_t seq, const char *key, char *buf, size_t cap)
{
    if (cap == 0)
        return FSC_EINVAL;
    buf[0] = '\0';
    sqlite3_stmt *s;
    int found = 0;
    int rc = fsc__rundb_lookup(db, FSC__RQ_PYMETA_ENTRY, NULL, seq, 0, &s);
    if (rc < 0)
        return rc;
    if (rc > 0) {
        const char *j = (const char *)sqlite3_column_text(s, 0);
        if (j != NULL)
            json_text(j, key, buf, cap, &found);
        sqlite3_reset(s);
        if (found)
            return 0;
    }
    rc = fsc__rundb_lookup(db, FSC__RQ_PYMETA_SNAP, "snapshot", 0, 0, &s);
    if (rc <= 0)
        return rc;
    const char *j = (const char *)sqlite3_column_text(s, 0);
    cJSON *o = j ? cJSON_Parse(j) : NULL;
    sqlite3_reset(s);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "entry_defaults");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, key);
    if (cJSON_IsString(v))
        snprintf(buf, cap, "%s", v->valuestring);
    cJSON_Delete(o);
    return 0;
}

int fsc_rundb_tag_files(fsc_rundb_t *db, int64_t id, char *buf, size_t cap)
{
    if (cap == 0)
        return FSC_EINVAL;
    buf[0] = '\0';
    if (id == 0)
        return 0;
    path_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return nomem(db);
    int rc = chain(db, id, p->names, p->lens, &p->n);
    size_t len = 0;
    for (size_t i = 0; rc == 0 && i < p->n; i++) {
        fsc_frame_t f;
        int is_frame = fsc_frame_parse(p->names[i], p->lens[i], &f);
        if (!is_frame || f.file_len == 0 || f.line == 0 || f.line > INT64_MAX)
            continue;
        int n = snprintf(buf + len, cap - len, "%.*s:%llu\n", (int)f.file_len, f.file,
                         (unsigned long long)f.line);
        if (n < 0 || (size_t)n >= cap - len) {
            buf[len] = '\0'; /* only whole lines */
            break;
        }
        len += (size_t)n;
    }
    path_free(p);
    return rc;
}

int fsc_rundb_tag_site(fsc_rundb_t *db, int64_t id, int mode, char *buf, size_t cap, int *mine)
{
    if (mine != NULL)
        *mine = 0;
    if (cap == 0)
        return FSC_EINVAL;
    if (id == 0) {
        snprintf(buf, cap, "(untagged)");
        return 0;
    }
    path_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return nomem(db);
    int rc = chain(db, id, p->names, p->lens, &p->n);
    if (rc == 0 && p->n == 0)
        snprintf(buf, cap, "#%lld", (long long)id);
    else if (rc == 0 && fsc_frame_site((const char *const *)p->names, p->lens, p->n, mode, buf,
                                       cap, mine) != 0)
        rc = nomem(db);
    path_free(p);
    return rc;
}
