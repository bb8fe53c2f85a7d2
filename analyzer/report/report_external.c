/*
 * report_external.c — the device's memory outside the caching allocator at
 * each OOM (docs/metrics.md, "Memory outside the allocator") as figures of
 * the JSON report: external = device_total − device_free − reserved, from
 * the ooms row's own columns, so databases written before
 * ooms.external_bytes existed read the same; null when the device's total
 * or free bytes were not recorded. The text and Markdown reports say it in
 * the "device free at the OOM" line.
 */
#include <cjson/cJSON.h>

#include "report_model.h"

void fsc__report_external_fill(rep_oom_t *o)
{
    o->external = -1;
    if (o->device_free != FSC_RUNDB_NULL && o->device_free >= 0 &&
        o->device_total != FSC_RUNDB_NULL && o->device_total > 0) {
        int64_t x = o->device_total - o->device_free - o->reserved;
        o->external = x > 0 ? x : 0;
    }
}

void fsc__report_external_json(const rep_oom_t *o, cJSON *j)
{
    if (o->device_total == FSC_RUNDB_NULL || o->device_total <= 0)
        cJSON_AddNullToObject(j, "device_total_bytes");
    else
        cJSON_AddNumberToObject(j, "device_total_bytes", (double)o->device_total);
    if (o->external < 0)
        cJSON_AddNullToObject(j, "external_bytes");
    else
        cJSON_AddNumberToObject(j, "external_bytes", (double)o->external);
}
