"""relax-bf16-casts: f32 <-> bf16 conversions as integer operations, the same bits on every CPU.

The cpu pipeline computes bf16 ops in f32: ``arith-emulate-unsupported-floats`` (run just
before this pass) puts every bf16 arith op between an ``arith.extf`` to f32 and an
``arith.truncf`` back. LLVM lowers ``fptrunc float to bfloat`` per target (``llc`` of LLVM
22): with AVX512-BF16 (sapphirerapids) scalars and vectors become ``vcvtneps2bf16``, which
flushes subnormals to zero (measured: ``astype`` of 1e-40 gave 0 on this project's Xeon,
where ``ml_dtypes`` keeps 9.18e-41); without it (skylake-avx512) every element is a call to
``__truncsfbf2`` (the C runtime's, which keeps them; 16 calls per 16-wide vector). The bits
of a result would depend on the CPU, and vector code would not stay vector code.

This pass replaces every ``arith.truncf`` from f32 (or a vector of f32) to bf16 by the
integer form of round-to-nearest-even (what upstream's ``arith-expand{include-bf16}`` does,
without that pass's other expansions, e.g. of ``arith.maximumf``, which would change the
scheduled kernels): add ``0x7fff`` plus the lowest kept bit to the f32's bits, keep the high
16; NaN becomes the quiet NaN ``0x7fc0``. The result matches ``ml_dtypes.bfloat16`` (and
PyTorch's) rounding bit for bit, subnormals included. ``arith.extf`` from bf16 to f32 (exact)
becomes the bits shifted into an f32's high half: the emulation copies the ops' ``fastmath``
flags onto the extensions, which ``convert-arith-to-llvm`` would leave on ``llvm.fpext`` as
an ``#arith`` attribute that ``mlir-translate`` (export) cannot read.

Runs in the cpu pipeline after vectorization, before the conversions to the LLVM dialect
(``convert-vector-to-llvm`` lowers arith ops too). f64 -> bf16 stays one LLVM conversion
(LLVM's, which rounds through f32 as ``ml_dtypes`` and PyTorch do: 1 + 2^-8 + 2^-40 becomes
1.0). With ``f64=true`` (the vulkan pipeline: SPIR-V has no bf16 to convert to) f64 -> bf16 is
written that way: the target's f64 -> f32 conversion, then the rounding above (the same
bits); bf16 -> f64 goes through f32 (exact).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ...transforms.registry import Option, register_pass


def _element(t: ir.Type) -> ir.Type:
    return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t


def _like(shape_of: ir.Type, element: ir.Type) -> ir.Type:
    """``element``, or a vector of it shaped like ``shape_of``."""
    if isinstance(shape_of, ir.VectorType):
        v = ir.VectorType(shape_of)
        return ir.VectorType.get(v.shape, element, scalable=v.scalable_dims)
    return element


def _const(t: ir.Type, value: int) -> ir.Value:
    attr = ir.IntegerAttr.get(_element(t), value)
    if isinstance(t, ir.VectorType):
        attr = ir.DenseElementsAttr.get_splat(t, attr)
    return arith.ConstantOp(t, attr).result


def _truncf(op: ir.Operation) -> ir.Value:
    """f32 -> bf16, round to nearest even on the bits."""
    return _round_bf16(op.operands[0], op.results[0].type)


def _round_bf16(src: ir.Value, result: ir.Type) -> ir.Value:
    i32 = _like(src.type, ir.IntegerType.get_signless(32))
    i16 = _like(src.type, ir.IntegerType.get_signless(16))
    bits = arith.BitcastOp(i32, src).result
    sixteen = _const(i32, 16)
    lsb = arith.AndIOp(arith.ShRUIOp(bits, sixteen).result, _const(i32, 1)).result
    rounded = arith.AddIOp(bits, arith.AddIOp(lsb, _const(i32, 0x7FFF)).result).result
    high = arith.TruncIOp(i16, arith.ShRUIOp(rounded, sixteen).result).result
    nan = arith.CmpFOp(arith.CmpFPredicate.UNO, src, src).result
    out = arith.SelectOp(nan, _const(i16, 0x7FC0), high).result
    return arith.BitcastOp(result, out).result


def _truncf_f64(op: ir.Operation) -> ir.Value:
    """f64 -> bf16: rounded to f32 first, then to nearest even at bf16."""
    f32 = _like(op.operands[0].type, ir.F32Type.get())
    return _round_bf16(arith.TruncFOp(f32, op.operands[0]).result, op.results[0].type)


def _extf_f64(op: ir.Operation) -> ir.Value:
    """bf16 -> f64 (exact): through f32."""
    src = op.operands[0]
    i32 = _like(src.type, ir.IntegerType.get_signless(32))
    i16 = _like(src.type, ir.IntegerType.get_signless(16))
    wide = arith.ExtUIOp(i32, arith.BitcastOp(i16, src).result).result
    f32 = arith.BitcastOp(_like(src.type, ir.F32Type.get()), arith.ShLIOp(wide, _const(i32, 16)).result).result
    return arith.ExtFOp(op.results[0].type, f32).result


def _extf(op: ir.Operation) -> ir.Value:
    """bf16 -> f32 (exact): the 16 bits as the high half of an f32."""
    src = op.operands[0]
    i32 = _like(src.type, ir.IntegerType.get_signless(32))
    i16 = _like(src.type, ir.IntegerType.get_signless(16))
    wide = arith.ExtUIOp(i32, arith.BitcastOp(i16, src).result).result
    return arith.BitcastOp(op.results[0].type, arith.ShLIOp(wide, _const(i32, 16)).result).result


def _rewrite(op: ir.Operation, f64: bool = False):
    """The builder for ``op`` when it is an f32 (``f64``: or f64) <-> bf16 conversion this pass
    expands."""
    if op.name not in ("arith.truncf", "arith.extf") or "roundingmode" in op.attributes:
        return None
    src, dst = _element(op.operands[0].type), _element(op.results[0].type)
    if op.name == "arith.truncf" and isinstance(src, ir.F32Type) and isinstance(dst, ir.BF16Type):
        return _truncf
    if op.name == "arith.extf" and isinstance(src, ir.BF16Type) and isinstance(dst, ir.F32Type):
        return _extf
    if f64 and op.name == "arith.truncf" and isinstance(src, ir.F64Type) and isinstance(dst, ir.BF16Type):
        return _truncf_f64
    if f64 and op.name == "arith.extf" and isinstance(src, ir.BF16Type) and isinstance(dst, ir.F64Type):
        return _extf_f64
    return None


@register_pass("relax-bf16-casts",
               "f32 <-> bf16 conversions as integer ops (round to nearest even, subnormals kept, any CPU).",
               options=[Option("f64", bool, False, "also f64 <-> bf16 (through f32, as ml_dtypes rounds), for "
                                                   "targets without a bf16 conversion")])
def relax_bf16_casts(module: ir.Operation, opts) -> None:
    found: list[tuple[ir.Operation, object]] = []

    def visit(op):
        build = _rewrite(op.operation, opts.f64)
        if build is not None:
            found.append((op.operation, build))
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op, build in found:
        with ir.InsertionPoint(op), op.location:
            res = build(op)
        op.results[0].replace_all_uses_with(res)
        op.erase()
