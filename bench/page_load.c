/*
 * page_load.c — the measurements bench_viewer and bench_viewer_runs share
 * (page_load.h says what each is).
 */
#include "page_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

long long bench_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

double bench_page_load_ms(const char *who, const char *src, const char *html)
{
    double t[3];
    char cmd[4096], dom[1100];
    snprintf(dom, sizeof dom, "%s.dom", html);
    int len = snprintf(cmd, sizeof cmd, "sh '%s/tests/viewer/chromium_dump.sh' '%s' '%s'", src, html, dom);
    if (len < 0 || (size_t)len >= sizeof cmd)
        return -1;
    static char buf[1 << 24];
    for (int i = 0; i < 3; i++) {
        int rc = system(cmd);
        if (rc != 0) {
            fprintf(stderr, "%s: failed (%d): %s\n", who, rc, cmd);
            return -1;
        }
        FILE *f = fopen(dom, "r");
        if (f == NULL)
            return -1;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *p = strstr(buf, "data-frame-ms=\"");
        if (p == NULL || strstr(buf, "<pre id=\"js-errors\" class=\"diag\"></pre>") == NULL) {
            fprintf(stderr, "%s: %s did not draw cleanly\n", who, html);
            return -1;
        }
        t[i] = atof(p + 15);
    }
    qsort(t, 3, sizeof t[0], cmp_d);
    return t[1];
}
