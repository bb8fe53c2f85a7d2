/*
 * consumer.c — a program outside fragscope's tree that uses the installed
 * library: checks that the headers and the loaded library agree on the
 * version, and runs one allocation through the caching allocator on the
 * simulated device. Built by test_install through find_package(fragscope)
 * and through pkg-config.
 */
#include <stdio.h>
#include <string.h>

#include <fragscope/allocator.h>
#include <fragscope/common.h>
#include <fragscope/version.h>

int main(void)
{
    if (strcmp(fsc_version(), FSC_VERSION_STRING) != 0 || fsc_version_number() != FSC_VERSION_NUMBER) {
        fprintf(stderr, "consumer: headers %s, library %s\n", FSC_VERSION_STRING, fsc_version());
        return 1;
    }
    fsc_err_t err;
    fsc_err_clear(&err);
    fsc_backend_t *b = NULL;
    fsc_allocator_t *a = NULL;
    fsc_allocator_opts_t o;
    memset(&o, 0, sizeof o);
    if (fsc_alloc_config_parse("", &o.config, &err) != 0 || fsc_backend_sim_create(1ull << 30, 0, &b) != 0)
        return 1;
    o.backend = b;
    uint64_t addr = 0;
    fsc_alloc_stats_t st;
    if (fsc_allocator_create(&o, &a, &err) != 0 || fsc_allocator_malloc(a, 1000, 0, &addr) != 0 ||
        fsc_allocator_get_stats(a, &st) != 0) {
        fprintf(stderr, "consumer: %s\n", fsc_err_msg(&err));
        return 1;
    }
    printf("fragscope %s: allocated %lld reserved %lld\n", fsc_version(),
           (long long)st.allocated_bytes[FSC_STAT_ALL].current,
           (long long)st.reserved_bytes[FSC_STAT_ALL].current);
    fsc_allocator_free(a, addr);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(b);
    return 0;
}
