"""Reductions (sum mean max min prod argmax argmin), softmax, log_softmax, layer_norm, rms_norm."""

from __future__ import annotations

from ..shapes import Shape, TensorSig
from .common import is_float, norm_axes, norm_axis, tensor_input
from .registry import Attr, InferCall, op

REDUCE = {
    "sum": "sum",
    "mean": "arithmetic mean",
    "max": "maximum",
    "min": "minimum",
    "prod": "product",
}


def reduced_shape(call: InferCall, shape: Shape, axes, keepdims: bool) -> Shape:
    ax = norm_axes(call, axes, shape.rank)
    if keepdims:
        return Shape(1 if i in ax else d for i, d in enumerate(shape))
    return Shape(d for i, d in enumerate(shape) if i not in ax)


def _declare(name: str, summary: str) -> None:
    def rule(call: InferCall) -> TensorSig:
        x = tensor_input(call, 0)
        if name == "mean" and not is_float(x.dtype):
            raise call.error(f"expects a floating-point tensor, got {x.dtype}")
        return TensorSig(reduced_shape(call, x.shape, call["axes"], call["keepdims"]), x.dtype)

    rule.__name__ = f"_{name}_shape"
    op(name, operands=["x"], attrs=[Attr("axes", "ints", None), Attr("keepdims", "bool", False)],
       summary=f"{summary} over `axes` (default all)", family="reduce")(rule)


for _n, _s in REDUCE.items():
    _declare(_n, _s)


def _arg(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    axis = call["axis"]
    axes = None if axis is None else [norm_axis(call, axis, x.rank)]
    return TensorSig(reduced_shape(call, x.shape, axes, call["keepdims"]), "i64")


for _n in ("argmax", "argmin"):
    op(_n, operands=["x"], attrs=[Attr("axis", "int", None), Attr("keepdims", "bool", False)],
       summary=f"index of the {_n[3:]}imum along `axis` (default: flattened), i64 result",
       family="reduce")(_arg)


def _softmax(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    if not is_float(x.dtype):
        raise call.error(f"expects a floating-point tensor, got {x.dtype}")
    norm_axis(call, call["axis"], x.rank)
    return x


op("softmax", operands=["x"], attrs=[Attr("axis", "int", -1)],
   summary="softmax along `axis`", family="reduce")(_softmax)
op("log_softmax", operands=["x"], attrs=[Attr("axis", "int", -1)],
   summary="log of softmax along `axis`", family="reduce")(_softmax)


def _norm_params(call: InferCall, x: TensorSig, first_param: int) -> None:
    """gamma/beta/weight must broadcast to the normalized trailing dims of x."""
    axes = norm_axes(call, call["axes"], x.rank)
    norm_shape = Shape(x.shape[a] for a in axes)
    for i in range(first_param, len(call.inputs)):
        p = tensor_input(call, i)
        if p.dtype != x.dtype:
            raise call.error(f"operand #{i} has element type {p.dtype}, expected {x.dtype}")
        if p.rank != norm_shape.rank:
            raise call.error(f"operand #{i} must have rank {norm_shape.rank} (the normalized axes), got {p.rank}")
        for j, (pd, xd) in enumerate(zip(p.shape, norm_shape)):
            call.require_equal(pd, xd, f"operand #{i} dim {j} vs normalized dim")


@op("layer_norm", operands=["x", "gamma", "beta"], attrs=[Attr("axes", "ints", [-1]), Attr("epsilon", "float", 1e-5)],
    summary="(x - mean) / sqrt(var + epsilon) * gamma + beta over `axes`")
def _layer_norm(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    if not is_float(x.dtype):
        raise call.error(f"expects a floating-point tensor, got {x.dtype}")
    _norm_params(call, x, 1)
    return x


@op("rms_norm", operands=["x", "weight"], attrs=[Attr("axes", "ints", [-1]), Attr("epsilon", "float", 1e-5)],
    summary="x / sqrt(mean(x**2) + epsilon) * weight over `axes`")
def _rms_norm(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    if not is_float(x.dtype):
        raise call.error(f"expects a floating-point tensor, got {x.dtype}")
    _norm_params(call, x, 1)
    return x


