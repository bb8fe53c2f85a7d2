/*
 * test_allocator_rules.c — the allocator's pure rules: rounding (plain and
 * roundup_power2_divisions), pools, segment sizes, split thresholds, and the
 * configuration string (parse, errors, canonical form).
 */
#include <string.h>

#include "fragscope/allocator.h"
#include "fsc_test.h"

#define MiB FSC_MiB

static void test_round_plain(void)
{
    static const struct { uint64_t in, out; } t[] = {
        {0, 512}, {1, 512}, {511, 512}, {512, 512}, {513, 1024}, {1000, 1024},
        {1025, 1536}, {9000, 9216}, {MiB, MiB}, {MiB + 1, MiB + 512},
        {100 * MiB + 1, 100 * MiB + 512},
        {UINT64_MAX, (UINT64_MAX >> 1) + 1},
    };
    fsc_alloc_config_t c = FSC_ALLOC_CONFIG_DEFAULT;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, t[i].in), t[i].out);
        CU_ASSERT_EQUAL(fsc_alloc_round_size(NULL, t[i].in), t[i].out);
    }
}

static void test_round_power2_divisions(void)
{
    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:4", &c, &e), 0);
    /* Only sizes above 512 * divisions use the power-of-two divisions. */
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 1200), 1536);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 2048), 2048);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 3000), 3072);
    /* [8192, 16384) in steps of 2048. */
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 9000), 10240);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 10240), 10240);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, MiB), MiB);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, MiB + 1), MiB + 256 * 1024);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 100 * MiB + 1), 112 * MiB);

    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:2", &c, &e), 0);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 1000), 1024);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 1500), 1536);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 1537), 2048);

    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:8", &c, &e), 0);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 100 * MiB + 1), 104 * MiB);

    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:1", &c, &e), 0);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 9000), 9216);
}

static void test_round_list_form(void)
{
    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    CU_ASSERT_EQUAL_FATAL(
        fsc_alloc_config_parse("roundup_power2_divisions:[256:1,512:2,>:4]", &c, &e), 0);
    for (int i = 0; i <= 8; i++)
        CU_ASSERT_EQUAL(c.roundup_power2_divisions[i], 1);
    /* ">" fills the intervals after the 512 MiB entry, which keeps its 2:
     * PyTorch 2.11's own parse, as its snapshots record it
     * (allocator_settings.roundup_power2_divisions of the H200 run with
     * [256:1,512:2,1024:4,>:8]: '1024': 4, '2048': 8). */
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[9], 2);
    for (int i = 10; i < FSC_ROUNDUP_INTERVALS; i++)
        CU_ASSERT_EQUAL(c.roundup_power2_divisions[i], 4);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 300 * MiB + 1), 300 * MiB + 512);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 600 * MiB + 1), 768 * MiB);

    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:[1:4, 4:2]", &c, &e), 0);
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[0], 4);
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[1], 0);
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[2], 2);
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[3], 0);
    /* 2 MiB + 1 is in interval 1 (no divisions); 4 MiB + 1 in interval 2. */
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 2 * MiB + 1), 2 * MiB + 512);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 4 * MiB + 1), 6 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 9000), 10240);

    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:[64:8]", &c, &e), 0);
    for (int i = 0; i <= 6; i++)
        CU_ASSERT_EQUAL(c.roundup_power2_divisions[i], 8);
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[7], 0);

    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:[>:2]", &c, &e), 0);
    for (int i = 0; i < FSC_ROUNDUP_INTERVALS; i++)
        CU_ASSERT_EQUAL(c.roundup_power2_divisions[i], 2);
}

static void test_pool_and_segment(void)
{
    CU_ASSERT_EQUAL(fsc_alloc_pool_of(512), FSC_POOL_SMALL);
    CU_ASSERT_EQUAL(fsc_alloc_pool_of(MiB), FSC_POOL_SMALL);
    CU_ASSERT_EQUAL(fsc_alloc_pool_of(MiB + 512), FSC_POOL_LARGE);
    static const struct { uint64_t in, out; } t[] = {
        {512, 2 * MiB}, {MiB, 2 * MiB}, {MiB + 512, 20 * MiB}, {10 * MiB - 512, 20 * MiB},
        {10 * MiB, 10 * MiB}, {10 * MiB + 512, 12 * MiB}, {21 * MiB, 22 * MiB},
        {22 * MiB, 22 * MiB},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        CU_ASSERT_EQUAL(fsc_alloc_segment_size(t[i].in), t[i].out);
}

static void test_should_split(void)
{
    fsc_alloc_config_t c = FSC_ALLOC_CONFIG_DEFAULT;
    /* small pool: remainder >= 512 */
    CU_ASSERT_TRUE(fsc_alloc_should_split(&c, FSC_POOL_SMALL, 2 * MiB, 2 * MiB - 512, 0));
    CU_ASSERT_FALSE(fsc_alloc_should_split(&c, FSC_POOL_SMALL, 1024, 513, 0));
    CU_ASSERT_FALSE(fsc_alloc_should_split(&c, FSC_POOL_SMALL, 2 * MiB, 2 * MiB, 0));
    /* large pool: remainder > 1 MiB */
    CU_ASSERT_FALSE(fsc_alloc_should_split(&c, FSC_POOL_LARGE, 20 * MiB, 19 * MiB, 0));
    CU_ASSERT_TRUE(fsc_alloc_should_split(&c, FSC_POOL_LARGE, 20 * MiB, 19 * MiB - 512, 0));
    /* large pool with max_split_size: request must be below it */
    fsc_err_t e = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("max_split_size_mb:128", &c, &e), 0);
    CU_ASSERT_FALSE(fsc_alloc_should_split(&c, FSC_POOL_LARGE, 200 * MiB, 128 * MiB, 0));
    CU_ASSERT_TRUE(fsc_alloc_should_split(&c, FSC_POOL_LARGE, 200 * MiB, 128 * MiB - 512, 0));
    /* expandable: remainder >= 512 in either pool */
    CU_ASSERT_TRUE(fsc_alloc_should_split(&c, FSC_POOL_LARGE, 20 * MiB, 20 * MiB - 512, 1));
    CU_ASSERT_FALSE(fsc_alloc_should_split(&c, FSC_POOL_LARGE, 20 * MiB, 20 * MiB, 1));
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("expandable_segments:True", &c, &e), 0);
    CU_ASSERT_TRUE(fsc_alloc_should_split(&c, FSC_POOL_LARGE, 200 * MiB, 200 * MiB - 512, 0));
}

static void test_config_parse_format(void)
{
    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    char buf[256];
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("", &c, &e), 0);
    CU_ASSERT_EQUAL(c.max_split_size, 0);
    CU_ASSERT_EQUAL(fsc_alloc_config_format(&c, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "");

    CU_ASSERT_EQUAL_FATAL(
        fsc_alloc_config_parse("max_split_size_mb:128, expandable_segments:True,"
                               "garbage_collection_threshold:0.6,roundup_power2_divisions:4,"
                               "release_lock_on_cudamalloc:True,backend:native,",
                               &c, &e),
        0);
    CU_ASSERT_EQUAL(c.max_split_size, 128 * MiB);
    CU_ASSERT_EQUAL(c.expandable_segments, 1);
    CU_ASSERT_DOUBLE_EQUAL(c.garbage_collection_threshold, 0.6, 1e-12);
    CU_ASSERT_EQUAL(c.roundup_power2_divisions[15], 4);
    CU_ASSERT_EQUAL(fsc_alloc_config_format(&c, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "max_split_size_mb:128,roundup_power2_divisions:4,"
                                "garbage_collection_threshold:0.6,expandable_segments:True");

    CU_ASSERT_EQUAL_FATAL(
        fsc_alloc_config_parse("roundup_power2_divisions:[256:1,512:2,>:4],"
                               "max_non_split_rounding_mb:64",
                               &c, &e),
        0);
    CU_ASSERT_EQUAL(c.max_non_split_rounding, 64 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_config_format(&c, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "max_non_split_rounding_mb:64,"
                                "roundup_power2_divisions:[256:1,512:2,>:4]");
    fsc_alloc_config_t c2;
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(buf, &c2, &e), 0);
    CU_ASSERT_EQUAL(memcmp(c.roundup_power2_divisions, c2.roundup_power2_divisions,
                           sizeof c.roundup_power2_divisions), 0);

    /* Round trip of an irregular table. */
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:[1:4,4:2]", &c, &e), 0);
    CU_ASSERT_EQUAL(fsc_alloc_config_format(&c, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "roundup_power2_divisions:[1:4,2:0,4:2,>:0]");
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(buf, &c2, &e), 0);
    CU_ASSERT_EQUAL(memcmp(c.roundup_power2_divisions, c2.roundup_power2_divisions,
                           sizeof c.roundup_power2_divisions), 0);

    CU_ASSERT_EQUAL(fsc_alloc_config_format(&c, buf, 8), FSC_ELIMIT);
    CU_ASSERT_EQUAL(strlen(buf), 7);
}

static void test_config_errors(void)
{
    static const struct { const char *s, *needle; } bad[] = {
        {"foo:1", "unknown key 'foo'"},
        {"max_split_size_mb:19", "'19' for max_split_size_mb"},
        {"max_split_size_mb:abc", "'abc' for max_split_size_mb"},
        {"max_split_size_mb", "max_split_size_mb"},
        {"max_split_size_mb:", "missing value for max_split_size_mb"},
        {"garbage_collection_threshold:1.0", "'1.0' for garbage_collection_threshold"},
        {"garbage_collection_threshold:0", "garbage_collection_threshold"},
        {"expandable_segments:yes", "'yes' for expandable_segments"},
        {"roundup_power2_divisions:3", "'3' for roundup_power2_divisions"},
        {"roundup_power2_divisions:[3:2]", "'3' for roundup_power2_divisions"},
        {"roundup_power2_divisions:[256:3]", "'3' for roundup_power2_divisions"},
        {"roundup_power2_divisions:[256:1", "roundup_power2_divisions"},
        {"backend:cudaMallocAsync", "'cudaMallocAsync' for backend"},
        {"max_split_size_mb:128 expandable_segments:True", "128expandable_segments"},
        {"max_split_size_mb:128:expandable_segments", "expected ','"},
        {",max_split_size_mb:128", "unexpected ','"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fsc_alloc_config_t c = FSC_ALLOC_CONFIG_DEFAULT;
        c.max_split_size = 77;
        fsc_err_t e = {0};
        int rc = fsc_alloc_config_parse(bad[i].s, &c, &e);
        CU_ASSERT_EQUAL(rc, FSC_ECONFIG);
        CU_ASSERT_EQUAL(c.max_split_size, 77); /* untouched on error */
        if (strstr(e.msg, bad[i].needle) == NULL) {
            fprintf(stderr, "\n  \"%s\" -> \"%s\" (wanted \"%s\")\n", bad[i].s, e.msg,
                    bad[i].needle);
            CU_FAIL("error message");
        }
    }
}

/* Random strings built from the grammar's pieces and stray bytes: the parser
 * answers 0 or FSC_ECONFIG, never crashes (run under ASan too), leaves the
 * output alone on error, and whatever it accepts formats to a string that
 * parses back to the same configuration. */
static void test_config_fuzz(void)
{
    static const char *const pieces[] = {
        "max_split_size_mb", "max_non_split_rounding_mb", "roundup_power2_divisions",
        "garbage_collection_threshold", "expandable_segments", "backend", "native",
        "release_lock_on_cudamalloc", "True", "False", ":", ",", "[", "]", ">", " ", "0",
        "1", "2", "4", "20", "64", "128", "256", "0.5", "1.5", "-1", "1e3", "99999999999999999999",
        "x", "\xff", "",
    };
    uint64_t rng = 0x1234567u;
    char buf[256], out[512];
    long accepted = 0;
    for (int it = 0; it < 100000; it++) {
        size_t len = 0;
        int n = 1 + (int)((rng >> 7) % 12);
        for (int k = 0; k < n; k++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            const char *p = pieces[rng % (sizeof pieces / sizeof pieces[0])];
            if ((rng >> 40) % 16 == 0) {
                if (len + 1 < sizeof buf)
                    buf[len++] = (char)(1 + (rng >> 48) % 255);
            } else {
                size_t pl = strlen(p);
                if (len + pl < sizeof buf) {
                    memcpy(buf + len, p, pl);
                    len += pl;
                }
            }
        }
        buf[len] = '\0';
        fsc_alloc_config_t c = FSC_ALLOC_CONFIG_DEFAULT, c2;
        c.max_split_size = 12345;
        fsc_err_t e = {0};
        int rc = fsc_alloc_config_parse(buf, &c, &e);
        if (rc != 0) {
            CU_ASSERT_EQUAL(rc, FSC_ECONFIG);
            CU_ASSERT_EQUAL(c.max_split_size, 12345);
            CU_ASSERT_TRUE(e.msg[0] != '\0');
            continue;
        }
        accepted++;
        CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_format(&c, out, sizeof out), 0);
        CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(out, &c2, &e), 0);
        CU_ASSERT_EQUAL(c.max_split_size, c2.max_split_size);
        CU_ASSERT_EQUAL(c.max_non_split_rounding, c2.max_non_split_rounding);
        CU_ASSERT_EQUAL(c.expandable_segments, c2.expandable_segments);
        CU_ASSERT_DOUBLE_EQUAL(c.garbage_collection_threshold, c2.garbage_collection_threshold,
                               1e-6 * c.garbage_collection_threshold);
        CU_ASSERT_EQUAL(memcmp(c.roundup_power2_divisions, c2.roundup_power2_divisions,
                               sizeof c.roundup_power2_divisions), 0);
    }
    printf(" (%ld of 100000 accepted) ", accepted);
    CU_ASSERT_TRUE(accepted > 100);
}

/* What the rounded size decides under roundup_power2_divisions, as in
 * PyTorch's malloc: the pool (<= 1 MiB small), the new segment's size
 * (from the rounded size), and the oversize rules (max_split_size compares
 * the rounded size). And rounding twice changes nothing, so an OOM entry's
 * size, which PyTorch writes rounded, stays as it is. */
static void test_round_then_pool_segment(void)
{
    fsc_alloc_config_t c;
    fsc_err_t e = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse("roundup_power2_divisions:4", &c, &e), 0);
    uint64_t r = fsc_alloc_round_size(&c, 900 * 1024); /* [512K, 1M) in steps of 128K */
    CU_ASSERT_EQUAL(r, MiB);
    CU_ASSERT_EQUAL(fsc_alloc_pool_of(r), FSC_POOL_SMALL);
    CU_ASSERT_EQUAL(fsc_alloc_segment_size(r), 2 * MiB);
    r = fsc_alloc_round_size(&c, MiB + 1);
    CU_ASSERT_EQUAL(r, MiB + 256 * 1024);
    CU_ASSERT_EQUAL(fsc_alloc_pool_of(r), FSC_POOL_LARGE);
    CU_ASSERT_EQUAL(fsc_alloc_segment_size(r), 20 * MiB);
    /* 9 MiB rounds to 10 MiB: a segment of its own size, not 20 MiB */
    r = fsc_alloc_round_size(&c, 9 * MiB);
    CU_ASSERT_EQUAL(r, 10 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_segment_size(r), 10 * MiB);
    r = fsc_alloc_round_size(&c, 200 * MiB + 1);
    CU_ASSERT_EQUAL(r, 224 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_segment_size(r), 224 * MiB);
    /* the per-interval form: 300 MiB + 1 in [256, 512) with 1 division
     * (plain 512 B rounding), 600 MiB + 1 with 2 (steps of 256 MiB) */
    CU_ASSERT_EQUAL_FATAL(
        fsc_alloc_config_parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", &c, &e), 0);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 300 * MiB + 1), 300 * MiB + 512);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 600 * MiB + 1), 768 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 1100 * MiB), 1280 * MiB);
    CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, 2100 * MiB), 2304 * MiB);
    /* oversize: 60 MiB + 1 rounds (4 divisions of [32, 64)) to 64 MiB,
     * which max_split_size_mb:64 makes an oversize request: no split */
    CU_ASSERT_EQUAL_FATAL(
        fsc_alloc_config_parse("roundup_power2_divisions:4,max_split_size_mb:64", &c, &e), 0);
    r = fsc_alloc_round_size(&c, 60 * MiB + 1);
    CU_ASSERT_EQUAL(r, 64 * MiB);
    CU_ASSERT_FALSE(fsc_alloc_should_split(&c, FSC_POOL_LARGE, 128 * MiB, r, 0));
    CU_ASSERT_TRUE(fsc_alloc_should_split(&c, FSC_POOL_LARGE, 128 * MiB,
                                          fsc_alloc_round_size(&c, 40 * MiB + 1), 0));
    /* idempotent for every setting */
    static const char *const cfgs[] = {"", "roundup_power2_divisions:2",
                                       "roundup_power2_divisions:4",
                                       "roundup_power2_divisions:16",
                                       "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"};
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
        CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(cfgs[k], &c, &e), 0);
        for (uint64_t x = 1; x < 8 * 1024ull * MiB; x = x * 3 / 2 + 977) {
            uint64_t once = fsc_alloc_round_size(&c, x);
            CU_ASSERT_EQUAL(fsc_alloc_round_size(&c, once), once);
        }
    }
}

static const fsc_test_case_t k_tests[] = {
    {"round_plain", test_round_plain},
    {"round_power2_divisions", test_round_power2_divisions},
    {"round_list_form", test_round_list_form},
    {"round_then_pool_segment", test_round_then_pool_segment},
    {"pool_and_segment", test_pool_and_segment},
    {"should_split", test_should_split},
    {"config_parse_format", test_config_parse_format},
    {"config_errors", test_config_errors},
    {"config_fuzz", test_config_fuzz},
    {NULL, NULL},
};

FSC_TEST_MAIN("allocator_rules", k_tests)
