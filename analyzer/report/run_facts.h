/*
 * run_facts.h — what describes a run (table runs) from the facts a trace
 * header or a schema-1 meta table holds: shared by the analyzer, which
 * writes the runs row, and the reader, which synthesises it for a schema-1
 * database, so that both say the same. Internal.
 */
#ifndef FSC_REPORT_RUN_FACTS_H
#define FSC_REPORT_RUN_FACTS_H

#include <stdint.h>

/* runs.kind from meta.source_kind: "trace", "snapshot" (pytorch_snapshot)
 * or "simulation" (anything else: simulate, demo, the API). */
const char *fsc__run_kind(const char *source_kind);

/* The device number of a backend string "cuda:N ...", else
 * FSC_RUNDB_NULL. */
int64_t fsc__run_device_from_backend(const char *backend);

#endif
