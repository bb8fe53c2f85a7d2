/*
 * fuzz_entry.h — the entry points shared by the libFuzzer targets (fuzz/)
 * and the crasher regression suite (tests/test_crash_inputs.c), so that a
 * saved crasher goes through exactly the code path that found it.
 *
 * Each entry, fsc_fuzz_<target>(data, len), takes arbitrary bytes, feeds
 * them to one parser and checks properties that must hold for every input
 * (round trips, counters that agree) with FSC_FUZZ_ASSERT, which aborts.
 */
#ifndef FSC_FUZZ_ENTRY_H
#define FSC_FUZZ_ENTRY_H

#include "entry_settings.h" /* fsc_fuzz_config, fsc_fuzz_size */
#include "entry_snapshot.h" /* fsc_fuzz_pickle, fsc_fuzz_pytorch */
#include "entry_trace.h"    /* fsc_fuzz_trace, fsc_fuzz_trace_chunks */
#include "entry_whatif.h"   /* fsc_fuzz_whatif */

#endif
