"""relax-gpu-register-accumulators: a reduction loop keeps its accumulator in a register.

``convert-linalg-to-parallel-loops`` lowers a matmul or a row reduction to
``scf.for %k { %c = load C[i, j]; ...; store %s, C[i, j] }``: one load and one store of
the output per step. A GPU compiler cannot drop them (the buffer may alias the inputs as
far as it knows), so this pass does what the aliasing rules of relax allow (an output is
never an input): when a ``scf.for`` body loads and later stores the same element of a
buffer at loop-invariant indices, and touches that buffer nowhere else, the element is
loaded once before the loop, carried as an ``iter_arg`` and stored once after it. Run on
bufferized kernels after ``convert-linalg-to-parallel-loops``.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import memref, scf

from ..registry import register_pass
from .flatten_launches import _defined_outside

KERNEL_ATTR = "relax.kernel"


def _candidate(loop: ir.Operation) -> Optional[tuple[ir.Operation, ir.Operation]]:
    """(load, store) of one accumulator of ``loop``, if any."""
    body = loop.regions[0].blocks[0]
    ops = [o.operation for o in body.operations]
    for k, ld in enumerate(ops):
        if ld.name != "memref.load":
            continue
        m, idx = ld.operands[0], list(ld.operands[1:])
        if not all(_defined_outside(v, loop) for v in [m] + idx):
            continue
        stores = [s for s in ops[k + 1:] if s.name == "memref.store" and s.operands[1] == m
                  and list(s.operands[2:]) == idx]
        if len(stores) != 1:
            continue
        others = []

        def uses(op):
            o = op.operation
            if o != ld and o != stores[0] and any(v == m for v in o.operands):
                others.append(o)
            return ir.WalkResult.ADVANCE

        loop.walk(uses)
        if not others:
            return ld, stores[0]
    return None


def _promote(loop: ir.Operation, ld: ir.Operation, st: ir.Operation) -> ir.Operation:
    old = loop.opview
    m, idx = ld.operands[0], list(ld.operands[1:])
    ip = ir.InsertionPoint(loop)
    init = memref.LoadOp(m, idx, ip=ip, loc=ld.location).result
    inits = list(old.initArgs) + [init]
    new = scf.ForOp(old.lowerBound, old.upperBound, old.step, inits, ip=ip, loc=loop.location)
    old_body, new_body = old.body, new.body
    for a, b in zip(old_body.arguments, list(new_body.arguments)[:len(old_body.arguments)]):
        a.replace_all_uses_with(b)
    acc = new_body.arguments[len(old_body.arguments)]
    value = st.operands[0]
    ld.results[0].replace_all_uses_with(acc)
    ld.erase()
    st.erase()
    old_yield = old_body.operations[len(old_body.operations) - 1].operation
    prev = None
    for op in list(old_body.operations)[:-1]:
        o = op.operation
        if prev is None:
            o.detach_from_parent()
            ir.InsertionPoint(new_body).insert(o)
        else:
            o.move_after(prev)
        prev = o
    scf.YieldOp(list(old_yield.operands) + [value], ip=ir.InsertionPoint(new_body))
    for r_old, r_new in zip(loop.results, list(new.results)[:len(loop.results)]):
        r_old.replace_all_uses_with(r_new)
    memref.StoreOp(new.results[len(new.results) - 1], m, idx, ip=ir.InsertionPoint.after(new.operation),
                   loc=loop.location)
    loop.erase()
    return new.operation


@register_pass("relax-gpu-register-accumulators",
               "Kernels: an output element loaded and stored at loop-invariant indices in every "
               "step of an scf.for is carried in a register (iter_arg) instead.")
def relax_gpu_register_accumulators(module: ir.Operation, opts) -> None:
    loops: list[ir.Operation] = []
    for f in module.regions[0].blocks[0].operations:
        f = f.operation
        if f.name != "func.func" or KERNEL_ATTR not in f.attributes:
            continue
        f.walk(lambda op: (loops.append(op.operation) if op.operation.name == "scf.for" else None)
               or ir.WalkResult.ADVANCE)
    for loop in loops:   # post-order: inner loops first
        while True:
            c = _candidate(loop)
            if c is None:
                break
            loop = _promote(loop, *c)
