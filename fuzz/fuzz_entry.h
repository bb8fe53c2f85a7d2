/*
 * fuzz_entry.h — the entry points shared by the libFuzzer targets (fuzz/)
 * and the crasher regression suite (tests/test_crash_inputs.c), so that a
 * saved crasher goes through exactly the code path that found it.
 *
 * Each entry takes arbitrary bytes, feeds them to one parser, and returns 0.
 * Properties that must hold for every input (round trips, counters that
 * agree) are checked with FSC_FUZZ_ASSERT, which aborts: libFuzzer then
 * keeps the input, and the regression suite sees the abort as a failure.
 * File-based readers get the bytes through an anonymous memory file
 * (/proc/self/fd/N), so fuzzing never touches the disk.
 */
#ifndef FSC_FUZZ_ENTRY_H
#define FSC_FUZZ_ENTRY_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fragscope/allocator.h"
#include "fragscope/common.h"
#include "fragscope/pytorch.h"
#include "fragscope/recorder.h"
#include "fragscope/whatif.h"
#include "pickle.h"
#include "trace_format.h"

#include <zstd.h>

#define FSC_FUZZ_ASSERT(cond)                                                       \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                      \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* Path of a memory file holding exactly data[0..len); the file is reused by
 * later calls. NULL when the memory file cannot be made. */
static inline const char *fsc__fuzz_memfile(const uint8_t *data, size_t len)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fsc-fuzz", MFD_CLOEXEC);
        if (fd < 0)
            return NULL;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0)
        return NULL;
    size_t off = 0;
    while (off < len) {
        ssize_t w = pwrite(fd, data + off, len - off, (off_t)off);
        if (w <= 0)
            return NULL;
        off += (size_t)w;
    }
    return path;
}

/* A string of the input, NUL-terminated (the parsers take C strings). */
static inline char *fsc__fuzz_cstr(const uint8_t *data, size_t len)
{
    char *s = malloc(len + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, data, len);
    s[len] = '\0';
    return s;
}

/* ---- trace reader ------------------------------------------------------ */

static inline int fsc_fuzz_trace(const uint8_t *data, size_t len)
{
    const char *path = fsc__fuzz_memfile(data, len);
    if (path == NULL)
        return 0;
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    if (fsc_trace_open(path, &r, &err) != 0) {
        FSC_FUZZ_ASSERT(r == NULL && err.code < 0 && err.msg[0] != '\0');
        return 0;
    }
    const fsc_trace_header_t *h = fsc_trace_header(r);
    FSC_FUZZ_ASSERT(h != NULL && h->producer != NULL && h->config != NULL &&
                    h->backend != NULL);
    (void)strlen(h->producer);
    (void)strlen(h->config);
    (void)strlen(h->backend);
    fsc_event_t ev;
    uint64_t n = 0;
    int rc;
    char path_buf[256];
    while ((rc = fsc_trace_next(r, &ev)) == 1) {
        n++;
        FSC_FUZZ_ASSERT(ev.type >= 1 && ev.type < FSC_EV__COUNT);
        if (ev.text_len > 0) {
            /* Touch every byte: ASan checks the text lies inside the reader. */
            volatile uint8_t sum = 0;
            for (uint32_t i = 0; i < ev.text_len; i++)
                sum += (uint8_t)ev.text[i];
            (void)sum;
        }
        if (ev.tag != 0)
            fsc_trace_tag_path(r, ev.tag, path_buf, sizeof path_buf);
    }
    fsc_trace_integrity_t integ;
    FSC_FUZZ_ASSERT(fsc_trace_get_integrity(r, &integ) == 0);
    if (rc == 0)
        FSC_FUZZ_ASSERT(integ.events == n);
    FSC_FUZZ_ASSERT(integ.compressed_bytes <= (uint64_t)len);
    /* Every tag's parent has a smaller id, so walking up always ends. */
    uint32_t tags = fsc_trace_tag_count(r);
    for (uint32_t id = 1; id <= tags; id++) {
        const char *name;
        size_t name_len;
        uint32_t parent;
        FSC_FUZZ_ASSERT(fsc_trace_tag(r, id, &name, &name_len, &parent) == 0);
        FSC_FUZZ_ASSERT(parent < id);
    }
    fsc_trace_close(r);
    return 0;
}

/* ---- trace reader, chunk contents ---------------------------------------
 * Mutating a whole trace mostly breaks a CRC or zstd's checksum, so the
 * column decoder behind them is rarely reached. This entry takes chunk
 * contents instead and builds a valid file around them (header, descriptors
 * with correct CRCs, checksummed zstd frames, optionally the end frame):
 *   byte 0: bits 0-1 = chunks - 1, bit 2 = end frame, bit 3 = ring flag,
 *           bit 4 = a format 1.0 header (chunk contents are then records one
 *           after another instead of columns)
 *   per chunk: u32 LE event count, then (all but the last chunk) u32 LE
 *   content length, then the content; the last chunk takes the rest. */

static inline int fsc__fuzz_append(uint8_t **buf, size_t *len, size_t *cap, const void *p,
                                   size_t n)
{
    if (*len + n > *cap) {
        size_t c = (*cap ? *cap * 2 : 4096) + n;
        uint8_t *b = realloc(*buf, c);
        if (b == NULL)
            return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

static inline uint32_t fsc__fuzz_le32(const uint8_t *p) { return fsc__get_le32(p); }

/* Build the file described above into a malloc'd buffer. Returns 0, or -1
 * when the input is too short or memory runs out. Also used by tests to
 * write traces with chosen chunk contents. */
static inline int fsc__fuzz_build_trace(const uint8_t *data, size_t len, uint8_t **out,
                                        size_t *out_len)
{
    if (len < 5)
        return -1;
    unsigned nchunks = 1 + (data[0] & 3u);
    int end_frame = (data[0] & 4u) != 0;
    fsc_trace_header_t h = {0};
    h.producer = "fuzz";
    h.config = "";
    h.backend = "sim";
    h.capacity = 80 * FSC_GiB;
    h.flags = (data[0] & 8u) ? FSC_TRACE_F_RING : 0;
    uint8_t *file = NULL, *hdr = NULL;
    size_t flen = 0, fcap = 0, hlen = 0;
    if (fsc__header_encode(&h, &hdr, &hlen) != 0)
        return -1;
    if (data[0] & 16u) { /* format 1.0: records one after another */
        uint32_t n = fsc__get_le32(hdr + 4);
        hdr[8 + FSC__TRACE_MAGIC_LEN] = 1;
        hdr[8 + FSC__TRACE_MAGIC_LEN + 1] = 0;
        hdr[8 + FSC__TRACE_MAGIC_LEN + 2] = 0;
        hdr[8 + FSC__TRACE_MAGIC_LEN + 3] = 0;
        fsc__put_le32(hdr + 8 + n - 4, fsc__crc32(hdr + 8, n - 4));
    }
    int ok = fsc__fuzz_append(&file, &flen, &fcap, hdr, hlen) == 0;
    free(hdr);
    size_t off = 1;
    uint64_t events = 0, chunks = 0;
    for (unsigned c = 0; ok && c < nchunks && off + 4 <= len; c++) {
        uint32_t ev = fsc__fuzz_le32(data + off);
        off += 4;
        size_t clen = len - off;
        if (c + 1 < nchunks) {
            if (off + 4 > len)
                break;
            clen = fsc__fuzz_le32(data + off);
            off += 4;
            if (clen > len - off)
                clen = len - off;
        }
        const uint8_t *content = data + off;
        off += clen;
        size_t bound = ZSTD_compressBound(clen);
        uint8_t *z = malloc(bound + 1);
        ZSTD_CCtx *cc = ZSTD_createCCtx();
        if (z == NULL || cc == NULL) {
            free(z);
            ZSTD_freeCCtx(cc);
            ok = 0;
            break;
        }
        ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
        ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
        ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
        size_t zlen = ZSTD_compress2(cc, z, bound, content, clen);
        ZSTD_freeCCtx(cc);
        if (ZSTD_isError(zlen)) {
            free(z);
            ok = 0;
            break;
        }
        uint8_t desc[8 + FSC__CHUNK_DESC_LEN];
        fsc__put_le32(desc, FSC__SKIP_CHUNK);
        fsc__put_le32(desc + 4, FSC__CHUNK_DESC_LEN);
        fsc__put_le64(desc + 8, events);
        fsc__put_le32(desc + 16, ev);
        fsc__put_le32(desc + 20, (uint32_t)zlen);
        fsc__put_le32(desc + 24, (uint32_t)clen);
        fsc__put_le32(desc + 28, fsc__crc32(desc + 8, 20));
        ok = fsc__fuzz_append(&file, &flen, &fcap, desc, sizeof desc) == 0 &&
             fsc__fuzz_append(&file, &flen, &fcap, z, zlen) == 0;
        free(z);
        events += ev;
        chunks++;
    }
    if (ok && end_frame) {
        uint8_t end[8 + FSC__END_LEN];
        fsc__put_le32(end, FSC__SKIP_END);
        fsc__put_le32(end + 4, FSC__END_LEN);
        fsc__put_le64(end + 8, events);
        fsc__put_le64(end + 16, chunks);
        fsc__put_le64(end + 24, 0);
        fsc__put_le32(end + 32, fsc__crc32(end + 8, 24));
        ok = fsc__fuzz_append(&file, &flen, &fcap, end, sizeof end) == 0;
    }
    if (!ok) {
        free(file);
        return -1;
    }
    *out = file;
    *out_len = flen;
    return 0;
}

static inline int fsc_fuzz_trace_chunks(const uint8_t *data, size_t len)
{
    uint8_t *file = NULL;
    size_t flen = 0;
    if (fsc__fuzz_build_trace(data, len, &file, &flen) == 0)
        fsc_fuzz_trace(file, flen);
    free(file);
    return 0;
}

/* ---- pickle reader ----------------------------------------------------- */

/* Visit the tree. Memo references share nodes, so the tree is a DAG whose
 * unfolding can be exponential (a "billion laughs" pickle): the walk stops
 * after *budget visits. */
static inline void fsc__fuzz_walk(const fsc__pv_t *v, int depth, size_t *budget)
{
    if (*budget == 0)
        return;
    (*budget)--;
    FSC_FUZZ_ASSERT(depth <= FSC__PICKLE_MAX_DEPTH + 1);
    switch (v->kind) {
    case FSC__PV_STR:
    case FSC__PV_BYTES: {
        /* A shared string costs its length each time it is reached. */
        size_t cost = v->len / 16;
        *budget -= cost < *budget ? cost : *budget;
        volatile uint8_t sum = 0;
        for (uint32_t i = 0; i < v->len; i++)
            sum += (uint8_t)v->u.s[i];
        (void)sum;
        break;
    }
    case FSC__PV_LIST:
    case FSC__PV_TUPLE:
        for (uint32_t i = 0; i < v->len && *budget > 0; i++)
            fsc__fuzz_walk(v->u.items[i], depth + 1, budget);
        break;
    case FSC__PV_DICT:
        for (uint32_t i = 0; i < 2 * v->len && *budget > 0; i++)
            fsc__fuzz_walk(v->u.items[i], depth + 1, budget);
        (void)fsc__pv_get(v, "segments");
        break;
    default:
        break;
    }
}

static inline int fsc_fuzz_pickle(const uint8_t *data, size_t len)
{
    fsc__pdoc_t *d = NULL;
    fsc_err_t err;
    if (fsc__pickle_parse(data, len, "fuzz", &d, &err) == 0) {
        const fsc__pv_t *root = fsc__pdoc_root(d);
        FSC_FUZZ_ASSERT(root != NULL);
        /* The arena bound the header promises. */
        FSC_FUZZ_ASSERT(fsc__pdoc_mem(d) <= (size_t)FSC__PICKLE_MEM_FACTOR * len + (1u << 20));
        size_t budget = 16 * len + 1024;
        fsc__fuzz_walk(root, 1, &budget);
    } else {
        FSC_FUZZ_ASSERT(d == NULL && err.code < 0);
    }
    fsc__pdoc_free(d);
    return 0;
}

/* ---- PyTorch snapshot importer (pickle and JSON) ------------------------ */

typedef struct fsc__fuzz_sink {
    uint32_t next_tag;
    uint64_t events;
    int headers;
} fsc__fuzz_sink_t;

static inline int fsc__fuzz_header(void *ud, const fsc_trace_header_t *hdr)
{
    fsc__fuzz_sink_t *s = ud;
    s->headers++;
    if (hdr->config != NULL)
        (void)strlen(hdr->config);
    return 0;
}

static inline int fsc__fuzz_tag(void *ud, uint32_t parent, const char *name, size_t len,
                                uint32_t *node_out)
{
    fsc__fuzz_sink_t *s = ud;
    FSC_FUZZ_ASSERT(parent < s->next_tag + 1);
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < len; i++)
        sum += (uint8_t)name[i];
    (void)sum;
    *node_out = ++s->next_tag;
    return 0;
}

static inline int fsc__fuzz_event(void *ud, const fsc_event_t *ev)
{
    fsc__fuzz_sink_t *s = ud;
    FSC_FUZZ_ASSERT(s->headers == 1);
    FSC_FUZZ_ASSERT(ev->type >= 1 && ev->type < FSC_EV__COUNT);
    s->events++;
    return 0;
}

static inline int fsc_fuzz_pytorch(const uint8_t *data, size_t len)
{
    const char *path = fsc__fuzz_memfile(data, len);
    if (path == NULL)
        return 0;
    for (int lenient = 0; lenient <= 1; lenient++) {
        fsc__fuzz_sink_t s = {0, 0, 0};
        fsc_import_sink_t sink = {&s, fsc__fuzz_header, fsc__fuzz_tag, fsc__fuzz_event};
        fsc_import_opts_t opts = FSC_IMPORT_OPTS_DEFAULT;
        opts.lenient = lenient;
        fsc_import_stats_t st;
        fsc_err_t err;
        int rc = fsc_pytorch_import(path, &opts, &sink, &st, &err);
        if (rc == 0)
            FSC_FUZZ_ASSERT(st.events == s.events);
        else
            FSC_FUZZ_ASSERT(rc < 0 && err.msg[0] != '\0');
    }
    return 0;
}

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
        o.stop_at_oom = (data[0] & 8u) != 0;
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

/* ---- allocator config string ------------------------------------------- */

static inline int fsc_fuzz_config(const uint8_t *data, size_t len)
{
    char *s = fsc__fuzz_cstr(data, len);
    if (s == NULL)
        return 0;
    fsc_alloc_config_t c;
    fsc_err_t err;
    if (fsc_alloc_config_parse(s, &c, &err) == 0) {
        /* The canonical form parses back to the same settings. */
        char buf[1024];
        FSC_FUZZ_ASSERT(fsc_alloc_config_format(&c, buf, sizeof buf) == 0);
        fsc_alloc_config_t back;
        int rc = fsc_alloc_config_parse(buf, &back, &err);
        if (rc != 0)
            fprintf(stderr, "canonical form '%s' does not parse: %s\n", buf, err.msg);
        FSC_FUZZ_ASSERT(rc == 0);
        FSC_FUZZ_ASSERT(back.max_split_size == c.max_split_size);
        FSC_FUZZ_ASSERT(memcmp(back.roundup_power2_divisions, c.roundup_power2_divisions,
                               sizeof c.roundup_power2_divisions) == 0);
        FSC_FUZZ_ASSERT(back.garbage_collection_threshold == c.garbage_collection_threshold);
        FSC_FUZZ_ASSERT(back.expandable_segments == c.expandable_segments);
        FSC_FUZZ_ASSERT(back.max_non_split_rounding == c.max_non_split_rounding);
        /* The rules never fail on a parsed config. */
        uint64_t r = fsc_alloc_round_size(&c, 3 * FSC_MiB + 1);
        FSC_FUZZ_ASSERT(r >= 3 * FSC_MiB + 1);
    } else {
        FSC_FUZZ_ASSERT(err.code == FSC_ECONFIG && err.msg[0] != '\0');
    }
    free(s);
    return 0;
}

/* ---- size strings ------------------------------------------------------- */

static inline int fsc_fuzz_size(const uint8_t *data, size_t len)
{
    char *s = fsc__fuzz_cstr(data, len);
    if (s == NULL)
        return 0;
    uint64_t v = 0;
    if (fsc_size_parse(s, &v) == 0) {
        /* A plain decimal byte count parses back to itself. */
        char buf[32];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
        uint64_t back = 0;
        FSC_FUZZ_ASSERT(fsc_size_parse(buf, &back) == 0 && back == v);
        char human[64];
        fsc_size_format(v, human, sizeof human);
        FSC_FUZZ_ASSERT(memchr(human, '\0', sizeof human) != NULL);
    }
    free(s);
    return 0;
}

#endif
