/*
 * model_load.h — what the parts of the model loader share (internal): the
 * loader state and small helpers. The database is read only through the
 * run database reader (fragscope/rundb.h); every helper that can fail
 * records a message naming the database file and returns a negative FSC_E*
 * code.
 */
#ifndef FSC_VIEWER_MODEL_LOAD_H
#define FSC_VIEWER_MODEL_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/rundb.h"
#include "model.h"

typedef struct fsc__loader {
    fsc_rundb_t *db;
    const char *path;
    fsc_err_t *err;
    int failed;       /* a row callback has set *err */
    int64_t *tag_ids; /* every tag id referenced, for the tag table */
    size_t ntag_ids, cap_tag_ids;
} fsc__loader_t;

char *fsc__ld_strdup(const char *s);
/* Grow *arr (of elem bytes each, zero-filled) so that index n fits. */
int fsc__ld_grow(void **arr, size_t *cap, size_t n, size_t elem);
int fsc__ld_nomem(fsc__loader_t *L);
/* The outcome of a reader call: rc, with the reader's message copied into
 * the loader's error when the reader (not a row callback) failed. */
int fsc__ld_read(fsc__loader_t *L, int rc);
/* *out = a malloc'd copy of at most max_chars characters of s (counted as
 * SQLite's substr counts them), NULL for NULL: text is kept only as long
 * as the page can show it, plus one character so the emitter still sees
 * that it was longer. */
int fsc__ld_str(fsc__loader_t *L, const char *s, size_t max_chars, char **out);
/* v, or if_null for an SQL NULL (FSC_RUNDB_NULL). */
int64_t fsc__ld_i(int64_t v, int64_t if_null);
/* Remember a tag id the page will refer to (its path is loaded at the end). */
int fsc__ld_note_tag(fsc__loader_t *L, int64_t id);

/* A growable array filled by a row function, keeping at most max rows. */
typedef struct fsc__ld_arr {
    fsc__loader_t *L;
    void **p;
    size_t *n, cap, max;
} fsc__ld_arr_t;

/* Append (tag, bytes, blocks) to a fsc__vtagrow_t array (p, n of a) and
 * note the tag; FSC_RUNDB_STOP once a->max rows are there. */
int fsc__ld_tagrow(fsc__ld_arr_t *a, int64_t tag, int64_t bytes, int64_t blocks);

/* The parts of the model that have their own file. */
int fsc__model_load_ooms(fsc__loader_t *L, fsc__model_t *m);
int fsc__model_load_layouts(fsc__loader_t *L, fsc__model_t *m);
/* The state at any event, the band allocations and the tag tree
 * (model_state.c); bands 0 = the default number of bands. */
int fsc__model_load_state(fsc__loader_t *L, fsc__model_t *m, size_t bands);

#endif
