"""Checks fragscope_torch.py's tag and marker logic without torch or a GPU:
a stand-in `torch` module, a stand-in library recording the calls, and
modules that fire their hooks in the order PyTorch does.
Usage: python3 check_fragscope_torch.py PATH/TO/fragscope_torch.py"""
import sys
import types

sys.modules["torch"] = types.ModuleType("torch")
ns = {"__name__": "fragscope_torch"}
exec(compile(open(sys.argv[1]).read(), "fragscope_torch.py", "exec"), ns)

calls = []


class Lib:
    def fsc_torch_tag_push(self, name):
        calls.append("push " + name.decode())

    def fsc_torch_tag_pop(self):
        calls.append("pop")

    def fsc_torch_mark(self, text):
        calls.append("mark " + text.decode())


class Module:
    def __init__(self):
        self.hooks = {}

    def register_forward_pre_hook(self, f):
        self.hooks["pre"] = f

    def register_forward_hook(self, f):
        self.hooks["post"] = f

    def register_full_backward_pre_hook(self, f):
        self.hooks["bpre"] = f

    def register_full_backward_hook(self, f):
        self.hooks["bpost"] = f


class GPT2:
    def __init__(self):
        self.mods = {n: Module() for n in ["", "transformer", "transformer.h.0",
                                           "transformer.h.0.mlp"]}

    def named_modules(self):
        return list(self.mods.items())


class Optimizer:
    def register_step_pre_hook(self, f):
        self.pre = f

    def register_step_post_hook(self, f):
        self.post = f


def expect(got, want):
    if got != want:
        print("expected", want, "\ngot     ", got)
        sys.exit(1)


lib = Lib()
ns["_lib"] = lib
ns["_tags"] = ns["_shim_tags"](lib)
model = GPT2()
ns["watch"](model, backward=True)
m = model.mods
order = ["", "transformer", "transformer.h.0", "transformer.h.0.mlp"]
for k in order:
    m[k].hooks["pre"](m[k], None)
for k in reversed(order):
    m[k].hooks["post"](m[k], None, None)
expect(calls, ["push Module", "push transformer", "push h.0", "push mlp",
               "pop", "pop", "pop", "pop"])
calls.clear()
m["transformer.h.0"].hooks["bpre"](m["transformer.h.0"], None)
m["transformer.h.0.mlp"].hooks["bpre"](m["transformer.h.0.mlp"], None)
m["transformer.h.0.mlp"].hooks["bpost"](m["transformer.h.0.mlp"], None, None)
m["transformer.h.0"].hooks["bpost"](m["transformer.h.0"], None, None)
expect(calls, ["push backward/transformer.h.0", "push mlp", "pop", "pop"])

# One hook function for every module (torch.compile then recompiles
# nothing per module), doing nothing while torch.compile traces.
if len({id(mm.hooks["pre"]) for mm in m.values()}) != 1:
    print("watch() made a hook per module")
    sys.exit(1)
compiler = types.SimpleNamespace(is_compiling=lambda: True)
sys.modules["torch"].compiler = compiler
calls.clear()
for k in order:
    m[k].hooks["pre"](m[k], None)
for k in reversed(order):
    m[k].hooks["post"](m[k], None, None)
expect(calls, [])
compiler.is_compiling = lambda: False

calls.clear()
model2 = GPT2()
handles = ns["watch"](model2)
if "bpre" in model2.mods["transformer"].hooks or len(handles) != 8:
    print("watch() without backward=True registered backward hooks")
    sys.exit(1)

calls.clear()
opt = Optimizer()
ns["watch_optimizer"](opt)
for _ in range(2):
    opt.pre(opt, (), {})
    opt.post(opt, (), {})
expect(calls, ["push optimizer.step", "pop", "mark step 1", "push optimizer.step", "pop",
               "mark step 2"])
print("fragscope_torch: tags and markers ok")

# record() with two devices, the process having used only device 0: device
# 1 is not begun and not touched (the tracker begins it at its first entry,
# with the fraction it was told); stop() says which recorded entries were
# left out, by kind.
import io  # noqa: E402


class Ext:
    def __init__(self):
        self.log = []

    def open(self, *a):
        self.log.append(("open",) + a)

    def begin_device(self, d, name, total, free, cap, conf, segs):
        self.log.append(("begin", d, name, total, free, cap))

    def late(self, conf):
        self.log.append(("late", conf))

    def set_fraction(self, d, frac):
        self.log.append(("fraction", d, frac))

    def oom_sites(self, on):
        pass

    def start(self):
        pass

    def stop(self):
        self.log.append(("stop",))

    def wait_stacks(self, ms):
        import time
        time.sleep(ms / 1000.0)
        return 0

    def stack_node(self, frames):
        return 0

    def tag_push(self, name):
        pass

    def tag_pop(self):
        pass

    def mark(self, text):
        pass

    def trace_path(self, d):
        return "run.fstrace"

    def stats(self):
        return (10, 12, 1, 2, "", 3, {"free_unknown": 2, "not_begun": 1},
                ["free_completed at 0x51000000, 512 bytes (device 0, entry 2): free of an "
                 "unknown address"],
                "3 recorded entries left out of the trace: 2 free of an unknown address, 1 "
                "lost before its device's recording began")


cuda = types.SimpleNamespace(
    device_count=lambda: 2, is_initialized=lambda: True, is_available=lambda: True,
    current_device=lambda: 0, memory_reserved=lambda d: 20 << 20 if d == 0 else 0,
    memory_snapshot=lambda: [], mem_get_info=lambda d: (70 << 30, 80 << 30),
    get_device_name=lambda d: "GPU%d" % d,
    get_device_properties=lambda d: types.SimpleNamespace(name="GPU%d" % d,
                                                          total_memory=40 << 30),
    get_per_process_memory_fraction=lambda d: 0.5 if d == 1 else 1.0)
sys.modules["torch"].cuda = cuda
sys.modules["torch"].__version__ = "0.test"
sys.modules["torch"]._C = types.SimpleNamespace(
    _cuda_attach_out_of_memory_observer=lambda f: None)
ext = Ext()
ns["_build_native"] = lambda verbose=False: ext
ns["record"]("run.fstrace", verdict=False)
expect(ext.log[1:], [("late", ""), ("begin", 0, "GPU0", 80 << 30, 70 << 30, 0),
                     ("fraction", 1, 0.5)])
err, sys.stderr = sys.stderr, io.StringIO()
ns["stop"]()
said, sys.stderr = sys.stderr.getvalue(), err
expect(said, "fragscope: warning: 3 recorded entries left out of the trace: 2 free of an unknown "
             "address, 1 lost before its device's recording began; the first: free_completed "
             "at 0x51000000, 512 bytes (device 0, entry 2): free of an unknown address\n")
print("fragscope_torch: late devices left to their first entry, entries left out reported")
