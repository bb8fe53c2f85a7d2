/*
 * pytorch_import.h — the state of one snapshot import, shared by the files
 * of the importer (not API): pytorch_input.c reads the snapshot's parts,
 * pytorch_rebuild.c rebuilds the state before the first history entry,
 * pytorch_import.c replays the history and drives the whole.
 */
#ifndef FSC_RECORDER_PYTORCH_IMPORT_H
#define FSC_RECORDER_PYTORCH_IMPORT_H

#include "pytorch_internal.h"

#include "fsc/u64map.h"

enum {
    FSC__ACT_OTHER = 0,
    FSC__ACT_ALLOC,
    FSC__ACT_FREE_REQUESTED,
    FSC__ACT_FREE_COMPLETED,
    FSC__ACT_FREE, /* older PyTorch: one entry for both */
    FSC__ACT_SEGMENT_ALLOC,
    FSC__ACT_SEGMENT_FREE,
    FSC__ACT_SEGMENT_MAP,
    FSC__ACT_SEGMENT_UNMAP,
    FSC__ACT_OOM,
    FSC__ACT_SNAPSHOT,
    FSC__ACT_EMPTY_CACHE,
    FSC__ACT_USER_DEFINED
};

/* Largest dict the importer looks keys up in: real ones have ~15 keys;
 * the bound keeps lookups linear in the input size. */
#define FSC__IMP_MAX_DICT 1024

/* Keys of one history entry kept beyond those read into fields. */
#define FSC__IMP_MAX_EXTRA 16

/* fsc__imp_read_entry clears the fields before xk one by one: a new one
 * must be cleared there too. */
typedef struct fsc__entry {
    int act;
    const fsc__pv_t *action;
    uint64_t addr, size, stream, time_us, device_free;
    int has_device_free, has_addr;
    const fsc__pv_t *frames;
    const fsc__pv_t *user_metadata;
    const fsc__pv_t *dict; /* the entry itself */
    /* Keys other than action, addr, size, stream, time_us, frames and
     * device_free (user_metadata, compile_context, ..., unknown ones), in
     * order; pytorch_keys.c carries them. */
    const fsc__pv_t *xk[FSC__IMP_MAX_EXTRA], *xv[FSC__IMP_MAX_EXTRA];
    uint32_t nx, nx_dropped;
} fsc__entry_t;

typedef struct fsc__final_seg {
    uint64_t base, size, stream;
    uint8_t pool, expandable, pool_known;
    const fsc__pv_t *blocks;
    uint64_t pool_id; /* segment_pool_id (a, b) as a << 32 | b; 0 = default */
    uint64_t vbase;   /* a mapped range of the starting state: the base of its
                         expandable segment (fsc__xgroup_t.lo); 0 otherwise */
} fsc__final_seg_t;

/* An expandable segment as the final segments and the history's mappings
 * show it: one address space per stream and pool (PyTorch's), holding
 * every range mapped in [lo, hi). PyTorch reports only mapped ranges, so
 * the model takes lo, the lowest address ever mapped, as its base: a
 * window never maps below it (pages are mapped at the lowest free
 * address). */
typedef struct fsc__xgroup {
    uint64_t lo, hi, stream, pool_id;
    uint8_t pool, known; /* known: pool and pool_id from a final segment */
} fsc__xgroup_t;

/* What the history says of an address before it is first allocated, as
 * the value of fsc__imp_t's addrs: FSC__ADDR_* flags, and for a block freed
 * before it is allocated (live before the first entry) its requested size
 * shifted by FSC__ADDR_SHIFT (sizes are below FSC__IMP_MAX_SIZE). */
#define FSC__ADDR_SEEN 1u
#define FSC__ADDR_PRELIVE 2u
#define FSC__ADDR_PENDING 4u
#define FSC__ADDR_DONE 8u /* a PRELIVE block's free completed (in imp->dones) */
#define FSC__ADDR_SHIFT 4

typedef struct fsc__seg_info {
    UT_hash_handle hh;
    uint64_t base;
    uint8_t created, pre;
    uint64_t size, stream;
} fsc__seg_info_t;

typedef struct fsc__tag_cache {
    UT_hash_handle hh;
    const void *key;
    uint32_t node;
} fsc__tag_cache_t;

/* Child node of (parent, frame dict): frame dicts are shared by memo, so
 * this spares formatting and interning the same frame again. */
typedef struct fsc__frame_key {
    const void *frame;
    uint32_t parent;
} fsc__frame_key_t;

typedef struct fsc__frame_cache {
    UT_hash_handle hh;
    fsc__frame_key_t key;
    uint32_t node;
} fsc__frame_cache_t;

/* Tag node of a stack by its frame dicts (all kept nodes, so their
 * addresses identify them): lists are new per allocation, their items are
 * shared. */
typedef struct fsc__stack_key {
    uint64_t hash;
    uint64_t n;
} fsc__stack_key_t;

typedef struct fsc__stack_cache {
    UT_hash_handle hh;
    fsc__stack_key_t key;
    uint32_t node;
    const fsc__pv_t *items[];
} fsc__stack_cache_t;

/* Stacks longer than this, or beyond this many bytes of cache, are walked
 * frame by frame each time (through the per-frame cache). */
#define FSC__IMP_STACK_MAX 4096
#define FSC__IMP_STACK_BYTES ((size_t)64 << 20)

/* A segment entry of the history, kept in order by the first pass: which
 * segments existed before the first entry is decided once the final
 * segments are known (they may follow the history in the file). */
typedef struct fsc__seg_entry {
    uint64_t addr, size, stream;
    int act;
} fsc__seg_entry_t;

/* An address and the index of a history entry about it. */
typedef struct fsc__addr_idx {
    uint64_t addr, idx;
} fsc__addr_idx_t;

/* A block live before the first entry. */
typedef struct fsc__prelive {
    uint64_t addr, size, requested;
    uint8_t exact, pending;
    uint8_t guessed; /* its size: the window does not prove where it ends */
    /* guessed: where it may end: split_end (the rounded request), or up
     * to max_end unsplit; limit, the next block or the segment's end */
    uint64_t split_end, max_end, limit;
    const fsc__pv_t *frames;
    const fsc__final_seg_t *seg; /* containing pre-existing segment */
} fsc__prelive_t;

/* An entry of 'external_annotations' (e.g. optimizer step start/end). */
typedef struct fsc__annotation {
    uint64_t time_us;
    uint32_t order;
    const fsc__pv_t *stage, *name;
} fsc__annotation_t;

#define FSC__IMP_FCACHE 1024
/* Keys and action strings by node (fsc__imp_read_entry): memo-shared, so
 * the same few nodes come back in every entry. */
#define FSC__IMP_KCACHE 64
#define FSC__IMP_LAYOUT 12

typedef struct fsc__imp {
    const char *path;
    fsc_import_opts_t opts;
    const fsc_import_sink_t *sink;
    fsc_import_stats_t *st;
    fsc_err_t *err;
    /* Where messages about reading the file go (fsc__imp_bad, the parse):
     * err, but while the block model runs on its own thread (pass 3,
     * pytorch_replay_thread.c) a buffer of the parse's, so that the two
     * threads never write one message. */
    fsc_err_t *rerr;
    fsc_err_t merr; /* the model's message, wrapped with the entry */
    fsc__pmodel_t m;
    fsc_alloc_config_t cfg;
    char config[1024];
    int device;
    fsc__pv_t *const *ents; /* the history as a tree (JSON); NULL when streamed */
    uint64_t n_ents;
    fsc__final_seg_t *finals; /* this device's final segments, sorted by base */
    size_t n_finals;
    fsc__final_seg_t *pre; /* segments that existed before the first entry */
    size_t n_pre, cap_pre;
    fsc__prelive_t *live;
    size_t n_live, cap_live;
    fsc__u64map_t addrs; /* address -> FSC__ADDR_* (see above); address 0 in addr0 */
    uint64_t addr0;
    /* Pass 1, for the sizes of blocks live at the start (pytorch_rebuild.c):
     * addresses whose first entry allocates them, and where the free of a
     * block live at the start completed, each with its entry's index. */
    fsc__addr_idx_t *firsts, *dones;
    size_t n_firsts, cap_firsts, n_dones, cap_dones;
    fsc__xgroup_t *xgroups; /* sorted by lo */
    size_t n_xgroups, cap_xgroups;
    fsc__seg_info_t *segs;
    fsc__tag_cache_t *tags;
    fsc__frame_cache_t *frame_tags;
    fsc__stack_cache_t *stacks;
    size_t stack_bytes;
    struct {
        const fsc__pv_t *frames;
        uint32_t node;
    } fcache[FSC__IMP_FCACHE]; /* in front of tags: the same lists recur */
    struct {
        const fsc__pv_t *v;
        int what; /* a key: KEY_* of pytorch_input.c; an action: FSC__ACT_* */
    } kcache[FSC__IMP_KCACHE];
    struct { /* the last entry's key nodes, when all live as long as the pass */
        uint32_t n;
        const fsc__pv_t *key[FSC__IMP_LAYOUT];
        int8_t what[FSC__IMP_LAYOUT]; /* KEY_*, or -1: not a string */
    } layout;
    fsc__annotation_t *ann;
    size_t n_ann, next_ann;
    fsc__seg_entry_t *segev;
    size_t n_segev, cap_segev;
    /* streaming (pytorch_stream.c): the device whose entries a pass reads,
     * the first error met in them (reported after the snapshot's other
     * parts are checked, as when the history is read as a tree) */
    int pass_dev;
    uint64_t pass_entries;
    uint64_t pass_t0_us; /* time of pass_dev's first entry */
    int pass_has_t0;
    int (*history_pass)(struct fsc__imp *im); /* reads pass_dev = device again */
    void *stream;
    int entry_rc;
    fsc_err_t entry_err;
    uint64_t t0_us;
    /* pytorch_import.c: segment_alloc entries per base (only the last one
     * can be a final segment); cur_entry 1 once counted */
    struct fsc__last_seg *last_seg;
    uint32_t cur_entry;
    char namebuf[16384]; /* a frame name: file (4000 bytes kept) + line + function (12000) */
    struct fsc__keys *keys; /* pytorch_keys.c */
} fsc__imp_t;

/* No device has 2^56 bytes (64 PiB): larger sizes are corrupt data, and
 * keeping sizes below it keeps every sum of addresses and sizes exact. */
#define FSC__IMP_MAX_SIZE (1ull << 56)

/* ---- pytorch_input.c ----------------------------------------------------- */

/* FSC_EFORMAT with "PATH: what". */
int fsc__imp_bad(fsc__imp_t *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Lenient mode: count a skipped entry, keep the first message. */
void fsc__imp_warn(fsc__imp_t *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A dict small enough to look keys up in. */
int fsc__imp_dict_ok(const fsc__pv_t *v);
/* A non-negative integer under key; returns 1 when present. */
int fsc__imp_u64(const fsc__pv_t *d, const char *key, uint64_t *out);
/* Tag node of a frame list (innermost first), interned through the sink. */
int fsc__imp_frames_tag(fsc__imp_t *im, const fsc__pv_t *frames, uint32_t *out);
/* The same from the caches alone: 0 with the node, or 1 when it would
 * need the sink (a frame not met before) or fail. */
int fsc__imp_frames_tag_cached(fsc__imp_t *im, const fsc__pv_t *frames, uint32_t *out);
int fsc__imp_read_settings(fsc__imp_t *im, const fsc__pv_t *root);
int fsc__imp_cmp_final(const void *a, const void *b);
int fsc__imp_read_finals(fsc__imp_t *im, const fsc__pv_t *segs);
/* Segment of a sorted array holding addr (starting at it when exact). */
const fsc__final_seg_t *fsc__imp_final_at(const fsc__final_seg_t *arr, size_t n, uint64_t addr,
                                          int exact);
int fsc__imp_pick_device(fsc__imp_t *im, const fsc__pv_t *root, const fsc__pv_t *segs);
/* History entry i of the device (the value d, a dict). */
int fsc__imp_read_entry(fsc__imp_t *im, const fsc__pv_t *d, uint64_t i, fsc__entry_t *e);
/* Before a pass over a new document: the nodes cached by address go. */
void fsc__imp_cache_reset(fsc__imp_t *im);
int fsc__imp_read_annotations(fsc__imp_t *im, const fsc__pv_t *root);

/* ---- pytorch_keys.c ------------------------------------------------------ */

/* After the header: count the keys fragscope does not know, and emit the
 * "pytorch.snapshot" record (settings, host memory, unknown top-level keys,
 * what every entry holds) and one "pytorch.segment" record per final
 * segment of the device with keys the events do not rebuild. */
int fsc__imp_keys_begin(fsc__imp_t *im, const fsc__pv_t *root);
/* Before an entry is replayed: its "pytorch.entry" record (keys beyond the
 * event's fields, when they differ from the first entry's), or for an
 * action without a fragscope event its whole "pytorch.action" record.
 * *handled = 1 when the entry has no event of its own (unknown action). */
int fsc__imp_keys_entry(fsc__imp_t *im, uint64_t i, const fsc__entry_t *e, int *handled);
/* 1 when fsc__imp_keys_entry would do nothing for e but look (no record,
 * nothing counted, an action with an event of its own). */
int fsc__imp_keys_quiet(fsc__imp_t *im, const fsc__entry_t *e);
/* After the rebuilt starting state: the "pytorch.rebuild" record (what
 * was rebuilt, and the blocks whose size was guessed with the ends the
 * rules allow them; docs/pytorch.md). */
int fsc__imp_keys_rebuild(fsc__imp_t *im);
/* After the last entry: the snapshot record if no entry has emitted it. */
int fsc__imp_keys_end(fsc__imp_t *im);
/* A frame dict seen for the first time: count keys other than filename,
 * line and name. */
void fsc__imp_keys_frame(fsc__imp_t *im, const fsc__pv_t *frame);
/* The frame became tag node `node`: when it holds keys beyond filename,
 * line and name (PyTorch's fx_* keys), emit them once per node as a
 * "pytorch.frame" record {"tag": node, key: value, ...}. */
int fsc__imp_keys_frame_record(fsc__imp_t *im, const fsc__pv_t *frame, uint32_t node);
void fsc__imp_keys_free(fsc__imp_t *im);
/* The nodes cached by address (a new document follows). */
void fsc__imp_keys_cache_reset(fsc__imp_t *im);

/* ---- pytorch_rebuild.c --------------------------------------------------- */

/* History entry i, in order, then the rest once all are seen. */
int fsc__imp_start_entry(fsc__imp_t *im, uint64_t i, const fsc__entry_t *e);
int fsc__imp_find_start_state(fsc__imp_t *im);
int fsc__imp_emit_start_state(fsc__imp_t *im);
/* The expandable segment whose mappings hold addr on stream (NULL: none). */
const fsc__xgroup_t *fsc__imp_xgroup(const fsc__imp_t *im, uint64_t addr, uint64_t stream);

/* ---- pytorch_import.c ---------------------------------------------------- */

/* What the replay of a usual entry needs once its tag is known: a copy, so
 * that it outlives the entry's values (pytorch_replay_thread.c). */
typedef struct fsc__rop {
    uint64_t i, addr, size, stream, time_us, device_free;
    uint32_t tag;
    uint8_t act, has_addr, has_device_free;
} fsc__rop_t;

/* The block model's event callback: counts, then hands to the sink. */
int fsc__imp_on_event(void *ud, const fsc_event_t *ev);
/* The model's message in im->merr wrapped as "PATH: what: message". */
int fsc__imp_model_error(fsc__imp_t *im, const char *what);
/* Everything before the first history entry: device, settings, final
 * segments, annotations, start time, the header and the rebuilt state. */
int fsc__imp_begin(fsc__imp_t *im, const fsc__pv_t *root, uint64_t t0_us, int has_t0);
/* History entry i of the device, replayed. */
int fsc__imp_replay_one(fsc__imp_t *im, uint64_t i, const fsc__entry_t *e);
/* The same with the block model on q's thread: a usual entry is handed
 * over, any other replayed here once q has caught up. */
typedef struct fsc__rq fsc__rq_t;
int fsc__imp_replay_async(fsc__imp_t *im, fsc__rq_t *q, uint64_t i, const fsc__entry_t *e);
/* On q's thread: the entry op, replayed (annotations up to its time first). */
int fsc__imp_replay_op(fsc__imp_t *im, const fsc__rop_t *op);
/* After the last entry. */
int fsc__imp_end(fsc__imp_t *im);
void fsc__imp_free(fsc__imp_t *im);

/* ---- pytorch_replay_thread.c --------------------------------------------- */

int fsc__rq_start(fsc__imp_t *im, fsc__rq_t **out);
/* Hand op over (0), or the replay's failure code once it failed. */
int fsc__rq_push(fsc__rq_t *q, const fsc__rop_t *op);
/* Wait until everything handed over is replayed and the thread waits:
 * 0, or the replay's failure code. */
int fsc__rq_sync(fsc__rq_t *q);
/* Replay what is left, stop the thread and free q: 0 or the failure. */
int fsc__rq_finish(fsc__rq_t *q);

/* ---- pytorch_stream.c ---------------------------------------------------- */

/* The import of a pickle or JSON snapshot without its whole tree (see the
 * file). */
int fsc__imp_stream(fsc__imp_t *im, fsc__snap_t *snap);

#endif
