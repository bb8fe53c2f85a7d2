#!/usr/bin/env python3
"""boundary_job.py — one deterministic job whose requests sit where the
allocator's rounding rules matter most: just above and below powers of
two (1 MiB to 512 MiB) and around the 1 MiB small/large boundary, with a
fixed pattern of frees. Run once per allocator setting (the setting comes
from PYTORCH_CUDA_ALLOC_CONF, set by the caller before torch starts);
writes OUT.pickle (the snapshot, the whole history) and OUT.stats.json
(torch.cuda.memory_stats() and the setting).

    PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:4 \\
        python3 bench/gpu/boundary_job.py OUT [--ops N] [--cap-bytes B]

--cap-bytes caps the process (set_per_process_memory_fraction): a run that
then runs out of memory keeps its snapshot, with "outcome": "oom".
--empty-cache-every N calls torch.cuda.empty_cache() after every N requests,
so that segments go back to the driver and new ones are placed again
(bench/gpu/placement_rec.sh).

`fragscope whatif DEFAULTS.pickle --verify-against OTHER.pickle` then checks
each setting's rules against the run made under it (bench/gpu/boundary.sh).
"""
import argparse
import json
import os
import pickle
import random
import sys

import torch

MiB = 1 << 20


def sizes(rng):
    k = rng.randrange(20, 29)  # 1 MiB .. 256 MiB
    p = 1 << k
    pick = rng.randrange(8)
    if pick == 0:
        return p + 512
    if pick == 1:
        return p + rng.randrange(1, 64) * 4096
    if pick == 2:
        return p + (p >> 3) + 1          # just past an eighth
    if pick == 3:
        return p + (p >> 2) + 1          # just past a quarter
    if pick == 4:
        return p - 512
    if pick == 5:
        return MiB + rng.choice([-4096, -512, 512, 4096, 65536, 262145])
    if pick == 6:
        return rng.randrange(1, 2048) * 512 + rng.randrange(512)  # small pool
    return p + rng.randrange(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ops", type=int, default=3000)
    ap.add_argument("--cap-bytes", type=int, default=0)
    ap.add_argument("--empty-cache-every", type=int, default=0)
    a = ap.parse_args()
    out, ops = a.out, a.ops
    rng = random.Random(1234)
    torch.cuda.init()
    total = torch.cuda.get_device_properties(0).total_memory
    if a.cap_bytes:
        torch.cuda.set_per_process_memory_fraction(a.cap_bytes / total)
    torch.cuda.memory._record_memory_history(max_entries=10_000_000, stacks="python")
    live = []
    outcome, message, done = "ok", "", 0
    try:
        for done in range(ops):
            if live and (len(live) > 48 or rng.random() < 0.45):
                live.pop(rng.randrange(len(live)))
            else:
                live.append(torch.empty(sizes(rng), dtype=torch.uint8, device="cuda"))
            if a.empty_cache_every and (done + 1) % a.empty_cache_every == 0:
                torch.cuda.empty_cache()
    except torch.OutOfMemoryError as e:
        outcome, message = "oom", str(e).split("\n")[0][:1000]
    live.clear()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    with open(out + ".pickle", "wb") as f:
        pickle.dump(snap, f)
    st = dict(torch.cuda.memory_stats())
    st["conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    st["ops"] = ops
    st["ops_done"] = done
    st["outcome"] = outcome
    st["message"] = message
    st["device_total"] = total
    if a.cap_bytes:
        st["cap_bytes"] = a.cap_bytes
    st["empty_cache_every"] = a.empty_cache_every
    st["torch"] = torch.__version__
    st["device"] = torch.cuda.get_device_name()
    with open(out + ".stats.json", "w") as f:
        json.dump(st, f, indent=0, sort_keys=True)


if __name__ == "__main__":
    main()
