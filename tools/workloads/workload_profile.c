/*
 * workload_profile.c — run a workload against a bookkeeping stand-in for the
 * allocator and print what it asked for: allocations, frees and live bytes
 * per step, the size classes, and whether tags and frees were consistent.
 *
 * This is how the workloads are compared with real PyTorch runs (sizes are
 * the requested bytes, before any allocator rounding) and how the tests
 * check them without an allocator in the way. The stand-in hands out
 * addresses 4 KiB apart and rejects a free of anything not live, so a
 * workload that double-frees or frees a stranger fails loudly.
 */
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDR_BASE 0x100000000ull
#define ADDR_STEP 0x1000ull
#define NCLASS 48

typedef struct step_stats {
    uint64_t allocs, frees, bytes, peak_live, live_end;
} step_stats_t;

typedef struct profiler {
    uint64_t *sizes;      /* by allocation number; 0 = freed */
    size_t n, cap;
    uint64_t live, peak_live;
    int peak_step;
    step_stats_t *steps;  /* [0] = before the first marker, [k+1] = step k */
    int nsteps, cur;
    uint64_t cls[NCLASS];
    int depth, max_depth, bad_pops, marks, bad_frees;
    int oom;
} profiler_t;

static int cls_of(uint64_t size)
{
    int c = 0;
    while (c + 1 < NCLASS && (size >> (c + 1)) != 0)
        c++;
    return c;
}

static int p_alloc(void *ud, uint64_t size, uint64_t stream, uint64_t *addr)
{
    profiler_t *p = ud;
    (void)stream;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 4096;
        uint64_t *s = realloc(p->sizes, cap * sizeof *s);
        if (s == NULL)
            return FSC_ENOMEM;
        p->sizes = s;
        p->cap = cap;
    }
    p->sizes[p->n] = size;
    *addr = ADDR_BASE + ADDR_STEP * p->n++;
    p->live += size;
    step_stats_t *s = &p->steps[p->cur];
    s->allocs++;
    s->bytes += size;
    if (p->live > s->peak_live)
        s->peak_live = p->live;
    if (p->live > p->peak_live) {
        p->peak_live = p->live;
        p->peak_step = p->cur - 1;
    }
    p->cls[cls_of(size)]++;
    return 0;
}

static int p_free(void *ud, uint64_t addr)
{
    profiler_t *p = ud;
    uint64_t i = (addr - ADDR_BASE) / ADDR_STEP;
    if (addr < ADDR_BASE || (addr - ADDR_BASE) % ADDR_STEP != 0 || i >= p->n ||
        p->sizes[i] == 0) {
        p->bad_frees++;
        return FSC_EINVAL;
    }
    p->live -= p->sizes[i];
    p->sizes[i] = 0;
    p->steps[p->cur].frees++;
    return 0;
}

static void p_push(void *ud, const char *name)
{
    profiler_t *p = ud;
    (void)name;
    if (++p->depth > p->max_depth)
        p->max_depth = p->depth;
}

static void p_pop(void *ud)
{
    profiler_t *p = ud;
    if (p->depth == 0)
        p->bad_pops++;
    else
        p->depth--;
}

static void p_mark(void *ud, const char *text)
{
    profiler_t *p = ud;
    (void)text;
    p->steps[p->cur].live_end = p->live;
    p->marks++;
    if (p->cur < p->nsteps)
        p->cur++;
    p->steps[p->cur].peak_live = p->live;
}

static double gib(uint64_t b)
{
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

int fsc_workload_profile(const char *name, int steps, uint64_t seed, FILE *out,
                         fsc_err_t *err)
{
    if (fsc_workload_describe(name) == NULL)
        return fsc_err_set(err, FSC_ENOENT, "unknown workload '%s' (workloads: %s)",
                           name ? name : "", fsc_workload_names());
    if (steps < 0)
        return fsc_err_set(err, FSC_EINVAL, "workload %s: negative step count", name);
    profiler_t p;
    memset(&p, 0, sizeof p);
    p.nsteps = steps;
    p.steps = calloc((size_t)steps + 1, sizeof *p.steps);
    if (p.steps == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    fsc_workload_ops_t ops = {&p, p_alloc, p_free, p_push, p_pop, p_mark};
    fsc_workload_result_t res;
    int rc = fsc_workload_run(name, steps, seed, &ops, &res, err);
    p.steps[p.cur].live_end = p.live;

    fprintf(out, "workload %s: %d steps, seed %llu\n", name, steps, (unsigned long long)seed);
    fprintf(out, "%-6s %8s %8s %16s %16s %16s\n", "step", "allocs", "frees", "alloc_bytes",
            "peak_live", "live_at_end");
    uint64_t tot_a = 0, tot_f = 0;
    for (int i = 0; i <= p.cur; i++) {
        step_stats_t *s = &p.steps[i];
        char label[16];
        if (i == 0)
            snprintf(label, sizeof label, "init");
        else
            snprintf(label, sizeof label, "%d", i - 1);
        fprintf(out, "%-6s %8llu %8llu %16llu %16llu %16llu\n", label,
                (unsigned long long)s->allocs, (unsigned long long)s->frees,
                (unsigned long long)s->bytes, (unsigned long long)s->peak_live,
                (unsigned long long)s->live_end);
        tot_a += s->allocs;
        tot_f += s->frees;
    }
    fprintf(out, "total: %llu allocs, %llu frees\n", (unsigned long long)tot_a,
            (unsigned long long)tot_f);
    fprintf(out, "peak live: %llu bytes (%.2f GiB) in step %d\n",
            (unsigned long long)p.peak_live, gib(p.peak_live), p.peak_step);
    fprintf(out, "live at end: %llu buffers, %llu bytes (%.2f GiB)\n",
            (unsigned long long)res.live_count, (unsigned long long)res.live_bytes,
            gib(res.live_bytes));
    fprintf(out, "tags: max depth %d, final depth %d, bad pops %d; markers %d; bad frees %d\n",
            p.max_depth, p.depth, p.bad_pops, p.marks, p.bad_frees);
    fprintf(out, "size classes (allocations in [2^k, 2^(k+1)) bytes):\n");
    for (int c = 0; c < NCLASS; c++)
        if (p.cls[c] != 0)
            fprintf(out, "  2^%-2d %8llu  %5.1f%%\n", c, (unsigned long long)p.cls[c],
                    tot_a ? 100.0 * (double)p.cls[c] / (double)tot_a : 0.0);
    if (rc != 0)
        fprintf(out, "failed: %s\n", fsc_err_msg(err));
    free(p.steps);
    free(p.sizes);
    return rc;
}
