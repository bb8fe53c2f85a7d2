/*
 * writer.h — a thread that writes the bulk rows (blocks, segments,
 * events_other) while the replay goes on. Internal to the analyzer.
 *
 * The SQLite connection is used by one thread at a time: while the writer
 * runs, the replay thread hands rows over and touches SQLite only after
 * fsc__writer_sync (every other statement: tags, markers, warnings, OOM
 * diagnosis, the tables written at the end).
 */
#ifndef FSC_ANALYZER_WRITER_H
#define FSC_ANALYZER_WRITER_H

#include "ana_internal.h"

/* Start the thread (a->writer); when it cannot be started the rows are
 * written on the caller's thread instead (a->writer stays NULL). */
void fsc__writer_start(fsc_analysis_t *a);
/* Queue one row. Fails with the writer's error once it has failed. */
int fsc__writer_push(fsc_analysis_t *a, const fsc__op_t *op);
/* Wait until every queued row is written; returns the writer's error, if
 * any (copied into a->err). No-op without a writer. */
int fsc__writer_sync(fsc_analysis_t *a);
/* Sync, stop and join the thread; a->writer becomes NULL. */
int fsc__writer_stop(fsc_analysis_t *a);

#endif
