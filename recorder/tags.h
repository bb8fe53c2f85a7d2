/*
 * tags.h — the process-wide tag tree behind fsc_tag_push/fsc_tag_pop and the
 * per-thread state the recorder's hot path reads (current node, thread
 * number). Internal to recorder/.
 *
 * Process ids of tag nodes are global to the process and never reused; each
 * recorder maps them to its own dense trace ids when an event first uses
 * them (see trace_writer.c), so a trace never depends on what other traces
 * or threads pushed.
 */
#ifndef FSC_RECORDER_TAGS_H
#define FSC_RECORDER_TAGS_H

#include <stddef.h>
#include <stdint.h>

/* Current node of the calling thread (0 = root); read on every event. */
extern __thread uint32_t fsc__t_tag;

/* The calling thread's small number (1, 2, ... in order of first use). */
extern __thread uint32_t fsc__t_thread;
uint32_t fsc__thread_number_assign(void);
static inline uint32_t fsc__thread_number(void)
{
    uint32_t t = fsc__t_thread;
    return t != 0 ? t : fsc__thread_number_assign();
}

/* Intern (parent, name) in the process table; returns its id, or 0 when the
 * table is full or memory ran out (the event then carries the parent). */
uint32_t fsc__tag_intern(uint32_t parent, const char *name, size_t len);

/* Parent and name of a process node; safe without locks for any id that
 * fsc__tag_intern returned. Returns 0, or -1 for an unknown id. */
int fsc__tag_get(uint32_t id, uint32_t *parent, const char **name, size_t *len);

#endif /* FSC_RECORDER_TAGS_H */
