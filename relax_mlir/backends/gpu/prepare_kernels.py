"""relax-gpu-prepare-kernels: every memory access of a kernel inside a parallel loop.

On a GPU only parallel loops become device code (``convert-parallel-loops-to-gpu``);
whatever stays at the top level of a kernel runs on the host. A linalg op whose outputs
are all rank 0 (a full reduction, a scalar fill) or whose iterators are all reductions (a
full reduction with keepdims, into a ``1x1`` buffer) has no parallel loop, and a bare
``memref.copy`` / ``memref.load`` / ``memref.store`` none either: this pass turns
``memref.copy`` into ``linalg.copy`` (loops like any linalg op) and wraps each such op
into a one-iteration ``scf.parallel``, so it runs as a single-thread dispatch instead of
touching device memory from the host. Loads and stores of ``index`` buffers stay: they
are shapes the host computes (``memref.reshape`` operands), never device data. Run after bufferization, before
``convert-linalg-to-parallel-loops``.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, scf

from ...transforms.graph import functions_with
from ...transforms.registry import register_pass
from .launch_builder import KERNEL_ATTR



def _serial(op: ir.Operation) -> bool:
    """An op that touches memory but would produce no parallel loop."""
    if op.name in ("memref.load", "memref.store"):
        # index buffers hold shapes (tensor.from_elements for memref.reshape): host data
        m = op.operands[1] if op.name == "memref.store" else op.operands[0]
        return not isinstance(ir.MemRefType(m.type).element_type, ir.IndexType)
    if op.name.startswith("linalg."):
        # a generic whose iterators are all reductions (a full reduction with keepdims into
        # a 1x1 buffer) has no parallel loop either, whatever its outputs' rank
        if "iterator_types" in op.attributes:
            its = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
            if its and not any("parallel" in a for a in its):
                return True
        outs = [v for v in op.operands if isinstance(v.type, ir.MemRefType)]
        # destination operands are last; rank-0 outputs only => no parallel iterator
        try:
            n_out = len(op.opview.outputs)
        except AttributeError:
            n_out = 1
        dests = outs[len(outs) - n_out:] if n_out else []
        return bool(dests) and all(ir.MemRefType(v.type).rank == 0 for v in dests)
    return False


def _wrap(op: ir.Operation) -> None:
    if len(op.results) and any(True for r in op.results for _ in r.uses):
        raise ValueError(f"{op.name} at the top level of a kernel has results used later")
    ip = ir.InsertionPoint(op)
    idx = ir.IndexType.get()
    c0 = arith.ConstantOp(idx, 0, ip=ip, loc=op.location).result
    c1 = arith.ConstantOp(idx, 1, ip=ip, loc=op.location).result
    par = scf.ParallelOp([], [c0], [c1], [c1], [], ip=ip, loc=op.location)
    block = par.regions[0].blocks.append(idx)
    y = scf.ReduceOp([], 0, ip=ir.InsertionPoint(block))
    op.move_before(y.operation)


@register_pass("relax-gpu-prepare-kernels",
               "GPU kernels: memref.copy -> linalg.copy; ops with no parallel loop wrapped in a "
               "one-iteration scf.parallel (so nothing touches device memory from the host).")
def relax_gpu_prepare_kernels(module: ir.Operation, opts) -> None:
    for f in functions_with(module, KERNEL_ATTR):
        copies: list[ir.Operation] = []
        f.operation.walk(lambda op: (copies.append(op.operation) if op.operation.name == "memref.copy" else None)
                         or ir.WalkResult.ADVANCE)
        for op in copies:
            src, dst = op.operands
            with ir.InsertionPoint(op), op.location:   # the linalg builders ignore ip=
                linalg.copy(src, outs=[dst])
            op.erase()
        serial: list[ir.Operation] = []

        def visit(op):
            o = op.operation
            if o.name == "gpu.launch":
                return ir.WalkResult.SKIP   # already device code (relax-gpu-tile-matmul, relax-gpu-row-reductions)
            if o.name == "scf.parallel" or o.name.startswith("linalg."):
                if _serial(o):
                    serial.append(o)
                return ir.WalkResult.SKIP   # already parallel, or a body of scalar code
            if _serial(o):
                serial.append(o)
            return ir.WalkResult.ADVANCE

        f.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
        for op in serial:
            _wrap(op)
