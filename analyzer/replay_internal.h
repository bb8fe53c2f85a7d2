/*
 * replay_internal.h — what the replay files (replay.c, replay_segments.c,
 * replay_blocks.c) share: the block and free-set bookkeeping and the event
 * handlers. Private to those three.
 *
 * Handlers return 0 when the event was applied, 1 when it was skipped
 * (fsc__skip: the reason goes into the outcome), < 0 on error.
 */
#ifndef FSC_ANALYZER_REPLAY_INTERNAL_H
#define FSC_ANALYZER_REPLAY_INTERNAL_H

#include "replay.h"

#define U(x) ((unsigned long long)(x))

/* Skip the event being replayed, saying why; returns 1. Called before
 * anything is changed, so a skipped event leaves the state as it was. */
int fsc__skip(fsc__replay_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The outcome of the event being replayed (set by fsc__replay_apply). */
fsc__outcome_t *fsc__outcome(fsc__replay_t *r);
/* Room in r->tags for tag node `tag`. */
int fsc__tag_reserve(fsc__replay_t *r, uint32_t tag);
#define ENOMEM_OUT() \
    fsc_err_set(&a->err, FSC_ENOMEM, "out of memory replaying event %llu", U(a->seq))

/* inactive_split follows the segments' free blocks: bracket every change to
 * a segment's blocks with begin/end. */
void fsc__seg_begin(fsc__replay_t *a, fsc__seg_t *s);
void fsc__seg_end(fsc__replay_t *a, fsc__seg_t *s);
int fsc__free_insert(fsc__replay_t *a, fsc__blk_t *b);
void fsc__free_remove(fsc__replay_t *a, fsc__blk_t *b);
/* A new free block [addr, addr+size) of s, linked after prev (NULL = first). */
int fsc__blk_create_free(fsc__replay_t *a, fsc__seg_t *s, fsc__blk_t *prev, uint64_t addr,
                         uint64_t size, fsc__blk_t **out);
/* Remove a free block from everything and recycle it. */
int fsc__blk_destroy_free(fsc__replay_t *a, fsc__blk_t *b);
void fsc__blk_resize_free(fsc__replay_t *a, fsc__blk_t *b, uint64_t nsize);
void fsc__reserved_add(fsc__replay_t *a, uint64_t n);

int fsc__on_segment_alloc(fsc__replay_t *a, const fsc_event_t *ev);
int fsc__on_segment_free(fsc__replay_t *a, const fsc_event_t *ev);
int fsc__on_segment_map(fsc__replay_t *a, const fsc_event_t *ev);
int fsc__on_segment_unmap(fsc__replay_t *a, const fsc_event_t *ev);
int fsc__on_split(fsc__replay_t *a, const fsc_event_t *ev);
int fsc__on_alloc(fsc__replay_t *a, const fsc_event_t *ev);
int fsc__on_free_requested(fsc__replay_t *a, const fsc_event_t *ev);
int fsc__on_free_completed(fsc__replay_t *a, const fsc_event_t *ev);
int fsc__on_merge(fsc__replay_t *a, const fsc_event_t *ev);

#endif
