"""Row reductions and normalizations (softmax, RMSNorm, LayerNorm, sums over the last
dim): one fused, vectorized pass per row.

The kernel is a sequence of ``linalg.fill`` + reduction ``linalg.generic`` ops over the
last dim, ending with an all-parallel ``linalg.generic`` that writes the output. The last
op is tiled by one row (``structured.fuse``, every outer dim by 1) and the reductions
and fills fused into that loop, so a row is read from memory once and the following
passes find it in L1. Inside the row, every op is then split into ``chunk``-wide steps:
a reduction accumulates into a ``chunk``-lane partial vector
(``tile_reduction_using_for``) combined by one horizontal reduction per row, marked
``fastmath<reassoc>`` by the pass; the elementwise op runs ``chunk`` lanes per step.
Registers hold a few vectors at a time (a whole-row vector of 1024 lanes spills). A row
whose length is not a multiple of 16 is vectorized whole instead. ``exp`` is expanded
into vector arithmetic before (relax-expand-math), not called from libm.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop, structured

from .common import any_op, cleanup, lower_vectors, match

CHUNK = 64


def rows_schedule(rank: int, row: int, ops: list[str], reductions: list[bool]):
    """Script body for a row kernel of ``rank`` loops and a static last dim ``row``;
    ``ops``: the kernel's linalg ops in program order (``linalg.fill`` /
    ``linalg.generic``), ``reductions[i]``: the i-th generic reduces over the last dim."""
    chunk = CHUNK if row % CHUNK == 0 else 16 if row % 16 == 0 else 0
    n_gen, n_fill = ops.count("linalg.generic"), ops.count("linalg.fill")

    def split(h: ir.Value, n: int) -> list[ir.Value]:
        return [h] if n == 1 else list(transform.SplitHandleOp([any_op()] * n, h).results)

    def body(fn: ir.Value) -> None:
        gens = split(match(fn, "linalg.generic"), n_gen)
        fills = split(match(fn, "linalg.fill"), n_fill) if n_fill else []
        handles, gi, fi = [], 0, 0
        for name in ops:
            if name == "linalg.generic":
                handles.append(gens[gi])
                gi += 1
            else:
                handles.append(fills[fi])
                fi += 1
        # One row per iteration; the producers fused in, each once (all its uses in the row).
        t = structured.TileUsingForallOp(handles[-1], tile_sizes=[1] * (rank - 1) + [0])
        row_loop = t.results[1]
        for h in reversed(handles[:-1]):
            row_loop = structured.FuseIntoContainingOp(h, row_loop).new_containing_op
        cleanup(fn)
        if chunk:
            inner = split(match(row_loop, "linalg.generic"), n_gen)
            for h, red in zip(inner, reductions):
                sizes = [0] * (rank - 1) + [chunk]
                if red:
                    structured.TileReductionUsingForOp([any_op()], any_op(), any_op(), any_op(), h,
                                                       tile_sizes=sizes, reduction_dims=[rank - 1])
                else:
                    structured.TileUsingForOp(h, sizes=sizes)
            cleanup(fn)
        structured.VectorizeOp(match(row_loop, "linalg.generic", "linalg.fill", "linalg.reduce"))
        cleanup(fn)
        # Partial accumulators live in registers across the chunk loop.
        loop.HoistLoopInvariantSubsetsOp(match(fn, "scf.for"))
        cleanup(fn)
        lower_vectors(fn)

    return body
