"""relax.quantized_matmul / quantized_take against numpy (gguf's own quantizer and
dequantizer; K-quants: random blocks, which gguf cannot quantize): every format, several
sizes through ONE executable, the generic kernels (dispatch off, and vulkan) and, on the cpu
target, the library kernels."""

from __future__ import annotations

import numpy as np
import pytest

import relax_mlir
from relax_mlir.ops.quant import GENERIC_FORMATS, LIBRARY_FORMATS, row_bytes

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType
QTYPE = {"f16": Q.F16, "bf16": Q.BF16, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "q4_1": Q.Q4_1, "q5_0": Q.Q5_0,
         "q5_1": Q.Q5_1, "q4_k": Q.Q4_K, "q5_k": Q.Q5_K, "q6_k": Q.Q6_K}
N = 7


def _k(fmt: str) -> int:
    """K: three 32-blocks, or two 256-blocks for the K-quants."""
    return 512 if fmt.endswith("_k") else 96


def _program(fmt: str, rb: int, activations: str = "f32") -> str:
    K = _k(fmt)
    X, W, I = f'tensor<?x{K}xf32, #relax.shape<["m", {K}]>>', f"tensor<{N}x{rb}xi8>", 'tensor<?xi64, #relax.shape<["s"]>>'
    Y, E = f'tensor<?x{N}xf32, #relax.shape<["m", {N}]>>', f'tensor<?x{K}xf32, #relax.shape<["s", {K}]>>'
    return f'''
func.func @main(%x: {X}, %w: {W}, %ids: {I}) -> ({Y}, {E}) attributes {{relax.function}} {{
  %y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}", activations = "{activations}"}} : ({X}, {W}) -> {Y}
  %e = "relax.quantized_take"(%w, %ids) {{format = "{fmt}"}} : ({W}, {I}) -> {E}
  return %y, %e : {Y}, {E}
}}'''


def _weights(fmt: str, rng):
    K = _k(fmt)
    if fmt.endswith("_k"):          # random blocks with f16 scales of a sane size
        raw = rng.integers(0, 256, (N, row_bytes(fmt, K)), dtype=np.uint8)
        blocks = raw.reshape(N, K // 256, -1)
        if fmt == "q6_k":
            blocks[..., -2:] = np.array([1e-2], np.float16).view(np.uint8)
        else:
            blocks[..., 0:4] = np.array([1e-2, 3e-2], np.float16).view(np.uint8)
    else:
        w = rng.standard_normal((N, K)).astype(np.float32)
        raw = np.ascontiguousarray(gguf.quants.quantize(w, QTYPE[fmt])).view(np.uint8).reshape(N, -1)
    assert raw.shape[1] == row_bytes(fmt, K)
    return raw.view(np.int8), gguf.quants.dequantize(raw, QTYPE[fmt]).reshape(N, K).astype(np.float64)


def _check(exe, fmt, rng, rel):
    raw, deq = _weights(fmt, rng)
    K = _k(fmt)
    for m in (1, 5, 64):
        x = rng.standard_normal((m, K)).astype(np.float32)
        ids = np.array([0, N - 1, 3, -2, N + 5, 2][:1 + m % 6], np.int64)
        y, e = exe(x, raw, ids)
        ref = x.astype(np.float64) @ deq.T
        np.testing.assert_allclose(y, ref, atol=rel * np.abs(ref).max(), rtol=0)
        np.testing.assert_array_equal(e, deq[np.clip(ids, 0, N - 1)].astype(np.float32))


@pytest.mark.parametrize("fmt", GENERIC_FORMATS)
def test_generic_kernels(fmt):
    exe = relax_mlir.compile(_program(fmt, row_bytes(fmt, _k(fmt))), options={"dispatch": False})
    _check(exe, fmt, np.random.default_rng(0), 1e-5)


@pytest.mark.parametrize("fmt", LIBRARY_FORMATS)
def test_library_kernels(fmt):
    exe = relax_mlir.compile(_program(fmt, row_bytes(fmt, _k(fmt))))
    _check(exe, fmt, np.random.default_rng(1), 1e-5)


@pytest.mark.parametrize("fmt", LIBRARY_FORMATS)
def test_library_kernels_q8_activations(fmt):
    """x quantized to 8 bits per block: llama.cpp's error, a few 1e-3 of the largest output."""
    exe = relax_mlir.compile(_program(fmt, row_bytes(fmt, _k(fmt)), "q8"))
    _check(exe, fmt, np.random.default_rng(2), 2e-2)


@pytest.mark.parametrize("fmt", GENERIC_FORMATS)
def test_vulkan_generic_kernels(fmt):
    """The GPU targets run the generic kernels (correct, not fast: speed is the GPU issue's)."""
    from relax_mlir.runtime import vulkan
    ok, why = vulkan.available()
    if not ok:
        pytest.skip(f"no Vulkan device: {why}")
    exe = relax_mlir.compile(_program(fmt, row_bytes(fmt, _k(fmt))), target="vulkan")
    _check(exe, fmt, np.random.default_rng(3), 1e-5)


def test_library_kernels_follow_the_executables_threads():
    """The quantized library kernels run on ``exe.num_threads`` threads (the module's count,
    which relax-lower-host passes to every qmatmul call), not the BLAS thread count. Same
    numbers on 1 and 2 threads."""
    import ctypes

    from relax_mlir.runtime import libraries
    fmt = "q4_0"
    exe = relax_mlir.compile(_program(fmt, row_bytes(fmt, _k(fmt))))
    lib = ctypes.CDLL(libraries.build_blas_shim(exe.metadata.get("blas") or libraries.blas_provider())[0])
    lib.relax_blas_set_num_threads.argtypes = [ctypes.c_int]
    if lib.relax_quant_max_threads() < 1 or libraries.openmp_library() is None:
        pytest.skip("no OpenMP runtime: the kernels run on one thread")
    rng = np.random.default_rng(4)
    raw, _ = _weights(fmt, rng)
    x = rng.standard_normal((4096, _k(fmt))).astype(np.float32)   # M N K = 2.75M >= the fork threshold
    ids = np.zeros(1, np.int64)
    try:
        outs = []
        for exe_threads, blas in ((1, 2), (2, 1)):
            exe.num_threads = exe_threads
            lib.relax_blas_set_num_threads(blas)
            outs.append(exe(x, raw, ids)[0])
            assert lib.relax_quant_last_threads() == exe_threads
        np.testing.assert_array_equal(outs[0], outs[1])
    finally:
        lib.relax_blas_set_num_threads(2)
        exe.num_threads = None
