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
NP = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64, "i1": np.bool_, "i8": np.int8}
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
    "mod": np.fmod, "floor_mod": np.remainder,
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
        gen = _power_gen if name == "power" else \
            (nonzero if name in ("floor_divide", "mod", "floor_mod") else (small if cmp else None))
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
    out += _nn_and_sort_cases()
    return out


def _conv2d(x, w, strides=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), groups=1):
    """NCHW x OIHW, zero padding (top, left, bottom, right), float64."""
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs, ws = x[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                win = xs[:, :, i * dil[0]:i * dil[0] + strides[0] * (oh - 1) + 1:strides[0],
                         j * dil[1]:j * dil[1] + strides[1] * (ow - 1) + 1:strides[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", win, ws[:, :, i, j])
    return out


def _pool(x, k, s, p, kind, dil=(1, 1), count_pad=True):
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=fill)
    ones = np.pad(np.ones(x.shape), ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (xp.shape[2] - dil[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (xp.shape[3] - dil[1] * (k[1] - 1) - 1) // s[1] + 1
    wins, cnt = [], 0
    for i in range(k[0]):
        for j in range(k[1]):
            sl = (slice(None), slice(None), slice(i * dil[0], i * dil[0] + s[0] * (oh - 1) + 1, s[0]),
                  slice(j * dil[1], j * dil[1] + s[1] * (ow - 1) + 1, s[1]))
            wins.append(xp[sl])
            cnt = cnt + ones[sl]
    if kind == "max":
        r = np.max(wins, axis=0)
        return r.astype(x.dtype) if x.dtype.kind == "i" else r
    return np.sum(wins, axis=0) / (k[0] * k[1] if count_pad else cnt)


def _stable_order(x, axis, descending):
    return np.argsort(-x if descending else x, axis=axis, kind="stable")


def _nn_and_sort_cases() -> list:
    x4 = [["n", 3, "h", "w"]]
    nn_sizes = (1, 5, 9)
    out = [
        Case("conv2d", x4 + [[4, 3, 3, 3]], ["f32"] * 2, lambda x, w: _conv2d(x, w, pads=(1, 1, 1, 1)),
             attrs="padding = array<i64: 1, 1>", sizes=nn_sizes, tol=1e-4),
        Case("conv2d", [["n", 4, "h", "w"], [6, 2, 3, 3]], ["f32"] * 2,
             lambda x, w: _conv2d(x, w, (2, 1), (2, 1, 2, 1), (2, 1), 2),
             attrs="strides = array<i64: 2, 1>, padding = array<i64: 2, 1, 2, 1>, dilation = array<i64: 2, 1>, "
                   "groups = 2 : i64", sizes=nn_sizes, tol=1e-4),
        Case("conv2d", x4 + [[3, 1, 3, 3]], ["f32"] * 2, lambda x, w: _conv2d(x, w, pads=(1, 1, 1, 1), groups=3),
             attrs="padding = array<i64: 1, 1>, groups = 3 : i64", sizes=nn_sizes, tol=1e-4),
        Case("conv2d", x4 + [[2, 3, 1, 2]], ["f16"] * 2, lambda x, w: _conv2d(x, w, (1, 2)),
             attrs="strides = array<i64: 1, 2>", sizes=(2, 5, 9)),
        Case("max_pool2d", [["n", 2, "h", "w"]], ["f32"], lambda x: _pool(x, (3, 3), (2, 2), (1, 1), "max"),
             attrs="pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>",
             sizes=nn_sizes),
        Case("max_pool2d", [["n", 2, "h", "w"]], ["i32"], lambda x: _pool(x, (2, 2), (1, 1), (0, 0), "max", (2, 1)),
             attrs="pool_size = array<i64: 2, 2>, dilation = array<i64: 2, 1>", sizes=(3, 5, 9)),
        Case("avg_pool2d", [["n", 2, "h", "w"]], ["f32"], lambda x: _pool(x, (3, 3), (2, 2), (1, 1), "avg"),
             attrs="pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>",
             sizes=nn_sizes),
        Case("avg_pool2d", [["n", 2, "h", "w"]], ["f32"],
             lambda x: _pool(x, (3, 2), (1, 2), (1, 1), "avg", count_pad=False),
             attrs="pool_size = array<i64: 3, 2>, strides = array<i64: 1, 2>, padding = array<i64: 1, 1>, "
                   "count_include_pad = false", sizes=nn_sizes),
    ]
    x3 = [["a", "n", 4]]
    for dt in ("f32", "i32"):
        gen = small if dt == "i32" else None    # small ints: many ties, the order must be stable
        out += [
            Case("sort", x3, [dt], lambda x: np.take_along_axis(x, _stable_order(x, 1, False), 1),
                 attrs="axis = 1 : i64", gen=gen),
            Case("sort", x3, [dt], lambda x: np.take_along_axis(x, _stable_order(x, -1, True), -1),
                 attrs="descending = true", gen=gen),
            Case("argsort", x3, [dt], lambda x: _stable_order(x, 1, True), attrs="axis = 1 : i64, descending = true",
                 gen=gen),
            Case("argsort", x3, [dt], lambda x: _stable_order(x, -1, False).astype(np.int32), attrs="dtype = i32",
                 gen=gen),
            Case("topk", x3, [dt], lambda x: (np.take_along_axis(x, _stable_order(x, 1, True)[:, :1], 1),
                                              _stable_order(x, 1, True)[:, :1]),
                 attrs="k = 1 : i64, axis = 1 : i64", gen=gen),
            Case("topk", x3, [dt], lambda x: (np.take_along_axis(x, _stable_order(x, -1, False)[..., :3], -1),
                                              _stable_order(x, -1, False)[..., :3]),
                 attrs="k = 3 : i64, largest = false", gen=gen),
        ]
    # k beyond the selection limit: topk sorts (positions counted, then the first k gathered)
    out.append(Case("topk", [["a", "n"]], ["i32"], lambda x: (np.take_along_axis(x, _stable_order(x, 1, True)[:, :17], 1),
                                                             _stable_order(x, 1, True)[:, :17]),
                    attrs="k = 17 : i64", gen=small, sizes=(17, 30, 67)))
    out += _quant_cases()
    return out


def _quant_cases() -> list[Case]:
    """quantized_matmul / quantized_take over raw GGUF rows (4 rows of K = 64), made by gguf's
    own quantizer; the reference dequantizes with gguf (docs/quantization.md)."""
    try:
        from gguf import GGMLQuantizationType as Q, quants
    except ImportError:
        return []
    out = []
    for fmt, qt, rb in (("q4_1", Q.Q4_1, 40), ("q8_0", Q.Q8_0, 68)):
        def deq(w, qt=qt):
            return quants.dequantize(np.asarray(w).astype(np.int8).view(np.uint8), qt).reshape(w.shape[0], 64)

        def gen(r, s, d, i, qt=qt, rows=(1,)):
            if d == "i8":
                w = r.standard_normal((s[0], 64)).astype(np.float32)
                return np.ascontiguousarray(quants.quantize(w, qt)).view(np.uint8).reshape(s).view(np.int8)
            if d == "i64":
                return r.integers(0, 4, size=s).astype(np.int64)
            return _gen(r, s, d, i)
        out.append(Case("quantized_matmul", [["n", 64], [4, rb]], ["f32", "i8"], lambda x, w, deq=deq: x @ deq(w).T,
                        attrs=f'format = "{fmt}"', gen=gen, tol=1e-4))
        out.append(Case("quantized_take", [[4, rb], ["k"]], ["i8", "i64"], lambda w, i, deq=deq: deq(w)[i],
                        attrs=f'format = "{fmt}"', gen=gen))
    return out


CASES = cases()


def _dims(shape, env):
    return Shape.of(shape).evaluate(env)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_numerics(case: Case):
    check_case(case)


def check_case(case: Case, target: str = "cpu") -> None:
    """Compile ``case`` once for ``target``; compare with numpy at every size (test_vulkan reuses it)."""
    mod = graph_module(case.op, case.shapes, case.dtypes, case.attrs, name="main")
    exe = relax_mlir.compile(mod, target=target)
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


# -- edge cases with defined results (docs/semantics.md); one executable, exact values ----------

def _t(dtype: str, sym: str = "n") -> str:
    return f'tensor<?x{dtype}, #relax.shape<["{sym}"]>>'


def _fn(name: str, op: str, ins: list, out: str, attrs: str = "") -> str:
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ins))
    args = ", ".join(f"%a{i}" for i in range(len(ins)))
    a = f" {{{attrs}}}" if attrs else ""
    return (f"func.func @{name}({params}) -> {out} attributes {{relax.function}} {{\n"
            f'  %0 = "relax.{op}"({args}){a} : ({", ".join(ins)}) -> {out}\n  return %0 : {out}\n}}\n')


EDGE_INT = ("i8", "i32", "i64")
EDGE_SRC = "".join(
    [_fn(f"{op}_{dt}", op, [_t(dt), _t(dt)], _t(dt)) for op in ("divide", "floor_divide", "power", "mod", "floor_mod")
     for dt in EDGE_INT + ("ui8", "ui32")]
    + [_fn(f"{op}_i1", op, [_t("i1"), _t("i1")], _t(r)) for op, r in
       (("add", "i1"), ("multiply", "i1"), ("maximum", "i1"), ("minimum", "i1"), ("less", "i1"))]
    + [_fn("add_ui8", "add", [_t("ui8"), _t("ui8")], _t("ui8")),
       _fn("greater_ui32", "greater", [_t("ui32"), _t("ui32")], _t("i1")),
       _fn("max_ui8", "max", [_t("ui8")], "tensor<ui8>"),
       _fn("argmax_ui8", "argmax", [_t("ui8")], "tensor<i64>"),
       _fn("max_i1", "max", [_t("i1")], "tensor<i1>"),
       _fn("sum_i8", "sum", [_t("i8")], "tensor<i8>"),
       _fn("relu_ui8", "relu", [_t("ui8")], _t("ui8")),
       _fn("negative_ui8", "negative", [_t("ui8")], _t("ui8")),
       _fn("argmax_f32", "argmax", [_t("f32")], "tensor<i64>"),
       _fn("argmin_f32", "argmin", [_t("f32")], "tensor<i64>"),
       _fn("argmax_rows", "argmax", ['tensor<?x2xf32, #relax.shape<["n", 2]>>'], _t("i64"), "axis = 1 : i64"),
       _fn("argmax_nk", "argmax", ['tensor<?x?xf32, #relax.shape<["n", "k"]>>'], _t("i64"), "axis = 1 : i64"),
       _fn("take_f32", "take", [_t("f32", "k"), _t("i64", "j")], _t("f32", "j"), "axis = 0 : i64"),
       _fn("take_clip", "take", [_t("f32", "k"), _t("i64", "j")], _t("f32", "j"), 'axis = 0 : i64, mode = "clip"'),
       _fn("take_ui8", "take", [_t("f32", "k"), _t("ui8", "j")], _t("f32", "j"), "axis = 0 : i64"),
       _fn("fdiv_f32", "floor_divide", [_t("f32"), _t("f32")], _t("f32")),
       _fn("fmod_f32", "floor_mod", [_t("f32"), _t("f32")], _t("f32")),
       _fn("tmod_f32", "mod", [_t("f32"), _t("f32")], _t("f32")),
       _fn("max_empty", "max", [_t("f32")], "tensor<f32>")]
    + [_fn(f"astype_{a}_{b}", "astype", [_t(a)], _t(b), f"dtype = {b}") for a, b in
       (("f32", "i32"), ("f32", "i64"), ("f32", "ui8"), ("f32", "i8"), ("f32", "i1"), ("ui8", "f32"),
        ("i8", "ui8"), ("ui8", "i32"), ("ui32", "f64"))])


@pytest.fixture(scope="module")
def edge():
    return relax_mlir.compile(EDGE_SRC)


def _eq(got, want, dtype):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype) and got.tolist() == list(want) if got.ndim else got.item() == want, \
        (got, want)


@pytest.mark.parametrize("dt", EDGE_INT)
def test_int_division_by_zero_and_overflow_never_trap(edge, dt):
    """Regression: SIGFPE on x / 0 and INT_MIN // -1. numpy's results: 0 and INT_MIN."""
    lo = int(np.iinfo(dt.replace("i", "int")).min)
    a = np.array([7, -7, 7, -7, lo, lo, 0, 5, lo], dt.replace("i", "int"))
    b = np.array([2, 2, -2, -2, -1, 0, 0, 0, 1], dt.replace("i", "int"))
    _eq(edge[f"divide_{dt}"](a, b), [3, -3, -3, 3, lo, 0, 0, 0, lo], a.dtype)
    _eq(edge[f"floor_divide_{dt}"](a, b), [3, -4, -4, 3, lo, 0, 0, 0, lo], a.dtype)
    _eq(edge[f"mod_{dt}"](a, b), [1, -1, 1, -1, 0, 0, 0, 0, 0], a.dtype)
    _eq(edge[f"floor_mod_{dt}"](a, b), [1, 1, -1, -1, 0, 0, 0, 0, 0], a.dtype)
    with np.errstate(all="ignore"):       # numpy agrees (with warnings)
        assert edge[f"floor_mod_{dt}"](a, b).tolist() == np.remainder(a, b).tolist()
        assert edge[f"mod_{dt}"](a, b).tolist() == np.fmod(a, b).tolist()


@pytest.mark.parametrize("dt", ("ui8", "ui32"))
def test_unsigned_division(edge, dt):
    npd = dt.replace("ui", "uint")
    top = int(np.iinfo(npd).max)
    a = np.array([7, top, 0, 5, top], npd)
    b = np.array([2, 0, 0, top, 2], npd)
    _eq(edge[f"divide_{dt}"](a, b), [3, 0, 0, 0, top // 2], npd)
    _eq(edge[f"floor_divide_{dt}"](a, b), [3, 0, 0, 0, top // 2], npd)
    _eq(edge[f"mod_{dt}"](a, b), [1, 0, 0, 5, 1], npd)
    _eq(edge[f"floor_mod_{dt}"](a, b), [1, 0, 0, 5, 1], npd)


def test_int_power_exact_and_negative_exponents(edge):
    a = np.array([2, 3, -2, 1, -1, -1, 0, 2, 5, 7], np.int32)
    b = np.array([10, 3, 3, -5, -3, -4, -2, 31, 0, 2], np.int32)
    _eq(edge["power_i32"](a, b), [1024, 27, -8, 1, -1, 1, 0, -2 ** 31, 1, 49], np.int32)
    _eq(edge["power_ui8"](np.array([3, 2, 255], np.uint8), np.array([5, 8, 2], np.uint8)), [243, 0, 1], np.uint8)


def test_bool_arithmetic_is_numpy_s(edge):
    """Regression: add on i1 acted as xor; comparisons ordered True < False."""
    x = np.array([True, True, False, False])
    y = np.array([True, False, True, False])
    _eq(edge["add_i1"](x, y), [True, True, True, False], np.bool_)
    _eq(edge["multiply_i1"](x, y), [True, False, False, False], np.bool_)
    _eq(edge["maximum_i1"](x, y), [True, True, True, False], np.bool_)
    _eq(edge["minimum_i1"](x, y), [True, False, False, False], np.bool_)
    _eq(edge["less_i1"](x, y), [False, False, True, False], np.bool_)
    _eq(edge["max_i1"](np.array([False, True, False])), True, np.bool_)


def test_unsigned_kernels(edge):
    """Regression: kernels on ui8/ui32 did not parse (arith takes signless types)."""
    _eq(edge["add_ui8"](np.array([200, 1], np.uint8), np.array([100, 2], np.uint8)), [44, 3], np.uint8)
    _eq(edge["greater_ui32"](np.array([2 ** 32 - 1, 1], np.uint32), np.array([1, 2], np.uint32)), [True, False],
        np.bool_)
    _eq(edge["max_ui8"](np.array([1, 255, 3], np.uint8)), 255, np.uint8)
    _eq(edge["argmax_ui8"](np.array([1, 255, 3, 255], np.uint8)), 1, np.int64)
    _eq(edge["relu_ui8"](np.array([0, 200], np.uint8)), [0, 200], np.uint8)
    _eq(edge["negative_ui8"](np.array([1, 0], np.uint8)), [255, 0], np.uint8)
    _eq(edge["sum_i8"](np.array([100, 100], np.int8)), -56, np.int8)


def test_casts(edge):
    """float -> int saturates (NaN -> 0) instead of LLVM poison; integer casts follow numpy."""
    f = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, -2.7, 2.7, 0.0], np.float32)
    _eq(edge["astype_f32_i32"](f), [0, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -2 ** 31, -2, 2, 0], np.int32)
    _eq(edge["astype_f32_i64"](f), [0, 2 ** 63 - 1, -2 ** 63, 3000000000, -3000000000, -2, 2, 0], np.int64)
    _eq(edge["astype_f32_ui8"](f), [0, 255, 0, 255, 0, 0, 2, 0], np.uint8)
    _eq(edge["astype_f32_i8"](np.array([127.9, -128.9, 200.0], np.float32)), [127, -128, 127], np.int8)
    _eq(edge["astype_f32_i1"](f), [True, True, True, True, True, True, True, False], np.bool_)
    _eq(edge["astype_ui8_f32"](np.array([255, 0], np.uint8)), [255.0, 0.0], np.float32)
    _eq(edge["astype_i8_ui8"](np.array([-1, 5], np.int8)), [255, 5], np.uint8)
    _eq(edge["astype_ui8_i32"](np.array([255, 5], np.uint8)), [255, 5], np.int32)
    _eq(edge["astype_ui32_f64"](np.array([2 ** 32 - 1], np.uint32)), [4294967295.0], np.float64)


def test_argmax_nan_is_first_nan(edge):
    """Regression: argmax/argmin disagreed with numpy when NaN is present."""
    x = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    _eq(edge["argmax_f32"](x), 1, np.int64)
    _eq(edge["argmin_f32"](x), 1, np.int64)
    _eq(edge["argmax_f32"](np.array([-np.inf, -np.inf], np.float32)), 0, np.int64)
    _eq(edge["argmin_f32"](np.array([5.0, -np.inf, -np.inf], np.float32)), 1, np.int64)
    rows = np.array([[1, 2], [np.nan, 0], [4, np.nan], [3, 3]], np.float32)
    _eq(edge["argmax_rows"](rows), [1, 0, 1, 0], np.int64)


def test_argmax_argmin_of_an_empty_axis_raise(edge):
    """Regression: argmax/argmin over an axis of size 0 at run time returned 0; numpy raises
    ValueError (attempt to get argmax of an empty sequence): a ShapeError (a ValueError)."""
    from relax_mlir import ShapeError
    for name in ("argmax_f32", "argmin_f32"):
        op = name[:6]
        with pytest.raises(ShapeError, match=rf"^@{name}: relax.assert at .*: relax.{op}: attempt to get {op} of an "
                                             r"empty sequence: the reduced size: 1 <= n does not hold with n = 0 "
                                             r"\(1 > 0\)$"):
            edge[name](np.zeros(0, np.float32))
        for n in (1, 5, 70):   # the same executable still runs every non-empty size
            x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
            _eq(edge[name](x), getattr(np, op)(x), np.int64)
    with pytest.raises(ShapeError, match=r"^@argmax_nk: relax.assert at .*: relax.argmax: attempt to get argmax of an "
                                         r"empty sequence: the length of axis 1: 1 <= k does not hold with n = 3, "
                                         r"k = 0 \(1 > 0\)$"):
        edge["argmax_nk"](np.zeros((3, 0), np.float32))
    _eq(edge["argmax_nk"](np.zeros((0, 4), np.float32)), [], np.int64)   # no rows: nothing to reduce
    x = np.random.default_rng(0).standard_normal((6, 9)).astype(np.float32)
    _eq(edge["argmax_nk"](x), np.argmax(x, axis=1), np.int64)


def test_take_out_of_range_raises_index_error(edge):
    """take (mode "check", the default) raises numpy's IndexError on an index outside
    [-d, d), naming the op, its location and the index; nothing is read (issue 26.6: it
    clamped silently); the same executable then runs in-range calls."""
    from relax_mlir import IndexOutOfRangeError
    x = np.array([10, 20, 30], np.float32)
    _eq(edge["take_f32"](x, np.array([-1, 2, -3, 0], np.int64)), [30, 30, 10, 10], np.float32)
    for bad, shown in (([0, 3], 3), ([-4, 1], -4), ([5, -7], -7), ([2**62], 2**62)):
        with pytest.raises(IndexOutOfRangeError, match=rf"^@take_f32: relax.take axis 0 at .*:\d+:\d+: index {shown} "
                                                       r"is out of range for a dim of size 3 \(indices must lie in "
                                                       r"\[-3, 3\)\) with k = 3, j = \d+$"):
            edge["take_f32"](x, np.array(bad, np.int64))
        with pytest.raises(IndexError):                      # what numpy raises
            np.take(x, np.array(bad, np.int64), mode="raise")
    with pytest.raises(IndexOutOfRangeError, match=r"index 200 is out of range for a dim of size 3 \(indices must "
                                                   r"lie in \[0, 3\)\)"):
        edge["take_ui8"](x, np.array([1, 200], np.uint8))
    _eq(edge["take_ui8"](x, np.array([2, 0], np.uint8)), [30, 10], np.float32)
    # an empty axis: any index is out of range (numpy: "cannot do a non-empty take from an empty axes")
    with pytest.raises(IndexOutOfRangeError, match="index 0 is out of range for a dim of size 0"):
        edge["take_f32"](np.zeros(0, np.float32), np.array([0], np.int64))
    _eq(edge["take_f32"](np.zeros(0, np.float32), np.zeros(0, np.int64)), [], np.float32)
    _eq(edge["take_f32"](x, np.array([1], np.int64)), [20], np.float32)


def test_take_clip_clamps_and_reads_nothing_from_an_empty_axis(edge):
    """mode "clip" (TVM's): out-of-range indices are clamped into the dim, no error.
    Regression: take on an empty axis read outside the buffer."""
    x = np.array([10, 20, 30], np.float32)
    _eq(edge["take_clip"](x, np.array([-1, 5, -7, 1], np.int64)), [30, 30, 10, 20], np.float32)
    _eq(edge["take_clip"](np.zeros(0, np.float32), np.array([0, 5, -1], np.int64)), [0, 0, 0], np.float32)
    _eq(edge["take_clip"](np.zeros(0, np.float32), np.zeros(0, np.int64)), [], np.float32)


def test_float_floor_divide_is_numpy_s(edge):
    a = np.array([1.0, 1.0, -1.0, 0.0, -0.5, 7.0], np.float32)
    b = np.array([0.1, 0.0, 0.0, 0.0, 1.0, -2.0], np.float32)
    got = edge["fdiv_f32"](a, b)
    with np.errstate(all="ignore"):
        want = np.floor_divide(a, b)
    assert got.tolist()[:3] == [9.0, math.inf, -math.inf] and math.isnan(got[3]) and got.tolist()[4:] == [-1.0, -4.0]
    assert np.array_equal(got, want, equal_nan=True)


def test_float_mod_is_numpy_s(edge):
    a = np.array([5.5, -5.5, 5.5, -5.5, 1.0, 0.0, -0.0, np.inf], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 0.0, -3.0, 3.0, 2.0], np.float32)
    with np.errstate(all="ignore"):
        want_floor, want_trunc = np.remainder(a, b), np.fmod(a, b)
    got = edge["fmod_f32"](a, b)
    assert got[:4].tolist() == [1.5, 0.5, -0.5, -1.5] and math.isnan(got[4]) and math.isnan(got[7])
    assert np.array_equal(got, want_floor, equal_nan=True)
    assert np.array_equal(np.signbit(got[5:7]), np.signbit(want_floor[5:7]))      # -0.0 vs 0.0 as numpy
    assert np.array_equal(edge["tmod_f32"](a, b), want_trunc, equal_nan=True)


def test_max_of_empty_is_lowest(edge):
    _eq(edge["max_empty"](np.zeros(0, np.float32)), -math.inf, np.float32)


def test_pow_times_x_keeps_nan():
    """Regression (fuzz program 32): reassoc on element-wise math let LLVM rewrite
    x * pow(x, x) to pow(x, x + 1): 0 instead of NaN at x = -inf."""
    src = f"""
func.func @main(%x: {_t("f32")}) -> {_t("f32")} attributes {{relax.function}} {{
  %0 = "relax.power"(%x, %x) : ({_t("f32")}, {_t("f32")}) -> {_t("f32")}
  %1 = "relax.multiply"(%x, %0) : ({_t("f32")}, {_t("f32")}) -> {_t("f32")}
  return %1 : {_t("f32")}
}}"""
    got = relax_mlir.compile(src)(np.array([-np.inf, 2.0], np.float32))
    assert math.isnan(got[0]) and got[1] == 8.0


@pytest.mark.parametrize("src,message", [
    (_fn("f", "subtract", [_t("i1"), _t("i1")], _t("i1")), "'relax.subtract' is not defined on i1"),
    (_fn("f", "negative", [_t("i1")], _t("i1")), "'relax.negative' is not defined on i1"),
    (_fn("f", "sum", [_t("i1")], "tensor<i1>"), r"'relax.sum' over i1 \(bool\) is not defined"),
    (_fn("f", "argmax", ["tensor<3x0xf32>"], "tensor<3xi64>", "axis = 1 : i64"),
     "'relax.argmax' of an empty sequence"),
    (_fn("f", "strided_slice", ["tensor<8xf32>"], "tensor<4xf32>",
         'axes = array<i64: 0, 0>, begin = #relax.shape<[0, 0]>, end = #relax.shape<[4, 4]>'),
     r"'relax.strided_slice' axes \[0, 0\] repeat an axis"),
    ('func.func @f() -> tensor<2xi8> attributes {relax.function} {\n  %0 = "relax.full"() '
     '{shape = #relax.shape<[2]>, value = 300.0 : f64, dtype = i8} : () -> tensor<2xi8>\n  return %0 : tensor<2xi8>\n}',
     r"value 300 is out of range for i8 \[-128, 127\]"),
    ('func.func @f() -> tensor<2xf16> attributes {relax.function} {\n  %0 = "relax.full"() '
     '{shape = #relax.shape<[2]>, value = 1.0e6 : f64, dtype = f16} : () -> tensor<2xf16>\n  return %0 : tensor<2xf16>\n}',
     r"value 1000000.0 overflows f16"),
])
def test_refused_at_compile_time(src, message):
    with pytest.raises(Exception, match=message):
        relax_mlir.compile(src)


def test_slices_of_statically_empty_tensors():
    """Regression (fuzz shape-program 113, 155): a kernel slicing a tensor with a static
    0 dim did not parse (upstream: 'offset 0 is out-of-bounds: 0 >= 0')."""
    e = 'tensor<0x?x4xf32, #relax.shape<[0, "n", 4]>>'
    n4 = 'tensor<?x4xf32, #relax.shape<["n", 4]>>'
    ops16 = "array<i32: 1, 1" + ", 0" * 14 + ">"
    res8 = "array<i32: 2" + ", 0" * 7 + ">"
    src = (_fn("ss", "strided_slice", [e], 'tensor<0x?x4xf32, #relax.shape<[0, "n - 1", 4]>>',
               'axes = array<i64: 1>, begin = #relax.shape<[1]>, end = #relax.shape<[2147483648]>')
           + _fn("cat", "concat", [n4, "tensor<0x4xf32>"], n4, f"axis = 0 : i64, operandSegmentSizes = {ops16}")
           + 'func.func @spl(%a: tensor<0x4xf32>) -> (tensor<0x2xf32>, tensor<0x2xf32>) attributes {relax.function} {\n'
           f'  %0:2 = "relax.split"(%a) {{sections = 2 : i64, axis = 1 : i64, resultSegmentSizes = {res8}}}'
           ' : (tensor<0x4xf32>) -> (tensor<0x2xf32>, tensor<0x2xf32>)\n'
           '  return %0#0, %0#1 : tensor<0x2xf32>, tensor<0x2xf32>\n}\n')
    exe = relax_mlir.compile(src)
    assert exe["ss"](np.zeros((0, 3, 4), np.float32)).shape == (0, 2, 4)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert exe["cat"](x, np.zeros((0, 4), np.float32)).tolist() == x.tolist()
    assert [a.shape for a in exe["spl"](np.zeros((0, 4), np.float32))] == [(0, 2), (0, 2)]


def test_power_of_a_broadcast_base_compiles_quickly():
    """Regression (fuzz program 7000029): int power as an unrolled square-and-multiply
    chain with a loop-invariant base kept LLVM's optimizer busy for minutes. Run in a
    subprocess with a time limit, so a regression fails instead of hanging the suite."""
    import subprocess
    t = 'tensor<?xi32, #relax.shape<["n"]>>'
    src = (f'func.func @main(%a: {t}, %b: tensor<1xi32>) -> {t} attributes {{relax.function}} {{\n'
           f'  %0 = "relax.power"(%b, %a) : (tensor<1xi32>, {t}) -> {t}\n  return %0 : {t}\n}}')
    code = ("import sys, numpy as np, relax_mlir\n"
            "exe = relax_mlir.compile(sys.stdin.read())\n"
            "print(exe(np.array([0, 1, 5, 31, 32, -1], np.int32), np.array([2], np.int32)).tolist())\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], input=src, capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.strip() == str([1, 2, 32, -2 ** 31, 0, 0]), out.stderr[-2000:]


@pytest.mark.parametrize("target", ["vulkan", "cuda"])
def test_take_out_of_range_on_gpu_targets(target):
    """Mode "check" on the GPU targets (docs/semantics.md): both check the indices after the
    call's synchronization (a snapshot copied in stream order) and raise the cpu's IndexError."""
    from relax_mlir.runtime import cuda, vulkan
    ok, why = (vulkan if target == "vulkan" else cuda).available()
    if not ok:
        pytest.skip(f"no {target} device: {why}")
    exe = relax_mlir.compile(_fn("take_f32", "take", [_t("f32", "k"), _t("i64", "j")], _t("f32", "j"),
                                 "axis = 0 : i64"), target=target)["take_f32"]
    x = np.array([10, 20, 30], np.float32)
    _eq(exe(x, np.array([2, -3], np.int64)), [30, 10], np.float32)
    try:
        got = exe(x, np.array([0, 5], np.int64))
    except IndexError as e:
        assert "index 5 is out of range for a dim of size 3" in str(e), e
        _eq(exe(x, np.array([1], np.int64)), [20], np.float32)   # the next call works normally
        return
    raise AssertionError(f"no IndexError on {target}: got {np.asarray(got).tolist()} (clamped)")
