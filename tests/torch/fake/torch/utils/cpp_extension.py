"""torch.utils.cpp_extension.load: hands back a stand-in of fragscope's
extension that logs its calls; FAKE_TORCH_BUILD_FAIL=1 makes the build fail
as a missing compiler would. Its late begin writes a real trace (fragscope
simulate) and notes it in the manifest, as the extension's tracker does.
As in PyTorch, whose allocator has no devices before CUDA's lazy init, a
tracker attached (start) before that init never sees an entry."""
import os
import subprocess
import time

import torch

_ext = None


class FakeExt:
    def __init__(self):
        self.path = None
        self.late_on = False
        self.attached = False

    def start(self):
        torch._log("ext.start ")
        if torch.cuda.is_initialized():
            self.attached = True
        else:
            torch._log("ext.start before CUDA init: the tracker reaches no device")

    def __getattr__(self, name):
        def call(*args):
            torch._log("ext.%s %s" % (name, " ".join(repr(a) for a in args)))
            return 0
        return call

    def open(self, path, ring, ndev, producer):
        torch._log("ext.open %s ring=%d" % (path, ring))
        self.path = path.replace("%p", str(os.getpid())).replace(
            "%r", os.environ.get("RANK", "0"))

    def late(self, conf):
        torch._log("ext.late")
        self.late_on = True

    def trace_path(self, device):
        return ""

    def wait_stacks(self, ms):
        time.sleep(ms / 1000.0)
        return 0

    def stack_node(self, frames):
        return 1

    def oom_site(self, device, frames):
        torch._log("ext.oom_site %d %s" % (device, " | ".join(
            "%s:%d:%s" % (os.path.basename(f), line, fn) for f, line, fn in frames[:3])))

    def _first_entry(self, device):
        if not self.late_on or self.path is None or not self.attached:
            return
        torch._log("ext.begin_late %d" % device)
        subprocess.run([os.environ["FRAGSCOPE_BIN"], "simulate", "--workload", "gpt2",
                        "--steps", "1", "-o", self.path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        manifest = os.environ.get("FRAGSCOPE_RECORD_MANIFEST")
        if manifest:
            with open(manifest, "a") as f:
                f.write(self.path + "\n")


def load(name, sources, extra_include_paths=(), extra_cflags=(), extra_ldflags=(),
         with_cuda=False, verbose=False):
    global _ext
    headers = [p for p in extra_include_paths
               if os.path.isfile(os.path.join(p, "fragscope", "native.h"))]
    torch._log("load arch=%s sources=%d headers=%d" % (
        os.environ.get("TORCH_CUDA_ARCH_LIST"), len(sources), len(headers)))
    if os.environ.get("FAKE_TORCH_BUILD_FAIL") == "1":
        raise RuntimeError("Error building extension 'fragscope_native': c++: not found\n"
                           "ninja: build stopped: subcommand failed.")
    _ext = FakeExt()
    return _ext
