/*
 * cmd_record.c — `fragscope record`: run a program so that its GPU
 * allocator is recorded, then say in one line per trace what was written
 * and which command reads it next.
 *
 * By default the program is a PyTorch one, recorded unchanged through the
 * native recorder (docs/native.md): the child's PYTHONPATH starts with a
 * bootstrap (a sitecustomize that chains to the environment's own) which
 * attaches fragscope_torch once the program has imported torch; every
 * Python process of the run inherits it. Each process that begins a trace
 * appends its path to a manifest file named in its environment, so the
 * summary covers every rank, device and child process of the run.
 *
 * --shim keeps the older mode: FRAGSCOPE_TRACE in the environment, for
 * programs that open a recorder from it themselves (the PyTorch shim,
 * `fragscope simulate`, a program linked with the library).
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "fragscope/recorder.h"

const char fsc_cmd_record_summary[] = "run a command with allocator recording enabled";
const char fsc_cmd_record_usage[] =
    "usage: fragscope record -o TRACE.fstrace [--ring N] [--shim] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND, a PyTorch program, and records PyTorch's own CUDA caching\n"
    "allocator as it runs, with no change to the program:\n"
    "  fragscope record -o run.fstrace -- python train.py ARGS\n"
    "Every Python process of the run loads fragscope's bootstrap at start (a\n"
    "sitecustomize on PYTHONPATH that then runs the environment's own), which\n"
    "attaches the native recorder once the program has imported torch. It\n"
    "initializes nothing of CUDA: a device's trace begins at its first\n"
    "allocation. The extension it needs is built against the program's torch on\n"
    "first use and cached (a C++ compiler and the CUDA headers, as for any torch\n"
    "extension). At an out-of-memory error the verdict (cause, bytes, the line\n"
    "that asked, settings that would have served it) comes before PyTorch's\n"
    "traceback. If the program turns on _record_memory_history stacks, events\n"
    "carry them; fragscope_torch.watch() and tag() calls in it name events.\n"
    "\n"
    "Subprocesses and every rank of torchrun, torch.distributed.run, mpirun or\n"
    "srun record too, as far as the environment reaches them (mpirun -x for\n"
    "other hosts): each rank writes TRACE.rankN.fstrace (the rank and the job's\n"
    "size from RANK and WORLD_SIZE, or Open MPI's, PMI's or Slurm's variables),\n"
    "a second device of a process TRACE.devD.fstrace; %p and %r in TRACE name\n"
    "the process id and the rank explicitly. A trace being recorded is locked:\n"
    "a second process given the same path records nothing (use %p for one file\n"
    "per process). A child made by fork() records nothing.\n"
    "At the end one line per trace (events, chunks, bytes per event, clean\n"
    "close or truncated) and the command that analyzes them.\n"
    "\n"
    "options:\n"
    "  -o FILE      the trace to write (required; replaced if it exists, and so\n"
    "               are FILE.rankN.fstrace of an earlier distributed run)\n"
    "  --ring N     keep only the last N events of each device\n"
    "  --shim       instead, set FRAGSCOPE_TRACE=FILE for a program that uses\n"
    "               fragscope's own allocator (fragscope_torch.install(), the\n"
    "               pluggable-allocator shim, `fragscope simulate`); --ring then\n"
    "               keeps the last N events in memory and writes them on an\n"
    "               out-of-memory, on flush and at exit (FRAGSCOPE_TRACE_MODE)\n"
    "\n"
    "environment: FRAGSCOPE_NATIVE_SRC, FRAGSCOPE_NATIVE_INCLUDE and\n"
    "FRAGSCOPE_NATIVE_LIB name the native recorder's source, headers and library\n"
    "when they are not beside this fragscope; TORCH_EXTENSIONS_DIR where the\n"
    "extension is cached.\n"
    "\n"
    "exit status: COMMAND's exit status (128+N when it was killed by signal N,\n"
    "127 when it could not be run), or 2 for bad options, or when the program\n"
    "cannot be recorded (no torch for it, torch without CUDA, the recorder's\n"
    "files missing, the extension not built): one line says why.\n";

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

/* Run cmd and wait: its exit status as the shell gives it. */
static int run_command(char **cmd)
{
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
        if (errno != EINTR) {
            signal(SIGINT, SIG_DFL);
            signal(SIGQUIT, SIG_DFL);
            return fsc_cli_error("waiting for '%s': %s", cmd[0], strerror(errno));
        }
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    if (WIFSIGNALED(status))
        fprintf(stderr, "fragscope record: %s was killed by signal %d\n", cmd[0],
                WTERMSIG(status));
    return WIFEXITED(status) ? WEXITSTATUS(status)
                             : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* ---- the shim: FRAGSCOPE_TRACE for programs that open a recorder ---------- */

static int record_shim(const char *out, const char *abs, uint64_t ring, char **cmd)
{
    char mode[64];
    if (ring > 0)
        snprintf(mode, sizeof mode, "ring:%" PRIu64, ring);
    else
        snprintf(mode, sizeof mode, "stream");
    if (setenv("FRAGSCOPE_TRACE", abs, 1) != 0 || setenv("FRAGSCOPE_TRACE_MODE", mode, 1) != 0)
        return fsc_cli_error("cannot set the environment: %s", strerror(errno));
    int code = run_command(cmd);
    if (strchr(out, '%') != NULL)
        fprintf(stderr, "fragscope record: traces written to %s (one per process)\n", out);
    else if (access(abs, F_OK) == 0 || !for_each_rank_trace(abs, 0))
        if (code != 127 || access(abs, F_OK) == 0)
            summarize(abs, out, cmd[0]);
    return code;
}

/* ---- the native recorder: PyTorch's own allocator, the program unchanged --- */

/* Where the pieces the child needs are. */
typedef struct native_paths {
    char pydir[PATH_MAX];   /* holds fragscope_torch (empty: installed, importable) */
    char boot[PATH_MAX + 32]; /* holds the bootstrap sitecustomize.py */
    char src[PATH_MAX];     /* FRAGSCOPE_NATIVE_SRC to set ("" keep) */
    char include[2 * PATH_MAX + 2];
    char lib[PATH_MAX];
    char exe[PATH_MAX];     /* this fragscope, for the OOM verdict */
} native_paths_t;

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* A build tree (build/fragscope beside build/fragscope_torch.py and
 * build/fragscope_boot/) or the Python package (fragscope_torch/_bin/fragscope
 * beside fragscope_torch/__init__.py and fragscope_torch/_boot/). */
static int find_native(native_paths_t *np)
{
    memset(np, 0, sizeof *np);
    ssize_t n = readlink("/proc/self/exe", np->exe, sizeof np->exe - 1);
    if (n <= 0)
        return fsc_cli_error("record: cannot tell where this fragscope is: %s", strerror(errno));
    np->exe[n] = '\0';
    char dir[PATH_MAX], probe[PATH_MAX + 64], probe2[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s", np->exe);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    snprintf(probe, sizeof probe, "%s/fragscope_torch.py", dir);
    snprintf(probe2, sizeof probe2, "%s/fragscope_boot/sitecustomize.py", dir);
    if (is_file(probe) && is_file(probe2)) {
        snprintf(np->pydir, sizeof np->pydir, "%s", dir);
        snprintf(np->boot, sizeof np->boot, "%s/fragscope_boot", dir);
#ifdef FSC_RECORD_SOURCE_DIR
        snprintf(np->src, sizeof np->src, "%s/tools/torch/fragscope_native.cpp",
                 FSC_RECORD_SOURCE_DIR);
        snprintf(np->include, sizeof np->include, "%s/include:%s/include", FSC_RECORD_SOURCE_DIR,
                 dir);
#endif
        snprintf(np->lib, sizeof np->lib, "%s", dir);
        return 0;
    }
    snprintf(probe, sizeof probe, "%s/../__init__.py", dir);
    snprintf(probe2, sizeof probe2, "%s/../_boot/sitecustomize.py", dir);
    if (is_file(probe) && is_file(probe2)) {
        snprintf(np->boot, sizeof np->boot, "%s/../_boot", dir);
        return 0; /* the package finds its _native/ files itself */
    }
    return fsc_cli_error("record: cannot record a PyTorch program: fragscope_torch.py and "
                         "fragscope_boot/sitecustomize.py are not beside %s (a build made "
                         "by CMake, or the Python package, has them); --shim records a "
                         "program that uses fragscope's own allocator",
                         np->exe);
}

/* The native recorder's files, where the child will look for them. */
static int check_native_files(const native_paths_t *np)
{
    const char *src = getenv("FRAGSCOPE_NATIVE_SRC"), *inc = getenv("FRAGSCOPE_NATIVE_INCLUDE"),
               *lib = getenv("FRAGSCOPE_NATIVE_LIB");
    char pkg[PATH_MAX + 64];
    if (np->pydir[0] == '\0') { /* the package: beside __init__.py */
        snprintf(pkg, sizeof pkg, "%s/..", np->boot);
        static char s[PATH_MAX + 128], i[PATH_MAX + 128], l[PATH_MAX + 128];
        snprintf(s, sizeof s, "%s/fragscope_native.cpp", pkg);
        snprintf(i, sizeof i, "%s/_native/include", pkg);
        snprintf(l, sizeof l, "%s/_native/lib", pkg);
        src = src ? src : s;
        inc = inc ? inc : i;
        lib = lib ? lib : l;
    } else {
        src = src ? src : np->src;
        inc = inc ? inc : np->include;
        lib = lib ? lib : np->lib;
    }
    char p[3 * PATH_MAX];
    const char *missing = NULL;
    if (!is_file(src))
        missing = src;
    snprintf(p, sizeof p, "%s/libfragscope.so", lib);
    if (missing == NULL && !is_file(p))
        missing = p;
    int have_header = 0;
    char incs[2 * PATH_MAX + 2];
    snprintf(incs, sizeof incs, "%s", inc);
    for (char *save = NULL, *d = strtok_r(incs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char h[PATH_MAX + 32];
        snprintf(h, sizeof h, "%s/fragscope/native.h", d);
        have_header |= is_file(h);
    }
    if (missing == NULL && !have_header) {
        snprintf(p, sizeof p, "%s/fragscope/native.h", inc);
        missing = p;
    }
    if (missing != NULL)
        return fsc_cli_error("record: cannot record a PyTorch program: the native recorder's "
                             "%s is missing (set FRAGSCOPE_NATIVE_SRC, FRAGSCOPE_NATIVE_INCLUDE "
                             "and FRAGSCOPE_NATIVE_LIB, or install fragscope with pip install "
                             "./python)",
                             missing[0] ? missing : "source");
    return 0;
}

/* When COMMAND is a Python interpreter, that it can import torch (without
 * importing it: find_spec). Any other command (a launcher, a shell script)
 * is not checked here; its Python processes say so if they cannot record. */
static int check_torch(char **cmd)
{
    const char *base = strrchr(cmd[0], '/');
    base = base ? base + 1 : cmd[0];
    if (strncmp(base, "python", 6) != 0)
        return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        char *argv[] = {cmd[0], (char *)"-c",
                        (char *)"import importlib.util,sys;"
                                "sys.exit(0 if importlib.util.find_spec('torch') else 3)",
                        NULL};
        execvp(cmd[0], argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
        return fsc_cli_error("record: cannot record '%s': it has no torch to import (fragscope "
                             "record records PyTorch programs; --shim is for programs using "
                             "fragscope's own allocator)",
                             cmd[0]);
    return 0;
}

static int set_env_default(const char *k, const char *v)
{
    if (v[0] == '\0' || getenv(k) != NULL)
        return 0;
    return setenv(k, v, 1);
}

/* Paths as the user would type them: relative to the working directory
 * when under it. */
static const char *shown_path(const char *abs, const char *cwd)
{
    size_t n = strlen(cwd);
    if (n > 1 && strncmp(abs, cwd, n) == 0 && abs[n] == '/')
        return abs + n + 1;
    return abs;
}

/* A path for the shell: as it is when it needs no quoting, else in single
 * quotes. */
static void shell_word(char *out, size_t cap, const char *s)
{
    if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./%+=,:@") ==
        strlen(s)) {
        snprintf(out, cap, "%s", s);
        return;
    }
    size_t k = 0;
    if (cap < 3)
        return;
    out[k++] = '\'';
    for (; *s && k + 6 < cap; s++) {
        if (*s == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *s;
        }
    }
    out[k++] = '\'';
    out[k] = '\0';
}

/* The traces the run's processes noted in the manifest, each once: a line
 * each, then the command that analyzes them. Lines starting with '!' are
 * processes that could not record (each said why on stderr). Returns how
 * many traces. */
static int report_manifest(const char *manifest, const char *cwd, const char *cmd0)
{
    FILE *f = fopen(manifest, "r");
    char **seen = NULL;
    int n = 0, cap = 0, failed = 0;
    char line[PATH_MAX + 16];
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        failed += line[0] == '!'; /* a process that could not record (it said why) */
        if (line[0] == '\0' || line[0] == '!')
            continue;
        int dup = 0;
        for (int i = 0; i < n && !dup; i++)
            dup = strcmp(seen[i], line) == 0;
        if (dup)
            continue;
        if (n == cap) {
            int nc = cap ? 2 * cap : 8;
            char **ns = realloc(seen, (size_t)nc * sizeof *ns);
            if (ns == NULL)
                break;
            seen = ns;
            cap = nc;
        }
        if ((seen[n] = strdup(line)) == NULL)
            break;
        n++;
    }
    if (f != NULL)
        fclose(f);
    for (int i = 0; i < n; i++)
        summarize(seen[i], shown_path(seen[i], cwd), cmd0);
    if (n == 0 && failed == 0) {
        fprintf(stderr,
                "fragscope record: %s recorded nothing: no process of it allocated CUDA memory "
                "through PyTorch after importing torch (a program using fragscope's own "
                "allocator records with --shim)\n",
                cmd0);
    } else if (n > 0) {
        /* the database beside the first trace */
        const char *first = shown_path(seen[0], cwd);
        char db[PATH_MAX + 16], w[2 * PATH_MAX];
        size_t l = strlen(first), e = strlen(".fstrace");
        if (l > e && strcmp(first + l - e, ".fstrace") == 0)
            snprintf(db, sizeof db, "%.*s%s", (int)(l - e), first, n > 1 ? ".job.db" : ".db");
        else
            snprintf(db, sizeof db, "%s%s", first, n > 1 ? ".job.db" : ".db");
        fprintf(stderr, "fragscope record: next: fragscope analyze");
        for (int i = 0; i < n; i++) {
            shell_word(w, sizeof w, shown_path(seen[i], cwd));
            fprintf(stderr, " %s", w);
        }
        shell_word(w, sizeof w, db);
        fprintf(stderr, " -o %s && fragscope report %s\n", w, w);
    }
    for (int i = 0; i < n; i++)
        free(seen[i]);
    free(seen);
    return n;
}

static int record_native(const char *out, const char *abs, uint64_t ring, char **cmd)
{
    (void)out;
    native_paths_t np;
    int rc = find_native(&np);
    if (rc == 0)
        rc = check_native_files(&np);
    if (rc == 0)
        rc = check_torch(cmd);
    if (rc != 0)
        return rc;
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        cwd[0] = '\0';

    /* the manifest: one line per trace any process of the run begins */
    const char *tmp = getenv("TMPDIR");
    char manifest[PATH_MAX];
    snprintf(manifest, sizeof manifest, "%s/fragscope-record.XXXXXX",
             tmp && tmp[0] ? tmp : "/tmp");
    int fd = mkstemp(manifest);
    if (fd < 0)
        return fsc_cli_error("record: cannot make a file in %s: %s", tmp && tmp[0] ? tmp : "/tmp",
                             strerror(errno));
    close(fd);

    const char *old = getenv("PYTHONPATH");
    size_t need = strlen(np.boot) + strlen(np.pydir) + (old ? strlen(old) : 0) + 4;
    char *pp = malloc(need);
    if (pp == NULL) {
        unlink(manifest);
        return fsc_cli_error("record: out of memory");
    }
    snprintf(pp, need, "%s%s%s%s%s", np.boot, np.pydir[0] ? ":" : "", np.pydir,
             old && old[0] ? ":" : "", old && old[0] ? old : "");
    char ringv[32];
    snprintf(ringv, sizeof ringv, "%" PRIu64, ring);
    /* FRAGSCOPE_RECORD would make fragscope_torch record at its import,
     * which the bootstrap does at interpreter start: before torch */
    unsetenv("FRAGSCOPE_RECORD");
    int bad = setenv("PYTHONPATH", pp, 1) | setenv("FRAGSCOPE_AUTORECORD", abs, 1) |
              setenv("FRAGSCOPE_AUTORECORD_RING", ringv, 1) |
              setenv("FRAGSCOPE_RECORD_MANIFEST", manifest, 1) |
              set_env_default("FRAGSCOPE_BIN", np.exe) |
              set_env_default("FRAGSCOPE_NATIVE_SRC", np.src) |
              set_env_default("FRAGSCOPE_NATIVE_INCLUDE", np.include) |
              set_env_default("FRAGSCOPE_NATIVE_LIB", np.lib);
    free(pp);
    if (bad != 0) {
        unlink(manifest);
        return fsc_cli_error("cannot set the environment: %s", strerror(errno));
    }
    int code = run_command(cmd);
    if (code != 127)
        report_manifest(manifest, cwd, cmd[0]);
    unlink(manifest);
    return code;
}

int fsc_cmd_record(int argc, char **argv)
{
    const char *out = NULL;
    uint64_t ring = 0;
    int shim = 0;
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
        } else if (strcmp(a, "--shim") == 0) {
            shim = 1;
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
    return shim ? record_shim(out, abs, ring, cmd) : record_native(out, abs, ring, cmd);
}
