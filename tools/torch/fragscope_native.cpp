// fragscope_native.cpp — the PyTorch side of fragscope's native recorder:
// a tracker attached to PyTorch's own caching allocator
// (c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker) that
// copies each trace entry into fragscope's buffer (fsc_native_push,
// fragscope/native.h). fragscope_torch builds it against the torch it runs
// with (torch.utils.cpp_extension, cached) and links it to libfragscope.so.
//
// The tracker runs on the allocating thread under the device's allocator
// lock: it calls nothing of PyTorch's, takes no GIL and no lock, and copies
// one 48-byte entry. Everything else (opening traces, the allocator's state
// at the start) happens in the functions Python calls.
//
// Stacks: with _record_memory_history(stacks=...) on, the entry carries the
// stack PyTorch captured. Naming its frames needs the GIL, so the tracker
// only keeps the stack (a shared_ptr copy, under a mutex of the device's
// that nothing else holds for long) and flags the entry; drain_stacks, on a
// Python thread of fragscope_torch's (and in flush and stop), names the
// kept stacks with PyTorch's own symbolizer, as its snapshot does, and
// hands their tag nodes back in the device's order.
//
// Late begin: a device the process has not used when recording starts is
// begun by the tracker itself, at the device's first entry (on the thread
// that allocates, under that device's allocator lock: nothing else can push
// for it then), so that recording never makes a CUDA context the program
// would not have made, nor earlier. Its facts then come from the CUDA
// runtime (name, memory, free bytes) and from what fragscope_torch saw of
// set_per_process_memory_fraction (set_fraction).
//
// The failed request's call site: PyTorch's `oom` entry carries no stack
// with history off. With oom_sites(true), the tracker flags the OOM entry as
// one whose stack comes later and keeps a placeholder in the device's stack
// queue; fragscope_torch's OOM observer, which PyTorch calls next on the
// failing thread with the GIL, names that thread's Python stack and hands it
// over (oom_site). The placeholder holds back the stacks queued after it
// until then.
#include <torch/extension.h>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/ApproximateClock.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "fragscope/native.h"
#include "fragscope/recorder.h"
}

namespace CCA = c10::cuda::CUDACachingAllocator;

namespace {

fsc_native_t *g_native = nullptr;
std::atomic<bool> g_on{false};
bool g_attached = false;

// A stack kept by the tracker; oom: the placeholder of an OOM entry whose
// call site the OOM observer names (ctx empty).
struct Kept {
    std::shared_ptr<c10::GatheredContext> ctx;
    bool oom;
};

// Stacks kept by the tracker, per device, in the order of their entries;
// the call sites the OOM observer named, for the placeholders in q.
struct StackQueue {
    std::mutex mu;
    std::vector<Kept> q;
    std::deque<uint32_t> oom_nodes;
    int64_t oom_waiting = 0; // placeholders pushed and not yet named
};
std::unique_ptr<StackQueue[]> g_stacks;
int g_ndev = 0;
std::atomic<int64_t> g_pending{0};
// One drain at a time: the order of a device's stacks is the order they
// are handed back in.
std::mutex g_drain_mu;
// A drain stopped at a placeholder whose call site has not come: the
// stacks thread waits for oom_site instead of draining again at once.
std::atomic<bool> g_blocked{false};
std::atomic<bool> g_oom_sites{false};

// Late begin (see the top): per device 0 not begun, 1 begun, -1 failed;
// the memory fraction fragscope_torch saw set (0: none below 1); the
// allocator settings; where each begun trace is noted
// (FRAGSCOPE_RECORD_MANIFEST, for `fragscope record`).
std::unique_ptr<std::atomic<int>[]> g_begun;
std::unique_ptr<std::atomic<double>[]> g_fraction;
std::string g_config;
std::string g_manifest;
bool g_late = false;

// Append the trace's path to the manifest: one line in append mode (one
// write with O_APPEND), so that the processes of a job can share the file.
// (<fcntl.h> stays out: its open() would hide this file's own.)
void note_trace(int device)
{
    if (g_manifest.empty() || g_native == nullptr)
        return;
    const char *p = fsc_native_trace_path(g_native, device);
    if (p == nullptr)
        return;
    std::string line = std::string(p) + "\n";
    std::FILE *f = std::fopen(g_manifest.c_str(), "ae");
    if (f == nullptr)
        return;
    std::fwrite(line.data(), 1, line.size(), f);
    std::fclose(f);
}

// Begin device `dev` at its first entry `te` (see the top). Its free bytes
// are those before the entry: a segment the entry reports was taken
// already when PyTorch built the entry.
void begin_late(int dev, const CCA::TraceEntry &te)
{
    // A first entry made while a CUDA graph is being captured must not
    // invalidate the capture: the queries run in relaxed capture mode, as
    // PyTorch's allocator runs its own cudaMalloc then.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    int prev = -1;
    bool moved = cudaGetDevice(&prev) == cudaSuccess && prev != dev &&
                 cudaSetDevice(dev) == cudaSuccess;
    cudaDeviceProp prop;
    std::memset(&prop, 0, sizeof prop);
    size_t free_b = 0, total = 0;
    bool ok = cudaGetDeviceProperties(&prop, dev) == cudaSuccess &&
              cudaMemGetInfo(&free_b, &total) == cudaSuccess;
    if (moved)
        cudaSetDevice(prev);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (!ok) {
        cudaGetLastError(); // the error is ours, not the program's
        std::fprintf(stderr, "fragscope: device %d not recorded: the CUDA runtime gave no "
                             "memory figures for it\n", dev);
        g_begun[dev].store(-1);
        return;
    }
    if (te.action_ == CCA::TraceEntry::SEGMENT_ALLOC ||
        te.action_ == CCA::TraceEntry::SEGMENT_MAP)
        free_b += static_cast<size_t>(te.size_);
    double frac = g_fraction[dev].load();
    fsc_native_device_t d;
    std::memset(&d, 0, sizeof d);
    d.device = dev;
    d.name = prop.name;
    d.total = total;
    d.free = free_b;
    d.capacity = frac > 0.0 && frac < 1.0 ? static_cast<uint64_t>(frac * static_cast<double>(total))
                                          : 0;
    d.config = g_config.c_str();
    fsc_err_t err;
    std::memset(&err, 0, sizeof err);
    if (fsc_native_begin_device(g_native, &d, &err) != 0) {
        std::fprintf(stderr, "fragscope: device %d not recorded: %s\n", dev, fsc_err_msg(&err));
        g_begun[dev].store(-1);
        return;
    }
    g_begun[dev].store(1);
    note_trace(dev);
}

// The tag node of a compile context under the thread's current tag: the
// context's name pushed and popped (fsc_tag_push caches repeated names
// per thread, so a repeated context costs no lock).
uint32_t compile_tag(const std::string &ctx)
{
    fsc_tag_push(ctx.c_str());
    uint32_t node = fsc_tag_current();
    fsc_tag_pop();
    return node;
}

void tracker(const CCA::TraceEntry &te)
{
    if (!g_on.load(std::memory_order_relaxed))
        return;
    const int dev = static_cast<int>(te.device_);
    if (g_late && dev >= 0 && dev < g_ndev && g_begun[dev].load(std::memory_order_relaxed) == 0)
        begin_late(dev, te);
    fsc_native_entry_t e;
    const bool stack = te.context_ != nullptr;
    const bool site = !stack && te.action_ == CCA::TraceEntry::OOM &&
                      g_oom_sites.load(std::memory_order_relaxed);
    e.action = static_cast<uint8_t>(te.action_);
    e.flags = stack || site ? FSC_NATIVE_F_STACK : 0;
    e.device = static_cast<uint16_t>(te.device_);
    e.tag = te.compile_context_.empty() || te.compile_context_ == "N/A"
                ? fsc_tag_current()
                : compile_tag(te.compile_context_);
    e.addr = static_cast<uint64_t>(te.addr_);
    e.size = static_cast<uint64_t>(te.size_);
    e.stream = reinterpret_cast<uint64_t>(te.stream_);
    e.time = static_cast<uint64_t>(te.time_.approx_t_);
    e.pool_id = (static_cast<uint64_t>(te.mempool_.first) << 32) |
                static_cast<uint64_t>(te.mempool_.second & 0xffffffffu);
    if (fsc_native_push(g_native, &e) && (stack || site)) {
        StackQueue &sq = g_stacks[e.device]; // kept: the device is in range
        std::lock_guard<std::mutex> g(sq.mu);
        sq.q.push_back({te.context_, site});
        if (site)
            sq.oom_waiting++;
        g_pending.fetch_add(1, std::memory_order_relaxed);
    }
}

// Name the kept stacks of every device and hand them to the recorder, in
// order. Called with the GIL held (PyTorch's symbolizer needs it for the
// Python frames); the frames are interned with the GIL released.
int64_t drain_stacks()
{
    if (g_native == nullptr)
        return 0;
    std::unique_lock<std::mutex> lk(g_drain_mu, std::defer_lock);
    if (!lk.try_lock()) {
        pybind11::gil_scoped_release nogil;
        lk.lock();
    }
    int64_t total = 0;
    bool blocked = false;
    for (int d = 0; d < g_ndev; d++) {
        std::vector<Kept> v;
        std::vector<uint32_t> sites; // the call sites of v's placeholders, in order
        {
            std::lock_guard<std::mutex> g(g_stacks[d].mu);
            StackQueue &sq = g_stacks[d];
            // up to the first placeholder whose call site has not come
            size_t k = 0, named = sq.oom_nodes.size();
            for (; k < sq.q.size(); k++) {
                if (sq.q[k].oom) {
                    if (sites.size() == named)
                        break;
                    sites.push_back(sq.oom_nodes[sites.size()]);
                }
            }
            if (k < sq.q.size())
                blocked = true;
            sq.oom_nodes.erase(sq.oom_nodes.begin(),
                               sq.oom_nodes.begin() + static_cast<std::ptrdiff_t>(sites.size()));
            if (k == sq.q.size()) { // the usual case: all of it, no copy under the lock
                v.swap(sq.q);
            } else {
                v.assign(std::make_move_iterator(sq.q.begin()),
                         std::make_move_iterator(sq.q.begin() + static_cast<std::ptrdiff_t>(k)));
                sq.q.erase(sq.q.begin(), sq.q.begin() + static_cast<std::ptrdiff_t>(k));
            }
        }
        if (v.empty())
            continue;
        g_pending.fetch_sub(static_cast<int64_t>(v.size()), std::memory_order_relaxed);
        std::vector<torch::CapturedTraceback *> tbs;
        std::vector<int64_t> which(v.size(), -1);
        for (size_t i = 0; i < v.size(); i++) {
            auto *tb = v[i].oom ? nullptr : dynamic_cast<torch::CapturedTraceback *>(v[i].ctx.get());
            if (tb != nullptr) {
                which[i] = static_cast<int64_t>(tbs.size());
                tbs.push_back(tb);
            }
        }
        torch::SymbolizedTracebacks sym = torch::symbolize(tbs);
        std::vector<uint32_t> nodes(v.size(), 0);
        {
            pybind11::gil_scoped_release nogil;
            // a training loop repeats its stacks: each is interned once a batch
            std::map<std::vector<uint64_t>, uint32_t> memo;
            std::vector<fsc_native_frame_t> fr;
            size_t site = 0;
            for (size_t i = 0; i < v.size(); i++) {
                if (v[i].oom) {
                    nodes[i] = sites[site++];
                    continue;
                }
                if (which[i] < 0)
                    continue;
                const std::vector<uint64_t> &tb = sym.tracebacks[static_cast<size_t>(which[i])];
                auto it = memo.find(tb);
                if (it != memo.end()) {
                    nodes[i] = it->second;
                    continue;
                }
                fr.clear();
                for (uint64_t j : tb) {
                    const auto &f = sym.all_frames[j];
                    fr.push_back({f.filename.data(), f.filename.size(), f.funcname.data(),
                                  f.funcname.size(), static_cast<uint64_t>(f.lineno)});
                }
                nodes[i] = memo[tb] = fsc_native_stack_node(fr.data(), fr.size());
            }
            fsc_native_stacks(g_native, d, nodes.data(), nodes.size());
        }
        total += static_cast<int64_t>(v.size());
        v.clear(); // the stacks released with the GIL held
    }
    g_blocked.store(blocked);
    return total;
}

// Wait up to ms (the GIL released) for kept stacks; how many there are.
// While a drain is held back by a call site still to come, the whole ms
// (so a blocked queue is tried again at most every ms, not in a loop).
int64_t wait_stacks(int64_t ms)
{
    for (int64_t t = 0; t < ms && (g_pending.load(std::memory_order_relaxed) == 0 ||
                                   g_blocked.load(std::memory_order_relaxed));
         t += 5)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return g_pending.load(std::memory_order_relaxed);
}

// The tag node of a stack given as (filename, line, name) tuples, innermost
// first (a snapshot block's frames).
uint32_t stack_node(const std::vector<std::tuple<std::string, uint64_t, std::string>> &frames)
{
    std::vector<fsc_native_frame_t> fr;
    for (const auto &f : frames)
        fr.push_back({std::get<0>(f).data(), std::get<0>(f).size(), std::get<2>(f).data(),
                      std::get<2>(f).size(), std::get<1>(f)});
    return fsc_native_stack_node(fr.data(), fr.size());
}

void check(int rc, const fsc_err_t &err, const char *what)
{
    if (rc != 0)
        throw std::runtime_error(std::string("fragscope: ") + what + ": " + fsc_err_msg(&err));
}

} // namespace

// Open the recorder: traces at `path` (one per device), `ring` events kept
// per device (0: all). The clock: PyTorch's approximate time, converted
// as its snapshot converts it.
void open(const std::string &path, int64_t ring, int64_t devices, const std::string &producer)
{
    if (g_native != nullptr)
        throw std::runtime_error("fragscope: the native recorder is open already");
    auto to_ns = c10::ApproximateClockToUnixTimeConverter().makeConverter();
    c10::approx_time_t t0 = c10::getApproximateTime();
    const c10::approx_time_t span = 1000000000;
    double ns0 = static_cast<double>(to_ns(t0)), ns1 = static_cast<double>(to_ns(t0 + span));
    fsc_native_opts_t o;
    std::memset(&o, 0, sizeof o);
    o.path = path.c_str();
    o.ring_events = static_cast<uint64_t>(ring);
    o.devices = static_cast<int>(devices);
    o.producer = producer.c_str();
    o.clock_origin_tick = static_cast<uint64_t>(t0);
    o.clock_origin_ns = static_cast<uint64_t>(ns0);
    o.clock_ns_per_tick = (ns1 - ns0) / static_cast<double>(span);
    fsc_err_t err;
    std::memset(&err, 0, sizeof err);
    check(fsc_native_open(&o, &g_native, &err), err, "cannot open the native recorder");
    g_ndev = static_cast<int>(devices);
    g_stacks.reset(new StackQueue[static_cast<size_t>(devices)]);
    g_begun.reset(new std::atomic<int>[static_cast<size_t>(devices)]);
    g_fraction.reset(new std::atomic<double>[static_cast<size_t>(devices)]);
    for (int64_t d = 0; d < devices; d++) {
        g_begun[d].store(0);
        g_fraction[d].store(0.0);
    }
    const char *m = std::getenv("FRAGSCOPE_RECORD_MANIFEST");
    g_manifest = m != nullptr ? m : "";
}

// Devices not begun by begin_device begin at their first entry, under the
// allocator settings `config` (call before start).
void late(const std::string &config)
{
    g_config = config;
    g_late = true;
}

// The per-process memory fraction set on a device (before it begins: its
// trace's capacity is fraction x its memory).
void set_fraction(int64_t device, double fraction)
{
    if (g_native != nullptr && device >= 0 && device < g_ndev)
        g_fraction[device].store(fraction);
}

// Flag OOM entries as waiting for their call site (oom_site).
void oom_sites(bool on)
{
    g_oom_sites.store(on);
}

// The call site of the device's oldest OOM entry still waiting for one:
// frames (filename, line, name), innermost first. Ignored when none waits
// (an OOM entry the recorder did not keep).
void oom_site(int64_t device, const std::vector<std::tuple<std::string, uint64_t, std::string>> &frames)
{
    if (g_native == nullptr || device < 0 || device >= g_ndev)
        return;
    std::vector<fsc_native_frame_t> fr;
    for (const auto &f : frames)
        fr.push_back({std::get<0>(f).data(), std::get<0>(f).size(), std::get<2>(f).data(),
                      std::get<2>(f).size(), std::get<1>(f)});
    uint32_t node = fsc_native_stack_node(fr.data(), fr.size());
    StackQueue &sq = g_stacks[device];
    std::lock_guard<std::mutex> g(sq.mu);
    if (sq.oom_waiting <= 0)
        return;
    sq.oom_waiting--;
    sq.oom_nodes.push_back(node);
    g_blocked.store(false);
}

// Placeholders that will get no call site (at stop) get none: their OOM
// entries keep the thread's tag alone.
void release_sites()
{
    for (int d = 0; d < g_ndev; d++) {
        std::lock_guard<std::mutex> g(g_stacks[d].mu);
        for (; g_stacks[d].oom_waiting > 0; g_stacks[d].oom_waiting--)
            g_stacks[d].oom_nodes.push_back(0);
    }
    g_blocked.store(false);
}

// In a child made by fork(): the parent's recorder (its thread did not come
// along) is left alone and nothing more is recorded here.
void forked()
{
    g_on.store(false);
    g_native = nullptr;
}

// Begin a device: its facts and the state its allocator is in. segments:
// (address, total_size, stream, pool_id, is_large, is_expandable, blocks)
// with blocks (size, requested_size, allocated, active, stack tag node),
// from torch.cuda.memory._snapshot()['segments'] of that device.
void begin_device(int64_t device, const std::string &name, int64_t total, int64_t free_bytes,
                  int64_t capacity, const std::string &config,
                  const std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool,
                                               std::vector<std::tuple<int64_t, int64_t, bool, bool,
                                                                      int64_t>>>>
                      &segments)
{
    if (g_native == nullptr)
        throw std::runtime_error("fragscope: the native recorder is not open");
    std::vector<std::vector<fsc_native_block_t>> blocks(segments.size());
    std::vector<fsc_native_segment_t> segs(segments.size());
    for (size_t i = 0; i < segments.size(); i++) {
        const auto &s = segments[i];
        uint64_t at = static_cast<uint64_t>(std::get<0>(s));
        for (const auto &b : std::get<6>(s)) {
            fsc_native_block_t x;
            x.addr = at;
            x.size = static_cast<uint64_t>(std::get<0>(b));
            x.requested = static_cast<uint64_t>(std::get<1>(b));
            x.allocated = std::get<2>(b);
            x.pending = std::get<3>(b) && !std::get<2>(b);
            x.tag = static_cast<uint32_t>(std::get<4>(b));
            blocks[i].push_back(x);
            at += x.size;
        }
        fsc_native_segment_t &g = segs[i];
        g.addr = static_cast<uint64_t>(std::get<0>(s));
        g.size = static_cast<uint64_t>(std::get<1>(s));
        g.stream = static_cast<uint64_t>(std::get<2>(s));
        g.pool_id = static_cast<uint64_t>(std::get<3>(s));
        g.large = std::get<4>(s);
        g.expandable = std::get<5>(s);
        g.blocks = blocks[i].data();
        g.nblocks = blocks[i].size();
    }
    fsc_native_device_t d;
    std::memset(&d, 0, sizeof d);
    d.device = static_cast<int>(device);
    d.name = name.c_str();
    d.total = static_cast<uint64_t>(total);
    d.free = static_cast<uint64_t>(free_bytes);
    d.capacity = static_cast<uint64_t>(capacity);
    d.config = config.c_str();
    d.segments = segs.data();
    d.nsegments = segs.size();
    fsc_err_t err;
    std::memset(&err, 0, sizeof err);
    check(fsc_native_begin_device(g_native, &d, &err), err, "cannot begin the device's trace");
    if (g_begun)
        g_begun[device].store(1);
    note_trace(static_cast<int>(device));
}

// Declare a device the process has not used yet: its trace begins, empty,
// when its first entry arrives (no CUDA context is made on it here).
void declare_device(int64_t device, const std::string &name, int64_t total, int64_t capacity,
                    const std::string &config)
{
    if (g_native == nullptr)
        throw std::runtime_error("fragscope: the native recorder is not open");
    fsc_native_device_t d;
    std::memset(&d, 0, sizeof d);
    d.device = static_cast<int>(device);
    d.name = name.c_str();
    d.total = static_cast<uint64_t>(total);
    d.capacity = static_cast<uint64_t>(capacity);
    d.config = config.c_str();
    fsc_err_t err;
    std::memset(&err, 0, sizeof err);
    check(fsc_native_declare_device(g_native, &d, &err), err, "cannot declare the device");
}

// Attach the tracker (once per process: PyTorch cannot detach one) and
// start copying entries.
void start()
{
    if (g_native == nullptr)
        throw std::runtime_error("fragscope: the native recorder is not open");
    if (!g_attached) {
        CCA::attachAllocatorTraceTracker(tracker);
        g_attached = true;
    }
    g_on.store(true);
}

// Stop copying entries and close the traces (the tracker stays attached,
// doing nothing). The stacks kept so far are named first.
int64_t stop()
{
    g_on.store(false);
    if (g_native == nullptr)
        return 0;
    release_sites();
    drain_stacks();
    int rc = fsc_native_close(g_native);
    return rc;
}

int64_t flush()
{
    if (g_native == nullptr)
        return 0;
    drain_stacks();
    return fsc_native_flush(g_native);
}

std::string trace_path(int64_t device)
{
    const char *p = g_native != nullptr ? fsc_native_trace_path(g_native, static_cast<int>(device))
                                        : nullptr;
    return p != nullptr ? std::string(p) : std::string();
}

// (entries, events, dropped, contradicted, first message, entries left
// out of the traces in all, {kind: count} of those met, [the first ones
// described], the summary line)
std::tuple<int64_t, int64_t, int64_t, int64_t, std::string, int64_t, std::map<std::string, int64_t>,
           std::vector<std::string>, std::string>
stats()
{
    fsc_native_stats_t s;
    fsc_native_get_stats(g_native, &s);
    std::map<std::string, int64_t> kinds;
    for (uint32_t k = 0; k < FSC_TRACE_SKIP_KINDS; k++)
        if (s.skipped.by_kind[k] != 0)
            kinds[fsc_trace_skip_kind_name(k)] = static_cast<int64_t>(s.skipped.by_kind[k]);
    std::vector<std::string> first;
    char line[512];
    for (uint32_t i = 0; i < s.skipped.nshown; i++)
        first.emplace_back(fsc_trace_skip_describe(&s.skipped.shown[i], line, sizeof line));
    char text[1024];
    fsc_trace_skips_text(&s.skipped, text, sizeof text);
    return {static_cast<int64_t>(s.entries), static_cast<int64_t>(s.events),
            static_cast<int64_t>(s.dropped), static_cast<int64_t>(s.contradicted),
            std::string(s.message), static_cast<int64_t>(s.skipped.total), kinds, first,
            std::string(text)};
}

// The cost of an entry, for bench/gpu: n raw_alloc/raw_delete pairs of
// sizes 512 B .. 64 MiB in a C++ loop, ns per pair.
double bench_pairs(int64_t n)
{
    static const size_t sizes[7] = {512, 4096, 65536, 1u << 20, 3u << 20, 16u << 20, 64u << 20};
    for (int64_t i = 0; i < 1000; i++) {
        void *p = CCA::raw_alloc(sizes[i % 7]);
        CCA::raw_delete(p);
    }
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; i++) {
        void *p = CCA::raw_alloc(sizes[i % 7]);
        CCA::raw_delete(p);
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}

// A tracker that only counts, attached instead of the recorder's, for the
// same benchmark's baseline.
std::atomic<int64_t> g_counted{0};
void attach_counter()
{
    CCA::attachAllocatorTraceTracker(
        [](const CCA::TraceEntry &) { g_counted.fetch_add(1, std::memory_order_relaxed); });
}
int64_t counted()
{
    return g_counted.load();
}

// Tags and markers through the very library the tracker reads them from
// (a second copy loaded under another file name would have tag stacks of
// its own).
void tag_push(const std::string &name)
{
    fsc_tag_push(name.c_str());
}
void tag_pop()
{
    fsc_tag_pop();
}
void mark(const std::string &text)
{
    fsc_mark(text.c_str());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("tag_push", &tag_push);
    m.def("tag_pop", &tag_pop);
    m.def("mark", &mark);
    m.def("open", &open);
    m.def("begin_device", &begin_device);
    m.def("declare_device", &declare_device);
    m.def("start", &start);
    m.def("stop", &stop);
    m.def("flush", &flush);
    m.def("trace_path", &trace_path);
    m.def("stats", &stats);
    m.def("drain_stacks", &drain_stacks);
    m.def("wait_stacks", &wait_stacks, pybind11::call_guard<pybind11::gil_scoped_release>());
    m.def("stack_node", &stack_node);
    m.def("late", &late);
    m.def("set_fraction", &set_fraction);
    m.def("oom_sites", &oom_sites);
    m.def("oom_site", &oom_site);
    m.def("forked", &forked);
    m.def("bench_pairs", &bench_pairs);
    m.def("attach_counter", &attach_counter);
    m.def("counted", &counted);
}
