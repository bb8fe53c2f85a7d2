#!/usr/bin/env python3
"""What-if without the answer, checked against the real runs (docs/BENCHMARKS.md).

usage: placement_check.py [--fragscope PATH] [--markdown] DIR...

A user asking "what would roundup_power2_divisions:4 do?" has only the run recorded under the
defaults. For each recording OTHER in DIR that is the same job under another setting or cap, this
runs a plain `fragscope whatif BASE --config CONF [--capacity CAP]` (no --verify-against: the
replay never sees OTHER's segment addresses) and compares the predicted peak allocated, peak
reserved and OOM outcome with PyTorch's own memory_stats() of OTHER (its .stats.json). CONF is
OTHER's `conf`, CAP its `cap_bytes` (the set_per_process_memory_fraction cap), as in
bench/cross_verify.py.

Pairs, by bench/gpu/record_all.py's and bench/gpu/boundary.sh's names (every NAME.stats.json
in DIR, its snapshot not needed):
  b_NAME            against b_defaults
  JOB_capC_SETTING  against JOB_uncapped
  JOB_nocap_SETTING against JOB_uncapped

A pair is exact when both peaks are equal to the byte and the OUTCOME agrees. Where the replay
placed segments by the placement model's least certain rule and the placements tried disagree
(the JSON's "placement": docs/allocator.md), the range they span is shown and whether the real
figure lies in it. For each pair that is not exact and whose OTHER snapshot is there, the same
what-if is run once more given OTHER's addresses (--verify-against, as bench/cross_verify.py):
"differs too" there means the miss is not the placement model's (last column). Prints a markdown
table and the counts.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

from recording_pairs import job_and_base


def pairs(d):
    # Every run with PyTorch's stats counts, with or without its snapshot:
    # a plain what-if needs only the base recording.
    for st in sorted(glob.glob(os.path.join(d, "*.stats.json"))):
        name = os.path.basename(st)[:-len(".stats.json")]
        jb = job_and_base(d, name)
        if jb is None:
            continue
        job, base = jb
        if not os.path.exists(base) or os.path.basename(base) == name + ".pickle":
            continue
        yield job, name, base, st


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fragscope", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "fragscope"))
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    print("| job | recording | cap (B) | setting | peak reserved predicted / real | "
          "peak allocated predicted / real | OOM predicted / real | exact | placement decides | "
          "with the real addresses |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    n = m = nd = inr = 0
    notpl = 0
    rows = []
    for d in a.dirs:
        for job, name, base, stats in pairs(d):
            with open(stats) as s:
                st = json.load(s)
            conf = st.get("conf") or ""
            cmd = [a.fragscope, "whatif", base, "--config", conf, "--format", "json"]
            if st.get("cap_bytes"):
                cmd += ["--capacity", str(st["cap_bytes"])]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode not in (0, 1):
                print("| %s | %s | error: %s |" % (job, name, r.stderr.strip()))
                continue
            j = json.loads(r.stdout)[0]
            real_oom = st.get("outcome") == "oom"
            pr, pa = j["peak_reserved_bytes"], j["peak_allocated_bytes"]
            rr, ra = st["reserved_bytes.all.peak"], st["allocated_bytes.all.peak"]
            ok = pr == rr and pa == ra and bool(j["oom"]) == real_oom
            pl = j.get("placement") or {}
            dec = bool(pl.get("decides"))
            rng = ""
            if dec:
                (rlo, rhi), (alo, ahi) = pl["peak_reserved_range"], pl["peak_allocated_range"]
                inside = rlo <= rr <= rhi and alo <= ra <= ahi
                nd += 1
                inr += inside
                rng = "reserved %d–%d, allocated %d–%d, OOM in %d of %d: real %s" % (
                    rlo, rhi, alo, ahi, pl["oom_in_variants"], pl["variants"],
                    "inside" if inside else "outside")
            # A miss that the replay keeps when given the other run's addresses
            # (--verify-against, as bench/cross_verify.py) is not placement's.
            given = ""
            other = stats[:-len(".stats.json")] + ".pickle"
            if not ok and os.path.exists(other):
                vc = cmd[:3] + ["--verify-against", other, "--format", "json"] + cmd[7:]
                v = subprocess.run(vc, capture_output=True, text=True)
                try:
                    vj = json.loads(v.stdout)
                    vok = (vj["peak_reserved_got"] == rr and vj["peak_allocated_got"] == ra
                           and bool(vj["oom_got"]) == real_oom)
                    given = "exact" if vok else "differs too"
                    notpl += not vok
                except (ValueError, KeyError, IndexError, TypeError):
                    given = "error"
            n += 1
            m += ok
            rows.append(dict(job=job, recording=name, cap=st.get("cap_bytes"), conf=conf,
                             peak_reserved=[pr, rr], peak_allocated=[pa, ra],
                             oom=[bool(j["oom"]), real_oom], exact=ok, placement=pl,
                             with_real_addresses=given or None))
            print("| %s | %s | %s | `%s` | %d / %d (%+.2f %%) | %d / %d (%+.2f %%) | %s / %s | %s | %s | %s |" % (
                job, name, st.get("cap_bytes") or "none", conf or "(defaults)",
                pr, rr, 100.0 * (pr - rr) / rr if rr else 0.0,
                pa, ra, 100.0 * (pa - ra) / ra if ra else 0.0,
                "yes" if j["oom"] else "no", "yes" if real_oom else "no",
                "yes" if ok else "no", rng or "no", given or "-"))
    print()
    print("%d of %d pairs exact (both peaks to the byte, same OOM outcome); placement decides in "
          "%d, the real figures inside the range in %d of them; %d of the %d misses stay misses "
          "given the other run's addresses (not placement's)" % (m, n, nd, inr, notpl, n - m))
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump(dict(exact=m, pairs=n, decides=nd, inside=inr, not_placement=notpl,
                           rows=rows), f, indent=1)
        os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
