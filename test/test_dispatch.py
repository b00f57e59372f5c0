"""relax-dispatch-library end to end: numerics with dispatch on and off (one executable per
setting, every size through it), the relax_blas shim on strided views, policy and options,
a user-registered pattern and library, export/load with the shim linked."""

from __future__ import annotations

import ctypes
import glob
import os
import shutil

import numpy as np
import pytest

import relax_mlir
from relax_mlir.runtime.executable import descriptor_class
from relax_mlir.transforms.registry import PipelineError

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


def T(dims: list, dt: str = "f32") -> str:
    static = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    enc = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f'tensor<{static}x{dt}, #relax.shape<[{enc}]>>'


def mm(lhs, rhs, out, name, dt="f32"):
    return f'  %{name} = "relax.matmul"(%{lhs[0]}, %{rhs[0]}) : ({T(lhs[1], dt)}, {T(rhs[1], dt)}) -> {T(out, dt)}\n'


A = ("a", ["m", "k"])
B = ("b", ["k", "n"])
A3 = ("a3", ["bt", "m", "k"])
B3 = ("b3", ["bt", "k", "n"])
B1 = ("b1", [1, "k", "n"])
BIAS = ("bias", ["n"])
PARAMS = [A, B, A3, B3, B1, BIAS]
RESULTS = [["m", "n"], ["bt", "m", "n"], ["bt", "m", "n"], ["bt", "m", "n"], ["bt", "m", "n"], ["m", "n"],
           ["bt", "m", "n"]]


def module(dt: str) -> str:
    body = mm(A, B, ["m", "n"], "r0", dt)                      # 22
    body += mm(A3, B3, ["bt", "m", "n"], "r1", dt)             # 33, equal batch
    body += mm(A3, B1, ["bt", "m", "n"], "r2", dt)             # 33, broadcast batch
    body += mm(A3, B, ["bt", "m", "n"], "r3", dt)              # 32
    body += mm(A, B3, ["bt", "m", "n"], "r4", dt)              # 23
    body += mm(A, B, ["m", "n"], "p5", dt)                     # 22 + bias + relu
    body += f'  %q5 = "relax.add"(%p5, %bias) : ({T(["m", "n"], dt)}, {T(["n"], dt)}) -> {T(["m", "n"], dt)}\n'
    body += f'  %r5 = "relax.relu"(%q5) : ({T(["m", "n"], dt)}) -> {T(["m", "n"], dt)}\n'
    body += mm(A3, B, ["bt", "m", "n"], "p6", dt)              # 32 + bias (bias first)
    body += f'  %r6 = "relax.add"(%bias, %p6) : ({T(["n"], dt)}, {T(["bt", "m", "n"], dt)}) -> {T(["bt", "m", "n"], dt)}\n'
    params = ", ".join(f"%{n}: {T(d, dt)}" for n, d in PARAMS)
    rtypes = ", ".join(T(r, dt) for r in RESULTS)
    rets = ", ".join(f"%r{i}" for i in range(len(RESULTS)))
    return (f"func.func @main({params}) -> ({rtypes}) attributes {{relax.function}} {{\n{body}"
            f"  return {rets} : {rtypes}\n}}\n")


def reference(a, b, a3, b3, b1, bias):
    return [a @ b, a3 @ b3, a3 @ b1, a3 @ b, a @ b3, np.maximum(a @ b + bias, 0), a3 @ b + bias]


SIZES = [(1, 1, 1, 1), (1, 5, 3, 1), (7, 13, 5, 3), (1, 1, 64, 70), (2, 65, 67, 64), (3, 128, 96, 80), (2, 96, 1, 64)]


@pytest.fixture(scope="module", params=["f32", "f64"])
def exes(request):
    dt = request.param
    src = module(dt)
    on = relax_mlir.compile(src)
    off = relax_mlir.compile(src, options={"dispatch": False})
    return dt, on, off


def test_numerics_dispatch_on_and_off(exes):
    dt, on, off = exes
    assert any("librelax_blas" in p for p in on.libraries)
    assert not any("librelax_blas" in p for p in off.libraries)
    npdt = np.float32 if dt == "f32" else np.float64
    tol = 2e-4 if dt == "f32" else 1e-10
    rng = np.random.default_rng(0)
    for bt, m, k, n in SIZES:
        def r(*s):
            return rng.standard_normal(s).astype(npdt)
        args = [r(m, k), r(k, n), r(bt, m, k), r(bt, k, n), r(1, k, n), r(n)]
        ref = reference(*args)
        for exe in (on, off):
            outs = exe(*args)
            for i, (o, e) in enumerate(zip(outs, ref)):
                assert o.shape == e.shape, (i, bt, m, k, n)
                np.testing.assert_allclose(o, e, rtol=tol, atol=tol * max(1, k), err_msg=f"result {i} {(bt, m, k, n)}")


def test_mlp_model_dispatch():
    from relax_mlir.frontend.models import MLPConfig, mlp_module, mlp_params, mlp_reference

    cfg = MLPConfig(d_in=64, d_hidden=96, d_out=32, max_batch=4096)
    text = str(mlp_module(relax_mlir.make_context(), cfg))
    exe = relax_mlir.compile(text)
    assert "relax_blas" in str(exe.libraries)
    rng = np.random.default_rng(1)
    ps = mlp_params(cfg, rng)
    for n in (1, 17, 130):
        x = rng.standard_normal((n, cfg.d_in)).astype(np.float32)
        np.testing.assert_allclose(exe(x, *ps), mlp_reference(x, *ps), rtol=1e-4, atol=1e-4)


def test_options_checked():
    with pytest.raises(PipelineError, match="no option 'dispach'"):
        relax_mlir.compile(module("f32"), options={"dispach": False})


# -- the shim on descriptors with offsets and strides -------------------------------------

def _desc(arr: np.ndarray, base: np.ndarray):
    """A memref descriptor of the view ``arr`` into ``base`` (element offset and strides)."""
    d = descriptor_class(arr.ndim)()
    d.allocated = d.aligned = base.ctypes.data
    d.offset = (arr.ctypes.data - base.ctypes.data) // arr.itemsize
    for i in range(arr.ndim):
        d.sizes[i] = arr.shape[i]
        d.strides[i] = arr.strides[i] // arr.itemsize
    return d


@pytest.fixture(scope="module")
def shim():
    from relax_mlir.runtime.libraries import library_paths

    lib = ctypes.CDLL(library_paths(["relax_blas"])[0])
    lib.relax_blas_set_small_flops.argtypes = [ctypes.c_double]
    lib.relax_blas_get_small_flops.restype = ctypes.c_double
    return lib


@pytest.mark.parametrize("small", [0.0, 1e12])   # BLAS path / plain-loop path
@pytest.mark.parametrize("m,k,n", [(1, 9, 7), (5, 1, 3), (6, 8, 1), (33, 17, 29)])
def test_shim_strided_views(shim, small, m, k, n):
    old = shim.relax_blas_get_small_flops()
    shim.relax_blas_set_small_flops(small)
    try:
        rng = np.random.default_rng(2)
        abase = rng.standard_normal((2 * k + 3, 3 * m + 2)).astype(np.float32)
        a = abase[3:3 + 2 * k:2, 2:2 + 3 * m:3].T             # transposed, strided, offset
        bbase = rng.standard_normal((k, n + 5)).astype(np.float32)
        b = bbase[:, 5:]                                       # row stride > n, offset
        biasbase = rng.standard_normal(2 * n).astype(np.float32)
        bias = biasbase[::2]                                   # strided bias
        cbase = np.full((n, m + 4), np.nan, np.float32)
        c = cbase[:, 4:].T                                     # transposed output
        args = [_desc(a, abase), _desc(b, bbase), _desc(bias, biasbase), _desc(c, cbase)]
        shim._mlir_ciface_relax_blas_matmul_bias_22_f32(*[ctypes.byref(x) for x in args])
        np.testing.assert_allclose(c, a @ b + bias, rtol=1e-4, atol=1e-4)
        assert np.isnan(cbase[:, :4]).all()                    # nothing written outside the view
        # batched 3-D x 2-D, batch stride not collapsible (a padded batch of A)
        a3base = rng.standard_normal((3, m + 1, k)).astype(np.float32)
        a3 = a3base[:, 1:, :]
        c3 = np.full((3, m, n), np.nan, np.float32)             # no bias: BLAS writes C with beta = 0, never reads it
        shim._mlir_ciface_relax_blas_matmul_32_f32(*[ctypes.byref(x) for x in
                                                    (_desc(a3, a3base), _desc(b, bbase), _desc(c3, c3))])
        np.testing.assert_allclose(c3, a3 @ b, rtol=1e-4, atol=1e-4)
    finally:
        shim.relax_blas_set_small_flops(old)


def _attention_operand(x: np.ndarray, head_view: bool) -> np.ndarray:
    """(B, heads, rows, d) as the library takes it: a head view (B, rows, heads*d) or plain
    (B*heads, rows, d) products."""
    b, h, r, d = x.shape
    y = x.transpose(0, 2, 1, 3).reshape(b, r, h * d) if head_view else x.reshape(b * h, r, d)
    return np.ascontiguousarray(y)


@pytest.mark.parametrize("flags", ["0000", "1111", "0110"])
@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("B,H,Hk,L,D,Dv", [(2, 6, 2, 70, 8, 5), (1, 3, 1, 1, 4, 4), (2, 4, 4, 9, 8, 8)])
def test_shim_grouped_attention(shim, flags, tiled, B, H, Hk, L, D, Dv):
    """relax_blas_attention with Hk k / v heads for H query heads, plain or as head views of
    (B, S, Hk*D): query head h reads k / v head h / (H/Hk), or h % Hk in the `_tiled` entries
    (relax_mlir/llm's group-major heads); L = 70 crosses the 64-row task blocks."""
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal((B, H, L, D), np.float32), rng.standard_normal((B, Hk, L, D), np.float32)
    v = rng.standard_normal((B, Hk, L, Dv), np.float32)
    bias = np.where(np.tril(np.ones((L, L), bool)), 0, np.finfo(np.float32).min).astype(np.float32)[None]
    hq, hk, hv, ho = (c == "1" for c in flags)
    out = np.full((B, L, H * Dv) if ho else (B * H, L, Dv), np.nan, np.float32)
    scale = np.full(H, 0.5, np.float32)
    lo, live = np.array(-np.inf, np.float32), np.ones((1, 1, 1), np.float32)
    args = [_attention_operand(q, hq), _attention_operand(k, hk), _attention_operand(v, hv), scale, bias, lo, live, out]
    fn = getattr(shim, f"_mlir_ciface_relax_blas_attention_h{flags}{'_tiled' if tiled else ''}_f32")
    fn(*[ctypes.byref(_desc(a, a)) for a in args])
    idx = np.arange(H) % Hk if tiled else np.arange(H) // (H // Hk)
    s = 0.5 * q.astype(np.float64) @ k[:, idx].astype(np.float64).swapaxes(-1, -2) + bias
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v[:, idx]                  # (B, H, L, Dv)
    got = out.reshape(B, L, H, Dv).transpose(0, 2, 1, 3) if ho else out.reshape(B, H, L, Dv)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lo", [-np.inf, -1e9])
@pytest.mark.parametrize("mask", ["causal", "window", "padding", "dead_row"])
def test_shim_attention_skips_dead_keys(shim, mask, lo):
    """Key columns the bias masks (-inf, or the f32 minimum) in every row of a 64-row task
    are skipped, with the very result of the whole softmax: a causal mask, a sliding window
    of 5, trailing padding (-inf), and a row masked everywhere (every key, uniformly: the
    whole range kept). A clamp lo above the f32 minimum keeps every column (lo = -1e9)."""
    rng = np.random.default_rng(5)
    B, H, L, D = 1, 2, 150, 8
    q, k, v = (rng.standard_normal((B, H, L, D), np.float32) for _ in range(3))
    neg = np.finfo(np.float32).min
    i, j = np.arange(L)[:, None], np.arange(L)[None]
    live = {"causal": j <= i, "window": (j <= i) & (i - j < 5), "padding": j < 101,
            "dead_row": (j <= i) & (i != 70)}[mask]
    bias = np.where(live, 0, -np.inf if mask == "padding" else neg).astype(np.float32)[None]
    out = np.full((B * H, L, D), np.nan, np.float32)
    args = [_attention_operand(x, False) for x in (q, k, v)] + [
        np.ones(H, np.float32), bias, np.array(lo, np.float32), np.ones((1, 1, 1), np.float32), out]
    shim._mlir_ciface_relax_blas_attention_h0000_f32(*[ctypes.byref(_desc(a, a)) for a in args])
    s = np.maximum((q @ k.swapaxes(-1, -2)).astype(np.float32) + bias, np.float32(lo)).astype(np.float64)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v
    np.testing.assert_allclose(out.reshape(B, H, L, D), ref, rtol=1e-5, atol=1e-5)
    if mask == "dead_row":   # every key alike: their mean
        np.testing.assert_allclose(out[:, 70], v[0].mean(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n,batch", [(2, 3, 2, 2), (33, 17, 29, 5), (128, 32, 128, 12)])
def test_shim_batched_strided(shim, dt, m, k, n, batch):
    """Equal batches of A and B, neither collapsible into one gemm (padded batch strides, a
    transposed B, an offset C with padded rows), with and without a bias: the strided-batch
    path (one BLAS call for the whole batch) gives every product, writes nothing outside C."""
    s = "f32" if dt == np.float32 else "f64"
    rng = np.random.default_rng(7)
    abase = rng.standard_normal((batch, m + 2, k)).astype(dt)
    a = abase[:, 2:, :]                                        # batch stride (m+2)*k
    bbase = rng.standard_normal((batch, n, k + 3)).astype(dt)
    b = bbase[:, :, 3:].transpose(0, 2, 1)                     # (batch, k, n), transposed layout
    biasbase = rng.standard_normal(n).astype(dt)
    for with_bias in (False, True):
        cbase = np.full((batch, m, n + 4), np.nan, dt)
        c = cbase[:, :, 4:]                                    # offset, row stride n+4
        descs = [_desc(a, abase), _desc(b, bbase)] + ([_desc(biasbase, biasbase)] if with_bias else []) \
            + [_desc(c, cbase)]
        fn = getattr(shim, f"_mlir_ciface_relax_blas_matmul_{'bias_' if with_bias else ''}33_{s}")
        fn(*[ctypes.byref(x) for x in descs])
        want = a @ b + (biasbase if with_bias else 0)
        tol = 1e-4 if dt == np.float32 else 1e-10
        np.testing.assert_allclose(c, want, rtol=tol, atol=tol)
        assert np.isnan(cbase[:, :, :4]).all()


def _tb_module(dt: str) -> str:
    """q @ k^T (33), x @ w^T + bias (32, bias), x2 @ w^T (22): every B a transpose in the graph."""
    Q, K3, X3, X2, W, BI = (T(["b", "s", "d"], dt), T(["b", "t", "d"], dt), T(["b", "s", "d"], dt),
                            T(["s", "d"], dt), T(["n", "d"], dt), T(["n"], dt))
    KT, WT = T(["b", "d", "t"], dt), T(["d", "n"], dt)
    R0, R1, R2 = T(["b", "s", "t"], dt), T(["b", "s", "n"], dt), T(["s", "n"], dt)
    return f"""
func.func @main(%q: {Q}, %k: {K3}, %x: {X3}, %x2: {X2}, %w: {W}, %bias: {BI}) -> ({R0}, {R1}, {R2}) attributes {{relax.function}} {{
  %kt = "relax.permute_dims"(%k) {{axes = array<i64: 0, 2, 1>}} : ({K3}) -> {KT}
  %0 = "relax.matmul"(%q, %kt) : ({Q}, {KT}) -> {R0}
  %wt = "relax.permute_dims"(%w) : ({W}) -> {WT}
  %1 = "relax.matmul"(%x, %wt) : ({X3}, {WT}) -> {R1}
  %2 = "relax.add"(%1, %bias) : ({R1}, {BI}) -> {R1}
  %wt2 = "relax.permute_dims"(%w) : ({W}) -> {WT}
  %3 = "relax.matmul"(%x2, %wt2) : ({X2}, {WT}) -> {R2}
  return %0, %2, %3 : {R0}, {R1}, {R2}
}}
"""


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_transposed_b_numerics(dt):
    """The _tb variants (B read through its transpose, no copy) against numpy at several
    sizes through ONE executable, unbound and with the weight and bias bound (f32: the packed
    kernel reads the transposed weight)."""
    exe = relax_mlir.compile(_tb_module(dt))
    npdt = np.float32 if dt == "f32" else np.float64
    rng = np.random.default_rng(11)
    d, n = 24, 40
    w = rng.standard_normal((n, d)).astype(npdt)
    bias = rng.standard_normal(n).astype(npdt)
    bound = exe["main"].bind_params(w, bias)
    tol = 1e-4 if dt == "f32" else 1e-10
    for b, s, t in [(1, 1, 1), (3, 7, 5), (2, 33, 64), (4, 130, 17)]:
        q, k = rng.standard_normal((b, s, d)).astype(npdt), rng.standard_normal((b, t, d)).astype(npdt)
        x, x2 = rng.standard_normal((b, s, d)).astype(npdt), rng.standard_normal((s, d)).astype(npdt)
        want = [q @ k.transpose(0, 2, 1), x @ w.T + bias, x2 @ w.T]
        for got in (exe(q, k, x, x2, w, bias), bound(q, k, x, x2)):
            for g, e in zip(got, want):
                np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


def _heads_module(dt: str, h: int, d: int) -> str:
    """The head split of q, k, v, x (b, s, h*d) in the graph: the scores q @ k^T (h11, _tb),
    s @ v (h01) and the heads of x against a batch of matrices (h10)."""
    X = T(["b", "s", h * d], dt)
    X4, H4, H3 = T(["b", "s", h, d], dt), T(["b", h, "s", d], dt), T([f"{h}*b", "s", d], dt)
    HT, SC = T([f"{h}*b", d, "s"], dt), T([f"{h}*b", "s", "s"], dt)
    W, R2 = T([f"{h}*b", d, 5], dt), T([f"{h}*b", "s", 5], dt)

    def split(name, v):
        return (f'  %{name}4 = "relax.reshape"(%{v}) {{shape = #relax.shape<["b", "s", {h}, {d}]>}} : ({X}) -> {X4}\n'
                f'  %{name}p = "relax.permute_dims"(%{name}4) {{axes = array<i64: 0, 2, 1, 3>}} : ({X4}) -> {H4}\n'
                f'  %{name}3 = "relax.reshape"(%{name}p) {{shape = #relax.shape<["{h}*b", "s", {d}]>}} : ({H4}) -> {H3}\n')
    return f"""
func.func @main(%q: {X}, %k: {X}, %v: {X}, %x: {X}, %w: {W}) -> ({SC}, {H3}, {R2}) attributes {{relax.function}} {{
{split("q", "q")}{split("k", "k")}{split("v", "v")}{split("x", "x")}
  %kt = "relax.permute_dims"(%k3) {{axes = array<i64: 0, 2, 1>}} : ({H3}) -> {HT}
  %s = "relax.matmul"(%q3, %kt) : ({H3}, {HT}) -> {SC}
  %o = "relax.matmul"(%s, %v3) : ({SC}, {H3}) -> {H3}
  %y = "relax.matmul"(%x3, %w) : ({H3}, {W}) -> {R2}
  return %s, %o, %y : {SC}, {H3}, {R2}
}}
"""


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_head_views_numerics(dt, tmp_path):
    """The head-view products (q, k, v read in place from their (b, s, h*d) projections:
    h11 _tb, h01, h10) against numpy at several (b, s) through ONE executable, including
    b = 1, s = 1 and sizes below and above the shim's small-product threshold."""
    h, d = 3, 8
    src = _heads_module(dt, h, d)
    mod = relax_mlir.compile(src, options={"dump_ir": str(tmp_path)})
    graph = open(glob.glob(os.path.join(str(tmp_path), "*-graph.mlir"))[0]).read()
    for flags in ("tb_33_h11", "33_h01", "33_h10"):
        assert f'"relax_blas_matmul_{flags}_{dt}"' in graph
    assert "permute" not in graph
    npdt = np.float32 if dt == "f32" else np.float64
    rng = np.random.default_rng(5)
    tol = 1e-4 if dt == "f32" else 1e-10

    def heads(t):
        b, s, _ = t.shape
        return t.reshape(b, s, h, d).transpose(0, 2, 1, 3).reshape(b * h, s, d)

    for b, s in [(1, 1), (2, 7), (3, 33), (1, 64)]:
        q, k, v, x = (rng.standard_normal((b, s, h * d)).astype(npdt) for _ in range(4))
        w = rng.standard_normal((b * h, d, 5)).astype(npdt)
        sc = heads(q) @ heads(k).transpose(0, 2, 1)
        want = [sc, sc @ heads(v), heads(x) @ w]
        for g, e in zip(mod(q, k, v, x, w), want):
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=f"(b, s) = ({b}, {s})")


# -- extensibility: a user pattern and library, no change to the pass ---------------------

DPS_ADD = f"""
func.func @main(%x: {T(["n", 4])}, %y: {T(["n", 4])}) -> {T(["n", 4])} attributes {{relax.function}} {{
  %0 = "relax.add"(%x, %y) : ({T(["n", 4])}, {T(["n", 4])}) -> {T(["n", 4])}
  return %0 : {T(["n", 4])}
}}
"""


def test_user_pattern_and_library(tmp_path):
    import subprocess

    from relax_mlir.runtime import libraries
    from relax_mlir.transforms.dispatch_patterns import DispatchPattern, register_dispatch, unregister_dispatch

    lib = tmp_path / "libdps.so"
    src = os.path.join(os.path.dirname(__file__), "Inputs", "dps_lib.c")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(lib), src], check=True)
    libraries.register_library("test_dps", lambda: [str(lib)], replace=True)
    register_dispatch(DispatchPattern(
        "test_dps_add", ("add",), "dps_add", "test_dps",
        predicate=lambda m: all(s.rank == 2 and s.shape[1] == 4 and s.dtype == "f32" for s in m.inputs)))
    try:
        exe = relax_mlir.compile(DPS_ADD)
        assert str(lib) in exe.libraries
        x, y = np.ones((3, 4), np.float32), np.arange(12, dtype=np.float32).reshape(3, 4)
        np.testing.assert_allclose(exe(x, y), x + y)
    finally:
        unregister_dispatch("test_dps_add")
    assert not any("libdps" in p for p in relax_mlir.compile(DPS_ADD).libraries)


def test_export_links_shim(tmp_path):
    src = module("f32")
    exe = relax_mlir.compile(src)
    path = exe.export(str(tmp_path / "m.so"))
    loaded = relax_mlir.load(path)
    rng = np.random.default_rng(3)
    bt, m, k, n = 2, 65, 33, 64
    args = [rng.standard_normal(s).astype(np.float32) for s in
            [(m, k), (k, n), (bt, m, k), (bt, k, n), (1, k, n), (n,)]]
    for o, e in zip(loaded(*args), reference(*args)):
        np.testing.assert_allclose(o, e, rtol=2e-4, atol=2e-4)
    assert loaded.metadata["blas"] == exe.metadata["blas"]


# -- BLAS providers: this process runs every test above on one (the default, or
# $RELAX_BLAS); each other installed provider reruns them in a fresh process (one provider
# per process: the shims export the same symbols). -----------------------------------------

def test_blas_metadata_and_shim(exes, shim):
    from relax_mlir.runtime.libraries import blas_provider

    dt, on, off = exes
    assert on.metadata["blas"] == blas_provider()
    assert "blas" not in off.metadata
    shim.relax_blas_provider.restype = ctypes.c_char_p
    assert shim.relax_blas_provider().decode() == blas_provider()


def test_blas_provider_env_checked(monkeypatch):
    from relax_mlir.runtime.libraries import LibraryError, blas_provider, blas_providers

    current = relax_mlir.compile(module("f32")).metadata["blas"]
    monkeypatch.setenv("RELAX_BLAS", "atlas")
    with pytest.raises(LibraryError, match="unknown BLAS provider"):
        blas_provider()
    other = [p for p in blas_providers() if p != current]
    if other:   # a second provider in the same process is refused, not silently mixed
        monkeypatch.setenv("RELAX_BLAS", other[0])
        with pytest.raises(LibraryError, match="once per process"):
            relax_mlir.compile(module("f32"))


@pytest.mark.parametrize("provider", ["openblas", "mkl"])
def test_blas_provider(provider):
    import subprocess
    import sys

    from relax_mlir.runtime.libraries import blas_provider, blas_providers

    if provider not in blas_providers():
        pytest.skip(f"{provider} not installed (MKL: pip install -e '.[mkl]', x86-64 Linux wheels only)")
    if provider == blas_provider():
        assert relax_mlir.compile(module("f32")).metadata["blas"] == provider  # the tests above
        return
    env = dict(os.environ, RELAX_BLAS=provider)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                        "-k", "not test_blas_provider and not test_user_pattern"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
