"""relax-kernel-fastmath: let LLVM reassociate floating-point accumulations inside relax kernels.

Without reassociation a reduction (sum, max, softmax, norms) is one serial chain of
dependent operations per row, which LLVM may neither vectorize nor split over several
accumulators; with ``reassoc`` it does both (softmax over (4, 512, 512) runs about 8x
faster). ``reassoc`` goes only on the accumulating op of a linalg body (the one that
reads the output's block argument): on element-wise math it also licenses algebraic
rewrites such as ``pow(x, y) * x -> pow(x, y + 1)``, which change results at inf and
NaN (-inf * pow(-inf, -inf) is NaN, pow(-inf, -inf + 1) is 0): a silently wrong
answer. ``contract`` (fused multiply-add, a rounding difference only) goes on every
float add/sub/mul/div. NaN and infinity semantics are kept (no ``nnan``/``ninf``).
Applies to functions marked ``relax.kernel``; switch off with
``relax-kernel-fastmath{enable=false}`` for bit-reproducible order. ``reassoc=false`` sets
``contract`` alone (the GPU pipelines: their row kernels fix the reduction order
themselves, so a kernel sums in the same order on every route; the FMAs still come).
"""

from __future__ import annotations

from mlir import ir

from .graph import top_ops
from .registry import Option, register_pass

#: op -> (flags on an accumulation, flags elsewhere)
_FLAGS = {
    "arith.addf": ("reassoc, contract", "contract"), "arith.subf": ("reassoc, contract", "contract"),
    "arith.mulf": ("reassoc, contract", "contract"), "arith.divf": ("contract", "contract"),
    "math.fma": ("reassoc, contract", "contract"),
    "arith.maximumf": ("reassoc", None), "arith.minimumf": ("reassoc", None),
}


def _accumulates(op: ir.Operation) -> bool:
    """``op`` reads an output (init) block argument of the structured op around it, or a
    function argument (a scalar combine helper)."""
    for v in op.operands:
        if not isinstance(v, ir.BlockArgument):
            continue
        owner = v.owner.owner
        if owner is None:
            return True
        owner = owner.operation
        if owner.name == "func.func":
            return True
        seg = owner.attributes["operandSegmentSizes"] if "operandSegmentSizes" in owner.attributes else None
        n_in = list(ir.DenseI32ArrayAttr(seg))[0] if seg is not None else 0
        if owner.name.startswith("linalg.") and v.arg_number >= n_in:
            return True
    return False


@register_pass("relax-kernel-fastmath",
               "Allow reassociation of float accumulations and FMA contraction in relax kernels.",
               options=[Option("enable", bool, True, "set the fastmath flags"),
                        Option("reassoc", bool, True, "reassociate accumulations (else contract only)")])
def relax_kernel_fastmath(module: ir.Operation, opts) -> None:
    if not opts.enable:
        return
    cache: dict[str, ir.Attribute] = {}

    def visit(op):
        op = op.operation
        flags = _FLAGS.get(op.name)
        if flags is not None:
            f = flags[0] if opts.reassoc and _accumulates(op) else flags[1]
            if f is not None:
                if f not in cache:
                    cache[f] = ir.Attribute.parse(f"#arith.fastmath<{f}>")
                op.attributes["fastmath"] = cache[f]
        return ir.WalkResult.ADVANCE

    for f in top_ops(module):
        if f.name == "func.func" and "relax.kernel" in f.attributes:
            f.walk(visit)
