#!/usr/bin/env bash
# native2.sh — the native recorder's entry cost (native_check.py bench2, on a
# quiet GPU first), then compiled GPT-2 with and without fragscope with
# inductor's caches warm (compile3), then the step time (steps); Release
# build in gpu-carry/. Results: $OUT/native2.tar.xz.
set -u
. bench/gpu/native_env.sh
R=/tmp/native2
native_prepare "$R"
BENCH_ROUNDS=${BENCH_ROUNDS:-2} timeout 170 python3 bench/gpu/native_check.py "$R/b" bench2 > "$R/bench2.log" 2>&1
timeout 250 python3 bench/gpu/native_check.py "$R/c" compile3 > "$R/compile3.log" 2>&1
STEP_ROUNDS=${STEP_ROUNDS:-1} timeout 80 python3 bench/gpu/native_check.py "$R/s" steps > "$R/steps.log" 2>&1
cd /tmp && tar cf - native2 | xz -T0 -6 > "$OUT/native2.tar.xz"
cat "$R"/bench2.log "$R"/steps.log
grep -o '"name": "[a-z0-9_]*"\|"peak_reserved": [0-9]*\|"wall_s": [0-9.]*' "$R/compile3.log" | paste - - -
