/*
 * rules.c — the size rules of PyTorch's caching allocator: request rounding
 * (512 B granules or roundup_power2_divisions), pool choice, the size of a
 * new segment, and when a cached block is split.
 *
 * They are pure functions so that the importer and the analyzer can apply
 * the same rules to recorded runs without an allocator instance.
 */
#include "fragscope/allocator.h"
#include "rules.h"

/* PyTorch's divisions lookup: interval index floor(log2(size)) - 20,
 * clamped to the table. */
static uint32_t divisions_for(const fsc_alloc_config_t *c, uint64_t size)
{
    if (c == NULL)
        return 0;
    int idx = (63 - __builtin_clzll(size)) - 20;
    if (idx < 0)
        idx = 0;
    if (idx > FSC_ROUNDUP_INTERVALS - 1)
        idx = FSC_ROUNDUP_INTERVALS - 1;
    return c->roundup_power2_divisions[idx];
}

/* Next multiple of (2^floor(log2 size) / divisions) at or above size; a
 * power of two stays as it is. */
static uint64_t next_division(uint64_t size, uint32_t divisions)
{
    if ((size & (size - 1)) == 0)
        return size;
    uint64_t floor2 = 1ull << (63 - __builtin_clzll(size));
    uint64_t step = floor2 >> (31 - __builtin_clz(divisions));
    if (step == 0)
        return floor2 << 1;
    uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

uint64_t fsc_alloc_round_size(const fsc_alloc_config_t *c, uint64_t size)
{
    if (size < FSC__MIN_BLOCK)
        return FSC__MIN_BLOCK;
    if (size > UINT64_MAX / 2) /* no request gets here; keep the arithmetic defined */
        return UINT64_MAX / 2 + 1;
    uint32_t div = divisions_for(c, size);
    if (div > 1 && size > (uint64_t)FSC__MIN_BLOCK * div)
        return next_division(size, div);
    return (size + FSC__MIN_BLOCK - 1) / FSC__MIN_BLOCK * FSC__MIN_BLOCK;
}

fsc_pool_t fsc_alloc_pool_of(uint64_t rounded_size)
{
    return rounded_size <= FSC__SMALL_SIZE ? FSC_POOL_SMALL : FSC_POOL_LARGE;
}

uint64_t fsc_alloc_segment_size_cfg(const fsc_alloc_config_t *c, uint64_t rounded_size)
{
    if (rounded_size <= FSC__SMALL_SIZE)
        return FSC__SMALL_BUFFER;
    if (rounded_size < FSC__MIN_LARGE_ALLOC)
        return fsc__large_segment(c);
    return (rounded_size + FSC__ROUND_LARGE - 1) / FSC__ROUND_LARGE * FSC__ROUND_LARGE;
}

uint64_t fsc_alloc_segment_size(uint64_t rounded_size)
{
    return fsc_alloc_segment_size_cfg(NULL, rounded_size);
}

int fsc_alloc_should_split(const fsc_alloc_config_t *c, fsc_pool_t pool, uint64_t block_size,
                           uint64_t size, int expandable)
{
    if (block_size < size)
        return 0;
    uint64_t remaining = block_size - size;
    if (pool == FSC_POOL_SMALL || expandable || (c != NULL && c->expandable_segments))
        return remaining >= FSC__MIN_BLOCK;
    return size < fsc__max_split(c) && remaining > FSC__SMALL_SIZE;
}
