"""Fewer loop nests per kernel for relax-fuse-kernels (``multi-use=true``, ``siblings=true``,
``unit-reshapes=true``: the GPU pipelines, where each loop nest of a kernel that no rule takes
is a launch).

**Multi-use producers.** Upstream ``linalg-fuse-elementwise-ops`` fuses a producer into its
elementwise consumer only when the consumer is the producer's one use. A producer whose
result is also a kernel output (the rope of the new keys, written for the prefill attention
and converted to the KV cache's f16 by an ``astype``; the new values' copy, the same) then
stays a loop nest of its own. Here such a consumer is merged into its producer instead: one
all-parallel ``linalg.generic`` computes the producer's value at a point, yields it (the
producer's result, still used elsewhere) and feeds it to the consumer's body in the same
iteration (the consumer's result as a further output). Legal when both are all-parallel
generics over the same number of loops and the consumer reads the producer's result only
through the producer's own output map, a permutation: then the consumer's iteration point
is the producer's, and both iterate the producer result's shape. A ``linalg.copy`` producer
counts as the generic it is (identity maps, ``yield in``). The consumer must not read its
``outs`` (relax-fuse-kernels has made all-parallel generics read their inits as inputs).

**Siblings.** Two all-parallel generics of one kernel, neither reading the other, whose
iteration domains are provably equal (rope's q, k and v loop nests, all (s, heads, D)) become
one generic with both bodies and both outputs. Equal domains: each loop's size named by an
operand of each (a static size, or traced through ``tensor.dim``, ``tensor.empty``, a
reshape's shape and destination-passing results to a kernel argument's dim, whose symbolic
dim the graph gives, or to one SSA value). A ``linalg.copy`` into a kernel argument counts as
its generic (copies into a fresh ``tensor.empty`` are left alone: they become views later).

Nothing is recomputed: the merged op replaces both. It goes where both ops' operands and
captured values exist and before every other use of their results.

**Unit reshapes.** A generic reading a value through a ``tensor.reshape`` that only adds or
drops unit dims (an ``arange`` of positions viewed as (s, 1, 1)) reads the reshape's source
through its indexing map instead (:func:`fold_unit_reshapes`), so that upstream elementwise
fusion, which does not cross ``tensor.reshape``, takes the producer.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import linalg

_PARALLEL = "#linalg.iterator_type<parallel>"


def _op(v) -> Optional[ir.Operation]:
    if not isinstance(v, ir.OpResult):
        return None
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


def _from(v, op: ir.Operation) -> bool:
    """Is ``v`` a result of ``op``?"""
    d = _op(v)
    return d is not None and d == op


def _segments(op: ir.Operation) -> tuple[int, int]:
    n_in, n_out = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    return n_in, n_out


def _maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _all_parallel_generic(op: Optional[ir.Operation]) -> bool:
    return (op is not None and op.name == "linalg.generic"
            and all(str(t) == _PARALLEL for t in ir.ArrayAttr(op.attributes["iterator_types"])))


def generalize_copy(copy: ir.Operation) -> ir.Operation:
    """``linalg.copy ins(a) outs(b)`` as the equal ``linalg.generic`` (identity maps)."""
    src, dst = list(copy.operands)
    rank = ir.RankedTensorType(dst.type).rank
    ident = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    new = linalg.GenericOp([dst.type], [src], [dst], ir.ArrayAttr.get([ident, ident]),
                           ir.ArrayAttr.get([ir.Attribute.parse(_PARALLEL)] * rank),
                           loc=copy.location, ip=ir.InsertionPoint(copy))
    block = new.regions[0].blocks.append(ir.RankedTensorType(src.type).element_type,
                                         ir.RankedTensorType(dst.type).element_type,
                                         arg_locs=[copy.location, copy.location])
    with ir.InsertionPoint(block), copy.location:
        linalg.YieldOp([block.arguments[0]])
    copy.results[0].replace_all_uses_with(new.results[0])
    copy.erase()
    return new.operation


def _dominates_before(v: ir.Value, op: ir.Operation) -> bool:
    """Is ``v`` available just before ``op`` (a block argument or defined earlier in op's block)?"""
    d = _op(v)
    if d is None:
        return True
    if d.parent != op.parent:
        return True   # defined in an enclosing region (the ops here sit in the function body)
    ops = [o.operation for o in op.block.operations]
    return ops.index(d) < ops.index(op)


def _fusable(producer: ir.Operation, consumer: ir.Operation) -> bool:
    """The consumer reads the producer's results only at the producer's output points
    (a copy's output map: the identity)."""
    copy = producer.name == "linalg.copy"
    p_in = 1 if copy else _segments(producer)[0]
    c_in, c_out = _segments(consumer)
    cm = _maps(consumer)
    if copy:
        rank = ir.RankedTensorType(producer.results[0].type).rank
        if rank != cm[0].n_dims:
            return False
        out_maps = [ir.AffineMap.get_identity(rank)]
    else:
        pm = _maps(producer)
        if pm[0].n_dims != cm[0].n_dims:
            return False
        out_maps = pm[p_in:]
    cargs = list(consumer.regions[0].blocks[0].arguments)
    if any(len(list(cargs[c_in + k].uses)) for k in range(c_out)):
        return False
    for i, v in enumerate(list(consumer.operands)[:c_in]):
        if _from(v, producer):
            out_map = out_maps[v.result_number]
            if not out_map.is_permutation or cm[i] != out_map:
                return False
    # writing into the producer's result is not elementwise
    return not any(_from(v, producer) for v in list(consumer.operands)[c_in:])


def _ancestor_in(op: ir.Operation, block: ir.Block) -> Optional[ir.Operation]:
    """``op`` or the op enclosing it that sits directly in ``block`` (None: none does)."""
    cur = op
    while cur is not None:
        if cur.block == block:
            return cur
        p = cur.parent
        cur = p.operation if p is not None and hasattr(p, "operation") else p
    return None


def _captured(op: ir.Operation) -> list[ir.Value]:
    """Values defined outside ``op`` that ops in its body use (a gather's source tensor)."""
    inside: set = set()
    out: list[ir.Value] = []

    def visit(o: ir.Operation) -> ir.WalkResult:
        for r in o.results:
            inside.add(r)
        for reg in o.regions:
            for b in reg.blocks:
                for a in b.arguments:
                    inside.add(a)
        return ir.WalkResult.ADVANCE

    op.walk(visit)

    def uses(o: ir.Operation) -> ir.WalkResult:
        if o != op:
            out.extend(v for v in o.operands if v not in inside)
        return ir.WalkResult.ADVANCE

    op.walk(uses)
    return out


def _place(producer: ir.Operation, consumer: ir.Operation) -> Optional[ir.Operation]:
    """Where the merged op may go: the consumer's place when every other use of the
    producer comes after the consumer, else the producer's when everything the consumer
    reads (operands, values its body captures) exists there; None when the consumer's body
    reads the producer's result (not at its own point) or neither place works."""
    block = consumer.block
    block_ops = [o.operation for o in block.operations]
    c_pos = block_ops.index(consumer)
    others = []
    for r in producer.results:
        for u in r.uses:
            o = u.owner.operation if hasattr(u.owner, "operation") else u.owner
            top = _ancestor_in(o, block)
            if top is not None and top == consumer and o != consumer:
                return None   # read inside the consumer's body
            if o != consumer:
                others.append(top)
    if all(o is not None and block_ops.index(o) > c_pos for o in others):
        return consumer
    if all(_from(v, producer) or _dominates_before(v, producer)
           for v in list(consumer.operands) + _captured(consumer)):
        return producer
    return None


def merge_into_producer(producer: ir.Operation, consumer: ir.Operation, at: ir.Operation) -> ir.Operation:
    """The generic computing both (see the module docstring), inserted before ``at``."""
    p_in, p_out = _segments(producer)
    c_in, c_out = _segments(consumer)
    pm, cm = _maps(producer), _maps(consumer)
    p_ops, c_ops = list(producer.operands), list(consumer.operands)
    extra = [i for i in range(c_in) if not _from(c_ops[i], producer)]
    ins = p_ops[:p_in] + [c_ops[i] for i in extra]
    outs = p_ops[p_in:] + c_ops[c_in:]
    maps = pm[:p_in] + [cm[i] for i in extra] + pm[p_in:] + cm[c_in:]
    types = [r.type for r in producer.results] + [r.type for r in consumer.results]
    new = linalg.GenericOp(types, ins, outs, ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                           producer.attributes["iterator_types"], loc=ir.Location.fused(
                               [producer.location, consumer.location]), ip=ir.InsertionPoint(at))
    pb, cb = producer.regions[0].blocks[0], consumer.regions[0].blocks[0]
    pargs, cargs = list(pb.arguments), list(cb.arguments)
    arg_types = ([a.type for a in pargs[:p_in]] + [cargs[i].type for i in extra]
                 + [a.type for a in pargs[p_in:]] + [a.type for a in cargs[c_in:]])
    arg_locs = ([a.location for a in pargs[:p_in]] + [cargs[i].location for i in extra]
                + [a.location for a in pargs[p_in:]] + [a.location for a in cargs[c_in:]])
    block = new.regions[0].blocks.append(*arg_types, arg_locs=arg_locs)
    nargs = list(block.arguments)
    n_ins = p_in + len(extra)
    for i in range(p_in):
        pargs[i].replace_all_uses_with(nargs[i])
    for k in range(p_out):
        pargs[p_in + k].replace_all_uses_with(nargs[n_ins + k])
    p_yield = list(pb.operations)[-1].operation
    p_vals = list(p_yield.operands)
    for j, i in enumerate(extra):
        cargs[i].replace_all_uses_with(nargs[p_in + j])
    for i in range(c_in):
        if _from(c_ops[i], producer):
            cargs[i].replace_all_uses_with(p_vals[c_ops[i].result_number])
    for k in range(c_out):
        cargs[c_in + k].replace_all_uses_with(nargs[n_ins + p_out + k])
    c_yield = list(cb.operations)[-1].operation
    for o in list(pb.operations)[:-1]:
        block.append(o.operation)
    for o in list(cb.operations)[:-1]:
        block.append(o.operation)
    with ir.InsertionPoint(block), new.location:
        linalg.YieldOp(p_vals + list(c_yield.operands))
    for old, rep in zip(list(producer.results) + list(consumer.results), new.results):
        old.replace_all_uses_with(rep)
    consumer.erase()
    producer.erase()
    return new.operation


def _candidate(block: ir.Block):
    """The first (producer, consumer, place) to merge in ``block``, or None."""
    for o in block.operations:
        c = o.operation
        if not _all_parallel_generic(c):
            continue
        for v in list(c.operands)[:_segments(c)[0]]:
            p = _op(v)
            if (p is None or p.block != c.block or sum(len(list(r.uses)) for r in p.results) < 2
                    or not (p.name == "linalg.copy" or _all_parallel_generic(p)) or not _fusable(p, c)):
                continue
            at = _place(p, c)
            if at is not None:
                return p, c, at
    return None


def _generalized(p: ir.Operation, at: ir.Operation) -> tuple[ir.Operation, ir.Operation]:
    """(p as a generic, the place): a copy is generalized, the place follows it."""
    if p.name != "linalg.copy":
        return p, at
    at_copy = at == p
    g = generalize_copy(p)
    return g, (g if at_copy else at)


def fuse_multi_use_producers(fn: ir.Operation) -> int:
    """Merge each all-parallel consumer into a producer that has other uses too (upstream
    fusion took the single-use ones; see the module docstring), until none is left. Returns
    how many merges were made."""
    merged = 0
    block = fn.regions[0].blocks[0]
    while (found := _candidate(block)) is not None:
        p, c, at = found
        p, at = _generalized(p, at)
        merge_into_producer(p, c, at)
        merged += 1
    return merged


#: a loop size: an int (static), ("arg", symbolic dim) or ("ssa", value)
Size = object


def _index_size(v: ir.Value, arg_dims: dict) -> Optional[Size]:
    d = _op(v)
    if d is not None and d.name == "arith.constant" and isinstance(d.attributes["value"], ir.IntegerAttr):
        return ir.IntegerAttr(d.attributes["value"]).value
    if d is not None and d.name == "tensor.dim":
        k = _index_size(d.operands[1], arg_dims)
        if isinstance(k, int):
            return _dim_size(d.operands[0], k, arg_dims)
    return ("ssa", v)


def _dim_size(v: ir.Value, j: int, arg_dims: dict) -> Optional[Size]:
    """Dim ``j`` of tensor ``v`` named as a :data:`Size`, or None."""
    t = ir.RankedTensorType(v.type)
    if not t.is_dynamic_dim(j):
        return t.get_dim_size(j)
    if isinstance(v, ir.BlockArgument):
        sym = arg_dims.get((v.arg_number, j))
        return ("arg", sym) if sym is not None else ("ssa", v)
    d = _op(v)
    if d is None:
        return None
    if d.name.startswith("linalg.") and "operandSegmentSizes" in d.attributes:
        n_in, n_out = _segments(d)
        if v.result_number < n_out:
            return _dim_size(d.operands[n_in + v.result_number], j, arg_dims)
    if d.name == "tensor.empty":
        k = sum(1 for i in range(j) if t.is_dynamic_dim(i))
        return _index_size(d.operands[k], arg_dims)
    if d.name == "tensor.reshape":
        shape = _op(d.operands[1])
        if shape is not None and shape.name == "tensor.from_elements":
            return _index_size(shape.operands[j], arg_dims)
    if d.name == "tensor.cast":
        return _dim_size(d.operands[0], j, arg_dims)
    return None


def _domain(op: ir.Operation, arg_dims: dict) -> Optional[tuple]:
    """The loop sizes of a generic (outputs first), or None when one cannot be named."""
    maps = _maps(op)
    n_in, n_out = _segments(op)
    sizes: list = [None] * maps[0].n_dims
    operands = list(op.operands)
    for k in list(range(n_in, n_in + n_out)) + list(range(n_in)):
        for j, e in enumerate(maps[k].results):
            if isinstance(e, ir.AffineDimExpr):
                d = e.position
                if sizes[d] is None:
                    sizes[d] = _dim_size(operands[k], j, arg_dims)
    return tuple(sizes) if all(x is not None for x in sizes) else None


def _sibling_candidate(op: ir.Operation) -> bool:
    if _all_parallel_generic(op):
        return True
    if op.name != "linalg.copy":
        return False
    init = _op(op.operands[1])
    return init is None or init.name != "tensor.empty"   # a fresh copy becomes a view later


def _domain_of(op: ir.Operation, arg_dims: dict) -> Optional[tuple]:
    if op.name == "linalg.copy":
        rank = ir.RankedTensorType(op.operands[1].type).rank
        return tuple(_dim_size(op.operands[1], j, arg_dims) for j in range(rank))
    return _domain(op, arg_dims)


def _reads(consumer: ir.Operation, producer: ir.Operation) -> bool:
    return any(_from(v, producer) for v in list(consumer.operands) + _captured(consumer))


def _sibling_pair(block: ir.Block, arg_dims: dict):
    """The first (a, b, place) of independent generics with equal domains, or None."""
    ops = [o.operation for o in block.operations if _sibling_candidate(o.operation)]
    doms = [_domain_of(o, arg_dims) for o in ops]
    for i, a in enumerate(ops):
        if doms[i] is None or any(x is None for x in doms[i]):
            continue
        for j in range(i + 1, len(ops)):
            b = ops[j]
            if doms[j] != doms[i] or _reads(b, a):
                continue
            at = _place(a, b)
            if at is not None:
                return a, b, at
    return None


def merge_siblings(fn: ir.Operation, arg_dims: dict) -> int:
    """Merge independent all-parallel generics of equal iteration domains (see the module
    docstring); ``arg_dims`` maps (argument number, dim) to the argument's symbolic dim.
    Returns how many merges were made."""
    merged = 0
    block = fn.regions[0].blocks[0]
    while (found := _sibling_pair(block, arg_dims)) is not None:
        a, b, at = found
        b_at = at == b
        a, at = _generalized(a, at)
        if b.name == "linalg.copy":
            b = generalize_copy(b)
            at = b if b_at else at
        merge_into_producer(a, b, at)
        merged += 1
    return merged


def _unit_reshape_source(v: ir.Value) -> Optional[tuple[ir.Value, list[Optional[int]]]]:
    """(source, position map) when ``v`` is ``tensor.reshape(src)`` (or a copy of one into a
    fresh ``tensor.empty``) that only adds or drops unit dims: each source dim's position in
    the result, None for a unit source dim. Legal when the dims that are not a static 1 agree
    in order, static sizes equal and at most one of them dynamic (the element count then
    makes it equal too)."""
    d = _op(v)
    if d is not None and d.name == "linalg.copy":
        init = _op(d.operands[1])
        if init is None or init.name != "tensor.empty":
            return None
        d = _op(d.operands[0])
    if d is None or d.name != "tensor.reshape":
        return None
    src, res = ir.RankedTensorType(d.operands[0].type), ir.RankedTensorType(d.results[0].type)

    def kept(t: ir.RankedTensorType) -> list[int]:
        return [j for j in range(t.rank) if t.is_dynamic_dim(j) or t.get_dim_size(j) != 1]

    ks, kr = kept(src), kept(res)
    if len(ks) != len(kr) or sum(1 for j in ks if src.is_dynamic_dim(j)) > 1:
        return None
    for a, b in zip(ks, kr):
        if src.is_dynamic_dim(a) != res.is_dynamic_dim(b) or (
                not src.is_dynamic_dim(a) and src.get_dim_size(a) != res.get_dim_size(b)):
            return None
    where = dict(zip(ks, kr))
    return d.operands[0], [where.get(j) for j in range(src.rank)]


def fold_unit_reshapes(fn: ir.Operation) -> int:
    """An all-parallel generic that reads a value through a reshape adding or dropping unit
    dims (an ``arange`` reshaped to (s, 1, 1) and broadcast) reads the reshape's source
    instead, the reshape folded into its indexing map (a unit source dim: index 0): upstream
    elementwise fusion then fuses the producer, which it does not through ``tensor.reshape``.
    Only generics with a permutation output map (so every loop keeps a size). Returns how
    many operands were rewritten."""
    done = 0
    for o in list(fn.regions[0].blocks[0].operations):
        c = o.operation
        if not _all_parallel_generic(c):
            continue
        n_in, n_out = _segments(c)
        maps = _maps(c)
        if not any(maps[n_in + k].is_permutation for k in range(n_out)):
            continue
        for i in range(n_in):
            found = _unit_reshape_source(c.operands[i])
            if found is None:
                continue
            src, pos = found
            m = maps[i]
            zero = ir.AffineConstantExpr.get(0)
            maps[i] = ir.AffineMap.get(m.n_dims, m.n_symbols,
                                       [zero if p is None else m.results[p] for p in pos])
            c.operands[i] = src
            c.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(x) for x in maps])
            done += 1
    return done
