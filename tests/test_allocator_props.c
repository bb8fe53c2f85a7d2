/*
 * test_allocator_props.c — whole-allocator properties on the sim backend:
 * the statistics equal a brute-force recount from the block layout and from
 * the event stream after long random operation sequences under mixed
 * configurations; blocks tile their segments and never overlap, also with
 * several threads; and a recorded PyTorch run is reproduced address for
 * address. The random driver is shared with test_allocator_cuda.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_props.h"
#include "fragscope/allocator.h"
#include "fsc_test.h"

#define MiB FSC_MiB
#define GiB FSC_GiB

static void test_random_sequences_sim(void)
{
    static const struct {
        const char *conf;
        uint64_t total, cap;
    } k[] = {
        {"", 4 * GiB, 0},
        {"max_split_size_mb:64", 4 * GiB, 1536 * MiB},
        {"roundup_power2_divisions:[1:4,64:8,>:2]", 2 * GiB, 0},
        {"garbage_collection_threshold:0.6", 4 * GiB, GiB},
        {"expandable_segments:True", 2 * GiB, 0},
        {"expandable_segments:True,garbage_collection_threshold:0.5,max_split_size_mb:40", 4 * GiB,
         GiB},
    };
    long total_ops = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        fsc_backend_t *be;
        CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(k[i].total, 0, &be), 0);
        props_result_t r;
        int rc = props_run(be, k[i].conf, k[i].cap, 20000, 0x5eed0000u + (unsigned)i, NULL, &r);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc != 0 || r.failures != 0)
            fprintf(stderr, "\n  config \"%s\": %s\n", k[i].conf, r.first_failure);
        CU_ASSERT_EQUAL(r.failures, 0);
        /* the sequences must really exercise the paths they claim to */
        CU_ASSERT_TRUE(r.mallocs > 8000);
        CU_ASSERT_TRUE(r.splits > 0 && r.merges > 0 && r.pending_completed > 0);
        if (k[i].cap != 0 || k[i].total == 2 * GiB)
            CU_ASSERT_TRUE(r.ooms > 0);
        if (strstr(k[i].conf, "expandable") != NULL)
            CU_ASSERT_TRUE(r.maps > 0 && r.unmaps > 0);
        total_ops += r.ops;
        fsc_backend_destroy(be);
    }
    CU_ASSERT_TRUE(total_ops >= 100000);
}

/* ---- threads -------------------------------------------------------------- */

typedef struct stress {
    fsc_allocator_t *a;
    int id;
    int failures;
    atomic_int *stop;
} stress_t;

static void *stress_worker(void *arg)
{
    stress_t *s = arg;
    uint64_t live[64];
    int n = 0;
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(s->id + 1);
    for (int i = 0; i < 25000; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        int do_free = n == 64 || (n > 0 && (rng & 3) == 0) || (n > 0 && (rng % 100) < 45);
        if (do_free) {
            int k = (int)((rng >> 20) % (uint64_t)n);
            if (fsc_allocator_free(s->a, live[k]) != 0)
                s->failures++;
            live[k] = live[--n];
        } else {
            uint64_t size = (rng >> 24) % 8 == 0 ? (rng >> 32) % (24 * MiB) + 1 : (rng >> 32) % (64 * 1024) + 1;
            uint64_t addr;
            /* every thread has its own stream, like PyTorch's per-thread
             * current streams, and sometimes uses stream 0 */
            uint64_t stream = (rng >> 40) % 4 == 0 ? 0 : (uint64_t)s->id + 1;
            int rc = fsc_allocator_malloc(s->a, size, stream, &addr);
            if (rc == 0)
                live[n++] = addr;
            else if (rc != FSC_EOOM)
                s->failures++;
        }
    }
    while (n > 0)
        if (fsc_allocator_free(s->a, live[--n]) != 0)
            s->failures++;
    return NULL;
}

static void *stress_checker(void *arg)
{
    stress_t *s = arg;
    int rounds = 0;
    while (!atomic_load(s->stop) || rounds < 3) {
        char why[256];
        if (props_check_layout(s->a, why, sizeof why) != 0) {
            if (s->failures++ == 0)
                fprintf(stderr, "\n  layout: %s\n", why);
        }
        rounds++;
    }
    return NULL;
}

static void stress_one(const char *conf, uint64_t cap)
{
    fsc_backend_t *be;
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create(8 * GiB, 0, &be), 0);
    fsc_allocator_opts_t o = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_alloc_config_parse(conf, &o.config, NULL), 0);
    o.backend = be;
    o.capacity = cap;
    fsc_allocator_t *a;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &a, NULL), 0);
    atomic_int stop = 0;
    stress_t w[4], chk = {a, 99, 0, &stop};
    pthread_t t[4], tc;
    for (int i = 0; i < 4; i++) {
        w[i] = (stress_t){a, i, 0, &stop};
        pthread_create(&t[i], NULL, stress_worker, &w[i]);
    }
    pthread_create(&tc, NULL, stress_checker, &chk);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CU_ASSERT_EQUAL(w[i].failures, 0);
    }
    atomic_store(&stop, 1);
    pthread_join(tc, NULL);
    CU_ASSERT_EQUAL(chk.failures, 0);
    fsc_alloc_stats_t s;
    fsc_allocator_get_stats(a, &s);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(s.active_bytes[FSC_STAT_ALL].current, 0);
    CU_ASSERT_EQUAL(s.allocation[FSC_STAT_ALL].allocated, s.allocation[FSC_STAT_ALL].freed);
    CU_ASSERT_TRUE(s.allocation[FSC_STAT_ALL].allocated > 40000);
    fsc_allocator_empty_cache(a);
    fsc_allocator_get_stats(a, &s);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].current, 0);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
}

static void test_threads(void)
{
    stress_one("", 0);
    stress_one("expandable_segments:True", 0);
    stress_one("garbage_collection_threshold:0.5,max_split_size_mb:32", 512 * MiB);
}

/* ---- a recorded PyTorch run ---------------------------------------------- */

typedef struct rec {
    char kind;
    uint64_t a, b, c;
} rec_t;

static rec_t *load_requests(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    size_t cap = 4096;
    rec_t *v = malloc(cap * sizeof *v);
    char line[256];
    *n = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (*n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        rec_t *r = &v[*n];
        r->kind = line[0];
        r->a = r->b = r->c = 0;
        sscanf(line + 2, "%lu %lu %lu", &r->a, &r->b, &r->c);
        (*n)++;
    }
    fclose(f);
    return v;
}

/* gpt2m_oom_12g: every address PyTorch returned, the OOM at the same
 * request with PyTorch's figures, and memory_stats() equal to the run's
 * stats file (values below copied from gpt2m_oom_12g.stats.json). */
static void test_replay_pytorch_oom_run(void)
{
    size_t n = 0;
    rec_t *v = load_requests(fsc_test_data("alloc_gpt2m_oom_12g.req"), &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    uint64_t *sa = malloc(n * sizeof *sa), *ss = malloc(n * sizeof *ss);
    size_t ns = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].kind == 'S') {
            sa[ns] = v[i].a;
            ss[ns++] = v[i].b;
        }
    CU_ASSERT_EQUAL(ns, 284);
    fsc_backend_t *be;
    /* an H200: 139.80 GiB */
    CU_ASSERT_EQUAL_FATAL(fsc_backend_sim_create_scripted(150110011392ull, sa, ss, ns, &be), 0);
    fsc_allocator_opts_t o = {0};
    o.backend = be;
    o.capacity = 12 * GiB;
    fsc_allocator_t *a;
    CU_ASSERT_EQUAL_FATAL(fsc_allocator_create(&o, &a, NULL), 0);
    long allocs = 0, wrong = 0, ooms = 0;
    for (size_t i = 0; i < n; i++) {
        rec_t *r = &v[i];
        uint64_t addr;
        if (r->kind == 'A') {
            CU_ASSERT_EQUAL(fsc_allocator_malloc(a, r->a, r->b, &addr), 0);
            allocs++;
            wrong += addr != r->c;
        } else if (r->kind == 'F') {
            CU_ASSERT_EQUAL(fsc_allocator_free(a, r->a), 0);
        } else if (r->kind == 'O') {
            CU_ASSERT_EQUAL(fsc_allocator_malloc(a, r->a, 0, &addr), FSC_EOOM);
            const char *msg = fsc_allocator_last_error(a);
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "Tried to allocate 96.00 MiB"));
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "12.00 GiB allowed"));
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "11.95 GiB allocated"));
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "20.38 MiB is reserved but unallocated"));
            ooms++;
        }
    }
    CU_ASSERT_EQUAL(allocs, 712);
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(ooms, 1);
    CU_ASSERT_EQUAL(fsc_backend_sim_script_diverged(be), -1);
    fsc_alloc_stats_t s;
    fsc_allocator_get_stats(a, &s);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_ALL].peak, 12829982720ll);
    CU_ASSERT_EQUAL(s.allocated_bytes[FSC_STAT_SMALL].peak, 9760768);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].peak, 12851347456ll);
    CU_ASSERT_EQUAL(s.reserved_bytes[FSC_STAT_ALL].allocated, 12851347456ll);
    CU_ASSERT_EQUAL(s.active_bytes[FSC_STAT_ALL].current, 34603008);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_ALL].peak, 36585472);
    CU_ASSERT_EQUAL(s.inactive_split_bytes[FSC_STAT_ALL].allocated, 1126899712);
    CU_ASSERT_EQUAL(s.inactive_split[FSC_STAT_LARGE].allocated, 63);
    CU_ASSERT_EQUAL(s.inactive_split[FSC_STAT_ALL].peak, 18);
    CU_ASSERT_EQUAL(s.allocation[FSC_STAT_ALL].peak, 597);
    CU_ASSERT_EQUAL(s.requested_bytes[FSC_STAT_ALL].peak, 12829982720ll);
    CU_ASSERT_EQUAL(s.segment[FSC_STAT_ALL].allocated, 284);
    CU_ASSERT_EQUAL(s.num_alloc_retries, 1);
    CU_ASSERT_EQUAL(s.num_ooms, 1);
    CU_ASSERT_EQUAL(s.num_device_alloc, 284);
    CU_ASSERT_EQUAL(s.num_device_free, 0);
    CU_ASSERT_EQUAL(s.num_sync_all_streams, 1);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    free(v);
    free(sa);
    free(ss);
}

static const fsc_test_case_t k_tests[] = {
    {"random_sequences_sim", test_random_sequences_sim},
    {"threads", test_threads},
    {"replay_pytorch_oom_run", test_replay_pytorch_oom_run},
    {NULL, NULL},
};

FSC_TEST_MAIN("allocator_props", k_tests)
