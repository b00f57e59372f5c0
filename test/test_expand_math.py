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
