/*
 * entry_trace.h — the trace reader: whole files, and chunk contents wrapped
 * into valid files.
 * Part of the fuzz entry points (fuzz_entry.h).
 */
#ifndef FSC_FUZZ_ENTRY_TRACE_H
#define FSC_FUZZ_ENTRY_TRACE_H

#include "fuzz_common.h"

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

#endif
