"""fragscope_torch: run PyTorch on fragscope's caching allocator and record it.

Add to a training script, before anything touches CUDA:

    import fragscope_torch
    fragscope_torch.install(trace="run.fstrace")    # or set FRAGSCOPE_TRACE
    model = ...
    fragscope_torch.watch(model)                    # module names become tags
    fragscope_torch.watch_optimizer(optimizer)      # "step N" markers

then `fragscope analyze run.fstrace -o run.db`. Only torch is needed, and
libfragscope_torch.so, which is built only where the CUDA toolkit is found:
`python -m fragscope_torch --check` says whether this installation has it.
fragscope_torch.memory_stats() returns the allocator's statistics under the
keys of torch.cuda.memory_stats(), which PyTorch cannot give for a pluggable
allocator.
"""
import atexit
import contextlib
import ctypes
import json
import os
import sys
import threading

__all__ = ["install", "watch", "watch_optimizer", "tag", "mark", "flush",
           "memory_stats", "empty_cache", "library_path", "library_missing"]

_lib = None


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


def install(trace=None, config=None, capacity=None, ring=None, library=None):
    """Make fragscope's allocator PyTorch's CUDA allocator.

    trace:    path of the .fstrace to write (else $FRAGSCOPE_TRACE; None = no recording)
    config:   allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax
    capacity: bytes (int) or a size string ("12GiB") the process may reserve
    ring:     keep only the last N events, written on OOM and at exit
    Must run before the first CUDA allocation of the process.
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
    _lib = lib
    atexit.register(flush)


def _need():
    if _lib is None:
        raise RuntimeError("fragscope_torch.install() was not called")
    return _lib


def mark(text):
    """Write a marker (e.g. "step 12") into the trace."""
    _need().fsc_torch_mark(str(text).encode())


@contextlib.contextmanager
def tag(name):
    """Events inside the block carry `name` on the calling thread's tag stack."""
    lib = _need()
    lib.fsc_torch_tag_push(str(name).encode())
    try:
        yield
    finally:
        lib.fsc_torch_tag_pop()


def watch(model, prefix="", backward=False):
    """Push each submodule's name as a tag during its forward (and backward).

    A module's tag is its name relative to the module that called it, so a
    tag path reads "GPT2LMHeadModel/transformer/h.3/attn/c_attn". Backward
    runs on autograd's own thread, which has its own tag stack; with
    backward=True the backward hooks push "backward/<name>" there.
    By default only forward allocations are tagged: full backward hooks add
    autograd nodes around every module, which cost about 3% of a GPT-2 small
    training step on an H200 (forward hooks: 0.2%; docs/BENCHMARKS.md).
    """
    lib = _need()
    names = threading.local()
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
        lib.fsc_torch_tag_push(short.encode())

    def pop():
        stack = getattr(names, "stack", None)
        if stack:
            stack.pop()
        lib.fsc_torch_tag_pop()

    for name, mod in model.named_modules():
        full = (prefix + name) if name else (prefix or type(mod).__name__)

        def pre(_m, _inp, full=full):
            push(full)

        def post(_m, _inp, _out):
            pop()

        def bpre(_m, _gout, full=full):
            push(full, backward=True)

        def bpost(_m, _gin, _gout):
            pop()

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
        if backward:
            handles.append(mod.register_full_backward_pre_hook(bpre))
            handles.append(mod.register_full_backward_hook(bpost))
    return handles


def watch_optimizer(optimizer):
    """Tag the optimizer's allocations ("optimizer.step": its state is created
    there) and mark "step N" after every optimizer.step()."""
    lib = _need()
    count = [0]

    def pre(_opt, _args, _kwargs):
        lib.fsc_torch_tag_push(b"optimizer.step")

    def post(_opt, _args, _kwargs):
        lib.fsc_torch_tag_pop()
        count[0] += 1
        lib.fsc_torch_mark(("step %d" % count[0]).encode())

    return [optimizer.register_step_pre_hook(pre), optimizer.register_step_post_hook(post)]


def flush():
    """Write every recorded event to disk now."""
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
