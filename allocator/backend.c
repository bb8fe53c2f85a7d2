/*
 * backend.c — what every backend shares: name, total, destroy; and the
 * cuda entry point when the library is built without CUDA.
 */
#include <stddef.h>

#include "backend.h"

void fsc_backend_destroy(fsc_backend_t *b)
{
    if (b != NULL)
        b->ops->destroy(b);
}

const char *fsc_backend_name(const fsc_backend_t *b)
{
    return b != NULL ? b->name : "";
}

uint64_t fsc_backend_total(const fsc_backend_t *b)
{
    return b != NULL ? b->total : 0;
}

#ifndef FSC_HAVE_CUDA
int fsc_backend_cuda_create(int device, fsc_backend_t **out, fsc_err_t *err)
{
    (void)device;
    if (out != NULL)
        *out = NULL;
    return fsc_err_set(err, FSC_EUNSUPPORTED, "this build of fragscope has no CUDA backend");
}
#endif
