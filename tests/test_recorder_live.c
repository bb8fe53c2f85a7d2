/*
 * test_recorder_live.c — the recorder while a program runs: the OOM chunk is
 * on disk when the sink returns, a process killed with SIGKILL leaves every
 * chunk it wrote readable, threads keep their own tag stacks and lose no
 * event, ring mode keeps exactly the last N, the time bound writes idle
 * chunks, FRAGSCOPE_TRACE opens a recorder, and the exit handler closes it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fragscope/recorder.h"
#include "fsc_test.h"
#include "test_recorder_util.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static fsc_event_t alloc_ev(uint64_t i)
{
    fsc_event_t e;
    memset(&e, 0, sizeof e);
    e.type = FSC_EV_ALLOC;
    e.addr = 0x7f0000000000ull + i * 512;
    e.size = 512;
    e.requested = 500;
    e.segment = 0x7f0000000000ull;
    e.time_ns = 1 + i;
    return e;
}

static void test_oom_on_disk_when_sink_returns(void)
{
    for (int ring = 0; ring <= 1; ring++) {
        const char *p = fsc_test_path(ring ? "oom_ring.fstrace" : "oom.fstrace");
        fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
        o.synchronous = 0;
        o.flush_interval_ms = 60000; /* only the OOM may write */
        o.ring_events = ring ? 50 : 0;
        fsc_recorder_t *r = NULL;
        fsc_err_t err;
        CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(p, NULL, &o, &r, &err), 0);
        for (uint64_t i = 0; i < 100; i++) {
            fsc_event_t e = alloc_ev(i);
            fsc_recorder_sink(r, &e);
        }
        fsc_event_t *got = NULL;
        int rc;
        CU_ASSERT_EQUAL(rt_read_all(p, &got, NULL, &rc), 0); /* nothing written yet */
        free(got);
        fsc_event_t oom;
        memset(&oom, 0, sizeof oom);
        oom.type = FSC_EV_OOM;
        oom.size = 100663296;
        oom.requested = 100000000;
        oom.time_ns = 5000;
        oom.oom.allocated = 12884901888ull;
        oom.oom.reserved = 12905873408ull;
        oom.oom.device_free = UINT64_MAX;
        fsc_recorder_sink(r, &oom);
        /* A fresh reader, recorder still open, no flush. */
        fsc_trace_integrity_t in;
        long k = rt_read_all(p, &got, &in, &rc);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_EQUAL_FATAL(k, ring ? 50 : 101);
        CU_ASSERT_EQUAL(got[k - 1].type, FSC_EV_OOM);
        CU_ASSERT_EQUAL(got[k - 1].oom.allocated, 12884901888ull);
        CU_ASSERT_EQUAL(got[k - 1].oom.device_free, UINT64_MAX);
        CU_ASSERT_EQUAL(got[k - 1].thread, got[0].thread);
        if (ring)
            CU_ASSERT_EQUAL(got[0].addr, alloc_ev(51).addr); /* last 49 allocs + OOM */
        CU_ASSERT_EQUAL(in.clean_close, 0);
        free(got);
        CU_ASSERT_EQUAL(fsc_recorder_close(r), 0);
        k = rt_read_all(p, &got, &in, &rc);
        CU_ASSERT_EQUAL(k, ring ? 50 : 101);
        CU_ASSERT_EQUAL(in.clean_close, 1);
        CU_ASSERT_EQUAL(in.events_dropped, ring ? 51 : 0);
        free(got);
    }
}

static void test_sigkill_leaves_written_chunks(void)
{
    const char *p = fsc_test_path("killed.fstrace");
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
        o.chunk_bytes = 4096;
        o.flush_interval_ms = 5;
        fsc_recorder_t *r = NULL;
        fsc_err_t err;
        if (fsc_recorder_open(p, NULL, &o, &r, &err) != 0)
            _exit(3);
        for (uint64_t i = 0;; i++) {
            fsc_event_t e = alloc_ev(i);
            fsc_recorder_sink(r, &e);
            if (i % 64 == 63)
                sleep_ms(1);
        }
    }
    /* Kill it once a good number of chunks are on disk. */
    struct stat st;
    for (int i = 0; i < 4000; i++) {
        if (stat(p, &st) == 0 && st.st_size > 20000)
            break;
        sleep_ms(1);
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    size_t len = 0;
    uint8_t *img = (uint8_t *)fsc_test_slurp(p, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(img);
    uint64_t expect = rt_events_before(img, len, len);
    free(img);
    fsc_event_t *got = NULL;
    fsc_trace_integrity_t in;
    int rc;
    long k = rt_read_all(p, &got, &in, &rc);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT(k > 500);
    CU_ASSERT_EQUAL((uint64_t)k, expect);
    int mismatches = 0;
    for (long i = 0; i < k; i++)
        mismatches += got[i].addr != alloc_ev((uint64_t)i).addr;
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT_EQUAL(in.clean_close, 0);
    CU_ASSERT_EQUAL(in.events, (uint64_t)k);
    free(got);
}

/* ---- threads ------------------------------------------------------------ */

#define N_THREADS 4
#define PER_THREAD 3000

typedef struct worker {
    fsc_recorder_t *r;
    pthread_mutex_t *mu;
    int id;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    char top[16];
    snprintf(top, sizeof top, "t%d", w->id);
    static const char *layers[] = {"layer.0", "layer.1", "layer.2"};
    fsc_tag_push(top);
    for (int j = 0; j < PER_THREAD; j++) {
        fsc_tag_push(layers[j % 3]);
        fsc_event_t e;
        memset(&e, 0, sizeof e);
        e.type = FSC_EV_ALLOC;
        e.addr = ((uint64_t)w->id << 32) | (uint64_t)j;
        e.size = 512;
        /* Like the allocator: the sink runs under the allocator's lock. */
        pthread_mutex_lock(w->mu);
        fsc_recorder_sink(w->r, &e);
        pthread_mutex_unlock(w->mu);
        fsc_tag_pop();
        if (j % 500 == 0) {
            char m[32];
            snprintf(m, sizeof m, "w%d mark %d", w->id, j);
            fsc_mark(m);
        }
    }
    fsc_tag_pop();
    return NULL;
}

static void test_threads_keep_their_tags(void)
{
    const char *p = fsc_test_path("mt.fstrace");
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.chunk_bytes = 8192;
    fsc_recorder_t *r = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(p, NULL, &o, &r, &err), 0);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_t th[N_THREADS];
    worker_t w[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        w[i] = (worker_t){r, &mu, i};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_close(r), 0);

    fsc_trace_reader_t *rd = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(p, &rd, &err), 0);
    int count[N_THREADS] = {0}, next[N_THREADS] = {0}, markers = 0, bad_tag = 0, bad_order = 0;
    uint32_t thread_of[N_THREADS] = {0};
    int bad_thread = 0, bad_time = 0;
    uint64_t prev_time = 0;
    fsc_event_t ev;
    char path[128], want[128];
    while (fsc_trace_next(rd, &ev) == 1) {
        /* Stamped under the recorder's lock: in file order, 64 ns steps. */
        bad_time += ev.time_ns < prev_time || ev.time_ns % 64 != 0;
        prev_time = ev.time_ns;
        if (ev.type == FSC_EV_MARKER) {
            markers++;
            continue;
        }
        int id = (int)(ev.addr >> 32), j = (int)(ev.addr & 0xffffffffu);
        CU_ASSERT_FATAL(id >= 0 && id < N_THREADS);
        count[id]++;
        bad_order += j != next[id]; /* each thread's events in its order */
        next[id] = j + 1;
        fsc_trace_tag_path(rd, ev.tag, path, sizeof path);
        snprintf(want, sizeof want, "t%d/layer.%d", id, j % 3);
        bad_tag += strcmp(path, want) != 0;
        if (thread_of[id] == 0)
            thread_of[id] = ev.thread;
        bad_thread += ev.thread != thread_of[id] || ev.thread == 0;
    }
    fsc_trace_integrity_t in;
    fsc_trace_get_integrity(rd, &in);
    fsc_trace_close(rd);
    for (int i = 0; i < N_THREADS; i++) {
        CU_ASSERT_EQUAL(count[i], PER_THREAD);
        for (int k = i + 1; k < N_THREADS; k++)
            CU_ASSERT_NOT_EQUAL(thread_of[i], thread_of[k]);
    }
    CU_ASSERT_EQUAL(bad_order, 0);
    CU_ASSERT_EQUAL(bad_tag, 0);
    CU_ASSERT_EQUAL(bad_thread, 0);
    CU_ASSERT_EQUAL(bad_time, 0);
    CU_ASSERT_EQUAL(markers, N_THREADS * (PER_THREAD / 500));
    CU_ASSERT_EQUAL(in.clean_close, 1);
    /* 4 top nodes + 12 layer nodes, each defined once. */
    CU_ASSERT_EQUAL(in.events, (uint64_t)(N_THREADS * PER_THREAD + markers));
}

static void test_ring_keeps_last_n(void)
{
    for (int bg = 0; bg <= 1; bg++) {
        const char *p = fsc_test_path(bg ? "ring_bg.fstrace" : "ring.fstrace");
        fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
        o.synchronous = !bg;
        o.ring_events = 100;
        o.chunk_bytes = 512;
        fsc_recorder_t *r = NULL;
        fsc_err_t err;
        CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(p, NULL, &o, &r, &err), 0);
        for (uint64_t i = 0; i < 1000; i++) {
            fsc_event_t e = alloc_ev(i);
            e.thread = 9;
            if (i == 950) {
                e.type = FSC_EV_MARKER;
                e.text = "step 950";
                e.text_len = 8;
            }
            CU_ASSERT_EQUAL(fsc_recorder_write(r, &e), 0);
        }
        CU_ASSERT_EQUAL_FATAL(fsc_recorder_close(r), 0);
        fsc_trace_reader_t *rd = NULL;
        CU_ASSERT_EQUAL_FATAL(fsc_trace_open(p, &rd, &err), 0);
        CU_ASSERT(fsc_trace_header(rd)->flags & FSC_TRACE_F_RING);
        fsc_event_t ev;
        uint64_t i = 900, bad = 0;
        while (fsc_trace_next(rd, &ev) == 1) {
            fsc_event_t want = alloc_ev(i);
            want.thread = 9;
            if (i == 950) {
                want.type = FSC_EV_MARKER;
                want.text = "step 950";
                want.text_len = 8;
            }
            bad += !rt_event_eq(&ev, &want);
            i++;
        }
        fsc_trace_integrity_t in;
        fsc_trace_get_integrity(rd, &in);
        fsc_trace_close(rd);
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(i, 1000);
        CU_ASSERT_EQUAL(in.events, 100);
        CU_ASSERT_EQUAL(in.events_dropped, 900);
        CU_ASSERT_EQUAL(in.clean_close, 1);
    }
}

static void test_time_bound_and_flush(void)
{
    const char *p = fsc_test_path("timed.fstrace");
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.flush_interval_ms = 20;
    fsc_recorder_t *r = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(p, NULL, &o, &r, &err), 0);
    fsc_event_t e = alloc_ev(0);
    e.time_ns = 0; /* the sink stamps it */
    fsc_recorder_sink(r, &e);
    fsc_event_t *got = NULL;
    int rc;
    long k = 0;
    /* up to 10 s: a loaded machine (the sanitizer build, both cores busy)
     * can hold the writer thread back well past the 20 ms bound */
    for (int i = 0; i < 2000 && k == 0; i++) {
        sleep_ms(5);
        k = rt_read_all(p, &got, NULL, &rc);
        free(got);
    }
    CU_ASSERT_EQUAL(k, 1); /* written by the time bound, no flush */
    e = alloc_ev(1);
    fsc_recorder_sink(r, &e);
    CU_ASSERT_EQUAL(fsc_recorder_flush(r), 0);
    k = rt_read_all(p, &got, NULL, &rc);
    CU_ASSERT_EQUAL(k, 2);
    if (k == 2) {
        CU_ASSERT(got[0].time_ns > 0);
        CU_ASSERT(got[0].thread != 0);
    }
    free(got);
    CU_ASSERT_EQUAL(fsc_recorder_close(r), 0);
}

static void test_env_and_exit_handler(void)
{
    const char *p = fsc_test_path("env.fstrace");
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        setenv("FRAGSCOPE_TRACE", p, 1);
        setenv("FRAGSCOPE_TRACE_MODE", "ring:5", 1);
        unsetenv("WORLD_SIZE");
        fsc_recorder_t *r = NULL, *again = NULL;
        fsc_err_t err;
        fsc_trace_header_t h = {0};
        h.producer = "env test";
        h.rank = 1;
        if (fsc_recorder_from_env(&h, &r, &err) != 0 || r == NULL)
            _exit(3);
        if (fsc_recorder_from_env(&h, &again, &err) != 0 || again != r)
            _exit(4);
        fsc_tag_push("main");
        for (uint64_t i = 0; i < 20; i++) {
            fsc_event_t e = alloc_ev(i);
            fsc_recorder_sink(r, &e);
        }
        exit(0); /* no close: the exit handler finishes the trace */
    }
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT_FATAL(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    fsc_trace_reader_t *rd = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(p, &rd, &err), 0);
    CU_ASSERT_STRING_EQUAL(fsc_trace_header(rd)->producer, "env test");
    CU_ASSERT_EQUAL(fsc_trace_header(rd)->rank, 1);
    CU_ASSERT_EQUAL(fsc_trace_header(rd)->pid, (uint32_t)pid);
    fsc_event_t ev;
    uint64_t i = 15;
    char path[64];
    while (fsc_trace_next(rd, &ev) == 1) {
        CU_ASSERT_EQUAL(ev.addr, alloc_ev(i).addr);
        fsc_trace_tag_path(rd, ev.tag, path, sizeof path);
        CU_ASSERT_STRING_EQUAL(path, "main");
        i++;
    }
    fsc_trace_integrity_t in;
    fsc_trace_get_integrity(rd, &in);
    fsc_trace_close(rd);
    CU_ASSERT_EQUAL(i, 20);
    CU_ASSERT_EQUAL(in.clean_close, 1);

    /* Unset: no recorder, no error; a bad mode: a clear error. */
    fsc_recorder_t *r = (fsc_recorder_t *)1;
    unsetenv("FRAGSCOPE_TRACE");
    CU_ASSERT_EQUAL(fsc_recorder_from_env(NULL, &r, &err), 0);
    CU_ASSERT_PTR_NULL(r);
    fflush(NULL);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        setenv("FRAGSCOPE_TRACE", fsc_test_path("bad.fstrace"), 1);
        setenv("FRAGSCOPE_TRACE_MODE", "ring:x", 1);
        fsc_recorder_t *rr = NULL;
        fsc_err_t e2;
        int rc = fsc_recorder_from_env(NULL, &rr, &e2);
        _exit(rc == FSC_EINVAL && strstr(e2.msg, "FRAGSCOPE_TRACE_MODE") != NULL ? 0 : 5);
    }
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* A rank of a distributed job gets its own file and its rank in the
     * header, without any code knowing about ranks. */
    fflush(NULL);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        setenv("FRAGSCOPE_TRACE", fsc_test_path("dist.fstrace"), 1);
        unsetenv("FRAGSCOPE_TRACE_MODE");
        setenv("RANK", "2", 1);
        setenv("WORLD_SIZE", "4", 1);
        fsc_recorder_t *rr = NULL;
        fsc_err_t e2;
        if (fsc_recorder_from_env(NULL, &rr, &e2) != 0 || rr == NULL)
            _exit(6);
        fsc_event_t e = alloc_ev(0);
        fsc_recorder_sink(rr, &e);
        exit(0);
    }
    waitpid(pid, &status, 0);
    CU_ASSERT_FATAL(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_FALSE(fsc_test_file_exists(fsc_test_path("dist.fstrace")));
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(fsc_test_path("dist.rank2.fstrace"), &rd, &err), 0);
    CU_ASSERT_EQUAL(fsc_trace_header(rd)->rank, 2);
    CU_ASSERT_EQUAL(fsc_trace_next(rd, &ev), 1);
    fsc_trace_close(rd);
}

/* One child that opens the environment's recorder with header rank
 * hdr_rank under RANK=1 WORLD_SIZE=2 and writes one event; the rank the
 * trace's header then records. */
static int env_rank_child(const char *name, int hdr_rank)
{
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        setenv("FRAGSCOPE_TRACE", fsc_test_path(name), 1);
        unsetenv("FRAGSCOPE_TRACE_MODE");
        setenv("RANK", "1", 1);
        setenv("WORLD_SIZE", "2", 1);
        fsc_trace_header_t h = {0};
        h.producer = "env rank test";
        h.rank = hdr_rank;
        fsc_recorder_t *r = NULL;
        fsc_err_t e;
        if (fsc_recorder_from_env(&h, &r, &e) != 0 || r == NULL)
            _exit(6);
        fsc_event_t ev = alloc_ev(0);
        fsc_recorder_sink(r, &ev);
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT_FATAL(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char p[1100];
    snprintf(p, sizeof p, "%s", fsc_test_path(name));
    char *dot = strstr(p, ".fstrace");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dot);
    snprintf(dot, sizeof p - (size_t)(dot - p), ".rank1.fstrace");
    fsc_trace_reader_t *rd = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(p, &rd, &err), 0);
    int rank = fsc_trace_header(rd)->rank;
    fsc_trace_close(rd);
    return rank;
}

static void test_env_rank_fills_unknown_rank(void)
{
    /* A caller's own header with the rank unknown gets the launcher's; a
     * rank the caller gave is kept. */
    CU_ASSERT_EQUAL(env_rank_child("envr_unknown.fstrace", -1), 1);
    CU_ASSERT_EQUAL(env_rank_child("envr_given.fstrace", 3), 3);
}

static void test_forked_child_does_not_write(void)
{
    /* A child forked by a recording program (data loader workers) exits
     * through exit(); the parent's trace must not get its writes. */
    for (int bg = 0; bg <= 1; bg++) {
    const char *p = fsc_test_path(bg ? "forked_bg.fstrace" : "forked.fstrace");
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = !bg;
    fsc_recorder_t *r = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(p, NULL, &o, &r, &err), 0);
    fsc_event_t e = alloc_ev(0);
    CU_ASSERT_EQUAL(fsc_recorder_write(r, &e), 0);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        fsc_event_t c = alloc_ev(99);
        fsc_recorder_sink(r, &c);
        fsc_recorder_flush(r);
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    e = alloc_ev(1);
    CU_ASSERT_EQUAL(fsc_recorder_write(r, &e), 0);
    CU_ASSERT_EQUAL(fsc_recorder_close(r), 0);
    fsc_event_t *got = NULL;
    fsc_trace_integrity_t in;
    int rc;
    long k = rt_read_all(p, &got, &in, &rc);
    CU_ASSERT_EQUAL(k, 2);
    CU_ASSERT_EQUAL(in.clean_close, 1);
    if (k == 2)
        CU_ASSERT_EQUAL(got[1].addr, alloc_ev(1).addr);
    free(got);
    }
}

static void test_fatal_signal_flushes(void)
{
    /* With signal handlers, buffered events reach the file when the program
     * aborts, though the time bound has not passed and nobody flushed, and
     * the end record says the file holds everything. */
    const char *p = fsc_test_path("aborted.fstrace");
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
        o.flush_interval_ms = 60000;
        o.install_signal_handlers = 1;
        fsc_recorder_t *r = NULL;
        fsc_err_t err;
        if (fsc_recorder_open(p, NULL, &o, &r, &err) != 0)
            _exit(3);
        for (uint64_t i = 0; i < 100; i++) {
            fsc_event_t e = alloc_ev(i);
            fsc_recorder_sink(r, &e);
        }
        abort();
    }
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    fsc_event_t *got = NULL;
    fsc_trace_integrity_t in;
    int rc;
    long k = rt_read_all(p, &got, &in, &rc);
    CU_ASSERT_EQUAL(k, 100);
    CU_ASSERT_EQUAL(in.clean_close, 1); /* every event received is there */
    if (k == 100)
        CU_ASSERT_EQUAL(got[99].addr, alloc_ev(99).addr);
    free(got);
}

static const fsc_test_case_t k_tests[] = {
    {"oom_on_disk_when_sink_returns", test_oom_on_disk_when_sink_returns},
    {"sigkill_leaves_written_chunks", test_sigkill_leaves_written_chunks},
    {"threads_keep_their_tags", test_threads_keep_their_tags},
    {"ring_keeps_last_n", test_ring_keeps_last_n},
    {"time_bound_and_flush", test_time_bound_and_flush},
    {"env_and_exit_handler", test_env_and_exit_handler},
    {"env_rank_fills_unknown_rank", test_env_rank_fills_unknown_rank},
    {"forked_child_does_not_write", test_forked_child_does_not_write},
    {"fatal_signal_flushes", test_fatal_signal_flushes},
    {NULL, NULL},
};

FSC_TEST_MAIN("recorder_live", k_tests)
