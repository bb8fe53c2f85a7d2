#!/usr/bin/env bash
# One GPU call for the ring-buffer recordings (record_all.py ring) and the
# native recorder's checks (native_check.py), with a Release build carried
# in gpu-carry/ (docs/BENCHMARKS.md, "GPU"): results as tar.xz files in $OUT.
#   bash bench/gpu/native_ring.sh [ring] [runs] [bench] [steps]
set -u
. bench/gpu/native_env.sh
OUT=${OUT:-/tmp/fsc-out}
mkdir -p "$OUT"
what=${*:-ring runs bench steps}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
TP=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
grep -n -B3 -A45 "struct TraceEntry" "$TP/include/c10/cuda/CUDACachingAllocator.h" > "$OUT/trace_entry.txt" 2>&1
T0=$(date +%s)
ring_pid=
if [[ " $what " == *" ring "* ]]; then
  (timeout 500 python3 bench/gpu/record_all.py /tmp/ring ring > "$OUT/ring.log" 2>&1) &
  ring_pid=$!
fi
nw=""
for w in runs bench steps bench2 compile2 fsdp tags; do [[ " $what " == *" $w "* ]] && nw="$nw $w"; done
if [ -n "$nw" ]; then
  # shellcheck disable=SC2086
  timeout 520 python3 bench/gpu/native_check.py /tmp/native $nw > "$OUT/native.log" 2>&1
fi
[ -n "$ring_pid" ] && wait "$ring_pid"
echo "elapsed $(( $(date +%s) - T0 ))s"
tail -3 "$OUT/native.log" "$OUT/ring.log" 2>/dev/null
cd /tmp
[ -d ring ] && tar cJf "$OUT/ring.tar.xz" ring
[ -d native ] && tar cJf "$OUT/native.tar.xz" native
ls -la "$OUT"
