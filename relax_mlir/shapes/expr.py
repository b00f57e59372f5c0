"""Symbolic dimension expressions.

A :class:`Dim` wraps a sympy expression over integer symbols that are assumed
``>= 0`` (tensor sizes). It supports ``+ - * // %`` and ``min``/``max``, prints in
ONE canonical form (so equal expressions print equal), and parses that form back.

Nothing outside ``relax_mlir.shapes`` parses or prints dimension expressions.
"""

from __future__ import annotations

import ast
import enum
import functools
from typing import Iterable, Mapping, Union

import sympy
from sympy.printing.str import StrPrinter


class ShapeSyntaxError(ValueError):
    """A dimension expression string that does not parse."""


class Truth(enum.Enum):
    """Three-valued answer of the prover."""

    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"

    def __bool__(self) -> bool:  # pragma: no cover - guard against misuse
        raise TypeError("Truth is three-valued: compare with Truth.TRUE / FALSE / UNKNOWN")


@functools.lru_cache(maxsize=None)
def symbol(name: str) -> sympy.Symbol:
    """The sympy symbol for a dimension variable (integer, >= 0)."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


DimLike = Union["Dim", int, str]


class Dim:
    """One symbolic dimension: an integer expression over size symbols."""

    __slots__ = ("expr",)

    def __init__(self, expr: sympy.Expr):
        self.expr = _normalize(sympy.sympify(expr))

    # -- construction -------------------------------------------------------
    @staticmethod
    def of(value: DimLike) -> "Dim":
        """Coerce an int, an expression string or a Dim into a Dim."""
        if isinstance(value, Dim):
            return value
        if isinstance(value, bool):
            raise TypeError("a dimension cannot be a bool")
        if isinstance(value, int):
            return Dim(sympy.Integer(value))
        if isinstance(value, str):
            return parse_dim(value)
        if isinstance(value, sympy.Basic):
            return Dim(value)
        raise TypeError(f"cannot make a dimension from {value!r}")

    # -- queries ------------------------------------------------------------
    @property
    def is_static(self) -> bool:
        return self.expr.is_Integer

    @property
    def value(self) -> int:
        if not self.is_static:
            raise ValueError(f"dimension {self} is symbolic")
        return int(self.expr)

    @property
    def symbols(self) -> frozenset[str]:
        return frozenset(s.name for s in self.expr.free_symbols)

    def subs(self, mapping: Mapping[str, DimLike]) -> "Dim":
        """Substitute symbols by dimensions (ints, strings or Dims)."""
        if not mapping:
            return self
        # only this expression's symbols: a mapping may bind thousands (one per parameter dim)
        repl = {s: Dim.of(mapping[s.name]).expr for s in self.expr.free_symbols if s.name in mapping}
        if not repl:
            return self
        return Dim(self.expr.xreplace(repl))

    def evaluate(self, values: Mapping[str, int]) -> int:
        """Concrete value under a full assignment of the symbols."""
        d = self.subs(values)
        if not d.is_static:
            missing = ", ".join(sorted(d.symbols))
            raise KeyError(f"no value for symbol(s) {missing} in {self}")
        return d.value

    # -- arithmetic ---------------------------------------------------------
    def __add__(self, o: DimLike) -> "Dim":
        return Dim(self.expr + Dim.of(o).expr)

    __radd__ = __add__

    def __sub__(self, o: DimLike) -> "Dim":
        return Dim(self.expr - Dim.of(o).expr)

    def __rsub__(self, o: DimLike) -> "Dim":
        return Dim(Dim.of(o).expr - self.expr)

    def __mul__(self, o: DimLike) -> "Dim":
        return Dim(self.expr * Dim.of(o).expr)

    __rmul__ = __mul__

    def __floordiv__(self, o: DimLike) -> "Dim":
        return Dim(_floordiv(self.expr, Dim.of(o).expr))

    def __rfloordiv__(self, o: DimLike) -> "Dim":
        return Dim(_floordiv(Dim.of(o).expr, self.expr))

    def __mod__(self, o: DimLike) -> "Dim":
        return Dim(_mod(self.expr, Dim.of(o).expr))

    def __rmod__(self, o: DimLike) -> "Dim":
        return Dim(_mod(Dim.of(o).expr, self.expr))

    def __neg__(self) -> "Dim":
        return Dim(-self.expr)

    # -- identity -----------------------------------------------------------
    def __eq__(self, o: object) -> bool:
        """Structural equality of the canonical forms (not a proof: see prove_equal)."""
        if isinstance(o, (int, str)) and not isinstance(o, bool):
            try:
                o = Dim.of(o)
            except ShapeSyntaxError:
                return False
        return isinstance(o, Dim) and str(self) == str(o)

    def __hash__(self) -> int:
        return hash(str(self))

    def __str__(self) -> str:
        return _print(self.expr)

    def __repr__(self) -> str:
        return f"Dim({str(self)!r})"

    def to_attr_text(self) -> str:
        """The element of ``#relax.shape<[...]>``: an integer or a quoted string."""
        return str(self.value) if self.is_static else f'"{self}"'


def dim_min(*dims: DimLike) -> Dim:
    return Dim(sympy.Min(*(Dim.of(d).expr for d in dims)))


def dim_max(*dims: DimLike) -> Dim:
    return Dim(sympy.Max(*(Dim.of(d).expr for d in dims)))


class _Mod(sympy.Mod):
    """sympy's Mod, minus a wrong rewrite in sympy 1.14.

    ``Mod(c*Mod(x, r), q)`` with an integer ``q`` squares the inner Mod in sympy
    1.14.0 (sympy issues #28744, #29757: ``Mod(16*Mod(n, m + 2), 7)`` gives
    ``Mod(2*Mod(n, m + 2)**2, 7)``). For those products the inner Mods are
    replaced by placeholder symbols while sympy evaluates, then put back.
    """

    @classmethod
    def eval(cls, p, q):
        if (isinstance(p, sympy.Mul) and q.is_Integer and q != 1
                and any(isinstance(a, sympy.Mod) and a.args[1] != q for a in p.args)):
            inner = {a: sympy.Dummy(integer=True, nonnegative=True)
                     for a in p.args if isinstance(a, sympy.Mod)}
            r = cls(p.xreplace(inner), q)
            return _restore(r, {v: k for k, v in inner.items()})
        return super().eval(p, q)


# sympy's printers dispatch on the class name and skip renamed Function subclasses.
_Mod.__name__ = _Mod.__qualname__ = "Mod"


def _restore(e: sympy.Expr, back: dict) -> sympy.Expr:
    """Substitute ``back`` into ``e``, leaving the Mods it rebuilds unevaluated (see _Mod)."""
    if e in back:
        return back[e]
    if not e.args or not (e.free_symbols & back.keys()):
        return e
    args = [_restore(a, back) for a in e.args]
    if isinstance(e, sympy.Mod):
        return _Mod(*args, evaluate=False)
    return e.func(*args)


def _mod(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    if b == 0:
        raise ZeroDivisionError("dimension modulo by zero")
    return _Mod(a, b)


def _integral(e: sympy.Expr) -> bool:
    """``e`` is a polynomial with integer coefficients in (integer) size symbols."""
    return e.is_Integer or (e.is_polynomial() and not e.has(sympy.floor, sympy.Mod, sympy.Min, sympy.Max)
                            and all(c.is_integer for c in sympy.Poly(e).coeffs()))


def _merge_floor(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``floor(u) + r`` -> ``u + r`` when it is divided by a positive integer ``b`` and ``r``
    is integral: ``(floor(u) + r) // b == (u + r) // b`` (floor(floor(v) / b) = floor(v / b)).
    So chained strided windows, ``((h - 1) // 2) // 2``, print as ``(h - 1) // 4``, the
    form torch writes for the same size, and compare equal to it."""
    if not (b.is_Integer and b > 0) or not a.has(sympy.floor):
        return a
    terms = sympy.Add.make_args(sympy.expand(a))
    floors = [t for t in terms if isinstance(t, sympy.floor)]
    if len(floors) != 1:
        return a
    rest = sympy.Add(*[t for t in terms if t is not floors[0]])
    if not _integral(rest):
        return a
    return floors[0].args[0] + rest


def _floordiv(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    if b == 0:
        raise ZeroDivisionError("dimension division by zero")
    a = _merge_floor(a, b)
    q = sympy.cancel(a / b)          # 2*k*(k + 4) // (2*k + 8) is k, exactly
    num, den = sympy.fraction(q)
    if den == 1 and (q.is_Integer or (q.is_polynomial() and q.free_symbols
                                       and all(c.is_integer for c in sympy.Poly(q).coeffs()))):
        return sympy.expand(q)
    return sympy.floor(a / b)


def _normalize(e: sympy.Expr) -> sympy.Expr:
    """Bring an expression to the canonical form: expanded polynomial parts."""
    e = sympy.expand(e)
    # Fold floor(x/c) where x is a multiple of c, Mod of multiples, etc.; sympy
    # already does most of this given integer symbols. Re-expand inner args.
    if e.has(sympy.floor, sympy.Mod, sympy.Min, sympy.Max):
        e = e.replace(lambda x: isinstance(x, (sympy.floor, sympy.Mod, sympy.Min, sympy.Max)),
                      lambda x: x.func(*[sympy.expand(a) for a in x.args]))
    return e


class _DimPrinter(StrPrinter):
    """sympy's str printer, but with ``//``, ``%``, ``min``, ``max`` spelled as we parse them.

    The printed text must parse back (with Python precedence: unary minus binds
    tighter than ``* // %``, which are left-associative) to the same expression,
    so ``//`` and ``%`` are parenthesized inside products and negations, right
    operands that are not atoms are parenthesized, and powers print as products.
    """

    def _print_floor(self, expr):
        arg = expr.args[0]
        num, den = sympy.fraction(sympy.together(arg))
        if den == 1:
            return self._print(arg)
        return f"{self._wrap(num)} // {self._wrap_right(den)}"

    def _print_Mod(self, expr):
        a, b = expr.args
        return f"{self._wrap(a)} % {self._wrap_right(b)}"

    def _print_Min(self, expr):
        return "min(" + ", ".join(sorted(self._print(a) for a in expr.args)) + ")"

    def _print_Max(self, expr):
        return "max(" + ", ".join(sorted(self._print(a) for a in expr.args)) + ")"

    def _print_Pow(self, expr, rational=False):
        base, exp = expr.args
        if exp.is_Integer and exp > 0:
            return "*".join([self._factor(base)] * int(exp))
        return super()._print_Pow(expr, rational)

    def _print_Mul(self, expr):
        c, rest = expr.as_coeff_Mul()
        if not c.is_Integer:
            return super()._print_Mul(expr)
        parts = [] if abs(c) == 1 and rest != 1 else [str(abs(c))]
        if rest != 1:
            parts += [self._factor(f) for f in rest.as_ordered_factors()]
        return ("-" if c < 0 else "") + "*".join(parts)

    def _factor(self, e) -> str:
        """One factor of a product: parenthesized unless it binds tighter than ``*``."""
        s = self._print(e)
        if (e.is_Symbol or (e.is_Integer and e >= 0) or isinstance(e, (sympy.Min, sympy.Max))
                or (e.is_Pow and e.args[1].is_Integer and e.args[1] > 0 and not isinstance(e.args[0], (sympy.floor, sympy.Mod)) and not e.args[0].is_Add)):
            return s
        return f"({s})"

    def _wrap(self, e) -> str:
        """Left operand of ``//`` or ``%``: a product may stay bare (left-associative)."""
        s = self._print(e)
        if ((e.is_Atom and not e.could_extract_minus_sign()) or isinstance(e, (sympy.Min, sympy.Max))
                or (e.is_Mul and not e.could_extract_minus_sign())):
            return s
        return f"({s})"

    def _wrap_right(self, e) -> str:
        """Right operand of ``//`` or ``%``: only atoms and calls stay bare."""
        s = self._print(e)
        if (e.is_Atom and not e.could_extract_minus_sign()) or isinstance(e, (sympy.Min, sympy.Max)):
            return s
        return f"({s})"


_PRINTER = _DimPrinter({"order": "lex"})


@functools.lru_cache(maxsize=65536)
def _print(e: sympy.Expr) -> str:
    """The canonical text of ``e`` (memoized: Dim's equality and hash are its text, and a
    deep model prints the same few expressions tens of thousands of times)."""
    return _PRINTER.doprint(e)


_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: _floordiv,
    ast.Mod: _mod,
}


#: Longest dimension expression accepted: real shapes are short, and sympy and the parser
#: recurse over the expression (a 50,000-deep ``-(-(...))`` would overflow the stack).
MAX_DIM_TEXT = 1000
#: Deepest nesting of operators and parentheses accepted.
MAX_DIM_DEPTH = 64
#: Most terms an expression may expand to (``(a+b)*(c+d)*...`` doubles with each factor).
MAX_DIM_TERMS = 4096


@functools.lru_cache(maxsize=4096)
def parse_dim(text: str) -> Dim:
    """Parse ``"2*n + m // 4"`` and friends. Raises ShapeSyntaxError with the reason."""
    src = text.strip()
    if not src:
        raise ShapeSyntaxError("empty dimension expression")
    if len(src) > MAX_DIM_TEXT:
        raise ShapeSyntaxError(f"dimension expression of {len(src)} characters is too long (at most {MAX_DIM_TEXT})")
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError:
        raise ShapeSyntaxError(f"malformed dimension expression '{text}'{_hint(src)}") from None
    except (RecursionError, MemoryError):
        raise ShapeSyntaxError(f"dimension expression '{text[:40]}...' is nested too deeply") from None
    if _depth(tree.body) > MAX_DIM_DEPTH:
        raise ShapeSyntaxError(f"dimension expression '{text[:40]}...' is nested more than {MAX_DIM_DEPTH} deep")
    if _terms(tree.body) > MAX_DIM_TERMS:
        raise ShapeSyntaxError(f"dimension expression '{text[:40]}...' expands to more than {MAX_DIM_TERMS} terms")
    try:
        return Dim(_convert(tree.body, text))
    except (RecursionError, MemoryError):
        raise ShapeSyntaxError(f"dimension expression '{text[:40]}...' is too large to simplify") from None


def _depth(node: ast.AST) -> int:
    """Nesting depth of an expression tree, computed without recursion."""
    deepest, todo = 0, [(node, 1)]
    while todo:
        n, d = todo.pop()
        deepest = max(deepest, d)
        todo.extend((c, d + 1) for c in ast.iter_child_nodes(n))
    return deepest


def _terms(node: ast.AST) -> int:
    """An upper bound on the number of terms of the expanded polynomial (depth is bounded)."""
    if isinstance(node, ast.BinOp):
        a, b = _terms(node.left), _terms(node.right)
        if isinstance(node.op, (ast.Add, ast.Sub)):
            return a + b
        if isinstance(node.op, ast.Mult):
            return a * b
        return a + b  # floor division and modulo keep their operands apart
    if isinstance(node, ast.UnaryOp):
        return _terms(node.operand)
    if isinstance(node, ast.Call):
        return sum(_terms(a) for a in node.args)
    return 1


def _hint(src: str) -> str:
    """Why a common mistake does not parse, and what to write instead."""
    if "/" in src.replace("//", ""):
        fixed = " // ".join(p.strip() for p in src.replace("//", "/").split("/"))
        return f": '/' is not integer division; use '//' ({fixed})"
    if "**" in src or "^" in src:
        return ": powers are written as products (n*n)"
    return ""


def _convert(node: ast.AST, text: str) -> sympy.Expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return sympy.Integer(node.value)
    if isinstance(node, ast.Name):
        return symbol(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _convert(node.operand, text)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _convert(node.left, text), _convert(node.right, text)
        try:
            return _BINOPS[type(node.op)](a, b)
        except ZeroDivisionError:
            raise ShapeSyntaxError(f"division by zero in dimension expression '{text}'") from None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max") and len(node.args) >= 2 and not node.keywords):
        fn = sympy.Min if node.func.id == "min" else sympy.Max
        return fn(*(_convert(a, text) for a in node.args))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        raise ShapeSyntaxError(f"malformed dimension expression '{text}'{_hint(text)}")
    raise ShapeSyntaxError(
        f"malformed dimension expression '{text}': only integers, symbols, "
        "+ - * // % and min()/max() are allowed")


def prove_equal(a: DimLike, b: DimLike) -> Truth:
    """Is ``a == b`` for every assignment of non-negative integers to the symbols?

    TRUE when the difference simplifies to 0; FALSE when it is provably non-zero
    for every assignment (e.g. ``n`` vs ``n + 1``); UNKNOWN otherwise (``n`` vs
    ``m``, or ``4*n`` vs ``5*n``, which agree at ``n = 0``).
    """
    return _prove_equal(Dim.of(a).expr, Dim.of(b).expr)


_UNDECIDED = object()


def _unit_linear_is_zero(d: sympy.Expr):
    """``d.is_zero`` without sympy's assumption system when ``d`` is an integer or
    ``c + s`` / ``c - s`` for one size symbol ``s`` (integer, >= 0): zero for some
    ``s`` exactly when ``-c`` (``c``) is >= 0, which sympy answers None (undecided), else
    False. Shape matching asks little else ("256 - ?p0_1": a pattern dimension against
    a static one), and sympy's answer took 2-3 ms each, cold (0.1-0.2 s of a block
    compile). Anything else: :data:`_UNDECIDED` (ask sympy)."""
    if d.is_Integer:
        return d == 0
    c, terms = d.as_coeff_add()
    if len(terms) != 1 or not c.is_Integer:
        return _UNDECIDED
    k, s = terms[0].as_coeff_Mul()
    if k not in (1, -1) or not isinstance(s, sympy.Symbol) or s != symbol(s.name):
        return _UNDECIDED
    return None if -c * k >= 0 else False


@functools.lru_cache(maxsize=16384)
def _prove_equal(a: sympy.Expr, b: sympy.Expr) -> Truth:
    # A polynomial difference (no //, %, min, max) is decided on its expanded form: simplify
    # cannot make a non-zero polynomial zero, and it dominated shape matching (1.5 s of a 6 s
    # transformer-block compile). Anything else goes through simplify.
    d = sympy.expand(a - b)
    z = _unit_linear_is_zero(d)
    if z is _UNDECIDED:
        z = d.is_zero if d.is_polynomial() else sympy.simplify(d).is_zero
    if z is True:
        return Truth.TRUE
    if z is False:
        return Truth.FALSE
    return Truth.UNKNOWN


def prove_le(a: DimLike, b: DimLike) -> Truth:
    """Is ``a <= b`` for every non-negative integer assignment?"""
    return _prove_le(Dim.of(a).expr, Dim.of(b).expr)


@functools.lru_cache(maxsize=16384)
def _prove_le(a: sympy.Expr, b: sympy.Expr) -> Truth:
    d = sympy.simplify(b - a)
    nn = d.is_nonnegative
    if nn is True:
        return Truth.TRUE
    if d.is_negative is True:
        return Truth.FALSE
    return Truth.UNKNOWN


def solve_for(pattern: Dim, value: Dim, unknowns: Iterable[str],
              zero_coefficient: bool = True) -> tuple[dict[str, Dim], list[tuple[Dim, Dim]]] | None:
    """Solve ``pattern == value`` for the one unbound symbol of ``pattern``.

    Supports patterns linear in that symbol, ``a*k + b`` (``a``, ``b`` free of
    ``k``). Returns ``({k: (value - b) // a}, conditions)`` where ``conditions``
    are ``(lhs, rhs)`` pairs that must hold at run time (``(value - b) % a == 0``
    when the division is not exact), or None when the pattern is not solvable.
    A symbolic ``a >= 0`` that may be 0 (``m*k`` with ``m = 0``: every ``k`` fits a size
    ``b``) gives ``k = (value - b) // max(a, 1)`` and the condition ``a*k + b == value``,
    never a division by zero; ``zero_coefficient=False`` refuses such a pattern (None), so
    that callers bind ``k`` from a pattern that determines it first.
    """
    unk = [s for s in pattern.symbols if s in set(unknowns)]
    if not unk:
        return {}, []
    if len(unk) != 1:
        return None
    k = symbol(unk[0])
    poly = sympy.Poly(pattern.expr, k) if pattern.expr.is_polynomial(k) else None
    if poly is None or poly.degree() != 1:
        return None
    a, b = poly.all_coeffs()
    num = Dim(value.expr - b)
    a_dim = Dim(a)
    if not a.is_number and prove_le(1, a_dim) is not Truth.TRUE and prove_le(0, a_dim) is Truth.TRUE:
        if not zero_coefficient:
            return None
        sol = Dim(_floordiv(num.expr, sympy.Max(a, 1)))
        back = Dim(a * sol.expr + b)
        return {unk[0]: sol}, ([] if prove_equal(back, value) is Truth.TRUE else [(back, value)])
    sol = Dim(_floordiv(num.expr, a)) if a != 1 else num
    conds: list[tuple[Dim, Dim]] = []
    if a != 1:
        rem = num % a_dim
        if prove_equal(rem, 0) is not Truth.TRUE:
            conds.append((rem, Dim.of(0)))
    return {unk[0]: sol}, conds
