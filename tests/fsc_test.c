/*
 * fsc_test.c — implementation of the shared test helpers.
 */
#define _DEFAULT_SOURCE  /* wait4, mkdtemp */
#define _XOPEN_SOURCE 700 /* nftw */
#include <zstd.h>

#include "fsc_test.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_tmp[512];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 ? 0 : -1;
}

/* The scratch directory goes when every test passed and stays, named on
 * stderr, for a look at what a failing test left (docs/TESTING.md). */
static void scratch_finish(int passed)
{
    if (g_tmp[0] == '\0')
        return;
    if (!passed) {
        fprintf(stderr, "scratch directory kept for inspection: %s\n", g_tmp);
        return;
    }
    if (nftw(g_tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "could not remove the scratch directory %s\n", g_tmp);
    g_tmp[0] = '\0';
}

int fsc_test_run(const char *suite, const fsc_test_case_t *tests)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    if (s == NULL)
        return 2;
    for (const fsc_test_case_t *t = tests; t->name != NULL; t++)
        if (CU_add_test(s, t->name, t->fn) == NULL)
            return 2;
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned run = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    scratch_finish(run > 0 && failed == 0);
    if (run == 0)
        return 3;
    return failed == 0 ? 0 : 1;
}

const char *fsc_test_tmpdir(void)
{
    if (g_tmp[0] == '\0') {
        const char *base = getenv("TMPDIR");
        snprintf(g_tmp, sizeof g_tmp, "%s/fsc-test-XXXXXX", base ? base : "/tmp");
        if (mkdtemp(g_tmp) == NULL) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return g_tmp;
}

static char *rotating(void)
{
    static char bufs[8][1024];
    static int i;
    return bufs[i++ & 7];
}

const char *fsc_test_path(const char *name)
{
    char *b = rotating();
    snprintf(b, 1024, "%s/%s", fsc_test_tmpdir(), name);
    return b;
}

const char *fsc_test_data(const char *name)
{
    char *b = rotating();
    snprintf(b, 1024, "%s/%s", FSC_TEST_DATA, name);
    return b;
}

const char *fsc_test_data_unzstd(const char *name)
{
    char src[1024];
    snprintf(src, sizeof src, "%s/%s.zst", FSC_TEST_DATA, name);
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    const char *dst = fsc_test_path(base);
    if (fsc_test_file_exists(dst))
        return dst;
    size_t n = 0;
    char *z = fsc_test_slurp(src, &n);
    if (z == NULL)
        return NULL;
    unsigned long long size = ZSTD_getFrameContentSize(z, n);
    char *out = NULL;
    FILE *f = NULL;
    if (size != ZSTD_CONTENTSIZE_ERROR && size != ZSTD_CONTENTSIZE_UNKNOWN &&
        (out = malloc(size ? size : 1)) != NULL && ZSTD_decompress(out, size, z, n) == size &&
        (f = fopen(dst, "wb")) != NULL && fwrite(out, 1, size, f) == size && fclose(f) == 0) {
        free(out);
        free(z);
        return dst;
    }
    if (f != NULL)
        fclose(f);
    free(out);
    free(z);
    remove(dst);
    return NULL;
}

const char *fsc_test_fragscope(void)
{
    return FSC_BINARY_DIR "/fragscope";
}

int fsc_test_sh(char *out, size_t cap, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[8300];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (p == NULL)
        return -1;
    size_t n = 0;
    char tmp[4096];
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (out != NULL && cap > 0) {
            size_t room = cap - 1 - n;
            size_t k = got < room ? got : room;
            memcpy(out + n, tmp, k);
            n += k;
        }
    }
    if (out != NULL && cap > 0)
        out[n] = '\0';
    int st = pclose(p);
    if (st == -1)
        return -1;
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

char *fsc_test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
            } else {
                buf = nb;
            }
        }
    }
    fclose(f);
    if (buf == NULL)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int fsc_test_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int fsc_test_run_fragscope(const char *const *args, const char *stderr_path, long stack_kb,
                           long *maxrss_kb)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (stderr_path != NULL && freopen(stderr_path, "w", stderr) == NULL)
            _exit(126);
        if (freopen("/dev/null", "w", stdout) == NULL)
            _exit(126);
        if (stack_kb > 0) {
            struct rlimit rl = {(rlim_t)stack_kb * 1024, (rlim_t)stack_kb * 1024};
            setrlimit(RLIMIT_STACK, &rl);
        }
        const char *argv[16];
        int n = 0;
        argv[n++] = fsc_test_fragscope();
        for (const char *const *a = args; *a != NULL && n < 15; a++)
            argv[n++] = *a;
        argv[n] = NULL;
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
        return -1;
    *maxrss_kb = ru.ru_maxrss;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
