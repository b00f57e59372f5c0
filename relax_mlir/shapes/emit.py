"""ONE interpreter of dimension expressions: a visitor with an arith emitter and a Python emitter.

A :class:`~relax_mlir.shapes.Dim` is a sympy expression; code that computes it at run time
(the host lowering: ``index`` arithmetic; the runtime: Python source over the actual dims)
walks it with :class:`DimVisitor`, which reduces sympy's forms (``Add``, ``Mul`` with a
rational coefficient, ``Pow``, ``floor``, ``Mod``, ``Min``, ``Max``) to a few operations:
``const``, ``symbol``, ``add``, ``mul``, ``floordiv``, ``mod``, ``min``, ``max``. Each
emitter implements only those, so both sides agree on what an expression means
(``//`` and ``%`` are floor division and modulo, as in Python).

* :class:`PythonEmitter`: Python source text (the runtime's argument checks, no sympy at
  call time);
* :class:`ArithEmitter`: ``arith`` ops on ``index`` values with the typed upstream builders.
  In *checked* mode every division reports ``divisor != 0`` and every ``+``/``*`` reports
  "no signed 64-bit overflow" to a callback (the host lowering turns them into run-time
  checks), and the division itself never traps (its divisor is made safe first).
"""

from __future__ import annotations

from typing import Callable, Generic, Mapping, Optional, TypeVar, Union

import sympy
from mlir import ir
from mlir.dialects import arith

from .expr import Dim

T = TypeVar("T")


class UnsupportedExpression(ValueError):
    """An expression with a form no emitter computes (e.g. a non-integer power)."""


class DimVisitor(Generic[T]):
    """Walks a dimension expression; subclasses give the primitive operations."""

    def visit(self, d: Union[Dim, sympy.Expr, int]) -> T:
        e = d.expr if isinstance(d, Dim) else sympy.sympify(d)
        return self._visit(e)

    def _visit(self, e: sympy.Expr) -> T:
        if e.is_Integer:
            return self.const(int(e))
        if e.is_Symbol:
            return self.symbol(e.name)
        if isinstance(e, sympy.Add):
            return self.add([self._visit(a) for a in e.args], e)
        if isinstance(e, sympy.Mul):
            if any(a.is_Rational and not a.is_Integer for a in e.args):
                num, den = sympy.fraction(e)
                return self.floordiv(self._visit(num), self._visit(den), e)
            return self.mul([self._visit(a) for a in e.args], e)
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) >= 1:
            b = self._visit(e.base)
            return self.mul([b] * int(e.exp), e)
        if isinstance(e, sympy.floor):
            num, den = sympy.fraction(sympy.together(e.args[0]))
            return self.floordiv(self._visit(num), self._visit(den), e)
        if isinstance(e, sympy.Mod):
            return self.mod(self._visit(e.args[0]), self._visit(e.args[1]), e)
        if isinstance(e, sympy.Min):
            return self.min([self._visit(a) for a in e.args])
        if isinstance(e, sympy.Max):
            return self.max([self._visit(a) for a in e.args])
        raise UnsupportedExpression(f"cannot compute the dimension expression {Dim(e)} at run time")

    # -- primitives (``expr`` is the sympy node, for diagnostics) ---------------------
    def const(self, value: int) -> T:
        raise NotImplementedError

    def symbol(self, name: str) -> T:
        raise NotImplementedError

    def add(self, args: list[T], expr) -> T:
        raise NotImplementedError

    def mul(self, args: list[T], expr) -> T:
        raise NotImplementedError

    def floordiv(self, a: T, b: T, expr) -> T:
        raise NotImplementedError

    def mod(self, a: T, b: T, expr) -> T:
        raise NotImplementedError

    def min(self, args: list[T]) -> T:
        raise NotImplementedError

    def max(self, args: list[T]) -> T:
        raise NotImplementedError


class PythonEmitter(DimVisitor[str]):
    """Python source for an expression; ``names`` maps each symbol to the text that reads it.

    Evaluate the result with only ``min`` and ``max`` as builtins. A division by zero
    raises ``ZeroDivisionError`` (the caller reports it).
    """

    def __init__(self, names: Mapping[str, str]):
        self.names = names

    def const(self, value: int) -> str:
        return str(value) if value >= 0 else f"({value})"

    def symbol(self, name: str) -> str:
        return self.names[name]

    def add(self, args, expr) -> str:
        return "(" + " + ".join(args) + ")"

    def mul(self, args, expr) -> str:
        return "(" + " * ".join(args) + ")"

    def floordiv(self, a, b, expr) -> str:
        return f"({a} // {b})"

    def mod(self, a, b, expr) -> str:
        return f"({a} % {b})"

    def min(self, args) -> str:
        return "min(" + ", ".join(args) + ")"

    def max(self, args) -> str:
        return "max(" + ", ".join(args) + ")"


def python_expr(d: Union[Dim, sympy.Expr, int], names: Mapping[str, str]) -> str:
    """``python_expr(parse_dim("n // 2"), {"n": "a[0][0]"})`` -> ``"(a[0][0] // 2)"``."""
    return PythonEmitter(names).visit(d)


#: a check the checked arith emitter reports: (condition that must hold, kind, expression)
CheckSink = Callable[["ir.Value", str, Dim], None]

INT64_MIN = -(2 ** 63)


class ArithEmitter(DimVisitor[ir.Value]):
    """``arith`` ops on ``index`` values, built at ``ip()`` with the typed upstream builders.

    ``lookup(name)`` gives a bound symbol's value (``KeyError`` when unbound). Results are
    cached per canonical expression text, so every expression is computed once; the cache
    is the caller's (it follows the caller's regions). With ``on_check``, divisions and
    possibly overflowing ``+``/``*`` report their validity conditions (kinds
    ``"division"`` and ``"overflow"``) instead of trusting the input.
    """

    def __init__(self, ip: Callable[[], ir.InsertionPoint], lookup: Callable[[str], "ir.Value"],
                 cache: Callable[[], dict], on_check: Optional[CheckSink] = None):
        self._ip, self._lookup, self._cache, self.on_check = ip, lookup, cache, on_check

    # -- entry ------------------------------------------------------------------
    def emit(self, d: Union[Dim, sympy.Expr, int]):
        return self.visit(d)

    def _visit(self, e):
        key = "expr:" + sympy.srepr(e)
        cache = self._cache()
        if key not in cache:
            cache[key] = super()._visit(e)
        return cache[key]

    # -- helpers ----------------------------------------------------------------
    def _index(self):
        return ir.IndexType.get()

    def constant(self, value: int, t=None):
        t = t or self._index()
        key = f"const:{t}:{value}"
        cache = self._cache()
        if key not in cache:
            cache[key] = arith.ConstantOp(t, ir.IntegerAttr.get(t, value), ip=self._ip()).result
        return cache[key]

    def _is_const(self, v) -> Optional[int]:
        owner = v.owner
        if isinstance(owner, ir.Block):
            return None
        op = owner.opview if hasattr(owner, "opview") else owner
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, ir.IntegerAttr):
            return ir.IntegerAttr(op.value).value
        return None

    def _report(self, ok, kind: str, expr) -> None:
        if self.on_check is not None:
            self.on_check(ok, kind, Dim(expr))

    # -- primitives ----------------------------------------------------------------
    def const(self, value: int):
        return self.constant(value)

    def symbol(self, name: str):
        return self._lookup(name)

    def add(self, args, expr):
        out = args[0]
        for b in args[1:]:
            r = arith.AddIOp(out, b, ip=self._ip()).result
            if self.on_check is not None and (self._is_const(out) is None or self._is_const(b) is None):
                # signed overflow iff both operands differ in sign from the result
                x1 = arith.XOrIOp(out, r, ip=self._ip()).result
                x2 = arith.XOrIOp(b, r, ip=self._ip()).result
                both = arith.AndIOp(x1, x2, ip=self._ip()).result
                ok = arith.CmpIOp(arith.CmpIPredicate.sge, both, self.constant(0), ip=self._ip()).result
                self._report(ok, "overflow", expr)
            out = r
        return out

    def mul(self, args, expr):
        out = args[0]
        for b in args[1:]:
            ca, cb = self._is_const(out), self._is_const(b)
            if self.on_check is None or (ca is not None and cb is not None) or ca in (0, 1) or cb in (0, 1):
                out = arith.MulIOp(out, b, ip=self._ip()).result
                continue
            if -1 in (ca, cb):  # negation: wraps only at INT64_MIN, itself an earlier reported overflow
                out = arith.SubIOp(self.constant(0), b if ca == -1 else out, ip=self._ip()).result
                continue
            ext = arith.MulSIExtendedOp(out, b, ip=self._ip())
            low, high = ext.results[0], ext.results[1]
            sign = arith.ShRSIOp(low, self.constant(63), ip=self._ip()).result
            ok = arith.CmpIOp(arith.CmpIPredicate.eq, high, sign, ip=self._ip()).result
            self._report(ok, "overflow", expr)
            out = low
        return out

    def _safe_divisor(self, a, b, expr):
        """(divisor that cannot trap, is it -1): checked mode reports ``b != 0``."""
        cb = self._is_const(b)
        if cb is not None and cb not in (0, -1):
            return b, None
        if self.on_check is None and cb is not None:
            return b, None
        zero = arith.CmpIOp(arith.CmpIPredicate.eq, b, self.constant(0), ip=self._ip()).result
        ok = arith.CmpIOp(arith.CmpIPredicate.ne, b, self.constant(0), ip=self._ip()).result
        self._report(ok, "division", expr)
        # INT64_MIN // -1 traps too: divide by 1 there and negate (wraps, no trap)
        minus1 = arith.CmpIOp(arith.CmpIPredicate.eq, b, self.constant(-1), ip=self._ip()).result
        bad = arith.OrIOp(zero, minus1, ip=self._ip()).result
        return arith.SelectOp(bad, self.constant(1), b, ip=self._ip()).result, minus1

    def floordiv(self, a, b, expr):
        safe, minus1 = self._safe_divisor(a, b, expr)
        q = arith.FloorDivSIOp(a, safe, ip=self._ip()).result
        if minus1 is None:
            return q
        neg = arith.SubIOp(self.constant(0), a, ip=self._ip()).result
        return arith.SelectOp(minus1, neg, q, ip=self._ip()).result

    def mod(self, a, b, expr):
        safe, minus1 = self._safe_divisor(a, b, expr)
        q = arith.FloorDivSIOp(a, safe, ip=self._ip()).result
        r = arith.SubIOp(a, arith.MulIOp(q, safe, ip=self._ip()).result, ip=self._ip()).result
        if minus1 is None:
            return r
        return arith.SelectOp(minus1, self.constant(0), r, ip=self._ip()).result

    def min(self, args):
        out = args[0]
        for b in args[1:]:
            out = arith.MinSIOp(out, b, ip=self._ip()).result
        return out

    def max(self, args):
        out = args[0]
        for b in args[1:]:
            out = arith.MaxSIOp(out, b, ip=self._ip()).result
        return out
