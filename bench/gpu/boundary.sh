#!/usr/bin/env bash
# boundary.sh — record bench/gpu/boundary_job.py once per allocator setting
# on the GPU machine, into $OUT/boundary/ (NAME.pickle, NAME.stats.json):
# uncapped under each setting, then under a cap of BOUNDARY_CAP (default
# 0.85) times the defaults run's peak reserved, where garbage collection and
# the cap's OOM come in. Then, here, for each run X:
#   fragscope whatif boundary/b_defaults.pickle --verify-against boundary/X.pickle \
#       [--capacity CAP_BYTES]      (bench/cross_verify.py does every pair)
set -u
dir="${OUT:-.}/boundary"
mkdir -p "$dir"
ops="${BOUNDARY_OPS:-3000}"
run() { # name conf [cap_bytes]
    PYTORCH_CUDA_ALLOC_CONF="$2" timeout 120 python3 bench/gpu/boundary_job.py "$dir/$1" --ops "$ops" \
        ${3:+--cap-bytes "$3"} > "$dir/$1.log" 2>&1
    echo "$1 rc=$? $(stat -c %s "$dir/$1.pickle" 2>/dev/null) $(grep -o '"outcome": "[a-z]*"' "$dir/$1.stats.json" 2>/dev/null)"
}
run b_defaults ""
run b_rp4 "roundup_power2_divisions:4" &
run b_rp8 "roundup_power2_divisions:8" &
run b_rplist "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]" &
run b_ms128 "max_split_size_mb:128" &
run b_nsr64 "max_non_split_rounding_mb:64,max_split_size_mb:128" &
run b_exp "expandable_segments:True" &
run b_rp4_ms128 "roundup_power2_divisions:4,max_split_size_mb:128" &
run b_rp8_exp "roundup_power2_divisions:8,expandable_segments:True" &
wait
peak=$(python3 -c "import json;print(json.load(open('$dir/b_defaults.stats.json'))['reserved_bytes.all.peak'])")
cap=$(python3 -c "print(int($peak * float('${BOUNDARY_CAP:-0.85}')) // (2 << 20) * (2 << 20))")
echo "cap $cap (peak reserved $peak)"
run b_defaults_cap "" "$cap" &
run b_gc_cap "garbage_collection_threshold:0.6" "$cap" &
run b_rp4_cap "roundup_power2_divisions:4" "$cap" &
run b_rplist_cap "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]" "$cap" &
run b_ms128_cap "max_split_size_mb:128" "$cap" &
run b_exp_cap "expandable_segments:True" "$cap" &
run b_gc_ms128_cap "garbage_collection_threshold:0.6,max_split_size_mb:128" "$cap" &
wait
