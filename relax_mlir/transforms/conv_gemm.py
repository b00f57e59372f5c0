"""relax-conv-gemm: f32 convolutions (groups 1) as im2col + one BLAS GEMM per image.

Each ``relax.conv2d`` with groups == 1 on f32 whose work (N*O*OH*OW*C*KH*KW) reaches
``min-flops`` (the relax-dispatch-library rule: symbolic work is bounded with
``relax.upper_bounds``, unbounded means dispatched) becomes

* 1x1, stride 1, no padding: ``relax.call_dps_library`` of ``relax_blas_conv_gemm_4_f32``
  on (W, x): the NCHW input already is, per image, the (C, H*W) matrix of the GEMM;
* otherwise: ``relax.call_tir`` of an im2col kernel (``relax_im2col_*``: pad, then one
  generic writing (N, C*KH*KW, OH*OW); :func:`relax_mlir.ops.nn.im2col_kernel`), then
  ``relax_blas_conv_gemm_3_f32`` on (W, col);

and the library writes the NCHW output, per image ``W (O, C*KH*KW) @ col (K, OH*OW)``: no
layout change at either edge and no copy of the weight (read as the matrix it is in
memory). A following ``relax.add`` of a bias shaped (O, 1, 1) -- the torch importer's conv
bias -- when the convolution is its only user, is folded into the call (``_bias`` symbols:
each output row starts from its bias; the GEMM accumulates with beta = 1). What follows
(activation, residual add) stays relax ops, fused into one elementwise kernel as usual.

Why im2col + BLAS for these: measured against the generated direct convolution (plain loops
of one generic, output width innermost), the GEMM route was 10-50x faster on every
ResNet-18 / MobileNetV2 shape of groups 1 (bench/bench_conv.py, bench/README.md);
grouped and depthwise convolutions keep the generated kernel (an im2col GEMM per group is
a thin GEMM). Run after relax-infer-shapes and before relax-dispatch-library /
relax-legalize; the cpu pipeline runs it when library dispatch is on.
"""

from __future__ import annotations

from mlir import ir

from ..dialects._core import create
from ..ops.nn import conv_gemm_kernel, im2col_cnhw_kernel, im2col_kernel
from ..ops.registry import RelaxError, read_attrs
from ..runtime.libraries import request
from ..shapes import Dim, Shape, TensorSig, Truth, prove_equal, read_tensor_type, tensor_type
from .dispatch_library import worth_it
from .graph import body_ops, graph_functions, relax_opdef, single_user, upper_bounds
from .legalize import KernelTable
from .registry import Option, register_pass


def _pads(p: list[int]) -> list[int]:
    return p + p if len(p) == 2 else p


def _bias_add(conv: ir.Operation, out: TensorSig):
    """(the ``relax.add`` to fold, its bias operand) when the conv's only user adds an
    f32 (O, 1, 1) tensor to it (either operand order); else None."""
    user = single_user(conv.results[0], conv)
    if user is None or user.name != "relax.add" or len(user.operands) != 2:
        return None
    others = [v for v in user.operands if v != conv.results[0]]
    if len(others) != 1:
        return None
    try:
        b, r = read_tensor_type(others[0].type), read_tensor_type(user.results[0].type)
    except (RelaxError, ValueError):
        return None
    o = out.shape[1]
    if (b.dtype != "f32" or b.rank != 3 or prove_equal(b.shape[0], o) is not Truth.TRUE
            or any(prove_equal(d, 1) is not Truth.TRUE for d in b.shape[1:])):
        return None
    if any(prove_equal(a, c) is not Truth.TRUE for a, c in zip(r.shape, out.shape)) or r.rank != 4:
        return None
    return user, others[0]


def _generated(conv: ir.Operation, table: KernelTable, x: TensorSig, out: TensorSig, kernel: list[int],
               strides: list[int], pads: list[int], dil: list[int]) -> None:
    """im2col (K, N, OH, OW) + the generated GEMM (O, N, OH, OW) + permute_dims to NCHW."""
    w = read_tensor_type(conv.operands[1].type)
    o, c = w.shape[0].value, w.shape[1].value
    loc, ip = conv.location, ir.InsertionPoint(conv)
    csig = TensorSig(Shape([Dim.of(c * kernel[0] * kernel[1]), out.shape[0], out.shape[2], out.shape[3]]), "f32")
    callee = table.symbol(im2col_cnhw_kernel(x, csig, kernel, strides, pads, dil), "im2col")
    col = create("call_tir", [conv.operands[0]], [tensor_type(csig.shape, "f32")],
                 {"callee": ir.FlatSymbolRefAttr.get(callee)}, loc=loc, ip=ip).results[0]
    ysig = TensorSig(Shape([Dim.of(o), out.shape[0], out.shape[2], out.shape[3]]), "f32")
    callee = table.symbol(conv_gemm_kernel(w, csig, ysig), "conv_gemm")
    y = create("call_tir", [conv.operands[1], col], [tensor_type(ysig.shape, "f32")],
               {"callee": ir.FlatSymbolRefAttr.get(callee)}, loc=loc, ip=ip).results[0]
    r = create("permute_dims", [y], [conv.results[0].type], {"axes": ir.DenseI64ArrayAttr.get([1, 0, 2, 3])},
               loc=loc, ip=ip)
    conv.results[0].replace_all_uses_with(r.results[0])
    conv.erase()


def rewrite_conv(conv: ir.Operation, table: KernelTable, bounds: dict[str, int], min_flops: int,
                 gemm: str = "generated") -> bool:
    """Rewrite one ``relax.conv2d`` (see the module docstring); False when it does not apply."""
    attrs = read_attrs(relax_opdef(conv), conv)
    try:
        x, w = (read_tensor_type(v.type) for v in conv.operands)
        out = read_tensor_type(conv.results[0].type)
    except (RelaxError, ValueError):
        return False
    if attrs["groups"] != 1 or not (x.dtype == w.dtype == out.dtype == "f32"):
        return False
    if not all(d.is_static for d in w.shape) or not x.shape[1].is_static or out.shape.has_unknown \
            or x.shape.has_unknown:
        return False
    o, c, kh, kw = (d.value for d in w.shape)
    flops = out.shape[0] * out.shape[2] * out.shape[3] * Dim.of(o * c * kh * kw)
    if not worth_it(flops, bounds, min_flops):
        return False
    strides, pads, dil = list(attrs["strides"]), _pads(list(attrs["padding"])), list(attrs["dilation"])
    direct = kh == kw == 1 and strides == [1, 1] and not any(pads)
    if gemm == "generated":
        _generated(conv, table, x, out, [kh, kw], strides, pads, dil)
        return True
    loc, ip = conv.location, ir.InsertionPoint(conv)
    if direct:
        col = conv.operands[0]
    else:
        csig = TensorSig(Shape([x.shape[0], Dim.of(c * kh * kw), out.shape[2], out.shape[3]]), "f32")
        kernel = im2col_kernel(x, csig, [kh, kw], strides, pads, dil)
        callee = table.symbol(kernel, "im2col")
        col = create("call_tir", [conv.operands[0]], [tensor_type(csig.shape, "f32")],
                     {"callee": ir.FlatSymbolRefAttr.get(callee)}, loc=loc, ip=ip).results[0]
    last, operands, symbol = conv, [conv.operands[1], col], "relax_blas_conv_gemm_f32"
    bias = _bias_add(conv, out)
    if bias is not None:
        last, b = bias
        operands.append(b)
        symbol = "relax_blas_conv_gemm_bias_f32"
    call = create("call_dps_library", operands, [last.results[0].type], {"callee": ir.StringAttr.get(symbol)},
                  loc=loc, ip=ip)
    last.results[0].replace_all_uses_with(call.results[0])
    if last is not conv:
        last.erase()
    conv.erase()
    return True


@register_pass("relax-conv-gemm",
               "Rewrite f32 relax.conv2d (groups 1) into an im2col kernel + one BLAS GEMM per image "
               "(relax_blas_conv_gemm), folding a following (O, 1, 1) bias add.",
               options=[Option("gemm", str, "generated",
                               "generated: im2col (K, N, OH, OW) + the scheduled matmul + permute to NCHW; "
                               "blas: im2col + relax_blas_conv_gemm (one BLAS GEMM per image)"),
                        Option("min-flops", int, 4096,
                               "N*O*OH*OW*C*KH*KW below which a conv stays generated code (bounded symbols: "
                               "their relax.upper_bounds)")])
def relax_conv_gemm(module: ir.Operation, opts) -> None:
    table = KernelTable(module)
    for f in graph_functions(module):
        bounds = upper_bounds(f)
        done = False
        for op in [o for o in body_ops(f) if o.name == "relax.conv2d"]:   # (a rewrite erases the bias add)
            done |= rewrite_conv(op, table, bounds, opts.min_flops, opts.gemm) and opts.gemm == "blas"
        if done:
            request(module, "relax_blas")
