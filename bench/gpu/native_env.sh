# native_env.sh — sourced by the GPU scripts that load the native recorder:
# the Release build carried in gpu-carry/ (docs/BENCHMARKS.md, "GPU") on the
# library path, the Python path and the extension's build inputs.
G=$PWD/gpu-carry
export LD_LIBRARY_PATH=$G/lib:$G/build:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$G/build FRAGSCOPE_NATIVE_SRC=$G/fragscope_native.cpp \
  FRAGSCOPE_NATIVE_INCLUDE=$G/include FRAGSCOPE_NATIVE_LIB=$G/build FRAGSCOPE_BIN=$G/build/fragscope \
  TORCH_EXTENSIONS_DIR=/tmp/fsc-torch-ext PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
