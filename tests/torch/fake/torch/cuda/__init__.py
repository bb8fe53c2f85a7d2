"""torch.cuda: what fragscope_torch calls; "CUDA" marks a call that
initializes CUDA in the real torch."""
import torch

from torch.cuda import memory  # noqa: F401

_initialized = False
_queued = []


def _init(what):
    """CUDA's lazy init: the first call that needs CUDA runs the calls
    _lazy_call queued, once, as torch.cuda._lazy_init does."""
    global _initialized
    torch._log("CUDA " + what)
    if not _initialized:
        _initialized = True
        while _queued:
            _queued.pop(0)()


def _lazy_call(fn):
    if _initialized:
        fn()
    else:
        _queued.append(fn)


def device_count():
    torch._log("cuda.device_count")  # NVML first in the real torch: no CUDA
    return 1


def is_initialized():
    return _initialized


def is_available():
    _init("is_available")
    return True


def current_device():
    _init("current_device")
    return 0


def mem_get_info(device=None):
    _init("mem_get_info")
    return (70 << 30, 80 << 30)


def memory_reserved(device=None):
    _init("memory_reserved")
    import os
    return int(os.environ.get("FAKE_TORCH_RESERVED", "0"))


class _Props:
    uuid = "fake-uuid"


def get_device_properties(device=None):
    _init("get_device_properties")
    return _Props()


def get_device_name(device=None):
    _init("get_device_name")
    return "Fake GPU"


def get_device_capability(device=None):
    _init("get_device_capability")
    return (9, 0)


def get_per_process_memory_fraction(device=None):
    _init("get_per_process_memory_fraction")
    return 1.0


def set_per_process_memory_fraction(fraction, device=None):
    _init("set_per_process_memory_fraction %s" % fraction)


def memory_snapshot():
    _init("memory_snapshot")
    return []


def _fake_first_allocation():
    """What the allocator's first entry does to the recorder."""
    _init("allocation")
    ext = torch.utils.cpp_extension._ext
    if ext is not None:
        ext._first_entry(0)


memory.set_per_process_memory_fraction = set_per_process_memory_fraction
