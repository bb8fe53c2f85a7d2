/*
 * fragscope/recorder.h — the .fstrace format: writer (recorder), per-thread
 * tag stacks and markers, and the streaming reader. The byte layout is
 * specified in docs/trace-format.md.
 *
 * The recorder plugs into the allocator through fsc_recorder_sink (an
 * fsc_event_sink_fn). On the hot path it only encodes the event into an
 * in-memory chunk buffer; a background thread compresses full chunks with
 * zstd and writes them. Chunks are also written on a time bound, on every
 * OOM event (synchronously, before the sink returns), on flush, on close
 * and at process exit.
 */
#ifndef FRAGSCOPE_RECORDER_H
#define FRAGSCOPE_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/common.h"
#include "fragscope/events.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Facts about the run, stored in the trace's header frame. Strings are
 * copied by the writer; the reader's copy lives as long as the reader. */
typedef struct fsc_trace_header {
    uint32_t version_major, version_minor; /* filled by the writer/reader */
    const char *producer;   /* "fragscope 0.1.0 simulate", "pytorch import" */
    const char *config;     /* allocator config string (PYTORCH_CUDA_ALLOC_CONF syntax) */
    const char *backend;    /* "sim", "cuda:0 NVIDIA H200" */
    uint64_t capacity;      /* bytes the allocator may reserve; 0 = unknown */
    uint64_t device_total;  /* device bytes; 0 = unknown */
    uint64_t clock_origin_ns; /* wall-clock ns since the epoch at time 0 */
    uint32_t pid;
    int32_t rank;           /* -1 = not distributed */
    uint32_t flags;         /* FSC_TRACE_F_* */
    /* Host name of the recording process (format 2.3). Writer: NULL = the
     * environment's FRAGSCOPE_HOST when set (empty: none), else the
     * machine's own (gethostname at open); "" = none (an import); at most
     * 255 bytes, no control characters, else FSC_EINVAL. Reader: NULL when
     * the file records none (older files, imports). */
    const char *host;
} fsc_trace_header_t;

/* The trace was imported and its capacity is unknown (PyTorch snapshots do
 * not record set_per_process_memory_fraction). */
#define FSC_TRACE_F_CAPACITY_UNKNOWN 0x1u
/* The recording began mid-run (a snapshot whose history ring had wrapped):
 * its first events, up to the first MARKER whose text is
 * FSC_TRACE_HISTORY_MARKER (or all of them when there is none), are not
 * what happened but the state the recording began in, rebuilt: the
 * segments that existed (SEGMENT_ALLOC, or SEGMENT_MAP for expandable
 * ones), the blocks live in them (SPLIT, ALLOC) and those whose free was
 * pending (FREE_REQUESTED). */
#define FSC_TRACE_F_RECONSTRUCTED 0x2u
#define FSC_TRACE_HISTORY_MARKER "pytorch history begins"
/* Ring mode: only the last N events were kept. */
#define FSC_TRACE_F_RING 0x4u

/* ---- writer ----------------------------------------------------------- */

typedef struct fsc_recorder fsc_recorder_t;

typedef struct fsc_recorder_opts {
    size_t chunk_bytes;       /* uncompressed bound of a chunk; 0 = 256 KiB;
                                 64 B .. 16 MiB */
    uint32_t flush_interval_ms; /* time bound (background mode only); 0 = 100 ms */
    int zstd_level;           /* 0 = 3 */
    uint64_t ring_events;     /* >0: ring mode keeping the last N events in
                                 memory, written on OOM, flush and close (at
                                 most 2^28; no background thread) */
    int synchronous;          /* 0 (default): a background thread compresses
                                 and writes full chunks; 1 = compress/write on
                                 the caller's thread when a chunk fills
                                 (deterministic output, no time bound;
                                 importer, tests) */
    int install_signal_handlers; /* best-effort write of buffered events and
                                    the end record on SIGSEGV/SIGABRT/SIGBUS/
                                    SIGTERM, then the previous handler runs */
    const char *name;         /* what messages call the file (NULL = path):
                                 a writer recording under a temporary name
                                 gives the name the user knows */
} fsc_recorder_opts_t;

/* Zeroed options are the defaults. */
#define FSC_RECORDER_OPTS_DEFAULT {0, 0, 0, 0, 0, 0, NULL}

/* Create path (written to path, with a temporary name until the header is
 * on disk). hdr may be NULL; its strings are copied; version fields are
 * ignored; clock_origin_ns 0 = now, pid 0 = getpid(); FSC_TRACE_F_RING is
 * added in ring mode. The recorder is registered for fsc_mark and for the
 * exit handler, which finishes every recorder still open (end record
 * included) so a program that never closes still leaves a clean trace. In
 * a forked child the parent's recorders ignore events and never write. */
int fsc_recorder_open(const char *path, const fsc_trace_header_t *hdr,
                      const fsc_recorder_opts_t *opts, fsc_recorder_t **out,
                      fsc_err_t *err);
/* Write every buffered event (in ring mode: the ring's events) with
 * write(2); no fsync. Returns the first error seen so far. */
int fsc_recorder_flush(fsc_recorder_t *r);
/* Flush, write the end record, close. Returns the first error seen while
 * recording, if any. NULL is a no-op. */
int fsc_recorder_close(fsc_recorder_t *r);
const char *fsc_recorder_last_error(const fsc_recorder_t *r);

/* An fsc_event_sink_fn; ud is the fsc_recorder_t. Thread-safe; meant to be
 * called with the allocator's lock held (events of one allocator then keep
 * their order). Fills, when 0 in ev: tag with the calling thread's current
 * tag node (fsc_tag_push), thread with the calling thread's number, and
 * time_ns with the time since the recorder opened (monotonic clock, read
 * through the TSC where it is invariant; a multiple of 64 ns, never less
 * than the previous stamp). A non-zero ev->tag is a trace node
 * id (fsc_recorder_tag_node). Only encodes into memory, except for an OOM
 * event: its chunk has been written (write(2)) when the sink returns.
 * Errors (invalid type, out of memory) are kept for fsc_recorder_close. */
void fsc_recorder_sink(void *ud, const fsc_event_t *ev);
/* Most bytes of a MARKER's text that a trace holds (the sink cuts longer
 * text; fsc_recorder_write refuses it). */
#define FSC_TRACE_MAX_TEXT (1u << 16)

/* Append one event as given (tag, time and thread taken from ev; tag must
 * be 0 or a node from fsc_recorder_tag_node). For producers that know their
 * tags (the importer). FSC_EINVAL for an invalid type, an undefined tag or
 * marker text over FSC_TRACE_MAX_TEXT; FSC_ESTATE after close. */
int fsc_recorder_write(fsc_recorder_t *r, const fsc_event_t *ev);

/* The same for an event another thread caused, written by a thread of the
 * producer's own (the native recorder, fragscope/native.h): its tag is
 * `node`, that thread's fsc_tag_current() when it caused the event, mapped
 * into the trace as the sink maps the calling thread's. */
int fsc_recorder_write_thread_tag(fsc_recorder_t *r, const fsc_event_t *ev, uint32_t node);

/* ---- entries a producer could not place (format 2.4) -------------------
 * A producer that turns another allocator's records into events (the native
 * recorder, fragscope/native.h) may meet records it cannot place in its
 * block model, or lose some before it could look at them. It says so in the
 * trace itself: a SKIPPED record holds how many, by kind, and describes the
 * first few. Counts are cumulative; the last record of a trace holds them
 * all (docs/trace-format.md, section 5.5). The kinds' numbers are part of the
 * format: new kinds are appended. */
typedef enum fsc_trace_skip_kind {
    FSC_TRACE_SKIP_UNKNOWN_ACTION = 0, /* an action the producer does not know */
    FSC_TRACE_SKIP_FREE_UNKNOWN = 1,   /* a free of an address with no live block */
    FSC_TRACE_SKIP_UNMAP_UNMAPPED = 2, /* an unmap of a range that is not mapped */
    FSC_TRACE_SKIP_SEGMENT_UNKNOWN = 3, /* a segment free of no segment */
    FSC_TRACE_SKIP_ZERO_SIZE = 4,      /* an alloc or segment of 0 bytes */
    FSC_TRACE_SKIP_ABSURD_SIZE = 5,    /* a size no device has (over 2^48 bytes) */
    FSC_TRACE_SKIP_CONTRADICTED = 6,   /* any other record the block model refused
                                          (an alloc outside every segment, a
                                          segment over another) */
    FSC_TRACE_SKIP_NO_MEMORY = 7,      /* lost: no memory to keep it */
    FSC_TRACE_SKIP_NOT_BEGUN = 8,      /* lost: its device's recording had not
                                          begun (or the device was out of range) */
    FSC_TRACE_SKIP_KINDS = 9
} fsc_trace_skip_kind_t;

/* Records described, at most, in a SKIPPED record. */
#define FSC_TRACE_SKIP_SHOWN 8

typedef struct fsc_trace_skip {
    uint32_t kind;   /* fsc_trace_skip_kind_t (a newer kind: >= FSC_TRACE_SKIP_KINDS) */
    uint32_t action; /* the producer's action code (PyTorch's TraceEntry::Action) */
    uint32_t device;
    uint64_t index;  /* the record's number among its device's, from 0 */
    uint64_t addr, size;
} fsc_trace_skip_t;

typedef struct fsc_trace_skips {
    uint64_t total;                          /* every record left out */
    uint64_t by_kind[FSC_TRACE_SKIP_KINDS];  /* a newer writer's kinds count in total only */
    uint32_t nshown;
    fsc_trace_skip_t shown[FSC_TRACE_SKIP_SHOWN]; /* the first ones */
} fsc_trace_skips_t;

/* "unknown_action", "free_unknown", ... (JSON and database keys); "other"
 * for a kind this version does not know. */
const char *fsc_trace_skip_kind_name(uint32_t kind);
/* "unknown action", "free of an unknown address", ... */
const char *fsc_trace_skip_kind_text(uint32_t kind);
/* One line: "3 recorded entries left out of the trace: 1 unknown action, 2
 * free of an unknown address"; "" when none. Returns buf. */
char *fsc_trace_skips_text(const fsc_trace_skips_t *s, char *buf, size_t cap);
/* "free_completed at 0x7f00, 512 bytes (device 0, entry 12): free of an
 * unknown address" (index UINT64_MAX: "entry unknown"). Returns buf. */
char *fsc_trace_skip_describe(const fsc_trace_skip_t *k, char *buf, size_t cap);

/* Append a SKIPPED record (not an event) holding s. FSC_ESTATE after close. */
int fsc_recorder_write_skips(fsc_recorder_t *r, const fsc_trace_skips_t *s);

/* Tag nodes for producers that build their own tree (the importer): returns
 * the node id for (parent, name), interning it. Root is 0. The ids are the
 * trace's own (1, 2, ... in order of creation), so events written with them
 * read back with the same ids. */
int fsc_recorder_tag_node(fsc_recorder_t *r, uint32_t parent, const char *name,
                          size_t len, uint32_t *out);

/* ---- per-thread tag stacks and markers (process-wide) ----------------- */

/* Tag names longer than this are cut to it. */
#define FSC_TAG_NAME_MAX 4096

/* Push/pop a name on the calling thread's tag stack. Events the calling
 * thread causes carry the current stack. Names are copied (interned in one
 * process-wide tree; each recorder gives a node a trace id when an event
 * first uses it). Cheap: no I/O, and a repeated push of the same name under
 * the same parent takes no lock. Pushes beyond depth 256 are counted but not
 * recorded; a pop with an empty stack does nothing. */
void fsc_tag_push(const char *name);
void fsc_tag_pop(void);
/* The calling thread's current tag node in the process-wide tree (0: no
 * tag), for events recorded on another thread
 * (fsc_recorder_write_thread_tag). One thread-local read. */
uint32_t fsc_tag_current(void);
/* Write a MARKER event ("step 12") into every open recorder. */
void fsc_mark(const char *text);

/* FRAGSCOPE_TRACE / FRAGSCOPE_TRACE_MODE: when FRAGSCOPE_TRACE names a path
 * (expanded by fsc_trace_path_expand with $RANK and $WORLD_SIZE), open a
 * recorder there (ring mode with FRAGSCOPE_TRACE_MODE=ring:N, fatal-
 * signal handlers on) and return it in *out (NULL when the variable is
 * unset); it is finished at exit. One per process: later calls return the
 * same recorder. hdr may be NULL (producer "fragscope VERSION"); the
 * header's rank, when hdr is NULL or its rank is -1, is $RANK (or stays
 * -1); a rank of 0 or more in hdr is kept. FSC_EINVAL with a message for a
 * bad FRAGSCOPE_TRACE_MODE. */
int fsc_recorder_from_env(const fsc_trace_header_t *hdr, fsc_recorder_t **out,
                          fsc_err_t *err);
/* The rank the launcher gave this process ($RANK, as torchrun and most
 * launchers set it with $WORLD_SIZE), -1 when unset or not a number. */
int fsc_recorder_env_rank(void);
/* The path FRAGSCOPE_TRACE names, for one process: "%p" becomes the pid,
 * "%r" the rank (0 when unknown), "%%" a '%'. In a distributed job
 * (rank >= 0, world_size > 1) whose path has no "%r", ".rankN" is inserted
 * before a final ".fstrace" (or appended), so ranks never share a file.
 * FSC_EINVAL when the result does not fit in cap. */
int fsc_trace_path_expand(const char *tmpl, int pid, int rank, int world_size, char *out,
                          size_t cap);
/* Parse a FRAGSCOPE_TRACE_MODE value: NULL, "" or "stream" -> 0, "ring:N"
 * -> N (N > 0). Returns 0 or FSC_EINVAL. */
int fsc_trace_mode_parse(const char *mode, uint64_t *ring_events);

/* FRAGSCOPE_DEVICE_SAMPLES: when the PyTorch shim samples the device's free
 * and total memory (DEVICE_MEMORY events; fsc_allocator_sample_device).
 * "off"; "segments" (unset or empty: the default) = at every segment
 * allocation and at every OOM; N (milliseconds, 1..3600000) = those and at
 * the first allocation at least N ms after the last sample. FSC_EINVAL for
 * anything else. */
int fsc_device_samples_parse(const char *value, int *on, uint64_t *interval_ns);

/* ---- reader ----------------------------------------------------------- */

typedef struct fsc_trace_reader fsc_trace_reader_t;

typedef struct fsc_trace_integrity {
    int clean_close;          /* end record present and counts match */
    uint64_t chunks;          /* complete chunks read */
    uint64_t events;          /* events delivered */
    uint64_t compressed_bytes;/* bytes of the file consumed by valid frames */
    uint64_t file_bytes;
    uint64_t bytes_lost;      /* bytes after the last valid chunk */
    uint64_t events_lost;     /* known when the end record survived, else an
                                 estimate from the damaged chunk's header */
    int events_lost_known;
    uint64_t events_dropped;  /* ring mode: events the ring overwrote (from
                                 the end record; 0 when it is missing) */
    /* Records the producer left out of the trace (the last SKIPPED record
     * read, format 2.4; all 0 when there is none): complete once the
     * iteration has ended. */
    fsc_trace_skips_t skipped;
} fsc_trace_integrity_t;

/* Opens and validates the header frame. FSC_EFORMAT "PATH: not a fragscope
 * trace", FSC_EVERSION for a newer major version, FSC_ENOENT for a missing
 * file. Memory stays bounded whatever the file holds (one chunk at a time,
 * every size checked against fixed limits and the file's size). */
int fsc_trace_open(const char *path, fsc_trace_reader_t **out, fsc_err_t *err);
/* 1 when the file begins as a fragscope trace does (the header frame that
 * fsc_trace_open checks first), 0 when it does not, FSC_ENOENT or FSC_EIO
 * when it cannot be read. */
int fsc_trace_detect(const char *path);
void fsc_trace_close(fsc_trace_reader_t *r); /* NULL ok */
const fsc_trace_header_t *fsc_trace_header(const fsc_trace_reader_t *r);

/* Next event: returns 1 and fills *ev, 0 at the end (clean or after a
 * damaged tail, see fsc_trace_get_integrity), negative on I/O error.
 * Definitions (strings, tag nodes) are resolved internally; ev->text points
 * into the reader and is valid until the next call. */
int fsc_trace_next(fsc_trace_reader_t *r, fsc_event_t *ev);
int fsc_trace_get_integrity(const fsc_trace_reader_t *r, fsc_trace_integrity_t *out);

/* Tag tree of the events read so far: name and parent of a node; 0 is the
 * root (name ""). Returns FSC_ENOENT for an unknown node. */
int fsc_trace_tag(const fsc_trace_reader_t *r, uint32_t node, const char **name,
                  size_t *name_len, uint32_t *parent);
/* Number of tag nodes defined so far; ids are 1..count, and a node's
 * parent always has a smaller id than the node. */
uint32_t fsc_trace_tag_count(const fsc_trace_reader_t *r);
/* "step/forward/layer.3/attn" (joined by '/'); truncated to cap. */
int fsc_trace_tag_path(const fsc_trace_reader_t *r, uint32_t node, char *buf,
                       size_t cap);
const char *fsc_trace_last_error(const fsc_trace_reader_t *r);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_RECORDER_H */
