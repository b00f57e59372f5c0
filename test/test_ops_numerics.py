"""Numerics of every legalized op against numpy, through relax_mlir.compile.

One compiled executable per (op, dtype, attributes) case, run at several values of
every symbolic dim: 1, an odd size and a size >= 64 (compile once, run any shape).
f32 always; i32/i64 where the op makes sense on integers; f16 for elementwise ops
and matmul (compared in f64 with a half-precision tolerance).
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from kernel_harness import graph_module  # noqa: E402
from relax_mlir.shapes import Shape  # noqa: E402

SIZES = (1, 7, 67)
NP = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64, "i1": np.bool_}
_erf = np.vectorize(math.erf)


@dataclass
class Case:
    op: str
    shapes: list                     # symbolic input shapes
    dtypes: list
    ref: Callable                    # numpy reference on float64 / int64 copies of the inputs
    attrs: str = ""
    gen: Optional[Callable] = None   # gen(rng, shape, dtype, i) -> array
    sizes: tuple = SIZES
    extra: dict = field(default_factory=dict)   # fixed symbol values
    tol: Optional[float] = None

    @property
    def id(self) -> str:
        a = self.attrs.replace(" ", "").replace('"', "")[:40]
        return f"{self.op}-{'-'.join(self.dtypes)}{'-' + a if a else ''}"


def _gen(rng, shape, dtype, i):
    if dtype.startswith("i"):
        return rng.integers(-9, 10, size=shape).astype(NP[dtype])
    return rng.standard_normal(shape).astype(NP[dtype])


def positive(rng, shape, dtype, i):
    return (np.abs(rng.standard_normal(shape)) + 0.1).astype(NP[dtype])


def nonzero(rng, shape, dtype, i):
    if i == 0:
        return _gen(rng, shape, dtype, i)
    x = rng.integers(1, 6, size=shape) * rng.choice([-1, 1], size=shape)
    return x.astype(NP[dtype]) if dtype.startswith("i") else (x * 0.75).astype(NP[dtype])


def small(rng, shape, dtype, i):
    return rng.integers(-2, 3, size=shape).astype(NP[dtype])


def halves(rng, shape, dtype, i):
    return (np.round(rng.standard_normal(shape) * 8) / 2).astype(NP[dtype])


def _power_gen(rng, shape, dtype, i):
    if dtype.startswith("i"):
        return rng.integers(0, 4, size=shape).astype(NP[dtype])
    return (np.abs(rng.standard_normal(shape)) + 0.2).astype(NP[dtype]) if i == 0 else \
        rng.uniform(-2, 2, size=shape).astype(NP[dtype])


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh,
    "sigmoid": _sigmoid, "negative": np.negative, "abs": np.abs, "relu": lambda x: np.maximum(x, 0),
    "silu": lambda x: x * _sigmoid(x), "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "sin": np.sin, "cos": np.cos, "erf": _erf, "floor": np.floor, "ceil": np.ceil, "round": np.round,
}
POSITIVE = {"log", "sqrt", "rsqrt"}


def _int_div(a, b):
    return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "power": np.power, "floor_divide": np.floor_divide,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _layer_norm(x, g, b, axes=(-1,)):
    mu = x.mean(axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axes, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def cases() -> list[Case]:
    out: list[Case] = []
    x2 = [["n", 5]]
    for name, f in UNARY.items():
        gen = positive if name in POSITIVE else (halves if name == "round" else None)
        for dt in ("f32", "f16"):
            out.append(Case(name, x2, [dt], f, gen=gen))
        if name in ("negative", "abs", "relu"):
            for dt in ("i32", "i64"):
                out.append(Case(name, x2, [dt], f))
    for frm, to in (("f32", "f16"), ("f16", "f32"), ("f32", "i32"), ("i32", "f32"), ("i64", "i32"), ("i32", "i64")):
        out.append(Case("astype", x2, [frm], lambda x, to=to: x.astype(NP[to]), attrs=f"dtype = {to}",
                        gen=halves if frm.startswith("f") else None))
    bshapes = [["n", 1, "m"], [3, "m"]]
    for name, f in BINARY.items():
        cmp = name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
        gen = _power_gen if name == "power" else (nonzero if name == "floor_divide" else (small if cmp else None))
        dts = ("f32", "i32") if cmp else ("f32", "f16", "i32", "i64")
        for dt in dts:
            out.append(Case(name, bshapes, [dt, dt], f, gen=gen))
    out.append(Case("divide", bshapes, ["f32", "f32"], np.divide, gen=nonzero))
    out.append(Case("divide", bshapes, ["f16", "f16"], np.divide, gen=nonzero))
    for dt in ("i32", "i64"):
        out.append(Case("divide", bshapes, [dt, dt], _int_div, gen=nonzero))
    for dt in ("f32", "i64"):
        out.append(Case("where", [["n", 1], ["n", "m"], ["m"]], ["i1", dt, dt], np.where,
                        gen=lambda r, s, d, i: (r.random(s) < 0.5) if i == 0 else _gen(r, s, d, i)))
    # matmul
    for dt in ("f32", "f16", "i32"):
        out.append(Case("matmul", [["n", "k"], ["k", "m"]], [dt, dt], np.matmul, gen=small if dt == "i32" else None))
        out.append(Case("matmul", [["b", "n", "k"], ["b", "k", "m"]], [dt, dt], np.matmul,
                        gen=small if dt == "i32" else None, sizes=(1, 3, 64)))
    out.append(Case("matmul", [[2, 1, "n", "k"], ["k"]], ["f32", "f32"], np.matmul))
    out.append(Case("matmul", [["k"], [3, "k", "m"]], ["f32", "f32"], np.matmul))
    out.append(Case("matmul", [[1, "n", "k"], ["b", "k", 4]], ["f32", "f32"], np.matmul, sizes=(1, 3, 64)))
    out.append(Case("matmul", [["n", "k"], ["k", "m"]], ["f16", "f16"],
                    lambda a, b: np.matmul(a, b), attrs="out_dtype = f32"))
    # reductions
    x3 = [["a", "n", 4]]
    for name, f in (("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min), ("prod", np.prod)):
        for attrs, kw in (("axes = array<i64: 1>", dict(axis=1)),
                          ("axes = array<i64: 0, 2>, keepdims = true", dict(axis=(0, 2), keepdims=True)),
                          ("", {})):
            gen = (lambda r, s, d, i: (1 + 0.02 * r.standard_normal(s)).astype(NP[d])) if name == "prod" else None
            out.append(Case(name, x3, ["f32"], lambda x, f=f, kw=kw: f(x, **kw), attrs=attrs, gen=gen,
                            sizes=(1, 7, 64), tol=1e-4))
        if name != "mean":
            out.append(Case(name, x3, ["i32"], lambda x, f=f: f(x, axis=1), attrs="axes = array<i64: 1>",
                            gen=small if name == "prod" else None, sizes=(1, 7, 13)))
    for name, f in (("argmax", np.argmax), ("argmin", np.argmin)):
        for dt in ("f32", "i32"):
            out.append(Case(name, x3, [dt], lambda x, f=f: f(x, axis=1), attrs="axis = 1 : i64", gen=small))
        out.append(Case(name, x3, ["f32"], lambda x, f=f: f(x)))
        out.append(Case(name, x3, ["f32"], lambda x, f=f: f(x, axis=-1, keepdims=True),
                        attrs="axis = -1 : i64, keepdims = true"))
    out.append(Case("softmax", x3, ["f32"], lambda x: _softmax(x, -1)))
    out.append(Case("softmax", x3, ["f32"], lambda x: _softmax(x, 1), attrs="axis = 1 : i64"))
    out.append(Case("softmax", x3, ["f16"], lambda x: _softmax(x, -1)))
    out.append(Case("log_softmax", x3, ["f32"], lambda x: np.log(_softmax(x, 1)), attrs="axis = 1 : i64"))
    out.append(Case("layer_norm", [["a", "n"], ["n"], ["n"]], ["f32"] * 3, _layer_norm, tol=1e-4))
    out.append(Case("layer_norm", [["a", "n", 4], ["n", 4], ["n", 4]], ["f32"] * 3,
                    lambda x, g, b: _layer_norm(x, g, b, (1, 2)), attrs="axes = array<i64: 1, 2>", tol=1e-4))
    out.append(Case("layer_norm", [["a", "n"], ["n"], ["n"]], ["f16"] * 3, _layer_norm))
    out.append(Case("rms_norm", [["a", "n"], ["n"]], ["f32"] * 2,
                    lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w, tol=1e-4))
    # manipulation (f32 and i64: data movement)
    for dt in ("f32", "i64"):
        out += [
            Case("reshape", x3, [dt], lambda x: x.reshape(x.shape[0], -1), attrs='shape = #relax.shape<["a", -1]>'),
            Case("reshape", x3, [dt], lambda x: x.reshape(2, x.shape[0], x.shape[1], 2),
                 attrs='shape = #relax.shape<[2, "a", "n", 2]>'),
            Case("flatten", x3, [dt], lambda x: x.reshape(-1)),
            Case("expand_dims", x3, [dt], lambda x: x[None, :, None], attrs="axis = array<i64: 0, 2>"),
            Case("squeeze", [[1, "n", 1]], [dt], lambda x: x.reshape(-1), attrs="axis = array<i64: 0, 2>"),
            Case("permute_dims", x3, [dt], lambda x: x.transpose(1, 2, 0), attrs="axes = array<i64: 1, 2, 0>"),
            Case("broadcast_to", [["n", 1]], [dt], lambda x: np.broadcast_to(x, (2, x.shape[0], 7)),
                 attrs='shape = #relax.shape<[2, "n", 7]>'),
            Case("concat", [["a", "n", 4], ["a", "m", 4], ["a", 2, 4]], [dt] * 3,
                 lambda *xs: np.concatenate(xs, 1), attrs="axis = 1 : i64"),
            Case("take", [["a", "n", 4], ["k"]], [dt, "i64"], lambda x, i: np.take(x, i, 1), attrs="axis = 1 : i64",
                 gen=lambda r, s, d, i: _gen(r, s, d, i) if i == 0 else r.integers(-1, 1, size=s).astype(np.int64)),
            Case("tril", x3, [dt], lambda x: np.tril(x, 1), attrs="k = 1"),
            Case("triu", x3, [dt], lambda x: np.triu(x, -1), attrs="k = -1"),
        ]
    out.append(Case("take", [["a", "n"], [2, "k"]], ["f32", "i32"], lambda x, i: np.take(x, i, 0), attrs="axis = 0 : i64",
                    gen=lambda r, s, d, i: _gen(r, s, d, i) if i == 0 else np.zeros(s, np.int32)))
    out.append(Case("strided_slice", x3, ["f32"], lambda x: x[:, 1::2, -3:],
                    attrs='axes = array<i64: 1, 2>, begin = #relax.shape<[1, -3]>, end = #relax.shape<["n", 4]>, '
                          'strides = #relax.shape<[2, 1]>', sizes=(2, 7, 67)))
    out.append(Case("strided_slice", x3, ["f32"], lambda x: x[:, x.shape[1] - 1:],
                    attrs='axes = array<i64: 1>, begin = #relax.shape<["n - 1"]>, end = #relax.shape<["n"]>'))
    out.append(Case("split", [["a", "3*n", 4]], ["f32"], lambda x: tuple(np.split(x, 3, 1)), attrs="sections = 3 : i64, axis = 1 : i64"))
    out.append(Case("split", [["a", "n", 4]], ["i64"], lambda x: tuple(np.split(x, [1, 3], 2)),
                    attrs="indices = array<i64: 1, 3>, axis = 2 : i64"))
    # creation (the parameter only binds n)
    out += [
        Case("full", [["n"]], ["f32"], lambda n: np.full((n.shape[0], 3), 2.5), attrs='shape = #relax.shape<["n", 3]>, value = 2.5'),
        Case("full", [["n"]], ["f32"], lambda n: np.full((n.shape[0],), -3), attrs='shape = #relax.shape<["n"]>, value = -3.0, dtype = i32'),
        Case("zeros", [["n"]], ["f32"], lambda n: np.zeros((2, n.shape[0])), attrs='shape = #relax.shape<[2, "n"]>, dtype = i64'),
        Case("ones", [["n"]], ["f32"], lambda n: np.ones((n.shape[0], 2)), attrs='shape = #relax.shape<["n", 2]>, dtype = f16'),
        Case("arange", [["n"]], ["f32"], lambda n: np.arange(n.shape[0]), attrs='end = "n"'),
        Case("arange", [["n"]], ["f32"], lambda n: np.arange(n.shape[0] - 1, 3 * n.shape[0], 2),
             attrs='start = "n - 1", end = "3*n", step = 2, dtype = f32'),
        Case("arange", [["n"], ["m"]], ["f32", "f32"], lambda n, m: np.arange(1, 2 * n.shape[0] + 1, m.shape[0]),
             attrs='start = 1, end = "2*n + 1", step = "m", dtype = i32'),
    ]
    return out


CASES = cases()


def _dims(shape, env):
    return Shape.of(shape).evaluate(env)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_numerics(case: Case):
    mod = graph_module(case.op, case.shapes, case.dtypes, case.attrs, name="main")
    exe = relax_mlir.compile(mod)
    syms = sorted(set().union(*(Shape.of(s).symbols for s in case.shapes)))
    rng = np.random.default_rng(0)
    envs = [{s: v for s in syms} for v in case.sizes]
    if len(syms) > 1:   # the symbols need not be equal: one mixed assignment too
        envs.append({s: case.sizes[(i + 1) % len(case.sizes)] for i, s in enumerate(syms)})
    for env in envs:
        env = {**env, **case.extra}
        ins = [(case.gen or _gen)(rng, _dims(s, env), d, i) for i, (s, d) in enumerate(zip(case.shapes, case.dtypes))]
        wide = [x.astype(np.float64) if x.dtype.kind == "f" else x for x in ins]
        ref = case.ref(*wide)
        refs = list(ref) if isinstance(ref, tuple) else [ref]
        got = exe(*ins)   # creation ops: the parameters bind the symbols
        gots = list(got) if isinstance(got, (tuple, list)) else [got]
        assert len(gots) == len(refs)
        for g, r in zip(gots, refs):
            r = np.asarray(r)
            assert g.shape == r.shape, (env, g.shape, r.shape)
            if g.dtype.kind in "iub" and r.dtype.kind in "iub":
                np.testing.assert_array_equal(g, r.astype(g.dtype), err_msg=str(env))
                continue
            half = g.dtype == np.float16 or any(x.dtype == np.float16 for x in ins)
            tol = 2e-2 if half else (case.tol or 2e-5)
            if case.op == "matmul" and half:
                tol = 6e-2
            np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), rtol=tol, atol=tol,
                                       err_msg=str(env))
