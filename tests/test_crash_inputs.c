/*
 * test_crash_inputs.c — every input that ever crashed a fuzz target or
 * broke one of its properties (tests/data/crashers/TARGET/...) goes through
 * the same entry point again (fuzz/fuzz_entry.h), in the normal build. Each
 * input runs in a child process so that an abort names its file instead of
 * ending the suite.
 */
#include "../fuzz/fuzz_entry.h"

#include <dirent.h>
#include <sys/wait.h>

#include "fsc_test.h"

typedef struct target {
    const char *name;
    int (*entry)(const uint8_t *data, size_t len);
} target_t;

static const target_t k_targets[] = {
    {"trace", fsc_fuzz_trace},   {"trace_chunks", fsc_fuzz_trace_chunks},
    {"pickle", fsc_fuzz_pickle}, {"pytorch", fsc_fuzz_pytorch},
    {"config", fsc_fuzz_config}, {"size", fsc_fuzz_size},
    {"whatif", fsc_fuzz_whatif},
    {NULL, NULL},
};

/* Runs entry on the file's bytes in a child; returns its wait status. */
static int run_isolated(const target_t *t, const char *path)
{
    size_t len = 0;
    char *data = fsc_test_slurp(path, &len);
    if (data == NULL)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60); /* a hang (libFuzzer's "timeout") fails as SIGALRM */
        t->entry((const uint8_t *)data, len);
        _exit(0);
    }
    free(data);
    int status = -1;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

static void test_every_crasher_passes(void)
{
    unsigned files = 0;
    for (const target_t *t = k_targets; t->name != NULL; t++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/crashers/%s", FSC_TEST_DATA, t->name);
        DIR *d = opendir(dir);
        if (d == NULL)
            continue;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            int status = run_isolated(t, path);
            int ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
            if (!ok)
                fprintf(stderr, "\n  crasher %s/%s: %s %d\n", t->name, de->d_name,
                        WIFSIGNALED(status) ? "signal" : "status",
                        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            CU_ASSERT(ok);
            files++;
        }
        closedir(d);
    }
    /* The directory is not empty: a path mistake must not pass silently. */
    CU_ASSERT(files >= 1);
}

/* The fixed size parser at the edges of 2^64, and the chunk wrapper on the
 * smallest valid content (one chunk of 0 events: 15 empty columns), which
 * must go through the reader without tripping a property. */
static void test_entries_check_properties(void)
{
    uint64_t v = 0;
    CU_ASSERT_EQUAL(fsc_size_parse("18446744073708446745", &v), 0);
    CU_ASSERT_EQUAL(v, 18446744073708446745ull);
    CU_ASSERT_EQUAL(fsc_size_parse("18446744073709551616", &v), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_size_parse("16EiB", &v), FSC_EINVAL);
    CU_ASSERT_EQUAL(fsc_size_parse("17179869184GiB", &v), FSC_EINVAL); /* 2^64 */
    CU_ASSERT_EQUAL(fsc_size_parse("17179869183GiB", &v), 0);
    CU_ASSERT_EQUAL(v, 17179869183ull << 30);

    /* One chunk holding 0 events: 15 empty columns. */
    uint8_t in[1 + 4 + 16] = {4, 0, 0, 0, 0, 15};
    const char *p = fsc__fuzz_memfile(in, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pid_t pid = fork();
    if (pid == 0) {
        fsc_fuzz_trace_chunks(in, sizeof in);
        _exit(0);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static const fsc_test_case_t k_tests[] = {
    {"every crasher passes its entry point", test_every_crasher_passes},
    {"entry points check their properties", test_entries_check_properties},
    {NULL, NULL},
};

FSC_TEST_MAIN("crash_inputs", k_tests)
