/*
 * fragscope/pytorch.h — PyTorch memory snapshots: import them as fragscope
 * events, and write a trace back out as a snapshot.
 *
 * Inputs are what torch.cuda.memory._snapshot() returns, saved with
 * pickle.dump (protocols 0 to 5) or json.dump, and the plain list of
 * segments that torch.cuda.memory_snapshot() returns (pickle or JSON). The
 * format is detected from the content, not the file name.
 *
 * PyTorch's trace records the caller's requested sizes and the addresses it
 * returned; fragscope events carry block sizes, splits and merges. The
 * importer therefore replays the recorded addresses through a model of the
 * segments and their blocks, applying the allocator's rules
 * (fragscope/allocator.h), and emits the events the fragscope allocator
 * would have emitted (SPLIT before ALLOC, MERGE after FREE_COMPLETED...).
 * When the snapshot's history ring had wrapped, the state before the first
 * recorded event is rebuilt from the final segments and emitted first, at
 * time 0, and the header carries FSC_TRACE_F_RECONSTRUCTED. docs/pytorch.md
 * describes the mapping.
 */
#ifndef FRAGSCOPE_PYTORCH_H
#define FRAGSCOPE_PYTORCH_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/common.h"
#include "fragscope/events.h"
#include "fragscope/recorder.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    FSC_SNAP_PICKLE = 1,
    FSC_SNAP_JSON = 2
};

/* FSC_SNAP_PICKLE or FSC_SNAP_JSON from the first bytes of the file, 0 when
 * it is neither, or a negative FSC_EIO/FSC_ENOENT when it cannot be read.
 * Only the format is checked here; fsc_pytorch_import validates content. */
int fsc_pytorch_detect(const char *path);

/* Where the imported trace goes (the recorder, the analyzer, a test). Every
 * callback returns 0 to go on or a negative FSC_E* code to stop the import
 * (which then returns that code). */
typedef struct fsc_import_sink {
    void *ud;
    /* Once, before anything else. Strings are valid during the call. */
    int (*header)(void *ud, const fsc_trace_header_t *hdr);
    /* Intern the tag node (parent, name) and return its id (> 0) in
     * *node_out. The same (parent, name) must give the same id. */
    int (*tag)(void *ud, uint32_t parent, const char *name, size_t len, uint32_t *node_out);
    /* One event, in order. */
    int (*event)(void *ud, const fsc_event_t *ev);
} fsc_import_sink_t;

typedef struct fsc_import_opts {
    int pick_device; /* 1: import the trace of `device`; 0 (default): the
                        only device with recorded history (error when
                        several have one) */
    int device;      /* with pick_device: the CUDA device */
    int lenient; /* 1: an entry that contradicts the block model is skipped
                    and counted in stats.warnings instead of failing */
    /* Called every few thousand history entries and once at the end with
     * the entries replayed so far and their total (may be NULL). */
    void (*progress)(void *ud, uint64_t done, uint64_t total);
    void *progress_ud;
    /* Called every few MiB read with the bytes read so far over all of
     * the import's passes and their total (may be NULL; same ud). */
    void (*progress_bytes)(void *ud, uint64_t done, uint64_t total);
    /* 1: emit the "pytorch.*" records (below) among the events, so that a
     * trace or run database keeps what the snapshot holds beyond the
     * allocator's events (fragscope import and analyze do). Unknown actions
     * and keys are counted either way. */
    int keep_records;
    /* Leave out the first skip_entries history entries of the imported
     * device, as PyTorch's ring buffer (_record_memory_history's
     * max_entries) drops the oldest: the rest is imported as a snapshot
     * whose history starts there, its starting state rebuilt. A complete
     * history cut this way is exactly what a ring would have kept, which
     * is how the rebuild is tested. 0 = none. */
    uint64_t skip_entries;
    /* Sizes of blocks live when the history begins that a later pass
     * settled (what-if proves them from the window's best-fit choices,
     * whatif_seed.c): the block at each address gets its size here instead
     * of the importer's guess. NULL/0: none. */
    const struct fsc_import_size *sizes;
    size_t nsizes;
} fsc_import_opts_t;

typedef struct fsc_import_size {
    uint64_t addr, size;
} fsc_import_size_t;

/* Zeroed options are the defaults. */
#define FSC_IMPORT_OPTS_DEFAULT {0, 0, 0, NULL, NULL, NULL, 0, 0, NULL, 0}

/* What a snapshot holds beyond the allocator's events travels as MARKER
 * events whose text is "pytorch.KIND JSON" (KIND: snapshot, entry, action, frame,
 * segment; docs/pytorch.md). A record longer than a marker may hold is cut
 * into markers "pytorch.KIND+ PART" followed by a last "pytorch.KIND PART".
 * The analyzer stores them in table pytorch_meta instead of counting them as
 * events; the exporter writes them back. */
#define FSC_PYTORCH_META_PREFIX "pytorch."
#define FSC_PYTORCH_META_PART_MAX 60000u

#define FSC_IMPORT_GUESSED_MAX 16

typedef struct fsc_import_stats {
    int format;              /* FSC_SNAP_* */
    int device;              /* the device imported */
    uint32_t devices;        /* devices with recorded history */
    uint64_t device_mask;    /* which: bit d for device d < 64 (set even when the
                                import fails for want of --device) */
    int segments_only;       /* input was a list of segments (no history) */
    int reconstructed;       /* the starting state was rebuilt */
    uint64_t entries;        /* history entries read for the device */
    uint64_t events;         /* events emitted */
    uint64_t allocs, frees, segment_allocs, segment_frees, maps, unmaps, ooms;
    uint64_t splits, merges;
    uint64_t annotations;    /* external_annotations turned into MARKERs */
    uint64_t reconstructed_segments, reconstructed_blocks;
    /* Blocks of the rebuilt starting state whose size the window does not
     * prove (docs/pytorch.md, "Rebuilding the starting state"): how many,
     * and the addresses of the first FSC_IMPORT_GUESSED_MAX. */
    uint64_t reconstructed_guessed;
    uint64_t guessed_blocks[FSC_IMPORT_GUESSED_MAX];
    /* Blocks whose size opts.sizes gave (settled by what-if). */
    uint64_t reconstructed_settled;
    /* Reserved bytes of the rebuilt starting state (segments alive before
     * the first history entry): the run reserved at least this much
     * before the window began. */
    uint64_t reconstructed_reserved;
    uint64_t warnings;       /* lenient mode: entries skipped */
    uint64_t peak_allocated; /* peak of Σ ALLOC.size − Σ FREE_REQUESTED.size */
    uint64_t peak_reserved;  /* peak of segment bytes (alloc/map − free/unmap) */
    uint64_t first_time_us;  /* time_us of the first entry (0 if none) */
    uint64_t unknown_lines;  /* frame tags whose line does not fit 64 bits
                                (torch.compile's 2^64-1): tagged "file:?:name" */
    char first_warning[FSC_ERR_MSG_MAX]; /* message of the first warning */
    /* Kept but not understood (docs/pytorch.md): history entries whose
     * action has no fragscope event, and keys fragscope does not know (at
     * the top level, in allocator_settings, segments, blocks, entries and
     * frames), each occurrence counted. Entries and keys are kept as
     * "pytorch.*" records; unknown keys of frames are counted only. */
    uint64_t unknown_actions;
    uint64_t unknown_keys;
    uint64_t meta_records; /* pytorch.* records emitted */
    char not_understood[FSC_ERR_MSG_MAX]; /* e.g. "action 'workspace_snapshot' x2; entry
                                             key 'foo' x3" ("" when none) */
    /* Known but not modelled ("" when none): the run's settings that can
     * change placement and fragscope's replay cannot follow
     * (fsc_alloc_config_unmodelled), and snapshot keys read but not acted on
     * (e.g. "allocator_settings.trace_alloc_overflowed=True"). */
    char settings_not_modelled[256];
    char keys_not_modelled[512];
    /* The PyTorch version the snapshot's keys point to, said to be
     * inferred ("" when nothing points past 2.11, the version checked). */
    char torch_inferred[256];
} fsc_import_stats_t;

/* Import the snapshot at path into sink. opts and stats may be NULL. On
 * failure returns a negative code with "PATH: what" in err (for history
 * entries: which entry, its action and address). Bad input gives
 * FSC_EFORMAT (unreadable, wrong shape), FSC_ESTATE (an entry contradicts
 * the block model), FSC_ELIMIT (limits of the pickle reader) or
 * FSC_ENOENT (no such device). */
int fsc_pytorch_import(const char *path, const fsc_import_opts_t *opts,
                       const fsc_import_sink_t *sink, fsc_import_stats_t *stats,
                       fsc_err_t *err);

typedef struct fsc_export_stats {
    uint64_t entries;     /* history entries written */
    uint64_t segments;    /* segments in the final layout */
    uint64_t annotations; /* external annotations written */
    int ring;             /* the trace is a ring-mode recording (header flag
                             FSC_TRACE_F_RING): it keeps only the events
                             before each write, so it starts mid-run and has
                             gaps */
    uint64_t untracked;   /* ring trace: events written to the history whose
                             block or segment the kept events do not show;
                             'segments' holds only the layout they show */
    fsc_trace_integrity_t integrity; /* of the trace read (a cut trace exports
                                        what it holds) */
} fsc_export_stats_t;

/* Export a fragscope trace as a PyTorch snapshot pickle at out_path (written
 * to a temporary name and renamed): 'segments' (the final layout, with
 * blocks), 'device_traces' (one list, the trace's device, with one entry
 * per alloc, free_requested, free_completed, segment_alloc/free/map/unmap,
 * oom, empty_cache... event), 'allocator_settings' (from the header's
 * config). Tag paths become frames (innermost first): a tag named
 * "file:line:function" becomes that frame, any other tag a frame with
 * filename "" line 0 (which imports back as the plain tag). START/END
 * markers become 'external_annotations'. A ring-mode trace is exported as
 * it was kept (PyTorch's own history is a ring too): every kept event is a
 * history entry, and events the kept ones cannot place are counted in
 * stats->untracked instead of failing the export. stats may be NULL. */
int fsc_pytorch_export(const char *trace_path, const char *out_path,
                       fsc_export_stats_t *stats, fsc_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_PYTORCH_H */
