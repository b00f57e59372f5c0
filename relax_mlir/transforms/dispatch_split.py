"""The run-time split between generated code and BLAS (issue 12, item 5): one executable,
the choice made per call from the row count M.

``relax-dispatch-library{policy=measured}`` reads a calibration table (the M ranges where
the generated, scheduled kernel beat BLAS, per (K, N) class) and decides each 2-D matmul
(+ bias) with static K and N at the graph level:

* every M the matmul can have lies in one generated range: it stays generated (a relax op);
* no M it can have lies in a generated range: it becomes a ``relax.call_dps_library``;
* otherwise (a symbolic M whose range ``[1, bound]``, or ``[1, inf)`` when unbounded, meets
  both): it stays a relax op marked with the split, visible in the IR::

      %0 = "relax.matmul"(%x, %w) {relax.dispatch_split = {callee = "relax_blas_matmul_22_f32",
                                    generated_m = [[1 : i64, 64 : i64]], library = "relax_blas"}}

  (``bias_callee`` too when the chain is matmul + bias; the module records the library in
  ``relax.libraries`` as for a dispatched match).

The mark travels with the matmul: relax-legalize puts it on the op's kernel (a kernel of its
own: the mark is part of its identity), relax-fuse-kernels on the fused kernel that takes
it (matmul + bias + activation). relax-specialize-ranges then splits that kernel by M like
any matmul kernel (GEMV / register-tiled / packed variants), refined by the split: the M
ranges outside ``generated_m`` call one more variant, ``<kernel>__lib`` (kind ``opaque``:
no schedule), and once the module is bufferized relax-library-variants rewrites that
variant's matmul into the library call (:func:`library_variant`: ``func.call`` of the shim's
``_mlir_ciface_<callee>`` on fully dynamic memrefs, the declaration relax-lower-host makes
for ``relax.call_dps_library``); a fused bias add becomes the ``bias_callee`` call, any
other epilogue stays generated code after it. On buffers, so that one-shot bufferization
sees an ordinary kernel whose result is its output argument (no result copy in the
dispatcher). Where the rewrite does not apply (no zero fill before the matmul, an operand
computed inside the kernel) the kernel stays generated for every M: correct, never a
wrong result.

Calibration tables are per machine: :func:`select_table` picks, among the tables of a file,
the one measured on the target's CPU model, else one measured on its ISA (``avx512``,
``avx2``, ...: ``chip`` and ``simd.isa`` of the module's :class:`relax_mlir.target.Target`,
and its ``threads``); a table of another ISA
does not apply (the pass then keeps the ``min-flops`` rule and records why in the module
attribute ``relax.dispatch_note``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Union

from mlir import ir
from mlir.dialects import func, memref

from ..runtime.cpu import cpu_model  # noqa: F401 (re-exported: the compile cache keys on it)
from ..shapes import Dim
from .dispatch_patterns import DispatchPattern, Match, ordered_patterns
from .graph import defining_op, users

#: On a relax.matmul (graph level) and on its kernel: the run-time split, see the docstring.
SPLIT_ATTR = "relax.dispatch_split"
#: Module attribute: why the measured policy did not use a table (another ISA, ...); op
#: attribute (under a tuning database): why this op went to BLAS or stayed generated.
NOTE_ATTR = "relax.dispatch_note"
#: On a relax op, then its kernel (relax-legalize, relax-fuse-kernels): a match the tuner
#: compares with the library (relax-dispatch-library{mark-candidates}).
CANDIDATE_ATTR = "relax.dispatch_candidate"
#: ``relax.kernel_kind`` of a library variant: no schedule applies to it.
OPAQUE = "opaque"
#: On a library variant (relax-specialize-ranges), the split it serves; relax-library-variants
#: rewrites its matmul into the library call once it is bufferized.
LIBRARY_VARIANT_ATTR = "relax.library_variant"

#: An M range: ``(lo, hi)`` inclusive, ``hi`` None when unbounded.
Range = tuple[int, Optional[int]]


@dataclass(frozen=True)
class Split:
    """Decision: generated code for M in ``generated`` (inclusive ranges), BLAS elsewhere."""
    generated: tuple[tuple[int, int], ...]


Decision = Union[bool, Split]   # True: BLAS, False: generated, Split: chosen per call


# -- tables ---------------------------------------------------------------------------------

def tables_of(data: dict) -> list[dict]:
    """The tables of a calibration file: ``{"tables": [t, ...]}`` or one table ``t``."""
    return list(data["tables"]) if "tables" in data else [data]


def select_table(data: dict, isa: str, machine: str, threads: int = 1) -> tuple[Optional[dict], str]:
    """The table of ``data`` for a host of ``isa`` and CPU model ``machine`` whose kernels run on
    ``threads`` threads: among the tables measured on that model (and ISA), else among those
    measured on that ISA, the one measured at that thread count, else at the nearest (fewer
    on a tie); a table without ``threads`` was measured on one. A table whose ``isa`` is
    ``"any"`` applies everywhere. (None, why) when none fits."""
    tables = tables_of(data)
    same_isa = [t for t in tables if t.get("isa") in (isa, "any")]
    exact = [t for t in same_isa if t.get("machine") == machine]
    if exact or same_isa:
        return min(exact or same_isa, key=lambda t: (abs(int(t.get("threads", 1)) - threads),
                                                     int(t.get("threads", 1)))), ""
    seen = ", ".join(f"{t.get('isa')} ({t.get('machine')})" for t in tables)
    return None, (f"calibration measured on {seen}, this host is {isa} ({machine}): "
                  "min-flops rule")


def nearest_class(table: dict, k: int, n: int, dtype: str = "f32") -> Optional[dict]:
    """The class of ``dtype`` (a class without one is f32) nearest to (k, n) in log scale,
    when within a factor 2 in both; else None."""
    best, dist = None, math.inf
    for c in table["classes"]:
        if c.get("dtype", "f32") != dtype:
            continue
        dk, dn = abs(math.log2(k / c["k"])), abs(math.log2(n / c["n"]))
        if dk <= 1 and dn <= 1 and dk + dn < dist:
            best, dist = c, dk + dn
    return best


def decide(m: Match, bounds: dict[str, int], table: dict) -> Optional[Decision]:
    """The measured policy for match ``m`` (see the module docstring); None: the table does
    not say (batched, symbolic K or N, another dtype, no near class)."""
    if m.ranks[:2] != "22":
        return None
    kd, nd, md = Dim.of(m.inputs[0].shape[-1]), Dim.of(m.out.shape[-1]), Dim.of(m.out.shape[-2])
    if not (kd.is_static and nd.is_static) or kd.value <= 0 or nd.value <= 0:
        return None
    c = nearest_class(table, kd.value, nd.value, m.out.dtype)
    if c is None:
        return None
    if md.is_static:
        lo, hi = md.value, md.value
    elif md.symbols <= set(bounds):
        lo, hi = 1, md.evaluate(bounds)
    else:
        lo, hi = 1, None                # unbounded: the table's last point and beyond
    if hi is not None and hi < lo:
        return False                    # empty: nothing to run, generated code is free
    gen = [r for r in c["generated_m"] if r[1] >= lo and (hi is None or r[0] <= hi)]
    if not gen:
        return True
    if hi is not None and any(r[0] <= lo and hi <= r[1] for r in gen):
        return False
    if md.is_static:
        return True
    return Split(tuple((max(r[0], lo), r[1] if hi is None else min(r[1], hi)) for r in gen))


def plain_symbol(m: Match, p: DispatchPattern) -> Optional[str]:
    """The symbol of the library's plain matmul for the root of ``m`` (the chain's own symbol
    when the chain is the plain matmul)."""
    if p.ops == ("matmul",):
        return p.symbol_for(m)
    root = m.ops[0]
    from ..shapes import read_tensor_type
    sub = Match([root], m.values[:2], m.inputs[:2], read_tensor_type(root.results[0].type), m.attrs[:1])
    for q in ordered_patterns():
        if q.ops == ("matmul",) and q.library == p.library and q.predicate(sub):
            return q.symbol_for(sub)
    return None


def mark(m: Match, p: DispatchPattern, split: Split) -> bool:
    """Put the split on the chain's root op (False when the library has no plain matmul)."""
    plain = plain_symbol(m, p)
    if plain is None:
        return False
    i64 = ir.IntegerType.get_signless(64)
    d = {"callee": ir.StringAttr.get(plain), "library": ir.StringAttr.get(p.library),
         "generated_m": ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, lo), ir.IntegerAttr.get(i64, hi)])
                                          for lo, hi in split.generated])}
    if len(m.ops) > 1:
        d["bias_callee"] = ir.StringAttr.get(p.symbol_for(m))
    m.ops[0].attributes[SPLIT_ATTR] = ir.DictAttr.get(d)
    return True


# -- the kernel level ------------------------------------------------------------------------

@dataclass(frozen=True)
class KernelSplit:
    callee: str
    bias_callee: Optional[str]
    generated: tuple[tuple[int, int], ...]


def read_split(attr: ir.Attribute) -> KernelSplit:
    """A kernel's ``relax.dispatch_split`` / ``relax.library_variant`` mark (see :func:`mark`).
    Raises ValueError saying what is wrong with a malformed one (hand-written or mutated
    IR: the passes report it as a diagnostic at the kernel)."""
    def cast(cls, a: ir.Attribute, what: str):
        try:
            return cls(a)
        except ValueError:
            raise ValueError(f"{what} must be {_KINDS[cls]}, got {a}") from None

    d = cast(ir.DictAttr, attr, "the mark")
    for key in ("callee", "generated_m"):
        if key not in d:
            raise ValueError(f"the mark has no '{key}'")
    gen = []
    for r in cast(ir.ArrayAttr, d["generated_m"], "generated_m"):
        pair = cast(ir.ArrayAttr, r, "each generated_m range")
        if len(pair) != 2:
            raise ValueError(f"each generated_m range must be [lo, hi], got {r}")
        gen.append(tuple(cast(ir.IntegerAttr, e, "a generated_m bound").value for e in pair))
    bias = cast(ir.StringAttr, d["bias_callee"], "bias_callee").value if "bias_callee" in d else None
    return KernelSplit(cast(ir.StringAttr, d["callee"], "callee").value, bias, tuple(gen))


_KINDS = {ir.DictAttr: "a dictionary {callee, generated_m[, bias_callee]}", ir.ArrayAttr: "an array",
          ir.IntegerAttr: "an integer", ir.StringAttr: "a string"}


def library_ranges(generated: tuple[tuple[int, int], ...]) -> list[Range]:
    """The complement of ``generated`` in M >= 1: where the library runs."""
    out: list[Range] = []
    nxt = 1
    for lo, hi in sorted(generated):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    out.append((nxt, None))
    return out


def refine(ranges: list[Range], library: list[Range]) -> list[tuple[int, Optional[int], int]]:
    """``ranges`` (a partition of M >= 0 into the generated variants' ranges) cut by the
    ``library`` ranges: ``(lo, hi, i)`` in increasing order, ``i`` the index of the
    generated variant or -1 for the library; neighbours with the same ``i`` merged."""
    cuts = sorted({lo for lo, _ in ranges} | {lo for lo, _ in library}
                  | {hi + 1 for _, hi in library if hi is not None})

    def inside(m: int, r: Range) -> bool:
        return r[0] <= m and (r[1] is None or m <= r[1])

    out: list[tuple[int, Optional[int], int]] = []
    for j, lo in enumerate(cuts):
        hi = cuts[j + 1] - 1 if j + 1 < len(cuts) else None
        i = -1 if any(inside(lo, r) for r in library) else next(k for k, r in enumerate(ranges) if inside(lo, r))
        if out and out[-1][2] == i:
            out[-1] = (out[-1][0], hi, i)
        else:
            out.append((lo, hi, i))
    if len(out) > 1 and out[0][:2] == (0, 0):   # M = 0 costs nothing anywhere: no piece of its own
        out[:2] = [(0, out[1][1], out[1][2])]
    return out


def _is_arg(v: ir.Value, block: ir.Block) -> bool:
    return isinstance(v, ir.BlockArgument) and v.owner == block


def _zero_fill(v: ir.Value) -> Optional[ir.Operation]:
    """The ``linalg.fill`` of 0 producing tensor ``v``, else None."""
    fill = defining_op(v)
    if fill is None or fill.name != "linalg.fill":
        return None
    return fill if _zero_fill_value(fill) is not None else None


def _bias_add(g: ir.Operation, mm_result: ir.Value, block: ir.Block) -> Optional[ir.Value]:
    """The 1-D kernel argument that ``g`` adds to each row of ``mm_result``, when ``g`` is
    exactly that (``out = mm + bias[j]``), else None."""
    if g.name != "linalg.generic" or len(g.operands) != 3 or len(g.results) > 1:
        return None
    ins = list(g.operands)[:2]
    if mm_result not in ins:
        return None
    bias = ins[1] if ins[0] == mm_result else ins[0]
    if (bias == mm_result or not _is_arg(bias, block) or not isinstance(bias.type, ir.ShapedType)
            or ir.ShapedType(bias.type).rank != 1):  # a scalar input: no bias row
        return None
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(g.attributes["indexing_maps"])]
    ident, row = ir.AffineMap.get_identity(2), ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)])
    if maps[ins.index(mm_result)] != ident or maps[ins.index(bias)] != row or maps[2] != ident:
        return None
    body = [o.operation for o in g.regions[0].blocks[0].operations]
    if len(body) != 2 or body[0].name != "arith.addf" or body[1].name != "linalg.yield":
        return None
    args = list(g.regions[0].blocks[0].arguments)
    if {body[0].operands[0], body[0].operands[1]} != {args[0], args[1]} or body[1].operands[0] != body[0].results[0]:
        return None
    return bias


def _bias_add_in_place(g: ir.Operation, c: ir.Value, block: ir.Block) -> Optional[ir.Value]:
    """The 1-D kernel argument that ``g`` adds in place to each row of ``c`` (``c += bias[j]``,
    the form relax-epilogue-in-place gives a fused bias add), else None."""
    if g.name != "linalg.generic" or len(g.operands) != 2 or len(g.results) or list(g.operands)[1] != c:
        return None
    bias = list(g.operands)[0]
    if (bias == c or not _is_arg(bias, block) or not isinstance(bias.type, ir.ShapedType)
            or ir.ShapedType(bias.type).rank != 1):
        return None
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(g.attributes["indexing_maps"])]
    if maps != [ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)]), ir.AffineMap.get_identity(2)]:
        return None
    body = [o.operation for o in g.regions[0].blocks[0].operations]
    if len(body) != 2 or body[0].name != "arith.addf" or body[1].name != "linalg.yield":
        return None
    args = list(g.regions[0].blocks[0].arguments)
    if {body[0].operands[0], body[0].operands[1]} != set(args) or body[1].operands[0] != body[0].results[0]:
        return None
    return bias


def _declare(module_block: ir.Block, callee: str, types: list[ir.Type]) -> bool:
    """``func.func private @callee`` on fully dynamic memrefs with ``llvm.emit_c_interface``
    (relax-lower-host's declaration of a library function), unless there; False when a
    declaration with other types is."""
    ft = ir.FunctionType.get(types, [])
    for o in module_block.operations:
        o = o.operation
        if o.name == "func.func" and ir.StringAttr(o.attributes["sym_name"]).value == callee:
            return ir.TypeAttr(o.attributes["function_type"]).value == ft
    d = func.FuncOp(callee, ft, visibility="private", ip=ir.InsertionPoint.at_block_begin(module_block))
    d.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
    return True


def check_variant(fn: ir.Operation, split: KernelSplit) -> bool:
    """Whether :func:`library_variant` will apply to kernel ``fn`` (on tensors, before
    bufferization): one 2-D ``linalg.matmul`` of two kernel arguments into a zero fill."""
    block = fn.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    mms = [o for o in ops if o.name == "linalg.matmul"]
    if len(mms) != 1 or any(o.name in ("linalg.batch_matmul", "func.call") for o in ops):
        return False
    a, b, init = list(mms[0].operands)[:3]
    return _is_arg(a, block) and _is_arg(b, block) and _zero_fill(init) is not None


def library_variant(v: ir.Operation, split: KernelSplit) -> bool:
    """Rewrite the bufferized kernel ``v`` (a library variant): its ``linalg.matmul`` into a
    zero-filled buffer becomes the library call, a bias add that follows it the bias call
    (see the module docstring): into a temporary then the output, or in place in the output
    (relax-epilogue-in-place). Any other epilogue stays after the call, in place where the
    product is the output. False, leaving ``v`` as it was, when it does not apply."""
    block = v.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    mms = [o for o in ops if o.name == "linalg.matmul"]
    if len(mms) != 1 or len(mms[0].results) != 0:
        return False
    mm = mms[0]
    a, b, c = list(mm.operands)[:3]
    if not (_is_arg(a, block) and _is_arg(b, block)):
        return False
    # the zero fill of c right before the matmul (nothing else touches c in between)
    k = ops.index(mm)
    fill = ops[k - 1] if k > 0 else None
    if fill is None or fill.name != "linalg.fill" or fill.operands[1] != c or _zero_fill_value(fill) is None:
        return False
    # (the output argument, where relax-epilogue-in-place put the product, is also returned)
    others = [u for u in users(c) if u != fill and u != mm and u.name != "func.return"]
    bias = in_place = None
    if split.bias_callee and len(others) == 1 and ops.index(others[0]) > k:
        if defining_op(c) is not None and defining_op(c).name == "memref.alloc":
            bias = _bias_add(others[0], c, block)
        elif _is_arg(c, block):  # relax-epilogue-in-place: the product in the output, c += bias
            bias = in_place = _bias_add_in_place(others[0], c, block)
    if bias is not None:
        g = others[0]
        dest = c if in_place is not None else list(g.operands)[2]
        inputs, callee, at = [a, b, bias], split.bias_callee, g
    else:
        inputs, dest, callee, at = [a, b], c, split.callee, mm
    # each operand keeps its element type (a half-precision product accumulates into f32)
    dyn = [ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * ir.MemRefType(x.type).rank,
                             ir.MemRefType(x.type).element_type) for x in inputs + [dest]]
    if not _declare(v.parent.regions[0].blocks[0], callee, dyn):
        return False
    ip = ir.InsertionPoint(at)
    with at.location:
        args = [x if x.type == t else memref.CastOp(t, x, ip=ip).result for x, t in zip(inputs + [dest], dyn)]
        func.CallOp([], ir.FlatSymbolRefAttr.get(callee), args, ip=ip)
    alloc = defining_op(c)
    if bias is not None:
        others[0].erase()
    mm.erase()
    fill.erase()
    if bias is not None and alloc is not None and not list(alloc.results[0].uses):
        alloc.erase()
    return True


def _zero_fill_value(fill: ir.Operation) -> Optional[float]:
    c = defining_op(fill.operands[0])
    if c is None or c.name != "arith.constant":
        return None
    try:
        v = ir.FloatAttr(c.attributes["value"]).value
    except ValueError:
        return None
    return v if v == 0.0 else None
