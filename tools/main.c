/*
 * main.c — the fragscope command line: dispatch to the subcommands, global
 * help and version. Each subcommand parses its own options.
 *
 * What every command shares is settled here, once: an interrupting signal
 * (SIGINT, SIGTERM, SIGHUP) removes the temporaries of outputs not yet in
 * place and exits 128+N with one line; SIGXFSZ is ignored, so that a
 * file-size limit is an EFBIG write error that the writers report like a
 * full disk; and standard output is flushed and checked at the end, so that
 * a result that could not be written is exit 3, not 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct fsc_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const char *usage;
} fsc_cmd_t;

static const fsc_cmd_t k_cmds[] = {
#define FSC_CMD(n) {#n, fsc_cmd_##n, fsc_cmd_##n##_summary, fsc_cmd_##n##_usage},
#include "fsc_cmds.gen.h"
#undef FSC_CMD
    {NULL, NULL, NULL, NULL},
};

static const fsc_cmd_t *find_cmd(const char *name)
{
    for (const fsc_cmd_t *c = k_cmds; c->name != NULL; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: fragscope COMMAND [ARGS...]\n"
            "\n"
            "Record what a GPU caching allocator does and explain it: fragmentation,\n"
            "the cause of every out-of-memory, bin usage, and what other settings would do.\n"
            "\n"
            "commands:\n");
    for (const fsc_cmd_t *c = k_cmds; c->name != NULL; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out,
            "\n"
            "'fragscope help COMMAND' describes one command. Sizes accept units (512MiB, 18GiB).\n"
            "Exit codes: 0 success, 1 a check failed, 2 bad input or usage (an input\n"
            "that is missing, a directory or unreadable; an output path that is a\n"
            "directory or in a folder that does not exist or cannot be written: one\n"
            "line naming the file, checked before any work, nothing written), 3 other\n"
            "failure (an output or standard output that fails while being written, a\n"
            "full disk), 128+N killed by signal N (130 Ctrl-C, 143 SIGTERM: no\n"
            "half-written output is left).\n"
            "Commands running over 2 s show their progress on stderr when it is a terminal\n"
            "(bytes read, events, rate, ETA); FRAGSCOPE_NO_PROGRESS=1 turns it off.\n"
            "A large snapshot is scanned and its history decoded on every CPU, and its\n"
            "events are analysed or written on a second thread while it is read;\n"
            "FRAGSCOPE_THREADS=1 keeps one thread.\n");
}

static const char *g_cmd = "";

/* Async-signal-safe: write and _exit only, the message built by hand. */
static void on_interrupt(int sig)
{
    const char *out = fsc_outfile_remove_all();
    char buf[1024];
    size_t n = 0;
    const char *parts[8] = {"fragscope", g_cmd[0] ? " " : "", g_cmd, ": interrupted by ",
                            sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP",
                            out ? "; not written: " : "", out ? out : "", "\n"};
    for (size_t i = 0; i < 8; i++)
        for (const char *p = parts[i]; *p != '\0' && n < sizeof buf - 2; p++)
            buf[n++] = *p;
    if (n > 0 && buf[n - 1] != '\n')
        buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, n);
    (void)w;
    _exit(128 + sig);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGHUP);
    static const int k_sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof k_sigs / sizeof k_sigs[0]; i++) {
        struct sigaction old;
        /* A signal ignored by whoever started us (nohup, a background job)
         * stays ignored. */
        if (sigaction(k_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(k_sigs[i], &sa, NULL);
    }
    signal(SIGXFSZ, SIG_IGN);
}

/* The command's status, or 3 when what it printed did not all reach
 * standard output (a full disk, a closed descriptor). */
static int check_stdout(int rc)
{
    errno = 0;
    int bad = fflush(stdout) != 0;
    int e = errno;
    if (!bad && !ferror(stdout))
        return rc;
    if (rc == FSC_EXIT_OK || rc == FSC_EXIT_CHECK_FAILED) {
        fprintf(stderr, "fragscope%s%s: cannot write standard output: %s\n", g_cmd[0] ? " " : "",
                g_cmd, e ? strerror(e) : "write error");
        return FSC_EXIT_FAILURE;
    }
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stderr);
        return FSC_EXIT_BAD_INPUT;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_help(stdout);
        return FSC_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("fragscope %s\n", FSC_VERSION_STRING);
        return FSC_EXIT_OK;
    }
    if (strcmp(name, "help") == 0) {
        if (argc < 3) {
            print_help(stdout);
            return FSC_EXIT_OK;
        }
        const fsc_cmd_t *c = find_cmd(argv[2]);
        if (c == NULL)
            return fsc_cli_error("help: unknown command '%s' (see 'fragscope --help')", argv[2]);
        fputs(c->usage, stdout);
        return FSC_EXIT_OK;
    }
    const fsc_cmd_t *c = find_cmd(name);
    if (c == NULL)
        return fsc_cli_error("unknown command '%s' (see 'fragscope --help')", name);
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(c->usage, stdout);
            return FSC_EXIT_OK;
        }
        if (strcmp(argv[i], "--") == 0)
            break;
    }
    g_cmd = c->name;
    return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    install_signals();
    return check_stdout(run(argc, argv));
}
