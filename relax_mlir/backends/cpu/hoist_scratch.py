"""relax-hoist-scratch: allocate a loop body's scratch buffers once per loop (per thread).

Bufferized schedules leave temporaries inside their loops: the ``rows`` schedule's row
buffer and reduction accumulators are a ``memref.alloc`` at the top of the per-row
``scf.forall`` body and a ``memref.dealloc`` at its end. After ``convert-scf-to-openmp``
that is one ``malloc`` + ``free`` per ROW (four per row for a masked softmax: 54,000 calls in
one 128-token Llama prefill, ~5 % of it in glibc). ``buffer-loop-hoisting`` does not move
them (it runs before deallocation exists and does not know ``omp.loop_nest``).

This pass (after deallocation is explicit, before the memref lowering) moves such a pair
out of the loop: the ``alloc`` before the loop, the ``dealloc`` after it, so the buffer is
reused by every iteration. Where the loop is an OpenMP worksharing loop
(``omp.loop_nest`` in ``omp.wsloop`` in ``omp.parallel``), the pair goes around the
``omp.wsloop`` INSIDE the parallel region: one buffer per thread, never shared. Out of
``scf.for`` loops it moves repeatedly (nested loops), never out of an ``omp.parallel``.

A pair moves only when it is safe for any program:

* the ``alloc``'s operands (its dynamic sizes) are defined outside the loop;
* exactly one ``memref.dealloc`` frees it, in the same block (so each iteration is done
  with the buffer before the next begins: a fresh allocation's contents are undefined,
  so no iteration can depend on another's data in it);
* neither the buffer nor a view of it is yielded, returned, stored or passed anywhere
  but to memref reads/writes, views and vector transfers (nothing outlives the iteration).

A loop that runs zero times then still allocates once: harmless.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...transforms.graph import defined_inside
from ...transforms.registry import register_pass

#: ops through which a buffer may be used without escaping its iteration
_VIEWS = {"memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.expand_shape",
          "memref.collapse_shape", "memref.transpose", "memref.view"}
_ACCESS = {"memref.load", "memref.store", "vector.transfer_read", "vector.transfer_write", "vector.load",
           "vector.store", "vector.maskedload", "vector.maskedstore", "memref.dim", "memref.copy",
           "linalg.fill", "memref.dealloc", "memref.extract_strided_metadata", "vector.gather",
           "vector.scatter", "memref.prefetch"}


def _stays_local(v: ir.Value, depth: int = 0) -> bool:
    """The buffer (or a view of it) is only read, written, viewed or freed."""
    if depth > 8:
        return False
    for use in v.uses:
        user = use.owner.operation
        name = user.name
        if name in _VIEWS:
            if not all(_stays_local(r, depth + 1) for r in user.results):
                return False
        elif name == "memref.store" and use.operand_number == 0:
            return False   # the buffer itself stored as a value (a memref of memrefs)
        elif name not in _ACCESS:
            return False
    return True


def _dealloc_of(alloc: ir.Operation) -> Optional[ir.Operation]:
    frees = [u.owner.operation for u in alloc.results[0].uses if u.owner.name == "memref.dealloc"]
    if len(frees) != 1 or frees[0].block != alloc.block:
        return None
    return frees[0]


def _target(loop: ir.Operation) -> Optional[ir.Operation]:
    """The op to place the pair around for a body of ``loop``: the ``omp.wsloop`` of an
    ``omp.loop_nest`` whose parent is a wsloop directly inside an ``omp.parallel``, the
    ``scf.for`` itself; None otherwise."""
    if loop.name == "scf.for":
        return loop
    if loop.name == "omp.loop_nest":
        ws = loop.parent
        if ws is not None and ws.name == "omp.wsloop" and ws.parent is not None and ws.parent.name == "omp.parallel":
            return ws
    return None


def _hoist_once(root: ir.Operation) -> int:
    moved = 0
    allocs: list[ir.Operation] = []

    def visit(op: ir.Operation):
        if op.name == "memref.alloc":
            allocs.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)   # nested ops, pre-order; root is no alloc
    for a in allocs:
        loop = a.parent
        if loop is None:
            continue
        target = _target(loop)
        if target is None or a.block != loop.regions[0].blocks[0]:
            continue
        if any(defined_inside(v, target) for v in a.operands):
            continue
        free = _dealloc_of(a)
        if free is None or not _stays_local(a.results[0]):
            continue
        a.move_before(target)
        free.move_after(target)
        moved += 1
    return moved


@register_pass("relax-hoist-scratch",
               "Move a loop body's alloc/dealloc pairs out of scf.for and OpenMP worksharing loops "
               "(per-thread buffers inside omp.parallel); run after deallocation, before the memref lowering.")
def relax_hoist_scratch(module: ir.Operation, opts) -> None:
    while _hoist_once(module):
        pass
