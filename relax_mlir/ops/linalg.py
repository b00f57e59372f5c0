"""Contractions: matmul with numpy semantics."""

from __future__ import annotations

from ..shapes import Shape, TensorSig
from .common import broadcast_shapes, same_dtype, tensor_input
from .registry import Attr, InferCall, op


@op("matmul", operands=["lhs", "rhs"], attrs=[Attr("out_dtype", "dtype", None)],
    summary="matrix product, numpy semantics (1-D operands, broadcast batch dims)")
def _matmul(call: InferCall) -> TensorSig:
    a, b = tensor_input(call, 0), tensor_input(call, 1)
    dtype = same_dtype(call, [a, b])
    if a.rank == 0 or b.rank == 0:
        raise call.error("operands must have rank >= 1")
    ad, bd = list(a.shape), list(b.shape)
    a_vec, b_vec = a.rank == 1, b.rank == 1
    if a_vec:
        ad = [1] + ad
    if b_vec:
        bd = bd + [1]
    call.require_equal(ad[-1], bd[-2], "reduction dim K (lhs dim -1 vs rhs dim -2)")
    batch = broadcast_shapes(call, [Shape(ad[:-2]), Shape(bd[:-2])])
    out = list(batch) + ([] if a_vec else [ad[-2]]) + ([] if b_vec else [bd[-1]])
    return TensorSig(Shape(out), call["out_dtype"] or dtype)
