/*
 * bench_viewer.c — size and load time of the HTML report in headless
 * Chromium, for the real PyTorch snapshots of tests/data/pytorch and for a
 * simulated run of about ten million events, against the report of the
 * tiniest snapshot (the page's fixed cost) measured in the same run.
 *
 * Load time is what the page itself records: data-frame-ms, milliseconds
 * from the start of navigation to the first animation frame after every
 * view was drawn (parse, JSON, drawing, layout). Each page is loaded three
 * times in a fresh headless Chromium (tests/viewer/chromium_dump.sh) and
 * the median is printed. Budgets (docs/viewer.md): 3 MB for any run, 1 s
 * for the snapshots, 3 s for the ten-million-event run.
 *
 * usage: bench_viewer FRAGSCOPE SOURCE_DIR [STEPS (default 2700)] [DIR (default /tmp)]
 * (gpt2 makes about 3 765 events per simulated step: 2 700 steps is
 * 10.2 M events.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "page_load.h"

static const char *g_bin, *g_src, *g_dir;

static int sh(const char *fmt, const char *a, const char *b, const char *c)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, fmt, a, b, c);
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "bench_viewer: failed (%d): %s\n", rc, cmd);
    return rc;
}

typedef struct page {
    char name[64];
    long long events, bytes;
    double view_s, ms;
} page_t;

/* Analyze input (unless it is a database already), view it, load it. */
static int measure(const char *input, const char *name, page_t *pg)
{
    char db[1024], html[1024];
    snprintf(db, sizeof db, "%s/bench_viewer_%s.db", g_dir, name);
    snprintf(html, sizeof html, "%s/bench_viewer_%s.html", g_dir, name);
    if (sh("FRAGSCOPE_NO_PROGRESS=1 '%s' analyze '%s' -o '%s' --no-suggest > /dev/null", g_bin,
           input, db) != 0)
        return -1;
    double t0 = bench_now_s();
    if (sh("'%s' view '%s' -o '%s'", g_bin, db, html) != 0)
        return -1;
    pg->view_s = bench_now_s() - t0;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' \"SELECT value FROM meta WHERE key='events_total'\"", db);
    FILE *p = popen(cmd, "r");
    pg->events = -1;
    if (p != NULL) {
        if (fscanf(p, "%lld", &pg->events) != 1)
            pg->events = -1;
        pclose(p);
    }
    snprintf(pg->name, sizeof pg->name, "%s", name);
    pg->bytes = bench_file_size(html);
    pg->ms = bench_page_load_ms("bench_viewer", g_src, html);
    unlink(db);
    return pg->ms < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_viewer FRAGSCOPE SOURCE_DIR [STEPS] [DIR]\n");
        return 2;
    }
    g_bin = argv[1];
    g_src = argv[2];
    const char *steps = argc > 3 ? argv[3] : "2700";
    g_dir = argc > 4 ? argv[4] : "/tmp";
    static const char *const k_snaps[] = {"tiny.p4", "gpt2_varlen", "gpt2m_oom_12g",
                                          "resnet50_varbatch"};
    page_t pages[8];
    size_t n = 0;
    for (size_t i = 0; i < sizeof k_snaps / sizeof *k_snaps; i++) {
        char in[1024];
        snprintf(in, sizeof in, "%s/tests/data/pytorch/%s.pickle", g_src, k_snaps[i]);
        if (measure(in, k_snaps[i], &pages[n]) != 0)
            return 3;
        n++;
    }
    char trace[1024];
    snprintf(trace, sizeof trace, "%s/bench_viewer_sim.fstrace", g_dir);
    if (sh("'%s' simulate --workload gpt2 --steps %s -o '%s' > /dev/null", g_bin, steps, trace) != 0)
        return 3;
    if (measure(trace, "gpt2_sim", &pages[n]) != 0)
        return 3;
    n++;
    unlink(trace);

    const page_t *base = &pages[0];
    printf("%-20s %11s %10s %8s %9s %8s %8s\n", "page", "events", "bytes", "/3MB", "view s",
           "load ms", "x tiny");
    int over = 0;
    for (size_t i = 0; i < n; i++) {
        const page_t *p = &pages[i];
        double budget = p->events >= 1000000 ? 3000 : 1000;
        printf("%-20s %11lld %10lld %8.3f %9.2f %8.1f %8.2f%s\n", p->name, p->events, p->bytes,
               (double)p->bytes / 3e6, p->view_s, p->ms, p->ms / base->ms,
               p->ms > budget || p->bytes > 3000000 ? "  OVER BUDGET" : "");
        over |= p->ms > budget || p->bytes > 3000000;
    }
    printf("load ms: median of 3 loads, navigation start to the first frame after drawing;"
           " x tiny: against the %s page\n", base->name);
    return over ? 1 : 0;
}
