/*
 * rules.h — PyTorch's allocator constants and small helpers shared inside
 * allocator/ (not API).
 */
#ifndef FSC_ALLOCATOR_RULES_H
#define FSC_ALLOCATOR_RULES_H

#include <stdint.h>

#include "fragscope/allocator.h"

#define FSC__MIN_BLOCK 512u                  /* kMinBlockSize */
#define FSC__SMALL_SIZE (1ull << 20)         /* kSmallSize: largest small-pool request */
#define FSC__SMALL_BUFFER (2ull << 20)       /* kSmallBuffer: small-pool segment */
#define FSC__LARGE_BUFFER (20ull << 20)      /* kLargeBuffer: segment for 1..10 MiB */
#define FSC__MIN_LARGE_ALLOC (10ull << 20)   /* kMinLargeAlloc */
#define FSC__ROUND_LARGE (2ull << 20)        /* kRoundLarge */
#define FSC__MAX_REQUEST (1ull << 60)        /* PyTorch refuses requests of 1 EiB and more */

/* max_split_size with 0 meaning unlimited. */
static inline uint64_t fsc__max_split(const fsc_alloc_config_t *c)
{
    return (c == NULL || c->max_split_size == 0) ? UINT64_MAX : c->max_split_size;
}

/* large_segment_size with 0 meaning PyTorch's kLargeBuffer, 20 MiB. */
static inline uint64_t fsc__large_segment(const fsc_alloc_config_t *c)
{
    return (c == NULL || c->large_segment_size == 0) ? FSC__LARGE_BUFFER : c->large_segment_size;
}

/* max_non_split_rounding with 0 meaning its default, the large segment
 * size (20 MiB unless large_segment_size_mb says otherwise). */
static inline uint64_t fsc__max_non_split_rounding(const fsc_alloc_config_t *c)
{
    return (c == NULL || c->max_non_split_rounding == 0) ? fsc__large_segment(c)
                                                          : c->max_non_split_rounding;
}

#endif
