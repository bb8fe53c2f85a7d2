/*
 * test_sim_ranges.c — the simulated device's address ranges: first fit,
 * overlap checks and removal, kept in a tree, give after every step of a
 * long random sequence the addresses and answers that the plain rule gives
 * (a sorted list walked in full, written out here): the lowest 2 MiB-aligned
 * gap at or above the base that fits, and a recorded range taken only where
 * nothing overlaps it. Ranges below the base and of unaligned sizes are in
 * the mix, as adopted recordings bring them.
 */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fragscope/allocator.h"
#include "fsc_test.h"

#define MiB FSC_MiB
#define ALIGN (2 * MiB)
#define BASE 0x7f0000000000ull

typedef struct {
    uint64_t addr, size;
} rg_t;

static rg_t g_r[4096];
static size_t g_n;

static int overlaps(uint64_t addr, uint64_t size)
{
    for (size_t i = 0; i < g_n; i++)
        if (addr < g_r[i].addr + g_r[i].size && g_r[i].addr < addr + size)
            return 1;
    return 0;
}

static void model_add(uint64_t addr, uint64_t size)
{
    size_t i = 0;
    while (i < g_n && g_r[i].addr < addr)
        i++;
    memmove(&g_r[i + 1], &g_r[i], (g_n - i) * sizeof *g_r);
    g_r[i] = (rg_t){addr, size};
    g_n++;
}

static uint64_t model_first_fit(uint64_t size)
{
    uint64_t cand = BASE;
    for (size_t i = 0; i < g_n; i++) {
        if (g_r[i].addr + g_r[i].size <= cand)
            continue;
        if (g_r[i].addr >= cand + size)
            break;
        cand = (g_r[i].addr + g_r[i].size + ALIGN - 1) & ~(ALIGN - 1);
    }
    return cand;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_random_against_list(void)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        fsc_backend_t *be = NULL;
        CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(1ull << 52, BASE, &be), 0);
        g_n = 0;
        uint64_t s = seed * 0x9e3779b97f4a7c15ull;
        uint64_t allocs = 0, adopts = 0, refused = 0, frees = 0;
        for (int step = 0; step < 20000; step++) {
            uint64_t op = rnd(&s) % 10;
            fsc_err_t err = {0, ""};
            if (op < 5 && g_n < 4000) {
                uint64_t size = (1 + rnd(&s) % 32) * ALIGN;
                uint64_t addr = 0;
                CU_ASSERT_EQUAL_FATAL(be->ops->seg_alloc(be, size, &addr, &err), 0);
                uint64_t want = model_first_fit(size);
                CU_ASSERT_EQUAL_FATAL(addr, want);
                model_add(addr, size);
                allocs++;
            } else if (op < 7 && g_n < 4000) {
                /* a recorded range: near what is in use, maybe below the
                 * base, any size of 512 B granules */
                uint64_t at = g_n > 0 && rnd(&s) % 2 ? g_r[rnd(&s) % g_n].addr : BASE;
                int64_t off = (int64_t)(rnd(&s) % (256 * MiB)) - (int64_t)(64 * MiB);
                if (at == BASE)
                    off = -(int64_t)(rnd(&s) % (4096 * MiB));
                uint64_t addr = (at + (uint64_t)off) & ~511ull;
                uint64_t size = (1 + rnd(&s) % 65536) * 512;
                int rc = be->ops->seg_adopt(be, addr, size, &err);
                int want_ok = !overlaps(addr, size);
                CU_ASSERT_EQUAL_FATAL(rc == 0, want_ok);
                if (rc == 0) {
                    model_add(addr, size);
                    adopts++;
                } else {
                    CU_ASSERT_EQUAL(rc, FSC_ESTATE);
                    refused++;
                }
            } else if (g_n > 0) {
                size_t k = rnd(&s) % g_n;
                be->ops->seg_free(be, g_r[k].addr, g_r[k].size);
                memmove(&g_r[k], &g_r[k + 1], (g_n - k - 1) * sizeof *g_r);
                g_n--;
                frees++;
            }
        }
        printf("\n  seed %llu: %llu first fits, %llu adopted, %llu refused, %llu freed ", (unsigned long long)seed, (unsigned long long)allocs, (unsigned long long)adopts, (unsigned long long)refused, (unsigned long long)frees);
        /* every kind of step happened many times */
        CU_ASSERT(allocs > 5000 && adopts > 500 && refused > 1000 && frees > 5000);
        be->ops->destroy(be);
    }
}

static const fsc_test_case_t k_tests[] = {
    {"first fit, overlap and removal agree with a full walk", test_random_against_list},
    {NULL, NULL},
};

FSC_TEST_MAIN("sim_ranges", k_tests)
