/*
 * main.c — the fragscope command line: dispatch to the subcommands, global
 * help and version. Each subcommand parses its own options.
 */
#include <stdio.h>
#include <string.h>

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
            "Exit codes: 0 success, 1 a check failed, 2 bad input or usage, 3 other failure.\n");
}

int main(int argc, char **argv)
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
    return c->run(argc - 1, argv + 1);
}
