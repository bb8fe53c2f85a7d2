/*
 * test_corrupt_outputs.c — what may go wrong on the output side of every
 * command, one class per hazard:
 *
 * - output paths: an output that is one of the inputs (same name, another
 *   name, a symlink, a hard link) is refused with status 2 and one line, and
 *   the input is left byte for byte as it was;
 * - unusable paths: an input that is a directory, missing or unreadable, an
 *   output that is a directory or in a folder that does not exist: status
 *   2, one line naming the file, nothing written;
 * - signals: SIGINT and SIGTERM while a database is being written give
 *   status 130 and 143, one line, no temporary file, the older output
 *   untouched; a SIGKILLed `simulate -o` leaves a readable trace under its
 *   real name;
 * - size limits (ulimit -f): status 3, one line, nothing left behind, the
 *   older output untouched — also when only the what-if suggestions no
 *   longer fit (analyze writes them before the rename); a recording keeps
 *   what fit, readable;
 * - stdout: a result that cannot be written (/dev/full) is status 3;
 * - concurrent writers: a second recorder of a trace being recorded is
 *   refused with a message and the first trace is complete; two analyze
 *   runs of one output both succeed and leave a complete database, which
 *   appears under its name with its what-if suggestions already in it;
 * - converters: what import writes, analyze reads (a marker longer than a
 *   trace holds is cut and said so; overlapping segments are refused as
 *   analyze refuses them), and export takes every intact trace, ring-mode
 *   recordings included.
 *
 * The interrupting signal reaches the command at a known point: its stderr
 * is a pipe filled in advance, so the command blocks on its first warning
 * (a trace without an end record makes analyze warn after the replay, with
 * the database open under its temporary name).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fragscope/recorder.h"
#include "fsc_test.h"

static char g_dir[1024];

static const char *in_dir(const char *name)
{
    static char b[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(b[k], sizeof b[k], "%s/%s", g_dir, name);
    return b[k];
}

static void fresh_dir(const char *name)
{
    snprintf(g_dir, sizeof g_dir, "%s/%s", fsc_test_tmpdir(), name);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(NULL, 0, "rm -rf %s && mkdir -p %s", g_dir, g_dir), 0);
}

static int copy(const char *from, const char *to)
{
    return fsc_test_sh(NULL, 0, "cp %s %s", from, to);
}

/* Temporary files left in g_dir: their names, or "" when none. */
static const char *leftovers(void)
{
    static char buf[2048];
    buf[0] = '\0';
    DIR *d = opendir(g_dir);
    if (d == NULL)
        return buf;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strstr(de->d_name, ".tmp.") != NULL || strstr(de->d_name, "-journal") != NULL)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s ", de->d_name);
    closedir(d);
    return buf;
}

static unsigned lines_of(const char *s)
{
    unsigned n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static int same_file_content(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *pa = fsc_test_slurp(a, &na), *pb = fsc_test_slurp(b, &nb);
    int same = pa != NULL && pb != NULL && na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

/* `fragscope ARGS` in g_dir with stdout discarded: status, stderr in err. */
static int run(char *err, size_t cap, const char *args)
{
    return fsc_test_sh(err, cap, "cd %s && %s %s 2>&1 >/dev/null", g_dir, fsc_test_fragscope(),
                       args);
}

/* A finished run database of a trace with an OOM (for view, report, diff). */
static const char *k_trace = FSC_SOURCE_DIR "/sample_traces/gpt2_sim_17g_oom.fstrace";

static void make_db(const char *name)
{
    char out[4096];
    int st = fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", fsc_test_fragscope(), k_trace,
                         in_dir(name));
    if (st != 0)
        fprintf(stderr, "%s\n", out);
    CU_ASSERT_EQUAL_FATAL(st, 0);
}

/* ---- output paths --------------------------------------------------------- */

/* Every way of naming the input again as the output. */
static void refuse_all_names(const char *what, const char *fmt, const char *input)
{
    const char *in = in_dir(input);
    const char *saved = in_dir("saved.copy");
    CU_ASSERT_EQUAL_FATAL(copy(in, saved), 0);
    char link_sym[64], link_hard[64];
    snprintf(link_sym, sizeof link_sym, "sym-%s", input);
    snprintf(link_hard, sizeof link_hard, "hard-%s", input);
    unlink(in_dir(link_sym));
    unlink(in_dir(link_hard));
    CU_ASSERT_EQUAL_FATAL(symlink(input, in_dir(link_sym)), 0);
    CU_ASSERT_EQUAL_FATAL(link(in, in_dir(link_hard)), 0);
    char dot[64];
    snprintf(dot, sizeof dot, "./%s", input);
    const char *outs[] = {input, dot, link_sym, link_hard};
    for (size_t i = 0; i < 4; i++) {
        char args[512], err[4096];
        snprintf(args, sizeof args, fmt, input, outs[i]);
        int st = run(err, sizeof err, args);
        if (st != 2 || lines_of(err) != 1 || strstr(err, "input") == NULL)
            fprintf(stderr, "\n  %s: fragscope %s -> %d: %s", what, args, st, err);
        CU_ASSERT_EQUAL(st, 2);
        CU_ASSERT_EQUAL(lines_of(err), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "the output is the input"));
        CU_ASSERT_TRUE(same_file_content(in, saved));
        CU_ASSERT_STRING_EQUAL(leftovers(), "");
    }
    unlink(in_dir(link_sym));
    unlink(in_dir(link_hard));
    unlink(saved);
}

static void test_output_is_input(void)
{
    fresh_dir("paths");
    CU_ASSERT_EQUAL_FATAL(copy(k_trace, in_dir("a.fstrace")), 0);
    CU_ASSERT_EQUAL_FATAL(copy(fsc_test_data("pytorch/gpt2m_oom_12g.pickle"),
                               in_dir("s.pickle")), 0);
    make_db("d.db");
    refuse_all_names("analyze trace", "analyze %s -o %s", "a.fstrace");
    refuse_all_names("analyze snapshot", "analyze %s -o %s", "s.pickle");
    refuse_all_names("import", "import %s -o %s", "s.pickle");
    refuse_all_names("export", "export %s --pytorch-snapshot %s", "a.fstrace");
    refuse_all_names("view", "view %s -o %s", "d.db");
    refuse_all_names("report", "report %s -o %s", "d.db");
    /* another file is still fine */
    char err[4096];
    CU_ASSERT_EQUAL(run(err, sizeof err, "report d.db -o r.txt"), 0);
}

/* ---- signals -------------------------------------------------------------- */

/* analyze of a trace without its end record, with stderr a full pipe: the
 * command stops at its warning, database open under its temporary name.
 * Then sig; returns the exit status, what came on stderr in err. */
static int interrupt_analyze(int sig, const char *trace, const char *out, char *err, size_t cap)
{
    int p[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    static char junk[4096];
    memset(junk, 'j', sizeof junk);
    size_t filled = 0;
    for (;;) {
        ssize_t w = write(p[1], junk, sizeof junk);
        if (w > 0) {
            filled += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EAGAIN) {
            ssize_t w1 = write(p[1], junk, 1); /* the last byte that fits */
            if (w1 == 1) {
                filled++;
                continue;
            }
        }
        break;
    }
    fcntl(p[1], F_SETFL, 0);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        dup2(dn, 1);
        dup2(p[1], 2);
        close(p[0]);
        execl(fsc_test_fragscope(), "fragscope", "analyze", trace, "-o", out, (char *)NULL);
        _exit(99);
    }
    close(p[1]);
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)pid);
    /* Wait for the state, not for a time: the database under its temporary
     * name (bounded, in case the command went wrong). */
    int seen = 0;
    for (int i = 0; i < 6000 && !seen; i++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            pid = -1;
            break;
        }
        seen = fsc_test_file_exists(tmp);
        if (!seen)
            usleep(10000);
    }
    CU_ASSERT_TRUE(seen);
    if (pid > 0)
        kill(pid, sig);
    /* Drain the pipe: our bytes, then the command's. */
    size_t n = 0, got_junk = 0;
    char buf[4096];
    ssize_t r;
    while ((r = read(p[0], buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < r; i++) {
            if (got_junk < filled) {
                got_junk++;
                continue;
            }
            if (n + 1 < cap)
                err[n++] = buf[i];
        }
    }
    err[n] = '\0';
    close(p[0]);
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (pid < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_signals(void)
{
    fresh_dir("signals");
    /* the trace without its end record */
    size_t n = 0;
    char *t = fsc_test_slurp(FSC_SOURCE_DIR "/sample_traces/resnet_sim.fstrace", &n);
    CU_ASSERT_FATAL(t != NULL && n > 64);
    FILE *f = fopen(in_dir("cut.fstrace"), "wb");
    CU_ASSERT_FATAL(f != NULL);
    fwrite(t, 1, n - 16, f);
    fclose(f);
    free(t);
    const char *out = in_dir("out.db");
    static const char k_older[] = "an older output file\n";
    static const struct {
        int sig, status;
        const char *name;
    } k_sigs[] = {{SIGINT, 130, "SIGINT"}, {SIGTERM, 143, "SIGTERM"}};
    for (size_t i = 0; i < 2; i++) {
        f = fopen(out, "w");
        fputs(k_older, f);
        fclose(f);
        char err[4096];
        int st = interrupt_analyze(k_sigs[i].sig, in_dir("cut.fstrace"), out, err, sizeof err);
        if (st != k_sigs[i].status || lines_of(err) != 1)
            fprintf(stderr, "\n  %s: status %d, stderr: %s", k_sigs[i].name, st, err);
        CU_ASSERT_EQUAL(st, k_sigs[i].status);
        CU_ASSERT_EQUAL(lines_of(err), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, k_sigs[i].name));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "out.db"));
        CU_ASSERT_STRING_EQUAL(leftovers(), "");
        size_t len = 0;
        char *now = fsc_test_slurp(out, &len);
        CU_ASSERT_TRUE(now != NULL && len == strlen(k_older) && memcmp(now, k_older, len) == 0);
        free(now);
    }
}

/* The events a reader gets from a trace being written (0 when it cannot
 * be opened yet). */
static uint64_t count_events(const char *path)
{
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err = {0};
    if (fsc_trace_open(path, &r, &err) != 0)
        return 0;
    fsc_event_t ev;
    uint64_t n = 0;
    while (fsc_trace_next(r, &ev) == 1)
        n++;
    fsc_trace_close(r);
    return n;
}

/* A trace is a recording: SIGKILLed half-way, `simulate -o` leaves what it
 * wrote readable under the name it was given. */
static void test_killed_simulate_leaves_trace(void)
{
    fresh_dir("killed");
    const char *trace = in_dir("t.fstrace");
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        dup2(dn, 1);
        dup2(dn, 2);
        execl(fsc_test_fragscope(), "fragscope", "simulate", "--workload", "gpt2", "--steps",
              "100000", "-o", trace, (char *)NULL);
        _exit(99);
    }
    /* Until a complete chunk is on disk under the real name (the file's size
     * alone can be seen in the middle of a chunk's write). */
    uint64_t seen = 0;
    for (int i = 0; i < 3000 && seen == 0; i++) {
        struct stat st;
        if (stat(trace, &st) == 0 && st.st_size > 4096)
            seen = count_events(trace);
        if (seen == 0)
            usleep(10000);
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(seen > 0);
    CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* every event that was readable before the kill still is */
    uint64_t events = count_events(trace);
    CU_ASSERT_TRUE(events > 0);
    CU_ASSERT_TRUE(events >= seen);
    char out[4096];
    CU_ASSERT_EQUAL(run(out, sizeof out, "info t.fstrace"), 0);
}

/* ---- size limits ---------------------------------------------------------- */

/* `ulimit -f KIB; fragscope ARGS` with an older OUT in place: status 3, one
 * line, no temporary file, OUT unchanged. */
static void limited(unsigned kib, const char *args, const char *out)
{
    static const char k_older[] = "an older output file\n";
    FILE *f = fopen(in_dir(out), "w");
    fputs(k_older, f);
    fclose(f);
    char err[4096];
    int st = fsc_test_sh(err, sizeof err, "cd %s && ulimit -f %u && %s %s 2>&1 >/dev/null",
                         g_dir, kib, fsc_test_fragscope(), args);
    if (st != 3 || lines_of(err) != 1)
        fprintf(stderr, "\n  ulimit -f %u; fragscope %s -> %d: %s", kib, args, st, err);
    CU_ASSERT_EQUAL(st, 3);
    CU_ASSERT_EQUAL(lines_of(err), 1);
    CU_ASSERT_PTR_NULL(strstr(err, ".tmp."));
    CU_ASSERT_STRING_EQUAL(leftovers(), "");
    size_t len = 0;
    char *now = fsc_test_slurp(in_dir(out), &len);
    CU_ASSERT_TRUE(now != NULL && len == strlen(k_older) && memcmp(now, k_older, len) == 0);
    free(now);
    unlink(in_dir(out));
}

static int64_t db_scalar(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void test_size_limits(void)
{
    fresh_dir("limits");
    CU_ASSERT_EQUAL_FATAL(copy(k_trace, in_dir("a.fstrace")), 0);
    CU_ASSERT_EQUAL_FATAL(copy(fsc_test_data("pytorch/gpt2m_oom_12g.pickle"),
                               in_dir("s.pickle")), 0);
    make_db("d.db");
    limited(16, "analyze a.fstrace -o out.db", "out.db");
    limited(16, "analyze s.pickle -o out.db", "out.db");
    limited(16, "import s.pickle -o out.fstrace", "out.fstrace");
    limited(16, "export a.fstrace --pytorch-snapshot out.pickle", "out.pickle");
    limited(16, "view d.db -o out.html", "out.html");
    limited(1, "report d.db -o out.txt", "out.txt");

    char err[4096];
    /* A recording keeps what fit, readable under its name. */
    int rc = fsc_test_sh(err, sizeof err,
                         "cd %s && ulimit -f 8 && %s simulate --workload gpt2 --steps 2 -o "
                         "rec.fstrace 2>&1 >/dev/null", g_dir, fsc_test_fragscope());
    if (rc != 3 || lines_of(err) != 1)
        fprintf(stderr, "\n  simulate under ulimit -f 8 -> %d: %s", rc, err);
    CU_ASSERT_EQUAL(rc, 3);
    CU_ASSERT_EQUAL(lines_of(err), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "rec.fstrace"));
    CU_ASSERT_EQUAL(run(err, sizeof err, "info rec.fstrace"), 0);
    CU_ASSERT_STRING_EQUAL(leftovers(), "");
}

/* ---- stdout --------------------------------------------------------------- */

static void test_stdout_errors(void)
{
    fresh_dir("stdout");
    CU_ASSERT_EQUAL_FATAL(copy(k_trace, in_dir("a.fstrace")), 0);
    make_db("d.db");
    static const char *const k_cmds[] = {
        "info a.fstrace",
        "info --format json a.fstrace",
        "whatif a.fstrace --config expandable_segments:True",
        "diff d.db d.db",
        "simulate --workload gpt2 --steps 1",
        "report d.db",
        "report --format json d.db",
        "--version",
        "help analyze",
    };
    for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++) {
        char err[4096];
        int st = fsc_test_sh(err, sizeof err, "cd %s && %s %s 2>&1 >/dev/full", g_dir,
                             fsc_test_fragscope(), k_cmds[i]);
        if (st != 3 || lines_of(err) != 1)
            fprintf(stderr, "\n  fragscope %s >/dev/full -> %d: %s", k_cmds[i], st, err);
        CU_ASSERT_EQUAL(st, 3);
        CU_ASSERT_EQUAL(lines_of(err), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "standard output"));
    }
}

/* ---- concurrent writers --------------------------------------------------- */

static void test_concurrent_recorders(void)
{
    fresh_dir("concurrent");
    const char *trace = in_dir("c.fstrace");
    fsc_recorder_t *rec = NULL;
    fsc_err_t err = {0};
    fsc_trace_header_t h = {0};
    h.producer = "test_corrupt_outputs";
    h.rank = -1;
    CU_ASSERT_EQUAL_FATAL(fsc_recorder_open(trace, &h, NULL, &rec, &err), 0);
    fsc_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = FSC_EV_SEGMENT_ALLOC;
    ev.pool = FSC_POOL_LARGE;
    ev.addr = 0x10000000;
    ev.size = 2 << 20;
    ev.time_ns = 1000;
    CU_ASSERT_EQUAL(fsc_recorder_write(rec, &ev), 0);
    CU_ASSERT_EQUAL(fsc_recorder_flush(rec), 0);

    /* Another process, the same path: through the environment and -o. */
    static const char *const k_runs[] = {
        "FRAGSCOPE_TRACE=c.fstrace %s simulate --workload gpt2 --steps 1",
        "%s simulate --workload gpt2 --steps 1 -o c.fstrace",
    };
    for (size_t i = 0; i < 2; i++) {
        char cmd[2048], out[4096];
        snprintf(cmd, sizeof cmd, k_runs[i], fsc_test_fragscope());
        int st = fsc_test_sh(out, sizeof out, "cd %s && %s 2>&1 >/dev/null", g_dir, cmd);
        if (st != 3 || lines_of(out) != 1)
            fprintf(stderr, "\n  %s -> %d: %s", cmd, st, out);
        CU_ASSERT_EQUAL(st, 3);
        CU_ASSERT_EQUAL(lines_of(out), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "c.fstrace"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "another process is recording"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "%p"));
    }
    /* The first recording goes on, and is whole. */
    ev.type = FSC_EV_SEGMENT_FREE;
    ev.time_ns = 2000;
    CU_ASSERT_EQUAL(fsc_recorder_write(rec, &ev), 0);
    CU_ASSERT_EQUAL(fsc_recorder_close(rec), 0);
    fsc_trace_reader_t *r = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(trace, &r, &err), 0);
    CU_ASSERT_STRING_EQUAL(fsc_trace_header(r)->producer, "test_corrupt_outputs");
    int n = 0;
    while (fsc_trace_next(r, &ev) == 1)
        n++;
    CU_ASSERT_EQUAL(n, 2);
    fsc_trace_integrity_t in;
    fsc_trace_get_integrity(r, &in);
    CU_ASSERT_EQUAL(in.clean_close, 1);
    fsc_trace_close(r);

    /* Closed, the path is free again. */
    char out[4096];
    CU_ASSERT_EQUAL(run(out, sizeof out, "simulate --workload gpt2 --steps 1 -o c.fstrace"), 0);
    CU_ASSERT_EQUAL(run(out, sizeof out, "info c.fstrace"), 0);
}

static void test_concurrent_analyze(void)
{
    fresh_dir("concurrent2");
    CU_ASSERT_EQUAL_FATAL(copy(k_trace, in_dir("a.fstrace")), 0);
    char out[8192];
    int st = fsc_test_sh(out, sizeof out,
                         "cd %s; (%s analyze a.fstrace -o same.db >/dev/null 2>e1; echo $? >s1) &"
                         " (%s analyze a.fstrace -o same.db >/dev/null 2>e2; echo $? >s2) & wait;"
                         " cat s1 s2 e1 e2",
                         g_dir, fsc_test_fragscope(), fsc_test_fragscope());
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_STRING_EQUAL(out, "0\n0\n");
    CU_ASSERT_TRUE(db_scalar(in_dir("same.db"), "SELECT COUNT(*) FROM suggestions") > 0);
    CU_ASSERT_STRING_EQUAL(leftovers(), "");
}

/* The database appears under its name complete, what-if suggestions
 * included: they are written before the rename, not in a second pass. */
static void test_analyze_appears_complete(void)
{
    fresh_dir("atomic");
    CU_ASSERT_EQUAL_FATAL(copy(k_trace, in_dir("a.fstrace")), 0);
    const char *db = in_dir("out.db");
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        dup2(dn, 1);
        dup2(dn, 2);
        execl(fsc_test_fragscope(), "fragscope", "analyze", in_dir("a.fstrace"), "-o", db,
              (char *)NULL);
        _exit(99);
    }
    /* The first moment the name exists, the file must be the whole thing. */
    int seen = 0, status = 0, done = 0;
    for (int i = 0; i < 200000 && !seen; i++) {
        seen = fsc_test_file_exists(db);
        if (!seen && waitpid(pid, &status, WNOHANG) == pid) {
            done = 1;
            seen = fsc_test_file_exists(db);
            break;
        }
        if (!seen)
            usleep(100);
    }
    CU_ASSERT_TRUE(seen);
    int64_t n = db_scalar(db, "SELECT COUNT(*) FROM suggestions");
    if (!done)
        waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_TRUE(n > 0);
    CU_ASSERT_EQUAL(db_scalar(db, "SELECT COUNT(*) FROM suggestions"), n);
}

/* ---- converters ----------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

#define SEG_ALLOC(addr, t)                                                                     \
    "{\"action\": \"segment_alloc\", \"addr\": " #addr ", \"size\": 2097152, \"stream\": 0, " \
    "\"time_us\": " #t ", \"frames\": []}"
#define SEG_FREE(addr, t)                                                                      \
    "{\"action\": \"segment_free\", \"addr\": " #addr ", \"size\": 2097152, \"stream\": 0, "  \
    "\"time_us\": " #t ", \"frames\": []}"

static void test_import_long_marker(void)
{
    fresh_dir("marker");
    /* a user_defined entry of 70 000 bytes, then one of 3 bytes */
    size_t big = 70000;
    char *json = malloc(big + 1024);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    int k = sprintf(json, "{\"segments\": [], \"device_traces\": [[" SEG_ALLOC(268435456, 1)
                          ", {\"action\": \"user_defined\", \"addr\": 0, \"size\": 0, "
                          "\"stream\": 0, \"time_us\": 2, \"frames\": [], "
                          "\"user_metadata\": \"");
    memset(json + k, 'm', big);
    k += (int)big;
    sprintf(json + k, "\"}, {\"action\": \"user_defined\", \"addr\": 0, \"size\": 0, "
                      "\"stream\": 0, \"time_us\": 3, \"frames\": [], \"user_metadata\": "
                      "\"abc\"}, " SEG_FREE(268435456, 4) "]]}");
    write_text(in_dir("m.json"), json);
    free(json);
    char out[4096];
    int st = fsc_test_sh(out, sizeof out, "cd %s && %s import m.json -o m.fstrace", g_dir,
                         fsc_test_fragscope());
    if (st != 0)
        fprintf(stderr, "\n  import: %d: %s", st, out);
    CU_ASSERT_EQUAL_FATAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "1 marker longer than 65536 bytes"));
    CU_ASSERT_PTR_NULL(strstr(out, ".tmp."));
    CU_ASSERT_EQUAL(run(out, sizeof out, "analyze m.fstrace -o m.db"), 0);
    CU_ASSERT_EQUAL(db_scalar(in_dir("m.db"), "SELECT COUNT(*) FROM markers"), 2);
    CU_ASSERT_EQUAL(db_scalar(in_dir("m.db"), "SELECT MAX(length(text)) FROM markers"),
                    FSC_TRACE_MAX_TEXT);
    CU_ASSERT_EQUAL(db_scalar(in_dir("m.db"), "SELECT MIN(length(text)) FROM markers"), 3);
    /* analyze of the snapshot itself keeps the whole text */
    CU_ASSERT_EQUAL(run(out, sizeof out, "analyze m.json -o s.db"), 0);
    CU_ASSERT_EQUAL(db_scalar(in_dir("s.db"), "SELECT MAX(length(text)) FROM markers"),
                    (int64_t)big);
}

static void test_import_overlapping_segments(void)
{
    fresh_dir("overlap");
    /* the second segment starts 1 MiB into the first */
    write_text(in_dir("o.json"), "{\"segments\": [], \"device_traces\": [["
                                 SEG_ALLOC(268435456, 1) ", " SEG_ALLOC(269484032, 2) ", "
                                 SEG_FREE(269484032, 3) ", " SEG_FREE(268435456, 4) "]]}");
    static const char *const k_cmds[] = {"import o.json -o o.fstrace", "analyze o.json -o o.db"};
    for (size_t i = 0; i < 2; i++) {
        char err[4096];
        int st = run(err, sizeof err, k_cmds[i]);
        if (st != 2)
            fprintf(stderr, "\n  fragscope %s -> %d: %s", k_cmds[i], st, err);
        CU_ASSERT_EQUAL(st, 2);
        CU_ASSERT_EQUAL(lines_of(err), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "o.json"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "overlaps the segment at 0x10000000"));
    }
    CU_ASSERT_FALSE(fsc_test_file_exists(in_dir("o.fstrace")));
    CU_ASSERT_FALSE(fsc_test_file_exists(in_dir("o.db")));
    CU_ASSERT_STRING_EQUAL(leftovers(), "");
}

static void test_export_ring_trace(void)
{
    fresh_dir("ring");
    char out[8192];
    int st = fsc_test_sh(out, sizeof out,
                         "cd %s && %s record --shim --ring 1000 -o r.fstrace -- %s simulate "
                         "--workload gpt2 --steps 2 >/dev/null", g_dir, fsc_test_fragscope(),
                         fsc_test_fragscope());
    CU_ASSERT_EQUAL_FATAL(st, 0);
    /* the history entries the kept events make */
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(in_dir("r.fstrace"), &r, &err), 0);
    CU_ASSERT_TRUE(fsc_trace_header(r)->flags & FSC_TRACE_F_RING);
    fsc_event_t ev;
    unsigned long long entries = 0;
    while (fsc_trace_next(r, &ev) == 1)
        entries += ev.type == FSC_EV_ALLOC || ev.type == FSC_EV_FREE_REQUESTED ||
                   ev.type == FSC_EV_FREE_COMPLETED || ev.type == FSC_EV_SEGMENT_ALLOC ||
                   ev.type == FSC_EV_SEGMENT_FREE || ev.type == FSC_EV_SEGMENT_MAP ||
                   ev.type == FSC_EV_SEGMENT_UNMAP || ev.type == FSC_EV_OOM;
    fsc_trace_close(r);
    st = fsc_test_sh(out, sizeof out, "cd %s && %s export r.fstrace --pytorch-snapshot r.pickle",
                     g_dir, fsc_test_fragscope());
    if (st != 0)
        fprintf(stderr, "\n  export of a ring trace -> %d: %s", st, out);
    CU_ASSERT_EQUAL_FATAL(st, 0);
    char want[128];
    snprintf(want, sizeof want, "wrote r.pickle: %llu history entries", entries);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "ring-mode trace"));
    /* PyTorch's own reader takes it; the start of the run is not in it */
    CU_ASSERT_EQUAL(run(out, sizeof out, "import --lenient r.pickle -o back.fstrace"), 0);
}

/* ---- unusable paths --------------------------------------------------------- */

/* `fragscope ARGS` with %s replaced by path: exit 2, one line naming the
 * path, nothing written in g_dir (no output, no temporary). As root a file
 * without read permission is still readable: that case runs the command as
 * nobody (setpriv), when prefix is given. */
static void refuse_path(const char *fmt, const char *path, const char *prefix)
{
    char args[512], err[4096];
    snprintf(args, sizeof args, fmt, path, path);
    int st = prefix ? fsc_test_sh(err, sizeof err, "cd %s && %s %s %s 2>&1 >/dev/null", g_dir,
                                  prefix, fsc_test_fragscope(), args)
                    : run(err, sizeof err, args);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int ok = st == 2 && lines_of(err) == 1 && strstr(err, name) != NULL;
    if (!ok)
        fprintf(stderr, "\n  fragscope %s -> %d: %s", args, st, err);
    CU_ASSERT_TRUE(ok);
    CU_ASSERT_STRING_EQUAL(leftovers(), "");
    static const char *const k_outs[] = {"o.db", "o.fstrace", "o.html", "o.pickle", "o.csv",
                                         "nodir"};
    for (size_t i = 0; i < sizeof k_outs / sizeof k_outs[0]; i++) {
        if (fsc_test_file_exists(in_dir(k_outs[i])))
            fprintf(stderr, "\n  fragscope %s left %s\n", args, k_outs[i]);
        CU_ASSERT_FALSE(fsc_test_file_exists(in_dir(k_outs[i])));
    }
}

/* Every command's inputs and outputs: an input that is a directory, missing
 * or unreadable, and an output that is a directory or lies in a folder that
 * does not exist, are bad input: exit 2, one line naming the file, nothing
 * written, and no work done before the output is refused. */
static void test_unusable_paths(void)
{
    fresh_dir("unusable");
    CU_ASSERT_EQUAL_FATAL(copy(k_trace, in_dir("a.fstrace")), 0);
    CU_ASSERT_EQUAL_FATAL(copy(fsc_test_data("pytorch/tiny.p4.pickle"), in_dir("s.pickle")), 0);
    make_db("d.db");
    CU_ASSERT_EQUAL_FATAL(mkdir(in_dir("adir"), 0755), 0);
    CU_ASSERT_EQUAL_FATAL(copy(in_dir("d.db"), in_dir("locked")), 0);
    CU_ASSERT_EQUAL_FATAL(chmod(in_dir("locked"), 0), 0);
    static const char *const k_inputs[] = {
        "analyze %s -o o.db",
        "analyze a.fstrace %s -o o.db",
        "import %s -o o.fstrace",
        "info %s",
        "report %s",
        "check %s --no-oom",
        "diff %s d.db",
        "diff d.db %s",
        "whatif %s --config ''",
        "whatif a.fstrace --config '' --verify-against %s",
        "view %s -o o.html",
        "export %s --pytorch-snapshot o.pickle",
        "export --table blocks --format csv %s -o o.csv",
        "merge %s -o o.db",
    };
    /* as root, read permission is not checked: run those as nobody, who may
     * enter the scratch folders but not read the file */
    const char *prefix = NULL;
    if (geteuid() == 0 && fsc_test_sh(NULL, 0, "command -v setpriv >/dev/null") == 0) {
        prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups";
        chmod(fsc_test_tmpdir(), 0755);
        chmod(g_dir, 0777); /* where nobody may write the outputs */
    }
    for (size_t i = 0; i < sizeof k_inputs / sizeof k_inputs[0]; i++) {
        refuse_path(k_inputs[i], "adir", NULL);
        refuse_path(k_inputs[i], "missing.fstrace", NULL);
        if (geteuid() != 0 || prefix != NULL)
            refuse_path(k_inputs[i], "locked", prefix);
    }
    static const char *const k_outputs[] = {
        "analyze a.fstrace -o %s",
        "analyze s.pickle -o %s",
        "import s.pickle -o %s",
        "report d.db -o %s",
        "view d.db -o %s",
        "export a.fstrace --pytorch-snapshot %s",
        "export --table blocks --format csv d.db -o %s",
        "merge d.db -o %s",
        "simulate --workload gpt2 --steps 1 -o %s",
        "record -o %s -- true",
    };
    for (size_t i = 0; i < sizeof k_outputs / sizeof k_outputs[0]; i++) {
        refuse_path(k_outputs[i], "adir", NULL);
        refuse_path(k_outputs[i], "nodir/o.x", NULL);
    }
    /* the directory named as the output is left as it was: empty */
    CU_ASSERT_EQUAL(rmdir(in_dir("adir")), 0);
}

static const fsc_test_case_t k_tests[] = {
    {"output paths: an input named again as the output is refused", test_output_is_input},
    {"unusable paths: directories, missing and unreadable files, missing folders",
     test_unusable_paths},
    {"signals: SIGINT/SIGTERM clean up and exit 130/143", test_signals},
    {"signals: a killed simulate -o leaves a readable trace", test_killed_simulate_leaves_trace},
    {"size limits: EFBIG is exit 3, one line, nothing left", test_size_limits},
    {"stdout: write errors are exit 3", test_stdout_errors},
    {"concurrent writers: a second recorder of one trace is refused",
     test_concurrent_recorders},
    {"concurrent writers: two analyze runs of one output", test_concurrent_analyze},
    {"atomic analyze: the database appears with its suggestions", test_analyze_appears_complete},
    {"converters: import cuts a marker over 64 KiB and says so", test_import_long_marker},
    {"converters: import refuses overlapping segments", test_import_overlapping_segments},
    {"converters: export takes a ring-mode trace", test_export_ring_trace},
    {NULL, NULL},
};

FSC_TEST_MAIN("corrupt_outputs", k_tests)
