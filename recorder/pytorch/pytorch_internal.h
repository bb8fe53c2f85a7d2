/*
 * pytorch_internal.h — pieces of the PyTorch snapshot importer shared inside
 * recorder/pytorch/ (not API): loading a snapshot file into a value tree, and the
 * block model that turns recorded addresses into fragscope events.
 */
#ifndef FSC_RECORDER_PYTORCH_INTERNAL_H
#define FSC_RECORDER_PYTORCH_INTERNAL_H

#include <bsd/sys/tree.h>
#include <stdint.h>
#include <uthash.h>

#include "fragscope/allocator.h"
#include "fragscope/events.h"
#include "fragscope/pytorch.h"
#include "fsc/u64map.h"
#include "pickle.h"

/* ---- loading ----------------------------------------------------------- */

/* A snapshot file mapped into memory, its format detected (FSC_SNAP_*). */
typedef struct fsc__snap {
    const char *path;
    const uint8_t *data;
    size_t len;
    int format;
    size_t dropped; /* bytes before this were handed back to the kernel */
    int owned;      /* data is a malloc'd copy (not a regular file), not a mapping */
} fsc__snap_t;

int fsc__snap_open(const char *path, fsc__snap_t *s, fsc_err_t *err);
/* Done with the bytes before pos for now: let the kernel drop their pages
 * from this process (they read back from the file if touched again), so a
 * large snapshot does not stay resident as it is read. */
void fsc__snap_done_before(fsc__snap_t *s, size_t pos);
void fsc__snap_close(fsc__snap_t *s);

/* Text of the MARKER the importer writes between a rebuilt starting state
 * and the first history entry; the exporter leaves out what precedes it,
 * since a snapshot rebuilds that state from its final segments. */
#define FSC__HISTORY_MARKER FSC_TRACE_HISTORY_MARKER

/* ---- block model ------------------------------------------------------- */

typedef struct fsc__pseg fsc__pseg_t;

typedef enum fsc__pb_state {
    FSC__PB_FREE = 0,
    FSC__PB_ALLOCATED = 1,
    FSC__PB_PENDING = 2 /* free requested, not yet completed */
} fsc__pb_state_t;

typedef struct fsc__pblock {
    uint64_t addr, size, requested; /* model->blocks is keyed by addr */
    struct fsc__pblock *prev, *next; /* address order inside the segment */
    fsc__pseg_t *seg;
    uint32_t tag;
    uint8_t state; /* fsc__pb_state_t */
} fsc__pblock_t;

struct fsc__pseg {
    UT_hash_handle hh; /* model->segs, keyed by base */
    RB_ENTRY(fsc__pseg) rb; /* model->by_base: address order */
    uint64_t base;
    uint64_t size;     /* bytes reserved (mapped bytes for expandable ones) */
    uint64_t end;      /* expandable: highest mapped end so far */
    uint64_t stream;
    uint8_t pool, expandable;
    uint64_t pool_id; /* private pool (segment_pool_id a << 32 | b); 0 = default */
    fsc__pblock_t *first, *last;
};

/* Receives each event the model produces; returns 0 or a negative code. */
typedef int (*fsc__pm_emit_fn)(void *ud, const fsc_event_t *ev);

typedef struct fsc__pmodel {
    fsc_alloc_config_t cfg;
    fsc__pseg_t *segs;
    RB_HEAD(fsc__pseg_tree, fsc__pseg) by_base; /* the live segments, disjoint */
    /* Every block by its address (fsc/u64map.h: looked up on every entry;
     * a flat table, no handle in each block). The map holds no key 0: a
     * block at address 0 (crafted files) is block0. Blocks start at
     * distinct addresses: segments are disjoint, blocks have bytes. */
    fsc__u64map_t blocks;
    fsc__pblock_t *block0;
    fsc__pm_emit_fn emit;
    void *emit_ud;
    fsc_err_t *err; /* messages name the problem, the caller adds the entry */
    uint64_t allocated, reserved, peak_allocated, peak_reserved;
    uint64_t splits, merges;
    uint64_t time_ns; /* time stamped on emitted events */
    uint32_t tag;     /* tag of the entry being replayed: stamped on events
                         that have no block tag of their own */
    uint64_t new_pool_id; /* private pool of the next segment created */
    /* Private pools created with no_split (MemPool(no_split=True)): their
     * blocks are never split (pytorch_import.c finds them). */
    uint64_t no_split[16];
    uint8_t n_no_split;
} fsc__pmodel_t;

void fsc__pm_init(fsc__pmodel_t *m, const fsc_alloc_config_t *cfg, fsc__pm_emit_fn emit,
                  void *ud, fsc_err_t *err);
void fsc__pm_free(fsc__pmodel_t *m);

fsc__pseg_t *fsc__pm_segment(fsc__pmodel_t *m, uint64_t base);
/* The segment whose range holds addr (linear in the number of segments:
 * only used on unusual paths). */
fsc__pseg_t *fsc__pm_segment_at(fsc__pmodel_t *m, uint64_t addr);

/* Every operation checks its preconditions before changing anything, so a
 * failed one (FSC_ESTATE, message in m->err) leaves the model as it was. */
int fsc__pm_segment_alloc(fsc__pmodel_t *m, uint64_t base, uint64_t size, uint64_t stream,
                          fsc_pool_t pool);
int fsc__pm_segment_free(fsc__pmodel_t *m, uint64_t base, uint64_t size);
/* Map [addr, addr+size) into the expandable segment at base (created when
 * absent); the range becomes free space. */
int fsc__pm_map(fsc__pmodel_t *m, uint64_t base, uint64_t addr, uint64_t size,
                uint64_t stream, fsc_pool_t pool);
int fsc__pm_unmap(fsc__pmodel_t *m, uint64_t addr, uint64_t size);
/* PyTorch returned addr for a request of `requested` bytes: addr must start
 * a free block; split it by the rules, then ALLOC. */
int fsc__pm_alloc(fsc__pmodel_t *m, uint64_t addr, uint64_t requested, uint64_t stream,
                  uint32_t tag);
int fsc__pm_free_requested(fsc__pmodel_t *m, uint64_t addr, uint32_t tag);
/* Completes the free (emitting FREE_REQUESTED first when it was not) and
 * merges with free neighbours. */
int fsc__pm_free_completed(fsc__pmodel_t *m, uint64_t addr, uint32_t tag);
/* Base of the expandable segment a mapping at addr belongs to, as far as
 * the model knows: the segment whose mapped span holds addr or ends at it
 * (1 and *base), else 0 (the first mapping of a segment is at its base). */
int fsc__pm_expandable_base(fsc__pmodel_t *m, uint64_t addr, uint64_t *base);
/* A failed request (PyTorch's "oom" entry: `rounded` is its size after
 * round_size): an OOM event with the model's allocated and reserved bytes,
 * the segment the miss needed, and what is known of the device (capacity
 * and device_total 0, device_free UINT64_MAX: unknown). */
int fsc__pm_oom(fsc__pmodel_t *m, uint64_t rounded, uint64_t stream, uint64_t device_free,
                uint64_t capacity, uint64_t device_total, uint32_t tag);
/* Rebuilding a starting state: make [addr, addr+size) an allocated block of
 * the segment by splitting the free block that holds it (blocks must be
 * placed in increasing address order per segment). */
int fsc__pm_place(fsc__pmodel_t *m, fsc__pseg_t *seg, uint64_t addr, uint64_t size,
                  uint64_t requested, uint64_t stream, uint32_t tag);

#endif
