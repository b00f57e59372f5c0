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
Registers hold a few vectors at a time (a whole-row vector of 1024 lanes spills). A
symbolic row length (attention scores over the KV length) runs full chunks of 64
vectorized and its remainder as a scalar loop (the chunk loops are peeled); a static row
that is not a multiple of 16 is vectorized whole (peeling static chunk loops of one trip
invalidates handles in layer_norm's chained reductions). ``exp`` is expanded
into vector arithmetic before (relax-expand-math), not called from libm.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop, structured

from .common import any_op, cleanup, lower_vectors, match

CHUNK = 64


def rows_schedule(rank: int, row: Optional[int], ops: list[str], reductions: list[bool],
                  chunk: Optional[int] = None):
    """Script body for a row kernel of ``rank`` loops and last dim ``row`` (None:
    symbolic); ``ops``: the kernel's linalg ops in program order (``linalg.fill`` /
    ``linalg.generic``), ``reductions[i]``: the i-th generic reduces over the last dim;
    ``chunk``: a tuned chunk width (dividing a static row)."""
    if chunk is not None:
        peel = row is None
    elif row is None:
        chunk, peel = CHUNK, True  # chunks of 64, the remainder (< 64) a scalar loop
    else:
        chunk, peel = (CHUNK if row % CHUNK == 0 else 16 if row % 16 == 0 else 0), False
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
        inner = split(match(row_loop, "linalg.generic"), n_gen) if chunk else []
        sizes = [0] * (rank - 1) + [chunk]
        targets: list[ir.Value] = []
        for h, red in zip(inner, reductions):
            if red:
                r = structured.TileReductionUsingForOp([any_op()], any_op(), any_op(), any_op(), h,
                                                       tile_sizes=sizes, reduction_dims=[rank - 1])
                chunk_loop = r.results[3]
                targets += [r.results[0], r.results[2]]  # the partial fill and the combining reduce
            else:
                chunk_loop = structured.TileUsingForOp(h, sizes=sizes).loops[0]
            if peel:  # full chunks vectorized; the remainder stays a scalar linalg op
                p = loop.LoopPeelOp(any_op(), any_op(), chunk_loop)
                targets.append(match(p.results[0], "linalg.generic"))
                cleanup(fn)  # static chunk shapes in the peeled main loop
                for tgt in targets:
                    structured.VectorizeOp(tgt)
                targets = []
        cleanup(fn)
        if not peel:
            structured.VectorizeOp(match(row_loop, "linalg.generic", "linalg.fill", "linalg.reduce"))
        cleanup(fn)
        # Partial accumulators live in registers across the chunk loop.
        loop.HoistLoopInvariantSubsetsOp(match(fn, "scf.for"))
        cleanup(fn)
        lower_vectors(fn)

    return body
