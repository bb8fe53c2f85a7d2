"""Check `fragscope diff` on the pairs bench/gpu/diff_pairs.sh recorded (run
here, no GPU needed):

  python3 bench/gpu/diff_pairs_check.py DIR [build/fragscope]

DIR holds NAME.pickle and NAME.stats.json for each run (the unpacked
diff_pairs.tar.xz). For each pair it runs `fragscope diff A.pickle B.pickle
--format json` and checks, against what PyTorch reported (stats.json):
  Δ peak reserved and Δ peak allocated equal PyTorch's,
  program + allocator = Δ peak reserved, the sites add up to Δ peak allocated,
  the explanation is exact;
then prints one line per pair: the parts, the settings' share, the first step
that differs. Exit 1 when a check fails.
"""
import json
import os
import subprocess
import sys

PAIRS = [("batch8", "batch10"), ("batch8", "batch8_ckpt"), ("batch8", "batch8_exp"),
         ("batch8_late", "batch8_early"), ("batch8", "batch8_late"),
         ("batch8_cap", "batch10_cap")]

d = sys.argv[1]
fs = sys.argv[2] if len(sys.argv) > 2 else "build/fragscope"
bad = 0


def mib(v):
    return "%+.2f MiB" % (v / 2**20)


for a, b in PAIRS:
    pa, pb = os.path.join(d, a + ".pickle"), os.path.join(d, b + ".pickle")
    if not (os.path.exists(pa) and os.path.exists(pb)):
        print("%s → %s: missing" % (a, b))
        bad += 1
        continue
    r = subprocess.run([fs, "diff", pa, pb, "--format", "json"], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        print("%s → %s: exit %d: %s" % (a, b, r.returncode, r.stderr.strip()))
        bad += 1
        continue
    j = json.loads(r.stdout)
    sa = json.load(open(os.path.join(d, a + ".stats.json")))
    sb = json.load(open(os.path.join(d, b + ".stats.json")))
    d_res = sb["reserved_bytes.all.peak"] - sa["reserved_bytes.all.peak"]
    d_alloc = sb["allocated_bytes.all.peak"] - sa["allocated_bytes.all.peak"]
    p, al = j["program"], j["allocator"]
    checks = {
        "Δ reserved = PyTorch's": j["delta"]["peak_reserved_bytes"] == d_res,
        "Δ allocated = PyTorch's": j["delta"]["peak_allocated_bytes"] == d_alloc,
        "program + allocator = Δ reserved": p["delta_bytes"] + al["delta_bytes"] == d_res,
        "sites = Δ allocated": sum(s["delta_bytes"] for s in p["sites"]) == d_alloc,
        "exact": j["exact"],
    }
    failed = [k for k, v in checks.items() if not v]
    bad += bool(failed)
    st = j["settings"]
    share = mib(st["explained_bytes"]) if st.get("replayed") else "-"
    print("%-12s → %-13s Δreserved %s = program %s + allocator %s (rounding %s, classes %s, "
          "moments %s); settings %s; first differing step %s; ooms %d→%d %s"
          % (a, b, mib(d_res), mib(p["delta_bytes"]), mib(al["delta_bytes"]),
             mib(al["rounding_bytes"]), mib(al["reserved_unallocated_bytes"]),
             mib(al["moment_bytes"]), share, j["steps"]["first_differing_step"],
             j["base"]["ooms"], j["new"]["ooms"], "FAILED: " + ", ".join(failed) if failed else "ok"))
sys.exit(1 if bad else 0)
