/*
 * fragscope/native.h — recording PyTorch's own caching allocator, as it
 * runs, through its trace hook.
 *
 * PyTorch hands every allocator trace entry to the callbacks registered
 * with c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker, even
 * with _record_memory_history off, on the allocating thread and under the
 * device's allocator lock. fragscope_torch's small C++ extension registers
 * one that copies each entry into an fsc_native_entry_t and calls
 * fsc_native_push: one copy into a buffer of the device's, nothing else on
 * the allocating thread. A thread of the recorder's own turns the entries
 * into fragscope events through the same block model that imports
 * snapshots (docs/pytorch.md, "The block-model replay"): PyTorch's entries
 * carry requested sizes and addresses, fragscope's events block sizes,
 * splits and merges. Each device gets a trace of its own (one allocator
 * each), written with background compression as any trace is.
 *
 * Nothing here calls into PyTorch, so the conversion is tested on
 * synthetic entries without it (tests/test_native.c). docs/native.md
 * describes the whole recorder.
 */
#ifndef FRAGSCOPE_NATIVE_H
#define FRAGSCOPE_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/common.h"
#include "fragscope/recorder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's TraceEntry::Action values (c10/cuda/CUDACachingAllocator.h),
 * which the tracker copies as they are. */
enum {
    FSC_NATIVE_ALLOC = 0,
    FSC_NATIVE_FREE_REQUESTED = 1,
    FSC_NATIVE_FREE_COMPLETED = 2,
    FSC_NATIVE_SEGMENT_ALLOC = 3,
    FSC_NATIVE_SEGMENT_FREE = 4,
    FSC_NATIVE_SEGMENT_MAP = 5,
    FSC_NATIVE_SEGMENT_UNMAP = 6,
    FSC_NATIVE_SNAPSHOT = 7,
    FSC_NATIVE_OOM = 8,
    FSC_NATIVE_USER_DEFINED = 9
};

/* fsc_native_entry_t.flags */
enum {
    /* PyTorch captured a stack with this entry
     * (_record_memory_history(stacks=...) is on): its frames come later,
     * through fsc_native_stacks, in the order of the device's entries that
     * carry this flag. Until they come, the device's later entries wait. */
    FSC_NATIVE_F_STACK = 1
};

/* One trace entry (48 bytes). */
typedef struct fsc_native_entry {
    uint8_t action;   /* FSC_NATIVE_* */
    uint8_t flags;    /* FSC_NATIVE_F_* */
    uint16_t device;  /* CUDA device index */
    uint32_t tag;     /* fsc_tag_current() of the allocating thread; with a
                         compile context, that name pushed on it, so that
                         the event says which compiled region made it */
    uint64_t addr;    /* OOM: the device's free bytes (PyTorch's device_free) */
    uint64_t size;    /* alloc, free: the request; segment: its bytes; OOM:
                         the rounded request */
    uint64_t stream;
    uint64_t time;    /* the producer's clock (fsc_native_opts_t.clock_*) */
    uint64_t pool_id; /* the entry's mempool (a, b) as a << 32 | b; 0 default */
} fsc_native_entry_t;

/* A segment, or an expandable segment's mapped range, that exists when a
 * device's recording begins, with its blocks (the allocator's own
 * snapshot: c10::cuda::CUDACachingAllocator::snapshot()). */
typedef struct fsc_native_block {
    uint64_t addr, size, requested;
    uint8_t allocated; /* 1 live; 0 free */
    uint8_t pending;   /* freed, the free waiting on other streams (active) */
    uint32_t tag;      /* its stack (fsc_native_stack_node), 0 none */
} fsc_native_block_t;

typedef struct fsc_native_segment {
    uint64_t addr, size, stream, pool_id;
    uint8_t large;      /* the large pool's (else the small one's) */
    uint8_t expandable; /* a mapped range of an expandable segment */
    const fsc_native_block_t *blocks; /* in address order, covering it */
    size_t nblocks;
} fsc_native_segment_t;

/* What is known of a device when its recording begins. */
typedef struct fsc_native_device {
    int device;
    const char *name;     /* "NVIDIA H100 80GB HBM3" (may be NULL) */
    uint64_t total;       /* the device's memory (cudaMemGetInfo) */
    uint64_t free;        /* its free bytes then */
    uint64_t capacity;    /* what PyTorch may reserve on it: the per-process
                             memory fraction x total; 0 = no cap set */
    const char *config;   /* the allocator settings in force, in
                             PYTORCH_CUDA_ALLOC_CONF form ("" = defaults) */
    const fsc_native_segment_t *segments; /* the state it is in */
    size_t nsegments;
} fsc_native_device_t;

typedef struct fsc_native_opts {
    /* Where device traces go: the first device that records writes `path`,
     * any other device D the same with ".devD" before a final ".fstrace"
     * (or appended). Expanded as FRAGSCOPE_TRACE is
     * (fsc_trace_path_expand: %p, %r, a rank suffix). */
    const char *path;
    uint64_t ring_events;  /* > 0: keep only the last N events of each device */
    int devices;           /* how many devices entries may name (1..64) */
    const char *producer;  /* the traces' producer, e.g. "fragscope 0.1.0 native
                              (torch 2.11.0)" */
    /* entry.time to ns since the Unix epoch: ns = origin_ns + (time -
     * origin_tick) * ns_per_tick */
    uint64_t clock_origin_tick, clock_origin_ns;
    double clock_ns_per_tick; /* 0 = time is ns since the epoch already */
    uint32_t flush_interval_ms; /* entries reach the trace's buffers at least
                                   this often; 0 = 20 ms */
} fsc_native_opts_t;

typedef struct fsc_native fsc_native_t;

/* Start the recorder's thread; no file is created before a device begins.
 * FSC_EINVAL for bad options. */
int fsc_native_open(const fsc_native_opts_t *opts, fsc_native_t **out, fsc_err_t *err);

/* Open the device's trace (header: producer, config, backend
 * "cuda:D NAME", capacity, device total) with the state it is in first
 * (segments and blocks at their addresses, then the marker
 * FSC_TRACE_HISTORY_MARKER; the header then carries
 * FSC_TRACE_F_RECONSTRUCTED) and a DEVICE_MEMORY sample of its free bytes
 * (free = UINT64_MAX: not known, no sample). Call before the device's first
 * entry is pushed. FSC_ESTATE when the device has begun already or the
 * recorder is closed: a refused call changes nothing (the device's trace
 * goes on recording). */
int fsc_native_begin_device(fsc_native_t *n, const fsc_native_device_t *d, fsc_err_t *err);

/* A device the process has not used yet (making a CUDA context on it to
 * begin it now would be wrong): its entries are kept from now on, and the
 * recorder's thread begins its trace, empty, with this description (no
 * segments; its free bytes are not known) when its first entry arrives.
 * Strings are copied. FSC_ESTATE when it has begun or been declared
 * already; FSC_EINVAL with segments. If its trace cannot be opened then,
 * its entries are counted as lost (FSC_TRACE_SKIP_NOT_BEGUN) and the error
 * is the one flush and close return. */
int fsc_native_declare_device(fsc_native_t *n, const fsc_native_device_t *d, fsc_err_t *err);

/* The hot path: copy e into its device's buffer. Called under the
 * device's allocator lock, so one thread at a time per device; takes no
 * lock, calls nothing but (rarely, every 1 024 entries) malloc. An entry
 * of a device that has neither begun nor been declared, or out of range,
 * or pushed after close, or for which no memory could be had, is counted
 * as dropped, by kind (FSC_TRACE_SKIP_NOT_BEGUN, _NO_MEMORY), and the
 * traces say so (fsc_native_stats_t.skipped).
 * Returns 1 when the entry was kept, 0 when it was dropped (a dropped
 * entry's stack must not be given to fsc_native_stacks). */
int fsc_native_push(fsc_native_t *n, const fsc_native_entry_t *e);

/* ---- stacks ------------------------------------------------------------------
 * With _record_memory_history(stacks=...) on, PyTorch hands each entry the
 * stack it captured; naming its frames needs the GIL, which the tracker
 * must not take under the allocator's lock. So the tracker keeps the
 * stack aside and flags the entry (FSC_NATIVE_F_STACK); a Python thread
 * names the frames and hands the resulting tag nodes back in order; the
 * entry's event is tagged with the frames below its thread's tag, as a
 * snapshot's entry is tagged with its frames on import. */
typedef struct fsc_native_frame {
    const char *file;
    size_t file_len;
    const char *function;
    size_t function_len;
    uint64_t line; /* > INT64_MAX: not known */
} fsc_native_frame_t;

/* The process tag node of a stack, frames innermost first (as PyTorch
 * symbolizes them), each named by fsc_frame_name below the frame that
 * called it; 0 for no frames (or a full tag table: then the deepest frame
 * that fit). Any thread. */
uint32_t fsc_native_stack_node(const fsc_native_frame_t *frames, size_t nframes);

/* The stacks (fsc_native_stack_node; 0 for one that could not be named) of
 * device's next `count` entries flagged FSC_NATIVE_F_STACK, in order. Any
 * thread. FSC_EINVAL for a device out of range, FSC_ENOMEM. */
int fsc_native_stacks(fsc_native_t *n, int device, const uint32_t *nodes, size_t count);

/* Convert every entry pushed so far (up to the first whose stack has not
 * come) and write the traces' buffers to their files (write(2), no
 * fsync). From any thread; the first error. */
int fsc_native_flush(fsc_native_t *n);

/* The path of device d's trace (NULL when it has not begun). */
const char *fsc_native_trace_path(const fsc_native_t *n, int device);

typedef struct fsc_native_stats {
    uint64_t entries;      /* converted */
    uint64_t events;       /* written */
    uint64_t dropped;      /* lost before conversion: pushed for a device that
                              had not begun (or out of range, or after close),
                              or with no memory to keep them */
    uint64_t contradicted; /* entries the block model could not place (kept
                              out of the trace; the first is in message) */
    uint64_t unnamed_stacks; /* entries written at close without the stack
                                that was to come (thread's tag alone) */
    char message[FSC_ERR_MSG_MAX];
    /* dropped + contradicted, by kind, with the first ones described: what
     * the traces' SKIPPED records say, summed over the devices (entries
     * pushed after close are in no trace, and only here) */
    fsc_trace_skips_t skipped;
} fsc_native_stats_t;

void fsc_native_get_stats(fsc_native_t *n, fsc_native_stats_t *out);

/* Flush, stop the thread, close every trace (end record); the first error.
 * Entries still waiting for their stack are written with their thread's
 * tag alone.
 * NULL ok. Entries pushed after this starts are dropped, and the memory
 * they would be copied into stays: PyTorch has no way to detach a tracker,
 * so it may still call in until the process ends. */
int fsc_native_close(fsc_native_t *n);
/* Close, then free everything: only when nothing will push again (a
 * program that owns the producer; tests). NULL ok. */
void fsc_native_destroy(fsc_native_t *n);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_NATIVE_H */
