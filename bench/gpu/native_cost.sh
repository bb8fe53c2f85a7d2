#!/usr/bin/env bash
# native_cost.sh — the native recorder's costs on the final code, one GPU
# call each part: `entry` (native_check.py bench2, BENCH_ROUNDS rounds, on a
# quiet GPU) or `steps` (GPT-2 step time, STEP_MODES alternated over
# STEP_ROUNDS rounds). Release build in gpu-carry/. Results: $OUT/cost_PART.tar.xz.
set -u
. bench/gpu/native_env.sh
part=${1:-entry}
R=/tmp/cost_$part
native_prepare "$R"
if [ "$part" = entry ]; then
  BENCH_ROUNDS=${BENCH_ROUNDS:-4} timeout 540 python3 bench/gpu/native_check.py "$R/b" bench2 > "$R/log" 2>&1
else
  STEP_ROUNDS=${STEP_ROUNDS:-2} timeout 540 python3 bench/gpu/native_check.py "$R/b" steps > "$R/log" 2>&1
fi
rm -f "$R"/b/*.fstrace
cat "$R/gpu.txt" "$R/log"
cd /tmp && tar cf - "cost_$part" | xz -T0 -6 > "$OUT/cost_$part.tar.xz"
