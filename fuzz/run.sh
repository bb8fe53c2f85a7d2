#!/bin/sh
# fuzz/run.sh — build the libFuzzer targets and run them.
#
#   fuzz/run.sh TARGET SECONDS     run one target (trace, trace_chunks, pickle,
#                                  pytorch, config, size, whatif) for SECONDS
#   fuzz/run.sh all SECONDS        run every target for SECONDS each, two at
#                                  a time (FSC_FUZZ_JOBS to change)
#
# Environment: FSC_FUZZ_BUILD (build directory, default build-fuzz),
# CC (default clang). Seed corpora are built from tests/data (and from
# traces the freshly built fragscope records) on first use. Per target,
# $FSC_FUZZ_BUILD/fuzz-work/TARGET holds the growing corpus, the log of each
# run and, under crashes/, any input that crashed or hung. Every run appends
# one line to $FSC_FUZZ_BUILD/fuzz-work/summary.tsv:
# date, target, seconds, executions, corpus size, crashes found.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSC_FUZZ_BUILD:-build-fuzz}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
WORK=$BUILD/fuzz-work
TARGETS="trace trace_chunks pickle pytorch config size whatif"

usage() {
    echo "usage: fuzz/run.sh TARGET|all SECONDS   (targets: $TARGETS)" >&2
    exit 2
}
[ $# -eq 2 ] || usage
case $2 in '' | *[!0-9]*) usage ;; esac

build() {
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        CC=${CC:-clang} cmake -S "$ROOT" -B "$BUILD" -DFSC_FUZZ=ON -DFSC_BENCH=OFF \
            -DFSC_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    fi
    cmake --build "$BUILD" -j2 --target \
        $(for t in $TARGETS; do printf 'fuzz_%s ' "$t"; done) >/dev/null
    # Only the trace seeds need the command line; the targets do not.
    [ -d "$WORK/trace/seeds" ] || cmake --build "$BUILD" -j2 --target fragscope >/dev/null
}

# One file per line of a seed list.
split_lines() {
    i=0
    while IFS= read -r line || [ -n "$line" ]; do
        printf '%s' "$line" >"$2/line$i"
        i=$((i + 1))
    done <"$1"
}

# Bytes in binary: le32 N (four bytes, little-endian), byte N.
byte() {
    printf "$(printf '\\%03o' "$1")"
}
le32() {
    byte $(($1 & 255))
    byte $(($1 >> 8 & 255))
    byte $(($1 >> 16 & 255))
    byte $(($1 >> 24 & 255))
}

seeds() {
    t=$1
    dir=$WORK/$t/seeds
    [ -d "$dir" ] && return 0
    mkdir -p "$dir.new"
    data=$ROOT/tests/data
    case $t in
    trace)
        cp "$data/recorder_golden.fstrace" "$data/recorder_golden_v1.fstrace" "$dir.new/"
        fs=$BUILD/fragscope
        "$fs" simulate --workload gpt2 --steps 1 -o "$dir.new/gpt2.fstrace" >/dev/null
        "$fs" simulate --workload resnet --steps 1 --config expandable_segments:True \
            -o "$dir.new/resnet_exp.fstrace" >/dev/null
        "$fs" simulate --workload gpt2 --steps 2 --capacity 3GiB \
            --config max_split_size_mb:64,garbage_collection_threshold:0.5 \
            -o "$dir.new/gpt2_oom.fstrace" >/dev/null
        FRAGSCOPE_TRACE=$dir.new/ring.fstrace FRAGSCOPE_TRACE_MODE=ring:300 \
            "$fs" simulate --workload resnet --steps 1 >/dev/null
        "$fs" import "$data/pytorch/tiny.p4.pickle" -o "$dir.new/tiny.fstrace" >/dev/null
        head -c 5000 "$dir.new/gpt2.fstrace" >"$dir.new/cut.fstrace"
        ;;
    trace_chunks)
        # First chunk of each trace seed, unwrapped: flags byte (one chunk,
        # end frame), u32 LE event count, the chunk's decompressed content.
        for f in "$WORK"/trace/seeds/*.fstrace; do
            hs=$(od -An -tu4 -j4 -N4 "$f" | tr -d ' ')
            d=$((8 + hs))
            [ "$(wc -c <"$f")" -gt $((d + 32)) ] || continue
            ev=$(od -An -tu4 -j$((d + 16)) -N4 "$f" | tr -d ' ')
            cs=$(od -An -tu4 -j$((d + 20)) -N4 "$f" | tr -d ' ')
            out=$dir.new/$(basename "$f" .fstrace)
            # Flags: one chunk, end frame, and bit 4 when the file is format 1.0.
            major=$(od -An -tu2 -j16 -N2 "$f" | tr -d ' ')
            { byte $((major == 1 ? 20 : 4)); le32 "$ev"; } >"$out"
            tail -c +$((d + 33)) "$f" | head -c "$cs" | zstd -d -q -c >>"$out" 2>/dev/null ||
                rm -f "$out"
        done
        ;;
    pickle)
        for f in "$data"/pytorch/*.pickle "$data"/pytorch/hostile/*.pickle; do
            [ "$(wc -c <"$f")" -le 300000 ] && cp "$f" "$dir.new/"
        done
        ;;
    pytorch)
        for f in "$data"/pytorch/*.pickle "$data"/pytorch/*.json "$data"/pytorch/json/*.json "$data"/pytorch/hostile/*; do
            [ "$(wc -c <"$f")" -le 300000 ] && cp "$f" "$dir.new/"
        done
        ;;
    whatif)
        # Each setting, unlimited and capped, over bytes of a request fixture.
        for c in 0 1 2 3 4 5 6 7; do
            for cap in 0 11; do
                { byte $c; byte $cap; head -c 4500 "$data/alloc_gpt2m_oom_12g.req"; } \
                    >"$dir.new/req_${c}_$cap"
            done
        done
        ;;
    config | size)
        split_lines "$ROOT/fuzz/seeds/$t.txt" "$dir.new"
        ;;
    esac
    mv "$dir.new" "$dir"
}

run_one() {
    t=$1
    secs=$2
    bin=$BUILD/fuzz/fuzz_$t
    [ "$t" = trace_chunks ] && (seeds trace) # its seeds come from those traces
    seeds "$t"
    mkdir -p "$WORK/$t/corpus" "$WORK/$t/crashes"
    set -- -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$WORK/$t/crashes/"
    case $t in
    config | size) set -- "$@" -max_len=256 -dict="$ROOT/fuzz/seeds/$t.dict" ;;
    pytorch) set -- "$@" -max_len=300000 -dict="$ROOT/fuzz/seeds/pytorch.dict" ;;
    pickle) set -- "$@" -max_len=300000 -dict="$ROOT/fuzz/seeds/pytorch.dict" ;;
    trace) set -- "$@" -max_len=65536 ;;
    trace_chunks) set -- "$@" -max_len=300000 ;;
    whatif) set -- "$@" -max_len=40000 ;;
    esac
    log=$WORK/$t/run-$(date +%Y%m%d-%H%M%S).log
    start=$(date +%s)
    before=$(ls "$WORK/$t/crashes" | wc -l)
    "$bin" "$@" "$WORK/$t/corpus" "$WORK/$t/seeds" >"$log" 2>&1 || true
    secs=$(($(date +%s) - start)) # what really ran (an interrupted run is shorter)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    after=$(ls "$WORK/$t/crashes" | wc -l)
    corpus=$(ls "$WORK/$t/corpus" | wc -l)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$secs" "${execs:-?}" \
        "$corpus" "$((after - before))" >>"$WORK/summary.tsv"
    echo "fuzz_$t: ${execs:-?} executions in ${secs}s, corpus $corpus, new crashes $((after - before)) (log: $log)"
}

# Everything runs from main, and the last line exits, so the shell has read
# the whole file before any fuzzer starts (editing the script while a run is
# in progress cannot derail it).
main() {
    build
    mkdir -p "$WORK"
    if [ "$1" = all ]; then
        jobs=${FSC_FUZZ_JOBS:-2}
        running=0
        for t in $TARGETS; do
            run_one "$t" "$2" &
            running=$((running + 1))
            if [ "$running" -ge "$jobs" ]; then
                wait
                running=0
            fi
        done
        wait
    else
        case " $TARGETS " in *" $1 "*) ;; *) usage ;; esac
        run_one "$1" "$2"
    fi
}

main "$@"; exit $?
