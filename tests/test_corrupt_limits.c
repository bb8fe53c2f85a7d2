/*
 * test_corrupt_limits.c — inputs that claim gigantic sizes: a pickle
 * string of 2^62 bytes, a frame of 2^60, a memo index of 2^32, a segment
 * of 2^62 bytes in a snapshot (pickle and JSON), nesting a million deep; a
 * trace whose header, chunk descriptor or chunk content claims
 * more than the file holds or than the format allows.
 *
 * Each goes through the command line in a child process; the parent takes
 * the child's peak resident set from wait4(2). Every run must fail fast
 * (status 2, one line on stderr naming the input once, in a few seconds) or, for a trace whose
 * damage is confined to its tail, read what precedes the damage (status
 * 0) — and in both cases without allocating what the file claims: the peak
 * RSS stays within a small fixed bound.
 */
#include "../fuzz/fuzz_entry.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "fsc_test.h"

/* Peak RSS allowed for any of these runs. The sanitizer runtimes carry
 * their own shadow memory and quarantine, so those builds get more room. */
#ifdef FSC_TEST_SANITIZED
#define RSS_LIMIT_KB (256 * 1024)
#else
#define RSS_LIMIT_KB (48 * 1024)
#endif

typedef struct run {
    int status; /* exit status, or 128 + signal */
    long maxrss_kb;
    double seconds;
    char err[2048];
    unsigned err_lines;
} run_t;

/* Run fragscope with args (NULL-terminated) and measure it. */
static run_t run_measured(const char *const *args)
{
    run_t r = {-1, 0, 0.0, "", 0};
    char errp[1024];
    snprintf(errp, sizeof errp, "%s", fsc_test_path("limits.stderr"));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r.status = fsc_test_run_fragscope(args, errp, 0, &r.maxrss_kb);
    if (r.status < 0)
        return r;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    size_t len = 0;
    char *err = fsc_test_slurp(errp, &len);
    if (err != NULL) {
        snprintf(r.err, sizeof r.err, "%s", err);
        for (size_t i = 0; i < len; i++)
            r.err_lines += err[i] == '\n';
        free(err);
    }
    return r;
}

static int write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    size_t w = fwrite(p, 1, n, f);
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

/* One hostile input through one command: allowed statuses are 2, or 0
 * when ok0; RSS and time bounded. */
static long g_max_rss_kb;
static double g_max_seconds;
static unsigned g_runs;

static void expect_bounded(const char *what, const char *const *args, int ok0)
{
    run_t r = run_measured(args);
    g_runs++;
    if (r.maxrss_kb > g_max_rss_kb)
        g_max_rss_kb = r.maxrss_kb;
    if (r.seconds > g_max_seconds)
        g_max_seconds = r.seconds;
    int status_ok = r.status == 2 ? r.err_lines == 1 : (ok0 && r.status == 0);
    /* The one line names the input, once. */
    unsigned named = 0;
    for (const char *q = r.err; (q = strstr(q, args[1])) != NULL; q += strlen(args[1]))
        named++;
    if (r.status == 2 && named != 1)
        status_ok = 0;
    if (getenv("FSC_TEST_VERBOSE") != NULL) /* what each case does */
        fprintf(stderr, "\n  %-45s %-8s status %d, %5ld KiB, %.3f s: %.160s", what, args[0],
                r.status, r.maxrss_kb, r.seconds, r.err);
    if (!status_ok || r.maxrss_kb > RSS_LIMIT_KB || r.seconds > 10.0)
        fprintf(stderr, "\n  %s: fragscope %s -> status %d, %ld KiB peak, %.2f s\n  %s", what,
                args[0], r.status, r.maxrss_kb, r.seconds, r.err);
    CU_ASSERT(status_ok);
    CU_ASSERT(r.maxrss_kb <= RSS_LIMIT_KB);
    CU_ASSERT(r.seconds <= 10.0);
}

/* Every command that reads a snapshot. */
static void snapshot_bounded(const char *what, const char *path)
{
    char out_trace[1024], out_db[1024];
    snprintf(out_trace, sizeof out_trace, "%s", fsc_test_path("limits_out.fstrace"));
    snprintf(out_db, sizeof out_db, "%s", fsc_test_path("limits_out.db"));
    const char *imp[] = {"import", path, "-o", out_trace, NULL};
    const char *ana[] = {"analyze", path, "-o", out_db, NULL};
    const char *wif[] = {"whatif", path, "--config", "", "--threads", "1", NULL};
    expect_bounded(what, imp, 0);
    expect_bounded(what, ana, 0);
    expect_bounded(what, wif, 0);
    CU_ASSERT_FALSE(fsc_test_file_exists(out_trace));
    CU_ASSERT_FALSE(fsc_test_file_exists(out_db));
}

/* Every command that reads a trace; ok0: the damage is a tail, so reading
 * the chunks before it and succeeding is right too. */
static void trace_bounded(const char *what, const char *path, int ok0)
{
    char out_db[1024], out_pk[1024];
    snprintf(out_db, sizeof out_db, "%s", fsc_test_path("limits_out.db"));
    snprintf(out_pk, sizeof out_pk, "%s", fsc_test_path("limits_out.pickle"));
    const char *inf[] = {"info", path, NULL};
    const char *ana[] = {"analyze", path, "-o", out_db, NULL};
    const char *exp[] = {"export", path, "--pytorch-snapshot", out_pk, NULL};
    const char *wif[] = {"whatif", path, "--config", "", "--threads", "1", NULL};
    expect_bounded(what, inf, ok0);
    expect_bounded(what, ana, ok0);
    expect_bounded(what, exp, ok0);
    expect_bounded(what, wif, ok0);
    remove(out_db);
    remove(out_pk);
}

/* ---- pickles and JSON ----------------------------------------------------- */

static void put_le64(uint8_t *p, uint64_t v) { fsc__put_le64(p, v); }

static void test_pickle_claims(void)
{
    char p[1024]; /* copied: fsc_test_path's buffers are reused */
    snprintf(p, sizeof p, "%s", fsc_test_path("claim.pickle"));
    uint8_t b[64];

    /* BINUNICODE8 of 2^62 bytes, then 3. */
    memcpy(b, "\x80\x04\x8d", 3);
    put_le64(b + 3, 1ull << 62);
    memcpy(b + 11, "abc.", 4);
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, b, 15), 0);
    snapshot_bounded("BINUNICODE8 of 2^62 bytes", p);

    /* BINBYTES8 of 2^40 bytes. */
    memcpy(b, "\x80\x04\x8e", 3);
    put_le64(b + 3, 1ull << 40);
    memcpy(b + 11, "abc.", 4);
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, b, 15), 0);
    snapshot_bounded("BINBYTES8 of 2^40 bytes", p);

    /* FRAME of 2^60 bytes around an empty dict. */
    memcpy(b, "\x80\x04\x95", 3);
    put_le64(b + 3, 1ull << 60);
    memcpy(b + 11, "}.", 2);
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, b, 13), 0);
    snapshot_bounded("FRAME of 2^60 bytes", p);

    /* LONG_BINPUT at memo index 2^32 - 1, then LONG_BINGET of it. */
    memcpy(b, "\x80\x04}r\xff\xff\xff\xffj\xff\xff\xff\xff.", 14);
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, b, 14), 0);
    snapshot_bounded("memo index 2^32 - 1", p);

    /* A snapshot whose segment claims 2^62 bytes (tests/data fixture). */
    char huge[1024];
    snprintf(huge, sizeof huge, "%s", fsc_test_data("pytorch/hostile/huge_size.pickle"));
    snapshot_bounded("segment of 2^62 bytes", huge);

    /* 250 000 values left on the stack (EMPTY_LIST, never appended): real
     * content, not a claim; the reader's arena stays within its bound. */
    size_t n = 250000;
    uint8_t *deep = malloc(n + 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(deep);
    deep[0] = 0x80;
    deep[1] = 4;
    memset(deep + 2, ']', n);
    deep[n + 2] = '.';
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, deep, n + 3), 0);
    free(deep);
    snapshot_bounded("250 000 EMPTY_LIST", p);
}

static void test_json_claims(void)
{
    char p[1024]; /* copied: fsc_test_path's buffers are reused */
    snprintf(p, sizeof p, "%s", fsc_test_path("claim.json"));
    static const char k_huge[] =
        "{\"segments\": [{\"device\": 0, \"address\": 4096, \"total_size\": "
        "4611686018427387904, \"stream\": 0, \"segment_type\": \"large\", "
        "\"allocated_size\": 0, \"active_size\": 0, \"requested_size\": 0, \"blocks\": "
        "[{\"size\": 4611686018427387904, \"requested_size\": 0, \"state\": \"inactive\"}]}],"
        " \"device_traces\": [[{\"action\": \"alloc\", \"addr\": 4096, \"size\": "
        "1e300, \"stream\": 0, \"time_us\": 1}]]}";
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, k_huge, sizeof k_huge - 1), 0);
    snapshot_bounded("JSON segment of 2^62 bytes, alloc of 1e300", p);

    size_t n = 1000000;
    char *deep = malloc(n + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(deep);
    memset(deep, '[', n);
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, deep, n), 0);
    free(deep);
    snapshot_bounded("a million '['", p);
}

/* ---- traces ----------------------------------------------------------------- */

/* A valid trace of one chunk (from the fuzz wrapper) with `content`. */
static int make_trace(const char *path, uint32_t events, const uint8_t *content, size_t clen,
                      int end_frame)
{
    uint8_t *in = malloc(5 + clen);
    if (in == NULL)
        return -1;
    in[0] = end_frame ? 4 : 0;
    fsc__put_le32(in + 1, events);
    memcpy(in + 5, content, clen);
    uint8_t *file = NULL;
    size_t flen = 0;
    int rc = fsc__fuzz_build_trace(in, 5 + clen, &file, &flen);
    free(in);
    if (rc == 0)
        rc = write_bytes(path, file, flen);
    free(file);
    return rc;
}

/* Offset of the first chunk descriptor (after the header frame). */
static size_t first_desc(const uint8_t *file) { return 8 + fsc__get_le32(file + 4); }

static void rewrite_desc(uint8_t *file, size_t d, uint32_t events, uint32_t csize, uint32_t usize)
{
    fsc__put_le32(file + d + 16, events);
    fsc__put_le32(file + d + 20, csize);
    fsc__put_le32(file + d + 24, usize);
    fsc__put_le32(file + d + 28, fsc__crc32(file + d + 8, 20));
}

/* Chunk content in the column layout (docs/trace-format.md §5): the
 * directory of FSC__NCOLS lengths, then RECORDS, TIME, one field column
 * (mask bit `bit`) and DEFS; the other columns empty. Returns the length. */
static size_t columns(uint8_t *out, const uint8_t *recs, size_t nrecs, const uint8_t *time,
                      size_t ntime, unsigned bit, const uint8_t *field, size_t nfield,
                      const uint8_t *defs, size_t ndefs)
{
    size_t len[FSC__NCOLS] = {0};
    const uint8_t *col[FSC__NCOLS] = {NULL};
    len[FSC__COL_RECORDS] = nrecs;
    col[FSC__COL_RECORDS] = recs;
    len[FSC__COL_TIME] = ntime;
    col[FSC__COL_TIME] = time;
    len[FSC__COL_FIELD0 + bit] = nfield;
    col[FSC__COL_FIELD0 + bit] = field;
    len[FSC__COL_DEFS] = ndefs;
    col[FSC__COL_DEFS] = defs;
    uint8_t *p = fsc__put_varint(out, FSC__NCOLS);
    for (int i = 0; i < FSC__NCOLS; i++)
        p = fsc__put_varint(p, len[i]);
    for (int i = 0; i < FSC__NCOLS; i++)
        if (len[i] > 0) {
            memcpy(p, col[i], len[i]);
            p += len[i];
        }
    return (size_t)(p - out);
}

static void test_trace_claims(void)
{
    char p[1024]; /* copied: fsc_test_path's buffers are reused */
    snprintf(p, sizeof p, "%s", fsc_test_path("claim.fstrace"));
    /* 15 empty columns: a valid chunk of 0 events. */
    uint8_t empty[16] = {15};
    CU_ASSERT_EQUAL_FATAL(make_trace(p, 0, empty, sizeof empty, 1), 0);
    {
        const char *inf[] = {"info", p, NULL};
        run_t r = run_measured(inf);
        CU_ASSERT_EQUAL(r.status, 0); /* the base file is valid */
    }
    size_t len = 0;
    uint8_t *base = (uint8_t *)fsc_test_slurp(p, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(base);
    size_t d = first_desc(base);
    uint8_t *f = malloc(len + 64);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);

    /* Header frame claiming 4 GiB. */
    memcpy(f, base, len);
    fsc__put_le32(f + 4, 0xfffffff0u);
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, f, len), 0);
    trace_bounded("header frame of 4 GiB", p, 0);

    /* Descriptor claiming a 2 GiB data frame of 2 GiB content. */
    memcpy(f, base, len);
    rewrite_desc(f, d, 0, 0x7fffffffu, 0x7fffffffu);
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, f, len), 0);
    trace_bounded("chunk of 2 GiB", p, 1);

    /* Descriptor within the format's bound (60 MiB) but past the file. */
    memcpy(f, base, len);
    rewrite_desc(f, d, 0, 60u << 20, 60u << 20);
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, f, len), 0);
    trace_bounded("chunk of 60 MiB past the end of the file", p, 1);

    /* The real data frame, but the descriptor says it holds 60 MiB. */
    memcpy(f, base, len);
    rewrite_desc(f, d, 0, fsc__get_le32(base + d + 20), 60u << 20);
    CU_ASSERT_EQUAL_FATAL(write_bytes(p, f, len), 0);
    trace_bounded("content size of 60 MiB claimed for 16 bytes", p, 1);

    /* Chunk content: ncols 2^40, a column of 2^60 bytes, a string of 2^60
     * bytes, a marker text of 2^32 bytes; each one event claimed. */
    static const uint8_t k_ncols[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x20};
    CU_ASSERT_EQUAL_FATAL(make_trace(p, 1, k_ncols, sizeof k_ncols, 1), 0);
    trace_bounded("2^40 columns", p, 1);
    uint8_t col[32] = {15, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10};
    CU_ASSERT_EQUAL_FATAL(make_trace(p, 1, col, sizeof col, 1), 0);
    trace_bounded("a column of 2^60 bytes", p, 1);
    /* RECORDS: one STRING definition; DEFS: its length 2^60, no bytes. */
    static const uint8_t k_str_recs[] = {0x20};
    static const uint8_t k_str_defs[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10};
    uint8_t content[128];
    size_t clen = columns(content, k_str_recs, 1, NULL, 0, 0, NULL, 0, k_str_defs, 9);
    CU_ASSERT_EQUAL_FATAL(make_trace(p, 0, content, clen, 1), 0);
    trace_bounded("a string of 2^60 bytes", p, 1);
    /* RECORDS: a MARKER whose mask has TEXT (bit 9: varint 0x80 0x04);
     * TIME: 0; column 2 + 9 (text): a length of 2^32 and no bytes. */
    static const uint8_t k_mk_recs[] = {FSC_EV_MARKER, 0x80, 0x04};
    static const uint8_t k_mk_time[] = {0};
    static const uint8_t k_mk_text[] = {0x80, 0x80, 0x80, 0x80, 0x10};
    clen = columns(content, k_mk_recs, 3, k_mk_time, 1, 9, k_mk_text, 5, NULL, 0);
    CU_ASSERT_EQUAL_FATAL(make_trace(p, 1, content, clen, 1), 0);
    trace_bounded("a marker text of 2^32 bytes", p, 1);

    free(f);
    free(base);
    fprintf(stderr, "\n  %u runs on inputs claiming huge sizes: peak RSS at most %ld KiB, "
                    "at most %.2f s each\n",
            g_runs, g_max_rss_kb, g_max_seconds);
}

static const fsc_test_case_t k_tests[] = {
    {"pickles claiming huge sizes fail fast and small", test_pickle_claims},
    {"JSON claiming huge sizes fails fast and small", test_json_claims},
    {"traces claiming huge sizes fail fast and small", test_trace_claims},
    {NULL, NULL},
};

FSC_TEST_MAIN("corrupt_limits", k_tests)
