"""torch._C: the out-of-memory observers."""
import torch

observers = []


def _cuda_attach_out_of_memory_observer(fn):
    torch._log("_C.attach_oom_observer")
    observers.append(fn)
