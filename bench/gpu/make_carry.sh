#!/usr/bin/env bash
# make_carry.sh — the folder a GPU call carries (docs/BENCHMARKS.md, "GPU"):
# a Release build with the cuda backend (build-gpu/), copied to gpu-carry/
# with what the GPU machine lacks: libzstd, libsqlite3 and libcjson in lib/,
# the public headers (and the generated version.h) in include/, and the
# native recorder's extension source. Run here, then name gpu-carry in the
# device call's carry list.
#   bash bench/gpu/make_carry.sh [TESTS=ON]
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFSC_CUDA=ON -DFSC_BENCH=OFF \
  -DFSC_TESTS="${TESTS:-OFF}" >/dev/null
cmake --build build-gpu -j"$(nproc)" >/dev/null
G=gpu-carry
rm -rf "$G"
mkdir -p "$G/build" "$G/lib" "$G/include"
cp -a build-gpu/fragscope build-gpu/fragscope_torch.py build-gpu/libfragscope.so* \
  build-gpu/libfragscope_torch.so "$G/build/"
cp -a include/fragscope "$G/include/"
cp build-gpu/include/fragscope/version.h "$G/include/fragscope/"
cp tools/torch/fragscope_native.cpp "$G/"
for l in libzstd.so.1 libsqlite3.so.0 libcjson.so.1; do
  cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l && /x86-64/ {print $NF; exit}')" "$G/lib/"
done
if [ -d python/fragscope_torch ]; then cp -a python "$G/python"; fi
du -sh "$G"
