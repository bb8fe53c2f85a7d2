#!/usr/bin/env python3
"""make_pool_snapshots.py — generated PyTorch snapshots that stress what-if's
inference of released private pools (analyzer/whatif/whatif_pools.c).

    python3 bench/make_pool_snapshots.py side P S OUT.pickle
    python3 bench/make_pool_snapshots.py cached P S OUT.pickle
    python3 bench/make_pool_snapshots.py cycle P S OUT.pickle
    python3 bench/make_pool_snapshots.py bursts N OUT.pickle

side: P pools used one after another, none named in the snapshot. Each makes
S requests of 20 MiB, each in a segment of its own, then frees them (cached)
while the earlier pools' free blocks stay unused, as only another pool's
can; at the end every segment is released. Every segment is proved to share
no pool with every segment of every earlier pool: about (P*S)^2/2 pairs.
(tests/test_whatif_pools.c writes the same input for P=12, S=500.)

cached: the same, but every pool after the first first caches S segments of
40 MiB, then serves 2*S requests of 20 MiB from them (each block split in
two): requests served from a cached block, not a new segment, that skip
the earlier pools' better-fitting 20 MiB blocks.

cycle: side, with the later pools' requests cycling through six sizes, 20
down to 10 MiB: each request asks for another size than the five before
(more than what-if keeps sets for, so each is walked again).

bursts: two such pools of 10 segments, released, then N cycles of one
default-pool segment each: created, one request, freed, released (as a
program that calls torch.cuda.empty_cache() every step). N release bursts
of one segment next to one inferred pool.

`fragscope whatif OUT.pickle --verify` reproduces both exactly.
"""
import pickle
import sys

MiB = 1 << 20
BASE = 0x7F0000000000


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("side", "cached", "cycle", "bursts"):
        sys.exit(__doc__.strip().split("\n\n")[1])
    ev = []

    def e(action, addr, size=20 * MiB):
        ev.append({"action": action, "addr": addr, "size": size, "stream": 0,
                   "time_us": len(ev) + 1, "frames": []})

    def pools(p_count, s_count, mode="side"):
        segs = []
        for p in range(p_count):
            mine = [BASE + (p * s_count + s) * 64 * MiB for s in range(s_count)]
            if mode == "cached" and p > 0:
                for a in mine:
                    e("segment_alloc", a, 40 * MiB)
                    e("alloc", a, 40 * MiB)
                for a in mine:
                    e("free_requested", a, 40 * MiB)
                    e("free_completed", a, 40 * MiB)
                for a in mine:
                    e("alloc", a)
                    e("alloc", a + 20 * MiB)
                for a in mine:
                    for b in (a, a + 20 * MiB):
                        e("free_requested", b)
                        e("free_completed", b)
                segs += [(a, 40 * MiB) for a in mine]
                continue
            size = [(20 - 2 * (s % 6)) * MiB if mode == "cycle" and p > 0 else 20 * MiB
                    for s in range(s_count)]
            for a, z in zip(mine, size):
                e("segment_alloc", a, z)
                e("alloc", a, z)
            for a, z in zip(mine, size):
                e("free_requested", a, z)
                e("free_completed", a, z)
            segs += list(zip(mine, size))
        for a, z in segs:
            e("segment_free", a, z)
        return len(segs)

    if sys.argv[1] != "bursts":
        pools(int(sys.argv[2]), int(sys.argv[3]), sys.argv[1])
        out = sys.argv[4]
    else:
        first = pools(2, 10)
        for c in range(int(sys.argv[2])):
            a = BASE + (first + c) * 32 * MiB
            for act in ("segment_alloc", "alloc", "free_requested", "free_completed",
                        "segment_free"):
                e(act, a)
        out = sys.argv[3]
    with open(out, "wb") as f:
        pickle.dump({"segments": [], "device_traces": [ev]}, f, protocol=4)
    print("%s: %d entries" % (out, len(ev)))


if __name__ == "__main__":
    main()
