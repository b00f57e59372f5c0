"""relax-widen-bf16-matmul: a bf16 matmul as an f32 matmul between casts, for the f32 kernels
(and a quantized matmul of an f16 / bf16 x, for the f32-only library kernels).

The cpu target's matmul schedules (tiles, packing, GEMV, threads) and its BLAS dispatch are
f32 only; a bf16 ``relax.matmul`` otherwise legalizes to plain loops (about 90x slower than
f32 at 256x512x512, bench/README.md). Rewritten as

    astype(matmul(astype(a, f32), astype(b, f32)), bf16)

it computes the same thing: the bf16 kernel also widens each product to f32 and sums in f32
(ops/linalg.py), so only the summation order differs, and the result is rounded to bf16
once. The cast back fuses into the product's kernel as its epilogue, which the schedules
take (bf16 epilogues computed in f32). The casts cost a pass over each operand per call; a
weight's cast depends on the
weight only, so where the function declares its weights (the torch importer's
``relax.num_input``) relax-lift-params moves it into ``<f>_transform_params`` and
``bind_params`` runs it once. Runs in the cpu graph stage after shape inference, before
library dispatch (which may then send the f32 product to BLAS).

``relax.quantized_matmul`` with an f16 or bf16 x (the result in x's dtype) becomes
``astype(quantized_matmul(astype(x, f32), w), dtype)`` the same way: relax_blas's quantized
kernels (``relax_qmatmul_<format>``) read f32 x only, and their f32 accumulation is what
the op asks for; the casts are a pass over x and over the (M, N) result per call.
"""

from __future__ import annotations

from mlir import ir

from ...dialects._core import create
from ...transforms.graph import graph_functions
from ...transforms.registry import register_pass


def _retyped(t: ir.Type, element: ir.Type) -> ir.Type:
    rt = ir.RankedTensorType(t)
    return ir.RankedTensorType.get(rt.shape, element, rt.encoding)


def _is_bf16(v: ir.Value) -> bool:
    return isinstance(v.type, ir.RankedTensorType) and isinstance(ir.RankedTensorType(v.type).element_type,
                                                                   ir.BF16Type)


def _is_half(v: ir.Value) -> bool:
    return isinstance(v.type, ir.RankedTensorType) and \
        isinstance(ir.RankedTensorType(v.type).element_type, (ir.BF16Type, ir.F16Type))


def _cast(v: ir.Value, element: ir.Type, loc, ip) -> ir.Value:
    return create("astype", [v], [_retyped(v.type, element)], {"dtype": ir.TypeAttr.get(element)},
                  loc=loc, ip=ip).results[0]


def _walk(parent: ir.Operation, found: list) -> None:
    for region in parent.regions:
        for block in region.blocks:
            for op in block.operations:
                op = op.operation
                if op.name == "relax.matmul" and all(_is_bf16(v) for v in (*op.operands, op.results[0])):
                    found.append(op)
                elif op.name == "relax.quantized_matmul" and _is_half(op.operands[0]):
                    found.append(op)
                _walk(op, found)


@register_pass("relax-widen-bf16-matmul",
               "bf16 matmuls (and quantized matmuls of an f16 / bf16 x) as f32 ones between astype casts "
               "(the f32 schedules, BLAS and the quantized library kernels take them).")
def relax_widen_bf16_matmul(module: ir.Operation, opts) -> None:
    found: list[ir.Operation] = []
    for f in graph_functions(module):
        _walk(f, found)
    for op in found:
        f32, bf16 = ir.F32Type.get(), ir.BF16Type.get()
        ip, loc = ir.InsertionPoint(op), op.location
        if op.name == "relax.quantized_matmul":
            x, w = op.operands
            half = ir.RankedTensorType(x.type).element_type
            attrs = {name: op.attributes[name] for name in op.attributes}
            product = create("quantized_matmul", [_cast(x, f32, loc, ip), w], [_retyped(op.results[0].type, f32)],
                             attrs, loc=loc, ip=ip).results[0]
            op.results[0].replace_all_uses_with(_cast(product, half, loc, ip))
            op.erase()
            continue
        a, b = (_cast(v, f32, loc, ip) for v in op.operands)
        product = create("matmul", [a, b], [_retyped(op.results[0].type, f32)], loc=loc, ip=ip).results[0]
        op.results[0].replace_all_uses_with(_cast(product, bf16, loc, ip))
        op.erase()
