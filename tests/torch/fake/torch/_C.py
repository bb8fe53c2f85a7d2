"""torch._C: the out-of-memory observers."""
import torch

observers = []


def _cuda_attach_out_of_memory_observer(fn):
    torch._log("_C.attach_oom_observer")
    # PyTorch attaches the observer to the devices its allocator has: none
    # before CUDA's lazy init
    if torch.cuda.is_initialized():
        observers.append(fn)
    else:
        torch._log("_C.attach_oom_observer before CUDA init: reaches no device")
