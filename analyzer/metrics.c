/*
 * metrics.c — the formulas of docs/metrics.md, written once: the analyzer's
 * summary, timeline and OOM diagnosis and the what-if replays all compute
 * their ratios, fragmentation and size bins here, so a figure means the
 * same wherever it is shown.
 */
#include "fragscope/analyzer.h"

double fsc_metric_ratio(uint64_t num, uint64_t den)
{
    return den == 0 ? 0.0 : (double)num / (double)den;
}

double fsc_metric_external_frag(uint64_t largest_free, uint64_t free_bytes)
{
    return free_bytes ? 1.0 - fsc_metric_ratio(largest_free, free_bytes) : 0.0;
}

uint64_t fsc_metric_unallocated(uint64_t reserved, uint64_t allocated)
{
    return reserved >= allocated ? reserved - allocated : 0;
}

int fsc_metric_bin(uint64_t size)
{
    int k = 0;
    for (uint64_t s = size >> 10; s != 0 && k < FSC_METRIC_BINS - 1; s >>= 1)
        k++;
    return k;
}
