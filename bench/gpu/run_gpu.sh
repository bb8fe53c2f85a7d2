#!/usr/bin/env bash
# bench/gpu/run_gpu.sh — every GPU measurement in one command, for a machine
# with one NVIDIA GPU, PyTorch and transformers. Expects a fragscope build
# (with the cuda backend) in $B/build and the shared libraries it needs that
# the machine may lack in $B/lib. Results go to $OUT/results.tar.gz.
#   1. the allocator's cuda tests on real memory
#   2. alloc+free pairs: fragscope cuda backend vs PyTorch's native allocator vs cudaMalloc
#   3. GPT-2 training step time: native allocator vs fragscope shim + recording
#   4. GPT-2 runs under memory caps with several PYTORCH_CUDA_ALLOC_CONF settings
#      (native allocator), and an uncapped run with a snapshot, for what-if validation
set -u
B=${B:-gpu-carry}
R=/tmp/r; rm -rf $R; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/$B/build:${PYTHONPATH:-}
export FRAGSCOPE_TORCH_LIB=$PWD/$B/build/libfragscope_torch.so
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
STEPS=${STEPS:-8}
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))s] $*"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $R/gpu.txt 2>&1
log "cuda tests"
for t in $B/build/tests/test_allocator*; do echo "== $t"; timeout 300 $t; done > $R/cuda_tests.log 2>&1
tail -3 $R/cuda_tests.log

log "bench vs torch"
TP=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
g++ -O2 -std=c++17 bench/gpu/bench_vs_torch.cpp -Iinclude -I$TP/include \
  -I$TP/include/torch/csrc/api/include -I/usr/local/cuda/include \
  $B/build/allocator/libfsc_allocator.a $B/build/common/libfsc_common.a \
  -L$TP/lib -lc10_cuda -lc10 -L/usr/local/cuda/lib64 -lcudart -L/usr/local/cuda/lib64/stubs -lcuda \
  -Wl,-rpath,$TP/lib -lpthread -lm -o /tmp/bvt > $R/bench_build.log 2>&1 && \
  timeout 240 /tmp/bvt > $R/bench_vs_torch.json 2>&1
cat $R/bench_vs_torch.json $R/bench_build.log | tail -8

log "step time: native vs shim"
timeout 200 python3 bench/gpu/train_gpt2.py --alloc native --steps 20 --label native > $R/time_native.json 2> $R/time_native.err
timeout 200 python3 bench/gpu/train_gpt2.py --alloc fragscope --steps 20 --trace $R/gpt2_shim.fstrace \
  --label shim > $R/time_shim.json 2> $R/time_shim.err
tail -c 400 $R/time_native.json $R/time_shim.json $R/time_shim.err

log "uncapped reference with snapshot"
timeout 200 python3 bench/gpu/train_gpt2.py --steps $STEPS --snapshot $R/gpt2_uncapped.pickle \
  --label uncapped > $R/uncapped.json 2> $R/uncapped.err
PR=$(python3 -c "import json;print(json.load(open('$R/uncapped.json'))['peak_reserved'])")
log "peak reserved $PR"
for frac in ${FRACS:-0.70 0.80 0.90}; do
  cap=$(python3 -c "print(round($PR*$frac/2**30, 3))")
  for conf in "" "expandable_segments:True" "max_split_size_mb:128" "garbage_collection_threshold:0.6"; do
    name="cap${frac}_$(echo "${conf:-default}" | tr ':.,' '___')"
    snap=""; [ -z "$conf" ] && snap="--snapshot $R/$name.pickle"
    log "$name cap=${cap}GiB"
    PYTORCH_CUDA_ALLOC_CONF="$conf" timeout 200 python3 bench/gpu/train_gpt2.py --steps $STEPS \
      --cap-gib $cap $snap --label $name > $R/$name.json 2> $R/$name.err
    tail -c 300 $R/$name.json
  done
done
log "done"
(cd /tmp && tar czf $OUT/results.tar.gz r)
ls -la $OUT
