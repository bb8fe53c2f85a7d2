/*
 * cli.h — what every subcommand of the fragscope command line shares: exit
 * codes, one-line errors, option helpers and terminal progress.
 *
 * A subcommand NAME lives in cmd_NAME.c and defines
 *   int fsc_cmd_NAME(int argc, char **argv);   argv[0] is "NAME"
 *   extern const char fsc_cmd_NAME_summary[];  one line for `fragscope --help`
 *   extern const char fsc_cmd_NAME_usage[];    full text for `fragscope help NAME`
 * The table in main.c is generated from the cmd_*.c files present.
 */
#ifndef FSC_CLI_H
#define FSC_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "fragscope/common.h"

enum {
    FSC_EXIT_OK = 0,
    FSC_EXIT_CHECK_FAILED = 1,
    FSC_EXIT_BAD_INPUT = 2, /* bad input file, bad usage */
    FSC_EXIT_FAILURE = 3    /* everything else: I/O errors on output, device errors */
};

/* Print "fragscope: <message>\n" on stderr; returns FSC_EXIT_BAD_INPUT. */
int fsc_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "fragscope CMD: <message>\n(see fragscope help CMD)" and return 2. */
int fsc_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print the one-line error of an import or analysis that failed with rc
 * (prefix "CMD: " or ""); when the input contradicted the block model or
 * the replay (FSC_ESTATE) and --lenient was not given (lenient 0), the line
 * ends by saying that --lenient skips such entries. Returns the exit code
 * (fsc_cli_exit_code). */
int fsc_cli_input_error(const char *prefix, int rc, const fsc_err_t *err, int lenient);
/* Exit code for an error code from the libraries: bad input (format,
 * truncation, config, state, not found, usage) → 2, else 3. */
int fsc_cli_exit_code(int rc);

/* Parse a size option value; on failure prints a usage error and returns 2. */
int fsc_cli_size(const char *cmd, const char *opt, const char *val, uint64_t *out);
/* Parse a ratio in [0, 1] (or a percentage "12%"). */
int fsc_cli_ratio(const char *cmd, const char *opt, const char *val, double *out);
/* --rank R / --run N at argv[*i] into o (cli_job.c): 1 when it was one of
 * them (*i then at its value; *rc 2 after a usage error), else 0. */
struct fsc_job_opts;
int fsc_cli_job_option(const char *cmd, int argc, char **argv, int *i, struct fsc_job_opts *o,
                       int *rc);

/* Progress on a terminal (stderr is a tty and FRAGSCOPE_NO_PROGRESS is not
 * set), shown once the command has run 2 s, at most ~10 updates a second:
 * done/total (a percentage and an ETA when total is known), and for
 * fsc_progress_bytes the bytes read, their rate, and the events counted by
 * fsc_progress_events. */
typedef struct fsc_progress {
    const char *label;
    uint64_t start_ns, last_ns;
    uint64_t events;
    int bytes; /* done/total are bytes */
    int enabled;
    int shown;
} fsc_progress_t;
void fsc_progress_init(fsc_progress_t *p, const char *label);
void fsc_progress_update(fsc_progress_t *p, uint64_t done, uint64_t total);
void fsc_progress_bytes(fsc_progress_t *p, uint64_t done, uint64_t total);
void fsc_progress_events(fsc_progress_t *p, uint64_t events);
void fsc_progress_done(fsc_progress_t *p);

#define FSC_CMD(name)                                  \
    int fsc_cmd_##name(int argc, char **argv);         \
    extern const char fsc_cmd_##name##_summary[];      \
    extern const char fsc_cmd_##name##_usage[];
#include "fsc_cmds.gen.h"
#undef FSC_CMD

#endif
