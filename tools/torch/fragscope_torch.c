/*
 * fragscope_torch.c — libfragscope_torch.so, fragscope's allocator under
 * PyTorch through torch.cuda.memory.CUDAPluggableAllocator.
 *
 * PyTorch loads two symbols by name from this library:
 *   void *fsc_torch_malloc(size_t size, int device, cudaStream_t stream)
 *   void  fsc_torch_free(void *ptr, size_t size, int device, cudaStream_t stream)
 * and gives a pluggable allocator neither snapshots nor memory_stats(), so
 * the library also exports small control functions that fragscope_torch.py
 * calls through ctypes: tags, markers, flush, empty_cache and the stats as
 * JSON in the shape of torch.cuda.memory_stats().
 *
 * It lives in tools/ because it is glue between the allocator and the
 * recorder, which know nothing of each other.
 *
 * Environment (read once, at the first allocation):
 *   FRAGSCOPE_TRACE=path, FRAGSCOPE_TRACE_MODE=ring:N   record (see recorder.h)
 *   FRAGSCOPE_ALLOC_CONF  allocator settings; when unset, the first set of
 *                         PYTORCH_CUDA_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF and
 *                         PYTORCH_ALLOC_CONF, as PyTorch reads them (no merging)
 *   FRAGSCOPE_CAPACITY    bytes the process may reserve (e.g. 12GiB); default:
 *                         the whole device
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"
#include "fragscope/recorder.h"

#define FSC_TORCH_MAX_DEVICES 64
#define FSC_TORCH_EXPORT __attribute__((visibility("default")))

typedef struct fsc_torch_dev {
    fsc_backend_t *backend;
    fsc_allocator_t *alloc;
    int failed; /* creation failed once: do not retry on every call */
} fsc_torch_dev_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static fsc_torch_dev_t g_dev[FSC_TORCH_MAX_DEVICES];
static fsc_recorder_t *g_rec;
static int g_rec_device = -1;

static void torch_sink(void *ud, const fsc_event_t *ev)
{
    (void)ud;
    if (g_rec != NULL)
        fsc_recorder_sink(g_rec, ev);
}

static fsc_allocator_t *create_device(int device)
{
    fsc_err_t err;
    fsc_err_clear(&err);
    fsc_torch_dev_t *d = &g_dev[device];

    const char *conf = getenv("FRAGSCOPE_ALLOC_CONF");
    if (conf == NULL)
        conf = fsc_alloc_config_env(NULL, NULL);
    fsc_allocator_opts_t opts;
    memset(&opts, 0, sizeof opts);
    fsc_alloc_config_t defaults = FSC_ALLOC_CONFIG_DEFAULT;
    opts.config = defaults;
    if (conf != NULL && fsc_alloc_config_parse(conf, &opts.config, &err) != 0) {
        fprintf(stderr, "fragscope: allocator settings '%s': %s\n", conf, fsc_err_msg(&err));
        d->failed = 1;
        return NULL;
    }
    const char *cap = getenv("FRAGSCOPE_CAPACITY");
    if (cap != NULL && cap[0] != '\0' && fsc_size_parse(cap, &opts.capacity) != 0) {
        fprintf(stderr, "fragscope: FRAGSCOPE_CAPACITY='%s' is not a size\n", cap);
        d->failed = 1;
        return NULL;
    }
    if (fsc_backend_cuda_create(device, &d->backend, &err) != 0) {
        fprintf(stderr, "fragscope: device %d: %s\n", device, fsc_err_msg(&err));
        d->failed = 1;
        return NULL;
    }
    opts.backend = d->backend;

    /* One trace per process: the first device that allocates is recorded
     * (one process per GPU is the common case: DDP ranks). */
    if (g_rec_device < 0) {
        char config_str[512] = "";
        fsc_alloc_config_format(&opts.config, config_str, sizeof config_str);
        fsc_trace_header_t hdr;
        memset(&hdr, 0, sizeof hdr);
        hdr.producer = "fragscope " FSC_VERSION_STRING " torch";
        hdr.config = config_str;
        hdr.backend = fsc_backend_name(d->backend);
        hdr.capacity = opts.capacity != 0 ? opts.capacity : fsc_backend_total(d->backend);
        hdr.device_total = fsc_backend_total(d->backend);
        hdr.rank = -1;
        const char *rank = getenv("RANK");
        if (rank != NULL)
            hdr.rank = atoi(rank);
        if (fsc_recorder_from_env(&hdr, &g_rec, &err) != 0)
            fprintf(stderr, "fragscope: not recording: %s\n", fsc_err_msg(&err));
        g_rec_device = device;
    } else if (g_rec != NULL && device != g_rec_device) {
        fprintf(stderr, "fragscope: device %d is not recorded (the trace holds device %d)\n",
                device, g_rec_device);
    }
    if (g_rec != NULL && device == g_rec_device) {
        opts.sink = torch_sink;
        opts.sink_ud = NULL;
    }
    if (fsc_allocator_create(&opts, &d->alloc, &err) != 0) {
        fprintf(stderr, "fragscope: device %d: %s\n", device, fsc_err_msg(&err));
        fsc_backend_destroy(d->backend);
        d->backend = NULL;
        d->failed = 1;
        return NULL;
    }
    /* the device's free and total memory with the events, so that memory
     * outside this allocator shows (FRAGSCOPE_DEVICE_SAMPLES) */
    if (opts.sink != NULL) {
        const char *ds = getenv("FRAGSCOPE_DEVICE_SAMPLES");
        int on = 0;
        uint64_t every = 0;
        if (fsc_device_samples_parse(ds, &on, &every) != 0)
            fprintf(stderr, "fragscope: FRAGSCOPE_DEVICE_SAMPLES='%s' is not off, segments or "
                            "a number of milliseconds; sampling at segments\n", ds);
        fsc_allocator_sample_device(d->alloc, on, every);
    }
    return d->alloc;
}

static fsc_allocator_t *get_device(int device)
{
    if (device < 0 || device >= FSC_TORCH_MAX_DEVICES)
        return NULL;
    fsc_allocator_t *a = __atomic_load_n(&g_dev[device].alloc, __ATOMIC_ACQUIRE);
    if (a != NULL)
        return a;
    pthread_mutex_lock(&g_mu);
    a = g_dev[device].alloc;
    if (a == NULL && !g_dev[device].failed)
        a = create_device(device);
    pthread_mutex_unlock(&g_mu);
    return a;
}

FSC_TORCH_EXPORT void *fsc_torch_malloc(size_t size, int device, void *stream)
{
    fsc_allocator_t *a = get_device(device);
    if (a == NULL)
        return NULL;
    uint64_t addr = 0;
    if (fsc_allocator_malloc(a, size, (uint64_t)(uintptr_t)stream, &addr) != 0) {
        /* PyTorch turns NULL into an error that does not say why; say it
         * here, in the words of PyTorch's own message. The OOM chunk is
         * already on disk. */
        fprintf(stderr, "fragscope: CUDA out of memory on device %d: %s\n", device,
                fsc_allocator_last_error(a));
        return NULL;
    }
    return (void *)(uintptr_t)addr;
}

FSC_TORCH_EXPORT void fsc_torch_free(void *ptr, size_t size, int device, void *stream)
{
    (void)size;
    (void)stream;
    fsc_allocator_t *a = get_device(device);
    if (a != NULL && ptr != NULL)
        fsc_allocator_free(a, (uint64_t)(uintptr_t)ptr);
}

FSC_TORCH_EXPORT void fsc_torch_tag_push(const char *name) { fsc_tag_push(name); }
FSC_TORCH_EXPORT void fsc_torch_tag_pop(void) { fsc_tag_pop(); }
FSC_TORCH_EXPORT void fsc_torch_mark(const char *text) { fsc_mark(text); }

FSC_TORCH_EXPORT int fsc_torch_flush(void)
{
    return g_rec != NULL ? fsc_recorder_flush(g_rec) : 0;
}

FSC_TORCH_EXPORT int fsc_torch_empty_cache(int device)
{
    fsc_allocator_t *a = get_device(device);
    return a != NULL ? fsc_allocator_empty_cache(a) : FSC_EINVAL;
}

static int put_stat(char *buf, size_t cap, size_t *n, const char *name, const fsc_stat_t *s)
{
    static const char *const pools[FSC_STAT_N] = {"all", "small_pool", "large_pool"};
    for (int p = 0; p < FSC_STAT_N; p++) {
        int k = snprintf(buf + *n, cap - *n,
                         "\"%s.%s.current\":%lld,\"%s.%s.peak\":%lld,"
                         "\"%s.%s.allocated\":%lld,\"%s.%s.freed\":%lld,",
                         name, pools[p], (long long)s[p].current, name, pools[p],
                         (long long)s[p].peak, name, pools[p], (long long)s[p].allocated,
                         name, pools[p], (long long)s[p].freed);
        if (k < 0 || (size_t)k >= cap - *n)
            return FSC_ELIMIT;
        *n += (size_t)k;
    }
    return 0;
}

/* The allocator's statistics as a JSON object with torch.cuda.memory_stats()
 * keys. Returns the length written, or a negative FSC_E* code. */
FSC_TORCH_EXPORT int fsc_torch_stats_json(int device, char *buf, size_t cap)
{
    fsc_allocator_t *a = get_device(device);
    if (a == NULL || buf == NULL || cap < 2)
        return FSC_EINVAL;
    fsc_alloc_stats_t s;
    int rc = fsc_allocator_get_stats(a, &s);
    if (rc != 0)
        return rc;
    size_t n = 0;
    buf[n++] = '{';
    const struct { const char *name; const fsc_stat_t *st; } arrays[] = {
        {"allocation", s.allocation},
        {"segment", s.segment},
        {"active", s.active},
        {"inactive_split", s.inactive_split},
        {"allocated_bytes", s.allocated_bytes},
        {"reserved_bytes", s.reserved_bytes},
        {"active_bytes", s.active_bytes},
        {"inactive_split_bytes", s.inactive_split_bytes},
        {"requested_bytes", s.requested_bytes},
    };
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        if ((rc = put_stat(buf, cap, &n, arrays[i].name, arrays[i].st)) != 0)
            return rc;
    int k = snprintf(buf + n, cap - n,
                     "\"num_alloc_retries\":%lld,\"num_ooms\":%lld,\"num_device_alloc\":%lld,"
                     "\"num_device_free\":%lld,\"num_sync_all_streams\":%lld,"
                     "\"oversize_allocations.current\":%lld,\"oversize_allocations.peak\":%lld,"
                     "\"oversize_segments.current\":%lld,\"oversize_segments.peak\":%lld}",
                     (long long)s.num_alloc_retries, (long long)s.num_ooms,
                     (long long)s.num_device_alloc, (long long)s.num_device_free,
                     (long long)s.num_sync_all_streams,
                     (long long)s.oversize_allocations.current,
                     (long long)s.oversize_allocations.peak,
                     (long long)s.oversize_segments.current, (long long)s.oversize_segments.peak);
    if (k < 0 || (size_t)k >= cap - n)
        return FSC_ELIMIT;
    return (int)(n + (size_t)k);
}
