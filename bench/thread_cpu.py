#!/usr/bin/env python3
"""thread_cpu.py — which of a command's threads bounds its time.

    python3 bench/thread_cpu.py [--json OUT] [--timeline CSV] -- COMMAND [ARG...]

Runs COMMAND and reads /proc/PID/task/*/stat every 20 ms: each thread's CPU
seconds (user + system) as last seen, grouped by thread name (fragscope
names its threads: fsc-decode, fsc-scan, fsc-replay, fsc-db-writer,
fsc-trace, ...; the main thread has the program's name). Prints, per name,
the number of threads, their total CPU seconds and the busiest one's, next
to the command's wall time: a thread whose CPU seconds come close to the
wall time is the one the command waits on. Then the part of the total
spent in the kernel and the minor page faults taken (first touches of
memory, pages of the input mapped again): what a thread loses to paging.
CPU a thread used after its last reading (at most 20 ms) is not counted. --timeline writes every reading
(seconds since the start, thread id, name, CPU seconds so far) as CSV: when
each thread was busy, e.g. where one pass ends and the next begins. Linux only.
"""
import argparse
import json
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def read_tasks(pid, seen, t=None, out=None):
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        cpu = (int(rest[11]) + int(rest[12])) / TICK  # utime, stime
        if out is not None and seen.get(tid, (None, -1))[1] != cpu:
            out.write("%.3f,%s,%s,%.2f\n" % (t, tid, name, cpu))
        seen[tid] = (name, cpu, int(rest[12]) / TICK, int(rest[7]))  # stime, minflt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--timeline", help="write every reading here (CSV)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no command")
    seen = {}
    tl = open(a.timeline, "w") if a.timeline else None
    if tl:
        tl.write("t_s,tid,thread,cpu_s\n")
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    while p.poll() is None:
        read_tasks(p.pid, seen, time.monotonic() - t0, tl)
        time.sleep(0.02)
    if tl:
        tl.close()
    wall = time.monotonic() - t0
    groups = {}
    for name, cpu, sys_s, minflt in seen.values():
        g = groups.setdefault(name, [0, 0.0, 0.0, 0.0, 0])
        g[0] += 1
        g[1] += cpu
        g[2] = max(g[2], cpu)
        g[3] += sys_s
        g[4] += minflt
    print("%s: wall %.2f s, exit %d" % (" ".join(os.path.basename(c) for c in cmd[:2]), wall, p.returncode))
    print("%-16s %7s %9s %9s %8s %7s %9s" % ("thread", "threads", "CPU s", "busiest", "× wall",
                                             "sys s", "minflt"))
    for name, (n, tot, top, sys_s, flt) in sorted(groups.items(), key=lambda kv: -kv[1][2]):
        print("%-16s %7d %9.2f %9.2f %8.2f %7.2f %9d" % (name, n, tot, top, top / wall if wall else 0,
                                                       sys_s, flt))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cmd": cmd, "wall_s": wall, "exit": p.returncode,
                       "threads": {k: {"n": v[0], "cpu_s": v[1], "busiest_s": v[2],
                                       "sys_s": v[3], "minflt": v[4]}
                                   for k, v in groups.items()}}, f, indent=1)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
