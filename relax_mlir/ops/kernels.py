"""Kernel-building helpers shared by the op families' legalizations.

A legalization turns one relax op into a loop-level kernel: a ``func.func private``
in destination-passing style (inputs, then outputs, then ``index`` scalars for the
call's ``tir_vars``) that returns its outputs, written with linalg on tensors
(``outs`` = the output arguments), tensor, arith and math ops. Kernel types are the
op's tensor types without the ``#relax.shape`` encoding, so one kernel serves every
value of the symbolic dims; nothing in a kernel depends on a concrete value of a
symbolic dim (sizes are read with ``tensor.dim``).

Kernels are written as MLIR text through :class:`KernelBuilder` (readable, and the
printed IR is what the lit tests check); the pass parses the text once per distinct
kernel and shares it between every call with the same signature.

A legalization is declared next to its op::

    @legalization("exp", "log")
    def _unary(call: LegalizeCall) -> Kernel:
        kb = call.builder()
        ...
        return kb.finish([result])
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

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
    """One kernel: its (readable) symbol name, its func.func text with ``@{NAME}`` standing
    for the symbol, and the symbolic values the call passes as trailing index arguments."""

    name: str
    text: str
    tir_vars: list = field(default_factory=list)


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

def float_literal(value: float, dtype: str) -> str:
    """An MLIR float literal (hex bit pattern for inf/nan, which have no decimal form)."""
    if math.isfinite(value):
        return "%.17e" % value
    if dtype == "f32":
        return "0x%08X" % struct.unpack("<I", struct.pack("<f", value))[0]
    if dtype == "f64":
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if dtype == "f16":
        return "0x%04X" % struct.unpack("<H", struct.pack("<e", value))[0]
    if dtype == "bf16":
        return "0x%04X" % (struct.unpack("<I", struct.pack("<f", value))[0] >> 16)
    raise ValueError(dtype)


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


# -- the builder -----------------------------------------------------------------------

class KernelBuilder:
    """Writes one kernel function as MLIR text, with fresh SSA names and cached constants."""

    def __init__(self, name: str, in_types: Sequence[KType], out_types: Sequence[KType], n_vars: int = 0):
        self.name = name
        self.in_types = list(in_types)
        self.out_types = list(out_types)
        self.ins = [f"%in{i}" for i in range(len(in_types))]
        self.outs = [f"%out{i}" for i in range(len(out_types))]
        self.vars = [f"%var{i}" for i in range(n_vars)]
        self.types: dict[str, Any] = {}
        for v, t in zip(self.ins + self.outs, self.in_types + self.out_types):
            self.types[v] = t
        for v in self.vars:
            self.types[v] = "index"
        self.lines: list[str] = []
        self.indent = 1
        self._n = 0
        self._consts: dict[tuple, str] = {}
        self._dims: dict[tuple, str] = {}
        self._const_lines: list[str] = []
        self._elements: set[str] = set()     # unsigned values in their ui form (block args, extracts)

    # values
    def fresh(self, hint: str = "t") -> str:
        self._n += 1
        return f"%{hint}{self._n}"

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def op(self, text: str, type_: Any, hint: str = "t") -> str:
        """Emit ``%new = <text>`` and record the new value's type; returns its name."""
        v = self.fresh(hint)
        self.emit(f"{v} = {text}")
        self.types[v] = type_
        return v

    def const(self, value, dtype: str) -> str:
        """A function-level constant (usable inside regions)."""
        key = (repr(value), dtype)
        if key not in self._consts:
            v = f"%c{len(self._consts)}"
            if is_float(dtype):
                lit = float_literal(float(value), dtype)
            elif dtype == "i1":
                lit = "true" if value else "false"
            elif dtype == "index":
                lit = str(int(value))
            else:
                lit = str(signless_value(value, dtype))
            # a bool literal carries its type (i1); writing ": i1" after it does not parse
            suffix = "" if dtype == "i1" else f" : {signless(dtype)}"
            self._const_lines.append(f"  {v} = arith.constant {lit}{suffix}")
            self._consts[key] = v
            self.types[v] = dtype
        return self._consts[key]

    def index(self, value: int) -> str:
        return self.const(int(value), "index")

    def dim(self, tensor: str, i: int) -> str:
        """Size of dim ``i`` of a kernel tensor as an index value (a constant when static)."""
        t: KType = self.types[tensor]
        if t.dims[i] is not None:
            return self.index(t.dims[i])
        key = (tensor, i)
        if key not in self._dims:
            v = self.fresh("d")
            self._const_lines.append(f"  {v} = tensor.dim {tensor}, {self.index(i)} : {t}")
            self.types[v] = "index"
            self._dims[key] = v
        return self._dims[key]

    def dims(self, tensor: str) -> list[str]:
        return [self.dim(tensor, i) for i in range(self.types[tensor].rank)]

    def empty(self, t: KType, like: str) -> str:
        """``tensor.empty`` of type ``t`` whose dynamic sizes are those of ``like``'s dims."""
        sizes = [self.dim(like, i) for i, d in enumerate(t.dims) if d is None]
        return self.op(f"tensor.empty({', '.join(sizes)}) : {t}", t, "e")

    def empty_dims(self, t: KType, sizes: Sequence[str]) -> str:
        """``tensor.empty`` of type ``t`` with the index values ``sizes`` for all its dims."""
        dyn = [s for s, d in zip(sizes, t.dims) if d is None]
        return self.op(f"tensor.empty({', '.join(dyn)}) : {t}", t, "e")

    def fill(self, value, dest: str) -> str:
        t: KType = self.types[dest]
        c = self.const(value, t.dtype)
        if t.dtype.startswith("ui"):    # linalg.fill's cast cannot take a ui scalar
            (r,) = self.generic([], [(dest, identity_map(t.rank))], ["parallel"] * t.rank, lambda o: [c])
            return r
        return self.op(f"linalg.fill ins({c} : {t.dtype}) outs({dest} : {t}) -> {t}", t, "f")

    def copy(self, src: str, dest: str) -> str:
        t = self.types[dest]
        return self.op(f"linalg.copy ins({src} : {self.types[src]}) outs({dest} : {t}) -> {t}", t, "r")

    # scalar helpers (usable in regions and at function level)
    # Scalar values keep their logical type in ``types`` (``ui8``); the text uses the
    # signless type arith works on.
    def bin(self, opname: str, a: str, b: str, type_: Optional[str] = None) -> str:
        t = type_ or self.types[a]
        return self.op(f"{opname} {a}, {b} : {signless(t)}", t)

    def un(self, opname: str, a: str, type_: Optional[str] = None) -> str:
        t = type_ or self.types[a]
        return self.op(f"{opname} {a} : {signless(t)}", t)

    def cmp(self, kind: str, pred: str, a: str, b: str) -> str:
        return self.op(f"arith.{kind} {pred}, {a}, {b} : {signless(self.types[a])}", "i1")

    def select(self, c: str, a: str, b: str) -> str:
        return self.op(f"arith.select {c}, {a}, {b} : {signless(self.types[a])}", self.types[a])

    def cast(self, v: str, to: str) -> str:
        """Numeric conversion between scalar types, numpy's results where numpy defines
        them: integers wrap (truncate) or extend by the source's signedness; float to
        integer truncates toward zero. Where numpy's result is undefined (NaN, +-inf,
        out of range) float to integer saturates and NaN gives 0, never LLVM poison."""
        frm = self.types[v]
        if frm == to:
            return v
        if signless(frm) == signless(to):     # i8 <-> ui8: same bits, numpy's result too
            return self.op(f"arith.bitcast {v} : {signless(frm)} to {signless(to)}", to)
        if frm == "index" or to == "index":
            if is_float(frm) or is_float(to):   # through i64
                return self.cast(self.cast(v, "i64"), to)
            if is_unsigned(frm):
                return self.op(f"arith.index_castui {v} : {signless(frm)} to {signless(to)}", to)
            return self.op(f"arith.index_cast {v} : {signless(frm)} to {signless(to)}", to)
        if is_float(frm) and is_float(to):
            wider = FLOATS.index(to) > FLOATS.index(frm) if {frm, to} != {"f16", "bf16"} else None
            if wider is None:
                return self.cast(self.cast(v, "f32"), to)
            return self.op(f"arith.{'extf' if wider else 'truncf'} {v} : {frm} to {to}", to)
        if is_float(frm):
            if to == "i1":
                return self.cmp("cmpf", "une", v, self.const(0.0, frm))
            return self._float_to_int(v, to)
        if is_float(to):
            opn = "uitofp" if is_unsigned(frm) else "sitofp"
            return self.op(f"arith.{opn} {v} : {signless(frm)} to {to}", to)
        if to == "i1":
            return self.cmp("cmpi", "ne", v, self.const(0, frm))
        if int_width(to) > int_width(frm):
            ext = "extui" if is_unsigned(frm) else "extsi"
            return self.op(f"arith.{ext} {v} : {signless(frm)} to {signless(to)}", to)
        return self.op(f"arith.trunci {v} : {signless(frm)} to {signless(to)}", to)

    def _float_to_int(self, v: str, to: str) -> str:
        """fptosi/fptoui are poison outside the target's range (and for NaN); poison that
        reaches an index (take) or a branch is undefined behaviour, so saturate first."""
        frm = self.types[v]
        if frm in ("f16", "bf16"):
            v, frm = self.cast(v, "f32"), "f32"
        w = int_width(to)
        lo, hi = (0.0, 2.0 ** w) if to.startswith("ui") else (-(2.0 ** (w - 1)), 2.0 ** (w - 1))
        clo, chi = self.const(lo, frm), self.const(hi, frm)
        ok = self.bin("arith.andi", self.cmp("cmpf", "oge", v, clo), self.cmp("cmpf", "olt", v, chi), "i1")
        safe = self.select(ok, v, self.const(0.0, frm))
        conv = "fptoui" if to.startswith("ui") else "fptosi"
        r = self.op(f"arith.{conv} {safe} : {frm} to {signless(to)}", to)
        r = self.select(self.cmp("cmpf", "oge", v, chi), self.const(highest(to), to), r)
        return self.select(self.cmp("cmpf", "olt", v, clo), self.const(lowest(to), to), r)

    def from_element(self, v: str) -> str:
        """A tensor element (``ui8`` in the IR) as the signless value arith takes; its
        logical type stays ``ui8``. The cast pair folds away in reconcile-unrealized-casts
        once both sides are LLVM's i8."""
        t = self.types[v]
        if not t.startswith("ui"):
            return v
        r = self.fresh("u")
        self.emit(f"{r} = builtin.unrealized_conversion_cast {v} : {t} to {signless(t)}")
        self.types[r] = t
        return r

    def to_element(self, v: str, dtype: str) -> str:
        """The inverse of :meth:`from_element`: a value to store into a ``dtype`` tensor."""
        if not dtype.startswith("ui") or v in self._elements:
            return v
        r = self.fresh("u")
        self.emit(f"{r} = builtin.unrealized_conversion_cast {v} : {signless(dtype)} to {dtype}")
        self.types[r] = dtype
        self._elements.add(r)
        return r

    def extract(self, tensor: str, pos: Sequence[str]) -> str:
        """One element of a kernel tensor (as a computable value)."""
        t: KType = self.types[tensor]
        v = self.op(f"tensor.extract {tensor}[{', '.join(pos)}] : {t}", t.dtype)
        self._elements.add(v)
        return self.from_element(v)

    def linalg_index(self, i: int) -> str:
        return self.op(f"linalg.index {i} : index", "index", "i")

    # structured ops
    def generic(self, ins: Sequence[tuple[str, Sequence[str]]], outs: Sequence[tuple[str, Sequence[str]]],
                iterators: Sequence[str], body: Callable[..., Sequence[str]]) -> list[str]:
        """``linalg.generic`` over ``len(iterators)`` loops.

        ``ins``/``outs``: (tensor value, indexing-map results such as ``["d0", "0"]``).
        ``body(*block_args)`` emits the region (with this builder) and returns the
        values to yield, one per output. Returns the results.
        """
        n = len(iterators)
        ds = ", ".join(f"d{i}" for i in range(n))
        maps = [f"affine_map<({ds}) -> ({', '.join(m)})>" for _, m in list(ins) + list(outs)]
        its = ", ".join(f'"{i}"' for i in iterators)
        out_types = [self.types[v] for v, _ in outs]
        res = [self.fresh("g") for _ in outs]
        head = (f"{', '.join(res)} = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
                f"iterator_types = [{its}]}}")
        if ins:
            head += f" ins({', '.join(v for v, _ in ins)} : {', '.join(str(self.types[v]) for v, _ in ins)})"
        head += f" outs({', '.join(v for v, _ in outs)} : {', '.join(str(t) for t in out_types)}) {{"
        self.emit(head)
        args = [self.fresh("a") for _ in list(ins) + list(outs)]
        for a, (v, _) in zip(args, list(ins) + list(outs)):
            self.types[a] = self.types[v].dtype
        self.emit("^bb0(" + ", ".join(f"{a}: {self.types[a]}" for a in args) + "):")
        self.indent += 1
        ys = body(*[self.from_element(a) for a in args])
        ys = [self.to_element(y, t.dtype) for y, t in zip(ys, out_types)]
        self.emit(f"linalg.yield {', '.join(ys)} : {', '.join(self.types[y] for y in ys)}")
        self.indent -= 1
        rt = ", ".join(str(t) for t in out_types)
        self.emit(f"}} -> {rt if len(out_types) == 1 else '(' + rt + ')'}")
        for r, t in zip(res, out_types):
            self.types[r] = t
        return res

    def finish(self, results: Sequence[str], tir_vars: Sequence = ()) -> Kernel:
        """The kernel: returns ``results`` (one per output argument)."""
        assert len(results) == len(self.outs), (results, self.outs)
        args = [f"{v}: {self.types[v]}" for v in self.ins + self.outs + self.vars]
        rtypes = ", ".join(str(t) for t in self.out_types)
        rtypes = rtypes if len(self.out_types) == 1 else f"({rtypes})"
        text = [f"func.func private @{{NAME}}({', '.join(args)}) -> {rtypes} attributes {{{KERNEL_ATTR}}} {{"]
        text += self._const_lines + self.lines
        text.append(f"  return {', '.join(results)} : {', '.join(str(t) for t in self.out_types)}")
        text.append("}")
        return Kernel(self.name, "\n".join(text) + "\n", list(tir_vars))


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


def elementwise(kb: KernelBuilder, ins: Sequence[str], scalar: Callable[..., str], out: Optional[str] = None) -> str:
    """One parallel linalg.generic over ``out`` (default the first output) reading
    ``ins`` with numpy broadcasting; ``scalar(*in_elems)`` emits the element result."""
    out = out or kb.outs[0]
    ot: KType = kb.types[out]
    maps = [(v, broadcast_map(kb.types[v], ot)) for v in ins]
    (r,) = kb.generic(maps, [(out, identity_map(ot.rank))], ["parallel"] * ot.rank,
                      lambda *a: [scalar(*a[:len(ins)])])
    return r


def reduce_into(kb: KernelBuilder, src: str, src_map: Sequence[str], acc: str, axes: Sequence[int],
                rank: int, combine: Callable[[str, str], str], extra_ins: Sequence[tuple[str, Sequence[str]]] = (),
                pre: Optional[Callable[..., str]] = None) -> str:
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


def reduced_empty(kb: KernelBuilder, src: str, axes: Sequence[int], dtype: str) -> str:
    """An empty tensor with ``src``'s dims minus ``axes`` (sizes read from ``src``)."""
    t: KType = kb.types[src]
    rt = reduced_type(t, axes, dtype)
    return kb.empty_dims(rt, [kb.dim(src, i) for i in range(t.rank) if i not in axes])


def combiner(kind: str, dtype: str) -> tuple[Callable[[KernelBuilder], Callable[[str, str], str]], Any]:
    """(combine builder, identity) for sum/prod/max/min in ``dtype``."""
    f, u = is_float(dtype), is_unsigned(dtype)
    table = {
        "sum": ("arith.addf" if f else "arith.addi", 0.0 if f else 0),
        "prod": ("arith.mulf" if f else "arith.muli", 1.0 if f else 1),
        "max": ("arith.maximumf" if f else ("arith.maxui" if u else "arith.maxsi"), lowest(dtype)),
        "min": ("arith.minimumf" if f else ("arith.minui" if u else "arith.minsi"), highest(dtype)),
    }
    opname, ident = table[kind]
    return (lambda kb: (lambda x, acc: kb.bin(opname, x, acc))), ident


def norm_axes(axes, rank: int) -> list[int]:
    if axes is None:
        return list(range(rank))
    return sorted(a + rank if a < 0 else a for a in axes)
