/*
 * trace_reader.h — the reader's state, shared by the frame reader
 * (trace_reader.c) and the record decoder (trace_decode.c). Internal to
 * recorder/.
 */
#ifndef FSC_RECORDER_TRACE_READER_H
#define FSC_RECORDER_TRACE_READER_H

#include <zstd.h>

#include "trace_format.h"

#define FSC__MAX_DEFS (1u << 22)          /* strings or nodes in one trace */
#define FSC__MAX_STRING_TOTAL (256u << 20) /* bytes of all interned strings */

typedef struct rstr {
    char *s;
    uint32_t len;
} rstr_t;

typedef struct rnode {
    uint32_t parent, sid;
} rnode_t;

struct fsc_trace_reader {
    int fd;
    char *path;
    uint64_t file_bytes, off;
    uint64_t chunk_off; /* where the current chunk's descriptor starts */
    fsc__header_store_t hs;
    fsc_err_t err;
    ZSTD_DCtx *dctx;
    uint8_t *cbuf, *ubuf;
    size_t ccap, ucap;
    /* Column cursors of the current chunk: cp[i] points at the read position
     * of column i (its own in col[i]; in a version 1 file, whose records are
     * not split into columns, every cp[i] points at the one position row),
     * ce[i] at its end. */
    const uint8_t *col[FSC__NCOLS], *row;
    const uint8_t **cp[FSC__NCOLS];
    const uint8_t *ce[FSC__NCOLS];
    int v1; /* format 1.x: records stored one after another */
    int in_chunk;
    uint32_t chunk_expected, chunk_seen;
    uint64_t prev_time, prev_addr, prev_segment, prev_stream;
    uint64_t next_pool_id; /* from a POOL record (2.2), for the next event */
    rstr_t *strs;
    uint32_t n_strs;
    size_t strs_cap;
    uint64_t str_bytes;
    rnode_t *nodes;
    uint32_t n_nodes;
    size_t nodes_cap;
    int state; /* 0 reading, 1 ended, -1 failed */
    fsc_trace_integrity_t integ;
};

/* Point the column cursors at a decompressed chunk of usize bytes. Returns
 * 0, or -1 when the directory does not fit. */
int fsc__decode_columns(fsc_trace_reader_t *r, size_t usize);
/* Decode the next record of the current chunk: 1 and *ev for an event, 0
 * for a definition or a skipped record, negative on a format error. */
int fsc__decode_record(fsc_trace_reader_t *r, fsc_event_t *ev);
/* Format error inside a verified chunk: the chunk counts as lost and the
 * iteration ends. Returns FSC_EFORMAT. */
int fsc__reader_bad(fsc_trace_reader_t *r, const char *what);

#endif /* FSC_RECORDER_TRACE_READER_H */
