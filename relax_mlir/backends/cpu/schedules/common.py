"""Shared pieces of the schedules: a transform script around one kernel, and the
vector-lowering tail every schedule ends with.

A schedule is a Python function that fills the body of a ``transform.named_sequence``
whose argument is the kernel ``func.func`` (the payload root). :func:`apply` builds that
script in a fresh module with the typed transform-dialect builders and runs the upstream
transform interpreter on the kernel, in place.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import interpreter, loop, structured
from mlir.dialects.transform import vector as tvec

#: Builds the script's body: ``body(func_handle)``; the caller adds the terminator.
Body = Callable[[ir.Value], None]
#: A Python step on the kernel itself (the ``func.func``), between or after scripts.
Step = Callable[[ir.Operation], None]


def any_op() -> ir.Type:
    return transform.AnyOpType.get()


def script(body: Body) -> tuple[ir.Module, ir.Operation]:
    """A transform module holding ``__transform_main`` whose body ``body`` fills."""
    mod = ir.Module.create()
    mod.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    with ir.InsertionPoint(mod.body):
        seq = transform.NamedSequenceOp("__transform_main", [any_op()], [],
                                        arg_attrs=[{"transform.readonly": ir.UnitAttr.get()}])
    with ir.InsertionPoint(seq.body):
        body(seq.bodyTarget)
        transform.YieldOp([])
    return mod, seq


def apply(fn: ir.Operation, body: Body) -> None:
    """Run the schedule ``body`` on kernel ``fn`` (raises ``ir.MLIRError`` on failure)."""
    mod, seq = script(body)
    interpreter.apply_named_sequence(fn, seq, mod)


def match(target: ir.Value, *names: str) -> ir.Value:
    return structured.MatchOp.match_op_names(target, list(names)).result


def cleanup(target: ir.Value) -> None:
    """Canonicalize (folds ``affine.min`` of peeled loops into static tile sizes) and CSE."""
    p = transform.ApplyPatternsOp(target)
    with ir.InsertionPoint(p.patterns):
        transform.ApplyCanonicalizationPatternsOp()
        structured.ApplyTilingCanonicalizationPatternsOp()
        loop.ApplyForLoopCanonicalizationPatternsOp()
    transform.ApplyCommonSubexpressionEliminationOp(target)


def patterns(target: ir.Value, *makers: Callable[[], object]) -> None:
    """One ``apply_patterns`` group (groups run in order: all at once can hang, see notes)."""
    p = transform.ApplyPatternsOp(target)
    with ir.InsertionPoint(p.patterns):
        for m in makers:
            m()


def lower_vectors(fn: ir.Value, contraction: str = "outerproduct") -> None:
    """Lower the vector ops a schedule produced (at tensor level) in ordered groups:
    contractions to outer products (FMAs), outer products, multi-reductions, transfer
    permutations, shape casts and broadcasts. What remains (1-D ``transfer_read`` /
    ``transfer_write``, ``vector.fma``) is handled after bufferization by the upstream
    ``convert-vector-to-scf`` / ``convert-vector-to-llvm`` passes."""
    patterns(fn, lambda: tvec.ApplyLowerContractionPatternsOp(
        lowering_strategy=tvec.VectorContractLowering.OuterProduct if contraction == "outerproduct"
        else tvec.VectorContractLowering.Dot))
    patterns(fn, tvec.ApplyLowerOuterProductPatternsOp)
    # masked tiles (a symbolic remainder): transfers with mask operands, masks to create_mask
    # (left in vector.mask regions, convert-vector-to-scf puts a second op in them: "'vector.mask'
    # op expects only one operation to mask")
    patterns(fn, tvec.ApplyLowerMaskedTransfersPatternsOp)
    patterns(fn, tvec.ApplyLowerMasksPatternsOp)
    patterns(fn, tvec.ApplyTransferPermutationPatternsOp,
             lambda: tvec.ApplyLowerMultiReductionPatternsOp(
                 lowering_strategy=tvec.VectorMultiReductionLowering.InnerReduction))
    patterns(fn, tvec.ApplyLowerShapeCastPatternsOp, tvec.ApplyLowerTransposePatternsOp,
             tvec.ApplyLowerBroadcastPatternsOp)
    cleanup(fn)


def unmask_contractions(fn: ir.Operation) -> int:
    """Take each ``vector.contract`` of kernel ``fn`` out of its ``vector.mask`` (the number
    taken out). The vectorizer masks every op of a partial tile; lowered, a masked contraction
    is an FMA and a select per vector and k step, whose masks (n-D ``create_mask`` unrolled
    into per-element selects and shuffles) cost more than the tile's FMAs wherever they cannot
    move out of the loops: the GEMV's masked tiles ran slower than 1-column tiles (K, N = 512,
    200, M = 1: 2.9 against 2.1 of numpy's time). Unmasked, the contraction computes the same
    values in every lane that a masked write stores, provided its masked operand reads pad
    with zero (the vectorizer's padding): a lane outside the tile adds products with a zero
    read, and the lanes outside the tile's output are never stored. So this holds for the
    schedules' masked tiles, whose results only reach C through masked writes (checked here:
    every masked ``transfer_read`` of the kernel pads with 0; else nothing is changed)."""
    masked, reads = [], []

    def visit(op: ir.OpView) -> ir.WalkResult:
        op = op.operation
        if op.name == "vector.mask" and len(op.operands) == 1:  # a mask, no passthru
            body = [o.operation for o in op.regions[0].blocks[0].operations]
            if len(body) == 2 and body[0].name == "vector.contract":
                masked.append((op, body[0]))
        elif op.name == "vector.transfer_read":
            inside = op.parent is not None and op.parent.name == "vector.mask"
            if inside or op.opview.mask is not None:
                reads.append(op.opview)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    if not all(_zero(r.padding) for r in reads):
        return 0
    for mask, contract in masked:
        contract.move_before(mask)
        for old, new in zip(mask.results, contract.results):
            old.replace_all_uses_with(new)
        mask.erase()
    return len(masked)


def _zero(v: ir.Value) -> bool:
    op = v.owner
    if not isinstance(op, ir.Operation) and not isinstance(op, ir.OpView):
        return False
    op = op.operation
    if op.name != "arith.constant":
        return False
    attr = op.attributes["value"]
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


def unmasked_lowering(fn: ir.Operation) -> None:
    """The second stage of a schedule with masked register tiles (its script left the vector
    ops unlowered): :func:`unmask_contractions`, then :func:`lower_vectors` in a script."""
    unmask_contractions(fn)
    apply(fn, lower_vectors)
