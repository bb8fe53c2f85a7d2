/*
 * rundb_frames.c — names for tags and the PyTorch entry behind an event,
 * read from run.db: a tag is named by its innermost user frame plus its
 * callers (the frame filter of fragscope/frames.h decides what is noise),
 * never by the '/'-joined path, which reads as C++ noise for stacks='all'
 * snapshots and cannot tell a '/' of a file name from one between frames.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/frames.h"
#include "rundb_internal.h"

#define LABEL_MAX_WALK 512 /* frames read from the innermost one */
#define LABEL_MAX_PICK 16

typedef struct node {
    char *name;
    size_t len;
    int is_frame, cls;
    fsc_frame_t f;
} node_t;

static void nodes_free(node_t *v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i].name);
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
    if (depth < 1)
        depth = 1;
    if (depth > LABEL_MAX_PICK)
        depth = LABEL_MAX_PICK;
    node_t *v = calloc(LABEL_MAX_WALK, sizeof *v);
    if (v == NULL)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    int n = 0, rc = 0;
    for (int64_t t = id; t != 0 && n < LABEL_MAX_WALK;) {
        sqlite3_stmt *s;
        rc = fsc__rundb_lookup(db, FSC__RQ_TAG_NODE, NULL, t, 0, &s);
        if (rc <= 0)
            break;
        int64_t parent = sqlite3_column_type(s, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 0);
        const char *nm = (const char *)sqlite3_column_text(s, 1);
        size_t len = nm ? (size_t)sqlite3_column_bytes(s, 1) : 0;
        node_t *x = &v[n];
        x->name = malloc(len + 1);
        if (x->name == NULL) {
            sqlite3_reset(s);
            rc = fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
            break;
        }
        memcpy(x->name, nm ? nm : "", len);
        x->name[len] = '\0';
        x->len = len;
        n++;
        sqlite3_reset(s);
        x->is_frame = fsc_frame_parse(x->name, x->len, &x->f);
        x->cls = fsc_frame_class(&x->f, x->is_frame);
        rc = 0;
        t = parent == t ? 0 : parent;
    }
    if (rc < 0) {
        nodes_free(v, n);
        free(v);
        return rc;
    }
    if (n == 0) {
        snprintf(buf, cap, "#%lld", (long long)id);
        free(v);
        return 0;
    }
    int any_frame = 0;
    for (int i = 0; i < n && !any_frame; i++)
        any_frame = v[i].is_frame;
    if (!any_frame) {
        /* tags of the tag-stack API: the path from the root reads best */
        size_t len = 0;
        for (int i = n; i-- > 0 && len + 1 < cap;) {
            int w = snprintf(buf + len, cap - len, "%s%s", len ? "/" : "", v[i].name);
            if (w < 0 || (size_t)w >= cap - len)
                break;
            len += (size_t)w;
        }
        nodes_free(v, n);
        free(v);
        return 0;
    }
    int pick[LABEL_MAX_PICK], np = 0;
    if (all_frames) {
        for (int i = 0; i < n && np < depth; i++)
            pick[np++] = i;
    } else {
        int has_user = 0;
        for (int i = 0; i < n && !has_user; i++)
            has_user = v[i].cls == FSC_FRAME_USER;
        for (int i = 0; i < n && np < depth; i++)
            if (has_user ? v[i].cls == FSC_FRAME_USER : v[i].cls != FSC_FRAME_NOISE)
                pick[np++] = i;
        if (np == 0)
            pick[np++] = 0; /* only noise: say what there is */
    }
    size_t len = 0;
    for (int k = 0; k < np && len + 8 < cap; k++) {
        if (k > 0) {
            int w = snprintf(buf + len, cap - len, " ← ");
            if (w < 0 || (size_t)w >= cap - len)
                break;
            len += (size_t)w;
        }
        len += fsc_frame_short(&v[pick[k]].f, v[pick[k]].is_frame, buf + len, cap - len);
    }
    nodes_free(v, n);
    free(v);
    return 0;
}

/* The frames from id up to the root (innermost first) that the filter
 * keeps (all when all_frames), at most cap; names malloc'd. */
static int chain(fsc_rundb_t *db, int64_t id, int all_frames, node_t *out, int cap)
{
    int n = 0;
    for (int64_t t = id; t != 0 && n < cap;) {
        sqlite3_stmt *s;
        int rc = fsc__rundb_lookup(db, FSC__RQ_TAG_NODE, NULL, t, 0, &s);
        if (rc <= 0)
            return rc < 0 ? rc : n;
        int64_t parent = sqlite3_column_type(s, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 0);
        const char *nm = (const char *)sqlite3_column_text(s, 1);
        size_t len = nm ? (size_t)sqlite3_column_bytes(s, 1) : 0;
        node_t *x = &out[n];
        if ((x->name = malloc(len + 1)) == NULL) {
            sqlite3_reset(s);
            return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
        }
        memcpy(x->name, nm ? nm : "", len);
        x->name[len] = '\0';
        x->len = len;
        sqlite3_reset(s);
        x->is_frame = fsc_frame_parse(x->name, x->len, &x->f);
        x->cls = fsc_frame_class(&x->f, x->is_frame);
        if (all_frames || x->cls != FSC_FRAME_NOISE)
            n++;
        else
            free(x->name);
        t = parent == t ? 0 : parent;
    }
    return n;
}

int fsc_rundb_tag_label_apart(fsc_rundb_t *db, int64_t id, int64_t other, int all_frames,
                              char *buf, size_t cap)
{
    int rc = fsc_rundb_tag_label(db, id, all_frames, 2, buf, cap);
    if (rc != 0 || id == other)
        return rc;
    node_t *a = calloc(2 * LABEL_MAX_WALK, sizeof *a);
    if (a == NULL)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    node_t *b = a + LABEL_MAX_WALK;
    int na = chain(db, id, all_frames, a, LABEL_MAX_WALK);
    int nb = na < 0 ? 0 : chain(db, other, all_frames, b, LABEL_MAX_WALK);
    if (na >= 0 && nb >= 0) {
        /* from the root down, the first frame where the two paths part */
        int d = 0;
        while (d < na && d < nb && a[na - 1 - d].len == b[nb - 1 - d].len &&
               memcmp(a[na - 1 - d].name, b[nb - 1 - d].name, a[na - 1 - d].len) == 0)
            d++;
        /* not the head or its caller, which the name shows already */
        if (d < na && na - 1 - d >= 2) {
            const node_t *x = &a[na - 1 - d];
            char one[256];
            fsc_frame_short(&x->f, x->is_frame, one, sizeof one);
            size_t len = strlen(buf);
            snprintf(buf + len, cap - len, " … ← %s", one);
        }
    }
    nodes_free(a, na > 0 ? na : 0);
    nodes_free(b, nb > 0 ? nb : 0);
    free(a);
    return na < 0 ? na : nb < 0 ? nb : 0;
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
