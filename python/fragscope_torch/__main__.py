"""python -m fragscope_torch [--help | --check]: how to record a PyTorch run
with fragscope, and whether this installation can (libfragscope_torch.so)."""
import sys

from fragscope_torch import _main

sys.exit(_main())
