#!/usr/bin/env bash
# Builds .gpu/mlir-cp312.tar.xz: the pinned MLIR 22 wheels for CPython 3.12 (the lent GPU
# machines' python3), cut to what the cuda target loads, for `run(carry=[".gpu"])`
# (64 MiB per call). Run here, where PyPI is reachable; bench/gpu_session.sh unpacks it.
# Kept: the bindings (mlir/ without bin/, include/), mlir/lib's CUDA runtime wrappers and C
# runner utils (+ their two helpers), llvm/lib/libLLVM.so (the bindings need it); an empty
# stub for libMLIR.so (listed NEEDED by libmlir_c_runner_utils.so, no symbol used);
# everything stripped (docs/gpu.md, ../shared/mlir-notes.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
VERSIONS=$(grep -o '"xtc-[a-z-]*==[0-9.]*"' pyproject.toml | tr -d '"' | tr '\n' ' ')
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$PY" -m pip download --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 3.12 \
    -d "$W/wheels" $VERSIONS >/dev/null
S=$W/site
for w in "$W"/wheels/*.whl; do "$PY" -m zipfile -e "$w" "$S"; done
rm -rf "$S"/*.dist-info "$S/mlir/bin" "$S/mlir/_mlir_libs/include" "$S/mlir/include" "$S/llvm/bin" "$S/llvm/include"
find "$S/llvm" -type f ! -name 'libLLVM.so*' -delete
find "$S/mlir/lib" -type f ! \( -name libmlir_cuda_runtime.so -o -name libmlir_c_runner_utils.so \
    -o -name libmlir_float16_utils.so -o -name libmlir_apfloat_wrappers.so -o -name libmlir_runner_utils.so \) -delete
find "$S/mlir/lib" -type l -delete
echo "" | cc -shared -x c - -o "$S/mlir/lib/libMLIR.so"
find "$S" -name '*.so*' -type f -exec strip --strip-unneeded {} +
mkdir -p .gpu
tar -C "$S" -cf - . | xz -9 -T0 > .gpu/mlir-cp312.tar.xz
ls -l .gpu/mlir-cp312.tar.xz
