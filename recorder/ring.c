/*
 * ring.c — ring mode's memory: the last N events, with their marker texts
 * copied, waiting for an OOM, a flush or the exit to be written.
 */
#include <stdlib.h>
#include <string.h>

#include "trace_writer.h"

int fsc__ring_init(fsc__ring_t *g, uint64_t cap)
{
    memset(g, 0, sizeof *g);
    if (cap == 0 || cap > SIZE_MAX / sizeof(fsc_event_t))
        return FSC_EINVAL;
    g->ev = calloc((size_t)cap, sizeof(fsc_event_t));
    if (g->ev == NULL)
        return FSC_ENOMEM;
    g->cap = cap;
    return 0;
}

static void drop_text(fsc_event_t *e)
{
    if (e->text_len > 0)
        free((char *)e->text);
    e->text = NULL;
    e->text_len = 0;
}

void fsc__ring_clear(fsc__ring_t *g)
{
    for (uint64_t i = 0; i < g->count; i++)
        drop_text(&g->ev[(g->head + i) % g->cap]);
    g->head = 0;
    g->count = 0;
}

void fsc__ring_free(fsc__ring_t *g)
{
    if (g == NULL || g->ev == NULL)
        return;
    fsc__ring_clear(g);
    free(g->ev);
    g->ev = NULL;
}

int fsc__ring_push(fsc__ring_t *g, const fsc_event_t *ev)
{
    fsc_event_t *slot;
    if (g->count == g->cap) {
        slot = &g->ev[g->head];
        drop_text(slot);
        g->head = (g->head + 1) % g->cap;
        g->dropped++;
    } else {
        slot = &g->ev[(g->head + g->count) % g->cap];
        g->count++;
    }
    *slot = *ev;
    slot->text = NULL;
    slot->text_len = 0;
    if (ev->text_len > 0) {
        char *t = malloc(ev->text_len);
        if (t == NULL)
            return FSC_ENOMEM;
        memcpy(t, ev->text, ev->text_len);
        slot->text = t;
        slot->text_len = ev->text_len;
    }
    return 0;
}

const fsc_event_t *fsc__ring_at(const fsc__ring_t *g, uint64_t i)
{
    return &g->ev[(g->head + i) % g->cap];
}
