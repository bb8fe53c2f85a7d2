/*
 * fragscope/viewer.h — the HTML report: one self-contained file (HTML, CSS,
 * JavaScript and data inline, no network request of any kind) built from an
 * analyzer database (docs/schema.md).
 *
 * The report is fed only from the database's bounded tables (timeline
 * samples, markers, OOM diagnoses, bins, per-tag figures and the block
 * layouts), never from the raw event rows, and every embedded table is
 * capped, so its size stays below opts.max_bytes however long the run was.
 * The headline numbers are rendered as static HTML (readable without
 * JavaScript); the charts are drawn by the embedded script from a JSON block.
 * Every string taken from the trace is escaped for the context it lands in.
 */
#ifndef FRAGSCOPE_VIEWER_H
#define FRAGSCOPE_VIEWER_H

#include <stddef.h>
#include <stdint.h>

#include "fragscope/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FSC_VIEW_MAX_BYTES_DEFAULT ((uint64_t)3000000) /* 3 MB */

typedef struct fsc_view_opts {
    /* Page title; NULL = derived from the database (producer and file name). */
    const char *title;
    /* Upper bound of the report's size in bytes; 0 = 3 MB (3 000 000).
     * The embedded tables are shrunk until the page fits; FSC_ELIMIT when
     * even the smallest form does not (only for bounds far below the
     * default). */
    uint64_t max_bytes;
    /* Allocations drawn as their own band in the active memory timeline
     * (the largest by size x lifetime); 0 = 2000. */
    size_t bands;
    /* A database of several runs (a job: ranks, devices, inputs) gets an
     * overview of every run and the detail of a bounded set of them: every
     * run when there are at most detail_limit (0 = 8), else the run that
     * ran out of memory first, the run with the least headroom and the runs
     * listed in runs[0..nruns) (run numbers). Each run's detail is bounded
     * by max_bytes as a one-run page is. */
    const int64_t *runs;
    size_t nruns;
    size_t detail_limit;
    /* The run shown first (and carried): FSC_VIEW_OPEN_AUTO (the first to
     * run out of memory, else the least headroom, else the lowest rank),
     * FSC_VIEW_OPEN_RUN (run open_value) or FSC_VIEW_OPEN_RANK (the run of
     * rank open_value). */
    int open_by;
    int64_t open_value;
    /* Runs drawn as a chart each in a job's overview: every run when there
     * are at most overview_limit (0 = 256); beyond that the marked runs
     * (first OOM, least headroom or highest peak), the runs carried in
     * detail, the largest and smallest peaks reserved (limit / 32 of
     * each, 1 to 8), and the runs
     * with OOMs (in rank order, while fewer than overview_limit are drawn);
     * the others as one aggregated chart (min, median and max of reserved). */
    size_t overview_limit;
} fsc_view_opts_t;

enum { FSC_VIEW_OPEN_AUTO = 0, FSC_VIEW_OPEN_RUN = 1, FSC_VIEW_OPEN_RANK = 2 };

#define FSC_VIEW_OPTS_DEFAULT {NULL, 0, 0, NULL, 0, 0, FSC_VIEW_OPEN_AUTO, 0, 0}

/* Render the report of the database at db_path into a malloc'd,
 * NUL-terminated buffer (*html, *len excluding the NUL); the caller frees
 * it with free(). opts may be NULL (defaults). The database is opened and
 * read through the run database reader (fragscope/rundb.h), so a file it
 * refuses fails here with its code and one-line message (FSC_ENOENT,
 * FSC_EFORMAT, FSC_EVERSION, FSC_ESQLITE); also FSC_ENOMEM, FSC_ELIMIT.
 * Tables other than meta and summary may be missing (their views are then
 * empty). */
int fsc_view_render(const char *db_path, const fsc_view_opts_t *opts, char **html,
                    size_t *len, fsc_err_t *err);

/* Render and write the report to out_html atomically (temporary file renamed
 * into place; on any error no output file is left). */
int fsc_view_write_opts(const char *db_path, const char *out_html,
                        const fsc_view_opts_t *opts, fsc_err_t *err);

/* fsc_view_write_opts with the defaults. */
int fsc_view_write(const char *db_path, const char *out_html, fsc_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_VIEWER_H */
