#!/usr/bin/env bash
# bench/gpu/run_gpu2.sh — second GPU pass: where the shim's step-time cost
# comes from (allocator, recording, tag hooks), in alternating rounds; and
# caps close to the uncapped peak, where settings decide survival.
set -u
B=${B:-gpu-carry}
R=/tmp/r2; rm -rf $R; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/$B/build:${PYTHONPATH:-}
export FRAGSCOPE_TORCH_LIB=$PWD/$B/build/libfragscope_torch.so
export PYTHONUNBUFFERED=1
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
for round in 1 2; do
  log "round $round"
  python3 bench/gpu/train_gpt2.py --alloc native --steps 30 --label native_$round > $R/t_native_$round.json 2>/dev/null
  python3 bench/gpu/train_gpt2.py --alloc fragscope --hooks none --steps 30 --label shim_norec_$round > $R/t_shim_norec_$round.json 2>/dev/null
  python3 bench/gpu/train_gpt2.py --alloc fragscope --hooks none --trace $R/t.fstrace --steps 30 --label shim_rec_$round > $R/t_shim_rec_$round.json 2>/dev/null
  python3 bench/gpu/train_gpt2.py --alloc fragscope --hooks forward --trace $R/t.fstrace --steps 30 --label shim_rec_fwd_$round > $R/t_shim_rec_fwd_$round.json 2>/dev/null
  python3 bench/gpu/train_gpt2.py --alloc fragscope --hooks all --trace $R/t_all_$round.fstrace --steps 30 --label shim_rec_all_$round > $R/t_shim_rec_all_$round.json 2>/dev/null
  for f in $R/t_*_$round.json; do python3 -c "import json;d=json.load(open('$f'));print(d['label'], round(d['mean_step_s']*1000,3), 'ms')"; done
done
PR=16039018496
for frac in ${FRACS:-0.94 0.97 1.0}; do
  cap=$(python3 -c "print(round($PR*$frac/2**30, 3))")
  for conf in "" "expandable_segments:True" "max_split_size_mb:128" "garbage_collection_threshold:0.6" "roundup_power2_divisions:4"; do
    name="cap${frac}_$(echo "${conf:-default}" | tr ':.,' '___')"
    snap=""; [ -z "$conf" ] && snap="--snapshot $R/$name.pickle"
    PYTORCH_CUDA_ALLOC_CONF="$conf" timeout 200 python3 bench/gpu/train_gpt2.py --steps 8 \
      --cap-gib $cap $snap --label $name > $R/$name.json 2> $R/$name.err
    python3 -c "import json;d=json.load(open('$R/$name.json'));print(d['label'], d['outcome'], d['peak_reserved'], d.get('message','')[:330])"
  done
done
log "done"
