/*
 * pytorch_json_stream.h — a JSON memory snapshot read the way
 * fsc__pickle_stream reads a pickle (pickle.h, "streaming"): the entries of
 * each device_traces[d] list are handed to a callback as they are read and
 * their memory is reused; the rest is kept as the same fsc__pv_t tree the
 * pickle reader builds, its history lists empty but counting their entries
 * (fsc__pv_count). Internal to recorder/pytorch/ (not API).
 */
#ifndef FSC_RECORDER_PYTORCH_JSON_STREAM_H
#define FSC_RECORDER_PYTORCH_JSON_STREAM_H

#include <stddef.h>

#include "pickle.h"

/* Limits of the reader (besides FSC__PICKLE_MAX_DEPTH levels of nesting and
 * FSC__PICKLE_MEM_FACTOR bytes of memory per input byte + 1 MiB). */
#define FSC__JSON_MAX_NUMBER 1024 /* characters of one number */

/* Read the JSON text data[0, len). name is used in messages ("PATH: offset
 * N: what"). The entries streamed are those of the top-level
 * 'device_traces' whose value starts at byte traces_at, or of the first
 * one when traces_at is 0; the others are read, checked and left out of
 * the tree. Python keeps the last of duplicate keys, so when a later
 * top-level 'device_traces' follows the one streamed, *redo_at is set to
 * its offset: read again with traces_at = *redo_at (the entries handed out
 * were those of a value Python would have dropped). *redo_at is 0
 * otherwise.
 *
 * cb->entry gets (device, index, value); the value and what it holds live
 * during the call only (fsc__pv_stable is false for them). A nonzero
 * return stops the read, which returns it. cb->progress (may be NULL) is
 * called every few MiB; cb->dropped is not used (JSON shares no values).
 * With cb->skip_frames, the 'frames' of each entry is checked but not
 * built and the entry holds None there (never FSC__PICKLE_ESKIPPED: JSON
 * has no references into it).
 * The entries' strings point into the input; the tree does not (its
 * strings are copies). On success *out owns the tree. */
int fsc__json_stream(const void *data, size_t len, const char *name, size_t traces_at,
                     const fsc__pstream_t *cb, fsc__pdoc_t **out, size_t *redo_at,
                     fsc_err_t *err);

#endif
