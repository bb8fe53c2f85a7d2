/*
 * split_view.h — the page's section on where reserved − allocated sits
 * (split_view.c): its part of the model, its loader and its emitter.
 * Internal to the viewer.
 */
#ifndef FSC_VIEWER_SPLIT_VIEW_H
#define FSC_VIEWER_SPLIT_VIEW_H

#include <stdint.h>

#define FSC__VSPLIT_TAGS 3

/* One moment of table frag_classes (pool "all") and its top hard tags. */
typedef struct fsc__vsplit {
    char point[16];     /* peak_allocated, peak_reserved, oom */
    int64_t oom_id, seq, reserved, gap;
    int64_t cls[5];     /* soft, hard, stream, private_pool, pending */
    int64_t tag[FSC__VSPLIT_TAGS], tag_hard[FSC__VSPLIT_TAGS];
    int ntags;
} fsc__vsplit_t;

struct fsc__loader;
struct fsc__model;
struct fsc__sb;
struct fsc__vcaps;

int fsc__model_load_split(struct fsc__loader *L, struct fsc__model *m);
void fsc__model_free_split(struct fsc__model *m);
/* <section id="split">, static HTML. */
void fsc__emit_split(struct fsc__sb *sb, const struct fsc__model *m, const struct fsc__vcaps *caps);

#endif
