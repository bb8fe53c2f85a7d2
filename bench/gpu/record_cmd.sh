#!/usr/bin/env bash
# record_cmd.sh — `fragscope record -- python ...` on a GPU: programs that know
# nothing of fragscope's recording (bench/gpu/plain_gpt2.py), recorded
# unchanged through the native recorder (docs/native.md, "Recording a program
# unchanged"). Release build of this tree in gpu-carry/ (docs/BENCHMARKS.md,
# "GPU"); the Python module, the bootstrap and the extension's source come
# from this checkout, so an older gpu-carry/build only needs its fragscope
# binary and libfragscope.so to be of this tree. Under 8 minutes.
#
#   bash bench/gpu/record_cmd.sh
#
# a  GPT-2 recorded by fragscope record while the script itself keeps
#    PyTorch's history (_record_memory_history + _dump_snapshot) and
#    memory_stats(): the trace's peaks against memory_stats(), the snapshot's
#    peaks, `whatif --verify` on the trace; CUDA not initialized by import
# b  torchrun --nproc_per_node 2 (gloo, both ranks on the one GPU): a trace
#    per rank
# c  an OOM under a 4 GiB cap, without and with fragscope_torch.watch(): the
#    verdict's call site (the line that asked), the device memory by process
#    (NVML) line, and the trace's oom event
# d  GPT-2 step time without and with fragscope record, alternated, 2 rounds
#    (skipped when a-c took over 330 s)
# Results: $OUT/summary.txt (compact), $OUT/record_cmd.tar.xz (traces but not
# the snapshots, stderr, JSON, logs).
set -u
. bench/gpu/native_env.sh
G=$PWD/gpu-carry
R=/tmp/record_cmd
rm -rf "$R" /tmp/fsc-rec
mkdir -p "$R" "$OUT" /tmp/fsc-rec/fragscope_boot
S=$OUT/summary.txt
: > "$S"
say() { echo "$*" | tee -a "$S"; }
T0=$(date +%s)
el() { echo "$(( $(date +%s) - T0 ))s"; }

# The fragscope command beside this checkout's Python side.
cp "$G/build/fragscope" /tmp/fsc-rec/fragscope
cp tools/torch/fragscope_torch.py /tmp/fsc-rec/
cp tools/torch/boot/sitecustomize.py /tmp/fsc-rec/fragscope_boot/
FS=/tmp/fsc-rec/fragscope
export FRAGSCOPE_BIN=$FS FRAGSCOPE_NATIVE_SRC=$PWD/tools/torch/fragscope_native.cpp \
  FRAGSCOPE_NATIVE_INCLUDE=$G/include:$PWD/include FRAGSCOPE_NATIVE_LIB=$G/build
export PYTHONPATH=/tmp/fsc-rec
unset PYTORCH_CUDA_ALLOC_CONF
if ! $FS help record 2>&1 | grep -q -- "--shim"; then
  say "ABORT: $G/build/fragscope has no native record mode: rebuild gpu-carry from this tree"
  exit 1
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$R/gpu.txt" 2>&1
say "gpu: $(cat "$R/gpu.txt")"
# the extension, built once (later processes load it from the cache)
timeout 300 python3 -c 'import fragscope_torch as f; f._build_native()' > "$R/build.log" 2>&1 \
  || { tail -30 "$R/build.log"; say "ABORT: the extension did not build (build.log)"; exit 1; }
say "[$(el)] extension built"
P=bench/gpu/plain_gpt2.py
peaks() { # RUN.db or TRACE (analyzed beside it first) -> "allocated reserved"
  local db=$1
  case "$1" in *.fstrace) db=${1%.fstrace}.db; $FS analyze "$1" -o "$db" > "$db.log" 2>&1 ;; esac
  $FS report "$db" --format json 2>/dev/null | python3 -c \
    'import json,sys;d=json.load(sys.stdin)["summary"];print(d["peak_allocated_bytes"],d["peak_reserved_bytes"])'
}

# ---- a: the trace against the same run's snapshot and memory_stats() ------------------
( export GPT2_SNAPSHOT=$R/a.pickle GPT2_RESULT=$R/a.result.json
  timeout -k 10 240 $FS record -o "$R/a.fstrace" -- python3 $P ) > "$R/a.log" 2>&1
rc=$?
say "[$(el)] a: exit $rc ; $(grep -c . "$R/a.log") log lines; $(grep 'fragscope record:' "$R/a.log" | head -3 | tr '\n' ' ')"
$FS analyze "$R/a.fstrace" -o "$R/a.db" > "$R/a.analyze.log" 2>&1
$FS analyze "$R/a.pickle" -o "$R/a_snap.db" > "$R/a_snap.analyze.log" 2>&1
read -r ta tr <<< "$(peaks "$R/a.db")"
read -r sa sr <<< "$(peaks "$R/a_snap.db")"
read -r ma mr <<< "$(python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));print(d["allocated_bytes.all.peak"],d["reserved_bytes.all.peak"])' "$R/a.stats.json" 2>/dev/null)"
say "a: peak allocated trace=$ta snapshot=$sa memory_stats=$ma ; peak reserved trace=$tr snapshot=$sr memory_stats=$mr"
[ "${ta:-x}" = "${ma:-y}" ] && [ "${tr:-x}" = "${mr:-y}" ] && say "a: PEAKS EXACT" || say "a: PEAKS DIFFER"
$FS whatif "$R/a.fstrace" --verify > "$R/a.verify.txt" 2>&1
rc=$?
say "a: whatif --verify exit $rc ($(head -c 300 "$R/a.verify.txt" | tr '\n' ' '))"
say "a: $(python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));print("cuda_initialized_after_import=%s outcome=%s" % (d["cuda_initialized_after_import"], d["outcome"]))' "$R/a.result.json" 2>&1)"
$FS info "$R/a.fstrace" > "$R/a.info.txt" 2>&1
say "a: header: $(grep -iE 'capacity|backend|producer' "$R/a.info.txt" | head -3 | tr '\n' ' ')"

# ---- b: torchrun, two ranks on the one GPU --------------------------------------------
( export GPT2_DIST=1 GPT2_LAYERS=2 GPT2_STEPS=3 GPT2_RESULT=$R/b.rank%r.result.json
  timeout 240 $FS record -o "$R/b.fstrace" -- python3 -m torch.distributed.run --standalone \
    --nproc_per_node 2 $P ) > "$R/b.log" 2>&1
rc=$?
say "[$(el)] b: exit $rc ; $(grep 'fragscope record:' "$R/b.log" | tr '\n' ' ' | cut -c1-700)"
for t in "$R"/b*.fstrace; do [ -e "$t" ] && say "b: $(basename "$t"): peaks $(peaks "$t")"; done
for j in "$R"/b.rank*.result.json; do [ -e "$j" ] && say "b: $(basename "$j"): $(cut -c1-200 "$j")"; done

# ---- c: an OOM under a cap, without and with watch() ---------------------------------
for w in 0 1; do
  ( export GPT2_CAP_GIB=4 GPT2_WATCH=$w GPT2_RESULT=$R/c$w.result.json
    timeout 240 $FS record -o "$R/c$w.fstrace" -- python3 $P ) > "$R/c$w.log" 2>&1
  rc=$?
  say "[$(el)] c watch=$w: exit $rc ; outcome $(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["outcome"])' "$R/c$w.result.json" 2>&1)"
  grep -E "^fragscope" "$R/c$w.log" | head -16 | cut -c1-400 | sed "s/^/c$w| /" | tee -a "$S"
  grep -iE "call site" "$R/c$w.log" | head -2 | sed "s/^/c$w call site| /" | tee -a "$S"
  grep -n "torch.OutOfMemoryError\|^torch.*OutOfMemoryError" "$R/c$w.log" | head -1 | cut -c1-200 | sed "s/^/c$w| /" | tee -a "$S"
  $FS report "$R/c$w.oom.db" > "$R/c$w.report.txt" 2>&1
  grep -iE "call site|tag" "$R/c$w.report.txt" | head -4 | cut -c1-300 | sed "s/^/c$w report| /" | tee -a "$S"
  # every frame of the OOM's call site: the script's own line is among them
  $FS report "$R/c$w.oom.db" --all-frames > "$R/c$w.report_all.txt" 2>&1
  grep -m1 -iE "call site" "$R/c$w.report_all.txt" | grep -o "plain_gpt2.py:[0-9]* [^ ]*" | head -3 \
    | sed "s/^/c$w script line in the call site| /" | tee -a "$S"
done
say "c: plain_gpt2.py lines: $(grep -nE 'loss = model|loss.backward|opt.step' $P | tr '\n' ' ')"

# ---- d: step time without and with fragscope record ---------------------------------
if [ $(( $(date +%s) - T0 )) -gt 330 ]; then
  say "d: skipped (the runs above took $(el); the script keeps under 8 minutes)"
  ROUNDS=""
else
  ROUNDS="0 1"
fi
for round in $ROUNDS; do
  for mode in off on; do
    export GPT2_FIXED_LEN=512 GPT2_STEPS=30 GPT2_RESULT=$R/d_${mode}_$round.result.json
    if [ $mode = on ]; then
      timeout 200 $FS record -o "$R/d_$round.fstrace" -- python3 $P > "$R/d_${mode}_$round.log" 2>&1
    else
      timeout 200 python3 $P > "$R/d_${mode}_$round.log" 2>&1
    fi
    unset GPT2_FIXED_LEN GPT2_STEPS GPT2_RESULT
  done
done
python3 - "$R" <<'EOF' | tee -a "$S"
import json, statistics, sys
r = sys.argv[1]
for mode in ("off", "on"):
    meds = []
    for rd in (0, 1):
        try:
            s = json.load(open("%s/d_%s_%d.result.json" % (r, mode, rd)))["step_s"][10:]
            meds.append(statistics.median(s) * 1000)
        except Exception as e:  # noqa: BLE001
            meds.append(float("nan"))
    print("d: step time %s (median of steps 10-29, ms) rounds: %s" % (mode, " ".join("%.2f" % m for m in meds)))
EOF
say "[$(el)] done"
# snapshots and databases stay behind (made again from the traces; the size limit)
cd /tmp && tar cf - --exclude='*.pickle' --exclude='*.db' record_cmd | xz -T0 -6 > "$OUT/record_cmd.tar.xz"
