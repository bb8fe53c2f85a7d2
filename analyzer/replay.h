/*
 * replay.h — what the replay files (replay.c, replay_segments.c,
 * replay_blocks.c) share: the block and free-set bookkeeping and the event
 * handlers. Internal to the analyzer.
 *
 * Handlers return 0 when the event was applied, > 0 when it was skipped (a
 * lenient run's counted warning), < 0 on error.
 */
#ifndef FSC_ANALYZER_REPLAY_H
#define FSC_ANALYZER_REPLAY_H

#include "ana_internal.h"

#define U(x) ((unsigned long long)(x))
#define ENOMEM_OUT() \
    fsc_err_set(&a->err, FSC_ENOMEM, "out of memory replaying event %llu", U(a->seq))

/* inactive_split follows the segments' free blocks: bracket every change to
 * a segment's blocks with begin/end. */
void fsc__seg_begin(fsc_analysis_t *a, fsc__seg_t *s);
void fsc__seg_end(fsc_analysis_t *a, fsc__seg_t *s);
int fsc__free_insert(fsc_analysis_t *a, fsc__blk_t *b);
void fsc__free_remove(fsc_analysis_t *a, fsc__blk_t *b);
/* A new free block [addr, addr+size) of s, linked after prev (NULL = first). */
int fsc__blk_create_free(fsc_analysis_t *a, fsc__seg_t *s, fsc__blk_t *prev, uint64_t addr,
                         uint64_t size, fsc__blk_t **out);
/* Remove a free block from everything and recycle it. */
int fsc__blk_destroy_free(fsc_analysis_t *a, fsc__blk_t *b);
void fsc__blk_resize_free(fsc_analysis_t *a, fsc__blk_t *b, uint64_t nsize);
void fsc__reserved_add(fsc_analysis_t *a, uint64_t n);

int fsc__on_segment_alloc(fsc_analysis_t *a, const fsc_event_t *ev);
int fsc__on_segment_free(fsc_analysis_t *a, const fsc_event_t *ev);
int fsc__on_segment_map(fsc_analysis_t *a, const fsc_event_t *ev);
int fsc__on_segment_unmap(fsc_analysis_t *a, const fsc_event_t *ev);
int fsc__on_split(fsc_analysis_t *a, const fsc_event_t *ev);
int fsc__on_alloc(fsc_analysis_t *a, const fsc_event_t *ev);
int fsc__on_free_requested(fsc_analysis_t *a, const fsc_event_t *ev);
int fsc__on_free_completed(fsc_analysis_t *a, const fsc_event_t *ev);
int fsc__on_merge(fsc_analysis_t *a, const fsc_event_t *ev);

#endif
