/*
 * device_sample.c — DEVICE_MEMORY samples: the device's free and total bytes
 * (the backend's cudaMemGetInfo, or the sim's capacity less what others
 * took) handed to the sink with the events, so that the analyzer can tell
 * the memory outside this allocator (total − free − reserved) over time and
 * at each OOM. Taken after each segment allocation and at each OOM when
 * enabled, and at the first call after the interval when one is set; never
 * by a thread of its own, so an idle allocator costs nothing.
 */
#include <time.h>

#include "internal.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fsc__device_sample(fsc_allocator_t *a)
{
    if (a->sink == NULL || !(a->sample_device || a->sample_interval_ns) ||
        a->be->ops->mem_info == NULL)
        return;
    fsc_event_t ev = {0};
    ev.type = FSC_EV_DEVICE_MEMORY;
    ev.oom.device_free = UINT64_MAX;
    a->be->ops->mem_info(a->be, &ev.oom.device_free, &ev.oom.device_total);
    if (a->sample_interval_ns)
        a->last_sample_ns = now_ns();
    a->sink(a->sink_ud, &ev);
}

void fsc__device_sample_due(fsc_allocator_t *a)
{
    if (a->sample_interval_ns == 0 || a->sink == NULL)
        return;
    uint64_t t = now_ns();
    if (t - a->last_sample_ns >= a->sample_interval_ns)
        fsc__device_sample(a);
}

int fsc_allocator_sample_device(fsc_allocator_t *a, int on, uint64_t interval_ns)
{
    if (a == NULL)
        return FSC_EINVAL;
    pthread_mutex_lock(&a->mu);
    a->sample_device = on != 0;
    a->sample_interval_ns = interval_ns;
    a->last_sample_ns = 0;
    pthread_mutex_unlock(&a->mu);
    return 0;
}
