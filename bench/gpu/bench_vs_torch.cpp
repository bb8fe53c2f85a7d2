// bench_vs_torch.cpp — alloc+free pair cost on a GPU, in one process:
// fragscope's allocator on the cuda backend, PyTorch's native caching
// allocator (c10::cuda::CUDACachingAllocator at C++ level), and raw
// cudaMalloc/cudaFree, on the same size mix and the same sequence.
// Built on the GPU machine against the torch package (see the bench-alloc task of bench/gpu/run.sh).
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

extern "C" {
#include "fragscope/allocator.h"
}

namespace {

const size_t kMix[] = {512, 4096, 65536, 1 << 20, 3 << 20, 16 << 20, 64 << 20};

struct Impl {
    const char *name;
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *p);
    void *ctx;
};

double pair_ns(const Impl &im, const std::vector<size_t> &sizes)
{
    for (int i = 0; i < 1000; i++)  // warm the cache
        im.free(im.ctx, im.alloc(im.ctx, sizes[i % sizes.size()]));
    auto t0 = std::chrono::steady_clock::now();
    for (size_t s : sizes)
        im.free(im.ctx, im.alloc(im.ctx, s));
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / sizes.size();
}

double window_ns(const Impl &im, const std::vector<size_t> &sizes, unsigned seed)
{
    std::mt19937 rng(seed);
    std::vector<void *> live;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t s : sizes) {
        live.push_back(im.alloc(im.ctx, s));
        if (live.size() > 64) {
            size_t k = rng() % live.size();
            im.free(im.ctx, live[k]);
            live[k] = live.back();
            live.pop_back();
        }
    }
    auto t1 = std::chrono::steady_clock::now();
    for (void *p : live)
        im.free(im.ctx, p);
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / sizes.size();
}

void *fsc_a(void *ctx, size_t size)
{
    uint64_t addr = 0;
    if (fsc_allocator_malloc(static_cast<fsc_allocator_t *>(ctx), size, 0, &addr) != 0)
        return nullptr;
    return reinterpret_cast<void *>(addr);
}
void fsc_f(void *ctx, void *p)
{
    fsc_allocator_free(static_cast<fsc_allocator_t *>(ctx), reinterpret_cast<uint64_t>(p));
}
void *torch_a(void *, size_t size) { return c10::cuda::CUDACachingAllocator::raw_alloc(size); }
void torch_f(void *, void *p) { c10::cuda::CUDACachingAllocator::raw_delete(p); }
void *raw_a(void *, size_t size)
{
    void *p = nullptr;
    return cudaMalloc(&p, size) == cudaSuccess ? p : nullptr;
}
void raw_f(void *, void *p) { cudaFree(p); }

}  // namespace

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200000;
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    c10::cuda::CUDACachingAllocator::init(ndev);
    std::mt19937 rng(0);
    std::vector<size_t> sizes(n);
    for (auto &s : sizes)
        s = kMix[rng() % 7];
    std::vector<size_t> raw_sizes(sizes.begin(), sizes.begin() + std::min<size_t>(n, 20000));

    fsc_backend_t *be = nullptr;
    fsc_err_t err;
    if (fsc_backend_cuda_create(0, &be, &err) != 0) {
        std::fprintf(stderr, "cuda backend: %s\n", fsc_err_msg(&err));
        return 1;
    }
    fsc_allocator_opts_t opts = {};
    fsc_alloc_config_t cfg = FSC_ALLOC_CONFIG_DEFAULT;
    opts.config = cfg;
    opts.backend = be;
    fsc_allocator_t *a = nullptr;
    if (fsc_allocator_create(&opts, &a, &err) != 0) {
        std::fprintf(stderr, "allocator: %s\n", fsc_err_msg(&err));
        return 1;
    }
    Impl impls[] = {{"fragscope_cuda", fsc_a, fsc_f, a},
                    {"pytorch_native_cxx", torch_a, torch_f, nullptr},
                    {"raw_cudaMalloc", raw_a, raw_f, nullptr}};
    double pair[3], win[3];
    // Interleave three rounds so drift in the machine affects all alike; keep the best.
    for (int i = 0; i < 3; i++) { pair[i] = 1e30; win[i] = 1e30; }
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3; i++) {
            const auto &sz = i == 2 ? raw_sizes : sizes;
            pair[i] = std::min(pair[i], pair_ns(impls[i], sz));
            win[i] = std::min(win[i], window_ns(impls[i], sz, 1234 + round));
        }
    }
    for (int i = 0; i < 3; i++)
        std::printf("{\"impl\": \"%s\", \"pair_ns\": %.1f, \"window_ns\": %.1f}\n", impls[i].name,
                    pair[i], win[i]);
    std::printf("{\"ratio_fragscope_vs_pytorch\": {\"pair\": %.3f, \"window\": %.3f}}\n",
                pair[0] / pair[1], win[0] / win[1]);
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    return 0;
}
