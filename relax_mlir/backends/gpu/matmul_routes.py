"""What every route of a GPU matmul shares (relax-gpu-tile-matmul's GEMM and small launches,
the GEMV of gemv.py): the route types and :func:`finish`, which turns an f32 sum into the
stored element of C (its initial value, the storage type, the elementwise epilogue)."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from mlir import ir
from mlir.dialects import arith

from .launch_builder import element_type, from_f32, indexing_maps, inline_body, load, map_indices, store, to_f32

#: builds one route's launch at the insertion point: (matmul, M, N, the fill value or None,
#: the epilogue chain) -> None
Builder = Callable[[ir.Operation, ir.Value, ir.Value, Optional[ir.Value], list], None]
#: the run-time condition of a route: (matmul, M, N) -> an i1 value
Guard = Callable[[ir.Operation, ir.Value, ir.Value], ir.Value]
#: the routes of one matmul, tried in order: ``if g0 { b0 } else if g1 { b1 } ... else { bn }``
#: (the last route's guard is None)
Routes = Sequence[tuple[Optional[Guard], Builder]]



def _zero(v: ir.Value) -> bool:
    owner = v.owner
    return (not isinstance(owner, ir.Block) and owner.name == "arith.constant"
            and isinstance(owner.attributes["value"], ir.FloatAttr)
            and ir.FloatAttr(owner.attributes["value"]).value == 0.0)


def finish(v: ir.Value, dims: list[ir.Value], c: ir.Value, fill_value: Optional[ir.Value],
            chain: list[ir.Operation], out: ir.Value) -> None:
    """C's initial value added to the f32 sum ``v``, the result in C's element type, the
    epilogue applied, the element stored."""
    if fill_value is None:
        v = arith.AddFOp(v, to_f32(load(c, dims))).result
    elif not _zero(fill_value):
        v = arith.AddFOp(v, to_f32(fill_value)).result
    v = from_f32(v, element_type(c))
    carried = c
    for gen in chain:
        g = gen.opview
        args = []
        for operand, m in zip(list(g.inputs), indexing_maps(gen)):
            args.append(v if operand == carried else load(operand, map_indices(m, dims)))
        body = gen.regions[0].blocks[0]
        used = len(list(body.arguments[-1].uses)) > 0
        args.append(load(g.outputs[0], dims) if used else v)
        v = inline_body(gen, args, dims)
        carried = g.outputs[0]
    store(v, out, dims)
