#!/usr/bin/env bash
# boundary.sh — record bench/gpu/boundary_job.py once per allocator setting
# on the GPU machine, into $OUT/boundary/ (NAME.pickle, NAME.stats.json).
# Then, here: for f in boundary/b_*.pickle; do
#   fragscope whatif boundary/b_defaults.pickle --verify-against "$f"; done
set -u
dir="${OUT:-.}/boundary"
mkdir -p "$dir"
ops="${BOUNDARY_OPS:-3000}"
run() { # name conf
    PYTORCH_CUDA_ALLOC_CONF="$2" timeout 60 python3 bench/gpu/boundary_job.py "$dir/$1" --ops "$ops" \
        > "$dir/$1.log" 2>&1
    echo "$1 rc=$? $(stat -c %s "$dir/$1.pickle" 2>/dev/null)"
}
run b_defaults ""
run b_rp4 "roundup_power2_divisions:4"
run b_rp8 "roundup_power2_divisions:8"
run b_rplist "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"
run b_ms128 "max_split_size_mb:128"
run b_nsr64 "max_non_split_rounding_mb:64,max_split_size_mb:128"
run b_exp "expandable_segments:True"
run b_rp4_ms128 "roundup_power2_divisions:4,max_split_size_mb:128"
run b_rp8_exp "roundup_power2_divisions:8,expandable_segments:True"
