/*
 * cli.c — shared helpers of the subcommands: errors, option values, progress.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fsc_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fragscope: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return FSC_EXIT_BAD_INPUT;
}

int fsc_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fragscope %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'fragscope help %s')\n", cmd);
    va_end(ap);
    return FSC_EXIT_BAD_INPUT;
}

int fsc_cli_input_error(const char *prefix, int rc, const fsc_err_t *err, int lenient)
{
    /* FSC_ESTATE is the one error --lenient gets past: an entry or event
     * that contradicts the state, skipped and counted instead */
    fsc_cli_error("%s%s%s", prefix, fsc_err_msg(err),
                  rc == FSC_ESTATE && !lenient ? " (rerun with --lenient to skip such entries)"
                                                : "");
    return fsc_cli_exit_code(rc);
}

int fsc_cli_exit_code(int rc)
{
    switch (rc) {
    case 0: return FSC_EXIT_OK;
    case FSC_EINVAL:
    case FSC_EFORMAT:
    case FSC_EVERSION:
    case FSC_ETRUNC:
    case FSC_ECONFIG:
    case FSC_ESTATE:
    case FSC_ENOENT:
    case FSC_ELIMIT:
    case FSC_EUSAGE:
        return FSC_EXIT_BAD_INPUT;
    default:
        return FSC_EXIT_FAILURE;
    }
}

int fsc_cli_size(const char *cmd, const char *opt, const char *val, uint64_t *out)
{
    if (val == NULL || fsc_size_parse(val, out) != 0)
        return fsc_cli_usage_error(cmd, "%s: '%s' is not a size (e.g. 512MiB, 18GiB, 1.5GB)",
                                   opt, val ? val : "");
    return 0;
}

int fsc_cli_ratio(const char *cmd, const char *opt, const char *val, double *out)
{
    char *end = NULL;
    if (val == NULL || val[0] == '\0')
        return fsc_cli_usage_error(cmd, "%s needs a value", opt);
    double v = strtod(val, &end);
    if (end != NULL && *end == '%') {
        v /= 100.0;
        end++;
    }
    if (end == val || *end != '\0' || !(v >= 0.0 && v <= 1.0))
        return fsc_cli_usage_error(cmd, "%s: '%s' is not a ratio between 0 and 1", opt, val);
    *out = v;
    return 0;
}

void fsc_progress_init(fsc_progress_t *p, const char *label)
{
    memset(p, 0, sizeof *p);
    p->label = label;
    p->start_ns = fsc_now_ns();
    const char *no = getenv("FRAGSCOPE_NO_PROGRESS");
    p->enabled = isatty(STDERR_FILENO) && (no == NULL || no[0] == '\0');
}

static void progress_show(fsc_progress_t *p, uint64_t done, uint64_t total)
{
    if (!p->enabled)
        return;
    uint64_t now = fsc_now_ns();
    if (now - p->start_ns < 2000000000ull) /* quick commands show nothing */
        return;
    if (p->shown && now - p->last_ns < 100000000ull)
        return;
    p->last_ns = now;
    p->shown = 1;
    double secs = (double)(now - p->start_ns) / 1e9;
    char line[256];
    int n = 0;
    if (total > 0)
        n = snprintf(line, sizeof line, "%s: %5.1f%%", p->label,
                     100.0 * (double)done / (double)total);
    else
        n = snprintf(line, sizeof line, "%s: %llu", p->label, (unsigned long long)done);
    if (p->bytes && n > 0 && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, "  %.1f of %.1f MB, %.1f MB/s",
                      (double)done / 1e6, (double)total / 1e6, (double)done / 1e6 / secs);
    if (p->events > 0 && n > 0 && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, "  %.2f M events",
                      (double)p->events / 1e6);
    if (total > 0 && done > 0 && done < total && n > 0 && (size_t)n < sizeof line) {
        double eta = secs * (double)(total - done) / (double)done;
        n += snprintf(line + n, sizeof line - (size_t)n, "  ETA %d:%02d", (int)(eta / 60),
                      (int)eta % 60);
    }
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
}

void fsc_progress_update(fsc_progress_t *p, uint64_t done, uint64_t total)
{
    progress_show(p, done, total);
}

void fsc_progress_bytes(fsc_progress_t *p, uint64_t done, uint64_t total)
{
    p->bytes = 1;
    progress_show(p, done, total);
}

void fsc_progress_events(fsc_progress_t *p, uint64_t events) { p->events = events; }

void fsc_progress_done(fsc_progress_t *p)
{
    if (p->enabled && p->shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}
