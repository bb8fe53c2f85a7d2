/*
 * bench_pickle_scan.c — the streaming pickle reader's first scan (which
 * memo entries are read again, recorder/pytorch/pickle_scan.c) on one
 * thread and on several, in the same process, on the same mapped file.
 *
 * Baseline: the sequential walk (what FRAGSCOPE_THREADS=1 runs). Then the
 * walk in ranges at frame boundaries on T threads, as fsc__pickle_scan runs
 * it on an input of 8 MiB or more (T: the CPUs it may run on, at most 16,
 * unless --threads), and the same ranges on one thread (what the range walk costs
 * apart from the cores). Each prints the best of --reps runs and its ratio
 * to the baseline; the results are compared with it, byte for byte.
 *
 *   bench_pickle_scan [SNAPSHOT] [--reps N] [--threads T]
 *   (default tests/data/pytorch/gpt2_varlen.pickle)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fragscope/common.h"
#include "pickle_scan.h"

#ifndef FSC_BENCH_DATA
#define FSC_BENCH_DATA "tests/data"
#endif

static int same(const fsc__pscan_t *a, const fsc__pscan_t *b)
{
    return a->words == b->words && a->refs == b->refs && a->nreads == b->nreads &&
           (a->words == 0 || (memcmp(a->bits, b->bits, a->words * sizeof *a->bits) == 0 &&
                              memcmp(a->rank, b->rank, a->words * sizeof *a->rank) == 0)) &&
           (a->nreads == 0 || memcmp(a->reads, b->reads, a->nreads) == 0);
}

int main(int argc, char **argv)
{
    const char *snap = FSC_BENCH_DATA "/pytorch/gpt2_varlen.pickle";
    int reps = 5;
    long threads = fsc__pickle_scan_threads();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atol(argv[++i]);
        else
            snap = argv[i];
    }
    if (reps < 1)
        reps = 1;
    if (threads < 1)
        threads = 1;
    if (threads > 16)
        threads = 16;
    int fd = open(snap, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        fprintf(stderr, "bench_pickle_scan: cannot read %s\n", snap);
        return 2;
    }
    size_t len = (size_t)st.st_size;
    const void *data = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED) {
        fprintf(stderr, "bench_pickle_scan: cannot map %s\n", snap);
        return 2;
    }
    size_t ranges = fsc__pickle_scan_ranges(len, (unsigned)threads);
    double best[3] = {1e30, 1e30, 1e30};
    int all_same = 1;
    size_t refs = 0, used = 0, words = 0;
    for (int r = 0; r < reps; r++) {
        fsc__pscan_t *a = NULL, *b = NULL, *c = NULL;
        uint64_t t0 = fsc_now_ns();
        if (fsc__pickle_scan_split(data, len, NULL, 1, 1, &a) != 0)
            return 2;
        uint64_t t1 = fsc_now_ns();
        if (fsc__pickle_scan_split(data, len, NULL, ranges, (unsigned)threads, &b) != 0)
            return 2;
        uint64_t t2 = fsc_now_ns();
        if (fsc__pickle_scan_split(data, len, NULL, ranges, 1, &c) != 0)
            return 2;
        uint64_t t3 = fsc_now_ns();
        double ms[3] = {(t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6};
        for (int k = 0; k < 3; k++)
            if (ms[k] < best[k])
                best[k] = ms[k];
        all_same &= same(a, b) && same(a, c);
        fsc__pscan_free(c);
        refs = a->refs;
        words = a->words;
        used = b->ranges;
        fsc__pscan_free(a);
        fsc__pscan_free(b);
    }
    munmap((void *)data, len);

    printf("snapshot: %s (%.1f MB; %zu memo entries read again, bitmap of %zu indices), best of "
           "%d\n",
           snap, len / 1e6, refs, words * 64, reps);
    printf("%-40s %9s %9s %10s\n", "scan", "ms", "MB/s", "vs 1 walk");
    printf("%-40s %9.1f %9.0f %10.2fx\n", "one walk (baseline)", best[0], len / 1e3 / best[0], 1.0);
    char name[64];
    snprintf(name, sizeof name, "%zu ranges on %ld thread%s", used, threads,
             threads > 1 ? "s" : "");
    printf("%-40s %9.1f %9.0f %10.2fx\n", name, best[1], len / 1e3 / best[1], best[1] / best[0]);
    snprintf(name, sizeof name, "%zu ranges on 1 thread", used);
    printf("%-40s %9.1f %9.0f %10.2fx\n", name, best[2], len / 1e3 / best[2], best[2] / best[0]);
    printf("same result: %s\n", all_same ? "yes" : "NO");
    return all_same ? 0 : 1;
}
