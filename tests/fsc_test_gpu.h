/*
 * fsc_test_gpu.h — helpers for the suites that read the real recordings in
 * tests/data/gpu: a recording's memory_stats() file and its request stream.
 */
#ifndef FSC_TEST_GPU_H
#define FSC_TEST_GPU_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "fragscope/whatif.h"

/* tests/data/REL, parsed as JSON (a fatal assertion when it is not there
 * or not JSON); the caller frees it with cJSON_Delete. */
cJSON *fsc_test_data_json(const char *rel);

/* tests/data/gpu/NAME.stats.json, parsed (a fatal assertion when it is not
 * there or not JSON); the caller frees it with cJSON_Delete. */
cJSON *fsc_test_gpu_stats(const char *name);

/* KEY of a stats object as an integer; UINT64_MAX, with a failed
 * assertion, when it is absent or not a number. */
uint64_t fsc_test_stat_u64(const cJSON *j, const char *key);

/* tests/data/gpu/NAME.pickle as a request stream (a fatal assertion, with
 * the error on stderr, when it does not load). */
fsc_request_stream_t *fsc_test_gpu_stream(const char *name);

#endif
