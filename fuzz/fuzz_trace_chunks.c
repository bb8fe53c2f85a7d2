/*
 * fuzz_trace_chunks.c — libFuzzer target for the trace reader's chunk
 * decoder: the input is chunk contents, wrapped into a valid file (correct
 * CRCs and zstd checksums) so that mutations reach the column decoding.
 * The entry point is shared with the crasher regression suite
 * (fuzz_entry.h).
 */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fsc_fuzz_trace_chunks(data, size);
}
