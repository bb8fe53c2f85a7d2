/*
 * cmd_record.c — `fragscope record`: run a program with FRAGSCOPE_TRACE set
 * so that whatever in it opens a recorder from the environment (the PyTorch
 * shim, `fragscope simulate`, a program linked with the library) records
 * into the named file, then say in one line what the trace holds.
 */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "fragscope/recorder.h"

const char fsc_cmd_record_summary[] = "run a command with allocator recording enabled";
const char fsc_cmd_record_usage[] =
    "usage: fragscope record -o TRACE.fstrace [--ring N] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with FRAGSCOPE_TRACE=TRACE.fstrace (and FRAGSCOPE_TRACE_MODE)\n"
    "in its environment. Programs that use fragscope's allocator (the PyTorch\n"
    "shim, `fragscope simulate`) then record every allocator event into the\n"
    "trace; it is finished when the program exits, and what was written before\n"
    "a crash or a kill stays readable. Afterwards one line on stderr summarizes\n"
    "the trace (events, chunks, bytes per event, clean close or truncated).\n"
    "In a distributed job (RANK and WORLD_SIZE set by the launcher) each process\n"
    "writes TRACE.rankN.fstrace instead; %p and %r in TRACE name the process id\n"
    "and the rank explicitly. A trace being recorded is locked: a second process\n"
    "given the same path is refused with a message (use %p for one file per\n"
    "process) and records nothing, so no trace is lost to another.\n"
    "\n"
    "options:\n"
    "  -o FILE      the trace to write (required; replaced if it exists, and so\n"
    "               are FILE.rankN.fstrace of an earlier distributed run)\n"
    "  --ring N     keep only the last N events in memory and write them on an\n"
    "               out-of-memory, on flush and at exit (FRAGSCOPE_TRACE_MODE=ring:N)\n"
    "\n"
    "exit status: COMMAND's exit status (128+N when it was killed by signal N,\n"
    "127 when it could not be run), or 2 for bad options.\n";

/* path: where the trace is; shown: how the user named it. */
static int summarize(const char *path, const char *shown, const char *cmd)
{
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    fsc_err_clear(&err);
    int rc = fsc_trace_open(path, &r, &err);
    if (rc == FSC_ENOENT) {
        fprintf(stderr,
                "fragscope record: %s wrote no trace to %s (nothing in it opened a recorder "
                "from FRAGSCOPE_TRACE)\n",
                cmd, shown);
        return rc;
    }
    if (rc != 0) {
        fprintf(stderr, "fragscope record: %s\n", fsc_err_msg(&err));
        return rc;
    }
    fsc_event_t ev;
    while ((rc = fsc_trace_next(r, &ev)) == 1)
        ;
    fsc_trace_integrity_t in;
    fsc_trace_get_integrity(r, &in);
    char sz[64];
    fsc_size_format(in.compressed_bytes, sz, sizeof sz);
    double bpe = in.events ? (double)in.compressed_bytes / (double)in.events : 0.0;
    if (rc < 0)
        fprintf(stderr, "fragscope record: %s\n", fsc_trace_last_error(r));
    else
        fprintf(stderr,
                "fragscope record: %s: %" PRIu64 " events in %" PRIu64
                " chunks, %s (%.2f bytes/event), %s\n",
                shown, in.events, in.chunks, sz, bpe,
                in.clean_close ? "clean close" : "truncated (no end record)");
    fsc_trace_close(r);
    return rc < 0 ? rc : 0;
}

/* A distributed job's ranks write PATH.rankN.fstrace (see
 * fsc_trace_path_expand). For each such file: summarize it, or (before the
 * run) remove it, so that a summary never describes an older run. Returns
 * how many there were. */
static int for_each_rank_trace(const char *abs, int remove)
{
    char pat[8300];
    size_t n = strlen(abs), ext = strlen(".fstrace");
    if (n >= ext && strcmp(abs + n - ext, ".fstrace") == 0)
        snprintf(pat, sizeof pat, "%.*s.rank*.fstrace", (int)(n - ext), abs);
    else
        snprintf(pat, sizeof pat, "%s.rank*", abs);
    glob_t g;
    if (glob(pat, 0, NULL, &g) != 0)
        return 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if (remove)
            unlink(g.gl_pathv[i]);
        else
            summarize(g.gl_pathv[i], g.gl_pathv[i], "");
    }
    int found = (int)g.gl_pathc;
    globfree(&g);
    return found;
}

int fsc_cmd_record(int argc, char **argv)
{
    const char *out = NULL;
    uint64_t ring = 0;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (++i >= argc)
                return fsc_cli_usage_error("record", "%s needs a file", a);
            out = argv[i];
        } else if (strcmp(a, "--ring") == 0) {
            char mode[64];
            if (++i >= argc)
                return fsc_cli_usage_error("record", "--ring needs a number of events");
            snprintf(mode, sizeof mode, "ring:%s", argv[i]);
            if (fsc_trace_mode_parse(mode, &ring) != 0)
                return fsc_cli_usage_error("record", "--ring: '%s' is not a positive number",
                                           argv[i]);
        } else if (a[0] == '-') {
            return fsc_cli_usage_error("record", "unknown option '%s'", a);
        } else {
            break; /* the command, without a "--" before it */
        }
    }
    if (out == NULL)
        return fsc_cli_usage_error("record", "-o TRACE.fstrace is required");
    /* A trace that cannot be written is said before the program runs, not
     * by the program's recorder after it (%p and %r name files in the same
     * folder, which is what this checks). */
    fsc_err_t derr = {0};
    if (fsc_outfile_check_dest(out, &derr) != 0)
        return fsc_cli_error("%s", fsc_err_msg(&derr));
    if (i >= argc)
        return fsc_cli_usage_error("record", "no command given after --");
    char **cmd = argv + i;

    /* The command may change directory before it opens the trace. */
    char abs[8192];
    if (out[0] == '/') {
        snprintf(abs, sizeof abs, "%s", out);
    } else {
        char cwd[4096];
        if (getcwd(cwd, sizeof cwd) == NULL)
            return fsc_cli_error("cannot resolve '%s': %s", out, strerror(errno));
        snprintf(abs, sizeof abs, "%s/%s", cwd, out);
    }
    if (strchr(out, '%') == NULL) {
        if (unlink(abs) != 0 && errno != ENOENT)
            return fsc_cli_error("%s: cannot replace: %s", out, strerror(errno));
        for_each_rank_trace(abs, 1);
    }
    char mode[64];
    if (ring > 0)
        snprintf(mode, sizeof mode, "ring:%" PRIu64, ring);
    else
        snprintf(mode, sizeof mode, "stream");
    if (setenv("FRAGSCOPE_TRACE", abs, 1) != 0 || setenv("FRAGSCOPE_TRACE_MODE", mode, 1) != 0)
        return fsc_cli_error("cannot set the environment: %s", strerror(errno));

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return fsc_cli_error("cannot start '%s': %s", cmd[0], strerror(errno));
    if (pid == 0) {
        signal(SIGXFSZ, SIG_DFL); /* ignored by fragscope itself (main.c) */
        execvp(cmd[0], cmd);
        fprintf(stderr, "fragscope record: cannot run '%s': %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    /* Ctrl-C reaches the command through the terminal; we stay to report. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return fsc_cli_error("waiting for '%s': %s", cmd[0], strerror(errno));
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    int code = WIFEXITED(status) ? WEXITSTATUS(status)
                                 : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    if (WIFSIGNALED(status))
        fprintf(stderr, "fragscope record: %s was killed by signal %d\n", cmd[0],
                WTERMSIG(status));
    if (strchr(out, '%') != NULL)
        fprintf(stderr, "fragscope record: traces written to %s (one per process)\n", out);
    else if (access(abs, F_OK) == 0 || !for_each_rank_trace(abs, 0))
        if (code != 127 || access(abs, F_OK) == 0)
            summarize(abs, out, cmd[0]);
    return code;
}
