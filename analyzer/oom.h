/*
 * oom.h — the diagnosis of one OOM event as a facts struct (oom.c): its
 * cause, the figures that prove it, the explanation in words, and the
 * segments, pinning blocks and tags behind it. The store writes it into
 * ooms, oom_segments, oom_pinning_blocks and oom_tags. Internal to the
 * analyzer.
 */
#ifndef FSC_ANALYZER_OOM_H
#define FSC_ANALYZER_OOM_H

#include "replay.h"

#define FSC__OOM_LAYOUTS 64      /* OOMs that get a full layout snapshot */
#define FSC__OOM_TOP_SEGMENTS 10
#define FSC__OOM_TOP_PINNING 20
#define FSC__OOM_TOP_TAGS 20

/* What the replay does not know about the run. */
typedef struct fsc__oom_run {
    int ring;               /* ring trace: trust the OOM event's figures */
    int capacity_unknown;
    uint64_t capacity, device_total; /* from the trace header */
} fsc__oom_run_t;

/* A live block keeping a segment with free space from being released. */
typedef struct fsc__oom_pin {
    uint64_t addr, size, requested, alloc_seq, age_events, age_ns;
    uint32_t tag;
    int pending;            /* freed, waiting for its stream */
} fsc__oom_pin_t;

typedef struct fsc__oom_seg {
    uint64_t base, size, stream, free_bytes, largest_free, nfree, nlive, live_bytes;
    uint8_t pool;
    size_t npins;
    fsc__oom_pin_t pins[FSC__OOM_TOP_PINNING];
} fsc__oom_seg_t;

typedef struct fsc__oom_tag {
    uint32_t tag;
    uint64_t live_bytes, live_blocks;
} fsc__oom_tag_t;

typedef struct fsc__oom {
    uint64_t id, seq, time, stream, pool, tag;
    uint64_t requested, rounded, allocated, reserved, segment_size;
    uint64_t allocated_now, reserved_now; /* the replay's, for the snapshot */
    uint64_t capacity, lower, upper, device_free, device_total;
    int known, inferred, device_free_known;
    /* external: memory of the device outside this allocator at the OOM,
     * device_total − device_free − reserved; known only with device_total.
     * device_limited: the device itself refused (device_free < segment_size)
     * and no recorded cap did. */
    uint64_t external;
    int external_known, device_limited;
    uint64_t free_in_reserved, largest_free, largest_usable;
    double external_frag;
    int cause;
    uint64_t threshold; /* undetermined: the cap at which a perfect allocator
                           starts to serve the request (allocated + rounded) */
    /* Free bytes inside private pools (CUDA graph pools, MemPools), which
     * serve only their own requests, and the pool holding the most. */
    uint64_t private_free, top_pool_id, top_pool_free;
    char text[1536];
    int has_snapshot;   /* a layout snapshot goes with it (id < FSC__OOM_LAYOUTS) */
    uint64_t snapshot;  /* its id, set by the store */
    size_t nsegs, ntags;
    fsc__oom_seg_t segs[FSC__OOM_TOP_SEGMENTS];
    fsc__oom_tag_t tags[FSC__OOM_TOP_TAGS];
} fsc__oom_t;

/* Diagnose OOM number `id`, the event being replayed. Returns 0 or
 * FSC_ENOMEM. */
int fsc__oom_diagnose(const fsc__replay_t *r, const fsc__oom_run_t *run, const fsc_event_t *ev,
                      uint64_t id, fsc__oom_t *out);

#endif
