/*
 * oom_external.c — the rule that calls an OOM `external` (fragscope/
 * analyzer.h, docs/metrics.md "Memory outside the allocator"), in a file of
 * its own so that the analyzer's diagnosis and whatif's advice read the
 * same figures the same way: an OOM whose cause is external gets no
 * allocator setting from either.
 */
#include <stdint.h>

#include "fragscope/analyzer.h"

int fsc_oom_external(const fsc_oom_state_t *st, int capacity_known, int *device_limited,
                     uint64_t *external, int *external_known)
{
    if (st->device_free == UINT64_MAX || st->device_free >= st->segment_size)
        return 0;
    /* The device had less free memory than the segment: it was the limit,
     * unless a recorded cap refused first. Memory outside the allocator is
     * the cause when this allocator's reserved bytes do not explain the
     * shortfall: total − free − reserved >= segment − free, i.e. the device
     * has at least reserved + segment. */
    int limited = capacity_known ? st->reserved + st->segment_size <= st->capacity : 1;
    int known = 0;
    *device_limited = limited;
    if (st->device_total != 0) {
        known = *external_known = 1;
        *external = st->device_total > st->device_free + st->reserved
                        ? st->device_total - st->device_free - st->reserved
                        : 0;
    }
    return limited && (!known || st->device_total >= st->reserved + st->segment_size);
}
