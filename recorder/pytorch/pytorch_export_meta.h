/*
 * pytorch_export_meta.h — the exporter's reader of "pytorch.*" records
 * (not API; pytorch_export_meta.c).
 */
#ifndef FSC_RECORDER_PYTORCH_EXPORT_META_H
#define FSC_RECORDER_PYTORCH_EXPORT_META_H

#include <stdint.h>

#include "fragscope/events.h"
#include "pickle.h"

typedef struct fsc__xmeta fsc__xmeta_t;

enum {
    FSC__XM_NONE = 0, /* not a record: an ordinary event */
    FSC__XM_PART,     /* part of a record, or a record kind to skip */
    FSC__XM_SNAPSHOT,
    FSC__XM_ENTRY,
    FSC__XM_ACTION,
    FSC__XM_SEGMENT,
    FSC__XM_FRAME
};

int fsc__xm_new(fsc__xmeta_t **out);
void fsc__xm_free(fsc__xmeta_t *xm);
/* Take the event when it is a record; *kind says what it completed. */
int fsc__xm_feed(fsc__xmeta_t *xm, const fsc_event_t *ev, int *kind);
/* The last action record as a history entry (once). */
int fsc__xm_write_action(fsc__xmeta_t *xm, fsc__pw_t *w);
/* The entry being written: 1 when its record says it had no such key. */
int fsc__xm_entry_absent(const fsc__xmeta_t *xm, const char *key);
/* Keys of the entry beyond the event fields (defaults, then its own);
 * consumes the entry record. */
int fsc__xm_write_entry_keys(fsc__xmeta_t *xm, fsc__pw_t *w);
int fsc__xm_has_snapshot(const fsc__xmeta_t *xm);
/* Top-level key (name and value) from the snapshot record: 1 written, 2
 * the snapshot had no such key (write none), 0 no record of it, negative on
 * error. */
int fsc__xm_write_top(fsc__xmeta_t *xm, fsc__pw_t *w, const char *key);
/* Every other top-level key of the snapshot record (host memory, unknown). */
int fsc__xm_write_top_rest(fsc__xmeta_t *xm, fsc__pw_t *w);
/* The value of a segment's kept key (frames, segment_pool_id): 1 written. */
int fsc__xm_write_segment_key(fsc__xmeta_t *xm, fsc__pw_t *w, uint64_t seg, const char *key);
/* A segment's unknown keys, and a block's. */
int fsc__xm_write_segment_rest(fsc__xmeta_t *xm, fsc__pw_t *w, uint64_t seg);
int fsc__xm_write_block_rest(fsc__xmeta_t *xm, fsc__pw_t *w, uint64_t seg, uint64_t addr);
/* The keys a frame of tag node `node` held beyond filename, line and name
 * (PyTorch's fx_* keys), as key/value pairs into the open frame dict. */
int fsc__xm_write_frame_keys(fsc__xmeta_t *xm, fsc__pw_t *w, uint32_t node);

#endif
