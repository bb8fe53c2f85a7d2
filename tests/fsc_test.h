/*
 * fsc_test.h — shared helpers for the CUnit suites: one main per suite, a
 * scratch directory per run, and running the fragscope binary.
 */
#ifndef FSC_TEST_H
#define FSC_TEST_H

#include <CUnit/Basic.h>
#include <stddef.h>

/* FSC_TEST_SANITIZED: an AddressSanitizer or ThreadSanitizer build, whose
 * runtimes keep shadow memory and quarantines (bounds on peak RSS allow
 * such builds more). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FSC_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FSC_TEST_SANITIZED 1
#endif
#endif

typedef struct fsc_test_case {
    const char *name;
    void (*fn)(void);
} fsc_test_case_t;

/* Run one suite; returns the process exit code (0 = every test passed).
 * The scratch directory (fsc_test_tmpdir) is removed when every test
 * passed, and kept, its path on stderr, when one failed. */
int fsc_test_run(const char *suite, const fsc_test_case_t *tests);

#define FSC_TEST_MAIN(suite, table) \
    int main(void) { return fsc_test_run((suite), (table)); }

/* A fresh scratch directory for this process (created on first use). */
const char *fsc_test_tmpdir(void);
/* tmpdir/name into a static rotating buffer. */
const char *fsc_test_path(const char *name);
/* FSC_TEST_DATA/name, likewise. */
const char *fsc_test_data(const char *name);
/* tests/data/NAME.zst decompressed into the test's temporary folder (once);
 * its path there, or NULL. For the large inputs kept compressed. */
const char *fsc_test_data_unzstd(const char *name);
/* Path of the built fragscope binary. */
const char *fsc_test_fragscope(void);
/* Run the fragscope binary with args (NULL-terminated, at most 14), stdout
 * to /dev/null and stderr to stderr_path (NULL: inherited), under a stack
 * limit of stack_kb KiB (0: inherited). Returns the exit status (128 + N
 * for signal N, -1 when it could not run); *maxrss_kb gets its peak RSS. */
int fsc_test_run_fragscope(const char *const *args, const char *stderr_path, long stack_kb,
                           long *maxrss_kb);

/* Run a shell command line; capture up to cap-1 bytes of stdout+stderr into
 * out (may be NULL). Returns the exit status, or 128+signal when killed. */
int fsc_test_sh(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whole file into a malloc'd NUL-terminated buffer (NULL on error). */
char *fsc_test_slurp(const char *path, size_t *len);
int fsc_test_file_exists(const char *path);

/* Occurrences of needle in hay. */
size_t fsc_test_count(const char *hay, const char *needle);

/* A run database at tmpdir/name with the tables of fsc_rundb_schema_v1()
 * (the fixtures are schema-1 files: one run, no run column), filled by the
 * given fixture (a file of tests/viewer/); a failure is a fatal assertion. */
const char *fsc_test_viewer_db(const char *name, const char *fixture);
/* The part of a dumped DOM from `start` to the next `end` (a malloc'd copy),
 * or NULL when `start` is absent. */
char *fsc_test_dom_part(const char *dom, const char *start, const char *end);
/* The value of the page probe's "name=value" line (a malloc'd copy), or NULL. */
char *fsc_test_probe_value(const char *dom, const char *name);
/* Write the page at page_path to out_path with two scripts before </body>:
 * `pre` (may be NULL) and the file tests/viewer/probe_file; fatal on failure. */
void fsc_test_page_with_probe(const char *page_path, const char *pre, const char *probe_file,
                              const char *out_path);
/* The DOM of `page` (+ `hash`, may be NULL) after its scripts ran in headless
 * Chromium (tests/viewer/chromium_dump.sh; width > 0: a window that wide),
 * a malloc'd copy; NULL when Chromium is not installed (*no_browser set, a
 * note printed the first time). A Chromium failure is a fatal assertion. */
char *fsc_test_chromium_dom(const char *page, const char *hash, int width, int *no_browser);

#endif
