#!/usr/bin/env bash
# placement_rec.sh — recordings that decide what the driver-placement model
# (allocator/placement.c, docs/allocator.md "Where the driver places
# segments") leaves open: where new segments go after segments were given
# back (empty_cache, GC, the OOM retry), on the card this runs on.
#
# One GPU call, < 5 minutes: bench/gpu/boundary_job.py with
# --empty-cache-every 150 (segments given back and placed again all along),
# as boundary.sh names its runs (b_NAME: bench/placement_check.py pairs each
# with b_defaults), uncapped under five settings, then under caps of 0.85 and
# 0.7 times the defaults run's peak reserved, where the OOM retry and garbage
# collection give segments back too. Out: $OUT/placement.tar.xz (the
# snapshots with their stats.json, gpu.txt, the logs). Then, here:
#   mkdir -p /tmp/pr && tar -xJf placement.tar.xz -C /tmp/pr
#   python3 bench/placement_learn.py --per-run --group learn /tmp/pl/recordings \
#       /tmp/pl/recordings2 tests/data/gpu/boundary --group new /tmp/pr/placement
#   python3 bench/placement_check.py /tmp/pr/placement
set -u
OUT=${OUT:-/tmp/fsc-out}
dir=/tmp/placement_rec/placement
mkdir -p "$OUT" "$dir"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$dir/gpu.txt" 2>&1
python3 -c 'import torch;print(torch.__version__, torch.version.cuda)' >> "$dir/gpu.txt" 2>&1
ops="${PLACEMENT_OPS:-3000}"
every="${PLACEMENT_EVERY:-150}"
run() { # name conf [cap_bytes]
    PYTORCH_CUDA_ALLOC_CONF="$2" timeout 150 python3 bench/gpu/boundary_job.py "$dir/$1" \
        --ops "$ops" --empty-cache-every "$every" ${3:+--cap-bytes "$3"} > "$dir/$1.log" 2>&1
    echo "$1 rc=$? $(stat -c %s "$dir/$1.pickle" 2>/dev/null) $(grep -o '"outcome": "[a-z]*"' "$dir/$1.stats.json" 2>/dev/null)"
}
cap_of() { # fraction -> bytes, 2 MiB multiple, of the defaults run's peak reserved
    python3 -c "import json;p=json.load(open('$dir/b_defaults.stats.json'))['reserved_bytes.all.peak'];print(int(p*$1)//(2<<20)*(2<<20))"
}
{
run b_defaults ""
run b_rp4 "roundup_power2_divisions:4" &
run b_rp8 "roundup_power2_divisions:8" &
run b_rplist "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]" &
run b_ms128 "max_split_size_mb:128" &
run b_nsr64 "max_non_split_rounding_mb:64,max_split_size_mb:128" &
wait
c85=$(cap_of 0.85)
c70=$(cap_of 0.70)
echo "caps $c85 $c70"
run b_defaults_cap "" "$c85" &
run b_gc_cap "garbage_collection_threshold:0.6" "$c85" &
run b_ms128_cap "max_split_size_mb:128" "$c85" &
run b_rp4_cap "roundup_power2_divisions:4" "$c85" &
run b_gc_ms128_cap "garbage_collection_threshold:0.6,max_split_size_mb:128" "$c85" &
wait
run b_defaults_cap70 "" "$c70" &
run b_gc_cap70 "garbage_collection_threshold:0.6" "$c70" &
run b_ms128_cap70 "max_split_size_mb:128" "$c70" &
run b_rp8_cap70 "roundup_power2_divisions:8" "$c70" &
wait
} 2>&1 | tee "$dir/placement_rec.log"
cd /tmp/placement_rec && tar cf - placement | xz -T0 -6 > "$OUT/placement.tar.xz"
ls -la "$OUT"
