"""Depthwise convolutions (the conv2d legalization's direct generic with one input channel
per group, + its fused bias / activation epilogue): one (image, channel) plane per task,
the output row vectorized along the width (docs/conv.md, "Depthwise").

The legalization's loop order is (n, channel, output row, kh, kw, output column); its input
is a ``tensor.pad`` (stride 1) or the phase split of one (strides > 1: ``ops/nn.py``,
``_phase_split``: pad, expand_shape, transpose), so at every stride a tap is a unit-stride
run of the input. The script:

* the conv's last op (the epilogue, or the conv): one plane per ``scf.forall`` iteration,
  the epilogue generics, the conv and its accumulator's fill fused in;
* the padding (and the split) fused into the same task (:func:`depthwise_schedule`'s
  ``in_task``): each task pads (and splits) its own plane into a plane-sized buffer that
  stays in L1/L2 and is allocated once per thread (one parallel region per conv; a
  kernel-wide padded copy was a 40 MB buffer written and read back at batch 8, in parallel
  regions of its own);
* inside, blocks of :data:`ROWS` output rows cut into :data:`VECTOR_COLUMNS`-wide tiles, each
  accumulated in vector registers over the window (kh, kw tiled by 1 outside the column
  tile, the accumulator hoisted out of them); the remainders (fewer than 4 rows, fewer
  than 16 columns: all of a 7- or 14-wide row) peeled and vectorized with masks.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop, structured
from mlir.dialects.transform import tensor as ttensor
from mlir.dialects.transform import vector as tvec
from mlir.dialects.transform import memref as tmemref

from .common import any_op, apply, cleanup, lower_vectors, match, patterns
from .conv import drop_pad_guards

#: Output columns per vector tile: one AVX-512 vector (two AVX2 ones); depthwise rows are
#: 7-112 wide, so a wider tile would leave most of a small map to the masked remainder.
VECTOR_COLUMNS = 16

#: Output rows per register tile: as many independent accumulator chains (a 7-wide row is
#: one vector: one row alone is a chain of KH*KW dependent FMAs, bound by their latency).
ROWS = 4


def _split(size, step: int) -> str:
    """How a loop of ``size`` (None: symbolic) iterations in steps of ``step`` is cut: "peel"
    (full steps, then a partial one), "full" (full steps only) or "partial" (one partial step).
    Peeling a static loop with no remainder fails, and a static loop of one step is folded away
    by canonicalization, so static sizes pick their case here."""
    if size is None or (size > step and size % step):
        return "peel"
    return "full" if size % step == 0 else "partial"


def depthwise_schedule(parallel_outer: int, out_rank: int, n_generics: int, conv_loops: int,
                       rows: int = ROWS, out_hw=(None, None),
                       out_nc=(None, None), in_task: Optional[str] = None, sw: int = 2, in_w=None):
    """``(body, finish)`` of a depthwise kernel's schedule: its padded input, the
    accumulator's fill, ``n_generics`` generics (the conv, then its epilogue; the last has
    ``out_rank`` loops). The conv has ``conv_loops`` loops: ``parallel_outer`` parallel ones
    (n, channel, row), the window's reductions, the output column last. ``out_hw``,
    ``out_nc``: the output's static height and width, batch and channels (None: symbolic).
    The padded input: ``in_task`` "pad" (a ``tensor.pad``) or "split" (``_phase_split``'s
    pad + expand_shape + transpose, ``sw`` column phases), fused into the plane task, ``in_w``
    the input's static width (None: symbolic); None: no padding. ``finish`` (None without
    padding) runs the task's part after the first script: a Python step first
    (:func:`widen_phase_slices`), then the rest as a second script."""
    red = conv_loops - parallel_outer - 1
    # (image, channel) planes per forall iteration; a static extent of 1 is not tiled: its
    # one-step forall dim would be folded by canonicalization, which clones the body and so
    # drops the handles the script holds to its ops (a static batch of 1, symbolic H/W). One
    # plane in all: a one-step forall, folded away (the conv is matched again after it).
    planes = [0 if e == 1 else 1 for e in out_nc]
    if not any(planes):
        planes = [1, 1]
    order = list(range(parallel_outer)) + [conv_loops - 1] + list(range(parallel_outer, conv_loops - 1))

    def rest(size, step: int):
        """The extent of a loop's last, partial step (None: symbolic)."""
        return None if size is None else size % step or step

    def columns(block: ir.Value, row_extent) -> list:
        """The conv generics of ``block`` (``row_extent`` rows: ``rows``, a static remainder or
        None, symbolic) in 16-column tiles, each accumulated over the window in vector
        registers: [(generic handle, row extent, column extent)]."""
        sizes = [0] * parallel_outer + [1] * red + [VECTOR_COLUMNS]
        tiled = structured.TileUsingForOp(match(block, "linalg.generic"), sizes=sizes, interchange=order)
        how = _split(out_hw[1], VECTOR_COLUMNS)
        if how == "peel":
            p = loop.LoopPeelOp(any_op(), any_op(), tiled.loops[0])
            return [(match(p.results[0], "linalg.generic"), row_extent, VECTOR_COLUMNS),
                    (match(p.results[1], "linalg.generic"), row_extent, rest(out_hw[1], VECTOR_COLUMNS))]
        return [(match(tiled.loops[0], "linalg.generic"), row_extent,
                 VECTOR_COLUMNS if how == "full" else out_hw[1])]

    def body(fn: ir.Value) -> None:
        gens = match(fn, "linalg.generic")
        ops = ([gens] if n_generics == 1
               else list(transform.SplitHandleOp([any_op()] * n_generics, gens).results))
        acc_fill = transform.GetProducerOfOperand(any_op(), ops[0], 2).result
        # one (image, channel) plane per forall iteration, the epilogue, the conv and the
        # accumulator's fill fused into it
        t = structured.TileUsingForallOp(ops[-1], tile_sizes=planes + [0] * (out_rank - 2))
        conv, forall = t.results[0], t.results[1]
        for h in reversed(ops[:-1]):
            f = structured.FuseIntoContainingOp(h, forall)
            conv, forall = f.fused_op, f.new_containing_op
        structured.FuseIntoContainingOp(acc_fill, forall)

    def split_in_task(fn: ir.Value) -> None:
        """The padding (and the phase split) per plane, in the conv's task: the split's
        transpose, then the pad (the transpose's slice of the pad's expand_shape bubbled up
        into a slice of the pad), the plane's pad a fill and a ``linalg.copy`` of its
        interior (not a strided memref.copy)."""
        forall = match(fn, "scf.forall")
        if in_task == "split":
            forall = structured.FuseIntoContainingOp(match(fn, "linalg.transpose"), forall).new_containing_op
            patterns(fn, ttensor.ApplyBubbleUpExtractSlicePatternsOp)
        forall = structured.FuseIntoContainingOp(match(fn, "tensor.pad"), forall).new_containing_op
        patterns(fn, ttensor.ApplyFoldTensorEmptyPatternsOp)
        patterns(fn, structured.ApplyDecomposeTensorPadPatternsOp)
        structured.InsertSliceToCopyOp(any_op(), match(fn, "tensor.insert_slice"))
        # the interior copy in rows of 16-column vectors (the last masked): 14-wide rows ran
        # as LLVM's 4-wide and scalar remainder loops
        copy = structured.TileUsingForOp(match(forall, "linalg.copy"), sizes=[0, 0, 1, VECTOR_COLUMNS])
        if in_w is None or (in_w > VECTOR_COLUMNS and in_w % VECTOR_COLUMNS):
            p = loop.LoopPeelOp(any_op(), any_op(), copy.loops[1])
            main, last = match(p.results[0], "linalg.copy"), match(p.results[1], "linalg.copy")
            cleanup(fn)   # (the full tiles' static shape)
            structured.VectorizeOp(main)
            structured.VectorizeOp(last, vector_sizes=[1, 1, 1, VECTOR_COLUMNS])
        else:
            structured.VectorizeOp(copy.tiled_linalg_op, vector_sizes=[1, 1, 1, VECTOR_COLUMNS])

    def epilogue(fn: ir.Value) -> None:
        """The epilogue generics (the conv is vectorized by now) in rows of 16-column vectors,
        full tiles peeled, the last masked: LLVM's loops ran a 7- or 14-wide row scalar."""
        epis = match(fn, "linalg.generic")
        for e in ([epis] if n_generics == 2
                  else transform.SplitHandleOp([any_op()] * (n_generics - 1), epis).results):
            t = structured.TileUsingForOp(e, sizes=[1, VECTOR_COLUMNS])
            how = _split(out_hw[1], VECTOR_COLUMNS)
            if how == "peel":
                p = loop.LoopPeelOp(any_op(), any_op(), t.loops[1])
                main, last = match(p.results[0], "linalg.generic"), match(p.results[1], "linalg.generic")
                cleanup(fn)   # (the full tiles' static shape)
                structured.VectorizeOp(main)
                structured.VectorizeOp(last, vector_sizes=[1, VECTOR_COLUMNS])
            else:
                structured.VectorizeOp(t.tiled_linalg_op, vector_sizes=None if how == "full" else [1, VECTOR_COLUMNS])
        cleanup(fn)

    def kernel(fn: ir.Value) -> None:
        patterns(fn, ttensor.ApplyFoldTensorEmptyPatternsOp)
        cleanup(fn)
        # the conv anew (the first generic: its epilogue's follow it); a folded forall dim
        # left the handle above empty
        gens = match(fn, "linalg.generic")
        conv = (gens if n_generics == 1
                else transform.SplitHandleOp([any_op()] * n_generics, gens).results[0])
        # blocks of ``rows`` rows, the last (fewer) rows one masked block
        blocks = structured.TileUsingForOp(conv, sizes=[0] * (parallel_outer - 1) + [rows])
        how = _split(out_hw[0], rows)
        if how == "peel":
            pr = loop.LoopPeelOp(any_op(), any_op(), blocks.loops[0])
            tiles = columns(pr.results[0], rows) + columns(pr.results[1], rest(out_hw[0], rows))
        else:
            tiles = columns(blocks.loops[0], rows if how == "full" else out_hw[0])
        cleanup(fn)
        patterns(fn, structured.ApplyFoldUnitExtentDimsViaSlicesPatternsOp)
        cleanup(fn)
        for gen, r, c in tiles:
            if r is None or c is None:   # symbolic extents: masked vectors of the full tile's
                # shape (a static extent of 1 is no dim any more: unit dims were folded)
                vec = [rows if r is None else r, VECTOR_COLUMNS if c is None else c]
                structured.VectorizeOp(gen, vector_sizes=[v for v, e in zip(vec, (r, c)) if e != 1])
            else:
                structured.VectorizeOp(gen)
        cleanup(fn)
        if n_generics > 1 and 1 not in out_hw:   # the epilogue (now 2-D: the plane's rows)
            epilogue(fn)
        # masks as operands of the transfers (not vector.mask regions, which hide the
        # remainder's accumulator from hoisting), their sizes out of the window loops
        patterns(fn, tvec.ApplyLowerMaskedTransfersPatternsOp)
        patterns(fn, tmemref.ApplyResolveRankedShapedTypeResultDimsPatternsOp)
        cleanup(fn)
        transform.ApplyLoopInvariantCodeMotionOp(match(fn, "scf.for"))
        for _ in range(red):   # the accumulator tiles out of the window loops, innermost first
            loop.HoistLoopInvariantSubsetsOp(match(fn, "scf.for"))
        cleanup(fn)
        if in_task == "split":   # the split itself: loops with the column phase innermost, which
            # LLVM unrolls, vectorizing the column loop as de-interleaving loads (vpermps)
            tr = structured.GeneralizeOp(match(fn, "linalg.transpose")).transformed
            structured.InterchangeOp(tr, iterator_interchange=[0, 1, 2, 4, 5, 3])
        lower_vectors(fn)

    if not in_task:
        def whole(fn: ir.Value) -> None:
            body(fn)
            kernel(fn)
        return whole, None

    def finish(fn: ir.Operation) -> None:
        widen_phase_slices(fn)
        apply(fn, lambda f: (split_in_task(f), kernel(f)))
        drop_pad_guards(fn)
        hoist_plane_sizes(fn)

    return body, finish


#: size arithmetic that may move out of the plane loop (pure, index-typed)
_SIZE_OPS = ("affine.apply", "affine.min", "affine.max", "tensor.dim", "arith.addi", "arith.subi", "arith.muli",
             "arith.divui", "arith.constant")


def hoist_plane_sizes(fn: ir.Operation) -> None:
    """The plane buffers' sizes (the pad's and the split's, computed from the input's H and W
    by the fused ops inside the plane loop) moved before the loop, so that
    relax-hoist-scratch allocates those buffers once per thread, not once per plane (it moves
    an allocation only when its sizes are defined outside the loop)."""
    from ....transforms.graph import defined_inside
    loops = []

    def visit(op):
        if op.name == "scf.forall":
            loops.append(op)
        return ir.WalkResult.ADVANCE

    fn.walk(visit, ir.WalkOrder.PRE_ORDER)
    for forall in loops:
        for o in [o.operation for o in forall.regions[0].blocks[0].operations]:
            if (o.name in _SIZE_OPS and all(isinstance(r.type, ir.IndexType) for r in o.results)
                    and not any(defined_inside(v, forall) for v in o.operands)):
                o.move_before(forall)


def widen_phase_slices(fn: ir.Operation) -> None:
    """The plane task's slice of the phase-split input (``ops/nn.py``, ``_phase_split``) to all
    its phases. Tiling the conv sized that slice from its input map at the window's last tap,
    ``kh % sh`` there (0 for a 3-tap window): one phase. The conv still read the others through
    the buffer's strides, but fusing the split into the task needs the slice to say which of
    the split it reads, else only that phase would be written."""
    from mlir.dialects import tensor
    slices = []

    def visit(op):
        if (op.name == "linalg.generic" and len(op.operands) > 0 and isinstance(op.operands[0], ir.OpResult)
                and op.operands[0].owner.name == "tensor.extract_slice"):
            sl = op.operands[0].owner
            src = sl.operands[0]
            if isinstance(src, ir.OpResult) and src.owner.name == "linalg.transpose":
                slices.append((op, sl))
        return ir.WalkResult.ADVANCE

    fn.walk(visit, ir.WalkOrder.PRE_ORDER)
    for conv, sl in slices:
        view = sl.opview
        full = ir.RankedTensorType(view.source.type).shape
        sizes = list(ir.DenseI64ArrayAttr(view.static_sizes))
        rt = ir.RankedTensorType(view.result.type)
        shape = list(rt.shape)
        for d in (2, 3):   # the (static) phase dims, whole
            sizes[d], shape[d] = full[d], full[d]
        with ir.InsertionPoint(sl), sl.location:
            new = tensor.ExtractSliceOp(ir.RankedTensorType.get(shape, rt.element_type), view.source,
                                        list(view.offsets), list(view.sizes), list(view.strides),
                                        view.static_offsets, ir.DenseI64ArrayAttr.get(sizes), view.static_strides)
        conv.operands[0] = new.result
        if not list(sl.results[0].uses):
            sl.erase()
