"""The op table: every relax op is declared ONCE here-through (signature, attributes,
shape rule, legalization), and the dialect (IRDL), the Python builders, shape
inference and legalization all read the same declaration.

Declaring an op::

    @op("add", operands=["lhs", "rhs"], summary="elementwise sum, numpy broadcasting")
    def _add(call: InferCall) -> TensorSig:
        return broadcast_binary(call)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from mlir import ir

from ..shapes import (Dim, Shape, ShapeSyntaxError, TensorSig, Truth, UNKNOWN, prove_equal, prove_le)

REQUIRED = object()


class RelaxError(Exception):
    """A compile-time error about one op; the pass reports it at the op's location."""


@dataclass(frozen=True)
class Attr:
    """A declared attribute. ``kind`` picks its MLIR form and its Python value.

    kinds: int (i64), ints (array<i64: ...>), float (f64), bool, str, dtype (a type),
    shape (#relax.shape, may hold symbols), symbol (@name).
    """

    name: str
    kind: str
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


ATTR_KINDS = {
    # kind: IRDL base constraint
    "int": "#builtin.integer",
    "bool": "#builtin.integer",
    "ints": "#builtin.dense_array",
    "float": "#builtin.float",
    "str": "#builtin.string",
    "dtype": "#builtin.type",
    "shape": "@relax::@shape",
    "symbol": "#builtin.symbol_ref",
    "dim": "any",  # one symbolic dimension, 4 or "n - 1" (IRDL cannot express any_of bases; checked in Python)
}


@dataclass(frozen=True)
class Operand:
    name: str
    variadic: bool = False


@dataclass
class OpDef:
    """One relax op: everything the compiler knows about it, in one place."""

    name: str
    summary: str
    operands: list[Operand]
    results: list[Operand]
    attrs: list[Attr]
    family: str
    infer: Optional[Callable[["InferCall"], Any]] = None
    legalize: Optional[Callable[..., Any]] = None
    extra: dict = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"relax.{self.name}"

    def attr(self, name: str) -> Optional[Attr]:
        for a in self.attrs:
            if a.name == name:
                return a
        return None


OPS: dict[str, OpDef] = {}


def _operands(spec: Sequence) -> list[Operand]:
    out = []
    for s in spec:
        if isinstance(s, Operand):
            out.append(s)
        elif s.startswith("*"):
            out.append(Operand(s[1:], variadic=True))
        else:
            out.append(Operand(s))
    return out


def op(name: str, *, operands: Sequence = (), results: Sequence = ("result",),
       attrs: Sequence[Attr] = (), summary: str, family: Optional[str] = None):
    """Decorator declaring op ``relax.<name>`` with its shape rule (the decorated function).

    ``"*args"`` in operands/results marks a variadic group.
    """

    def deco(fn: Callable[["InferCall"], Any]) -> Callable:
        if name in OPS:
            raise ValueError(f"relax.{name} is declared twice")
        OPS[name] = OpDef(name=name, summary=summary, operands=_operands(operands),
                          results=_operands(results), attrs=list(attrs),
                          family=family or fn.__module__.rsplit(".", 1)[-1], infer=fn)
        return fn

    return deco


def legalization(*names: str):
    """Attach a legalization (op -> loop-level kernel) to already declared ops."""

    def deco(fn):
        for n in names:
            OPS[n].legalize = fn
        return fn

    return deco


# -- attribute values -------------------------------------------------------------

def attr_to_python(kind: str, a: ir.Attribute) -> Any:
    if kind == "int":
        return ir.IntegerAttr(a).value
    if kind == "bool":
        return bool(ir.IntegerAttr(a).value)
    if kind == "ints":
        return list(ir.DenseI64ArrayAttr(a))
    if kind == "float":
        return ir.FloatAttr(a).value
    if kind == "str":
        return ir.StringAttr(a).value
    if kind == "dtype":
        return str(ir.TypeAttr(a).value)
    if kind == "shape":
        return Shape.from_attr(a)
    if kind == "symbol":
        return ir.FlatSymbolRefAttr(a).value
    if kind == "dim":
        if isinstance(a, ir.IntegerAttr):
            return Dim.of(ir.IntegerAttr(a).value)
        return Dim.of(ir.StringAttr(a).value)
    raise ValueError(kind)


def python_to_attr(kind: str, v: Any) -> ir.Attribute:
    if kind == "int":
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))
    if kind == "bool":
        return ir.BoolAttr.get(bool(v))
    if kind == "ints":
        return ir.DenseI64ArrayAttr.get([int(x) for x in v])
    if kind == "float":
        return ir.FloatAttr.get(ir.F64Type.get(), float(v))
    if kind == "str":
        return ir.StringAttr.get(str(v))
    if kind == "dtype":
        return ir.TypeAttr.get(v if isinstance(v, ir.Type) else ir.Type.parse(str(v)))
    if kind == "shape":
        return Shape.of(v).to_attr()
    if kind == "symbol":
        return ir.FlatSymbolRefAttr.get(str(v))
    if kind == "dim":
        d = Dim.of(v)
        if d.is_static:
            return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d.value)
        return ir.StringAttr.get(str(d))
    raise ValueError(kind)


def _attr_ok(kind: str, a: ir.Attribute) -> bool:
    try:
        if kind == "bool":
            return isinstance(a, ir.BoolAttr)
        if kind == "int":
            return isinstance(a, ir.IntegerAttr) and not isinstance(a, ir.BoolAttr)
        attr_to_python(kind, a)
        return True
    except (ValueError, TypeError, ShapeSyntaxError):
        return False


def read_attrs(opdef: OpDef, operation: ir.Operation) -> dict[str, Any]:
    """Decode the declared attributes of an op (defaults filled in); RelaxError when malformed."""
    out: dict[str, Any] = {}
    attrs = operation.attributes
    for a in opdef.attrs:
        if a.name in attrs:
            raw = attrs[a.name]
            if not _attr_ok(a.kind, raw):
                raise RelaxError(f"'{opdef.full_name}' attribute '{a.name}' must be a {a.kind}, got {raw}")
            out[a.name] = attr_to_python(a.kind, raw)
        elif a.required:
            raise RelaxError(f"'{opdef.full_name}' requires attribute '{a.name}'")
        else:
            out[a.name] = a.default
    return out


# -- the inference interface ---------------------------------------------------

@dataclass
class Check:
    """A relation a rule needs and could not prove: checked at run time (relax.assert).

    ``predicate`` is ``"eq"`` (lhs == rhs) or ``"le"`` (lhs <= rhs).
    """

    lhs: Dim
    rhs: Dim
    message: str
    predicate: str = "eq"


class InferCall:
    """What a shape rule sees: the operand signatures, decoded attributes, and the checker."""

    def __init__(self, opdef: OpDef, inputs: list[TensorSig], attrs: dict[str, Any],
                 operation: Optional[ir.Operation] = None, declared: Optional[list] = None,
                 scope: Optional["Scope"] = None):
        self.opdef = opdef
        self.inputs = inputs
        self.attrs = attrs
        self.operation = operation
        self.declared = declared or []      # declared result TensorSigs (None where not a tensor)
        self.scope = scope
        self.checks: list[Check] = []

    @property
    def name(self) -> str:
        return self.opdef.full_name

    def __getitem__(self, attr: str) -> Any:
        return self.attrs[attr]

    def error(self, message: str) -> RelaxError:
        """Build the error to raise: ``raise call.error("...")``."""
        return RelaxError(f"'{self.name}' {message}")

    def require_equal(self, a, b, what: str) -> Truth:
        """Need ``a == b``: error when provably false, run-time check when unknown."""
        return self._require(a, b, what, "eq")

    def require_le(self, a, b, what: str) -> Truth:
        """Need ``a <= b``: error when provably false, run-time check when unknown."""
        return self._require(a, b, what, "le")

    _PREDICATES = {"eq": (prove_equal, "==", "!="), "le": (prove_le, "<=", ">")}

    def _require(self, a, b, what: str, predicate: str) -> Truth:
        if a is UNKNOWN or b is UNKNOWN:
            raise self.error(f"{what}: cannot check a relation on an unknown dimension '?'; "
                             "name it with relax.match_cast")
        prove, holds, fails = self._PREDICATES[predicate]
        t = prove(a, b)
        if t is Truth.FALSE:
            raise self.error(f"{what}: {a} {fails} {b}")
        if t is Truth.UNKNOWN:
            self.checks.append(Check(Dim.of(a), Dim.of(b), f"{self.name}: {what}: {a} {holds} {b}", predicate))
        return t


class Scope:
    """Symbols in scope in a graph function, and access to other graph functions' signatures."""

    def __init__(self, bound: Optional[set[str]] = None,
                 lookup: Optional[Callable[[str], Any]] = None, module: Optional[ir.Operation] = None):
        self.bound: set[str] = set(bound or ())
        self.lookup = lookup
        self.module = module    # the enclosing module (its declarations: relax.state)
