"""relax-gpu-flatten-launches: kernels see 1-D buffers and index scalars only.

SPIR-V storage buffers are 1-D runtime arrays, and a dynamic multi-dimensional memref
inside a kernel does not legalize (nor may a kernel ask a buffer for its sizes). For
every memref a ``gpu.launch`` body uses from outside, this pass builds OUTSIDE the
launch a 1-D view of its base buffer (``extract_strided_metadata`` +
``reinterpret_cast`` with offset 0) and rewrites each ``memref.load`` / ``memref.store``
/ ``memref.atomic_rmw`` (and ``vector.load`` / ``vector.store``, whose vector runs along a unit-stride innermost
dimension) inside to index it linearly (offset + sum of index * stride) and each
``memref.dim`` to the size read outside. Outlining then passes the 1-D view and the
dynamic sizes, strides and offsets as scalar kernel arguments. Constants used inside a launch are sunk into it
(otherwise each would become a kernel argument, i.e. a buffer binding).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, vector

from ...transforms.graph import outermost
from ...transforms.registry import register_pass

DYN = ir.ShapedType.get_dynamic_size()


def _inside(op: ir.Operation, launch: ir.Operation) -> bool:
    p = op
    while p is not None:
        if p == launch:
            return True
        p = p.parent
    return False


def _defined_outside(v: ir.Value, launch: ir.Operation) -> bool:
    owner = v.owner
    if isinstance(owner, ir.Block):
        return not _inside(owner.owner, launch)
    return not _inside(owner.operation if hasattr(owner, "operation") else owner, launch)


class _Flat:
    """A memref's 1-D view and its layout values, built before the launch."""

    def __init__(self, m: ir.Value, launch: ir.Operation):
        mt = ir.MemRefType(m.type)
        ip = ir.InsertionPoint(launch)
        loc = launch.location
        idx = ir.IndexType.get()
        self.rank = mt.rank
        strides, offset = mt.get_strides_and_offset()
        meta = memref.ExtractStridedMetadataOp(m, ip=ip, loc=loc)
        self.static_sizes = list(mt.shape)
        self.sizes = list(meta.sizes)
        self.static_strides = list(strides)
        self.strides = list(meta.strides)
        self.static_offset = offset
        self.offset = meta.offset
        # extent in elements from the base (offset + size0 * stride0 bounds every access)
        if mt.rank:
            ext = arith.MulIOp(self.sizes[0], self.strides[0], ip=ip, loc=loc).result
            ext = arith.AddIOp(ext, self.offset, ip=ip, loc=loc).result
        else:
            ext = arith.AddIOp(self.offset, arith.ConstantOp(idx, 1, ip=ip).result, ip=ip, loc=loc).result
        flat_t = ir.MemRefType.get([DYN], mt.element_type, memory_space=mt.memory_space)
        self.view = memref.ReinterpretCastOp(flat_t, meta.base_buffer, [], [ext], [], [0], [DYN], [1],
                                             ip=ip, loc=loc).result

    def value(self, ip: ir.InsertionPoint, static: int, dynamic: ir.Value) -> ir.Value:
        if static != DYN:
            return arith.ConstantOp(ir.IndexType.get(), static, ip=ip).result
        return dynamic

    def linear(self, ip: ir.InsertionPoint, indices: list[ir.Value], loc) -> ir.Value:
        acc = self.value(ip, self.static_offset, self.offset)
        for k, i in enumerate(indices):
            s = self.static_strides[k]
            if s == 1:
                term = i
            else:
                term = arith.MulIOp(i, self.value(ip, s, self.strides[k]), ip=ip, loc=loc).result
            acc = arith.AddIOp(acc, term, ip=ip, loc=loc).result
        return acc

    def size(self, ip: ir.InsertionPoint, k: int) -> ir.Value:
        return self.value(ip, self.static_sizes[k], self.sizes[k])


_STORES = ("memref.store", "vector.store", "memref.atomic_rmw")   # the buffer is operand 1
_ACCESSES = ("memref.load", "memref.dim", "vector.load") + _STORES


def _alignment(op: ir.Operation):
    return op.attributes["alignment"] if "alignment" in op.attributes else None


def _constant_index(v: ir.Value):
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    a = owner.attributes["value"]
    return ir.IntegerAttr(a).value if isinstance(a, ir.IntegerAttr) else None


def _flatten(launch: ir.Operation) -> None:
    flats: dict = {}
    accesses: list[ir.Operation] = []

    def collect(op):
        o = op.operation
        if o.name in _ACCESSES:
            m = o.operands[1] if o.name in _STORES else o.operands[0]
            if _defined_outside(m, launch):
                accesses.append(o)
        elif o != launch:
            for v in o.operands:
                if isinstance(v.type, ir.MemRefType) and _defined_outside(v, launch):
                    raise ValueError(f"'{o.name}' inside a GPU kernel uses a buffer directly; only "
                                     "memref.load/store/atomic_rmw/dim and vector.load/store are flattened")
        return ir.WalkResult.ADVANCE

    launch.walk(collect)
    for o in accesses:
        m = o.operands[1] if o.name in _STORES else o.operands[0]
        key = m
        f = None
        for k, v in flats.items():
            if k == key:
                f = v
        if f is None:
            f = flats[key] = _Flat(m, launch)
        ip = ir.InsertionPoint(o)
        if o.name == "memref.dim":
            k = _constant_index(o.operands[1])
            if k is None:
                raise ValueError("memref.dim with a dynamic dimension inside a GPU kernel")
            o.results[0].replace_all_uses_with(f.size(ip, k))
        elif o.name == "memref.load":
            i = f.linear(ip, list(o.operands[1:]), o.location)
            new = memref.LoadOp(f.view, [i], ip=ip, loc=o.location).result
            o.results[0].replace_all_uses_with(new)
        elif o.name == "memref.store":
            i = f.linear(ip, list(o.operands[2:]), o.location)
            memref.StoreOp(o.operands[0], f.view, [i], ip=ip, loc=o.location)
        elif o.name == "memref.atomic_rmw":
            i = f.linear(ip, list(o.operands[2:]), o.location)
            new = memref.AtomicRMWOp(o.attributes["kind"], o.operands[0], f.view, [i], ip=ip, loc=o.location)
            o.results[0].replace_all_uses_with(new.result)
        elif o.name == "vector.load":
            i = f.linear(ip, list(o.operands[1:]), o.location)
            new = vector.LoadOp(o.results[0].type, f.view, [i], alignment=_alignment(o), ip=ip, loc=o.location)
            o.results[0].replace_all_uses_with(new.result)
        else:
            i = f.linear(ip, list(o.operands[2:]), o.location)
            vector.StoreOp(o.operands[0], f.view, [i], alignment=_alignment(o), ip=ip, loc=o.location)
        o.erase()


def _sink_constants(launch: ir.Operation) -> None:
    body = launch.regions[0].blocks[0]
    sunk: dict = {}
    users: list[ir.Operation] = []

    def collect(op):
        if op.operation != launch:
            users.append(op.operation)
        return ir.WalkResult.ADVANCE

    launch.walk(collect)
    first = body.operations[0]
    for u in users:
        for k, v in enumerate(u.operands):
            owner = v.owner
            if isinstance(owner, ir.Block) or owner.name != "arith.constant" or not _defined_outside(v, launch):
                continue
            new = None
            for key, val in sunk.items():
                if key == v:
                    new = val
            if new is None:
                c = owner.operation.clone(ip=ir.InsertionPoint(first))
                new = sunk[v] = c.results[0]
            u.operands[k] = new


@register_pass("relax-gpu-flatten-launches",
               "Inside gpu.launch: buffers from outside as 1-D views indexed linearly, their sizes "
               "and strides as scalars; constants sunk (run before gpu-kernel-outlining).")
def relax_gpu_flatten_launches(module: ir.Operation, opts) -> None:
    for launch in outermost(module, "gpu.launch"):
        _flatten(launch)
        _sink_constants(launch)
