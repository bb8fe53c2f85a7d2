# native_env.sh — sourced by the GPU scripts that load the native recorder:
# the Release build carried in gpu-carry/ (docs/BENCHMARKS.md, "GPU") on the
# library path, the Python path and the extension's build inputs.
G=$PWD/gpu-carry
export LD_LIBRARY_PATH=$G/lib:$G/build:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$G/build FRAGSCOPE_NATIVE_SRC=$G/fragscope_native.cpp \
  FRAGSCOPE_NATIVE_INCLUDE=$G/include FRAGSCOPE_NATIVE_LIB=$G/build FRAGSCOPE_BIN=$G/build/fragscope \
  TORCH_EXTENSIONS_DIR=/tmp/fsc-torch-ext PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
OUT=${OUT:-/tmp/fsc-out}

# native_prepare DIR: DIR and $OUT made, the GPU named in DIR/gpu.txt, the
# extension built (DIR/build.log; its tail printed when the build fails)
native_prepare() {
  mkdir -p "$OUT" "$1"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$1/gpu.txt" 2>&1
  python3 -c 'import fragscope_torch as f; f._build_native(verbose=False)' > "$1/build.log" 2>&1 \
    || tail -30 "$1/build.log"
}
