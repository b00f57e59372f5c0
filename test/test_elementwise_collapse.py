"""The elementwise schedule's merged inner dims and the per-generic schedule of kernels with
several results (issue 28: relax-lift-params' BatchNorm folds ran as plain loops). ONE
compiled executable per program gives numpy's answer at sizes 1, odd and large of its
symbol; the kernels get the schedule they are meant for."""

from __future__ import annotations

import numpy as np
import pytest

from test_schedules import compile_scheduled, f32, op, program, schedules_applied

SIZES = [1, 7, 300]


def test_weight_times_per_row_scale():
    """(o, 5, 3, 3) times a per-row scale (o, 1, 1, 1): (C, KH, KW) merged into 45 (two
    16-lane vectors and a scalar remainder of 13), the scale a broadcast."""
    W, S = ["o", 5, 3, 3], ["o", 1, 1, 1]
    src = program([("w", W), ("s", S)], [op("y", "multiply", [("w", W), ("s", S)], W)], [("y", W)])
    assert list(schedules_applied(src).values()) == ["elementwise"]
    exe = compile_scheduled(src)
    for o in SIZES:
        w, s = f32(o, 5, 3, 3), f32(o, 1, 1, 1)
        np.testing.assert_array_equal(exe(w, s), w * s)


def test_bias_relu_over_small_pixels():
    """(n, 8, 7, 7) plus a per-channel bias (8, 1, 1), then relu (one fused chain): the 7x7
    pixels merged (49), the channel kept (the bias reads it alone)."""
    X, B = ["n", 8, 7, 7], [8, 1, 1]
    src = program([("x", X), ("b", B)], [op("a", "add", [("x", X), ("b", B)], X), op("r", "relu", [("a", X)], X)],
                  [("r", X)])
    assert list(schedules_applied(src).values()) == ["elementwise"]
    exe = compile_scheduled(src)
    for n in SIZES:
        x, b = f32(n, 8, 7, 7), f32(8, 1, 1)
        np.testing.assert_array_equal(exe(x, b), np.maximum(x + b, 0))


def test_nothing_to_merge_stays_narrow():
    """(n, 3, 1, 1) times a per-channel scale (3, 1, 1): the merged inner dim is still 3 wide,
    too narrow to vectorize along: plain loops, the same answer."""
    X, S = ["n", 3, 1, 1], [3, 1, 1]
    src = program([("x", X), ("s", S)], [op("y", "multiply", [("x", X), ("s", S)], X)], [("y", X)])
    assert list(schedules_applied(src).values()) == [""]
    exe = compile_scheduled(src)
    for n in SIZES:
        x, s = f32(n, 3, 1, 1), f32(3, 1, 1)
        np.testing.assert_array_equal(exe(x, s), x * s)


@pytest.mark.parametrize("c", [5, 16, 33])
def test_kernel_of_several_results(c):
    """A BatchNorm fold's shape: per-row scale ``g * rsqrt(v + eps)``, the scaled weight
    (o, c, 3, 3) and the shift ``b - m * scale``, returned together (one fused kernel of
    three results): each generic scheduled on its own, the results in their order."""
    V, W, S = ["o"], ["o", c, 3, 3], ["o", 1, 1, 1]
    src = program([("w", W), ("g", V), ("v", V), ("b", V), ("m", V)], [
        op("r", "rsqrt", [("v", V)], V),
        op("sc", "multiply", [("g", V), ("r", V)], V),
        op("ms", "multiply", [("m", V), ("sc", V)], V),
        op("sh", "subtract", [("b", V), ("ms", V)], V),
        op("s4", "reshape", [("sc", V)], S, ' {shape = #relax.shape<["o", 1, 1, 1]>}'),
        op("y", "multiply", [("w", W), ("s4", S)], W)], [("y", W), ("sh", V), ("sc", V)])
    applied = schedules_applied(src)
    assert list(applied.values()) == ["elementwise_each"], applied
    exe = compile_scheduled(src)
    for o in SIZES:
        w, g, b, m = f32(o, c, 3, 3), f32(o), f32(o), f32(o)
        v = np.abs(f32(o)) + 0.5
        y, sh, sc = exe(w, g, v, b, m)
        ref_sc = g / np.sqrt(v)
        np.testing.assert_allclose(sc, ref_sc, rtol=2e-6)
        np.testing.assert_allclose(sh, b - m * sc, rtol=2e-6, atol=1e-6)
        np.testing.assert_array_equal(y, w * sc.reshape(o, 1, 1, 1))


@pytest.mark.parametrize("shapes", [(["o", 48, 1, 1], ["o", 1, 1, 1]), (["o", 1, 7, 7], ["o", 1, 7, 7]),
                                    (["o", 3, 1, 17], ["o", 1, 1, 1])], ids=["1x1", "unit_channel", "unit_mid"])
def test_unit_loops_merge_with_anything(shapes):
    """Unit loops (a 1x1 window, one channel) inside the merged run: (o, 48, 1, 1) runs as
    (o, 48), (o, 1, 7, 7) as (o, 49), (o, 3, 1, 17) as (o, 51)."""
    X, S = shapes
    src = program([("x", X), ("s", S)], [op("y", "multiply", [("x", X), ("s", S)], X)], [("y", X)])
    assert list(schedules_applied(src).values()) == ["elementwise"]
    exe = compile_scheduled(src)
    for o in SIZES:
        x, s = f32(o, *X[1:]), f32(o, *S[1:])
        np.testing.assert_array_equal(exe(x, s), x * s)
