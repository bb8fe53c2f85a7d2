/*
 * whatif_run.c — several replays of one request stream at once, one thread
 * per core. The stream is only read; every replay has its own allocator and
 * sim device, so threads share nothing but a work counter.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "whatif_internal.h"
#include "fsc/thread.h"

typedef struct job {
    const fsc_request_stream_t *rs;
    const fsc_alloc_config_t *cfgs;
    const char *const *configs;
    const fsc_whatif_opts_t *opts;
    fsc_whatif_result_t *out;
    size_t n;
    atomic_size_t next;
    pthread_mutex_t mu; /* serializes progress calls */
    uint64_t done;
} job_t;

static void run_one(job_t *j, size_t i)
{
    fsc_whatif_result_t *r = &j->out[i];
    fsc_err_t err = {0, ""};
    memset(r, 0, sizeof *r);
    size_t len = strlen(j->configs[i]);
    if (len >= sizeof r->config)
        len = sizeof r->config - 1;
    memcpy(r->config, j->configs[i], len);
    r->config[len] = '\0';
    r->rc = fsc__whatif_replay_cfg(j->rs, &j->cfgs[i], j->opts, NULL, r, &err);
    if (r->rc != 0)
        snprintf(r->error, sizeof r->error, "%s", fsc_err_msg(&err));
}

static void *worker(void *arg)
{
    fsc__thread_name("fsc-whatif");
    job_t *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            break;
        run_one(j, i);
        if (j->opts->progress != NULL) {
            pthread_mutex_lock(&j->mu);
            j->opts->progress(j->opts->progress_ud, ++j->done, j->n);
            pthread_mutex_unlock(&j->mu);
        }
    }
    return NULL;
}

int fsc__whatif_threads(int requested, size_t jobs)
{
    long cores = requested > 0 ? requested : sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    if ((size_t)cores > jobs)
        cores = (long)jobs;
    return cores < 1 ? 1 : (int)cores;
}

int fsc_whatif_run(const fsc_request_stream_t *rs, const char *const *configs, size_t n,
                   const fsc_whatif_opts_t *opts, fsc_whatif_result_t *out, fsc_err_t *err)
{
    if (rs == NULL || (n > 0 && (configs == NULL || out == NULL)))
        return fsc_err_set(err, FSC_EINVAL, "what-if: no stream, configs or results");
    if (n == 0)
        return 0;
    fsc_alloc_config_t *cfgs = calloc(n, sizeof *cfgs);
    if (cfgs == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
    for (size_t i = 0; i < n; i++) {
        fsc_err_t perr = {0, ""};
        const char *c = configs[i] != NULL ? configs[i] : "";
        int rc = fsc_alloc_config_parse(c, &cfgs[i], &perr);
        if (rc != 0) {
            free(cfgs);
            return fsc_err_set(err, rc, "bad config \"%s\": %s", c, fsc_err_msg(&perr));
        }
    }
    fsc_whatif_opts_t o = FSC_WHATIF_OPTS_DEFAULT;
    if (opts != NULL)
        o = *opts;
    job_t j = {rs, cfgs, configs, &o, out, n, 0, PTHREAD_MUTEX_INITIALIZER, 0};
    int nt = fsc__whatif_threads(o.threads, n);
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    int started = 0;
    if (th != NULL)
        for (; started < nt - 1; started++)
            if (pthread_create(&th[started], NULL, worker, &j) != 0)
                break;
    worker(&j); /* the calling thread works too, and alone if no thread started */
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    free(th);
    free(cfgs);
    pthread_mutex_destroy(&j.mu);
    for (size_t i = 0; i < n; i++)
        if (out[i].rc != 0)
            return fsc_err_set(err, out[i].rc, "config \"%s\": %s", out[i].config, out[i].error);
    return 0;
}
