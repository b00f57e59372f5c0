"""f16 / bf16 row kernels and elementwise kernels on the GPU rules (docs/gpu.md): the Rows rule
(softmax, RMSNorm, LayerNorm, sum / max / mean over one axis) reads 16-bit data widened to f32,
accumulates in f32 and rounds once where it stores a 16-bit result; the Elementwise rule takes
16-bit floats in vector accesses (8 per thread on cuda: 128 bits; 4 on vulkan: 64 bits) behind
its run-time alignment guard. On vulkan (lavapipe on CI): numerics against numpy (float64 on the
16-bit inputs) and the cpu target at sizes 1, odd and large through ONE executable per case,
aligned and unaligned views, the route each call took (its launches' grids); on cuda: the PTX of
each kernel (its loads) and the fake driver's host path; a bf16 tiny Llama on vulkan gives the
cpu target's tokens."""

from __future__ import annotations

import os
import re
import sys

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.backends.gpu import row_reductions, vector_elementwise  # noqa: E402
from relax_mlir.dialects import relax  # noqa: E402
from relax_mlir.frontend.builder import graph_function  # noqa: E402
from relax_mlir.pipelines.gpu import WORKGROUP_SIZE  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

import gpu_checks  # noqa: E402
from test_gpu_rules import routes  # noqa: E402,F401  (the fixture: each launch's route on vulkan)

DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
#: one unit in the last place at 1.0
ULP = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7}
#: (rows, cols): 1, odd, large (1024 x 4096: the fallback's serial rows)
ROW_SIZES = [(1, 1), (7, 33), (33, 1001), (1, 4096), (1024, 4096)]


def _rows_module(dt: str) -> ir.Module:
    """Every row kernel kind on ``dt`` data, and mixed kernels (f16 in, f32 out and back)."""
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        x2 = [("x", ["n", "k"], dt)]
        with graph_function(m, "softmax", x2) as fn:
            fn.ret(relax.softmax(fn.params[0], axis=-1))
        with graph_function(m, "rms_norm", x2 + [("w", ["k"], dt)]) as fn:
            fn.ret(relax.rms_norm(*fn.params, axes=[-1]))
        with graph_function(m, "layer_norm", x2 + [("g", ["k"], dt), ("b", ["k"], dt)]) as fn:
            fn.ret(relax.layer_norm(*fn.params, axes=[-1], epsilon=1e-5))
        with graph_function(m, "sum", x2) as fn:
            fn.ret(relax.sum(fn.params[0], axes=[-1]))
        with graph_function(m, "max", x2) as fn:
            fn.ret(relax.max(fn.params[0], axes=[-1]))
        with graph_function(m, "mean", x2) as fn:
            fn.ret(relax.mean(fn.params[0], axes=[-1]))
        with graph_function(m, "sum0", x2) as fn:        # a reduction over the first axis
            fn.ret(relax.sum(fn.params[0], axes=[0]))
        with graph_function(m, "max0", x2) as fn:
            fn.ret(relax.max(fn.params[0], axes=[0]))
        with graph_function(m, "softmax_to_f32", x2) as fn:   # 16-bit logits, f32 probabilities
            fn.ret(relax.softmax(relax.astype(fn.params[0], dtype="f32"), axis=-1))
        with graph_function(m, "softmax_from_f32", [("x", ["n", "k"], "f32")]) as fn:
            fn.ret(relax.astype(relax.softmax(fn.params[0], axis=-1), dtype=dt))
    return m


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _row_refs(x, w, g, b):
    """float64 references of the row functions on the (rounded) inputs."""
    ms = (x * x).mean(-1, keepdims=True)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return {"softmax": _softmax(x), "rms_norm": x / np.sqrt(ms + 1e-5) * w,
            "layer_norm": (x - mu) / np.sqrt(var + 1e-5) * g + b, "sum": x.sum(-1), "max": x.max(-1),
            "mean": x.mean(-1), "sum0": x.sum(0), "max0": x.max(0), "softmax_to_f32": _softmax(x)}


def _check(got, ref, dt: str, scale: float, what: str) -> None:
    """Within 2 ulps of the result's type at ``scale`` (one rounding of an f32 value) plus f32
    summation error."""
    tol = 2 * ULP[dt] * scale + 1e-5 * scale
    err = np.abs(np.asarray(got, np.float64) - ref).max() if ref.size else 0.0
    assert err <= tol, (what, err, tol)


@pytest.fixture(scope="module", params=["f16", "bf16"])
def rows_exe(request):
    return request.param, relax_mlir.compile(_rows_module(request.param), target="vulkan")


@needs_vulkan
@pytest.mark.parametrize("n,k", ROW_SIZES, ids=[f"{n}x{k}" for n, k in ROW_SIZES])
def test_vulkan_half_rows_numerics_and_route(routes, rows_exe, n, k):
    """Each row function at (n, k) through ONE executable per dtype: numpy's values within
    2 ulps of the result's scale; one launch per call (the fallback launches each op on its
    own), a workgroup per row below 1024 rows, a thread per row from there."""
    dt, exe = rows_exe
    rng = np.random.default_rng(n * 7919 + k)
    h = DTYPES[dt]
    x, w, g, b = (rng.standard_normal(s).astype(h) for s in ((n, k), (k,), (k,), (k,)))
    x64, w64, g64, b64 = (v.astype(np.float64) for v in (x, w, g, b))
    refs = _row_refs(x64, w64, g64, b64)
    args = {"rms_norm": (x, w), "layer_norm": (x, g, b)}
    threads = row_reductions.THREADS
    for name, ref in refs.items():
        got, launched = routes.call(exe[name], *args.get(name, (x,)))
        assert got.dtype == (np.float32 if name == "softmax_to_f32" else h), (name, got.dtype)
        scale = max(1.0, float(np.abs(ref).max()))
        if name.startswith("sum"):   # f32 sums of k (or n) terms, rounded once
            scale = max(scale, float(np.abs(x64).sum(-1 if name == "sum" else 0).max()))
        _check(got, ref, "f16" if name == "softmax_to_f32" and dt == "f16" else dt, scale, name)
        rows = k if name.endswith("0") else n
        want = (rows, 1, 1) if rows < row_reductions.WORKGROUP_ROWS else (-(-rows // threads), 1, 1)
        assert [grid for _, grid in launched] == [want], (name, launched)
    y32 = rng.standard_normal((n, k)).astype(np.float32)
    got, launched = routes.call(exe["softmax_from_f32"], y32)   # an f32 row kernel, then the cast
    assert got.dtype == h and len(launched) == 2 and launched[0][1] == want
    _check(got, _softmax(y32.astype(np.float64)), dt, 1.0, "softmax_from_f32")


def _elementwise_module(dt: str) -> ir.Module:
    """An elementwise chain (add, silu, multiply, exp), a row broadcast, a 16-bit -> f32 cast and
    back, and chains fed by views at element offsets 1 (unaligned) and 8 (aligned)."""
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        xy = [("x", ["n", "k"], dt), ("y", ["n", "k"], dt)]
        with graph_function(m, "chain", xy) as fn:
            x, y = fn.params
            fn.ret(relax.exp(relax.silu(x + y) * y))
        with graph_function(m, "bias", [("x", ["n", "k"], dt), ("b", ["k"], dt)]) as fn:
            x, b = fn.params
            fn.ret(x * b + b)
        with graph_function(m, "to_f32", [("x", ["n", "k"], dt)]) as fn:
            fn.ret(relax.astype(fn.params[0], dtype="f32") * 2.0)
        with graph_function(m, "from_f32", [("x", ["n", "k"], "f32")]) as fn:
            fn.ret(relax.astype(fn.params[0], dtype=dt))
        with graph_function(m, "slices", [("x", ["n", "k"], dt), ("y1", ["n", "k - 1"], dt),
                                          ("y8", ["n", "k - 8"], dt)]) as fn:
            x, y1, y8 = fn.params
            a = relax.strided_slice(x, axes=[1], begin=[1], end=["k"])
            c = relax.strided_slice(x, axes=[1], begin=[8], end=["k"])
            fn.ret(relax.add(a, y1), relax.multiply(c, y8))
    return m


#: (n, k): sizes 1, odd (7, 33, 1001), multiples of 8, large
EW_SIZES = [(1, 1), (1, 8), (7, 33), (3, 1001), (4, 64), (9, 1024), (1024, 4096)]


@pytest.fixture(scope="module", params=["f16", "bf16"])
def ew_exes(request):
    m = _elementwise_module(request.param)
    return (request.param, relax_mlir.compile(m, target="vulkan"),
            relax_mlir.compile(_elementwise_module(request.param), target="cpu"))


def _vector_grid(elems: int, width: int) -> tuple:
    """The vector route's grid: ``elems / width`` items, WORKGROUP_SIZE per workgroup."""
    return (-(-(elems // width) // WORKGROUP_SIZE), 1, 1)


def _fallback_grid(n: int, k: int) -> tuple:
    """The parallel-loop route's grid on (n, k): a thread per element, WORKGROUP_SIZE of a row."""
    return (-(-k // WORKGROUP_SIZE), n, 1)


@needs_vulkan
@pytest.mark.parametrize("n,k", EW_SIZES, ids=[f"{n}x{k}" for n, k in EW_SIZES])
def test_vulkan_half_elementwise_numerics_and_route(routes, ew_exes, n, k):
    """Each elementwise function at (n, k) through ONE executable per dtype: the cpu target's
    bits (the same bodies, one rounding per op's 16-bit result) and numpy's values within a few
    ulps; the vector route (4 elements per thread on vulkan: a grid of N / 4 / 64) when the
    element count (or, for views, the row and the view's offset) is a multiple of 4, the
    fallback (a thread per element: ceil(k / 64) x n) otherwise."""
    dt, exe, cpu = ew_exes
    h = DTYPES[dt]
    halves = vector_elementwise.HALVES["vulkan"]
    rng = np.random.default_rng(n * 31 + k)
    x, y = (rng.standard_normal((n, k)).astype(h) for _ in range(2))
    b = rng.standard_normal(k).astype(h)
    vec = (n * k) % halves == 0
    for name, args in (("chain", (x, y)), ("bias", (x, b)), ("to_f32", (x,)),
                       ("from_f32", (x.astype(np.float32) * 1.001,))):
        got, launched = routes.call(exe[name], *args)
        np.testing.assert_array_equal(got, cpu[name](*args), err_msg=f"{name} {dt} {n}x{k}")
        assert len(launched) == 1, (name, launched)
        want = _vector_grid(n * k, halves) if vec else _fallback_grid(n, k)
        assert [grid for _, grid in launched] == [want], (name, launched, vec)
    x64, y64, b64 = x.astype(np.float64), y.astype(np.float64), b.astype(np.float64)
    s = (x64 + y64)
    ref = np.exp(s / (1 + np.exp(-s)) * y64)
    fin = np.isfinite(ref) & (np.abs(ref) < 1e4)
    rel = np.abs(exe["chain"](x, y).astype(np.float64)[fin] - ref[fin]) / np.maximum(np.abs(ref[fin]), 1.0)
    assert rel.max(initial=0.0) <= 40 * ULP[dt], rel.max()   # 4 roundings, exp's argument scaled up
    np.testing.assert_allclose(exe["bias"](x, b).astype(np.float64), x64 * b64 + b64,
                               rtol=3 * ULP[dt], atol=3 * ULP[dt])
    if k > 8:
        y1 = rng.standard_normal((n, k - 1)).astype(h)
        y8 = rng.standard_normal((n, k - 8)).astype(h)
        (z1, z8), launched = routes.call(exe["slices"], x, y1, y8)
        np.testing.assert_array_equal(z1, (x[:, 1:].astype(np.float32) + y1.astype(np.float32)).astype(h))
        np.testing.assert_array_equal(z8, (x[:, 8:].astype(np.float32) * y8.astype(np.float32)).astype(h))
        # offset 1: never the vector route; offset 8 (row stride k): when k is a multiple of 4
        aligned = k % halves == 0
        assert [grid for _, grid in launched] == [
            _fallback_grid(n, k - 1), _vector_grid(n * (k - 8), halves) if aligned else _fallback_grid(n, k - 8)]


# -- cuda: PTX and the fake driver's host path ---------------------------------------------------

def _ptx(m: ir.Module) -> dict[str, str]:
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(cuda)")
    return gpu_checks.ptx_of(m)


def _accesses(code: str) -> set[str]:
    return set(re.findall(r"(?:ld|st)\.global\.[\w.]+", code))


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_cuda_half_kernels_ptx(dt):
    """On cuda each row kernel is a launch pair (a workgroup per row with bar.sync, a thread per
    row without) of 16-bit loads and stores (ld.global.b16, widened in registers); each
    elementwise op on 16-bit data a vector kernel of 8 halves per thread (ld.global.v4.b32 /
    st.global.v4.b32: 128 bits) beside its scalar twin (ld.global.b16)."""
    rows = _ptx(_rows_module(dt))
    for fn in ("softmax", "rms_norm", "layer_norm", "sum", "max", "mean"):
        names = sorted(n for n in rows if re.match(rf"relax_{fn}_ax[ie]s1_.*{dt}_", n))
        assert len(names) == 2, (fn, sorted(rows))
        assert ["bar.sync" in rows[n] for n in names] == [True, False], names
        for n in names:
            assert {"ld.global.b16", "st.global.b16"} <= _accesses(rows[n]), (n, _accesses(rows[n]))
            assert not any(".v" in a for a in _accesses(rows[n]))
    mixed = [n for n in rows if n.startswith("fused_astype_softmax")]
    assert len(mixed) == 2 and all({"ld.global.b16", "st.global.b32"} <= _accesses(rows[n]) for n in mixed)
    ew = _ptx(_elementwise_module(dt))
    got = {re.sub(r"_kernel(_\d+)?$", "", n) + (" scalar" if re.search(r"_kernel_\d+$", n) else " vector"):
           _accesses(c) for n, c in ew.items()}
    v8, b16 = {"ld.global.v4.b32", "st.global.v4.b32"}, {"ld.global.b16", "st.global.b16"}
    cast = f"relax_astype_to_{dt}_f32_r2"
    assert got == {
        # 8 halves per thread: 128-bit loads and stores of each operand (the bias row included)
        "fused_add_silu_multiply_exp vector": v8, "fused_add_silu_multiply_exp scalar": b16,
        "fused_multiply_add vector": v8, "fused_multiply_add scalar": b16,
        # views at offsets 1 and 8: the vector kernel guarded at run time
        "fused_strided_slice_add vector": v8, "fused_strided_slice_add scalar": b16,
        "fused_strided_slice_multiply vector": v8, "fused_strided_slice_multiply scalar": b16,
        # mixed: 4 per thread, 64 bits of halves beside 128 bits of f32 (the 2.0: a scalar load)
        "fused_astype_multiply vector": {"ld.global.v4.b16", "ld.global.b32", "st.global.v4.b32"},
        "fused_astype_multiply scalar": {"ld.global.b16", "ld.global.b32", "st.global.b32"},
        f"{cast} vector": {"ld.global.v4.b32", "st.global.v2.b32"},
        f"{cast} scalar": {"ld.global.b32", "st.global.b16"}}, got
    assert not any(".extern" in c for c in ew.values())


FAKE_HALF = r'''
import ctypes, json, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
sys.path.insert(0, sys.argv[2])
import numpy as np, ml_dtypes
import relax_mlir
import test_gpu_half_kernels as t
fake = ctypes.CDLL("libcuda.so.1")
grids = (ctypes.c_long * 192).in_dll(fake, "fake_grids")
launches = lambda: ctypes.c_long.in_dll(fake, "fake_launches").value
out = {}
for dt in ("f16", "bf16"):
    h = t.DTYPES[dt]
    rows = relax_mlir.compile(t._rows_module(dt), target="cuda")
    ew = relax_mlir.compile(t._elementwise_module(dt), target="cuda")
    for n, k in ((7, 33), (2000, 64), (4, 64)):
        x = np.ones((n, k), h)
        for name, exe, args in (("rms_norm", rows, (x, np.ones(k, h))), ("softmax", rows, (x,)),
                                ("chain", ew, (x, x))):
            before = launches()
            y = exe[name](*args)
            got = [list(grids[3 * i:3 * i + 3]) for i in range(before, min(launches(), 64))]
            out[f"{dt} {name} {n}x{k}"] = [list(y.shape), str(y.dtype), got]
print("FAKE-RUN " + json.dumps(out))
'''


def test_cuda_half_kernels_fake_driver_host_path(tmp_path):
    """The fake driver runs the host path (16-bit buffers in and out, launch grids): the row
    kernels' one launch per call, a workgroup per row below 1024 rows (7 rows: grid 7) and a
    thread per row above (2000 rows: 16 blocks of 128); the elementwise chain's vector kernel
    of 8 halves per thread when the element count allows it (4 x 64: 256 / 8 / 64 -> 1 block),
    the scalar kernel otherwise (7 x 33: a thread per element, rows on grid y)."""
    import test_cuda
    got = test_cuda.run_fake(tmp_path, FAKE_HALF, os.path.dirname(os.path.abspath(__file__)))
    for dt in ("f16", "bf16"):
        for name in ("rms_norm", "softmax"):
            assert got[f"{dt} {name} 7x33"] == [[7, 33], str(np.dtype(DTYPES[dt])), [[7, 1, 1]]]
            assert got[f"{dt} {name} 2000x64"][2] == [[-(-2000 // row_reductions.THREADS), 1, 1]]
        assert got[f"{dt} chain 4x64"][2] == [[1, 1, 1]]
        assert got[f"{dt} chain 7x33"][2] == [[-(-33 // WORKGROUP_SIZE), 7, 1]]
        assert got[f"{dt} chain 2000x64"][2] == [[-(-2000 * 64 // 8 // WORKGROUP_SIZE), 1, 1]]


# -- a bf16 tiny Llama ---------------------------------------------------------------------------

def without_half_rules(mp: pytest.MonkeyPatch) -> None:
    """The rules as before 16-bit data: 16-bit row kernels and elementwise ops on the fallback
    (and no compile cache, whose key does not see the patch)."""
    mp.setenv("RELAX_MLIR_CACHE_DIR", "off")
    mp.setattr(row_reductions, "HALF", ())
    mp.setattr(vector_elementwise, "HALVES", {"cuda": 0, "vulkan": 0})


@needs_vulkan
def test_vulkan_bf16_tiny_llama_rows_and_tokens(routes):
    """The torch importer's bf16 tiny Llama on vulkan: its norms and softmaxes on the rows rule
    (one launch each instead of one per op: fewer launches per call than the fallback; 139
    against 186 when written), logits within two bf16 ulps of the largest of the fallback's
    and of the cpu target's, whose greedy token it gives at every position (sequence lengths
    1, 7, 33: one executable each)."""
    torch = pytest.importorskip("torch")
    from relax_mlir.frontend.torch import compile as torch_compile
    from test_vulkan_bf16 import _bf16_llama
    model = _bf16_llama()
    example, dyn = (torch.randint(0, 128, (1, 8)),), {"input_ids": {1: torch.export.Dim("s", max=64)}}
    vk = torch_compile(model, example, dynamic_shapes=dyn, target="vulkan")
    cpu = torch_compile(model, example, dynamic_shapes=dyn, target="cpu")
    with pytest.MonkeyPatch.context() as mp:
        without_half_rules(mp)
        old = torch_compile(model, example, dynamic_shapes=dyn, target="vulkan")
    for s in (1, 7, 33):
        ids = torch.randint(0, 128, (1, s), generator=torch.Generator().manual_seed(s + 1))
        (g, new_launches), c = routes.call(vk, ids), cpu(ids)
        o, old_launches = routes.call(old, ids)
        assert g.dtype == torch.bfloat16 and g.shape == (1, s, 128)
        assert len(new_launches) < len(old_launches), (len(new_launches), len(old_launches))
        g, c, o = g.float().numpy(), c.float().numpy(), o.float().numpy()
        np.testing.assert_array_equal(g.argmax(-1), c.argmax(-1))
        assert np.abs(g - c).max() <= 2 * ULP["bf16"] * np.abs(c).max(), np.abs(g - c).max()
        assert np.abs(g - o).max() <= 2 * ULP["bf16"] * np.abs(o).max(), np.abs(g - o).max()
