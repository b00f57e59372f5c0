"""relax-widen-bool-memrefs: store booleans as bytes (``memref<...xi1>`` -> ``memref<...xi8>``).

MLIR 22's ``finalize-memref-to-llvm`` refuses loads and stores of sub-byte integers.
Such memrefs appear in ``bufferization-lower-deallocations``' ``dealloc_helper`` and in
kernels on boolean tensors. Run after loops are explicit (memref.load / memref.store);
each store gets an ``arith.extui``, each load an ``arith.trunci``. A byte per boolean is
also numpy's layout, so boolean tensors cross function boundaries unchanged.
"""

from __future__ import annotations

from mlir import ir

from .registry import register_pass
from .retype import nested_ops, retype_results, retype_signature


def _is_bool_memref(t: ir.Type) -> bool:
    return isinstance(t, ir.MemRefType) and str(t.element_type) == "i1"


def _widen(t: ir.Type) -> ir.Type:
    if not _is_bool_memref(t):
        return t
    m = ir.MemRefType(t)
    return ir.MemRefType.get(list(m.shape), ir.IntegerType.get_signless(8), m.layout, m.memory_space)


@register_pass("relax-widen-bool-memrefs",
               "Store booleans as bytes: memref of i1 becomes memref of i8 (loads truncate, stores extend).")
def widen_bool_memrefs(module: ir.Operation, opts) -> None:
    ops = nested_ops(module)
    i1, i8 = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(8)
    for op in ops:
        if op.name == "func.func":
            retype_signature(op, _widen)
        elif op.name == "memref.store" and str(op.operands[0].type) == "i1":
            ext = ir.Operation.create("arith.extui", results=[i8], operands=[op.operands[0]],
                                      ip=ir.InsertionPoint(op), loc=op.location)
            op.operands[0] = ext.result
        elif op.name == "memref.load" and str(op.results[0].type) == "i1":
            r = op.results[0]
            r.set_type(i8)
            tr = ir.Operation.create("arith.trunci", results=[i1], operands=[r],
                                     ip=ir.InsertionPoint(op), loc=op.location)
            tr.move_after(op)
            r.replace_all_uses_except(tr.result, tr)
    for op in ops:
        if op.name in ("memref.load", "memref.store"):
            continue
        retype_results(op, _widen)
