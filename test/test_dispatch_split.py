"""relax-dispatch-library{policy=measured}: the run-time split between generated code and BLAS
(relax.dispatch_split -> relax-specialize-ranges' library variant -> relax-library-variants).

ONE executable per program, called at M on both sides of every split point (1, a prime,
each threshold and its neighbours, large), against numpy: matmul and matmul + bias (+ relu,
whose epilogue stays generated after the library call), f32 and f64."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import relax_mlir

K, N = 512, 256
# generated for M in [4, 32] (f32) and [1, 8] + [20, 40] (f64); BLAS elsewhere
TABLE = {"machine": "test", "isa": "any",
         "classes": [{"k": K, "n": N, "generated_m": [[4, 32]]},
                     {"k": K, "n": N, "dtype": "f64", "generated_m": [[1, 8], [20, 40]]}]}
MS = {"f32": (1, 2, 3, 4, 5, 13, 31, 32, 33, 97, 300),
      "f64": (1, 7, 8, 9, 13, 19, 20, 21, 40, 41, 97, 300)}
LIB = {"f32": {1, 2, 3, 33, 97, 300}, "f64": {9, 13, 19, 41, 97, 300}}


def T(dims, dt) -> str:
    s = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    e = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f"tensor<{s}x{dt}, #relax.shape<[{e}]>>"


def program(dt: str) -> str:
    """@mm: x @ w; @mm_bias: x @ w + b; @mm_bias_relu: relu(x @ w + b); M symbolic, unbounded."""
    x, w, b, y = T(["m", K], dt), T([K, N], dt), T([N], dt), T(["m", N], dt)
    mm = f'%0 = "relax.matmul"(%x, %w) : ({x}, {w}) -> {y}\n'
    add = f'  %1 = "relax.add"(%0, %b) : ({y}, {b}) -> {y}\n'
    relu = f'  %2 = "relax.relu"(%1) : ({y}) -> {y}\n'
    return (f"func.func @mm(%x: {x}, %w: {w}) -> {y} attributes {{relax.function}} {{\n  {mm}  return %0 : {y}\n}}\n"
            f"func.func @mm_bias(%x: {x}, %w: {w}, %b: {b}) -> {y} attributes {{relax.function}} {{\n  {mm}{add}"
            f"  return %1 : {y}\n}}\n"
            f"func.func @mm_bias_relu(%x: {x}, %w: {w}, %b: {b}) -> {y} attributes {{relax.function}} {{\n  {mm}{add}{relu}"
            f"  return %2 : {y}\n}}\n")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("table") / "table.json"
    path.write_text(json.dumps(TABLE))
    return str(path)


@pytest.fixture(scope="module", params=["f32", "f64"])
def exe(request, table):
    mp = pytest.MonkeyPatch()
    mp.setenv("RELAX_MLIR_DISPATCH_POLICY", "measured")
    mp.setenv("RELAX_MLIR_DISPATCH_TABLE", table)
    try:
        yield request.param, relax_mlir.compile(program(request.param))
    finally:
        mp.undo()


def test_split_in_ir(exe):
    """Each matmul is one split kernel: a dispatcher calling generated variants and the library
    variant, which calls the shim (the bias entry point where the bias add is all the epilogue)."""
    dt, e = exe
    text = e.llvm_dialect_text()
    assert text.count(f"llvm.call @relax_blas_matmul_22_{dt}(") == 2        # @mm, @mm_bias_relu
    assert text.count(f"llvm.call @relax_blas_matmul_bias_22_{dt}(") == 1   # @mm_bias
    assert text.count("__lib(") >= 3
    assert e.metadata["blas"] in ("mkl", "openblas")


def test_no_result_copy(exe):
    """The split dispatcher returns its variants' result in the output argument: one-shot
    bufferization sees each call's result equivalent to it, and drop-equivalent-buffer-results
    + canonicalize (pipelines/cpu.llvm_stage) leave a dispatcher with no buffer of its own
    (no malloc, no copy of M x N per call); the plain library variant is the call alone."""
    dt, e = exe
    parts = re.split(r"\n\s*llvm\.func ", e.llvm_dialect_text())
    fns = {p.split("(", 1)[0].lstrip("@"): p for p in parts[1:]}
    dispatchers = [f for f, body in fns.items() if f"llvm.call @{f}__lib(" in body]
    assert len(dispatchers) == 3
    for f in dispatchers:
        for word in ("malloc", "memcpy", "memrefCopy", "llvm.store"):
            assert word not in fns[f], (f, word)
    plain = [f + "__lib" for f in dispatchers if f"llvm.call @relax_blas_matmul_22_{dt}(" in fns[f + "__lib"]
             and "llvm.load" not in fns[f + "__lib"]]
    assert len(plain) == 1                     # @mm's: no epilogue
    assert "malloc" not in fns[plain[0]]


@pytest.mark.parametrize("fn", ["mm", "mm_bias", "mm_bias_relu"])
def test_numerics_across_split_points(exe, fn):
    dt, e = exe
    npdt = np.float32 if dt == "f32" else np.float64
    tol = dict(rtol=1e-4, atol=1e-3) if dt == "f32" else dict(rtol=1e-11, atol=1e-10)
    rng = np.random.default_rng(7)
    w = rng.standard_normal((K, N)).astype(npdt)
    b = rng.standard_normal(N).astype(npdt)
    for m in MS[dt]:
        x = rng.standard_normal((m, K)).astype(npdt)
        ref = x @ w
        if fn == "mm":
            got = e["mm"](x, w)
        else:
            ref = ref + b
            got = e[fn](x, w, b)
            if fn == "mm_bias_relu":
                ref = np.maximum(ref, 0)
        assert got.shape == (m, N) and got.dtype == npdt
        np.testing.assert_allclose(got, ref, **tol, err_msg=f"{fn} {dt} M={m}")


def test_zero_rows(exe):
    dt, e = exe
    npdt = np.float32 if dt == "f32" else np.float64
    got = e["mm_bias"](np.zeros((0, K), npdt), np.ones((K, N), npdt), np.ones(N, npdt))
    assert got.shape == (0, N)


def test_split_false_is_compile_time(table, monkeypatch):
    """split=false (pass option): the unbounded M is decided at compile time, BLAS."""
    from relax_mlir.transforms.pipeline import run_pipeline
    from relax_mlir import parse
    m = parse(program("f32"))
    run_pipeline(m, f"builtin.module(relax-infer-shapes, relax-dispatch-library{{policy=measured split=false table={table}}})")
    text = str(m)
    assert "relax.dispatch_split" not in text
    assert text.count('"relax.call_dps_library"') == 3


def test_ranges():
    """library_ranges: the complement of the generated ranges in M >= 1; refine: the schedule
    variants' partition cut by them (-1: the library), M = 0 joining its neighbour."""
    from relax_mlir.transforms.dispatch_split import library_ranges, refine
    assert library_ranges(((4, 32),)) == [(1, 3), (33, None)]
    assert library_ranges(((1, 8), (20, 40))) == [(9, 19), (41, None)]
    assert refine([(0, 3), (4, 127), (128, None)], [(1, 3), (33, None)]) == [(0, 3, -1), (4, 32, 1), (33, None, -1)]
    assert refine([(0, None)], [(9, 19), (41, None)]) == [(0, 8, 0), (9, 19, -1), (20, 40, 0), (41, None, -1)]
