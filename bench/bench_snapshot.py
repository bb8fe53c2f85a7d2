#!/usr/bin/env python3
"""bench_snapshot.py — fragscope's snapshot commands against Python's own
unpickler, on the same file in the same run.

    python3 bench/bench_snapshot.py SNAPSHOT [--fragscope BIN]... [--cpu N|all]
                                    [--commands import,analyze,whatif] [--json OUT]
                                    [--timeout S] [--rounds N]

The baseline is `python3 -c "import pickle; pickle.load(open(F,'rb'))"`,
the least any tool reading a PyTorch snapshot in Python does (for a JSON
snapshot, `json.load(open(F))`). Each command
runs once per round (--rounds, default 1), as a child process pinned to one CPU (--cpu, default the first
this process may use; --cpu all leaves fragscope's threads every CPU),
and is measured by wall time, user CPU seconds (wait4's ru_utime: the
figure to compare on a loaded machine) and its peak resident set
(ru_maxrss). Every fragscope binary given (for
instance the old and the new build) runs every command. The table gives
each figure and its ratio to pickle.load's; the issue's goals are a time
ratio of at most 1/3 and a peak RSS of at most 1 GB on a snapshot of 1 GB
or more. Outputs go to a temporary directory that is removed.

With several rounds (for a shared, noisy machine) each round runs
pickle.load, then each command with every binary one after the other; the
table gives each command's fastest round (its user seconds and peak RSS
are that run's) and the median of its rounds, and the ratios are to
pickle.load's fastest round.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def measure(argv, cpu, timeout=None):
    def pin():
        if cpu is not None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {cpu})

    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=pin, env=dict(os.environ, FRAGSCOPE_NO_PROGRESS="1"))
    timer = None
    if timeout:
        import threading
        timer = threading.Timer(timeout, p.kill)
        timer.start()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if timer is not None:
        timer.cancel()
    wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    return {"seconds": round(wall, 3), "user": round(ru.ru_utime, 3), "sys": round(ru.ru_stime, 3),
            "peak_rss_mb": round(ru.ru_maxrss / 1024.0, 1), "exit": code,
            "stderr": err.decode(errors="replace")[-300:]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot")
    ap.add_argument("--fragscope", action="append", default=[],
                    help="a fragscope binary (repeat to compare builds; default build/fragscope)")
    ap.add_argument("--commands", default="import,analyze")
    ap.add_argument("--cpu", default=None,
                    help="the CPU each command is pinned to (default the first allowed); "
                         "'all': not pinned, fragscope's threads may use every CPU "
                         "(pickle.load stays on one: it has one thread)")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--timeout", type=float, default=None,
                    help="kill a command after this many seconds (its row says exit -9)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run everything this many times, interleaved (default 1)")
    a = ap.parse_args()
    bins = a.fragscope or ["build/fragscope"]
    cpu = a.cpu
    base_cpu = None
    if hasattr(os, "sched_getaffinity"):
        base_cpu = min(os.sched_getaffinity(0))
    if cpu is None:
        cpu = base_cpu
    elif cpu == "all":
        cpu = None
    else:
        cpu = int(cpu)
        base_cpu = cpu
    size = os.path.getsize(a.snapshot)
    tmp = tempfile.mkdtemp(prefix="bench_snapshot.")
    runs = {}   # name -> the runs of every round
    order = []
    def add(name, r):
        if name not in runs:
            runs[name] = []
            order.append(name)
        runs[name].append(r)
    try:
        with open(a.snapshot, "rb") as f:
            head = f.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
        loader = "json" if head[:1] in (b"{", b"[") else "pickle"
        load = ("import json,sys; json.load(open(sys.argv[1]))" if loader == "json" else
                "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))")
        for _ in range(max(1, a.rounds)):
            add("%s.load" % loader, measure([sys.executable, "-c", load, a.snapshot], base_cpu))
            for c in a.commands.split(","):
                for b in bins:
                    out = os.path.join(tmp, "out." + c)
                    if c == "import":
                        argv = [b, "import", a.snapshot, "-o", out + ".fstrace"]
                    elif c == "analyze":
                        argv = [b, "analyze", a.snapshot, "-o", out + ".db", "--no-suggest"]
                    elif c == "whatif":
                        argv = [b, "whatif", a.snapshot, "--config", "expandable_segments:True"]
                    else:
                        sys.exit("unknown command " + c)
                    add("%s %s" % (b, c), measure(argv, cpu, a.timeout))
                    for f in os.listdir(tmp):
                        os.unlink(os.path.join(tmp, f))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def best(rs):
        ok = [r for r in rs if r["exit"] == 0] or rs
        r = dict(min(ok, key=lambda r: r["seconds"]))
        w = sorted(x["seconds"] for x in rs)
        r["median"] = w[len(w) // 2] if len(w) % 2 else (w[len(w) // 2 - 1] + w[len(w) // 2]) / 2
        r["exit"] = max((x["exit"] for x in rs), key=abs)
        r["peak_rss_mb"] = max(x["peak_rss_mb"] for x in rs)
        return r
    rows = [(n, best(runs[n])) for n in order]
    base = rows[0][1]
    where = ("one CPU (%s)" % cpu) if cpu is not None else \
        "fragscope on every CPU (%d), pickle.load on CPU %s" % (os.cpu_count(), base_cpu)
    rounds = max(1, a.rounds)
    print("snapshot: %s (%.1f MB), %s%s" % (a.snapshot, size / 1e6, where,
          ", fastest of %d rounds" % rounds if rounds > 1 else ""))
    print("%-44s %9s %7s %8s %8s %7s %11s %7s %5s" % ("command", "seconds", "ratio", "median",
                                                       "user s", "ratio", "peak RSS MB", "ratio",
                                                       "exit"))
    for name, r in rows:
        print("%-44s %9.2f %7.3f %8.2f %8.2f %7.3f %11.1f %7.3f %5d" % (
            name[-44:], r["seconds"], r["seconds"] / base["seconds"], r["median"], r["user"],
            r["user"] / max(base["user"], 1e-9), r["peak_rss_mb"],
            r["peak_rss_mb"] / base["peak_rss_mb"], r["exit"]))
        if r["exit"] != 0:
            print("    " + r["stderr"].strip().replace("\n", "\n    "))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"snapshot": a.snapshot, "bytes": size, "cpu": cpu, "rounds": rounds,
                       "best": [dict(r, command=n) for n, r in rows],
                       "runs": [dict(r, command=n) for n in order for r in runs[n]]}, f, indent=1)


if __name__ == "__main__":
    main()
