/*
 * fuzz_trace.c — libFuzzer target for the trace reader (fsc_trace_open, every event, tags, integrity).
 * The entry point is shared with the crasher regression suite
 * (fuzz_entry.h).
 */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fsc_fuzz_trace(data, size);
}
