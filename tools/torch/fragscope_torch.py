"""fragscope_torch: record a PyTorch run's GPU memory with fragscope.

Two ways, both from a training script:

    import fragscope_torch
    fragscope_torch.record("run.fstrace")           # or FRAGSCOPE_RECORD=run.fstrace
    model = ...
    fragscope_torch.watch(model)                    # module names become tags
    fragscope_torch.watch_optimizer(optimizer)      # "step N" markers

record() keeps PyTorch's own caching allocator and records it through its
trace hook (the native recorder: docs/native.md); at an out-of-memory error
it prints fragscope's verdict before PyTorch's traceback and writes an HTML
report beside the trace. It builds a small C++ extension against this torch
on first use (cached), which needs a C++ compiler and the CUDA headers.

install(trace="run.fstrace") instead makes fragscope's own allocator
PyTorch's (a pluggable allocator; libfragscope_torch.so, built where the
CUDA toolkit is found): for programs that want that allocator itself.
`python -m fragscope_torch --check` says what this installation can do;
then `fragscope analyze run.fstrace -o run.db`.
"""
import atexit
import contextlib
import ctypes
import json
import os
import sys
import threading

__all__ = ["record", "stop", "install", "watch", "watch_optimizer", "tag", "mark", "flush",
           "memory_stats", "empty_cache", "library_path", "library_missing"]

_lib = None      # the pluggable allocator's library (install)
_native = None   # the native recorder's extension (record)
_tags = None     # where tags and markers go: _TagLib over the one in use
_stacks = None   # the thread that names the stacks entries carry: (thread, Event)


def library_path():
    """Where libfragscope_torch.so is: $FRAGSCOPE_TORCH_LIB, else beside this file."""
    env = os.environ.get("FRAGSCOPE_TORCH_LIB")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libfragscope_torch.so")


def library_missing(path=None):
    """None when the library is there, else a message saying why recording
    cannot work in this installation."""
    path = path or library_path()
    if os.path.isfile(path):
        try:
            ctypes.CDLL(path)
        except OSError as e:
            return "fragscope_torch: %s cannot be loaded: %s" % (path, e)
        return None
    if os.environ.get("FRAGSCOPE_TORCH_LIB"):
        return "fragscope_torch: FRAGSCOPE_TORCH_LIB=%s: no such file" % path
    return ("fragscope_torch: %s not found: this installation of fragscope was built "
            "without the CUDA toolkit, and recording a PyTorch run needs it. Install the "
            "CUDA toolkit (nvcc) and install fragscope again (pip install ./python), or set "
            "FRAGSCOPE_TORCH_LIB to a libfragscope_torch.so. Analyzing traces and snapshots "
            "(the fragscope command) needs no GPU." % path)


class _TagLib:
    """Tags and markers through whichever recorder runs: the native
    recorder's libfragscope.so (fsc_tag_push) or the shim's library
    (fsc_torch_tag_push)."""

    def __init__(self, push, pop, mark):
        self.push, self.pop, self.mark = push, pop, mark


def _shim_tags(lib):
    return _TagLib(lib.fsc_torch_tag_push, lib.fsc_torch_tag_pop, lib.fsc_torch_mark)


# ---- the native recorder ------------------------------------------------------

def native_paths():
    """(C++ source, include folder, library folder) of the native recorder:
    beside this file in an installed package (fragscope_native.cpp, _native/),
    else $FRAGSCOPE_NATIVE_SRC, $FRAGSCOPE_NATIVE_INCLUDE, $FRAGSCOPE_NATIVE_LIB
    (a source tree: tools/torch/fragscope_native.cpp, include/, build/)."""
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.environ.get("FRAGSCOPE_NATIVE_SRC") or os.path.join(here, "fragscope_native.cpp")
    inc = os.environ.get("FRAGSCOPE_NATIVE_INCLUDE") or os.path.join(here, "_native", "include")
    lib = os.environ.get("FRAGSCOPE_NATIVE_LIB") or os.path.join(here, "_native", "lib")
    return src, inc, lib


def _fragscope_bin():
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.environ.get("FRAGSCOPE_BIN") or os.path.join(here, "_bin", "fragscope")
    if os.path.isfile(exe):
        return exe
    import shutil
    return shutil.which("fragscope")


def _build_native(verbose=False):
    """The tracker extension, built against this torch on first use and
    cached by torch.utils.cpp_extension (TORCH_EXTENSIONS_DIR)."""
    import hashlib
    import torch
    src, inc, lib = native_paths()
    missing = [p for p in (src, os.path.join(inc, "fragscope", "native.h"),
                           os.path.join(lib, "libfragscope.so")) if not os.path.exists(p)]
    if missing:
        raise RuntimeError("fragscope_torch.record: %s not found: this installation of "
                           "fragscope lacks the native recorder's files (install it with "
                           "pip install ./python, or set FRAGSCOPE_NATIVE_SRC, "
                           "FRAGSCOPE_NATIVE_INCLUDE and FRAGSCOPE_NATIVE_LIB)" % ", ".join(missing))
    with open(src, "rb") as f:
        key = hashlib.sha256(f.read() + torch.__version__.encode() +
                             os.path.realpath(lib).encode()).hexdigest()[:12]
    from torch.utils import cpp_extension
    try:
        return cpp_extension.load(
            name="fragscope_native_" + key, sources=[src], extra_include_paths=[inc],
            extra_cflags=["-O2"],
            extra_ldflags=["-L" + lib, "-lfragscope", "-Wl,-rpath," + os.path.realpath(lib)],
            with_cuda=True, verbose=verbose)
    except Exception as e:  # no compiler, no CUDA headers, a torch without its headers
        raise RuntimeError(
            "fragscope_torch.record: cannot build the native recorder's extension against "
            "torch %s (it needs a C++ compiler, torch's C++ headers and the CUDA toolkit's "
            "headers, as any torch C++ extension does): %s" % (torch.__version__,
                                                              str(e).strip()[-2000:])) from None


def _alloc_conf():
    # As PyTorch reads them (c10/core/AllocatorConfig.cpp): only the first
    # variable that is set counts, even when empty; nothing is merged.
    for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        v = os.environ.get(k)
        if v is not None:
            return v
    return ""


def _segments_of(snapshot, device, stack_node=None):
    """The allocator's segments of one device, as the extension takes them
    (a block's frames, kept when history was on, as its tag node)."""
    out = []
    nodes = {}

    def tag_of(b):
        frames = b.get("frames")
        if not frames or stack_node is None:
            return 0
        key = tuple((f.get("filename", ""), int(f.get("line", 0)), f.get("name", ""))
                    for f in frames)
        if key not in nodes:
            nodes[key] = stack_node(list(key))
        return nodes[key]

    for s in snapshot:
        if s.get("device", 0) != device:
            continue
        pid = s.get("segment_pool_id") or (0, 0)
        blocks = [(b["size"], b.get("requested_size", b["size"]),
                   b.get("state") == "active_allocated",
                   b.get("state") in ("active_allocated", "active_pending_free"),
                   tag_of(b))
                  for b in s.get("blocks", [])]
        out.append((s["address"], s["total_size"], s.get("stream", 0),
                    (int(pid[0]) << 32) | (int(pid[1]) & 0xffffffff),
                    s.get("segment_type") == "large", bool(s.get("is_expandable")), blocks))
    return out


def record(trace=None, ring=None, verdict=True, verbose=False):
    """Record PyTorch's own CUDA caching allocator into fragscope traces.

    trace:   path of the trace (else $FRAGSCOPE_RECORD): one per device, the
             first device's at this path, another device D's with ".devD"
             before ".fstrace"; "%r" and "%p" become the rank and the pid
    ring:    keep only the last N events of each device
    verdict: at an out-of-memory error, flush the trace and print fragscope's
             verdict (cause, bytes, call site, settings that would have
             served the request) before PyTorch's traceback, and write an
             HTML report beside the trace (the analysis runs in a fragscope
             subprocess)
    Call it any time: when CUDA work has begun, the state the allocator is
    in comes first (docs/native.md). Returns the trace path of the current
    device."""
    global _native, _tags
    if _native is not None:
        return _native.trace_path(_current_device())
    trace = trace or os.environ.get("FRAGSCOPE_RECORD")
    if not trace:
        raise ValueError("fragscope_torch.record: no trace path (give one, or set "
                         "FRAGSCOPE_RECORD)")
    import torch
    ext = _build_native(verbose)
    ndev = max(1, torch.cuda.device_count())
    ext.open(str(trace), int(ring or 0), ndev, "fragscope native (torch %s)" % torch.__version__)
    conf = _alloc_conf()
    snap = None
    for d in range(ndev):
        # a device the process has not used yet begins empty, and is not
        # touched here (no CUDA context is made on it)
        used = torch.cuda.is_initialized() and torch.cuda.memory_reserved(d) > 0
        if not used and d != _current_device():
            continue
        if used and snap is None:
            snap = torch.cuda.memory_snapshot()
        free, total = torch.cuda.mem_get_info(d)
        frac = 1.0
        get_frac = getattr(torch.cuda, "get_per_process_memory_fraction", None)
        if get_frac is not None:
            try:
                frac = float(get_frac(d))
            except Exception:
                frac = 1.0
        cap = int(frac * total) if frac < 1.0 else 0
        ext.begin_device(d, torch.cuda.get_device_name(d), int(total), int(free), cap, conf,
                         _segments_of(snap or [], d, ext.stack_node))
    ext.start()
    _native = ext
    _start_stacks(ext)
    _tags = _TagLib(lambda b: ext.tag_push(b.decode()), ext.tag_pop,
                    lambda b: ext.mark(b.decode()))
    if verdict:
        torch._C._cuda_attach_out_of_memory_observer(_on_oom)
    atexit.register(stop)
    return ext.trace_path(_current_device())


def _current_device():
    import torch
    return torch.cuda.current_device() if torch.cuda.is_available() else 0


def _start_stacks(ext):
    """With _record_memory_history(stacks=...) on, entries carry stacks that
    only a thread holding the GIL can name: this thread names them every
    50 ms when there are some (the GIL is not taken while there are none)."""
    global _stacks
    done = threading.Event()

    def run():
        while not done.is_set():
            try:
                if ext.wait_stacks(50) > 0 and not done.is_set():
                    ext.drain_stacks()
            except Exception as e:  # noqa: BLE001 - a daemon thread must not die loudly
                sys.stderr.write("fragscope: stacks will not be named: %s\n" % e)
                return

    t = threading.Thread(target=run, name="fragscope-stacks", daemon=True)
    t.start()
    _stacks = (t, done)


def stop():
    """Stop recording and close the traces (also done at exit)."""
    global _native, _stacks
    if _stacks is not None:
        _stacks[1].set()
        _stacks[0].join(timeout=5)
        _stacks = None
    if _native is not None:
        _native.stop()
        _native = None


def _on_oom(device, alloc, allowed, device_free):
    """PyTorch's OOM observer: runs inside the failing allocation, before its
    error is raised. Never raises: PyTorch's own error must come through."""
    try:
        _verdict(device, allowed)
    except BaseException as e:  # noqa: BLE001 - nothing may hide PyTorch's error
        try:
            sys.stderr.write("fragscope: no verdict: %s\n" % e)
        except Exception:
            pass


def _verdict(device, allowed):
    import subprocess
    if _native is None:
        return
    _native.flush()
    trace = _native.trace_path(int(device))
    exe = _fragscope_bin()
    if not trace or not exe:
        sys.stderr.write("fragscope: out of memory recorded in %s (no fragscope command to "
                         "analyze it here)\n" % (trace or "the trace"))
        return
    stem = trace[:-len(".fstrace")] if trace.endswith(".fstrace") else trace
    db, html = stem + ".oom.db", stem + ".report.html"
    timeout = float(os.environ.get("FRAGSCOPE_VERDICT_TIMEOUT", "120"))
    env = dict(os.environ, FRAGSCOPE_NO_PROGRESS="1")
    run = lambda args: subprocess.run([exe] + args, capture_output=True, text=True,  # noqa: E731
                                      timeout=timeout, env=env)
    a = run(["analyze", trace, "-o", db, "--capacity", str(int(allowed))])
    if a.returncode != 0:
        sys.stderr.write("fragscope: out of memory recorded in %s; the analysis failed: %s\n"
                         % (trace, (a.stderr or a.stdout).strip()[-500:]))
        return
    v = run(["report", db, "--format", "verdict"])
    sys.stderr.write(v.stdout)
    h = run(["view", db, "-o", html])
    if h.returncode == 0:
        sys.stderr.write("fragscope:   report: %s (trace %s)\n" % (html, trace))
    sys.stderr.flush()


def install(trace=None, config=None, capacity=None, ring=None, library=None):
    """Make fragscope's allocator PyTorch's CUDA allocator.

    trace:    path of the .fstrace to write (else $FRAGSCOPE_TRACE; None = no recording)
    config:   allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax
    capacity: bytes (int) or a size string ("12GiB") the process may reserve
    ring:     keep only the last N events, written on OOM and at exit
    Must run before the first CUDA allocation of the process.

    Limit: PyTorch passes a pluggable allocator no pool, so allocations into
    a torch.cuda.MemPool or during CUDA-graph capture (torch.compile's
    reduce-overhead mode, make_graphed_callables) land in fragscope's default
    pool here, not in private pools as PyTorch's own allocator keeps them.
    To record such a program as PyTorch runs it, use record() instead (the
    native recorder, docs/native.md), which watches PyTorch's own allocator.
    """
    global _lib
    if _lib is not None:
        return
    if trace is not None:
        os.environ["FRAGSCOPE_TRACE"] = str(trace)
    if ring is not None:
        os.environ["FRAGSCOPE_TRACE_MODE"] = "ring:%d" % int(ring)
    if config is not None:
        os.environ["FRAGSCOPE_ALLOC_CONF"] = config
    if capacity is not None:
        os.environ["FRAGSCOPE_CAPACITY"] = str(capacity)
    path = library or library_path()
    missing = library_missing(path)
    if missing:
        raise RuntimeError(missing)
    import torch
    alloc = torch.cuda.memory.CUDAPluggableAllocator(path, "fsc_torch_malloc", "fsc_torch_free")
    torch.cuda.memory.change_current_allocator(alloc)
    lib = ctypes.CDLL(path)  # the same handle PyTorch opened: one allocator state
    lib.fsc_torch_tag_push.argtypes = [ctypes.c_char_p]
    lib.fsc_torch_mark.argtypes = [ctypes.c_char_p]
    lib.fsc_torch_stats_json.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.fsc_torch_empty_cache.argtypes = [ctypes.c_int]
    global _tags
    _lib = lib
    _tags = _shim_tags(lib)
    atexit.register(flush)


def _need():
    if _lib is None:
        raise RuntimeError("fragscope_torch.install() was not called")
    return _lib


def _need_tags():
    if _tags is None:
        raise RuntimeError("fragscope_torch.record() or install() was not called")
    return _tags


def _compiling():
    """True while torch.compile traces: tags are pushed in eager code only,
    so that compiling a model gives the same graphs with fragscope as
    without (a compiled region's allocations are named by their compile
    context instead)."""
    try:
        import torch
        return bool(torch.compiler.is_compiling())
    except (AttributeError, ImportError):
        return False


def mark(text):
    """Write a marker (e.g. "step 12") into the trace."""
    _need_tags().mark(str(text).encode())


@contextlib.contextmanager
def tag(name):
    """Events inside the block carry `name` on the calling thread's tag stack."""
    t = _need_tags()
    t.push(str(name).encode())
    try:
        yield
    finally:
        t.pop()


def watch(model, prefix="", backward=False):
    """Push each submodule's name as a tag during its forward (and backward).

    A module's tag is its name relative to the module that called it, so a
    tag path reads "GPT2LMHeadModel/transformer/h.3/attn/c_attn". Backward
    runs on autograd's own thread, which has its own tag stack; with
    backward=True the backward hooks push "backward/<name>" there.
    By default only forward allocations are tagged: full backward hooks add
    autograd nodes around every module, which cost about 3% of a GPT-2 small
    training step on an H200 (forward hooks: 0.2%; docs/BENCHMARKS.md).
    The hooks are one function shared by every module, which does nothing
    while torch.compile traces: compiled models keep their graphs (no
    recompilation per module, no graph break).
    """
    t = _need_tags()
    names = threading.local()
    full_name = {}
    handles = []

    def push(full, backward=False):
        stack = getattr(names, "stack", None)
        if stack is None:
            stack = names.stack = []
        parent = stack[-1] if stack else None
        short = full
        if parent and full.startswith(parent + "."):
            short = full[len(parent) + 1:]
        elif backward and not stack:
            short = "backward/" + full
        stack.append(full)
        t.push(short.encode())

    def pop():
        stack = getattr(names, "stack", None)
        if stack:
            stack.pop()
        t.pop()

    def pre(mod, _inp):
        if _compiling():
            return
        push(full_name[id(mod)])

    def post(mod, _inp, _out):
        if _compiling():
            return
        pop()

    def bpre(mod, _gout):
        if _compiling():
            return
        push(full_name[id(mod)], backward=True)

    def bpost(mod, _gin, _gout):
        if _compiling():
            return
        pop()

    for name, mod in model.named_modules():
        full_name[id(mod)] = (prefix + name) if name else (prefix or type(mod).__name__)
        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
        if backward:
            handles.append(mod.register_full_backward_pre_hook(bpre))
            handles.append(mod.register_full_backward_hook(bpost))
    return handles


def watch_optimizer(optimizer):
    """Tag the optimizer's allocations ("optimizer.step": its state is created
    there) and mark "step N" after every optimizer.step()."""
    t = _need_tags()
    count = [0]

    def pre(_opt, _args, _kwargs):
        t.push(b"optimizer.step")

    def post(_opt, _args, _kwargs):
        t.pop()
        count[0] += 1
        t.mark(("step %d" % count[0]).encode())

    return [optimizer.register_step_pre_hook(pre), optimizer.register_step_post_hook(post)]


def flush():
    """Write every recorded event to disk now."""
    if _native is not None:
        _native.flush()
    if _lib is not None:
        _lib.fsc_torch_flush()


def empty_cache(device=None):
    """Release cached unused memory (the counterpart of torch.cuda.empty_cache())."""
    import torch
    dev = torch.cuda.current_device() if device is None else int(device)
    _need().fsc_torch_empty_cache(dev)


def memory_stats(device=None):
    """fragscope's statistics under torch.cuda.memory_stats() keys."""
    import torch
    dev = torch.cuda.current_device() if device is None else int(device)
    buf = ctypes.create_string_buffer(1 << 16)
    n = _need().fsc_torch_stats_json(dev, buf, len(buf))
    if n < 0:
        raise RuntimeError("fragscope: no allocator on device %d" % dev)
    return dict(sorted(json.loads(buf.value.decode()).items()))


def _main(argv=None):
    """python -m fragscope_torch [--help | --check]"""
    argv = sys.argv[1:] if argv is None else argv
    missing = library_missing()
    if argv in ([], ["--help"], ["-h"]):
        print("usage: python -m fragscope_torch [--help | --check]\n")
        print(__doc__.strip())
        print("\nlibrary: " + (missing or library_path()))
        return 0
    if argv == ["--check"]:
        if missing:
            print(missing, file=sys.stderr)
            return 1
        print("fragscope_torch: recording available (%s)" % library_path())
        return 0
    print("usage: python -m fragscope_torch [--help | --check]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main())
elif os.environ.get("FRAGSCOPE_RECORD") and not os.environ.get("FRAGSCOPE_NO_AUTORECORD"):
    record()
