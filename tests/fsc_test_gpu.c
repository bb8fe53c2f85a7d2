/*
 * fsc_test_gpu.c — implementation of fsc_test_gpu.h.
 */
#include "fsc_test_gpu.h"

#include <stdio.h>
#include <stdlib.h>

#include "fsc_test.h"

cJSON *fsc_test_data_json(const char *rel)
{
    char *s = fsc_test_slurp(fsc_test_data(rel), NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    cJSON *j = cJSON_Parse(s);
    free(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

cJSON *fsc_test_gpu_stats(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "gpu/%s.stats.json", name);
    return fsc_test_data_json(path);
}

uint64_t fsc_test_stat_u64(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    CU_ASSERT_PTR_NOT_NULL(v);
    return v && cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : UINT64_MAX;
}

fsc_request_stream_t *fsc_test_gpu_stream(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "gpu/%s.pickle", name);
    fsc_request_stream_t *rs = NULL;
    fsc_err_t err = {0, ""};
    int rc = fsc_request_stream_load(fsc_test_data(path), &rs, &err);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", name, fsc_err_msg(&err));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return rs;
}
