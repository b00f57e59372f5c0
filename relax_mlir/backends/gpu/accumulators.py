"""relax-gpu-register-accumulators: a reduction loop keeps its accumulator in a register.

``convert-linalg-to-parallel-loops`` lowers a matmul or a row reduction to
``scf.for %k { %c = load C[i, j]; ...; store %s, C[i, j] }``: one load and one store of
the output per step. A GPU compiler cannot drop them (the buffer may alias the inputs as
far as it knows), so this pass does what the aliasing rules of relax allow (an output is
never an input): when a ``scf.for`` body loads and later stores the same element of a
buffer at loop-invariant indices, and touches that buffer nowhere else, the element is
loaded once before the loop, carried as an ``iter_arg`` and stored once after it, all
under ``lb < ub`` (a zero-trip loop touches nothing, as before). One accumulator per
loop. Run on bufferized kernels after ``convert-linalg-to-parallel-loops``.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, memref, scf

from ...transforms.registry import register_pass
from .launch_builder import KERNEL_ATTR
from .flatten_launches import _defined_outside
from .inner_loops import move_ops



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


def _promote(loop: ir.Operation, ld: ir.Operation, st: ir.Operation) -> None:
    """``if (lb < ub) { init = load; r = for ... iter_args(init); store r }``: the guard
    keeps a zero-trip loop from loading and storing, and from reading a loop result the
    SPIR-V lowering of ``scf.for`` only sets inside the body (0 when the loop never runs)."""
    old = loop.opview
    m, idx = ld.operands[0], list(ld.operands[1:])
    loc = loop.location
    lt = arith.CmpIOp(arith.CmpIPredicate.slt, old.lowerBound, old.upperBound, ip=ir.InsertionPoint(loop), loc=loc)
    guard = scf.IfOp(lt.result, [], has_else=False, ip=ir.InsertionPoint(loop), loc=loc)
    end = scf.YieldOp([], ip=ir.InsertionPoint(guard.then_block))
    ip = ir.InsertionPoint(end)
    init = memref.LoadOp(m, idx, ip=ip, loc=ld.location).result
    new = scf.ForOp(old.lowerBound, old.upperBound, old.step, [init], ip=ip, loc=loc)
    old_body, new_body = old.body, new.body
    old_body.arguments[0].replace_all_uses_with(new_body.arguments[0])
    acc = new_body.arguments[1]
    ld.results[0].replace_all_uses_with(acc)
    # read after the replacement: the stored value may be the load itself (a product of
    # ones: acc * 1.0 folded to acc), which is erased next
    value = st.operands[0]
    ld.erase()
    st.erase()
    move_ops(list(old_body.operations)[:-1], new_body)   # all but the (empty) yield
    scf.YieldOp([value], ip=ir.InsertionPoint(new_body))
    memref.StoreOp(new.results[0], m, idx, ip=ip, loc=loc)
    loop.erase()


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
        if len(loop.results):
            continue        # one accumulator per loop (results would be needed outside the guard)
        c = _candidate(loop)
        if c is not None:
            _promote(loop, *c)
