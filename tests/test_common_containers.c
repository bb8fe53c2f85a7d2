/*
 * test_common_containers.c — common's containers (fsc/vec.h, fsc/u64map.h,
 * fsc/slab.h): the growable array keeps its contents and zero-fills on
 * request, the hash map survives growth and deletions inside probe runs
 * (checked against a plain array), the slab recycles what it is given back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/common.h"
#include "fsc/slab.h"
#include "fsc/u64map.h"
#include "fsc/vec.h"
#include "fsc_test.h"

static void test_vec_reserve(void)
{
    uint32_t *v = NULL;
    size_t cap = 0;
    CU_ASSERT_EQUAL_FATAL(FSC__VEC_RESERVE(v, cap, 1), 0);
    CU_ASSERT_EQUAL(cap, 16);
    for (uint32_t i = 0; i < 1000; i++) {
        CU_ASSERT_EQUAL_FATAL(FSC__VEC_RESERVE(v, cap, (size_t)i + 1), 0);
        v[i] = i * 7;
    }
    CU_ASSERT_EQUAL(cap, 1024);
    int ok = 1;
    for (uint32_t i = 0; i < 1000; i++)
        ok &= v[i] == i * 7;
    CU_ASSERT_TRUE(ok);
    /* Room already there: nothing moves. */
    uint32_t *before = v;
    CU_ASSERT_EQUAL(FSC__VEC_RESERVE(v, cap, 1024), 0);
    CU_ASSERT_PTR_EQUAL(v, before);
    /* A size that cannot be represented fails and leaves the array alone. */
    CU_ASSERT_EQUAL(fsc__vec_reserve(&v, &cap, SIZE_MAX / 2, sizeof *v), FSC_ENOMEM);
    CU_ASSERT_EQUAL(cap, 1024);
    CU_ASSERT_EQUAL(v[999], 999u * 7);
    free(v);

    uint64_t *z = NULL;
    size_t zc = 0;
    CU_ASSERT_EQUAL_FATAL(fsc__vec_reserve_zero(&z, &zc, 3, sizeof *z), 0);
    z[0] = 5;
    CU_ASSERT_EQUAL_FATAL(fsc__vec_reserve_zero(&z, &zc, 40, sizeof *z), 0);
    CU_ASSERT_EQUAL(zc, 64);
    CU_ASSERT_EQUAL(z[0], 5);
    int zero = 1;
    for (size_t i = 16; i < zc; i++)
        zero &= z[i] == 0;
    CU_ASSERT_TRUE(zero);
    free(z);
}

static void test_u64map_against_array(void)
{
    enum { N = 20000 };
    /* Keys 512-byte aligned like device addresses, values their index. */
    uint64_t *present = calloc(N, sizeof *present);
    CU_ASSERT_PTR_NOT_NULL_FATAL(present);
    fsc__u64map_t m;
    fsc__u64map_init(&m);
    uint64_t x = 88172645463325252ull;
    int ok = 1;
    for (int step = 0; step < 200000; step++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t k = (size_t)(x % N);
        uint64_t key = 0x7f0000000000ull + (uint64_t)k * 512;
        if (x & (1ull << 40)) {
            ok &= fsc__u64map_put(&m, key, k + 1) == 0;
            present[k] = k + 1;
        } else {
            uint64_t v = 0;
            int had = fsc__u64map_del(&m, key, &v);
            ok &= had == (present[k] != 0) && (!had || v == k + 1);
            present[k] = 0;
        }
    }
    size_t count = 0;
    for (size_t k = 0; k < N; k++) {
        uint64_t v = 0;
        int has = fsc__u64map_get(&m, 0x7f0000000000ull + (uint64_t)k * 512, &v);
        ok &= has == (present[k] != 0) && (!has || v == present[k]);
        count += present[k] != 0;
    }
    CU_ASSERT_TRUE(ok);
    CU_ASSERT_EQUAL(m.count, count);
    /* Key 0 is never stored. */
    CU_ASSERT_EQUAL(fsc__u64map_put(&m, 0, 9), 0);
    CU_ASSERT_EQUAL(fsc__u64map_get(&m, 0, NULL), 0);
    CU_ASSERT_EQUAL(m.count, count);
    /* Pointer values. */
    int target = 3;
    CU_ASSERT_EQUAL(fsc__u64map_putp(&m, 1, &target), 0);
    CU_ASSERT_PTR_EQUAL(fsc__u64map_getp(&m, 1), &target);
    CU_ASSERT_PTR_EQUAL(fsc__u64map_delp(&m, 1), &target);
    CU_ASSERT_PTR_NULL(fsc__u64map_getp(&m, 1));
    fsc__u64map_clear(&m);
    CU_ASSERT_EQUAL(m.count, 0);
    CU_ASSERT_EQUAL(fsc__u64map_get(&m, 0x7f0000000000ull, NULL), 0);
    fsc__u64map_free(&m);
    free(present);
}

typedef struct obj {
    uint64_t a, b;
    char pad[40];
} obj_t;

static void test_slab_recycles(void)
{
    fsc__slab_t s = FSC__SLAB_INIT(obj_t, 8);
    obj_t *o[20];
    for (int i = 0; i < 20; i++) {
        o[i] = fsc__slab_alloc(&s);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o[i]);
        CU_ASSERT_EQUAL(o[i]->a, 0);
        CU_ASSERT_EQUAL((uintptr_t)o[i] % _Alignof(max_align_t), 0);
        o[i]->a = (uint64_t)i;
        o[i]->b = ~0ull;
    }
    /* Distinct objects that do not overlap. */
    int ok = 1;
    for (int i = 0; i < 20; i++)
        ok &= o[i]->a == (uint64_t)i && o[i]->b == ~0ull;
    CU_ASSERT_TRUE(ok);
    fsc__slab_release(&s, o[5]);
    fsc__slab_release(&s, NULL);
    obj_t *again = fsc__slab_alloc(&s);
    CU_ASSERT_PTR_EQUAL(again, o[5]);
    CU_ASSERT_EQUAL(again->a, 0); /* handed out zeroed */
    CU_ASSERT_EQUAL(again->b, 0);
    fsc__slab_free(&s);
    CU_ASSERT_PTR_NULL(s.chunks);
    CU_ASSERT_PTR_NOT_NULL(fsc__slab_alloc(&s)); /* usable again */
    fsc__slab_free(&s);
}

static const fsc_test_case_t k_tests[] = {
    {"vec_reserve", test_vec_reserve},
    {"u64map_against_array", test_u64map_against_array},
    {"slab_recycles", test_slab_recycles},
    {NULL, NULL},
};

FSC_TEST_MAIN("common_containers", k_tests)
