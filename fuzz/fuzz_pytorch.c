/*
 * fuzz_pytorch.c — libFuzzer target for the PyTorch snapshot importer, pickle and JSON, strict and lenient.
 * The entry point is shared with the crasher regression suite
 * (fuzz_entry.h).
 */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fsc_fuzz_pytorch(data, size);
}
