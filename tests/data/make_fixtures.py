#!/usr/bin/env python3
"""Writes the PyTorch-snapshot fixtures under tests/data/pytorch/.

Run from anywhere: python3 tests/data/make_fixtures.py
The outputs are committed, so the tests never need Python; rerun this only
to change a fixture. The expected events of each fixture are worked out by
hand in tests/test_pytorch_import.c.
"""
import json
import os
import pickle

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch")
MiB = 1 << 20


def out(name):
    return os.path.join(HERE, name)


def frame(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


MAIN = frame("train.py", 5, "main")


def entry(action, addr, size, t, frames=(), **extra):
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
         "compile_context": "N/A", "user_metadata": "", "frames": list(frames)}
    e.update(extra)
    return e


def settings(conf="", expandable=False):
    return {"PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": -1,
            "garbage_collection_threshold": 0.0, "expandable_segments": expandable,
            "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}


def block(addr, size, req, state, frames=()):
    return {"address": addr, "size": size, "requested_size": req, "state": state,
            "frames": list(frames)}


def segment(addr, total, kind, blocks, expandable=False, device=0):
    return {"device": device, "address": addr, "total_size": total,
            "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "active_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
            "requested_size": sum(b["requested_size"] for b in blocks),
            "stream": 0, "segment_type": kind, "segment_pool_id": (0, 0),
            "is_expandable": expandable, "frames": [], "blocks": blocks}


def tiny():
    """A complete history: small and large segments, splits, an unsplit
    large block, merges, a segment release and an OOM."""
    A, B = 0x10000000, 0x20000000
    f1 = [frame("model.py", 10, "forward"), MAIN]
    f2 = [frame("model.py", 11, "forward"), MAIN]
    trace = [
        entry("segment_alloc", A, 2 * MiB, 1000, f1),
        entry("alloc", A, 1000, 1001, f1),
        entry("alloc", A + 1024, 512, 1002, f2),
        entry("segment_alloc", B, 20 * MiB, 1003, f2),
        entry("alloc", B, 3000000, 1004, f2),
        entry("alloc", B + 3000320, 17000000, 1005, f1),
        entry("free_requested", A, 1000, 1006, [MAIN]),
        entry("free_completed", A, 1000, 1007, [MAIN]),
        entry("free_requested", A + 1024, 512, 1008, [MAIN]),
        entry("free_completed", A + 1024, 512, 1009, [MAIN]),
        entry("segment_free", A, 2 * MiB, 1010, [MAIN]),
        {"action": "oom", "device_free": 123456, "size": 30000000, "stream": 0,
         "time_us": 1011, "compile_context": "N/A", "user_metadata": "", "frames": f1},
        entry("free_requested", B, 3000000, 1012, [MAIN]),
        entry("free_completed", B, 3000000, 1013, [MAIN]),
    ]
    segs = [segment(B, 20 * MiB, "large", [
        block(B, 3000320, 0, "inactive"),
        block(B + 3000320, 17971200, 17000000, "active_allocated", f1)])]
    ann = [{"stage": "START", "name": "Optimizer.step#SGD.step", "device": 0, "time_us": 1005},
           {"stage": "END", "name": "Optimizer.step#SGD.step", "device": 0, "time_us": 1012},
           {"stage": "START", "name": "other device", "device": 1, "time_us": 1006}]
    return {"segments": segs, "device_traces": [trace], "allocator_settings": settings(),
            "external_annotations": ann}


def midrun():
    """History that starts mid-run (the ring wrapped): blocks and segments
    that existed before the first entry must be rebuilt."""
    L, P2 = 0x30000000, 0x40000000
    fx = [frame("model.py", 20, "weights"), MAIN]
    trace = [
        entry("free_requested", L, 4 * MiB, 5000, [MAIN]),
        entry("free_completed", L, 4 * MiB, 5001, [MAIN]),
        entry("alloc", L, MiB + 1, 5002, [MAIN]),
        entry("alloc", L + 6 * MiB, 5000000, 5003, [MAIN]),
        entry("free_completed", L + 18 * MiB, 1572864, 5004, [MAIN]),
        entry("free_requested", P2, 800, 5005, [MAIN]),
        entry("free_completed", P2, 800, 5006, [MAIN]),
        entry("segment_free", P2, 2 * MiB, 5007, [MAIN]),
    ]
    segs = [segment(L, 20 * MiB, "large", [
        block(L, 1049088, 1048577, "active_allocated", [MAIN]),
        block(L + 1049088, 3145216, 0, "inactive"),
        block(L + 4 * MiB, 2 * MiB, 2000000, "active_allocated", fx),
        block(L + 6 * MiB, 5000192, 5000000, "active_allocated", [MAIN]),
        block(L + 6 * MiB + 5000192, 9679872, 0, "inactive")])]
    return {"segments": segs, "device_traces": [trace], "allocator_settings": settings()}


def expandable():
    """expandable_segments:True: pages mapped and unmapped."""
    E = 0x50000000
    trace = [
        entry("segment_map", E, 20 * MiB, 100, [MAIN]),
        entry("alloc", E, 10 * MiB, 101, [MAIN]),
        entry("segment_map", E + 20 * MiB, 20 * MiB, 102, [MAIN]),
        entry("alloc", E + 10 * MiB, 15 * MiB, 103, [MAIN]),
        entry("free_requested", E, 10 * MiB, 104, [MAIN]),
        entry("free_completed", E, 10 * MiB, 105, [MAIN]),
        entry("segment_unmap", E, 10 * MiB, 106, [MAIN]),
    ]
    segs = [segment(E + 10 * MiB, 30 * MiB, "large", [
        block(E + 10 * MiB, 15 * MiB, 15 * MiB, "active_allocated", [MAIN]),
        block(E + 25 * MiB, 15 * MiB, 0, "inactive")], expandable=True)]
    return {"segments": segs, "device_traces": [trace],
            "allocator_settings": settings("expandable_segments:True", True)}


def segments_only():
    """torch.cuda.memory_snapshot(): a plain list of segments; the second
    one in the older form whose blocks carry no address."""
    S, T = 0x60000000, 0x70000000
    s1 = segment(S, 20 * MiB, "large", [
        block(S, 3 * MiB, 3000000, "active_allocated", [frame("model.py", 30, "embed"), MAIN]),
        block(S + 3 * MiB, 17 * MiB, 0, "inactive")])
    s2 = segment(T, 2 * MiB, "small", [
        {"size": 512, "requested_size": 0, "state": "inactive"},
        {"size": 1024, "requested_size": 1000, "state": "active_pending_free"},
        {"size": 2 * MiB - 1536, "requested_size": 0, "state": "inactive"}])
    return [s1, s2]


def multidev():
    t0 = [entry("segment_alloc", 0x80000000, 2 * MiB, 1), entry("alloc", 0x80000000, 512, 2)]
    t1 = [entry("segment_alloc", 0x90000000, 20 * MiB, 1),
          entry("alloc", 0x90000000, 2 * MiB, 2)]
    segs = [segment(0x80000000, 2 * MiB, "small", [], device=0),
            segment(0x90000000, 20 * MiB, "large", [], device=1)]
    return {"segments": segs, "device_traces": [t0, t1], "allocator_settings": settings()}


def unknown_free():
    """A free of an address that no segment holds."""
    return {"segments": [], "device_traces": [[
        entry("segment_alloc", 0xa0000000, 2 * MiB, 1),
        entry("free_requested", 0xb0000000, 512, 2),
        entry("alloc", 0xa0000000, 512, 3)]], "allocator_settings": settings()}


def frames_bomb():
    """20000 entries sharing one 2000-frame list: pickle memoizes it once;
    walking it per entry would cost 40 million frame visits."""
    fr = [frame("deep.py", i, "f%d" % i) for i in range(2000)]
    A = 0xc0000000
    trace = [entry("segment_alloc", A, 20 * MiB, 0, fr)]
    for i in range(10000):
        trace.append(entry("alloc", A, 2 * MiB, 2 * i + 1))
        trace.append(entry("free_completed", A, 2 * MiB, 2 * i + 2))
    for e in trace:
        e["frames"] = fr  # the same list object: pickled once, then referenced
    return {"segments": [], "device_traces": [trace], "allocator_settings": settings()}


def hostile():
    """Raw byte strings that must be rejected cleanly."""
    h = {}
    h["deep.pickle"] = b"\x80\x04N" + b"\x85" * 100 + b"."
    h["many_marks.pickle"] = b"\x80\x04" + b"(" * 100000 + b"."
    h["huge_len.pickle"] = b"\x80\x04X\xff\xff\xff\x7fabc."
    h["huge_len8.pickle"] = b"\x80\x04\x8d" + b"\xff" * 8 + b"abc."
    h["memo_oob.pickle"] = b"\x80\x04h\x05."
    h["binput_huge.pickle"] = b"\x80\x04Nr\xff\xff\xff\xff."
    h["self_ref.pickle"] = b"\x80\x04]\x94h\x00a."
    # [L0] nests L0, then L0 is appended to: a sealed container is modified
    h["sealed_mutation.pickle"] = b"\x80\x04]\x94]h\x00ah\x00Na."
    h["global.pickle"] = b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsR."
    h["bad_proto.pickle"] = b"\x80\x07N."
    h["no_stop.pickle"] = b"\x80\x04}\x94(\x8c\x08segments]u"
    h["long_too_wide.pickle"] = b"\x80\x04\x8a\x10" + b"\x01" * 16 + b"."
    h["setitems_odd.pickle"] = b"\x80\x04}(Nu."
    h["append_to_int.pickle"] = b"\x80\x04K\x01Na."
    h["notsnap.pickle"] = pickle.dumps(12345, protocol=4)
    return h


def memo_bomb():
    """L(k+1) = [Lk, Lk] for 60 levels: 2^60 leaves in under 1 KiB. It
    parses (shared references cost nothing) and is then rejected as not a
    snapshot without being walked."""
    b = bytearray(b"\x80\x04N\x85\x940")  # memo 0: (None,), popped
    for k in range(60):
        # a new list holding two references to the previous level
        b += b"](" + (b"j" + k.to_bytes(4, "little")) * 2 + b"e\x94"
        if k < 59:
            b += b"0"
    b += b"."
    return bytes(b)


def newer_settings():
    """A snapshot as PyTorch after 2.11 would write it (synthetic: no such
    PyTorch ran here), built from its sources of 2026: large_segment_size_mb
    makes 12 MiB segments for 5 MiB requests; two settings fragscope does
    not model; the ring's facts in allocator_settings; user_metadata as a
    dict; a frame with fx_node_target. tests/test_settings_table.c."""
    A, B = 0x10000000, 0x20000000
    conf = ("large_segment_size_mb:12,expandable_segments_reserve:0.5,"
            "graph_capture_record_stream_reuse:True")
    fx = dict(frame("fx_graph.py", 7, "forward"), fx_node_op="call_function",
              fx_node_name="mm", fx_node_target="aten.mm.default")
    f1 = [frame("model.py", 10, "forward"), MAIN]
    trace = [
        entry("segment_alloc", A, 12 * MiB, 1000, f1),
        entry("alloc", A, 5 * MiB, 1001, f1),
        entry("alloc", A + 5 * MiB, 5 * MiB, 1002, f1, user_metadata={"step": 3}),
        entry("segment_alloc", B, 12 * MiB, 1003, [fx, MAIN]),
        entry("alloc", B, 5 * MiB, 1004, [fx, MAIN]),
        entry("free_requested", A + 5 * MiB, 5 * MiB, 1005, [MAIN]),
        entry("free_completed", A + 5 * MiB, 5 * MiB, 1006, [MAIN]),
    ]
    segs = [segment(A, 12 * MiB, "large", [
                block(A, 5 * MiB, 5 * MiB, "active_allocated", f1),
                block(A + 5 * MiB, 7 * MiB, 0, "inactive")]),
            segment(B, 12 * MiB, "large", [
                block(B, 5 * MiB, 5 * MiB, "active_allocated", [fx, MAIN]),
                block(B + 5 * MiB, 7 * MiB, 0, "inactive")])]
    st = settings(conf)
    st.update({"graph_capture_record_stream_reuse": True, "trace_alloc_overflowed": False,
               "trace_alloc_max_entries": 100000})
    return {"segments": segs, "device_traces": [trace], "allocator_settings": st}


def write_newer_settings():
    with open(out("newer_settings.json"), "w") as f:
        json.dump(newer_settings(), f)


def names():
    """Frame and file names a spreadsheet would run as formulas, and lone
    surrogates (a Python str may hold them; pickle writes them as bytes
    that are not UTF-8; protocol 0 writes them as \\ud800 escapes)."""
    A = 0x10000000
    f1 = [frame("=HYPERLINK(\"http://x.invalid/\",\"c\")", 1, "@SUM(1+1)"),
          frame("bad\ud800name.py", 2, "-2+3"), frame("+cmd|x", 3, "lone\udcffend")]
    trace = [
        entry("segment_alloc", A, 2 * MiB, 1, f1),
        entry("alloc", A, 1000, 2, f1),
        {"action": "oom", "device_free": 123456, "size": 30000000, "stream": 0,
         "time_us": 3, "compile_context": "N/A", "user_metadata": "", "frames": f1},
    ]
    segs = [segment(A, 2 * MiB, "small", [
        block(A, 1024, 1000, "active_allocated", f1),
        block(A + 1024, 2 * MiB - 1024, 0, "inactive")])]
    return {"segments": segs, "device_traces": [trace], "allocator_settings": settings()}


def empty_history():
    """_snapshot() without _record_memory_history: segments and blocks at
    the moment of the snapshot, device_traces an empty list per device."""
    A, B = 0x10000000, 0x20000000
    segs = [segment(A, 2 * MiB, "small", [
        block(A, 1024, 1000, "active_allocated"),
        block(A + 1024, 2 * MiB - 1024, 0, "inactive")]),
        segment(B, 20 * MiB, "large", [
            block(B, 3 * MiB, 3000000, "active_allocated"),
            block(B + 3 * MiB, 17 * MiB, 0, "inactive")])]
    return {"segments": segs, "device_traces": [[]], "allocator_settings": settings()}


def write_names_and_empty():
    with open(out("names.pickle"), "wb") as f:
        pickle.dump(names(), f, protocol=4)
    with open(out("names.p0.pickle"), "wb") as f:
        pickle.dump(names(), f, protocol=0)
    # bytes no Python str encodes to: a stray 0xFF and a cut sequence
    raw = pickle.dumps(names(), protocol=4)
    bad = "lone\udcffend".encode("utf-8", "surrogatepass")
    assert raw.count(bad) == 1
    with open(out("names_raw.pickle"), "wb") as f:
        f.write(raw.replace(bad, b"lone\xff\xe2\x82(nd"))
    with open(out("empty_history.pickle"), "wb") as f:
        pickle.dump(empty_history(), f, protocol=4)
    with open(out("empty_history.json"), "w") as f:
        json.dump(empty_history(), f)


def main():
    os.makedirs(os.path.join(HERE, "hostile"), exist_ok=True)
    t = tiny()
    for proto in (2, 4, 5):
        with open(out("tiny.p%d.pickle" % proto), "wb") as f:
            pickle.dump(t, f, protocol=proto)
    with open(out("tiny.json"), "w") as f:
        json.dump(t, f)
    write_newer_settings()
    with open(out("midrun.pickle"), "wb") as f:
        pickle.dump(midrun(), f, protocol=4)
    with open(out("expandable.pickle"), "wb") as f:
        pickle.dump(expandable(), f, protocol=4)
    with open(out("segments_only.json"), "w") as f:
        json.dump(segments_only(), f)
    with open(out("segments_only.pickle"), "wb") as f:
        pickle.dump(segments_only(), f, protocol=2)
    with open(out("multidev.pickle"), "wb") as f:
        pickle.dump(multidev(), f, protocol=4)
    with open(out("unknown_free.pickle"), "wb") as f:
        pickle.dump(unknown_free(), f, protocol=4)
    with open(out("frames_bomb.pickle"), "wb") as f:
        pickle.dump(frames_bomb(), f, protocol=4)
    for name, data in hostile().items():
        with open(os.path.join(HERE, "hostile", name), "wb") as f:
            f.write(data)
    with open(os.path.join(HERE, "hostile", "memo_bomb.pickle"), "wb") as f:
        f.write(memo_bomb())
    with open(os.path.join(HERE, "hostile", "bad.json"), "w") as f:
        f.write('{"segments": [1, 2,')
    with open(os.path.join(HERE, "hostile", "deep.json"), "w") as f:
        f.write("[" * 100 + "]" * 100)
    with open(os.path.join(HERE, "hostile", "negative_size.json"), "w") as f:
        json.dump({"segments": [], "device_traces": [[
            entry("segment_alloc", 0x10000000, 2 * MiB, 1),
            entry("alloc", 0x10000000, -512, 2)]]}, f)
    with open(os.path.join(HERE, "hostile", "huge_size.pickle"), "wb") as f:
        pickle.dump({"segments": [], "device_traces": [[
            entry("segment_alloc", 0x10000000, 1 << 62, 1)]]}, f, protocol=4)
    with open(os.path.join(HERE, "hostile", "torch_save.zip"), "wb") as f:
        f.write(b"PK\x03\x04" + b"\x00" * 26)
    with open(os.path.join(HERE, "hostile", "garbage.bin"), "wb") as f:
        f.write(b"GIF89a not a snapshot")
    write_names_and_empty()


if __name__ == "__main__":
    main()
