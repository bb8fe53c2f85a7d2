/*
 * fragscope/allocator.h — a caching device allocator with the behaviour of
 * PyTorch's native CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp),
 * over a pluggable device backend (`sim`: address arithmetic only; `cuda`).
 *
 * Every state change is reported through an event sink (fragscope/events.h);
 * the allocator knows nothing of files. All functions are thread-safe.
 * Addresses are device virtual addresses carried as uint64_t.
 */
#ifndef FRAGSCOPE_ALLOCATOR_H
#define FRAGSCOPE_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/common.h"
#include "fragscope/events.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FSC_KiB ((uint64_t)1024)
#define FSC_MiB (FSC_KiB * 1024)
#define FSC_GiB (FSC_MiB * 1024)

/* ---- configuration (PYTORCH_CUDA_ALLOC_CONF syntax) ------------------- */

#define FSC_ROUNDUP_INTERVALS 16 /* 1 MiB, 2 MiB, ... 32 GiB (powers of two) */
#define FSC_ALLOC_SETTINGS_MAX 40 /* room in the settings table (set_mask is 64 bits) */

typedef struct fsc_alloc_config {
    /* Blocks at/above this are never split, and requests below it never take
     * them. 0 = unlimited (PyTorch's default, SIZE_MAX). */
    uint64_t max_split_size;
    /* roundup_power2_divisions per power-of-two interval, indexed as PyTorch
     * does: entry i = clamp(floor(log2(size)) - 20, 0, 15), so entry 0 covers
     * every size below 2 MiB, entry i (1..14) covers [2^i MiB, 2^(i+1) MiB)
     * and entry 15 everything from 32 GiB up. 0 (or 1) = plain 512 B rounding. */
    uint32_t roundup_power2_divisions[FSC_ROUNDUP_INTERVALS];
    /* Fraction of the capacity at which GC starts reclaiming; 0 = off. Only
     * effective when the allocator has a capacity. */
    double garbage_collection_threshold;
    int expandable_segments; /* bool */
    /* An oversize request (>= max_split_size) takes a cached block only if
     * the block is smaller than request + this (max_non_split_rounding_mb).
     * 0 = PyTorch's default, 20 MiB. */
    uint64_t max_non_split_rounding;
    /* large_segment_size_mb (PyTorch after 2.11): the segment of a 1..10 MiB
     * request and the large pool's expandable page; also the minimum of
     * max_split_size_mb and max_non_split_rounding_mb and the latter's
     * default. 0 = 20 MiB. */
    uint64_t large_segment_size;
    /* per_process_memory_fraction inside the settings string: the share of
     * the device the allocator may reserve (valid when its bit is set in
     * set_mask; the caller turns it into a capacity). */
    double per_process_memory_fraction;
    /* throw_on_cudamalloc_oom: with a fraction, a miss that would pass the
     * cap fails at once: no garbage collection, no cache release, no retry. */
    int throw_on_cudamalloc_oom;
    /* The rule the list form of roundup_power2_divisions was read with
     * (FSC_PARSER_*): where ">" starts filling. */
    int parser_rules;
    /* Values of settings that have no field of their own (accepted, printed,
     * not modelled), indexed by their place in the settings table. */
    double extra[FSC_ALLOC_SETTINGS_MAX];
    /* expandable_segments_reserve_by_class, as written canonically. */
    char reserve_by_class[96];
    /* Bit i: the string set setting i of the table (fsc_alloc_settings). */
    uint64_t set_mask;
} fsc_alloc_config_t;

#define FSC_ALLOC_CONFIG_DEFAULT {0, {0}, 0.0, 0, 0, 0, 0.0, 0, 0, {0}, "", 0}

/* Which PyTorch parser's rule the list form of roundup_power2_divisions
 * follows. NEW (PyTorch 2.9 on, 2.11 checked on a GPU): ">" fills the
 * intervals after the previous entry's. OLD (the CUDA-only parser before
 * it): ">" fills from the previous entry's own interval on. */
enum { FSC_PARSER_NEW = 0, FSC_PARSER_OLD = 1 };

/* ---- the settings table ------------------------------------------------ */

/* How a setting's value is read and written. */
typedef enum fsc_alloc_setting_kind {
    FSC_SETTING_MIB,       /* whole MiB in the string, bytes in the field (uint64_t) */
    FSC_SETTING_BOOL,      /* True/False (int) */
    FSC_SETTING_FRACTION,  /* a decimal within [min, max] (double) */
    FSC_SETTING_DIVISIONS, /* roundup_power2_divisions: a count or [MiB:d,...,>:d] */
    FSC_SETTING_BACKEND,   /* backend: only native is modelled */
    FSC_SETTING_RESERVE,   /* a fraction of the device, or NG for GiB (double; < 0 = GiB) */
    FSC_SETTING_RESERVE_LIST, /* [class:reserve,...] */
    FSC_SETTING_ACCEPTED,  /* True/False or a number; no effect on device memory */
    FSC_SETTING_COUNT      /* a whole number within [min, max] (in extra[]) */
} fsc_alloc_setting_kind_t;

#define FSC_SETTING_MODELLED 0x01u  /* the allocator follows it */
#define FSC_SETTING_PRINTED 0x02u   /* part of fsc_alloc_config_format's form */
#define FSC_SETTING_PLACEMENT 0x04u /* can change segments, addresses or OOMs */
#define FSC_SETTING_MIN_LSS 0x08u   /* minimum = large_segment_size (default 20 MiB) */
#define FSC_SETTING_OPEN 0x10u      /* FRACTION: the bounds themselves are refused */
#define FSC_SETTING_SNAP_UNSET_M1 0x20u /* snapshot writes -1 when unset (else omits) */
#define FSC_SETTING_SNAP_ALWAYS 0x40u   /* snapshot writes it even when unset */
#define FSC_SETTING_POW2 0x80u          /* COUNT: a power of two */

typedef struct fsc_alloc_setting {
    const char *name;  /* the key in the string */
    const char *alias; /* the ROCm spelling, or NULL */
    fsc_alloc_setting_kind_t kind;
    int offset;        /* offsetof its field in fsc_alloc_config_t; -1: extra[] */
    double def;        /* default, in the string's unit (MiB, fraction, 0/1) */
    double min, max;   /* accepted range in the string's unit (MIB/FRACTION/COUNT) */
    unsigned flags;    /* FSC_SETTING_* */
    /* PyTorch versions (major*100+minor) that know it: since (0 = before
     * any release fragscope checked, at latest 2.11) up to until (0 = still).
     * FSC_TORCH_AFTER_211: only in PyTorch's sources after 2.11 (2026),
     * no release checked. */
    int since, until;
    const char *snapshot_key; /* under allocator_settings; NULL = not there */
    int snapshot_rank;        /* order of writing (1 first); 0 = read, not written */
    const char *doc_value;    /* docs/allocator.md: the value column */
    const char *doc_effect;   /* docs/allocator.md: the effect column */
} fsc_alloc_setting_t;

#define FSC_TORCH_AFTER_211 212
#define FSC_TORCH_CHECKED 211 /* the version on the GPU the rules were checked on */

/* The table every reader and writer of settings follows: the parser, the
 * printer, the snapshot reader and writer, what-if's validation and the
 * list in docs/allocator.md. *n gets the number of entries. */
const fsc_alloc_setting_t *fsc_alloc_settings(size_t *n);
/* The entry named key (or its alias); NULL if none. *index gets its place. */
const fsc_alloc_setting_t *fsc_alloc_setting_find(const char *key, size_t *index);
/* Whether the configuration's string set entry `index`. */
int fsc_alloc_config_is_set(const fsc_alloc_config_t *c, size_t index);
/* The settings set in c that can change placement but are not modelled,
 * comma-separated into buf ("" = none). Returns how many. */
int fsc_alloc_config_unmodelled(const fsc_alloc_config_t *c, char *buf, size_t cap);
/* The same for a settings string; a string that does not parse names
 * nothing here (its error is reported where it is parsed). */
int fsc_alloc_config_unmodelled_str(const char *config, char *buf, size_t cap);
/* The markdown table of docs/allocator.md's "Configuration keys", from the
 * table. FSC_ELIMIT when cap is too small. */
int fsc_alloc_settings_doc(char *buf, size_t cap);
/* PyTorch's environment: only the first variable that is set among
 * PYTORCH_CUDA_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF and PYTORCH_ALLOC_CONF is
 * read (set but empty counts: it means the defaults), no merging. getenv_fn
 * NULL = getenv. Returns the value (NULL: none set) and *name the variable. */
const char *fsc_alloc_config_env(const char *(*getenv_fn)(const char *), const char **name);
/* The segment a miss of this rounded size creates under c (large_segment_size
 * honoured); fsc_alloc_segment_size is this under the defaults. */
uint64_t fsc_alloc_segment_size_cfg(const fsc_alloc_config_t *c, uint64_t rounded_size);
/* Parse under the old parser's rule for the ">" list entry (FSC_PARSER_OLD). */
int fsc_alloc_config_parse_rules(const char *s, int rules, fsc_alloc_config_t *out,
                                 fsc_err_t *err);

/* Parse "max_split_size_mb:128,expandable_segments:True,
 * garbage_collection_threshold:0.6,roundup_power2_divisions:4" or the list
 * form "roundup_power2_divisions:[256:1,512:2,>:4]". "" = defaults. Every key
 * of the settings table (fsc_alloc_settings) is accepted, whether fragscope
 * models it or not (fsc_alloc_config_unmodelled names those that matter);
 * large_segment_size_mb is applied before the minima it sets, wherever it
 * stands. The list form follows PyTorch 2.9 on (FSC_PARSER_NEW): ">" fills
 * the intervals after the previous entry's, so "[256:1,512:2,>:4]" keeps 2
 * for [512 MiB, 1 GiB) and gives 4 from 1 GiB up. Keys of the list are MiB
 * (powers of two). Unknown keys and bad values return FSC_ECONFIG with a
 * message in err naming the key and the value; *out is then untouched. */
int fsc_alloc_config_parse(const char *s, fsc_alloc_config_t *out, fsc_err_t *err);

/* Canonical string form (only non-default keys; "" for defaults). */
int fsc_alloc_config_format(const fsc_alloc_config_t *c, char *buf, size_t cap);

/* ---- PyTorch versions ------------------------------------------------- */

/* "2.11" or "2.8.1" -> 211, 208 (major*100+minor). FSC_EINVAL otherwise. */
int fsc_alloc_torch_version_parse(const char *s, int *out);
/* The set keys of c that PyTorch `version` does not have, comma-separated
 * into buf; returns how many. Keys whose first release fragscope does not
 * know (since 0) count as present in every version. */
int fsc_alloc_config_missing_in(const fsc_alloc_config_t *c, int version, char *buf, size_t cap);
/* The rule a settings string follows under PyTorch `version` (FSC_PARSER_*). */
int fsc_alloc_torch_parser_rules(int version);
/* The rules of PyTorch `version` that differ from fragscope's (which follow
 * PyTorch's sources of 2026, a superset of 2.11), one line each ("- ...\n")
 * into buf; returns how many. */
int fsc_alloc_torch_rule_differences(int version, char *buf, size_t cap);

/* ---- the rules, exposed for the importer, the analyzer and tests ------ */

uint64_t fsc_alloc_round_size(const fsc_alloc_config_t *c, uint64_t size);
fsc_pool_t fsc_alloc_pool_of(uint64_t rounded_size);
/* Size of the segment a miss of this rounded size creates (non-expandable). */
uint64_t fsc_alloc_segment_size(uint64_t rounded_size);
/* Whether a free block of block_size serving a rounded request of `size` is
 * split (PyTorch's should_split). expandable: the block lives in an
 * expandable segment. */
int fsc_alloc_should_split(const fsc_alloc_config_t *c, fsc_pool_t pool,
                           uint64_t block_size, uint64_t size, int expandable);

/* ---- backends --------------------------------------------------------- */

typedef struct fsc_backend fsc_backend_t;

/* sim: no memory is touched. capacity = device total bytes (0 = 80 GiB).
 * Segment addresses are deterministic: the lowest-address first-fit in a
 * simulated address space starting at base (0 = 0x7f0000000000), each
 * segment aligned to 2 MiB. */
int fsc_backend_sim_create(uint64_t capacity, uint64_t base, fsc_backend_t **out);
/* sim: bytes of the device taken by others (another process, a raw
 * cudaMalloc): segments get only capacity − taken − reserved, and the
 * device's free bytes say so. FSC_EINVAL for a backend that is not sim. */
int fsc_backend_sim_set_taken(fsc_backend_t *b, uint64_t bytes);

/* sim with a script: the first n segment allocations return addrs[i] as long
 * as the requested size equals sizes[i]; from the first mismatch on, the
 * backend gives the addresses the CUDA driver would, around the ranges
 * still in use (docs/allocator.md, "Where the driver places segments").
 * Used to replay a recorded run with the addresses it really got. Arrays are
 * copied. fsc_backend_sim_script_diverged() tells whether and where the
 * script stopped being followed (-1 = never). */
int fsc_backend_sim_create_scripted(uint64_t capacity, const uint64_t *addrs,
                                    const uint64_t *sizes, size_t n,
                                    fsc_backend_t **out);
long fsc_backend_sim_script_diverged(const fsc_backend_t *b);
/* How a scripted sim places a new chunk of address space once chunks were
 * given back (segments released by empty_cache, GC, the OOM retry), the
 * rule the recordings settle least: at the top of the highest gap that held
 * one (the model), of the lowest such gap, never (below the lowest chunk),
 * or of the gap whose chunk was given back last. docs/allocator.md, "Where
 * the driver places segments". */
enum {
    FSC_SIM_PLACE_DRIVER = 0,
    FSC_SIM_PLACE_REUSE_LOWEST = 1,
    FSC_SIM_PLACE_NO_REUSE = 2,
    FSC_SIM_PLACE_REUSE_RECENT = 3,
    FSC_SIM_PLACE_N = 4
};
/* FSC_EINVAL for a backend that is not a scripted sim or a bad value. */
int fsc_backend_sim_set_placement(fsc_backend_t *b, int placement);
/* *out: the new chunks a scripted sim placed where a given-back range could
 * have held them, i.e. where the FSC_SIM_PLACE_* variants may differ (0 for
 * a plain sim). FSC_EINVAL for a backend that is not sim. */
int fsc_backend_sim_placement_uncertain(const fsc_backend_t *b, uint64_t *out);
/* Bases for the sim's address-space reservations (expandable segments),
 * used in order while each is free; the first that is not ends the script.
 * Copied. FSC_EINVAL for a backend that is not sim. */
int fsc_backend_sim_script_va(fsc_backend_t *b, const uint64_t *bases, size_t n);

/* cuda: cudaMalloc/cudaFree, and cuMemCreate/cuMemMap for expandable
 * segments, on the given device. FSC_EUNSUPPORTED when built without CUDA;
 * FSC_ECUDA (message kept) when no device is usable. */
int fsc_backend_cuda_create(int device, fsc_backend_t **out, fsc_err_t *err);

void fsc_backend_destroy(fsc_backend_t *b); /* NULL is a no-op */
const char *fsc_backend_name(const fsc_backend_t *b); /* "sim", "cuda:0 NVIDIA H200" */
uint64_t fsc_backend_total(const fsc_backend_t *b);

/* ---- the allocator ---------------------------------------------------- */

typedef struct fsc_allocator fsc_allocator_t;

typedef struct fsc_allocator_opts {
    fsc_alloc_config_t config;
    fsc_backend_t *backend;  /* required; not owned */
    /* Bytes the allocator may reserve (PyTorch's
     * set_per_process_memory_fraction × total). 0 = the backend's total. */
    uint64_t capacity;
    /* may be NULL; called with the allocator's lock held (events of one
     * allocator are totally ordered), so it must not call the allocator.
     * time_ns, tag and thread are left 0 for the recorder to fill. */
    fsc_event_sink_fn sink;
    void *sink_ud;
} fsc_allocator_opts_t;

int fsc_allocator_create(const fsc_allocator_opts_t *opts, fsc_allocator_t **out,
                         fsc_err_t *err);
void fsc_allocator_destroy(fsc_allocator_t *a); /* frees every segment; NULL ok */

/* DEVICE_MEMORY samples (the backend's free and total bytes) to the sink:
 * on = 1 after every segment allocation and at every OOM; interval_ns > 0
 * also at the first malloc at least that long after the last sample (no
 * thread: an idle allocator is not sampled). Off by default. */
int fsc_allocator_sample_device(fsc_allocator_t *a, int on, uint64_t interval_ns);

/* Returns 0 and *addr, or FSC_EOOM after the full miss sequence (an OOM event
 * has been emitted; the message says what PyTorch's message would say:
 * tried to allocate, capacity, allocated, reserved-but-unallocated). size 0
 * returns *addr = 0 without allocating. A request of 1 EiB or more is
 * refused at once with FSC_EOOM, no event and no num_ooms, as PyTorch does
 * (its rounding would overflow). */
int fsc_allocator_malloc(fsc_allocator_t *a, uint64_t size, uint64_t stream,
                         uint64_t *addr);
/* FSC_EINVAL for an address that is not a live block. */
/* The same into private pool pool_id (a CUDA graph pool or MemPool; 0 =
 * the default pool): its blocks serve only its own requests and its
 * segments stay cached (empty_cache and the OOM retry leave them) until
 * fsc_allocator_release_pool. Any number of private pools (FSC_ENOMEM
 * only when the host runs out). */
int fsc_allocator_malloc_pool(fsc_allocator_t *a, uint64_t size, uint64_t stream,
                              uint64_t pool_id, uint64_t *addr);
/* The program released the pool (releasePool): later cache releases free
 * its unused segments too. */
int fsc_allocator_release_pool(fsc_allocator_t *a, uint64_t pool_id);
/* PyTorch's emptyCache(pool), which a MemPool's destructor calls after
 * releasing it: a released pool's unsplit cached blocks go back to the
 * device now; the default pool's stay. Nothing happens to a pool in use. */
int fsc_allocator_empty_cache_pool(fsc_allocator_t *a, uint64_t pool_id);
/* A MemPool's own settings (torch.cuda.MemPool(use_on_oom=..., no_split=...)):
 * USE_ON_OOM: a default-pool request the device (or the cap) refuses takes
 * the pool's best-fitting cached block before any cache is released;
 * NO_SPLIT: the pool never splits a block, each request takes a whole one.
 * Set before or after the pool's first allocation; flags replace the old. */
enum { FSC_POOL_USE_ON_OOM = 1, FSC_POOL_NO_SPLIT = 2 };
int fsc_allocator_set_pool_flags(fsc_allocator_t *a, uint64_t pool_id, unsigned flags);
int fsc_allocator_free(fsc_allocator_t *a, uint64_t addr);
/* The block at addr is in use on `stream` too: its free completes only after
 * fsc_allocator_stream_done(stream) (sim) or the recorded CUDA event. */
int fsc_allocator_record_stream(fsc_allocator_t *a, uint64_t addr, uint64_t stream);
/* sim: all work queued on `stream` so far is finished; completes pending frees. */
int fsc_allocator_stream_done(fsc_allocator_t *a, uint64_t stream);
/* Release every cached unsplit free block (PyTorch's empty_cache). */
int fsc_allocator_empty_cache(fsc_allocator_t *a);

/* ---- starting mid-run ------------------------------------------------ */

/* A replay of a recording that began mid-run starts from the layout the
 * recording began in (what-if on a ring snapshot: docs/whatif.md), adopted
 * before the first malloc. Each piece is counted in the statistics and
 * reported through the sink as the allocator's own would be. The backend
 * must grant the exact ranges (the sim backend does; cuda gives
 * FSC_EUNSUPPORTED); a taken range is FSC_ESTATE.
 *
 * adopt_segment: [base, base+size) becomes a segment of size class `kind`
 * of private pool pool_id (0 = the default pool) on `stream`, all free.
 * adopt_mapping: the pages [addr, addr+size) of the expandable segment of
 * (kind, stream, pool_id) whose address space starts at base (reserved at
 * its first mapping) are mapped, free; addr - base and size are multiples
 * of the page (2 MiB small, 20 MiB large).
 * adopt_block: [addr, addr+size) of an adopted segment's free space
 * becomes a live block of `requested` bytes (split off what surrounds it). */
int fsc_allocator_adopt_segment(fsc_allocator_t *a, uint64_t base, uint64_t size,
                                uint64_t stream, fsc_pool_t kind, uint64_t pool_id);
int fsc_allocator_adopt_mapping(fsc_allocator_t *a, uint64_t base, uint64_t addr, uint64_t size,
                                uint64_t stream, fsc_pool_t kind, uint64_t pool_id);
int fsc_allocator_adopt_block(fsc_allocator_t *a, uint64_t addr, uint64_t size,
                              uint64_t requested);

typedef struct fsc_stat {
    int64_t current, peak, allocated, freed;
} fsc_stat_t;

enum { FSC_STAT_ALL = 0, FSC_STAT_SMALL = 1, FSC_STAT_LARGE = 2, FSC_STAT_N = 3 };

/* PyTorch's memory_stats() names and semantics; arrays indexed by
 * FSC_STAT_*. allocation/allocated_bytes drop at the free request;
 * active/active_bytes and requested_bytes drop when the free completes (they
 * differ only while a record_stream free is pending). Expandable segments
 * count in reserved_bytes (per page mapped) but not in segment nor in
 * inactive_split, as in PyTorch. */
typedef struct fsc_alloc_stats {
    fsc_stat_t allocation[FSC_STAT_N];
    fsc_stat_t segment[FSC_STAT_N];
    fsc_stat_t active[FSC_STAT_N];
    fsc_stat_t inactive_split[FSC_STAT_N];
    fsc_stat_t allocated_bytes[FSC_STAT_N];
    fsc_stat_t reserved_bytes[FSC_STAT_N];
    fsc_stat_t active_bytes[FSC_STAT_N];
    fsc_stat_t inactive_split_bytes[FSC_STAT_N];
    fsc_stat_t requested_bytes[FSC_STAT_N];
    int64_t num_alloc_retries;
    int64_t num_ooms;
    int64_t num_device_alloc;
    int64_t num_device_free;
    int64_t num_sync_all_streams;
    fsc_stat_t oversize_allocations;
    fsc_stat_t oversize_segments;
} fsc_alloc_stats_t;

int fsc_allocator_get_stats(fsc_allocator_t *a, fsc_alloc_stats_t *out);
/* Reset peaks to current values (PyTorch's reset_peak_memory_stats). */
int fsc_allocator_reset_peaks(fsc_allocator_t *a);
/* PyTorch's memory_summary()-like table into buf. */
int fsc_alloc_stats_format(const fsc_alloc_stats_t *s, char *buf, size_t cap);

const fsc_alloc_config_t *fsc_allocator_config(const fsc_allocator_t *a);
uint64_t fsc_allocator_capacity(const fsc_allocator_t *a);
/* Message of the last failed call on this allocator (per handle). */
const char *fsc_allocator_last_error(const fsc_allocator_t *a);

/* Walk the current layout: one callback per block of every segment, in
 * address order (for tests, what-if and the analyzer's cross-checks).
 * Expandable segments report only their mapped blocks, and segment_size is
 * then the bytes mapped. Holds the allocator's lock: fn must not call the
 * allocator. */
typedef struct fsc_block_info {
    uint64_t segment, segment_size, addr, size, requested, stream;
    uint8_t pool, allocated, pending_free, expandable;
    uint64_t pool_id; /* private pool; 0 = the default pool */
} fsc_block_info_t;
typedef void (*fsc_block_visit_fn)(void *ud, const fsc_block_info_t *b);
int fsc_allocator_walk(fsc_allocator_t *a, fsc_block_visit_fn fn, void *ud);

/* The free blocks ready for reuse (mapped, not allocated, no free pending
 * on other streams), over every pool: their bytes and the largest one's
 * size, what a walk would add up, in time linear in the pools rather than
 * the blocks (the allocator keeps them in per-pool size-ordered sets). */
void fsc_allocator_free_summary(fsc_allocator_t *a, uint64_t *free_bytes, uint64_t *largest);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_ALLOCATOR_H */
