/*
 * test_crash.c — a recording process killed with SIGKILL at a random moment
 * leaves a trace that holds exactly a prefix of what it recorded, and at
 * least every event it knew to be on disk.
 *
 * The child runs the caching allocator on the sim backend with a recorder in
 * background mode (small chunks, a short time bound). Its event sink first
 * sends the event on a pipe, then hands it to the recorder, so the parent
 * knows every event that may be in the trace. After each fsc_recorder_flush
 * and after every OOM event (whose chunk the recorder writes before the
 * sink returns) the child also sends how many events are on disk for sure.
 * The parent kills the child at a random moment, many times, and checks the
 * recovered trace against the reports: every event read back equals the
 * reported event at the same position, field by field (nothing invented,
 * nothing reordered), and there are at least as many as the last "on disk"
 * report said. A second test sends SIGTERM to children that installed the
 * recorder's fatal-signal handlers: the same guarantees, and a trace the
 * handler closed holds every event the recorder had received.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fragscope/allocator.h"
#include "fragscope/recorder.h"
#include "fsc_test.h"

/* One pipe message; small enough for write(2) to be atomic. */
typedef struct msg {
    uint32_t kind; /* MSG_EVENT or MSG_ON_DISK */
    uint32_t pad;
    uint64_t count; /* MSG_ON_DISK: events certainly written */
    fsc_event_t ev; /* MSG_EVENT (text pointer not used) */
} msg_t;

enum { MSG_EVENT = 1, MSG_ON_DISK = 2 };

/* ---- the child ------------------------------------------------------------ */

typedef struct child {
    int fd;
    fsc_recorder_t *rec;
    uint64_t seq;
    uint64_t oom_written; /* events on disk after the last OOM */
} child_t;

static void send_msg(int fd, const msg_t *m)
{
    const char *p = (const char *)m;
    size_t left = sizeof *m;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(3);
        p += w;
        left -= (size_t)w;
    }
}

/* Report first, record second: whatever reaches the trace was reported. The
 * recorder fills time, thread and tag only when 0, so setting them here
 * makes every field of the recorded event known. */
static void child_sink(void *ud, const fsc_event_t *in)
{
    child_t *c = ud;
    msg_t m;
    memset(&m, 0, sizeof m);
    m.kind = MSG_EVENT;
    m.ev = *in;
    m.ev.time_ns = 1000 + c->seq * 37;
    m.ev.thread = 1;
    m.ev.tag = 0;
    m.ev.text = NULL;
    m.ev.text_len = 0;
    send_msg(c->fd, &m);
    fsc_recorder_sink(c->rec, &m.ev);
    c->seq++;
    if (in->type == FSC_EV_OOM)
        c->oom_written = c->seq;
}

static uint64_t child_rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void child_main(const char *path, int fd, uint64_t seed, int handlers)
{
    child_t c = {fd, NULL, 0, 0};
    fsc_err_t err;
    fsc_recorder_opts_t ro = FSC_RECORDER_OPTS_DEFAULT;
    ro.synchronous = 0;
    ro.chunk_bytes = 1024 + (size_t)(seed % 4) * 1024;
    ro.flush_interval_ms = 2;
    ro.install_signal_handlers = handlers;
    fsc_backend_t *be = NULL;
    fsc_allocator_t *a = NULL;
    if (fsc_recorder_open(path, NULL, &ro, &c.rec, &err) != 0 ||
        fsc_backend_sim_create(1 * FSC_GiB, 0, &be) != 0)
        _exit(4);
    fsc_allocator_opts_t o = {FSC_ALLOC_CONFIG_DEFAULT, be, 768 * FSC_MiB, child_sink, &c};
    if (fsc_allocator_create(&o, &a, &err) != 0)
        _exit(5);
    uint64_t live[128] = {0};
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    /* Far more work than any kill delay allows; the parent always kills. */
    for (long op = 0; op < 50000000; op++) {
        uint64_t r = child_rnd(&s);
        size_t slot = (size_t)(r % 128);
        if (live[slot] != 0) {
            fsc_allocator_free(a, live[slot]);
            live[slot] = 0;
        } else {
            uint64_t size = (r >> 8) % 5 == 0 ? (r >> 16) % (64 * FSC_MiB) + 1
                                               : (r >> 16) % (512 * FSC_KiB) + 1;
            if (fsc_allocator_malloc(a, size, (r >> 40) % 2, &live[slot]) != 0)
                live[slot] = 0; /* OOM: its chunk is on disk now */
        }
        if (c.oom_written != 0) {
            msg_t m = {MSG_ON_DISK, 0, c.oom_written, {0}};
            send_msg(fd, &m);
            c.oom_written = 0;
        }
        if ((r >> 48) % 997 == 0) {
            uint64_t n = c.seq;
            if (fsc_recorder_flush(c.rec) == 0) {
                msg_t m = {MSG_ON_DISK, 0, n, {0}};
                send_msg(fd, &m);
            }
        }
    }
    _exit(6);
}

/* ---- the parent ------------------------------------------------------------ */

typedef struct reports {
    fsc_event_t *ev;
    size_t n, cap;
    uint64_t on_disk;
} reports_t;

static void take(reports_t *r, const msg_t *m)
{
    if (m->kind == MSG_ON_DISK) {
        if (m->count > r->on_disk)
            r->on_disk = m->count;
        return;
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4096;
        r->ev = realloc(r->ev, r->cap * sizeof *r->ev);
    }
    r->ev[r->n++] = m->ev;
}

/* Read messages until the deadline (deadline_ns 0: until end of file). */
static void pump(int fd, reports_t *r, uint64_t deadline_ns, msg_t *partial, size_t *have)
{
    for (;;) {
        int wait_ms = -1;
        if (deadline_ns != 0) {
            uint64_t now = fsc_now_ns();
            if (now >= deadline_ns)
                return;
            wait_ms = (int)((deadline_ns - now) / 1000000) + 1;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int pr = poll(&p, 1, wait_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        ssize_t got = read(fd, (char *)partial + *have, sizeof *partial - *have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return; /* end of file: the child is gone */
        *have += (size_t)got;
        if (*have == sizeof *partial) {
            take(r, partial);
            *have = 0;
        }
    }
}

static int same_event(const fsc_event_t *a, const fsc_event_t *b)
{
    return a->type == b->type && a->pool == b->pool && a->reserved0 == b->reserved0 &&
           a->tag == b->tag && a->time_ns == b->time_ns && a->addr == b->addr &&
           a->size == b->size && a->requested == b->requested && a->stream == b->stream &&
           a->segment == b->segment && a->other == b->other && a->thread == b->thread &&
           a->text_len == b->text_len && memcmp(&a->oom, &b->oom, sizeof a->oom) == 0;
}

typedef struct outcome {
    uint64_t reported, on_disk, recovered;
    int clean; /* the trace was closed by the signal handler */
    int ok;
} outcome_t;

/* Kill a recording child with sig after delay_us; with SIGTERM the child
 * has the recorder's fatal-signal handlers installed. */
static outcome_t one_kill(unsigned round, uint64_t delay_us, int sig)
{
    outcome_t o = {0, 0, 0, 0, 0};
    char path[1100];
    snprintf(path, sizeof path, "%s/crash-%u.fstrace", fsc_test_tmpdir(), round);
    int fds[2];
    if (pipe(fds) != 0)
        return o;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child_main(path, fds[1], round + 1, sig != SIGKILL);
    }
    close(fds[1]);
    reports_t r = {NULL, 0, 0, 0};
    msg_t partial;
    size_t have = 0;
    pump(fds[0], &r, fsc_now_ns() + delay_us * 1000, &partial, &have);
    kill(pid, sig);
    pump(fds[0], &r, 0, &partial, &have);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    o.reported = r.n;
    o.on_disk = r.on_disk;
    int killed = WIFSIGNALED(status) && WTERMSIG(status) == sig;

    fsc_trace_reader_t *rd = NULL;
    fsc_err_t err;
    int rc = fsc_trace_open(path, &rd, &err);
    int ok = killed;
    if (rc != 0) {
        /* Killed before the header reached the disk: nothing was promised. */
        ok = ok && rc == FSC_ENOENT && r.on_disk == 0;
    } else {
        fsc_event_t ev;
        int got;
        while ((got = fsc_trace_next(rd, &ev)) == 1) {
            if (o.recovered >= r.n || !same_event(&ev, &r.ev[o.recovered])) {
                fprintf(stderr, "\n  round %u: event %llu read back differs from the one "
                                "reported (or was never reported)\n",
                        round, (unsigned long long)o.recovered);
                ok = 0;
                break;
            }
            o.recovered++;
        }
        fsc_trace_integrity_t integ;
        fsc_trace_get_integrity(rd, &integ);
        ok = ok && got == 0 && integ.events == o.recovered;
        o.clean = integ.clean_close;
        if (sig == SIGKILL && integ.clean_close)
            ok = 0; /* nobody could have written the end record */
        /* The handler wrote the end record only after everything the
         * recorder had received: all reported events, but perhaps the
         * last, which was reported before it reached the recorder. */
        if (integ.clean_close && o.recovered + 1 < r.n) {
            fprintf(stderr, "\n  round %u: closed cleanly with %llu of %llu events\n", round,
                    (unsigned long long)o.recovered, (unsigned long long)r.n);
            ok = 0;
        }
        fsc_trace_close(rd);
    }
    if (o.recovered < r.on_disk) {
        fprintf(stderr, "\n  round %u: %llu events read back, %llu were on disk\n", round,
                (unsigned long long)o.recovered, (unsigned long long)r.on_disk);
        ok = 0;
    }
    free(r.ev);
    unlink(path);
    o.ok = ok;
    return o;
}

typedef struct tally {
    unsigned rounds, failed, with_events, beyond_flush, after_flush, clean;
    uint64_t total;
} tally_t;

static tally_t kill_many(int sig, unsigned rounds, unsigned first_round)
{
    uint64_t s = 0x5851f42d4c957f2dull ^ (uint64_t)sig;
    tally_t t = {rounds, 0, 0, 0, 0, 0, 0};
    for (unsigned i = 0; i < rounds; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint64_t delay_us = 3000 + s % 60000; /* 3 .. 63 ms */
        outcome_t o = one_kill(first_round + i, delay_us, sig);
        t.failed += !o.ok;
        t.with_events += o.recovered > 0;
        t.beyond_flush += o.recovered > o.on_disk;
        t.after_flush += o.on_disk > 0;
        t.clean += o.clean;
        t.total += o.recovered;
    }
    fprintf(stderr, "\n  %u kills (%s): %u traces with events, %u with a flush/OOM report, "
                    "%u recovered past the last report, %u closed by the handler, "
                    "%llu events checked\n",
            rounds, sig == SIGKILL ? "SIGKILL" : "SIGTERM", t.with_events, t.after_flush,
            t.beyond_flush, t.clean, (unsigned long long)t.total);
    return t;
}

static void test_sigkill_leaves_a_prefix(void)
{
    tally_t t = kill_many(SIGKILL, 30, 0);
    CU_ASSERT_EQUAL(t.failed, 0);
    /* The kills land at interesting moments: most traces hold events, some
     * after a confirmed write, and the background writer's chunks show up
     * beyond what was confirmed. */
    CU_ASSERT(t.with_events >= t.rounds / 2);
    CU_ASSERT(t.after_flush >= 1);
    CU_ASSERT(t.beyond_flush >= 1);
}

/* SIGTERM with the recorder's handlers: the same prefix guarantees, and
 * when the handler could take the recorder's locks (best effort: not when
 * the signal lands while a thread holds them) the trace is closed with
 * every event the recorder received. */
static void test_sigterm_handler_writes_everything(void)
{
    tally_t t = kill_many(SIGTERM, 10, 100);
    CU_ASSERT_EQUAL(t.failed, 0);
    CU_ASSERT(t.clean >= t.rounds / 2);
}

static const fsc_test_case_t k_tests[] = {
    {"SIGKILL at random moments leaves an exact prefix", test_sigkill_leaves_a_prefix},
    {"SIGTERM: the handler closes the trace with every event", test_sigterm_handler_writes_everything},
    {NULL, NULL},
};

FSC_TEST_MAIN("crash", k_tests)
