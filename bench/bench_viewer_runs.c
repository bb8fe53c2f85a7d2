/*
 * bench_viewer_runs.c — size and generation time of the HTML report of a
 * job database of 1, 8 and 64 simulated runs, against the one-run page
 * measured in the same run, and the load time of each page in headless
 * Chromium (the page's own data-frame-ms, median of three loads).
 *
 * Run k simulates GPT-2 for two steps with seed k + 1 under a capacity of
 * 10 + 2 (k mod 4) GiB (a quarter of them run out of memory). The job
 * databases are built from the single-run databases with SQL, the way
 * `fragscope merge` does (every table gets the run column first, a runs
 * table names each run's rank). The page carries the detail of every run up
 * to 8 runs; of 64, the first to run out of memory and the least headroom,
 * so its size is the overview's (120 points per run) plus two runs' detail.
 *
 * usage: bench_viewer_runs FRAGSCOPE SOURCE_DIR [DIR (default /tmp)]
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAXRUNS 64

static const char *g_bin, *g_src, *g_dir;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "bench_viewer_runs: failed (%d): %s\n", rc, cmd);
    return rc;
}

static int exec(sqlite3 *h, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    fprintf(stderr, "bench_viewer_runs: %s: %s\n", sql, msg ? msg : "?");
    sqlite3_free(msg);
    return -1;
}

/* The single-run databases dbs[0..n) as runs 0..n-1 of job (rank = run). */
static int merge(const char *job, char dbs[][1024], int n)
{
    unlink(job);
    sqlite3 *h = NULL;
    if (sqlite3_open(job, &h) != SQLITE_OK)
        return -1;
    int rc = exec(h, "CREATE TABLE runs(run INTEGER PRIMARY KEY, rank INTEGER, device INTEGER,"
                     " host TEXT, pid INTEGER, source TEXT, kind TEXT)");
    static char sql[24576], cols[8192];
    for (int k = 0; rc == 0 && k < n; k++) {
        char *q = sqlite3_mprintf("ATTACH %Q AS s; BEGIN", dbs[k]);
        rc = exec(h, q);
        sqlite3_free(q);
        sqlite3_stmt *st = NULL;
        if (rc == 0 && sqlite3_prepare_v2(h, "SELECT name, sql FROM s.sqlite_master WHERE type = 'table'"
                                             " AND name NOT LIKE 'sqlite_%' AND name <> 'runs'",
                                          -1, &st, NULL) != SQLITE_OK)
            rc = -1;
        while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(st, 0);
            int has_run = 0;
            cols[0] = '\0';
            sqlite3_stmt *ci = NULL;
            char *pq = sqlite3_mprintf("SELECT name FROM pragma_table_info(%Q, 's')", name);
            sqlite3_prepare_v2(h, pq, -1, &ci, NULL);
            sqlite3_free(pq);
            while (sqlite3_step(ci) == SQLITE_ROW) {
                const char *c = (const char *)sqlite3_column_text(ci, 0);
                if (strcmp(c, "run") == 0)
                    has_run = 1;
                else
                    snprintf(cols + strlen(cols), sizeof cols - strlen(cols), ", \"%s\"", c);
            }
            sqlite3_finalize(ci);
            if (k == 0) {
                if (has_run)
                    snprintf(sql, sizeof sql, "%s", (const char *)sqlite3_column_text(st, 1));
                else
                    snprintf(sql, sizeof sql, "CREATE TABLE main.\"%s\" AS SELECT 0 AS run, * FROM s.\"%s\" WHERE 0",
                             name, name);
                rc = exec(h, sql);
            }
            snprintf(sql, sizeof sql, "INSERT INTO main.\"%s\" (run%s) SELECT %d%s FROM s.\"%s\"", name, cols,
                     k, cols, name);
            if (rc == 0)
                rc = exec(h, sql);
        }
        sqlite3_finalize(st);
        if (rc == 0 && k == 0 &&
            sqlite3_prepare_v2(h, "SELECT sql FROM s.sqlite_master WHERE type = 'view'", -1, &st, NULL) == SQLITE_OK) {
            while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
                rc = exec(h, (const char *)sqlite3_column_text(st, 0));
            sqlite3_finalize(st);
        }
        q = sqlite3_mprintf("INSERT INTO runs VALUES (%d, %d, 0, NULL, NULL, 'rank%d.fstrace', 'trace');"
                            " COMMIT; DETACH s", k, k, k);
        if (rc == 0)
            rc = exec(h, q);
        sqlite3_free(q);
    }
    sqlite3_close(h);
    return rc;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Median data-frame-ms of three loads; -1 on failure. */
static double load_ms(const char *html)
{
    double t[3];
    char cmd[4096], dom[1100];
    snprintf(dom, sizeof dom, "%s.dom", html);
    snprintf(cmd, sizeof cmd, "sh '%s/tests/viewer/chromium_dump.sh' '%s' '%s'", g_src, html, dom);
    for (int i = 0; i < 3; i++) {
        if (run(cmd) != 0)
            return -1;
        FILE *f = fopen(dom, "r");
        if (f == NULL)
            return -1;
        static char buf[1 << 24];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *p = strstr(buf, "data-frame-ms=\"");
        if (p == NULL || strstr(buf, "<pre id=\"js-errors\" class=\"diag\"></pre>") == NULL) {
            fprintf(stderr, "bench_viewer_runs: %s did not draw cleanly\n", html);
            return -1;
        }
        t[i] = atof(p + 15);
    }
    qsort(t, 3, sizeof t[0], cmp_d);
    return t[1];
}

static long long fsize(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
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
    static char dbs[MAXRUNS][1024];
    char cmd[4096];
    for (int k = 0; k < MAXRUNS; k++) {
        char trace[960];
        snprintf(trace, sizeof trace, "%s/bench_viewer_runs_%d.fstrace", g_dir, k);
        snprintf(dbs[k], sizeof dbs[k], "%s.db", trace);
        int len = snprintf(cmd, sizeof cmd, "'%s' simulate --workload gpt2 --steps 2 --seed %d --capacity %dGiB -o '%s'"
                 " > /dev/null && FRAGSCOPE_NO_PROGRESS=1 '%s' analyze '%s' -o '%s' --no-suggest > /dev/null",
                 g_bin, k + 1, 10 + 2 * (k % 4), trace, g_bin, trace, dbs[k]);
        if (len < 0 || (size_t)len >= sizeof cmd || run(cmd) != 0)
            return 3;
        unlink(trace);
    }
    static const int k_sizes[] = {1, 8, 64};
    long long bytes[3];
    double view_s[3], ms[3];
    for (int i = 0; i < 3; i++) {
        char job[1024], html[1024];
        snprintf(job, sizeof job, "%s/bench_viewer_runs_job%d.db", g_dir, k_sizes[i]);
        snprintf(html, sizeof html, "%s/bench_viewer_runs_job%d.html", g_dir, k_sizes[i]);
        if (k_sizes[i] == 1)
            snprintf(job, sizeof job, "%s", dbs[0]);
        else if (merge(job, dbs, k_sizes[i]) != 0)
            return 3;
        snprintf(cmd, sizeof cmd, "'%s' view '%s' -o '%s'", g_bin, job, html);
        double t0 = now_s();
        if (run(cmd) != 0)
            return 3;
        view_s[i] = now_s() - t0;
        bytes[i] = fsize(html);
        ms[i] = load_ms(html);
        if (ms[i] < 0)
            return 3;
        if (k_sizes[i] > 1)
            unlink(job);
    }
    printf("%5s %10s %8s %8s %9s %8s %8s\n", "runs", "bytes", "x 1 run", "view s", "x 1 run", "load ms",
           "x 1 run");
    for (int i = 0; i < 3; i++)
        printf("%5d %10lld %8.2f %8.2f %9.2f %8.1f %8.2f\n", k_sizes[i], bytes[i],
               (double)bytes[i] / (double)bytes[0], view_s[i], view_s[i] / view_s[0], ms[i], ms[i] / ms[0]);
    printf("x 1 run: against the one-run page of the same run; load ms: median of 3 loads,"
           " navigation start to the first frame after drawing\n");
    for (int k = 0; k < MAXRUNS; k++)
        unlink(dbs[k]);
    return 0;
}
