#!/usr/bin/env python3
"""Cut PyTorch snapshots as a ring would and check each window replays.

usage: cut_windows.py [--points K] [--cap-from-stats] [--fragscope PATH] SNAPSHOT...

For each snapshot (a complete history), keeps the entries from each of K
evenly spaced cut points to the end, as PyTorch's ring of max_entries keeps
the last ones, and runs `fragscope whatif WINDOW --verify --format json`.
A window reproduces when every block address and both peaks match.
--cap-from-stats passes --capacity with the `cap_bytes` of the
NAME.stats.json beside each snapshot (bench/gpu/record.py writes it).
Prints one line per snapshot: windows that reproduce, that differ, that
failed, and the first that did not reproduce.
"""
import argparse
import collections
import json
import os
import pickle
import subprocess
import sys
import tempfile


def cut_points(n, k):
    return sorted(set(max(1, min(n - 1, (n * i) // (k + 1))) for i in range(1, k + 1)))


def check(path, k, fragscope, cap, tmpdir):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    if not isinstance(snap, dict) or "device_traces" not in snap:
        return collections.Counter(), {}
    devs = [d for d, t in enumerate(snap["device_traces"]) if t]
    res, first = collections.Counter(), {}
    window = os.path.join(tmpdir, "window.pickle")
    for d in devs[:1]:
        trace = snap["device_traces"][d]
        for c in cut_points(len(trace), k):
            cut = dict(snap)
            cut["device_traces"] = list(snap["device_traces"])
            cut["device_traces"][d] = trace[c:]
            with open(window, "wb") as f:
                pickle.dump(cut, f, protocol=4)
            args = [fragscope, "whatif", window, "--verify", "--format", "json"]
            if len(devs) > 1:
                args += ["--device", str(d)]
            if cap:
                args += ["--capacity", str(cap)]
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode not in (0, 1):
                key, msg = "error", r.stderr.strip()[-160:]
            else:
                j = json.loads(r.stdout)
                ok = j["match"] and j["alloc_addr_matches"] == j["allocs_compared"]
                key = "ok" if ok else "mismatch"
                msg = "%d/%d addresses, peak reserved %s/%s" % (
                    j["alloc_addr_matches"], j["allocs_compared"],
                    j["peak_reserved_got"], j["peak_reserved_expected"])
            res[key] += 1
            first.setdefault(key, (c, msg))
    return res, first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10)
    ap.add_argument("--cap-from-stats", action="store_true")
    ap.add_argument("--fragscope", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "fragscope"))
    ap.add_argument("snapshots", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for path in a.snapshots:
            cap = 0
            if a.cap_from_stats:
                stats = path.rsplit(".", 1)[0] + ".stats.json"
                with open(stats) as f:
                    cap = json.load(f).get("cap_bytes") or 0
            res, first = check(path, a.points, a.fragscope, cap, tmp)
            bad = {k: v for k, v in first.items() if k != "ok"}
            print(os.path.basename(path), dict(res), bad, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
