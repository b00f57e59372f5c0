"""Building blocks of the hand-scheduled GPU kernels (relax-gpu-tile-matmul, the GEMV,
relax-gpu-row-reductions, relax-gpu-vector-elementwise): a ``gpu.launch`` with workgroup
memory, loops whose results are safe to read after zero trips, loads through a linalg
indexing map, a linalg body inlined on scalars or vectors, conversions to and from the
f32 accumulator type, and the constants every GPU kernel pass shares (the kernel and kind
attributes, the grid limit, the workgroup address space).

No pass lives here. The launches built with these helpers read and write the kernel's
buffers with plain ``memref.load`` / ``memref.store`` at multi-dimensional indices;
relax-gpu-flatten-launches then turns them into 1-D accesses, as for every other launch.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from ...ops.kernels import KERNEL_ATTR
from ...target import Target
from ...transforms.annotate_kernel_kinds import KIND_ATTR
from ...transforms.graph import indexing_maps  # noqa: F401  (re-exported to the rules)

__all__ = ["KERNEL_ATTR", "KIND_ATTR"]

WORKGROUP = "#gpu.address_space<workgroup>"
MAX_GRID = 65535  # maxComputeWorkGroupCount[0] guaranteed by Vulkan

#: fused multiply-adds allowed (``fma`` in PTX; NVPTX emits ``mul.rn`` + ``add.rn`` without it,
#: which ptxas may not fuse)
CONTRACT = "#arith.fastmath<contract>"


def kernels(module: ir.Operation, kinds: Optional[Sequence[str]] = None) -> list[ir.Operation]:
    """The kernel funcs (``relax.kernel``, with a body) of ``module``; with ``kinds``, only
    those whose recorded kind (``relax.kernel_kind``) is one of them (a kernel without a
    recorded kind is kept: relax-opt runs a pass on hand-written kernels)."""
    out = []
    for f in module.regions[0].blocks[0].operations:
        f = f.operation
        if f.name != "func.func" or KERNEL_ATTR not in f.attributes or not len(f.regions[0].blocks):
            continue
        if kinds is not None and kernel_kind(f) not in (None, *kinds):
            continue
        out.append(f)
    return out


def kernel_kind(fn: ir.Operation) -> Optional[str]:
    """The kind relax-annotate-kernel-kinds recorded on kernel ``fn`` (None without one)."""
    return ir.StringAttr(fn.attributes[KIND_ATTR]).value if KIND_ATTR in fn.attributes else None


def check_block_size(module: ir.Operation, threads: int, what: str) -> None:
    """ValueError when ``threads`` per workgroup exceed the device limit of the module's
    target (``relax.target``'s ``max_threads_per_block``, recorded by compile(); a module
    without one has no known limit here: the runtime checks each launch)."""
    t = Target.of(module)
    cap = t.max_threads_per_block if t is not None else None
    if cap is not None and threads > cap:
        raise ValueError(f"{what}: {threads} threads per workgroup exceed the target's "
                         f"{cap} ({t.kind} {t.chip or t.arch})")

#: combiners of a reduction body (``out = comb(f(ins), out)``) with their identity
COMBINERS: dict[str, tuple[type, float]] = {
    "arith.addf": (arith.AddFOp, 0.0),
    "arith.mulf": (arith.MulFOp, 1.0),
    "arith.maximumf": (arith.MaximumFOp, float("-inf")),
    "arith.maxnumf": (arith.MaxNumFOp, float("-inf")),
    "arith.minimumf": (arith.MinimumFOp, float("inf")),
    "arith.minnumf": (arith.MinNumFOp, float("inf")),
}


def index(v: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), v).result


def f32(v: float) -> ir.Value:
    return arith.ConstantOp(ir.F32Type.get(), v).result


def element_type(v: ir.Value) -> ir.Type:
    return ir.ShapedType(v.type).element_type


def to_f32(v: ir.Value) -> ir.Value:
    """``v`` (a float scalar or vector) widened to f32 (the accumulator type of the
    schedules); an f32 value as it is."""
    t = v.type
    et = ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
    if isinstance(et, ir.F32Type):
        return v
    wide = ir.VectorType.get(ir.VectorType(t).shape, ir.F32Type.get()) if isinstance(t, ir.VectorType) else ir.F32Type.get()
    return arith.ExtFOp(wide, v).result


def from_f32(v: ir.Value, t: ir.Type) -> ir.Value:
    """An f32 value truncated to float type ``t`` (as it is when ``t`` is f32)."""
    return v if isinstance(t, ir.F32Type) else arith.TruncFOp(t, v).result


def ceil_div(a: ir.Value, b: int) -> ir.Value:
    return arith.DivUIOp(arith.AddIOp(a, index(b - 1)).result, index(b)).result


def is_zero_mod(v: ir.Value, k: int) -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.eq, arith.RemUIOp(v, index(k)).result, index(0)).result


def all_of(conds: Sequence[ir.Value]) -> ir.Value:
    ok = conds[0]
    for c in conds[1:]:
        ok = arith.AndIOp(ok, c).result
    return ok


def vector_view_conditions(v: ir.Value, width: int, align_bytes: int) -> list[ir.Value]:
    """What makes ``vector<width x T>`` accesses of buffer ``v`` along its innermost dim at
    element indices that are multiples of ``width`` legal and aligned, as run-time i1
    values: the aligned pointer a multiple of ``align_bytes``; for a strided view (not an
    identity layout) also its element offset and outer strides multiples of ``width`` and
    its innermost stride 1 (only what the static type leaves open is tested)."""
    dyn = ir.ShapedType.get_dynamic_size()
    mt = ir.MemRefType(v.type)
    ptr = memref.ExtractAlignedPointerAsIndexOp(v).result
    conds = [is_zero_mod(ptr, align_bytes)]
    if isinstance(mt.layout, ir.AffineMapAttr) and ir.AffineMapAttr(mt.layout).value == ir.AffineMap.get_identity(mt.rank):
        return conds
    strides, offset = mt.get_strides_and_offset()
    meta = memref.ExtractStridedMetadataOp(v)
    if offset == dyn:
        conds.append(is_zero_mod(meta.offset, width))
    for k, s in enumerate(strides[:-1]):
        if s == dyn:
            conds.append(is_zero_mod(meta.strides[k], width))
    if strides[-1] == dyn:
        conds.append(arith.CmpIOp(arith.CmpIPredicate.eq, meta.strides[mt.rank - 1], index(1)).result)
    return conds


def find(pairs: Sequence[tuple[ir.Value, object]], key: ir.Value):
    """The value paired with ``key`` (ir.Value has no stable hash: a list of pairs)."""
    for k, v in pairs:
        if k == key:
            return v
    return None


class Launch:
    """A ``gpu.launch`` of ``grid`` x ``block`` with static 1-D workgroup buffers of
    ``shared`` elements each, of ``shared_type`` (default f32, the accumulators' type)
    (workgroup attributions: NVVM makes them shared memory, relax-spirv-workgroup-memory
    Workgroup-class variables)."""

    def __init__(self, grid: Sequence[ir.Value], block: Sequence[int], shared: Sequence[int],
                 shared_type: Optional[ir.Type] = None):
        self.op = gpu.LaunchOp(tuple(grid), tuple(index(b) for b in block))
        body = self.op.regions[0].blocks[0]
        space = ir.Attribute.parse(WORKGROUP)
        st = shared_type or ir.F32Type.get()
        self.shared = [body.add_argument(ir.MemRefType.get([n], st, memory_space=space),
                                         ir.Location.unknown()) for n in shared]
        if shared:
            self.op.operation.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), len(shared))
        a = body.arguments
        self.block_id, self.thread_id, self.grid_dim = a[0:3], a[3:6], a[6:9]
        self.body = body

    def __enter__(self) -> "Launch":
        self._ip = ir.InsertionPoint(self.body)
        self._ip.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            gpu.TerminatorOp()
        self._ip.__exit__(*exc)

    def global_threads(self, threads: int) -> tuple[ir.Value, ir.Value]:
        """(first, step) of a grid-stride loop over items, one per thread: item
        ``block*threads + thread``, then every ``grid*threads`` (see :func:`thread_grid`)."""
        first = arith.AddIOp(arith.MulIOp(self.block_id[0], index(threads)).result, self.thread_id[0]).result
        return first, arith.MulIOp(self.grid_dim[0], index(threads)).result


def thread_grid(items: ir.Value, threads: int) -> ir.Value:
    """Workgroups for ``items`` at one per thread, capped at :data:`MAX_GRID` (the threads
    then stride over the rest: :meth:`Launch.global_threads`)."""
    return arith.MinUIOp(ceil_div(items, threads), index(MAX_GRID)).result


def delinearize(v: ir.Value, sizes: Sequence[ir.Value]) -> list[ir.Value]:
    """Row-major indices of linear index ``v`` over ``sizes`` (the first size is not read:
    its index is what is left)."""
    idx, rest = [], v
    for s in reversed(sizes[1:]):
        idx.append(arith.RemUIOp(rest, s).result)
        rest = arith.DivUIOp(rest, s).result
    return ([rest] if sizes else []) + idx[::-1]


def for_loop(lb: ir.Value, ub: ir.Value, step: ir.Value, inits: Sequence[ir.Value],
             body: Callable[[ir.Value, list[ir.Value]], list[ir.Value]]) -> list[ir.Value]:
    """``scf.for`` whose results equal ``inits`` when it runs zero times. (The SPIR-V
    lowering of ``scf.for`` sets its results only inside the body: a loop that never runs
    returns 0, not its init, so a ``select`` on ``lb < ub`` picks the init.)"""
    loop = scf.ForOp(lb, ub, step, list(inits))
    with ir.InsertionPoint(loop.body):
        out = body(loop.induction_variable, list(loop.inner_iter_args))
        scf.YieldOp(out)
    if not inits:
        return []
    ran = arith.CmpIOp(arith.CmpIPredicate.slt, lb, ub).result
    return [arith.SelectOp(ran, r, i).result for r, i in zip(loop.results, inits)]


def when(cond: ir.Value, body: Callable[[], None]) -> None:
    """``scf.if cond { body }`` (no results)."""
    op = scf.IfOp(cond, [], has_else=False)
    with ir.InsertionPoint(op.then_block):
        body()
        scf.YieldOp([])


def map_indices(amap: ir.AffineMap, dims: Sequence[ir.Value]) -> Optional[list[ir.Value]]:
    """The indices ``amap`` gives for loop indices ``dims`` (None unless every result is a
    dim or a constant: the maps of bufferized elementwise/broadcast/row kernels)."""
    out = []
    for e in amap.results:
        if isinstance(e, ir.AffineDimExpr):
            out.append(dims[ir.AffineDimExpr(e).position])
        elif isinstance(e, ir.AffineConstantExpr):
            out.append(index(ir.AffineConstantExpr(e).value))
        else:
            return None
    return out


def simple_map(amap: ir.AffineMap) -> bool:
    return all(isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in amap.results)


def map_uses(amap: ir.AffineMap) -> set[int]:
    return {ir.AffineDimExpr(e).position for e in amap.results if isinstance(e, ir.AffineDimExpr)}


def loop_extent(gen: ir.Operation, d: int) -> ir.Value:
    """The extent of loop ``d`` of linalg op ``gen`` (memref.dim of an operand indexed by it)."""
    for v, m in zip(gen.operands, indexing_maps(gen)):
        for p, e in enumerate(m.results):
            if isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == d:
                return memref.DimOp(v, index(p)).result
    raise ValueError(f"loop {d} of {gen.name} indexes no operand")


def splat(v: ir.Value, width: int) -> ir.Value:
    """``v`` as a ``vector<width x T>`` (a vector stays as it is)."""
    if isinstance(v.type, ir.VectorType):
        return v
    return vector.BroadcastOp(ir.VectorType.get([width], v.type), v).result


def inline_body(gen: ir.Operation, args: Sequence[ir.Value], dims: Sequence[ir.Value],
                width: Optional[int] = None) -> ir.Value:
    """Clone the scalar body of linalg op ``gen`` at the insertion point with its block
    arguments bound to ``args`` and ``linalg.index k`` to ``dims[k]``; the yielded value.

    With ``width`` the body runs on ``vector<width x T>`` values: ``args`` may mix vectors
    and scalars, an op with a vector operand gets its scalar operands broadcast and
    ``vector<width x T>`` results (the bodies given here hold only arith / math ops, all
    elementwise-mappable: the same op and attributes on vectors), an op on scalars only
    stays scalar, and the yielded value is a vector."""
    block = gen.regions[0].blocks[0]
    env: list[tuple[ir.Value, ir.Value]] = list(zip(block.arguments, args))

    def look(v: ir.Value) -> ir.Value:
        n = find(env, v)
        return v if n is None else n

    ip = ir.InsertionPoint.current
    for o in block.operations:
        o = o.operation
        if o.name == "linalg.yield":
            out = look(o.operands[0])
            return out if width is None else splat(out, width)
        if o.name == "linalg.index":
            env.append((o.results[0], dims[ir.IntegerAttr(o.attributes["dim"]).value]))
            continue
        operands = [look(v) for v in o.operands]
        if width is not None and any(isinstance(v.type, ir.VectorType) for v in operands):
            new = ir.Operation.create(o.name, results=[ir.VectorType.get([width], r.type) for r in o.results],
                                      operands=[splat(v, width) for v in operands],
                                      attributes={k: o.attributes[k] for k in o.attributes}, loc=o.location, ip=ip)
        else:
            new = o.clone(ip=ip)
            for k, v in enumerate(operands):
                new.operands[k] = v
        env.extend(zip(o.results, new.results))
    raise ValueError("linalg body without a yield")


def flat_body(gen: ir.Operation) -> bool:
    """A body of region-free scalar ops (it can be cloned op by op)."""
    return all(not len(o.operation.regions) for o in gen.regions[0].blocks[0].operations)


def load(buf: ir.Value, indices: Sequence[ir.Value]) -> ir.Value:
    return memref.LoadOp(buf, list(indices)).result


def store(v: ir.Value, buf: ir.Value, indices: Sequence[ir.Value]) -> None:
    memref.StoreOp(v, buf, list(indices))


def barrier() -> None:
    gpu.BarrierOp()
