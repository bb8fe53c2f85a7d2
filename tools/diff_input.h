/*
 * diff_input.h — what `fragscope diff` and `check --baseline` take: a run
 * database as it is, or a trace or snapshot (a ring window too) analyzed
 * on the fly into a temporary database, removed afterwards; and the
 * settings replay (fragscope/whatif.h) that says how much of a change
 * the allocator settings alone explain.
 */
#ifndef FSC_TOOLS_DIFF_INPUT_H
#define FSC_TOOLS_DIFF_INPUT_H

#include "fragscope/rundb.h"

typedef struct fsc__diff_input {
    const char *path;   /* as given */
    char db[4200];      /* the run database to read */
    char tmpdir[4096];  /* "" unless db is a temporary */
    int is_db;          /* the input was a run database */
    int device;         /* as given to open */
} fsc__diff_input_t;

/* Open one input; on error a one-line message naming the file. device >= 0:
 * the CUDA device to take from a snapshot of several (-1: the only one
 * with history). */
int fsc__diff_input_open(const char *path, int device, fsc__diff_input_t *in, fsc_err_t *err);
/* Remove the temporary database, if any. */
void fsc__diff_input_close(fsc__diff_input_t *in);

/* Fill s: whether the runs' settings or caps differ and, when they do and
 * the base's requests can be read (its trace or snapshot), the replays of
 * those requests under both settings. Never fails the diff: what could not
 * be done is said in s->note. */
void fsc__diff_settings(const fsc__diff_input_t *a, const fsc__diff_input_t *b,
                        fsc_diff_settings_t *s);

#endif
