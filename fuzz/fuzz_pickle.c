/*
 * fuzz_pickle.c — libFuzzer target for the pickle reader (fsc__pickle_parse and a walk of the tree).
 * The entry point is shared with the crasher regression suite
 * (fuzz_entry.h).
 */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fsc_fuzz_pickle(data, size);
}
