"""relax.repeat: a graph function called in ONE host loop (a layer stack's shape).

Numerics against numpy at several sizes through one executable, the iteration number
reaching the callee as a symbol, a failed check inside an iteration stopping the loop and
reported like a relax.call's, and the host code holding one call whatever the count."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend.builder import graph_function


def _module(counts: dict[str, int]) -> ir.Module:
    """``@step(it: (i, 0), x: (n, 4), w: (4, 4)) = tanh(x @ w) * 0.5 + x + i`` and one
    caller per entry of ``counts`` repeating it that many times; ``@rows`` repeats
    ``@pick`` (x + row i of y) 3 times, which needs 3 rows of y."""
    m = ir.Module.create()
    with graph_function(m, "step", [("it", ["i", 0], "i8"), ("x", ["n", 4], "f32"), ("w", [4, 4], "f32")]) as fn:
        it, x, w = fn.params
        i = relax.sum(relax.full(shape=["i"], value=1.0, dtype="f32"))    # the iteration number
        half = relax.full(shape=[], value=0.5, dtype="f32")
        fn.ret(relax.add(relax.add(relax.multiply(relax.tanh(relax.matmul(x, w)), half), x), i))
    for name, count in counts.items():
        with graph_function(m, name, [("x", ["n", 4], "f32"), ("w", [4, 4], "f32")]) as fn:
            fn.ret(relax.repeat(list(fn.params), callee="step", count=count, carried=1))
    with graph_function(m, "pick", [("it", ["i", 0], "i8"), ("x", ["n", 4], "f32"), ("y", ["m", 4], "f32")]) as fn:
        _, x, y = fn.params                     # row i of y: a run-time check that i < m
        fn.ret(relax.add(x, relax.strided_slice(y, axes=[0], begin=["i"], end=["i + 1"])))
    with graph_function(m, "rows", [("x", ["n", 4], "f32"), ("y", ["m", 4], "f32")]) as fn:
        fn.ret(relax.repeat(list(fn.params), callee="pick", count=3, carried=1))
    return m


def _reference(x: np.ndarray, w: np.ndarray, count: int) -> np.ndarray:
    for i in range(count):
        x = np.tanh(x @ w) * 0.5 + x + i
    return x


@pytest.fixture(scope="module")
def exe():
    with relax_mlir.make_context(), ir.Location.unknown():
        return relax_mlir.compile(_module({"once": 1, "five": 5}))


@pytest.mark.parametrize("n", [1, 3, 17, 256])
def test_numerics(exe, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    w = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
    for name, count in (("once", 1), ("five", 5)):
        np.testing.assert_allclose(exe[name](x, w), _reference(x, w, count), rtol=1e-5, atol=1e-5)


def test_failed_iteration(exe):
    """y has 2 rows: the third iteration's slice check fails; the error is the callee's
    check (ids are module-wide), and nothing after it ran."""
    x = np.ones((2, 4), np.float32)
    y = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(exe["rows"](x, y), x + y.sum(axis=0))
    with pytest.raises(relax_mlir.ShapeError, match="strided_slice") as e:
        exe["rows"](x, y[:2])
    print(e.value)


def test_one_call_in_host_code():
    """The lowered caller holds one scf.for around ONE call of the callee, whatever the count."""
    from relax_mlir.transforms.pipeline import run_pipeline
    with relax_mlir.make_context(), ir.Location.unknown():
        m = _module({"many": 40})
        run_pipeline(m.operation, "relax-infer-shapes, relax-legalize, relax-lower-host")
        text = str(m)
    body = text[text.index("func.func @many("):]
    body = body[:body.index("\n  }\n")]
    assert body.count("scf.for") == 1
    assert body.count("call @__relax_body_step(") + body.count("call @step(") == 1


@pytest.fixture(scope="module")
def stacked():
    """@main repeats @step3 over 3 layers whose (4, 4) f32 weights are rows of one (3, 64) i8
    array, each read as a relax.view at byte 64 * i; @bad views beyond the array."""
    with relax_mlir.make_context(), ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "step3", [("it", ["i", 0], "i8"), ("x", ["n", 4], "f32"), ("w", ["c", 64], "i8")]) as fn:
            _, x, w = fn.params
            fn.ret(relax.matmul(x, relax.view(w, shape=[4, 4], dtype="f32", offset="64*i")))
        with graph_function(m, "main", [("x", ["n", 4], "f32"), ("w", [3, 64], "i8")]) as fn:
            fn.ret(relax.repeat(list(fn.params), callee="step3", count=3, carried=1))
        with graph_function(m, "bad", [("x", ["n", 4], "f32"), ("w", [3, 64], "i8")]) as fn:
            x, w = fn.params
            fn.ret(relax.matmul(x, relax.view(w, shape=[4, 4], dtype="f32", offset=192)))
        return relax_mlir.compile(m)


@pytest.mark.parametrize("n", [1, 5, 64])
def test_views_of_stacked_weights(stacked, n):
    w = np.random.default_rng(0).standard_normal((3, 4, 4)).astype(np.float32)
    x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
    got = stacked["main"](x, w.reshape(3, 16).view(np.int8))
    np.testing.assert_allclose(got, x @ w[0] @ w[1] @ w[2], rtol=1e-5, atol=1e-5)
    with pytest.raises(relax_mlir.ShapeError, match="relax.view within its operand does not hold"):
        stacked["bad"](x, w.reshape(3, 16).view(np.int8))
