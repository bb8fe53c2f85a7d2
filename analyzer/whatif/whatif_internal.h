/*
 * whatif_internal.h — the request stream's representation, shared by the
 * what-if files of analyzer/whatif/ (not API).
 *
 * The stream is a flat array of fixed-size operations so that a replay is
 * one tight loop over memory that many threads read at once. Allocation
 * requests are numbered in order (their id); frees name that id, which each
 * replay maps to the address its own allocator returned.
 */
#ifndef FSC_WHATIF_INTERNAL_H
#define FSC_WHATIF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/whatif.h"
#include "fsc/u64map.h"
#include "fsc/vec.h"

enum {
    FSC__WOP_ALLOC = 1,    /* arg = requested bytes, stream; id = alloc count */
    FSC__WOP_FREE = 2,     /* arg = alloc id */
    FSC__WOP_COMPLETE = 3, /* arg = alloc id: the delayed free completes */
    FSC__WOP_MARKER = 4,   /* arg = offset of the text in the string pool */
    FSC__WOP_EMPTY = 5,    /* empty_cache */
    /* A burst of recorded segment releases (SEGMENT_FREE / SEGMENT_UNMAP)
     * at this point: arg = reserved before it, stream = size of the segment
     * created right after it (0 = none). Replayed as empty_cache() when
     * fsc__wop_release_is_program says the program made it. */
    FSC__WOP_RELEASE = 6
};

/* FREE: completion waits for a later COMPLETE (record_stream). */
#define FSC__WOP_F_DELAYED 0x1
/* ALLOC: the recording failed this request (an OOM event). */
#define FSC__WOP_F_RECORDED_OOM 0x2
/* RELEASE: explained by the allocator: a failed request (OOM), a GC pass,
 * or a recorded EMPTY_CACHE that is replayed itself. */
#define FSC__WOP_F_EXPLAINED 0x4
/* RELEASE: it freed only private pools' segments (a MemPool's destructor,
 * whatif_pools.c): the pools' releases at this op, no empty_cache(). */
#define FSC__WOP_F_POOL_ONLY 0x8

typedef struct fsc__wop {
    uint8_t kind;
    uint8_t flags;
    uint16_t pool; /* ALLOC: index + 1 in pool_ids of its private pool; 0 = default */
    uint32_t tag;
    uint64_t arg;
    uint64_t stream;
    uint64_t event; /* index of the recorded event */
} fsc__wop_t;

/* The program released private pool pool_ids[pool - 1] before op `op`
 * (whatif_pools.c). */
typedef struct fsc__wpool_rel {
    size_t op;
    uint16_t pool;
} fsc__wpool_rel_t;

typedef struct fsc__wtag {
    uint32_t parent;
    uint32_t name_off, name_len;
} fsc__wtag_t;

/* A recorded SEGMENT_ALLOC or SEGMENT_MAP. */
typedef struct fsc__wseg {
    uint8_t type;
    uint64_t addr, size;
} fsc__wseg_t;

struct fsc_request_stream {
    fsc__wop_t *ops;
    size_t nops, cap_ops;
    uint64_t *alloc_addr; /* recorded address per alloc id (0 = recorded OOM) */
    size_t nallocs, cap_allocs;

    char *strings; /* markers and tag names */
    size_t nstrings, cap_strings;
    fsc__wtag_t *tags; /* index = node id; 0 = root */
    size_t ntags, cap_tags;

    fsc__wseg_t *segs;
    size_t nsegs, cap_segs;
    uint64_t *script_addrs, *script_sizes; /* SEGMENT_ALLOCs only */
    size_t nscript, cap_script, cap_script_sizes;
    uint64_t *pool_ids; /* distinct private pools of the allocations */
    size_t npools, cap_pools;
    /* Pools of segments the snapshot lost, and pool releases (whatif_pools.c). */
    struct fsc__wpools *wpools; /* the model while the stream is read */
    uint8_t infer_pools;        /* infer them (a PyTorch snapshot) */
    fsc__wpool_rel_t *pool_rel; /* in op order */
    size_t npool_rel, cap_pool_rel;
    uint8_t *pool_flags; /* per pool_ids entry: FSC_POOL_* recognised (use_on_oom) */
    size_t cap_pool_flags;
    uint64_t *va_bases; /* distinct SEGMENT_MAP bases, first seen first */
    size_t nva, cap_va;

    fsc__u64map_t live;    /* recorded address -> alloc id */
    fsc__u64map_t pending; /* delayed frees waiting for FREE_COMPLETED */
    uint64_t *live_req;  /* requested bytes per alloc id, for peak_requested */
    size_t cap_live_req;
    uint64_t cur_requested;

    uint64_t *streams; /* distinct allocation streams, small */
    size_t nstreams, cap_streams;

    char *config;
    uint64_t capacity, device_total;
    uint32_t flags;

    uint64_t cur_allocated, cur_reserved;
    int ends_at_oom; /* the last allocation request recorded failed */
    int truncated;   /* the trace lost its end, or is a ring */
    uint64_t oom_upper; /* reserved at the last OOM + its segment size */
    size_t open_release; /* 1 + op index of the release burst being read; 0 none */
    int release_seen_seg; /* that burst was followed by a new segment */
    fsc_request_stream_info_t info;
};

/* whatif_pools.c: each recorded event, before (after = 0) and after the
 * stream took it; at the end, the inferred pools and release points. */
int fsc__wpools_on_event(fsc_request_stream_t *rs, const fsc_event_t *ev, int after);
int fsc__wpools_finish(fsc_request_stream_t *rs);
void fsc__wpools_free(fsc_request_stream_t *rs);
/* 1 for the id of a pool inferred from a snapshot (no PyTorch id). */
int fsc__wpool_is_inferred(uint64_t pool_id);

const char *fsc__wstream_string(const fsc_request_stream_t *rs, uint64_t off);

/* A recorded OOM event just added (whatif_external.c): counts it in
 * info.external_ooms when the analyzer would call it `external`. */
void fsc__wstream_note_oom(fsc_request_stream_t *rs, const fsc_event_t *ev);

/* The cap the recording ran under, as far as the stream knows: the
 * recorded capacity, else the inferred lower bound when it ran out of
 * memory, else 0 (unknown, no sign of one). */
uint64_t fsc__wstream_recorded_cap(const fsc_request_stream_t *rs);
/* 1 when a FSC__WOP_RELEASE was the program's (empty_cache): no failed
 * request, GC pass or recorded EMPTY_CACHE explains it, and no cap could
 * have forced the allocator to release (reserved before it + the segment
 * created after it fit under the recording's cap). The same answer for
 * every replayed setting. gc: the recording's garbage_collection_threshold. */
int fsc__wop_release_is_program(const fsc__wop_t *op, uint64_t recorded_cap, double gc);

/* 1 when the stream is the whole run (fsc_request_stream_info_t). */
int fsc__wstream_run_complete(const fsc_request_stream_t *rs);

/* The replay's sim device total for a capacity (0 = unlimited). */
uint64_t fsc__whatif_device_total(const fsc_request_stream_t *rs, uint64_t capacity);

/* One replay with a parsed config; verify (may be NULL) collects the
 * comparison with the recording. */
int fsc__whatif_replay_cfg(const fsc_request_stream_t *rs, const fsc_alloc_config_t *cfg,
                           const fsc_whatif_opts_t *opts, fsc_whatif_verify_t *verify,
                           fsc_whatif_result_t *out, fsc_err_t *err);
/* The same without the event sink, for replays that only need the outcome
 * and the peaks (capacity search): external_frag_at_peak is not measured,
 * segment_maps is 0 and segments counts device allocations and mappings. */
int fsc__whatif_replay_lean(const fsc_request_stream_t *rs, const fsc_alloc_config_t *cfg,
                            const fsc_whatif_opts_t *opts, fsc_whatif_result_t *out,
                            fsc_err_t *err);

/* Threads for `jobs` replays: `requested` (0 = online cores), at most jobs. */
int fsc__whatif_threads(int requested, size_t jobs);

#endif
