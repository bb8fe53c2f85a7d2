/*
 * frag_classes.h — where reserved − allocated sits, split into classes that
 * say what would free it (docs/metrics.md, "Where reserved − allocated
 * sits"). Internal to the analyzer.
 *
 * Every non-allocated byte of a reserved segment is in exactly one class,
 * taken in this order: pending (a block whose free waits on other streams'
 * work), private_pool (free bytes of a CUDA-graph or MemPool pool), soft
 * (free bytes empty_cache() would return), stream (free bytes pinned on a
 * stream other than the one asking) and hard (free bytes pinned on the
 * asking stream).
 *
 * The replay feeds this file through a few hook calls: each segment's
 * contribution is taken out before a change to its blocks and put back
 * after (fsc__frag_seg_out / _in, called from fsc__seg_begin / _end), and
 * free-block bytes and pending bytes are kept per segment as they change.
 * From that the split is O(1) at any moment for any asking stream: it is
 * sampled for the timeline, kept at the allocated and reserved peaks, and
 * taken at each OOM. Who pins the hard bytes is worked out from a block
 * layout (the peak's images, the current layout at an OOM).
 */
#ifndef FSC_ANALYZER_FRAG_CLASSES_H
#define FSC_ANALYZER_FRAG_CLASSES_H

#include <stddef.h>
#include <stdint.h>

#include "fsc/u64map.h"

/* Pages of an expandable segment: 2 MiB in the small pool, 20 MiB in the
 * large pool (PyTorch's kSmallBuffer / kLargeBuffer). */
#define FSC__FRAG_PAGE_SMALL (2ull << 20)
#define FSC__FRAG_PAGE_LARGE (20ull << 20)

enum { FSC__FRAG_SMALL = 0, FSC__FRAG_LARGE = 1, FSC__FRAG_ALL = 2, FSC__FRAG_NPOOLS = 3 };

/* One split of reserved − allocated. */
typedef struct fsc__frag {
    uint64_t soft, hard, stream, private_pool, pending;
} fsc__frag_t;

/* The split at one moment: per size pool and over both ([FSC__FRAG_ALL]). */
typedef struct fsc__frag_point {
    uint64_t seq, time, ask_stream;
    uint64_t reserved[FSC__FRAG_NPOOLS], allocated[FSC__FRAG_NPOOLS];
    fsc__frag_t cls[FSC__FRAG_NPOOLS];
    int valid;
} fsc__frag_point_t;

/* What a timeline bucket keeps: the split after its last event, per size
 * pool and overall ([FSC__FRAG_ALL]). */
typedef struct fsc__frag_sample {
    uint64_t ask_stream;
    fsc__frag_t cls[FSC__FRAG_NPOOLS];
} fsc__frag_sample_t;

/* The parts of one segment that do not depend on who asks. */
typedef struct fsc__frag_parts {
    uint64_t reserved, pending, private_pool, soft, pinned;
} fsc__frag_parts_t;

typedef struct fsc__frag_stream {
    uint64_t stream;
    uint64_t pinned[2]; /* per size pool */
} fsc__frag_stream_t;

typedef struct fsc__frag_state {
    uint64_t reserved[2], pending[2], private_pool[2], soft[2], pinned[2];
    fsc__u64map_t stream_idx;   /* stream → index + 1 into streams (not stream 0) */
    uint32_t zero_si;           /* index + 1 of stream 0 (the map never holds key 0) */
    fsc__frag_stream_t *streams;
    size_t nstreams, cap;
    uint64_t ask_stream;        /* stream of the last ALLOC */
    uint64_t last_peak_alloc, last_peak_res;
    fsc__frag_point_t peak_alloc, peak_res;
    int peak_res_open;          /* the step that reached peak reserved goes on */
    uint64_t max_hard_oom;      /* largest hard figure at an OOM */
} fsc__frag_state_t;

#define FSC__FRAG_TOP_TAGS 20
#define FSC__FRAG_TOP_BLOCKS 10

/* Who pins the hard bytes of a layout: rows of frag_hard_blocks and
 * frag_hard_tags, by hard bytes. */
typedef struct fsc__frag_pinblk {
    uint64_t segment, addr, size, hard, alloc_seq, age_events;
    uint32_t tag;
    int pending;
} fsc__frag_pinblk_t;

typedef struct fsc__frag_pintag {
    uint32_t tag;
    uint64_t hard, blocks, bytes;
} fsc__frag_pintag_t;

typedef struct fsc__frag_pins {
    size_t nblocks, ntags;
    fsc__frag_pinblk_t blocks[FSC__FRAG_TOP_BLOCKS];
    fsc__frag_pintag_t tags[FSC__FRAG_TOP_TAGS];
} fsc__frag_pins_t;

typedef struct fsc__replay fsc__replay_t;
struct fsc__seg;
struct fsc__img;
struct fsc__blk;

void fsc__frag_init(fsc__frag_state_t *f);
void fsc__frag_free(fsc__frag_state_t *f);

/* A new segment: find or add its stream (FSC_ENOMEM). */
int fsc__frag_seg_new(fsc__replay_t *a, struct fsc__seg *s);
/* Page-aligned bytes of [addr, addr+size) inside segment s (0 unless s is
 * expandable): what empty_cache() unmaps of a free block there. */
uint64_t fsc__frag_paged(const struct fsc__seg *s, uint64_t addr, uint64_t size);
/* A free block joins, leaves or changes size in its segment. */
void fsc__frag_free_add(struct fsc__seg *s, const struct fsc__blk *b);
void fsc__frag_free_sub(struct fsc__seg *s, const struct fsc__blk *b);
/* Before / after any change to a segment's blocks. */
void fsc__frag_seg_out(fsc__replay_t *a, const struct fsc__seg *s);
void fsc__frag_seg_in(fsc__replay_t *a, const struct fsc__seg *s);
/* A block of s became pending (FREE_REQUESTED). */
void fsc__frag_pending_add(fsc__replay_t *a, struct fsc__seg *s, uint64_t size);
/* After an applied event (asking stream, peaks). */
void fsc__frag_event(fsc__replay_t *a, int type, uint64_t stream, uint64_t addr);
/* The current split, overall, for the timeline. */
void fsc__frag_sample(const fsc__replay_t *a, fsc__frag_sample_t *out);
/* The current split for an asking stream. */
void fsc__frag_now(const fsc__replay_t *a, uint64_t ask_stream, fsc__frag_point_t *out);
/* The same split worked out from a block layout (address order, segments
 * contiguous); tests compare it with fsc__frag_now. */
void fsc__frag_of_layout(const struct fsc__img *v, size_t n, uint64_t ask_stream,
                         fsc__frag_point_t *out);

/* The split at an OOM for its asking stream (and the largest hard figure
 * at an OOM so far). */
void fsc__frag_oom(fsc__replay_t *r, uint64_t ask_stream, uint64_t time, fsc__frag_point_t *out);
/* Who pins the hard bytes of a layout (seq: the moment, for the ages).
 * Returns 0 or FSC_ENOMEM. */
int fsc__frag_pins(const struct fsc__img *v, size_t n, uint64_t ask_stream, uint64_t seq,
                   fsc__frag_pins_t *out);

#endif
