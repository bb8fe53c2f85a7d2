/*
 * fsc/slab.h — fixed-size objects carved from large chunks and recycled
 * through a free list: the block structs of the allocator and of the
 * analyzer's replay, created and dropped once per split or merge.
 *
 * Written here because Debian offers no small slab for C programs short of
 * a whole allocator (talloc, APR pools) whose lifetimes do not fit objects
 * freed one by one. A freed object's first bytes hold the free-list link;
 * chunks are freed all at once by fsc__slab_free. A zeroed struct is not
 * usable: initialise with fsc__slab_init or FSC__SLAB_INIT.
 */
#ifndef FSC_SLAB_H
#define FSC_SLAB_H

#include <stddef.h>

typedef struct fsc__slab {
    size_t elem;      /* bytes per object, rounded up for alignment */
    size_t per_chunk; /* objects per malloc */
    void *free;       /* recycled objects */
    void *chunks;     /* every chunk, linked through its header */
} fsc__slab_t;

#define FSC__SLAB_INIT(type, per) {sizeof(type), (per), NULL, NULL}

void fsc__slab_init(fsc__slab_t *s, size_t elem, size_t per_chunk);
/* A zeroed object, or NULL when memory runs out. */
void *fsc__slab_alloc(fsc__slab_t *s);
/* Give an object back (p may be NULL). */
void fsc__slab_release(fsc__slab_t *s, void *p);
/* Free every chunk; the slab is empty and usable again. */
void fsc__slab_free(fsc__slab_t *s);

#endif
