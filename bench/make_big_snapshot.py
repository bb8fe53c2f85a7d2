#!/usr/bin/env python3
"""make_big_snapshot.py — a large, valid PyTorch memory snapshot made from a
real one, for benchmarks of the snapshot reader (bench/bench_snapshot.sh).

    python3 bench/make_big_snapshot.py REAL.pickle OUT.pickle --copies N

The real snapshot's history is repeated N times. Copy k runs in its own
address range (every address, segment and block shifted by k * 2^44) and
its own time span (shifted past the end of copy k-1), so each copy's
allocs, frees and segments pair up exactly as in the recording and the
copies never touch each other; the final 'segments' list holds every copy's
final segments, shifted the same way. The result is what PyTorch would have
written for N such runs on N disjoint parts of one device: its peaks are
those of the real run plus the memory the earlier copies still hold.

The file is written the way Python's pickler writes a snapshot (protocol 4,
framed in about 64 KiB, memoized strings, frame lists and frame dicts shared through the memo,
batches of 1000 items), without building the big object tree in Python:
each entry of the first copy is pickled once into a byte template, and the
later copies patch its address and time in place (written as 8-byte LONG1
integers so that they can be patched). pickle.load reads the file as usual.

By default the copies share the first copy's frame lists through the memo,
so a reader keeps few of them. With --fresh-frames each copy pickles its
own frame lists (memoized anew, the frees' references to them patched per
copy; the frame dicts stay shared), as in a long recording where every
allocation's stack is a new list read again by its frees: a reader that
keeps every list read again grows with the file.
"""
import argparse
import pickle
import struct
import sys

SHIFT = 1 << 44


class Framed:
    """The file, written in frames of about 64 KiB as Python's pickler does
    in protocol 4 (a FRAME opcode and its length before each): readers that
    cut a file at its frames (fragscope's scan and decoding threads) see it
    as they see a real snapshot. Every write ends at an opcode's end."""

    TARGET = 64 * 1024

    def __init__(self, f):
        self.f = f
        self.parts = []
        self.n = 0

    def write(self, b):
        self.parts.append(b)
        self.n += len(b)
        if self.n >= self.TARGET:
            self.commit()

    def commit(self):
        if self.n:
            self.f.write(b"\x95" + struct.pack("<Q", self.n) + b"".join(self.parts))
        self.parts, self.n = [], 0


class Writer:
    """Enough of a protocol-4 pickler for a memory snapshot."""

    def __init__(self, f):
        self.f = f
        self.memo = {}  # id(obj) -> memo index
        self.keep = []  # objects whose id is in memo
        self.buf = []
        self.capture = False  # an entry's bytes are being taken as one piece
        self.size = 0
        self.n = 0  # memo entries stored
        self.patch_from = None  # memo refs at or above it are recorded (fresh frames)
        self.patches = []  # offsets in buf of such refs' 4-byte index
        self.hits = set()  # memo indices read again
        self.strs = []  # (memo index, object) of strings memoized

    def w(self, b):
        self.buf.append(b)
        self.size += len(b)
        if len(self.buf) > 256 and not self.capture:
            self.flush()

    def flush(self):
        self.f.write(b"".join(self.buf))
        self.buf = []

    def memoize(self, obj):
        self.memo[id(obj)] = self.n
        self.n += 1
        self.keep.append(obj)
        self.w(b"\x94")

    def get(self, obj):
        i = self.memo.get(id(obj))
        if i is None:
            return False
        self.hits.add(i)
        if self.patch_from is not None and i >= self.patch_from:
            self.patches.append(sum(len(x) for x in self.buf) + 1)
            self.w(b"j" + struct.pack("<I", i))
            return True
        self.w(b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i))
        return True

    def int_(self, v, wide=False):
        if wide:
            self.w(b"\x8a\x08" + struct.pack("<q", v))
        elif 0 <= v < 256:
            self.w(b"K" + bytes([v]))
        elif 0 <= v < 65536:
            self.w(b"M" + struct.pack("<H", v))
        elif -(1 << 31) <= v < (1 << 31):
            self.w(b"J" + struct.pack("<i", v))
        else:
            n = (v.bit_length() + 8) // 8
            self.w(b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True))

    def value(self, v):
        if v is None:
            self.w(b"N")
        elif v is True:
            self.w(b"\x88")
        elif v is False:
            self.w(b"\x89")
        elif isinstance(v, int):
            self.int_(v)
        elif isinstance(v, float):
            self.w(b"G" + struct.pack(">d", v))
        elif isinstance(v, str):
            if self.get(v):
                return
            b = v.encode("utf-8", "surrogatepass")
            self.w((b"\x8c" + bytes([len(b)]) if len(b) < 256 else b"X" + struct.pack("<I", len(b))) + b)
            self.strs.append((self.n, v))
            self.memoize(v)
        elif isinstance(v, tuple):
            if self.get(v):
                return
            if 1 <= len(v) <= 3:
                for x in v:
                    self.value(x)
                self.w(bytes([0x84 + len(v)]))
            else:
                self.w(b"(")
                for x in v:
                    self.value(x)
                self.w(b"t")
            self.memoize(v)
        elif isinstance(v, list):
            if self.get(v):
                return
            self.w(b"]")
            self.memoize(v)
            self.items(v)
        elif isinstance(v, dict):
            if self.get(v):
                return
            self.w(b"}")
            self.memoize(v)
            self.pairs(v, wide=())
        else:
            raise TypeError(type(v))

    def items(self, seq):
        for i in range(0, len(seq), 1000):
            batch = seq[i:i + 1000]
            if len(batch) == 1:
                self.value(batch[0])
                self.w(b"a")
            else:
                self.w(b"(")
                for x in batch:
                    self.value(x)
                self.w(b"e")

    def pairs(self, d, wide):
        if not d:
            return
        self.w(b"(")
        for k, x in d.items():
            self.value(k)
            if k in wide and isinstance(x, int):
                self.int_(x, wide=True)
            else:
                self.value(x)
        self.w(b"u")


def shifted_segments(segs, k):
    out = []
    for s in segs:
        s = dict(s)
        s["address"] += k * SHIFT
        blocks = []
        for b in s.get("blocks", []):
            b = dict(b)
            if "address" in b:
                b["address"] += k * SHIFT
            blocks.append(b)
        s["blocks"] = blocks
        out.append(s)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real")
    ap.add_argument("out")
    ap.add_argument("--copies", type=int, required=True)
    ap.add_argument("--fresh-frames", action="store_true",
                    help="each copy pickles its own frame lists (frame dicts stay shared), "
                         "as a long recording does: every allocation's stack is a new list "
                         "that its frees read again")
    a = ap.parse_args()
    snap = pickle.load(open(a.real, "rb"))
    traces = snap["device_traces"]
    dev = max(range(len(traces)), key=lambda i: len(traces[i]))
    hist = traces[dev]
    if not hist:
        sys.exit("%s: no history to repeat" % a.real)
    t_first, t_last = hist[0]["time_us"], hist[-1]["time_us"]
    span = t_last - t_first + 1000
    with open(a.out, "wb") as raw:
        raw.write(b"\x80\x04")
        f = Framed(raw)
        w = Writer(f)
        w.w(b"}")
        w.memoize(snap)
        w.w(b"(")
        w.value("segments")
        segs = []
        for k in range(a.copies):
            segs += [s for s in shifted_segments(snap["segments"], k)]
        w.value(segs)
        del segs
        w.value("device_traces")
        outer = []
        w.w(b"]")
        w.memoize(outer)
        if len(traces) > 1:
            w.w(b"(")
        for d in range(len(traces)):
            inner = []
            w.w(b"]")
            w.memoize(inner)
            if d != dev:
                w.items(traces[d])
                continue
            # Copies 0 and 1 pickled entry by entry (copy 0 memoizes the
            # shared frames, so copy 1's entries refer to them); copy 1's
            # entries are kept as templates for the later copies.
            templates = []
            hist_memo = w.n
            n = 0
            for k in range(a.copies):
                for i, e in enumerate(hist):
                    if n % 1000 == 0:
                        w.w(b"(")
                    if k == 1 and i == 0:
                        # A string of copy 0's entries that nothing read
                        # again is a string object of its entry's own (as
                        # PyTorch writes each entry's compile_context 'N/A'):
                        # the later copies write their own too.
                        for at, x in w.strs:
                            if at >= hist_memo and at not in w.hits:
                                w.memo.pop(id(x), None)
                        if a.fresh_frames:
                            for x in hist:
                                if isinstance(x.get("frames"), list):
                                    w.memo.pop(id(x["frames"]), None)
                        w.patch_from = w.n
                    if k <= 1:
                        w.patches = []
                        if k == 1:
                            e = dict(e)
                            if "addr" in e:
                                e["addr"] += SHIFT
                            if "time_us" in e:
                                e["time_us"] += span
                        saved, w.buf = w.buf, []
                        w.capture = True
                        w.w(b"}")
                        w.pairs(e, wide=("addr", "time_us"))
                        w.capture = False
                        piece, w.buf = b"".join(w.buf), saved
                        w.f.write(b"".join(w.buf))
                        w.buf = [piece]
                        if k == 1:
                            offs = []
                            for key in ("addr", "time_us"):
                                if key in e and isinstance(e[key], int):
                                    old = b"\x8a\x08" + struct.pack("<q", e[key])
                                    offs.append((piece.find(old) + 2, e[key], SHIFT if key == "addr" else span))
                            templates.append((piece, offs, list(w.patches)))
                            if i == len(hist) - 1 and w.patch_from is not None:
                                per_copy = w.n - w.patch_from
                    else:
                        piece, offs, patches = templates[i]
                        b = bytearray(piece)
                        for at, val, step in offs:
                            b[at:at + 8] = struct.pack("<q", val + (k - 1) * step)
                        for at in patches:
                            idx = struct.unpack_from("<I", piece, at)[0]
                            struct.pack_into("<I", b, at, idx + (k - 1) * per_copy)
                        w.w(bytes(b))
                    n += 1
                    if n % 1000 == 0:
                        w.w(b"e")
            if n % 1000 != 0:
                w.w(b"e")
            if w.patch_from is not None:
                # the later copies' frame lists were memoized by the templates
                w.n += per_copy * max(0, a.copies - 2)
                w.patch_from = None
        if len(traces) > 1:
            w.w(b"e")
        else:
            w.w(b"a")
        for key in snap:
            if key in ("segments", "device_traces"):
                continue
            w.value(key)
            if key == "external_annotations":
                anns = []
                for k in range(a.copies):
                    for x in snap[key]:
                        x = dict(x)
                        if "time_us" in x:
                            x["time_us"] += k * span
                        anns.append(x)
                w.value(anns)
            else:
                w.value(snap[key])
        w.w(b"u.")
        w.flush()
        f.commit()
    print("%s: %d copies of %d entries, %.1f MB" % (a.out, a.copies, len(hist), w.size / 1e6))


if __name__ == "__main__":
    main()
