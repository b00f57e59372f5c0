"""Creation ops: full, zeros, ones (shape attribute), arange (symbolic start/end/step)."""

from __future__ import annotations

from ..shapes import Dim, Shape, TensorSig
from .manipulate import _check_scope
from .registry import Attr, InferCall, op


def _filled(call: InferCall) -> TensorSig:
    shape: Shape = call["shape"]
    if shape.has_unknown:
        raise call.error("shape may not contain '?'")
    _check_scope(call, shape, "shape")
    for d in shape:
        if d.is_static and d.value < 0:
            raise call.error(f"negative dim {d}")
    return TensorSig(shape, call["dtype"])


op("full", attrs=[Attr("shape", "shape"), Attr("value", "float"), Attr("dtype", "dtype", "f32")],
   summary="a tensor of `shape` filled with `value`", family="create")(_filled)
op("zeros", attrs=[Attr("shape", "shape"), Attr("dtype", "dtype", "f32")],
   summary="a tensor of `shape` filled with 0", family="create")(_filled)
op("ones", attrs=[Attr("shape", "shape"), Attr("dtype", "dtype", "f32")],
   summary="a tensor of `shape` filled with 1", family="create")(_filled)


@op("arange", attrs=[Attr("start", "dim", 0), Attr("end", "dim"), Attr("step", "dim", 1), Attr("dtype", "dtype", "i64")],
    summary="[start, start + step, ...) below `end`; length (end - start + step - 1) // step")
def _arange(call: InferCall) -> TensorSig:
    start, end, step = Dim.of(call["start"]), Dim.of(call["end"]), Dim.of(call["step"])
    _check_scope(call, Shape([start, end, step]), "range")
    if step.is_static and step.value <= 0:
        raise call.error(f"step must be positive, got {step}")
    call.require_le(start, end, "start <= end")
    length = (end - start) if step == 1 else (end - start + step - 1) // step
    return TensorSig(Shape([length]), call["dtype"])
