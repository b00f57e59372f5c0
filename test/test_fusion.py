"""Operator fusion end to end: the same programs compiled with fusion on and off give the
numpy answer (relax-annotate-kernel-kinds, relax-fuse-ops, relax-fuse-kernels in `cpu`)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import relax_mlir
from relax_mlir.transforms.pipeline import run_pipeline

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = open(os.path.join(HERE, "Inputs", "fusion_kernels.mlir")).read()


def hand_written(name: str) -> str:
    """A graph function from test/relax-fuse-ops (call_tir of hand-written kernels)."""
    text = open(os.path.join(HERE, "relax-fuse-ops", name + ".mlir")).read()
    return KERNELS + "\n" + "\n".join(l for l in text.splitlines() if not l.startswith("//"))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


N, M = 7, 5
X, Y, Z = f32(N, 64), f32(N, 64), f32(N, 64)
W, W2, W3 = f32(64, 64) / 8, f32(64, 64) / 8, f32(64, 64) / 8
B = f32(64)
K, MASK = f32(M, 64), f32(N, M)


def rot(x, c, s):
    return x * c + np.concatenate([-x[:, 32:], x[:, :32]], axis=1) * s


# name, function, arguments, numpy reference
HAND = [
    ("mlp", "mlp", (X, W, B), lambda x, w, b: np.maximum(x @ w + b, 0)),
    ("rmsnorm", "rms_norm", (X, B), lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w),
    ("softmax", "softmax_rows", (X,), softmax),
    ("swiglu", "swiglu", (X, W, W2, W3),
     lambda x, wg, wu, wd: ((x @ wg) * sigmoid(x @ wg) * (x @ wu)) @ wd),
    ("rotary", "rotary", (X, Y, Z), rot),
    ("attention", "attention_scores", (X, K, MASK), lambda q, k, m: softmax(q @ k.T * 0.125 + m)),
    ("multi_output", "multi_output", (X, B),
     lambda x, b: (np.maximum(x + b, 0), np.maximum(x + b, 0) * x)),
    ("cycle", "no_cycle", (X, W), lambda x, w: np.maximum(x, 0) * (np.maximum(x, 0) @ w)),
]

# The same kind of programs written with relax ops (relax-legalize makes the kernels).
T = 'tensor<?x64xf32, #relax.shape<["n", 64]>>'
RELAX_MLP = f"""
func.func @main(%x: {T}, %w: tensor<64x64xf32>, %b: tensor<64xf32>, %g: tensor<64xf32>) -> {T} attributes {{relax.function}} {{
  %0 = "relax.matmul"(%x, %w) : ({T}, tensor<64x64xf32>) -> {T}
  %1 = "relax.add"(%0, %b) : ({T}, tensor<64xf32>) -> {T}
  %2 = "relax.relu"(%1) : ({T}) -> {T}
  %3 = "relax.sigmoid"(%2) : ({T}) -> {T}
  %4 = "relax.multiply"(%2, %3) : ({T}, {T}) -> {T}
  %5 = "relax.rms_norm"(%4, %g) {{axes = array<i64: -1>, epsilon = 1.0e-05 : f64}} : ({T}, tensor<64xf32>) -> {T}
  %6 = "relax.softmax"(%5) {{axis = -1 : i64}} : ({T}) -> {T}
  %7 = "relax.exp"(%6) : ({T}) -> {T}
  return %7 : {T}
}}
"""


def relax_mlp_ref(x, w, b, g):
    h = np.maximum(x @ w + b, 0)
    h = h * sigmoid(h)
    h = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-5) * g
    return np.exp(softmax(h))


@pytest.fixture(params=[False, True], ids=["fusion-off", "fusion-on"])
def fusion(request) -> dict:
    """The compile options of one side. (Patching ``cpu.FUSION_DEFAULT`` would change
    nothing: the ``cpu`` pipeline's option default is read when it is registered.)"""
    return {"fusion": request.param}


@pytest.mark.parametrize("name,fn,args,ref", HAND, ids=[h[0] for h in HAND])
def test_hand_written_kernels(fusion, name, fn, args, ref):
    exe = relax_mlir.compile(hand_written(name), options=fusion)
    got = exe[fn](*args)
    want = ref(*args)
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("n", [1, 9])
def test_relax_ops_through_legalize(fusion, n):
    x, g = f32(n, 64), f32(64)
    exe = relax_mlir.compile(RELAX_MLP, options=fusion)
    np.testing.assert_allclose(exe["main"](x, W, B, g), relax_mlp_ref(x, W, B, g), rtol=2e-4, atol=2e-5)


def test_relax_ops_fusion_groups():
    """relax ops -> legalize -> fuse: matmul + bias + relu + sigmoid + multiply is one kernel."""
    with relax_mlir.make_context() as ctx:
        m = relax_mlir.parse(RELAX_MLP, ctx)
        run_pipeline(m, "builtin.module(relax-infer-shapes, relax-legalize, relax-annotate-kernel-kinds, "
                        "relax-fuse-ops, relax-fuse-kernels)")
        text = str(m)
    calls = re.findall(r'"relax.call_tir".*?callee = @(\w+)', text)
    assert calls == ["fused_matmul_add_relu_sigmoid_multiply", "relax_rms_norm_axes1_eps1em05_f32_Dx64_64",
                     "relax_softmax_axis1_f32_Dx64", "relax_exp_f32_Dx64"]
    # Names come from the op each kernel was legalized from (relax.kernel_op), not its symbol.
    ops = dict(re.findall(r'func.func private @(\w+).*relax.kernel_op = "(\w+)"', text))
    assert ops == {"relax_rms_norm_axes1_eps1em05_f32_Dx64_64": "rms_norm", "relax_softmax_axis1_f32_Dx64": "softmax",
                   "relax_exp_f32_Dx64": "exp",
                   "fused_matmul_add_relu_sigmoid_multiply": "matmul_add_relu_sigmoid_multiply"}
    assert 'relax.kernel_kind = "output-fusable", relax.kernel_op = "matmul_add_relu_sigmoid_multiply"' in text


U = 'tensor<?x32xf32, #relax.shape<["2*n", 32]>>'
RESHAPES = f"""
func.func @main(%x: {T}) -> {T} attributes {{relax.function}} {{
  %0 = "relax.exp"(%x) : ({T}) -> {T}
  %1 = "relax.reshape"(%0) {{shape = #relax.shape<["2*n", 32]>}} : ({T}) -> {U}
  %2 = "relax.relu"(%1) : ({U}) -> {U}
  %3 = "relax.reshape"(%2) {{shape = #relax.shape<["n", 64]>}} : ({U}) -> {T}
  %4 = "relax.negative"(%3) : ({T}) -> {T}
  return %4 : {T}
}}
"""


def test_intermediate_dims_become_tir_vars(fusion):
    """An intermediate of shape (2*n, 32) inside one fused kernel: its size comes in as a tir_var."""
    with relax_mlir.make_context() as ctx:
        m = relax_mlir.parse(RESHAPES, ctx)
        run_pipeline(m, "builtin.module(relax-infer-shapes, relax-legalize, relax-fuse-ops, relax-fuse-kernels)")
        text = str(m)
    assert text.count('"relax.call_tir"') == 1 and 'tir_vars = #relax.shape<["2*n"]>' in text
    x = f32(3, 64)
    np.testing.assert_allclose(relax_mlir.compile(RESHAPES, options=fusion)["main"](x), -np.maximum(np.exp(x), 0), rtol=1e-5)


KERNEL = """
func.func private @{name}(%x: tensor<?x8xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {{relax.kernel{extra}}} {{
  %{c} = arith.constant {value} : f32
  %{r} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}} ins(%x : tensor<?x8xf32>) outs(%out : tensor<?x8xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %a, %{c} : f32
    linalg.yield %s : f32
  }} -> tensor<?x8xf32>
  return %{r} : tensor<?x8xf32>
}}
"""


def test_structural_hash_ignores_names_only():
    """Kernel identity: symbol, SSA names, visibility and the naming attributes do not count;
    a different constant does."""
    from relax_mlir.transforms.kernel_hash import structural_hash

    def h(**kw) -> str:
        args = dict(name="k", c="zero", r="r", value="0.0", extra="")
        args.update(kw)
        with relax_mlir.make_context() as ctx:
            m = relax_mlir.parse(KERNEL.format(**args), ctx)
            return structural_hash(m.body.operations[0].operation)

    base = h()
    assert h(name="other", c="c0", r="out2") == base
    assert h(extra=', relax.kernel_kind = "elementwise", relax.kernel_op = "relu"') == base
    assert h(value="1.0") != base
    assert h(extra=", relax.other") != base
    assert re.fullmatch("[0-9a-f]{64}", base)


FUSED_REDUCTIONS_ON_A_SCALAR = """
func.func @main(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  %4 = "relax.matmul"(%x, %x) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<f32>
  %5 = "relax.minimum"(%4, %4) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %6 = "relax.sum"(%5) {keepdims = true} : (tensor<f32>) -> tensor<f32>
  %7 = "relax.add"(%4, %6) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %8 = "relax.add"(%x, %7) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<f32>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %8 : tensor<?xf32, #relax.shape<["n"]>>
}
"""


def test_fused_scalar_reductions_match_numpy():
    """Long fuzz seed 13001370: the 0-d sum over minimum(dot, dot) was counted once more per
    element of x (x + 3*dot) when fused into the broadcast add."""
    exe = relax_mlir.compile(FUSED_REDUCTIONS_ON_A_SCALAR)
    for n in (1, 3, 65):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(exe(x), x + 2 * np.dot(x, x))


def test_scalar_reductions_without_fusion_match_numpy():
    x = np.arange(3, dtype=np.float32)
    got = relax_mlir.compile(FUSED_REDUCTIONS_ON_A_SCALAR, options={"fusion": False})(x)
    np.testing.assert_array_equal(got, x + 2 * np.dot(x, x))


# The class of seed 13001370: a kernel with only parallel loops (a reduction over no axes:
# of a 0-d value, or with axes = []) reads its init, and its consumer broadcasts the
# result (or several consumers use it). Values are small integers, so every sum is exact.
V, S = 'tensor<?xf32, #relax.shape<["n"]>>', "tensor<f32>"
NM, MN = 'tensor<?x?xf32, #relax.shape<["n", "m"]>>', 'tensor<?x?xf32, #relax.shape<["m", "n"]>>'
ACCUMULATING = {
    # a sum over no axes of a 1-d value, broadcast along the rows of a 2-d one
    "sum_no_axes_to_rows": (f"""
func.func @main(%x: {V}, %y: {MN}) -> {MN} attributes {{relax.function}} {{
  %0 = "relax.abs"(%x) : ({V}) -> {V}
  %1 = "relax.sum"(%0) {{axes = array<i64>}} : ({V}) -> {V}
  %2 = "relax.add"(%y, %1) : ({MN}, {V}) -> {MN}
  return %2 : {MN}
}}""", "xz", lambda x, y: y + np.abs(x)),
    # a 0-d dot, its max and its sum (two reductions of one producer), broadcast to 2-d
    "dot_max_sum_to_2d": (f"""
func.func @main(%x: {V}, %y: {NM}) -> {NM} attributes {{relax.function}} {{
  %0 = "relax.matmul"(%x, %x) : ({V}, {V}) -> {S}
  %1 = "relax.max"(%0) : ({S}) -> {S}
  %2 = "relax.sum"(%0) : ({S}) -> {S}
  %3 = "relax.multiply"(%1, %2) : ({S}, {S}) -> {S}
  %4 = "relax.add"(%y, %3) : ({NM}, {S}) -> {NM}
  return %4 : {NM}
}}""", "xy", lambda x, y: y + np.dot(x, x) ** 2),
    # one 0-d producer with four consumers (sum, prod, min, the return)
    "one_producer_many_reductions": (f"""
func.func @main(%x: {V}) -> ({V}, {S}) attributes {{relax.function}} {{
  %0 = "relax.sum"(%x) : ({V}) -> {S}
  %1 = "relax.negative"(%0) : ({S}) -> {S}
  %2 = "relax.sum"(%1) : ({S}) -> {S}
  %3 = "relax.prod"(%1) : ({S}) -> {S}
  %4 = "relax.min"(%0) : ({S}) -> {S}
  %5 = "relax.add"(%2, %3) : ({S}, {S}) -> {S}
  %6 = "relax.subtract"(%5, %4) : ({S}, {S}) -> {S}
  %7 = "relax.multiply"(%x, %6) : ({V}, {S}) -> {V}
  return %7, %0 : {V}, {S}
}}""", "x", lambda x: (x * (-3 * x.sum()), x.sum())),
    # the mean (keepdims) of a 0-d dot, subtracted from a 1-d value
    "dot_mean_to_1d": (f"""
func.func @main(%x: {V}) -> {V} attributes {{relax.function}} {{
  %0 = "relax.matmul"(%x, %x) : ({V}, {V}) -> {S}
  %1 = "relax.mean"(%0) {{keepdims = true}} : ({S}) -> {S}
  %2 = "relax.subtract"(%x, %1) : ({V}, {S}) -> {V}
  return %2 : {V}
}}""", "x", lambda x: x - np.dot(x, x)),
    # a true row reduction, then max and sum over no axes, back onto the rows
    "row_sum_chain": (f"""
func.func @main(%y: {NM}) -> {NM} attributes {{relax.function}} {{
  %0 = "relax.sum"(%y) {{axes = array<i64: 1>}} : ({NM}) -> {V}
  %1 = "relax.max"(%0) {{axes = array<i64>}} : ({V}) -> {V}
  %2 = "relax.sum"(%1) {{axes = array<i64>, keepdims = true}} : ({V}) -> {V}
  %3 = "relax.reshape"(%2) {{shape = #relax.shape<["n", 1]>}} : ({V}) -> tensor<?x1xf32, #relax.shape<["n", 1]>>
  %4 = "relax.add"(%y, %3) : ({NM}, tensor<?x1xf32, #relax.shape<["n", 1]>>) -> {NM}
  return %4 : {NM}
}}""", "y", lambda y: y + y.sum(1, keepdims=True)),
}


@pytest.mark.parametrize("name", list(ACCUMULATING))
def test_reductions_of_fused_producers_match_numpy(fusion, name):
    src, kinds, ref = ACCUMULATING[name]
    exe = relax_mlir.compile(src, options=fusion)
    ints = np.random.default_rng(7)
    for n in (1, 3, 65):
        m = 5
        shapes = {"x": (n,), "y": (n, m), "z": (m, n)}
        args = [ints.integers(-3, 4, shapes[k]).astype(np.float32) for k in kinds]
        got, want = exe(*args), ref(*args)
        if not isinstance(want, tuple):
            got, want = (got,), (want,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, np.asarray(w, dtype=np.float32))
