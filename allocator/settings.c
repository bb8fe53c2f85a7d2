/*
 * settings.c — the one table of allocator settings (PYTORCH_CUDA_ALLOC_CONF
 * keys): for each, its kind, field, default, range, the PyTorch versions
 * that know it, whether fragscope models it, how it appears in a
 * snapshot's allocator_settings, and its line in docs/allocator.md.
 *
 * The parser and printer (config.c), the snapshot reader and writer
 * (recorder/pytorch), what-if's validation and the documentation all walk
 * this table, so a new key is one entry here plus, when its kind is new or
 * it changes the rules, that rule. tests/test_settings_table.c checks that
 * docs/allocator.md holds exactly the table fsc_alloc_settings_doc writes.
 *
 * Versions: keys PyTorch 2.11 (the GPU version here) accepts are marked
 * with the first release that has them where that is certain
 * (expandable_segments: 2.1), 0 ("at latest 2.11") otherwise; keys found
 * only in PyTorch's sources of 2026 (c10/core/AllocatorConfig.cpp,
 * c10/cuda/CUDAAllocatorConfig.cpp) are FSC_TORCH_AFTER_211: no release of
 * them was checked.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/allocator.h"

#define OFF(f) ((int)offsetof(fsc_alloc_config_t, f))
#define HUGE_MIB 17592186044415.0 /* SIZE_MAX / 1 MiB: PyTorch clamps there */

/* Order: the printer writes keys in this order, and set_mask bits follow
 * it; the entries before large_segment_size_mb keep the order the
 * canonical form always had. */
static const fsc_alloc_setting_t k_settings[] = {
    {"max_split_size_mb", NULL, FSC_SETTING_MIB, OFF(max_split_size), 0, 20, HUGE_MIB,
     FSC_SETTING_MODELLED | FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT | FSC_SETTING_MIN_LSS |
         FSC_SETTING_SNAP_UNSET_M1 | FSC_SETTING_SNAP_ALWAYS,
     0, 0, "max_split_size", 2, "integer ≥ 20 (≥ `large_segment_size_mb`)",
     "blocks at/above it are never split; default unlimited"},
    {"max_non_split_rounding_mb", NULL, FSC_SETTING_MIB, OFF(max_non_split_rounding), 20, 20,
     HUGE_MIB,
     FSC_SETTING_MODELLED | FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT | FSC_SETTING_MIN_LSS, 0,
     0, "max_non_split_rounding", 5, "integer ≥ 20 (≥ `large_segment_size_mb`)",
     "oversize tolerance; default 20, or `large_segment_size_mb` when that is set"},
    {"roundup_power2_divisions", NULL, FSC_SETTING_DIVISIONS, OFF(roundup_power2_divisions), 0, 0,
     0,
     FSC_SETTING_MODELLED | FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT |
         FSC_SETTING_SNAP_ALWAYS,
     0, 0, "roundup_power2_divisions", 6, "power of two, or `[MiB:d,…,>:d]`",
     "rounding; the first entry also sets every interval below it; `>` sets the intervals "
     "after the previous entry's (all of them when it comes first), as PyTorch 2.9 on reads "
     "it (2.11's snapshot of `[256:1,512:2,1024:4,>:8]` records 1024 → 4, 2048 → 8); the older "
     "parser (`FSC_PARSER_OLD`) fills from the previous entry's own interval on"},
    {"garbage_collection_threshold", NULL, FSC_SETTING_FRACTION,
     OFF(garbage_collection_threshold), 0, 0, 1,
     FSC_SETTING_MODELLED | FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT | FSC_SETTING_OPEN |
         FSC_SETTING_SNAP_ALWAYS,
     0, 0, "garbage_collection_threshold", 3, "(0, 1)", "GC, with a capacity"},
    {"expandable_segments", NULL, FSC_SETTING_BOOL, OFF(expandable_segments), 0, 0, 1,
     FSC_SETTING_MODELLED | FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT |
         FSC_SETTING_SNAP_ALWAYS,
     201, 0, "expandable_segments", 4, "`True`/`False`", "expandable segments"},
    {"large_segment_size_mb", NULL, FSC_SETTING_MIB, OFF(large_segment_size), 20, 11, HUGE_MIB,
     FSC_SETTING_MODELLED | FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT, 211,
     0, NULL, 0, "integer > 10",
     "the segment of a 1–10 MiB request and the large pool's expandable page; default 20; "
     "read before the other keys"},
    {"per_process_memory_fraction", NULL, FSC_SETTING_FRACTION, OFF(per_process_memory_fraction),
     1, 0, 1, FSC_SETTING_MODELLED | FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT,
     211, 0, NULL, 0, "[0, 1]",
     "the capacity: this share of the device (an explicit capacity wins)"},
    {"throw_on_cudamalloc_oom", NULL, FSC_SETTING_BOOL, OFF(throw_on_cudamalloc_oom), 0, 0, 1,
     FSC_SETTING_MODELLED | FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT, FSC_TORCH_AFTER_211, 0,
     NULL, 0, "`True`/`False`",
     "with a capacity: a miss past it fails at once (no GC, no cache release, no retry)"},
    {"expandable_segments_reserve", NULL, FSC_SETTING_RESERVE, -1, 0, 0, 0,
     FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT, FSC_TORCH_AFTER_211, 0, NULL, 0,
     "fraction of the device, or `NG` (GiB)",
     "address space reserved per expandable segment (default 9/8 of the device): not modelled"},
    {"expandable_segments_reserve_by_class", NULL, FSC_SETTING_RESERVE_LIST, -1, 0, 0, 0,
     FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT, FSC_TORCH_AFTER_211, 0, NULL, 0,
     "`[class:reserve,…]`", "the same per stream class: not modelled"},
    {"graph_capture_record_stream_reuse", NULL, FSC_SETTING_BOOL, -1, 0, 0, 1,
     FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT, 0, 0, "graph_capture_record_stream_reuse", 0,
     "`True`/`False`",
     "reuse of record_stream blocks during graph capture: not modelled"},
    {"release_lock_on_cudamalloc", "release_lock_on_hipmalloc", FSC_SETTING_ACCEPTED, -1, 0, 0,
     0, 0, 0, 0, "release_lock_on_cudamalloc", 0, "as PyTorch",
     "accepted and ignored (a lock, not placement)"},
    {"pinned_use_cuda_host_register", "pinned_use_hip_host_register", FSC_SETTING_BOOL, -1, 0, 0,
     1, FSC_SETTING_PRINTED, 0, 0, "pinned_use_cuda_host_register", 0, "`True`/`False`",
     "pinned host memory: accepted, not modelled (no device memory)"},
    {"pinned_num_register_threads", NULL, FSC_SETTING_COUNT, -1, 1, 1, 128,
     FSC_SETTING_PRINTED | FSC_SETTING_POW2,
     0, 0, "pinned_num_register_threads", 0, "power of two ≤ 128",
     "pinned host memory: accepted, not modelled (no device memory)"},
    {"pinned_use_background_threads", NULL, FSC_SETTING_BOOL, -1, 0, 0, 1, FSC_SETTING_PRINTED,
     0, 0, NULL, 0, "`True`/`False`",
     "pinned host memory: accepted, not modelled (no device memory)"},
    {"pinned_reserve_segment_size_mb", NULL, FSC_SETTING_COUNT, -1, 0, 1, HUGE_MIB,
     FSC_SETTING_PRINTED, 0, 0, NULL, 0, "integer > 0",
     "pinned host memory: accepted, not modelled (no device memory)"},
    {"pinned_free_catch_all", NULL, FSC_SETTING_BOOL, -1, 0, 0, 1, FSC_SETTING_PRINTED,
     FSC_TORCH_AFTER_211, 0, NULL, 0, "`True`/`False`",
     "pinned host memory: accepted, not modelled (no device memory)"},
    {"backend", NULL, FSC_SETTING_BACKEND, -1, 0, 0, 0, FSC_SETTING_MODELLED, 0, 0, NULL, 0,
     "`native`",
     "accepted (`cudaMallocAsync` is refused: not modelled)"},
#ifdef FSC_SETTINGS_TEST_EXTRA
    /* Built only into tests/settings_extra.c's copy of the table: a key no
     * PyTorch has, to show a new entry needs no other edit. */
    {"test_knob_mb", NULL, FSC_SETTING_COUNT, -1, 8, 4, 64,
     FSC_SETTING_PRINTED | FSC_SETTING_PLACEMENT, FSC_TORCH_AFTER_211, 0, NULL, 0,
     "integer 4..64", "a made-up setting of the test build: not modelled"},
#endif
};

#define N_SETTINGS (sizeof k_settings / sizeof k_settings[0])
_Static_assert(N_SETTINGS <= FSC_ALLOC_SETTINGS_MAX, "settings table larger than extra[]");

const fsc_alloc_setting_t *fsc_alloc_settings(size_t *n)
{
    if (n != NULL)
        *n = N_SETTINGS;
    return k_settings;
}

const fsc_alloc_setting_t *fsc_alloc_setting_find(const char *key, size_t *index)
{
    if (key == NULL)
        return NULL;
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (strcmp(key, k_settings[i].name) == 0 ||
            (k_settings[i].alias != NULL && strcmp(key, k_settings[i].alias) == 0)) {
            if (index != NULL)
                *index = i;
            return &k_settings[i];
        }
    return NULL;
}

int fsc_alloc_config_is_set(const fsc_alloc_config_t *c, size_t index)
{
    return c != NULL && index < 64 && (c->set_mask >> index & 1u) != 0;
}

int fsc_alloc_config_unmodelled(const fsc_alloc_config_t *c, char *buf, size_t cap)
{
    int n = 0;
    size_t len = 0;
    if (buf != NULL && cap > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const fsc_alloc_setting_t *s = &k_settings[i];
        if (!fsc_alloc_config_is_set(c, i) || (s->flags & FSC_SETTING_MODELLED) ||
            !(s->flags & FSC_SETTING_PLACEMENT))
            continue;
        n++;
        if (buf != NULL && len < cap) {
            int w = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", s->name);
            if (w > 0)
                len += (size_t)w;
        }
    }
    return n;
}

int fsc_alloc_config_unmodelled_str(const char *config, char *buf, size_t cap)
{
    fsc_alloc_config_t c;
    fsc_err_t e;
    fsc_err_clear(&e);
    if (buf != NULL && cap > 0)
        buf[0] = '\0';
    if (config == NULL || fsc_alloc_config_parse(config, &c, &e) != 0)
        return 0;
    return fsc_alloc_config_unmodelled(&c, buf, cap);
}

static const char *versions(const fsc_alloc_setting_t *s, char *b, size_t cap)
{
    if (s->since == FSC_TORCH_AFTER_211)
        snprintf(b, cap, "after 2.11 ¹");
    else if (s->since == 0)
        snprintf(b, cap, "≤ 2.11");
    else
        snprintf(b, cap, "%d.%d on", s->since / 100, s->since % 100);
    return b;
}

int fsc_alloc_settings_doc(char *buf, size_t cap)
{
    if (buf == NULL || cap == 0)
        return FSC_EINVAL;
    size_t len = 0;
    buf[0] = '\0';
#define PUT(...)                                                                  \
    do {                                                                          \
        int w_ = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0, \
                          __VA_ARGS__);                                           \
        if (w_ > 0)                                                               \
            len += (size_t)w_;                                                    \
    } while (0)
    PUT("| key | value | PyTorch | modelled | snapshot key | effect |\n");
    PUT("|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const fsc_alloc_setting_t *s = &k_settings[i];
        char v[32];
        PUT("| `%s`", s->name);
        if (s->alias != NULL)
            PUT(" (`%s`)", s->alias);
        PUT(" | %s | %s | %s | %s%s%s | %s |\n", s->doc_value, versions(s, v, sizeof v),
            (s->flags & FSC_SETTING_MODELLED) ? "yes"
            : (s->flags & FSC_SETTING_PLACEMENT) ? "**no**: named in outputs"
                                                 : "no (no effect on device memory)",
            s->snapshot_key ? "`" : "", s->snapshot_key ? s->snapshot_key : "—",
            s->snapshot_key ? "`" : "", s->doc_effect);
    }
#undef PUT
    if (len >= cap) {
        buf[cap - 1] = '\0';
        return FSC_ELIMIT;
    }
    return 0;
}

const char *fsc_alloc_config_env(const char *(*getenv_fn)(const char *), const char **name)
{
    static const char *const vars[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF",
                                       "PYTORCH_ALLOC_CONF"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv_fn != NULL ? getenv_fn(vars[i]) : getenv(vars[i]);
        if (v != NULL) {
            if (name != NULL)
                *name = vars[i];
            return v;
        }
    }
    if (name != NULL)
        *name = NULL;
    return NULL;
}

/* ---- PyTorch versions -------------------------------------------------- */

int fsc_alloc_torch_version_parse(const char *s, int *out)
{
    if (s == NULL || out == NULL)
        return FSC_EINVAL;
    char *end;
    long major = strtol(s, &end, 10);
    if (end == s || *end != '.' || major < 1 || major > 9)
        return FSC_EINVAL;
    const char *m = end + 1;
    long minor = strtol(m, &end, 10);
    if (end == m || minor < 0 || minor > 99 || (*end != '\0' && *end != '.'))
        return FSC_EINVAL;
    *out = (int)(major * 100 + minor);
    return 0;
}

int fsc_alloc_config_missing_in(const fsc_alloc_config_t *c, int version, char *buf, size_t cap)
{
    int n = 0;
    size_t len = 0;
    if (buf != NULL && cap > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const fsc_alloc_setting_t *s = &k_settings[i];
        int lacks = (s->since != 0 && version < s->since) ||
                    (s->until != 0 && version > s->until);
        if (!fsc_alloc_config_is_set(c, i) || !lacks)
            continue;
        n++;
        if (buf != NULL && len < cap) {
            int w = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", s->name);
            if (w > 0)
                len += (size_t)w;
        }
    }
    return n;
}

/* Where PyTorch's own rules changed. The release boundaries other than
 * 2.11 are those of the sources read (commits named), not of releases run. */
static const struct {
    int from, to; /* the versions the line applies to */
    const char *text;
} k_rule_changes[] = {
    {0, 208,
     "roundup_power2_divisions list form: '>' fills from the previous entry's own interval "
     "on (the CUDA-only parser, read at PyTorch commit 065861fba759; 2.9 is taken as the "
     "release of the c10/core parser, which fills from the interval after it)"},
    {0, 210,
     "no large_segment_size_mb (2.11 accepts it on our GPU; earlier releases were not "
     "checked): a 1-10 MiB request gets a 20 MiB segment, expandable segments map 20 MiB "
     "pages, and max_split_size_mb and max_non_split_rounding_mb are at least 20"},
    {0, 210,
     "no per_process_memory_fraction in the string (2.11 accepts it on our GPU; earlier "
     "releases were not checked): the cap comes only from "
     "torch.cuda.set_per_process_memory_fraction"},
    {0, 211,
     "no throw_on_cudamalloc_oom (2.11 refuses the key on our GPU): a miss past the cap "
     "runs GC, releases the cache and retries before the OOM"},
    {209, 210,
     "environment: PYTORCH_ALLOC_CONF is read before PYTORCH_CUDA_ALLOC_CONF and "
     "PYTORCH_HIP_ALLOC_CONF (read at commit 0ac716637f32; 2.11 on our GPU reads the CUDA "
     "variable first, as the 2026 sources do); the first one set is the only one read"},
};

int fsc_alloc_torch_parser_rules(int version)
{
    return version < 209 ? FSC_PARSER_OLD : FSC_PARSER_NEW;
}

int fsc_alloc_torch_rule_differences(int version, char *buf, size_t cap)
{
    int n = 0;
    size_t len = 0;
    if (buf != NULL && cap > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof k_rule_changes / sizeof k_rule_changes[0]; i++) {
        if (version < k_rule_changes[i].from || version > k_rule_changes[i].to)
            continue;
        n++;
        if (buf != NULL && len < cap) {
            int w = snprintf(buf + len, cap - len, "- %s\n", k_rule_changes[i].text);
            if (w > 0)
                len += (size_t)w;
        }
    }
    return n;
}
