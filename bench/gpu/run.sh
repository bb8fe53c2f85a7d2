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
#   ranks          a 3-stage pipeline job on the one GPU (bench/gpu/ranks.py): one process per
#                  rank (RANK, WORLD_SIZE, LOCAL_RANK), each through the shim into pipe.r<rank>.fstrace
#                  under its own cap (its calibrated peak reserved + RANK_MARGINS_MIB, default
#                  "2048 512 16384": rank 1 has the least headroom), rank 2 then out of memory after
#                  a raw cudaMalloc of all but 64 MiB of the device; the job analyzed into one database;
#                  then GPT-2 step time with FRAGSCOPE_DEVICE_SAMPLES in DS_SETTINGS (default
#                  "off segments 1"), DS_ROUNDS alternating rounds (default 3)
#   record         real PyTorch recordings of common habits (bench/gpu/record_all.py;
#                  RECORD="habits caps external" by default; "mempool_opts": MemPool use_on_oom, no_split)
#   big            a real >= 1 GB snapshot (bench/gpu/record_big.py: GPT-2 trained BIG_SECONDS,
#                  default 110, under max_entries=12e6) and bench/bench_snapshot.py on it
#                  (pickle.load vs import, analyze, whatif on one CPU, then import and
#                  analyze on every CPU); the snapshot is not kept
#                  (BIG_SNAPSHOT=FILE benches an existing file instead of recording;
#                  BIG_ALSO="BIN..." benches these fragscope binaries too, e.g. an older build,
#                  in the same runs; BIG_ROUNDS / BIG_ROUNDS_ALL rounds of the one-CPU and
#                  every-CPU benches, default 1, the fastest reported; then bench_pickle_scan on it)
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

task_ranks() {
  local d=$1 W=3 r fsc="$B/build/fragscope" pids=() caps
  # shellcheck disable=SC2206
  local margins=(${RANK_MARGINS_MIB:-2048 512 16384})
  local stage=(--layers "${RANK_LAYERS:-8}" --width 1024 --mb 4 --seq 1024 --steps "${RANK_STEPS:-3}")
  # 1. calibration: the same stages, uncapped and unrecorded, all at once
  for r in 0 1 2; do
    RANK=$r WORLD_SIZE=$W LOCAL_RANK=$r timeout 150 env -u FRAGSCOPE_TRACE python3 bench/gpu/ranks.py --out "$d" --calibrate "${stage[@]}" \
      > "$d/calib.r$r.out" 2> "$d/calib.r$r.err" &
    pids+=($!)
  done
  wait "${pids[@]}"; pids=()
  cat "$d"/calib.r?.out
  caps=$(python3 - "$d" "${margins[@]}" <<'PY'
import json, sys
d, margins = sys.argv[1], [int(m) << 20 for m in sys.argv[2:5]]
caps = {}
for r in range(3):
    c = json.load(open("%s/pipe.calib.r%d.json" % (d, r)))
    peak = c["memory_stats"]["reserved_bytes.all.peak"]
    caps[r] = {"calibrated_peak_reserved": peak, "margin_bytes": margins[r],
               "cap_bytes": peak + margins[r]}
json.dump({"caps": caps, "least_headroom_rank": min(caps, key=lambda r: margins[r])},
          open(d + "/caps.json", "w"), indent=1)
print(" ".join(str(caps[r]["cap_bytes"]) for r in range(3)))
PY
)
  # shellcheck disable=SC2206
  caps=($caps)
  [ ${#caps[@]} -eq 3 ] || { echo "ranks: calibration failed"; tail -5 "$d"/calib.r?.err; return 1; }
  log "caps ${caps[*]}"
  # 2. the recorded job: three processes at once, each under its cap; rank 2 ends in an
  #    out-of-memory caused by its raw cudaMalloc
  for r in 0 1 2; do
    local ext=(); [ $r -eq 2 ] && ext=(--external --leave-mib 64)
    RANK=$r WORLD_SIZE=$W LOCAL_RANK=$r timeout 200 env -u FRAGSCOPE_TRACE python3 bench/gpu/ranks.py --out "$d" --cap-bytes "${caps[$r]}" \
      --trace "$d/pipe.r%r.fstrace" --wait-s 90 "${stage[@]}" "${ext[@]}" \
      > "$d/run.r$r.out" 2> "$d/run.r$r.err" &
    pids+=($!)
  done
  wait "${pids[@]}"; pids=()
  cat "$d"/run.r?.out
  python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
rows = []
for r in range(3):
    try:
        c = json.load(open("%s/pipe.calib.r%d.json" % (d, r)))
        j = json.load(open("%s/pipe.run.r%d.json" % (d, r)))
    except (OSError, ValueError) as e:
        rows.append({"rank": r, "error": str(e)})
        continue
    m = j["memory_stats"]
    rows.append({"rank": r, "cap": j["cap_bytes"], "outcome": j["outcome"],
                 "external_outcome": j.get("external_outcome"),
                 "calib_peak_reserved": c["memory_stats"]["reserved_bytes.all.peak"],
                 "peak_reserved": m["reserved_bytes.all.peak"],
                 "peak_allocated": m["allocated_bytes.all.peak"],
                 "headroom": j["cap_bytes"] - m["reserved_bytes.all.peak"],
                 "raw_cudamalloc": j.get("raw_cudamalloc")})
json.dump(rows, open(d + "/summary.json", "w"), indent=1)
for row in rows:
    print(json.dumps(row))
PY
  for r in 0 1 2; do "$fsc" info "$d/pipe.r$r.fstrace" | sed -n '1,12p;/device_memory\|oom\|integrity/p'; done
  # 3. the job in one database (several inputs, when this build takes them; else one each)
  if FRAGSCOPE_NO_PROGRESS=1 "$fsc" analyze "$d"/pipe.r{0,1,2}.fstrace -o "$d/job.db" > "$d/analyze.txt" 2>&1; then
    "$fsc" report "$d/job.db" --format json > "$d/job_report.json" 2>&1
    "$fsc" report "$d/job.db" > "$d/job_report.txt" 2>&1
  else
    cat "$d/analyze.txt"
    for r in 0 1 2; do
      FRAGSCOPE_NO_PROGRESS=1 "$fsc" analyze "$d/pipe.r$r.fstrace" -o "$d/pipe.r$r.db" >> "$d/analyze.txt" 2>&1
      "$fsc" report "$d/pipe.r$r.db" --format json > "$d/report.r$r.json" 2>&1
      "$fsc" report "$d/pipe.r$r.db" > "$d/report.r$r.txt" 2>&1
    done
  fi
  tail -20 "$d/analyze.txt"
  grep -h -A3 -i "external\|headroom" "$d"/job_report.txt "$d"/report.r2.txt 2>/dev/null | head -30
  rm -f "$d"/*.db
  # 4. the step-time cost of the shim's device samples: GPT-2 small, 30 steps each, the
  #    settings in alternating order round by round
  # shellcheck disable=SC2206
  local settings=(${DS_SETTINGS:-off segments 1}) order ds
  for r in $(seq 1 "${DS_ROUNDS:-3}"); do
    order=("${settings[@]}")
    [ $((r % 2)) -eq 0 ] && mapfile -t order < <(printf '%s\n' "${settings[@]}" | tac)
    for ds in "${order[@]}"; do
      [ $(( $(date +%s) - T0 )) -lt 240 ] || { echo "ds_${ds}_$r skipped: over 240 s"; continue; }
      FRAGSCOPE_DEVICE_SAMPLES=$ds timeout 60 python3 bench/gpu/train_gpt2.py --alloc fragscope --hooks none --steps 30 \
        --trace "/tmp/fsc_ds_$ds.fstrace" --label "ds_${ds}_$r" > "$d/ds_${ds}_$r.json" 2> "$d/ds_${ds}_$r.err"
      echo "ds_${ds}_$r $(field "$d/ds_${ds}_$r.json" mean_step_s) s"
    done
  done
  for ds in "${settings[@]}"; do
    echo "$ds $("$fsc" info "/tmp/fsc_ds_$ds.fstrace" | grep -E '^events|device_memory' | tr -s ' ' | tr '\n' ' ')"
  done > "$d/ds_events.txt"
  cat "$d/ds_events.txt"
  python3 - "$d" "${settings[@]}" <<'PY'
import glob, json, sys
d, settings = sys.argv[1], sys.argv[2:]
mean = {}
for s in settings:
    v = []
    for f in sorted(glob.glob("%s/ds_%s_*.json" % (d, s))):
        try:
            v.append(float(json.load(open(f))["mean_step_s"]))
        except (ValueError, KeyError, TypeError):
            pass
    mean[s] = {"rounds": v, "mean_step_s": sum(v) / len(v) if v else None}
base = mean[settings[0]]["mean_step_s"]
res = {"baseline": settings[0], "settings": mean,
       "ratio_to_baseline": {s: mean[s]["mean_step_s"] / base if base and mean[s]["mean_step_s"]
                             else None for s in settings}}
json.dump(res, open(d + "/device_samples_cost.json", "w"), indent=1)
print(json.dumps(res["ratio_to_baseline"]))
PY
}

task_record() {
  # shellcheck disable=SC2086
  timeout 560 python3 bench/gpu/record_all.py "$1" ${RECORD:-habits caps external}
}

task_big() {
  local d=$1 snap=${BIG_SNAPSHOT:-/tmp/fragscope-big.pickle}
  if [ -z "${BIG_SNAPSHOT:-}" ]; then
    timeout 300 python3 bench/gpu/record_big.py "$snap" --seconds "${BIG_SECONDS:-110}" \
      --max-entries 12000000 > "$d/record.json" 2> "$d/record.err"
    tail -2 "$d/record.err"; cat "$d/record.json"
    cp "${snap%.pickle}.stats.json" "$d/big.stats.json" 2>/dev/null
  fi
  local bins=(--fragscope "$B/build/fragscope") b
  for b in ${BIG_ALSO:-}; do bins+=(--fragscope "$b"); done
  timeout 400 python3 bench/bench_snapshot.py "$snap" "${bins[@]}" \
    --commands "${BIG_COMMANDS:-import,analyze,whatif}" --json "$d/bench.json" --timeout 100 \
    --rounds "${BIG_ROUNDS:-1}" > "$d/bench.txt" 2>&1
  cat "$d/bench.txt"
  timeout 250 python3 bench/bench_snapshot.py "$snap" "${bins[@]}" --cpu all \
    --commands import,analyze --json "$d/bench_all_cpus.json" --timeout 60 \
    --rounds "${BIG_ROUNDS_ALL:-1}" > "$d/bench_all_cpus.txt" 2>&1
  cat "$d/bench_all_cpus.txt"
  [ ! -x "$B/build/bench/bench_pickle_scan" ] ||
    timeout 60 "$B/build/bench/bench_pickle_scan" "$snap" > "$d/bench_pickle_scan.txt" 2>&1
  cat "$d/bench_pickle_scan.txt" 2>/dev/null
  nproc > "$d/cpus.txt"
  [ -n "${BIG_SNAPSHOT:-}" ] || rm -f "$snap" "${snap%.pickle}.stats.json"
}

[ $# -gt 0 ] || { sed -n '2,39p' "$0"; exit 2; }
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
