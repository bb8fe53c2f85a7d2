#!/usr/bin/env python3
"""make_big_json.py — a large JSON memory snapshot made from a real one, for
the memory figure of the streaming JSON reader (docs/BENCHMARKS.md).

    python3 bench/make_big_json.py REAL.pickle OUT.json --copies N

As make_big_snapshot.py does for pickles: the real snapshot's history is
repeated N times, copy k in its own address range (shifted by k * 2^44) and
time span, its final segments shifted the same way; what json.dump of that
dict would write (every entry spells out its frames), written entry by entry
so that the generator's memory does not grow with N.
"""
import argparse
import json
import pickle


def shift_seg(seg, off):
    s = dict(seg)
    s["address"] = seg["address"] + off
    s["blocks"] = [dict(b, address=b["address"] + off) for b in seg["blocks"]]
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("real")
    ap.add_argument("out")
    ap.add_argument("--copies", type=int, required=True)
    a = ap.parse_args()
    with open(a.real, "rb") as f:
        snap = pickle.load(f)
    dev = next(d for d, t in enumerate(snap["device_traces"]) if t)
    trace = snap["device_traces"][dev]
    span = trace[-1]["time_us"] - trace[0]["time_us"] + 1
    with open(a.out, "w") as f:
        f.write('{"segments": [')
        first = True
        for k in range(a.copies):
            for seg in snap["segments"]:
                f.write(("" if first else ", ") + json.dumps(shift_seg(seg, k << 44)))
                first = False
        f.write('], "device_traces": [')
        for d in range(len(snap["device_traces"])):
            if d > 0:
                f.write(", ")
            f.write("[")
            if d == dev:
                first = True
                for k in range(a.copies):
                    for e in trace:
                        x = dict(e, addr=e["addr"] + (k << 44), time_us=e["time_us"] + k * span)
                        f.write(("" if first else ", ") + json.dumps(x))
                        first = False
            f.write("]")
        f.write("]")
        for key in ("allocator_settings", "external_annotations"):
            if key in snap:
                f.write(", %s: %s" % (json.dumps(key), json.dumps(snap[key])))
        f.write("}")


if __name__ == "__main__":
    main()
