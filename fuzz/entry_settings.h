/*
 * entry_settings.h — allocator config strings and size strings.
 * Part of the fuzz entry points (fuzz_entry.h).
 */
#ifndef FSC_FUZZ_ENTRY_SETTINGS_H
#define FSC_FUZZ_ENTRY_SETTINGS_H

#include "fuzz_common.h"

/* ---- allocator config string ------------------------------------------- */

static inline int fsc_fuzz_config(const uint8_t *data, size_t len)
{
    char *s = fsc__fuzz_cstr(data, len);
    if (s == NULL)
        return 0;
    fsc_alloc_config_t c;
    fsc_err_t err;
    if (fsc_alloc_config_parse(s, &c, &err) == 0) {
        /* The canonical form parses back to the same settings. */
        char buf[1024];
        FSC_FUZZ_ASSERT(fsc_alloc_config_format(&c, buf, sizeof buf) == 0);
        fsc_alloc_config_t back;
        int rc = fsc_alloc_config_parse(buf, &back, &err);
        if (rc != 0)
            fprintf(stderr, "canonical form '%s' does not parse: %s\n", buf, err.msg);
        FSC_FUZZ_ASSERT(rc == 0);
        FSC_FUZZ_ASSERT(back.max_split_size == c.max_split_size);
        FSC_FUZZ_ASSERT(memcmp(back.roundup_power2_divisions, c.roundup_power2_divisions,
                               sizeof c.roundup_power2_divisions) == 0);
        FSC_FUZZ_ASSERT(back.garbage_collection_threshold == c.garbage_collection_threshold);
        FSC_FUZZ_ASSERT(back.expandable_segments == c.expandable_segments);
        FSC_FUZZ_ASSERT(back.max_non_split_rounding == c.max_non_split_rounding);
        FSC_FUZZ_ASSERT(back.large_segment_size == c.large_segment_size);
        FSC_FUZZ_ASSERT(back.throw_on_cudamalloc_oom == c.throw_on_cudamalloc_oom);
        FSC_FUZZ_ASSERT(strcmp(back.reserve_by_class, c.reserve_by_class) == 0);
        /* The rules never fail on a parsed config. */
        uint64_t r = fsc_alloc_round_size(&c, 3 * FSC_MiB + 1);
        FSC_FUZZ_ASSERT(r >= 3 * FSC_MiB + 1);
    } else {
        FSC_FUZZ_ASSERT(err.code == FSC_ECONFIG && err.msg[0] != '\0');
    }
    free(s);
    return 0;
}

/* ---- size strings ------------------------------------------------------- */

static inline int fsc_fuzz_size(const uint8_t *data, size_t len)
{
    char *s = fsc__fuzz_cstr(data, len);
    if (s == NULL)
        return 0;
    uint64_t v = 0;
    if (fsc_size_parse(s, &v) == 0) {
        /* A plain decimal byte count parses back to itself. */
        char buf[32];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
        uint64_t back = 0;
        FSC_FUZZ_ASSERT(fsc_size_parse(buf, &back) == 0 && back == v);
        char human[64];
        fsc_size_format(v, human, sizeof human);
        FSC_FUZZ_ASSERT(memchr(human, '\0', sizeof human) != NULL);
    }
    free(s);
    return 0;
}

#endif
