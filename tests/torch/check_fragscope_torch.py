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
