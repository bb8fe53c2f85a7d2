/*
 * pymeta.h — the "pytorch.*" records of imported snapshots in the analysis
 * (pymeta.c). Internal to the analyzer.
 */
#ifndef FSC_ANALYZER_PYMETA_H
#define FSC_ANALYZER_PYMETA_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/common.h"
#include "fragscope/events.h"
#include "store.h"

typedef struct fsc__pymeta {
    char *part; /* record being joined */
    size_t part_len;
    char *entry; /* an entry record waiting for its event */
    size_t entry_len;
    int entry_pending;
    uint64_t records;
} fsc__pymeta_t;

/* A MARKER "pytorch.KIND JSON" is stored in table pytorch_meta: returns 1
 * (consumed, not an event), 0 for any other event (seq: the seq it gets),
 * or a negative code with the message in err. */
int fsc__pymeta_feed(fsc__pymeta_t *pm, fsc__store_t *st, uint64_t seq, const fsc_event_t *ev,
                     fsc_err_t *err);
/* At the end: a record still waiting for its event is stored at seq. */
int fsc__pymeta_finish(fsc__pymeta_t *pm, fsc__store_t *st, uint64_t seq);
void fsc__pymeta_free(fsc__pymeta_t *pm);

#endif
