#!/usr/bin/env python3
"""Snapshots derived from the H200 recordings in tests/data/gpu/ for the
format tests (tests/test_pytorch_formats.c):

- two_devices.pickle: two processes' snapshots merged into one of two devices,
  as one process with two GPUs writes it: rank2.pickle is device 0, pinned.pickle
  device 1 (segments, history, annotations).
- unknown_keys.pickle: pinned.pickle with what a fork or a later PyTorch might
  write: two entries of unknown actions, unknown keys at the top level, in the
  allocator settings, in a segment, in a block and in three history entries;
  and what recent PyTorch writes that 2.11 on this machine did not: an
  `annotate` entry (_annotate_memory), `forward_frames` on an entry, and
  pinned host memory (`host_segments`, `host_traces`).

- legacy.pickle: annotations.pickle as PyTorch before 2.1 wrote it: a history
  whose ring had wrapped (it starts at a free), one 'free' entry per
  free, no allocator_settings, annotations, user_metadata or compile_context,
  blocks without address, requested_size and frames but with 'history'
  ([{addr, real_size, frames}]).

Run from the repository root: python3 tests/data/make_format_fixtures.py
"""
import copy
import pickle

D = "tests/data/gpu/"


def load(name):
    with open(D + name, "rb") as f:
        return pickle.load(f)


def save(name, snap):
    with open(D + name, "wb") as f:
        pickle.dump(snap, f, protocol=4)


def two_devices():
    a, b = load("rank2.pickle"), load("pinned.pickle")
    out = copy.deepcopy(a)
    for s in b["segments"]:
        s = copy.deepcopy(s)
        s["device"] = 1
        out["segments"].append(s)
    out["device_traces"] = [a["device_traces"][0], b["device_traces"][0]]
    for x in b["external_annotations"]:
        x = dict(x)
        x["device"] = 1
        out["external_annotations"].append(x)
    save("two_devices.pickle", out)


def unknown_keys():
    s = load("pinned.pickle")
    t = s["device_traces"][0]
    t0 = t[4]["time_us"]
    t.insert(5, {"action": "workspace_snapshot", "addr": t[4]["addr"], "size": 4096,
                 "stream": 0, "time_us": t0, "frames": t[4]["frames"],
                 "user_metadata": "", "compile_context": "N/A"})
    t.insert(9, {"action": "vendor_op", "time_us": t[8]["time_us"], "detail": [1, (2, 3)]})
    for i in (1, 2, 3):
        t[i]["vendor_tag"] = "v%d" % i
    t.insert(12, {"action": "annotate", "addr": t[11]["addr"], "size": 0, "stream": 0,
                  "time_us": t[11]["time_us"], "frames": [],
                  "user_metadata": '{"layer": "attn.0"}', "compile_context": "N/A"})
    t[13]["forward_frames"] = [{"filename": "model.py", "line": 12, "name": "forward"}]
    s["host_segments"] = [{"address": 1 << 40, "total_size": 2 << 20, "blocks": []}]
    s["host_traces"] = [[{"action": "alloc", "addr": 1 << 40, "size": 4096, "time_us": t0}]]
    s["vendor_info"] = {"build": "fork-1.2", "ids": (7, 8)}
    s["allocator_settings"]["vendor_setting"] = 7
    s["segments"][0]["vendor_segment"] = "x"
    s["segments"][0]["blocks"][0]["vendor_block"] = 1.5
    save("unknown_keys.pickle", s)


def legacy():
    s = load("annotations.pickle")
    t = s["device_traces"][0]
    # the ring starts at a free after entries 51 and 53, which allocated two
    # of the blocks still live at the end: those come from the final segments
    first_free = next(i for i, e in enumerate(t) if i > 53 and e["action"] == "free_requested")
    out = []
    for e in t[first_free:]:
        if e["action"] == "free_requested":
            continue
        e = {k: v for k, v in e.items() if k not in ("user_metadata", "compile_context")}
        if e["action"] == "free_completed":
            e["action"] = "free"
        out.append(e)
    segs = []
    for g in s["segments"]:
        blocks = []
        for b in g["blocks"]:
            nb = {"size": b["size"], "state": b["state"]}
            if b["state"] != "inactive":
                nb["history"] = [{"addr": b["address"], "real_size": b["requested_size"],
                                  "frames": b["frames"]}]
            blocks.append(nb)
        g = {k: v for k, v in g.items() if k not in ("frames", "segment_pool_id", "blocks")}
        g["blocks"] = blocks
        segs.append(g)
    save("legacy.pickle", {"segments": segs, "device_traces": [out]})


two_devices()
unknown_keys()
legacy()
