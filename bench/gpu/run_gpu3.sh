#!/usr/bin/env bash
# bench/gpu/run_gpu3.sh — record the sample traces through the PyTorch shim
# with the final trace format, and run the shim under the 14.04 GiB cap at
# which PyTorch's native allocator hit a fragmentation OOM (run_gpu2.sh).
set -u
B=${B:-gpu-carry}
R=/tmp/r3; rm -rf $R; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/$B/build:${PYTHONPATH:-}
export FRAGSCOPE_TORCH_LIB=$PWD/$B/build/libfragscope_torch.so
export PYTHONUNBUFFERED=1
python3 bench/gpu/train_gpt2.py --alloc fragscope --hooks all --steps 8 \
  --trace $R/gpt2_h200_shim.fstrace --label shim_tags > $R/shim_tags.json 2> $R/shim_tags.err
tail -c 600 $R/shim_tags.json; tail -3 $R/shim_tags.err
python3 bench/gpu/train_gpt2.py --alloc fragscope --hooks forward --steps 8 --cap-gib 14.041 \
  --trace $R/gpt2_h200_shim_cap14g.fstrace --label shim_cap14g > $R/shim_cap14g.json 2> $R/shim_cap14g.err
tail -c 900 $R/shim_cap14g.json; tail -3 $R/shim_cap14g.err
$B/build/fragscope info $R/gpt2_h200_shim.fstrace | tail -4
$B/build/fragscope info $R/gpt2_h200_shim_cap14g.fstrace | tail -4
(cd /tmp && tar czf $OUT/results3.tar.gz r3)
