/*
 * analyze_job.h — what `fragscope analyze` of one input (cmd_analyze.c)
 * shares with analyze of several (analyze_many.c): the per-input state of
 * the what-if step run before each database is put in place.
 */
#ifndef FSC_TOOLS_ANALYZE_JOB_H
#define FSC_TOOLS_ANALYZE_JOB_H

#include "cli.h"
#include "fragscope/analyzer.h"
#include "fragscope/pytorch.h"

typedef struct fsc__analyze_job {
    const char *in_path, *out_path;
    fsc_progress_t prog;
    uint64_t capacity; /* --capacity; 0 = the input's */
    uint64_t device_memory; /* --device-memory; 0 = the input's */
    int no_suggest, suggested, external;
    size_t suggestions;
    int run_complete; /* of the request stream the suggestions replayed */
    char suggest_warning[FSC_ERR_MSG_MAX];
    int device, lenient; /* for the what-if replays of a snapshot */
} fsc__analyze_job_t;

/* fsc_analysis_opts_t.before_commit with a fsc__analyze_job_t: the what-if
 * suggestions of a run that hit an OOM go into its database. */
int fsc__analyze_add_suggestions(void *ud, const char *tmp_db,
                                 const fsc_analysis_summary_t *sum, fsc_err_t *out_err);

/* analyze of several inputs, or of a snapshot with history on several
 * devices, into one job database (analyze_many.c): inputs[0..n) are
 * analyzed by `workers` threads, each into a temporary database beside out,
 * merged in input order (a multi-device snapshot: one run per device, in
 * device order, unless tmpl->device >= 0 picks one). tmpl gives the
 * options every input shares; o the analysis options. Prints what the
 * single-input analyze prints, one line per run, and returns the exit
 * status. */
int fsc__analyze_many(const char *const *inputs, size_t n, const char *out,
                      const fsc_analyze_opts_t *o, const fsc__analyze_job_t *tmpl, int workers);

/* fsc_analyze_file, and for a snapshot whose history starts mid-run with
 * block sizes the importer guessed: what-if settles them from the window
 * (docs/whatif.md), and the analysis runs again on the settled sizes. */
int fsc__analyze_settled(const char *in, const char *out, const fsc_analyze_opts_t *o,
                         fsc_analysis_summary_t *sum, struct fsc_source_info *info,
                         fsc_err_t *err);

/* A snapshot whose history starts mid-run (a ring): one line saying that
 * the figures cover the window (nothing for a complete one). */
void fsc__analyze_window_note(const char *prefix, const fsc_import_stats_t *st);

#endif
