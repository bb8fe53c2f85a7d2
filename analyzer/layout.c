/*
 * layout.c — block layout images: the current layout (at each OOM) and
 * the layout at the allocated peak. The store writes them (store.c).
 *
 * The peak is only known to be the peak once the run is over, and copying
 * the whole layout at every new maximum would cost O(live) per event while
 * memory climbs. Instead, after each new maximum the first change to every
 * block saves the block's previous image; the peak layout is then the
 * current layout with the saved images put back. Once twice as many blocks
 * have been touched as exist (and at least 4096), the peak layout is built
 * once and tracking stops until the next maximum, so the cost stays O(1)
 * per event amortized and memory stays O(live).
 */
#include <stdlib.h>
#include <string.h>

#include "fsc/vec.h"
#include "replay.h"

int fsc__imgvec_push(fsc__imgvec_t *v, const fsc__img_t *img)
{
    if (FSC__VEC_RESERVE(v->v, v->cap, v->n + 1) != 0)
        return FSC_ENOMEM;
    v->v[v->n++] = *img;
    return 0;
}

void fsc__imgvec_free(fsc__imgvec_t *v)
{
    free(v->v);
    memset(v, 0, sizeof *v);
}

static void image_of(const fsc__blk_t *b, fsc__img_t *img)
{
    img->addr = b->addr;
    img->size = b->size;
    img->requested = b->requested;
    img->segment = b->seg->base;
    img->stream = b->seg->stream;
    img->alloc_seq = b->alloc_seq;
    img->alloc_time = b->alloc_time;
    img->tag = b->tag;
    img->state = b->state;
    img->pool = b->seg->pool;
    img->pool_id = b->seg->pool_id;
    img->expandable = b->seg->expandable;
    img->present = 1;
}

static void delta_clear(fsc__replay_t *a)
{
    for (size_t i = 0; i < a->peak_imgs.n; i++)
        fsc__u64map_delp(&a->peak_delta, a->peak_imgs.v[i].addr);
    a->peak_imgs.n = 0;
}

void fsc__peak_new(fsc__replay_t *a)
{
    delta_clear(a);
    a->peak_tracking = 1;
    a->peak_materialized = 0;
}

int fsc__peak_touch(fsc__replay_t *a, const fsc__blk_t *b, int existed)
{
    if (!a->peak_tracking || fsc__u64map_getp(&a->peak_delta, b->addr) != NULL)
        return 0;
    fsc__img_t img;
    memset(&img, 0, sizeof img);
    if (existed)
        image_of(b, &img);
    else
        img.addr = b->addr; /* present = 0: did not exist at the peak */
    if (fsc__imgvec_push(&a->peak_imgs, &img) != 0 ||
        fsc__u64map_putp(&a->peak_delta, b->addr, (void *)(uintptr_t)a->peak_imgs.n) != 0)
        return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for the peak layout");
    size_t limit = a->blocks.count * 2 > 4096 ? a->blocks.count * 2 : 4096;
    if (a->peak_imgs.n > limit)
        return fsc__peak_materialize(a);
    return 0;
}

static int cmp_img(const void *x, const void *y)
{
    const fsc__img_t *p = x, *q = y;
    return p->addr < q->addr ? -1 : p->addr > q->addr;
}

int fsc__layout_current(fsc__replay_t *a, fsc__imgvec_t *out)
{
    out->n = 0;
    for (size_t i = 0; i < a->nseg; i++) {
        for (const fsc__blk_t *b = a->seg_sorted[i]->head; b != NULL; b = b->next) {
            fsc__img_t img;
            image_of(b, &img);
            if (fsc__imgvec_push(out, &img) != 0)
                return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for a layout");
        }
    }
    return 0;
}

int fsc__peak_materialize(fsc__replay_t *a)
{
    if (!a->peak_tracking)
        return 0;
    fsc__imgvec_t *out = &a->peak_layout;
    out->n = 0;
    for (size_t i = 0; i < a->nseg; i++) {
        for (const fsc__blk_t *b = a->seg_sorted[i]->head; b != NULL; b = b->next) {
            if (fsc__u64map_getp(&a->peak_delta, b->addr) != NULL)
                continue; /* changed since the peak: its saved image is used */
            fsc__img_t img;
            image_of(b, &img);
            if (fsc__imgvec_push(out, &img) != 0)
                return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for the peak layout");
        }
    }
    for (size_t i = 0; i < a->peak_imgs.n; i++)
        if (a->peak_imgs.v[i].present && fsc__imgvec_push(out, &a->peak_imgs.v[i]) != 0)
            return fsc_err_set(&a->err, FSC_ENOMEM, "out of memory for the peak layout");
    qsort(out->v, out->n, sizeof *out->v, cmp_img);
    delta_clear(a);
    a->peak_tracking = 0;
    a->peak_materialized = 1;
    return 0;
}
