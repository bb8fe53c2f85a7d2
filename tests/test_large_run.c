/*
 * test_large_run.c — a run of more than 10 M events through the whole
 * pipeline (simulate → trace → analyze → view): the HTML report stays
 * within its 3 MB bound, and analyze's memory stays bounded by the live
 * state (its peak RSS is far below what holding the events would take).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsc_test.h"

/* Sanitizer builds keep shadow memory and quarantines: allow them more. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FSC_RSS_BOUND_KIB (1024L * 1024)
#else
#define FSC_RSS_BOUND_KIB (256L * 1024)
#endif

static long long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

static void test_ten_million_events(void)
{
    const char *trace = fsc_test_path("big.fstrace");
    const char *db = fsc_test_path("big.db");
    const char *html = fsc_test_path("big.html");
    static char out[1 << 16];
    /* gpt2 makes ~3 765 events per step: 2 700 steps ≈ 10.2 M events. */
    int rc = fsc_test_sh(out, sizeof out, "%s simulate --workload gpt2 --steps 2700 -o %s",
                         fsc_test_fragscope(), trace);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    const char *ev = strstr(out, "events: ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    long long events = atoll(ev + 8);
    CU_ASSERT(events >= 10000000LL);

    struct rusage before, after;
    getrusage(RUSAGE_CHILDREN, &before);
    rc = fsc_test_sh(out, sizeof out, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s",
                     fsc_test_fragscope(), trace, db);
    getrusage(RUSAGE_CHILDREN, &after);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char want[64];
    snprintf(want, sizeof want, "%lld events", events);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    /* ru_maxrss of children is the largest child so far (KiB). The events
     * alone would take > 500 MiB in memory; the live state is far smaller. */
    printf("\n    analyze peak RSS %ld KiB for %lld events\n", after.ru_maxrss, events);
    CU_ASSERT(after.ru_maxrss < FSC_RSS_BOUND_KIB);

    rc = fsc_test_sh(out, sizeof out, "%s view %s -o %s", fsc_test_fragscope(), db, html);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    long long size = file_size(html);
    printf("    report.html %lld bytes\n", size);
    CU_ASSERT(size > 10000);
    CU_ASSERT(size <= 3000000);
    unlink(trace);
    unlink(db);
    unlink(html);
}

static const fsc_test_case_t k_tests[] = {
    {"ten_million_events", test_ten_million_events},
    {NULL, NULL},
};

FSC_TEST_MAIN("large_run", k_tests)
