/*
 * env.c — recording without code changes: FRAGSCOPE_TRACE=PATH (and
 * FRAGSCOPE_TRACE_MODE=stream | ring:N) make fsc_recorder_from_env open one
 * process-wide recorder, which the exit handler closes. `fragscope record`
 * sets these variables for the command it runs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/recorder.h"

static pthread_mutex_t g_env_mu = PTHREAD_MUTEX_INITIALIZER;
static fsc_recorder_t *g_env;

int fsc_trace_mode_parse(const char *mode, uint64_t *ring_events)
{
    *ring_events = 0;
    if (mode == NULL || mode[0] == '\0' || strcmp(mode, "stream") == 0)
        return 0;
    if (strncmp(mode, "ring:", 5) != 0)
        return FSC_EINVAL;
    const char *n = mode + 5;
    if (*n < '0' || *n > '9')
        return FSC_EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(n, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0)
        return FSC_EINVAL;
    *ring_events = v;
    return 0;
}

int fsc_recorder_from_env(const fsc_trace_header_t *hdr, fsc_recorder_t **out, fsc_err_t *err)
{
    if (out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "no output pointer");
    *out = NULL;
    const char *path = getenv("FRAGSCOPE_TRACE");
    if (path == NULL || path[0] == '\0')
        return 0;
    pthread_mutex_lock(&g_env_mu);
    int rc = 0;
    if (g_env != NULL) {
        *out = g_env;
        goto out;
    }
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    const char *mode = getenv("FRAGSCOPE_TRACE_MODE");
    if (fsc_trace_mode_parse(mode, &o.ring_events) != 0) {
        rc = fsc_err_set(err, FSC_EINVAL,
                         "FRAGSCOPE_TRACE_MODE: '%s' is neither 'stream' nor 'ring:N'", mode);
        goto out;
    }
    o.install_signal_handlers = 1;
    fsc_trace_header_t h = {0};
    if (hdr != NULL) {
        h = *hdr;
    } else {
        const char *rank = getenv("RANK");
        h.producer = "fragscope " FSC_VERSION_STRING;
        h.rank = rank != NULL && rank[0] != '\0' ? atoi(rank) : -1;
    }
    rc = fsc_recorder_open(path, &h, &o, &g_env, err);
    if (rc == 0)
        *out = g_env;
out:
    pthread_mutex_unlock(&g_env_mu);
    return rc;
}
