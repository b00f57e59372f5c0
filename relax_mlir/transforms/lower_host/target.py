"""The host lowering's hooks: how a kernel is launched and where buffers live.

relax-lower-host turns a graph function into a host function; everything it does with
the backend's hardware goes through a :class:`HostHooks` (named per backend, picked by
``relax-lower-host{target=NAME}``; the compile's :class:`relax_mlir.target.Target` is another
thing: what the code runs on): calling a kernel
(``relax.call_tir``), allocating an output or a storage, calling a library function
(``relax.call_dps_library``), carving static arenas out of the session workspace, viewing
and writing rows of the session's state buffers (``relax.state_read``/``state_write``).
The ``cpu`` target calls kernels with ``func.call`` and allocates host memory with
``memref.alloc`` (64-byte aligned, its result checked: a failed allocation is a run-time
``MemoryError``, never a write through NULL). A GPU target would launch the kernel
(``gpu.launch_func``) and allocate device memory (``gpu.alloc``) instead.

Register one with :func:`register_host_hooks`; ``relax-lower-host{target=NAME}`` picks it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from mlir import ir
from mlir.dialects import arith, bufferization, func, memref

from ...runtime.libraries import THREADS_SYMBOL
from ..graph import top_ops
from .common import element_bytes

if TYPE_CHECKING:
    from .function import FunctionLowering

ALIGNMENT = 64


class HostHooks:
    """The backend-specific half of relax-lower-host (the CPU's by default)."""

    name = "cpu"

    def workspace_type(self) -> ir.Type:
        """The type of a lowered function's first argument: the session workspace."""
        return ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8))

    def state_type(self) -> ir.Type:
        """The type of a state buffer argument (after the workspace): bytes, like the workspace."""
        return self.workspace_type()

    def state_view(self, fl: "FunctionLowering", buffer: ir.Value, byte_offset: ir.Value, mt: ir.MemRefType,
                   sizes: list[ir.Value], loc: ir.Location) -> ir.Value:
        """Rows of a state buffer as a ``mt`` memref at ``byte_offset`` (``sizes``: its dynamic
        dims); no copy: the session owns the buffer."""
        return memref.ViewOp(mt, buffer, byte_offset, sizes, ip=fl.ip, loc=loc).result

    def copy_to_buffer(self, fl: "FunctionLowering", value: ir.Value, dest: ir.Value, loc: ir.Location) -> None:
        """Write tensor ``value`` into memref ``dest`` of the same shape (a state write)."""
        mt = ir.MemRefType(dest.type)
        src = bufferization.ToBufferOp(mt, value, read_only=True, ip=fl.ip, loc=loc).result
        memref.CopyOp(src, dest, ip=fl.ip, loc=loc)

    def call_kernel(self, fl: "FunctionLowering", callee: str, args: list[ir.Value],
                    result_types: list[ir.Type], loc: ir.Location) -> list[ir.Value]:
        """Run kernel ``@callee`` (destination-passing: outputs are among ``args``)."""
        call = func.CallOp(list(result_types), ir.FlatSymbolRefAttr.get(callee), args, ip=fl.ip, loc=loc)
        return list(call.results)

    def alloc_buffer(self, fl: "FunctionLowering", mt: ir.MemRefType, sizes: list[ir.Value],
                     bytes_expr, where: str, expected: str, loc: ir.Location) -> ir.Value:
        """A fresh buffer of type ``mt`` (``sizes``: its dynamic dims); a failed allocation
        is reported by a pending check (flushed before anything writes to it)."""
        m = memref.AllocOp(mt, sizes, [], alignment=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), ALIGNMENT),
                           ip=fl.ip, loc=loc).result
        if not mt.has_static_shape or _static_bytes(mt) > 0:
            ptr = memref.ExtractAlignedPointerAsIndexOp(m, ip=fl.ip).result
            ok = arith.CmpIOp(arith.CmpIPredicate.ne, ptr, fl.const(0), ip=fl.ip).result
            if not mt.has_static_shape:
                nbytes = fl.index(bytes_expr)
                empty = arith.CmpIOp(arith.CmpIPredicate.eq, nbytes, fl.const(0), ip=fl.ip).result
                ok = arith.OrIOp(ok, empty, ip=fl.ip).result
            fl.add_check(ok, {"kind": "alloc", "where": where, "expected": expected,
                              "detail": str(mt.element_type), "expr": str(bytes_expr)}, None)
        return m

    def alloc_tensor(self, fl: "FunctionLowering", t: ir.RankedTensorType, sizes: list[ir.Value],
                     bytes_expr, where: str, expected: str, loc: ir.Location) -> ir.Value:
        """A fresh destination tensor of type ``t`` for a kernel output."""
        mt = ir.MemRefType.get(list(t.shape), t.element_type)
        m = self.alloc_buffer(fl, mt, sizes, bytes_expr, where, expected, loc)
        return bufferization.ToTensorOp(t, m, restrict=True, writable=True, ip=fl.ip).result

    def workspace_view(self, fl: "FunctionLowering", offset: int, mt: ir.MemRefType, loc: ir.Location) -> ir.Value:
        """A static arena: ``mt`` bytes at ``offset`` of the session workspace (no allocation:
        the session owns it, so its pages stay mapped across calls)."""
        return memref.ViewOp(mt, fl.workspace, fl.const(offset), [], ip=fl.ip, loc=loc).result

    def callee_workspace(self, fl: "FunctionLowering", offset: int, loc: ir.Location) -> ir.Value:
        """The part of the workspace after ``offset``, for a callee's own arenas."""
        if offset == 0:
            return fl.workspace
        size = memref.DimOp(fl.workspace, fl.const(0), ip=fl.ip).result
        rest = arith.SubIOp(size, fl.const(offset), ip=fl.ip).result
        return memref.ViewOp(self.workspace_type(), fl.workspace, fl.const(offset), [rest], ip=fl.ip, loc=loc).result

    def call_library(self, fl: "FunctionLowering", callee: str, args: list[ir.Value], loc: ir.Location) -> None:
        """``void _mlir_ciface_<callee>(descriptor *...)`` of a runtime library; a callee that
        takes the module's thread count (:func:`~relax_mlir.runtime.libraries.takes_thread_cell`)
        gets the module's cell (``@_mlir_relax_num_threads``, declared here if needed) last."""
        from ...runtime.libraries import takes_thread_cell
        if takes_thread_cell(callee):
            from ...target import Target
            try:
                threads = Target.for_module(fl.state.module).threads
            except ValueError:
                threads = 1
            ensure_threads_global(fl.state.module, threads)
            cell = ir.MemRefType.get([], ir.IntegerType.get_signless(32))
            args = args + [memref.GetGlobalOp(cell, THREADS_SYMBOL, ip=fl.ip, loc=loc).result]
        fl.state.declare_library(callee, [a.type for a in args], loc)
        func.CallOp([], ir.FlatSymbolRefAttr.get(callee), args, ip=fl.ip, loc=loc)


def ensure_threads_global(module: ir.Operation, initial: int) -> None:
    """Declare ``@_mlir_relax_num_threads`` (memref<i32>, public, ``initial``) in ``module``
    unless it is there."""
    body = module.regions[0].blocks[0]
    for op in top_ops(module):
        if op.name == "memref.global" and ir.StringAttr(op.attributes["sym_name"]).value == THREADS_SYMBOL:
            return
    i32 = ir.IntegerType.get_signless(32)
    ty = ir.MemRefType.get([], i32)
    first = body.operations[0] if len(body.operations) else None
    with ir.InsertionPoint(body) if first is None else ir.InsertionPoint(first), ir.Location.unknown():
        memref.GlobalOp(THREADS_SYMBOL, ir.TypeAttr.get(ty), sym_visibility="public",
                        initial_value=ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([], i32),
                                                                     ir.IntegerAttr.get(i32, max(1, initial))),
                        alignment=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 4))


def _static_bytes(mt: ir.MemRefType) -> int:
    n = 1
    for d in mt.shape:
        n *= d
    return n * element_bytes(mt.element_type)


HOST_HOOKS: dict[str, HostHooks] = {}


def register_host_hooks(hooks: HostHooks, replace: bool = False) -> HostHooks:
    if hooks.name in HOST_HOOKS and not replace:
        raise ValueError(f"host-lowering hooks '{hooks.name}' registered twice")
    HOST_HOOKS[hooks.name] = hooks
    return hooks


def host_hooks(name: str) -> Optional[HostHooks]:
    return HOST_HOOKS.get(name)


register_host_hooks(HostHooks())

# The names before relax_mlir.target (when "host target" meant three things).
HostTarget = HostHooks
HOST_TARGETS = HOST_HOOKS
register_host_target = register_host_hooks
host_target = host_hooks
