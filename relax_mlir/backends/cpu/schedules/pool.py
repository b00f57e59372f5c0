"""Pooling (the max/avg_pool2d legalization's separable window: docs/conv.md), alone or
after a conv epilogue that relax-fuse-ops put in front of it: threads over output rows.

The legalization pads the input (fill + ``linalg.copy`` into the interior), then reduces
the window rows (one generic over strided row slices of the padded input, a
(n, c, oh, W + pads) tensor), then the columns (one generic over strided column slices of
that), then (avg) divides. Without a schedule all of it ran as plain loops on one thread
(the stem's 3x3/2 max pool with its fused conv epilogue: a tenth of ResNet-18 at batch 8).

Three ``scf.forall`` loops, one after the other (each on the OpenMP threads when enabled):

* the prologue (a conv GEMM's ``linalg.transpose`` to NCHW and the fused bias / activation
  generics), one output row per iteration, the transpose and every generic fused into it
  (as :func:`.conv.permute_rows_schedule`);
* the padded copy, one row per iteration (its fill stays one pass before: a memset);
* the window's row stage, one row of its (n, c, oh, W + pads) result per iteration;
* the column stage, one output row per iteration, the avg's division fused into it.

LLVM's loop vectorizer takes the unit-stride inner loops (the columns of a stride-2 pool
are interleaved loads).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import structured

from .common import any_op, cleanup, match


def _rows(rank: int) -> list[int]:
    return [1] * (rank - 1) + [0]


def pool_schedule(n_prologue: int, transpose: bool, padded: bool, n_pool: int, copies_before: int = 0):
    """Script body for a pooling kernel: ``transpose`` (a leading ``linalg.transpose``),
    ``n_prologue`` generics after it, the padding copy when ``padded`` (after
    ``copies_before`` copies of other operands' reshapes, a bias's, left as they are), then
    ``n_pool`` generics (rank 4) of the window and its epilogue."""

    def body(fn: ir.Value) -> None:
        gens = match(fn, "linalg.generic")
        total = n_prologue + n_pool
        ops = [gens] if total == 1 else list(transform.SplitHandleOp([any_op()] * total, gens).results)
        pre, pool = ops[:n_prologue], ops[n_prologue:]
        # the column stage (and the avg's division fused into it), then the row stage in a
        # loop of its own: the column stage reads the row stage's result through slices
        # strided along W, and producer fusion through a strided slice tiles the producer
        # as if the slice were dense (tiles take offsets and sizes, not strides)
        t = structured.TileUsingForallOp(pool[-1], tile_sizes=_rows(4))
        rows = t.results[1]
        for h in reversed(pool[1:-1]):
            rows = structured.FuseIntoContainingOp(h, rows).new_containing_op
        if len(pool) > 1:
            structured.TileUsingForallOp(pool[0], tile_sizes=_rows(4))
        if padded:
            copy = match(fn, "linalg.copy")
            if copies_before:
                copy = transform.SplitHandleOp([any_op()] * (copies_before + 1), copy).results[-1]
            structured.TileUsingForallOp(copy, tile_sizes=_rows(4))
        if pre:
            t = structured.TileUsingForallOp(pre[-1], tile_sizes=_rows(4))
            rows = t.results[1]
            for h in reversed(pre[:-1]):
                rows = structured.FuseIntoContainingOp(h, rows).new_containing_op
            if transpose:
                structured.FuseIntoContainingOp(match(fn, "linalg.transpose"), rows)
        elif transpose:
            structured.TileUsingForallOp(match(fn, "linalg.transpose"), tile_sizes=_rows(4))
        cleanup(fn)

    return body
