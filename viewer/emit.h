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
    int level;            /* the size level (state views shrink by it) */
} fsc__vcaps_t;

#define FSC__VIEW_LEVELS 8

/* Limits of size level `level` (0 = the most detail). */
void fsc__vcaps_for_level(int level, fsc__vcaps_t *caps);

/* The page's tag table: model tags get indices in order of first use. */
typedef struct fsc__vtagmap {
    const fsc__model_t *m;
    long *index;   /* per model tag: its index in the page's table, or -1 */
    size_t *order; /* model tag positions in table order */
    size_t n;
} fsc__vtagmap_t;

/* Index of tag id in the page's table (assigned on first use); -1 for no
 * tag or an id the model does not know. */
long fsc__vtagmap_index(fsc__vtagmap_t *tm, int64_t id);

/* The "layouts" member of the data block; layout_of_oom[k] receives the
 * index of OOM k's layout (left alone when it is not embedded). */
void fsc__emit_layouts(fsc__js_t *js, const fsc__model_t *m, const fsc__vcaps_t *caps,
                       fsc__vtagmap_t *tm, long *layout_of_oom);

/* The "state" and "bands" members (emit_state.c); then, once the tag table
 * is complete, the ancestors of its tags and the "tag_tree" member. */
void fsc__emit_state_views(fsc__js_t *js, const fsc__model_t *m, const fsc__vcaps_t *caps,
                           fsc__vtagmap_t *tm);
void fsc__emit_tag_ancestors(const fsc__model_t *m, fsc__vtagmap_t *tm);
void fsc__emit_tag_tree(fsc__js_t *js, const fsc__model_t *m, const fsc__vcaps_t *caps,
                        const fsc__vtagmap_t *tm);

/* The JSON object for <script type="application/json" id="data">; every
 * '<', '>' and '&' inside it is escaped. */
void fsc__emit_json(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps);

/* The static summary section (<section id="summary">), readable without
 * JavaScript. */
void fsc__emit_summary(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps);

/* The page title for a model: "<producer> — <db file name>". */
void fsc__emit_title(fsc__sb_t *sb, const fsc__model_t *m);

#endif
