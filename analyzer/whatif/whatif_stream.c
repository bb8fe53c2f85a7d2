/*
 * whatif_stream.c — extracting the request stream from recorded events.
 *
 * Only what the program asked for becomes an operation: ALLOC (its
 * requested size, not the block size, since the block size is the recorded
 * allocator's decision), FREE_REQUESTED, a FREE_COMPLETED that came later
 * than its request (record_stream), EMPTY_CACHE, MARKER, and OOM events,
 * which were requests too. Everything else only feeds the figures of the
 * recording that a replay with the run's own settings is checked against.
 */
#include <stdlib.h>
#include <string.h>

#include "fragscope/frames.h"
#include "whatif_cursor.h"

static int oom_host(fsc_err_t *err)
{
    return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
}

/* ---- create / destroy -------------------------------------------------------- */

int fsc__wstream_pool_index(fsc_request_stream_t *rs, uint64_t id, uint32_t *index1)
{
    uint64_t v;
    if (fsc__u64map_get(&rs->pool_index, id, &v)) {
        *index1 = (uint32_t)v;
        return 0;
    }
    if (rs->npools >= UINT32_MAX - 2 ||
        FSC__VEC_RESERVE(rs->pool_ids, rs->cap_pools, rs->npools + 1) != 0 ||
        fsc__u64map_put(&rs->pool_index, id, rs->npools + 1) != 0)
        return FSC_ENOMEM;
    rs->pool_ids[rs->npools++] = id;
    *index1 = (uint32_t)rs->npools;
    return 0;
}

int fsc_request_stream_create(fsc_request_stream_t **out, fsc_err_t *err)
{
    if (out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no output handle");
    fsc_request_stream_t *rs = calloc(1, sizeof *rs);
    if (rs == NULL)
        return oom_host(err);
    fsc__wstore_init(&rs->store);
    rs->config = strdup("");
    /* Node 0 is the root; the pool's offset 0 is the empty string. */
    if (rs->config == NULL || FSC__VEC_RESERVE(rs->tags, rs->cap_tags, 1) != 0 ||
        FSC__VEC_RESERVE(rs->strings, rs->cap_strings, 1) != 0) {
        fsc_request_stream_destroy(rs);
        return oom_host(err);
    }
    memset(&rs->tags[0], 0, sizeof rs->tags[0]);
    rs->ntags = 1;
    rs->strings[0] = '\0';
    rs->nstrings = 1;
    rs->info.first_external_oom = -1;
    *out = rs;
    return 0;
}

void fsc_request_stream_destroy(fsc_request_stream_t *rs)
{
    if (rs == NULL)
        return;
    fsc__wstore_free(&rs->store);
    free(rs->slots);
    free(rs->free_slots);
    free(rs->seeds);
    free(rs->sizes_before);
    free(rs->guesses);
    free(rs->rebuild_text);
    free(rs->seed_pending);
    free(rs->seed_bases);
    free(rs->seg_pool);
    free(rs->fb_ids);
    free(rs->pool_only);
    free(rs->strings);
    free(rs->tags);
    free(rs->segs);
    free(rs->script_addrs);
    free(rs->script_sizes);
    free(rs->va_bases);
    fsc__wpools_free(rs);
    free(rs->pool_ids);
    free(rs->streams);
    free(rs->config);
    fsc__u64map_free(&rs->live);
    fsc__u64map_free(&rs->pending);
    fsc__u64map_free(&rs->pool_index);
    free(rs);
}

int fsc_request_stream_set_header(fsc_request_stream_t *rs, const fsc_trace_header_t *hdr,
                                  fsc_err_t *err)
{
    if (rs == NULL || hdr == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no stream or header");
    char *c = strdup(hdr->config != NULL ? hdr->config : "");
    if (c == NULL)
        return oom_host(err);
    free(rs->config);
    rs->config = c;
    rs->capacity = hdr->capacity;
    rs->device_total = hdr->device_total;
    rs->flags = hdr->flags;
    if (fsc_alloc_config_parse(rs->config, &rs->rec_cfg, NULL) != 0) {
        fsc_alloc_config_t d = FSC_ALLOC_CONFIG_DEFAULT;
        rs->rec_cfg = d;
    }
    /* The events up to the history marker are the state the recording
     * began in, adopted by each replay (fsc__wseed_t). */
    rs->seeding = (hdr->flags & FSC_TRACE_F_RECONSTRUCTED) != 0;
    return 0;
}

static int add_string(fsc_request_stream_t *rs, const char *s, size_t len, uint64_t *off)
{
    if (FSC__VEC_RESERVE(rs->strings, rs->cap_strings, rs->nstrings + len + 1) != 0)
        return FSC_ENOMEM;
    *off = rs->nstrings;
    if (len > 0)
        memcpy(rs->strings + rs->nstrings, s, len);
    rs->strings[rs->nstrings + len] = '\0';
    rs->nstrings += len + 1;
    return 0;
}

int fsc_request_stream_define_tag(fsc_request_stream_t *rs, uint32_t node, uint32_t parent,
                                  const char *name, size_t len, fsc_err_t *err)
{
    if (rs == NULL || node == 0 || (name == NULL && len > 0))
        return fsc_err_set(err, FSC_EINVAL, "what-if: bad tag node %u", node);
    if (FSC__VEC_RESERVE(rs->tags, rs->cap_tags, (size_t)node + 1) != 0)
        return oom_host(err);
    while (rs->ntags <= node)
        memset(&rs->tags[rs->ntags++], 0, sizeof rs->tags[0]);
    uint64_t off;
    if (add_string(rs, name, len, &off) != 0)
        return oom_host(err);
    rs->tags[node].parent = parent < node ? parent : 0;
    rs->tags[node].name_off = (uint32_t)off;
    rs->tags[node].name_len = (uint32_t)len;
    return 0;
}

/* The names from node up to the root, innermost first. Parents always
 * have smaller ids, so the walk ends. */
static size_t tag_chain(const fsc_request_stream_t *rs, uint32_t node, const char **names,
                        size_t *lens)
{
    size_t n = 0;
    while (node != 0 && node < rs->ntags && n < FSC_FRAME_LABEL_WALK) {
        const fsc__wtag_t *t = &rs->tags[node];
        names[n] = rs->strings + t->name_off;
        lens[n++] = t->name_len;
        node = t->parent;
    }
    return n;
}

int fsc_request_stream_tag_label(const fsc_request_stream_t *rs, uint32_t node, uint32_t other,
                                 int all_frames, int depth, char *buf, size_t cap)
{
    if (cap == 0)
        return FSC_EINVAL;
    buf[0] = '\0';
    if (rs == NULL || node == 0)
        return 0;
    const char **names = malloc(2 * FSC_FRAME_LABEL_WALK * sizeof *names);
    size_t *lens = malloc(2 * FSC_FRAME_LABEL_WALK * sizeof *lens);
    int rc = FSC_ENOMEM;
    if (names != NULL && lens != NULL) {
        size_t na = tag_chain(rs, node, names, lens);
        if (other == 0 || other == node) {
            rc = fsc_frame_label(names, lens, na, all_frames, depth, buf, cap);
        } else {
            const char **bn = names + FSC_FRAME_LABEL_WALK;
            size_t *bl = lens + FSC_FRAME_LABEL_WALK;
            size_t nb = tag_chain(rs, other, bn, bl);
            rc = fsc_frame_label_apart(names, lens, na, bn, bl, nb, all_frames, depth, buf, cap);
        }
    }
    free(names);
    free(lens);
    return rc;
}

/* ---- adding events ------------------------------------------------------------- */

/* A slot for a live request (whatif_internal.h): a freed one first. */
static int slot_take(fsc_request_stream_t *rs, uint64_t id, uint64_t requested, uint64_t *slot)
{
    if (rs->nfree_slots > 0) {
        *slot = rs->free_slots[--rs->nfree_slots];
    } else {
        if (FSC__VEC_RESERVE(rs->slots, rs->cap_slots, rs->nslots + 1) != 0)
            return FSC_ENOMEM;
        *slot = rs->nslots++;
    }
    rs->slots[*slot].id = id;
    rs->slots[*slot].requested = requested;
    return 0;
}

/* No later op names the slot: a new request may take it. */
static int slot_give(fsc_request_stream_t *rs, uint64_t slot)
{
    if (FSC__VEC_RESERVE(rs->free_slots, rs->cap_free_slots, rs->nfree_slots + 1) != 0)
        return FSC_ENOMEM;
    rs->free_slots[rs->nfree_slots++] = slot;
    return 0;
}

static int note_stream(fsc_request_stream_t *rs, uint64_t stream)
{
    for (size_t i = 0; i < rs->nstreams; i++)
        if (rs->streams[i] == stream)
            return 0;
    if (FSC__VEC_RESERVE(rs->streams, rs->cap_streams, rs->nstreams + 1) != 0)
        return FSC_ENOMEM;
    rs->streams[rs->nstreams++] = stream;
    return 0;
}

/* The release burst still open: its op when it is the last op pushed. */
static fsc__wop_t *open_release(fsc_request_stream_t *rs)
{
    if (rs->open_release == 0 || rs->open_release != rs->nops)
        return NULL;
    return fsc__wops_last(rs);
}

static int add_release(fsc_request_stream_t *rs, const fsc_event_t *ev)
{
    fsc__wop_t *r = open_release(rs);
    if (r == NULL || rs->release_seen_seg) {
        const fsc__wop_t *last = fsc__wops_last(rs);
        uint8_t explained = last != NULL && last->kind == FSC__WOP_EMPTY;
        int rc = fsc__wops_push(rs, FSC__WOP_RELEASE, rs->cur_reserved, &r);
        if (rc != 0)
            return rc;
        rs->nreleases++;
        if (explained)
            r->flags |= FSC__WOP_F_EXPLAINED;
        rs->open_release = rs->nops;
        rs->release_seen_seg = 0;
    }
    (void)ev;
    return 0;
}

static int add_alloc(fsc_request_stream_t *rs, const fsc_event_t *ev, int recorded_oom)
{
    if (recorded_oom) {
        fsc__wop_t *r = open_release(rs);
        if (r != NULL && !rs->release_seen_seg)
            r->flags |= FSC__WOP_F_EXPLAINED; /* the retry before the failure */
    }
    uint64_t id = rs->nallocs;
    fsc__wop_t *op;
    int rc = note_stream(rs, ev->stream);
    if (rc != 0 || (rc = fsc__wops_push(rs, FSC__WOP_ALLOC, ev->requested, &op)) != 0)
        return rc;
    op->stream = ev->stream;
    op->seg = fsc__wpools_alloc_seg(rs);
    op->tag = ev->tag;
    if (ev->pool_id != 0 && (rc = fsc__wstream_pool_index(rs, ev->pool_id, &op->pool)) != 0)
        return rc;
    op->addr = recorded_oom ? 0 : ev->addr;
    rs->nallocs++;
    rs->info.allocs++;
    rs->ends_at_oom = recorded_oom;
    if (recorded_oom) {
        uint64_t seg = ev->oom.segment_size ? ev->oom.segment_size
                                            : fsc_alloc_segment_size(ev->size ? ev->size
                                                                              : ev->requested);
        rs->oom_upper = rs->cur_reserved + seg;
        op->flags |= FSC__WOP_F_RECORDED_OOM;
        rs->info.recorded_ooms++;
        return 0;
    }
    if (rs->map_waiting) {
        /* the mappings just before were made for this request */
        uint64_t need = rs->map_before +
                        fsc_alloc_segment_size(fsc_alloc_round_size(&rs->rec_cfg, ev->requested));
        if (need > rs->cap_floor)
            rs->cap_floor = need;
        rs->map_waiting = 0;
    }
    uint64_t old, slot;
    if (fsc__u64map_get(&rs->live, ev->addr, &old)) {
        /* The recording never freed the previous block here (a lost event):
         * its free cannot be replayed either, and no op names it again. */
        rs->info.skipped++;
        rs->cur_requested -= rs->slots[old].requested;
        if (slot_give(rs, old) != 0)
            return FSC_ENOMEM;
    }
    if (slot_take(rs, id, ev->requested, &slot) != 0 ||
        fsc__u64map_put(&rs->live, ev->addr, slot) != 0)
        return FSC_ENOMEM;
    op->slot = slot;
    rs->cur_requested += ev->requested;
    if (rs->cur_requested > rs->info.peak_requested)
        rs->info.peak_requested = rs->cur_requested;
    rs->cur_allocated += ev->size;
    if (rs->cur_allocated > rs->info.recorded_peak_allocated)
        rs->info.recorded_peak_allocated = rs->cur_allocated;
    return 0;
}

static int add_free(fsc_request_stream_t *rs, const fsc_event_t *ev)
{
    uint64_t slot;
    if (!fsc__u64map_del(&rs->live, ev->addr, &slot)) {
        rs->info.skipped++;
        return 0;
    }
    rs->cur_allocated -= ev->size <= rs->cur_allocated ? ev->size : rs->cur_allocated;
    rs->cur_requested -= rs->slots[slot].requested;
    rs->slots[slot].requested = 0;
    fsc__wop_t *op;
    int rc = fsc__wops_push(rs, FSC__WOP_FREE, rs->slots[slot].id, &op);
    if (rc != 0)
        return rc;
    op->slot = slot;
    /* Delayed until FREE_COMPLETED proves otherwise by following at once. */
    op->flags |= FSC__WOP_F_DELAYED;
    rs->info.frees++;
    rs->info.delayed_frees++;
    uint64_t old;
    if (fsc__u64map_get(&rs->pending, ev->addr, &old) && slot_give(rs, old) != 0)
        return FSC_ENOMEM; /* that free's completion can no longer be told apart */
    return fsc__u64map_put(&rs->pending, ev->addr, slot);
}

static int add_complete(fsc_request_stream_t *rs, const fsc_event_t *ev)
{
    uint64_t slot;
    if (!fsc__u64map_del(&rs->pending, ev->addr, &slot))
        return 0; /* completion of a free that was skipped */
    uint64_t id = rs->slots[slot].id;
    fsc__wop_t *last = fsc__wops_last(rs);
    if (last != NULL && last->kind == FSC__WOP_FREE && last->arg == id) {
        last->flags &= (uint8_t)~FSC__WOP_F_DELAYED;
        rs->info.delayed_frees--;
        return slot_give(rs, slot);
    }
    fsc__wop_t *op;
    int rc = fsc__wops_push(rs, FSC__WOP_COMPLETE, id, &op);
    if (rc != 0)
        return rc;
    op->slot = slot;
    return slot_give(rs, slot);
}

static int add_segment(fsc_request_stream_t *rs, const fsc_event_t *ev)
{
    if (ev->type == FSC_EV_SEGMENT_MAP && !rs->map_waiting) {
        rs->map_waiting = 1;
        rs->map_before = rs->cur_reserved;
    }
    if (FSC__VEC_RESERVE(rs->segs, rs->cap_segs, rs->nsegs + 1) != 0)
        return FSC_ENOMEM;
    rs->segs[rs->nsegs].type = ev->type;
    rs->segs[rs->nsegs].addr = ev->type == FSC_EV_SEGMENT_MAP ? ev->segment : ev->addr;
    rs->segs[rs->nsegs].size = ev->size;
    rs->nsegs++;
    rs->info.recorded_segments++;
    if (ev->type == FSC_EV_SEGMENT_MAP) {
        size_t k = 0;
        while (k < rs->nva && rs->va_bases[k] != ev->segment)
            k++;
        /* an address space of the starting state is adopted, not reserved */
        for (size_t i = 0; k == rs->nva && i < rs->nseed_bases; i++)
            if (rs->seed_bases[i] == ev->segment)
                k = SIZE_MAX;
        if (k == rs->nva) {
            if (FSC__VEC_RESERVE(rs->va_bases, rs->cap_va, rs->nva + 1) != 0)
                return FSC_ENOMEM;
            rs->va_bases[rs->nva++] = ev->segment;
        }
    }
    if (ev->type == FSC_EV_SEGMENT_ALLOC) {
        if (FSC__VEC_RESERVE(rs->script_addrs, rs->cap_script, rs->nscript + 1) != 0 ||
            FSC__VEC_RESERVE(rs->script_sizes, rs->cap_script_sizes, rs->nscript + 1) != 0)
            return FSC_ENOMEM;
        rs->script_addrs[rs->nscript] = ev->addr;
        rs->script_sizes[rs->nscript] = ev->size;
        rs->nscript++;
    }
    rs->cur_reserved += ev->size;
    if (rs->cur_reserved > rs->info.recorded_peak_reserved)
        rs->info.recorded_peak_reserved = rs->cur_reserved;
    return 0;
}

/* ---- the starting state -------------------------------------------------------- */

static int seed_push(fsc_request_stream_t *rs, const fsc__wseed_t *sd)
{
    if (FSC__VEC_RESERVE(rs->seeds, rs->cap_seeds, rs->nseeds + 1) != 0)
        return FSC_ENOMEM;
    rs->seeds[rs->nseeds++] = *sd;
    return 0;
}

static void note_reserved(fsc_request_stream_t *rs, uint64_t size)
{
    rs->cur_reserved += size;
    if (rs->cur_reserved > rs->info.recorded_peak_reserved)
        rs->info.recorded_peak_reserved = rs->cur_reserved;
}

/* One event of the starting state: *taken = 1 when it is the state's
 * (a segment, mapping, split or live block), 0 when it is read as usual
 * (a record, a pending free, the history marker, which ends the state). */
static int add_seed(fsc_request_stream_t *rs, const fsc_event_t *ev, int *taken)
{
    static const char hist[] = FSC_TRACE_HISTORY_MARKER;
    *taken = 1;
    fsc__wseed_t sd;
    memset(&sd, 0, sizeof sd);
    sd.pool = ev->pool;
    sd.addr = ev->addr;
    sd.size = ev->size;
    sd.stream = ev->stream;
    sd.pool_id = ev->pool_id;
    switch (ev->type) {
    case FSC_EV_SEGMENT_ALLOC:
    case FSC_EV_SEGMENT_MAP:
        sd.kind = ev->type == FSC_EV_SEGMENT_MAP ? FSC__WSEED_MAPPING : FSC__WSEED_SEGMENT;
        sd.base = ev->type == FSC_EV_SEGMENT_MAP ? ev->segment : ev->addr;
        if (fsc__wpools_on_seed(rs, ev) != 0)
            return FSC_ENOMEM;
        sd.wseg = fsc__wpools_seg_of(rs, sd.base);
        if (seed_push(rs, &sd) != 0)
            return FSC_ENOMEM;
        if (sd.kind == FSC__WSEED_MAPPING) {
            size_t k = 0;
            while (k < rs->nseed_bases && rs->seed_bases[k] != sd.base)
                k++;
            if (k == rs->nseed_bases) {
                if (FSC__VEC_RESERVE(rs->seed_bases, rs->cap_seed_bases, k + 1) != 0)
                    return FSC_ENOMEM;
                rs->seed_bases[rs->nseed_bases++] = sd.base;
            }
        }
        note_reserved(rs, ev->size);
        rs->seed_reserved += ev->size;
        return 0;
    case FSC_EV_SPLIT:
        return 0; /* the blocks say where they are */
    case FSC_EV_ALLOC: {
        /* A block live at the start: alloc id and slot as a request's, so
         * that its free is an op like any other. */
        uint64_t id = rs->nallocs++, slot, old;
        rs->enc.allocs++;
        if (fsc__u64map_get(&rs->live, ev->addr, &old))
            return FSC_EINVAL; /* the importer never places two blocks at one address */
        if (slot_take(rs, id, ev->requested, &slot) != 0 ||
            fsc__u64map_put(&rs->live, ev->addr, slot) != 0)
            return FSC_ENOMEM;
        sd.kind = FSC__WSEED_BLOCK;
        sd.wseg = UINT32_MAX;
        sd.requested = ev->requested;
        sd.slot = slot;
        if (seed_push(rs, &sd) != 0)
            return FSC_ENOMEM;
        rs->nseed_blocks++;
        rs->cur_requested += ev->requested;
        if (rs->cur_requested > rs->info.peak_requested)
            rs->info.peak_requested = rs->cur_requested;
        rs->cur_allocated += ev->size;
        if (rs->cur_allocated > rs->info.recorded_peak_allocated)
            rs->info.recorded_peak_allocated = rs->cur_allocated;
        rs->seed_allocated += ev->size;
        return fsc__wpools_on_seed(rs, ev);
    }
    case FSC_EV_FREE_REQUESTED: {
        /* A block whose free was pending at the start (record_stream): its
         * FREE op follows the whole state, so that every block of the
         * state has its alloc id before any op is coded. */
        uint64_t slot;
        if (!fsc__u64map_get(&rs->live, ev->addr, &slot))
            return FSC_EINVAL;
        if (FSC__VEC_RESERVE(rs->seed_pending, rs->cap_seed_pending, rs->nseed_pending + 1) != 0)
            return FSC_ENOMEM;
        rs->seed_pending[rs->nseed_pending++] = *ev;
        return 0;
    }
    case FSC_EV_MARKER:
        if (ev->text != NULL && ev->text_len == sizeof hist - 1 &&
            memcmp(ev->text, hist, sizeof hist - 1) == 0) {
            int rc = fsc__wstream_end_seed(rs, NULL);
            if (rc != 0)
                return rc;
        }
        *taken = 0;
        return 0;
    default:
        *taken = 0;
        return 0;
    }
}

int fsc__wstream_end_seed(fsc_request_stream_t *rs, fsc_err_t *err)
{
    if (!rs->seeding)
        return 0;
    rs->seeding = 0;
    rs->window_first_event = rs->info.events;
    for (size_t i = 0; i < rs->nseed_pending; i++) {
        int rc = add_free(rs, &rs->seed_pending[i]);
        if (rc != 0)
            return err != NULL ? fsc_err_set(err, rc, "what-if: out of host memory") : rc;
    }
    rs->nseed_pending = 0;
    return 0;
}

int fsc_request_stream_add(fsc_request_stream_t *rs, const fsc_event_t *ev, fsc_err_t *err)
{
    if (rs == NULL || ev == NULL)
        return fsc_err_set(err, FSC_EINVAL, "what-if: no stream or event");
    int rc;
    if (rs->seeding) {
        int taken = 0;
        rc = add_seed(rs, ev, &taken);
        if (rc == FSC_ENOMEM)
            return oom_host(err);
        if (rc != 0)
            return fsc_err_set(err, rc, "what-if: the starting state has a block at 0x%llx "
                                        "that it does not place",
                               (unsigned long long)ev->addr);
        if (taken) {
            rs->info.events++;
            return 0;
        }
    }
    rc = fsc__wpools_on_event(rs, ev, 0);
    if (rc != 0)
        return oom_host(err);
    fsc__wop_t *op;
    switch (ev->type) {
    case FSC_EV_ALLOC:
        rc = add_alloc(rs, ev, 0);
        break;
    case FSC_EV_OOM:
        rc = add_alloc(rs, ev, 1);
        if (rc == 0)
            fsc__wstream_note_oom(rs, ev);
        break;
    case FSC_EV_FREE_REQUESTED:
        rc = add_free(rs, ev);
        break;
    case FSC_EV_FREE_COMPLETED:
        rc = add_complete(rs, ev);
        break;
    case FSC_EV_MARKER:
        /* The op carries the text a replay shows (up to its first NUL). */
        rc = fsc__wops_push(rs, FSC__WOP_MARKER, 0, &op);
        if (rc == 0 && ev->text != NULL) {
            size_t n = ev->text_len;
            const char *z = memchr(ev->text, '\0', n);
            if (z != NULL)
                n = (size_t)(z - ev->text);
            if (n > sizeof rs->tail_text - 1)
                n = sizeof rs->tail_text - 1;
            memcpy(rs->tail_text, ev->text, n);
            op->text_len = n;
        }
        rs->info.markers++;
        break;
    case FSC_EV_EMPTY_CACHE: {
        /* fragscope's allocator writes the event after the releases it
         * made; they are this call's, replayed by the EMPTY op. */
        fsc__wop_t *r = open_release(rs);
        if (r != NULL && !rs->release_seen_seg)
            r->flags |= FSC__WOP_F_EXPLAINED;
        rc = fsc__wops_push(rs, FSC__WOP_EMPTY, 0, &op);
        rs->info.empty_caches++;
        break;
    }
    case FSC_EV_SEGMENT_ALLOC:
    case FSC_EV_SEGMENT_MAP: {
        fsc__wop_t *r = open_release(rs);
        if (r != NULL && !rs->release_seen_seg) {
            r->stream = ev->size;
            rs->release_seen_seg = 1;
        }
        rc = add_segment(rs, ev);
        break;
    }
    case FSC_EV_SEGMENT_FREE:
    case FSC_EV_SEGMENT_UNMAP:
        rc = add_release(rs, ev);
        rs->cur_reserved -= ev->size <= rs->cur_reserved ? ev->size : rs->cur_reserved;
        break;
    case FSC_EV_GC: {
        fsc__wop_t *r = open_release(rs);
        if (r != NULL && !rs->release_seen_seg)
            r->flags |= FSC__WOP_F_EXPLAINED;
        break;
    }
    default:
        break; /* SPLIT, MERGE: the allocator's own doing */
    }
    if (rc == 0)
        rc = fsc__wpools_on_event(rs, ev, 1);
    if (rc == FSC_ENOMEM)
        return oom_host(err);
    if (rc != 0)
        return fsc_err_set(err, rc, "%s", rs->store.msg[0] ? rs->store.msg : "what-if: bad event");
    rs->info.events++;
    return 0;
}

int fsc_request_stream_info(const fsc_request_stream_t *rs, fsc_request_stream_info_t *out)
{
    if (rs == NULL || out == NULL)
        return FSC_EINVAL;
    *out = rs->info;
    out->ops = rs->nops;
    out->streams = rs->nstreams;
    out->config = rs->config;
    out->capacity = rs->capacity;
    out->device_total = rs->device_total;
    out->flags = rs->flags;
    out->ends_at_oom = rs->ends_at_oom;
    out->truncated = rs->truncated || (rs->flags & FSC_TRACE_F_RING) != 0;
    out->recorder_skipped = rs->rec_skipped;
    out->window = (rs->flags & FSC_TRACE_F_RECONSTRUCTED) != 0;
    out->run_complete = !out->ends_at_oom && !out->truncated && !out->window;
    out->window_entries = rs->window_entries;
    out->window_first_time_us = rs->window_first_time_us;
    out->window_first_event = rs->window_first_event;
    out->start_reserved = rs->seed_reserved;
    out->start_allocated = rs->seed_allocated;
    out->start_blocks = rs->nseed_blocks;
    out->start_segments = 0;
    for (size_t i = 0; i < rs->nseeds; i++)
        out->start_segments += rs->seeds[i].kind != FSC__WSEED_BLOCK;
    /* the import's guesses of this round, and those earlier rounds settled */
    out->start_guessed = (rs->have_rebuild ? rs->guessed_total : 0) + rs->settled_before;
    out->start_settled = rs->settled + rs->settled_before;
    out->n_guessed_listed = 0;
    out->start_uncertain_bytes = fsc__wseed_uncertain(rs);
    for (size_t k = 0; k < rs->nguesses && out->n_guessed_listed < FSC_IMPORT_GUESSED_MAX; k++)
        if (!fsc__wseed_is_settled(rs, k))
            out->guessed_blocks[out->n_guessed_listed++] = fsc__wseed_guess_addr(rs, k);
    fsc_alloc_config_t cfg;
    double gc = fsc_alloc_config_parse(rs->config, &cfg, NULL) == 0
                    ? cfg.garbage_collection_threshold
                    : 0.0;
    uint64_t cap = fsc__wstream_recorded_cap(rs);
    out->inferred_empty_caches = 0;
    int rc = 0;
    if (rs->nreleases > 0) {
        /* one pass over the ops (the figure depends on the whole stream) */
        fsc__wcur_t c;
        fsc__wcur_open(&c, rs);
        const fsc__wop_t *op;
        while ((rc = fsc__wcur_next(&c, &op)) == 1)
            if (op->kind == FSC__WOP_RELEASE && fsc__wop_release_is_program(op, cap, gc))
                out->inferred_empty_caches++;
        fsc__wcur_close(&c);
    }
    out->pool_releases = rs->npool_rel;
    if (rs->info.recorded_ooms > 0 && (rs->flags & FSC_TRACE_F_CAPACITY_UNKNOWN) != 0) {
        out->capacity_lower = fsc__wstream_cap_floor(rs);
        out->capacity_upper = rs->oom_upper > out->capacity_lower ? rs->oom_upper
                                                                  : out->capacity_lower + 1;
    }
    return rc < 0 ? rc : 0;
}

uint64_t fsc__wstream_cap_floor(const fsc_request_stream_t *rs)
{
    return rs->cap_floor > rs->info.recorded_peak_reserved ? rs->cap_floor
                                                           : rs->info.recorded_peak_reserved;
}

uint64_t fsc__wstream_recorded_cap(const fsc_request_stream_t *rs)
{
    if ((rs->flags & FSC_TRACE_F_CAPACITY_UNKNOWN) == 0 && rs->capacity != 0)
        return rs->capacity;
    if (rs->info.recorded_ooms > 0)
        return fsc__wstream_cap_floor(rs);
    return 0;
}

int fsc__wop_release_is_program(const fsc__wop_t *op, uint64_t recorded_cap, double gc)
{
    if (op->flags & (FSC__WOP_F_EXPLAINED | FSC__WOP_F_POOL_ONLY))
        return 0;
    uint64_t before = op->arg, next_seg = op->stream;
    if (next_seg != 0 && recorded_cap != 0) {
        /* The allocator releases inside a request only when the new
         * segment would not fit under the cap (the OOM retry, and with
         * max_split_size the release of oversize blocks) or GC is due. */
        if (before + next_seg > recorded_cap)
            return 0;
        if (gc > 0 && (double)before > gc * (double)recorded_cap)
            return 0;
    }
    return 1;
}

int fsc__wstream_run_complete(const fsc_request_stream_t *rs)
{
    return !rs->ends_at_oom && !rs->truncated &&
           (rs->flags & (FSC_TRACE_F_RING | FSC_TRACE_F_RECONSTRUCTED)) == 0;
}

uint64_t fsc__whatif_device_total(const fsc_request_stream_t *rs, uint64_t capacity)
{
    /* An unknown device is a large one, not one of exactly the cap's size:
     * expandable segments map whole pages and may end a little above the
     * cap (PyTorch checks the cap with the request's segment size). */
    uint64_t t = rs->device_total ? rs->device_total : 1024 * FSC_GiB;
    /* and never smaller than what the recording itself reserved */
    if (rs->device_total == 0 && rs->info.recorded_peak_reserved > t / 2)
        t = 2 * rs->info.recorded_peak_reserved;
    return capacity > t ? capacity : t;
}
