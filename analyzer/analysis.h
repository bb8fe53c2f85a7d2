/*
 * analysis.h — the analysis' parts as white-box tests see them: the replay
 * state behind a handle. Internal to the analyzer and its tests.
 */
#ifndef FSC_ANALYZER_ANALYSIS_H
#define FSC_ANALYZER_ANALYSIS_H

#include "store.h"

/* The replay state of an analysis (valid until it is destroyed). */
fsc__replay_t *fsc__analysis_replay(fsc_analysis_t *a);

#endif
