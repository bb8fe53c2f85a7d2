/*
 * store.h — the only code that writes the run database (docs/schema.md):
 * store.c creates it and binds every row, store_writer.c writes the bulk
 * rows on a thread of their own. Everything else in the analyzer computes
 * and hands rows here. Internal to the analyzer.
 *
 * Every call returns 0 or a negative FSC_E* with the store's error set
 * (fsc__store_err); after an error the store only accepts destroy.
 */
#ifndef FSC_ANALYZER_STORE_H
#define FSC_ANALYZER_STORE_H

#include "finish.h"
#include "oom.h"
#include "rows.h"
#include "timeline.h"

typedef struct fsc__store fsc__store_t;

/* Create the database at tmp_path (path names it in messages), with the
 * schema, inside one transaction, and start the writer thread. */
int fsc__store_open(const char *tmp_path, const char *path, fsc__store_t **out, fsc_err_t *err);
/* Commit and close (the caller renames the file into place). */
int fsc__store_commit(fsc__store_t *s);
/* Stop the writer and close without committing. NULL is a no-op. */
void fsc__store_destroy(fsc__store_t *s);
const fsc_err_t *fsc__store_err(const fsc__store_t *s);
/* The bulk rows stop going to the thread: after this every row is written
 * on the caller's thread (the tables written at the end). */
int fsc__store_end_bulk(fsc__store_t *s);

/* Bulk rows: blocks, segments, events_other. */
int fsc__store_op(fsc__store_t *s, const fsc__op_t *op);
int fsc__store_ops(fsc__store_t *s, const fsc__rowsout_t *out);
/* tags: parent is NULL for the root (node 0). */
int fsc__store_tag(fsc__store_t *s, uint32_t node, uint32_t parent, const char *name, size_t len);
int fsc__store_marker(fsc__store_t *s, uint64_t seq, uint64_t time, const char *text, size_t len);
/* A DEVICE_MEMORY sample with this allocator's reserved bytes at it: a row
 * of device_memory (external = total − free − reserved). */
int fsc__store_device_sample(fsc__store_t *s, uint64_t seq, uint64_t time, uint64_t dev_free,
                             uint64_t dev_total, uint64_t reserved);
/* One row of pytorch_meta (pymeta.c). */
int fsc__store_pymeta(fsc__store_t *s, uint64_t seq, const char *kind, const char *json,
                      size_t len);
int fsc__store_warning(fsc__store_t *s, uint64_t seq, const char *msg);
/* A layout_snapshots row and its layout rows; *id (may be NULL) gets the id. */
int fsc__store_layout(fsc__store_t *s, const char *kind, uint64_t seq, uint64_t time,
                      int64_t oom_id, uint64_t allocated, uint64_t reserved,
                      const fsc__imgvec_t *v, uint64_t *id);
/* One diagnosis: its layout snapshot (when f->has_snapshot; layout is the
 * current layout), then ooms, oom_segments, oom_pinning_blocks, oom_tags. */
int fsc__store_oom(fsc__store_t *s, fsc__oom_t *f, const fsc__imgvec_t *layout);
int fsc__store_timeline(fsc__store_t *s, const fsc__tlrow_t *row);
/* The row's timeline_external row, when its bucket saw a step boundary. */
int fsc__store_timeline_external(fsc__store_t *s, const fsc__tlrow_t *row);
int fsc__store_bin(fsc__store_t *s, const fsc__binrow_t *row);
int fsc__store_tagstat(fsc__store_t *s, const fsc__tagstat_t *row);
int fsc__store_summary(fsc__store_t *s, const fsc__sumrow_t *row);
/* frag_classes rows of one moment (its three pools), the pinning blocks
 * and tags (frag_hard_blocks, frag_hard_tags), the timeline_frag rows of a
 * bucket (overall and per pool). */
int fsc__store_frag_point(fsc__store_t *s, const char *point, int64_t oom_id,
                          const fsc__frag_point_t *p);
int fsc__store_frag_pins(fsc__store_t *s, const char *point, int64_t oom_id,
                         const fsc__frag_pins_t *p);
int fsc__store_timeline_frag(fsc__store_t *s, uint64_t index, const fsc__frag_sample_t *x);
/* The runs row of run 0: rank, device, pid negative (pid 0 too) and host
 * NULL or "" when unknown. */
int fsc__store_run(fsc__store_t *s, int64_t rank, int64_t device, const char *host, int64_t pid,
                   const char *source, const char *kind);
/* meta: text, or the integer when text is NULL. */
int fsc__store_meta(fsc__store_t *s, const char *key, const char *text, int64_t ival);

#endif
