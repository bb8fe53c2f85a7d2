#!/usr/bin/env bash
# native_stacks.sh — the native recorder with _record_memory_history's stacks
# on (native_check.py stacks: Python stacks, all stacks, under module tags,
# begun late, an OOM under a cap), then the entry cost with Python stacks
# (bench_stacks). Release build in gpu-carry/. Results: $OUT/stacks.tar.xz
# (traces, snapshots, stats, stderr with the OOM verdict).
set -u
. bench/gpu/native_env.sh
R=/tmp/stacks
native_prepare "$R"
timeout 300 python3 bench/gpu/native_check.py "$R/s" stacks > "$R/stacks.log" 2>&1
BENCH_ROUNDS=${BENCH_ROUNDS:-2} timeout 200 python3 bench/gpu/native_check.py "$R/b" bench_stacks > "$R/bench_stacks.log" 2>&1
rm -f "$R"/b/*.fstrace
cd /tmp && tar cf - stacks | xz -T0 -6 > "$OUT/stacks.tar.xz"
cat "$R"/stacks.log "$R"/bench_stacks.log | cut -c1-600
grep -h "fragscope" "$R"/s/s_oom.stderr.txt | head -20
