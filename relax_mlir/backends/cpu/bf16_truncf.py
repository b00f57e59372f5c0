"""relax-bf16-truncf: round f32 -> bf16 with integer operations, the same on every CPU.

LLVM lowers ``fptrunc float to bfloat`` per target (``llc`` of LLVM 22): with AVX512-BF16
(sapphirerapids) scalars and vectors become ``vcvtneps2bf16``, which flushes subnormals to
zero (measured: ``astype`` of 1e-40 gave 0 on this project's Xeon, where ``ml_dtypes`` keeps
9.18e-41); without it (skylake-avx512) every element is a call to ``__truncsfbf2`` (the C
runtime's, which keeps them; 16 calls per 16-wide vector). The bits of a result would depend
on the CPU and vector code would not stay vector code. This pass replaces every ``arith.truncf`` from f32 (or a vector of f32) to
bf16 by the integer form of round-to-nearest-even (what upstream's ``arith-expand
{include-bf16}`` does, without that pass's other expansions, e.g. of ``arith.maximumf``,
which would change the scheduled kernels): add ``0x7fff`` plus the lowest kept bit to the
f32's bits, keep the high 16; NaN becomes the quiet NaN ``0x7fc0``. The result matches
``ml_dtypes.bfloat16`` (and PyTorch's) rounding bit for bit, subnormals included.

Runs in the cpu pipeline after vectorization, before the conversions to the LLVM dialect
(``convert-vector-to-llvm`` lowers arith ops too).
f64 -> bf16 stays one LLVM conversion (through f32 it would round twice).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ...transforms.registry import register_pass


def _like(shape_of: ir.Type, element: ir.Type) -> ir.Type:
    """``element``, or a vector of it shaped like ``shape_of``."""
    if isinstance(shape_of, ir.VectorType):
        v = ir.VectorType(shape_of)
        return ir.VectorType.get(v.shape, element, scalable=v.scalable_dims)
    return element


def _const(t: ir.Type, value: int) -> ir.Value:
    element = ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
    attr = ir.IntegerAttr.get(element, value)
    if isinstance(t, ir.VectorType):
        attr = ir.DenseElementsAttr.get_splat(t, attr)
    return arith.ConstantOp(t, attr).result


def _expand(op: ir.Operation) -> None:
    src = op.operands[0]
    i32 = _like(src.type, ir.IntegerType.get_signless(32))
    i16 = _like(src.type, ir.IntegerType.get_signless(16))
    with ir.InsertionPoint(op), op.location:
        bits = arith.BitcastOp(i32, src).result
        sixteen = _const(i32, 16)
        lsb = arith.AndIOp(arith.ShRUIOp(bits, sixteen).result, _const(i32, 1)).result
        rounded = arith.AddIOp(bits, arith.AddIOp(lsb, _const(i32, 0x7FFF)).result).result
        high = arith.TruncIOp(i16, arith.ShRUIOp(rounded, sixteen).result).result
        nan = arith.CmpFOp(arith.CmpFPredicate.UNO, src, src).result
        out = arith.SelectOp(nan, _const(i16, 0x7FC0), high).result
        res = arith.BitcastOp(op.results[0].type, out).result
    op.results[0].replace_all_uses_with(res)
    op.erase()


def _is_f32_to_bf16(op: ir.Operation) -> bool:
    def element(t):
        return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
    return (isinstance(element(op.operands[0].type), ir.F32Type)
            and isinstance(element(op.results[0].type), ir.BF16Type)
            and "roundingmode" not in op.attributes)


@register_pass("relax-bf16-truncf",
               "Round f32 -> bf16 truncations to nearest even with integer ops (subnormals kept, any CPU).")
def relax_bf16_truncf(module: ir.Operation, opts) -> None:
    found: list[ir.Operation] = []

    def visit(op):
        if op.operation.name == "arith.truncf" and _is_f32_to_bf16(op.operation):
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in found:
        _expand(op)
