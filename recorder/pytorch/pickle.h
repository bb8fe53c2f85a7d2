/*
 * pickle.h — a small reader and writer for the Python pickle subset that
 * PyTorch memory snapshots use (protocols 0 to 5: dicts, lists, tuples,
 * strings, bytes, integers, floats, booleans, None), and the
 * value tree they produce. Internal to recorder/pytorch/ (not API).
 *
 * Reader: the whole input is parsed into a tree of fsc__pv_t nodes held in
 * one arena owned by an fsc__pdoc_t. Memo references are shared pointers,
 * never copies, so a file that references one big object many times costs
 * one pointer per reference. Once a container has been placed inside
 * another one it is sealed: later attempts to modify it are format errors.
 * That keeps the tree acyclic, keeps every node's recorded depth exact, and
 * costs nothing on files that Python's pickler writes (it completes a child
 * before adding it to its parent). Lengths, memo indices and nesting depth
 * are checked, and the arena is bounded by a multiple of the input size.
 *
 * Strings and bytes point into the document's copy of the input (or, for the
 * text strings of protocol 0, into a decoded copy in the arena); they are
 * not NUL-terminated. Integers of any size are read: those outside int64
 * (torch.compile writes 2^64-1 as "no line") are FSC__PV_BIGINT values that
 * fsc__pv_int and fsc__pv_num do not convert, so each reader decides what an
 * out-of-range field means instead of the whole file failing.
 */
#ifndef FSC_RECORDER_PICKLE_H
#define FSC_RECORDER_PICKLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fragscope/common.h"

typedef enum fsc__pv_kind {
    FSC__PV_NONE = 0,
    FSC__PV_BOOL,
    FSC__PV_INT,
    FSC__PV_FLOAT,
    FSC__PV_STR,
    FSC__PV_BYTES,
    FSC__PV_LIST,
    FSC__PV_TUPLE,
    FSC__PV_DICT,
    FSC__PV_BIGINT /* an integer outside int64: u.s/len hold its text or bytes */
} fsc__pv_kind_t;

typedef struct fsc__pv fsc__pv_t;
struct fsc__pv {
    uint8_t kind;      /* fsc__pv_kind_t */
    uint8_t sealed;    /* placed inside another container: immutable */
    uint16_t depth;    /* 1 for scalars, 1 + deepest child for containers */
    uint32_t len;      /* STR/BYTES: bytes; LIST/TUPLE: items; DICT: pairs */
    uint32_t cap;      /* capacity of items (in pointers) */
    uint32_t aux;      /* streamed history lists: entries handed out, not stored */
    union {
        int64_t i;          /* INT, BOOL */
        double f;           /* FLOAT */
        const char *s;      /* STR (UTF-8), BYTES */
        fsc__pv_t **items;  /* LIST/TUPLE: len items; DICT: key, value, ... */
    } u;
};

/* Limits of the reader. */
#define FSC__PICKLE_MAX_DEPTH 64
/* The arena may hold at most this many bytes per input byte (+ 1 MiB). */
#define FSC__PICKLE_MEM_FACTOR 48

typedef struct fsc__pdoc fsc__pdoc_t;

/* Parse a pickle held in memory. The buffer is copied. name is used in error
 * messages ("PATH: offset N: what"). On success *out owns the tree. */
int fsc__pickle_parse(const void *data, size_t len, const char *name, fsc__pdoc_t **out,
                      fsc_err_t *err);
void fsc__pdoc_free(fsc__pdoc_t *d); /* NULL ok */
const fsc__pv_t *fsc__pdoc_root(const fsc__pdoc_t *d);
/* Bytes of arena in use (for tests of the memory bound). */
size_t fsc__pdoc_mem(const fsc__pdoc_t *d);

/* ---- streaming ----------------------------------------------------------
 *
 * fsc__pickle_stream reads a snapshot without building its whole tree. A
 * first pass, fsc__pickle_scan, walks the opcodes and notes which memo
 * entries are read again (the frame lists and frame dicts PyTorch shares
 * between entries, repeated strings). The parse then builds new values in a
 * scratch arena; only memo entries that are read again move to the kept
 * arena (with what they hold). Each entry of a device_traces[d] list is
 * handed to the callback as soon as its batch of APPENDS is complete, and
 * the scratch arena is rewound: memory is what the stack holds plus the
 * shared values, whatever the history's length. Everything else (segments,
 * settings, annotations) is kept as a tree whose device_traces lists are
 * empty but count their entries (fsc__pv_count).
 *
 * Which list is device_traces[d] is read from the stack layout that
 * Python's pickler writes (the key 'device_traces' right below the history
 * list, each device's list above it), and checked at STOP: a file laid out
 * otherwise fails with a message rather than being misread. The input is
 * borrowed (strings point into it) and must outlive the document. */
typedef struct fsc__pscan fsc__pscan_t;
typedef struct fsc__pstream fsc__pstream_t;
void fsc__pscan_free(fsc__pscan_t *sc); /* NULL ok */
size_t fsc__pscan_refs(const fsc__pscan_t *sc); /* memo entries read again */

struct fsc__pstream {
    void *ud;
    /* device_traces[dev][idx]. v and what it holds are valid during the
     * call only, except values for which fsc__pv_stable is true. A nonzero
     * return stops the parse, which returns it (the callback sets err). */
    int (*entry)(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v);
    /* Every few MiB of input (may be NULL). */
    void (*progress)(void *ud, size_t done, size_t total);
    /* A kept list was read for the last time and its items were freed (it
     * is empty from now on; the node itself stays, so its address is not
     * reused): drop what was cached under its address. May be NULL. */
    void (*dropped)(void *ud, const fsc__pv_t *v);
    /* The entry callback never reads an entry's 'frames': its value is
     * stepped over, not built (the entry holds None there, or, for an
     * entry the generic parser reads, frames in part: not to be read).
     * Should a value defined inside skipped frames be read anywhere else
     * (no snapshot PyTorch writes does that), fsc__pickle_stream returns
     * FSC__PICKLE_ESKIPPED without a message: read the file again without
     * skipping. */
    int skip_frames;
    /* On a scan cut into ranges (a large input): threads that decode the
     * history ahead of the parse (0: the CPUs, as the scan; 1: none), and
     * entries of a list read before they start (0: 1000). The entries
     * handed over are the same in every case (tests set both). When not
     * NULL, *taken counts the ranges whose entries came from the threads. */
    unsigned threads;
    unsigned warmup;
    size_t *taken;
};

/* Internal to the stream: see skip_frames. Not an FSC_E* code. */
#define FSC__PICKLE_ESKIPPED (-1000)

/* Fails only with FSC_ENOMEM; cb (may be NULL) gets progress only, from the
 * calling thread, in order. Large inputs are scanned on several threads
 * (pickle_scan.c), with the same result. */
int fsc__pickle_scan(const void *data, size_t len, const fsc__pstream_t *cb, fsc__pscan_t **out);

int fsc__pickle_stream(const void *data, size_t len, const char *name, const fsc__pscan_t *scan,
                       const fsc__pstream_t *cb, fsc__pdoc_t **out, fsc_err_t *err);
/* Items of a list including those streamed. */
uint64_t fsc__pv_count(const fsc__pv_t *v);
/* The value lives as long as its document (not only during a callback):
 * it is in the document's 'keep' arena (flag FSC__PV_F_KEEP of sealed). */
#define FSC__PV_F_KEEP 4u
static inline int fsc__pv_stable(const fsc__pv_t *v)
{
    return v != NULL && (v->sealed & FSC__PV_F_KEEP) != 0;
}

/* A document built by other means (JSON): an empty arena to fill with the
 * constructors below, and the root set once built. */
int fsc__pdoc_new(fsc__pdoc_t **out);
fsc__pv_t *fsc__pdoc_scalar(fsc__pdoc_t *d, fsc__pv_kind_t kind);
fsc__pv_t *fsc__pdoc_str(fsc__pdoc_t *d, const char *s, size_t len); /* copies s */
fsc__pv_t *fsc__pdoc_container(fsc__pdoc_t *d, fsc__pv_kind_t kind, uint32_t cap);
/* Append to a LIST/TUPLE (one item) or a DICT (key then value: call twice
 * per pair, the pair counts once both are in). Returns 0 or FSC_ENOMEM /
 * FSC_ELIMIT. */
int fsc__pdoc_push(fsc__pdoc_t *d, fsc__pv_t *container, fsc__pv_t *item);
void fsc__pdoc_set_root(fsc__pdoc_t *d, const fsc__pv_t *root);

/* ---- accessors (NULL-tolerant) ---------------------------------------- */

/* Value for a string key in a DICT (the last one wins, as in Python); NULL if
 * absent or v is not a dict. */
const fsc__pv_t *fsc__pv_get(const fsc__pv_t *v, const char *key);
int fsc__pv_is_str(const fsc__pv_t *v, const char *s);
/* INT or BOOL into *out; FLOAT only when integral. Returns 1 on success. */
int fsc__pv_int(const fsc__pv_t *v, int64_t *out);
/* INT, BOOL or FLOAT as double. Returns 1 on success. */
int fsc__pv_num(const fsc__pv_t *v, double *out);
/* Items of a LIST or TUPLE (NULL and 0 otherwise). */
uint32_t fsc__pv_seq(const fsc__pv_t *v, fsc__pv_t *const **items);

/* ---- writer ------------------------------------------------------------ */

/* Protocol-4 pickle writer over a FILE (no FRAME opcodes: they are optional).
 * Strings can be memoized so that repeated keys cost two bytes each. Errors
 * are sticky: check fsc__pw_finish. */
typedef struct fsc__pw fsc__pw_t;

int fsc__pw_open(FILE *f, fsc__pw_t **out);
void fsc__pw_none(fsc__pw_t *w);
void fsc__pw_bool(fsc__pw_t *w, int v);
void fsc__pw_int(fsc__pw_t *w, int64_t v);
void fsc__pw_uint(fsc__pw_t *w, uint64_t v);
void fsc__pw_float(fsc__pw_t *w, double v);
/* A str; the first occurrence of a given string is memoized and later ones
 * are memo references. */
void fsc__pw_str(fsc__pw_t *w, const char *s, size_t len);
void fsc__pw_cstr(fsc__pw_t *w, const char *s);
/* Containers: open pushes the empty container and a mark; close adds the
 * items written since (SETITEMS/APPENDS). Dict items are written as key,
 * value, key, value... Tuples: open_tuple/close_tuple (MARK ... TUPLE). */
void fsc__pw_dict_open(fsc__pw_t *w);
void fsc__pw_dict_close(fsc__pw_t *w);
void fsc__pw_list_open(fsc__pw_t *w);
void fsc__pw_list_close(fsc__pw_t *w);
/* Add the items written so far to the open list and start a new batch (as
 * Python's pickler does every 1000 items, so the reader's stack stays small). */
void fsc__pw_list_batch(fsc__pw_t *w);
void fsc__pw_tuple_open(fsc__pw_t *w);
void fsc__pw_tuple_close(fsc__pw_t *w);
/* Memoize the value on top of the stack under a caller id (e.g. a frame
 * list per tag node) / push it again later. Returns the memo index. */
uint32_t fsc__pw_memoize(fsc__pw_t *w);
void fsc__pw_get(fsc__pw_t *w, uint32_t memo_index);
/* Write STOP, flush, free the writer. Returns 0 or FSC_EIO/FSC_ENOMEM. */
int fsc__pw_finish(fsc__pw_t *w);
void fsc__pw_free(fsc__pw_t *w); /* discard without STOP; NULL ok */

#endif
