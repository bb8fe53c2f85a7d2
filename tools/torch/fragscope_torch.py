"""fragscope_torch: record a PyTorch run's GPU memory with fragscope.

With no change to the program:

    fragscope record -o run.fstrace -- python train.py ARGS
    python -m fragscope_torch record -o run.fstrace -- python train.py ARGS

or from the training script:

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
    (a source tree: tools/torch/fragscope_native.cpp, include/, build/).
    The include setting may name several folders, os.pathsep between them
    (a source tree's include/ and its build's include/ for version.h)."""
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
    incs = [i for i in inc.split(os.pathsep) if i]
    header = [os.path.join(i, "fragscope", "native.h") for i in incs]
    missing = [p for p in (src, os.path.join(lib, "libfragscope.so")) if not os.path.exists(p)]
    if not any(os.path.exists(h) for h in header):
        missing.append(header[0] if header else "fragscope/native.h")
    if missing:
        raise RuntimeError("fragscope_torch.record: %s not found: this installation of "
                           "fragscope lacks the native recorder's files (install it with "
                           "pip install ./python, or set FRAGSCOPE_NATIVE_SRC, "
                           "FRAGSCOPE_NATIVE_INCLUDE and FRAGSCOPE_NATIVE_LIB)" % ", ".join(missing))
    with open(src, "rb") as f:
        key = hashlib.sha256(f.read() + torch.__version__.encode() +
                             os.path.realpath(lib).encode()).hexdigest()[:12]
    from torch.utils import cpp_extension
    # The extension has no CUDA kernels, but without an architecture list
    # cpp_extension asks every device for its compute capability, which
    # initializes CUDA: recording must not do that before the program does.
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if arch is None:
        os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"
    try:
        return cpp_extension.load(
            name="fragscope_native_" + key, sources=[src], extra_include_paths=incs,
            extra_cflags=["-O2"],
            extra_ldflags=["-L" + lib, "-lfragscope", "-Wl,-rpath," + os.path.realpath(lib)],
            with_cuda=True, verbose=verbose)
    except Exception as e:  # no compiler, no CUDA headers, a torch without its headers
        raise RuntimeError(
            "fragscope_torch.record: cannot build the native recorder's extension against "
            "torch %s (it needs a C++ compiler, torch's C++ headers and the CUDA toolkit's "
            "headers, as any torch C++ extension does): %s" % (torch.__version__,
                                                              str(e).strip()[-2000:])) from None
    finally:
        if arch is None:
            os.environ.pop("TORCH_CUDA_ARCH_LIST", None)


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
             before ".fstrace"; "%r" and "%p" become the rank and the pid;
             in a distributed job (torchrun, mpirun, srun), a path without
             "%r" gets ".rankN" before ".fstrace"
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
    trace = _rank_path(str(trace))
    import torch
    ext = _build_native(verbose)
    # device_count() asks NVML first: it makes no CUDA context
    ndev = max(1, torch.cuda.device_count())
    ext.open(str(trace), int(ring or 0), ndev, "fragscope native (torch %s)" % torch.__version__)
    conf = _alloc_conf()
    # A device not begun here begins at its first allocator entry (the
    # tracker reads its facts then), so that recording never initializes
    # CUDA, nor makes a context on a device the program does not use.
    ext.late(conf)
    _watch_fraction(torch, ext)
    snap = None
    for d in range(ndev if torch.cuda.is_initialized() else 0):
        frac = 1.0
        get_frac = getattr(torch.cuda, "get_per_process_memory_fraction", None)
        if get_frac is not None:
            try:
                frac = float(get_frac(d))
            except Exception:
                frac = 1.0
        if frac < 1.0:
            ext.set_fraction(d, frac)
        if torch.cuda.memory_reserved(d) == 0:
            continue  # begins empty at its first entry
        if snap is None:
            snap = torch.cuda.memory_snapshot()
        free, total = torch.cuda.mem_get_info(d)
        cap = int(frac * total) if frac < 1.0 else 0
        ext.begin_device(d, torch.cuda.get_device_name(d), int(total), int(free), cap, conf,
                         _segments_of(snap or [], d, ext.stack_node))
    ext.oom_sites(True)
    _native = ext
    _start_stacks(ext)
    _tags = _TagLib(lambda b: ext.tag_push(b.decode()), ext.tag_pop,
                    lambda b: ext.mark(b.decode()))
    global _verdict_on
    _verdict_on = bool(verdict)

    def attach():
        ext.start()
        torch._C._cuda_attach_out_of_memory_observer(_on_oom)

    # PyTorch's allocator has no devices before CUDA's lazy init: a tracker
    # or an OOM observer attached earlier reaches none of them. _lazy_call
    # runs attach() at once when CUDA is initialized, else right after the
    # lazy init (before the first allocation), so that recording never
    # initializes CUDA itself.
    lazy = getattr(torch.cuda, "_lazy_call", None)
    if torch.cuda.is_initialized() or lazy is None:
        attach()
    else:
        lazy(attach)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)
    atexit.register(stop)
    return _native.trace_path(_current_device()) if torch.cuda.is_initialized() else str(trace)


_verdict_on = True


def _rank_path(trace):
    """The trace's path in a distributed job: "%r" becomes the rank, and a
    path that does not say where the rank goes gets ".rankN" before
    ".fstrace" when there are several ranks (the ranks would otherwise all
    ask for one file). The rank and the job's size come from the
    launcher's environment: torchrun's RANK and WORLD_SIZE, Open MPI's,
    MPICH's (PMI_*) or Slurm's."""
    def first(*names):
        for n in names:
            v = os.environ.get(n, "")
            if v.isdigit():
                return int(v)
        return None
    rank = first("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
    size = first("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
    if rank is None:
        return trace
    if "%r" in trace:
        return trace.replace("%r", str(rank))
    if size is None or size < 2:
        return trace
    if trace.endswith(".fstrace"):
        return trace[:-len(".fstrace")] + ".rank%d.fstrace" % rank
    return trace + ".rank%d" % rank


def _forked():
    """A child made by fork() shares none of the recorder's threads: it
    records nothing (the parent's traces stay the parent's)."""
    global _native, _stacks
    if _native is not None:
        _native.forked()
    _native = None
    _stacks = None


def _watch_fraction(torch, ext):
    """The per-process memory fraction is the trace's capacity; a device
    that begins late reads it from here, as the program sets it."""
    orig = getattr(torch.cuda, "set_per_process_memory_fraction", None)
    if orig is None or getattr(orig, "_fragscope", False):
        return

    def set_per_process_memory_fraction(fraction, device=None):
        orig(fraction, device)
        try:
            d = device if isinstance(device, int) else (
                torch.device(device).index if device is not None else None)
            ext.set_fraction(int(torch.cuda.current_device() if d is None else d),
                             float(fraction))
        except Exception:  # noqa: BLE001 - the program's call has succeeded
            pass

    set_per_process_memory_fraction._fragscope = True
    set_per_process_memory_fraction.__doc__ = orig.__doc__
    set_per_process_memory_fraction.__wrapped__ = orig
    torch.cuda.set_per_process_memory_fraction = set_per_process_memory_fraction
    mem = getattr(torch.cuda, "memory", None)
    if mem is not None and getattr(mem, "set_per_process_memory_fraction", None) is orig:
        mem.set_per_process_memory_fraction = set_per_process_memory_fraction


# ---- `fragscope record -- python train.py`: recording an unchanged program --------

class _AfterTorch:
    """torch's own loader, and fragscope's recorder attached once torch has
    finished importing."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # whatever asks torch's spec or loader later gets torch's own
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _autorecord_attach()


class _TorchFinder:
    """A meta path finder that only finds torch, through the finders after
    it, and hands back its spec with _AfterTorch as the loader."""

    def __init__(self):
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self.busy:
            return None
        import importlib.util
        self.busy = True
        try:
            spec = importlib.util.find_spec("torch")
        finally:
            self.busy = False
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _AfterTorch(spec.loader)
        return spec

    def invalidate_caches(self):
        pass


def _autorecord():
    """Set up recording for `fragscope record` (its bootstrap calls this at
    interpreter start, FRAGSCOPE_AUTORECORD naming the trace): the recorder
    attaches when the program's `import torch` has finished, and touches
    nothing of CUDA before the program does (devices begin at their first
    allocator entry). Returns True when set up."""
    if not os.environ.get("FRAGSCOPE_AUTORECORD"):
        return False
    if "torch" in sys.modules:
        _autorecord_attach()
    elif not any(isinstance(f, _TorchFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchFinder())
    return True


def _autorecord_attach():
    """Attach the recorder for `fragscope record`; when it cannot record,
    one line says why and the program stops with status 2 (recording was
    asked for: a run that silently records nothing would be worse)."""
    if _native is not None:
        return
    trace = os.environ.get("FRAGSCOPE_AUTORECORD")
    ring = os.environ.get("FRAGSCOPE_AUTORECORD_RING") or "0"
    import torch
    why = None
    if getattr(getattr(torch, "version", None), "cuda", None) is None:
        why = ("torch %s was built without CUDA: there is no GPU allocator to record"
               % getattr(torch, "__version__", "?"))
    else:
        try:
            record(trace, ring=int(ring) or None)
        except Exception as e:  # noqa: BLE001 - said in one line, then exit 2
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if why is not None:
        sys.stderr.write("fragscope record: cannot record this program: %s\n" % why)
        sys.stderr.flush()
        manifest = os.environ.get("FRAGSCOPE_RECORD_MANIFEST")
        if manifest:  # the command's summary then says no more
            try:
                with open(manifest, "a") as f:
                    f.write("!%s\n" % why)
            except OSError:
                pass
        raise SystemExit(2)


def _cap_of(torch, device, total):
    """The cap the process runs under on device: its per-process memory
    fraction x total when one below 1 is set, else 0 (none)."""
    frac = 1.0
    get_frac = getattr(torch.cuda, "get_per_process_memory_fraction", None)
    if get_frac is not None:
        try:
            frac = float(get_frac(device))
        except Exception:
            frac = 1.0
    return int(frac * total) if frac < 1.0 else 0


def _skipped_note(ext):
    """A line on the recorded entries the recorder left out of the traces
    (by kind, and the first one), or None when it kept them all."""
    try:
        st = ext.stats()
        if len(st) < 9 or not st[5]:
            return None
        first = "; the first: %s" % st[7][0] if st[7] else ""
        return "fragscope: warning: %s%s\n" % (st[8], first)
    except Exception:  # noqa: BLE001 - a note must never hide what comes after it
        return None


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
        note = _skipped_note(_native)
        if note:
            sys.stderr.write(note)
        _native = None


def _on_oom(device, alloc, allowed, device_free):
    """PyTorch's OOM observer: runs inside the failing allocation, on the
    failing thread with the GIL, before its error is raised. Names the
    request's call site first (the trace's oom event carries it), then the
    verdict. Never raises: PyTorch's own error must come through."""
    try:
        frames = []
        try:
            frames = _oom_frames(sys._getframe())
        finally:
            if _native is not None:
                _native.oom_site(int(device), frames)
        if _verdict_on:
            _verdict(device, allowed)
    except BaseException as e:  # noqa: BLE001 - nothing may hide PyTorch's error
        try:
            sys.stderr.write("fragscope: no verdict: %s\n" % e)
        except Exception:
            pass


def _oom_frames(frame, limit=256):
    """The Python stack that asked for the memory, innermost first, as
    (file, line, function), fragscope's own frames left out. A request made
    on a thread with no Python frames (autograd's backward thread) gets the
    main thread's stack, under the plain name "backward thread", which says
    where the program waited for it."""
    here = os.path.abspath(__file__)
    out = []
    f = frame
    while f is not None and len(out) < limit:
        if os.path.abspath(f.f_code.co_filename) != here:
            out.append((f.f_code.co_filename, int(f.f_lineno or 0), f.f_code.co_name))
        f = f.f_back
    if out or threading.current_thread() is threading.main_thread():
        return out
    main = sys._current_frames().get(threading.main_thread().ident)
    f = main
    while f is not None and len(out) < limit:
        if os.path.abspath(f.f_code.co_filename) != here:
            out.append((f.f_code.co_filename, int(f.f_lineno or 0), f.f_code.co_name))
        f = f.f_back
    if out:
        out.insert(0, ("", 0, "backward thread"))
    return out


# ---- the whole process at an OOM: NVML's figures per process --------------------

class _NvmlProcess(ctypes.Structure):
    # nvmlProcessInfo_v2_t; the _v3 call writes this or a longer struct (one
    # more 8-byte field) depending on the driver, so entries are read at
    # either stride (_nvml_processes)
    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong),
                ("gpu_instance", ctypes.c_uint), ("compute_instance", ctypes.c_uint)]


def _nvml_processes(device):
    """The processes holding memory on a CUDA device, as NVML counts them:
    [(pid, bytes or None)], or a sentence saying why they are not known.
    libnvidia-ml.so.1 (or $FRAGSCOPE_NVML_LIB) is opened at run time."""
    path = os.environ.get("FRAGSCOPE_NVML_LIB") or "libnvidia-ml.so.1"
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        return "NVML (%s) cannot be loaded: %s" % (path, e)
    init = getattr(lib, "nvmlInit_v2", None) or getattr(lib, "nvmlInit", None)
    if init is None or init() != 0:
        return "NVML did not initialize"
    try:
        import torch
        uuid = str(getattr(torch.cuda.get_device_properties(device), "uuid", "") or "")
        if not uuid:
            return "this torch does not give the device's UUID, which NVML needs"
        handle = ctypes.c_void_p()
        get = lib.nvmlDeviceGetHandleByUUID
        if get(("GPU-" + uuid).encode(), ctypes.byref(handle)) != 0 and \
                get(uuid.encode(), ctypes.byref(handle)) != 0:
            return "NVML does not know device %s (UUID %s)" % (device, uuid)
        fn = getattr(lib, "nvmlDeviceGetComputeRunningProcesses_v3", None) or \
            getattr(lib, "nvmlDeviceGetComputeRunningProcesses_v2", None)
        if fn is None:
            return "this NVML cannot list the processes on a device"
        count = ctypes.c_uint(0)
        rc = fn(handle, ctypes.byref(count), None)
        if rc == 0:
            return []
        n = count.value * 2 + 8
        buf = ctypes.create_string_buffer(32 * n)  # room for either stride
        count = ctypes.c_uint(n)
        rc = fn(handle, ctypes.byref(count), buf)
        if rc != 0:
            return "NVML could not list the processes on device %s (error %d)" % (device, rc)
        k = count.value
        # the longer struct read at the shorter stride puts its extra field
        # (0 without confidential computing) where the next pid is
        for stride in (24, 32):
            got = [_NvmlProcess.from_buffer_copy(buf.raw[i * stride:i * stride + 24])
                   for i in range(k)]
            if all(p.pid != 0 for p in got):
                break
        return [(p.pid, None if p.used == (1 << 64) - 1 else int(p.used)) for p in got]
    finally:
        shutdown = getattr(lib, "nvmlShutdown", None)
        if shutdown is not None:
            shutdown()


def _process_memory_line(device):
    """One sentence on the device's memory by process at this moment, and
    the same as a marker text: this process's bytes (NVML), the allocator's
    reserved bytes and the rest of this process's (CUDA context, library
    workspaces, NCCL buffers), the other processes'. Says what is unknown."""
    import torch
    gib = lambda b: "%.2f GiB" % (b / float(1 << 30))  # noqa: E731
    procs = _nvml_processes(device)
    if isinstance(procs, str):
        return "device memory by process: not known (%s)" % procs
    reserved = int(torch.cuda.memory_reserved(device))
    mine = [b for pid, b in procs if pid == os.getpid()]
    others = [(pid, b) for pid, b in procs if pid != os.getpid()]
    known = sum(b for _, b in others if b is not None)
    other_txt = "%d other process%s %s%s" % (
        len(others), "" if len(others) == 1 else "es", gib(known),
        "" if all(b is not None for _, b in others) else " (some sizes not given)")
    if not mine or mine[0] is None:
        return ("device memory by process (NVML): %d process%s hold %s; this process (pid %d) "
                "is not among them (a container's own pid namespace?), so its memory outside "
                "the allocator is not known; the allocator reserved %s" % (
                    len(procs), "" if len(procs) == 1 else "es",
                    gib(sum(b for _, b in procs if b is not None)), os.getpid(), gib(reserved)))
    return ("device memory by process (NVML): this process %s, of which the allocator "
            "reserved %s and %s is outside it (CUDA context, library workspaces, NCCL "
            "buffers); %s" % (gib(mine[0]), gib(reserved), gib(max(0, mine[0] - reserved)),
                              other_txt))


def _verdict(device, allowed):
    import subprocess
    if _native is None:
        return
    _native.flush()
    trace = _native.trace_path(int(device))
    exe = _fragscope_bin()
    note = _skipped_note(_native)
    if note and (not trace or not exe):
        sys.stderr.write(note)
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
        sys.stderr.write(note or "")
        sys.stderr.write("fragscope: out of memory recorded in %s; the analysis failed: %s\n"
                         % (trace, (a.stderr or a.stdout).strip()[-500:]))
        return
    v = run(["report", db, "--format", "verdict"])
    if note and "left out of the trace" not in v.stdout:
        sys.stderr.write(note)  # another device's entries, or the verdict failed
    sys.stderr.write(v.stdout)
    try:
        line = _process_memory_line(int(device))
    except Exception as e:  # noqa: BLE001 - the verdict stands without it
        line = "device memory by process: not known (%s)" % e
    sys.stderr.write("fragscope:   %s\n" % line)
    try:
        _native.mark("oom: " + line)  # the trace keeps it too, after the oom event
        _native.flush()
    except Exception:  # noqa: BLE001
        pass
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
    """python -m fragscope_torch [--help | --check | record ARGS...]"""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["record"]:
        # the fragscope command's record, from the package
        exe = _fragscope_bin()
        if not exe:
            print("fragscope_torch: the fragscope command is missing from this installation "
                  "(reinstall it: pip install ./python)", file=sys.stderr)
            return 2
        os.execv(exe, [exe] + argv)
    missing = library_missing()
    if argv in ([], ["--help"], ["-h"]):
        print("usage: python -m fragscope_torch [--help | --check | record -o TRACE -- COMMAND]\n")
        print(__doc__.strip())
        print("\nlibrary: " + (missing or library_path()))
        return 0
    if argv == ["--check"]:
        if missing:
            print(missing, file=sys.stderr)
            return 1
        print("fragscope_torch: recording available (%s)" % library_path())
        return 0
    print("usage: python -m fragscope_torch [--help | --check | record -o TRACE -- COMMAND]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main())
elif os.environ.get("FRAGSCOPE_RECORD") and not os.environ.get("FRAGSCOPE_NO_AUTORECORD"):
    record()
