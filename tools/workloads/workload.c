/*
 * workload.c — the workload registry and the small toolkit the workloads
 * share: a seeded generator, buffers that remember their size, tags kept in
 * step with the caller's tag stack, and the first-failure-stops rule.
 *
 * Once one alloc fails, every later alloc/free becomes a no-op and the
 * workload bails out at its next check: the run ends like a training script
 * that died on an OOM, with its buffers still allocated.
 */
#include "workload.h"

#include <stdio.h>
#include <string.h>

typedef struct fsc__wl_entry {
    const char *name;
    const char *describe;
    int (*run)(fsc__wl_t *w, int steps);
} fsc__wl_entry_t;

static const fsc__wl_entry_t k_workloads[] = {
    {"gpt2",
     "GPT-2 small training (12 layers, 768 wide, batch 8, sequence length 128-1024 per step, AdamW, fp32)",
     fsc__wl_gpt2},
    {"resnet",
     "ResNet-50 training (batch 32/48/64 and resolution 160/192/224 per step, SGD with momentum, fp32)",
     fsc__wl_resnet},
    {NULL, NULL, NULL},
};

const char *fsc_workload_names(void)
{
    return "gpt2, resnet";
}

static const fsc__wl_entry_t *find(const char *name)
{
    for (const fsc__wl_entry_t *e = k_workloads; name != NULL && e->name != NULL; e++)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

const char *fsc_workload_describe(const char *name)
{
    const fsc__wl_entry_t *e = find(name);
    return e ? e->describe : NULL;
}

/* splitmix64: tiny, fast, and the same stream on every platform. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t fsc__wl_rand(fsc__wl_t *w, uint64_t lo, uint64_t hi)
{
    uint64_t span = hi - lo + 1;
    return lo + (span == 0 ? next_u64(&w->rng) : next_u64(&w->rng) % span);
}

static void note_failure(fsc__wl_t *w, int rc, uint64_t size)
{
    w->rc = rc;
    fsc_workload_result_t *r = w->res;
    r->failed_step = w->step;
    r->failed_rc = rc;
    r->failed_size = size;
    size_t n = 0;
    r->failed_tag[0] = '\0';
    for (int i = 0; i < w->depth && i < 8; i++) {
        int k = snprintf(r->failed_tag + n, sizeof r->failed_tag - n, "%s%s",
                         i ? "/" : "", w->tags[i]);
        if (k < 0 || (size_t)k >= sizeof r->failed_tag - n)
            break;
        n += (size_t)k;
    }
}

int fsc__wl_alloc(fsc__wl_t *w, fsc__wl_buf_t *b, uint64_t size)
{
    if (w->rc != 0)
        return w->rc;
    uint64_t addr = 0;
    int rc = w->ops->alloc(w->ops->ud, size, 0, &addr);
    w->res->allocs++;
    if (rc != 0) {
        note_failure(w, rc, size);
        return rc;
    }
    b->addr = addr;
    b->size = size;
    w->res->live_bytes += size;
    w->res->live_count++;
    return 0;
}

void fsc__wl_free(fsc__wl_t *w, fsc__wl_buf_t *b)
{
    if (w->rc != 0 || b->addr == 0)
        return;
    int rc = w->ops->free(w->ops->ud, b->addr);
    w->res->frees++;
    if (rc != 0) {
        note_failure(w, rc, 0);
        return;
    }
    w->res->live_bytes -= b->size;
    w->res->live_count--;
    b->addr = 0;
    b->size = 0;
}

void fsc__wl_push(fsc__wl_t *w, const char *name)
{
    if (w->depth < 8)
        snprintf(w->tags[w->depth], sizeof w->tags[0], "%s", name);
    w->depth++;
    if (w->ops->tag_push)
        w->ops->tag_push(w->ops->ud, name);
}

void fsc__wl_pushf(fsc__wl_t *w, const char *fmt, int n)
{
    char name[32];
    snprintf(name, sizeof name, fmt, n);
    fsc__wl_push(w, name);
}

void fsc__wl_pop(fsc__wl_t *w)
{
    /* an unbalanced pop still reaches the caller, whose stack can tell */
    if (w->depth > 0)
        w->depth--;
    if (w->ops->tag_pop)
        w->ops->tag_pop(w->ops->ud);
}

void fsc__wl_mark(fsc__wl_t *w, const char *text)
{
    if (w->ops->mark)
        w->ops->mark(w->ops->ud, text);
}

int fsc_workload_run(const char *name, int steps, uint64_t seed,
                     const fsc_workload_ops_t *ops, fsc_workload_result_t *res,
                     fsc_err_t *err)
{
    fsc_workload_result_t local;
    if (res == NULL)
        res = &local;
    memset(res, 0, sizeof *res);
    res->failed_step = -1;
    const fsc__wl_entry_t *e = find(name);
    if (e == NULL)
        return fsc_err_set(err, FSC_ENOENT, "unknown workload '%s' (workloads: %s)",
                           name ? name : "", fsc_workload_names());
    if (steps < 0 || ops == NULL || ops->alloc == NULL || ops->free == NULL)
        return fsc_err_set(err, FSC_EINVAL, "workload %s: bad arguments", name);

    fsc__wl_t w;
    memset(&w, 0, sizeof w);
    w.ops = ops;
    w.rng = seed;
    w.res = res;
    int rc = e->run(&w, steps);
    if (rc != 0) {
        while (w.depth > 0) /* a failed run leaves its tags pushed */
            fsc__wl_pop(&w);
        char sz[32];
        fsc_size_format(res->failed_size, sz, sizeof sz);
        return fsc_err_set(err, rc, "workload %s: %s of %s failed in step %d at %s: %s",
                           name, res->failed_size ? "allocation" : "free",
                           sz, res->failed_step, res->failed_tag, fsc_strerror(rc));
    }
    return 0;
}

void fsc__wl_steps(fsc__wl_t *w, int steps, void (*step)(void *ctx), void *ctx)
{
    for (int st = 0; st < steps && w->rc == 0; st++) {
        char text[32];
        w->step = st;
        snprintf(text, sizeof text, "step %d", st);
        fsc__wl_mark(w, text);
        step(ctx);
        if (w->rc == 0)
            w->res->steps_done = st + 1;
    }
}
