/*
 * fuzz_config.c — libFuzzer target for the allocator config parser (parse, format, parse again).
 * The entry point is shared with the crasher regression suite
 * (fuzz_entry.h).
 */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fsc_fuzz_config(data, size);
}
