/*
 * slab.c — fixed-size objects from large chunks (see fsc/slab.h).
 */
#include "fsc/slab.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN alignof(max_align_t)

static size_t round_up(size_t n)
{
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

void fsc__slab_init(fsc__slab_t *s, size_t elem, size_t per_chunk)
{
    s->elem = elem;
    s->per_chunk = per_chunk ? per_chunk : 1;
    s->free = NULL;
    s->chunks = NULL;
}

void *fsc__slab_alloc(fsc__slab_t *s)
{
    size_t elem = round_up(s->elem < sizeof(void *) ? sizeof(void *) : s->elem);
    if (s->free == NULL) {
        size_t hdr = round_up(sizeof(void *));
        char *c = malloc(hdr + s->per_chunk * elem);
        if (c == NULL)
            return NULL;
        memcpy(c, &s->chunks, sizeof(void *));
        s->chunks = c;
        /* Linked so that the lowest object is handed out first. */
        for (size_t i = s->per_chunk; i-- > 0;) {
            char *o = c + hdr + i * elem;
            memcpy(o, &s->free, sizeof(void *));
            s->free = o;
        }
    }
    void *o = s->free;
    memcpy(&s->free, o, sizeof(void *));
    memset(o, 0, s->elem);
    return o;
}

void fsc__slab_release(fsc__slab_t *s, void *p)
{
    if (p == NULL)
        return;
    memcpy(p, &s->free, sizeof(void *));
    s->free = p;
}

void fsc__slab_free(fsc__slab_t *s)
{
    while (s->chunks != NULL) {
        void *next;
        memcpy(&next, s->chunks, sizeof next);
        free(s->chunks);
        s->chunks = next;
    }
    s->free = NULL;
}
