"""sitecustomize.py — the bootstrap of `fragscope record -- python ...`.

`fragscope record` puts this file's folder first on PYTHONPATH, so Python
imports it at start, in every interpreter of the run (the program, its
subprocesses, every rank a launcher starts: the environment travels). It
asks fragscope_torch to attach the native recorder once the program's own
`import torch` has finished (FRAGSCOPE_AUTORECORD names the trace), then
runs the sitecustomize the environment had without fragscope, which this
file hides by coming first on the path. It imports neither torch nor CUDA.
"""
import os
import sys


def _fragscope_chain():
    """Run the next sitecustomize on sys.path (this folder left out) as the
    module `sitecustomize`, as Python would have without fragscope."""
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.realpath(__file__))
    rest = [p for p in sys.path
            if os.path.realpath(p or os.getcwd()) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


try:
    import fragscope_torch as _fragscope_torch
    _fragscope_torch._autorecord()
except Exception as _e:  # noqa: BLE001 - the program runs; the parent says nothing was recorded
    sys.stderr.write("fragscope record: the recorder cannot be set up in %s: %s\n"
                     % (sys.executable, _e))
_fragscope_chain()
