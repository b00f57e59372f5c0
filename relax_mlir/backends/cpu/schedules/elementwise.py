"""Elementwise and broadcast chains: all-parallel ``linalg.generic`` ops (several when
fused), vectorized along the innermost dim.

The last op is tiled by 1 on every outer dim (an ``scf.forall``: threads when enabled)
and by ``width`` on the innermost one, its producers fused into the same loops
(``fuse_into_containing_op``, ``structured.fuse``), and the innermost loop peeled:
the main loop's tiles are full (static ``1 x ... x width``) and vectorized without masks;
the remainder (< ``width`` elements, only when the innermost size is symbolic or not a
multiple of ``width``) stays a scalar loop. Broadcast operands become vector broadcasts.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects.transform import loop, structured

from .common import any_op, cleanup, lower_vectors, match

WIDTH = 64  # 4 zmm (AVX-512), 8 ymm (AVX2) or 16 xmm / NEON registers per operand


def vector_width(inner: Optional[int]) -> int:
    """Tile width along the innermost dim: a multiple of 64 or 16 when it divides, else 64
    with a scalar remainder (``inner`` None: symbolic)."""
    if inner is None or inner % WIDTH == 0 or inner >= WIDTH and inner % 16:
        return WIDTH
    return 16


def elementwise_schedule(rank: int, inner: Optional[int], n_ops: int, width: Optional[int] = None):
    """Script body for a chain of ``n_ops`` all-parallel generics of ``rank`` loops whose
    innermost extent is ``inner`` (None: symbolic); ``width``: a tuned tile width
    (default :func:`vector_width`)."""
    width = width or vector_width(inner)
    exact = inner is not None and inner % width == 0

    def body(fn: ir.Value) -> None:
        last = _last(fn, "linalg.generic", n_ops)
        if rank > 1:
            # Rows in an scf.forall (threads when enabled), the producers fused in.
            ops = [_nth(fn, "linalg.generic", n_ops, i) for i in range(n_ops)]
            t = structured.TileUsingForallOp(ops[-1], tile_sizes=[1] * (rank - 1) + [0])
            last, rows = t.results[0], t.results[1]
            for h in reversed(ops[:-1]):
                rows = structured.FuseIntoContainingOp(h, rows).new_containing_op
        f = structured.FuseOp(last, tile_sizes=[0] * (rank - 1) + [width])
        inner_loop = f.loops[len(f.loops) - 1]
        if not exact:
            p = loop.LoopPeelOp(any_op(), any_op(), inner_loop)
            inner_loop = p.results[0]
        # Handles to the ops, not the loop: canonicalization folds a static one-trip loop.
        main = match(inner_loop, "linalg.generic")
        cleanup(fn)
        structured.VectorizeOp(main)
        cleanup(fn)
        lower_vectors(fn)

    return body


def _nth(fn: ir.Value, name: str, n: int, i: int) -> ir.Value:
    """Handle to the i-th of the ``n`` ops called ``name`` in ``fn`` (program order)."""
    from mlir.dialects import transform

    ops = match(fn, name)
    if n == 1:
        return ops
    return transform.SplitHandleOp([any_op()] * n, ops).results[i]


def _last(fn: ir.Value, name: str, n: int) -> ir.Value:
    """Handle to the last of the ``n`` ops called ``name`` in ``fn`` (program order)."""
    from mlir.dialects import transform

    ops = match(fn, name)
    if n == 1:
        return ops
    return transform.SplitHandleOp([any_op()] * n, ops).results[n - 1]
