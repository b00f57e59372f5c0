"""Memory-planning ops (produced by relax-plan-memory, consumed by relax-lower-host).

A storage is a 1-D ``i8`` tensor whose type states its byte size (``tensor<1048576xi8>``
for a static arena, ``tensor<?xi8, #relax.shape<["128*s"]>>`` for a symbolic one);
``relax.alloc_tensor`` carves a tensor out of a storage at a byte offset. The planned
tensor is passed to ``relax.call_tir`` as a destination (its ``dests`` attribute).
"""

from __future__ import annotations

from ..shapes import TensorSig
from .cross_level import _declared
from .registry import Attr, InferCall, op


def _storage(sig, call: InferCall, what: str) -> None:
    if sig is None or sig.rank != 1 or sig.dtype != "i8":
        raise call.error(f"{what} must be a 1-D i8 tensor (a storage)")


@op("alloc_storage", operands=[], results=["storage"],
    summary="allocate `size` bytes (the result type: a 1-D i8 tensor, static or symbolic) "
            "that relax.alloc_tensor carves planned tensors out of (relax-plan-memory)")
def _alloc_storage(call: InferCall) -> list[TensorSig]:
    out = _declared(call)
    if len(out) != 1:
        raise call.error("has exactly one result")
    _storage(out[0], call, "the result")
    return out


@op("alloc_tensor", operands=["storage"], attrs=[Attr("offset", "dim", 0)],
    summary="a tensor of the result type placed in `storage` at byte `offset` (may be symbolic); "
            "the destination of a planned relax.call_tir output")
def _alloc_tensor(call: InferCall) -> list[TensorSig]:
    _storage(call.inputs[0], call, "the storage operand")
    return _declared(call)


#: bytes per element of the dtypes a relax.view may produce
VIEW_BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2, "i8": 1}


@op("view", operands=["x"], attrs=[Attr("shape", "shape"), Attr("dtype", "dtype"), Attr("offset", "dim", 0)],
    summary="the bytes of the i8 tensor `x` from byte `offset` on, read as a tensor of `shape` and "
            "`dtype` (static), without a copy (as TVM's R.memory.view); e.g. layer i's weight in a "
            "stack of layers' weights (L, bytes) at offset i * bytes. Beyond `x` is a run-time ShapeError")
def _view(call: InferCall) -> TensorSig:
    from ..shapes import Dim, Shape
    from .manipulate import _check_scope
    x = call.inputs[0]
    if x is None or x.dtype != "i8" or x.rank < 1:
        raise call.error("x must be an i8 tensor of rank >= 1 (bytes)")
    shape, dtype, off = call["shape"], call["dtype"], Dim.of(call["offset"])
    if dtype not in VIEW_BYTES:
        raise call.error(f"dtype {dtype} is not one of {', '.join(VIEW_BYTES)}")
    if not all(d.is_static for d in shape):
        raise call.error(f"shape {shape} must be static")
    _check_scope(call, Shape([off]), "offset")
    call.require_le(0, off, "offset")
    return TensorSig(shape, dtype)
