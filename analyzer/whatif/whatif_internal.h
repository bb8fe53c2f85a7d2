/*
 * whatif_internal.h — the request stream's representation, shared by the
 * what-if files of analyzer/whatif/ (not API).
 *
 * The stream's operations are coded into blocks (whatif_ops.c) kept in
 * memory up to a small bound and in an unlinked temporary file past it
 * (whatif_store.c); each replay reads them in order through its own
 * cursor, so that many threads replay at once and memory does not grow
 * with the length of the recording. Allocation requests are numbered in
 * order (their id); each live one also holds a slot, a small number reused
 * once its block is freed and its free completed, which its FREE and
 * COMPLETE name: a replay keeps the address its own allocator returned per
 * slot, an array as long as the most blocks ever live at once.
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

/* One operation as a cursor hands it out (and as the stream holds its
 * last one). A field its kind does not use is left as it was. */
typedef struct fsc__wop {
    uint8_t kind;
    uint8_t flags;
    uint32_t pool; /* ALLOC: index + 1 in pool_ids of its private pool; 0 = default */
    uint32_t tag;
    uint32_t seg;   /* ALLOC: the recorded segment (whatif_pools.c); UINT32_MAX none */
    uint64_t arg;
    uint64_t stream;
    uint64_t event; /* index of the recorded event */
    uint64_t slot;  /* ALLOC (not a recorded OOM), FREE, COMPLETE: its slot */
    uint64_t addr;  /* ALLOC: the recorded address (0 = recorded OOM) */
    uint64_t id;    /* ALLOC: its alloc id (cursor only) */
    const char *text; /* MARKER: its text, up to its first NUL, at most */
    size_t text_len;  /* FSC_WHATIF_TEXT_MAX - 1 bytes (all a replay shows) */
} fsc__wop_t;

/* ---- whatif_store.c: the blocks --------------------------------------------- */

/* Readable bytes after every block's (zeros, or the open block's spare
 * room), so that the cursor reads varints without a bound check per byte. */
#define FSC__WSLACK 128
/* Bytes of blocks kept in memory before the rest goes to a file. */
#define FSC__WSTORE_LIMIT (32u << 20)

typedef struct fsc__wblock {
    uint8_t *mem;  /* the bytes when in memory; NULL: in the file at off */
    uint64_t off;
    uint32_t size; /* bytes stored */
    uint32_t raw;  /* bytes once decompressed (== size unless zstd) */
    uint32_t nops;
    uint8_t zstd;
} fsc__wblock_t;

typedef struct fsc__wstore {
    fsc__wblock_t *blocks;
    size_t nblocks, cap_blocks;
    uint8_t *open; /* the block being filled, raw */
    size_t nopen, cap_open;
    uint32_t open_ops, block_ops;
    size_t mem, limit;       /* bytes of blocks in memory; the bound */
    uint64_t spilled, fsize; /* bytes in the file */
    int fd; /* the temporary file; -1 none yet */
    void *cctx;
    uint8_t *zbuf;
    size_t cap_zbuf;
    char msg[256]; /* why the last call failed (not ENOMEM) */
} fsc__wstore_t;

void fsc__wstore_init(fsc__wstore_t *s); /* reads the knobs (whatif_store.c) */
void fsc__wstore_free(fsc__wstore_t *s);
/* Room for n more bytes at the end of the open block; NULL: no memory. */
uint8_t *fsc__wstore_room(fsc__wstore_t *s, size_t n);
/* One op of n bytes was written there; seals the block when it is full. */
int fsc__wstore_commit(fsc__wstore_t *s, size_t n);

/* A reader of the blocks in order, with its own buffers. */
typedef struct fsc__wreader {
    const fsc__wstore_t *s;
    size_t next;
    uint8_t *buf, *zin;
    size_t cap_buf, cap_zin;
    void *dctx;
    char msg[256];
} fsc__wreader_t;

void fsc__wreader_open(fsc__wreader_t *r, const fsc__wstore_t *s);
void fsc__wreader_close(fsc__wreader_t *r);
/* 1 and the next block's raw bytes (valid until the next call), 0 at the
 * end, or a negative FSC_E* (r->msg says why unless FSC_ENOMEM). */
int fsc__wreader_next(fsc__wreader_t *r, const uint8_t **p, size_t *n, uint32_t *nops);

/* ---- whatif_ops.c: coding and cursor ---------------------------------------- */

/* What the coder and the cursor both carry from one op to the next:
 * the last event, alloc count and address, and the recent sizes with the
 * address each was last served at (whatif_ops.c). */
#define FSC__WRECENT 16
typedef struct fsc__wcodec {
    uint64_t event, allocs, addr;
    uint64_t rsize[FSC__WRECENT], raddr[FSC__WRECENT];
    uint8_t rused[FSC__WRECENT];
    uint8_t rnext;
} fsc__wcodec_t;

typedef struct fsc__wcur {
    const fsc_request_stream_t *rs;
    fsc__wreader_t rd;
    const uint8_t *p, *end;
    uint32_t left; /* ops left in the current block */
    int tail_done;
    fsc__wcodec_t st;
    size_t index; /* op index of the next op decoded */
    size_t k_fb, k_pool_only;
    fsc__wop_t op;
} fsc__wcur_t;

/* The program released private pool pool_ids[pool - 1] before op `op`
 * (whatif_pools.c). */
typedef struct fsc__wpool_rel {
    size_t op;
    uint32_t pool;
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

/* A piece of the state a recording began in (FSC_TRACE_F_RECONSTRUCTED),
 * adopted by every replay before its first op (fsc_allocator_adopt_*). */
enum { FSC__WSEED_SEGMENT = 1, FSC__WSEED_MAPPING = 2, FSC__WSEED_BLOCK = 3 };
typedef struct fsc__wseed {
    uint8_t kind;
    uint8_t pool; /* fsc_pool_t: the size class */
    uint64_t addr, size;
    uint64_t base;      /* MAPPING: the expandable segment's base */
    uint64_t stream, pool_id;
    uint64_t requested; /* BLOCK */
    uint64_t slot;      /* BLOCK: its slot (its free is an op) */
    uint32_t wseg;      /* SEGMENT, MAPPING: whatif_pools.c's segment (UINT32_MAX
                           none), whose inferred pool it is adopted into */
} fsc__wseed_t;

/* A live request while the stream is read. */
typedef struct fsc__wslot {
    uint64_t id, requested;
} fsc__wslot_t;

struct fsc_request_stream {
    fsc__wstore_t store;
    fsc__wcodec_t enc;
    fsc__wop_t tail; /* the last op, not coded yet (has_tail) */
    int has_tail;
    char tail_text[FSC_WHATIF_TEXT_MAX];
    size_t nops, nreleases; /* ops; FSC__WOP_RELEASE among them */
    size_t nallocs;
    /* Slots: live requests (and frees waiting for their completion). */
    fsc__wslot_t *slots;
    size_t nslots, cap_slots; /* nslots: the most ever in use at once */
    uint64_t *free_slots;
    size_t nfree_slots, cap_free_slots;
    /* Decided at the end (whatif_pools.c), applied by the cursor. */
    uint32_t *seg_pool; /* per recorded segment: its requests' pool, 0 = as coded */
    size_t nseg_pool;
    uint64_t *fb_ids; /* ascending: use_on_oom fallbacks, replayed in the default pool */
    size_t nfb_ids;
    size_t *pool_only; /* ascending op indexes: FSC__WOP_F_POOL_ONLY */
    size_t npool_only;

    char *strings; /* tag names */
    size_t nstrings, cap_strings;
    fsc__wtag_t *tags; /* index = node id; 0 = root */
    size_t ntags, cap_tags;

    fsc__wseg_t *segs;
    size_t nsegs, cap_segs;
    uint64_t *script_addrs, *script_sizes; /* SEGMENT_ALLOCs only */
    size_t nscript, cap_script, cap_script_sizes;
    uint64_t *pool_ids; /* distinct private pools of the allocations */
    size_t npools, cap_pools;
    fsc__u64map_t pool_index; /* pool id -> index + 1 in pool_ids */
    /* Pools of segments the snapshot lost, and pool releases (whatif_pools.c). */
    struct fsc__wpools *wpools; /* the model while the stream is read */
    uint8_t infer_pools;        /* infer them (a PyTorch snapshot) */
    fsc__wpool_rel_t *pool_rel; /* in op order */
    size_t npool_rel, cap_pool_rel;
    uint8_t *pool_flags; /* per pool_ids entry: FSC_POOL_* recognised (use_on_oom) */
    size_t cap_pool_flags;
    uint64_t *va_bases; /* distinct SEGMENT_MAP bases, first seen first */
    size_t nva, cap_va;

    fsc__u64map_t live;    /* recorded address -> slot */
    fsc__u64map_t pending; /* delayed frees waiting for FREE_COMPLETED: address -> slot */
    uint64_t cur_requested;

    /* The state the recording began in, in order (segments before their
     * blocks); seeding while its events are read. Its blocks take alloc
     * ids 0 .. nseed_blocks - 1, so requests are numbered from there. */
    fsc__wseed_t *seeds;
    size_t nseeds, cap_seeds;
    uint64_t nseed_blocks, seed_reserved, seed_allocated;
    int seeding;
    fsc_event_t *seed_pending; /* FREE_REQUESTED of the state, pushed at its end */
    size_t nseed_pending, cap_seed_pending;
    uint64_t *seed_bases; /* its expandable segments' bases (adopted, not scripted) */
    size_t nseed_bases, cap_seed_bases;
    /* The importer's account of it ("pytorch.rebuild" record): the
     * window's history entries and first time, and the blocks whose size
     * it guessed, with the ends the rules allow (whatif_seed.c). */
    int have_rebuild;
    uint64_t window_entries, window_first_time_us, window_first_event;
    struct fsc__wguess *guesses;
    size_t nguesses;
    uint64_t guessed_total, settled;
    size_t settled_before; /* sizes given to the import: settled by earlier rounds */
    fsc_import_size_t *sizes_before; /* those sizes (a copy) */
    char *rebuild_text; /* the record's parts so far */
    size_t rebuild_len;

    uint64_t *streams; /* distinct allocation streams, small */
    size_t nstreams, cap_streams;

    char *config;
    uint64_t capacity, device_total;
    uint32_t flags;

    uint64_t cur_allocated, cur_reserved;
    int ends_at_oom; /* the last allocation request recorded failed */
    int truncated;   /* the trace lost its end, or is a ring */
    fsc_trace_skips_t rec_skipped; /* entries the recorder left out of the trace */
    uint64_t oom_upper; /* reserved at the last OOM + its segment size */
    /* The least cap every recorded segment creation fits under: reserved
     * before it plus the segment size its request needed, which for an
     * expandable segment can exceed what was mapped (PyTorch checks the cap
     * with the request's segment size). map_before: reserved before the
     * mappings that wait for the request they were made for (0: none). */
    uint64_t cap_floor, map_before;
    int map_waiting;
    fsc_alloc_config_t rec_cfg; /* the recording's settings, for rounding */
    size_t open_release; /* 1 + op index of the release burst being read; 0 none */
    int release_seen_seg; /* that burst was followed by a new segment */
    fsc_request_stream_info_t info;
};

/* whatif_pools.c: each recorded event, before (after = 0) and after the
 * stream took it; at the end, the inferred pools and release points. */
int fsc__wpools_on_event(fsc_request_stream_t *rs, const fsc_event_t *ev, int after);
/* A segment, mapping or live block of the starting state (seeding). */
int fsc__wpools_on_seed(fsc_request_stream_t *rs, const fsc_event_t *ev);
/* whatif_pools.c's index of the live segment at base; UINT32_MAX none. */
uint32_t fsc__wpools_seg_of(const fsc_request_stream_t *rs, uint64_t base);
int fsc__wpools_finish(fsc_request_stream_t *rs);
/* The recorded segment of the request being added (fsc__wop_t.seg). */
uint32_t fsc__wpools_alloc_seg(const fsc_request_stream_t *rs);
void fsc__wpools_free(fsc_request_stream_t *rs);
/* 1 for the id of a pool inferred from a snapshot (no PyTorch id). */
int fsc__wpool_is_inferred(uint64_t pool_id);


/* Appends an op (coding the one before it); *out is the new last op,
 * which may change until the next push. */
int fsc__wops_push(fsc_request_stream_t *rs, uint8_t kind, uint64_t arg, fsc__wop_t **out);
/* The last op, NULL when none. */
fsc__wop_t *fsc__wops_last(fsc_request_stream_t *rs);

/* A cursor over the ops in order, as they are to be replayed. */
void fsc__wcur_open(fsc__wcur_t *c, const fsc_request_stream_t *rs);
void fsc__wcur_close(fsc__wcur_t *c);
/* fsc__wcur_next (whatif_cursor.h) reads the ops; when it fails, why. */
const char *fsc__wcur_error(const fsc__wcur_t *c);

/* A recorded OOM event just added (whatif_external.c): counts it in
 * info.external_ooms when the analyzer would call it `external`. */
void fsc__wstream_note_oom(fsc_request_stream_t *rs, const fsc_event_t *ev);

/* The cap the recording ran under, as far as the stream knows: the
 * recorded capacity, else the inferred lower bound when it ran out of
 * memory, else 0 (unknown, no sign of one). */
uint64_t fsc__wstream_recorded_cap(const fsc_request_stream_t *rs);
/* The least cap the recording is consistent with: its peak reserved, or
 * more where an expandable segment's request needed more than it mapped. */
uint64_t fsc__wstream_cap_floor(const fsc_request_stream_t *rs);
/* 1 when a FSC__WOP_RELEASE was the program's (empty_cache): no failed
 * request, GC pass or recorded EMPTY_CACHE explains it, and no cap could
 * have forced the allocator to release (reserved before it + the segment
 * created after it fit under the recording's cap). The same answer for
 * every replayed setting. gc: the recording's garbage_collection_threshold. */
int fsc__wop_release_is_program(const fsc__wop_t *op, uint64_t recorded_cap, double gc);

/* The starting state is complete (the history marker, or the end of the
 * events): its pending frees become ops. err may be NULL. */
int fsc__wstream_end_seed(fsc_request_stream_t *rs, fsc_err_t *err);

/* The index + 1 of private pool `id` in rs->pool_ids, added when new
 * (whatif_stream.c); FSC_ENOMEM when the host runs out. */
int fsc__wstream_pool_index(fsc_request_stream_t *rs, uint64_t id, uint32_t *index1);

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

/* What fsc__whatif_probe found: the first request the replay with the
 * recording's own settings served elsewhere than recorded (hit = 1). */
typedef struct fsc__wprobe {
    int hit;
    uint64_t request, stream; /* bytes asked for; stream */
    uint64_t want, got;       /* recorded address; replayed (0: failed) */
    uint64_t free_size;       /* the free block at got before it was served */
} fsc__wprobe_t;

/* Replay rs as fsc_whatif_verify does, up to the first address that
 * differs. */
int fsc__whatif_probe(const fsc_request_stream_t *rs, fsc__wprobe_t *probe, fsc_err_t *err);

/* whatif_seed.c: the starting state's guessed blocks. A "pytorch.rebuild"
 * record (or part of one) of the stream's input: 0, or FSC_ENOMEM. */
int fsc__wseed_record(fsc_request_stream_t *rs, const char *text, size_t len);
/* Settle the guessed blocks' ends from the window's best-fit choices
 * (whatif_seed.c), once the stream is complete. */
int fsc__wseed_refine(fsc_request_stream_t *rs, fsc_err_t *err);
/* Guess k: settled by the refinement; its block's address. */
int fsc__wseed_is_settled(const fsc_request_stream_t *rs, size_t k);
uint64_t fsc__wseed_guess_addr(const fsc_request_stream_t *rs, size_t k);
/* The blocks the refinement settled, as sizes for the import (out has room
 * for rs->settled); returns how many. */
size_t fsc__wseed_settled_sizes(const fsc_request_stream_t *rs, fsc_import_size_t *out);
/* Σ over the still guessed blocks of how far their ends may move. */
uint64_t fsc__wseed_uncertain(const fsc_request_stream_t *rs);

/* Threads for `jobs` replays: `requested` (0 = online cores), at most jobs. */
int fsc__whatif_threads(int requested, size_t jobs);

#endif
