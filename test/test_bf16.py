"""bf16 tensors end to end: numpy interop through ``ml_dtypes.bfloat16``, constants, the cpu
and vulkan targets' kernels (each op computed in f32 and rounded once to bf16; vulkan stores
bf16 as 16-bit integers: test_vulkan_bf16.py), astype rounding, the PyTorch importer on a
``.to(torch.bfloat16)`` module, the cuda target's PTX.

The references compute in f32 (f64 where noted) from the same bf16 inputs and round the
result to bf16 once, as the kernels do; a compiled result may differ from that by one bf16
ulp where the f32 value lies within f32 rounding noise of a bf16 midpoint (different exp
polynomials, summation orders), which is what the tolerance allows.
"""

from __future__ import annotations

import math
import os
import re
import sys

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.dialects import relax  # noqa: E402
from relax_mlir.frontend.builder import graph_function  # noqa: E402

BF16 = ml_dtypes.bfloat16
#: one bf16 ulp is at most this fraction of the value (8 significant bits)
ULP = 2.0 ** -7
#: (rows, columns) of the row-wise cases: 1, odd, large
ROWS = ((1, 1), (7, 33), (300, 1000))


def bf(a) -> np.ndarray:
    """``a`` rounded to bf16 (ml_dtypes rounds to nearest even)."""
    return np.asarray(a, np.float32).astype(BF16)


def close(got: np.ndarray, ref: np.ndarray, scale=None, ulps: float = 1.0) -> None:
    """``got`` (bf16) is within ``ulps`` bf16 ulps of ``ref`` (bf16 or f32), relative to
    ``scale`` (default |ref|: a sum of products passes the magnitude of its terms)."""
    assert got.dtype == BF16, got.dtype
    assert got.shape == ref.shape, (got.shape, ref.shape)
    g, r = got.astype(np.float32), np.asarray(ref).astype(np.float32)
    s = np.abs(r) if scale is None else scale
    bad = np.abs(g - r) > ulps * ULP * s + 1e-30
    assert not bad.any(), f"{bad.sum()} of {bad.size} differ, e.g. got {g[bad][:4]} want {r[bad][:4]}"


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x.astype(np.float64) / math.sqrt(2.0)))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def _vulkan_device():
    from relax_mlir.runtime import vulkan
    return vulkan.available()


@pytest.fixture(scope="module", params=["cpu", "vulkan"])
def exe(request):
    """ONE executable per target holding every graph function of the numerics tests."""
    if request.param == "vulkan" and not _vulkan_device()[0]:
        pytest.skip(f"no Vulkan device: {_vulkan_device()[1]}")
    return relax_mlir.compile(_numerics_module(), target=request.param)


def _numerics_module():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        x2 = [("x", ["n", "m"], "bf16"), ("y", ["n", "m"], "bf16")]
        with graph_function(m, "add", x2) as fn:
            fn.ret(relax.add(*fn.params))
        with graph_function(m, "mul_div", x2) as fn:
            x, y = fn.params
            fn.ret(relax.divide(relax.multiply(x, y), relax.add(relax.abs(y), relax.const(1.0, "bf16"))))
        with graph_function(m, "scaled", x2[:1]) as fn:   # Python scalars become bf16 constants
            fn.ret(fn.params[0] * 0.5 + 3.0)
        with graph_function(m, "f_exp", x2[:1]) as fn:
            fn.ret(relax.exp(fn.params[0]))
        with graph_function(m, "gelu", x2[:1]) as fn:
            fn.ret(relax.gelu(fn.params[0]))
        with graph_function(m, "softmax", x2[:1]) as fn:
            fn.ret(relax.softmax(fn.params[0], axis=-1))
        with graph_function(m, "sum", x2[:1]) as fn:
            fn.ret(relax.sum(fn.params[0], axes=[-1]))
        with graph_function(m, "layer_norm", [("x", ["n", "m"], "bf16"), ("g", ["m"], "bf16"),
                                              ("b", ["m"], "bf16")]) as fn:
            fn.ret(relax.layer_norm(*fn.params, axes=[-1], epsilon=1e-5))
        with graph_function(m, "matmul", [("a", ["n", "k"], "bf16"), ("w", ["k", "h"], "bf16")]) as fn:
            fn.ret(relax.matmul(*fn.params))
        with graph_function(m, "const_matmul", [("a", ["n", 3], "bf16")]) as fn:
            w = relax.const(bf(np.arange(6).reshape(3, 2) - 2.5))
            fn.ret(relax.matmul(fn.params[0], w))
        for frm, to in (("f32", "bf16"), ("bf16", "f32"), ("f16", "bf16"), ("bf16", "f16"), ("f64", "bf16"),
                        ("bf16", "i32"), ("i32", "bf16")):
            with graph_function(m, f"astype_{frm}_{to}", [("x", ["n"], frm)]) as fn:
                fn.ret(relax.astype(fn.params[0], dtype=to))
    return m


def test_cpu_code_has_no_bf16_arithmetic(tmp_path):
    """After the cpu pipeline every bf16 op is f32 arithmetic between extensions and integer
    roundings (arith-emulate-unsupported-floats, relax-bf16-casts): no ``fptrunc`` from f32
    to bf16 (a call per element, or a subnormal-flushing instruction, depending on the CPU)
    and no bf16 arithmetic left for LLVM to promote the same way."""
    relax_mlir.compile(_numerics_module(), options=relax_mlir.CompileOptions(dump_ir=str(tmp_path)))
    text = (tmp_path / "03-codegen.mlir").read_text()
    bf16 = r"(?:vector<\d+xbf16>|bf16)"
    assert re.findall(rf"llvm\.(?:fadd|fsub|fmul|fdiv|frem|fneg|fcmp|intr\.\w+)\b[^\n]*: {bf16}\b", text) == []
    assert re.findall(rf"llvm\.fptrunc [^\n]*: (?:vector<\d+xf32>|f32) to {bf16}", text) == []
    # what stays: f32 -> f16 (bf16 -> f16 goes through f32) and f64 -> bf16, one conversion
    # (not two roundings through f32)
    assert re.findall(r"llvm\.fptrunc [^\n]*: (\w+) to (\w+)", text) == [("f32", "f16"), ("f64", "bf16")]


def _inputs(rng, n, m, k=1):
    return [bf(rng.standard_normal((n, m)) * 2) for _ in range(k)]


@pytest.mark.parametrize("n,m", ROWS)
def test_elementwise(exe, n, m):
    rng = np.random.default_rng(n)
    x, y = _inputs(rng, n, m, 2)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    close(exe["add"](x, y), bf(xf + yf))
    # fused into one kernel, each op still rounds its result to bf16 (as PyTorch's bf16 ops do)
    r = lambda v: bf(v).astype(np.float32)  # noqa: E731
    close(exe["mul_div"](x, y), bf(r(xf * yf) / r(np.abs(yf) + 1)))
    close(exe["scaled"](x), bf(r(xf * 0.5) + 3.0))
    close(exe["f_exp"](x), bf(np.exp(xf)))
    close(exe["gelu"](x), bf(_gelu(xf)), scale=np.maximum(np.abs(xf), 1e-3))


def test_subnormal_results_are_kept(exe):
    """bf16 arithmetic rounds like ml_dtypes in vector and scalar code: a subnormal sum stays
    subnormal (vcvtneps2bf16 would flush it to zero)."""
    x, y = bf(np.full((3, 4099), 1.5e-38)), bf(np.full((3, 4099), -1.4e-38))
    want = bf(x.astype(np.float32) + y.astype(np.float32))
    assert 0 < float(want[0, 0]) < 1.18e-38
    _same(exe["add"](x, y), want)


@pytest.mark.parametrize("n,m", ROWS)
def test_softmax_sum_layer_norm(exe, n, m):
    rng = np.random.default_rng(100 + n)
    x, = _inputs(rng, n, m)
    g, b = bf(rng.standard_normal(m)), bf(rng.standard_normal(m))
    xf = x.astype(np.float64)
    close(exe["softmax"](x), bf(_softmax(xf)))
    close(exe["sum"](x), bf(xf.sum(-1)), scale=np.abs(xf).sum(-1))
    ln = _layer_norm(xf, g.astype(np.float64), b.astype(np.float64))
    close(exe["layer_norm"](x, g, b), bf(ln), scale=np.abs(ln) + np.abs(g.astype(np.float32)) * ULP)


@pytest.mark.parametrize("n,k,h", [(1, 1, 1), (7, 33, 5), (257, 300, 130), (700, 96, 40)])
def test_matmul_accumulates_in_f32(exe, n, k, h):
    rng = np.random.default_rng(200 + n)
    a, w = bf(rng.standard_normal((n, k))), bf(rng.standard_normal((k, h)))
    af, wf = a.astype(np.float64), w.astype(np.float64)
    # a bf16 accumulator would be off by far more than one ulp of the terms' magnitude at k = 300;
    # the product is an f32 matmul between casts (relax-widen-bf16-matmul): generated code, or
    # BLAS where relax-dispatch-library sends the f32 product (700 rows on this project's machine)
    close(exe["matmul"](a, w), bf(af @ wf), scale=np.abs(af) @ np.abs(wf))
    a3 = a[:, :3] if k >= 3 else bf(np.ones((n, 3)))
    c = (np.arange(6).reshape(3, 2) - 2.5).astype(np.float64)   # the bf16 constant (exact)
    close(exe["const_matmul"](a3), bf(a3.astype(np.float64) @ c), scale=np.abs(a3.astype(np.float64)) @ np.abs(c))


def _ties_and_specials():
    """f32 values at and next to bf16 rounding midpoints (round to nearest EVEN), specials."""
    base = np.array([1.0, 1.0078125, -3.0, 65504.0, 1e-3, 3.0e38], np.float32).view(np.uint32)
    bits = np.concatenate([base + 0x8000, base + 0x7FFF, base + 0x8001, base + 0x18000, base])
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4e38, 1e-40], np.float32)
    return np.concatenate([bits.astype(np.uint32).view(np.float32), specials])


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    ok = ~np.isnan(w)
    assert np.array_equal(g[ok], w[ok]), (g[ok][g[ok] != w[ok]], w[ok][g[ok] != w[ok]])
    assert np.array_equal(np.signbit(g[ok]), np.signbit(w[ok]))


@pytest.mark.parametrize("size", [1, 9, 4099])
def test_astype_round_to_nearest_even(exe, size):
    rng = np.random.default_rng(size)
    x32 = np.resize(np.concatenate([_ties_and_specials(), rng.standard_normal(size).astype(np.float32)]), size)
    _same(exe["astype_f32_bf16"](x32), x32.astype(BF16))
    xb = x32.astype(BF16)
    _same(exe["astype_bf16_f32"](xb), xb.astype(np.float32))
    # f16 <-> bf16 goes through f32 (exact), so one rounding
    x16 = np.resize(np.concatenate([np.array([65504, 6e-8, -2049, 1.00390625], np.float16),
                                    rng.standard_normal(size).astype(np.float16)]), size)
    _same(exe["astype_f16_bf16"](x16), x16.astype(np.float32).astype(BF16))
    xb = np.resize(np.concatenate([bf([1e5, -7e4, 1e-9, 1.0078125]), bf(rng.standard_normal(size))]), size)
    with np.errstate(over="ignore"):
        _same(exe["astype_bf16_f16"](xb), xb.astype(np.float32).astype(np.float16))
    x64 = np.resize(np.concatenate([np.array([1.0 + 2.0 ** -8 + 2.0 ** -40, 1.0 + 2.0 ** -8], np.float64),
                                    rng.standard_normal(size)]), size)
    # through f32, as ml_dtypes and PyTorch round (1 + 2^-8 + 2^-40 -> 1.0)
    _same(exe["astype_f64_bf16"](x64), x64.astype(BF16))
    xi = bf(np.resize(np.array([2.7, -2.7, 300.5, -1e10, 1e10, np.nan], np.float32), size))
    want = np.clip(np.nan_to_num(xi.astype(np.float64), nan=0.0), -2.0 ** 31, 2.0 ** 31 - 1).astype(np.int32)
    assert np.array_equal(exe["astype_bf16_i32"](xi), want)
    ii = np.resize(np.array([0, 1, -257, 65535, 2 ** 31 - 1], np.int32), size)
    _same(exe["astype_i32_bf16"](ii), ii.astype(np.float32).astype(BF16))


def test_const_and_dtype_names():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n"], BF16)]) as fn:
            c = relax.const(np.array([1.5, -2.25, 3.0e38, 1.0e-3], np.float32), "bfloat16")
            assert str(c.type) == "tensor<4xbf16>"
            fn.ret(relax.add(fn.params[0], c))
        assert "tensor<?xbf16" in str(m)
    exe = relax_mlir.compile(m)
    got = exe(bf([1.0, 1.0, 0.0, 0.0]))
    _same(got, bf([2.5, -1.25, 3.0e38, 1.0e-3]))


def test_wrong_dtype_names_the_argument(exe):
    with pytest.raises(TypeError, match=r"@add: argument #0 has dtype float32, expected bfloat16 \(bf16\)"):
        exe["add"](np.ones((2, 2), np.float32), bf(np.ones((2, 2))))


def test_export_round_trip(tmp_path):
    """An exported library keeps bf16 arguments and results, and the same bits (its
    conversions are integer code: nothing to link from a compiler runtime)."""
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n", "m"], "bf16")]) as fn:
            fn.ret(relax.softmax(fn.params[0] * 2.0, axis=-1))
    exe = relax_mlir.compile(m)
    path = tmp_path / "bf16.so"
    exe.export(str(path))
    loaded = relax_mlir.load(str(path))
    x = bf(np.random.default_rng(3).standard_normal((5, 17)))
    got = loaded(x)
    _same(got, exe(x))
    close(got, bf(_softmax(x.astype(np.float64) * 2.0)))


# -- cuda: PTX (everywhere) and the host path with the fake driver -----------------------------

def _cuda_graph(ctx):
    """gelu(x @ w + b) in bf16: the matmul rule's routes with the bias and gelu folded in."""
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n", 64], "bf16"), ("w", [64, 96], "bf16"),
                                        ("b", [96], "bf16")]) as fn:
            x, w, b = fn.params
            fn.ret(relax.gelu(relax.matmul(x, w) + b))
    return m


def test_cuda_bf16_matmul_ptx():
    from mlir.dialects import gpu
    ctx = relax_mlir.make_context()
    m = _cuda_graph(ctx)
    with ctx:
        relax_mlir.run_pipeline(m, "builtin.module(cuda)")
        ptx = {ir.StringAttr(op.attributes["sym_name"]).value:
               gpu.ObjectAttr(ir.ArrayAttr(op.attributes["objects"])[0]).object.decode()
               for op in (o.operation for o in m.body.operations) if op.name == "gpu.binary"}
    # one fused kernel, three routes of the Matmul rule (bf16 is in its dtypes on cuda): GEMM
    # tiles (workgroup memory, barriers), the GEMV (shuffles, 128-bit loads of B: 8 bf16), a
    # thread per element
    assert sorted(ptx) == ["fused_matmul_add_gelu_kernel", "fused_matmul_add_gelu_kernel_0",
                           "fused_matmul_add_gelu_kernel_1"]
    tiles, gemv, small = (ptx[k] for k in sorted(ptx))
    assert "bar.sync" in tiles and "ld.shared" in tiles
    assert "shfl.sync.bfly" in gemv and "ld.global.v4.b32" in gemv
    for code in ptx.values():
        assert ".target sm_80" in code and ".extern" not in code
        # products summed in f32 registers, rounded to bf16 once (before the bias add)
        assert "add.rn.f32" in code or "fma.rn.f32" in code
        assert "cvt.rn.bf16.f32" in code
        assert "add.rn.bf16" not in code and "mul.rn.bf16" not in code   # no bf16 accumulation


def test_cuda_bf16_rows_and_elementwise_ptx():
    """bf16 layer_norm, sum, softmax (fused with exp and a scale) and astype to f16 on cuda:
    the generic launches (the row and elementwise rules are f32 / 32-bit), f32 arithmetic,
    results rounded with cvt.rn.bf16.f32; every kernel self-contained PTX."""
    from mlir.dialects import gpu
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n", 64], "bf16"), ("g", [64], "bf16"), ("b", [64], "bf16")]) as fn:
            x, g, b = fn.params
            y = relax.layer_norm(x, g, b, axes=[-1])
            fn.ret(relax.softmax(relax.exp(y) * 2.0, axis=-1), relax.sum(y, axes=[-1]), relax.astype(y, dtype="f16"))
        relax_mlir.run_pipeline(m, "builtin.module(cuda)")
        ptx = {ir.StringAttr(op.attributes["sym_name"]).value:
               gpu.ObjectAttr(ir.ArrayAttr(op.attributes["objects"])[0]).object.decode()
               for op in (o.operation for o in m.body.operations) if op.name == "gpu.binary"}
    assert {k.split("_bf16")[0].split("_kernel")[0] for k in ptx} == {
        "relax_layer_norm_axes1_eps1em05", "relax_sum_axes1_keep0", "relax_astype_to_f16", "fused_exp_multiply_softmax"}
    assert all(".target sm_80" in c and ".extern" not in c for c in ptx.values())
    for op in ("layer_norm", "sum", "softmax"):   # each bf16 result rounded once from f32
        assert any("cvt.rn.bf16.f32" in c for k, c in ptx.items() if op in k), op
    assert any("cvt.rn.f16.f32" in c for k, c in ptx.items() if "astype" in k)   # bf16 -> f32 -> f16


FAKE_BF16 = r'''
import ctypes, json, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
import ml_dtypes
import numpy as np
import relax_mlir
sys.path.insert(0, sys.argv[2])
import test_bf16

fake = ctypes.CDLL("libcuda.so.1")
launches = lambda: ctypes.c_long.in_dll(fake, "fake_launches").value   # noqa: E731
exe = relax_mlir.compile(test_bf16._cuda_graph(relax_mlir.make_context()), target="cuda")
rng = np.random.default_rng(0)
w = rng.standard_normal((64, 96)).astype(ml_dtypes.bfloat16)
b = rng.standard_normal(96).astype(ml_dtypes.bfloat16)
out = {"calls": []}
for n in (1, 7, 130):
    before = launches()
    y = exe(rng.standard_normal((n, 64)).astype(ml_dtypes.bfloat16), w, b)
    out["calls"].append([list(y.shape), str(y.dtype), launches() - before])
dw = exe.upload(w)
out["upload"] = [str(dw.dtype), bool(np.array_equal(dw.numpy().view(np.uint16), w.view(np.uint16)))]
try:
    exe(np.ones((2, 64), np.float32), w, b)
except TypeError as e:
    out["wrong_dtype"] = str(e)
print("FAKE-RUN " + json.dumps(out))
'''


def test_cuda_bf16_host_path_with_the_fake_driver(tmp_path):
    """bf16 arrays through the cuda runtime (the fake driver runs no kernel: shapes, dtypes,
    launches, uploads and the argument checks of the host path)."""
    import test_cuda
    out = test_cuda.run_fake(tmp_path, FAKE_BF16, os.path.dirname(os.path.abspath(__file__)))
    assert out["calls"] == [[[n, 96], "bfloat16", 1] for n in (1, 7, 130)]
    assert out["upload"] == ["bfloat16", True]
    assert out["wrong_dtype"] == "@main: argument #0 has dtype float32, expected bfloat16 (bf16)"


# -- PyTorch: a model.to(torch.bfloat16) ---------------------------------------------------------

def test_torch_bf16_mlp_matches_pytorch():
    """Linear + GELU + LayerNorm + Linear in bf16 (weights and activations), dynamic batch:
    the same bf16 outputs as PyTorch's eager bf16 up to a few bf16 ulps (PyTorch's CPU
    linear may round its f32 accumulator differently; the kernels here accumulate in f32 too)."""
    torch = pytest.importorskip("torch")
    from relax_mlir.frontend.torch import compile as torch_compile

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(48, 96), torch.nn.GELU(), torch.nn.LayerNorm(96),
                                torch.nn.Linear(96, 40)).to(torch.bfloat16).eval()
    b = torch.export.Dim("b", max=512)
    fn = torch_compile(model, (torch.randn(4, 48, dtype=torch.bfloat16),), dynamic_shapes=({0: b},))
    assert all(p.dtype == BF16 for p in fn.params)
    for n in (1, 7, 300):
        x = torch.randn(n, 48, dtype=torch.bfloat16)
        with torch.no_grad():
            want = model(x)
        got = fn(x)
        assert got.dtype == torch.bfloat16 and got.shape == (n, 40)
        g, w = got.float().numpy(), want.float().numpy()
        # measured: at most one ulp of the largest output (0.008 and 0.016 at |y| <= 2.6)
        assert np.abs(g - w).max() <= 2 * ULP * np.abs(w).max(), np.abs(g - w).max()
        # numpy in, numpy out: the same executable
        assert np.array_equal(fn(x.view(torch.int16).numpy().view(BF16)).view(np.uint16),
                              got.view(torch.int16).numpy().view(np.uint16))


def test_torch_bf16_tiny_llama_logits():
    """A random tiny Hugging Face Llama (GQA, tied embeddings, RoPE, RMSNorm, SiLU MLP) in
    bf16, one executable for every sequence length: PyTorch's bf16 logits up to bf16 rounding
    (measured: at most one ulp of the largest logit)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from relax_mlir.frontend.torch import compile as torch_compile

    torch.manual_seed(1)
    cfg = transformers.LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128,
                                   tie_word_embeddings=True, use_cache=False)
    lm = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids):
            return self.lm(input_ids=input_ids).logits

    model = Logits()
    fn = torch_compile(model, (torch.randint(0, 100, (1, 8)),),
                       dynamic_shapes={"input_ids": {1: torch.export.Dim("s", max=64)}})
    for s in (1, 7, 33):
        ids = torch.randint(0, 100, (1, s), generator=torch.Generator().manual_seed(s))
        with torch.no_grad():
            want = model(ids).float().numpy()
        got = fn(ids)
        assert got.dtype == torch.bfloat16 and got.shape == (1, s, 100)
        assert np.abs(got.float().numpy() - want).max() <= 2 * ULP * np.abs(want).max()


def test_torch_bf16_tensor_through_dlpack(exe):
    """A torch.bfloat16 tensor passed to an Executable as is (numpy's DLPack has no bfloat16:
    read through its int16 view, no copy)."""
    torch = pytest.importorskip("torch")
    x = torch.randn(3, 5, dtype=torch.bfloat16)
    y = torch.randn(3, 5, dtype=torch.bfloat16)
    got = exe["add"](x, y)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.astype(np.float32), (x + y).float().numpy())


def _cuda_device() -> tuple[bool, str]:
    from relax_mlir.runtime import cuda as curt
    return curt.available()


@pytest.mark.skipif(not _cuda_device()[0], reason=f"no CUDA device: {_cuda_device()[1]}")
def test_cuda_bf16_numerics():
    """On a device: the three matmul routes (GEMV at 1 row, a thread per element at 7, the
    GEMM tiles at 130) against numpy, each op rounded to bf16 once."""
    exe = relax_mlir.compile(_cuda_graph(relax_mlir.make_context()), target="cuda")
    rng = np.random.default_rng(5)
    w, b = bf(rng.standard_normal((64, 96)) / 8), bf(rng.standard_normal(96))
    r = lambda v: bf(v).astype(np.float64)  # noqa: E731
    for n in (1, 7, 130):
        x = bf(rng.standard_normal((n, 64)))
        h = r(r(x.astype(np.float64) @ w.astype(np.float64)) + b.astype(np.float64))
        close(exe(x, w, b), bf(_gelu(h)), scale=np.maximum(np.abs(h), 1.0), ulps=2)


# -- every float op of the numerics suite, in bf16 -------------------------------------------------

def _bf16_cases():
    import test_ops_numerics as numerics
    out, seen = [], set()
    for case in numerics.CASES:
        if not any(d in ("f32", "f16") for d in case.dtypes) or any(t in case.attrs for t in ("f32", "f16")):
            continue
        if case.op == "quantized_matmul":   # its raw i8 rows: test_quantized_matmul_half_x_* below
            continue
        dts = ["bf16" if d in ("f32", "f16") else d for d in case.dtypes]
        if (case.op, tuple(dts), case.attrs) not in seen:
            seen.add((case.op, tuple(dts), case.attrs))
            out.append(pytest.param(case, dts, id=f"{case.op}-{'-'.join(dts)}-{case.id.split('-', 1)[-1][:30]}"))
    return out


#: the targets computing bf16: cpu, and vulkan where the machine has a Vulkan device (bf16 stored
#: as 16 bits, computed in f32: docs/gpu.md)
TARGETS = ["cpu", pytest.param("vulkan", marks=pytest.mark.skipif(not _vulkan_device()[0],
                                                                  reason=f"no Vulkan device: {_vulkan_device()[1]}"))]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case,dts", _bf16_cases())
def test_numerics_suite_in_bf16(case, dts, target):
    """test_ops_numerics' float cases with every float operand bf16: inputs drawn as there and
    rounded to bf16, the f64 reference on them; each result within one bf16 ulp (measured:
    half an ulp at most, for every op), every size through one executable."""
    import test_ops_numerics as numerics
    from kernel_harness import graph_module
    from relax_mlir.shapes import Shape

    exe = relax_mlir.compile(graph_module(case.op, case.shapes, dts, case.attrs, name="main"), target=target)
    syms = sorted(set().union(*(Shape.of(s).symbols for s in case.shapes)))
    rng = np.random.default_rng(0)
    for v in case.sizes:
        env = {**{s: v for s in syms}, **case.extra}
        ins = [(case.gen or numerics._gen)(rng, numerics._dims(s, env), "f32" if d == "bf16" else d, i)
               for i, (s, d) in enumerate(zip(case.shapes, dts))]
        ins = [x.astype(BF16) if d == "bf16" else x for x, d in zip(ins, dts)]
        ref = case.ref(*[x.astype(np.float64) if x.dtype == BF16 else x for x in ins])
        got = exe(*ins)
        for g, r in zip(got if isinstance(got, (tuple, list)) else [got], ref if isinstance(ref, tuple) else [ref]):
            r = np.asarray(r)
            assert g.shape == r.shape, (env, g.shape, r.shape)
            if g.dtype != BF16:   # indices (argmax, argsort, topk's second result)
                np.testing.assert_array_equal(g, r.astype(g.dtype), err_msg=str(env))
                continue
            g, r = g.astype(np.float64), r.astype(np.float64)
            assert np.array_equal(np.isnan(g), np.isnan(r)), env
            ok = ~np.isnan(r)
            assert np.all(np.abs(g[ok] - r[ok]) <= ULP * (np.abs(r[ok]) + 1e-2)), (env, np.abs(g[ok] - r[ok]).max())


def test_cpu_schedules_take_bf16_kernels():
    """The cpu schedules take bf16 elementwise and rows kernels (computed in f32, stored in 16
    bits) and a bf16 matmul (an f32 product whose epilogue casts to bf16, adds the bias and
    applies gelu in bf16)."""
    from relax_mlir.pipelines.cpu import graph_stage
    from relax_mlir.transforms.pipeline import run_pipeline

    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "mlp", [("x", ["n", 64], "bf16"), ("w", [64, 96], "bf16"),
                                       ("b", [96], "bf16")]) as fn:
            x, w, b = fn.params
            fn.ret(relax.gelu(relax.matmul(x, w) + b))
        with graph_function(m, "ew", [("x", ["n", 64], "bf16"), ("y", ["n", 64], "bf16")]) as fn:
            fn.ret(relax.sigmoid(fn.params[0] * fn.params[1]))
        with graph_function(m, "sm", [("x", ["n", 64], "bf16")]) as fn:
            fn.ret(relax.softmax(fn.params[0]))
        run_pipeline(m, "builtin.module(" + ", ".join(graph_stage(dispatch=False)) + ", relax-apply-schedules)")
        got = {ir.StringAttr(f.attributes["sym_name"]).value:
               ir.StringAttr(f.attributes["relax.schedule"]).value if "relax.schedule" in f.attributes else ""
               for f in (o.operation for o in m.body.operations) if "relax.kernel" in f.attributes}
    assert got == {"relax_astype_to_f32_bf16_Dx64": "elementwise", "relax_astype_to_f32_bf16_64x96": "elementwise",
                   "fused_matmul_astype_add_gelu": "matmul+elementwise", "fused_multiply_sigmoid": "elementwise",
                   "relax_softmax_axis1_bf16_Dx64": "rows"}


# -- relax.quantized_matmul with an f16 / bf16 x ---------------------------------------------------

#: (M values through one executable, K, N) of the half-x quantized matmul cases
QMM_ROWS, QMM_K, QMM_N = (1, 3, 17), 96, 33
HALF = {"f16": np.float16, "bf16": BF16}


def _qmm_program(cases) -> str:
    """One function ``<fmt>_<xdt>`` per (weight format, x dtype): y = x @ dequantize(w)^T, y in
    x's dtype."""
    from relax_mlir.ops.quant import row_bytes
    fns = []
    for fmt, xdt in cases:
        X = f'tensor<?x{QMM_K}x{xdt}, #relax.shape<["m", {QMM_K}]>>'
        W, Y = f"tensor<{QMM_N}x{row_bytes(fmt, QMM_K)}xi8>", f'tensor<?x{QMM_N}x{xdt}, #relax.shape<["m", {QMM_N}]>>'
        fns.append(f'''
func.func @{fmt}_{xdt}(%x: {X}, %w: {W}) -> {Y} attributes {{relax.function}} {{
  %y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}"}} : ({X}, {W}) -> {Y}
  return %y : {Y}
}}''')
    return "\n".join(fns)


def _qmm_weights(fmt: str, rng):
    """(raw GGUF rows as int8, their values as f64): Q8_0 by gguf's quantizer, f16 as numpy's."""
    w = rng.standard_normal((QMM_N, QMM_K)).astype(np.float32)
    if fmt == "f16":
        h = w.astype(np.float16)
        return h.view(np.int8).reshape(QMM_N, -1), h.astype(np.float64)
    gguf = pytest.importorskip("gguf")
    raw = np.ascontiguousarray(gguf.quants.quantize(w, gguf.GGMLQuantizationType.Q8_0)).view(np.uint8)
    deq = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q8_0).reshape(QMM_N, QMM_K)
    return raw.view(np.int8).reshape(QMM_N, -1), deq.astype(np.float64)


def _check_qmm(exe, cases, seed: int) -> None:
    """Every case at M = 1, 3, 17: the exact product of the half x and the dequantized weight
    (f64), rounded once to x's dtype; the result within one ulp of x's dtype of it, relative to
    |x| @ |W|^T (the kernels sum in f32, in their own order)."""
    rng = np.random.default_rng(seed)
    for fmt, xdt in cases:
        raw, deq = _qmm_weights(fmt, rng)
        ulp = 2.0 ** -10 if xdt == "f16" else ULP
        for m in QMM_ROWS:
            x = rng.standard_normal((m, QMM_K)).astype(HALF[xdt])
            y = exe[f"{fmt}_{xdt}"](x, raw)
            assert y.dtype == HALF[xdt] and y.shape == (m, QMM_N), (fmt, xdt, m, y.dtype, y.shape)
            xf = x.astype(np.float64)
            ref = (xf @ deq.T).astype(HALF[xdt]).astype(np.float64)
            scale = np.abs(xf) @ np.abs(deq).T
            err = np.abs(y.astype(np.float64) - ref)
            assert np.all(err <= ulp * scale), (fmt, xdt, m, (err / scale).max())


from test_gpu_rules import routes  # noqa: E402,F401  (the fixture: each launch's route on vulkan)

QMM_CASES = [(fmt, xdt) for fmt in ("q8_0", "f16") for xdt in ("f16", "bf16")]


@pytest.mark.parametrize("dispatch", [True, False], ids=["library", "generic"])
def test_quantized_matmul_half_x_cpu(dispatch):
    """cpu: with dispatch the library kernels behind casts (relax-widen-bf16-matmul), without
    it the generic kernel (x widened in its body, an f32 sum rounded once)."""
    exe = relax_mlir.compile(_qmm_program(QMM_CASES), options={"dispatch": dispatch})
    _check_qmm(exe, QMM_CASES, 11)


def test_quantized_matmul_half_x_vulkan(routes):
    """vulkan (lavapipe): f16 and bf16 x through the quantized launches, one per call (x loaded
    as stored, widened where read: bf16 by a shift into an f32's high half; the rounding to x's
    dtype their epilogue): the GEMV (shuffles, grid (ceil(N / subgroups per workgroup), M)) at 1
    and 3 rows, the GEMM tiles (no shuffles) at 17."""
    from relax_mlir.runtime import vulkan
    from relax_mlir.target import Target
    from test_gpu_quant import _subgroups
    ok, why = vulkan.available()
    if not ok:
        pytest.skip(f"no Vulkan device: {why}")
    cases = QMM_CASES
    exe = relax_mlir.compile(_qmm_program(cases), target="vulkan")
    launched = []
    calls = {name: exe[name] for name in (f"{f}_{x}" for f, x in cases)}

    class Recording:   # exe[name] through the routes fixture, each call's launches kept
        def __getitem__(self, name):
            def call(*args):
                y, got = routes.call(calls[name], *args)
                launched.append((args[0].shape[0], got))
                return y
            return call

    _check_qmm(Recording(), cases, 12)
    per = _subgroups(Target.detect("vulkan"))
    gemv = [(True, (-(-QMM_N // per), m, 1)) for m in (1, 3)]
    for i in range(len(cases)):
        got = launched[3 * i: 3 * i + 3]
        assert [g for _, g in got[:2]] == [[r] for r in gemv], got
        assert len(got[2][1]) == 1 and got[2][1][0][0] is False, got


def _qmm_cuda_ptx(cases) -> dict:
    import test_gpu_quant
    return {name: p.replace("\x00A", "\n").replace("\x009", "\t")
            for name, p in test_gpu_quant._ptx("", _qmm_program(cases)).items()}


@pytest.mark.parametrize("fmt,xload", [("q8_0", "ld.global.b16"), ("f16", "ld.global.v4.b16")])
def test_cuda_quantized_matmul_bf16_x_ptx(fmt, xload):
    """bf16 x on cuda: the GEMV (shuffles) and the GEMM tiles (barriers) read x as stored, 16
    bits per element (the f16-weight GEMV: four per vector load), widened by a shift into an
    f32's high half (NVPTX on sm_80; no f32 copy of x), sum in f32 (FMAs) and round once at their
    one store (cvt.rn.bf16.f32, a 16-bit store; C never materialized in f32)."""
    ptx = _qmm_cuda_ptx([(fmt, "bf16")])
    gemv = [p for p in ptx.values() if "shfl.sync.bfly.b32" in p]
    gemm = [p for p in ptx.values() if "bar.sync" in p]
    assert len(gemv) == 1 and len(gemm) == 1, list(ptx)
    for p in gemv + gemm:
        ops = [x.split()[0] for x in p.splitlines() if x.strip()[:1].isalpha()]
        assert ".target sm_80" in p and "fma.rn.f32" in p
        assert re.search(r"shl\.b32\s+%r\d+, %r\d+, 16;", p)              # bf16 -> f32: the high half
        assert "st.global.b32" not in ops and "st.global.b16" in ops      # the bf16 result only
        assert "cvt.rn.bf16.f32" in ops and not any("bf16" in o and "cvt.rn.bf16.f32" != o for o in ops)
    ops = [x.split()[0] for x in gemv[0].splitlines() if x.strip()[:1].isalpha()]
    assert xload in ops and ops.count("st.global.b16") == 1 and ops.count("cvt.rn.bf16.f32") == 1
    assert "ld.global.b32" not in ops   # no 32-bit element loads: x is never f32


FAKE_QMM = r'''
import ml_dtypes
sys.path.insert(0, sys.argv[2])
import test_bf16
cases = [("q8_0", "bf16"), ("f16", "bf16")]
exe = relax_mlir.compile(test_bf16._qmm_program(cases), target="cuda")
rng = np.random.default_rng(0)
out = []
for fmt, xdt in cases:
    raw, _ = test_bf16._qmm_weights(fmt, rng)
    for m in test_bf16.QMM_ROWS:
        before = launches()
        y = exe[f"{fmt}_{xdt}"](np.ones((m, test_bf16.QMM_K), ml_dtypes.bfloat16), raw)
        out.append([fmt, list(y.shape), str(y.dtype), [list(grids[3 * i:3 * i + 3]) for i in range(before, launches())]])
print("FAKE-RUN " + json.dumps(out))
'''


def test_cuda_quantized_matmul_bf16_x_fake_driver(tmp_path):
    """The host path of bf16 x (the fake driver runs no kernel): one launch per call, the
    GEMV's grid (ceil(N / 4 warps), M) at 1 and 3 rows, the GEMM's one 64 x 64 tile at 17;
    bf16 results of the right shape."""
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_QMM, os.path.dirname(os.path.abspath(__file__)))
    n = QMM_N
    assert got == [[fmt, [m, n], "bfloat16", [[-(-n // 4), m, 1]] if m < 16 else [[1, 1, 1]]]
                   for fmt in ("q8_0", "f16") for m in QMM_ROWS]


# -- a bf16 KV cache (relax_mlir/llm's kv_dtype="bf16") on cuda ------------------------------------

def test_cuda_decode_attention_bf16_cache_ptx():
    """With a bf16 cache the fused decode attention's kernels (relax-gpu-decode-attention
    absorbs the astype to f32 of K and V) load K and V as 16-bit values and widen each by a
    shift into an f32's high half, then FMA in f32: the same four kernels as an f32 cache (no
    conversion kernel, no f32 copy of the cache), no 32-bit loads of K / V rows."""
    from test_gpu_launches import attention_module
    from test_gpu_rules import _cuda_ptx

    def ptx(dt):
        return {name: p.replace("\\0A", "\n").replace("\\09", "\t")
                for name, p in _cuda_ptx(str(attention_module(2, 4, 64, kv_dtype=dt)), "cuda").items()}

    f32, half = ptx("f32"), ptx("bf16")
    assert len(half) == len(f32) == 4, (list(f32), list(half))
    main = [p for p in half.values() if "shfl.sync.bfly.b32" in p]
    assert len(main) == 3, list(half)
    for p in main:
        assert "bf16kv" in p and ".target sm_80" in p
        loaded = re.findall(r"ld\.global\.b16\s+(%r\d+), \[", p)
        widened = re.findall(r"shl\.b32\s+%r\d+, (%r\d+), 16;", p)
        assert loaded and set(loaded) <= set(widened), (loaded, widened)   # every 16-bit load widened
        assert "cvt.f32.f16" not in p and "fma.rn.f32" in p
    for name, p in f32.items():   # the f32 cache's kernels read no 16-bit values
        assert "ld.global.b16" not in p, name


FAKE_KV_STEP = r"""
import torch, transformers
from relax_mlir.llm import CausalLM

torch.manual_seed(0)
cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
model = transformers.LlamaForCausalLM(cfg).eval()
out = {}
for kv in ("f32", "bf16"):
    lm = CausalLM.from_hf(model, max_seq_len=64, target="cuda", kv_dtype=kv)
    lm.prefill(np.arange(1, 6, dtype=np.int64))
    steps = []
    for j in range(2):
        lm.decode(j + 1)
        steps.append(lm.exe.cuda_call_stats["launches"])
    out[kv] = [steps, str(lm.session.state["k"].dtype), lm.bytes_per_token]
print("FAKE-RUN " + json.dumps(out))
"""


def test_fake_cuda_bf16_kv_cache_launches(tmp_path):
    """A decode step of the tiny Llama with a bf16 cache takes as many launches as with the f32
    cache (the conversions of the rows read absorbed by the fused attention; the conversion
    of the new rows fused into the rope kernel); the state is bf16, half the bytes per token."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_KV_STEP)
    (steps, dtype, nbytes), (bsteps, bdtype, bbytes) = got["f32"], got["bf16"]
    assert bsteps == steps and steps[0] == steps[1] > 0, got
    assert (dtype, bdtype) == ("float32", "bfloat16") and bbytes * 2 == nbytes, got


@pytest.mark.skipif(not _cuda_device()[0], reason=f"no CUDA device: {_cuda_device()[1]}")
def test_cuda_quantized_matmul_half_x_numerics():
    """On a device: Q8_0 / f16 weights with f16 and bf16 x at M = 1, 3, 17 (the GEMV, then the
    GEMM tiles) through one executable, as on the cpu."""
    exe = relax_mlir.compile(_qmm_program(QMM_CASES), target="cuda")
    _check_qmm(exe, QMM_CASES, 13)


@pytest.mark.skipif(not _cuda_device()[0], reason=f"no CUDA device: {_cuda_device()[1]}")
def test_cuda_bf16_kv_cache_numerics():
    """On a device: the tiny Llama with a bf16 cache across the split (past 256 keys) against
    the f32 cache: logits within 1e-2 of the largest, greedy tokens equal, launches equal."""
    pytest.importorskip("transformers")
    import torch
    import transformers
    from relax_mlir.llm import CausalLM
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    m = transformers.LlamaForCausalLM(cfg).eval()
    a = CausalLM.from_hf(m, max_seq_len=300, target="cuda")
    b = CausalLM.from_hf(m, max_seq_len=300, target="cuda", kv_dtype="bf16")
    ids = np.random.default_rng(0).integers(1, 128, 250)
    la, lb = a.prefill(ids), b.prefill(ids)
    tok = int(np.argmax(la))
    assert int(np.argmax(lb)) == tok
    for _ in range(10):          # KV lengths 251..260
        la, lb = a.decode(tok), b.decode(tok)
        assert a.exe.cuda_call_stats["launches"] == b.exe.cuda_call_stats["launches"]
        assert np.abs(la - lb).max() < 1e-2 * np.abs(la).max()
        tok = int(np.argmax(la))
        assert int(np.argmax(lb)) == tok
