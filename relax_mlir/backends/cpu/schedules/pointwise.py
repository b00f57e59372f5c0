"""The epilogue of relax-conv-gemm's pointwise (1x1) convolution kernels.

The convolution itself is a batch matmul scheduled by :func:`.matmul.matmul_schedule`
(``batch_panels``: one (image, pixel panel) per task). Where relax-epilogue-in-place has put
the epilogue on the product's (N, O, H*W) space, in place (a static image size), the tasks
are the epilogue's tiles with the matmul fused into them, and :func:`epilogue_tile`
vectorizes each task's tile right after its product (one parallel region). Otherwise what
relax-fuse-ops fused after it
(the bias add, ReLU6, a residual add, an unfolded BatchNorm's scale and shift) reads its
NCHW result through a ``tensor.reshape``, through which producer fusion cannot reach, so
the epilogue is a second pass over the output in the same kernel: one output row per
``scf.forall`` task (threads), the chain's generics fused into it, each row vectorized
in tiles of :data:`ROW_TILE` columns with a scalar remainder, or whole when it is static
and at most that wide (the 7- and 14-wide rows of late layers, which the elementwise
schedule leaves to loops). Measured on a 112-wide row: one 112-lane vector ran 14x slower
than 16-column tiles (its broadcast bias operand became per-element inserts); on 14-wide
rows the whole-row vector ran 2x faster than the scalar remainder. Generics of another
shape (per-channel parameters) stay before it as loops.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop, structured

from .common import any_op, cleanup, lower_vectors, match

#: Columns per vector tile of a row whose width is symbolic.
ROW_TILE = 16


def pointwise_epilogue_schedule(n_generics: int, chain: list[int], width: Optional[int]):
    """Script body for the ``n_generics`` generics left after the matmul's script: those at
    positions ``chain`` (all-parallel, of the (N, O, H, W) output's shape, the last one
    writing the kernel's result) by output rows; ``width``: W when static."""
    whole = width is not None and width <= ROW_TILE

    def body(fn: ir.Value) -> None:
        gens = match(fn, "linalg.generic")
        ops = [gens] if n_generics == 1 else list(transform.SplitHandleOp([any_op()] * n_generics, gens).results)
        t = structured.TileUsingForallOp(ops[chain[-1]], tile_sizes=[1, 1, 1, 0])
        rows = t.forall_op
        for k in reversed(chain[:-1]):
            rows = structured.FuseIntoContainingOp(ops[k], rows).new_containing_op
        cleanup(fn)
        if whole:
            structured.VectorizeOp(match(rows, "linalg.generic"))
        else:
            last = match(rows, "linalg.generic")
            if len(chain) > 1:
                last = transform.SplitHandleOp([any_op()] * len(chain), last).results[-1]
            f = structured.FuseOp(last, tile_sizes=[0, 0, 0, ROW_TILE])
            inner = f.loops[len(f.loops) - 1]
            if width is None or width % ROW_TILE:   # (a loop with no remainder cannot be peeled)
                inner = loop.LoopPeelOp(any_op(), any_op(), inner).results[0]
            main = match(inner, "linalg.generic")
            cleanup(fn)
            structured.VectorizeOp(main)
        cleanup(fn)
        lower_vectors(fn)

    return body



def epilogue_tile(fn: ir.Value, gen: ir.Value, width: Optional[int]) -> None:
    """Vectorize ``gen``, one task's tile (1, rows, columns) of a pointwise conv's epilogue
    running in place on the product panel the task has just written (the fused route of
    :func:`.matmul.matmul_schedule`): row by row, in :data:`ROW_TILE`-column vectors (the
    last columns of a row scalar where ``width``, the tile's static column count, is not a
    multiple of it or is unknown), or the whole row when it is static and at most that wide."""
    if width is not None and width <= ROW_TILE:
        row = structured.TileUsingForOp(gen, sizes=[0, 1, 0]).tiled_linalg_op
        cleanup(fn)
        structured.VectorizeOp(row)
        return
    f = structured.TileUsingForOp(gen, sizes=[0, 1, ROW_TILE])
    inner = f.loops[1]
    if width is None or width % ROW_TILE:   # (a loop with no remainder cannot be peeled)
        main = match(loop.LoopPeelOp(any_op(), any_op(), inner).results[0], "linalg.generic")
    else:
        main = f.tiled_linalg_op
    cleanup(fn)
    structured.VectorizeOp(main)
