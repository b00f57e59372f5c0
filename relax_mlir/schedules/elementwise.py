"""Elementwise and broadcast chains: all-parallel ``linalg.generic`` ops (several when
fused), vectorized along the innermost dim.

The last op is tiled by 1 on every outer dim and by ``width`` on the innermost one, its
producers fused into the same loops (``structured.fuse``), and the innermost loop peeled:
the main loop's tiles are full (static ``1 x ... x width``) and vectorized without masks;
the remainder (< ``width`` elements, only when the innermost size is symbolic or not a
multiple of ``width``) stays a scalar loop. Broadcast operands become vector broadcasts.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects.transform import loop, structured

from .common import any_op, cleanup, lower_vectors, match

WIDTH = 64  # 4 zmm (AVX-512) or 8 ymm registers per operand


def elementwise_schedule(rank: int, inner: Optional[int], n_ops: int):
    """Script body for a chain of ``n_ops`` all-parallel generics of ``rank`` loops whose
    innermost extent is ``inner`` (None: symbolic)."""
    width = WIDTH
    if inner is not None and inner % width:
        width = 16 if inner % 16 == 0 else width
    exact = inner is not None and inner % width == 0

    def body(fn: ir.Value) -> None:
        last = _last(fn, "linalg.generic", n_ops)
        f = structured.FuseOp(last, tile_sizes=[1] * (rank - 1) + [width], apply_cleanup=True)
        inner_loop = f.loops[len(f.loops) - 1]
        if not exact:
            p = loop.LoopPeelOp(any_op(), any_op(), inner_loop)
            inner_loop = p.results[0]
        cleanup(fn)
        structured.VectorizeOp(match(inner_loop, "linalg.generic"))
        cleanup(fn)
        lower_vectors(fn)

    return body


def _last(fn: ir.Value, name: str, n: int) -> ir.Value:
    """Handle to the last of the ``n`` ops called ``name`` in ``fn`` (program order)."""
    from mlir.dialects import transform

    ops = match(fn, name)
    if n == 1:
        return ops
    return transform.SplitHandleOp([any_op()] * n, ops).results[n - 1]
