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
#include <stdio.h>

#include "fragscope/common.h"

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

int fsc__report_external_load(rep_t *r, fsc_rundb_t *db)
{
    int rc;
    if ((rc = fsc_rundb_meta_int(db, "device_samples", 0, &r->device_samples)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "external_max_bytes", -1, &r->external_max)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "external_max_seq", -1, &r->external_max_seq)) != 0)
        return rc;
    return 0;
}

void fsc__report_external_run_text(const rep_t *r, FILE *f)
{
    char b[32];
    if (r->device_samples <= 0)
        return; /* not sampled: PyTorch snapshots, traces without samples */
    if (r->external_max >= 0)
        fprintf(f, "  outside the allocator   %12s  (most at a device sample, event %lld; "
                   "%lld samples; total − free − reserved)\n",
                fsc_size_format((uint64_t)r->external_max, b, sizeof b),
                (long long)r->external_max_seq, (long long)r->device_samples);
    else
        fprintf(f, "  outside the allocator        unknown  (%lld device samples without the "
                   "device's figures)\n", (long long)r->device_samples);
}

void fsc__report_external_run_markdown(const rep_t *r, FILE *f)
{
    char b[32];
    if (r->device_samples > 0 && r->external_max >= 0)
        fprintf(f, "| most memory outside the allocator | %s (event %lld) |\n",
                fsc_size_format((uint64_t)r->external_max, b, sizeof b),
                (long long)r->external_max_seq);
}

void fsc__report_external_run_json(const rep_t *r, cJSON *meta)
{
    cJSON_AddNumberToObject(meta, "device_samples", (double)r->device_samples);
    if (r->external_max >= 0) {
        cJSON_AddNumberToObject(meta, "external_max_bytes", (double)r->external_max);
        cJSON_AddNumberToObject(meta, "external_max_seq", (double)r->external_max_seq);
    } else {
        cJSON_AddNullToObject(meta, "external_max_bytes");
        cJSON_AddNullToObject(meta, "external_max_seq");
    }
}
