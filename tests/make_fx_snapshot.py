#!/usr/bin/env python3
"""Write a copy of a torch.compile snapshot with the frame keys that PyTorch's FX
augmentation adds (torch.cuda.memory._snapshot(augment_with_fx_traces=True)).

usage: make_fx_snapshot.py IN.pickle OUT.pickle

PyTorch maps each frame of generated code to the FX node that produced its line
and sets fx_node_op, fx_node_name, fx_node_target (str(target)) and, when the
node has a stack trace, fx_original_trace, on the frame dict itself. This does
the same for the frames of Inductor's generated files (/tmp/torchinductor_*),
with values made from the line number: the recordings of the GPU machine were
not taken with the augmentation on. Every third line's node has no stack trace,
and one node's op is None (node_info.get("op") can be).
"""
import pickle
import sys

OPS = ["call_function", "call_module", "placeholder"]


def augment(frame):
    fn = frame.get("filename", "")
    if not fn.startswith("/tmp/torchinductor_") or "fx_node_op" in frame:
        return 0
    line = frame.get("line", 0)
    line = line if isinstance(line, int) and line < 1 << 32 else 0
    frame["fx_node_op"] = None if line % 7 == 3 else OPS[line % len(OPS)]
    frame["fx_node_name"] = "addmm_%d" % (line % 5)
    frame["fx_node_target"] = "aten.addmm.default"
    if line % 3 != 0:
        frame["fx_original_trace"] = (
            '  File "model.py", line %d, in forward\n    a = self.net1(x)\n' % line)
    return 1


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    with open(argv[1], "rb") as f:
        snap = pickle.load(f)
    n = 0
    for trace in snap.get("device_traces", []):
        for entry in trace:
            for fr in entry.get("frames", []):
                n += augment(fr)
    for seg in snap.get("segments", []):
        for blk in seg.get("blocks", []):
            for fr in blk.get("frames", []):
                n += augment(fr)
    with open(argv[2], "wb") as f:
        pickle.dump(snap, f, protocol=4)
    print("%d frames augmented" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
