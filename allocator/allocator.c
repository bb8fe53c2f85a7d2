/*
 * allocator.c — the public face of the caching allocator: create/destroy,
 * malloc with PyTorch's miss sequence, free, record_stream, empty_cache,
 * statistics and the layout walk. One mutex guards everything; the event
 * sink is called with it held so events are totally ordered.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "fsc/vec.h"

/* Room for private pool slots 1 .. nslots - 1 (slot 0 is the default
 * pool): their pair of pools, allocated one by one, and their records. */
static int grow_pools(fsc_allocator_t *a, size_t nslots)
{
    size_t have = a->pools != NULL ? a->nprivate + 1 : 0;
    if (nslots <= have)
        return 0;
    if (nslots - 1 > a->cap_private || a->pools == NULL) {
        size_t cap = a->cap_private ? a->cap_private : 4;
        while (cap < nslots)
            cap *= 2;
        fsc__private_t *pv = realloc(a->priv, cap * sizeof *pv);
        if (pv == NULL)
            return FSC_ENOMEM;
        a->priv = pv;
        fsc__pool_t **pp = realloc(a->pools, 2 * (cap + 1) * sizeof *pp);
        if (pp == NULL)
            return FSC_ENOMEM;
        size_t old = a->pools != NULL ? 2 * (a->cap_private + 1) : 0;
        memset(pp + old, 0, (2 * (cap + 1) - old) * sizeof *pp);
        a->pools = pp;
        a->cap_private = cap;
    }
    for (size_t i = 2 * have; i < 2 * nslots; i++) {
        if (a->pools[i] != NULL)
            continue; /* made by a call that failed later */
        fsc__pool_t *p = calloc(1, sizeof *p);
        if (p == NULL) {
            for (size_t k = 2 * have; k < i; k++) {
                free(a->pools[k]);
                a->pools[k] = NULL;
            }
            return FSC_ENOMEM;
        }
        RB_INIT(&p->blocks);
        RB_INIT(&p->unmapped);
        p->id = (uint8_t)(i & 1);
        p->index = (uint32_t)i;
        a->pools[i] = p;
    }
    return 0;
}

int fsc_allocator_create(const fsc_allocator_opts_t *opts, fsc_allocator_t **out, fsc_err_t *err)
{
    if (out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "allocator: no output handle");
    *out = NULL;
    if (opts == NULL || opts->backend == NULL)
        return fsc_err_set(err, FSC_EINVAL, "allocator: a backend is required");
    const fsc_alloc_config_t *c = &opts->config;
    if (c->garbage_collection_threshold < 0.0 || c->garbage_collection_threshold >= 1.0)
        return fsc_err_set(err, FSC_ECONFIG,
                           "allocator: garbage_collection_threshold %g is outside (0, 1)",
                           c->garbage_collection_threshold);
    fsc_allocator_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "allocator: out of host memory");
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        free(a);
        return fsc_err_set(err, FSC_ENOMEM, "allocator: cannot create its mutex");
    }
    a->cfg = *c;
    fsc__slab_init(&a->blocks, sizeof(fsc__block_t), 256);
    a->max_split = fsc__max_split(c);
    a->non_split_tol = fsc__max_non_split_rounding(c);
    a->be = opts->backend;
    a->set_fraction = opts->capacity != 0;
    a->capacity = opts->capacity ? opts->capacity : fsc_backend_total(opts->backend);
    size_t ppmf;
    if (!a->set_fraction && fsc_alloc_setting_find("per_process_memory_fraction", &ppmf) &&
        fsc_alloc_config_is_set(c, ppmf)) {
        /* The fraction in the settings string caps the allocator as
         * set_per_process_memory_fraction does; an explicit capacity wins. */
        a->set_fraction = 1;
        a->capacity = (uint64_t)(c->per_process_memory_fraction * (double)a->capacity);
    }
    a->gc_armed = a->set_fraction && c->garbage_collection_threshold > 0.0;
    a->sink = opts->sink;
    a->sink_ud = opts->sink_ud;
    fsc__u64map_init(&a->private_slot);
    if (grow_pools(a, 1) != 0) {
        fsc_allocator_destroy(a);
        return fsc_err_set(err, FSC_ENOMEM, "allocator: out of host memory");
    }
    *out = a;
    return 0;
}

static void free_segment_memory(fsc_allocator_t *a, fsc__segment_t *s)
{
    if (!s->expandable) {
        a->be->ops->seg_free(a->be, s->base, s->size);
        return;
    }
    /* Unmap every run of mapped blocks; runs start and end on pages. */
    fsc__block_t *b = s->head;
    while (b != NULL) {
        if (!b->mapped) {
            b = b->next;
            continue;
        }
        uint64_t start = b->addr, end = b->addr;
        while (b != NULL && b->mapped) {
            end = b->addr + b->size;
            b = b->next;
        }
        a->be->ops->va_unmap(a->be, s->vseg, start - s->base, end - start);
    }
    a->be->ops->va_release(a->be, s->vseg);
}

void fsc_allocator_destroy(fsc_allocator_t *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->npending; i++)
        if (a->pending[i].event != NULL)
            a->be->ops->event_destroy(a->be, a->pending[i].event);
    free(a->pending);
    fsc__segment_t *s = a->segments;
    while (s != NULL) {
        fsc__segment_t *next = s->next_seg;
        free_segment_memory(a, s);
        for (fsc__block_t *b = s->head; b != NULL; b = b->next)
            free(b->uses);
        free(s);
        s = next;
    }
    fsc__slab_free(&a->blocks);
    fsc__u64map_free(&a->live);
    fsc__u64map_free(&a->private_slot);
    if (a->pools != NULL)
        for (size_t i = 0; i < 2 * (a->cap_private + 1); i++)
            free(a->pools[i]);
    free(a->pools);
    free(a->priv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static int oom(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream, uint64_t size,
               uint64_t rounded, uint64_t alloc_size)
{
    a->st.num_ooms++;
    fsc__device_sample(a);
    uint64_t dev_free = UINT64_MAX, dev_total = 0;
    if (a->be->ops->mem_info != NULL)
        a->be->ops->mem_info(a->be, &dev_free, &dev_total);
    uint64_t allocated = (uint64_t)a->st.allocated_bytes[FSC_STAT_ALL].current;
    if (a->sink != NULL) {
        fsc_event_t ev = {0};
        ev.type = FSC_EV_OOM;
        ev.pool = p->id;
        ev.size = rounded;
        ev.requested = size;
        ev.stream = stream;
        ev.oom.allocated = allocated;
        ev.oom.reserved = a->reserved;
        ev.oom.capacity = a->capacity;
        ev.oom.device_free = dev_free;
        ev.oom.device_total = dev_total;
        ev.oom.segment_size = alloc_size;
        a->sink(a->sink_ud, &ev);
    }
    char s_try[32], s_total[32], s_free[32], s_cap[32], s_alloc[32], s_unalloc[32];
    fsc_size_format(alloc_size, s_try, sizeof s_try);
    fsc_size_format(dev_total, s_total, sizeof s_total);
    fsc_size_format(dev_free == UINT64_MAX ? 0 : dev_free, s_free, sizeof s_free);
    fsc_size_format(a->capacity, s_cap, sizeof s_cap);
    fsc_size_format(allocated, s_alloc, sizeof s_alloc);
    fsc_size_format(a->reserved - allocated, s_unalloc, sizeof s_unalloc);
    return fsc_err_set(&a->err, FSC_EOOM,
                       "out of device memory. Tried to allocate %s. Device %s has a total "
                       "capacity of %s of which %s is free. %s%s%s allocated, and %s is "
                       "reserved but unallocated.",
                       s_try, a->be->name, s_total, s_free, a->set_fraction ? s_cap : "",
                       a->set_fraction ? " allowed; " : "", s_alloc, s_unalloc);
}

/* PyTorch's try_mempool_fallback: the best fit in the first use_on_oom pool
 * that has one (lookup only: nothing is allocated or released for it). */
static fsc__block_t *use_on_oom_block(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream,
                                      uint64_t rounded)
{
    for (size_t i = 0; i < a->nprivate; i++) {
        if (!(a->priv[i].flags & FSC_POOL_USE_ON_OOM))
            continue;
        fsc__block_t *b = fsc__get_free_block(a, a->pools[2 * (i + 1) + p->id], stream, rounded);
        if (b != NULL)
            return b;
    }
    return NULL;
}

/* lookup → (throw_on_cudamalloc_oom: refuse past the cap) → GC → device
 * alloc → a use_on_oom pool's cached block → free oversize cached blocks →
 * release every cached unsplit block and retry.
 * *out NULL with 0: out of memory. */
static int find_or_create(fsc_allocator_t *a, fsc__pool_t *p, uint64_t stream, uint64_t rounded,
                          uint64_t alloc_size, fsc__block_t **out)
{
    *out = fsc__get_free_block(a, p, stream, rounded);
    if (*out != NULL)
        return 0;
    /* throw_on_cudamalloc_oom: a miss that would pass the cap is refused
     * before the driver is asked, with no GC, no release and no retry. */
    if (a->cfg.throw_on_cudamalloc_oom && a->set_fraction &&
        a->reserved + alloc_size > a->capacity)
        return 0;
    if (a->gc_armed)
        fsc__garbage_collect(a);
    int rc = fsc__alloc_block(a, p, stream, rounded, alloc_size, 0, out);
    if (rc != 0 || *out != NULL)
        return rc;
    /* A default-pool request the device refused may take a cached block of
     * a pool created with use_on_oom, before anything is released. */
    if (p->index < 2 && (*out = use_on_oom_block(a, p, stream, rounded)) != NULL)
        return 0;
    if (fsc__release_available_cached_blocks(a, p, stream, rounded)) {
        rc = fsc__alloc_block(a, p, stream, rounded, alloc_size, 0, out);
        if (rc != 0 || *out != NULL)
            return rc;
    }
    fsc__release_cached_blocks(a);
    return fsc__alloc_block(a, p, stream, rounded, alloc_size, 1, out);
}

int fsc_allocator_malloc(fsc_allocator_t *a, uint64_t size, uint64_t stream, uint64_t *addr)
{
    return fsc_allocator_malloc_pool(a, size, stream, 0, addr);
}

int fsc_allocator_malloc_pool(fsc_allocator_t *a, uint64_t size, uint64_t stream,
                              uint64_t pool_id, uint64_t *addr)
{
    if (a == NULL || addr == NULL)
        return FSC_EINVAL;
    *addr = 0;
    if (size == 0)
        return 0;
    pthread_mutex_lock(&a->mu);
    int rc;
    if (size >= FSC__MAX_REQUEST) {
        /* PyTorch refuses these before its allocator runs: no event. */
        rc = fsc_err_set(&a->err, FSC_EOOM,
                         "out of device memory. Tried to allocate more than 1EB memory.");
        goto out;
    }
    fsc__process_events(a);
    fsc__device_sample_due(a);
    rc = fsc__u64map_reserve(&a->live);
    if (rc != 0) {
        rc = fsc_err_set(&a->err, rc, "allocator: out of host memory");
        goto out;
    }
    uint64_t rounded = fsc_alloc_round_size(&a->cfg, size);
    int pslot = fsc__private_slot(a, pool_id);
    if (pslot < 0) {
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
        goto out;
    }
    fsc__pool_t *p = a->pools[2 * pslot + (int)fsc_alloc_pool_of(rounded)];
    uint64_t alloc_size = fsc_alloc_segment_size_cfg(&a->cfg, rounded);
    fsc__block_t *b;
    rc = find_or_create(a, p, stream, rounded, alloc_size, &b);
    if (rc != 0)
        goto out;
    if (b == NULL) {
        rc = oom(a, p, stream, size, rounded, alloc_size);
        goto out;
    }
    /* A pool created with no_split hands out whole blocks. */
    int slot = b->pool / 2;
    int split = !(slot > 0 && (a->priv[slot - 1].flags & FSC_POOL_NO_SPLIT)) &&
                fsc_alloc_should_split(&a->cfg, p->id, b->size, rounded, 0);
    fsc__block_t *nb = fsc__alloc_found_block(a, b, rounded, size, split);
    if (nb == NULL) {
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
        goto out;
    }
    *addr = nb->addr;
out:
    pthread_mutex_unlock(&a->mu);
    return rc;
}

int fsc_allocator_free(fsc_allocator_t *a, uint64_t addr)
{
    if (a == NULL)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    int rc = 0;
    fsc__block_t *b = fsc__u64map_delp(&a->live, addr);
    if (b == NULL) {
        rc = fsc_err_set(&a->err, FSC_EINVAL, "free: 0x%llx is not a live block",
                         (unsigned long long)addr);
        goto out;
    }
    b->allocated = 0;
    fsc__stat2_dec(a->st.allocation, b->pool, 1);
    fsc__stat2_dec(a->st.allocated_bytes, b->pool, (int64_t)b->size);
    fsc__emit(a, FSC_EV_FREE_REQUESTED, b, b->addr, b->size, b->requested, 0);
    if (b->size >= a->max_split)
        fsc__stat_dec(&a->st.oversize_allocations, 1);
    if (b->nuses > 0)
        rc = fsc__insert_events(a, b);
    else
        fsc__free_block(a, b);
out:
    pthread_mutex_unlock(&a->mu);
    return rc;
}

int fsc_allocator_record_stream(fsc_allocator_t *a, uint64_t addr, uint64_t stream)
{
    if (a == NULL)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    int rc = 0;
    fsc__block_t *b = fsc__u64map_getp(&a->live, addr);
    if (b == NULL) {
        rc = fsc_err_set(&a->err, FSC_EINVAL, "record_stream: 0x%llx is not a live block",
                         (unsigned long long)addr);
        goto out;
    }
    if (stream == b->stream)
        goto out; /* uses on the allocation stream need no waiting */
    for (uint32_t i = 0; i < b->nuses; i++)
        if (b->uses[i] == stream)
            goto out;
    if (FSC__VEC_RESERVE(b->uses, b->uses_cap, (size_t)b->nuses + 1) != 0) {
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
        goto out;
    }
    b->uses[b->nuses++] = stream;
out:
    pthread_mutex_unlock(&a->mu);
    return rc;
}

int fsc_allocator_stream_done(fsc_allocator_t *a, uint64_t stream)
{
    if (a == NULL)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    fsc__stream_done(a, stream);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

int fsc_allocator_empty_cache(fsc_allocator_t *a)
{
    if (a == NULL)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    uint64_t before = a->reserved;
    fsc__release_cached_blocks(a);
    if (a->sink != NULL) {
        fsc_event_t ev = {0};
        ev.type = FSC_EV_EMPTY_CACHE;
        ev.size = before - a->reserved;
        a->sink(a->sink_ud, &ev);
    }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

int fsc_allocator_get_stats(fsc_allocator_t *a, fsc_alloc_stats_t *out)
{
    if (a == NULL || out == NULL)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    *out = a->st;
    pthread_mutex_unlock(&a->mu);
    return 0;
}

static void reset_peak(fsc_stat_t *arr, int n)
{
    for (int i = 0; i < n; i++)
        arr[i].peak = arr[i].current;
}

int fsc_allocator_reset_peaks(fsc_allocator_t *a)
{
    if (a == NULL)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    fsc_alloc_stats_t *s = &a->st;
    reset_peak(s->allocation, FSC_STAT_N);
    reset_peak(s->segment, FSC_STAT_N);
    reset_peak(s->active, FSC_STAT_N);
    reset_peak(s->inactive_split, FSC_STAT_N);
    reset_peak(s->allocated_bytes, FSC_STAT_N);
    reset_peak(s->reserved_bytes, FSC_STAT_N);
    reset_peak(s->active_bytes, FSC_STAT_N);
    reset_peak(s->inactive_split_bytes, FSC_STAT_N);
    reset_peak(s->requested_bytes, FSC_STAT_N);
    reset_peak(&s->oversize_allocations, 1);
    reset_peak(&s->oversize_segments, 1);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

const fsc_alloc_config_t *fsc_allocator_config(const fsc_allocator_t *a)
{
    return a != NULL ? &a->cfg : NULL;
}

uint64_t fsc_allocator_capacity(const fsc_allocator_t *a)
{
    return a != NULL ? a->capacity : 0;
}

const char *fsc_allocator_last_error(const fsc_allocator_t *a)
{
    return a != NULL ? fsc_err_msg(&a->err) : "no allocator";
}

static int cmp_seg(const void *x, const void *y)
{
    const fsc__segment_t *a = *(const fsc__segment_t *const *)x;
    const fsc__segment_t *b = *(const fsc__segment_t *const *)y;
    return (a->base > b->base) - (a->base < b->base);
}

int fsc_allocator_walk(fsc_allocator_t *a, fsc_block_visit_fn fn, void *ud)
{
    if (a == NULL || fn == NULL)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    size_t n = 0;
    for (fsc__segment_t *s = a->segments; s != NULL; s = s->next_seg)
        n++;
    fsc__segment_t **v = malloc((n ? n : 1) * sizeof *v);
    if (v == NULL) {
        pthread_mutex_unlock(&a->mu);
        return fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
    }
    n = 0;
    for (fsc__segment_t *s = a->segments; s != NULL; s = s->next_seg)
        v[n++] = s;
    qsort(v, n, sizeof *v, cmp_seg);
    for (size_t i = 0; i < n; i++) {
        const fsc__segment_t *s = v[i];
        for (const fsc__block_t *b = s->head; b != NULL; b = b->next) {
            if (!b->mapped)
                continue;
            fsc_block_info_t info = {
                .segment = s->base,
                .segment_size = s->expandable ? s->mapped : s->size,
                .addr = b->addr,
                .size = b->size,
                .requested = b->requested,
                .stream = b->stream,
                .pool = b->pool & 1,
                .pool_id = fsc__pool_id_of(a, b->pool),
                .allocated = b->allocated,
                .pending_free = !b->allocated && b->event_count > 0,
                .expandable = s->expandable,
            };
            fn(ud, &info);
        }
    }
    free(v);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

void fsc_allocator_free_summary(fsc_allocator_t *a, uint64_t *free_bytes, uint64_t *largest)
{
    uint64_t sum = 0, max = 0;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < 2 * (a->nprivate + 1); i++) {
        const fsc__pool_t *p = a->pools[i];
        sum += p->free_bytes;
        /* the set is ordered by stream, then size: each stream's largest
         * block comes just before the next stream's first */
        struct fsc__free_tree *t = (struct fsc__free_tree *)&p->blocks;
        fsc__block_t *b = RB_MAX(fsc__free_tree, t);
        while (b != NULL) {
            if (b->size > max)
                max = b->size;
            fsc__block_t key;
            memset(&key, 0, sizeof key);
            key.stream = b->stream;
            b = RB_PREV(fsc__free_tree, t, RB_NFIND(fsc__free_tree, t, &key));
        }
    }
    pthread_mutex_unlock(&a->mu);
    *free_bytes = sum;
    *largest = max;
}

/* ---- private pools ---------------------------------------------------------- */

uint64_t fsc__pool_id_of(const fsc_allocator_t *a, uint32_t index)
{
    size_t slot = index / 2;
    return slot == 0 || slot > a->nprivate ? 0 : a->priv[slot - 1].id;
}

int fsc__private_slot(fsc_allocator_t *a, uint64_t pool_id)
{
    if (pool_id == 0)
        return 0;
    uint64_t slot;
    if (fsc__u64map_get(&a->private_slot, pool_id, &slot))
        return (int)slot;
    if (a->nprivate >= (size_t)INT32_MAX / 2 - 1 || grow_pools(a, a->nprivate + 2) != 0 ||
        fsc__u64map_put(&a->private_slot, pool_id, a->nprivate + 1) != 0)
        return -1;
    a->priv[a->nprivate].id = pool_id;
    a->priv[a->nprivate].released = 0;
    a->priv[a->nprivate].flags = 0;
    return (int)++a->nprivate;
}

int fsc_allocator_release_pool(fsc_allocator_t *a, uint64_t pool_id)
{
    if (a == NULL || pool_id == 0)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    uint64_t slot;
    if (fsc__u64map_get(&a->private_slot, pool_id, &slot))
        a->priv[slot - 1].released = 1;
    pthread_mutex_unlock(&a->mu);
    return 0;
}

int fsc_allocator_set_pool_flags(fsc_allocator_t *a, uint64_t pool_id, unsigned flags)
{
    if (a == NULL || pool_id == 0 || (flags & ~(unsigned)(FSC_POOL_USE_ON_OOM | FSC_POOL_NO_SPLIT)))
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    int slot = fsc__private_slot(a, pool_id);
    int rc = 0;
    if (slot < 0)
        rc = fsc_err_set(&a->err, FSC_ENOMEM, "allocator: out of host memory");
    else
        a->priv[slot - 1].flags = (uint8_t)flags;
    pthread_mutex_unlock(&a->mu);
    return rc;
}

int fsc_allocator_empty_cache_pool(fsc_allocator_t *a, uint64_t pool_id)
{
    if (a == NULL || pool_id == 0)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    uint64_t slot;
    if (fsc__u64map_get(&a->private_slot, pool_id, &slot))
        fsc__release_private_pool(a, (size_t)slot);
    pthread_mutex_unlock(&a->mu);
    return 0;
}
