/*
 * fragscope/source.h — one way in from a file: a fragscope trace or a
 * PyTorch memory snapshot (pickle or JSON), told apart by content, read as
 * one header, tag-node definitions and events in order.
 *
 * A trace yields its own events and tag tree; a snapshot goes through the
 * importer (fragscope/pytorch.h), which synthesizes the events a recording
 * would hold. Either way tag nodes are interned here, once: a node is
 * defined (its parent first) before the first event that carries it, with
 * ids > 0 (0 is the root). An error of reading names the file: its message
 * starts with the path, and info.error_file is it. A sink's own error is
 * returned as the sink set it.
 */
#ifndef FRAGSCOPE_SOURCE_H
#define FRAGSCOPE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/common.h"
#include "fragscope/events.h"
#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fsc_source_kind {
    FSC_SOURCE_UNKNOWN = 0,  /* neither (opened as a trace, whose reader says why) */
    FSC_SOURCE_TRACE = 1,
    FSC_SOURCE_SNAPSHOT = 2
} fsc_source_kind_t;

/* What the file holds, from its first bytes: FSC_SOURCE_*, or FSC_ENOENT /
 * FSC_EIO when it cannot be read. */
int fsc_source_detect(const char *path);

/* A zeroed struct holds the defaults. */
typedef struct fsc_source_opts {
    int lenient;      /* snapshots: skip entries that contradict the block
                         model, counted in the import stats */
    int pick_device;  /* snapshots: 1 = import `device`; 0 = the only device
                         with recorded history */
    int device;
    int keep_records; /* snapshots: emit the pytorch.* records among the
                         events (fragscope/pytorch.h) */
    uint64_t skip_entries; /* snapshots: leave out the first N history
                              entries, as a ring would have
                              (fsc_import_opts_t.skip_entries) */
    const fsc_import_size_t *sizes; /* snapshots: settled block sizes */
    size_t nsizes;                  /* (fsc_import_opts_t.sizes) */
    /* The device's total memory, for inputs that do not record it (a
     * PyTorch snapshot): the header handed to the sink says it. 0 = as
     * recorded. */
    uint64_t device_memory;
    /* Called every 65536 events: bytes read of the file's bytes (traces),
     * events so far and 0 (snapshots); and for pickled snapshots every few
     * MiB read: bytes read over all the import's passes and their total.
     * May be NULL. */
    void (*progress)(void *ud, uint64_t done, uint64_t total);
    void *progress_ud;
} fsc_source_opts_t;

/* Where the events go. A callback returns 0, or an FSC_E* code with err set;
 * reading stops there and fsc_source_run returns that error. */
typedef struct fsc_source_sink {
    void *ud;
    int (*header)(void *ud, const fsc_trace_header_t *hdr, fsc_err_t *err);
    int (*tag)(void *ud, uint32_t node, uint32_t parent, const char *name, size_t len,
               fsc_err_t *err);
    int (*event)(void *ud, const fsc_event_t *ev, fsc_err_t *err);
} fsc_source_sink_t;

/* What reading found beyond the events. */
typedef struct fsc_source_info {
    int kind;                        /* FSC_SOURCE_TRACE or _SNAPSHOT */
    uint64_t events;
    int have_integrity;              /* traces read to their end */
    fsc_trace_integrity_t integrity;
    fsc_import_stats_t import;       /* snapshots */
    /* The file the error is about, whose path its message starts with;
     * NULL without an error. Valid while the paths given are. */
    const char *error_file;
} fsc_source_info_t;

typedef struct fsc_source fsc_source_t;

/* Detect what path holds and open it (a trace's header frame is read and
 * checked here). opts may be NULL. */
int fsc_source_open(const char *path, const fsc_source_opts_t *opts, fsc_source_t **out,
                    fsc_err_t *err);
int fsc_source_kind(const fsc_source_t *s);
/* Yield the header, then tag definitions and events in order, once. */
int fsc_source_run(fsc_source_t *s, const fsc_source_sink_t *sink, fsc_err_t *err);
/* After run (also after a failed one): what was read. */
void fsc_source_info(const fsc_source_t *s, fsc_source_info_t *out);
void fsc_source_close(fsc_source_t *s); /* NULL ok */

#ifdef __cplusplus
}
#endif

#endif
