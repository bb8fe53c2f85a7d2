#!/usr/bin/env bash
# The native recorder's no-silent-loss checks on the GPU (bench/gpu/native_nodrop.py),
# with a Release build of this branch carried in gpu-carry/ (docs/BENCHMARKS.md,
# "GPU": build/, lib/, include/ and fragscope_native.cpp of this checkout). Run
# on 2 GPUs for the late-device check (one GPU runs the rest). Results in $OUT.
#   bash bench/gpu/native_nodrop.sh
set -u
. bench/gpu/native_env.sh
native_prepare /tmp/nodrop
timeout 400 python3 bench/gpu/native_nodrop.py /tmp/nodrop > "$OUT/nodrop.log" 2>&1
echo "exit $?" >> "$OUT/nodrop.log"
cat "$OUT/nodrop.log"
cp /tmp/nodrop/gpu.txt /tmp/nodrop/build.log "$OUT/" 2>/dev/null
