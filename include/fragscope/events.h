/*
 * fragscope/events.h — the event vocabulary.
 *
 * The allocator emits these events through its sink, the recorder encodes
 * them into a trace, the importer synthesizes them from PyTorch snapshots and
 * the analyzer consumes them. One fixed-size struct carries every type; which
 * fields are meaningful depends on the type (table below). Unused fields are 0.
 *
 * Addresses are device virtual addresses as uint64_t. Sizes are bytes.
 *
 *  type            addr            size              requested      other
 *  --------------  --------------  ----------------  -------------  ------------------------------
 *  SEGMENT_ALLOC   segment base    segment bytes     -              stream, pool
 *  SEGMENT_FREE    segment base    segment bytes     -              stream, pool
 *  SEGMENT_MAP     first page      bytes mapped      -              segment = expandable segment
 *                                                                   base, stream, pool
 *  SEGMENT_UNMAP   first page      bytes unmapped    -              segment, stream, pool
 *  SPLIT           free block      its size before   size of the    segment, stream, pool; the
 *                                  the split         first part     block becomes [addr, addr+requested)
 *                                                                   and a free remainder at
 *                                                                   addr+requested of size-requested
 *  ALLOC           block           block bytes       bytes the      segment, stream, pool, tag;
 *                                  (after split)     caller asked   emitted after any SPLIT
 *  FREE_REQUESTED  block           block bytes       requested      segment, stream, pool, tag
 *  FREE_COMPLETED  block           block bytes       requested      segment, stream, pool; the
 *                                                                   block is back in the free set
 *                                                                   (after record_stream uses end)
 *  MERGE           lower block     merged size       -              other = address of the block
 *                                                                   absorbed (the higher one),
 *                                                                   segment, stream, pool;
 *                                                                   emitted after FREE_COMPLETED
 *  OOM             -               rounded request   request        stream, pool, state (below)
 *  EMPTY_CACHE     -               bytes released    -              -
 *  GC              -               bytes reclaimed   target bytes   -
 *  MARKER          -               -                 -              text (e.g. "step 12")
 *  DEVICE_MEMORY   -               -                 -              oom.device_free, oom.device_total:
 *                                                                   a sample of the whole device
 *                                                                   (cudaMemGetInfo), so that memory
 *                                                                   outside the allocator can be
 *                                                                   told (total − free − reserved)
 *
 * Ordering guarantees of the allocator: within one allocator instance events
 * are emitted in a total order (the sink is called with the allocator's lock
 * held). A miss that creates a segment emits SEGMENT_ALLOC (or SEGMENT_MAP),
 * then SPLIT if any, then ALLOC. A free emits FREE_REQUESTED, then (at once or
 * once record_stream uses are done) FREE_COMPLETED, then MERGE events, then
 * SEGMENT_FREE/SEGMENT_UNMAP if the allocator releases memory. A failing
 * malloc emits, in order, any GC, SEGMENT_FREE/UNMAP from the retry
 * (release of cached blocks), then OOM, and only then returns the error.
 *
 * Accounting that follows from the events (PyTorch's definitions):
 *   allocated bytes  += size at ALLOC, -= size at FREE_REQUESTED
 *   active bytes     += size at ALLOC, -= size at FREE_COMPLETED
 *   requested bytes  += requested at ALLOC, -= requested at FREE_COMPLETED
 *   reserved bytes   += size at SEGMENT_ALLOC/SEGMENT_MAP,
 *                    -= size at SEGMENT_FREE/SEGMENT_UNMAP
 */
#ifndef FRAGSCOPE_EVENTS_H
#define FRAGSCOPE_EVENTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, "name used in traces, JSON and the database") */
#define FSC_EVENT_TYPE_MAP(X)                      \
    X(SEGMENT_ALLOC, 1, "segment_alloc")           \
    X(SEGMENT_FREE, 2, "segment_free")             \
    X(SEGMENT_MAP, 3, "segment_map")               \
    X(SEGMENT_UNMAP, 4, "segment_unmap")           \
    X(ALLOC, 5, "alloc")                           \
    X(FREE_REQUESTED, 6, "free_requested")         \
    X(FREE_COMPLETED, 7, "free_completed")         \
    X(SPLIT, 8, "split")                           \
    X(MERGE, 9, "merge")                           \
    X(OOM, 10, "oom")                              \
    X(EMPTY_CACHE, 11, "empty_cache")              \
    X(GC, 12, "gc")                                \
    X(MARKER, 13, "marker")                        \
    X(DEVICE_MEMORY, 14, "device_memory")

typedef enum fsc_event_type {
#define FSC__EV_ENUM(name, val, str) FSC_EV_##name = (val),
    FSC_EVENT_TYPE_MAP(FSC__EV_ENUM)
#undef FSC__EV_ENUM
    FSC_EV__COUNT = 15 /* one past the largest type value */
} fsc_event_type_t;

/* "alloc", ...; "unknown" for anything else. */
const char *fsc_event_type_name(int type);
/* Inverse of fsc_event_type_name; returns 0 when unknown. */
int fsc_event_type_from_name(const char *name);

typedef enum fsc_pool {
    FSC_POOL_SMALL = 0, /* rounded size <= 1 MiB */
    FSC_POOL_LARGE = 1
} fsc_pool_t;

/* Allocator state attached to an OOM event. */
typedef struct fsc_oom_state {
    uint64_t allocated;     /* allocated bytes (block sizes) at the failure */
    uint64_t reserved;      /* reserved bytes at the failure (after the retry) */
    uint64_t capacity;      /* bytes the allocator may reserve; 0 = unknown */
    uint64_t device_free;   /* device free bytes reported by the backend;
                               UINT64_MAX = unknown */
    uint64_t device_total;  /* device total bytes; 0 = unknown */
    uint64_t segment_size;  /* size of the segment the miss tried to create */
} fsc_oom_state_t;

typedef struct fsc_event {
    uint8_t type;        /* fsc_event_type_t */
    uint8_t pool;        /* fsc_pool_t */
    uint16_t reserved0;
    uint32_t tag;        /* tag-stack node id, 0 = root (no tag) */
    uint64_t time_ns;    /* since the trace's clock origin */
    uint64_t addr;
    uint64_t size;
    uint64_t requested;
    uint64_t stream;     /* opaque stream id; 0 = default stream */
    uint64_t segment;    /* base of the segment holding addr */
    uint64_t other;      /* MERGE: absorbed block address */
    uint32_t thread;     /* small per-trace thread number, 0 = unknown */
    uint32_t text_len;   /* MARKER: length of text */
    const char *text;    /* MARKER: text, not NUL-terminated necessarily;
                            valid only for the duration of the call/iteration */
    fsc_oom_state_t oom; /* OOM; DEVICE_MEMORY: device_free and device_total */
    /* Private pool (CUDA graph pool, MemPool) of the segment or block; 0 =
     * the default pool. PyTorch's segment_pool_id (a, b) is a << 32 | b.
     * Stored in .fstrace files from format 2.2 on (a POOL record before the
     * event, docs/trace-format.md §5.4); older files read 0. */
    uint64_t pool_id;
} fsc_event_t;

/* Callback through which a producer (allocator, importer) hands events to a
 * consumer (recorder, analyzer, test). Called synchronously; the event and
 * its text are only valid during the call. */
typedef void (*fsc_event_sink_fn)(void *ud, const fsc_event_t *ev);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_EVENTS_H */
