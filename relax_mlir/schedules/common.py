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
    patterns(fn, tvec.ApplyTransferPermutationPatternsOp,
             lambda: tvec.ApplyLowerMultiReductionPatternsOp(
                 lowering_strategy=tvec.VectorMultiReductionLowering.InnerReduction))
    patterns(fn, tvec.ApplyLowerShapeCastPatternsOp, tvec.ApplyLowerTransposePatternsOp,
             tvec.ApplyLowerBroadcastPatternsOp)
    cleanup(fn)
