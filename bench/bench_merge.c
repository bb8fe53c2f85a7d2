/*
 * bench_merge.c — how fast per-rank run databases merge into one job
 * database, and how big the job gets per rank, against the single-run
 * analyze of the same ranks measured in the same command.
 *
 * K ranks are simulated (fragscope simulate, GPT-2, 2 steps, seed = rank:
 * different shapes per rank) and each analyzed into its own database
 * (fsc_analyze_file, timed); then the K databases are merged at once
 * (fsc_rundb_merge, timed), and once more into the existing job (nothing
 * added: the cost of an idempotent re-merge, which copies the job), and
 * one more rank is added to the job (the cost of growing a job by one).
 *
 * usage: bench_merge FRAGSCOPE_BINARY [K (default 32)] [DIR (default /tmp)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fragscope/analyzer.h"
#include "fragscope/rundb.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double size_mb(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (double)st.st_size / 1e6 : 0;
}

static int merge(const char *const *in, size_t n, const char *out, fsc_rundb_merge_stats_t *st,
                 double *secs)
{
    fsc_err_t err = {0, ""};
    double t0 = now();
    int rc = fsc_rundb_merge(in, n, out, st, &err);
    *secs = now() - t0;
    if (rc != 0)
        fprintf(stderr, "bench_merge: %s\n", err.msg);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_merge FRAGSCOPE_BINARY [K] [DIR]\n");
        return 2;
    }
    const char *bin = argv[1];
    int k = argc > 2 ? atoi(argv[2]) : 32;
    const char *dir = argc > 3 ? argv[3] : "/tmp";
    if (k < 2 || k > 4096) {
        fprintf(stderr, "bench_merge: K from 2 to 4096\n");
        return 2;
    }
    char **dbs = calloc((size_t)k + 1, sizeof *dbs);
    double analyze_s = 0, single_mb = 0;
    uint64_t events = 0;
    for (int r = 0; r <= k && dbs; r++) {
        char trace[1024], cmd[4096];
        dbs[r] = malloc(1100);
        snprintf(trace, sizeof trace, "%s/bench_merge_rank%d.fstrace", dir, r);
        snprintf(dbs[r], 1100, "%s.db", trace);
        int n = snprintf(cmd, sizeof cmd,
                         "'%s' simulate --workload gpt2 --steps 2 --seed %d -o '%s' > /dev/null",
                         bin, r + 1, trace);
        if (n < 0 || (size_t)n >= sizeof cmd || system(cmd) != 0) {
            fprintf(stderr, "bench_merge: cannot simulate rank %d\n", r);
            return 3;
        }
        fsc_analyze_opts_t o;
        memset(&o, 0, sizeof o);
        fsc_analysis_summary_t sum;
        fsc_err_t err = {0, ""};
        double t0 = now();
        if (fsc_analyze_file(trace, dbs[r], &o, &sum, NULL, &err) != 0) {
            fprintf(stderr, "bench_merge: %s\n", err.msg);
            return 3;
        }
        if (r < k) { /* rank k is the one added to the job afterwards */
            analyze_s += now() - t0;
            single_mb += size_mb(dbs[r]);
            events += sum.events;
        }
        unlink(trace);
    }
    char job[1100];
    snprintf(job, sizeof job, "%s/bench_merge_job.db", dir);
    unlink(job);
    fsc_rundb_merge_stats_t st, st2, st3;
    double merge_s = 0, remerge_s = 0, add_s = 0;
    if (merge((const char *const *)dbs, (size_t)k, job, &st, &merge_s) != 0)
        return 3;
    double job_mb = size_mb(job);
    if (merge((const char *const *)dbs, (size_t)k, job, &st2, &remerge_s) != 0 ||
        merge((const char *const *)&dbs[k], 1, job, &st3, &add_s) != 0)
        return 3;

    printf("bench_merge: %d simulated ranks (GPT-2, 2 steps each, %.0f events per rank), "
           "sqlite %s\n", k, (double)events / k, sqlite3_libversion());
    printf("  analyze, one database per rank: %.2f s (%.3f s per rank), %.2f MB per rank\n",
           analyze_s, analyze_s / k, single_mb / k);
    printf("  merge of the %d databases:      %.2f s: %.0f runs/s, %.1f MB/s, %.0f rows/s\n", k,
           merge_s, k / merge_s, single_mb / merge_s, (double)st.rows / merge_s);
    printf("  job database: %.2f MB, %.3f MB per rank (%.2f x a single-run database)\n", job_mb,
           job_mb / k, job_mb / single_mb);
    printf("  merge / analyze time: %.3f\n", merge_s / analyze_s);
    printf("  the same merge again (all %llu runs skipped, the job copied): %.2f s\n",
           (unsigned long long)st2.runs_skipped, remerge_s);
    printf("  one more rank into the %llu-run job: %.2f s (the job copied, then the rank)\n",
           (unsigned long long)st2.runs, add_s);
    printf("  rows copied: %llu (%.0f per rank)\n", (unsigned long long)st.rows,
           (double)st.rows / k);
    for (int r = 0; r <= k; r++) {
        unlink(dbs[r]);
        free(dbs[r]);
    }
    free(dbs);
    unlink(job);
    return st3.runs_added == 1 && st2.runs_skipped == (uint64_t)k ? 0 : 1;
}
