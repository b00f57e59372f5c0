"""relax-vulkan-host: the host side of the vulkan target calls its runtime.

After ``convert-gpu-to-spirv`` and ``gpu-module-to-binary`` every kernel is a SPIR-V blob
in a ``gpu.binary``. The host code (graph functions and the host halves of kernels,
which compute the grid from the sizes) still holds ``gpu.launch_func`` ops and, where
bufferization copies a buffer, ``memref.copy``. Both become calls of the Vulkan runtime
(:mod:`relax_mlir.runtime.vulkan`), which RECORDS them into the call's one command buffer:

* ``gpu.launch_func @m::@k blocks in (gx, gy, gz) ... args(...)`` ->
  ``func.call @relax_vk_launch_<id>(gx, gy, gz, a0, a1, ...)`` with every argument as
  ``i64``: a buffer as its aligned address (the runtime maps it back to its VkBuffer and
  offset), a scalar as its value (floats by their bits);
* ``memref.copy %src, %dst`` (identity layouts) ->
  ``func.call @relax_vk_copy(src address, dst address, bytes)``.

The module attribute ``vulkan.launches`` lists each launch site: ``{id, binary, entry,
args}`` (``args``: ``"buffer"`` or the scalar's element type; descriptor set 0, binding
i = argument i, a scalar as its own small storage buffer: MLIR's SPIR-V ABI);
the workgroup sizes are in the SPIR-V itself. Buffer memory comes from
the runtime too: the vulkan pipeline lowers ``memref.alloc`` / ``dealloc`` with
``finalize-memref-to-llvm{use-generic-functions=true}``, whose
``_mlir_memref_to_llvm_alloc`` / ``free`` the runtime provides.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, memref

from ...transforms.lower_host.common import element_bytes
from ...transforms.registry import emit_error, register_pass
from .entry_abi import ABI_ATTR, kernel_ref, launch_sizes

LAUNCHES_ATTR = "vulkan.launches"
COPY_FN = "relax_vk_copy"
LAUNCH_PREFIX = "relax_vk_launch_"


class HostCallError(Exception):
    def __init__(self, op, message):
        super().__init__(message)
        self.op = op


def _i64(v: ir.Value, ip: ir.InsertionPoint) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    t = v.type
    if isinstance(t, ir.IndexType):
        return arith.IndexCastOp(i64, v, ip=ip).result
    if isinstance(t, ir.IntegerType):
        if t.width == 64:
            return v
        return arith.ExtSIOp(i64, v, ip=ip).result
    if isinstance(t, ir.FloatType):
        bits = arith.BitcastOp(ir.IntegerType.get_signless(t.width), v, ip=ip).result
        return arith.ExtUIOp(i64, bits, ip=ip).result if t.width < 64 else bits
    raise TypeError(f"no host representation for kernel argument type {t}")


def _address(m: ir.Value, ip: ir.InsertionPoint, loc) -> ir.Value:
    """Byte address of element 0 of ``m`` (aligned pointer + offset * element size)."""
    mt = ir.MemRefType(m.type)
    ptr = memref.ExtractAlignedPointerAsIndexOp(m, ip=ip, loc=loc).result
    _, off = mt.get_strides_and_offset()
    if off != 0:
        meta = memref.ExtractStridedMetadataOp(m, ip=ip, loc=loc)
        eb = arith.ConstantOp(ir.IndexType.get(), element_bytes(mt.element_type), ip=ip).result
        ptr = arith.AddIOp(ptr, arith.MulIOp(meta.offset, eb, ip=ip).result, ip=ip).result
    return ptr


def _contiguous(mt: ir.MemRefType) -> bool:
    """Identity layout, or static strides equal to the row-major ones."""
    if isinstance(mt.layout, ir.AffineMapAttr) and ir.AffineMapAttr(mt.layout).value.is_permutation:
        return ir.AffineMapAttr(mt.layout).value == ir.AffineMap.get_identity(mt.rank)
    strides, off = mt.get_strides_and_offset()
    expect = 1
    for size, stride in zip(reversed(mt.shape), reversed(strides)):
        if expect is None or stride != expect:
            return False
        expect = None if size == ir.ShapedType.get_dynamic_size() else expect * size
    return True


def _declare(module: ir.Operation, declared: dict, name: str, nargs: int) -> None:
    if name in declared:
        return
    i64 = ir.IntegerType.get_signless(64)
    first = module.regions[0].blocks[0].operations[0]
    declared[name] = func.FuncOp(name, ir.FunctionType.get([i64] * nargs, []), visibility="private",
                                 ip=ir.InsertionPoint(first))


def _rewrite_launch(module, op, lid: int, declared: dict) -> dict:
    ip = ir.InsertionPoint(op)
    loc = op.location
    grid, _, operands = launch_sizes(op)
    binary, entry = kernel_ref(op)
    args, kinds = [_i64(g, ip) for g in grid], []
    for v in operands:
        if isinstance(v.type, ir.MemRefType):
            args.append(_i64(_address(v, ip, loc), ip))
            kinds.append("buffer")
        else:
            args.append(_i64(v, ip))
            kinds.append(str(v.type))
    name = f"{LAUNCH_PREFIX}{lid}"
    _declare(module, declared, name, len(args))
    func.CallOp([], ir.FlatSymbolRefAttr.get(name), args, ip=ip, loc=loc)
    op.erase()
    return {"id": lid, "binary": binary, "entry": entry, "args": kinds}


def copy_call(module, op, declared: dict, name: str, src_address=None, target: str = "vulkan") -> None:
    """``memref.copy`` (identity layouts) -> ``func.call @<name>(src, dst, bytes)`` with i64
    byte addresses; ``src_address``: an i64 value to use as the source address instead."""
    src, dst = op.operands
    st, dt = ir.MemRefType(src.type), ir.MemRefType(dst.type)
    if not (_contiguous(st) and _contiguous(dt)):
        raise HostCallError(op, f"memref.copy between non-contiguous buffers ({st} to {dt}) is not "
                                f"supported by the {target} target")
    ip = ir.InsertionPoint(op)
    loc = op.location
    n = arith.ConstantOp(ir.IndexType.get(), element_bytes(st.element_type), ip=ip).result
    for k in range(st.rank):
        n = arith.MulIOp(n, memref.DimOp(src, arith.ConstantOp(ir.IndexType.get(), k, ip=ip).result,
                                         ip=ip).result, ip=ip).result
    source = src_address if src_address is not None else _i64(_address(src, ip, loc), ip)
    args = [source, _i64(_address(dst, ip, loc), ip), _i64(n, ip)]
    _declare(module, declared, name, 3)
    func.CallOp([], ir.FlatSymbolRefAttr.get(name), args, ip=ip, loc=loc)
    op.erase()


def _attr(v) -> ir.Attribute:
    if isinstance(v, int):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)
    if isinstance(v, str):
        return ir.StringAttr.get(v)
    if isinstance(v, list):
        return ir.ArrayAttr.get([_attr(x) for x in v])
    return ir.DictAttr.get({k: _attr(x) for k, x in v.items()})


@register_pass("relax-vulkan-host",
               "Host side of the vulkan target: gpu.launch_func and memref.copy become calls that "
               "record into the runtime's command buffer; the launch table as vulkan.launches.")
def relax_vulkan_host(module: ir.Operation, opts) -> None:
    launches, copies = [], []

    def visit(op):
        o = op.operation
        if o.name in ("gpu.module", "gpu.binary"):
            return ir.WalkResult.SKIP
        if o.name == "gpu.launch_func":
            launches.append(o)
        elif o.name == "memref.copy":
            copies.append(o)
        return ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
    declared: dict = {}
    table = []
    try:
        for k, o in enumerate(launches):
            table.append(_rewrite_launch(module, o, k, declared))
        for o in copies:
            copy_call(module, o, declared, COPY_FN)
    except (HostCallError, TypeError) as e:
        emit_error(getattr(e, "op", module), str(e))
        return
    module.attributes[LAUNCHES_ATTR] = _attr(table)
    if "gpu.container_module" in module.attributes:
        del module.attributes["gpu.container_module"]
