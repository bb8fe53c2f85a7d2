/*
 * cuda.c — the CUDA device backend: cudaMalloc/cudaFree for segments, CUDA
 * virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap,
 * cuMemSetAccess, cuMemUnmap) for expandable segments, and CUDA events for
 * frees that wait on other streams.
 *
 * Driver API functions are looked up through the runtime
 * (cudaGetDriverEntryPoint*) rather than linked, so that programs built here
 * still start on machines without a GPU driver and the backend reports
 * FSC_ECUDA instead. Out-of-memory is an error return with the CUDA error
 * state cleared, never an abort. Compiled only when FSC_HAVE_CUDA is set.
 */
#ifdef FSC_HAVE_CUDA

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

typedef CUresult (*pfn_reserve_t)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*pfn_addr_free_t)(CUdeviceptr, size_t);
typedef CUresult (*pfn_create_t)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                                 unsigned long long);
typedef CUresult (*pfn_release_t)(CUmemGenericAllocationHandle);
typedef CUresult (*pfn_map_t)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                              unsigned long long);
typedef CUresult (*pfn_unmap_t)(CUdeviceptr, size_t);
typedef CUresult (*pfn_set_access_t)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);

typedef struct cuda_be {
    fsc_backend_t pub;
    int device;
    int have_vmm;
    pfn_reserve_t reserve;
    pfn_addr_free_t addr_free;
    pfn_create_t create;
    pfn_release_t release;
    pfn_map_t map;
    pfn_unmap_t unmap;
    pfn_set_access_t set_access;
} cuda_be_t;

typedef struct cuda_vseg {
    CUdeviceptr base;
    uint64_t size, page;
    size_t npages;
    CUmemGenericAllocationHandle *handles; /* 0 = page not mapped */
} cuda_vseg_t;

static int cuda_fail(fsc_err_t *err, cudaError_t e, const char *what)
{
    (void)cudaGetLastError(); /* clear the sticky-free error state */
    return fsc_err_set(err, FSC_ECUDA, "%s: %s", what, cudaGetErrorString(e));
}

static void *entry(const char *sym)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    if (cudaGetDriverEntryPointByVersion(sym, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess)
        fn = NULL;
#else
    if (cudaGetDriverEntryPoint(sym, &fn, cudaEnableDefault, &q) != cudaSuccess)
        fn = NULL;
#endif
    (void)cudaGetLastError();
    return q == cudaDriverEntryPointSuccess ? fn : NULL;
}

static int cu_seg_alloc(fsc_backend_t *b, uint64_t size, uint64_t *addr, fsc_err_t *err)
{
    cuda_be_t *c = (cuda_be_t *)b;
    cudaSetDevice(c->device);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return FSC_EOOM;
    }
    if (e != cudaSuccess)
        return cuda_fail(err, e, "cudaMalloc");
    *addr = (uint64_t)(uintptr_t)p;
    return 0;
}

static void cu_seg_free(fsc_backend_t *b, uint64_t addr, uint64_t size)
{
    (void)size;
    cudaSetDevice(((cuda_be_t *)b)->device);
    if (cudaFree((void *)(uintptr_t)addr) != cudaSuccess)
        (void)cudaGetLastError();
}

static int cu_va_reserve(fsc_backend_t *b, uint64_t size, uint64_t page, void **vseg,
                         uint64_t *base, fsc_err_t *err)
{
    cuda_be_t *c = (cuda_be_t *)b;
    if (!c->have_vmm)
        return fsc_err_set(err, FSC_EUNSUPPORTED,
                           "expandable segments need CUDA virtual memory management, which "
                           "this driver does not offer");
    cuda_vseg_t *v = calloc(1, sizeof *v);
    if (v != NULL) {
        v->npages = size / page;
        v->handles = calloc(v->npages ? v->npages : 1, sizeof *v->handles);
    }
    if (v == NULL || v->handles == NULL) {
        free(v);
        return fsc_err_set(err, FSC_ENOMEM, "cuda backend: out of host memory");
    }
    CUresult r = c->reserve(&v->base, size, 0, 0, 0);
    if (r != CUDA_SUCCESS) {
        free(v->handles);
        free(v);
        return fsc_err_set(err, FSC_ECUDA, "cuMemAddressReserve of %llu bytes failed (%d)",
                           (unsigned long long)size, (int)r);
    }
    v->size = size;
    v->page = page;
    *vseg = v;
    *base = (uint64_t)v->base;
    return 0;
}

static void unmap_pages(cuda_be_t *c, cuda_vseg_t *v, size_t first, size_t n)
{
    for (size_t i = first; i < first + n; i++) {
        if (v->handles[i] == 0)
            continue;
        c->unmap(v->base + i * v->page, v->page);
        c->release(v->handles[i]);
        v->handles[i] = 0;
    }
}

static int cu_va_map(fsc_backend_t *b, void *vseg, uint64_t off, uint64_t len, fsc_err_t *err)
{
    cuda_be_t *c = (cuda_be_t *)b;
    cuda_vseg_t *v = vseg;
    size_t first = off / v->page, n = len / v->page;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = c->device;
    for (size_t i = first; i < first + n; i++) {
        CUmemGenericAllocationHandle h = 0;
        CUresult r = c->create(&h, v->page, &prop, 0);
        if (r == CUDA_SUCCESS) {
            r = c->map(v->base + i * v->page, v->page, 0, h, 0);
            if (r != CUDA_SUCCESS)
                c->release(h);
        }
        if (r != CUDA_SUCCESS) {
            unmap_pages(c, v, first, i - first);
            (void)cudaGetLastError();
            if (r == CUDA_ERROR_OUT_OF_MEMORY)
                return FSC_EOOM;
            return fsc_err_set(err, FSC_ECUDA, "cuMemCreate/cuMemMap failed (%d)", (int)r);
        }
        v->handles[i] = h;
    }
    CUmemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = c->device;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult r = c->set_access(v->base + off, len, &desc, 1);
    if (r != CUDA_SUCCESS) {
        unmap_pages(c, v, first, n);
        return fsc_err_set(err, FSC_ECUDA, "cuMemSetAccess failed (%d)", (int)r);
    }
    return 0;
}

static void cu_va_unmap(fsc_backend_t *b, void *vseg, uint64_t off, uint64_t len)
{
    cuda_be_t *c = (cuda_be_t *)b;
    cuda_vseg_t *v = vseg;
    /* Unmapping does not wait for the device; work using the pages must be
     * finished first. */
    cudaSetDevice(c->device);
    if (cudaDeviceSynchronize() != cudaSuccess)
        (void)cudaGetLastError();
    unmap_pages(c, v, off / v->page, len / v->page);
}

static void cu_va_release(fsc_backend_t *b, void *vseg)
{
    cuda_be_t *c = (cuda_be_t *)b;
    cuda_vseg_t *v = vseg;
    unmap_pages(c, v, 0, v->npages);
    c->addr_free(v->base, v->size);
    free(v->handles);
    free(v);
}

static void cu_mem_info(fsc_backend_t *b, uint64_t *free_bytes, uint64_t *total)
{
    size_t f = 0, t = 0;
    cudaSetDevice(((cuda_be_t *)b)->device);
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) {
        (void)cudaGetLastError();
        *free_bytes = UINT64_MAX;
        *total = b->total;
        return;
    }
    *free_bytes = f;
    *total = t;
}

static int cu_event_record(fsc_backend_t *b, uint64_t stream, void **ev, fsc_err_t *err)
{
    (void)b;
    cudaEvent_t e;
    cudaError_t r = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (r != cudaSuccess)
        return cuda_fail(err, r, "cudaEventCreate");
    r = cudaEventRecord(e, (cudaStream_t)(uintptr_t)stream);
    if (r != cudaSuccess) {
        cudaEventDestroy(e);
        return cuda_fail(err, r, "cudaEventRecord");
    }
    *ev = (void *)e;
    return 0;
}

static int cu_event_query(fsc_backend_t *b, void *ev)
{
    (void)b;
    cudaError_t r = cudaEventQuery((cudaEvent_t)ev);
    if (r == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return 0;
    }
    if (r != cudaSuccess)
        (void)cudaGetLastError(); /* a failed event cannot hold the block forever */
    return 1;
}

static void cu_event_sync(fsc_backend_t *b, void *ev)
{
    (void)b;
    if (cudaEventSynchronize((cudaEvent_t)ev) != cudaSuccess)
        (void)cudaGetLastError();
}

static void cu_event_destroy(fsc_backend_t *b, void *ev)
{
    (void)b;
    cudaEventDestroy((cudaEvent_t)ev);
}

static void cu_destroy(fsc_backend_t *b)
{
    free(b);
}

static const fsc_backend_ops_t k_cuda_ops = {
    .seg_alloc = cu_seg_alloc,
    .seg_free = cu_seg_free,
    .va_reserve = cu_va_reserve,
    .va_map = cu_va_map,
    .va_unmap = cu_va_unmap,
    .va_release = cu_va_release,
    .mem_info = cu_mem_info,
    .event_record = cu_event_record,
    .event_query = cu_event_query,
    .event_sync = cu_event_sync,
    .event_destroy = cu_event_destroy,
    .destroy = cu_destroy,
};

int fsc_backend_cuda_create(int device, fsc_backend_t **out, fsc_err_t *err)
{
    if (out == NULL)
        return fsc_err_set(err, FSC_EINVAL, "cuda backend: no output handle");
    *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return cuda_fail(err, e, "no usable CUDA device");
    if (device < 0 || device >= n)
        return fsc_err_set(err, FSC_ECUDA, "CUDA device %d does not exist (%d found)", device, n);
    struct cudaDeviceProp prop;
    if ((e = cudaSetDevice(device)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess)
        return cuda_fail(err, e, "CUDA device");
    cuda_be_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "cuda backend: out of host memory");
    c->pub.ops = &k_cuda_ops;
    c->pub.total = prop.totalGlobalMem;
    c->device = device;
    snprintf(c->pub.name, sizeof c->pub.name, "cuda:%d %.100s", device, prop.name);
    c->reserve = (pfn_reserve_t)entry("cuMemAddressReserve");
    c->addr_free = (pfn_addr_free_t)entry("cuMemAddressFree");
    c->create = (pfn_create_t)entry("cuMemCreate");
    c->release = (pfn_release_t)entry("cuMemRelease");
    c->map = (pfn_map_t)entry("cuMemMap");
    c->unmap = (pfn_unmap_t)entry("cuMemUnmap");
    c->set_access = (pfn_set_access_t)entry("cuMemSetAccess");
    c->have_vmm = c->reserve && c->addr_free && c->create && c->release && c->map && c->unmap &&
                  c->set_access;
    *out = &c->pub;
    return 0;
}

#else
/* Built without CUDA: backend.c provides fsc_backend_cuda_create. */
typedef int fsc__no_cuda_t;
#endif
