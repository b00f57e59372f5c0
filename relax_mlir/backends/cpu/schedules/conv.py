"""Convolution schedules: the conv2d legalization's generic (groups 1 or depthwise) and
relax-conv-gemm's im2col kernel (threads over output rows, the row loop to LLVM), and
relax-conv-gemm's direct kernel and its weight packing (:func:`conv_direct_schedule`).

Layout: NCHW stays NCHW. The legalization already orders the generic's loops as
(n, channel, output row, [c, kh, kw], output column), the output column innermost, so a row
of the output accumulates against a row of the (padded) input with one scalar weight: a
unit-stride loop LLVM's loop vectorizer turns into FMAs over the width (interleaved loads at
stride 2). What this schedule adds is parallelism: the last op of the kernel (the conv, or
the bias / activation / residual epilogue fused after it) is tiled into an ``scf.forall`` of
one output row per iteration (OpenMP threads when enabled: n * C * OH rows, dealt out at
run time), its producers (epilogue generics, the conv, its fill) fused into the same
iteration, so the epilogue reads the row while it is in L1 -- conv + bias + activation +
residual add is one pass over the output. The padded copy of the input (``tensor.pad``)
stays one pass before the loop (fused per row, each row would re-pad KH input rows).

Groups-1 convolutions go to relax-conv-gemm (the direct kernel on a packed weight, scheduled
by :func:`conv_direct_schedule` / :func:`conv_pack_schedule`, or im2col + GEMM), so the
legalization's generic serves depthwise convolutions (memory-bound: 9 FMAs per output
element, where a layout change at the edges would cost as much as the kernel) and the
dispatch-off path. The im2col kernel is tiled the same way, one (image, channel) plane per
iteration.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, linalg, tensor, transform
from mlir.dialects.transform import bufferization as tbuf
from mlir.dialects.transform import structured

from mlir.dialects.transform import loop
from mlir.dialects.transform import memref as tmemref
from mlir.dialects.transform import tensor as ttensor
from mlir.dialects.transform import vector as tvec

from ....transforms.graph import indexing_maps
from .common import any_op, cleanup, lower_vectors, match, patterns


#: Output columns per vector tile: one AVX-512 vector (two AVX2 ones); a depthwise row is
#: often 7-56 wide, so wider tiles would leave most of it to the scalar remainder.
VECTOR_COLUMNS = 16


def lower_transposes(fn, lanes: int) -> None:
    """Masked and permuted transfers to plain ones, then lanes x lanes vector transposes as
    register shuffles (16x16 on AVX-512, AVX2's 8x8), then the rest of the vector lowering."""
    patterns(fn, tvec.ApplyLowerMaskedTransfersPatternsOp)
    patterns(fn, tvec.ApplyLowerMasksPatternsOp)
    patterns(fn, tvec.ApplyTransferPermutationPatternsOp)
    if lanes == 16:
        patterns(fn, lambda: tvec.ApplyLowerTransposePatternsOp(
            lowering_strategy=tvec.VectorTransposeLowering.Shuffle16x16))
    else:
        patterns(fn, lambda: tvec.ApplyLowerTransposePatternsOp(avx2_lowering_strategy=lanes == 8))
    lower_vectors(fn)


def conv_schedule(parallel_outer: int, out_rank: int, n_generics: int, conv_loops: int,
                  vectorize: bool = False):
    """Script body for a kernel of ``n_generics`` generics (the conv first, then its fused
    elementwise epilogue) whose last one has ``out_rank`` loops; the conv has ``conv_loops``
    loops, ``parallel_outer`` leading parallel ones (n, channel, row), the output column
    last. ``vectorize`` (unit stride along the width): the row is cut into tiles of
    :data:`VECTOR_COLUMNS` columns, each accumulated over the window (every reduction loop
    tiled by 1, outside the column tile) in one vector register; the remainder (fewer than
    16 columns: all of a 7- or 14-wide row) peeled off and vectorized with masks."""

    def body(fn: ir.Value) -> None:
        gens = match(fn, "linalg.generic")
        ops = ([gens] if n_generics == 1
               else list(transform.SplitHandleOp([any_op()] * n_generics, gens).results))
        last = ops[-1]
        fill = transform.GetProducerOfOperand(any_op(), ops[0], 2).result   # the accumulator's zero fill
        if n_generics == 1:
            sizes = [1] * parallel_outer + [0] * (out_rank - parallel_outer)
        else:
            sizes = [1] * (out_rank - 1) + [0]
        t = structured.TileUsingForallOp(last, tile_sizes=sizes)
        conv, rows = t.results[0], t.results[1]
        for h in reversed(ops[:-1]):
            f = structured.FuseIntoContainingOp(h, rows)
            conv, rows = f.fused_op, f.new_containing_op
        structured.FuseIntoContainingOp(fill, rows)
        # a fused conv's accumulator: a row-sized tensor.empty in the loop, not a slice of an
        # output-sized one (that would be allocated, and page-faulted, in full on every call)
        patterns(fn, ttensor.ApplyFoldTensorEmptyPatternsOp)
        cleanup(fn)
        if not vectorize:
            return
        red = conv_loops - parallel_outer - 1
        tiled = structured.TileUsingForOp(conv, sizes=[0] * parallel_outer + [1] * red + [VECTOR_COLUMNS],
                                          interchange=list(range(parallel_outer)) + [conv_loops - 1]
                                          + list(range(parallel_outer, conv_loops - 1)))
        p = loop.LoopPeelOp(any_op(), any_op(), tiled.loops[0])
        main = match(p.results[0], "linalg.generic")
        cleanup(fn)
        patterns(fn, structured.ApplyFoldUnitExtentDimsViaSlicesPatternsOp)
        cleanup(fn)
        main = match(p.results[0], "linalg.generic")
        rest = match(p.results[1], "linalg.generic")
        structured.VectorizeOp(main)
        structured.VectorizeOp(rest, vector_sizes=[VECTOR_COLUMNS])   # the last < 16 columns, masked
        cleanup(fn)
        # the accumulator tile out of the window loops (innermost first: one round per loop)
        for _ in range(red):
            loop.HoistLoopInvariantSubsetsOp(match(p.results[0], "scf.for"))
        cleanup(fn)
        lower_vectors(fn)

    return body


def im2col_schedule(before: int = 0):
    """One (image, channel) plane of the im2col generic (n, c, kh, kw, oh, ow) per forall
    iteration; ``before``: that many generics precede it (a bf16 input's cast to f32, fused
    in front by relax-fuse-ops), left to the loop vectorizer."""

    def body(fn: ir.Value) -> None:
        gen = match(fn, "linalg.generic")
        if before:
            gen = transform.SplitHandleOp([any_op()] * (before + 1), gen).results[-1]
        structured.TileUsingForallOp(gen, tile_sizes=[1, 1, 0, 0, 0, 0])
        cleanup(fn)

    return body


def permute_rows_schedule(rank: int, n_generics: int, then_im2col: bool = False, params: int = 0):
    """relax-conv-gemm's epilogue: the GEMM's (O, N, OH, OW) permuted to NCHW
    (``linalg.transpose`` keeping the last dim; two where a strided shortcut's conv joins the
    block's end), then the fused bias / activation / residual generics: one output row per
    forall iteration (threads), the transposes and every generic fused into it, so each row
    is read once, contiguous, and written once. ``params``: that many lower-rank generics
    come first (an unfolded BatchNorm's per-channel scale and shift), left as they are.
    ``then_im2col``: the kernel goes on with the next convolution's im2col (relax-fuse-ops
    put it there), its generic last, tiled as in :func:`im2col_schedule`."""

    def body(fn: ir.Value) -> None:
        if n_generics == 0:   # the permutation alone
            structured.TileUsingForallOp(match(fn, "linalg.transpose"), tile_sizes=[1] * (rank - 1) + [0])
            cleanup(fn)
            return
        gens = match(fn, "linalg.generic")
        total = params + n_generics + (1 if then_im2col else 0)
        ops = ([gens] if total == 1
               else list(transform.SplitHandleOp([any_op()] * total, gens).results))[params:]
        if then_im2col:
            structured.TileUsingForallOp(ops[-1], tile_sizes=[1, 1, 0, 0, 0, 0])
            ops = ops[:-1]
        t = structured.TileUsingForallOp(ops[-1], tile_sizes=[1] * (rank - 1) + [0])
        rows = t.results[1]
        for h in reversed(ops[:-1]):
            rows = structured.FuseIntoContainingOp(h, rows).new_containing_op
        structured.FuseIntoContainingOp(match(fn, "linalg.transpose"), rows)
        cleanup(fn)

    return body


def direct_tile(o: int, lanes: int, registers: int) -> tuple[int, int]:
    """(output pixels, output channels) of the direct convolution's register tile: the
    channel block two vectors wide where it divides O (else one vector, else 8 lanes), as
    many pixels as keep the accumulators within the registers less three (the weight
    vectors and one broadcast input pixel): 7 x 32 on AVX-512 (14 zmm accumulators;
    7 divides the 56/28/14/7 widths of a 224 pyramid), 6 x 16 on AVX2 (12 ymm)."""
    block = next((b for b in (2 * lanes, lanes, 8) if o % b == 0), 8)
    vecs = max(1, block // lanes)
    return max(1, min(7, (registers - vecs - 1) // vecs)), block


#: Output rows per parallel task of the direct convolution: a task reuses its channel
#: block's weights (C*KH*KW*block floats, up to 590 KB) over this many rows, so late layers
#: with 7- or 14-wide rows do not stream the whole weight from L3 per row.
ROWS_PER_TASK = 8


def _tiles(fn: ir.Value) -> ir.Value:
    """The generics a schedule annotated :data:`TILE_ATTR` (a tile and its peeled copy)."""
    return structured.MatchOp(any_op(), fn, ops=["linalg.generic"],
                              op_attrs=ir.DictAttr.get({TILE_ATTR: ir.UnitAttr.get()})).result


#: Marks the register tile's generic across peeling and canonicalization: a static loop of one
#: iteration (a static remainder) folds away, and with it a handle to the loop.
TILE_ATTR = "relax.register_tile"


def conv_direct_schedule(n_generics: int, pixels: int, block: int, n_inputs: int, width: Optional[int],
                         conv_at: int = 0, chain: Optional[list[int]] = None, rows_per_task: int = ROWS_PER_TASK,
                         padded: bool = False, reductions: int = 1, lanes: int = 16):
    """relax-conv-gemm's direct kernel (``ops.nn.conv_direct_kernel``: one generic over
    (n, oh, ow, ob, oi | c) summing the window taps into an (N, O/B, OH, OW, B) accumulator,
    its copy to the (N, O/B, B, OH, OW) view of the NCHW output, then a fused epilogue on
    NCHW: ``n_generics`` generics in all): one task per (``block`` output channels, image,
    ``rows_per_task`` output rows) (forall: threads), the copy and the conv fused into the
    epilogue's task (the accumulator a task-sized buffer, the copy reading it while it is in
    cache; the epilogue's slice of the copy's collapsed result bubbled up into a slice of
    the copy); in the task, row by row, tiles of ``pixels`` output columns x ``block``
    output channels, each accumulated over the input channels in registers: per channel and
    tap, ``pixels`` broadcast input values times ``block / lanes`` weight vectors. Then the
    copy in ``lanes`` x ``lanes`` (channels x columns) tiles, each a register transpose
    (AVX-512: the 16x16 shuffle network, AVX2: 8x8), and the epilogue in rows of ``lanes``
    columns. The column remainders are peeled off: of a static ``width``, static tiles; of a
    symbolic one (None), vectorized with masks. ``n_inputs``: the conv's input operands (its
    accumulator's zero fill is the producer of the next). ``conv_at``: the conv's position
    among the kernel's generics, ``chain``: the positions of the copy (merged with the epilogue by
    :func:`merge_copy_into_epilogue`) and the generics after it, all over (n, ob, oi, oh, ow)
    (default: all after the conv); the others (parameter generics) stay before the tasks.
    ``padded``: the kernel pads its input with a ``tensor.pad``, tiled first into one
    (image, channel) plane per forall iteration (threads), each plane a fill and a
    ``linalg.copy`` of its interior written in place (:func:`drop_pad_guards` runs after the
    script). ``reductions``: the conv's reduction loops, 1 (c) or 2 (c, kh: windows whose
    kernel rows are a loop), each tiled by 1, the accumulator hoisted out of both."""
    chain = list(range(conv_at + 1, n_generics)) if chain is None else chain
    n_params = n_generics - 1 - len(chain)

    def body(fn: ir.Value) -> None:
        if padded:   # the padded input: (image, channel) planes over the threads
            structured.TileUsingForallOp(match(fn, "tensor.pad"), tile_sizes=[1, 1, 0, 0])
        ops = list(transform.SplitHandleOp([any_op()] * n_generics, match(fn, "linalg.generic")).results)
        fill = transform.GetProducerOfOperand(any_op(), ops[conv_at], n_inputs).result
        # channel blocks outermost: a thread's consecutive tasks share the block's weights
        last = structured.InterchangeOp(ops[chain[-1]], iterator_interchange=[1, 0, 2, 3, 4]).result
        t = structured.TileUsingForallOp(last, tile_sizes=[1, 1, 0, rows_per_task, 0])
        rows = t.forall_op
        # (a tile reads its producer's sizes: resolved to the kernel's arguments, else the
        # producer has a user left outside the tasks and is fused once more per size)
        patterns(fn, tmemref.ApplyResolveRankedShapedTypeResultDimsPatternsOp)
        for k in reversed([conv_at] + chain[:-1]):   # the epilogue (its last op first), the conv
            rows = structured.FuseIntoContainingOp(ops[k], rows).new_containing_op
            patterns(fn, tmemref.ApplyResolveRankedShapedTypeResultDimsPatternsOp)
        structured.FuseIntoContainingOp(fill, rows)
        patterns(fn, ttensor.ApplyFoldTensorEmptyPatternsOp)
        if padded:   # a plane's pad: fill + linalg.copy of the interior (not memref.copy)
            patterns(fn, structured.ApplyDecomposeTensorPadPatternsOp)
            structured.InsertSliceToCopyOp(any_op(), match(fn, "tensor.insert_slice"))
            # the plane written in place into the padded tensor, not into its own buffer
            # (whose copy back would be a strided memref.copy)
            tbuf.EliminateEmptyTensorsOp(fn)
        cleanup(fn)
        # (the handles into the forall went stale when the fusions consumed it: match again)
        # (after fusion the parameter generics precede the tasks: the conv, then the copy / epilogue)
        gens = transform.SplitHandleOp([any_op()] * n_generics, match(fn, "linalg.generic")).results
        tiled = structured.TileUsingForOp(gens[n_params], sizes=[0, 1, pixels, 0, 0] + [1] * reductions)
        # the copy / epilogue: (n, ob, oi, oh, ow) loops (the last one's interchanged to
        # (ob, n, ...)), the first two the task's 1s
        cw = min(lanes, block)
        rest = [structured.TileUsingForOp(gens[k], sizes=[0, 0, cw, 1, lanes]) for k in range(n_params + 1, n_generics)]
        # unit dims folded (the tiles' maps become projected permutations), then the tiles
        # marked (folding makes new ops) before peeling copies them
        patterns(fn, structured.ApplyFoldUnitExtentDimsViaSlicesPatternsOp)
        gens = transform.SplitHandleOp([any_op()] * n_generics, match(fn, "linalg.generic")).results
        for k in range(n_params, n_generics):
            transform.AnnotateOp(gens[k], TILE_ATTR)
        if width is None or width % pixels:
            p = loop.LoopPeelOp(any_op(), any_op(), tiled.loops[1])
        # (a static width up to the lanes: one static tile; a multiple: no remainder)
        rest_p = ([loop.LoopPeelOp(any_op(), any_op(), r.loops[2]) for r in rest]
                  if width is None or (width % lanes and width > lanes) else [])
        cleanup(fn)
        if width is not None:
            structured.VectorizeOp(_tiles(fn))
        else:
            structured.VectorizeOp(match(p.results[0], "linalg.generic"))
            structured.VectorizeOp(match(p.results[1], "linalg.generic"), vector_sizes=[pixels, block])
            for k, q in enumerate(rest_p):
                structured.VectorizeOp(match(q.results[0], "linalg.generic"))
                structured.VectorizeOp(match(q.results[1], "linalg.generic"), vector_sizes=[cw, lanes])
        cleanup(fn)
        # the accumulator tile out of the channel loop (the masked remainder's stays: its
        # transfers carry masks, which the hoisting does not move)
        for _ in range(reductions):   # (innermost first: one loop level per round)
            loop.HoistLoopInvariantSubsetsOp(match(fn, "scf.for"))
        cleanup(fn)
        # the copy's transposed reads: lanes x lanes register transposes (shuffles)
        lower_transposes(fn, lanes)

    return body


#: The direct kernel's output view (N, O/B, B, OH, OW) -> NCHW.
_BLOCKED = [[0], [1, 2], [3], [4]]


def _collapsed_blocked(v: ir.Value) -> Optional[ir.Operation]:
    """The ``tensor.collapse_shape`` (N, O/B, B, OH, OW) -> NCHW that defines ``v``, if one does."""
    if not isinstance(v, ir.OpResult) or v.owner.name != "tensor.collapse_shape":
        return None
    src = ir.RankedTensorType(v.owner.operands[0].type)
    groups = [[ir.IntegerAttr(i).value for i in g] for g in ir.ArrayAttr(v.owner.attributes["reassociation"])]
    return v.owner if src.rank == 5 and groups == _BLOCKED else None


def blockable_epilogue(op: ir.Operation, derived: set) -> bool:
    """An all-parallel NCHW generic :func:`merge_copy_into_epilogue` can take into the
    (n, ob, oi, oh, ow) space: every map result a loop dim or the constant 0, the operands
    computed from the conv (``derived``) read element for element (identity maps)."""
    ident = [ir.AffineDimExpr.get(i) for i in range(4)]
    for v, m in zip(op.operands, indexing_maps(op)):
        if m.n_dims != 4 or not all(isinstance(e, ir.AffineDimExpr) or (isinstance(e, ir.AffineConstantExpr)
                                    and e.value == 0) for e in m.results):
            return False
        if ir.Value(v) in derived and list(m.results) != ident:
            return False
    return True


def merge_copy_into_epilogue(fn: ir.Operation) -> None:
    """Before :func:`conv_direct_schedule`: the epilogue generics that relax-fuse-kernels left
    on NCHW after the direct kernel's copy (which writes the (N, O/B, B, OH, OW) view, so its
    collapsed result is what they read) are rebuilt over (n, ob, oi, oh, ow), their NCHW
    operands viewed with ``expand_shape``; the first reads the accumulator itself through the
    copy's transposed map (the copy, a pure move, disappears). Upstream elementwise fusion
    did not do it: a broadcast operand's map (``(d1, 0, 0)``, a bias) stops its reshape
    propagation. So the copy and the epilogue are one op whose maps are projected
    permutations: vectorized, a register transpose of the accumulator tile, the bias,
    residual add and activation on the vectors, one store; and the tasks tile one space,
    no slice of a collapsed channel dim to bubble up (upstream cannot for a dynamic offset)."""
    block = fn.regions[0].blocks[0]
    for op in [o.operation for o in block.operations]:
        if op.name != "linalg.generic":
            continue
        n_in = len(op.opview.inputs)
        coll = [_collapsed_blocked(v) for v in op.operands]
        if not any(coll[:n_in]) or not blockable_epilogue(op, set()):
            continue
        nb, b = ir.RankedTensorType(next(c for c in coll if c).operands[0].type).shape[1:3]
        d = [ir.AffineDimExpr.get(i) for i in range(5)]
        to5 = {0: [d[0]], 1: [d[1], d[2]], 2: [d[3]], 3: [d[4]]}
        ins, outs, maps = [], [], []
        with ir.InsertionPoint(op), op.location:
            for k, (v, m) in enumerate(zip(op.operands, indexing_maps(op))):
                c = coll[k]
                if c is not None and list(m.results) == [ir.AffineDimExpr.get(i) for i in range(4)]:
                    src = c.operands[0]
                    copy = src.owner if isinstance(src, ir.OpResult) else None
                    if (k < n_in and copy is not None and copy.name == "linalg.generic"
                            and len(copy.opview.inputs) == 1 and _is_move(copy)):
                        v5, m5 = copy.operands[0], indexing_maps(copy)[0]   # the accumulator, transposed
                    else:
                        v5, m5 = src, ir.AffineMap.get_identity(5)
                else:   # an NCHW operand: its channel dim viewed as (O/B, B)
                    t = ir.RankedTensorType(v.type)
                    res, groups, shape, dyn = [], [], [], []
                    for j, e in enumerate(m.results):
                        at = len(shape)
                        if isinstance(e, ir.AffineDimExpr) and e.position == 1:
                            res += to5[1]
                            groups.append([at, at + 1])
                            shape += [nb, b]
                        else:
                            res += to5[e.position] if isinstance(e, ir.AffineDimExpr) else [e]
                            groups.append([at])
                            shape.append(t.shape[j])
                            if t.is_dynamic_dim(j):
                                dyn.append(tensor.DimOp(v, arith.ConstantOp(ir.IndexType.get(), j)).result)
                    m5 = ir.AffineMap.get(5, 0, res)
                    if len(shape) == t.rank:
                        v5 = v
                    else:
                        rt = ir.RankedTensorType.get(shape, t.element_type)
                        v5 = tensor.ExpandShapeOp(rt, v, _reassociation(groups), dyn, shape).result
                (ins if k < n_in else outs).append(v5)
                maps.append(m5)
            new = linalg.GenericOp([o.type for o in outs], ins, outs, ir.ArrayAttr.get(
                [ir.AffineMapAttr.get(m) for m in maps]), ir.ArrayAttr.get(
                [ir.Attribute.parse("#linalg.iterator_type<parallel>")] * 5))
            op.regions[0].blocks[0].append_to(new.regions[0])
            for r, r5 in zip(op.results, new.results):
                r.replace_all_uses_with(tensor.CollapseShapeOp(r.type, r5, _reassociation(_BLOCKED)).result)
        op.erase()
        unique = []
        for c in coll:
            if c is not None and not any(c == u for u in unique):
                unique.append(c)
        for c in unique:   # the collapse and the copy, where nothing else reads them
            src = c.operands[0].owner if isinstance(c.operands[0], ir.OpResult) else None
            if not list(c.results[0].uses):
                c.erase()
                if src is not None and src.name == "linalg.generic" and not list(src.results[0].uses):
                    src.erase()


def _reassociation(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])


def _is_move(op: ir.Operation) -> bool:
    """A generic whose body yields its input unchanged."""
    body = [o for o in op.regions[0].blocks[0].operations]
    return (len(body) == 1 and body[0].operation.name == "linalg.yield"
            and body[0].operation.operands[0] == op.regions[0].blocks[0].arguments[0])


def drop_pad_guards(fn: ir.Operation) -> None:
    """After :func:`conv_direct_schedule` tiled a ``tensor.pad`` over (image, channel)
    planes: the tiling guards each plane against an empty source slice (an ``scf.if`` whose
    then-branch is a ``tensor.generate`` of the pad value), which only tiling a padded dim
    can produce; with symbolic sizes it stays, and bufferizes into a strided ``memref.copy``
    of every plane (the runtime's element-by-element ``memrefCopy``). Planes tile the
    unpadded dims, so the else-branch (fill the plane, copy its interior, possibly empty) is
    right for every size: inline it."""
    guards = []

    def visit(op):
        if op.name == "scf.if" and any(o.operation.name == "tensor.generate"
                                       for o in op.regions[0].blocks[0].operations):
            guards.append(op)
        return ir.WalkResult.ADVANCE

    fn.walk(visit, ir.WalkOrder.PRE_ORDER)
    for op in guards:
        block = op.regions[1].blocks[0]
        ops = [o.operation for o in block.operations]
        for o in ops[:-1]:
            o.move_before(op)
        for r, v in zip(op.results, ops[-1].operands):
            r.replace_all_uses_with(v)
        op.erase()


def conv_pack_schedule(n_generics: int, lanes: int, k: int, block: int):
    """The direct convolution's weight packing (its generic over (ob, oi, k) last, after
    elementwise producers fused before it, e.g. a BatchNorm scale folded into the weight):
    one channel block per forall task; in it, ``lanes`` x ``lanes`` tiles of (oi, k)
    transposed in registers: ``lanes`` vector loads along a weight row (a cache line each
    on AVX-512), a register transpose (AVX-512: the 16x16 shuffle network, AVX2: the 8x8
    one), ``lanes`` vector stores into the panel. Scalar copies measured slower: with 32
    rows 18 KB apart (C = 512) the rows' lines conflict in L1 whichever way round the loops
    run. The k remainder (``k`` = C*KH*KW not a multiple of ``lanes``) is a static tile
    peeled off; a channel block narrower than the vector (``block`` 8 on AVX-512) takes
    ``block`` x ``lanes`` tiles."""

    def body(fn: ir.Value) -> None:
        gens = match(fn, "linalg.generic")
        ops = [gens] if n_generics == 1 else list(transform.SplitHandleOp([any_op()] * n_generics, gens).results)
        t = structured.TileUsingForallOp(ops[-1], tile_sizes=[1, 0, 0])
        rows = t.forall_op
        for h in reversed(ops[:-1]):
            rows = structured.FuseIntoContainingOp(h, rows).new_containing_op
        cleanup(fn)
        gens = match(fn, "linalg.generic")
        last = gens if n_generics == 1 else transform.SplitHandleOp([any_op()] * n_generics, gens).results[-1]
        rows_ = min(lanes, block)
        tiled = structured.TileUsingForOp(last, sizes=[0, rows_, lanes])
        patterns(fn, structured.ApplyFoldUnitExtentDimsViaSlicesPatternsOp)
        gens = match(fn, "linalg.generic")
        transform.AnnotateOp(gens if n_generics == 1
                             else transform.SplitHandleOp([any_op()] * n_generics, gens).results[-1], TILE_ATTR)
        if k % lanes and k > lanes:   # a static remainder tile (a fused producer stays loops)
            loop.LoopPeelOp(any_op(), any_op(), tiled.loops[-1])
        cleanup(fn)
        structured.VectorizeOp(_tiles(fn))
        cleanup(fn)
        lower_transposes(fn, lanes)

    return body
