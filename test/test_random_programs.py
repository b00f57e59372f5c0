"""Seeded random programs: symbolic shape deduction agrees with numpy.

Each program is one graph function with symbolic parameter shapes, built with
the Python builders from a random chain of ops (broadcasting binary ops, unary
ops, matmul, reshape, permute_dims, expand_dims, squeeze, flatten, concat,
split, strided_slice, take, reductions, softmax, where, broadcast_to). After
relax-infer-shapes, for random assignments of the symbols, the same chain runs
in numpy on dummy arrays, and every op's numpy result shape must equal the
deduced symbolic shape evaluated at that assignment. Assignments under which a
generated ``relax.assert`` fails are skipped (the program would stop there); if
numpy itself rejects an assignment that every assert accepts, that is a missing
check and fails the test.
"""

from __future__ import annotations

import os
import random
import sys
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend.builder import graph_function
from relax_mlir.shapes import UNKNOWN, Dim, Shape, Truth, prove_equal, read_tensor_type

SEED = 1234
PROGRAMS = 90
OPS_PER_PROGRAM = 14
ASSIGNMENTS = 5          # accepted assignments per program
TRIES = 40               # sampled assignments per program, at most
VALUE_PROGRAMS = 4       # programs also compiled and checked for values

#: op name -> number of (op result, assignment) comparisons; filled by the test.
CASES: dict[str, int] = {}


@dataclass
class Node:
    """A value of the program: its IR value and how numpy computes it."""

    value: ir.Value
    dtype: str
    # numpy: (function of the input arrays, input nodes, index of this result)
    compute: Optional[Callable] = None
    inputs: list = field(default_factory=list)
    index: int = 0
    op: str = "param"
    param: Optional[int] = None

    @property
    def shape(self) -> Shape:
        return read_tensor_type(self.value.type).shape

    @property
    def rank(self) -> int:
        return self.shape.rank


def _is1(d) -> bool:
    return d is not UNKNOWN and d.is_static and d.value == 1


def _eq(a, b) -> bool:
    return a is not UNKNOWN and b is not UNKNOWN and prove_equal(a, b) is Truth.TRUE


def _broadcast_ok(a: Shape, b: Shape, allow_unknown: bool) -> bool:
    for x, y in zip(reversed(a.dims), reversed(b.dims)):
        if _is1(x) or _is1(y) or _eq(x, y):
            continue
        if allow_unknown and x is not UNKNOWN and y is not UNKNOWN and prove_equal(x, y) is Truth.UNKNOWN:
            continue
        return False
    return True


# -- numpy side ---------------------------------------------------------------------------------

def _softmax(x, axis):
    e = np.exp(x - (np.max(x, axis=axis, keepdims=True) if x.size else 0))
    return e / np.sum(e, axis=axis, keepdims=True)


def _argmax(x, axis, keepdims):
    if x.size:
        return np.argmax(x, axis=axis, keepdims=keepdims)
    axes = None if axis is None else (axis,)
    return np.sum(x, axis=axes, keepdims=keepdims).astype(np.int64)


def _take(x, idx, axis):
    if x.shape[axis] == 0:        # numpy refuses a non-empty take from an empty axis, as relax does
        if idx.size:              # (an IndexOutOfRangeError; these sizes are skipped)
            raise IndexError("cannot do a non-empty take from an empty axis")
        return np.zeros(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)
    return np.take(x, idx, axis=axis)


def _reduce(name, a, axis, keepdims):
    """relax's reductions (docs/semantics.md): max of nothing is -inf, mean of nothing NaN."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "max":
            return np.max(a, axis=axis, keepdims=keepdims, initial=-np.inf).astype(a.dtype)
        return getattr(np, name)(a, axis=axis, keepdims=keepdims).astype(a.dtype)


def _split_indices(x, indices, axis):
    return np.split(x, indices, axis=axis)


def _slice(x, axes, begin, end, strides):
    sl = [slice(None)] * x.ndim
    for a, b, e, s in zip(axes, begin, end, strides):
        sl[a] = slice(b, e, s)
    return x[tuple(sl)]


# -- program generator ----------------------------------------------------------------------------

PARAM_SHAPES = [
    ["n", 4], ["n", "m"], ["m", 4], [4, "m"], ["n", 1], [1, "m"], ["k"], ["2*k", 3],
    [2, "n", "m"], ["n", 2, 3], [2, "k", 4], ["m"], [3, 1, "n"], ["n", "m", 2],
]


class Gen:
    def __init__(self, r: random.Random):
        self.r = r
        self.nodes: list[Node] = []
        self.float_nodes: list[Node] = []

    # helpers
    def add(self, values, op: str, compute, inputs, dtype=None) -> list[Node]:
        if isinstance(values, ir.Value):
            values = [values]
        out = []
        for i, v in enumerate(values):
            n = Node(v, str(read_tensor_type(v.type).dtype), compute, list(inputs), i, op)
            out.append(n)
            self.nodes.append(n)
            if n.dtype == "f32":
                self.float_nodes.append(n)
        return out

    def pick(self, pred=lambda n: True) -> Optional[Node]:
        cands = [n for n in self.float_nodes if pred(n)]
        if not cands:
            return None
        # favour recent values, so chains get long
        return cands[-1] if self.r.random() < 0.4 else self.r.choice(cands)

    def sym(self) -> Dim:
        """A symbol bound by the parameters."""
        return Dim.of(self.r.choice(self.syms))

    def dim_text(self, d) -> object:
        return d.value if d.is_static else str(d)

    # ops
    def unary(self):
        x = self.pick()
        name = self.r.choice(["exp", "tanh", "negative", "relu", "sigmoid", "abs"])
        fn = {"exp": np.exp, "tanh": np.tanh, "negative": np.negative, "relu": lambda a: np.maximum(a, 0),
              "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "abs": np.abs}[name]
        self.add(getattr(relax, name)(x.value), name, lambda a: [fn(a)], [x])

    def binary(self):
        x = self.pick()
        allow = self.r.random() < 0.15
        y = self.pick(lambda n: n is not x and _broadcast_ok(x.shape, n.shape, allow))
        if y is None:
            kd = self.r.random() < 0.5 and x.rank > 0
            if kd:
                ax = sorted(self.r.sample(range(x.rank), self.r.randint(1, x.rank)))
                self.add(relax.sum(x.value, axes=ax, keepdims=True), "sum",
                         lambda a, ax=tuple(ax): [np.sum(a, axis=ax, keepdims=True)], [x])
                y = self.nodes[-1]
            else:
                y = x
        if self.r.random() < 0.5:
            x, y = y, x
        name = self.r.choice(["add", "subtract", "multiply", "maximum", "divide"])
        fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
              "divide": np.divide}[name]
        self.add(getattr(relax, name)(x.value, y.value), name, lambda a, b: [fn(a, b)], [x, y])

    def where(self):
        x = self.pick()
        y = self.pick(lambda n: _broadcast_ok(x.shape, n.shape, False)) or x
        c = self.pick(lambda n: _broadcast_ok(x.shape, n.shape, False) and _broadcast_ok(y.shape, n.shape, False)) or y
        cond = self.add(relax.less(c.value, x.value), "less", lambda a, b: [np.less(a, b)], [c, x])[0]
        self.add(relax.where(cond.value, x.value, y.value), "where",
                 lambda cc, a, b: [np.where(cc, a, b)], [cond, x, y])

    def matmul(self):
        a = self.pick(lambda n: n.rank >= 1)
        if a is None:
            return
        K = a.shape[-1]
        want_vec = self.r.random() < 0.2

        def fits(n):
            if n.rank == 1:
                return _eq(n.shape[0], K)
            if n.rank < 2 or not _eq(n.shape[-2], K):
                return False
            return _broadcast_ok(a.shape[:-2] if a.rank > 2 else Shape([]), n.shape[:-2], False)

        b = None if want_vec else self.pick(fits)
        if b is None:
            if a.rank >= 2 and not want_vec:
                perm = list(range(a.rank))
                perm[-1], perm[-2] = perm[-2], perm[-1]
                self.add(relax.permute_dims(a.value, axes=perm), "permute_dims",
                         lambda t, p=tuple(perm): [np.transpose(t, p)], [a])
            else:           # a vector of length K: reduce a over all but its last axis
                ax = list(range(a.rank - 1))
                if ax:
                    self.add(relax.sum(a.value, axes=ax), "sum", lambda t, ax=tuple(ax): [np.sum(t, axis=ax)], [a])
                else:
                    self.add(relax.exp(a.value), "exp", lambda t: [np.exp(t)], [a])
            b = self.nodes[-1]
        if self.r.random() < 0.5 and b.rank >= 2 and a.rank >= 2:
            # also exercise the swapped product b^T-ish shapes: (b @ a) when it fits
            if _eq(b.shape[-1], a.shape[-2]) and _broadcast_ok(a.shape[:-2], b.shape[:-2], False):
                a, b = b, a
        self.add(relax.matmul(a.value, b.value), "matmul", lambda p, q: [np.matmul(p, q)], [a, b])

    def reshape(self):
        x = self.pick(lambda n: n.rank >= 1)
        dims = list(x.shape)
        r = self.r
        # merge adjacent dims, split even static dims, then maybe one -1
        target = []
        i = 0
        while i < len(dims):
            d = dims[i]
            if i + 1 < len(dims) and r.random() < 0.3:
                d = d * dims[i + 1]
                i += 1
            if d.is_static and d.value % 2 == 0 and d.value > 2 and r.random() < 0.5:
                target += [Dim.of(2), Dim.of(d.value // 2)]
            else:
                target.append(d)
            i += 1
        if r.random() < 0.3:
            target.insert(r.randint(0, len(target)), Dim.of(1))
        if r.random() < 0.4 and not any(d.is_static and d.value == 0 for d in dims):
            target[r.randrange(len(target))] = Dim.of(-1)
        spec = [self.dim_text(d) for d in target]
        self.add(relax.reshape(x.value, shape=spec), "reshape",
                 lambda a, x=x, spec=spec: [a.reshape(tuple(RESHAPE_ENV.eval(s) for s in spec))], [x])

    def permute_dims(self):
        x = self.pick(lambda n: n.rank >= 1)
        if self.r.random() < 0.2:
            self.add(relax.permute_dims(x.value), "permute_dims", lambda a: [np.transpose(a)], [x])
            return
        perm = list(range(x.rank))
        self.r.shuffle(perm)
        neg = [p - x.rank if self.r.random() < 0.3 else p for p in perm]
        self.add(relax.permute_dims(x.value, axes=neg), "permute_dims",
                 lambda a, p=tuple(perm): [np.transpose(a, p)], [x])

    def expand_dims(self):
        x = self.pick(lambda n: n.rank <= 3)
        out_rank = x.rank + self.r.randint(1, 2)
        axes = self.r.sample(range(out_rank), out_rank - x.rank)
        spec = [a - out_rank if self.r.random() < 0.3 else a for a in axes]
        self.add(relax.expand_dims(x.value, axis=spec), "expand_dims",
                 lambda a, ax=tuple(axes): [np.expand_dims(a, ax)], [x])

    def squeeze(self):
        x = self.pick(lambda n: any(_is1(d) for d in n.shape))
        if x is None:
            return self.expand_dims()
        if self.r.random() < 0.4:
            self.add(relax.squeeze(x.value), "squeeze",
                     lambda a, x=x: [np.squeeze(a, tuple(i for i, d in enumerate(x.shape) if _is1(d)))], [x])
            return
        ones = [i for i, d in enumerate(x.shape) if _is1(d)]
        axes = self.r.sample(ones, self.r.randint(1, len(ones)))
        self.add(relax.squeeze(x.value, axis=axes), "squeeze",
                 lambda a, ax=tuple(axes): [np.squeeze(a, ax)], [x])

    def flatten(self):
        x = self.pick()
        self.add(relax.flatten(x.value), "flatten", lambda a: [a.reshape(-1)], [x])

    def concat(self):
        x = self.pick(lambda n: n.rank >= 1)
        axis = self.r.randrange(x.rank)

        def fits(n):
            return n.rank == x.rank and all(i == axis or _eq(n.shape[i], x.shape[i]) for i in range(x.rank))

        others = [n for n in self.float_nodes if fits(n)]
        parts = [x] + [self.r.choice(others) for _ in range(self.r.randint(1, 2))]
        spec_axis = axis - x.rank if self.r.random() < 0.3 else axis
        self.add(relax.concat([p.value for p in parts], axis=spec_axis), "concat",
                 lambda *arrs, ax=axis: [np.concatenate(arrs, axis=ax)], parts)

    def split(self):
        x = self.pick(lambda n: n.rank >= 1)
        axis = self.r.randrange(x.rank)
        d = x.shape[axis]
        if self.r.random() < 0.5:
            # sections that provably divide the dim
            options = [s for s in (1, 2, 3, 4) if prove_equal(d % s, 0) is Truth.TRUE]
            s = self.r.choice(options)
            vals = relax.split(x.value, sections=s, axis=axis)
            self.add(vals, "split", lambda a, s=s, ax=axis: list(np.split(a, s, axis=ax)), [x])
        else:
            idx = sorted(self.r.sample(range(0, 5), self.r.randint(1, 3)))
            if d.is_static:
                idx = sorted(min(i, d.value) for i in idx)
            elif self.r.random() < 0.3:
                idx = [-1]          # counts from the end: d - 1
            vals = relax.split(x.value, indices=idx, axis=axis)
            self.add(vals, "split", lambda a, idx=tuple(idx), ax=axis: _split_indices(a, list(idx), ax), [x])

    def strided_slice(self):
        x = self.pick(lambda n: n.rank >= 1)
        naxes = self.r.randint(1, x.rank)
        axes = self.r.sample(range(x.rank), naxes)
        begin, end, strides = [], [], []
        for a in axes:
            d = x.shape[a]
            kind = self.r.random()
            if kind < 0.3:
                b, e = 0, 2 ** 31              # whole dim
            elif kind < 0.5:
                b, e = 1, -1
            elif kind < 0.7 and not d.is_static:
                b, e = 0, str(d // 2) if self.r.random() < 0.5 else str(d - 1)
            elif kind < 0.85:
                b, e = self.r.randint(0, 2), self.r.randint(2, 4)
                if d.is_static:
                    b, e = min(b, d.value), min(e, d.value)
            else:
                b, e = -2, 2 ** 31
            if d.is_static:     # static begin > end is a compile-time error, not an empty slice
                cb, ce = (slice(b, e).indices(d.value)[:2])
                if cb > ce:
                    b, e = 0, 2 ** 31
            begin.append(b)
            end.append(e)
            strides.append(self.r.choice([1, 1, 2, 3]))
        self.add(relax.strided_slice(x.value, axes=axes, begin=begin, end=end, strides=strides),
                 "strided_slice",
                 lambda arr, ax=tuple(axes), b=tuple(begin), e=tuple(end), s=tuple(strides):
                 [_slice(arr, ax, [RESHAPE_ENV.eval(v) for v in b], [RESHAPE_ENV.eval(v) for v in e], s)],
                 [x])

    def take(self):
        x = self.pick(lambda n: n.rank >= 1)
        idx = self.r.choice(self.index_params)
        axis = self.r.randrange(x.rank)
        spec = axis - x.rank if self.r.random() < 0.3 else axis
        self.add(relax.take(x.value, idx.value, axis=spec), "take",
                 lambda a, i, ax=axis: [_take(a, i, ax)], [x, idx])

    def reduce(self):
        x = self.pick()
        name = self.r.choice(["sum", "mean", "max", "argmax"])
        keep = self.r.random() < 0.5
        zero = [i for i, d in enumerate(x.shape) if d is not UNKNOWN and d.is_static and d.value == 0]
        if name == "argmax" and zero and len(zero) == x.rank:
            name = "sum"            # argmax over a static empty axis is a compile-time error
        if name == "argmax":
            axis = None if (x.rank == 0 or self.r.random() < 0.25) else self.r.randrange(x.rank)
            if axis in zero or (axis is None and zero):
                axis = self.r.choice([i for i in range(x.rank) if i not in zero])
            spec = axis if axis is None or self.r.random() < 0.7 else axis - x.rank
            self.add(relax.argmax(x.value, axis=spec, keepdims=keep), "argmax",
                     lambda a, ax=axis, k=keep: [_argmax(a, ax, k)], [x])
            return
        if x.rank == 0 or self.r.random() < 0.2:
            axes = None
        else:
            axes = self.r.sample(range(x.rank), self.r.randint(1, x.rank))
        spec = None if axes is None else [a - x.rank if self.r.random() < 0.3 else a for a in axes]
        self.add(getattr(relax, name)(x.value, axes=spec, keepdims=keep), name,
                 lambda a, ax=None if axes is None else tuple(axes), k=keep, nm=name: [_reduce(nm, a, ax, k)], [x])

    def softmax(self):
        x = self.pick(lambda n: n.rank >= 1)
        axis = self.r.randrange(-x.rank, x.rank)
        self.add(relax.softmax(x.value, axis=axis), "softmax", lambda a, ax=axis: [_softmax(a, ax)], [x])

    def broadcast_to(self):
        x = self.pick(lambda n: n.rank <= 3)
        target = []
        for d in x.shape:
            if _is1(d) and self.r.random() < 0.6:
                target.append(self.r.choice([Dim.of(3), Dim.of(1), self.sym(), self.sym() + 1]))
            else:
                target.append(d)
        lead = [self.r.choice([Dim.of(2), self.sym()]) for _ in range(self.r.randint(0, 2))]
        spec = [self.dim_text(d) for d in lead + target]
        self.add(relax.broadcast_to(x.value, shape=spec), "broadcast_to",
                 lambda a, spec=tuple(spec): [np.broadcast_to(a, tuple(RESHAPE_ENV.eval(s) for s in spec))], [x])


class _Env:
    """Evaluates a dim spec (int or expression text) under the current assignment."""

    values: dict[str, int] = {}

    def eval(self, spec):
        if isinstance(spec, int):
            return spec
        return Dim.of(spec).evaluate(self.values)


RESHAPE_ENV = _Env()

OPS = ["unary", "binary", "binary", "where", "matmul", "matmul", "reshape", "permute_dims", "expand_dims",
       "squeeze", "flatten", "concat", "split", "strided_slice", "take", "reduce", "reduce", "softmax",
       "broadcast_to"]


def build_program(r: random.Random, ctx):
    """One module with one graph function; returns (module, func op, nodes, param specs)."""
    shapes = r.sample(PARAM_SHAPES, r.randint(2, 4))
    specs = [(f"x{i}", s, "f32") for i, s in enumerate(shapes)]
    specs.append(("idx", r.choice([["k"], ["n", 2], [3], ["m", "k"]]), "i64"))
    module = ir.Module.create()
    g = Gen(r)
    g.syms = sorted(set().union(*(Shape(s[1]).symbols for s in specs)))
    with graph_function(module, "main", specs) as fn:
        for i, p in enumerate(fn.params):
            node = Node(p, specs[i][2], op="param", param=i)
            g.nodes.append(node)
            if node.dtype == "f32":
                g.float_nodes.append(node)
        g.index_params = [g.nodes[-1]]
        for _ in range(OPS_PER_PROGRAM):
            getattr(g, r.choice(OPS))()
        fn.ret(*[n.value for n in g.nodes[-2:]])
    return module, g.nodes, specs


def _asserts(module) -> list[tuple[Shape, str]]:
    out = []
    for f in module.body.operations:
        for op in f.regions[0].blocks[0].operations:
            if op.operation.name == "relax.assert":
                out.append((Shape.from_attr(op.attributes["dims"]), ir.StringAttr(op.attributes["predicate"]).value))
    return out


def _asserts_hold(asserts, values) -> bool:
    for dims, pred in asserts:
        try:
            a, b = dims.evaluate(values)
        except (KeyError, ValueError, TypeError, ZeroDivisionError):
            return False
        if not (a == b if pred == "eq" else a <= b):
            return False
    return True


def _run_numpy(nodes, specs, values):
    RESHAPE_ENV.values = values
    arrays = {}
    cache = {}
    for n in nodes:
        if n.param is not None:
            shape = Shape(specs[n.param][1]).evaluate(values)
            arrays[id(n)] = (np.zeros(shape, np.int64) if specs[n.param][2] == "i64"
                             else np.random.default_rng(0).standard_normal(shape).astype(np.float32))
            continue
        key = (id(n.compute), tuple(id(i) for i in n.inputs))
        if key not in cache:
            cache[key] = n.compute(*[arrays[id(i)] for i in n.inputs])
        arrays[id(n)] = cache[key][n.index]
    return arrays


def run_values(seed: int, sizes: int = 3) -> dict:
    """Values, not only shapes: compile program ``seed`` once and compare its results
    with the numpy chain at ``sizes`` random assignments (0 and 1 included) that
    satisfy its run-time checks. Runs in a fuzz worker (test/fuzz/runner.py)."""
    r = random.Random(seed)
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        module, nodes, specs = build_program(r, ctx)
        text = str(module)
        outs = nodes[-2:]
    exe = relax_mlir.compile(text)
    syms = sorted(set().union(*(Shape(s[1]).symbols for s in specs)))
    calls = skipped = 0
    for _ in range(sizes):
        values = {s: r.choice([0, 1, 1, 2, 3, 5, 6]) for s in syms}
        try:
            with np.errstate(all="ignore"):
                arrays = _run_numpy(nodes, specs, values)
        except (ValueError, IndexError):
            skipped += 1
            continue
        params = [arrays[id(n)] for n in nodes if n.param is not None]
        try:
            got = exe(*params)
        except relax_mlir.ShapeError:
            skipped += 1
            continue
        calls += 1
        for i, (n, g) in enumerate(zip(outs, got)):
            want = np.asarray(arrays[id(n)])
            g = np.asarray(g)
            if g.shape != want.shape or not np.allclose(g, want.astype(g.dtype), rtol=2e-3, atol=2e-3, equal_nan=True):
                return {"calls": calls, "skipped": skipped,
                        "error": f"result #{i} (relax.{n.op}) at {values}: got {g!r}, numpy {want!r}\n{text}"}
    return {"calls": calls, "skipped": skipped, "error": None}


def test_random_programs_values_match_numpy():
    """Each program in a worker subprocess: a signal or a hang is a failure, not a dead run."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz"))
    import runner
    outs = runner.run_cases([{"kind": "shape-program", "seed": s} for s in range(VALUE_PROGRAMS)])
    fails = [o.describe()[:4000] for o in outs if o.failed]
    assert not fails, "\n\n".join(fails[:3])
    assert sum(o.result["calls"] for o in outs) >= VALUE_PROGRAMS


def test_random_programs_match_numpy():
    r = random.Random(SEED)
    ctx = relax_mlir.make_context()
    mismatches: list[str] = []
    accepted_total = 0
    with ctx, ir.Location.unknown():
        for p in range(PROGRAMS):
            module, nodes, specs = build_program(r, ctx)
            relax_mlir.run_pipeline(module, "builtin.module(relax-infer-shapes)")
            assert module.operation.verify()
            asserts = _asserts(module)
            syms = sorted(set().union(*(Shape(s[1]).symbols for s in specs)))
            accepted = 0
            for _ in range(TRIES):
                values = {s: r.randint(1, 6) for s in syms}
                if not _asserts_hold(asserts, values):
                    continue
                try:
                    arrays = _run_numpy(nodes, specs, values)
                except Exception as e:      # numpy rejects what every check accepted
                    mismatches.append(f"program {p} at {values}: numpy raised {e!r}\n{module}")
                    break
                for n in nodes:
                    if n.param is not None:
                        continue
                    want = tuple(arrays[id(n)].shape)
                    got = n.shape.evaluate(values)
                    CASES[n.op] = CASES.get(n.op, 0) + 1
                    if got != want:
                        mismatches.append(f"program {p} at {values}: relax.{n.op} deduced {n.shape} = {got}, "
                                          f"numpy gives {want}\n{module}")
                accepted += 1
                if accepted >= ASSIGNMENTS or mismatches:
                    break
            accepted_total += accepted
            if len(mismatches) >= 3:
                break
    assert not mismatches, "\n\n".join(mismatches[:3])
    total = sum(CASES.values())
    print(f"\nrandom programs: {PROGRAMS}, accepted assignments: {accepted_total}, op cases: {total}")
    print("  " + ", ".join(f"{k}={v}" for k, v in sorted(CASES.items())))
    assert total >= 2000
    for op in ("add", "matmul", "reshape", "permute_dims", "expand_dims", "squeeze", "flatten", "concat",
               "split", "strided_slice", "take", "sum", "argmax", "softmax", "where", "broadcast_to"):
        assert CASES.get(op, 0) > 0, f"no case exercised relax.{op}"
