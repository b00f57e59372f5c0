"""Depthwise convolutions (the conv2d legalization's direct generic with one input channel
per group, + its fused bias / activation epilogue): threads over output rows, the row
vectorized along the output width (docs/conv.md, "Depthwise").

The legalization's loop order is (n, channel, output row, kh, kw, output column); a
width-strided conv reads its input in phase-split columns (``ops/nn.py``,
``_phase_split_copy``), so at every stride a tap is a unit-stride run of the input. The
script:

* the padded copy of the input (one ``linalg.copy`` per phase) and its zero fill: one
  (image, channel) plane per ``scf.forall`` iteration (they ran as one single-threaded pass
  before the conv, as long as the conv itself on the 7x7 and 14x14 maps);
* the conv's last op (the epilogue, or the conv): ``rows`` output rows per ``scf.forall``
  iteration, the epilogue generics, the conv and its accumulator's fill fused in (the
  epilogue reads the rows while they are in L1);
* inside, rows one by one, the output row cut into :data:`VECTOR_COLUMNS`-wide tiles, each
  accumulated in one vector register over the window (kh, kw tiled by 1 outside the column
  tile, the accumulator hoisted out of them); the remainder (fewer than 16 columns: all of
  a 7- or 14-wide row) peeled and vectorized with masks.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop, structured
from mlir.dialects.transform import tensor as ttensor

from .common import any_op, cleanup, lower_vectors, match, patterns

#: Output columns per vector tile: one AVX-512 vector (two AVX2 ones); depthwise rows are
#: 7-112 wide, so a wider tile would leave most of a small map to the masked remainder.
VECTOR_COLUMNS = 16

#: Output rows per forall iteration.
ROWS = 1


def depthwise_schedule(parallel_outer: int, out_rank: int, n_generics: int, conv_loops: int,
                       n_copies: int, pad_rank: int, rows: int = ROWS):
    """Script body for a depthwise kernel: a zero fill of the padded input (of rank
    ``pad_rank``; 0: no padding) and ``n_copies`` copies into it, the accumulator's fill, ``n_generics`` generics (the conv,
    then its epilogue; the last has ``out_rank`` loops). The conv has ``conv_loops`` loops:
    ``parallel_outer`` parallel ones (n, channel, row), the window's reductions, the output
    column last."""

    def body(fn: ir.Value) -> None:
        gens = match(fn, "linalg.generic")
        ops = ([gens] if n_generics == 1
               else list(transform.SplitHandleOp([any_op()] * n_generics, gens).results))
        last = ops[-1]
        acc_fill = transform.GetProducerOfOperand(any_op(), ops[0], 2).result
        padded = pad_rank > 0
        pad_fill = None
        if padded:
            fills = transform.SplitHandleOp([any_op()] * 2, match(fn, "linalg.fill")).results
            pad_fill = fills[0]   # the legalization pads first, then fills the accumulator
        # rows of the output (n, channel, row...) over the threads
        out_rows = [1] * (parallel_outer - 1) + [rows] + [0] * (out_rank - parallel_outer)
        if n_generics > 1:
            out_rows = [1] * (out_rank - 2) + [rows, 0]
        t = structured.TileUsingForallOp(last, tile_sizes=out_rows)
        conv, forall = t.results[0], t.results[1]
        for h in reversed(ops[:-1]):
            f = structured.FuseIntoContainingOp(h, forall)
            conv, forall = f.fused_op, f.new_containing_op
        structured.FuseIntoContainingOp(acc_fill, forall)
        if padded:
            # the padding: planes over the threads (fill, then each phase's copy)
            structured.TileUsingForallOp(pad_fill, tile_sizes=[1, 1] + [0] * (pad_rank - 2))
            copies = match(fn, "linalg.copy")
            handles = ([copies] if n_copies == 1
                       else list(transform.SplitHandleOp([any_op()] * n_copies, copies).results))
            for c in handles:
                structured.TileUsingForallOp(c, tile_sizes=[1, 1, 0, 0])
        patterns(fn, ttensor.ApplyFoldTensorEmptyPatternsOp)
        cleanup(fn)
        # one row at a time; 16 columns per tile; the window loops inside the column tile
        red = conv_loops - parallel_outer - 1
        sizes = [0] * (parallel_outer - 1) + [1 if rows > 1 else 0] + [1] * red + [VECTOR_COLUMNS]
        order = list(range(parallel_outer)) + [conv_loops - 1] + list(range(parallel_outer, conv_loops - 1))
        tiled = structured.TileUsingForOp(conv, sizes=sizes, interchange=order)
        col = tiled.loops[1] if rows > 1 else tiled.loops[0]
        p = loop.LoopPeelOp(any_op(), any_op(), col)
        cleanup(fn)
        patterns(fn, structured.ApplyFoldUnitExtentDimsViaSlicesPatternsOp)
        cleanup(fn)
        main = match(p.results[0], "linalg.generic")
        rest = match(p.results[1], "linalg.generic")
        structured.VectorizeOp(main)
        structured.VectorizeOp(rest, vector_sizes=[VECTOR_COLUMNS])   # the last < 16 columns, masked
        cleanup(fn)
        for _ in range(red):   # the accumulator tile out of the window loops, innermost first
            loop.HoistLoopInvariantSubsetsOp(match(p.results[0], "scf.for"))
        cleanup(fn)
        lower_vectors(fn)

    return body

