"""Channels-last convolutions (the conv2d legalization's ``data_layout = "NHWC"`` kernels:
upstream ``linalg.conv_2d_nhwc_hwcf`` / ``linalg.depthwise_conv_2d_nhwc_hwc``, docs/conv.md
"Layouts"), alone or with a fused elementwise epilogue: upstream's own recipe.

* one output row (image, oh) per ``scf.forall`` iteration (threads when enabled), the
  epilogue, the conv and its accumulator's fill fused into it; the padded copy likewise by
  input rows;
* in a row, tiles of ``cols`` output columns x one vector of channels (``lanes``), the
  conv fused into the epilogue's tile (``structured.fuse``), the kernel rows and (groups 1)
  the input channels tiled by 1 (loops), the accumulator tile hoisted out of them;
* the tile's 2-D conv decomposed into a 1-D one (``structured.decompose``: oh and kh are 1)
  and vectorized by linalg's convolution vectorizer: per kernel column and output column,
  a channel vector of the input times the weights (depthwise: ``vector.fma`` of two
  vectors; groups 1: a contraction lowered to outer products).

``cols`` divides a static output width (8, 7, 4, 2, 1, the largest); a symbolic width takes
8 and its last (< 8) columns stay scalar loops (the peeled remainder is not vectorized).
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop, structured

from .common import any_op, cleanup, lower_vectors, match

CONV_OPS = ("linalg.conv_2d_nhwc_hwcf", "linalg.depthwise_conv_2d_nhwc_hwc")
#: output columns per register tile (a symbolic width: this many, the rest scalar)
COLUMNS = 8
#: output-channel vectors per register tile of a groups-1 conv
CHANNEL_VECTORS = 1
#: input channels per reduction step of a groups-1 conv: 1 (per step one input value per
#: column broadcast times the weight vector; a longer step's contraction over C, lowered to
#: outer products, transposes the (columns, channels) input tile in registers:
#: bench/README.md, "Layouts")
CHANNEL_STEP = 1


def columns(ow: Optional[int]) -> int:
    """Output columns per tile: the largest of 8, 7, 4, 2, 1 dividing a static width."""
    if ow is None:
        return COLUMNS
    return next(c for c in (8, 7, 4, 2, 1) if ow % c == 0)


def conv_nhwc_schedule(depthwise: bool, n_epilogue: int, padded: bool, ow: Optional[int], lanes: int,
                       channels_in: int):
    """Script body: ``depthwise`` (else groups 1), ``n_epilogue`` fused all-parallel generics
    after the conv, ``padded`` (fill + copy before it), static output width ``ow`` (None:
    symbolic), ``lanes`` f32 per vector, ``channels_in`` the static input channels (groups 1)."""
    cols = columns(ow)
    exact = ow is not None

    def body(fn: ir.Value) -> None:
        conv = match(fn, *CONV_OPS)
        acc_fill = transform.GetProducerOfOperand(any_op(), conv, 2).result
        epi = []
        if n_epilogue:
            gens = match(fn, "linalg.generic")
            epi = [gens] if n_epilogue == 1 else list(transform.SplitHandleOp([any_op()] * n_epilogue, gens).results)
        last = epi[-1] if epi else conv
        # rows (image, output row) over the threads, the epilogue, conv and fill fused in
        t = structured.TileUsingForallOp(last, tile_sizes=[1, 1, 0, 0])
        last, rows = t.results[0], t.results[1]
        for h in reversed(epi[:-1]):
            rows = structured.FuseIntoContainingOp(h, rows).new_containing_op
        if epi:
            rows = structured.FuseIntoContainingOp(conv, rows).new_containing_op
        structured.FuseIntoContainingOp(acc_fill, rows)
        if padded:
            structured.TileUsingForallOp(match(fn, "linalg.copy"), tile_sizes=[1, 1, 0, 0])
        cleanup(fn)
        # register tiles of (cols columns x lanes channels), the conv fused into the epilogue's
        last = match(rows, "linalg.generic") if epi else match(rows, *CONV_OPS)
        if len(epi) > 1:
            last = transform.SplitHandleOp([any_op()] * len(epi), last).results[-1]
        f = structured.FuseOp(last, tile_sizes=[0, 0, cols, lanes * (1 if depthwise else CHANNEL_VECTORS)])
        main = f.loops[0]
        if not exact:
            main = loop.LoopPeelOp(any_op(), any_op(), f.loops[0]).results[0]
        cleanup(fn)
        conv_t = match(main, *CONV_OPS)
        step = next(c for c in (CHANNEL_STEP, 8, 4, 2, 1) if channels_in % c == 0)
        red = [0, 0, 0, 0, 1, 0] if depthwise else [0, 0, 0, 0, 1, 0, step]
        conv_t = structured.TileUsingForOp(conv_t, sizes=red).tiled_linalg_op
        conv_1d = structured.DecomposeOp(conv_t).result
        cleanup(fn)
        structured.VectorizeOp(conv_1d)
        if epi:
            structured.VectorizeOp(match(main, "linalg.generic"))
        structured.VectorizeOp(match(main, "linalg.fill"))
        cleanup(fn)
        # the accumulator tile out of the reduction loops (kernel rows; groups 1: channels),
        # innermost first: kept in registers instead of a read and a write per step
        transform.ApplyLoopInvariantCodeMotionOp(match(fn, "scf.for"))
        for _ in range(1 if depthwise else 2):
            loop.HoistLoopInvariantSubsetsOp(match(fn, "scf.for"))
        cleanup(fn)
        lower_vectors(fn)

    return body
