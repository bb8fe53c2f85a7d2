"""python -m fragscope_torch [--help | --check | record -o TRACE -- COMMAND]: how
to record a PyTorch run with fragscope, whether this installation can
(libfragscope_torch.so), and `record`, which runs the package's fragscope
record (the program unchanged: docs/native.md)."""
import sys

from fragscope_torch import _main

sys.exit(_main())
