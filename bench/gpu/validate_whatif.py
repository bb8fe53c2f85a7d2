"""Compare `fragscope whatif` predictions, made from the uncapped GPT-2 run's
snapshot alone, with what PyTorch did in the capped runs recorded on the H200
(bench/gpu/results/cap*.json, written by `bench/gpu/run.sh caps`).
Usage: python3 bench/gpu/validate_whatif.py build/fragscope  → a Markdown table."""
import glob
import json
import os
import subprocess
import sys

fragscope = sys.argv[1] if len(sys.argv) > 1 else "build/fragscope"
here = os.path.dirname(os.path.abspath(__file__))
snap = os.path.join(here, "..", "..", "sample_traces", "gpt2_h200_uncapped.pickle")
runs = []
for path in sorted(glob.glob(os.path.join(here, "results", "cap*.json"))):
    if path.endswith(".stats.json"):
        continue
    d = json.load(open(path))
    runs.append(d)
by_cap = {}
for d in runs:
    by_cap.setdefault(d["cap_gib"], []).append(d)
rows = []
for cap, ds in sorted(by_cap.items()):
    cap_bytes = int(cap * (1 << 30))
    cmd = [fragscope, "whatif", snap, "--capacity", str(cap_bytes), "--format", "json"]
    for d in ds:
        cmd += ["--config", d["conf"]]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    pred = {o["config"]: o for o in out}
    for d in ds:
        p = pred.get(d["conf"]) or next(o for o in out if o["config"] == (d["conf"] or ""))
        rows.append((cap, d["conf"] or "(defaults)", d["outcome"], "oom" if p["oom"] else "ok",
                     d["peak_reserved"], p["peak_reserved_bytes"]))
print("| cap (GiB) | settings | PyTorch | predicted | peak reserved PyTorch | predicted | error |")
print("|---|---|---|---|---|---|---|")
agree = 0
errs = []
for cap, conf, real, predo, pr, pp in rows:
    err = (pp - pr) / pr * 100
    errs.append(abs(err))
    agree += real == predo
    print(f"| {cap:.3f} | `{conf}` | {real} | {predo} | {pr} | {pp} | {err:+.3f}% |")
print()
print(f"outcome agrees in {agree} of {len(rows)} runs; peak reserved: max |error| "
      f"{max(errs):.3f}%, mean {sum(errs)/len(errs):.3f}%, exact in "
      f"{sum(1 for e in errs if e == 0)} of {len(rows)}")
