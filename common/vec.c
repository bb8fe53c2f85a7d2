/*
 * vec.c — the growable array (see fsc/vec.h).
 */
#include "fsc/vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/common.h"

static int reserve(void *pptr, size_t *cap, size_t need, size_t elem, int zero)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return FSC_ENOMEM;
        ncap *= 2;
    }
    if (elem != 0 && ncap > SIZE_MAX / elem)
        return FSC_ENOMEM;
    /* The pointer is read and written through memcpy so that any T * can be
     * passed without breaking the aliasing rules. */
    void *old;
    memcpy(&old, pptr, sizeof old);
    void *nv = realloc(old, ncap * elem);
    if (nv == NULL)
        return FSC_ENOMEM;
    if (zero)
        memset((char *)nv + *cap * elem, 0, (ncap - *cap) * elem);
    memcpy(pptr, &nv, sizeof nv);
    *cap = ncap;
    return 0;
}

int fsc__vec_reserve(void *pptr, size_t *cap, size_t need, size_t elem)
{
    return reserve(pptr, cap, need, elem, 0);
}

int fsc__vec_reserve_zero(void *pptr, size_t *cap, size_t need, size_t elem)
{
    return reserve(pptr, cap, need, elem, 1);
}
