/*
 * fuzz_whatif.c — libFuzzer target for the what-if replay (and the
 * allocator under it) on arbitrary request streams: any sizes, frees in any
 * order, delayed completions, empty_cache, recorded OOMs, any setting and
 * capacity. The entry point is shared with the crasher regression suite
 * (fuzz_entry.h).
 */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fsc_fuzz_whatif(data, size);
}
