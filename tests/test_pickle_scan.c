/*
 * test_pickle_scan.c — the first scan of the streaming pickle reader on
 * several threads (recorder/pytorch/pickle_scan.c) gives exactly what the
 * sequential scan gives: the same bits, ranks, references and saturated
 * read counts, byte for byte, on every snapshot shipped (the H200
 * recordings included), cut into many small ranges so that small files
 * cross many range boundaries, and on hostile variants: truncated at every
 * boundary, a STOP or an unsupported opcode in a later range, FRAMEs whose
 * length lies. Progress comes from the calling thread only, in order.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsc_test.h"
#include "pickle_scan.h"

/* The sequential scan and the parallel one of the same bytes are equal;
 * returns the parallel result's number of ranges (0: it fell back). */
static size_t check_same(const void *data, size_t len, size_t ranges, unsigned threads,
                         const char *what)
{
    fsc__pscan_t *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan_split(data, len, NULL, 1, 1, &a), 0);
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan_split(data, len, NULL, ranges, threads, &b), 0);
    CU_ASSERT_EQUAL(a->ranges, 0);
    int same = a->words == b->words && a->refs == b->refs && a->nreads == b->nreads &&
               (a->words == 0 || (memcmp(a->bits, b->bits, a->words * sizeof *a->bits) == 0 &&
                                  memcmp(a->rank, b->rank, a->words * sizeof *a->rank) == 0)) &&
               (a->nreads == 0 || memcmp(a->reads, b->reads, a->nreads) == 0);
    if (!same)
        fprintf(stderr, "\n  %s, %zu ranges on %u threads: words %zu/%zu refs %zu/%zu\n", what,
                ranges, threads, a->words, b->words, a->refs, b->refs);
    CU_ASSERT(same);
    size_t n = b->ranges;
    fsc__pscan_free(a);
    fsc__pscan_free(b);
    return n;
}

/* The starts of 'want' ranges; 1 when the input is not cut. */
static size_t cuts_of(const void *data, size_t len, size_t want, size_t **cuts)
{
    *cuts = malloc(want * sizeof **cuts);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*cuts);
    return fsc__pickle_scan_cuts(data, len, want, *cuts);
}

/* The distinct boundaries among n cuts (ranges may be empty), in order,
 * 0 and the input's end left out: FRAME opcodes. */
static size_t frames_of(const size_t *cuts, size_t n, size_t len, size_t *out)
{
    size_t k = 0;
    for (size_t i = 1; i < n; i++)
        if (cuts[i] != cuts[i - 1] && cuts[i] < len)
            out[k++] = cuts[i];
    return k;
}

/* Ranges the parallel scan walks when the walk stops at pos: those up to
 * the one holding pos (0: the input is not cut). */
static size_t ranges_to(const void *data, size_t len, size_t want, size_t pos)
{
    size_t *cuts;
    size_t n = cuts_of(data, len, want, &cuts), j = 0;
    for (size_t i = 0; i < n; i++)
        if (cuts[i] <= pos)
            j = i;
    free(cuts);
    return n > 1 ? j + 1 : 0;
}

/* Every pickle shipped (snapshots, real recordings, hostile inputs), cut
 * as finely as its frames allow and coarsely, on one and on three threads. */
static void test_same_on_every_pickle(void)
{
    static const char *dirs[] = {"pytorch", "pytorch/hostile", "pytorch/scan", "gpu",
                                 "gpu/ranks"};
    static const size_t ranges[] = {2, 7, 64, 4096};
    unsigned files = 0, cut = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", fsc_test_data(dirs[d]));
        DIR *dh = opendir(dir);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dh);
        struct dirent *de;
        while ((de = readdir(dh)) != NULL) {
            size_t nl = strlen(de->d_name);
            if (de->d_name[0] == '.' || nl < 7 ||
                (strcmp(de->d_name + nl - 7, ".pickle") != 0 && strcmp(dirs[d], "pytorch/hostile")))
                continue;
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            size_t len = 0;
            char *data = fsc_test_slurp(path, &len);
            CU_ASSERT_PTR_NOT_NULL_FATAL(data);
            size_t *cuts;
            size_t ncuts = cuts_of(data, len, 4096, &cuts);
            for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
                for (unsigned t = 1; t <= 3; t += 2) {
                    size_t n = check_same(data, len, ranges[r], t, path);
                    /* frames to cut at: it did run in ranges, all of them */
                    if (ranges[r] == 4096 && strcmp(dirs[d], "pytorch/hostile") != 0) {
                        CU_ASSERT_EQUAL(data[len - 1], '.');
                        CU_ASSERT_EQUAL(n, ranges_to(data, len, 4096, len - 1));
                    }
                }
            }
            cut += ncuts > 1;
            free(cuts);
            free(data);
            files++;
        }
        closedir(dh);
    }
    CU_ASSERT(files >= 55); /* 58 today */
    CU_ASSERT(cut >= 30);   /* 34 of them in frames */
}

/* The file in small frames, with large strings between frames: the cuts
 * are FRAME opcodes, most frames are one, and the hop steps over what lies
 * between them. */
static void test_small_frames_cut_everywhere(void)
{
    size_t len = 0;
    char *data = fsc_test_slurp(fsc_test_data("pytorch/scan/small_frames.pickle"), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    size_t *cuts, *fr = malloc(65536 * sizeof *fr);
    CU_ASSERT_EQUAL_FATAL(cuts_of(data, len, 65536, &cuts), 65536);
    CU_ASSERT_EQUAL(cuts[0], 0);
    size_t n = frames_of(cuts, 65536, len, fr);
    CU_ASSERT(n > 6000);
    unsigned after_gap = 0;
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL((unsigned char)data[fr[i]], 0x95);
        CU_ASSERT(i == 0 || fr[i] > fr[i - 1]);
        uint64_t fl = 0;
        for (int b = 0; b < 8; b++)
            fl |= (uint64_t)(unsigned char)data[fr[i] + 1 + b] << (8 * b);
        if (i + 1 < n && fr[i] + 9 + fl != fr[i + 1])
            after_gap++; /* opcodes between the two frames */
    }
    CU_ASSERT(after_gap > 50);
    for (size_t i = 1; i < 65536; i++)
        CU_ASSERT_FATAL(cuts[i] >= cuts[i - 1]);
    CU_ASSERT_EQUAL(check_same(data, len, 65536, 4, "small frames"),
                    ranges_to(data, len, 65536, len - 1));
    CU_ASSERT_EQUAL(check_same(data, len, 100, 2, "small frames"), 100);
    free(fr);
    free(cuts);
    free(data);
}

/* Truncated just before, at and just after every 150th range boundary
 * (about 40 of them), and inside the FRAME header there. */
static void test_truncated_at_boundaries(void)
{
    size_t len = 0;
    char *data = fsc_test_slurp(fsc_test_data("pytorch/scan/small_frames.pickle"), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    size_t *cuts, *fr = malloc(16384 * sizeof *fr);
    size_t n = frames_of(cuts, cuts_of(data, len, 16384, &cuts), len, fr);
    CU_ASSERT(n > 6000);
    static const long delta[] = {-1, 0, 1, 8, 9, 10};
    for (size_t i = 0; i < n; i += 150) {
        for (size_t d = 0; d < sizeof delta / sizeof delta[0]; d++) {
            size_t at = (size_t)((long)fr[i] + delta[d]);
            check_same(data, at, 16384, 3, "truncated");
            check_same(data, at, 8, 2, "truncated");
        }
    }
    free(fr);
    free(cuts);
    free(data);
}

/* A STOP or an unsupported opcode as the first opcode of a frame (an
 * opcode boundary) in a later range, or in place of the FRAME opcode: the
 * scan ends there, the later ranges' counts are void. A text opcode there
 * instead: its line ends past the range. */
static void test_stop_in_a_later_range(void)
{
    size_t len = 0;
    char *data = fsc_test_slurp(fsc_test_data("pytorch/scan/small_frames.pickle"), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    size_t *cuts, *fr = malloc(16384 * sizeof *fr);
    size_t n = frames_of(cuts, cuts_of(data, len, 16384, &cuts), len, fr);
    /* STOP, unsupported, and text opcodes whose line ends far away (the
     * walk goes on after it, out of step: one walk again) */
    static const unsigned char ops[] = {'.', 0xff, 'R', 'I', 'g'};
    unsigned fell_back = 0;
    for (size_t i = 3; i < n; i += n / 7) {
        for (size_t o = 0; o < sizeof ops; o++) {
            int text = o >= 3;
            size_t at = fr[i] + 9;
            char keep = data[at];
            data[at] = (char)ops[o];
            /* the range holding it stops: the ranges up to it walked again */
            size_t want = ranges_to(data, len, 16384, at), got;
            CU_ASSERT(want > 1);
            got = check_same(data, len, 16384, 3, "stop inside");
            CU_ASSERT(text || got == want);
            fell_back += text && got == 0;
            /* the later ranges walked too: their counts voided */
            got = check_same(data, len, 16384, 3 | FSC__PSCAN_ALL, "stop inside");
            CU_ASSERT(text || got == want);
            check_same(data, len, 5, 2, "stop inside");
            data[at] = keep;
            at = fr[i]; /* in place of the FRAME opcode */
            keep = data[at];
            data[at] = (char)ops[o];
            want = ranges_to(data, len, 16384, at);
            CU_ASSERT(want > 1);
            got = check_same(data, len, 16384, 3, "stop at a cut");
            CU_ASSERT(text || got == want);
            got = check_same(data, len, 16384, 3 | FSC__PSCAN_ALL, "stop at a cut");
            CU_ASSERT(text || got == want);
            data[at] = keep;
        }
    }
    CU_ASSERT(fell_back > 0);
    free(fr);
    free(cuts);
    free(data);
}

static void put_le(char *p, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (char)(v >> (8 * b));
}

/* FRAMEs whose length lies by a little or a lot. */
static void test_frame_lengths_lie(void)
{
    size_t len = 0;
    char *data = fsc_test_slurp(fsc_test_data("pytorch/scan/small_frames.pickle"), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    size_t *cuts, *fr = malloc(16384 * sizeof *fr);
    size_t n = frames_of(cuts, cuts_of(data, len, 16384, &cuts), len, fr);
    static const long lie[] = {-9, -2, -1, 1, 2, 3, 9, 100, 4000};
    for (size_t i = 1; i + 1 < n; i += n / 9) {
        char keep[8];
        memcpy(keep, data + fr[i] + 1, 8);
        uint64_t fl = 0;
        for (int b = 0; b < 8; b++)
            fl |= (uint64_t)(unsigned char)keep[b] << (8 * b);
        for (size_t l = 0; l < sizeof lie / sizeof lie[0]; l++) {
            put_le(data + fr[i] + 1, (uint64_t)((long)fl + lie[l]));
            check_same(data, len, 16384, 3, "frame lies");
            check_same(data, len, 16, 2, "frame lies");
        }
        put_le(data + fr[i] + 1, 0);
        check_same(data, len, 16384, 3, "frame of 0");
        put_le(data + fr[i] + 1, UINT64_MAX);
        check_same(data, len, 16384, 3, "frame past the end");
        memcpy(data + fr[i] + 1, keep, 8);
    }
    free(fr);
    free(cuts);
    free(data);
}

/* A lying FRAME that points into a string holding what looks like a FRAME
 * header, itself chained to the real next frame: a cut there is inside an
 * opcode, and the scan falls back to one walk. */
static void test_cut_inside_an_opcode(void)
{
    char p[512];
    size_t n = 0;
    memcpy(p, "\x80\x04\x95", 3);
    n = 11; /* frame 1's length below */
    p[n++] = (char)0x8c; /* SHORT_BINUNICODE of 32 bytes */
    p[n++] = 32;
    size_t s = n;
    memset(p + s, 'a', 32);
    n += 32;
    p[n++] = (char)0x94;
    for (int i = 0; i < 40; i++) { /* BINGET 0, 1 */
        p[n++] = 'h';
        p[n++] = (char)(i & 1);
    }
    size_t f2 = n;
    put_le(p + 3, f2 - 11);
    p[n++] = (char)0x95;
    n += 8;
    for (int i = 0; i < 30; i++) {
        p[n++] = 'h';
        p[n++] = (char)(i % 3);
    }
    p[n++] = '.';
    put_le(p + f2 + 1, n - f2 - 9);
    size_t *cuts, fr[4];
    CU_ASSERT_EQUAL(frames_of(cuts, cuts_of(p, n, 1000, &cuts), n, fr), 2);
    CU_ASSERT_EQUAL(fr[0], 2);
    CU_ASSERT_EQUAL(fr[1], f2);
    free(cuts);
    CU_ASSERT_EQUAL(check_same(p, n, 1000, 2, "honest frames"), ranges_to(p, n, 1000, n - 1));
    /* frame 1 says it ends at byte 8 of the string, where a fake header
     * points at frame 2 */
    size_t fake = s + 8;
    put_le(p + 3, fake - 11);
    p[fake] = (char)0x95;
    put_le(p + fake + 1, f2 - fake - 9);
    CU_ASSERT_EQUAL(frames_of(cuts, cuts_of(p, n, 1000, &cuts), n, fr), 3);
    CU_ASSERT_EQUAL(fr[1], fake);
    CU_ASSERT_EQUAL(fr[2], f2);
    free(cuts);
    CU_ASSERT_EQUAL(check_same(p, n, 1000, 2, "cut inside a string"), 0);
    CU_ASSERT_EQUAL(check_same(p, n, 1000, 1, "cut inside a string"), 0);
}

/* ---- a large input: the default thread count, FRAGSCOPE_THREADS=1,
 * saturation across ranges, progress ---------------------------------------- */

/* About 9.6 MiB of 64 KiB frames: GETs of 200 indices read thousands of
 * times (saturated, across ranges) and of 300 000 others read a few times
 * each (exact counts), in a protocol-4 layout. */
static char *big_pickle(size_t *len)
{
    size_t cap = 160 * (65536 + 64), n = 0;
    char *p = malloc(cap);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    memcpy(p, "\x80\x04", 2);
    n = 2;
    uint64_t k = 0;
    for (int f = 0; f < 150; f++) {
        size_t h = n;
        p[n++] = (char)0x95;
        n += 8;
        size_t start = n;
        while (n - start < 65536) {
            p[n++] = 'K'; /* BININT1, memoized */
            p[n++] = 7;
            p[n++] = (char)0x94;
            p[n++] = 'h';
            p[n++] = (char)(k % 200);
            uint64_t idx = (k * 7919) % 300000;
            p[n++] = 'j';
            for (int b = 0; b < 4; b++)
                p[n++] = (char)(idx >> (8 * b));
            k++;
        }
        if (f == 149)
            p[n++] = '.';
        put_le(p + h + 1, n - start);
    }
    *len = n;
    return p;
}

typedef struct {
    pthread_t self;
    size_t last, len;
    unsigned calls, bad;
} prog_check_t;

static void on_progress(void *ud, size_t done, size_t total)
{
    prog_check_t *c = ud;
    if (!pthread_equal(pthread_self(), c->self) || done <= c->last || done >= total ||
        total != c->len)
        c->bad++;
    c->last = done;
    c->calls++;
}

static void test_large_input(void)
{
    size_t len = 0;
    char *p = big_pickle(&len);
    CU_ASSERT(len > ((size_t)8 << 20));
    CU_ASSERT_EQUAL(check_same(p, len, 64, 4, "large"), 64);
    CU_ASSERT_EQUAL(ranges_to(p, len, 64, len - 1), 64);
    /* what the importer calls: in ranges where there are cores */
    char *env = getenv("FRAGSCOPE_THREADS") ? strdup(getenv("FRAGSCOPE_THREADS")) : NULL;
    unsetenv("FRAGSCOPE_THREADS");
    fsc__pscan_t *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan(p, len, NULL, &a), 0);
    CU_ASSERT_EQUAL(a->ranges > 1, fsc__pickle_scan_threads() > 1);
    setenv("FRAGSCOPE_THREADS", "1", 1);
    CU_ASSERT_EQUAL(fsc__pickle_scan_threads(), 1);
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan(p, len, NULL, &b), 0);
    CU_ASSERT_EQUAL(b->ranges, 0);
    CU_ASSERT_EQUAL(a->refs, b->refs);
    CU_ASSERT_EQUAL(a->refs, 300000);
    CU_ASSERT_EQUAL(memcmp(a->reads, b->reads, a->refs), 0);
    CU_ASSERT_EQUAL(a->reads[0], 255); /* read thousands of times, in every range */
    CU_ASSERT_EQUAL(a->reads[299999], b->reads[299999]);
    fsc__pscan_free(a);
    fsc__pscan_free(b);
    if (env != NULL)
        setenv("FRAGSCOPE_THREADS", env, 1);
    else
        unsetenv("FRAGSCOPE_THREADS");
    free(env);
    /* under 8 MiB: one walk */
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan(p, (size_t)7 << 20, NULL, &a), 0);
    CU_ASSERT_EQUAL(a->ranges, 0);
    fsc__pscan_free(a);
    free(p);
}

/* In the content of the frame at f (units of 10 bytes from its start), a
 * string of 6000 units holding a fake FRAME header chained to the next
 * frame at f2, and the frame's length lying to point at it: a cut inside an
 * opcode. */
static void plant_fake_cut(char *p, size_t f, size_t f2)
{
    size_t c = f + 9, sl = 60000 - 5;
    p[c] = 'X'; /* BINUNICODE */
    for (int b = 0; b < 4; b++)
        p[c + 1 + b] = (char)(sl >> (8 * b));
    memset(p + c + 5, 'a', sl);
    size_t fake = c + 5 + 30000;
    p[fake] = (char)0x95;
    put_le(p + fake + 1, f2 - fake - 9);
    put_le(p + f + 1, fake - f - 9);
}

static void test_progress_one_thread_in_order(void)
{
    size_t len = 0;
    char *orig = big_pickle(&len);
    char *p = malloc(len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    size_t *cuts, fr[200];
    CU_ASSERT_EQUAL(frames_of(cuts, cuts_of(orig, len, 1000, &cuts), len, fr), 149);
    free(cuts);
    for (int pass = 0; pass < 3; pass++) {
        memcpy(p, orig, len);
        size_t want = ranges_to(p, len, 1000, len - 1);
        CU_ASSERT(pass > 0 || want > 990);
        if (pass == 1) { /* the ranges up to a STOP walked again */
            p[fr[120] + 9] = '.';
            want = ranges_to(p, len, 1000, fr[120] + 9);
            CU_ASSERT(want > 700 && want < 1000);
        } else if (pass == 2) { /* the fallback to one walk */
            plant_fake_cut(p, fr[60], fr[61]);
            want = 0;
        }
        static const size_t ranges[] = {1, 8, 1000};
        for (size_t r = 0; r < 3; r++) {
            prog_check_t c = {pthread_self(), 0, len, 0, 0};
            fsc__pstream_t cb = {&c, NULL, on_progress, NULL, 0, 0, 0, NULL};
            fsc__pscan_t *sc = NULL;
            CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan_split(p, len, &cb, ranges[r], 4, &sc), 0);
            CU_ASSERT_EQUAL(c.bad, 0);
            CU_ASSERT(c.calls >= 1);
            if (r == 2)
                CU_ASSERT_EQUAL(sc->ranges, want);
            fsc__pscan_free(sc);
        }
        check_same(p, len, 1000, 4, "progress");
        check_same(p, len, 1000, 4 | FSC__PSCAN_ALL, "progress");
    }
    free(p);
    free(orig);
}

static const fsc_test_case_t k_tests[] = {
    {"parallel scan equals the sequential one on every pickle shipped", test_same_on_every_pickle},
    {"small frames: a cut at every frame, opcodes between frames",
     test_small_frames_cut_everywhere},
    {"truncated at every range boundary", test_truncated_at_boundaries},
    {"a STOP or an unsupported opcode in a later range", test_stop_in_a_later_range},
    {"FRAME lengths that lie", test_frame_lengths_lie},
    {"a cut inside an opcode falls back to one walk", test_cut_inside_an_opcode},
    {"large input: threads by default, FRAGSCOPE_THREADS=1, saturation", test_large_input},
    {"progress from the calling thread, in order", test_progress_one_thread_in_order},
    {NULL, NULL},
};

FSC_TEST_MAIN("pickle_scan", k_tests)
