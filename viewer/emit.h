/*
 * emit.h — the report's pieces from a loaded model (internal): the JSON data
 * block the script draws from, and the static HTML summary.
 *
 * Both obey fsc__vcaps_t, the per-table limits of one size level. The page
 * is rendered at level 0 first; if it exceeds the size bound, the next level
 * (every limit halved) is tried, so the bound holds whatever the run.
 */
#ifndef FSC_VIEWER_EMIT_H
#define FSC_VIEWER_EMIT_H

#include <stddef.h>

#include "model.h"
#include "sbuf.h"

typedef struct fsc__vcaps {
    size_t timeline;      /* samples */
    size_t markers;
    size_t ooms;          /* OOMs listed */
    size_t oom_detail;    /* OOMs with segments, pinning blocks, tags, suggestions */
    size_t pins;          /* pinning blocks per segment */
    size_t layouts;       /* layouts (the peak counts as one) */
    size_t layout_blocks; /* blocks over all layouts */
    size_t tag_rows;      /* rows of the top-tags and leaks tables */
    size_t str_chars;     /* characters of a tag path or marker text */
    size_t text_chars;    /* characters of an explanation or note */
} fsc__vcaps_t;

#define FSC__VIEW_LEVELS 8

/* Limits of size level `level` (0 = the most detail). */
void fsc__vcaps_for_level(int level, fsc__vcaps_t *caps);

/* The JSON object for <script type="application/json" id="data">; every
 * '<', '>' and '&' inside it is escaped. */
void fsc__emit_json(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps);

/* The static summary section (<section id="summary">), readable without
 * JavaScript. */
void fsc__emit_summary(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps);

/* The page title for a model: "<producer> — <db file name>". */
void fsc__emit_title(fsc__sb_t *sb, const fsc__model_t *m);

#endif
