"""relax-nhwc-pointwise-matmul: a channels-last 1x1 stride-1 unpadded convolution (groups 1)
is a matrix product: ``reshape(x, [N*H*W, C]) @ reshape(w, [C, O])``, reshaped back to
(N, H, W, O). The matmul then takes the matmul routes (library dispatch, the scheduled
GEMM); the weight's reshape is weight-only (relax-lift-params), the activations' reshapes
are copies where they are not fused (docs/conv.md, "Layouts"). NCHW convolutions are left
alone (relax-conv-gemm's pointwise route serves them). Run after relax-infer-shapes.
"""

from __future__ import annotations

from mlir import ir

from ..dialects._core import build
from ..ops.registry import read_attrs
from ..shapes import read_tensor_type
from .graph import body_ops, graph_functions, relax_opdef
from .registry import register_pass


def rewrite(op: ir.Operation) -> bool:
    """Rewrite one ``relax.conv2d`` when it is an NHWC pointwise conv; True if rewritten."""
    attrs = read_attrs(relax_opdef(op), op)
    if attrs["data_layout"] != "NHWC" or attrs["groups"] != 1 or list(attrs["strides"]) != [1, 1] \
            or any(attrs["padding"]):
        return False
    x, w = (read_tensor_type(v.type) for v in op.operands)
    if x.rank != 4 or w.rank != 4 or x.shape.has_unknown or w.shape.has_unknown:
        return False
    kh, kw, c, o = w.shape
    if not (kh.is_static and kw.is_static and kh.value == kw.value == 1):
        return False
    n, h, wd = x.shape[0], x.shape[1], x.shape[2]
    with ir.InsertionPoint(op), op.location:
        x2 = build("reshape", op.operands[0], shape=[n * h * wd, c])
        w2 = build("reshape", op.operands[1], shape=[c, o])
        y = build("reshape", build("matmul", x2, w2), shape=[n, h, wd, o])
    op.results[0].replace_all_uses_with(y)
    op.erase()
    return True


@register_pass("relax-nhwc-pointwise-matmul",
               "Rewrite NHWC 1x1 stride-1 unpadded groups-1 conv2d into reshape + matmul + reshape.")
def relax_nhwc_pointwise_matmul(module: ir.Operation, opts) -> None:
    for f in graph_functions(module):
        for op in [o for o in body_ops(f) if o.name == "relax.conv2d"]:
            rewrite(op)
