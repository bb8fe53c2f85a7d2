/*
 * bench_viewer_runs.c — size and generation time of the HTML report of a
 * job database of 1, 8 and 64 simulated runs, against the one-run page
 * measured in the same run, and the load time of each page in headless
 * Chromium (the page's own data-frame-ms, median of three loads).
 *
 * Run k simulates GPT-2 for two steps with seed k + 1 under a capacity of
 * 10 + 2 (k mod 4) GiB (a quarter of them run out of memory), recorded as
 * rankK.fstrace; the job databases are `fragscope analyze` of the first 1, 8
 * and 64 of them (-j 2; the ranks from the file names). The page carries the detail of every run up
 * to 8 runs; of 64, the first to run out of memory and the least headroom,
 * so its size is the overview's (120 points per run) plus two runs' detail.
 *
 * usage: bench_viewer_runs FRAGSCOPE SOURCE_DIR [DIR (default /tmp)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "page_load.h"

#define MAXRUNS 64

static const char *g_bin, *g_src, *g_dir;

static int run(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "bench_viewer_runs: failed (%d): %s\n", rc, cmd);
    return rc;
}

/* "'BIN' analyze DIR/rank0.fstrace ... -o 'DB' --no-suggest -j 2" for n traces. */
static int analyze(int n, const char *db)
{
    size_t cap = 1024 + (size_t)n * (strlen(g_dir) + 32) + strlen(g_bin) + strlen(db);
    char *cmd = malloc(cap);
    if (cmd == NULL)
        return -1;
    size_t len = (size_t)snprintf(cmd, cap, "FRAGSCOPE_NO_PROGRESS=1 '%s' analyze", g_bin);
    for (int k = 0; k < n; k++)
        len += (size_t)snprintf(cmd + len, cap - len, " '%s/rank%d.fstrace'", g_dir, k);
    snprintf(cmd + len, cap - len, " -o '%s' --no-suggest -j 2 > /dev/null", db);
    int rc = run(cmd);
    free(cmd);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_viewer_runs FRAGSCOPE SOURCE_DIR [DIR]\n");
        return 2;
    }
    g_bin = argv[1];
    g_src = argv[2];
    g_dir = argc > 3 ? argv[3] : "/tmp";
    static char cmd[8192];
    for (int k = 0; k < MAXRUNS; k++) {
        int len = snprintf(cmd, sizeof cmd, "'%s' simulate --workload gpt2 --steps 2 --seed %d --capacity %dGiB"
                           " -o '%s/rank%d.fstrace' > /dev/null", g_bin, k + 1, 10 + 2 * (k % 4), g_dir, k);
        if (len < 0 || (size_t)len >= sizeof cmd || run(cmd) != 0)
            return 3;
    }
    static const int k_sizes[] = {1, 8, 64};
    long long bytes[3];
    double view_s[3], ms[3];
    for (int i = 0; i < 3; i++) {
        char job[1024], html[1024];
        snprintf(job, sizeof job, "%s/bench_viewer_runs_job%d.db", g_dir, k_sizes[i]);
        snprintf(html, sizeof html, "%s/bench_viewer_runs_job%d.html", g_dir, k_sizes[i]);
        if (analyze(k_sizes[i], job) != 0)
            return 3;
        int len = snprintf(cmd, sizeof cmd, "'%s' view '%s' -o '%s'", g_bin, job, html);
        if (len < 0 || (size_t)len >= sizeof cmd)
            return 3;
        double t0 = bench_now_s();
        if (run(cmd) != 0)
            return 3;
        view_s[i] = bench_now_s() - t0;
        bytes[i] = bench_file_size(html);
        ms[i] = bench_page_load_ms("bench_viewer_runs", g_src, html);
        if (ms[i] < 0)
            return 3;
        unlink(job);
    }
    printf("%5s %10s %8s %8s %9s %8s %8s\n", "runs", "bytes", "x 1 run", "view s", "x 1 run", "load ms",
           "x 1 run");
    for (int i = 0; i < 3; i++)
        printf("%5d %10lld %8.2f %8.2f %9.2f %8.1f %8.2f\n", k_sizes[i], bytes[i],
               (double)bytes[i] / (double)bytes[0], view_s[i], view_s[i] / view_s[0], ms[i], ms[i] / ms[0]);
    printf("x 1 run: against the one-run page of the same run; load ms: median of 3 loads,"
           " navigation start to the first frame after drawing\n");
    for (int k = 0; k < MAXRUNS; k++) {
        snprintf(cmd, sizeof cmd, "%s/rank%d.fstrace", g_dir, k);
        unlink(cmd);
    }
    return 0;
}
