/*
 * cmd_simulate.c — `fragscope simulate`: run a synthetic training workload
 * through the caching allocator on the sim backend, optionally recording the
 * run, and print a memory_summary()-style table.
 *
 * An OOM ends the run the way it ends a training script, but the simulation
 * itself succeeded: the OOM is reported and the exit status is 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "workload.h"

const char fsc_cmd_simulate_summary[] = "run a synthetic training workload through the allocator";
const char fsc_cmd_simulate_usage[] =
    "usage: fragscope simulate --workload NAME [--steps N] [--capacity SIZE]\n"
    "                          [--config STR] [--seed S] [-o run.fstrace] [--profile]\n"
    "\n"
    "Runs a synthetic training workload through the caching allocator on the\n"
    "simulated backend (no GPU needed) and prints the allocator's statistics like\n"
    "PyTorch's torch.cuda.memory_summary(). An out-of-memory stops the run, as it\n"
    "would stop a training script, and is reported as \"OOM at step N\" with the\n"
    "allocator's message; the exit status is still 0.\n"
    "\n"
    "workloads:\n"
    "  gpt2    GPT-2 small, AdamW, batch 8, sequence length 128-1024 per step\n"
    "  resnet  ResNet-50, SGD + momentum, batch 32/48/64, 160/192/224 px per step\n"
    "\n"
    "options:\n"
    "  --workload NAME   the workload (required)\n"
    "  --steps N         training steps (default 6)\n"
    "  --capacity SIZE   bytes the allocator may reserve, e.g. 18GiB (default 80GiB)\n"
    "  --config STR      allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax, e.g.\n"
    "                    expandable_segments:True or max_split_size_mb:128\n"
    "  --seed S          seed of the per-step random shapes (default 1)\n"
    "  -o FILE           record the run into FILE (.fstrace), under its name from\n"
    "                    the start so that a kill leaves it readable; without -o\n"
    "                    the run is recorded where FRAGSCOPE_TRACE points, if set\n"
    "  --profile         run the workload without the allocator and print what it\n"
    "                    requests per step (allocations, bytes, peak live bytes)\n"
    "\n"
    "exit status: 0 the simulation ran (with or without an OOM), 2 bad options,\n"
    "3 the trace could not be written.\n";

static int parse_int(const char *opt, const char *val, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    if (val == NULL || val[0] == '\0')
        return fsc_cli_usage_error("simulate", "%s needs a value", opt);
    long long v = strtoll(val, &end, 10);
    if (*end != '\0' || v < lo || v > hi)
        return fsc_cli_usage_error("simulate", "%s: '%s' is not a whole number in %lld..%lld",
                                   opt, val, lo, hi);
    *out = v;
    return 0;
}

static void on_step(void *ud, int step, int steps)
{
    fsc_progress_update(ud, (uint64_t)step, (uint64_t)steps);
}

int fsc_cmd_simulate(int argc, char **argv)
{
    fsc_sim_opts_t o = FSC_SIM_OPTS_DEFAULT;
    int profile = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int takes = strcmp(a, "--workload") == 0 || strcmp(a, "--steps") == 0 ||
                    strcmp(a, "--seed") == 0 || strcmp(a, "--capacity") == 0 ||
                    strcmp(a, "--config") == 0 || strcmp(a, "-o") == 0 ||
                    strcmp(a, "--output") == 0;
        if (strcmp(a, "--profile") == 0) {
            profile = 1;
            continue;
        }
        if (!takes)
            return fsc_cli_usage_error("simulate", "unknown option '%s'", a);
        if (i + 1 >= argc)
            return fsc_cli_usage_error("simulate", "%s needs a value", a);
        const char *v = argv[++i];
        long long n = 0;
        int rc = 0;
        if (strcmp(a, "--workload") == 0) {
            o.workload = v;
        } else if (strcmp(a, "--steps") == 0) {
            rc = parse_int(a, v, 1, 100000, &n);
            o.steps = (int)n;
        } else if (strcmp(a, "--seed") == 0) {
            rc = parse_int(a, v, 0, (long long)1 << 62, &n);
            o.seed = (uint64_t)n;
        } else if (strcmp(a, "--capacity") == 0) {
            rc = fsc_cli_size("simulate", a, v, &o.capacity);
            if (rc == 0 && o.capacity == 0)
                rc = fsc_cli_usage_error("simulate", "--capacity must be more than 0");
        } else if (strcmp(a, "--config") == 0) {
            o.config = v;
        } else {
            o.output = v;
        }
        if (rc != 0)
            return rc;
    }
    if (o.workload == NULL)
        return fsc_cli_usage_error("simulate", "--workload is required (workloads: %s)",
                                   fsc_workload_names());
    if (fsc_workload_describe(o.workload) == NULL)
        return fsc_cli_error("simulate: unknown workload '%s' (workloads: %s)", o.workload,
                             fsc_workload_names());

    fsc_err_t err = {0, ""};
    if (profile && (o.output != NULL || o.capacity != 0 || o.config != NULL))
        return fsc_cli_usage_error("simulate", "--profile runs the workload without the allocator: "
                                               "-o, --capacity and --config do not apply");
    if (profile) {
        int rc = fsc_workload_profile(o.workload, o.steps, o.seed, stdout, &err);
        if (rc != 0)
            return fsc_cli_error("simulate: %s", fsc_err_msg(&err));
        return FSC_EXIT_OK;
    }

    static fsc_sim_result_t res; /* large: keep it off the stack */
    fsc_progress_t prog;
    fsc_progress_init(&prog, "simulate");
    o.on_step = on_step;
    o.ud = &prog;
    int rc = fsc_sim_run(&o, &res, &err);
    fsc_progress_done(&prog);
    if (rc != 0) {
        if (rc == FSC_ECONFIG)
            return fsc_cli_error("simulate: --config '%s': %s", o.config, fsc_err_msg(&err));
        fsc_cli_error("simulate: %s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    fsc_sim_print(&o, &res, stdout);
    return FSC_EXIT_OK;
}
