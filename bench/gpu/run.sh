#!/usr/bin/env bash
# bench/gpu/run.sh — every GPU measurement and recording, one task or several
# per call, for a machine with one NVIDIA GPU, PyTorch and transformers.
#
#   bash bench/gpu/run.sh TASK [TASK...]
#
# Results go to $RESULTS (default /tmp/fragscope-gpu/<YYYY-MM-DD>), one folder
# per task, and, when $OUT is set, as $OUT/<date>-<tasks>.tar.xz. Tasks that
# run fragscope expect a Release build with the cuda backend in $B/build and
# the shared libraries the machine lacks in $B/lib (B defaults to gpu-carry;
# docs/BENCHMARKS.md says how such a folder is made).
#
# Tasks:
#   cuda-tests     the allocator's test suites on real memory
#   bench-alloc    alloc+free pairs: cuda backend vs PyTorch's native allocator (same process)
#   step-time      GPT-2 step time, native allocator vs the shim (off / recording / module tags),
#                  ROUNDS alternating rounds (default 2)
#   caps           GPT-2 under caps CAP_FRACS (fractions of its uncapped peak reserved, default
#                  "0.70 0.80 0.90 0.94 0.97 1.0") x CAP_CONFS settings, native allocator
#   shim-samples   the shim's sample traces (sample_traces/gpt2_h200_shim*.fstrace)
#   shim-external  GPT-2 through the shim after raw cudaMalloc took all but LEAVE_GIB (default 5)
#                  of the device: the trace's device samples and the OOM diagnosed `external`
#   record         real PyTorch recordings of common habits (bench/gpu/record_all.py;
#                  RECORD="habits caps external" by default; "mempool_opts": MemPool use_on_oom, no_split)
set -u
B=${B:-gpu-carry}
DATE=$(date +%F)
RESULTS=${RESULTS:-/tmp/fragscope-gpu/$DATE}
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/$B/build:${PYTHONPATH:-}
export FRAGSCOPE_TORCH_LIB=$PWD/$B/build/libfragscope_torch.so
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
mkdir -p "$RESULTS"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$RESULTS/gpu.txt" 2>&1
train() { timeout 300 python3 bench/gpu/train_gpt2.py "$@"; }
field() { python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print(d.get(sys.argv[2]))" "$@"; }

task_cuda_tests() {
  for t in "$B"/build/tests/test_allocator*; do echo "== $t"; timeout 300 "$t"; done > "$1/cuda_tests.log" 2>&1
  tail -3 "$1/cuda_tests.log"
}

task_bench_alloc() {
  local TP; TP=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
  g++ -O2 -std=c++17 bench/gpu/bench_vs_torch.cpp -Iinclude -I"$B/build/include" -I"$TP/include" \
    -I"$TP/include/torch/csrc/api/include" -I/usr/local/cuda/include \
    "$B/build/allocator/libfsc_allocator.a" "$B/build/common/libfsc_common.a" \
    -L"$TP/lib" -lc10_cuda -lc10 -L/usr/local/cuda/lib64 -lcudart -L/usr/local/cuda/lib64/stubs -lcuda \
    -Wl,-rpath,"$TP/lib" -lpthread -lm -o /tmp/bvt > "$1/bench_build.log" 2>&1 &&
    timeout 240 /tmp/bvt > "$1/bench_vs_torch.json" 2>&1
  tail -8 "$1/bench_vs_torch.json" "$1/bench_build.log"
}

task_step_time() {
  local d=$1 r
  for r in $(seq 1 "${ROUNDS:-2}"); do
    train --alloc native --steps 30 --label native_$r > "$d/t_native_$r.json" 2>/dev/null
    train --alloc fragscope --hooks none --steps 30 --label shim_norec_$r > "$d/t_shim_norec_$r.json" 2>/dev/null
    train --alloc fragscope --hooks none --trace /tmp/t.fstrace --steps 30 --label shim_rec_$r > "$d/t_shim_rec_$r.json" 2>/dev/null
    train --alloc fragscope --hooks all --trace /tmp/t.fstrace --steps 30 --label shim_rec_all_$r > "$d/t_shim_rec_all_$r.json" 2>/dev/null
    for f in "$d"/t_*_"$r".json; do echo "$(field "$f" label) $(field "$f" mean_step_s) s"; done
  done
}

task_caps() {
  local d=$1 pr frac cap conf name snap
  train --steps "${STEPS:-8}" --snapshot "$d/gpt2_uncapped.pickle" --label uncapped > "$d/uncapped.json" 2> "$d/uncapped.err"
  pr=$(field "$d/uncapped.json" peak_reserved)
  log "uncapped peak reserved $pr"
  for frac in ${CAP_FRACS:-0.70 0.80 0.90 0.94 0.97 1.0}; do
    cap=$(python3 -c "print(round($pr*$frac/2**30, 3))")
    while IFS= read -r conf; do
      name="cap${frac}_$(echo "${conf:-default}" | tr ':.,' '___')"
      snap=""; [ -z "$conf" ] && snap="--snapshot $d/$name.pickle"
      PYTORCH_CUDA_ALLOC_CONF="$conf" train --steps "${STEPS:-8}" --cap-gib "$cap" $snap \
        --label "$name" > "$d/$name.json" 2> "$d/$name.err"
      echo "$name $(field "$d/$name.json" outcome) $(field "$d/$name.json" peak_reserved)"
    done <<< "${CAP_CONFS:-$(printf '%s\n' "" expandable_segments:True max_split_size_mb:128 garbage_collection_threshold:0.6 roundup_power2_divisions:4)}"
  done
}

task_shim_samples() {
  local d=$1
  train --alloc fragscope --hooks all --steps 8 --trace "$d/gpt2_h200_shim.fstrace" --label shim_tags > "$d/shim_tags.json" 2> "$d/shim_tags.err"
  train --alloc fragscope --hooks forward --steps 8 --cap-gib 14.041 --trace "$d/gpt2_h200_shim_cap14g.fstrace" \
    --label shim_cap14g > "$d/shim_cap14g.json" 2> "$d/shim_cap14g.err"
  "$B/build/fragscope" info "$d/gpt2_h200_shim.fstrace" | tail -4
  "$B/build/fragscope" info "$d/gpt2_h200_shim_cap14g.fstrace" | tail -4
}

task_shim_external() {
  local d=$1
  train --alloc fragscope --hooks forward --steps 4 --layers 6 --leave-gib "${LEAVE_GIB:-5}" \
    --trace "$d/gpt2_shim_external.fstrace" --label shim_external > "$d/shim_external.json" 2> "$d/shim_external.err"
  "$B/build/fragscope" info "$d/gpt2_shim_external.fstrace" | tail -4
  "$B/build/fragscope" analyze "$d/gpt2_shim_external.fstrace" -o "$d/shim_external.db" > "$d/analyze.txt" 2>&1
  cat "$d/analyze.txt"
  "$B/build/fragscope" report "$d/shim_external.db" --format json > "$d/report.json"
  sqlite3 "$d/shim_external.db" "select cause, requested, reserved, device_free, device_total, external_bytes from ooms" \
    > "$d/ooms.txt" 2>&1 || python3 -c "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute('select cause, requested, reserved, device_free, device_total, external_bytes from ooms').fetchall())" "$d/shim_external.db" > "$d/ooms.txt"
  cat "$d/ooms.txt" "$d/shim_external.json"
  rm -f "$d/shim_external.db"
}

task_record() {
  # shellcheck disable=SC2086
  timeout 560 python3 bench/gpu/record_all.py "$1" ${RECORD:-habits caps external}
}

[ $# -gt 0 ] || { sed -n '2,24p' "$0"; exit 2; }
for t in "$@"; do
  fn="task_${t//-/_}"
  declare -F "$fn" >/dev/null || { echo "run.sh: unknown task $t" >&2; exit 2; }
  mkdir -p "$RESULTS/$t"
  log "$t"
  "$fn" "$RESULTS/$t"
done
log "done"
if [ -n "${OUT:-}" ]; then
  name="$DATE-$(echo "$*" | tr ' ' '_')"
  (cd "$(dirname "$RESULTS")" && tar cf - "$(basename "$RESULTS")" | xz -6 -T0 > "$OUT/$name.tar.xz")
  ls -la "$OUT"
fi
