#!/usr/bin/env python3
"""Where the CUDA driver places cudaMalloc segments: rules measured on real recordings.

usage: placement_learn.py [--per-run] --group NAME PATH... [--group NAME PATH...]

PATH: a PyTorch snapshot (.pickle, read with python3's pickle: no torch needed) or a folder of
them (searched recursively). For each device trace, the sequence of segment_alloc and
segment_free entries is replayed; before each segment_alloc (after the first, the anchor) each
model predicts the address from the true history so far (the segments in use and those freed),
and the prediction is scored twice:

  exact  the predicted address is the recorded one;
  order  the predicted address lies between the same two segments in use as the recorded one.
         This is what decides PyTorch's ties: best fit takes the lowest address among free
         blocks of one size, so only the order of segments matters to a replay.

Models:
  first-fit   the lowest 2 MiB-aligned gap above the anchor (the sim device before this model)
  below       just below the lowest segment in use, the start aligned down to 32 MiB
              (2 MiB for segments of 2 MiB and less)
  freed-first a simpler rule: a segment of 2 MiB or less goes to the lowest gap between
              segments in use that holds it (2 MiB-aligned, at the gap's bottom), else below the
              lowest; a larger one to the start of the most recently freed range that holds it
              now, else below the lowest segment in use at a 32 MiB-aligned start.
  chunks      the model of allocator/placement.c (docs/allocator.md, "Where the driver places
              segments"): the driver's address-space chunks, each a segment's size rounded up
              to 32 MiB (2 MiB for small segments), filled first fit, newest chunk first (one
              whose room the driver passed over in the history takes no more); the
              first chunk for a segment over 2 MiB and under 32 MiB above every chunk (its
              distance unknown: just above the highest, the order right, the address not); a new
              chunk at the top of the highest gap a given-back chunk left, else below the lowest.
  chunks-recent  the same, but a new chunk takes the gap whose chunk was given back last
              (a variant the what-if replays, FSC_SIM_PLACE_REUSE_RECENT).

Each --group is scored apart (docs/allocator.md: the model was chosen on the group "learn", the
2026-12-01 recordings and the boundary job, and only measured on the others). Prints one line per
group and model (and per recording with --per-run): over every segment_alloc after the first,
over those after the first 25, and over those after a segment of the process was given back
(where the given-back rule can matter); then the facts the rules rest on.
"""
import argparse
import bisect
import glob
import os
import pickle
import sys

MiB = 1 << 20
SMALL = 2 * MiB  # segments of the small pool (PyTorch: 2 MiB)
COARSE = 32 * MiB


def adown(x, a):
    return x // a * a


def aup(x, a):
    return (x + a - 1) // a * a


def load(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(glob.glob(os.path.join(p, "**", "*.pickle"), recursive=True))
        else:
            files.append(p)
    runs = []
    for f in files:
        try:
            with open(f, "rb") as fh:
                d = pickle.load(fh)
        except Exception as ex:  # not every pickle is a snapshot
            print("skipped %s: %s" % (f, ex), file=sys.stderr)
            continue
        if not isinstance(d, dict) or "device_traces" not in d:
            continue
        for dev, t in enumerate(d["device_traces"]):
            ev = [(e["action"], e.get("addr", 0), e.get("size", 0)) for e in t
                  if e["action"] in ("segment_alloc", "segment_free")]
            if sum(1 for e in ev if e[0] == "segment_alloc") > 1:
                runs.append(("%s#%d" % (f, dev) if len(d["device_traces"]) > 1 else f, ev))
    return runs


def overlaps(used, addr, size):
    return any(a < addr + size and addr < a + s for a, s in used.items())


def below_lowest(used, size):
    lo = min(used)
    return adown(lo - size, SMALL if size <= SMALL else COARSE)


def lowest_gap(used, size):
    r = sorted(used.items())
    for (a1, s1), (a2, _) in zip(r, r[1:]):
        c = aup(a1 + s1, SMALL)
        if a2 >= c and a2 - c >= size:
            return c
    return None


def m_first_fit(used, freed, size, anchor):
    cur = anchor
    for a, s in sorted(used.items()):
        if a + s <= cur:
            continue
        c = aup(cur, SMALL)
        if a >= c and a - c >= size:
            return c
        cur = max(cur, a + s)
    return aup(cur, SMALL)


def m_below(used, freed, size, anchor):
    return below_lowest(used, size) if used else anchor


def m_driver(used, freed, size, anchor):
    if not used:
        return anchor
    if size <= SMALL:
        g = lowest_gap(used, size)
        return g if g is not None else below_lowest(used, size)
    for addr in reversed(freed):  # most recently freed first
        if not overlaps(used, addr, size):
            return addr
    return below_lowest(used, size)


class Chunks:
    """The driver model of allocator/placement.c: VA chunks, each the first segment placed
    there rounded up to 32 MiB (2 MiB for a segment of 2 MiB or less)."""

    recent = False  # chunks-recent: the gap given back last, not the highest

    def __init__(self):
        self.chunks = []  # [base, size, passed over], oldest first
        self.freed = []  # bases of chunks given back, the latest last
        self.above = False  # the chunk above every other was opened

    @staticmethod
    def gran(size):
        return SMALL if size <= SMALL else COARSE

    @staticmethod
    def medium(size):
        return SMALL < size < COARSE

    def containing(self, addr):
        for c in self.chunks:
            if c[0] <= addr < c[0] + c[1]:
                return c
        return None

    def room(self, used, size):
        """The newest chunk with room for size that the driver has not passed over, and the
        address in it: (chunk, address) or (None, None)."""
        for ch in reversed(self.chunks):  # the newest chunk first
            base, cs = ch[0], ch[1]
            if ch[2]:
                continue
            cur = base
            for a, s in sorted(used.items()):
                if a + s <= cur or a >= base + cs:
                    continue
                c = aup(cur, SMALL)
                if a >= c and a - c >= size:
                    return ch, c
                cur = max(cur, a + s)
            c = aup(cur, SMALL)
            if c + size <= base + cs:
                return ch, c
        return None, None

    def predict(self, used, size):
        ch, p = self.room(used, size)
        if ch is not None:
            return p
        if not self.above and self.medium(size):
            # a region of its own above every chunk, at a distance the recordings do not tell
            return aup(max([c[0] + c[1] for c in self.chunks] +
                           [a + s for a, s in used.items()]), COARSE)
        g = self.gran(size)
        cs = sorted(self.chunks)
        best, age = None, -1
        for (a1, s1, _), (a2, _, _) in zip(cs, cs[1:]):
            p = adown(a2 - size, g)
            ages = [i for i, f in enumerate(self.freed) if a1 + s1 <= f < a2]
            if p >= a1 + s1 and ages and not overlaps(used, p, size):
                if not self.recent or max(ages) > age:
                    best, age = p, max(ages)  # the highest such gap, or the latest given back
        if best is not None:
            return best
        return adown(cs[0][0] - aup(size, g), g)

    def placed(self, used, addr, size):
        # room the driver passed over is held by what the recording does not show
        ch, _ = self.room(used, size)
        if ch is not None and not ch[0] <= addr < ch[0] + ch[1]:
            ch[2] = True
        c = self.containing(addr)
        if c is None or addr + size > c[0] + c[1]:
            if c is not None:
                self.chunks.remove(c)
            if self.medium(size) and self.chunks and all(b + s <= addr for b, s, _ in self.chunks):
                self.above = True
            self.chunks.append([addr, aup(size, self.gran(size)), False])

    def released(self, used, addr):
        c = self.containing(addr)
        if c is not None and not any(c[0] <= a < c[0] + c[1] for a in used):
            self.chunks.remove(c)
            if c[0] in self.freed:
                self.freed.remove(c[0])
            self.freed.append(c[0])


class ChunksRecent(Chunks):
    recent = True


def m_chunks(used, freed, size, anchor, state):
    return state.predict(used, size) if state.chunks else anchor


def m_chunks_recent(used, freed, size, anchor, state):
    return state.predict(used, size) if state.chunks else anchor


MODELS = [("first-fit", m_first_fit), ("below", m_below), ("freed-first", m_driver),
          ("chunks", m_chunks), ("chunks-recent", m_chunks_recent)]
CHUNKY = {m_chunks: Chunks, m_chunks_recent: ChunksRecent}


WARM = 25  # segments of a process's start, where the CUDA runtime takes address space too


def score(ev, model):
    """(allocations, exact, order) over all, over those after the first WARM, and over those
    after a segment of the process was given back (cudaFree: empty_cache, the OOM retry, GC)."""
    used, freed, anchor = {}, [], None
    st = CHUNKY.get(model, Chunks)()
    n = exact = order = 0
    late = [0, 0, 0]
    back = [0, 0, 0]
    gone = False  # a segment was given back
    for act, addr, size in ev:
        if act == "segment_alloc":
            if anchor is None:
                anchor = addr
            else:
                p = (model(used, freed, size, anchor, st) if model in CHUNKY
                     else model(used, freed, size, anchor))
                keys = sorted(used)
                n += 1
                ex = p == addr
                od = bisect.bisect(keys, p) == bisect.bisect(keys, addr)
                exact += ex
                order += od
                if n >= WARM:
                    late[0] += 1
                    late[1] += ex
                    late[2] += od
                if gone:
                    back[0] += 1
                    back[1] += ex
                    back[2] += od
            st.placed(used, addr, size)
            used[addr] = size
            if addr in freed:
                freed.remove(addr)
        else:
            used.pop(addr, None)
            st.released(used, addr)
            if addr in freed:
                freed.remove(addr)
            freed.append(addr)
            gone = True
    return (n, exact, order), tuple(late), tuple(back)


def facts(runs):
    """The observations the rules rest on, counted over runs."""
    below_earlier = total = 0
    large_fresh = large_fresh32 = 0
    small = small_gap = 0
    reuse = reuse_recent = 0
    for _, ev in runs:
        used, freed, seen = {}, [], []
        for act, addr, size in ev:
            if act == "segment_alloc":
                if seen:
                    total += 1
                    below_earlier += any(addr < x for x in seen)
                    if used and size > SMALL and addr + size <= min(used):
                        large_fresh += 1
                        large_fresh32 += addr % COARSE == 0
                    if used and size <= SMALL:
                        small += 1
                        small_gap += min(used) < addr < max(a + s for a, s in used.items())
                    if size > SMALL and addr in freed:
                        reuse += 1
                        live = [f for f in freed if not overlaps(used, f, size)]
                        reuse_recent += bool(live) and live[-1] == addr
                seen.append(addr)
                used[addr] = size
                if addr in freed:
                    freed.remove(addr)
            else:
                used.pop(addr, None)
                if addr in freed:
                    freed.remove(addr)
                freed.append(addr)
    print("segment_allocs after the first: %d; below an earlier address: %d" % (total, below_earlier))
    print("large segments placed below every segment in use: %d, at a 32 MiB-aligned start: %d"
          % (large_fresh, large_fresh32))
    print("segments of 2 MiB or less: %d, inside the span of segments in use: %d" % (small, small_gap))
    print("large segments at the start of a freed range: %d, the most recently freed that holds "
          "it: %d" % (reuse, reuse_recent))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", nargs="+", action="append", required=True,
                    metavar=("NAME", "PATH"))
    ap.add_argument("--per-run", action="store_true")
    a = ap.parse_args()
    for g in a.group:
        group, paths = g[0], g[1:]
        runs = load(paths)
        tot = {m: [0] * 9 for m, _ in MODELS}  # every, late, after a give-back: n, exact, order
        for name, ev in runs:
            row = []
            for mn, m in MODELS:
                every, late, back = score(ev, m)
                for i, v in enumerate(every + late + back):
                    tot[mn][i] += v
                row.append("%s %d/%d/%d (given back: %d/%d/%d)"
                           % (mn, every[1], every[2], every[0], back[1], back[2], back[0]))
            if a.per_run:
                print("  %s: %s" % (name, "  ".join(row)))
        print("%s (%d recordings): exact address, same order; all / after the first %d segments"
              " / after a segment was given back" % (group, len(runs), WARM))
        for mn, _ in MODELS:
            n, ex, od, ln, lex, lod, bn, bex, bod = tot[mn]
            print("  %-13s exact %5d of %5d (%5.1f %%)  order %5d (%5.1f %%)  |  exact %5d of %5d "
                  "(%5.1f %%)  order %5d (%5.1f %%)  |  exact %5d of %5d (%5.1f %%)  order %5d "
                  "(%5.1f %%)"
                  % (mn, ex, n, 100.0 * ex / max(n, 1), od, 100.0 * od / max(n, 1),
                     lex, ln, 100.0 * lex / max(ln, 1), lod, 100.0 * lod / max(ln, 1),
                     bex, bn, 100.0 * bex / max(bn, 1), bod, 100.0 * bod / max(bn, 1)))
        facts(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
