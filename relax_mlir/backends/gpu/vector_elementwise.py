"""relax-gpu-vector-elementwise: elementwise, broadcast and injective ops as launches whose
threads each handle ``width`` consecutive elements of the innermost dimension (4 of 32-bit
data: 128 bits; 8 or 4 of 16-bit floats, see below) with vector loads and stores, behind a
run-time alignment guard.

On the naive route every output element is one thread with scalar loads and stores. This
pass replaces each all-parallel ``linalg.generic`` (or ``linalg.copy``) at the top level
of an elementwise / broadcast / injective kernel, when it qualifies, by

    scf.if (W % width == 0 and every vector operand aligned) { vector launch } else { the op }

where W is the extent of the innermost loop. The else branch keeps the op for the naive
route (one thread per element, every shape and offset), so one compiled kernel pair
serves every shape: sizes, offsets and strides are read at run time.

The vector launch (figures for 32-bit data, width 4): ``ceil(N / 4)`` items for N output elements, ``threads`` (64) per
workgroup, at most 65535 workgroups striding over the rest; item ``v`` covers the output
elements ``[i0, ..., i_{r-2}, 4*c .. 4*c + 3]`` (``v`` delinearized over the outer sizes
and ``W / 4``). Per operand, by the dimensions its indexing map reads:

* it reads the innermost loop as its last index (a unit-stride row): ``vector.load`` of
  ``vector<4xT>`` (``alignment = 16``), the output likewise ``vector.store``;
* it does not read the innermost loop (a bias along rows, a column or a scalar
  broadcast, stride 0 along the vectorized axis): one scalar ``memref.load`` broadcast
  to the 4 lanes (``vector.broadcast``);
* anything else (the innermost loop elsewhere in the map: a transpose; a map with
  arithmetic) leaves the op alone.

A pure elementwise op on dense buffers (every operand read at the output point, identity
layouts) runs on the buffers collapsed to one dimension (``memref.collapse_shape``): W is
then the element count, so rows of odd length still take the vector path when the total
is a multiple of 4.

The guard holds when W is a multiple of 4 and, for every vector operand, the aligned
pointer of its buffer is a multiple of 16 bytes and, for a strided view (a subview
inside the kernel), its element offset and outer strides are multiples of 4 and its
innermost stride is 1 (identity layouts need only W: their strides are multiples of it).
Static facts that already fail it (an odd static W, a static offset of 1) keep the op as
it is, with no guard.

Vectorized: 32-bit element types (f32, i32; ``vector<4xT>`` is 128 bits) and 16-bit floats
(f16, bf16) for the output and the vector operands; a broadcast operand may be of any type
but i1 (whose buffers relax-widen-bool-memrefs rewrites later). An op whose vector operands
are all 16-bit takes ``halves`` elements per thread: 8 on cuda (``vector<8xf16>``, 128 bits:
``ld.global.v4.b32``), 4 on vulkan (64 bits: SPIR-V vectors have 2 to 4 components without
the Vector16 capability, which Vulkan shaders lack); an op mixing 16- and 32-bit vectors (an
``astype``) takes 4. Each access is aligned to its own vector's bytes (the guard tests each
buffer for it). The bodies are cloned as the legalizer wrote them: 16-bit values widened to
f32 where an op computes in f32, rounded where an op's result is 16-bit (bf16 arithmetic on
vulkan is computed in f32 later, relax-bf16-casts; bf16 storage stays 16-bit, i16 in SPIR-V).
The body must be arith / math ops on scalars (cloned on vectors; ``linalg.index``, index
values or regions leave the op alone). 64-bit data and 16-bit integers keep the fallback.

For SPIR-V the vector accesses become loads of ``vector<4xT>`` elements of a retyped
storage buffer (relax-spirv-vector-buffers: MLIR 22 lowers ``vector.load`` on a scalar
buffer to a pointer bitcast, which Vulkan's logical addressing rejects); for NVVM the
``alignment = 16`` gives ``ld.global.v4`` / ``st.global.v4``. Run on bufferized kernels
after the other schedules, before relax-gpu-prepare-kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from ...transforms.registry import Option, register_pass
from .launch_builder import (Launch, all_of, check_block_size, delinearize, flat_body, for_loop, index, indexing_maps,
                             inline_body, is_zero_mod, kernels, load, loop_extent, map_indices, simple_map, thread_grid,
                             vector_view_conditions)
KINDS = ("elementwise", "broadcast", "injective")
WIDTH = 4
THREADS = 64
#: element bits of vectorized buffers: ``vector<4 x 32-bit>`` = 128-bit accesses
BITS = 32
#: elements per thread of an op whose vector operands are all 16-bit floats, by target kind:
#: 8 (128 bits) on cuda; 4 (64 bits) on vulkan, whose shaders have no 8-component vectors
#: (0: ops with 16-bit vector operands keep the fallback)
HALVES = {"cuda": 8, "vulkan": 4}
DYN = ir.ShapedType.get_dynamic_size()

PARALLEL = "#linalg.iterator_type<parallel>"


@dataclass
class _Operand:
    value: ir.Value
    amap: Optional[ir.AffineMap]   # None: a scalar input (not a buffer)
    vector: bool                   # read along the innermost loop (a vector), else broadcast


def _vector_type(t: ir.Type, halves: int) -> bool:
    """An element type the vector accesses take: 32-bit (f32, i32) or, unless ``halves`` is
    0, a 16-bit float."""
    return _bits(t) == BITS or (halves > 0 and isinstance(t, (ir.F16Type, ir.BF16Type)))


def _width(plan: list["_Operand"], halves: int) -> int:
    """Elements per thread: ``halves`` when every vector operand is a 16-bit float, else 4."""
    bits = {_bits(ir.MemRefType(o.value.type).element_type) for o in plan if o.vector}
    return halves if bits == {16} else WIDTH


def _align(o: "_Operand", width: int) -> int:
    """Bytes of one vector access of operand ``o`` (its alignment)."""
    return width * _bits(ir.MemRefType(o.value.type).element_type) // 8


def _bits(t: ir.Type) -> int:
    if isinstance(t, ir.IntegerType):
        return ir.IntegerType(t).width
    if isinstance(t, ir.FloatType):
        return ir.FloatType(t).width
    return 0


def _maps(op: ir.Operation) -> Optional[list[ir.AffineMap]]:
    if op.name == "linalg.copy":
        rank = ir.MemRefType(op.operands[1].type).rank
        return [ir.AffineMap.get_identity(rank)] * 2
    if op.name != "linalg.generic":
        return None
    if any(str(t) != PARALLEL for t in op.opview.iterator_types):
        return None
    return indexing_maps(op)


def _body_ok(op: ir.Operation) -> bool:
    if not flat_body(op):
        return False
    for o in op.regions[0].blocks[0].operations:
        o = o.operation
        if o.name == "linalg.yield":
            continue
        if not o.name.startswith(("arith.", "math.")):
            return False
        if any(isinstance(v.type, ir.IndexType) for v in list(o.operands) + list(o.results)):
            return False
    return True


def _identity(mt: ir.MemRefType) -> bool:
    return (isinstance(mt.layout, ir.AffineMapAttr)
            and ir.AffineMapAttr(mt.layout).value == ir.AffineMap.get_identity(mt.rank))


def _layout_ok(mt: ir.MemRefType, width: int) -> bool:
    """Static strides and offset do not already rule the vector path out."""
    strides, offset = mt.get_strides_and_offset()
    if strides[-1] not in (1, DYN):
        return False
    return all(s == DYN or s % width == 0 for s in strides[:-1] + [offset])


def _plan(op: ir.Operation, halves: int = HALVES["vulkan"]) -> Optional[tuple[list[_Operand], int]]:
    """The op's operands (inputs, then the output) and the elements per thread when it can
    take the vector route."""
    maps = _maps(op)
    if maps is None or not _body_ok(op):
        return None
    ins, outs = list(op.opview.inputs), list(op.opview.outputs)
    if len(outs) != 1 or not isinstance(outs[0].type, ir.MemRefType):
        return None
    rank = maps[-1].n_dims
    if rank < 1 or maps[-1] != ir.AffineMap.get_identity(rank):
        return None
    last = rank - 1
    plan = []
    for v, m in zip(ins + outs, maps):
        if not isinstance(v.type, ir.ShapedType):
            plan.append(_Operand(v, None, False))
            continue
        if not isinstance(v.type, ir.MemRefType) or not simple_map(m):
            return None
        mt = ir.MemRefType(v.type)
        at = [p for p, e in enumerate(m.results)
              if isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == last]
        if not at:   # broadcast along the innermost loop: one scalar per 4 lanes
            if _bits(mt.element_type) in (0, 1):
                return None
            plan.append(_Operand(v, m, False))
        elif at == [len(m.results) - 1] and _vector_type(mt.element_type, halves):
            plan.append(_Operand(v, m, True))
        else:
            return None
    if not plan[-1].vector:
        return None
    vecs = [o.value for o in plan if o.vector]
    if any(o.amap is not None and not o.vector and any(o.value == v for v in vecs) for o in plan):
        return None   # one buffer read both ways: keep its binding all scalar (see relax-spirv-vector-buffers)
    width = _width(plan, halves)
    contiguous = _contiguous(plan)
    if not contiguous and not all(_layout_ok(ir.MemRefType(o.value.type), width) for o in plan if o.vector):
        return None
    shape = ir.MemRefType(outs[0].type).shape
    w = _product(shape) if contiguous else shape[-1]
    if w != DYN and w % width:
        return None
    return plan, width


def _product(shape: list[int]) -> int:
    n = 1
    for d in shape:
        if d == DYN:
            return DYN
        n *= d
    return n


def _contiguous(plan: list[_Operand]) -> bool:
    """Every buffer read and written at the output point with an identity layout (a pure
    elementwise op on dense buffers): the op is the same on the buffers collapsed to one
    dimension, where only the element count must be a multiple of 4."""
    rank = ir.MemRefType(plan[-1].value.type).rank
    ident = ir.AffineMap.get_identity(rank)
    return rank > 1 and all(o.amap is None or (o.amap == ident and _identity(ir.MemRefType(o.value.type)))
                            for o in plan)


def _collapsed(plan: list[_Operand]) -> list[_Operand]:
    """The operands as 1-D views (memref.collapse_shape) read at the identity map."""
    out = []
    for o in plan:
        if o.amap is None:
            out.append(o)
            continue
        mt = ir.MemRefType(o.value.type)
        flat_t = ir.MemRefType.get([_product(list(mt.shape))], mt.element_type, memory_space=mt.memory_space)
        flat = memref.CollapseShapeOp(flat_t, o.value, ir.ArrayAttr.get([
            ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), k) for k in range(mt.rank)])])).result
        out.append(_Operand(flat, ir.AffineMap.get_identity(1), o.vector))
    return out


def _guard(plan: list[_Operand], w: ir.Value, width: int) -> ir.Value:
    """W % width == 0, and every vector operand aligned for its vector accesses, unit-stride,
    offset and rows at multiples of ``width`` elements."""
    conds = [is_zero_mod(w, width)]
    seen: list[ir.Value] = []
    for o in plan:
        if not o.vector or any(o.value == s for s in seen):
            continue
        seen.append(o.value)
        conds += vector_view_conditions(o.value, width, _align(o, width))
    return all_of(conds)


def _vector_launch(op: ir.Operation, plan: list[_Operand], sizes: list[ir.Value], threads: int,
                   width: int) -> None:
    """The launch at the insertion point: item v = ``width`` consecutive output elements."""
    quads = arith.DivUIOp(sizes[-1], index(width)).result
    items = quads
    for s in sizes[:-1]:
        items = arith.MulIOp(items, s).result
    launch = Launch((thread_grid(items, threads), index(1), index(1)), (threads, 1, 1), [])
    out = plan[-1].value
    out_type = ir.VectorType.get([width], ir.MemRefType(out.type).element_type)
    align = _align(plan[-1], width)
    uses_out = len(list(op.regions[0].blocks[0].arguments[len(plan) - 1].uses)) > 0

    def item(v: ir.Value, _: list) -> list:
        idx = delinearize(v, sizes[:-1] + [quads])
        dims = idx[:-1] + [arith.MulIOp(idx[-1], index(width)).result]
        args = []
        for o in plan[:-1]:
            if o.amap is None:
                args.append(o.value)
            elif o.vector:
                vt = ir.VectorType.get([width], ir.MemRefType(o.value.type).element_type)
                args.append(vector.LoadOp(vt, o.value, map_indices(o.amap, dims), alignment=_align(o, width)).result)
            else:
                args.append(load(o.value, map_indices(o.amap, dims)))
        if uses_out:
            args.append(vector.LoadOp(out_type, out, dims, alignment=align).result)
        else:
            et = out_type.element_type   # the block argument is unused
            args.append(arith.ConstantOp(et, 0.0 if isinstance(et, ir.FloatType) else 0).result)
        vector.StoreOp(inline_body(op, args, dims, width), out, dims, alignment=align)
        return []

    with launch:
        first, step = launch.global_threads(threads)
        for_loop(first, items, step, [], item)


def _rewrite(op: ir.Operation, plan: list[_Operand], threads: int, width: int) -> None:
    rank = len(ir.MemRefType(plan[-1].value.type).shape)
    flat = _contiguous(plan)
    with ir.InsertionPoint(op), op.location:
        sizes = [loop_extent(op, d) for d in range(rank)] if op.name == "linalg.generic" else \
            [memref.DimOp(plan[-1].value, index(d)).result for d in range(rank)]
        if flat:
            total = sizes[0]
            for s in sizes[1:]:
                total = arith.MulIOp(total, s).result
            sizes = [total]
        branch = scf.IfOp(_guard(plan, sizes[-1], width), [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            _vector_launch(op, _collapsed(plan) if flat else plan, sizes, threads, width)
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            end = scf.YieldOp([])
    op.move_before(end)


def schedule_kernel(fn: ir.Operation, threads: int = THREADS, halves: int = HALVES["vulkan"]) -> int:
    """Every qualifying op at the top level of kernel ``fn`` behind its guarded vector
    launch (``halves``: elements per thread of an all-16-bit op); the number rewritten."""
    done = 0
    for op in [o.operation for o in fn.regions[0].blocks[0].operations]:
        planned = _plan(op, halves) if op.name in ("linalg.generic", "linalg.copy") else None
        if planned is not None:
            _rewrite(op, planned[0], threads, planned[1])
            done += 1
    return done


@register_pass("relax-gpu-vector-elementwise",
               "GPU kernels: elementwise / broadcast / injective linalg ops on 32-bit or 16-bit float data "
               "-> a gpu.launch whose threads each take 4 (16-bit only: halves) consecutive elements with "
               "vector loads and stores, "
               "under a run-time guard (innermost extent, offsets and strides multiples of the width, "
               "buffers aligned to the vector); the op itself in the else branch.",
               options=[Option("threads", int, THREADS, "threads per workgroup"),
                        Option("halves", int, HALVES["vulkan"], "elements per thread of an op on 16-bit floats "
                                                               "only (8 on cuda: 128 bits; 0: the fallback)")])
def relax_gpu_vector_elementwise(module: ir.Operation, opts) -> None:
    if opts.threads < 1:
        raise ValueError(f"relax-gpu-vector-elementwise: threads={opts.threads} is not positive")
    if opts.halves not in (0, 4, 8):
        raise ValueError(f"relax-gpu-vector-elementwise: halves={opts.halves} is not 0, 4 or 8")
    check_block_size(module, opts.threads, "relax-gpu-vector-elementwise")
    for f in kernels(module, KINDS):
        schedule_kernel(f, opts.threads, opts.halves)
