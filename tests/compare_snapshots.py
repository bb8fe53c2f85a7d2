#!/usr/bin/env python3
"""Compare a PyTorch memory snapshot with fragscope's export of it, field by field.

usage: compare_snapshots.py ORIGINAL EXPORTED [--device N]

Every key PyTorch wrote is compared, recursively, with its type (a tuple is not a
list, an int is not a float): the top-level keys, allocator_settings, every
history entry of the device with all its keys and frames, every segment and block
with their frames, external_annotations, host memory. Prints one line per
difference and "N differences"; exits 0 when there are none beyond the accepted
ones below, 1 otherwise.

Accepted differences (the only ones):
- --device N of a snapshot with several devices: a fragscope trace holds one
  device, so the export's device_traces[d] for d != N are empty and its segments
  are device N's. The original is compared on device N only.
"""
import pickle
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    device = None
    if len(argv) >= 5 and argv[3] == "--device":
        device = int(argv[4])
    with open(argv[1], "rb") as f:
        a = pickle.load(f)
    with open(argv[2], "rb") as f:
        b = pickle.load(f)
    if device is not None:
        a = dict(a)
        a["segments"] = [s for s in a["segments"] if s.get("device", 0) == device]
        a["device_traces"] = [t if i == device else [] for i, t in enumerate(a["device_traces"])]
        b = dict(b)
        bt = list(b["device_traces"])
        while len(bt) < len(a["device_traces"]):
            bt.append([])
        b["device_traces"] = bt
    diffs = []

    def cmp(x, y, path):
        if len(diffs) >= 40:
            return
        if type(x) is not type(y):
            diffs.append("%s: %s %r vs %s %r" % (path, type(x).__name__, x if not isinstance(
                x, (list, dict)) else "...", type(y).__name__, y if not isinstance(
                    y, (list, dict)) else "..."))
            return
        if isinstance(x, dict):
            for k in x:
                if k not in y:
                    diffs.append("%s.%s: not in the export" % (path, k))
                else:
                    cmp(x[k], y[k], "%s.%s" % (path, k))
            for k in y:
                if k not in x:
                    diffs.append("%s.%s: only in the export" % (path, k))
        elif isinstance(x, (list, tuple)):
            if len(x) != len(y):
                diffs.append("%s: %d items vs %d" % (path, len(x), len(y)))
            for i, (p, q) in enumerate(zip(x, y)):
                cmp(p, q, "%s[%d]" % (path, i))
        elif x != y:
            diffs.append("%s: %r vs %r" % (path, x, y))

    cmp(a, b, "snapshot")
    for d in diffs:
        print(d)
    print("%d differences" % len(diffs))
    return 0 if not diffs else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
