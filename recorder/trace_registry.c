/*
 * trace_registry.c — the process's open recorders: fsc_mark writes into all
 * of them, the exit handler finishes all of them (so a program that never
 * calls fsc_recorder_close still leaves a cleanly closed trace), and the
 * optional fatal-signal handlers push their buffered events to disk before
 * the process dies.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "trace_writer.h"

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static fsc_recorder_t *g_reg;
static pthread_once_t g_atexit_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_signal_once = PTHREAD_ONCE_INIT;

static const int k_fatal[] = {SIGSEGV, SIGABRT, SIGBUS, SIGTERM};
#define N_FATAL (sizeof k_fatal / sizeof k_fatal[0])
static struct sigaction g_old[N_FATAL];

static void at_exit(void)
{
    for (;;) {
        pthread_mutex_lock(&g_reg_mu);
        fsc_recorder_t *r = g_reg;
        if (r != NULL)
            g_reg = r->reg_next;
        pthread_mutex_unlock(&g_reg_mu);
        if (r == NULL)
            break;
        /* Finished but not freed: the owner may still hold the pointer and
         * call fsc_recorder_close later (events after this are ignored). */
        fsc__recorder_finalize(r);
    }
}

/* In a child forked by a recording program (data loader workers, a
 * subprocess before exec): the recorders belong to the parent. The child
 * has only the forking thread, so the writer threads are gone and a lock
 * held by another thread at the fork would never be released. Make every
 * recorder inert in the child: events are ignored and closing only frees. */
static void at_fork_child(void)
{
    for (fsc_recorder_t *r = g_reg; r != NULL; r = r->reg_next) {
        r->lock = 0;
        r->finished = 1;
        r->has_thread = 0;
        pthread_mutex_init(&r->io_mu, NULL);
        pthread_mutex_init(&r->q_mu, NULL);
        pthread_mutex_init(&r->err_mu, NULL);
    }
    pthread_mutex_init(&g_reg_mu, NULL);
}

static void register_atexit(void)
{
    atexit(at_exit);
    pthread_atfork(NULL, NULL, at_fork_child);
}

static void on_fatal(int sig)
{
    /* No lock: the crashing thread may hold g_reg_mu. The list is only
     * read, and a recorder closing concurrently is a risk accepted here. */
    for (fsc_recorder_t *r = g_reg; r != NULL; r = r->reg_next)
        if (r->opts.install_signal_handlers)
            fsc__recorder_emergency_flush(r);
    for (size_t i = 0; i < N_FATAL; i++)
        if (k_fatal[i] == sig)
            sigaction(sig, &g_old[i], NULL);
    raise(sig);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    for (size_t i = 0; i < N_FATAL; i++)
        sigaction(k_fatal[i], &sa, &g_old[i]);
}

void fsc__registry_add(fsc_recorder_t *r)
{
    pthread_once(&g_atexit_once, register_atexit);
    if (r->opts.install_signal_handlers)
        pthread_once(&g_signal_once, install_signals);
    pthread_mutex_lock(&g_reg_mu);
    r->reg_next = g_reg;
    g_reg = r;
    pthread_mutex_unlock(&g_reg_mu);
}

void fsc__registry_remove(fsc_recorder_t *r)
{
    pthread_mutex_lock(&g_reg_mu);
    for (fsc_recorder_t **p = &g_reg; *p != NULL; p = &(*p)->reg_next) {
        if (*p == r) {
            *p = r->reg_next;
            break;
        }
    }
    r->reg_next = NULL;
    pthread_mutex_unlock(&g_reg_mu);
}

void fsc_mark(const char *text)
{
    fsc_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = FSC_EV_MARKER;
    ev.text = text != NULL ? text : "";
    ev.text_len = (uint32_t)strnlen(ev.text, FSC__MAX_STRING_BYTES);
    pthread_mutex_lock(&g_reg_mu);
    for (fsc_recorder_t *r = g_reg; r != NULL; r = r->reg_next)
        fsc_recorder_sink(r, &ev);
    pthread_mutex_unlock(&g_reg_mu);
}
