"""relax-widen-bf16-matmul: bf16 matmuls and convolutions as f32 ones between casts, for the f32
kernels (and a quantized matmul of an f16 / bf16 x, for the f32-only library kernels).

The cpu target's matmul and convolution schedules (tiles, packing, GEMV, im2col + GEMM,
direct and depthwise register tiles, threads) and its BLAS dispatch are f32 only; a bf16
``relax.matmul`` or ``relax.conv2d`` otherwise legalizes to plain loops (a matmul about 90x
slower than f32 at 256x512x512, a 3x3 convolution ~100x: bench/README.md). Rewritten as

    astype(matmul(astype(a, f32), astype(b, f32)), bf16)      (conv2d alike, attributes kept)

it computes the same thing: the bf16 kernels also widen each product to f32 and sum in f32
(ops/linalg.py, ops/nn.py's accumulator), so only the summation order differs, and the
result is rounded to bf16 once. The cast back fuses into the product's kernel as its
epilogue, which the schedules take (bf16 epilogues computed in f32).

Where the casts run: the activation's cast is a kernel per call (a pass over it, f32 out).
A weight's cast depends on the weight only: where the function declares its weights (the
torch importer's ``relax.num_input``) relax-lift-params moves it into
``<f>_transform_params``, which ``bind_params`` runs ONCE and whose f32 result the prepared
call keeps (twice the bf16 weight's bytes, held as long as the prepared call: the price of
f32 kernels on an f32 weight; a plain call without ``bind_params`` runs the transform every
call). In a function without ``relax.num_input`` (the builder's, hand-written IR) the weight
is an ordinary argument and its cast runs on every call, next to the product.

Runs in the cpu and vulkan graph stages (vulkan: ``quantized=false``) after shape inference and relax-fold-batch-norm (which matches
conv2d followed by a per-channel scale / shift), before relax-conv-gemm and library
dispatch (which may then send the f32 product to BLAS).

``relax.quantized_matmul`` with an f16 or bf16 x (the result in x's dtype) becomes
``astype(quantized_matmul(astype(x, f32), w), dtype)`` the same way: relax_blas's quantized
kernels (``relax_qmatmul_<format>``) read f32 x only, and their f32 accumulation is what
the op asks for; the casts are a pass over x and over the (M, N) result per call.
"""

from __future__ import annotations

from mlir import ir

from ...dialects._core import create
from ...transforms.graph import graph_functions
from ...transforms.registry import Option, register_pass


#: the ops widened: their f32 forms have schedules (and library dispatch), their bf16 ones not
WIDENED = ("relax.matmul", "relax.conv2d")


_NOT_KEPT = ("operandSegmentSizes", "resultSegmentSizes", "out_dtype")


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


def _walk(parent: ir.Operation, found: list, quantized: bool = True) -> None:
    for region in parent.regions:
        for block in region.blocks:
            for op in block.operations:
                op = op.operation
                if op.name in WIDENED and all(_is_bf16(v) for v in (*op.operands, op.results[0])):
                    found.append(op)
                elif quantized and op.name == "relax.quantized_matmul" and _is_half(op.operands[0]):
                    found.append(op)
                _walk(op, found, quantized)


@register_pass("relax-widen-bf16-matmul",
               "bf16 matmuls and conv2ds (and quantized matmuls of an f16 / bf16 x) as f32 ones between astype "
               "casts (the f32 schedules, BLAS and the quantized library kernels take them).",
               options=[Option("quantized", bool, True, "also quantized matmuls of an f16 / bf16 x (false: the "
                                                        "GPU targets' quantized kernels read such x as stored)")])
def relax_widen_bf16_matmul(module: ir.Operation, opts) -> None:
    found: list[ir.Operation] = []
    for f in graph_functions(module):
        _walk(f, found, opts.quantized)
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
        # the op's attributes (a conv's strides, padding, ...), but not a result dtype (now f32)
        attrs = {k: op.attributes[k] for k in op.attributes if k not in _NOT_KEPT}
        product = create(op.name[len("relax."):], [a, b], [_retyped(op.results[0].type, f32)], attrs,
                         loc=loc, ip=ip).results[0]
        op.results[0].replace_all_uses_with(_cast(product, bf16, loc, ip))
        op.erase()
