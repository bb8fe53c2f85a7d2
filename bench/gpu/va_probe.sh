#!/usr/bin/env bash
# va_probe.sh — the CUDA driver's placement of cudaMalloc segments after
# cudaFree, probed directly (bench/gpu/va_probe.py; docs/allocator.md, rule 4
# of "Where the driver places segments"). One GPU call, under a minute.
# Out: $OUT/va_probe.json (per scenario: each step's name, MiB, and address
# relative to the scenario's first segment in MiB), $OUT/gpu.txt.
set -u
OUT=${OUT:-/tmp/fsc-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c 'import torch;print(torch.__version__, torch.version.cuda)' >> "$OUT/gpu.txt" 2>&1
timeout 400 python3 bench/gpu/va_probe.py "$OUT/va_probe.json" | tee "$OUT/va_probe.log"
