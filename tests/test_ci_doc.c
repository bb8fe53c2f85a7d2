/*
 * test_ci_doc.c — the CI examples of docs/ci.md run as written: the
 * GitHub Actions compare step's script (under the shell GitHub uses,
 * `bash --noprofile --norc -eo pipefail`, with GITHUB_STEP_SUMMARY set) and
 * the GitLab compare job's script lines (one shell, as the runner runs
 * them), on two real recordings laid out as the jobs lay them out
 * (base/run.pickle, new/run.pickle): a regression fails the job with the
 * summary, JUnit file and annotations written; an unchanged run passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc_test.h"

/* The lines of docs/ci.md's block that starts after `start` (a line's
 * text), indented by more than `indent` spaces, dedented by `strip`; for
 * GitLab's list items, the "- " is dropped too. Malloc'd. */
static char *extract(const char *doc, const char *after, const char *start, size_t indent,
                     size_t strip, int items)
{
    const char *p = strstr(doc, after);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    p = strstr(p, start);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    p += strlen(start);
    if (p[-1] != '\n')
        p = strchr(p, '\n') + 1;
    size_t cap = strlen(doc) + 1, len = 0;
    char *out = calloc(1, cap);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        size_t sp = strspn(p, " ");
        if (n > 0 && sp <= indent)
            break;
        const char *text = p + (n > strip ? strip : n);
        size_t tl = n > strip ? n - strip : 0;
        if (items && tl >= 2 && strncmp(text, "- ", 2) == 0)
            text += 2, tl -= 2;
        memcpy(out + len, text, tl);
        len += tl;
        out[len++] = '\n';
        p = nl ? nl + 1 : p + n;
    }
    return out;
}

static char *g_doc;

/* A checkout with base/run.pickle and new/run.pickle (the recordings
 * named), and bench/gpu/boundary_job.py, the file the recordings' frames
 * name. Returns its path. */
static const char *layout(const char *name, const char *base, const char *new_)
{
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s", fsc_test_path(name));
    char out[4096];
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out,
                                      "mkdir -p %s/base %s/new %s/bench/gpu && cp %s "
                                      "%s/base/run.pickle && cp %s %s/new/run.pickle && touch "
                                      "%s/bench/gpu/boundary_job.py",
                                      dir, dir, dir, fsc_test_data(base), dir,
                                      fsc_test_data(new_), dir, dir),
                          0);
    return dir;
}

static int run_script(const char *dir, const char *script, const char *shell, char *out,
                      size_t cap)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/ci.sh", dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(script, f);
    fclose(f);
    char bin[1024];
    snprintf(bin, sizeof bin, "%s", fsc_test_fragscope());
    *strrchr(bin, '/') = '\0';
    return fsc_test_sh(out, cap, "cd %s && PATH=%s:$PATH GITHUB_STEP_SUMMARY=%s/summary.md %s "
                       "ci.sh", dir, bin, dir, shell);
}

static void test_github(void)
{
    char *script = extract(g_doc, "## GitHub Actions", "      - name: compare\n        run: |",
                           8, 10, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(script, "fragscope diff base/run.pickle new/run.pickle"));
    CU_ASSERT_PTR_NOT_NULL(strstr(script, "exit $status\n"));
    const char *sh = "bash --noprofile --norc -eo pipefail";
    char out[1 << 16], path[1200];
    /* a regression: roundup_power2_divisions:4 reserves 17% more */
    const char *dir = layout("gh_worse", "gpu/boundary/b_defaults.pickle",
                             "gpu/boundary/b_rp4.pickle");
    CU_ASSERT_EQUAL(run_script(dir, script, sh, out, sizeof out), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "::warning file=bench/gpu/boundary_job.py,line=72,"));
    snprintf(path, sizeof path, "%s/summary.md", dir);
    char *s = fsc_test_slurp(path, NULL);
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT_PTR_NOT_NULL(s ? strstr(s, "### fragscope diff: base/run.pickle → new/run.pickle") : NULL);
    CU_ASSERT_PTR_NOT_NULL(s ? strstr(s, "- :x: peak-reserved:+2%") : NULL);
    free(s);
    snprintf(path, sizeof path, "%s/memory-junit.xml", dir);
    s = fsc_test_slurp(path, NULL);
    CU_ASSERT_PTR_NOT_NULL(s ? strstr(s, "tests=\"3\" failures=\"1\"") : NULL);
    free(s);
    /* the same run twice: the job passes */
    dir = layout("gh_same", "gpu/boundary/b_defaults.pickle", "gpu/boundary/b_defaults.pickle");
    CU_ASSERT_EQUAL(run_script(dir, script, sh, out, sizeof out), 0);
    snprintf(path, sizeof path, "%s/memory-junit.xml", dir);
    s = fsc_test_slurp(path, NULL);
    CU_ASSERT_PTR_NOT_NULL(s ? strstr(s, "tests=\"3\" failures=\"0\"") : NULL);
    free(s);
    free(script);
}

static void test_gitlab(void)
{
    char *script = extract(g_doc, "\ncompare:\n", "\n  script:\n", 2, 4, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(script, "fragscope diff base/run.pickle new/run.pickle"));
    CU_ASSERT_PTR_NOT_NULL(strstr(script, "exit ${status:-0}\n"));
    /* the runner stops at the first failing line, as -e does */
    const char *sh = "bash -e";
    char out[1 << 16], path[1200];
    const char *dir = layout("gl_worse", "gpu/boundary/b_defaults.pickle",
                             "gpu/boundary/b_rp4.pickle");
    CU_ASSERT_EQUAL(run_script(dir, script, sh, out, sizeof out), 1);
    snprintf(path, sizeof path, "%s/memory.md", dir);
    CU_ASSERT(fsc_test_file_exists(path));
    snprintf(path, sizeof path, "%s/memory-junit.xml", dir);
    char *s = fsc_test_slurp(path, NULL);
    CU_ASSERT_PTR_NOT_NULL(s ? strstr(s, "tests=\"3\" failures=\"1\"") : NULL);
    free(s);
    dir = layout("gl_same", "gpu/boundary/b_rp4.pickle", "gpu/boundary/b_rp4.pickle");
    CU_ASSERT_EQUAL(run_script(dir, script, sh, out, sizeof out), 0);
    free(script);
}

static void load_doc(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/ci.md", FSC_SOURCE_DIR);
    g_doc = fsc_test_slurp(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g_doc);
}

static void test_github_all(void)
{
    load_doc();
    test_github();
}

static const fsc_test_case_t k_tests[] = {
    {"GitHub Actions compare step, as written", test_github_all},
    {"GitLab compare job, as written", test_gitlab},
    {NULL, NULL},
};

FSC_TEST_MAIN("ci_doc", k_tests)
