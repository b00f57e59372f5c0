"""Random relax programs over the op set, dtypes and symbolic shapes, with a numpy
reference for their VALUES (test/test_random_programs.py checks only shapes).

One program = one graph function ``@main`` built with the typed builders from a seeded
random chain of ops. It is compiled once and called at several random sizes (0 and 1
included); every result is compared with the reference. About a third of the programs
carry ``relax.upper_bounds`` (small ones: a static arena; huge ones up to 2**62: the
capped arena, per-call allocation), and some reductions run over no axes (all loops
parallel: the fusion class of seed 13001370); a tenth of the parameters are 0-d. The reference is numpy with
the documented differences of docs/semantics.md applied (integer division by zero,
saturating float -> int casts, clamped take, reductions keeping the dtype, ...).

Floats: element-wise IEEE results may differ in rounding (fastmath contraction, fused
kernels, the exp polynomial, reduction order), so float results are compared with a
tolerance, widened where the result is ill-conditioned at the inputs: a mismatch is
re-checked against the result's sensitivity, how far it moves when every rounded value
before it moves by a few ulps (:func:`sensitivity`; cos of a large product). Ops whose result jumps with the last bit of a float (comparisons, float ->
int casts, argmax, floor/ceil/round, floor_divide) and ops that are ill-conditioned near 0
(log, sqrt, rsqrt, divide, power) only take float operands that are bit-exact: parameters, or values computed from them without rounding (max, abs, data
movement, ...), so that a difference there is a bug and not rounding.
"""

from __future__ import annotations

import math
import random
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32,
      "ui64": np.uint64, "i1": np.bool_}
FLOATS = ("f32", "f16", "f64")
DTYPES = ["f32"] * 5 + ["f16", "f64", "i32", "i32", "i8", "i16", "i64", "ui8", "ui16", "ui32", "ui64", "i1", "i1"]
SHAPES = [["n"], ["n", 3], ["n", "m"], [2, "m"], ["m", 1], [1, "n"], [3, "n", "m"], ["k", 2], [4],
          ["n", "m", 2], [2, 3], [0, "m"]]
SIZES = [0, 1, 1, 2, 3, 5, 7, 17]


def is_float(dt: str) -> bool:
    return dt in FLOATS


def is_uns(dt: str) -> bool:
    return dt.startswith("ui")


def lo_hi(dt: str):
    if dt == "i1":
        return 0, 1
    if is_float(dt):
        return -math.inf, math.inf
    info = np.iinfo(NP[dt])
    return int(info.min), int(info.max)


# -- reference semantics (numpy + docs/semantics.md) -------------------------------------------

def ref_binary(name: str, a: np.ndarray, b: np.ndarray, dt: str) -> np.ndarray:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
            return getattr(np, name)(a, b)
        if dt == "i1":
            return {"add": np.logical_or, "multiply": np.logical_and, "maximum": np.logical_or,
                    "minimum": np.logical_and}[name](a, b)
        if name in ("mod", "floor_mod"):
            f = np.fmod if name == "mod" else np.remainder
            if is_float(dt):
                return f(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype) if dt == "f16" else f(a, b)
            a, b = np.broadcast_arrays(a, b)
            bs = np.where(b == 0, 1, b).astype(a.dtype)
            return np.where(b == 0, 0, f(a, bs)).astype(a.dtype)
        if is_float(dt):
            if dt == "f16" and name in ("power", "floor_divide"):
                return getattr(np, name)(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
            return {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
                    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
                    "floor_divide": np.floor_divide}[name](a, b)
        a, b = np.broadcast_arrays(a, b)
        if name in ("add", "subtract", "multiply", "maximum", "minimum"):
            return getattr(np, name)(a, b)
        if name in ("divide", "floor_divide"):
            zero = b == 0
            bs = np.where(zero, 1, b).astype(a.dtype)
            q = np.floor_divide(a, bs)
            if name == "divide" and not is_uns(dt):      # truncate toward zero
                r = a - q * bs
                q = np.where((r != 0) & ((a < 0) != (bs < 0)), q + 1, q).astype(a.dtype)
            return np.where(zero, 0, q).astype(a.dtype)
        if name == "power":
            neg = (b < 0) if not is_uns(dt) else np.zeros(b.shape, bool)
            r = np.power(a, np.where(neg, 0, b).astype(b.dtype))
            if not is_uns(dt):
                odd = (b % 2) != 0
                nr = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
                r = np.where(neg, nr, r)
            return r.astype(a.dtype)
    raise ValueError(name)


def ref_astype(x: np.ndarray, frm: str, to: str) -> np.ndarray:
    if is_float(frm) and not is_float(to) and to != "i1":
        lo, hi = lo_hi(to)
        v = x.astype(np.float64)
        out = np.where(np.isnan(v), 0, np.trunc(np.clip(np.nan_to_num(v, nan=0.0), lo, hi)))
        # clip in float64 rounds 2**63 - 1 up; saturate in Python ints
        res = np.empty(x.shape, NP[to])
        flat = out.reshape(-1)
        res.reshape(-1)[:] = [min(max(int(f), lo), hi) for f in flat]
        return res
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return x.astype(NP[to])


def ref_unary(name: str, x: np.ndarray, dt: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if not is_float(dt):
            if name == "negative":
                return np.negative(x)
            if is_uns(dt) or dt == "i1":
                return x.copy()
            return np.abs(x) if name == "abs" else np.maximum(x, 0).astype(x.dtype)
        v = x.astype(np.float64)
        erf = np.vectorize(math.erf, otypes=[np.float64])
        f = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda t: 1 / np.sqrt(t),
             "tanh": np.tanh, "sigmoid": lambda t: 1 / (1 + np.exp(-t)), "negative": np.negative,
             "abs": np.abs, "relu": lambda t: np.maximum(t, 0), "silu": lambda t: t / (1 + np.exp(-t)),
             "gelu": lambda t: 0.5 * t * (1 + erf(t / math.sqrt(2))) if t.size else t,
             "sin": np.sin, "cos": np.cos, "erf": lambda t: erf(t) if t.size else t, "floor": np.floor,
             "ceil": np.ceil, "round": np.round}[name]
        return f(v).astype(x.dtype)


def ref_reduce(name: str, x: np.ndarray, dt: str, axes, keep: bool) -> np.ndarray:
    ax = None if axes is None else tuple(axes)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in ("sum", "prod", "mean"):
            acc = np.float64 if is_float(dt) else x.dtype
            f = {"sum": np.sum, "prod": np.prod, "mean": np.mean}[name]
            return np.asarray(f(x.astype(acc), axis=ax, keepdims=keep, dtype=acc)).astype(x.dtype)
        lo, hi = lo_hi(dt)
        init = (lo if name == "max" else hi)
        if dt == "i1":
            init = bool(init)
        f = np.max if name == "max" else np.min
        return np.asarray(f(x, axis=ax, keepdims=keep, initial=init)).astype(x.dtype)


def ref_arg(name: str, x: np.ndarray, axis, keep: bool) -> np.ndarray:
    f = np.argmax if name == "argmax" else np.argmin
    if axis is None:   # numpy raises ValueError on an empty sequence, as relax does (a ShapeError)
        r = np.int64(f(x))
        return np.full([1] * x.ndim, r, np.int64) if keep else np.asarray(r, np.int64)
    return np.asarray(f(x, axis=axis, keepdims=keep), np.int64)


class TakeOutOfRange(Exception):
    """The reference of a take in mode "check" met an index outside [-d, d): the compiled
    program must raise relax_mlir.IndexOutOfRangeError (an IndexError) there."""


#: whether take's mode "check" raises on the target run (cpu, vulkan); the cuda target clamps
#: unchecked (docs/semantics.md), so their reference clamps too
TAKE_CHECKED = [True]


def ref_take(x: np.ndarray, idx: np.ndarray, axis: int, mode: str = "clip") -> np.ndarray:
    d = x.shape[axis]
    shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    if mode == "check" and TAKE_CHECKED[0] and idx.size:
        wide = idx.astype(np.int64) if idx.dtype != np.uint64 else idx
        if (wide.min() < -d if idx.dtype.kind == "i" else False) or int(idx.max()) >= d:
            raise TakeOutOfRange(f"take: an index of {idx.reshape(-1)[:8].tolist()} is outside [-{d}, {d})")
    if d == 0:
        return np.zeros(shape, x.dtype)
    i = idx.astype(np.int64)
    i = np.where(i < 0, i + d, i)
    return np.take(x, np.clip(i, 0, d - 1), axis=axis)


def ref_softmax(name: str, x: np.ndarray, axis: int) -> np.ndarray:
    v = x.astype(np.float64)
    if v.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        m = np.max(v, axis=axis, keepdims=True)
        e = np.exp(v - m)
        s = np.sum(e, axis=axis, keepdims=True)
        r = e / s if name == "softmax" else v - m - np.log(s)
    return r.astype(x.dtype)


def ref_norm(kind: str, x: np.ndarray, g: np.ndarray, b, eps: float = 1e-5) -> np.ndarray:
    # in the op's compute type (docs/semantics.md: f64 for f64, else f32, as PyTorch): the
    # mean of squares of -1e30 overflows f32 to inf and the result is -0.0, where float64
    # said -1.0 (long fuzz program seed 44001398, a false mismatch)
    v = x.astype(np.float64 if x.dtype == np.float64 else np.float32)
    g = g.astype(v.dtype)
    b = None if b is None else b.astype(v.dtype)
    with np.errstate(all="ignore"):
        if kind == "rms":
            r = v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + eps) * g
        else:
            mu = np.mean(v, axis=-1, keepdims=True)
            var = np.mean((v - mu) ** 2, axis=-1, keepdims=True)
            r = (v - mu) / np.sqrt(var + eps) * g + b
    return r.astype(x.dtype)


def ref_matmul(a: np.ndarray, b: np.ndarray, dt: str) -> np.ndarray:
    if is_float(dt):
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    if dt == "i1":
        return np.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
    with np.errstate(all="ignore"):
        return np.matmul(a.astype(np.uint64), b.astype(np.uint64)).astype(a.dtype)


# -- program generation -----------------------------------------------------------------------

@dataclass
class Node:
    value: object            # ir.Value
    dtype: str
    shape: list              # symbolic dims as written (int or str)
    compute: Optional[Callable] = None
    inputs: list = field(default_factory=list)
    index: int = 0
    exact: bool = True       # bit-exact against the reference (see module docstring)
    param: Optional[int] = None
    op: str = "param"
    #: the coarsest float dtype the value went through (an f32 result cast to f64 carries
    #: f32's rounding: compared with f32's tolerance; long fuzz program seed 41000812, a
    #: false mismatch of layer_norm -> astype f64)
    precision: Optional[str] = None


#: float ops that never round: their results of exact operands are exact
#: float ops whose relative error is unbounded near a zero operand (a rounded value that
#: should be 0, e.g. layer_norm of a row of 2, gives rsqrt ~1e3 +- 0.5 %): like the
#: discontinuous ops, they only take bit-exact float operands (found by the long fuzz,
#: program seed 11000173, a false mismatch)
ILL_CONDITIONED = ("log", "sqrt", "rsqrt", "divide", "power")   # and rms_norm, layer_norm (op_norm)
EXACT_FLOAT = {"negative", "abs", "relu", "maximum", "minimum", "where", "floor", "ceil", "round", "astype"}
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum", "mod", "floor_mod"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
UNARY_F = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "negative", "abs", "relu", "silu", "gelu",
           "sin", "cos", "erf", "floor", "ceil", "round"]
UNARY_I = ["negative", "abs", "relu"]


class ProgramGen:
    """Builds one random program into an open graph function (see :func:`build`)."""

    def __init__(self, r: random.Random, relax, sig_of, r2: Optional[random.Random] = None):
        self.r = r
        #: draws added after seeds were recorded (so older seeds keep their programs)
        self.r2 = r2 or random.Random(0)
        self.relax = relax
        self.sig_of = sig_of             # ir.Value -> (shape list, dtype)
        self.nodes: list[Node] = []
        self.ops: list[str] = []
        self.refused = 0

    def node(self, value, op, compute, inputs, exact) -> Node:
        shape, dt = self.sig_of(value)
        n = Node(value, dt, shape, compute, list(inputs), 0, exact, op=op,
                 precision=coarsest([dt] + [i.precision or i.dtype for i in inputs]))
        self.nodes.append(n)
        self.ops.append(op)
        return n

    def pick(self, pred=lambda n: True) -> Optional[Node]:
        c = [n for n in self.nodes if pred(n)]
        if not c:
            return None
        return c[-1] if self.r.random() < 0.35 else self.r.choice(c)

    def try_op(self, kind: str) -> None:
        from relax_mlir.ops.registry import RelaxError
        try:
            getattr(self, "op_" + kind)()
        except RelaxError:              # a combination the shape rules refuse is fine
            self.refused += 1

    # ops ---------------------------------------------------------------------------------
    def same_shape_partner(self, x: Node, pred=lambda n: True) -> Node:
        y = self.pick(lambda n: n.dtype == x.dtype and n.shape == x.shape and n is not x and pred(n))
        if y is None and self.r.random() < 0.5:
            y = self.pick(lambda n: n.dtype == x.dtype and _bcast(x.shape, n.shape) and pred(n))
        return y or x

    def op_binary(self):
        x = self.pick(lambda n: n.dtype != "i1" or self.r.random() < 0.5)
        name = self.r.choice(BINARY)
        if x.dtype == "i1":
            name = self.r.choice(["add", "multiply", "maximum", "minimum"])
        disc = is_float(x.dtype) and name in ("floor_divide", "mod", "floor_mod") + ILL_CONDITIONED
        if disc and not x.exact:
            x = self.pick(lambda n: n.exact and is_float(n.dtype)) or x
            if not x.exact:
                name = "add"
        y = self.same_shape_partner(x, (lambda n: n.exact) if disc else (lambda n: True))
        if self.r.random() < 0.5:
            x, y = y, x
        v = getattr(self.relax, name)(x.value, y.value)
        exact = x.exact and y.exact and (not is_float(x.dtype) or name in EXACT_FLOAT)
        self.node(v, name, lambda a, b, nm=name, dt=x.dtype: ref_binary(nm, a, b, dt), [x, y], exact)

    def op_compare(self):
        x = self.pick(lambda n: n.exact)
        y = self.same_shape_partner(x, lambda n: n.exact)
        name = self.r.choice(COMPARE)
        v = getattr(self.relax, name)(x.value, y.value)
        self.node(v, name, lambda a, b, nm=name: ref_binary(nm, a, b, "i1"), [x, y], True)

    def op_where(self):
        c = self.pick(lambda n: n.dtype == "i1" and n.exact)
        if c is None:
            return self.op_compare()
        x = self.pick(lambda n: _bcast(c.shape, n.shape))
        if x is None:
            return
        y = self.same_shape_partner(x, lambda n: _bcast(c.shape, n.shape))
        v = self.relax.where(c.value, x.value, y.value)
        self.node(v, "where", lambda cc, a, b: np.where(cc, a, b), [c, x, y], x.exact and y.exact)

    def op_unary(self):
        x = self.pick(lambda n: n.dtype != "i1")
        if x is None:
            return
        name = self.r.choice(UNARY_F if is_float(x.dtype) else UNARY_I)
        if name in ("floor", "ceil", "round") + ILL_CONDITIONED and not x.exact:
            name = "exp"
        v = getattr(self.relax, name)(x.value)
        exact = x.exact and (not is_float(x.dtype) or name in EXACT_FLOAT)
        self.node(v, name, lambda a, nm=name, dt=x.dtype: ref_unary(nm, a, dt), [x], exact)

    def op_astype(self):
        x = self.pick()
        to = self.r.choice(DTYPES)
        if is_float(x.dtype) and not is_float(to) and not x.exact:
            x = self.pick(lambda n: n.exact) or x
            if not x.exact:
                to = "f32"
        v = self.relax.astype(x.value, dtype=to)
        # IEEE conversions round correctly in numpy and LLVM alike: exact in, exact out
        exact = x.exact
        self.node(v, "astype", lambda a, f=x.dtype, t=to: ref_astype(a, f, t), [x], exact)

    def op_reduce(self):
        x = self.pick(lambda n: n.dtype != "i1" or self.r.random() < 0.3)
        name = self.r.choice(["sum", "prod", "max", "min", "mean"])
        if name == "mean" and not is_float(x.dtype):
            name = "max"
        if x.dtype == "i1" and name in ("sum", "prod"):
            name = "max"
        rank = len(x.shape)
        axes = None if rank == 0 or self.r.random() < 0.25 else sorted(self.r.sample(range(rank), self.r.randint(1, rank)))
        keep = self.r.random() < 0.4
        if self.r2.random() < 0.15:   # over no axes: all loops parallel, the init read (seed 13001370)
            axes = []
        v = getattr(self.relax, name)(x.value, axes=axes, keepdims=keep)
        exact = x.exact and (not is_float(x.dtype) or name in ("max", "min"))
        self.node(v, name, lambda a, nm=name, dt=x.dtype, ax=axes, k=keep: ref_reduce(nm, a, dt, ax, k), [x], exact)

    def op_arg(self):
        x = self.pick(lambda n: n.exact and all(isinstance(d, str) or d > 0 for d in n.shape))
        if x is None:
            return
        name = self.r.choice(["argmax", "argmin"])
        axis = None if not x.shape or self.r.random() < 0.3 else self.r.randrange(len(x.shape))
        keep = self.r.random() < 0.3
        v = getattr(self.relax, name)(x.value, axis=axis, keepdims=keep)
        self.node(v, name, lambda a, nm=name, ax=axis, k=keep: ref_arg(nm, a, ax, k), [x], True)

    def op_softmax(self):
        x = self.pick(lambda n: is_float(n.dtype) and n.shape)
        if x is None:
            return
        name = self.r.choice(["softmax", "log_softmax"])
        axis = self.r.randrange(-len(x.shape), len(x.shape))
        v = getattr(self.relax, name)(x.value, axis=axis)
        self.node(v, name, lambda a, nm=name, ax=axis: ref_softmax(nm, a, ax), [x], False)

    def op_matmul(self):
        x = self.pick(lambda n: len(n.shape) in (1, 2))
        if x is None:
            return
        k = x.shape[-1]
        y = self.pick(lambda n: n.dtype == x.dtype and len(n.shape) in (1, 2) and n.shape[0] == k)
        if y is None:
            y_v = self.relax.permute_dims(x.value) if len(x.shape) == 2 else x.value
            y = self.node(y_v, "permute_dims", lambda a: a.T.copy(), [x], x.exact) if len(x.shape) == 2 else x
        v = self.relax.matmul(x.value, y.value)
        self.node(v, "matmul", lambda a, b, dt=x.dtype: ref_matmul(a, b, dt), [x, y],
                  not is_float(x.dtype) and x.exact and y.exact)

    def op_take(self):
        x = self.pick(lambda n: len(n.shape) >= 1)
        idx = self.pick(lambda n: n.dtype in ("i32", "i64", "i8", "ui8") and n.exact and len(n.shape) <= 2)
        if x is None or idx is None:
            return
        axis = self.r.randrange(len(x.shape))
        # the default mode raises on an index out of range (the random indices often are):
        # half the takes check (their reference raises TakeOutOfRange), half clamp
        mode = "check" if self.r2.random() < 0.5 else "clip"
        v = self.relax.take(x.value, idx.value, axis=axis, **({} if mode == "check" else {"mode": mode}))
        self.node(v, "take", lambda a, i, ax=axis, m=mode: ref_take(a, i, ax, m), [x, idx], x.exact)

    def op_move(self):
        x = self.pick(lambda n: len(n.shape) >= 1)
        kind = self.r.choice(["permute", "flatten", "expand", "slice", "concat", "tri", "broadcast"])
        rank = len(x.shape)
        if kind == "permute":
            perm = list(range(rank))
            self.r.shuffle(perm)
            v = self.relax.permute_dims(x.value, axes=perm)
            self.node(v, "permute_dims", lambda a, p=tuple(perm): np.transpose(a, p).copy(), [x], x.exact)
        elif kind == "flatten":
            v = self.relax.flatten(x.value)
            self.node(v, "flatten", lambda a: a.reshape(-1).copy(), [x], x.exact)
        elif kind == "expand":
            ax = self.r.randrange(rank + 1)
            v = self.relax.expand_dims(x.value, axis=[ax])
            e = self.node(v, "expand_dims", lambda a, ax=ax: np.expand_dims(a, ax).copy(), [x], x.exact)
            v = self.relax.squeeze(e.value, axis=[ax])
            self.node(v, "squeeze", lambda a, ax=ax: np.squeeze(a, ax).copy(), [e], x.exact)
        elif kind == "slice":
            a = self.r.randrange(rank)
            b, en, s = self.r.choice([(0, 2 ** 31, 1), (1, 2 ** 31, 1), (0, 2 ** 31, 2), (-2, 2 ** 31, 1), (1, -1, 1)])
            v = self.relax.strided_slice(x.value, axes=[a], begin=[b], end=[en], strides=[s])
            self.node(v, "strided_slice", lambda t, a=a, b=b, e=en, s=s: _slice1(t, a, b, e, s), [x], x.exact)
        elif kind == "concat":
            a = self.r.randrange(rank)
            ys = [n for n in self.nodes if n.dtype == x.dtype and len(n.shape) == rank
                  and all(i == a or n.shape[i] == x.shape[i] for i in range(rank))]
            parts = [x, self.r.choice(ys)]
            v = self.relax.concat([p.value for p in parts], axis=a)
            self.node(v, "concat", lambda *t, a=a: np.concatenate(t, axis=a), parts, all(p.exact for p in parts))
        elif kind == "tri" and rank >= 2:
            name = self.r.choice(["tril", "triu"])
            k = self.r.randint(-1, 1)
            v = getattr(self.relax, name)(x.value, k=k)
            self.node(v, name, lambda t, nm=name, k=k: getattr(np, nm)(t, k), [x], x.exact)
        else:
            target = [self.r.choice(["n", 2] if "n" in self.bound else [2])] + list(x.shape)
            v = self.relax.broadcast_to(x.value, shape=target)
            self.node(v, "broadcast_to", lambda t, sh=tuple(target): np.broadcast_to(t, _eval(sh)).copy(), [x], x.exact)

    def op_split(self):
        x = self.pick(lambda n: len(n.shape) >= 1)
        axis = self.r.randrange(len(x.shape))
        d = x.shape[axis]
        if isinstance(d, int) and d % 2 == 0 and self.r.random() < 0.5:
            vals = self.relax.split(x.value, sections=2, axis=axis)
            fn = lambda a, ax=axis: np.split(a, 2, axis=ax)
        else:
            vals = self.relax.split(x.value, indices=[1], axis=axis)
            fn = lambda a, ax=axis: np.split(a, [1], axis=ax)
        vals = list(vals) if not hasattr(vals, "type") else [vals]
        for i, v in enumerate(vals):
            n = self.node(v, "split", lambda a, fn=fn, i=i: fn(a)[i].copy(), [x], x.exact)
            n.index = 0

    def op_reshape(self):
        x = self.pick(lambda n: len(n.shape) >= 2)
        if x is None:
            return
        flat = self.relax.flatten(x.value)
        f = self.node(flat, "flatten", lambda a: a.reshape(-1).copy(), [x], x.exact)
        shape = list(x.shape)
        if self.r.random() < 0.5:
            shape[self.r.randrange(len(shape))] = -1
        v = self.relax.reshape(f.value, shape=shape)
        self.node(v, "reshape", lambda a, sh=tuple(x.shape): a.reshape(_eval(sh)).copy(), [f], x.exact)

    def op_norm(self):
        # bit-exact operands only: a row whose values are ~0 is divided by ~sqrt(eps), which
        # amplifies rounding errors 316 times (gelu(-5) = -1.43e-6 is -1.49e-6 in f32, 4 %
        # off like PyTorch's; after rms_norm and a matmul a whole result was 4 % off: long
        # fuzz program seed 33000057, a false mismatch)
        x = self.pick(lambda n: is_float(n.dtype) and n.exact and n.shape
                      and (isinstance(n.shape[-1], int) or n.shape[-1] in self.bound))
        if x is None:
            return
        d = x.shape[-1]
        wv = float(self.r.choice([1.0, 0.5, -2.0]))
        w = self.relax.full(shape=[d], value=wv, dtype=x.dtype)
        wn = self.node(w, "full", lambda sh=(d,), dt=x.dtype, val=wv: np.full(_eval(sh), val, NP[dt]), [], True)
        if self.r.random() < 0.5:
            v = self.relax.rms_norm(x.value, wn.value, axes=[-1])
            self.node(v, "rms_norm", lambda a, g: ref_norm("rms", a, g, None), [x, wn], False)
        else:
            v = self.relax.layer_norm(x.value, wn.value, wn.value, axes=[-1])
            self.node(v, "layer_norm", lambda a, g: ref_norm("layer", a, g, g), [x, wn], False)

    def op_create(self):
        dt = self.r.choice(DTYPES)
        shape = self.r.choice([["n"], ["n", 2], [3], ["m", "n"]])
        kind = self.r.choice(["zeros", "ones", "full", "arange"])
        if not {d for d in shape if isinstance(d, str)} <= self.bound or (kind == "arange" and "n" not in self.bound):
            return
        if kind == "arange":
            v = self.relax.arange(end="n", dtype=dt if dt != "i1" else "i64")
            self.node(v, "arange", lambda dt=dt: np.arange(_eval(("n",))[0]).astype(NP[dt if dt != "i1" else "i64"]),
                      [], True)
            return
        if kind == "full":
            lo, hi = lo_hi(dt)
            val = float(self.r.choice([0, 1, -1, 2.5, lo if lo > -1e30 else -1e30, hi if hi < 1e30 else 7.0]))
            if not is_float(dt) and not lo <= math.trunc(val) <= hi:
                val = 1.0
            v = self.relax.full(shape=shape, value=val, dtype=dt)
            self.node(v, "full", lambda dt=dt, sh=tuple(shape), val=val: np.full(_eval(sh), _fill(val, dt), NP[dt]),
                      [], True)
            return
        v = getattr(self.relax, kind)(shape=shape, dtype=dt)
        self.node(v, kind, lambda dt=dt, sh=tuple(shape), k=kind: (np.zeros if k == "zeros" else np.ones)(_eval(sh), NP[dt]),
                  [], True)


def _fill(val: float, dt: str):
    return val if is_float(dt) else (bool(val) if dt == "i1" else int(math.trunc(val)))


def _widens(frm: str, to: str) -> bool:
    return frm == to or (frm == "f16" and to in ("f32", "f64")) or (frm == "f32" and to == "f64")


def _int_fits(frm: str, to: str) -> bool:
    """int -> float exact (the int fits the float's mantissa)."""
    bits = {"f16": 11, "f32": 24, "f64": 53}[to]
    w = 1 if frm == "i1" else int(frm.lstrip("ui"))
    return w <= bits


def _bcast(a, b) -> bool:
    for x, y in zip(reversed(a), reversed(b)):
        if x == 1 or y == 1 or x == y:
            continue
        return False
    return True


def _slice1(t, a, b, e, s):
    sl = [slice(None)] * t.ndim
    sl[a] = slice(b, e, s)
    return t[tuple(sl)].copy()


ENV: dict = {}


def _eval(shape) -> tuple:
    out = []
    for d in shape:
        out.append(d if isinstance(d, int) else int(eval(d, {}, dict(ENV))))
    return tuple(out)


OPS = ["binary"] * 4 + ["compare", "where", "unary", "unary", "astype", "astype", "reduce", "reduce",
                        "arg", "softmax", "matmul", "take", "move", "move", "create", "split", "reshape", "norm"]


def build(seed: int, n_ops: int = 12):
    """(module text, params [(shape, dtype)], nodes, results) of program ``seed``."""
    import relax_mlir
    from mlir import ir
    from relax_mlir.dialects import relax
    from relax_mlir.frontend.builder import graph_function
    from relax_mlir.shapes import read_tensor_type

    def sig_of(v):
        s = read_tensor_type(v.type)
        return [d.value if d.is_static else str(d) for d in s.shape], str(s.dtype)

    r = random.Random(seed)
    r2 = random.Random(seed * 7919 + 1)
    # relax.upper_bounds: small ones (a static arena), huge ones (capped arena, per-call allocation)
    bounds = {}
    if r2.random() < 0.3:
        bounds = {s: r2.choice([17, 100, 2**31, 2**40, 2**62]) for s in ("n", "m", "k") if r2.random() < 0.7}
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        nparams = r.randint(2, 4)
        specs = []
        for i in range(nparams):
            shape = r.choice(SHAPES)
            specs.append((f"x{i}", [] if r2.random() < 0.1 else shape, r.choice(DTYPES)))
        specs.append(("idx", r.choice([["k"], ["n"], [3], ["n", 2]]), r.choice(["i64", "i32", "i8"])))
        g = ProgramGen(r, relax, sig_of, r2)
        used = {d for sp in specs for d in sp[1] if isinstance(d, str)}
        bounds = {k: v for k, v in bounds.items() if k in used}
        with graph_function(module, "main", specs, upper_bounds=bounds or None) as fn:
            for i, p in enumerate(fn.params):
                g.nodes.append(Node(p, specs[i][2], list(specs[i][1]), param=i))
            g.bound = {d for s in specs for d in s[1] if isinstance(d, str) and d.isidentifier()}
            for _ in range(n_ops):
                g.try_op(r.choice(OPS))
            outs = [n for n in g.nodes if n.param is None][-3:] or [g.nodes[0]]
            fn.ret(*[n.value for n in outs])
        text = str(module)
    return text, [(s[1], s[2]) for s in specs], g.nodes, outs


def random_array(rng: np.random.Generator, shape, dt: str) -> np.ndarray:
    if dt == "i1":
        return rng.random(shape) < 0.5
    if is_float(dt):
        a = rng.standard_normal(shape) * 3
        special = rng.random(shape) < 0.08
        a = np.where(special, rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, 2.0], shape), a)
        return a.astype(NP[dt])
    lo, hi = lo_hi(dt)
    a = rng.integers(max(lo, -6), min(hi, 6) + 1, shape, dtype=np.int64)
    special = rng.random(shape) < 0.12
    a = np.where(special, rng.choice([lo, hi, 0, -1 if lo < 0 else 1], shape), a)
    return a.astype(NP[dt])


def live(outs) -> set:
    """ids of the nodes the results depend on: a take whose result is unused is removed
    (relax-dce) with its index check, so only a live one must raise."""
    seen, todo = set(), list(outs)
    while todo:
        n = todo.pop()
        if id(n) not in seen:
            seen.add(id(n))
            todo += n.inputs
    return seen


def reference(nodes, arrays, perturb: Optional[np.random.Generator] = None, alive: Optional[set] = None) -> dict:
    """Every node's value. ``perturb``: move each rounded float value (a node not
    bit-exact) by ``PERTURB_ULPS`` units of its precision, up or down at random, before
    later nodes read it (see :func:`sensitivity`). ``alive`` (:func:`live`): only those
    nodes' takes raise TakeOutOfRange."""
    vals = {}
    for n in nodes:
        if n.param is not None:
            vals[id(n)] = arrays[n.param]
            continue
        checked = TAKE_CHECKED[0]
        TAKE_CHECKED[0] = checked and (alive is None or id(n) in alive)
        try:
            v = np.asarray(n.compute(*[vals[id(i)] for i in n.inputs]))
        finally:
            TAKE_CHECKED[0] = checked
        if perturb is not None and not n.exact and is_float(n.dtype) and v.size:
            eps = float(np.finfo(NP[coarsest([n.dtype, n.precision or n.dtype])]).eps)
            sign = perturb.choice([-1.0, 1.0], v.shape)
            with np.errstate(all="ignore"):
                v = (v.astype(np.float64) * (1 + sign * PERTURB_ULPS * eps)).astype(v.dtype)
        vals[id(n)] = v
    return vals


#: how far :func:`sensitivity` moves each rounded value, in units of its precision's eps:
#: about what one f32 op of the compiled code may differ by (fastmath contraction, the exp
#: polynomial, another summation order)
PERTURB_ULPS = 4
#: a mismatch within this many times the sensitivity is rounding, not a bug
SENSITIVITY_SLACK = 4.0


def sensitivity(nodes, arrays, want: dict, out: "Node", seed: int, runs: int = 2) -> np.ndarray:
    """How much ``out`` moves when every rounded float value before it moves by a few
    ulps (the largest change over ``runs`` random perturbations, per element; inf where a
    perturbation makes a finite value non-finite): the condition of the computation at
    these inputs. A well-conditioned result moves by ulps, cos of a product of 105 terms
    near 3e4 by 0.1 (long fuzz program seed 1001362: the compiled product was closer to
    the exact one than the f32 reference, the cosines still differed by 0.066)."""
    w = want[id(out)].astype(np.float64)
    worst = np.zeros(w.shape)
    for k in range(runs):
        p = reference(nodes, arrays, perturb=np.random.default_rng([seed, k]), alive=set())[id(out)].astype(np.float64)
        with np.errstate(all="ignore"):
            d = np.where(np.isfinite(w) & ~np.isfinite(p), np.inf, np.abs(p - w))
        worst = np.fmax(worst, d)
    return worst


#: float dtypes from the coarsest
_PRECISION = ("f16", "f32", "f64")


def coarsest(dtypes) -> Optional[str]:
    """The least precise float dtype among ``dtypes`` (None when there is none)."""
    floats = [d for d in dtypes if d in _PRECISION]
    return min(floats, key=_PRECISION.index) if floats else None


def compare(got: np.ndarray, want: np.ndarray, dt: str, exact: bool,
            precision: Optional[str] = None, sens: Optional[np.ndarray] = None) -> Optional[str]:
    """``precision``: the coarsest float dtype the value went through (its tolerance);
    ``sens``: the result's :func:`sensitivity` per element, allowed ``SENSITIVITY_SLACK``
    times on top of the tolerance (an ill-conditioned value is compared as loosely as
    rounding makes it uncertain, a well-conditioned one as before)."""
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if not is_float(dt) or exact:
        if is_float(dt):
            same = (got == want) | (np.isnan(got) & np.isnan(want))
        else:
            same = got == want
        if not same.all():
            i = np.argwhere(~same)[0]
            return f"at {tuple(i)}: got {got[tuple(i)]!r}, want {want[tuple(i)]!r}"
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_ok = np.isnan(g) == np.isnan(w)
    inf_ok = np.where(np.isinf(w) | np.isinf(g), g == w, True)
    tol = {"f16": 2e-2, "f32": 2e-3, "f64": 1e-6}[coarsest([dt, precision or dt])]
    fin = np.isfinite(g) & np.isfinite(w)
    scale = np.max(np.abs(w[np.isfinite(w)]), initial=1.0)
    slack = 0.0 if sens is None else SENSITIVITY_SLACK * sens
    close = np.where(fin, np.abs(g - w) <= tol * (np.abs(w) + 1e-2 * scale + tol) + slack, True)
    ok = nan_ok & inf_ok & close
    if not ok.all():
        i = tuple(np.argwhere(~ok)[0])
        extra = "" if sens is None else f" (sensitivity to rounding {sens[i]:.3g})"
        return f"at {i}: got {got[i]!r}, want {want[i]!r}{extra}"
    return None


def run_program(seed: int, n_sizes: int = 3, target: str = "cpu") -> dict:
    """Compile program ``seed`` once for ``target`` and check it at ``n_sizes`` random sizes.

    Returns {"calls": int, "skipped": int, "error": str or None, "ops": [...]}; on the
    vulkan target without a Vulkan device {"calls": 0, "skip": reason}."""
    import relax_mlir
    from relax_mlir.errors import CompileError, IndexOutOfRangeError, ShapeError

    if target == "vulkan":
        from relax_mlir.runtime import vulkan as vkrt
        ok, device = vkrt.available()
        if not ok:
            return {"calls": 0, "skipped": 0, "error": None, "skip": f"no Vulkan device: {device}"}
    text, params, nodes, outs = build(seed, n_ops=8 + seed % 13)
    ops = [n.op for n in nodes if n.param is None]
    from worker import record
    record(text)
    try:
        exe = relax_mlir.compile(text, target=target)
    except CompileError as e:
        msg = str(e)
        if "internal error" in msg or "Traceback" in msg:
            return {"calls": 0, "skipped": 0, "error": f"compile: internal error: {msg[:2000]}\n{text}", "ops": ops}
        return {"calls": 0, "skipped": 0, "error": f"compile refused a program its shape rules accepted: {msg[:2000]}\n{text}",
                "ops": ops}
    except Exception as e:       # InternalCompilerError (a RuntimeError) and anything else: a bug
        return {"calls": 0, "skipped": 0, "ops": ops,
                "error": f"compile raised {type(e).__name__}: {str(e)[:2000]}\n{text}"}
    calls = skipped = raised = 0
    TAKE_CHECKED[0] = target in ("cpu", "vulkan")   # cuda clamps unchecked (docs/semantics.md)
    alive = live(outs)
    for arrays in inputs(seed, params, n_sizes):
        try:
            want = reference(nodes, arrays, alive=alive)
        except (ValueError, IndexError):
            skipped += 1            # numpy refuses these sizes (a broadcast against 0, ...)
            continue
        except TakeOutOfRange as e:   # the program must raise IndexOutOfRangeError
            try:
                got = exe(*arrays)
            except ShapeError:        # an earlier shape check failed first
                skipped += 1
                continue
            except IndexOutOfRangeError as e2:
                if "relax.take" not in str(e2):
                    return {"calls": calls, "skipped": skipped, "ops": ops,
                            "error": f"at {dict(ENV)}: the IndexError does not name relax.take: {e2}\n{text}"}
                calls += 1
                raised += 1
                continue
            return {"calls": calls, "skipped": skipped, "ops": ops,
                    "error": f"at {dict(ENV)}: no IndexError ({e})\n{text}"}
        try:
            got = exe(*arrays)
        except ShapeError:
            skipped += 1
            continue
        calls += 1
        got = got if isinstance(got, (list, tuple)) else [got]
        for i, (o, gv) in enumerate(zip(outs, got)):
            err = compare(np.asarray(gv), want[id(o)], o.dtype, o.exact, o.precision)
            if err and is_float(o.dtype) and not o.exact:   # rounding, amplified? (seed 1001362)
                sens = sensitivity(nodes, arrays, want, o, seed)
                err = compare(np.asarray(gv), want[id(o)], o.dtype, o.exact, o.precision, sens)
            if err:
                chain = " <- ".join(n.op for n in _chain(o))
                return {"calls": calls, "skipped": skipped, "ops": ops,
                        "error": f"result #{i} ({o.op} {o.dtype}, {chain}) at {dict(ENV)}: {err}\n{text}"}
    return {"calls": calls, "skipped": skipped, "error": None, "ops": ops, "index_errors": raised}


def inputs(seed: int, params, n_sizes: int):
    """The argument lists program ``seed`` is called with, one per size (``ENV`` set to
    the size's symbols while its list is in use)."""
    rng = np.random.default_rng(seed)
    r = random.Random(seed)
    for _ in range(n_sizes):
        ENV.clear()
        ENV.update({s: r.choice(SIZES) for s in ("n", "m", "k")})
        yield [random_array(rng, _eval(tuple(s)), dt) for s, dt in params]


def _chain(n: Node, depth: int = 6) -> list:
    out = [n]
    while n.inputs and len(out) < depth:
        n = n.inputs[0]
        out.append(n)
    return out
