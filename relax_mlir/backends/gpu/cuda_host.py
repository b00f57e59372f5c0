"""relax-cuda-host: host code of the cuda target never touches device memory.

The cuda runtime keeps call buffers, workspace and state in plain device memory
(``cuMemAlloc``), which the host cannot dereference. After the kernel stage the host code
(graph functions, kernels' host halves) still holds three kinds of memory access; this
pass gives each its device-side or host-side form:

* small bookkeeping buffers the host code itself writes and reads (a ``memref.reshape``'s
  shape built by ``tensor.from_elements``, the ownership flags of the deallocation helper):
  a ``memref.alloc`` of static shape whose every use (through ``memref.cast``) is a host
  ``memref.load`` / ``store`` / ``dim`` / ``dealloc``, the shape operand of
  ``memref.reshape`` or a call of ``dealloc_helper`` becomes a ``memref.alloca`` at the
  function entry (its deallocations erased): host memory, never a device allocation;
* ``memref.copy`` between buffers (state writes, copies bufferization inserts) ->
  ``func.call @relax_cuda_copy(src, dst, bytes)`` (``i64`` byte addresses), an
  asynchronous device-to-device copy on the call's stream in the runtime;
* ``memref.copy`` out of a host constant (``memref.get_global``, what
  relax-gpu-device-constants copies into a fresh buffer): the global is renamed
  ``_mlir_relax_cuda_const_<k>`` (public, so the runtime finds its bytes), the copy's source
  becomes the device address stored in the host slot ``_mlir_relax_cuda_cslot_<k>``
  (``memref<1xi64>``), which the runtime fills once per executable after uploading the
  constant: per call the copy is device to device. ``cuda.constants`` on the module
  lists ``[k, bytes]``.

A buffer of a host global passed to a kernel directly is an error here (a kernel reading
host memory would fault the device), as is a copy between non-contiguous buffers.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref

from ...transforms.lower_host.common import element_bytes
from ...transforms.registry import emit_error, register_pass
from .vulkan_host import HostCallError, copy_call

# the names the host code and the cuda runtime share (runtime/cuda_launch.py)
from ...runtime.cuda_launch import CONST_PREFIX, CONSTANTS_ATTR, COPY_FN, SLOT_PREFIX  # noqa: E402,F401
#: bookkeeping buffers larger than this stay allocations (they would be device memory)
MAX_HOST_BYTES = 4096

_HOST_USES = {"memref.load", "memref.dim", "memref.dealloc"}


def _through_casts(v: ir.Value):
    """The ops using ``v``, looking through ``memref.cast``: (op, operand number)."""
    out = []
    for u in v.uses:
        o = u.owner.operation
        if o.name == "memref.cast":
            out += _through_casts(o.results[0])
        else:
            out.append((o, u.operand_number))
    return out


def _host_only(alloc: ir.Operation) -> bool:
    mt = ir.MemRefType(alloc.results[0].type)
    if not mt.has_static_shape or alloc.operands:
        return False
    n = element_bytes(mt.element_type)
    for d in mt.shape:
        n *= d
    if n > MAX_HOST_BYTES:
        return False
    for o, k in _through_casts(alloc.results[0]):
        if o.name in _HOST_USES or (o.name == "memref.store" and k == 1) or (o.name == "memref.reshape" and k == 1):
            continue
        if o.name == "func.call" and "dealloc_helper" in ir.FlatSymbolRefAttr(o.attributes["callee"]).value:
            continue
        return False
    return True


def _to_alloca(alloc: ir.Operation) -> None:
    fn = alloc.parent.operation
    while fn.name != "func.func":
        fn = fn.parent.operation
    entry = fn.regions[0].blocks[0]
    mt = ir.MemRefType(alloc.results[0].type)
    new = memref.AllocaOp(mt, [], [], ip=ir.InsertionPoint.at_block_begin(entry), loc=alloc.location)
    dead = [o for o, _ in _through_casts(alloc.results[0]) if o.name == "memref.dealloc"]
    alloc.results[0].replace_all_uses_with(new.result)
    for o in dead:
        o.erase()
    alloc.erase()


def _global_of(v: ir.Value):
    """The memref.get_global ``v`` comes from (through casts), or None."""
    while True:
        owner = v.owner
        if isinstance(owner, ir.Block):
            return None
        owner = owner.operation
        if owner.name == "memref.cast":
            v = owner.operands[0]
            continue
        return owner if owner.name == "memref.get_global" else None


def _bytes(mt: ir.MemRefType) -> int:
    n = element_bytes(mt.element_type)
    for d in mt.shape:
        n *= d
    return n


class _Constants:
    """Host globals copied to the device: one public name and one slot each."""

    def __init__(self, module: ir.Operation):
        self.module = module
        self.body = module.regions[0].blocks[0]
        self.globals = {ir.StringAttr(o.attributes["sym_name"]).value: o for o in self.body.operations
                        if o.operation.name == "memref.global"}
        self.slots: dict[str, tuple[int, str, int]] = {}   # global -> (k, slot name, bytes)

    def slot(self, get_global: ir.Operation) -> tuple[str, int]:
        name = ir.FlatSymbolRefAttr(get_global.attributes["name"]).value
        if name not in self.slots:
            k = len(self.slots)
            g = self.globals[name].operation
            mt = ir.MemRefType(ir.TypeAttr(g.attributes["type"]).value)
            if not mt.has_static_shape:
                raise HostCallError(get_global, f"host constant @{name} has a dynamic shape")
            slot = f"{SLOT_PREFIX}{k}"
            i64 = ir.IntegerType.get_signless(64)
            st = ir.MemRefType.get([1], i64)
            memref.GlobalOp(slot, st, sym_visibility="public",
                            initial_value=ir.DenseElementsAttr.get_splat(
                                ir.RankedTensorType.get([1], i64), ir.IntegerAttr.get(i64, 0)),
                            ip=ir.InsertionPoint.at_block_begin(self.body))
            self.slots[name] = (k, slot, _bytes(mt))
        k, slot, _ = self.slots[name]
        return slot, k

    def finish(self) -> None:
        """Rename the copied globals to their public names (every use follows)."""
        for name, (k, _, _) in self.slots.items():
            g = self.globals[name].operation
            new = f"{CONST_PREFIX}{k}"
            g.attributes["sym_name"] = ir.StringAttr.get(new)
            g.attributes["sym_visibility"] = ir.StringAttr.get("public")

            def rename(op, old=name, new=new):
                o = op.operation
                if o.name == "memref.get_global" and ir.FlatSymbolRefAttr(o.attributes["name"]).value == old:
                    o.attributes["name"] = ir.FlatSymbolRefAttr.get(new)
                return ir.WalkResult.ADVANCE

            self.module.walk(rename)
        if self.slots:
            i64 = ir.IntegerType.get_signless(64)
            self.module.attributes[CONSTANTS_ATTR] = ir.ArrayAttr.get([
                ir.ArrayAttr.get([ir.IntegerAttr.get(i64, k), ir.IntegerAttr.get(i64, n)])
                for k, _, n in self.slots.values()])


def _rewrite_constant_copy(module: ir.Operation, consts: _Constants, op: ir.Operation, declared: dict) -> None:
    src, dst = op.operands
    slot, _ = consts.slot(_global_of(src))
    ip = ir.InsertionPoint(op)
    loc = op.location
    i64 = ir.IntegerType.get_signless(64)
    st = ir.MemRefType.get([1], i64)
    ref = memref.GetGlobalOp(st, slot, ip=ip, loc=loc).result
    c0 = arith.ConstantOp(ir.IndexType.get(), 0, ip=ip).result
    device = memref.LoadOp(ref, [c0], ip=ip, loc=loc).result
    copy_call(module, op, declared, COPY_FN, src_address=device, target="cuda")


@register_pass("relax-cuda-host",
               "Host side of the cuda target: host-only bookkeeping buffers on the stack, memref.copy as "
               "device-to-device copies (relax_cuda_copy), host constants uploaded once (slots).")
def relax_cuda_host(module: ir.Operation, opts) -> None:
    allocs, copies, launches = [], [], []

    def visit(op):
        o = op.operation
        if o.name in ("gpu.module", "gpu.binary"):
            return ir.WalkResult.SKIP
        if o.name == "func.func" and "dealloc_helper" in ir.StringAttr(o.attributes["sym_name"]).value:
            return ir.WalkResult.SKIP
        if o.name == "memref.alloc":
            allocs.append(o)
        elif o.name == "memref.copy":
            copies.append(o)
        elif o.name == "gpu.launch_func":
            launches.append(o)
        return ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
    for o in launches:
        for v in o.operands:
            if isinstance(v.type, ir.MemRefType) and _global_of(v) is not None:
                emit_error(o, "a kernel argument is a host global (memref.get_global): the kernel cannot "
                              "read host memory (relax-gpu-device-constants copies tensor constants)")
                return
    for o in allocs:
        if _host_only(o):
            _to_alloca(o)
    consts = _Constants(module)
    declared: dict = {}
    try:
        for o in copies:
            if _global_of(o.operands[0]) is not None:
                _rewrite_constant_copy(module, consts, o, declared)
            else:
                copy_call(module, o, declared, COPY_FN, target="cuda")
    except (HostCallError, TypeError) as e:
        emit_error(getattr(e, "op", module), str(e))
        return
    consts.finish()


__all__ = ["COPY_FN", "CONST_PREFIX", "SLOT_PREFIX", "CONSTANTS_ATTR"]
