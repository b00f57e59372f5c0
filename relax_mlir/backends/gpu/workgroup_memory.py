"""relax-spirv-workgroup-memory: workgroup attributions of GPU kernels as Workgroup-class
allocations, the form the SPIR-V conversion accepts.

The scheduled kernels (relax-gpu-tile-matmul, relax-gpu-row-reductions) declare their
workgroup memory as ``gpu.launch`` workgroup attributions, which outlining carries to
the ``gpu.func`` and ``convert-gpu-to-nvvm`` turns into shared memory. MLIR 22's
``convert-gpu-to-spirv`` does not handle attributions (it asserts on a ``gpu.func`` that
has them) nor the ``#gpu.address_space<workgroup>`` memory space on a ``memref.alloc``,
but it lowers a static ``memref.alloc`` in ``#spirv.storage_class<Workgroup>`` to a
Workgroup-class ``spirv.GlobalVariable``. This pass rewrites each attribution of a kernel
into such an allocation at the kernel's entry and drops the attribution. Run after
``gpu-kernel-outlining``, before ``convert-gpu-to-spirv`` (vulkan pipeline only).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import memref

from ...transforms.registry import register_pass

ATTR = "workgroup_attributions"


def _convert(fn: ir.Operation) -> None:
    count = ir.IntegerAttr(fn.attributes[ATTR]).value if ATTR in fn.attributes else 0
    if not count:
        return
    n_in = len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs)
    block = fn.regions[0].blocks[0]
    space = ir.Attribute.parse("#spirv.storage_class<Workgroup>")
    first = block.operations[0]
    for k in range(count):
        arg = block.arguments[n_in + k]
        t = ir.MemRefType(arg.type)
        new = memref.AllocOp(ir.MemRefType.get(list(t.shape), t.element_type, t.layout, space), [], [],
                             ip=ir.InsertionPoint(first), loc=fn.location).result
        arg.replace_all_uses_with(new)
    for k in reversed(range(count)):
        block.erase_argument(n_in + k)
    del fn.attributes[ATTR]


@register_pass("relax-spirv-workgroup-memory",
               "gpu.func workgroup attributions -> static memref.alloc in #spirv.storage_class<Workgroup> "
               "(convert-gpu-to-spirv lowers those, not attributions; run after outlining).")
def relax_spirv_workgroup_memory(module: ir.Operation, opts) -> None:
    for top in module.regions[0].blocks[0].operations:
        top = top.operation
        if top.name != "gpu.module":
            continue
        for f in top.regions[0].blocks[0].operations:
            if f.operation.name == "gpu.func":
                _convert(f.operation)
