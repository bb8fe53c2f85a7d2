#!/usr/bin/env python3
"""Where the CUDA driver puts cudaMalloc segments once segments were freed: direct probes.

usage: va_probe.py OUT.json

With PYTORCH_NO_CUDA_MEMORY_CACHING=1 every torch.empty on the GPU is one cudaMalloc and every
del one cudaFree, so the addresses are the driver's. Each scenario runs in a fresh process (the
driver's address-space state is per process) and records, for each step, the address relative
to the first segment's, in MiB. The scenarios test the ideas for rule 4 of allocator/placement.c
(docs/allocator.md, "Where the driver places segments"): exact-size or best-fit reuse of a freed
range, the highest or the lowest, the one freed last, a size above which freed space is not
reused, and the sequence seen in the boundary job's b_ms128 run (a 130 MiB segment below the
lowest chunk although a freed 160 MiB range held it, then a 64 MiB one at that range's top).
"""
import json
import os
import subprocess
import sys

MiB = 1 << 20

# steps: ("a", name, MiB) allocates, ("f", name) frees
SCENARIOS = {
    # ten 160 MiB chunks grow down; free the 4th; what goes where
    "freed160_then_130_64": [("a", "c%d" % i, 150) for i in range(10)] + [
        ("f", "c3"), ("a", "x130", 130), ("a", "y64", 64), ("a", "z64", 64)],
    "freed160_then_64_first": [("a", "c%d" % i, 150) for i in range(10)] + [
        ("f", "c3"), ("a", "y64", 64), ("a", "x130", 130)],
    "freed160_then_96_128_144": [("a", "c%d" % i, 150) for i in range(10)] + [
        ("f", "c3"), ("a", "s96", 96), ("f", "s96"), ("a", "s128", 128), ("f", "s128"),
        ("a", "s144", 144)],
    # two freed ranges of one size: the higher, the lower, or the one freed last
    "two_freed_low_last": [("a", "c%d" % i, 150) for i in range(10)] + [
        ("f", "c2"), ("f", "c7"), ("a", "x", 100), ("a", "y", 100)],
    "two_freed_high_last": [("a", "c%d" % i, 150) for i in range(10)] + [
        ("f", "c7"), ("f", "c2"), ("a", "x", 100), ("a", "y", 100)],
    # a freed 64 MiB range and a freed 160 MiB range: exact fit or the larger
    "exact_vs_larger": [("a", "c%d" % i, s) for i, s in enumerate([150, 60, 150, 60, 150, 150])] + [
        ("f", "c1"), ("f", "c4"), ("a", "x64", 60), ("a", "y64", 60)],
    # adjacent freed ranges merge?
    "adjacent_freed": [("a", "c%d" % i, 150) for i in range(10)] + [
        ("f", "c3"), ("f", "c4"), ("a", "x300", 300)],
    # large segments
    "freed_large": [("a", "c%d" % i, s) for i, s in enumerate([400, 300, 400, 300, 400])] + [
        ("f", "c1"), ("a", "x290", 290), ("f", "c3"), ("a", "x258", 258), ("a", "x252", 252)],
    # small (2 MiB) and medium (20 MiB) ones after frees
    "small_medium": [("a", "c%d" % i, 150) for i in range(4)] + [
        ("a", "m20", 20), ("a", "s2a", 2), ("a", "s2b", 2), ("f", "c1"), ("a", "s2c", 2),
        ("a", "m20b", 20), ("a", "x64", 64)],
}


def child(name):
    import torch
    torch.cuda.init()
    live, out, first = {}, [], None
    for st in SCENARIOS[name]:
        if st[0] == "a":
            t = torch.empty(st[2] * MiB, dtype=torch.uint8, device="cuda")
            p = t.data_ptr()
            if first is None:
                first = p
            live[st[1]] = t
            out.append([st[1], st[2], (p - first) / MiB])
        else:
            del live[st[1]]
            torch.cuda.synchronize()
            out.append([st[1], "freed", None])
    print(json.dumps(out))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    if len(sys.argv) != 2:
        print("usage: va_probe.py OUT.json", file=sys.stderr)
        return 2
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    res = {}
    for name in SCENARIOS:
        r = subprocess.run([sys.executable, __file__, "--child", name], env=env,
                           capture_output=True, text=True, timeout=120)
        res[name] = json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr[-2000:]}
        print(name, json.dumps(res[name]))
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
