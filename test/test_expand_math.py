"""relax-expand-math: the inline f32 exp against numpy over the whole float range."""

import numpy as np
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend.builder import graph_function


def _exp_exe():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n"], "f32")]) as fn:
            fn.ret(relax.exp(fn.params[0]))
    return relax_mlir.compile(m)


def test_exp_accuracy_and_special_values():
    exe = _exp_exe()
    x = np.concatenate([np.linspace(-86.5, 88.7, 200001, dtype=np.float32),
                        np.float32([0, -0.0, 1, -1, 1e-30, -1e-30])])
    got, want = exe(x), np.exp(x)
    rel = np.abs(got - want) / want
    assert rel.max() < 4e-7, rel.max()          # ~2 ulp
    special = np.float32([-np.inf, -1e9, -87, -100, 89, 1e9, np.inf, np.nan])
    out = exe(special)
    np.testing.assert_array_equal(out[:4], 0)     # below the range: exactly 0, never subnormal
    assert np.all(np.isinf(out[4:7])) and np.isnan(out[7])
    # several sizes through the one executable
    for n in (1, 7, 64):
        v = np.random.default_rng(n).standard_normal(n).astype(np.float32) * 10
        np.testing.assert_allclose(exe(v), np.exp(v), rtol=4e-7)


def test_erf_and_gelu_accuracy_and_special_values():
    """f32 erf expanded inline (GELU's erf form no longer calls libm per element)."""
    import math

    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n"], "f32")]) as fn:
            x = fn.params[0]
            fn.ret(relax.erf(x), relax.gelu(x))
    exe = relax_mlir.compile(m)
    x = np.concatenate([np.linspace(-6, 6, 24001, dtype=np.float32),
                        np.float32([0, -0.0, 1e-30, -1e-8, 0.4999, 0.5, 0.5001, 30, -30])])
    erf, gelu = exe(x)
    ref = np.array([math.erf(float(v)) for v in x])
    assert np.abs(erf - ref).max() < 4e-7
    small = (np.abs(x) < 0.5) & (x != 0)
    assert (np.abs(erf[small] - ref[small]) / np.abs(ref[small])).max() < 3e-7   # no cancellation near 0
    want = x.astype(np.float64) * 0.5 * (1 + np.array([math.erf(float(v) / math.sqrt(2)) for v in x]))
    assert np.abs(gelu - want).max() < 1e-6
    e, _ = exe(np.float32([np.inf, -np.inf, np.nan]))
    assert e[0] == 1.0 and e[1] == -1.0 and np.isnan(e[2])
    for n in (1, 7, 64):
        v = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        np.testing.assert_allclose(exe(v)[0], [math.erf(float(t)) for t in v], atol=4e-7)



NAN_FOLDED = """func.func @main(%x: tensor<0x?xf32, #relax.shape<[0, "m"]>>) -> (tensor<f32>, tensor<f32>) attributes {relax.function} {
  %0 = "relax.max"(%x) {axes = array<i64: 0, 1>, keepdims = false} : (tensor<0x?xf32, #relax.shape<[0, "m"]>>) -> tensor<f32>
  %1 = "relax.divide"(%0, %0) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %2 = "relax.exp"(%1) : (tensor<f32>) -> tensor<f32>
  return %1, %2 : tensor<f32>, tensor<f32>
}"""


def test_exp_of_a_nan_known_at_compile_time():
    """exp of a NaN that LLVM can fold (max over an axis of static length 0 is -inf, -inf /
    -inf is NaN): NaN, never the poison of converting NaN to an integer exponent (long fuzz
    run, program seed 43000830: 5.3e-19, -1.09 or 1.5e35 depending on the call)."""
    exe = relax_mlir.compile(NAN_FOLDED)
    for cols in (0, 1, 5):
        q, e = exe(np.zeros((0, cols), np.float32))
        assert np.isnan(q) and np.isnan(e), (cols, q, e)


def test_tanh_and_gelu_forms_through_one_executable():
    """f32 tanh expanded inline (was libm tanhf per element, scalar), and bias + GELU (erf and
    tanh forms) as one fused kernel, as in MiniLM's FFN: float64 references at 1 row, an odd
    row count and a large one, through one executable (rows symbolic)."""
    import math

    src = """func.func @main(%x: tensor<?x80xf32, #relax.shape<["m", 80]>>, %b: tensor<80xf32>) -> (tensor<?x80xf32, #relax.shape<["m", 80]>>, tensor<?x80xf32, #relax.shape<["m", 80]>>, tensor<?x80xf32, #relax.shape<["m", 80]>>) attributes {relax.function} {
  %a = "relax.add"(%x, %b) : (tensor<?x80xf32, #relax.shape<["m", 80]>>, tensor<80xf32>) -> tensor<?x80xf32, #relax.shape<["m", 80]>>
  %g = "relax.gelu"(%a) : (tensor<?x80xf32, #relax.shape<["m", 80]>>) -> tensor<?x80xf32, #relax.shape<["m", 80]>>
  %h = "relax.gelu_tanh"(%a) : (tensor<?x80xf32, #relax.shape<["m", 80]>>) -> tensor<?x80xf32, #relax.shape<["m", 80]>>
  %t = "relax.tanh"(%a) : (tensor<?x80xf32, #relax.shape<["m", 80]>>) -> tensor<?x80xf32, #relax.shape<["m", 80]>>
  return %g, %h, %t : tensor<?x80xf32, #relax.shape<["m", 80]>>, tensor<?x80xf32, #relax.shape<["m", 80]>>, tensor<?x80xf32, #relax.shape<["m", 80]>>
}"""
    exe = relax_mlir.compile(src)
    erf = np.vectorize(math.erf)
    b = np.linspace(-1, 1, 80, dtype=np.float32)
    for m in (1, 7, 301):
        x = (np.random.default_rng(m).standard_normal((m, 80)) * 3).astype(np.float32)
        a = (x + b).astype(np.float64)
        g, h, t = exe(x, b)
        np.testing.assert_allclose(g, 0.5 * a * (1 + erf(a / math.sqrt(2))), rtol=0, atol=1e-6)
        np.testing.assert_allclose(h, 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))),
                                   rtol=0, atol=1.5e-6)
        np.testing.assert_allclose(t, np.tanh(a), rtol=0, atol=4e-7)
    # tanh over the range and its special values (NaN propagates, +-inf -> +-1, |tanh| <= 1)
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        mod = ir.Module.create()
        with graph_function(mod, "main", [("x", ["n"], "f32")]) as fn:
            fn.ret(relax.tanh(fn.params[0]))
    th = relax_mlir.compile(mod)
    v = np.concatenate([np.linspace(-12, 12, 48001, dtype=np.float32), np.float32([0, -0.0, 1e-30, -1e-8])])
    got, want = th(v), np.tanh(v.astype(np.float64))
    assert np.abs(got - want).max() < 4e-7 and np.abs(got).max() <= 1.0
    small = (np.abs(v) < 0.5) & (v != 0)
    assert (np.abs(got[small] - want[small]) / np.abs(want[small])).max() < 3e-7
    s = th(np.float32([np.inf, -np.inf, np.nan]))
    assert s[0] == 1.0 and s[1] == -1.0 and np.isnan(s[2])
