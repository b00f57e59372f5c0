"""relax-spirv-coherent-buffers: storage buffers that workgroups hand over to each other
get the ``Coherent`` decoration.

The one-launch flash-decoding split (``attention_launches=1``, backends/gpu/decode_attention.py)
has each workgroup store a partial result, fence it (``spirv.MemoryBarrier`` at Device scope)
and bump an atomic counter; the last workgroup of a row then loads the other workgroups'
partials. Under SPIR-V's GLSL450 memory model a fence orders only memory that is
``Coherent`` (GLSL's ``coherent buffer``): without it a GPU may serve the loads from a
non-coherent per-multiprocessor cache. MLIR's SPIR-V lowering never emits the decoration;
its serializer does turn a unit attribute ``coherent`` on a ``spirv.GlobalVariable`` into
``OpDecorate %var Coherent``. So, in every entry function that has a Device-scope (or wider)
memory barrier, each storage buffer it both stores to and loads from (plain loads: atomics
are coherent anyway, a buffer it only reads no workgroup of the dispatch writes) gets that
attribute. Runs after ``spirv-lower-abi-attrs`` (buffers become global variables there).
"""

from __future__ import annotations

from mlir import ir

from ...transforms.registry import register_pass
from .nest_spirv import spirv_modules

ATTR = "coherent"
#: memory scopes that reach other workgroups (Workgroup, Subgroup and Invocation do not)
_WIDE_SCOPES = ("Device", "CrossDevice", "QueueFamily")
#: ops whose result points into their first operand's buffer
_POINTER_OPS = ("spirv.AccessChain", "spirv.InBoundsPtrAccessChain", "spirv.PtrAccessChain", "spirv.Bitcast")


def _has_device_fence(func: ir.Operation) -> bool:
    found = []

    def visit(op):
        op = op.operation
        if op.name in ("spirv.MemoryBarrier", "spirv.ControlBarrier"):
            scope = str(op.attributes["memory_scope"])
            if any(f"<{s}>" in scope for s in _WIDE_SCOPES):
                found.append(op)
                return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    func.walk(visit, ir.WalkOrder.PRE_ORDER)
    return bool(found)


def _accesses(value: ir.Value, seen: set[str]) -> None:
    """Adds 'load' / 'store' for each plain load from / store to a pointer derived from value."""
    for use in value.uses:
        owner = use.owner
        owner = getattr(owner, "operation", owner)
        name = owner.name
        if name in _POINTER_OPS and use.operand_number == 0:
            _accesses(owner.results[0], seen)
        elif name == "spirv.Load":
            seen.add("load")
        elif name == "spirv.Store" and use.operand_number == 0:
            seen.add("store")


def coherent_buffers(spirv_module: ir.Operation) -> list[str]:
    """The StorageBuffer variables of spirv_module that need ``Coherent`` (sorted names)."""
    body = spirv_module.regions[0].blocks[0]
    storage = {ir.StringAttr(o.operation.attributes["sym_name"]).value for o in body.operations
               if o.operation.name == "spirv.GlobalVariable"
               and "StorageBuffer>" in str(o.operation.attributes["type"])}
    wanted: set[str] = set()
    for fn in body.operations:
        fn = fn.operation
        if fn.name != "spirv.func" or not _has_device_fence(fn):
            continue
        access: dict[str, set[str]] = {}

        def visit(op, access=access):
            op = op.operation
            if op.name == "spirv.mlir.addressof":
                var = ir.FlatSymbolRefAttr(op.attributes["variable"]).value
                if var in storage:
                    _accesses(op.results[0], access.setdefault(var, set()))
            return ir.WalkResult.ADVANCE

        fn.walk(visit, ir.WalkOrder.PRE_ORDER)
        wanted |= {v for v, seen in access.items() if seen == {"load", "store"}}
    return sorted(wanted)


@register_pass("relax-spirv-coherent-buffers",
               "SPIR-V kernels: decorate Coherent the storage buffers a kernel with a Device-scope memory "
               "barrier both stores to and loads from (workgroups handing data over; run after spirv-lower-abi-attrs).")
def relax_spirv_coherent_buffers(module: ir.Operation, opts) -> None:
    for sm in spirv_modules(module):
        names = set(coherent_buffers(sm))
        for o in sm.regions[0].blocks[0].operations:
            o = o.operation
            if o.name == "spirv.GlobalVariable" and ir.StringAttr(o.attributes["sym_name"]).value in names:
                o.attributes[ATTR] = ir.UnitAttr.get()
