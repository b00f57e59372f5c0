"""relax-specialize-ranges: one kernel, several variants for ranges of a symbol, chosen at run time.

A matmul kernel with a symbolic row count M (``linalg.matmul``, or the M of a
``linalg.batch_matmul``) is served best by different schedules at different M: the
decode GEMV (M == 1) and a few rows want no register blocking along M (each row streams
B once; M <= 1 a variant of its own, which reads A once per block of B's rows, where 2-3
rows share each tile of B from L1), small M (up to 16) 4-row register tiles, larger M
6-row ones, and large M (from 40, N a multiple of the register tile's columns or
symbolic) a packed copy of B. Relax
compiles one executable for every shape, so the choice is made at run time: the pass clones the kernel into one
variant per range of M, tags each with its range (``relax.range = {m_min, m_max}``,
``m_max`` absent when unbounded) for :func:`relax_mlir.schedules.select`, and turns the
original kernel (same name, same signature: callers are unchanged) into a dispatcher
that reads M from its operand and calls the variant whose range holds it::

    func.func private @k(%a: tensor<?x512xf32>, %b, %c) attributes {relax.range_dispatch, ...} {
      %m = tensor.dim %a, %c0
      %r = scf.if (%m <= 1) { func.call @k__m0_1(%a, %b, %c) } else { ... @k__m2_3 ... @k__m4 ... }
      return %r
    }

Run on tensors, before ``relax-apply-schedules`` (which then schedules each variant by
its range) and the module's one-shot bufferization (the calls bufferize across function
boundaries, the variants' results stay equivalent to the output argument: no copy in
bufferization itself; the second drop-equivalent-buffer-results + canonicalize of
:func:`relax_mlir.pipelines.cpu.llvm_stage` then leave the dispatcher no result, which
ownership-based deallocation would otherwise copy per call). Only kernels
that get a matmul schedule, whose A operand is a kernel argument with a symbolic M, are
specialized; everything else is left as it was, kernels on memrefs included (not
:func:`relax_mlir.schedules.on_tensors`: bufferized already, or written so; they go
through plain loops, a ``relax.dispatch_split`` mark stays where it is).

A kernel marked ``relax.dispatch_split`` by relax-dispatch-library (policy ``measured``:
generated code wins for some M, the library for others) gets its ranges cut by the split:
the M outside the mark's ``generated_m`` call one more variant, ``<kernel>__lib`` (kind
``opaque``, so no schedule touches it; ``relax.library_variant``), whose matmul
relax-library-variants turns into the library call once the module is bufferized. Such a kernel is split even when no schedule fits it (f64: its
generated variant is the plain loop nest)::

    %r = scf.if (%m <= 64) { func.call @k__m4_127 } else { func.call @k__lib }
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, func, scf, tensor

from . import schedules
from .schedules.matmul import config_for
from ...target import Simd, Target
from ...transforms.dispatch_split import (LIBRARY_VARIANT_ATTR, OPAQUE, SPLIT_ATTR, check_variant, library_ranges, read_split,
                             refine)
from ...transforms.graph import top_ops
from ...transforms.registry import Option, emit_error, register_pass

RANGE_ATTR = schedules.RANGE_ATTR  # {m_min = lo : i64, m_max = hi : i64} on a variant
DISPATCH_ATTR = "relax.range_dispatch"  # on the kernel that picks a variant
KIND_ATTR = schedules.KIND_ATTR


def variant_ranges(gemv_max: int, pack_min: Optional[int] = None,
                   small_max: Optional[int] = None) -> list[tuple[int, Optional[int]]]:
    """The M ranges ``(lo, hi)`` (inclusive, ``hi`` None: unbounded) that partition M >= 0:
    M <= 1 (the decode GEMV: its rows loop outside the column tiles, see
    :func:`relax_mlir.schedules.matmul.gemv_schedule`) and the rest of the few rows up to
    ``gemv_max`` are two ranges;
    ``pack_min``: the M from which the kernel's schedule packs B (a range of its own);
    ``small_max``: the largest M of the small-M register tiles (a range of its own)."""
    cuts = [1, gemv_max] if gemv_max > 1 else [gemv_max]
    for hi in (small_max, None if pack_min is None else pack_min - 1):
        if hi is not None and hi > cuts[-1]:
            cuts.append(hi)
    return list(zip([0] + [c + 1 for c in cuts], cuts + [None]))


def _m_operand(fn: ir.Operation, simd: Optional[Simd] = None) -> Optional[tuple[ir.BlockArgument, int]]:
    """The kernel argument that is the matmul's A operand and the position of its M dim,
    when M is symbolic and the kernel gets a matmul schedule; else None."""
    sched = schedules.select(fn, simd)
    if sched is None or not sched.name.startswith(("matmul", "batch_matmul")):
        return None
    mm = next(o for o in schedules.payload_ops(fn) if o.name in ("linalg.matmul", "linalg.batch_matmul"))
    a = mm.operands[0]
    if not isinstance(a, ir.BlockArgument) or a.owner != fn.regions[0].blocks[0]:
        return None
    shape = ir.RankedTensorType(a.type).shape
    dim = len(shape) - 2
    if not ir.ShapedType.is_dynamic_size(shape[dim]):
        return None
    return ir.BlockArgument(a), dim


def _range_attr(lo: int, hi: Optional[int]) -> ir.Attribute:
    i64 = ir.IntegerType.get_signless(64)
    d = {"m_min": ir.IntegerAttr.get(i64, lo)}
    if hi is not None:
        d["m_max"] = ir.IntegerAttr.get(i64, hi)
    return ir.DictAttr.get(d)


def _variant_name(name: str, lo: int, hi: Optional[int]) -> str:
    return f"{name}__m{lo}" + ("" if hi is None else f"_{hi}")


def specialize(fn: ir.Operation, ranges: list[tuple[int, Optional[int]]],
               simd: Optional[Simd] = None) -> Optional[list[str]]:
    """Split kernel ``fn`` into range variants (see the module docstring); their names,
    or None when ``fn`` is not a kernel to specialize."""
    found = _m_operand(fn, simd)
    if found is None:
        return None
    a, mdim = found
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    names = [_clone(fn, _variant_name(name, lo, hi), _range_attr(lo, hi)) for lo, hi in ranges]
    _make_dispatcher(fn, a, mdim, ranges, names)
    return names


def _clone(fn: ir.Operation, vname: str, rng: ir.Attribute) -> str:
    v = fn.clone(ir.InsertionPoint(fn))
    v.attributes["sym_name"] = ir.StringAttr.get(vname)
    v.attributes["sym_visibility"] = ir.StringAttr.get("private")
    v.attributes[RANGE_ATTR] = rng
    return vname


def _make_dispatcher(fn: ir.Operation, a: ir.Value, mdim: int, ranges: list[tuple[int, Optional[int]]],
                     names: list[str]) -> None:
    """Replace ``fn``'s body by the call of ``names[i]`` for M in ``ranges[i]``."""
    block = fn.regions[0].blocks[0]
    for op in reversed(list(block.operations)):
        op.operation.erase()
    fty = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    results = list(fty.results)
    args = list(block.arguments)
    with ir.InsertionPoint(block), fn.location:
        m = tensor.DimOp(a, arith.ConstantOp.create_index(mdim)).result
        _dispatch(m, ranges, names, results, args)
    fn.attributes[DISPATCH_ATTR] = ir.UnitAttr.get()
    if SPLIT_ATTR in fn.attributes:
        del fn.attributes[SPLIT_ATTR]


def _split_m_operand(fn: ir.Operation) -> Optional[tuple[ir.BlockArgument, int]]:
    """A split kernel's matmul A operand and its M position, when it is a 2-D kernel argument
    with a dynamic M (the library variant needs no schedule)."""
    mms = [o for o in schedules.payload_ops(fn) if o.name == "linalg.matmul"]
    if len(mms) != 1:
        return None
    a = mms[0].operands[0]
    if not isinstance(a, ir.BlockArgument) or a.owner != fn.regions[0].blocks[0]:
        return None
    if not isinstance(a.type, ir.RankedTensorType) or not schedules.on_tensors(fn):
        return None
    if not ir.ShapedType.is_dynamic_size(ir.RankedTensorType(a.type).shape[0]):
        return None
    return ir.BlockArgument(a), 0


def specialize_split(fn: ir.Operation, gemv_max: int, simd: Optional[Simd] = None) -> Optional[list[str]]:
    """Split a ``relax.dispatch_split`` kernel (see the module docstring): its generated
    variants where the mark's ``generated_m`` holds M, the library variant elsewhere; the
    names called, or None when the kernel stays as it was (generated code for every M)."""
    found = _split_m_operand(fn)
    if found is None:
        return None
    a, mdim = found
    try:
        split = read_split(fn.attributes[SPLIT_ATTR])
    except ValueError as e:
        emit_error(fn, f"{SPLIT_ATTR}: {e}")
        return None
    if not check_variant(fn, split):
        del fn.attributes[SPLIT_ATTR]
        return None
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    lib_name = f"{name}__lib"
    lib = fn.clone(ir.InsertionPoint(fn))
    lib.attributes["sym_name"] = ir.StringAttr.get(lib_name)
    lib.attributes["sym_visibility"] = ir.StringAttr.get("private")
    lib.attributes[LIBRARY_VARIANT_ATTR] = lib.attributes[SPLIT_ATTR]
    del lib.attributes[SPLIT_ATTR]
    lib.attributes[KIND_ATTR] = ir.StringAttr.get(OPAQUE)
    if _m_operand(fn, simd) is not None and gemv_max > 0:
        ranges = variant_ranges(gemv_max, schedules.pack_min_rows(fn, simd), schedules.small_max_rows(fn, simd))
    else:
        ranges = [(0, None)]
    pieces = refine(ranges, library_ranges(split.generated))
    lib_ranges = [(lo, hi) for lo, hi, i in pieces if i < 0]
    lib.attributes[RANGE_ATTR] = _range_attr(lib_ranges[0][0], lib_ranges[-1][1])
    names: dict[int, str] = {-1: lib_name}
    for lo, hi, i in pieces:
        if i not in names:
            names[i] = _clone(fn, _variant_name(name, *ranges[i]), _range_attr(*ranges[i]))
            del _find(fn, names[i]).attributes[SPLIT_ATTR]
    _make_dispatcher(fn, a, mdim, [(lo, hi) for lo, hi, _ in pieces], [names[i] for _, _, i in pieces])
    return list(dict.fromkeys(names[i] for _, _, i in pieces))


def _find(fn: ir.Operation, name: str) -> ir.Operation:
    for o in fn.parent.regions[0].blocks[0].operations:
        o = o.operation
        if "sym_name" in o.attributes and ir.StringAttr(o.attributes["sym_name"]).value == name:
            return o
    raise KeyError(name)


def _dispatch(m: ir.Value, ranges: list[tuple[int, Optional[int]]], names: list[str],
              results: list[ir.Type], args: list[ir.Value]) -> None:
    """At the insertion point: ``return`` the call of the variant whose range holds ``m``.
    The ranges partition M >= 0 in increasing order, so a chain of ``m <= hi`` tests
    (the last variant in the innermost else) picks it."""

    def call(i: int) -> list[ir.Value]:
        return list(func.CallOp(results, ir.FlatSymbolRefAttr.get(names[i]), args).results)

    def chain(i: int) -> list[ir.Value]:
        if i == len(ranges) - 1:
            return call(i)
        hi = arith.ConstantOp.create_index(ranges[i][1])
        cond = arith.CmpIOp(arith.CmpIPredicate.ule, m, hi).result
        if_op = scf.IfOp(cond, results, has_else=True)
        with ir.InsertionPoint(if_op.then_block):
            scf.YieldOp(call(i))
        with ir.InsertionPoint(if_op.else_block):
            scf.YieldOp(chain(i + 1))
        return list(if_op.results)

    func.ReturnOp(chain(0))


@register_pass("relax-specialize-ranges",
               "Clone matmul kernels with a symbolic M into variants per range of M (GEMV for few "
               "rows, register tiles for more) and dispatch between them at run time.",
               options=[Option("gemv-max", int, -1,
                               "largest M that runs the few-rows (GEMV) variant; -1: the target's "
                               "(MatmulConfig.gemv_rows), 0: no specialization (but the "
                               "relax.dispatch_split of relax-dispatch-library)")])
def relax_specialize_ranges(module: ir.Operation, opts) -> None:
    try:
        simd = Target.for_module(module).simd   # the SIMD unit the variants are scheduled for
    except ValueError as e:
        emit_error(module, str(e))
        return
    gemv_max = config_for(simd).gemv_rows if opts.gemv_max == -1 else opts.gemv_max
    if gemv_max < 0:
        emit_error(module, f"gemv-max must be -1 or >= 0, got {gemv_max}")
        return
    for fn in top_ops(module):
        if (fn.name == "func.func" and "relax.kernel" in fn.attributes and fn.regions[0].blocks
                and RANGE_ATTR not in fn.attributes and DISPATCH_ATTR not in fn.attributes
                and schedules.on_tensors(fn)):
            if SPLIT_ATTR in fn.attributes and specialize_split(fn, gemv_max, simd) is not None:
                continue                          # gemv-max=0 too: the split is not a schedule choice
            if gemv_max > 0:
                specialize(fn, variant_ranges(gemv_max, schedules.pack_min_rows(fn, simd),
                                              schedules.small_max_rows(fn, simd)), simd)
