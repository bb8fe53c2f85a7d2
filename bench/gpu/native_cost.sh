#!/usr/bin/env bash
# native_cost.sh — the native recorder's costs on the final code, one GPU
# call each part: `entry` (native_check.py bench2, BENCH_ROUNDS rounds, on a
# quiet GPU) or `steps` (GPT-2 step time, STEP_MODES alternated over
# STEP_ROUNDS rounds). Release build in gpu-carry/. Results: $OUT/cost_PART.tar.xz.
set -u
. bench/gpu/native_env.sh
OUT=${OUT:-/tmp/fsc-out}
part=${1:-entry}
R=/tmp/cost_$part
mkdir -p "$OUT" "$R"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$R/gpu.txt" 2>&1
python3 -c 'import fragscope_torch as f; f._build_native(verbose=False)' > "$R/build.log" 2>&1 || tail -30 "$R/build.log"
if [ "$part" = entry ]; then
  BENCH_ROUNDS=${BENCH_ROUNDS:-4} timeout 540 python3 bench/gpu/native_check.py "$R/b" bench2 > "$R/log" 2>&1
else
  STEP_ROUNDS=${STEP_ROUNDS:-2} timeout 540 python3 bench/gpu/native_check.py "$R/b" steps > "$R/log" 2>&1
fi
rm -f "$R"/b/*.fstrace
cat "$R/gpu.txt" "$R/log"
cd /tmp && tar cf - "cost_$part" | xz -T0 -6 > "$OUT/cost_$part.tar.xz"
