/*
 * env.c — recording without code changes: FRAGSCOPE_TRACE=PATH (and
 * FRAGSCOPE_TRACE_MODE=stream | ring:N) make fsc_recorder_from_env open one
 * process-wide recorder, which the exit handler closes. `fragscope record`
 * sets these variables for the command it runs. The path may name the
 * process (%p) and the distributed rank (%r), so that the processes of one
 * job sharing one environment write one trace each.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/recorder.h"

static pthread_mutex_t g_env_mu = PTHREAD_MUTEX_INITIALIZER;
static fsc_recorder_t *g_env;

int fsc_device_samples_parse(const char *value, int *on, uint64_t *interval_ns)
{
    *on = 1;
    *interval_ns = 0;
    if (value == NULL || value[0] == '\0' || strcmp(value, "segments") == 0)
        return 0;
    if (strcmp(value, "off") == 0) {
        *on = 0;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long ms = strtoull(value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || ms == 0 ||
        ms > 3600000ull)
        return FSC_EINVAL;
    *interval_ns = (uint64_t)ms * 1000000ull;
    return 0;
}

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

/* The rank of a distributed job (torchrun and most launchers set RANK and
 * WORLD_SIZE), or -1. */
int fsc_recorder_env_rank(void)
{
    const char *rank = getenv("RANK");
    if (rank == NULL || rank[0] < '0' || rank[0] > '9')
        return -1;
    return atoi(rank);
}

int fsc_trace_path_expand(const char *tmpl, int pid, int rank, int world_size, char *out,
                          size_t cap)
{
    size_t n = 0;
    int has_rank = 0;
    for (const char *p = tmpl; *p != '\0'; p++) {
        char buf[32];
        const char *add = buf;
        if (p[0] == '%' && p[1] == 'p') {
            snprintf(buf, sizeof buf, "%d", pid);
            p++;
        } else if (p[0] == '%' && p[1] == 'r') {
            snprintf(buf, sizeof buf, "%d", rank < 0 ? 0 : rank);
            has_rank = 1;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            add = "%";
            p++;
        } else {
            buf[0] = *p;
            buf[1] = '\0';
        }
        size_t k = strlen(add);
        if (n + k + 1 > cap)
            return FSC_EINVAL;
        memcpy(out + n, add, k + 1);
        n += k;
    }
    /* Several ranks given one path would write over each other's trace:
     * give each its own, PATH.rankN.fstrace, unless the path says where. */
    if (!has_rank && rank >= 0 && world_size > 1) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".rank%d", rank);
        size_t k = strlen(suffix);
        size_t ext = strlen(".fstrace");
        size_t at = n >= ext && strcmp(out + n - ext, ".fstrace") == 0 ? n - ext : n;
        if (n + k + 1 > cap)
            return FSC_EINVAL;
        memmove(out + at + k, out + at, n - at + 1);
        memcpy(out + at, suffix, k);
    }
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
        h.producer = "fragscope " FSC_VERSION_STRING;
        h.rank = fsc_recorder_env_rank();
    }
    /* A caller that does not know its rank (-1) gets the launcher's, the
     * rank the path below is expanded with; a rank it gave is kept. */
    if (h.rank < 0)
        h.rank = fsc_recorder_env_rank();
    const char *ws = getenv("WORLD_SIZE");
    char full[4096];
    if (fsc_trace_path_expand(path, (int)getpid(), fsc_recorder_env_rank(), ws ? atoi(ws) : 1, full,
                              sizeof full) != 0) {
        rc = fsc_err_set(err, FSC_EINVAL, "FRAGSCOPE_TRACE: path too long");
        goto out;
    }
    rc = fsc_recorder_open(full, &h, &o, &g_env, err);
    if (rc == 0)
        *out = g_env;
out:
    pthread_mutex_unlock(&g_env_mu);
    return rc;
}
