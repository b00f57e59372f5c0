"""relax-gpu-forward-copies: kernels read a copied view in place instead of its copy.

Legalization materializes reshapes, slices and expand_dims of a fused kernel with
``linalg.copy`` into a fresh buffer (on tensors a copy is free to fold; bufferized it is
work). On a GPU each such copy is one more launch and one more round trip through device
memory, and it hides the kernel's shape from the rules (a row kernel behind a reshape copy
is no longer one): attention's q.k and p.v sums were three launches each (copy, fill, sum).

In a bufferized kernel, ``linalg.copy ins(%src) outs(%dst)`` is removed and every use of
``%dst`` reads ``%src`` when:

* ``%dst`` is a ``memref.alloc`` of the kernel with the same shape as ``%src``, used only by
  the copy, by reads (inputs of ``linalg.generic`` / ``linalg.copy``, ``memref.load``) after
  it, and by its ``memref.dealloc`` (which goes with the alloc);
* nothing in the kernel writes the buffer ``%src`` views (its root through view ops: a
  kernel argument or an alloc) after the copy.

The readers take ``%src``'s layout as it is (linalg ops and loads accept any strided
layout). Run on bufferized kernels, before relax-gpu-schedule.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...transforms.registry import register_pass
from .launch_builder import kernels

_VIEWS = ("memref.reshape", "memref.subview", "memref.expand_shape", "memref.collapse_shape", "memref.cast",
          "memref.reinterpret_cast", "memref.view")
_READERS = ("linalg.generic", "linalg.copy", "memref.load")


def _root(v: ir.Value) -> ir.Value:
    while not isinstance(v.owner, ir.Block) and v.owner.name in _VIEWS:
        v = v.owner.operands[0]
    return v


def _written(op: ir.Operation) -> list[ir.Value]:
    """The buffers ``op`` writes (at the top level of a kernel)."""
    if op.name.startswith("linalg."):
        return list(op.opview.outputs) if hasattr(op.opview, "outputs") else []
    if op.name in ("memref.store", "vector.store"):
        return [op.operands[1]]
    if op.name == "memref.copy":
        return [op.operands[1]]
    return []


def _reads_only(dst: ir.Value, copy: ir.Operation, ops: list[ir.Operation]) -> bool:
    at = next(k for k, o in enumerate(ops) if o == copy)
    for u in dst.uses:
        user = u.owner.operation
        if user == copy or user.name == "memref.dealloc":
            continue
        if user.name not in _READERS:
            return False
        top = user
        while top.parent is not None and top.parent.name != "func.func":
            top = top.parent   # a load inside a generic's body (a gather): where the generic is
        k = next((j for j, o in enumerate(ops) if o == top), None)
        if k is None or k < at:
            return False
        if user.name != "memref.load" and any(v == dst for v in _written(user)):
            return False
    return True


def _forward_one(fn: ir.Operation) -> bool:
    ops = [o.operation for o in fn.regions[0].blocks[0].operations]
    for k, op in enumerate(ops):
        if op.name != "linalg.copy":
            continue
        src, dst = op.operands[0], op.operands[1]
        if isinstance(dst.owner, ir.Block) or dst.owner.name != "memref.alloc":
            continue
        st, dt = ir.MemRefType(src.type), ir.MemRefType(dst.type)
        if st.shape != dt.shape or st.element_type != dt.element_type:
            continue
        if not _reads_only(dst, op, ops):
            continue
        root = _root(src)
        if any(_root(w) == root for o in ops[k + 1:] for w in _written(o)):
            continue
        alloc = dst.owner
        deallocs = [u.owner.operation for u in dst.uses if u.owner.name == "memref.dealloc"]
        op.erase()
        for d in deallocs:
            d.erase()
        dst.replace_all_uses_with(src)
        alloc.erase()
        return True
    return False


def forward_copies(fn: ir.Operation) -> int:
    """Forward every eligible copy of kernel ``fn``; how many."""
    n = 0
    while _forward_one(fn):
        n += 1
    return n


@register_pass("relax-gpu-forward-copies",
               "GPU kernels: a linalg.copy into a fresh buffer that is only read afterwards is removed, its "
               "readers read the copied view in place (one launch less; row kernels behind reshape copies).")
def relax_gpu_forward_copies(module: ir.Operation, opts) -> Optional[None]:
    for f in kernels(module):
        forward_copies(f)
