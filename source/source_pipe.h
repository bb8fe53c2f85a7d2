/*
 * source_pipe.h — a snapshot's tag definitions and events handed to the
 * consumer on a thread of its own (internal to source/; see source_pipe.c).
 */
#ifndef FSC_SOURCE_PIPE_H
#define FSC_SOURCE_PIPE_H

#include "fragscope/source.h"

typedef struct fsc__pipe fsc__pipe_t;

/* Starts the consumer thread, which calls sink->tag and sink->event in the
 * order given. */
int fsc__pipe_start(const fsc_source_sink_t *sink, fsc__pipe_t **out);
/* Queue one definition or event (names and texts are copied). Returns the
 * consumer's error code once it has failed, else 0 (or FSC_ENOMEM). */
int fsc__pipe_tag(fsc__pipe_t *p, uint32_t node, uint32_t parent, const char *name, size_t len);
int fsc__pipe_event(fsc__pipe_t *p, const fsc_event_t *ev);
/* Hands over what is queued, waits for the consumer and frees the pipe.
 * Returns the consumer's error code (its message in *err) or 0. */
int fsc__pipe_finish(fsc__pipe_t *p, fsc_err_t *err);

#endif
