"""max_pool2d / avg_pool2d (separable window legalization) against PyTorch: odd image sizes,
strides, padding, dilation, count_include_pad, an integer max; every case compiles ONE
executable with symbolic batch, height and width and runs it at several sizes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import relax_mlir  # noqa: E402

SHAPE = '#relax.shape<["n", 3, "h", "w"]>'


def _out(size: str, k: int, s: int, lo: int, hi: int, d: int) -> str:
    return f"({size} + {lo + hi - d * (k - 1) - 1}) // {s} + 1"


def _program(op: str, dtype: str, k, s, p, d=None, cip=None) -> str:
    oh, ow = _out("h", k[0], s[0], p[0], p[0], (d or [1, 1])[0]), _out("w", k[1], s[1], p[1], p[1], (d or [1, 1])[1])
    ty_in = f"tensor<?x3x?x?x{dtype}, {SHAPE}>"
    ty_out = f'tensor<?x3x?x?x{dtype}, #relax.shape<["n", 3, "{oh}", "{ow}"]>>'
    attrs = [f"pool_size = array<i64: {k[0]}, {k[1]}>", f"strides = array<i64: {s[0]}, {s[1]}>",
             f"padding = array<i64: {p[0]}, {p[1]}>"]
    if d is not None:
        attrs.append(f"dilation = array<i64: {d[0]}, {d[1]}>")
    if cip is not None:
        attrs.append(f"count_include_pad = {'true' if cip else 'false'}")
    return (f"func.func @main(%x: {ty_in}) -> {ty_out} attributes {{relax.function}} {{\n"
            f"  %0 = \"relax.{op}\"(%x) {{{', '.join(attrs)}}} : ({ty_in}) -> {ty_out}\n"
            f"  return %0 : {ty_out}\n}}\n")


SIZES = [(1, 7, 9), (2, 31, 17), (3, 97, 131), (1, 56, 56)]


@pytest.mark.parametrize("k,s,p,d", [([3, 3], [2, 2], [1, 1], [1, 1]), ([2, 2], [2, 2], [0, 0], [1, 1]),
                                     ([3, 2], [1, 2], [1, 0], [1, 1]), ([3, 3], [2, 1], [1, 1], [2, 1]),
                                     ([1, 1], [2, 2], [0, 0], [1, 1])],
                         ids=["3x3s2p1", "2x2s2", "3x2s1x2p1x0", "3x3s2x1p1d2x1", "1x1s2"])
def test_max_pool(k, s, p, d):
    exe = relax_mlir.compile(_program("max_pool2d", "f32", k, s, p, d))
    rng = np.random.default_rng(0)
    for n, h, w in SIZES:
        if (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) < 0:
            continue
        x = rng.standard_normal((n, 3, h, w), dtype=np.float32)
        ref = F.max_pool2d(torch.from_numpy(x), k, s, p, d).numpy()
        got = exe(x)
        assert got.shape == ref.shape
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("cip", [True, False], ids=["count_pad", "exclude_pad"])
@pytest.mark.parametrize("k,s,p", [([3, 3], [2, 2], [1, 1]), ([2, 3], [1, 2], [1, 1]), ([7, 7], [1, 1], [0, 0])],
                         ids=["3x3s2p1", "2x3s1x2p1", "7x7"])
def test_avg_pool(k, s, p, cip):
    exe = relax_mlir.compile(_program("avg_pool2d", "f32", k, s, p, cip=cip))
    rng = np.random.default_rng(1)
    for n, h, w in SIZES:
        if h < k[0] or w < k[1]:
            continue
        x = rng.standard_normal((n, 3, h, w), dtype=np.float32)
        ref = F.avg_pool2d(torch.from_numpy(x), k, s, p, count_include_pad=cip).numpy()
        got = exe(x)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_max_pool_int32():
    """Integer max pooling (signed), padding acting as the lowest value."""
    exe = relax_mlir.compile(_program("max_pool2d", "i32", [3, 3], [2, 2], [1, 1]))
    rng = np.random.default_rng(2)
    for n, h, w in [(1, 5, 6), (2, 13, 11)]:
        x = rng.integers(-1000, -1, (n, 3, h, w)).astype(np.int32)   # all negative: padding must not win
        ref = F.max_pool2d(torch.from_numpy(x.astype(np.float32)), 3, 2, 1).numpy().astype(np.int32)
        np.testing.assert_array_equal(exe(x), ref)


def test_max_pool_nan_propagates():
    """A NaN inside a window gives NaN, as in torch; padding never wins."""
    exe = relax_mlir.compile(_program("max_pool2d", "f32", [3, 3], [2, 2], [1, 1], [1, 1]))
    x = -np.ones((1, 3, 9, 9), np.float32)
    x[0, 1, 3, 3] = np.nan   # on the overlap of 2 x 2 windows
    ref = F.max_pool2d(torch.from_numpy(x), 3, 2, 1).numpy()
    got = exe(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    assert np.isnan(ref).sum() == 4
    np.testing.assert_array_equal(got[~np.isnan(got)], ref[~np.isnan(ref)])
