"""Elementwise and broadcast chains: all-parallel ``linalg.generic`` ops (several when
fused), vectorized along the innermost dim.

The last op is tiled by 1 on every outer dim (an ``scf.forall``: threads when enabled)
and by ``width`` on the innermost one, its producers fused into the same loops
(``fuse_into_containing_op``, ``structured.fuse``), and the innermost loop peeled:
the main loop's tiles are full (static ``1 x ... x width``) and vectorized without masks;
the remainder (< ``width`` elements, only when the innermost size is symbolic or not a
multiple of ``width``) stays a scalar loop. Broadcast operands become vector broadcasts.

Small static inner dims are merged first (:func:`collapse_group`, a Python step on the
kernel before the script): a BatchNorm scale folded into a conv weight, (O, C, 3, 3) times a
per-O scale, would otherwise vectorize along 3 (not at all: too narrow); merged it runs as
(O, C*9). Loops merge when every operand reads them alike (at consecutive dims) or not at
all (a broadcast); unit loops merge with anything. A kernel of several results (relax-lift-
params' weight transforms, fused into one kernel) gets each generic scheduled on its own
(:func:`each_schedule`).
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, linalg, tensor, transform
from mlir.dialects.transform import loop, structured

from ....transforms.graph import indexing_maps
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


# -- merging small inner dims ----------------------------------------------------------------------

#: Trailing static loops are merged into the innermost one while it is narrower than this (a
#: 3x3 or 1x1 conv window, 7x7 pixels): the vector loop then runs over C*KH*KW elements, not 3.
COLLAPSE_BELOW = 256

Group = tuple[int, int]   # (first loop, number of loops) merged into one


def _group_ok(maps: list[ir.AffineMap], dims: list[int]) -> bool:
    """Loops ``dims`` (consecutive but for unit loops left out) can be one loop in every map:
    each map reads none of them or all, in order, at consecutive positions (the operand's
    dims are then one contiguous dim)."""
    for m in maps:
        pos = {e.position: j for j, e in enumerate(m.results) if isinstance(e, ir.AffineDimExpr)}
        at = [pos[d] for d in dims if d in pos]
        if at and (len(at) != len(dims) or at != list(range(at[0], at[0] + len(at)))):
            return False
    return True


def _collapsible_maps(op: ir.Operation) -> Optional[list[ir.AffineMap]]:
    """The maps of an all-parallel generic whose map results are loop dims or the constant 0
    (elementwise, broadcast), with identity output maps and no ``linalg.index``; else None."""
    if op.name != "linalg.generic" or any("parallel" not in str(t) for t in op.opview.iterator_types):
        return None
    maps = indexing_maps(op)
    n = len(op.opview.iterator_types)
    if any(not (isinstance(e, ir.AffineDimExpr) or isinstance(e, ir.AffineConstantExpr) and e.value == 0)
           for m in maps for e in m.results):
        return None
    if any(m != ir.AffineMap.get_identity(n, context=op.context) for m in maps[len(op.opview.inputs):]):
        return None
    if any(o.operation.name == "linalg.index" for o in op.regions[0].blocks[0].operations):
        return None
    return maps


def collapse_group(ops: list[ir.Operation]) -> Optional[Group]:
    """The trailing loops :func:`collapse_inner_dims` merges into one in every generic of
    ``ops`` (one loop nest: the same output shape), or None: a symbolic innermost extent, one
    of at least :data:`COLLAPSE_BELOW`, or nothing to merge. Only static extents merge, and
    never into loop 0 (the rows' loop, shared by the threads)."""
    all_maps = [_collapsible_maps(op) for op in ops]
    if not ops or any(m is None for m in all_maps):
        return None
    shape = list(ir.RankedTensorType(ops[-1].results[0].type).shape)
    if any(list(ir.RankedTensorType(r.type).shape) != shape for o in ops for r in o.results):
        return None
    n = len(shape)
    if n < 2:
        return None
    first, extent = n - 1, shape[-1]
    while first > 1 and not ir.ShapedType.is_dynamic_size(extent) and extent < COLLAPSE_BELOW \
            and not ir.ShapedType.is_dynamic_size(shape[first - 1]):
        dims = [d for d in range(first - 1, n) if shape[d] != 1]   # a unit loop merges with anything
        if not all(_group_ok(maps, dims) for maps in all_maps):
            break
        first -= 1
        extent *= shape[first]
    return (first, n - first) if n - first > 1 and extent > 1 else None


def collapsed_shape(shape: list, group: Optional[Group]) -> list:
    """``shape`` (None or dynamic: a symbolic dim) with the dims of ``group`` merged."""
    if group is None:
        return list(shape)
    first, count = group
    dims = shape[first:first + count]
    merged = 1
    for d in dims:
        if d is None or ir.ShapedType.is_dynamic_size(d):
            merged = d
            break
        merged *= d
    return list(shape[:first]) + [merged] + list(shape[first + count:])


def _prod(xs: list[int]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def _reassociation(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])


def _groups(rank: int, first: int, count: int) -> list[list[int]]:
    return [[j] for j in range(first)] + [list(range(first, first + count))] + \
           [[j] for j in range(first + count, rank)]


def collapse_inner_dims(ops_groups: list[tuple[ir.Operation, Group]]) -> None:
    """Rewrite each generic (with its loops of ``group``, from :func:`collapse_group`) in place
    with those loops merged into one: operands reading them are viewed with
    ``tensor.collapse_shape`` (a broadcast operand that reads none of them, e.g. a
    per-channel scale ``(d0, 0, 0, 0)``, stays as it is; an empty init becomes a smaller
    ``tensor.empty``), results are viewed back with ``tensor.expand_shape`` for their other
    users. A generic of the list that reads another's result with the same group reads the
    merged result directly, so a fused chain stays one chain of one loop nest."""
    merged: dict = {}   # expand_shape result -> (merged result, group)
    backs = []
    for op, (first, count) in ops_groups:
        n_loops = len(op.opview.iterator_types)
        n_in = len(op.opview.inputs)

        def renumber(e):
            if not isinstance(e, ir.AffineDimExpr) or e.position < first:
                return e
            return ir.AffineDimExpr.get(first if e.position < first + count else e.position - count + 1)

        out_shape = list(ir.RankedTensorType(op.results[0].type).shape)
        units = {d for d in range(first, first + count) if out_shape[d] == 1}
        new_maps = []
        with ir.InsertionPoint(op), op.location:
            for k, (v, m) in enumerate(zip(list(op.operands), indexing_maps(op))):
                res, t = list(m.results), ir.RankedTensorType(v.type)
                # a unit loop of the group is read at 0 (its operand dim is 1)
                res = [ir.AffineConstantExpr.get(0) if isinstance(e, ir.AffineDimExpr) and e.position in units
                       else e for e in res]
                run = [j for j, e in enumerate(res) if isinstance(e, ir.AffineDimExpr)
                       and first <= e.position < first + count]
                # the operand's dims: the merged loops' dims one group, a unit dim read at the
                # constant 0 (a broadcast) joined to its neighbour (the vectorizer takes no 0)
                groups, exprs, held = [], [], []
                for j, e in enumerate(res):
                    if run and run[0] < j <= run[-1]:
                        groups[-1].append(j)
                    elif isinstance(e, ir.AffineConstantExpr) and t.shape[j] == 1:
                        (groups[-1] if groups else held).append(j)
                    else:
                        groups.append(held + [j])
                        exprs.append(renumber(e))
                        held = []
                if held and groups:
                    groups[-1] += held
                    held = []
                new_maps.append(ir.AffineMap.get(n_loops - count + 1, 0, exprs))
                if len(groups) == len(res) and not held:
                    continue
                shape = []
                for g in groups:
                    sizes = [t.shape[j] for j in g]
                    dyn = any(ir.ShapedType.is_dynamic_size(d) for d in sizes)
                    shape.append(ir.ShapedType.get_dynamic_size() if dyn else _prod(sizes))
                if v in merged and merged[v][1] == (first, count) and m == ir.AffineMap.get_identity(n_loops):
                    nv = merged[v][0]
                elif (isinstance(v, ir.OpResult) and v.owner.name == "tensor.empty"
                      and not any(ir.ShapedType.is_dynamic_size(d) for d in shape)):
                    nv = tensor.EmptyOp(shape, t.element_type).result
                else:
                    nv = tensor.CollapseShapeOp(ir.RankedTensorType.get(shape, t.element_type), v,
                                                _reassociation(groups)).result
                op.operands[k] = nv
        op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps])
        its = list(op.opview.iterator_types)
        op.attributes["iterator_types"] = ir.ArrayAttr.get(its[:first + 1] + its[first + count:])
        groups = _groups(n_loops, first, count)
        for r, out in zip(op.results, list(op.operands)[n_in:]):
            old = ir.RankedTensorType(r.type)
            r.set_type(out.type)
            if not list(r.uses):
                continue
            with ir.InsertionPoint.after(op), op.location:
                dyn = [tensor.DimOp(r, arith.ConstantOp(ir.IndexType.get(), j)).result
                       for j, g in enumerate(groups) if len(g) == 1 and old.is_dynamic_dim(g[0])]
                back = tensor.ExpandShapeOp(old, r, _reassociation(groups), dyn, list(old.shape))
            r.replace_all_uses_except(back.result, [back.operation] + [d.owner.operation for d in dyn])
            merged[back.result] = (r, (first, count))
            backs.append(back.operation)
    for back in backs:   # views no user is left for (a merged chain reads the merged results)
        if not list(back.results[0].uses):
            dims = [d.owner for d in list(back.operands)[1:]]
            back.erase()
            for d in dims:
                c = d.operands[1].owner
                d.erase()
                if not list(c.results[0].uses):
                    c.erase()


# -- kernels of several results: each generic on its own ------------------------------------------

#: per generic: ("ew", rank, inner, width), ("pack", block, k), ("fused",) (computed in the
#: packing it feeds: :func:`fuse_into_pack`) or None (loops)
Plan = Optional[tuple]


def pack_parts(op: ir.Operation) -> Optional[tuple[int, int]]:
    """``(block, k)`` of relax-conv-gemm's weight packing: a generic that only moves its one
    input, ``(d0, d1, d2)``: in ``(d0 * block + d1, d2)`` of the (O, K) weight, out
    ``(d0, d2, d1)`` of the (O/block, K, block) panels, all static; else None."""
    if op.name != "linalg.generic" or len(op.opview.inputs) != 1 or len(op.opview.iterator_types) != 3:
        return None
    body = [o.operation for o in op.regions[0].blocks[0].operations]
    if len(body) != 1 or body[0].operands[0] != op.regions[0].blocks[0].arguments[0]:
        return None
    shape = list(ir.RankedTensorType(op.results[0].type).shape)
    if any(ir.ShapedType.is_dynamic_size(d) for d in shape):
        return None
    nb, k, block = shape
    ctx = op.context
    d = [ir.AffineDimExpr.get(i, context=ctx) for i in range(3)]
    want_in = ir.AffineMap.get(3, 0, [d[0] * block + d[1], d[2]], context=ctx)
    want_out = ir.AffineMap.get(3, 0, [d[0], d[2], d[1]], context=ctx)
    if indexing_maps(op) != [want_in, want_out]:
        return None
    t = ir.RankedTensorType(op.operands[0].type)
    return (block, k) if list(t.shape) == [nb * block, k] else None


def plan_op(op: ir.Operation) -> tuple[Plan, Optional[Group]]:
    """How :func:`each_schedule` takes generic ``op`` and the loops merged first."""
    if pack_parts(op) is not None:
        return ("pack", *pack_parts(op)), None
    if _collapsible_maps(op) is None:
        return None, None
    group = collapse_group([op])
    shape = collapsed_shape(list(ir.RankedTensorType(op.results[0].type).shape), group)
    inner = None if ir.ShapedType.is_dynamic_size(shape[-1]) else shape[-1]
    if inner is not None and inner < 16:
        return None, None   # too narrow to vectorize along (as a chain's)
    return ("ew", len(shape), inner, vector_width(inner)), group


def expand_pack_input(op: ir.Operation) -> None:
    """View the packing's (O, K) input as (O/block, block, K), read ``(d0, d1, d2)``: the move
    becomes a transpose of projected-permutation maps, which the vectorizer takes."""
    block, k = pack_parts(op)
    v = op.operands[0]
    t = ir.RankedTensorType(v.type)
    nb = t.shape[0] // block
    with ir.InsertionPoint(op), op.location:
        e = tensor.ExpandShapeOp(ir.RankedTensorType.get([nb, block, k], t.element_type), v,
                                 _reassociation([[0, 1], [2]]), [], [nb, block, k])
    op.operands[0] = e.result
    op.attributes["indexing_maps"] = ir.ArrayAttr.get(
        [ir.AffineMapAttr.get(ir.AffineMap.get_identity(3))] + list(op.opview.indexing_maps)[1:])


def _single_user(v: ir.Value) -> Optional[ir.Operation]:
    uses = list(v.uses)
    return uses[0].owner if len(uses) == 1 else None


def feeds_pack(e: ir.Operation, group: Optional[Group]) -> Optional[ir.Operation]:
    """The weight packing (:func:`pack_parts`) that elementwise generic ``e`` only feeds, its
    result (O, ...) read as the packing's (O, K) input (through the collapse of its trailing
    dims, which ``group`` merges too), or None. :func:`fuse_into_pack` then computes ``e``
    inside the packing's tiles: the scaled weight is never written."""
    if _collapsible_maps(e) is None or len(e.results) != 1:
        return None
    user = _single_user(e.results[0])
    rank = ir.RankedTensorType(e.results[0].type).rank
    if user is not None and user.name == "tensor.collapse_shape":
        groups = [[ir.IntegerAttr(i).value for i in g] for g in ir.ArrayAttr(user.attributes["reassociation"])]
        if groups != [[0], list(range(1, rank))] or group != (1, rank - 1):
            return None
        user = _single_user(user.results[0])
    elif rank != 2:
        return None
    if user is None or user.name != "linalg.generic" or pack_parts(user) is None \
            or ir.Value(user.operands[0]) != ir.Value(_pack_input_source(e, user)):
        return None
    return user


def _pack_input_source(e: ir.Operation, pack: ir.Operation) -> ir.Value:
    v = e.results[0]
    user = _single_user(v)
    return user.results[0] if user is not None and user.name == "tensor.collapse_shape" else v


def fuse_into_pack(e: ir.Operation, pack: ir.Operation) -> None:
    """Rebuild ``pack`` (loops (ob, oi, k), output (ob, k, oi)) to compute elementwise generic
    ``e`` (already merged to (O, K) loops by :func:`collapse_inner_dims`) on its inputs
    itself: an input's O dim viewed as (O/block, block), ``e``'s body moved in; ``e`` and the
    reshapes between them erased."""
    block, k = pack_parts(pack)
    ctx = pack.context
    p = [ir.AffineDimExpr.get(i, context=ctx) for i in range(3)]
    ins, maps = [], []
    with ir.InsertionPoint(pack), pack.location:
        for v, m in zip(list(e.operands)[:len(e.opview.inputs)], indexing_maps(e)):
            t = ir.RankedTensorType(v.type)
            exprs, groups, shape = [], [], []
            for j, x in enumerate(m.results):
                at = len(shape)
                if isinstance(x, ir.AffineDimExpr) and x.position == 0:
                    exprs += [p[0], p[1]]
                    groups.append([at, at + 1])
                    shape += [t.shape[j] // block, block]
                else:
                    exprs.append(p[2] if isinstance(x, ir.AffineDimExpr) else x)
                    groups.append([at])
                    shape.append(t.shape[j])
            if len(shape) != t.rank:
                v = tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, t.element_type), v, _reassociation(groups),
                                         [], shape).result
            ins.append(v)
            maps.append(ir.AffineMap.get(3, 0, exprs))
        out = pack.operands[1]
        maps.append(indexing_maps(pack)[1])
        new = linalg.GenericOp([out.type], ins, [out], ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                               pack.attributes["iterator_types"])
    e.regions[0].blocks[0].append_to(new.regions[0])
    pack.results[0].replace_all_uses_with(new.results[0])
    chain = [pack]
    v = pack.operands[0]
    while isinstance(v, ir.OpResult) and v.owner.operation != e:
        chain.append(v.owner.operation)
        v = v.owner.operation.operands[0]
    chain.append(e)
    for op in chain:   # the packing, the reshapes of e's result, e: nothing reads them any more
        op.erase()


def each_schedule(plan: list[Plan], lanes: int):
    """Script body for a kernel of several results (relax-lift-params' weight transforms: a
    BatchNorm fold's per-channel vectors, the scaled weights, their packing): each generic
    with a plan tiled and vectorized on its own, no fusion between them (a fused loop of
    several results returned them swapped, fuzz seed 13000211). Elementwise ones (their small
    inner loops merged first) as in :func:`elementwise_schedule`; a weight packing in
    ``(1, lanes, lanes)`` tiles transposed in registers, its k remainder peeled."""
    plan = [p for p in plan if p is None or p[0] != "fused"]   # (gone into their packing)
    n = len(plan)
    packs = any(p is not None and p[0] == "pack" for p in plan)

    def body(fn: ir.Value) -> None:
        gens = match(fn, "linalg.generic")
        handles = [gens] if n == 1 else list(transform.SplitHandleOp([any_op()] * n, gens).results)
        tiles = []
        for h, p in zip(handles, plan):
            if p is None:
                continue
            if p[0] == "ew":
                _, rank, inner, width = p
                if rank > 1:
                    h = structured.TileUsingForallOp(h, tile_sizes=[1] * (rank - 1) + [0]).results[0]
                t = structured.TileUsingForOp(h, sizes=[0] * (rank - 1) + [width])
                inner_loop = t.loops[len(t.loops) - 1]
                if not (inner is not None and inner % width == 0):
                    inner_loop = loop.LoopPeelOp(any_op(), any_op(), inner_loop).results[0]
                tiles.append(match(inner_loop, "linalg.generic"))
            else:
                _, block, k = p
                h = structured.TileUsingForallOp(h, tile_sizes=[1, 0, 0]).results[0]
                t = structured.TileUsingForOp(h, sizes=[0, min(lanes, block), lanes])
                k_loop = t.loops[len(t.loops) - 1]
                if k % lanes and k > lanes:   # a static remainder tile, vectorized too
                    peeled = loop.LoopPeelOp(any_op(), any_op(), k_loop)
                    tiles += [match(peeled.results[0], "linalg.generic"), match(peeled.results[1], "linalg.generic")]
                else:
                    tiles.append(match(k_loop, "linalg.generic"))
        cleanup(fn)
        for h in tiles:
            structured.VectorizeOp(h)
        cleanup(fn)
        if packs:
            from .conv import lower_transposes
            lower_transposes(fn, lanes)
        else:
            lower_vectors(fn)

    return body


def prepare_each(plan: list[Plan], groups: list[Optional[Group]]):
    """The Python step before :func:`each_schedule`: merge each elementwise generic's small
    inner loops, view each packing's input blocked (:func:`expand_pack_input`)."""

    def prepare(fn: ir.Operation) -> None:
        gens = [o.operation for o in fn.regions[0].blocks[0].operations if o.operation.name == "linalg.generic"]
        if len(gens) != len(plan):
            raise ValueError("each: the kernel's copy has another number of generics")
        fused = [(g, feeds_pack(g, grp)) for g, p, grp in zip(gens, plan, groups) if p is not None and p[0] == "fused"]
        if any(pk is None for _, pk in fused):
            raise ValueError("each: a fused generic's packing is not found in the kernel's copy")
        collapse_inner_dims([(g, grp) for g, p, grp in zip(gens, plan, groups) if p is not None and grp is not None])
        for g, p in zip(gens, plan):
            if p is not None and p[0] == "pack":
                partner = next((e for e, pk in fused if pk == g), None)
                if partner is not None:
                    fuse_into_pack(partner, g)
                else:
                    expand_pack_input(g)

    return prepare
