"""Kernel-building helpers shared by the op families' legalizations.

A legalization turns one relax op into a loop-level kernel: a ``func.func private``
in destination-passing style (inputs, then outputs, then ``index`` scalars for the
call's ``tir_vars``) that returns its outputs, written with linalg on tensors
(``outs`` = the output arguments), tensor, arith and math ops. Kernel types are the
op's tensor types without the ``#relax.shape`` encoding, so one kernel serves every
value of the symbolic dims; nothing in a kernel depends on a concrete value of a
symbolic dim (sizes are read with ``tensor.dim``).

:class:`KernelBuilder` builds the kernel as IR with the MLIR Python bindings' typed op
builders (``func.FuncOp``, ``linalg.GenericOp`` with ``ir.AffineMap`` indexing maps, the
named linalg ops with their builtin regions, and the arith, math, tensor and scf OpViews);
values are ``ir.Value``. Nothing is written as text and parsed back: relax-legalize moves
the built function into the program, or drops it when a kernel of the same structure is
there (:mod:`relax_mlir.transforms.kernel_hash`). Two things mimic the parser so the IR is
the one the text used to give, hash included: ``linalg.matmul``/``batch_matmul`` carry
their (default) ``indexing_maps`` and named convolutions their memoized maps. No construct
needs a parse; the bindings' own enum-attribute builders (``#linalg.iterator_type``) parse
their one-word attributes internally.

A legalization is declared next to its op::

    @legalization("exp", "log")
    def _unary(call: LegalizeCall) -> Kernel:
        kb = call.builder()
        (r,) = kb.generic([(kb.ins[0], identity_map(1))], [(kb.outs[0], identity_map(1))],
                          ["parallel"], lambda x, o: [kb.un(math_d.ExpOp, x)])
        return kb.finish([r])

Ops are named by OpView class (``arith.AddFOp``) or by MLIR name (``"arith.addf"``, looked
up in :func:`op_class`); indexing-map results by AffineExpr or a string (``"d0 * 2 + d1"``).
"""

from __future__ import annotations

import ast
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, builtin, func, linalg, scf, tensor
from mlir.dialects import math as math_d

from ..shapes import Dim, TensorSig
from .registry import OpDef, RelaxError

FLOATS = ("f16", "bf16", "f32", "f64")
#: The unit attribute marking loop-level kernels.
KERNEL_ATTR = "relax.kernel"


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def int_width(dtype: str) -> int:
    return 64 if dtype == "index" else int(dtype.lstrip("ui"))


def is_unsigned(dtype: str) -> bool:
    """``ui8`` .. ``ui64`` and ``i1`` (bool: False < True) order and extend as unsigned."""
    return dtype.startswith("ui") or dtype == "i1"


def signless(dtype: str) -> str:
    """The MLIR type that arith computes in: ``ui8`` -> ``i8`` (arith takes signless
    integers only; signedness lives in the op: divui, cmpi ult, extui, uitofp)."""
    return dtype[1:] if dtype.startswith("ui") else dtype


# -- kernel types ----------------------------------------------------------------------

@dataclass(frozen=True)
class KType:
    """A kernel tensor type: static dims or None (dynamic), and the element type."""

    dims: tuple
    dtype: str

    @staticmethod
    def of(sig: TensorSig) -> "KType":
        return KType(tuple(d.value if (isinstance(d, Dim) and d.is_static) else None for d in sig.shape),
                     sig.dtype)

    @property
    def rank(self) -> int:
        return len(self.dims)

    def with_dtype(self, dtype: str) -> "KType":
        return KType(self.dims, dtype)

    def __str__(self) -> str:
        return "tensor<" + "".join(("?" if d is None else str(d)) + "x" for d in self.dims) + self.dtype + ">"

    @property
    def tag(self) -> str:
        """Name fragment: ``r2`` (all dynamic), ``Dx512`` (mixed), ``4x4`` (static), ``r0``."""
        if not self.dims or all(d is None for d in self.dims):
            return f"r{self.rank}"
        return "x".join("D" if d is None else str(d) for d in self.dims)


@dataclass
class Kernel:
    """One kernel: its (readable) symbol name, its ``func.func`` (built in ``module``, which
    owns it until relax-legalize moves it into the program or drops it as a duplicate), and
    the symbolic values the call passes as trailing index arguments."""

    name: str
    func: ir.Operation
    module: ir.Module
    tir_vars: list = field(default_factory=list)

    @property
    def text(self) -> str:
        """The function as MLIR text (for reading; relax-legalize never parses it)."""
        return str(self.func)


class LegalizeCall:
    """What a legalization sees: the op's declaration, decoded attributes and types."""

    def __init__(self, opdef: OpDef, attrs: dict[str, Any], inputs: list[TensorSig],
                 outputs: list[TensorSig]):
        self.opdef = opdef
        self.attrs = attrs
        self.inputs = inputs
        self.outputs = outputs
        self.in_types = [KType.of(s) for s in inputs]
        self.out_types = [KType.of(s) for s in outputs]
        #: ``(operand, size, what)``: indices relax-legalize checks (relax.check_indices)
        self.index_checks: list[tuple[int, Any, str]] = []

    def check_indices(self, operand: int, size, what: str) -> None:
        """Every element of input ``operand`` must lie in ``[-size, size)``: relax-legalize
        checks a constant at compile time, else puts a ``relax.check_indices`` before the
        call (a run-time IndexError naming ``what`` and the op's location)."""
        self.index_checks.append((operand, size, what))

    @property
    def name(self) -> str:
        return self.opdef.name

    def __getitem__(self, attr: str) -> Any:
        return self.attrs[attr]

    def error(self, message: str) -> RelaxError:
        return RelaxError(f"'{self.opdef.full_name}' cannot be legalized: {message}")

    def kernel_name(self, tag: str = "") -> str:
        dtype = (self.in_types or self.out_types)[0].dtype
        parts = ["relax", self.name] + ([tag] if tag else []) + [dtype]
        parts += [t.tag for t in self.in_types] or [t.tag for t in self.out_types]
        return _sanitize("_".join(parts))

    def builder(self, tag: str = "", n_vars: int = 0) -> "KernelBuilder":
        """A builder for this op's kernel: arguments inputs, outputs, ``n_vars`` index scalars."""
        return KernelBuilder(self.kernel_name(tag), self.in_types, self.out_types, n_vars)


def _sanitize(name: str) -> str:
    return "".join(c if (c.isalnum() or c == "_") else ("m" if c == "-" else "_") for c in name)


def attr_tag(**kw) -> str:
    """A name fragment for attributes: ``axes=[1, 2]`` -> ``axes1_2``; None is left out."""
    out = []
    for k, v in kw.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, (list, tuple)):
            v = "_".join(str(x) for x in v)
        out.append(f"{k}{v}")
    return "_".join(out)


# -- constants -------------------------------------------------------------------------

def lowest(dtype: str):
    if is_float(dtype):
        return -math.inf
    return 0 if is_unsigned(dtype) else -(2 ** (int_width(dtype) - 1))


def highest(dtype: str):
    if is_float(dtype):
        return math.inf
    if dtype == "i1":
        return 1
    return 2 ** int_width(dtype) - 1 if is_unsigned(dtype) else 2 ** (int_width(dtype) - 1) - 1


def signless_value(value: int, dtype: str) -> int:
    """``value`` of integer ``dtype`` as the literal of its signless type (two's
    complement: ui8 255 is i8 -1), which is how arith.constant prints it."""
    w = int_width(dtype)
    value = int(value) & ((1 << w) - 1)
    return value - (1 << w) if (w > 1 and value >= 1 << (w - 1)) else value


# -- IR helpers --------------------------------------------------------------------------

#: ``arith.addf`` -> ``arith.AddFOp``: every op class of the dialects kernels use, by name,
#: so a legalization may name an op by its MLIR name or pass the OpView class itself.
_OP_CLASSES: dict[str, type] = {}


def op_class(op) -> type:
    """The OpView class of ``op`` (an OpView class, or its name such as ``"arith.addf"``)."""
    if isinstance(op, type):
        return op
    if not _OP_CLASSES:
        for mod in (arith, math_d, linalg, tensor, scf, func):
            for v in vars(mod).values():
                if isinstance(v, type) and issubclass(v, ir.OpView) and getattr(v, "OPERATION_NAME", None):
                    # the dialect module's subclass (e.g. arith.ConstantOp's builder) wins over
                    # the generated base class of the same name
                    if v.OPERATION_NAME not in _OP_CLASSES or issubclass(v, _OP_CLASSES[v.OPERATION_NAME]):
                        _OP_CLASSES[v.OPERATION_NAME] = v
    try:
        return _OP_CLASSES[op]
    except KeyError:
        raise ValueError(f"no typed builder for '{op}'") from None


def element_type(dtype: str) -> ir.Type:
    """The MLIR type of a dtype name in the current context (``ui8``: unsigned, as tensor
    elements are stored; :func:`signless` gives the type arith computes in)."""
    if dtype == "index":
        return ir.IndexType.get()
    if dtype in _FLOAT_TYPES:
        return _FLOAT_TYPES[dtype].get()
    if dtype.startswith("ui"):
        return ir.IntegerType.get_unsigned(int(dtype[2:]))
    return ir.IntegerType.get_signless(int_width(dtype))


_FLOAT_TYPES = {"f16": ir.F16Type, "bf16": ir.BF16Type, "f32": ir.F32Type, "f64": ir.F64Type}


def affine_expr(e) -> ir.AffineExpr:
    """An indexing-map result: an AffineExpr, an int, or a string over loop dims such as
    ``"d0"``, ``"0"`` or ``"d4 * 2 + d2 * 3"`` (``+ - *``, ``//`` (floordiv), ``%``)."""
    if isinstance(e, ir.AffineExpr):
        return e
    if isinstance(e, int):
        return ir.AffineConstantExpr.get(e)
    return _affine(ast.parse(e.strip(), mode="eval").body, e)


def _affine(node, src: str) -> ir.AffineExpr:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return ir.AffineConstantExpr.get(node.value)
    if isinstance(node, ast.Name) and node.id[:1] == "d" and node.id[1:].isdigit():
        return ir.AffineDimExpr.get(int(node.id[1:]))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return ir.AffineExpr.get_mul(_affine(node.operand, src), ir.AffineConstantExpr.get(-1))
    if isinstance(node, ast.BinOp):
        a, b = _affine(node.left, src), _affine(node.right, src)
        if isinstance(node.op, ast.Add):
            return ir.AffineExpr.get_add(a, b)
        if isinstance(node.op, ast.Sub):
            return ir.AffineExpr.get_add(a, ir.AffineExpr.get_mul(b, ir.AffineConstantExpr.get(-1)))
        if isinstance(node.op, ast.Mult):
            return ir.AffineExpr.get_mul(a, b)
        if isinstance(node.op, ast.FloorDiv):
            return ir.AffineExpr.get_floor_div(a, b)
        if isinstance(node.op, ast.Mod):
            return ir.AffineExpr.get_mod(a, b)
    raise ValueError(f"not an affine map result: {src!r}")


def _mixed(values: Sequence) -> tuple[list, list[int]]:
    """(dynamic operands, static array) of a mixed static/dynamic list (offsets, sizes,
    strides, output shapes): ints go to the static array, values become operands."""
    dyn, static = [], []
    for v in values:
        if isinstance(v, int):
            static.append(v)
        else:
            dyn.append(v)
            static.append(_DYNAMIC)
    return dyn, static


_DYNAMIC = ir.ShapedType.get_dynamic_size()


# -- the builder -----------------------------------------------------------------------

class KernelBuilder:
    """Builds one kernel function as IR with the bindings' typed op builders.

    Values are ``ir.Value``; :attr:`types` holds each value's logical type (a
    :class:`KType` for tensors, a dtype name for scalars: ``ui8`` where the IR has the
    signless ``i8`` that arith computes in). Constants and ``tensor.dim`` of the arguments
    go to the top of the function (usable inside every region), once each. Build inside
    an MLIR context (a pass runs with one)."""

    def __init__(self, name: str, in_types: Sequence[KType], out_types: Sequence[KType], n_vars: int = 0):
        self.name = name
        self.in_types = list(in_types)
        self.out_types = list(out_types)
        self.loc = ir.Location.unknown()
        self.module = ir.Module.create(self.loc)   # owns the function until relax-legalize moves it
        arg_types = [self.tensor_type(t) for t in self.in_types + self.out_types] + [ir.IndexType.get()] * n_vars
        self.func = func.FuncOp("NAME", (arg_types, [self.tensor_type(t) for t in self.out_types]),
                                visibility="private", loc=self.loc, ip=ir.InsertionPoint(self.module.body))
        self.func.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
        self.entry = self.func.add_entry_block()
        args = list(self.entry.arguments)
        n_in, n_out = len(self.in_types), len(self.out_types)
        self.ins, self.outs, self.vars = args[:n_in], args[n_in:n_in + n_out], args[n_in + n_out:]
        self.types: dict[ir.Value, Any] = {}
        for v, t in zip(self.ins + self.outs, self.in_types + self.out_types):
            self.types[v] = t
        for v in self.vars:
            self.types[v] = "index"
        self._ips = [ir.InsertionPoint(self.entry)]
        self._last_const: Optional[ir.Operation] = None
        self._consts: dict[tuple, ir.Value] = {}
        self._dims: dict[tuple, ir.Value] = {}
        self._elements: set = set()     # unsigned values in their ui form (block args, extracts)

    # types and insertion
    def tensor_type(self, t: KType) -> ir.RankedTensorType:
        return ir.RankedTensorType.get([_DYNAMIC if d is None else d for d in t.dims], element_type(t.dtype))

    def ir_type(self, t) -> ir.Type:
        """The IR type of a logical type (a KType, or a scalar dtype computed signless)."""
        return self.tensor_type(t) if isinstance(t, KType) else element_type(signless(t))

    @property
    def ip(self) -> ir.InsertionPoint:
        return self._ips[-1]

    @contextmanager
    def at(self, block: ir.Block):
        """Build into ``block`` (a region's body) inside the ``with``."""
        self._ips.append(ir.InsertionPoint(block))
        try:
            yield block
        finally:
            self._ips.pop()

    def _top(self) -> ir.InsertionPoint:
        """Where function-level constants and dims go: after the last one."""
        if self._last_const is None:
            return ir.InsertionPoint.at_block_begin(self.entry)
        return ir.InsertionPoint.after(self._last_const)

    def create(self, op, *args, type_: Any = None, **kw) -> ir.Value:
        """Build ``op`` (OpView class or name) at the insertion point with ``args``; its
        single result, whose logical type is ``type_``."""
        v = op_class(op)(*args, loc=self.loc, ip=self.ip, **kw).result
        if type_ is not None:
            self.types[v] = type_
        return v

    def _named(self, cls, result: KType, ins: Sequence, outs: Sequence, **kw) -> ir.Value:
        """A named linalg op on tensors with its region (the bindings' builtin body)."""
        op = cls([self.tensor_type(result)], list(ins), list(outs), loc=self.loc, ip=self.ip, **kw)
        linalg.fill_builtin_region(op.operation)
        self.types[op.result] = result
        return op.result

    # values
    def const(self, value, dtype: str) -> ir.Value:
        """A function-level constant (usable inside regions)."""
        key = (repr(value), dtype)
        if key not in self._consts:
            t = element_type(signless(dtype))
            if is_float(dtype):
                attr = ir.FloatAttr.get(t, float(value))
            elif dtype == "index":
                attr = ir.IntegerAttr.get(t, int(value))
            else:
                attr = ir.IntegerAttr.get(t, signless_value(value, dtype))
            op = arith.ConstantOp(t, attr, loc=self.loc, ip=self._top())
            self._last_const = op.operation
            self._consts[key] = op.result
            self.types[op.result] = dtype
        return self._consts[key]

    def index(self, value: int) -> ir.Value:
        return self.const(int(value), "index")

    def dim(self, value: ir.Value, i: int) -> ir.Value:
        """Size of dim ``i`` of a kernel tensor as an index value (a constant when static)."""
        t: KType = self.types[value]
        if t.dims[i] is not None:
            return self.index(t.dims[i])
        key = (value, i)
        if key not in self._dims:
            c = self.index(i)
            op = tensor.DimOp(value, c, loc=self.loc, ip=self._top())
            self._last_const = op.operation
            self.types[op.result] = "index"
            self._dims[key] = op.result
        return self._dims[key]

    def dims(self, value: ir.Value) -> list[ir.Value]:
        return [self.dim(value, i) for i in range(self.types[value].rank)]

    def empty(self, t: KType, like: ir.Value) -> ir.Value:
        """``tensor.empty`` of type ``t`` whose dynamic sizes are those of ``like``'s dims."""
        return self.empty_dims(t, [self.dim(like, i) if d is None else d for i, d in enumerate(t.dims)])

    def empty_dims(self, t: KType, sizes: Sequence) -> ir.Value:
        """``tensor.empty`` of type ``t`` with the index values ``sizes`` for all its dims."""
        mixed = [s if d is None else d for s, d in zip(sizes, t.dims)]
        return self.create(tensor.EmptyOp, mixed, element_type(t.dtype), type_=t)

    def fill(self, value, dest: ir.Value) -> ir.Value:
        t: KType = self.types[dest]
        c = self.const(value, t.dtype)
        if t.dtype.startswith("ui"):    # linalg.fill's cast cannot take a ui scalar
            (r,) = self.generic([], [(dest, identity_map(t.rank))], ["parallel"] * t.rank, lambda o: [c])
            return r
        return self._named(linalg.FillOp, t, [c], [dest])

    def copy(self, src: ir.Value, dest: ir.Value) -> ir.Value:
        return self._named(linalg.CopyOp, self.types[dest], [src], [dest])

    # scalar helpers (usable in regions and at function level)
    # Scalar values keep their logical type in ``types`` (``ui8``); the IR has the
    # signless type arith works on.
    def bin(self, op, a: ir.Value, b: ir.Value, type_: Optional[str] = None) -> ir.Value:
        """A binary op (``"arith.addf"`` or ``arith.AddFOp``) whose result type is its operands'."""
        return self.create(op, a, b, type_=type_ or self.types[a])

    def un(self, op, a: ir.Value, type_: Optional[str] = None) -> ir.Value:
        return self.create(op, a, type_=type_ or self.types[a])

    def conv(self, op, v: ir.Value, to: str) -> ir.Value:
        """One conversion op (``"arith.extui"``, ``arith.BitcastOp``...) from ``v`` to ``to``."""
        return self.create(op, element_type(signless(to)), v, type_=to)

    def cmp(self, kind: str, pred: str, a: ir.Value, b: ir.Value) -> ir.Value:
        """``arith.cmpf``/``arith.cmpi`` (``kind``) with predicate ``pred`` (``"olt"``, ``"slt"``)."""
        cls, preds = (arith.CmpFOp, arith.CmpFPredicate) if kind == "cmpf" else (arith.CmpIOp, arith.CmpIPredicate)
        p = getattr(preds, pred, None)
        p = getattr(preds, pred.upper()) if p is None else p
        return self.create(cls, p, a, b, type_="i1")

    def select(self, c: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.create(arith.SelectOp, c, a, b, type_=self.types[a])

    def cast(self, v: ir.Value, to: str) -> ir.Value:
        """Numeric conversion between scalar types, numpy's results where numpy defines
        them: integers wrap (truncate) or extend by the source's signedness; float to
        integer truncates toward zero. Where numpy's result is undefined (NaN, +-inf,
        out of range) float to integer saturates and NaN gives 0, never LLVM poison."""
        frm = self.types[v]
        if frm == to:
            return v
        if signless(frm) == signless(to):     # i8 <-> ui8: same bits, numpy's result too
            return self.conv(arith.BitcastOp, v, to)
        if frm == "index" or to == "index":
            if is_float(frm) or is_float(to):   # through i64
                return self.cast(self.cast(v, "i64"), to)
            return self.conv(arith.IndexCastUIOp if is_unsigned(frm) else arith.IndexCastOp, v, to)
        if is_float(frm) and is_float(to):
            wider = FLOATS.index(to) > FLOATS.index(frm) if {frm, to} != {"f16", "bf16"} else None
            if wider is None:
                return self.cast(self.cast(v, "f32"), to)
            return self.conv(arith.ExtFOp if wider else arith.TruncFOp, v, to)
        if is_float(frm):
            if to == "i1":
                return self.cmp("cmpf", "une", v, self.const(0.0, frm))
            return self._float_to_int(v, to)
        if is_float(to):
            return self.conv(arith.UIToFPOp if is_unsigned(frm) else arith.SIToFPOp, v, to)
        if to == "i1":
            return self.cmp("cmpi", "ne", v, self.const(0, frm))
        if int_width(to) > int_width(frm):
            return self.conv(arith.ExtUIOp if is_unsigned(frm) else arith.ExtSIOp, v, to)
        return self.conv(arith.TruncIOp, v, to)

    def _float_to_int(self, v: ir.Value, to: str) -> ir.Value:
        """fptosi/fptoui are poison outside the target's range (and for NaN); poison that
        reaches an index (take) or a branch is undefined behaviour, so saturate first."""
        frm = self.types[v]
        if frm in ("f16", "bf16"):
            v, frm = self.cast(v, "f32"), "f32"
        w = int_width(to)
        lo, hi = (0.0, 2.0 ** w) if to.startswith("ui") else (-(2.0 ** (w - 1)), 2.0 ** (w - 1))
        clo, chi = self.const(lo, frm), self.const(hi, frm)
        ok = self.bin(arith.AndIOp, self.cmp("cmpf", "oge", v, clo), self.cmp("cmpf", "olt", v, chi), "i1")
        safe = self.select(ok, v, self.const(0.0, frm))
        r = self.conv(arith.FPToUIOp if to.startswith("ui") else arith.FPToSIOp, safe, to)
        r = self.select(self.cmp("cmpf", "oge", v, chi), self.const(highest(to), to), r)
        return self.select(self.cmp("cmpf", "olt", v, clo), self.const(lowest(to), to), r)

    def _unrealized(self, v: ir.Value, to: ir.Type, logical: str) -> ir.Value:
        op = builtin.UnrealizedConversionCastOp([to], [v], loc=self.loc, ip=self.ip)
        self.types[op.result] = logical
        return op.result

    def from_element(self, v: ir.Value) -> ir.Value:
        """A tensor element (``ui8`` in the IR) as the signless value arith takes; its
        logical type stays ``ui8``. The cast pair folds away in reconcile-unrealized-casts
        once both sides are LLVM's i8."""
        t = self.types[v]
        if not t.startswith("ui"):
            return v
        return self._unrealized(v, element_type(signless(t)), t)

    def to_element(self, v: ir.Value, dtype: str) -> ir.Value:
        """The inverse of :meth:`from_element`: a value to store into a ``dtype`` tensor."""
        if not dtype.startswith("ui") or v in self._elements:
            return v
        r = self._unrealized(v, element_type(dtype), dtype)
        self._elements.add(r)
        return r

    def extract(self, t: ir.Value, pos: Sequence[ir.Value]) -> ir.Value:
        """One element of a kernel tensor (as a computable value)."""
        v = self.create(tensor.ExtractOp, t, list(pos), type_=self.types[t].dtype)
        self._elements.add(v)
        return self.from_element(v)

    def linalg_index(self, i: int) -> ir.Value:
        return self.create(linalg.IndexOp, i, type_="index")

    # structured and tensor ops
    def generic(self, ins: Sequence[tuple[ir.Value, Sequence]], outs: Sequence[tuple[ir.Value, Sequence]],
                iterators: Sequence[str], body: Callable[..., Sequence[ir.Value]]) -> list[ir.Value]:
        """``linalg.generic`` over ``len(iterators)`` loops.

        ``ins``/``outs``: (tensor value, indexing-map results such as ``["d0", "0"]``, see
        :func:`affine_expr`). ``body(*block_args)`` builds the region (with this builder)
        and returns the values to yield, one per output. Returns the results.
        """
        n = len(iterators)
        operands = list(ins) + list(outs)
        maps = [ir.AffineMap.get(n, 0, [affine_expr(e) for e in m]) for _, m in operands]
        out_types = [self.types[v] for v, _ in outs]
        op = linalg.GenericOp([self.tensor_type(t) for t in out_types], [v for v, _ in ins], [v for v, _ in outs],
                              maps, [getattr(linalg.IteratorType, i) for i in iterators], loc=self.loc, ip=self.ip)
        block = op.regions[0].blocks.append(*[element_type(self.types[v].dtype) for v, _ in operands])
        args = list(block.arguments)
        for a, (v, _) in zip(args, operands):
            self.types[a] = self.types[v].dtype
        with self.at(block):
            ys = body(*[self.from_element(a) for a in args])
            ys = [self.to_element(y, t.dtype) for y, t in zip(ys, out_types)]
            linalg.YieldOp(ys, loc=self.loc, ip=self.ip)
        res = list(op.results)
        for r, t in zip(res, out_types):
            self.types[r] = t
        return res

    def matmul(self, a: ir.Value, b: ir.Value, acc: ir.Value, batch: bool = False,
               broadcast_a: bool = False) -> ir.Value:
        """``linalg.matmul`` (``batch``: ``linalg.batch_matmul``) accumulating into ``acc``;
        ``broadcast_a``: a batch matmul whose A is one (M, K) matrix for every batch (the
        op's ``indexing_maps`` with A's map ``(b, m, n, k) -> (m, k)``)."""
        r = self._named(linalg.BatchMatmulOp if batch else linalg.MatmulOp, self.types[acc], [a, b], [acc])
        # the parser stores the default maps on the op; so does this (one IR, one hash)
        maps = linalg.get_indexing_maps(r.owner)
        if broadcast_a:
            amap = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(1), ir.AffineDimExpr.get(3)])
            maps = ir.ArrayAttr.get([ir.AffineMapAttr.get(amap)] + list(maps)[1:])
        r.owner.attributes["indexing_maps"] = maps
        return r

    def conv2d(self, x: ir.Value, w: ir.Value, acc: ir.Value, strides: Sequence[int], dilation: Sequence[int],
               grouped: bool = False) -> ir.Value:
        """``linalg.conv_2d_nchw_fchw`` (``grouped``: ``conv_2d_ngchw_gfchw``) into ``acc``."""
        cls = linalg.Conv2DNgchwGfchwOp if grouped else linalg.Conv2DNchwFchwOp
        i64x2 = ir.RankedTensorType.get([2], ir.IntegerType.get_signless(64))
        attr = lambda v: ir.DenseElementsAttr.get(np.asarray(v, dtype=np.int64), type=i64x2)  # noqa: E731
        r = self._named(cls, self.types[acc], [x, w], [acc], strides=attr(strides), dilations=attr(dilation))
        linalg.get_indexing_maps(r.owner)   # memoizes them on the op, as the parser's verifier does
        return r

    def transpose(self, src: ir.Value, dest: ir.Value, permutation: Sequence[int]) -> ir.Value:
        op = linalg.TransposeOp([self.tensor_type(self.types[dest])], src, dest, list(permutation),
                                loc=self.loc, ip=self.ip)
        linalg.fill_builtin_region(op.operation)
        r = op.operation.results[0]
        self.types[r] = self.types[dest]
        return r

    def extract_slice(self, src: ir.Value, t: KType, offsets: Sequence, sizes: Sequence,
                      strides: Optional[Sequence] = None) -> ir.Value:
        """``tensor.extract_slice`` of type ``t``; offsets, sizes, strides: ints or index values."""
        strides = [1] * len(offsets) if strides is None else strides
        (do, so), (dz, sz), (ds, ss) = _mixed(offsets), _mixed(sizes), _mixed(strides)
        return self.create(tensor.ExtractSliceOp, self.tensor_type(t), src, do, dz, ds, so, sz, ss, type_=t)

    def insert_slice(self, src: ir.Value, dest: ir.Value, offsets: Sequence, sizes: Sequence,
                     strides: Optional[Sequence] = None) -> ir.Value:
        strides = [1] * len(offsets) if strides is None else strides
        (do, so), (dz, sz), (ds, ss) = _mixed(offsets), _mixed(sizes), _mixed(strides)
        return self.create(tensor.InsertSliceOp, src, dest, do, dz, ds, so, sz, ss, type_=self.types[dest])

    def pad(self, src: ir.Value, low: Sequence, high: Sequence, value: ir.Value, t: KType) -> ir.Value:
        """``tensor.pad`` of ``src`` to type ``t`` with the scalar ``value``; ``low``, ``high``:
        ints or index values."""
        (dl, sl), (dh, sh) = _mixed(low), _mixed(high)
        op = tensor.PadOp(self.tensor_type(t), src, dl, dh, sl, sh, loc=self.loc, ip=self.ip)
        block = op.regions[0].blocks.append(*[ir.IndexType.get()] * t.rank)
        tensor.YieldOp(value, loc=self.loc, ip=ir.InsertionPoint(block))
        self.types[op.result] = t
        return op.result

    def expand_shape(self, src: ir.Value, groups: Sequence[Sequence[int]], t: KType, sizes: Sequence) -> ir.Value:
        """``tensor.expand_shape`` to ``t``; ``sizes``: its dims (ints or index values)."""
        dyn, static = _mixed([d if d is not None else s for d, s in zip(t.dims, sizes)])
        return self.create(tensor.ExpandShapeOp, self.tensor_type(t), src, _groups(groups), dyn, static, type_=t)

    def collapse_shape(self, src: ir.Value, groups: Sequence[Sequence[int]], t: KType) -> ir.Value:
        return self.create(tensor.CollapseShapeOp, self.tensor_type(t), src, _groups(groups), type_=t)

    def reshape(self, src: ir.Value, sizes: Sequence[ir.Value], t: KType) -> ir.Value:
        """``tensor.reshape`` of ``src`` to ``t`` whose dims are the index values ``sizes``."""
        st = ir.RankedTensorType.get([len(sizes)], ir.IndexType.get())
        shape = self.create(tensor.FromElementsOp, st, list(sizes))
        return self.create(tensor.ReshapeOp, self.tensor_type(t), src, shape, type_=t)

    def if_(self, cond: ir.Value, types: Sequence, then: Callable[[], Sequence[ir.Value]],
            else_: Callable[[], Sequence[ir.Value]]) -> list[ir.Value]:
        """``scf.if`` with results of logical types ``types``; each branch builds its
        region and returns the values it yields."""
        op = scf.IfOp(cond, [self.ir_type(t) for t in types], has_else=True, loc=self.loc, ip=self.ip)
        for block, branch in ((op.then_block, then), (op.else_block, else_)):
            with self.at(block):
                scf.YieldOp(list(branch()), loc=self.loc, ip=self.ip)
        res = list(op.results)
        for r, t in zip(res, types):
            self.types[r] = t
        return res

    def while_(self, inits: Sequence[ir.Value], before: Callable[..., tuple[ir.Value, Sequence[ir.Value]]],
               after: Callable[..., Sequence[ir.Value]]) -> list[ir.Value]:
        """``scf.while`` carrying ``inits`` (results of the same types): ``before(*args)``
        returns (condition, values passed on), ``after(*args)`` the next iteration's values."""
        types = [self.types[v] for v in inits]
        irt = [v.type for v in inits]
        op = scf.WhileOp(irt, list(inits), loc=self.loc, ip=self.ip)
        for region, fn in ((op.before, before), (op.after, after)):
            block = region.blocks.append(*irt)
            args = list(block.arguments)
            for a, t in zip(args, types):
                self.types[a] = t
            with self.at(block):
                if fn is before:
                    cond, vals = fn(*args)
                    scf.ConditionOp(cond, list(vals), loc=self.loc, ip=self.ip)
                else:
                    scf.YieldOp(list(fn(*args)), loc=self.loc, ip=self.ip)
        res = list(op.results)
        for r, t in zip(res, types):
            self.types[r] = t
        return res

    def finish(self, results: Sequence[ir.Value], tir_vars: Sequence = ()) -> Kernel:
        """The kernel: returns ``results`` (one per output argument)."""
        assert len(results) == len(self.outs), (results, self.outs)
        func.ReturnOp(list(results), loc=self.loc, ip=ir.InsertionPoint(self.entry))
        return Kernel(self.name, self.func.operation, self.module, list(tir_vars))


def _groups(groups: Sequence[Sequence[int]]) -> ir.ArrayAttr:
    """A reassociation attribute: ``[[0], [1, 2]]``."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, j) for j in g]) for g in groups])


# -- shared kernel shapes ------------------------------------------------------------------

def broadcast_map(src: KType, out: KType) -> list[str]:
    """Indexing map results reading ``src`` broadcast (numpy rules) into ``out``'s loops."""
    off = out.rank - src.rank
    res = []
    for i, d in enumerate(src.dims):
        o = out.dims[off + i]
        res.append("0" if (d == 1 and o != 1) else f"d{off + i}")
    return res


def identity_map(rank: int) -> list[str]:
    return [f"d{i}" for i in range(rank)]


def compute_type(dtype: str) -> str:
    """Arithmetic type for ``dtype``: half types compute in f32."""
    return "f32" if dtype in ("f16", "bf16") else dtype


def elementwise(kb: KernelBuilder, ins: Sequence[ir.Value], scalar: Callable[..., ir.Value],
                out: Optional[ir.Value] = None) -> ir.Value:
    """One parallel linalg.generic over ``out`` (default the first output) reading
    ``ins`` with numpy broadcasting; ``scalar(*in_elems)`` emits the element result."""
    out = out or kb.outs[0]
    ot: KType = kb.types[out]
    maps = [(v, broadcast_map(kb.types[v], ot)) for v in ins]
    (r,) = kb.generic(maps, [(out, identity_map(ot.rank))], ["parallel"] * ot.rank,
                      lambda *a: [scalar(*a[:len(ins)])])
    return r


def reduce_into(kb: KernelBuilder, src: ir.Value, src_map: Sequence[str], acc: ir.Value, axes: Sequence[int],
                rank: int, combine: Callable[[ir.Value, ir.Value], ir.Value],
                extra_ins: Sequence[tuple[ir.Value, Sequence[str]]] = (),
                pre: Optional[Callable[..., ir.Value]] = None) -> ir.Value:
    """Reduce ``src`` over loop dims ``axes`` into ``acc`` (already holding the identity).

    The loop domain has ``rank`` dims; ``acc`` is indexed by the kept dims, in order.
    ``pre(x, *extra)`` transforms each element before ``combine(element, acc)``.
    """
    kept = [f"d{i}" for i in range(rank) if i not in axes]
    its = ["reduction" if i in axes else "parallel" for i in range(rank)]
    ins = [(src, list(src_map))] + list(extra_ins)

    def body(*a):
        x = pre(*a[:-1]) if pre else a[0]
        return [combine(x, a[-1])]

    (r,) = kb.generic(ins, [(acc, kept)], its, body)
    return r


def reduced_type(t: KType, axes: Sequence[int], dtype: Optional[str] = None) -> KType:
    return KType(tuple(d for i, d in enumerate(t.dims) if i not in axes), dtype or t.dtype)


def reduced_empty(kb: KernelBuilder, src: ir.Value, axes: Sequence[int], dtype: str) -> ir.Value:
    """An empty tensor with ``src``'s dims minus ``axes`` (sizes read from ``src``)."""
    t: KType = kb.types[src]
    rt = reduced_type(t, axes, dtype)
    return kb.empty_dims(rt, [kb.dim(src, i) for i in range(t.rank) if i not in axes])


def combiner(kind: str, dtype: str) -> tuple[Callable[[KernelBuilder], Callable[[ir.Value, ir.Value], ir.Value]], Any]:
    """(combine builder, identity) for sum/prod/max/min in ``dtype``."""
    f, u = is_float(dtype), is_unsigned(dtype)
    table = {
        "sum": (arith.AddFOp if f else arith.AddIOp, 0.0 if f else 0),
        "prod": (arith.MulFOp if f else arith.MulIOp, 1.0 if f else 1),
        "max": (arith.MaximumFOp if f else (arith.MaxUIOp if u else arith.MaxSIOp), lowest(dtype)),
        "min": (arith.MinimumFOp if f else (arith.MinUIOp if u else arith.MinSIOp), highest(dtype)),
    }
    cls, ident = table[kind]
    return (lambda kb: (lambda x, acc: kb.bin(cls, x, acc))), ident


def norm_axes(axes, rank: int) -> list[int]:
    if axes is None:
        return list(range(rank))
    return sorted(a + rank if a < 0 else a for a in axes)
