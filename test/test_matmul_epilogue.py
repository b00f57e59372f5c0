"""Matmul kernels with a fused epilogue (relax-epilogue-in-place): the product is computed in
the output and the epilogue runs in place, in every variant of the kernel (generated GEMV,
register-tiled, packed, and the library variant of the run-time split). Numerics through ONE
executable per program at M = 1, odd and large; the exported code pinned to make no M x N
temporary per call (the plain matmul's variants are the reference: the packed variant's only
allocation is its panel of B, inside the thread loop)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import relax_mlir

K = N = 576  # the default calibration splits this class: library at M <= 2 and M > 512


def _t(dims) -> str:
    s = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    e = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f"tensor<{s}xf32, #relax.shape<[{e}]>>"


def program() -> str:
    x, w, b, y = _t(["m", K]), _t([K, N]), _t([N]), _t(["m", N])
    mm = f'%0 = "relax.matmul"(%x, %w) : ({x}, {w}) -> {y}\n'
    return (f"func.func @mm(%x: {x}, %w: {w}) -> {y} attributes {{relax.function}} {{\n  {mm}  return %0 : {y}\n}}\n"
            f"func.func @mm_bias(%x: {x}, %w: {w}, %b: {b}) -> {y} attributes {{relax.function}} {{\n  {mm}"
            f'  %1 = "relax.add"(%0, %b) : ({y}, {b}) -> {y}\n  return %1 : {y}\n}}\n'
            f"func.func @mm_bias_relu(%x: {x}, %w: {w}, %b: {b}) -> {y} attributes {{relax.function}} {{\n  {mm}"
            f'  %1 = "relax.add"(%0, %b) : ({y}, {b}) -> {y}\n  %2 = "relax.relu"(%1) : ({y}) -> {y}\n'
            f"  return %2 : {y}\n}}\n"
            f"func.func @mm_relu(%x: {x}, %w: {w}) -> {y} attributes {{relax.function}} {{\n  {mm}"
            f'  %1 = "relax.relu"(%0) : ({y}) -> {y}\n  return %1 : {y}\n}}\n'
            f"func.func @mm_res(%x: {x}, %w: {w}, %r: {y}) -> {y} attributes {{relax.function}} {{\n  {mm}"
            f'  %1 = "relax.add"(%r, %0) : ({y}, {y}) -> {y}\n  return %1 : {y}\n}}\n')


@pytest.fixture(scope="module")
def exe():
    return relax_mlir.compile(program())


def _mallocs(text: str) -> dict[str, int]:
    """``llvm.call @malloc`` per kernel function of the LLVM-dialect text."""
    out, name = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*llvm\.func @([\w$.]+)\(", line)
        if m:
            name = m.group(1)
            out[name] = 0
        elif name is not None and "llvm.call @malloc(" in line:
            out[name] += 1
    return out


def test_no_product_temporary(exe):
    """Every variant of each fused kernel allocates exactly what the plain matmul's same
    variant does (no M x N buffer for the product), and the bias-only library variant calls
    the bias entry point on the output."""
    text = exe.llvm_dialect_text()
    counts = _mallocs(text)
    plain = {n[n.index("__"):] if "__" in n else "": c for n, c in counts.items() if n.startswith("relax_matmul_f32_")}
    fused = {n: c for n, c in counts.items() if n.startswith("fused_matmul_")}
    assert sorted(plain) == ["", "__lib", "__m17_39", "__m2_3", "__m40", "__m4_16"]
    assert plain["__m40"] == 1  # the packed panel of B, in the thread loop
    assert len(fused) == 4 * len(plain)  # four fused kernels, each split like the matmul
    for n, c in fused.items():
        suffix = n[n.index("__"):] if "__" in n else ""
        assert c == plain[suffix], (n, c, plain)
    assert "llvm.call @relax_blas_matmul_bias_22_f32(" in text


@pytest.mark.parametrize("fn", ["mm_bias", "mm_bias_relu", "mm_relu", "mm_res"])
def test_numerics(exe, fn):
    """One executable, M = 1 (library), 2, 7, 13, 40 (packed), 517 (library, odd) against numpy."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((K, N), dtype=np.float32)
    b = rng.standard_normal(N, dtype=np.float32)
    for m in (1, 2, 7, 13, 40, 517):
        x = rng.standard_normal((m, K), dtype=np.float32)
        r = rng.standard_normal((m, N), dtype=np.float32)
        p = x.astype(np.float64) @ w.astype(np.float64)
        if fn == "mm_bias":
            got, want = exe[fn](x, w, b), p + b
        elif fn == "mm_relu":  # an epilogue with no input but the product: in place, no ins
            got, want = exe[fn](x, w), np.maximum(p, 0)
        elif fn == "mm_bias_relu":
            got, want = exe[fn](x, w, b), np.maximum(p + b, 0)
        else:
            got, want = exe[fn](x, w, r), r + p
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3, err_msg=f"{fn} M={m}")
