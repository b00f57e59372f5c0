"""relax-cuda-align-workgroup-memory: 16-byte aligned shared memory for the outlined kernels.

``convert-gpu-to-nvvm`` declares each workgroup attribution as a ``.shared`` global aligned
to its element type (``.align 2`` for f16) unless the attribution carries ``llvm.align``.
128-bit shared stores (``st.shared.v4``) and ``ldmatrix`` (16-byte rows) need 16 bytes:
the tensor-core GEMM (mma.py) stages f16 / bf16 blocks with both. Launch attributions
carry no attributes through ``gpu-kernel-outlining``, so this pass sets
``llvm.align = align`` (keeping a larger one) on every attribution of every ``gpu.func``.
Run after outlining, before ``convert-gpu-to-nvvm`` (cuda pipeline).
"""

from __future__ import annotations

from mlir import ir

from ...transforms.registry import Option, register_pass

ATTRS = "workgroup_attrib_attrs"
COUNT = "workgroup_attributions"
ALIGN = "llvm.align"


def _align(fn: ir.Operation, align: int) -> None:
    count = ir.IntegerAttr(fn.attributes[COUNT]).value if COUNT in fn.attributes else 0
    if not count:
        return
    old = list(ir.ArrayAttr(fn.attributes[ATTRS])) if ATTRS in fn.attributes else [ir.DictAttr.get({})] * count
    i64 = ir.IntegerType.get_signless(64)
    new = []
    for d in old:
        d = ir.DictAttr(d)
        entries = {d[i].name: d[i].attr for i in range(len(d))}
        have = ir.IntegerAttr(entries[ALIGN]).value if ALIGN in entries else 0
        entries[ALIGN] = ir.IntegerAttr.get(i64, max(have, align))
        new.append(ir.DictAttr.get(entries))
    fn.attributes[ATTRS] = ir.ArrayAttr.get(new)


@register_pass("relax-cuda-align-workgroup-memory",
               "llvm.align on every workgroup attribution of the outlined gpu.funcs (16 bytes: st.shared.v4 "
               "and ldmatrix); run after gpu-kernel-outlining, before convert-gpu-to-nvvm.",
               options=[Option("align", int, 16, "bytes")])
def relax_cuda_align_workgroup_memory(module: ir.Operation, opts) -> None:
    def visit(op):
        if op.operation.name == "gpu.func":
            _align(op.operation, opts.align)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
