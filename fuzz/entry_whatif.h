/*
 * entry_whatif.h — the what-if replay on arbitrary request streams.
 * Part of the fuzz entry points (fuzz_entry.h).
 */
#ifndef FSC_FUZZ_ENTRY_WHATIF_H
#define FSC_FUZZ_ENTRY_WHATIF_H

#include "fuzz_common.h"

/* ---- what-if replay of arbitrary request streams -------------------------
 * The allocator and the replay on request streams no program would make:
 *   byte 0: the setting replayed (table below), bit 3: stop at the first OOM
 *   byte 1: the capacity, 0 = unlimited, else 2^(20 + b % 24) bytes
 *   then 9-byte records, op byte + u64 LE value v:
 *     op % 8 = 0..3  allocate v >> (v & 63) bytes (any magnitude) on
 *                    stream (op >> 4) & 3
 *              4     free a live block (v picks it)
 *              5     request its free; it completes at a later op 6
 *              6     complete a pending free (v picks it)
 *              7     v % 3: empty_cache, a marker, a recorded OOM of the
 *                    size above */

static const char *const k_fsc_fuzz_configs[] = {
    "",
    "max_split_size_mb:64",
    "expandable_segments:True",
    "garbage_collection_threshold:0.6,max_split_size_mb:128",
    "roundup_power2_divisions:[256:1,512:2,>:4]",
    "expandable_segments:True,garbage_collection_threshold:0.8",
    "roundup_power2_divisions:8,max_non_split_rounding_mb:64",
    "max_split_size_mb:20",
};

#define FSC__FUZZ_LIVE 1024

static inline int fsc_fuzz_whatif(const uint8_t *data, size_t len)
{
    if (len < 2)
        return 0;
    const char *config = k_fsc_fuzz_configs[data[0] & 7u];
    uint64_t capacity = data[1] == 0 ? 0 : (uint64_t)1 << (20 + data[1] % 24);
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err;
    if (fsc_request_stream_create(&rs, &err) != 0)
        return 0;
    uint64_t live[FSC__FUZZ_LIVE], pending[FSC__FUZZ_LIVE];
    uint64_t live_size[FSC__FUZZ_LIVE], pending_size[FSC__FUZZ_LIVE];
    size_t nlive = 0, npending = 0;
    uint64_t next_addr = 0x10000, t = 0;
    int ok = 1;
    for (size_t off = 2; ok && off + 9 <= len; off += 9) {
        uint8_t op = data[off];
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
            v = v << 8 | data[off + 1 + i];
        uint64_t size = v >> (v & 63);
        fsc_event_t ev;
        memset(&ev, 0, sizeof ev);
        ev.time_ns = ++t;
        switch (op % 8) {
        case 4:
        case 5:
            if (nlive == 0)
                continue;
            {
                size_t i = (size_t)(v % nlive);
                ev.type = FSC_EV_FREE_REQUESTED;
                ev.addr = live[i];
                ev.size = ev.requested = live_size[i];
                ok = fsc_request_stream_add(rs, &ev, &err) == 0;
                if (op % 8 == 4) {
                    ev.type = FSC_EV_FREE_COMPLETED;
                    ok = ok && fsc_request_stream_add(rs, &ev, &err) == 0;
                } else if (npending < FSC__FUZZ_LIVE) {
                    pending[npending] = live[i];
                    pending_size[npending++] = live_size[i];
                }
                live[i] = live[--nlive];
                live_size[i] = live_size[nlive];
            }
            break;
        case 6:
            if (npending == 0)
                continue;
            {
                size_t i = (size_t)(v % npending);
                ev.type = FSC_EV_FREE_COMPLETED;
                ev.addr = pending[i];
                ev.size = ev.requested = pending_size[i];
                ok = fsc_request_stream_add(rs, &ev, &err) == 0;
                pending[i] = pending[--npending];
                pending_size[i] = pending_size[npending];
            }
            break;
        case 7:
            if (v % 3 == 0) {
                ev.type = FSC_EV_EMPTY_CACHE;
            } else if (v % 3 == 1) {
                ev.type = FSC_EV_MARKER;
                ev.text = "step";
                ev.text_len = 4;
            } else {
                ev.type = FSC_EV_OOM;
                ev.size = ev.requested = size;
                ev.stream = (op >> 4) & 3u;
            }
            ok = fsc_request_stream_add(rs, &ev, &err) == 0;
            break;
        default:
            if (nlive == FSC__FUZZ_LIVE)
                continue;
            ev.type = FSC_EV_ALLOC;
            ev.addr = next_addr;
            ev.size = ev.requested = size;
            ev.stream = (op >> 4) & 3u;
            next_addr += 512;
            live[nlive] = ev.addr;
            live_size[nlive++] = size;
            ok = fsc_request_stream_add(rs, &ev, &err) == 0;
            break;
        }
    }
    if (ok) {
        fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
        o.capacity = capacity;
        o.past_oom = (data[0] & 8u) == 0;
        fsc_whatif_result_t r;
        int rc = fsc_whatif_replay(rs, config, &o, &r, &err);
        if (rc != 0)
            fprintf(stderr, "replay failed: %s\n", err.msg);
        FSC_FUZZ_ASSERT(rc == 0 || rc == FSC_ENOMEM);
        if (rc == 0) {
            fsc_request_stream_info_t info;
            FSC_FUZZ_ASSERT(fsc_request_stream_info(rs, &info) == 0);
            FSC_FUZZ_ASSERT(r.ops_replayed <= info.ops);
            FSC_FUZZ_ASSERT(r.peak_allocated <= r.peak_reserved);
            /* An OOM the allocator counted is a failed request. (Not the
             * converse: a request of 1 EB or more fails before the OOM path,
             * uncounted, as in PyTorch.) */
            FSC_FUZZ_ASSERT(r.num_ooms == 0 || r.oom);
            if (capacity != 0 && strstr(config, "expandable") == NULL)
                FSC_FUZZ_ASSERT(r.peak_reserved <= capacity);
        }
    }
    fsc_request_stream_destroy(rs);
    return 0;
}

#endif
