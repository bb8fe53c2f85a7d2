/*
 * page_load.h — what the HTML-report benchmarks share: a monotonic clock,
 * a file's size, and a page's load time in headless Chromium (the page's
 * own data-frame-ms, median of three loads, through
 * tests/viewer/chromium_dump.sh).
 */
#ifndef FSC_BENCH_PAGE_LOAD_H
#define FSC_BENCH_PAGE_LOAD_H

double bench_now_s(void);

/* Size of the file at path in bytes; -1 when it cannot be read. */
long long bench_file_size(const char *path);

/* Median data-frame-ms of three loads of html, the dump script taken from
 * the source tree src; -1 (with a line on stderr naming who) when a load
 * fails or the page reports a script error. */
double bench_page_load_ms(const char *who, const char *src, const char *html);

#endif
