"""relax-gpu-fold-tensor-copies: a GPU kernel's reshapes and copies into fresh tensors become
views before bufferization (fewer launches).

Legalization writes a symbolic ``relax.reshape`` as ``tensor.reshape`` with a shape from
``tensor.from_elements`` and materializes reshapes, slices and concats with ``linalg.copy``
into a ``tensor.empty``. Bufferized, ``memref.reshape`` needs an identity layout, so a slice
in front of it is copied first, and each copy is one launch on a GPU: rope's kernel was 6
launches (3 slice copies, 2 rope ops, the v copy), the cos/sin table 11, the mask 3
(docs/gpu.md). On tensors, in each kernel (``relax.kernel``):

* ``tensor.reshape %x(%shape)`` whose dims past the first are static on both sides with
  equal products (so the first dims agree too) becomes ``tensor.collapse_shape`` /
  ``tensor.expand_shape`` of those dims: bufferized, a view of any strided layout whose
  merged dims are contiguous (one-shot bufferization copies only where they are not);
* ``linalg.copy ins(%x) outs(%e)`` with ``%e`` a ``tensor.empty`` of the same type (a copy
  that only gives a value a buffer of its own) is replaced by ``%x`` unless the kernel
  returns it (results are written into their output arguments).

Run on tensor kernels, before bufferization.
"""

from __future__ import annotations

from math import prod
from typing import Optional

from mlir import ir
from mlir.dialects import arith, tensor

from ...ops.kernels import KERNEL_ATTR
from ...transforms.registry import register_pass

_DYN = ir.ShapedType.get_dynamic_size()


def _kernels(module: ir.Operation) -> list[ir.Operation]:
    return [f.operation for f in module.regions[0].blocks[0].operations
            if f.operation.name == "func.func" and KERNEL_ATTR in f.operation.attributes
            and len(f.operation.regions[0].blocks)]


def _groups(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, j) for j in g]) for g in groups])


def _reshape_as_views(op: ir.Operation) -> Optional[ir.Value]:
    """The collapse/expand form of ``tensor.reshape`` ``op`` (built before it), else None."""
    src = op.operands[0]
    st, rt = ir.RankedTensorType(src.type), ir.RankedTensorType(op.results[0].type)
    if st.rank == 0 or rt.rank == 0:
        return None
    a, b = list(st.shape[1:]), list(rt.shape[1:])
    if _DYN in a or _DYN in b or prod(a) != prod(b):
        return None
    if (st.shape[0] == _DYN) != (rt.shape[0] == _DYN) or (st.shape[0] != _DYN and st.shape[0] != rt.shape[0]):
        return None
    et = st.element_type
    with ir.InsertionPoint(op), op.location:
        lead = tensor.DimOp(src, arith.ConstantOp(ir.IndexType.get(), 0).result).result if st.shape[0] == _DYN else None
        v = src
        if len(a) > 1:      # [d0, a...] -> [d0, prod(a)]
            v = tensor.CollapseShapeOp(ir.RankedTensorType.get([st.shape[0], prod(a)], et), v,
                                       _groups([[0], list(range(1, st.rank))])).result
        if min(len(a), 1) == len(b):
            pass             # [d0, A] or [d0]: the result already
        elif not b:          # [d0, A] with A = 1 -> [d0]
            v = tensor.CollapseShapeOp(rt, v, _groups([[0, 1]])).result
        else:                # [d0(, A)] -> [d0, b...]
            first = [0] if a else [0] + list(range(1, len(b) + 1))
            groups = [first] + ([list(range(1, len(b) + 1))] if a else [])
            dyn = [lead] if lead is not None else []
            static = [rt.shape[0]] + b
            v = tensor.ExpandShapeOp(rt, v, _groups(groups), dyn, static).result
    return v if v.type == op.results[0].type else None


def fold_kernel(fn: ir.Operation) -> int:
    """Rewrite kernel ``fn``'s reshapes and fresh copies (see the module docstring); how many."""
    n = 0
    ops = [o.operation for o in fn.regions[0].blocks[0].operations]
    for op in ops:
        if op.name == "tensor.reshape":
            v = _reshape_as_views(op)
            if v is not None:
                op.results[0].replace_all_uses_with(v)
                op.erase()
                n += 1
    for op in [o.operation for o in fn.regions[0].blocks[0].operations]:
        if op.name != "linalg.copy" or len(op.results) != 1:
            continue
        src, dst = op.operands[0], op.operands[1]
        if isinstance(dst.owner, ir.Block) or dst.owner.name != "tensor.empty" or src.type != dst.type:
            continue
        if any(u.owner.operation.name == "func.return" for u in op.results[0].uses):
            continue
        op.results[0].replace_all_uses_with(src)
        op.erase()
        n += 1
    return n


@register_pass("relax-gpu-fold-tensor-copies",
               "GPU kernels on tensors: reshapes with static trailing dims become collapse/expand views and copies "
               "into fresh tensors are dropped (no copy launches behind slices and reshapes).")
def relax_gpu_fold_tensor_copies(module: ir.Operation, opts) -> None:
    for fn in _kernels(module):
        fold_kernel(fn)
