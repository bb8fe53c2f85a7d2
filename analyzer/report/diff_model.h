/*
 * diff_model.h — what the diff reads of one run and how it judges two
 * (diff.c), shared with the job diff that pairs the runs of two job
 * databases rank by rank (diff_job.c). Internal to the report part.
 */
#ifndef FSC_ANALYZER_DIFF_MODEL_H
#define FSC_ANALYZER_DIFF_MODEL_H

#include <stddef.h>
#include <stdio.h>

#include "fragscope/rundb.h"

#define FSC__DIFF_NMETRICS 19
#define FSC__DIFF_HARD_TAGS 3

/* What the diff shows of one run. */
typedef struct run_figs {
    double v[FSC__DIFF_NMETRICS];
    char first_oom[96];
    int has_split; /* the database holds the split */
    /* tags pinning the most hard bytes at the peak, named as `report`
     * names them (fsc_rundb_tag_label; told apart where two read alike) */
    char hard_tag[FSC__DIFF_HARD_TAGS][256];
    int64_t hard_tag_id[FSC__DIFF_HARD_TAGS];
    double hard_tag_bytes[FSC__DIFF_HARD_TAGS];
    int nhard;
} run_figs_t;

/* The summary key of metric i (v[i]). */
const char *fsc__diff_key(int i);
/* Read the selected run of db. */
int fsc__diff_read(fsc_rundb_t *db, run_figs_t *r);
/* The verdict of b against a (-1 better, 0 same, 1 worse, 2 mixed), and
 * the figures that moved each way ("peak reserved 8.00 MiB → 9.00 MiB, ...")
 * into better / worse (cap bytes each). */
int fsc__diff_judge(const run_figs_t *a, const run_figs_t *b, char *better, char *worse,
                    size_t cap);
/* Both runs side by side with deltas and the "verdict: ..." line. */
void fsc__diff_table(const run_figs_t *a, const run_figs_t *b, FILE *out, int *verdict);

#endif
