/*
 * fuzz_trace_reader.c — libFuzzer target: the .fstrace reader on arbitrary
 * bytes. Checks that it never crashes, never loops, and that every byte of
 * the input is either consumed by intact frames or reported lost.
 *
 * Build (clang; the FSC_FUZZ option is meant to wire this up):
 *   clang -O1 -g -fsanitize=fuzzer,address,undefined -Iinclude -Irecorder \
 *     tests/fuzz/fuzz_trace_reader.c recorder/trace_reader.c recorder/trace_header.c \
 *     common/error.c -lzstd -o fuzz_trace_reader
 *   ./fuzz_trace_reader -max_len=20000 CORPUS_DIR   (seed: the .fstrace files of tests/data)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fragscope/recorder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The reader takes a path: one scratch file (in memory) per process. */
    static char path[64];
    if (path[0] == '\0')
        snprintf(path, sizeof path, "/dev/shm/fsc_fuzz_reader_%d.fstrace", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    if (fsc_trace_open(path, &r, &err) != 0)
        return 0;
    fsc_event_t ev;
    char buf[256];
    while (fsc_trace_next(r, &ev) == 1) {
        fsc_trace_tag_path(r, ev.tag, buf, sizeof buf);
        if (ev.text_len > 0)
            buf[0] = ev.text[ev.text_len - 1]; /* the text must be readable */
    }
    fsc_trace_integrity_t in;
    fsc_trace_get_integrity(r, &in);
    if (in.compressed_bytes + in.bytes_lost != in.file_bytes)
        abort();
    fsc_trace_close(r);
    return 0;
}
