"""Row reductions and normalizations (softmax, RMSNorm, LayerNorm, sums over the last
dim): one fused, vectorized pass per row.

The kernel is a sequence of ``linalg.fill`` + reduction ``linalg.generic`` ops over the
last dim, ending with an all-parallel ``linalg.generic`` that writes the output. The last
op is tiled by one row (``structured.fuse``, every outer dim by 1) and the reductions
and fills fused into that loop, so a row is read from memory once and stays in cache
for the following passes; each op is then vectorized over the whole row (static last
dim) and the reductions lowered to one horizontal reduction per row, marked
``fastmath<reassoc>`` by the pass (a tree, not an ordered chain). ``exp`` is expanded
into vector arithmetic before (relax-expand-math), not called from libm.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects.transform import structured

from .common import cleanup, lower_vectors, match
from .elementwise import _last


def rows_schedule(rank: int, row: int, n_generics: int):
    """Script body for a row kernel of ``rank`` loops and a static last dim ``row``."""

    def body(fn: ir.Value) -> None:
        last = _last(fn, "linalg.generic", n_generics)
        f = structured.FuseOp(last, tile_sizes=[1] * (rank - 1) + [0], apply_cleanup=True)
        cleanup(fn)
        loop = f.loops[len(f.loops) - 1]
        structured.VectorizeOp(match(loop, "linalg.generic", "linalg.fill"))
        cleanup(fn)
        lower_vectors(fn)

    return body
