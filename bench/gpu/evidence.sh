#!/usr/bin/env bash
# evidence.sh — one GPU call that records the runs the cross-setting checks,
# the private-pool tests and the native recorder's remaining checks use:
#   1. bench/gpu/boundary.sh (the boundary job under every setting, uncapped
#      and capped), while the native extension builds;
#   2. record_all.py settings (GPT-2 and a MoE under every setting, uncapped
#      and capped), six runs at a time (an H100 holds six GPT-2 runs);
#   3. record_all.py graphs + the default-ring GPT-2 + ring_fsdp2, and
#      native_check.py compile2 fsdp tags (with the Release build in gpu-carry/).
# Results come back as at most seven .tar.xz files in $OUT.
#   bash bench/gpu/evidence.sh [boundary] [settings] [graphs] [native]
set -u
what=" ${*:-boundary settings graphs native} "
OUT=${OUT:-/tmp/fsc-out}
R=/tmp/evidence
mkdir -p "$OUT" "$R"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$R/evidence.log"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$R/gpu.txt" 2>&1
python3 -c 'import torch;print(torch.__version__, torch.version.cuda)' >> "$R/gpu.txt" 2>&1
native_env() { (. bench/gpu/native_env.sh && "$@"); }
bpid=
if [[ $what == *" native "* ]]; then
  (native_env python3 -c 'import fragscope_torch as f; f._build_native(verbose=False)' \
     > "$R/native_build.log" 2>&1) &
  bpid=$!
fi
if [[ $what == *" boundary "* ]]; then
  log "boundary"
  OUT=$R bash bench/gpu/boundary.sh > "$R/boundary.log" 2>&1
  log "boundary done"
fi
if [[ $what == *" settings "* ]]; then
  log "settings"
  SETTINGS_PARALLEL=6 timeout 330 python3 bench/gpu/record_all.py "$R/settings" settings > "$R/settings.log" 2>&1
  log "settings done rc=$?"
fi
[ -n "$bpid" ] && wait "$bpid"
if [[ $what == *" graphs "* ]]; then
  log "graphs"
  (timeout 200 python3 bench/gpu/record_all.py "$R/graphs" graphs ring \
     only=serve_graphs40,compile_ro6,ring_default_80steps,ring_fsdp2 > "$R/graphs.log" 2>&1) &
  gpid=$!
fi
if [[ $what == *" native "* ]]; then
  log "native"
  native_env timeout 200 python3 bench/gpu/native_check.py "$R/native" compile2 fsdp tags \
    > "$R/native.log" 2>&1
  log "native done rc=$?"
fi
[[ $what == *" graphs "* ]] && wait "$gpid" && log "graphs done"
cd "$R" || exit 1
for d in boundary settings graphs native; do
  [ -d "$d" ] || continue
  if [ "$d" = settings ]; then
    tar cf - settings/gpt2_* | xz -T0 -6 > "$OUT/settings_gpt2.tar.xz"
    tar cf - settings/moe_* settings/summary.json | xz -T0 -6 > "$OUT/settings_moe.tar.xz"
  else
    tar cf - "$d" | xz -T0 -6 > "$OUT/$d.tar.xz"
  fi
done
tar cJf "$OUT/logs.tar.xz" ./*.log gpu.txt
log "packed"
ls -la "$OUT"
