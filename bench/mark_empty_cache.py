#!/usr/bin/env python3
"""Mark a program's empty_cache() calls in a PyTorch snapshot (docs/whatif.md).

usage: mark_empty_cache.py --every N [--device D] IN.pickle OUT.pickle

PyTorch snapshots record no empty_cache() action: fragscope knows a program's call only by the
segments it released, and a call that released nothing leaves no trace. When the program is
known to call torch.cuda.empty_cache() after every N requests (N counting the device trace's
`alloc` and `free_requested` entries, as bench/gpu/boundary_job.py --empty-cache-every N does),
this writes a copy of IN with an {"action": "empty_cache"} entry (which fragscope's importer
reads as the call) at each such point of device D's trace (0 by default): just before the next
request, so after the releases where the call released segments. Prints how many
calls were marked and how many of them released nothing in IN.

This is a tool for checking what-if results against real runs (bench/placement_check.py), not a
repair: it is right only where the program's calls really were every N requests. OUT is written
to a temporary name and renamed.
"""
import argparse
import os
import pickle
import sys

REQUESTS = ("alloc", "free_requested")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, required=True)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("src")
    ap.add_argument("dst")
    a = ap.parse_args()
    if a.every <= 0:
        print("mark_empty_cache: --every must be positive", file=sys.stderr)
        return 2
    try:
        with open(a.src, "rb") as f:
            d = pickle.load(f)
        t = d["device_traces"][a.device]
    except Exception as ex:  # a file that is not a snapshot: one line, exit 2
        print("mark_empty_cache: %s: not a PyTorch snapshot with device %d (%s)"
              % (a.src, a.device, ex), file=sys.stderr)
        return 2
    out, req, marked, silent, released = [], 0, 0, 0, False

    def call(prev):
        return {"action": "empty_cache", "addr": 0, "size": 0, "stream": 0,
                "time_us": prev.get("time_us", 0) if prev else 0, "frames": []}

    pending = False  # a call is due at the current request count
    for e in t:
        act = e.get("action")
        if pending and act in REQUESTS:
            out.append(call(out[-1] if out else None))
            marked += 1
            silent += not released
            pending = released = False
        if act == "segment_free" and pending:
            released = True
        out.append(e)
        if act in REQUESTS:
            req += 1
            pending = req % a.every == 0
    if pending:
        out.append(call(out[-1] if out else None))
        marked += 1
        silent += not released
    d["device_traces"][a.device] = out
    tmp = a.dst + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(d, f)
    os.replace(tmp, a.dst)
    print("%d calls marked after every %d requests; %d of them released nothing in %s"
          % (marked, a.every, silent, a.src))
    return 0


if __name__ == "__main__":
    sys.exit(main())
