"""relax.quantized_matmul / quantized_take against numpy (gguf's own quantizer and
dequantizer): every format, several sizes through ONE executable, the generic kernels
(dispatch off) and, on the cpu target, the library kernels."""

from __future__ import annotations

import numpy as np
import pytest

import relax_mlir
from relax_mlir.ops.quant import GENERIC_FORMATS, LIBRARY_FORMATS, row_bytes

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType
QTYPE = {"f16": Q.F16, "bf16": Q.BF16, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "q4_1": Q.Q4_1, "q5_0": Q.Q5_0,
         "q5_1": Q.Q5_1}
N, K = 7, 96


def _program(fmt: str, rb: int, activations: str = "f32") -> str:
    X, W, I = f'tensor<?x{K}xf32, #relax.shape<["m", {K}]>>', f"tensor<{N}x{rb}xi8>", 'tensor<?xi64, #relax.shape<["s"]>>'
    Y, E = f'tensor<?x{N}xf32, #relax.shape<["m", {N}]>>', f'tensor<?x{K}xf32, #relax.shape<["s", {K}]>>'
    return f'''
func.func @main(%x: {X}, %w: {W}, %ids: {I}) -> ({Y}, {E}) attributes {{relax.function}} {{
  %y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}", activations = "{activations}"}} : ({X}, {W}) -> {Y}
  %e = "relax.quantized_take"(%w, %ids) {{format = "{fmt}"}} : ({W}, {I}) -> {E}
  return %y, %e : {Y}, {E}
}}'''


def _weights(fmt: str, rng):
    w = rng.standard_normal((N, K)).astype(np.float32)
    raw = np.ascontiguousarray(gguf.quants.quantize(w, QTYPE[fmt])).view(np.uint8).reshape(N, -1)
    assert raw.shape[1] == row_bytes(fmt, K)
    return raw.view(np.int8), gguf.quants.dequantize(raw, QTYPE[fmt]).reshape(N, K).astype(np.float64)


def _check(exe, fmt, rng, rel):
    raw, deq = _weights(fmt, rng)
    for m in (1, 5, 64):
        x = rng.standard_normal((m, K)).astype(np.float32)
        ids = np.array([0, N - 1, 3, -2, N + 5, 2][:1 + m % 6], np.int64)
        y, e = exe(x, raw, ids)
        ref = x.astype(np.float64) @ deq.T
        np.testing.assert_allclose(y, ref, atol=rel * np.abs(ref).max(), rtol=0)
        np.testing.assert_array_equal(e, deq[np.clip(ids, 0, N - 1)].astype(np.float32))


@pytest.mark.parametrize("fmt", GENERIC_FORMATS)
def test_generic_kernels(fmt):
    exe = relax_mlir.compile(_program(fmt, row_bytes(fmt, K)), options={"dispatch": False})
    _check(exe, fmt, np.random.default_rng(0), 1e-5)


@pytest.mark.parametrize("fmt", [f for f in LIBRARY_FORMATS if f in QTYPE])
def test_library_kernels(fmt):
    exe = relax_mlir.compile(_program(fmt, row_bytes(fmt, K)))
    _check(exe, fmt, np.random.default_rng(1), 1e-5)


@pytest.mark.parametrize("fmt", [f for f in LIBRARY_FORMATS if f in QTYPE])
def test_library_kernels_q8_activations(fmt):
    """x quantized to 8 bits per block: llama.cpp's error, a few 1e-3 of the largest output."""
    exe = relax_mlir.compile(_program(fmt, row_bytes(fmt, K), "q8"))
    _check(exe, fmt, np.random.default_rng(2), 2e-2)


@pytest.mark.parametrize("fmt", GENERIC_FORMATS)
def test_vulkan_generic_kernels(fmt):
    """The GPU targets run the generic kernels (correct, not fast: speed is the GPU issue's)."""
    from relax_mlir.runtime import vulkan
    ok, why = vulkan.available()
    if not ok:
        pytest.skip(f"no Vulkan device: {why}")
    exe = relax_mlir.compile(_program(fmt, row_bytes(fmt, K)), target="vulkan")
    _check(exe, fmt, np.random.default_rng(3), 1e-5)
