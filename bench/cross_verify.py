#!/usr/bin/env python3
"""Cross-setting check over a directory of recordings (docs/BENCHMARKS.md).

usage: cross_verify.py [--fragscope PATH] DIR...

In each DIR, every JOB_capC_SETTING.pickle and JOB_nocap_SETTING.pickle
(bench/gpu/record_all.py's names) is checked against JOB_uncapped.pickle, and
every b_NAME.pickle (bench/gpu/boundary.sh's) against b_defaults.pickle:
`fragscope whatif BASE.pickle --verify-against OTHER.pickle [--capacity CAP]`,
with CAP the `cap_bytes` of OTHER's .stats.json where it was capped. Prints a
markdown table row per pair, with PyTorch's own memory_stats() of the other
run as the real figures, then how many pairs matched.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

from recording_pairs import job_and_base


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fragscope", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "fragscope"))
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    print("| recordings | workload | cap (B) | setting | peak reserved predicted / real "
          "| peak allocated predicted / real | addresses matched | OOM predicted / real |")
    print("|---|---|---|---|---|---|---|---|")
    n = m = 0
    for d in a.dirs:
        for f in sorted(glob.glob(os.path.join(d, "*.pickle"))):
            name = os.path.basename(f)[:-len(".pickle")]
            jb = job_and_base(d, name)
            if jb is None:
                continue
            job, base = jb
            if not os.path.exists(base) or os.path.samefile(base, f):
                continue
            with open(f[:-len(".pickle")] + ".stats.json") as s:
                st = json.load(s)
            cmd = [a.fragscope, "whatif", base, "--verify-against", f, "--format", "json"]
            if st.get("cap_bytes"):
                cmd += ["--capacity", str(st["cap_bytes"])]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode not in (0, 1):
                print("| %s | %s | error: %s |" % (d, job, r.stderr.strip()))
                continue
            j = json.loads(r.stdout)
            n += 1
            m += j["match"]
            print("| %s | %s | %s | `%s` | %d / %d | %d / %d | %d / %d | %s / %s |" % (
                os.path.basename(d.rstrip("/")), job, st.get("cap_bytes") or "none", st["conf"] or "(defaults)",
                j["peak_reserved_got"], st["reserved_bytes.all.peak"],
                j["peak_allocated_got"], st["allocated_bytes.all.peak"],
                j["alloc_addr_matches"], j["allocs_compared"],
                "yes" if j["oom_got"] else "no", "yes" if st.get("outcome") == "oom" else "no"))
    print()
    print("%d of %d pairs match exactly" % (m, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
