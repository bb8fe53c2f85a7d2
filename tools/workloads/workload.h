/*
 * workload.h — synthetic but realistic training workloads (GPT-2 small with
 * variable sequence length, ResNet-50 with variable batch and resolution)
 * that drive an allocator through a small callback interface.
 *
 * A workload knows nothing of the allocator: it asks `ops` for device
 * buffers, frees them in the order a PyTorch training step would, pushes the
 * names of the modules it is in as tags and marks step boundaries. So the
 * same workload runs through the real caching allocator (`simulate`, `demo`)
 * or through a bookkeeping stand-in (`simulate --profile`, the tests).
 *
 * The second half of this header is the toolkit the workload files share
 * (fsc__wl_*); it is not meant for callers.
 */
#ifndef FSC_WORKLOAD_H
#define FSC_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fragscope/common.h"

/* What a workload needs from whoever runs it. alloc returns 0 and *addr, or a
 * negative FSC_E* code (FSC_EOOM: the run stops there, like a training script
 * that crashes); free returns 0 or a negative code. The other callbacks may
 * be NULL. */
typedef struct fsc_workload_ops {
    void *ud;
    int (*alloc)(void *ud, uint64_t size, uint64_t stream, uint64_t *addr);
    int (*free)(void *ud, uint64_t addr);
    void (*tag_push)(void *ud, const char *name);
    void (*tag_pop)(void *ud);
    void (*mark)(void *ud, const char *text);
} fsc_workload_ops_t;

/* How a run ended. */
typedef struct fsc_workload_result {
    int steps_done;        /* training steps completed */
    int failed_step;       /* step (0-based) in which alloc/free failed; -1 = none */
    int failed_rc;         /* the callback's code (FSC_EOOM ...); 0 = none */
    uint64_t failed_size;  /* size of the allocation that failed; 0 for a free */
    char failed_tag[128];  /* tag path at the failure ("step/forward/layer.3/attn") */
    uint64_t allocs, frees;/* callback calls made */
    uint64_t live_bytes;   /* requested bytes still allocated at the end */
    uint64_t live_count;   /* ... and their count (parameters, optimizer
                              state, buffers; a failed run also leaves its
                              activations) */
} fsc_workload_result_t;

/* Comma-separated list of the workload names ("gpt2, resnet"). */
const char *fsc_workload_names(void);
/* One-line description, or NULL for an unknown name. */
const char *fsc_workload_describe(const char *name);

/* Run `steps` training steps of workload `name` with the random draws
 * (sequence lengths, batch sizes, resolutions) seeded by `seed`. The same
 * name, steps and seed always produce the same sequence of calls.
 * Returns 0 when every step ran; the callback's negative code when an alloc
 * or free failed (res says where; tags are popped back to the bottom, live
 * buffers are left allocated, as a crashed process would leave them);
 * FSC_ENOENT for an unknown workload (message lists the names); FSC_EINVAL
 * for steps < 0 or missing callbacks; FSC_ENOMEM. res may be NULL. */
int fsc_workload_run(const char *name, int steps, uint64_t seed,
                     const fsc_workload_ops_t *ops, fsc_workload_result_t *res,
                     fsc_err_t *err);

/* Run the workload against a bookkeeping stand-in (no allocator) and print
 * per step its allocations, frees, requested bytes and peak live bytes, the
 * size classes, and its tag/free consistency to out. Returns what
 * fsc_workload_run returns (a bad free makes the run fail with FSC_EINVAL
 * after the table is printed). */
int fsc_workload_profile(const char *name, int steps, uint64_t seed, FILE *out,
                         fsc_err_t *err);

/* ---- a workload through the caching allocator (simulate, demo) -------- */

typedef struct fsc_sim_opts {
    const char *workload;
    int steps;
    uint64_t seed;
    uint64_t capacity;     /* bytes the allocator may reserve; 0 = the device */
    const char *config;    /* PYTORCH_CUDA_ALLOC_CONF syntax; NULL/"" = defaults */
    const char *output;    /* trace path (written atomically); NULL = none */
    int use_env;           /* no output: record where FRAGSCOPE_TRACE says */
    const char *producer;  /* for the trace header; NULL = "fragscope simulate" */
    /* called at each step marker (may be NULL) */
    void (*on_step)(void *ud, int step, int steps);
    void *ud;
} fsc_sim_opts_t;

#define FSC_SIM_OPTS_DEFAULT {NULL, 6, 1, 0, NULL, NULL, 1, NULL, NULL, NULL}

/* The simulated device: 80 GiB (or the capacity, when larger). */
#define FSC_SIM_DEVICE_BYTES ((uint64_t)80 << 30)

typedef struct fsc_sim_result {
    fsc_workload_result_t wl;
    int oom;                       /* the run ended on an OOM */
    char oom_msg[FSC_ERR_MSG_MAX]; /* the allocator's message */
    uint64_t oom_request;          /* bytes asked for */
    uint64_t oom_rounded;          /* rounded request (OOM event's size) */
    uint64_t oom_allocated, oom_reserved, oom_capacity; /* at the OOM */
    uint64_t events;               /* allocator events + markers */
    uint64_t events_by_type[16];   /* indexed by fsc_event_type_t */
    uint64_t capacity;             /* the allocator's capacity */
    char config[256];              /* canonical config string */
    char backend[64];
    char stats_text[8192];         /* fsc_alloc_stats_format output */
    int64_t peak_allocated, peak_reserved, num_alloc_retries, num_ooms;
    const char *trace;             /* the trace written, or NULL */
} fsc_sim_result_t;

/* Run o->workload through a fresh allocator on the sim backend, recording
 * when asked. An OOM is a result (res->oom), not an error: returns 0. Errors:
 * FSC_ECONFIG (bad config, message from the parser), FSC_ENOENT (unknown
 * workload), FSC_EINVAL, trace writing errors (no partial file is left). */
int fsc_sim_run(const fsc_sim_opts_t *o, fsc_sim_result_t *res, fsc_err_t *err);
/* The summary `fragscope simulate` prints. */
void fsc_sim_print(const fsc_sim_opts_t *o, const fsc_sim_result_t *res, FILE *out);

/* ---- toolkit of the workload implementations (internal) --------------- */

/* A device buffer of the workload. addr 0 = not allocated (also after a
 * failure: every call becomes a no-op once one has failed). */
typedef struct fsc__wl_buf {
    uint64_t addr;
    uint64_t size;
} fsc__wl_buf_t;

typedef struct fsc__wl {
    const fsc_workload_ops_t *ops;
    uint64_t rng;
    int step;
    int depth;            /* tags pushed and not popped */
    char tags[8][32];     /* the tag stack, for failure reports */
    int rc;               /* first failure; sticky */
    fsc_workload_result_t *res;
} fsc__wl_t;

/* Uniform integer in [lo, hi] from the run's generator. */
uint64_t fsc__wl_rand(fsc__wl_t *w, uint64_t lo, uint64_t hi);
/* Allocate size bytes on the default stream into *b. Returns w->rc. */
int fsc__wl_alloc(fsc__wl_t *w, fsc__wl_buf_t *b, uint64_t size);
/* Free *b if allocated and clear it. */
void fsc__wl_free(fsc__wl_t *w, fsc__wl_buf_t *b);
void fsc__wl_push(fsc__wl_t *w, const char *name);
void fsc__wl_pushf(fsc__wl_t *w, const char *fmt, int n);
void fsc__wl_pop(fsc__wl_t *w);
void fsc__wl_mark(fsc__wl_t *w, const char *text);
/* The training loop: a "step N" marker, then step(ctx), for steps steps or
 * until the workload fails; res->steps_done counts the completed ones. */
void fsc__wl_steps(fsc__wl_t *w, int steps, void (*step)(void *ctx), void *ctx);

/* One training run of each workload; return w->rc (0 or the failure). */
int fsc__wl_gpt2(fsc__wl_t *w, int steps);
int fsc__wl_resnet(fsc__wl_t *w, int steps);

#endif /* FSC_WORKLOAD_H */
