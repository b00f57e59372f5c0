"""Sorting along one axis: sort, argsort, topk (PyTorch's order; docs/semantics.md).

The order is total: NaN is greater than every number (last ascending, first descending,
as torch.sort), and equal elements keep their input order (a stable sort; ties in topk
come out by increasing index).
"""

from __future__ import annotations

from ..shapes import Shape, TensorSig
from .common import norm_axis, tensor_input
from .registry import Attr, InferCall, op

_INDEX_TYPES = ("i32", "i64")


def _sorted_input(call: InferCall) -> tuple[TensorSig, int]:
    x = tensor_input(call, 0)
    if x.rank == 0:
        raise call.error("expects a tensor of rank >= 1")
    return x, norm_axis(call, call["axis"], x.rank)


def _index_dtype(call: InferCall) -> str:
    dt = call["dtype"]
    if dt not in _INDEX_TYPES:
        raise call.error(f"index `dtype` must be i32 or i64, got {dt}")
    return dt


@op("sort", operands=["x"], attrs=[Attr("axis", "int", -1), Attr("descending", "bool", False)],
    summary="the values sorted along `axis` (stable; NaN greatest)")
def _sort(call: InferCall) -> TensorSig:
    x, _ = _sorted_input(call)
    return x


@op("argsort", operands=["x"],
    attrs=[Attr("axis", "int", -1), Attr("descending", "bool", False), Attr("dtype", "dtype", "i64")],
    summary="the indices that sort `x` along `axis` (stable; NaN greatest)")
def _argsort(call: InferCall) -> TensorSig:
    x, _ = _sorted_input(call)
    return TensorSig(x.shape, _index_dtype(call))


@op("topk", operands=["x"], results=["values", "indices"],
    attrs=[Attr("k", "int"), Attr("axis", "int", -1), Attr("largest", "bool", True), Attr("dtype", "dtype", "i64")],
    summary="the `k` largest (smallest) values along `axis` in sorted order, and their indices")
def _topk(call: InferCall) -> list[TensorSig]:
    x, axis = _sorted_input(call)
    k = call["k"]
    if k < 0:
        raise call.error(f"`k` must be >= 0, got {k}")
    call.require_le(k, x.shape[axis], f"k (axis {axis} length)")
    shape = Shape(k if i == axis else d for i, d in enumerate(x.shape))
    return [TensorSig(shape, x.dtype), TensorSig(shape, _index_dtype(call))]


# -- legalization -------------------------------------------------------------------------

from mlir import ir  # noqa: E402
from mlir.dialects import arith  # noqa: E402
from .kernels import KType, KernelBuilder, LegalizeCall, attr_tag, identity_map, is_float, is_unsigned  # noqa: E402
from .registry import legalization  # noqa: E402


def _less(kb: KernelBuilder, a: ir.Value, b: ir.Value, fl: bool, unsigned: bool) -> ir.Value:
    """a < b in the total order (NaN greatest)."""
    if not fl:
        return kb.cmp("cmpi", "ult" if unsigned else "slt", a, b)
    lt = kb.cmp("cmpf", "olt", a, b)
    return kb.bin(arith.OrIOp, lt, kb.bin(arith.AndIOp, kb.cmp("cmpf", "ord", a, a), kb.cmp("cmpf", "uno", b, b), "i1"),
                  "i1")


def _equal(kb: KernelBuilder, a: ir.Value, b: ir.Value, fl: bool) -> ir.Value:
    if not fl:
        return kb.cmp("cmpi", "eq", a, b)
    return kb.bin(arith.OrIOp, kb.cmp("cmpf", "oeq", a, b),
                  kb.bin(arith.AndIOp, kb.cmp("cmpf", "uno", a, a), kb.cmp("cmpf", "uno", b, b), "i1"), "i1")


def sorted_positions(kb: KernelBuilder, axis: int, descending: bool) -> ir.Value:
    """Each element's position in the sorted order: the number of elements of its line
    that come before it (a parallel count, n^2 comparisons per line; stable)."""
    x: KType = kb.types[kb.ins[0]]
    r = x.rank
    fl, un = is_float(x.dtype), is_unsigned(x.dtype)
    pos = kb.fill(0, kb.empty_dims(KType(x.dims, "i64"), kb.dims(kb.ins[0])))
    me = identity_map(r)
    other = [f"d{r}" if i == axis else f"d{i}" for i in range(r)]

    def body(v, w, acc):
        i, j = kb.linalg_index(axis), kb.linalg_index(r)
        first = _less(kb, v, w, fl, un) if descending else _less(kb, w, v, fl, un)
        tie = kb.bin(arith.AndIOp, _equal(kb, v, w, fl), kb.cmp("cmpi", "ult", j, i), "i1")
        before = kb.bin(arith.OrIOp, first, tie, "i1")
        return [kb.bin(arith.AddIOp, acc, kb.cast(before, "i64"))]

    (p,) = kb.generic([(kb.ins[0], me), (kb.ins[0], other)], [(pos, me)], ["parallel"] * r + ["reduction"], body)
    return p


def gather_sorted(kb: KernelBuilder, pos: ir.Value, axis: int, values: bool, indices: bool) -> list[ir.Value]:
    """Output slot p along ``axis`` takes the element whose sorted position is p (one
    match per slot: positions are a permutation); the outputs may be shorter (topk)."""
    x: KType = kb.types[kb.ins[0]]
    r = x.rank
    src = [f"d{r}" if i == axis else f"d{i}" for i in range(r)]
    outs = []
    for o in kb.outs:
        t: KType = kb.types[o]
        outs.append((kb.fill(0.0 if is_float(t.dtype) else 0, o), identity_map(r)))

    def body(v, p, *acc):
        slot = kb.cast(kb.linalg_index(axis), "i64")
        i = kb.linalg_index(r)
        hit = kb.cmp("cmpi", "eq", p, slot)
        res, k = [], 0
        if values:
            res.append(kb.select(hit, v, acc[k]))
            k += 1
        if indices:
            res.append(kb.select(hit, kb.cast(i, kb.types[acc[k]]), acc[k]))
        return res

    return kb.generic([(kb.ins[0], src), (pos, src)], outs, ["parallel"] * r + ["reduction"], body)


#: topk with k up to this many selects k times (n*k comparisons), beyond it sorts (n^2).
SELECT_MAX_K = 16


def _before(kb: KernelBuilder, a: ir.Value, ia: ir.Value, b: ir.Value, ib: ir.Value, desc: bool, fl: bool, un: bool) -> ir.Value:
    """(a at index ia) comes before (b at ib) in the sorted order (ties by index)."""
    first = _less(kb, b, a, fl, un) if desc else _less(kb, a, b, fl, un)
    tie = kb.bin(arith.AndIOp, _equal(kb, a, b, fl), kb.cmp("cmpi", "slt", ia, ib), "i1")
    return kb.bin(arith.OrIOp, first, tie, "i1")


def select_topk(kb: KernelBuilder, axis: int, k: int, desc: bool) -> list[ir.Value]:
    """k selection rounds, each one reduction over the line: round p takes the first
    element (in the sorted order) that comes after round p - 1's pick, into slot p."""
    x: KType = kb.types[kb.ins[0]]
    r = x.rank
    fl, un = is_float(x.dtype), is_unsigned(x.dtype)
    vals, idxs = kb.outs
    it: KType = kb.types[idxs]
    slot_dims = tuple(1 if i == axis else d for i, d in enumerate(x.dims))
    sizes = [kb.dim(vals, i) if i != axis else None for i in range(r)]
    slot_map = ["0" if i == axis else f"d{i}" for i in range(r)]

    def ext(t, p: int):
        st = KType(slot_dims, kb.types[t].dtype)
        offs = [p if i == axis else 0 for i in range(r)]
        szs = [1 if i == axis else (d if d is not None else sizes[i]) for i, d in enumerate(slot_dims)]
        return kb.extract_slice(t, st, offs, szs), (offs, szs)

    prev = None
    for p in range(k):
        sv, where = ext(vals, p)
        si, _ = ext(idxs, p)
        si = kb.fill(-1, si)
        ins = [(kb.ins[0], identity_map(r))] + ([(prev[0], slot_map), (prev[1], slot_map)] if prev else [])

        def body(v, *rest):
            i = kb.cast(kb.linalg_index(axis), it.dtype)
            if prev:
                pv, pi, bv, bi = rest
                cand = _before(kb, pv, pi, v, i, desc, fl, un)
            else:
                bv, bi = rest
                cand = None
            none = kb.cmp("cmpi", "slt", bi, kb.const(0, it.dtype))
            better = kb.bin(arith.OrIOp, none, _before(kb, v, i, bv, bi, desc, fl, un), "i1")
            take = better if cand is None else kb.bin(arith.AndIOp, cand, better, "i1")
            return [kb.select(take, v, bv), kb.select(take, i, bi)]

        its = ["reduction" if i == axis else "parallel" for i in range(r)]
        bv, bi = kb.generic(ins, [(sv, slot_map), (si, slot_map)], its, body)
        vals = kb.insert_slice(bv, vals, *where)
        idxs = kb.insert_slice(bi, idxs, *where)
        prev = (bv, bi)
    return [vals, idxs]


@legalization("sort", "argsort", "topk")
def _legalize_sort(call: LegalizeCall):
    """Two linalg.generic: count each element's sorted position, then gather by position.

    The count compares every pair of a line (n^2 per line; stable, NaN greatest); each
    output slot then takes the element whose position it is (topk: the first k slots).
    topk with k <= SELECT_MAX_K instead selects k times (n * k comparisons)."""
    x = call.in_types[0]
    axis = call["axis"] + x.rank if call["axis"] < 0 else call["axis"]
    desc = call["largest"] if call.name == "topk" else call["descending"]
    kb = call.builder(attr_tag(axis=axis, desc=desc, k=call["k"] if call.name == "topk" else None))
    if call.name == "topk" and 0 < call["k"] <= SELECT_MAX_K:
        return kb.finish(select_topk(kb, axis, call["k"], desc))
    pos = sorted_positions(kb, axis, desc)
    res = gather_sorted(kb, pos, axis, values=call.name != "argsort", indices=call.name != "sort")
    return kb.finish(res)
