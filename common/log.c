/*
 * log.c — the logging sink. Library code logs warnings (lenient replays,
 * ignored settings) here; the command line decides where they go. The sink
 * is set once at startup, so it is read without a lock.
 */
#include <stdio.h>

#include "fragscope/common.h"

static fsc_log_fn g_sink;
static void *g_sink_ud;
static fsc_log_level_t g_min = FSC_LOG_WARN;

void fsc_log_set_sink(fsc_log_fn fn, void *ud, fsc_log_level_t min_level)
{
    g_sink = fn;
    g_sink_ud = ud;
    g_min = min_level;
}

void fsc_log(fsc_log_level_t level, const char *fmt, ...)
{
    if (level < g_min || level >= FSC_LOG_OFF)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g_sink != NULL) {
        g_sink(g_sink_ud, level, buf);
        return;
    }
    static const char *const names[] = {"debug", "info", "warning", "error"};
    fprintf(stderr, "fragscope: %s: %s\n", names[level], buf);
}
