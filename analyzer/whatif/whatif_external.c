/*
 * whatif_external.c — which recorded OOMs were caused by memory outside
 * the allocator, read from the OOM events the way the analyzer reads them
 * (fsc_oom_external), so that `whatif --suggest` offers no allocator
 * setting for an OOM that `report` diagnoses `external`.
 *
 * The stream does not replay the recording's own allocator: reserved at the
 * OOM is the OOM event's figure when the recorder gave one, else the
 * reserved bytes the recorded segment events add up to, as the analyzer's
 * replay counts them.
 */
#include "fragscope/allocator.h"
#include "fragscope/analyzer.h"
#include "whatif_internal.h"

void fsc__wstream_note_oom(fsc_request_stream_t *rs, const fsc_event_t *ev)
{
    uint64_t rounded = ev->size ? ev->size : ev->requested;
    int cap_unknown = (rs->flags & FSC_TRACE_F_CAPACITY_UNKNOWN) != 0;
    fsc_oom_state_t st = ev->oom;
    st.reserved = ev->oom.reserved ? ev->oom.reserved : rs->cur_reserved;
    if (st.segment_size == 0)
        st.segment_size = fsc_alloc_segment_size(rounded);
    if (st.device_total == 0)
        st.device_total = rs->device_total;
    if (st.capacity == 0)
        st.capacity = rs->capacity;
    int known = !cap_unknown && st.capacity != 0;
    /* oversize comes first, as in the diagnosis: no device could serve it */
    uint64_t limit = known ? st.capacity : st.device_total;
    if ((limit != 0 && rounded > limit) || (st.device_total != 0 && rounded > st.device_total))
        return;
    int limited = 0, ext_known = 0;
    uint64_t ext = 0;
    if (!fsc_oom_external(&st, known, &limited, &ext, &ext_known))
        return;
    if (rs->info.external_ooms++ == 0) {
        rs->info.first_external_oom = (int64_t)rs->info.recorded_ooms - 1;
        rs->info.external_bytes_known = ext_known;
        rs->info.external_bytes = ext;
    }
}
