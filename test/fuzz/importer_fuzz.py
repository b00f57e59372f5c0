"""Random ``torch.nn.Module``\\ s through the PyTorch importer, checked against eager PyTorch.

One case = one module generated from a grammar of the ATen ops the importer converts
(:func:`relax_mlir.frontend.torch.supported_ops`): unary and binary element-wise ops with
broadcasting (f32 and i64), ``linear`` / ``matmul``, reductions (sum, mean, amax, amin,
keepdim or not), views (reshape, flatten, unflatten via ``x.shape[i] // k``, permute,
transpose, unsqueeze, squeeze, expand, repeat, slicing, select, index_select), softmax /
log_softmax, layer_norm, rms_norm, cumsum, argmax / argmin, tril / triu, pow, masked_fill,
scaled_dot_product_attention, concatenation / stack, ``where``, embedding and int -> float
casts. Inputs carry dynamic
``torch.export.Dim``\\ s on some axes and derived dims (``2 * s``); the module is exported
with ``torch.export.export``, imported and compiled ONCE, and run at several sizes of its
symbols (1, odd, larger) against the module run eagerly.

The module is generated as Python source (printed with a failure) and its forward runs
only ops whose values stay bounded (each value's magnitude is tracked: a value that would
grow past ~1e3 goes through ``tanh`` first), so floats are compared with a tolerance of
``rtol 1e-4`` and ``atol 1e-5`` scaled by the largest magnitude on the value's chain;
integers and bools exactly.

Every tenth seed (``seed % 10 == 9``) inserts one op the importer does not convert
(``flip``, ``roll``, ``cumprod``, ``atan2``, ...): the import must raise a
:class:`~relax_mlir.errors.CompileError` subclass naming that ATen op.

Failures: an export the generator meant to be valid is only counted (``export_skipped``);
any other exception while importing or compiling, an error at run time, a wrong shape,
dtype or value is a failure; a crash or hang kills the worker (runner.py).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

UNARY = {  # name -> (source template, output magnitude (log10) from the input's, or None: bounded at 0)
    "tanh": ("torch.tanh({x})", None), "sigmoid": ("torch.sigmoid({x})", None),
    "relu": ("torch.relu({x})", "same"), "neg": ("-{x}", "same"), "abs": ("torch.abs({x})", "same"),
    "silu": ("F.silu({x})", "same"), "gelu": ("F.gelu({x})", "same"),
    "gelu_tanh": ("F.gelu({x}, approximate='tanh')", "same"),
    "sin": ("torch.sin({x})", None), "cos": ("torch.cos({x})", None), "erf": ("torch.erf({x})", None),
    "exp": ("torch.exp(torch.clamp({x}, -4.0, 4.0))", 1.8),
    "log": ("torch.log(torch.abs({x}) + 1.0)", "log"),
    "sqrt": ("torch.sqrt(torch.abs({x}) + 0.5)", "half"),
    "rsqrt": ("torch.rsqrt(torch.abs({x}) + 0.5)", 0.2),
    "reciprocal": ("torch.reciprocal(torch.abs({x}) + 1.0)", None),
    "square": ("torch.square({x})", "double"),
    "leaky_relu": ("F.leaky_relu({x}, 0.1)", "same"),
    "hardtanh": ("F.hardtanh({x}, -0.5, 0.75)", None),
    "clamp": ("torch.clamp({x}, min=-0.3, max=1.2)", None),
    "scale": ("({x} * 0.5 + 0.25)", "same"),
}
BINARY = {"add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "maximum": "torch.maximum({a}, {b})",
          "minimum": "torch.minimum({a}, {b})", "div": "{a} / (torch.abs({b}) + 1.0)"}
INT_BINARY = {"add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "maximum": "torch.maximum({a}, {b})",
              "minimum": "torch.minimum({a}, {b})"}
#: ops without a conversion (seed % 10 == 9 inserts one): (source template, the ATen op expected in the error)
UNSUPPORTED = {
    "flip": ("torch.flip({x}, [0])", "aten.flip"),
    "roll": ("torch.roll({x}, 1, 0)", "aten.roll"),
    "cumprod": ("torch.cumprod({x}, 0)", "aten.cumprod"),
    "atan2": ("torch.atan2({x}, {x} + 1.0)", "aten.atan2"),
    "sign": ("torch.sign({x})", "aten.sign"),
    "sinh": ("torch.sinh(torch.tanh({x}))", "aten.sinh"),
    "trunc": ("torch.trunc({x})", "aten.trunc"),
}
STATIC = [2, 3, 4, 5, 6]
#: the symbols' sizes at run time: 1, odd, larger (the example is 4)
RUN_SIZES = [[1, 1], [3, 5], [7, 2], [17, 9], [24, 33]]
EXAMPLE = 4
MAG_LIMIT = 3.0


@dataclass
class Val:
    name: str
    shape: list            # sympy expressions
    dtype: str             # "f32", "i64", "bool"
    mag: float = 0.5       # log10 of the largest |value| expected
    err: float = 0.5       # log10 scale of the absolute error the chain may carry (x 1e-5)
    rng: Optional[tuple] = None   # i64 raw inputs: (lo, hi) of the values
    exact: bool = False    # bit-exact (an input through data movement only): a safe condition


@dataclass
class Program:
    seed: int
    src: str
    inputs: list           # [(name, shape (sympy), dtype)]
    dims: dict             # input name -> {axis: dim expression}
    outputs: list          # [Val]
    unsupported: Optional[str] = None   # the aten op name expected in the error
    ops: list = field(default_factory=list)


class Gen:
    def __init__(self, seed: int):
        import sympy
        self.sympy = sympy
        self.r = random.Random(seed)
        self.seed = seed
        self.syms = [sympy.Symbol(n, integer=True, positive=True) for n in ("s0", "s1")]
        self.vals: list[Val] = []
        self.lines: list[str] = []
        self.init: list[str] = []
        self.nparam = 0
        self.ops: list[str] = []

    # -- helpers ---------------------------------------------------------------------------
    def new(self, expr: str, shape, dtype: str, mag: float, err: float, op: str, exact: bool = False) -> Val:
        v = Val(f"v{len(self.lines)}", list(shape), dtype, min(mag, 30.0), max(err, mag, 0.0), exact=exact)
        self.lines.append(f"{v.name} = {expr}")
        self.vals.append(v)
        self.ops.append(op)
        return v

    def param(self, shape, kind: str = "randn", scale: float = 1.0) -> str:
        n = f"p{self.nparam}"
        self.nparam += 1
        dims = ", ".join(str(int(d)) for d in shape) + ("," if len(shape) == 1 else "")
        if kind == "randn":
            self.init.append(f"self.{n} = torch.nn.Parameter(torch.randn(({dims})) * {scale})")
        else:
            self.init.append(f"self.{n} = torch.nn.Parameter(torch.rand(({dims})) + 0.5)")
        return f"self.{n}"

    def pick(self, pred=lambda v: True) -> Optional[Val]:
        cands = [v for v in self.vals if pred(v)]
        if not cands:
            return None
        # recent values more often: a chain, not a forest of shallow ops
        w = [1.0 + 3.0 * (i >= len(cands) - 3) for i in range(len(cands))]
        return self.r.choices(cands, w)[0]

    def static(self, d) -> bool:
        return d.is_number

    def eq(self, a, b) -> bool:
        return self.sympy.simplify(a - b) == 0

    def size_src(self, v: Val, i: int) -> str:
        d = v.shape[i]
        return str(int(d)) if self.static(d) else f"{v.name}.shape[{i}]"

    def bounded(self, v: Val) -> Val:
        """``v`` itself, or tanh(v) when v may be large (keeps the chain's error small)."""
        if v is None:
            return None
        if v.dtype == "f32" and v.mag > MAG_LIMIT - 1:
            return self.new(f"torch.tanh({v.name})", v.shape, "f32", 0.0, v.err, "tanh")
        return v

    def floats(self, v: Val) -> bool:
        return v.dtype == "f32"

    # -- the grammar -----------------------------------------------------------------------
    def op_unary(self):
        x = self.pick(self.floats)
        name = self.r.choice(list(UNARY))
        tmpl, rule = UNARY[name]
        if rule in ("double", "same") and x.mag > MAG_LIMIT - 0.5:
            x = self.bounded(x)
        mag = {None: 0.0, "same": x.mag, "log": math.log10(max(x.mag, 0.0) * 2.3 + 1.0), "half": x.mag / 2,
               "double": 2 * x.mag}.get(rule, rule if isinstance(rule, float) else x.mag)
        err = x.err + (1.8 if name == "exp" else 0.0) + (max(x.mag, 0) + 0.3 if name == "square" else 0.0)
        self.new(tmpl.format(x=x.name), x.shape, "f32", mag, err, name)

    def broadcast_partner(self, x: Val, dtype: str) -> tuple[str, list, float, float]:
        """(source, shape, mag, err) of a value broadcastable against ``x``."""
        r = self.r
        same = [v for v in self.vals if v.dtype == dtype and v is not x and len(v.shape) <= len(x.shape)
                and all(self.eq(a, b) or (self.static(a) and int(a) == 1)
                        for a, b in zip(v.shape[::-1], x.shape[::-1]))]
        choice = r.random()
        if same and choice < 0.55:
            v = r.choice(same)
            return v.name, v.shape, v.mag, v.err
        if choice < 0.8 and dtype == "f32":
            # a parameter with some dims 1 (broadcast), static dims only
            k = r.randint(1, len(x.shape)) if x.shape else 0
            shape = [d if self.static(d) and r.random() < 0.6 else self.sympy.Integer(1) for d in x.shape[len(x.shape) - k:]]
            if not shape:
                return "0.5", [], 0.0, 0.0
            return self.param(shape), shape, 0.5, 0.5
        if dtype == "i64":
            return str(r.randint(-3, 3)), [], 0.5, 0.0
        return repr(round(r.uniform(-2, 2), 3)), [], 0.3, 0.0

    def op_binary(self):
        x = self.bounded(self.pick(self.floats))
        src, shape, mag, err = self.broadcast_partner(x, "f32")
        name = self.r.choice(list(BINARY))
        if name == "mul" and mag + x.mag > MAG_LIMIT:
            name = "add"
        a, b = (x.name, src) if self.r.random() < 0.7 or not shape else (src, x.name)
        if name == "div" and not shape:     # a scalar divisor: divide by the scalar itself
            expr, name = f"{x.name} / 1.5", "div_scalar"
        elif name in ("maximum", "minimum") and _literal(src):
            expr = f"torch.clamp({x.name}, {'min' if name == 'maximum' else 'max'}={src})"
        else:
            expr = BINARY[name].format(a=a, b=b)
        out = self.broadcast_shape(x.shape, shape)
        m = {"mul": x.mag + mag, "div": x.mag, "div_scalar": x.mag}.get(name, max(x.mag, mag) + 0.3)
        e = max(x.err + mag, err + x.mag) if name == "mul" else max(x.err, err) + 0.3
        self.new(expr, out, "f32", m, e, name)

    def broadcast_shape(self, a: list, b: list) -> list:
        n = max(len(a), len(b))
        a = [self.sympy.Integer(1)] * (n - len(a)) + list(a)
        b = [self.sympy.Integer(1)] * (n - len(b)) + list(b)
        return [y if (self.static(x) and int(x) == 1) else x for x, y in zip(a, b)]

    def op_int(self):
        x = self.pick(lambda v: v.dtype == "i64")
        if x is None:
            return self.op_unary()
        src, shape, _, _ = self.broadcast_partner(x, "i64")
        name = self.r.choice(list(INT_BINARY) + ["where", "to_float", "to_float", "sum", "divmod", "divmod"])
        if name == "divmod":   # torch's integer division and remainder (floor / trunc) by a constant
            k = self.r.choice([3, -3, 2, 5])
            tmpl = self.r.choice(["torch.div({x}, {k}, rounding_mode='floor')", "torch.div({x}, {k}, rounding_mode='trunc')",
                                  "torch.remainder({x}, {k})", "torch.floor_divide({x}, {k})", "{x} // {k}", "{x} % {k}"])
            self.new(tmpl.format(x=x.name, k=k), x.shape, "i64", 0, 0, "idivmod")
            return
        if name == "to_float":
            self.new(f"{x.name}.to(torch.float32) * 0.25", x.shape, "f32", 1.0, 0.0, "to_float")
        elif name == "where":
            f = self.pick(lambda v: v.dtype == "f32" and self.bcast_ok(v.shape, x.shape))
            if f is None:
                return
            out = self.broadcast_shape(x.shape, f.shape)
            self.new(f"torch.where({x.name} > 1, {f.name}, {f.name} * 0.5)", out, "f32", f.mag, f.err, "where")
        elif name == "sum" and x.shape:
            ax = self.r.randrange(len(x.shape))
            keep = self.r.random() < 0.5
            shape = list(x.shape) if keep else x.shape[:ax] + x.shape[ax + 1:]
            if keep:
                shape[ax] = self.sympy.Integer(1)
            self.new(f"torch.sum({x.name}, {ax}, keepdim={keep})", shape, "i64", 0, 0, "isum")
        elif name in INT_BINARY:
            if name == "mul" and self.ops.count("imul") >= 2:
                name = "add"
            out = self.broadcast_shape(x.shape, shape)
            if name in ("maximum", "minimum") and _literal(src):
                expr = f"torch.clamp({x.name}, {'min' if name == 'maximum' else 'max'}={src})"
            else:
                expr = INT_BINARY[name].format(a=x.name, b=src)
            self.new(expr, out, "i64", 0, 0, "i" + name)

    def bcast_ok(self, a, b) -> bool:
        for x, y in zip(a[::-1], b[::-1]):
            if not (self.eq(x, y) or (self.static(x) and int(x) == 1) or (self.static(y) and int(y) == 1)):
                return False
        return True

    def op_compare_where(self):
        x = self.bounded(self.pick(self.floats))
        y = self.pick(lambda v: v.dtype == "f32" and v is not x and self.bcast_ok(v.shape, x.shape))
        if y is None:
            self.new(f"torch.where({x.name} > 0.1, {x.name}, {x.name} * -0.5)", x.shape, "f32", x.mag, x.err, "where")
            return
        out = self.broadcast_shape(x.shape, y.shape)
        # the condition compares a raw input (bit-exact) when one has this shape, else a value vs itself
        if x.exact:
            expr = f"torch.where({x.name} > 0.0, {x.name}, {y.name})"
        else:   # a rounded condition: branches equal where it flips (x == 0), continuous
            expr = f"torch.where({x.name} > 0.0, {x.name} + {y.name}, {y.name})"
        self.new(expr, out, "f32", max(x.mag, y.mag) + 0.3, max(x.err, y.err) + 0.3, "where")

    def op_linear(self):
        x = self.bounded(self.pick(lambda v: v.dtype == "f32" and v.shape and self.static(v.shape[-1])))
        if x is None:
            return
        k = int(x.shape[-1])
        n = self.r.choice([1, 3, 4, 8, 5])
        w = self.param([n, k], scale=round(1.0 / math.sqrt(k), 4))
        bias = self.param([n], scale=0.5) if self.r.random() < 0.6 else "None"
        mag = x.mag + 0.5
        self.new(f"F.linear({x.name}, {w}, {bias})", x.shape[:-1] + [self.sympy.Integer(n)], "f32", mag,
                 x.err + 0.5, "linear")

    def op_matmul(self):
        x = self.bounded(self.pick(lambda v: v.dtype == "f32" and len(v.shape) >= 2))
        if x is None:
            return self.op_linear()
        kdim = x.shape[-1]
        r = self.r.random()
        if r < 0.4:   # x @ x^T: (.., n, n)
            t = self.new(f"{x.name}.transpose(-1, -2)", x.shape[:-2] + [x.shape[-1], x.shape[-2]], "f32", x.mag,
                         x.err, "transpose")
            out = x.shape[:-1] + [x.shape[-2]]
            self.new(f"torch.matmul({x.name}, {t.name})", out, "f32", 2 * x.mag + 1, x.err + x.mag + 1, "matmul")
        elif self.static(kdim):
            n = self.r.choice([2, 3, 7])
            w = self.param([int(kdim), n], scale=0.5)
            self.new(f"{x.name} @ {w}", x.shape[:-1] + [self.sympy.Integer(n)], "f32", x.mag + 0.7, x.err + 0.7,
                     "matmul")
        else:
            # (.., a, k) @ (.., k, a) from another value of the transposed shape
            t = self.new(f"torch.tanh({x.name}).transpose(-1, -2)", x.shape[:-2] + [x.shape[-1], x.shape[-2]], "f32",
                         0.0, x.err, "transpose")
            self.new(f"torch.matmul({x.name}, {t.name})", x.shape[:-1] + [x.shape[-2]], "f32", x.mag + 1.5,
                     x.err + 1.5, "matmul")

    def op_reduce(self):
        x = self.pick(lambda v: v.dtype == "f32" and v.shape)
        if x is None:
            return
        x = self.bounded(x)
        name = self.r.choice(["sum", "mean", "amax", "amin", "sum"])
        ax = self.r.randrange(len(x.shape))
        keep = self.r.random() < 0.5
        if self.r.random() < 0.15 and len(x.shape) >= 2:
            axes = sorted(self.r.sample(range(len(x.shape)), 2))
        else:
            axes = [ax]
        shape = [self.sympy.Integer(1) if i in axes else d for i, d in enumerate(x.shape)] if keep else \
            [d for i, d in enumerate(x.shape) if i not in axes]
        grow = 1.7 if name == "sum" else 0.0
        self.new(f"torch.{name}({x.name}, {axes if len(axes) > 1 else axes[0]}, keepdim={keep})", shape, "f32",
                 x.mag + grow, x.err + grow, name)

    def op_softmax(self):
        x = self.bounded(self.pick(lambda v: v.dtype == "f32" and v.shape))
        if x is None:
            return
        ax = self.r.randrange(len(x.shape)) - len(x.shape) * (self.r.random() < 0.5)
        fn = self.r.choice(["softmax", "softmax", "log_softmax"])
        self.new(f"torch.{fn}({x.name}, {ax})", x.shape, "f32", 0.0 if fn == "softmax" else 1.5, x.err + 0.3, fn)

    def op_layer_norm(self):
        x = self.pick(lambda v: v.dtype == "f32" and v.shape and self.static(v.shape[-1]) and int(v.shape[-1]) >= 2)
        if x is None:
            return
        x = self.bounded(x)
        k = int(x.shape[-1])
        if self.r.random() < 0.6:
            w, b = self.param([k], "rand"), self.param([k], scale=0.3)
            expr = f"F.layer_norm({x.name}, ({k},), {w}, {b}, eps=1e-5)"
        else:
            expr = f"F.layer_norm({x.name}, ({k},))"
        # the normalized row divides by its spread: a row of ~equal values amplifies the error
        self.new(expr, x.shape, "f32", 0.7, x.err + 1.0, "layer_norm")

    def op_view(self):
        x = self.pick(lambda v: v.shape != [])
        if x is None:
            return
        r, n = self.r, len(x.shape)
        kind = r.choice(["permute", "transpose", "unsqueeze", "flatten", "split", "slice", "slice_step", "select",
                         "squeeze", "reshape_back"])
        one = self.sympy.Integer(1)
        if kind == "permute" and n >= 2:
            p = list(range(n))
            r.shuffle(p)
            self.new(f"{x.name}.permute({', '.join(map(str, p))})", [x.shape[i] for i in p], x.dtype, x.mag, x.err, "permute", x.exact)
        elif kind == "transpose" and n >= 2:
            a, b = r.sample(range(n), 2)
            s = list(x.shape)
            s[a], s[b] = s[b], s[a]
            self.new(f"{x.name}.transpose({a}, {b})", s, x.dtype, x.mag, x.err, "transpose", x.exact)
        elif kind == "unsqueeze" and n < 4:
            a = r.randint(0, n)
            self.new(f"{x.name}.unsqueeze({a})", x.shape[:a] + [one] + x.shape[a:], x.dtype, x.mag, x.err, "unsqueeze", x.exact)
        elif kind == "flatten" and n >= 2:
            a = r.randrange(n - 1)
            s = x.shape[:a] + [x.shape[a] * x.shape[a + 1]] + x.shape[a + 2:]
            if r.random() < 0.5:
                self.new(f"{x.name}.flatten({a}, {a + 1})", s, x.dtype, x.mag, x.err, "flatten", x.exact)
            else:
                dims = [self.size_src(x, i) for i in range(a)] + [-1] + [self.size_src(x, i) for i in range(a + 2, n)]
                self.new(f"{x.name}.reshape({', '.join(map(str, dims))})", s, x.dtype, x.mag, x.err, "reshape", x.exact)
        elif kind == "split" and n < 4:
            # a dim k*e (static k > 1) split into (e, k) or (k, e): x.shape[a] // k
            cands = []
            for a, d in enumerate(x.shape):
                for k in (2, 3):
                    q = self.sympy.simplify(d / k)
                    if q.is_number and (q != int(q) or int(q) < 2):
                        continue
                    if not q.is_number and any(c.is_Rational and c.q != 1 for c in self.sympy.Mul.make_args(q)):
                        continue
                    cands.append((a, k, q))
            if not cands:
                return
            a, k, q = r.choice(cands)
            qsrc = str(int(q)) if q.is_number else f"{x.name}.shape[{a}] // {k}"
            order = [(qsrc, q), (str(k), self.sympy.Integer(k))]
            if r.random() < 0.5:
                order.reverse()
            dims = [self.size_src(x, i) for i in range(a)] + [o[0] for o in order] + \
                [self.size_src(x, i) for i in range(a + 1, n)]
            s = x.shape[:a] + [o[1] for o in order] + x.shape[a + 1:]
            self.new(f"{x.name}.reshape({', '.join(dims)})", s, x.dtype, x.mag, x.err, "reshape", x.exact)
        elif kind in ("slice", "slice_step", "select"):
            stat = [i for i, d in enumerate(x.shape) if self.static(d) and int(d) >= 2]
            if not stat:
                return
            a = r.choice(stat)
            d = int(x.shape[a])
            idx = [":"] * a
            if kind == "select":
                i = r.randrange(-d, d)
                self.new(f"{x.name}[{', '.join(idx + [str(i)])}]", x.shape[:a] + x.shape[a + 1:], x.dtype, x.mag,
                         x.err, "select")
                return
            if kind == "slice":
                lo = r.randrange(0, d - 1)
                hi = r.randint(lo + 1, d)
                sl, size = f"{lo}:{hi}", hi - lo
            else:
                st = r.choice([2, 3])
                lo = r.randrange(0, min(st, d))
                sl, size = f"{lo}::{st}", len(range(lo, d, st))
            s = list(x.shape)
            s[a] = self.sympy.Integer(size)
            self.new(f"{x.name}[{', '.join(idx + [sl])}]", s, x.dtype, x.mag, x.err, kind, x.exact)
        elif kind == "squeeze":
            ones = [i for i, d in enumerate(x.shape) if self.static(d) and int(d) == 1]
            if not ones:
                return
            a = r.choice(ones)
            self.new(f"{x.name}.squeeze({a})", x.shape[:a] + x.shape[a + 1:], x.dtype, x.mag, x.err, "squeeze", x.exact)
        elif kind == "reshape_back" and n >= 2:
            # view as a flat vector and back (the whole shape from x's sizes)
            flat = self.new(f"{x.name}.reshape(-1)", [self.sympy.prod(x.shape)], x.dtype, x.mag, x.err, "reshape", x.exact)
            dims = [self.size_src(x, i) for i in range(n)]
            self.new(f"{flat.name}.view({', '.join(dims)})", x.shape, x.dtype, x.mag, x.err, "view", x.exact)

    def op_cat(self):
        x = self.pick(lambda v: v.shape != [] and v.dtype in ("f32", "i64"))
        if x is None:
            return
        ax = self.r.randrange(len(x.shape))
        others = [v for v in self.vals if v is not x and v.dtype == x.dtype and len(v.shape) == len(x.shape)
                  and all(self.eq(a, b) for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != ax)]
        y = self.r.choice(others) if others and self.r.random() < 0.7 else x
        s = list(x.shape)
        s[ax] = x.shape[ax] + y.shape[ax]
        fn = "torch.cat" if self.r.random() < 0.8 else "torch.concat"
        self.new(f"{fn}([{x.name}, {y.name}], {ax})", s, x.dtype, max(x.mag, y.mag), max(x.err, y.err), "cat",
                 x.exact and y.exact)

    def op_stack(self):
        x = self.pick(lambda v: v.dtype == "f32" and len(v.shape) < 4)
        if x is None:
            return
        ax = self.r.randint(0, len(x.shape))
        s = x.shape[:ax] + [self.sympy.Integer(2)] + x.shape[ax:]
        self.new(f"torch.stack([{x.name}, {x.name} * 2.0], {ax})", s, "f32", x.mag + 0.3, x.err + 0.3, "stack", x.exact)

    def op_embedding(self):
        x = self.pick(lambda v: v.rng is not None and len(v.shape) <= 2)
        if x is None:
            return self.op_int()
        e = self.r.choice([3, 4, 8])
        table = self.param([x.rng[1] + 1, e])
        self.new(f"F.embedding({x.name}, {table})", x.shape + [self.sympy.Integer(e)], "f32", 0.7, 0.7, "embedding")

    def op_more(self):
        """rms_norm, expand, cumsum, argmax, repeat, tril, index_select, pow, masked_fill,
        scaled_dot_product_attention."""
        r, sp = self.r, self.sympy
        kind = r.choice(["rms_norm", "expand", "cumsum", "argmax", "repeat", "tril", "index_select", "pow",
                         "masked_fill", "sdpa"])
        x = self.bounded(self.pick(lambda v: v.dtype == "f32" and v.shape))
        if x is None:
            return
        n = len(x.shape)
        if kind == "rms_norm" and self.static(x.shape[-1]):
            k = int(x.shape[-1])
            w = self.param([k], "rand") if r.random() < 0.6 else None
            self.new(f"F.rms_norm({x.name}, ({k},){', ' + w if w else ''}, eps=1e-5)", x.shape, "f32", 0.7,
                     x.err + 1.0, "rms_norm")
        elif kind == "expand":
            ones = [i for i, d in enumerate(x.shape) if self.static(d) and int(d) == 1]
            if ones:
                a = r.choice(ones)
                s = list(x.shape)
                s[a] = sp.Integer(r.choice([2, 3]))
                args = ", ".join(str(int(d)) if i == a else "-1" for i, d in enumerate(s))
            else:
                s = [sp.Integer(2)] + list(x.shape)
                args = ", ".join(["2"] + ["-1"] * n)
            if len(s) > 4:
                return
            self.new(f"{x.name}.expand({args})", s, "f32", x.mag, x.err, "expand", x.exact)
        elif kind == "cumsum":
            ax = r.randrange(n)
            self.new(f"torch.cumsum({x.name}, {ax})", x.shape, "f32", x.mag + 1.7, x.err + 1.7, "cumsum")
        elif kind == "argmax" and x.exact:   # a rounded operand could break a near-tie the other way
            ax = r.randrange(n)
            keep = r.random() < 0.5
            s = [sp.Integer(1) if i == ax else d for i, d in enumerate(x.shape)] if keep else \
                x.shape[:ax] + x.shape[ax + 1:]
            fn = r.choice(["argmax", "argmin"])
            self.new(f"torch.{fn}({x.name}, {ax}, keepdim={keep})", s, "i64", 0, 0, fn)
        elif kind == "repeat" and n <= 3:
            reps = [r.choice([1, 2]) for _ in range(n)]
            s = [d * k for d, k in zip(x.shape, reps)]
            self.new(f"{x.name}.repeat({', '.join(map(str, reps))})", s, "f32", x.mag, x.err, "repeat", x.exact)
        elif kind == "tril" and n >= 2:
            fn = r.choice(["tril", "triu"])
            self.new(f"torch.{fn}({x.name}, {r.randint(-1, 1)})", x.shape, "f32", x.mag, x.err, fn, x.exact)
        elif kind == "index_select":
            stat = [i for i, d in enumerate(x.shape) if self.static(d)]
            if not stat:
                return
            a = r.choice(stat)
            d = int(x.shape[a])
            idx = [r.randrange(d) for _ in range(r.randint(1, 4))]
            s = list(x.shape)
            s[a] = sp.Integer(len(idx))
            self.new(f"torch.index_select({x.name}, {a}, torch.tensor({idx}))", s, "f32", x.mag, x.err,
                     "index_select", x.exact)
        elif kind == "pow":
            e = r.choice([2, 3, 0.5, 1.5, -1])
            self.new(f"torch.pow(torch.abs({x.name}) + 0.5, {e})", x.shape, "f32", max(x.mag, 0) * max(e, 1) + 0.2,
                     x.err * max(abs(e), 1) + 0.5, "pow")
        elif kind == "masked_fill":
            cond = self.pick(lambda v: v.exact and v.dtype == "f32" and self.bcast_ok(v.shape, x.shape)
                             and len(v.shape) <= len(x.shape))
            if cond is None:
                return
            out = self.broadcast_shape(x.shape, cond.shape)
            if [str(d) for d in out] != [str(d) for d in x.shape]:
                return
            self.new(f"{x.name}.masked_fill({cond.name} > 0.5, -1.5)", x.shape, "f32", max(x.mag, 0.2), x.err,
                     "masked_fill")
        elif kind == "sdpa" and n in (3, 4) and self.static(x.shape[-1]):
            # q = k = v-shaped: (..., L, E); a causal mask or none
            causal = r.random() < 0.5
            kk = self.new(f"torch.tanh({x.name}) * 0.7", x.shape, "f32", 0.0, x.err, "tanh")
            self.new(f"F.scaled_dot_product_attention({x.name}, {kk.name}, {kk.name}, is_causal={causal})",
                     x.shape, "f32", 0.0, x.err + 1.0, "sdpa")

    OPS = ["unary"] * 4 + ["binary"] * 4 + ["int", "int", "compare_where", "linear", "matmul", "reduce", "reduce",
                                            "softmax", "layer_norm", "view", "view", "view", "cat", "stack",
                                            "embedding", "more", "more", "more"]

    # -- the program -------------------------------------------------------------------------
    def inputs(self):
        r, sp = self.r, self.sympy
        s0, s1 = self.syms
        dim_choices = [sp.Integer(d) for d in STATIC] + [s0, s0, s1, 2 * s0]
        ins = []
        for i in range(r.randint(1, 3)):
            rank = r.choice([1, 2, 2, 3, 3, 4])
            shape = [r.choice(dim_choices) for _ in range(rank)]
            ins.append((f"x{i}", shape, "f32"))
        if r.random() < 0.5:
            ins.append(("ids", [r.choice(dim_choices) for _ in range(r.choice([1, 2]))], "i64"))
        # a derived dim 2*s0 needs s0 itself on some input's axis (torch.export's root)
        used = {d for _, s, _ in ins for d in s}
        if 2 * s0 in used and s0 not in used:
            name, shape, dt = ins[0]
            ins[0] = (name, shape + [s0], dt) if len(shape) < 4 else (name, [s0] + shape[1:], dt)
        return ins

    def build(self, n_ops: int) -> Program:
        ins = self.inputs()
        for name, shape, dt in ins:
            v = Val(name, list(shape), dt, 0.5, 0.5, (0, 7) if dt == "i64" else None, True)
            self.vals.append(v)
        unsupported = bad = None
        bad_at = self.r.randrange(n_ops) if self.seed % 10 == 9 else -1
        for i in range(n_ops):
            if i == bad_at:
                x = self.pick(lambda v: v.dtype == "f32" and v.shape)
                name = self.r.choice(sorted(UNSUPPORTED))
                tmpl, unsupported = UNSUPPORTED[name]
                bad = self.new(tmpl.format(x=x.name), x.shape, "f32", x.mag, x.err, name)
                continue
            getattr(self, "op_" + self.r.choice(self.OPS))()
        import re
        made = self.vals[len(ins):] or self.vals[:1]
        # the results: the values nothing else uses (the last few leaves; dead code is dropped
        # by torch.export) and the unsupported op's value
        used = set(re.findall(r"\bv\d+\b", "\n".join(line.split(" = ", 1)[1] for line in self.lines)))
        leaves = [v for v in made if v.name not in used]
        outs = leaves[-4:] or made[-1:]
        if bad is not None and bad not in outs:
            outs.append(bad)
        src = ["class M(torch.nn.Module):", "    def __init__(self):", "        super().__init__()"]
        src += ["        " + line for line in self.init]
        src += [f"    def forward(self, {', '.join(n for n, _, _ in ins)}):"]
        src += ["        " + line for line in self.lines]
        src += [f"        return ({', '.join(v.name for v in outs)},)"]
        dims = {}
        for name, shape, _ in ins:
            dims[name] = {a: d for a, d in enumerate(shape) if not d.is_number}
        return Program(self.seed, "\n".join(src), ins, dims, outs, unsupported, self.ops)


def _literal(src: str) -> bool:
    return src[0] in "-0123456789"


def build(seed: int, n_ops: Optional[int] = None) -> Program:
    r = random.Random(seed * 31 + 7)
    return Gen(seed).build(n_ops if n_ops is not None else r.randint(4, 18))


def _module(p: Program):
    import torch
    import torch.nn.functional as F
    ns = {"torch": torch, "F": F}
    exec(compile(p.src, f"<importer-fuzz seed {p.seed}>", "exec"), ns)
    torch.manual_seed(p.seed)
    return ns["M"]().eval()


def _concrete(shape, env) -> tuple:
    return tuple(int(d.subs(env)) if not d.is_number else int(d) for d in shape)


def make_inputs(p: Program, env: dict, rng: np.random.Generator) -> list:
    import torch
    out = []
    for name, shape, dt in p.inputs:
        s = _concrete(shape, env)
        if dt == "i64":
            out.append(torch.from_numpy(rng.integers(0, 8, s).astype(np.int64)))
        else:
            out.append(torch.from_numpy(rng.standard_normal(s).astype(np.float32)))
    return out


def export(p: Program, model):
    import torch
    from torch.export import Dim
    s0, s1 = Dim("s0", min=1, max=64), Dim("s1", min=1, max=64)
    objs = {"s0": s0, "s1": s1}

    def dim_obj(e):
        if e.is_Symbol:
            return objs[str(e)]
        coeff, sym = e.as_coeff_Mul()
        return int(coeff) * objs[str(sym)]
    ds = {name: {a: dim_obj(e) for a, e in axes.items()} or None for name, axes in p.dims.items()}
    env = {s: EXAMPLE for s in Gen(0).syms}
    args = tuple(make_inputs(p, env, np.random.default_rng(0)))
    return torch.export.export(model, args, dynamic_shapes=ds), ds


def compare(got: np.ndarray, want: np.ndarray, out: Val) -> Optional[str]:
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind in "biu":
        bad = got != want
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            return f"at {i}: got {got[i]!r}, want {want[i]!r}"
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    fin = np.isfinite(w)
    if (np.isfinite(g) != fin).any() or (g[~fin] != w[~fin]).any() and not np.isnan(w[~fin]).all():
        i = tuple(np.argwhere((np.isfinite(g) != fin))[0]) if (np.isfinite(g) != fin).any() else "?"
        return f"non-finite mismatch at {i}"
    atol = 1e-5 * 10 ** min(max(out.err, 0.0), 8.0)
    bad = np.abs(g - w) > atol + 1e-4 * np.abs(w)
    bad &= fin
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return (f"at {i}: got {got[i]!r}, want {want[i]!r} (|diff| {abs(g[i] - w[i]):.3g}, atol {atol:.3g}, "
                f"{int(bad.sum())} of {bad.size} off)")
    return None


def run_importer(seed: int, n_sizes: int = 3) -> dict:
    """Generate, export, import and compile module ``seed`` once; run it at ``n_sizes`` sizes.

    Returns {"calls", "export_skipped", "error", "ops", "unsupported"}."""
    import torch

    import relax_mlir
    from relax_mlir.errors import CompileError
    from relax_mlir.frontend.torch import CompiledModule, import_program
    from worker import record

    p = build(seed)
    record(p.src)
    res = {"calls": 0, "export_skipped": 0, "error": None, "ops": p.ops, "unsupported": p.unsupported}
    model = _module(p)
    try:
        ep, ds = export(p, model)
    except Exception as e:   # the generator asked for something torch.export refuses: not our bug
        res["export_skipped"] = 1
        res["export_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        return res
    # the ATen ops the program really contains without a conversion (torch may decompose ours)
    from relax_mlir.frontend.torch import supported_ops
    sup = set(supported_ops())
    missing = sorted({str(n.target) for n in ep.run_decompositions({}).graph.nodes
                      if n.op == "call_function" and str(n.target).startswith("aten.") and str(n.target) not in sup})
    try:
        prog = import_program(ep, dynamic_shapes=ds)
        exe = relax_mlir.compile(prog.module)
    except CompileError as e:
        msg = str(e)
        if missing and any(m.rsplit(".", 1)[0] in msg or m in msg for m in missing):
            res["refused"] = missing
            return res          # the expected clean refusal, naming the op
        res["error"] = (f"compile raised {type(e).__name__} "
                        f"{'(no unsupported op in the program)' if not missing else f'not naming {missing}'}: "
                        f"{msg[:2000]}\n{p.src}")
        return res
    except Exception as e:
        import traceback
        res["error"] = f"import/compile raised {type(e).__name__} (not a CompileError): " \
                       f"{traceback.format_exc()[-2500:]}\n{p.src}"
        return res
    if missing:
        res["error"] = f"compiled a program with ops without a conversion {missing}\n{p.src}"
        return res
    cm = CompiledModule(prog, exe)
    rng = np.random.default_rng(seed)
    syms = Gen(0).syms
    sizes = RUN_SIZES[:1] + random.Random(seed).sample(RUN_SIZES[1:], min(n_sizes - 1, len(RUN_SIZES) - 1))
    for sz in sizes[:n_sizes]:
        env = dict(zip(syms, sz))
        args = make_inputs(p, env, rng)
        with torch.no_grad():
            want = model(*args)
        try:
            got = cm(*args)
        except Exception as e:
            res["error"] = f"run at {dict(zip(map(str, syms), sz))} raised {type(e).__name__}: {str(e)[:1500]}\n{p.src}"
            return res
        got = got if isinstance(got, (tuple, list)) else (got,)
        if len(got) != len(want):
            res["error"] = f"{len(got)} results, torch {len(want)}\n{p.src}"
            return res
        res["calls"] += 1
        for i, (g, w, o) in enumerate(zip(got, want, p.outputs)):
            err = compare(np.asarray(g), w.numpy(), o)
            if err:
                res["error"] = (f"result #{i} ({o.name}) at {dict(zip(map(str, syms), sz))}: {err}\n{p.src}")
                return res
    return res
