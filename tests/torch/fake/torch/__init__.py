"""A stand-in for torch (tests/torch/check_record_cmd.py): it logs, to
$FAKE_TORCH_LOG, every call fragscope makes into it, and marks with "CUDA"
the calls that would initialize CUDA in the real torch, so a test can tell
whether recording touched CUDA before the program did."""
import os

__version__ = "0.0+fake"


class version:  # noqa: N801 - torch.version
    cuda = None if os.environ.get("FAKE_TORCH_CPU") == "1" else "13.0"


def _log(what):
    path = os.environ.get("FAKE_TORCH_LOG")
    if path:
        with open(path, "a") as f:
            f.write("%d %s\n" % (os.getpid(), what))


from torch import _C, cuda, utils  # noqa: E402,F401

_log("torch: import done")
