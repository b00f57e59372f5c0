"""relax-gpu-sequential-inner-loops: the parallel dims of a loop nest map to threads, its
reductions run serially inside each thread; the outer loop lists its innermost dimension
first.

``convert-linalg-to-parallel-loops`` turns a linalg op whose reduction dimension sits
between parallel ones (``sum`` over axis 1 of ``(a, n, b)``) into
``scf.parallel (a) { scf.for (n) { scf.parallel (b) {...} } }``. Only the outermost
parallel loop maps to workgroups and threads (``convert-parallel-loops-to-gpu`` cannot
map a parallel loop under a sequential one), so such a nest is first *interchanged*: when
the loops between the two parallel ones are ``scf.for`` loops without results, each the
only op of its parent's body (a perfect nest) and the inner loop's bounds are defined
outside the outer one, the inner parallel dims join the outer loop:
``scf.parallel (a, b) { scf.for (n) {...} }``: a thread per output element, each
reducing its own n serially. That is exact for the nests linalg lowering makes (every
output element is written only by the iterations of its own parallel indices, in the same
order of n as before). Before, one thread looped over every n and b of its a: with a = 1
a single thread did the whole reduction (slow everywhere, and wrong on lavapipe from
65,535 loop iterations per invocation: Mesa's gallivm ends every loop of a shader
invocation after that many iterations in all, ``LP_MAX_TGSI_LOOP_ITERATIONS``).
A nested ``scf.parallel`` (without reductions) that cannot join its ancestor becomes
nested ``scf.for`` loops, inside the thread that runs its parent.

It also reverses the dimensions of every outermost ``scf.parallel``: tiling tiles the
first dimension by the workgroup size and ``gpu-map-parallel-loops`` maps it to thread
x, so the last (contiguous) dimension of the output should come first: neighbouring
threads then touch neighbouring elements, and a row-vector result (``n = 1``) still
fills its workgroups. Run after ``convert-linalg-to-parallel-loops``, before
``scf-parallel-loop-tiling``.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import scf

from ...transforms.registry import emit_error, register_pass
from .flatten_launches import _defined_outside


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


def _bounds(par: ir.Operation) -> tuple[list, list, list]:
    n = len(par.regions[0].blocks[0].arguments)
    return list(par.operands[:n]), list(par.operands[n:2 * n]), list(par.operands[2 * n:3 * n])


def _only_op(op: ir.Operation) -> Optional[ir.Operation]:
    """The one op of ``op``'s body besides its terminator, else None."""
    ops = [o.operation for o in op.regions[0].blocks[0].operations]
    return ops[0] if len(ops) == 2 else None


def _perfect_inner(par: ir.Operation) -> Optional[ir.Operation]:
    """The scf.parallel that ``par`` perfectly nests through scf.for loops without results
    (each loop the only op of its parent), with bounds defined outside ``par``; else None."""
    cur = _only_op(par)
    while cur is not None and cur.name == "scf.for" and not len(cur.results):
        cur = _only_op(cur)
    if cur is None or cur.name != "scf.parallel" or len(cur.results):
        return None
    return cur if all(_defined_outside(v, par) for v in cur.operands) else None


def _join(par: ir.Operation, inner: ir.Operation) -> ir.Operation:
    """``scf.parallel (P) { for... { scf.parallel (Q) { body } } }`` ->
    ``scf.parallel (P, Q) { for... { body } }``."""
    (lp, up, sp), (lq, uq, sq) = _bounds(par), _bounds(inner)
    new = scf.ParallelOp([], lp + lq, up + uq, sp + sq, [], ip=ir.InsertionPoint(par), loc=par.location)
    block = new.regions[0].blocks.append(*([ir.IndexType.get()] * (len(lp) + len(lq))))
    outer_body, inner_body = par.regions[0].blocks[0], inner.regions[0].blocks[0]
    for k, old in enumerate(list(outer_body.arguments) + list(inner_body.arguments)):
        old.replace_all_uses_with(block.arguments[k])
    for o in list(inner_body.operations)[:-1]:   # the body, before the inner loop (its reduce stays)
        o.operation.move_before(inner)
    inner.erase()
    move_ops(list(outer_body.operations), block)    # the loop chain (or the body), then the reduce
    par.erase()
    return new.operation


def move_ops(ops: list, dst: ir.Block) -> None:
    """``ops`` (of one block), in order, to the start of the empty block ``dst``."""
    prev = None
    for op in ops:
        o = op.operation
        if prev is None:
            o.detach_from_parent()
            ir.InsertionPoint(dst).insert(o)
        else:
            o.move_after(prev)
        prev = o


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
    move_ops(list(body.operations), block)   # the (empty) scf.reduce terminator moves too
    par.erase()


@register_pass("relax-gpu-sequential-inner-loops",
               "GPU kernels: an scf.parallel perfectly nested in another through scf.for loops joins the "
               "outer one (a thread per output element, reductions serial in it); any other nested "
               "scf.parallel becomes nested scf.for (only the outermost maps to workgroups and threads).")
def relax_gpu_sequential_inner_loops(module: ir.Operation, opts) -> None:
    tops: list[ir.Operation] = []

    def outermost(op):
        if op.operation.name == "scf.parallel":
            tops.append(op.operation)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.walk(outermost, ir.WalkOrder.PRE_ORDER)
    for o in tops:
        while not len(o.results):   # a joined loop may nest another (p, r, p, r, p)
            inner = _perfect_inner(o)
            if inner is None:
                break
            o = _join(o, inner)
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
