/*
 * stats.c — a memory_summary()-like table of PyTorch's memory_stats()
 * counters (the counters themselves are updated inline, see internal.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct out {
    char *buf;
    size_t cap, len;
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static void bytes_row(out_t *o, const char *name, const fsc_stat_t *arr)
{
    static const char *const sub[FSC_STAT_N] = {"", "  from large pool", "  from small pool"};
    static const int order[FSC_STAT_N] = {FSC_STAT_ALL, FSC_STAT_LARGE, FSC_STAT_SMALL};
    for (int k = 0; k < FSC_STAT_N; k++) {
        const fsc_stat_t *s = &arr[order[k]];
        char c[32], p[32], al[32], fr[32];
        fsc_size_format((uint64_t)(s->current < 0 ? 0 : s->current), c, sizeof c);
        fsc_size_format((uint64_t)(s->peak < 0 ? 0 : s->peak), p, sizeof p);
        fsc_size_format((uint64_t)(s->allocated < 0 ? 0 : s->allocated), al, sizeof al);
        fsc_size_format((uint64_t)(s->freed < 0 ? 0 : s->freed), fr, sizeof fr);
        put(o, "| %-26s | %12s | %12s | %12s | %12s |\n", k == 0 ? name : sub[k], c, p, al, fr);
    }
}

static void count_row(out_t *o, const char *name, const fsc_stat_t *arr)
{
    static const char *const sub[FSC_STAT_N] = {"", "  from large pool", "  from small pool"};
    static const int order[FSC_STAT_N] = {FSC_STAT_ALL, FSC_STAT_LARGE, FSC_STAT_SMALL};
    for (int k = 0; k < FSC_STAT_N; k++) {
        const fsc_stat_t *s = &arr[order[k]];
        put(o, "| %-26s | %12lld | %12lld | %12lld | %12lld |\n", k == 0 ? name : sub[k],
            (long long)s->current, (long long)s->peak, (long long)s->allocated,
            (long long)s->freed);
    }
}

int fsc_alloc_stats_format(const fsc_alloc_stats_t *s, char *buf, size_t cap)
{
    if (s == NULL || buf == NULL || cap == 0)
        return FSC_EINVAL;
    out_t o = {buf, cap, 0};
    buf[0] = '\0';
    static const char rule[] =
        "|============================================================================"
        "=============|\n";
    static const char line[] =
        "|----------------------------------------------------------------------------"
        "-------------|\n";
    put(&o, "%s", rule);
    put(&o, "|                  fragscope allocator memory summary                   "
            "                 |\n");
    put(&o, "%s", line);
    put(&o, "|            num_alloc_retries: %-10lld |                 num_ooms: %-10lld    "
            "     |\n",
        (long long)s->num_alloc_retries, (long long)s->num_ooms);
    put(&o, "%s", rule);
    put(&o, "| %-26s | %12s | %12s | %12s | %12s |\n", "Metric", "Cur Usage", "Peak Usage",
        "Tot Alloc", "Tot Freed");
    put(&o, "%s", line);
    bytes_row(&o, "Allocated memory", s->allocated_bytes);
    put(&o, "%s", line);
    bytes_row(&o, "Active memory", s->active_bytes);
    put(&o, "%s", line);
    bytes_row(&o, "Requested memory", s->requested_bytes);
    put(&o, "%s", line);
    bytes_row(&o, "GPU reserved memory", s->reserved_bytes);
    put(&o, "%s", line);
    bytes_row(&o, "Non-releasable memory", s->inactive_split_bytes);
    put(&o, "%s", line);
    count_row(&o, "Allocations", s->allocation);
    put(&o, "%s", line);
    count_row(&o, "Active allocs", s->active);
    put(&o, "%s", line);
    count_row(&o, "GPU reserved segments", s->segment);
    put(&o, "%s", line);
    count_row(&o, "Non-releasable allocs", s->inactive_split);
    put(&o, "%s", line);
    put(&o, "| %-26s | %12lld | %12lld | %12lld | %12lld |\n", "Oversize allocations",
        (long long)s->oversize_allocations.current, (long long)s->oversize_allocations.peak,
        (long long)s->oversize_allocations.allocated, (long long)s->oversize_allocations.freed);
    put(&o, "| %-26s | %12lld | %12lld | %12lld | %12lld |\n", "Oversize GPU segments",
        (long long)s->oversize_segments.current, (long long)s->oversize_segments.peak,
        (long long)s->oversize_segments.allocated, (long long)s->oversize_segments.freed);
    put(&o, "%s", rule);
    if (o.len >= cap) {
        buf[cap - 1] = '\0';
        return FSC_ELIMIT;
    }
    return 0;
}
