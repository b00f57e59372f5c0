"""relax-conv-gemm: f32 convolutions of groups 1 as a direct kernel or im2col + GEMM
(docs/conv.md).

With ``direct=auto`` (the cpu pipeline's) or ``all``, a convolution whose output channels
fill whole vectors becomes a ``call_tir`` of the weight packing (O, C, KH, KW) ->
(O/B, C, KH, KW, B) (:func:`relax_mlir.ops.nn.conv_pack_weight_kernel`, B the schedule's
channel block for the module's target) and one of the direct kernel
(:func:`relax_mlir.ops.nn.conv_direct_kernel`): no im2col, NCHW in and out, register tiles
of output pixels x a channel block (``schedules/conv.py``), any stride, padding and
dilation; its bias / activation / residual epilogue is fused into it by relax-fuse-ops.
Before that, with ``pointwise=on`` (the cpu pipeline's), a 1x1 stride-1 unpadded convolution
becomes ONE batch matmul over the images with the weight shared
(:func:`relax_mlir.ops.nn.conv1x1_kernel`: NCHW in and out, no copies), except where the
direct kernel applies and the static map is small or the output large
(:func:`pointwise_applies`). The others take the GEMM routes below.

Each ``relax.conv2d`` with groups == 1 on f32 (static weight and input channels) whose work
(N*O*OH*OW*C*KH*KW) reaches ``min-flops`` (the relax-dispatch-library rule: symbolic work is
bounded with ``relax.upper_bounds``, unbounded means rewritten) becomes, with

* ``gemm=generated`` (the default; the cpu pipeline's with schedules on): a ``call_tir`` of
  an im2col kernel writing (C*KH*KW, N, OH, OW) (:func:`relax_mlir.ops.nn.im2col_cnhw_kernel`),
  a ``call_tir`` of the GEMM kernel (:func:`relax_mlir.ops.nn.conv_gemm_kernel`: ONE
  ``linalg.matmul`` ``W (O, K) @ col (K, N*OH*OW)`` for the whole batch, scheduled by the
  matmul schedule: M = O and K static, N symbolic) into (O, N, OH, OW), and a
  ``relax.permute_dims`` to NCHW, which relax-fuse-ops fuses with what follows (bias,
  activation, residual add) into one pass over the output;
* ``gemm=blas`` (the cpu pipeline's with schedules off and dispatch on): a
  ``relax.call_dps_library`` of ``relax_blas_conv_gemm_f32`` on (W, col) with col from an
  im2col kernel writing (N, C*KH*KW, OH, OW) (:func:`relax_mlir.ops.nn.im2col_kernel`), or
  the input itself for a 1x1 stride-1 convolution without padding (per image already the
  (C, H*W) matrix); one BLAS GEMM per image writes the NCHW output. A following
  ``relax.add`` of an (O, 1, 1) bias (the torch importer's conv bias), when the convolution
  is its only user, is folded into the call (``relax_blas_conv_gemm_bias_f32``).

``gemm=auto`` (the cpu pipeline's with schedules and dispatch on) takes ``blas`` for 1x1
stride-1 unpadded convolutions with more output than input channels (MobileNetV2's
expansions: the input read in place beats the generated GEMM plus its two copies, measured
0.8-1.0x against 1.1-1.7x of eager at one thread) and ``generated`` for the rest.

Neither route copies the weight: it is read as the (O, C*KH*KW) matrix it is in memory.
Measured (bench/bench_conv.py, bench/README.md): the generated GEMM ran 1.6-2x faster than
the provider's sgemm on this project's AMD EPYC, and both routes 10-50x faster than the
legalization's generic (plain loops over rows) on every groups-1 ResNet-18 / MobileNetV2
shape; grouped and depthwise convolutions keep that generic (an im2col GEMM per group is a thin GEMM). Run after
relax-infer-shapes and before relax-dispatch-library / relax-legalize.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dialects._core import create
from ...ops.nn import (conv1x1_kernel, conv_direct_kernel, conv_gemm_kernel, conv_pack_weight_kernel,
                      im2col_cnhw_kernel, im2col_kernel)
from ...ops.registry import RelaxError, read_attrs
from ...runtime.libraries import request
from ...shapes import Dim, Shape, TensorSig, Truth, prove_equal, read_tensor_type, tensor_type
from ...target import Simd, Target, host_simd
from .dispatch_library import worth_it
from .schedules.conv import direct_tile
from ...transforms.graph import body_ops, graph_functions, relax_opdef, single_user, upper_bounds
from ...transforms.legalize import KernelTable
from ...transforms.registry import Option, emit_error, register_pass


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


def _direct(conv: ir.Operation, table: KernelTable, x: TensorSig, out: TensorSig, strides: list[int],
            pads: list[int], dil: list[int], block: int) -> None:
    """The weight packed in channel blocks (O/B, C, KH, KW, B) (per call: the weight is a
    function argument) + the direct kernel writing NCHW."""
    w = read_tensor_type(conv.operands[1].type)
    o, c, kh, kw = (d.value for d in w.shape)
    loc, ip = conv.location, ir.InsertionPoint(conv)
    wsig = TensorSig(Shape.of([o // block, c, kh, kw, block]), "f32")
    callee = table.symbol(conv_pack_weight_kernel(w, block), "conv_pack")
    wp = create("call_tir", [conv.operands[1]], [tensor_type(wsig.shape, "f32")],
                {"callee": ir.FlatSymbolRefAttr.get(callee)}, loc=loc, ip=ip).results[0]
    callee = table.symbol(conv_direct_kernel(x, wsig, out, strides, pads, dil), "conv_direct")
    r = create("call_tir", [conv.operands[0], wp], [conv.results[0].type],
               {"callee": ir.FlatSymbolRefAttr.get(callee)}, loc=loc, ip=ip)
    conv.results[0].replace_all_uses_with(r.results[0])
    conv.erase()


def _pointwise(conv: ir.Operation, table: KernelTable) -> None:
    """A 1x1 stride-1 unpadded convolution as ONE batch matmul over the images, the weight
    shared (:func:`relax_mlir.ops.nn.conv1x1_kernel`): NCHW in and out, no copies."""
    callee = table.symbol(conv1x1_kernel(*(read_tensor_type(v.type) for v in conv.operands),
                                         read_tensor_type(conv.results[0].type)), "conv1x1")
    r = create("call_tir", list(conv.operands), [conv.results[0].type], {"callee": ir.FlatSymbolRefAttr.get(callee)},
               loc=conv.location, ip=ir.InsertionPoint(conv))
    conv.results[0].replace_all_uses_with(r.results[0])
    conv.erase()


#: Output pixels per image below which a pointwise convolution that the direct kernel can
#: take goes to it instead: with 7x7 maps (49 columns, all in masked 16-column tiles, one
#: task per image) the batch matmul measured 1.3-1.5x slower than the direct kernel at
#: batch 8; from 14x14 on it was as fast or faster (bench/README.md, "Pointwise").
POINTWISE_MIN_PIXELS = 196
#: Output bytes (at the batch's upper bound) above which a pointwise convolution that the
#: direct kernel can take goes to it: the batch matmul's fused epilogue is a second pass
#: over an output-sized intermediate, allocated per call, and above glibc's largest mmap
#: threshold (32 MiB, runtime/heap.py) that is a fresh mmap and its page faults on every call
#: (MobileNetV2's 16 -> 96 conv on 112x112 maps at batch 8: 38.5 MB).
POINTWISE_MAX_BYTES = 32 << 20


def pointwise_applies(kernel: list[int], strides: list[int], pads: list[int], pointwise: str,
                      pixels: Optional[int] = None, direct_ok: bool = False, out_bytes: Optional[int] = None) -> bool:
    """Whether a groups-1 f32 convolution takes the pointwise route (``pointwise`` option
    ``on``): a 1x1 window, stride 1, no padding (dilation is moot), unless the direct kernel
    applies (``direct_ok``) and its static ``pixels`` (OH*OW) are fewer than
    :data:`POINTWISE_MIN_PIXELS` or its output's bytes at the batch bound (``out_bytes``,
    static pixels only) exceed :data:`POINTWISE_MAX_BYTES`. Symbolic image sizes take it."""
    if not (pointwise == "on" and kernel == [1, 1] and strides == [1, 1] and not any(pads)):
        return False
    if not direct_ok or pixels is None:
        return True
    return pixels >= POINTWISE_MIN_PIXELS and (out_bytes is None or out_bytes <= POINTWISE_MAX_BYTES)


def direct_applies(o: int, lanes: int, direct: str) -> bool:
    """Whether a groups-1 f32 convolution with ``o`` output channels takes the direct kernel
    (``direct`` option): ``off``: never; ``all``: whenever O is a multiple of 8 (the
    narrowest channel block); ``auto``: when O fills whole vectors of the target
    (``lanes`` f32: 16 on AVX-512, 8 on AVX2), where it measured faster than im2col + the
    generated GEMM on every ResNet-18 / MobileNetV2 shape but a few (bench/README.md); with
    half vectors (O = 24 on AVX-512) the GEMM route stays ahead."""
    if direct == "off" or o % 8:
        return False
    return direct == "all" or o % lanes == 0


def rewrite_conv(conv: ir.Operation, table: KernelTable, bounds: dict[str, int], min_flops: int,
                 gemm: str = "generated", direct: str = "off", simd: Optional[Simd] = None,
                 pointwise: str = "off") -> bool:
    """Rewrite one ``relax.conv2d`` (see the module docstring); False when it does not apply."""
    attrs = read_attrs(relax_opdef(conv), conv)
    try:
        x, w = (read_tensor_type(v.type) for v in conv.operands)
        out = read_tensor_type(conv.results[0].type)
    except (RelaxError, ValueError):
        return False
    if attrs["data_layout"] != "NCHW":   # every route here is NCHW / OIHW
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
    simd = simd or host_simd()
    pixels = out.shape[2].value * out.shape[3].value if out.shape[2].is_static and out.shape[3].is_static else None
    out_bytes = None
    if pixels is not None:
        nbytes = out.shape[0] * Dim.of(4 * o * pixels)
        if nbytes.is_static:
            out_bytes = nbytes.value
        elif nbytes.symbols <= set(bounds):
            out_bytes = nbytes.evaluate(bounds)
    if gemm != "blas" and pointwise_applies([kh, kw], strides, pads, pointwise, pixels,
                                            direct_applies(o, simd.lanes, direct), out_bytes):
        _pointwise(conv, table)
        return True
    if gemm != "blas" and direct_applies(o, simd.lanes, direct):
        _direct(conv, table, x, out, strides, pads, dil, direct_tile(o, simd.lanes, simd.registers)[1])
        return True
    direct = kh == kw == 1 and strides == [1, 1] and not any(pads)
    if gemm == "generated" or (gemm == "auto" and not (direct and o > c)):
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
               "Rewrite f32 relax.conv2d (groups 1) into the direct kernel on a packed weight, or an im2col "
               "kernel + the generated GEMM or one BLAS GEMM per image (relax_blas_conv_gemm).",
               options=[Option("gemm", str, "generated",
                               "generated: im2col (K, N, OH, OW) + the scheduled matmul + permute to NCHW; "
                               "blas: im2col + relax_blas_conv_gemm (one BLAS GEMM per image); auto: blas for "
                               "1x1 stride-1 unpadded convs with more output than input channels, else generated"),
                        Option("direct", str, "off",
                               "the direct kernel (packed weight, no im2col) instead of a GEMM route: off, "
                               "all (O a multiple of 8), or auto (O a multiple of the target's f32 lanes)"),
                        Option("pointwise", str, "off",
                               "on: 1x1 stride-1 unpadded convs as one batch matmul over the images with the "
                               "weight shared (no im2col, packing or permute; before direct and gemm), off"),
                        Option("min-flops", int, 4096,
                               "N*O*OH*OW*C*KH*KW below which a conv stays generated code (bounded symbols: "
                               "their relax.upper_bounds)")])
def relax_conv_gemm(module: ir.Operation, opts) -> None:
    if opts.pointwise not in ("off", "on"):
        emit_error(module, f"pointwise must be 'off' or 'on', got '{opts.pointwise}'")
        return
    if opts.direct not in ("off", "all", "auto"):
        emit_error(module, f"direct must be 'off', 'all' or 'auto', got '{opts.direct}'")
        return
    try:
        simd = Target.for_module(module).simd
    except ValueError as e:
        emit_error(module, str(e))
        return
    table = KernelTable(module)
    for f in graph_functions(module):
        bounds = upper_bounds(f)
        done = False
        for op in [o for o in body_ops(f) if o.name == "relax.conv2d"]:   # (a rewrite erases the bias add)
            done |= rewrite_conv(op, table, bounds, opts.min_flops, opts.gemm, opts.direct, simd, opts.pointwise)
        if done and any(o.name == "relax.call_dps_library" for o in body_ops(f)):
            request(module, "relax_blas")
