#!/usr/bin/env bash
# diff_pairs.sh — record the real pairs `fragscope diff` is tested on
# (bench/gpu/diff_pairs.py: GPT-2, 6 steps, same seed on both sides), into a
# folder diff_pairs/ (NAME.pickle, NAME.stats.json, NAME.log, device.txt) under
# $TMPDIR, packed as $OUT/diff_pairs.tar.xz, with $OUT/diff_pairs.txt, one line
# per run (exit status, peaks, outcome); two files, as the GPU machine returns
# only a few:
#   batch8          / batch10         batch 8 vs 10 (the program grew)
#   batch8          / batch8_ckpt     without / with activation checkpointing
#   batch8          / batch8_exp      defaults vs expandable_segments:True
#   batch8_late     / batch8_early    three buffers held to the end, allocated after
#                                     the first step vs before the model (only moved);
#                                     batch8_late is batch8 again: batch8 / batch8_late
#                                     shows what two identical runs differ by
#   batch8_cap      / batch10_cap     batch 8 vs 10 under a cap of 1.05x batch8's peak
#                                     reserved (batch 10 may run out of memory: a new OOM)
# One command on the GPU machine: `bash bench/gpu/diff_pairs.sh` (about 2 minutes;
# no fragscope build needed there). Then, here, on the unpacked folder:
#   python3 bench/gpu/diff_pairs_check.py diff_pairs build/fragscope
# runs `fragscope diff A.pickle B.pickle --format json` on each pair and checks
# Δ peak reserved / allocated against the stats.json peaks, program + allocator
# = Δ peak reserved and the sites' sum = Δ peak allocated (exit 1 if not).
set -u
out="${OUT:-.}"
work="$(mktemp -d "${TMPDIR:-/tmp}/diff_pairs.XXXXXX")"
dir="$work/diff_pairs"
mkdir -p "$dir" "$out"
main() {
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
run() { # name conf [args...]
    local name=$1 conf=$2
    shift 2
    PYTORCH_CUDA_ALLOC_CONF="$conf" timeout 150 python3 bench/gpu/diff_pairs.py "$dir" "$name" "$@" \
        > "$dir/$name.log" 2>&1
    echo "$name rc=$? $(tail -1 "$dir/$name.log")"
}
# Several processes share the GPU at once; each run is small (a few GiB).
run batch8 "" --batch 8 &
run batch10 "" --batch 10 &
run batch8_ckpt "" --batch 8 --ckpt &
run batch8_exp "expandable_segments:True" --batch 8 &
wait
run batch8_late "" --batch 8 &
run batch8_early "" --batch 8 --early &
wait
peak=$(python3 -c "import json;print(json.load(open('$dir/batch8.stats.json'))['reserved_bytes.all.peak'])")
cap=$(python3 -c "print(round($peak * 1.05 / (1 << 30), 3))")
echo "cap $cap GiB (batch8 peak reserved $peak)"
run batch8_cap "" --batch 8 --cap-gib "$cap" &
run batch10_cap "" --batch 10 --cap-gib "$cap" &
wait
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$dir/device.txt" 2>&1
python3 -c "import torch,transformers;print(torch.__version__, transformers.__version__)" \
    >> "$dir/device.txt" 2>&1
tar -C "$work" -cJf "$out/diff_pairs.tar.xz" diff_pairs
ls -l "$dir" "$out/diff_pairs.tar.xz"
}
main 2>&1 | tee "$out/diff_pairs.txt"
