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
