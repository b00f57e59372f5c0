"""relax-kernel-noalias: mark the buffer arguments of loop-level kernels ``llvm.noalias``.

After bufferization a kernel (``relax.kernel``) receives its inputs and its
destination-passing outputs as memrefs. Relax guarantees an output never overlaps an
input or another output of the same call (outputs are fresh allocations, or planned
storage whose lifetime does not overlap the call's inputs; inputs may share buffers
only with each other and are never written). Telling LLVM so lets it keep reduction
accumulators in registers and vectorize the loops, which it cannot do when a store
to the output may change an input.
"""

from __future__ import annotations

from mlir import ir

from .graph import functions_with
from .registry import register_pass

KERNEL_ATTR = "relax.kernel"


@register_pass("relax-kernel-noalias",
               "Mark memref arguments of relax kernels llvm.noalias (run after bufferization).")
def relax_kernel_noalias(module: ir.Operation, opts) -> None:
    for f in functions_with(module, KERNEL_ATTR):
        ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
        old = list(ir.ArrayAttr(f.attributes["arg_attrs"])) if "arg_attrs" in f.attributes else None
        attrs = []
        for i, t in enumerate(ftype.inputs):
            entries = {}
            if old is not None:
                d = ir.DictAttr(old[i])
                entries = {d[j].name: d[j].attr for j in range(len(d))}
            if isinstance(t, ir.MemRefType):
                entries["llvm.noalias"] = ir.UnitAttr.get()
            attrs.append(ir.DictAttr.get(entries))
        f.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
