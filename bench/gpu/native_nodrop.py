"""The native recorder's promises that entries are never lost without a
word (docs/native.md), on a GPU: a refused second begin_device leaves the
running trace recording; a device the process starts using after record()
gets its own trace from its first entry (needs 2 GPUs); the traces of a
plain run say that nothing was left out, and stats() by kind agrees.

  python3 bench/gpu/native_nodrop.py OUTDIR

Prints CHECK lines (ok / FAIL) and one JSON line of figures; exit 1 when a
check failed. Needs the native recorder's files (bench/gpu/native_env.sh)."""
import json
import os
import subprocess
import sys

import torch
import fragscope_torch as ft

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
fails = []


def check(name, ok, detail=""):
    print("CHECK %s %s%s" % ("ok  " if ok else "FAIL", name, (": " + detail) if detail else ""),
          flush=True)
    if not ok:
        fails.append(name)


def fragscope(*args):
    p = subprocess.run([os.environ.get("FRAGSCOPE_BIN", "fragscope")] + list(args),
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


ndev = torch.cuda.device_count()
torch.cuda.set_device(0)
keep = [torch.empty(3 << 20, dtype=torch.uint8, device="cuda:0")]  # device 0 in use
trace = os.path.join(out, "run.fstrace")
ft.record(trace, verdict=False)
ext = ft._native
for i in range(50):
    x = torch.empty((i + 1) << 16, dtype=torch.uint8, device="cuda:0")
    if i % 5 == 0:
        keep.append(x)
    del x

# a second begin of device 0 is refused, and its trace goes on
refused = False
try:
    ext.begin_device(0, "again", 1, 1, 0, "", [])
except RuntimeError as e:
    refused = "begun already" in str(e)
check("second begin_device refused", refused)
for i in range(50):
    keep.append(torch.empty((i + 1) << 15, dtype=torch.uint8, device="cuda:0"))
ft.flush()

late = None
if ndev >= 2:
    # device 1 was not used when record() ran: its trace begins with its first entry
    y = [torch.empty((i + 1) << 20, dtype=torch.uint8, device="cuda:1") for i in range(10)]
    torch.cuda.synchronize(1)
    late_stats = torch.cuda.memory_stats(1)
    del y
    ft.flush()
    late = ext.trace_path(1)
    check("device 1 has a trace", bool(late) and os.path.exists(late), str(late))
else:
    print("CHECK skip device 1: one GPU (run on 2 GPUs for the late-device check)")

stats0 = torch.cuda.memory_stats(0)
st = ext.stats()
ft.stop()
check("nothing left out (stats)", st[5] == 0 and st[2] == 0 and st[3] == 0, str(st[5:9]))

figs = {"gpus": ndev, "stats": [st[0], st[1], st[2], st[3], st[5], st[6]]}
for name, path, ms in [("dev0", trace, stats0)] + ([("dev1", late, late_stats)] if late else []):
    rc, o, e = fragscope("info", path, "--format", "json")
    info = json.loads(o) if rc == 0 else {}
    sk = info.get("integrity", {}).get("skipped", {}).get("total")
    check(name + " trace says nothing left out", rc == 0 and sk == 0, "skipped=%s" % sk)
    db = os.path.join(out, name + ".db")
    rc, o, e = fragscope("analyze", path, "-o", db)
    check(name + " analyze without a warning", rc == 0 and "warning" not in e, e.strip()[-300:])
    rc, o, e = fragscope("report", db, "--format", "json")
    rep = json.loads(o) if rc == 0 else {}
    peak = rep.get("summary", {}).get("peak_allocated_bytes")
    figs[name] = {"events": info.get("events"), "peak_allocated": peak,
                  "torch_peak_allocated": ms.get("allocated_bytes.all.peak")}
    if name == "dev1":  # the whole of device 1's life is in its trace
        check("dev1 peak allocated = memory_stats()'s", peak == ms["allocated_bytes.all.peak"],
              "%s vs %s" % (peak, ms["allocated_bytes.all.peak"]))
    rc, o, e = fragscope("whatif", path, "--verify")
    check(name + " whatif --verify faithful", rc == 0, o.strip().splitlines()[0] if o else e)
print(json.dumps(figs), flush=True)
sys.exit(1 if fails else 0)
