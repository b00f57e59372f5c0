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


def _full(call: InferCall) -> TensorSig:
    sig = _filled(call)
    check_fill_value(call, call["value"], sig.dtype)
    return sig


def check_fill_value(call: InferCall, value: float, dtype: str) -> None:
    """The fill value must be representable: an integer dtype takes a value in its range
    (a fraction truncates toward zero, as numpy's full does), a float dtype any value
    that does not overflow it (inf and nan are fine)."""
    import math

    import numpy as np
    if dtype in ("f16", "bf16", "f32", "f64"):
        top = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": float(np.finfo(np.float32).max),
               "f64": math.inf}[dtype]
        if math.isfinite(value) and abs(value) > top:
            raise call.error(f"value {value} overflows {dtype}")
        return
    if dtype == "index" or not dtype.lstrip("ui").isdigit():
        return
    if not math.isfinite(value):
        raise call.error(f"value {value} is not representable in {dtype}")
    v = math.trunc(value)
    w = int(dtype.lstrip("ui"))
    lo, hi = (0, 1) if dtype == "i1" else ((0, 2 ** w - 1) if dtype.startswith("ui") else (-(2 ** (w - 1)), 2 ** (w - 1) - 1))
    if not lo <= v <= hi:
        raise call.error(f"value {value:g} is out of range for {dtype} [{lo}, {hi}]")


op("full", attrs=[Attr("shape", "shape"), Attr("value", "float"), Attr("dtype", "dtype", "f32")],
   summary="a tensor of `shape` filled with `value`", family="create")(_full)
op("zeros", attrs=[Attr("shape", "shape"), Attr("dtype", "dtype", "f32")],
   summary="a tensor of `shape` filled with 0", family="create")(_filled)
op("ones", attrs=[Attr("shape", "shape"), Attr("dtype", "dtype", "f32")],
   summary="a tensor of `shape` filled with 1", family="create")(_filled)


# Defaults are Dims, not ints: every reader of a "dim" attribute (relax-verify's
# symbol scoping included) gets a Dim whether or not the attribute is written.
@op("arange", attrs=[Attr("start", "dim", Dim.of(0)), Attr("end", "dim"), Attr("step", "dim", Dim.of(1)),
                     Attr("dtype", "dtype", "i64")],
    summary="[start, start + step, ...) below `end`; length (end - start + step - 1) // step")
def _arange(call: InferCall) -> TensorSig:
    start, end, step = Dim.of(call["start"]), Dim.of(call["end"]), Dim.of(call["step"])
    _check_scope(call, Shape([start, end, step]), "range")
    if step.is_static and step.value <= 0:
        raise call.error(f"step must be positive, got {step}")
    call.require_le(start, end, "start <= end")
    length = (end - start) if step == 1 else (end - start + step - 1) // step
    return TensorSig(Shape([length]), call["dtype"])


# -- legalization -------------------------------------------------------------------------

from mlir.dialects import arith  # noqa: E402
from .kernels import LegalizeCall, attr_tag, identity_map  # noqa: E402
from .registry import legalization  # noqa: E402


@legalization("full", "zeros", "ones")
def _legalize_filled(call: LegalizeCall):
    value = {"zeros": 0.0, "ones": 1.0}.get(call.name, call.attrs.get("value"))
    dtype = call.out_types[0].dtype
    kb = call.builder(attr_tag(v=value if call.name == "full" else None))
    v = value if dtype.startswith(("f", "bf")) else int(value)
    return kb.finish([kb.fill(v, kb.outs[0])])


@legalization("arange")
def _legalize_arange(call: LegalizeCall):
    """out[i] = start + i * step; symbolic start/step arrive as tir_vars (the length is
    the output's dim, so `end` never enters the kernel)."""
    start, step = Dim.of(call["start"]), Dim.of(call["step"])
    sym = [d for d in (start, step) if not d.is_static]
    kb = call.builder(attr_tag(start="S" if not start.is_static else start.value,
                               step="S" if not step.is_static else step.value), n_vars=len(sym))
    it = iter(kb.vars)
    s0 = kb.index(start.value) if start.is_static else next(it)
    st = kb.index(step.value) if step.is_static else next(it)
    dtype = call.out_types[0].dtype

    def body(o):
        i = kb.linalg_index(0)
        return [kb.cast(kb.bin(arith.AddIOp, s0, kb.bin(arith.MulIOp, i, st, "index"), "index"), dtype)]

    (r,) = kb.generic([], [(kb.outs[0], identity_map(1))], ["parallel"], body)
    return kb.finish([r], tir_vars=sym)
