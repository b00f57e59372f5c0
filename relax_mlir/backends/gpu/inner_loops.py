"""relax-gpu-sequential-inner-loops: a parallel loop nested in another runs in one thread;
the outer one lists its innermost dimension first.

``convert-linalg-to-parallel-loops`` turns a linalg op whose reduction dimension sits
between parallel ones (``sum`` over axis 1 of ``(a, n, 4)``) into
``scf.parallel (a) { scf.for (n) { scf.parallel (4) {...} } }``. Only the outermost
parallel loop maps to workgroups and threads; ``convert-parallel-loops-to-gpu`` cannot
map a parallel loop under a sequential one. This pass rewrites every ``scf.parallel``
(without reductions) that has an ``scf.parallel`` ancestor into nested ``scf.for``
loops, inside the thread that runs its parent.

It also reverses the dimensions of every outermost ``scf.parallel``: tiling tiles the
first dimension by the workgroup size and ``gpu-map-parallel-loops`` maps it to thread
x, so the last (contiguous) dimension of the output should come first: neighbouring
threads then touch neighbouring elements, and a row-vector result (``n = 1``) still
fills its workgroups. Run after ``convert-linalg-to-parallel-loops``, before
``scf-parallel-loop-tiling``.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import scf

from ...transforms.registry import emit_error, register_pass


def _nested(op: ir.Operation) -> bool:
    p = op.parent
    while p is not None:
        if p.name == "scf.parallel":
            return True
        if p.name in ("func.func", "gpu.launch"):
            return False
        p = p.parent
    return False


def _to_fors(par: ir.Operation) -> None:
    n = len(par.regions[0].blocks[0].arguments)
    lbs, ubs, steps = list(par.operands[:n]), list(par.operands[n:2 * n]), list(par.operands[2 * n:3 * n])
    body = par.regions[0].blocks[0]
    ip = ir.InsertionPoint(par)
    ivs = []
    for lb, ub, st in zip(lbs, ubs, steps):
        loop = scf.ForOp(lb, ub, st, ip=ip, loc=par.location)
        ivs.append(loop.induction_variable)
        ip = ir.InsertionPoint(loop.body)
        scf.YieldOp([], ip=ip)
        ip = ir.InsertionPoint(loop.body.operations[0])   # before the yield
        inner_yield = loop.body.operations[0]
    for old, new in zip(body.arguments, ivs):
        old.replace_all_uses_with(new)
    for op in list(body.operations):
        if op.operation.name == "scf.reduce":
            continue
        op.operation.move_before(inner_yield)
    par.erase()


def _reverse(par: ir.Operation) -> None:
    body = par.regions[0].blocks[0]
    n = len(body.arguments)
    if n < 2:
        return
    lbs, ubs, steps = list(par.operands[:n]), list(par.operands[n:2 * n]), list(par.operands[2 * n:3 * n])
    new = scf.ParallelOp([], lbs[::-1], ubs[::-1], steps[::-1], [], ip=ir.InsertionPoint(par), loc=par.location)
    block = new.regions[0].blocks.append(*([ir.IndexType.get()] * n))
    for k, old in enumerate(body.arguments):
        old.replace_all_uses_with(block.arguments[n - 1 - k])
    prev = None
    for op in list(body.operations):   # the (empty) scf.reduce terminator moves too
        o = op.operation
        if prev is None:
            o.detach_from_parent()
            ir.InsertionPoint(block).insert(o)
        else:
            o.move_after(prev)
        prev = o
    par.erase()


@register_pass("relax-gpu-sequential-inner-loops",
               "GPU kernels: an scf.parallel nested in another scf.parallel becomes nested scf.for "
               "(only the outermost maps to workgroups and threads).")
def relax_gpu_sequential_inner_loops(module: ir.Operation, opts) -> None:
    found: list[ir.Operation] = []

    def visit(op):
        o = op.operation
        if o.name == "scf.parallel" and _nested(o):
            found.append(o)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for o in reversed(found):   # innermost first
        if len(o.results):
            emit_error(o, "a nested scf.parallel with reductions is not supported in a GPU kernel")
            return
        _to_fors(o)
    outer: list[ir.Operation] = []

    def top(op):
        o = op.operation
        if o.name == "scf.parallel":
            outer.append(o)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.walk(top, ir.WalkOrder.PRE_ORDER)
    for o in outer:
        if not len(o.results):
            _reverse(o)
