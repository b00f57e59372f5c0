"""relax-gpu-device-constants: tensor constants of host code reach kernels in device memory.

A constant array in a graph function (``relax.const``: ``arith.constant dense<...> :
tensor<...>`` once lowered) bufferizes to a ``memref.get_global`` of host memory; on the cpu
target a kernel reads it in place, but a GPU kernel can only address the runtime's buffers
(the vulkan and cuda runtimes refuse any other address at launch). Before bufferization,
this pass gives every such constant of a host function (a ``func.func`` that is not a
``relax.kernel``) a copy in a fresh allocation::

    %c = arith.constant dense<[2, 3, 0, 1]> : tensor<4xi64>
      ->  %c = arith.constant ... ; %d = bufferization.alloc_tensor() copy(%c) : tensor<4xi64>

so it bufferizes to ``memref.alloc`` (a runtime buffer) + ``memref.copy`` from the global:
recorded as a copy from host memory on vulkan (the runtime stages it); on cuda
relax-cuda-host makes it a device copy from the constant's device copy (uploaded once).
Constants inside kernels (scalars sunk into launches) are left alone.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import bufferization

from ...transforms.graph import top_ops
from ...transforms.registry import register_pass
from .launch_builder import KERNEL_ATTR


@register_pass("relax-gpu-device-constants",
               "Copy the tensor constants of host functions into fresh allocations (device "
               "buffers on GPU targets) before bufferization; kernels never read host globals.")
def relax_gpu_device_constants(module: ir.Operation, opts) -> None:
    consts: list[ir.Operation] = []
    for o in top_ops(module):
        if o.name != "func.func" or KERNEL_ATTR in o.attributes or not o.regions[0].blocks:
            continue

        def visit(inner):
            i = inner.operation
            if (i.name == "arith.constant" and len(i.results) == 1
                    and isinstance(i.results[0].type, ir.RankedTensorType)
                    and any(u.owner.name != "bufferization.alloc_tensor" for u in i.results[0].uses)):
                consts.append(i)
            return ir.WalkResult.ADVANCE

        o.walk(visit)
    for c in consts:
        v = c.results[0]
        uses = [(u.owner, u.operand_number) for u in v.uses]
        with c.location:
            copy = bufferization.AllocTensorOp(v.type, [], copy=v, ip=ir.InsertionPoint.after(c))
        for owner, i in uses:
            owner.operands[i] = copy.result
