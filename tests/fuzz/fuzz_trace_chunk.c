/*
 * fuzz_trace_chunk.c — libFuzzer target: arbitrary chunk contents wrapped in
 * valid frames (header, descriptors, zstd frames with checksums), so that
 * the fuzzer reaches the record decoder behind the checksums. The first
 * input byte is the first chunk's event count, the second where the input
 * is split into two chunks.
 *
 * Build like fuzz_trace_reader.c (see there), with this file instead; seed
 * the corpus with chunk contents (`zstd -d` of a trace's data frames).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "fragscope/recorder.h"
#include "trace_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t put_chunk(uint8_t *d, const uint8_t *c, size_t n, uint64_t first, uint32_t events)
{
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    size_t cs = ZSTD_compress2(cc, d + 32, ZSTD_compressBound(n), c, n);
    ZSTD_freeCCtx(cc);
    fsc__put_le32(d, FSC__SKIP_CHUNK);
    fsc__put_le32(d + 4, FSC__CHUNK_DESC_LEN);
    fsc__put_le64(d + 8, first);
    fsc__put_le32(d + 16, events);
    fsc__put_le32(d + 20, (uint32_t)cs);
    fsc__put_le32(d + 24, (uint32_t)n);
    fsc__put_le32(d + 28, fsc__crc32(d + 8, FSC__CHUNK_DESC_LEN - 4));
    return 32 + cs;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    static uint8_t *hdr;
    static size_t hdr_len;
    if (hdr == NULL) {
        snprintf(path, sizeof path, "/dev/shm/fsc_fuzz_chunk_%d.fstrace", (int)getpid());
        fsc_trace_header_t h = {0};
        h.producer = "fuzz";
        h.rank = -1;
        if (fsc__header_encode(&h, &hdr, &hdr_len) != 0)
            abort();
    }
    if (size < 3)
        return 0;
    uint32_t ev1 = data[0];
    size_t n = size - 2, split = data[1] % (n + 1);
    const uint8_t *c = data + 2;
    uint8_t *img = malloc(hdr_len + 2 * (ZSTD_compressBound(n) + 64));
    if (img == NULL)
        return 0;
    memcpy(img, hdr, hdr_len);
    size_t len = hdr_len;
    len += put_chunk(img + len, c, split, 0, ev1);
    len += put_chunk(img + len, c + split, n - split, ev1, 255);
    FILE *f = fopen(path, "wb");
    if (f != NULL) {
        fwrite(img, 1, len, f);
        fclose(f);
    }
    free(img);
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    if (fsc_trace_open(path, &r, &err) != 0)
        abort(); /* the frames are valid: opening must succeed */
    fsc_event_t ev;
    char buf[256];
    while (fsc_trace_next(r, &ev) == 1) {
        fsc_trace_tag_path(r, ev.tag, buf, sizeof buf);
        if (ev.text_len > 0)
            buf[0] = ev.text[ev.text_len - 1];
    }
    fsc_trace_integrity_t in;
    fsc_trace_get_integrity(r, &in);
    if (in.compressed_bytes + in.bytes_lost != in.file_bytes)
        abort();
    fsc_trace_close(r);
    return 0;
}
