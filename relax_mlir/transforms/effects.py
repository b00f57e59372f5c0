"""Which graph-level ops have effects, for relax-dce and relax-cse.

The relax ops are declared in IRDL, which carries no side-effect information, so
upstream ``canonicalize``/``cse`` must treat every one of them as having unknown
effects and never remove or merge one. This module says what the relax layer knows:

* pure (removable when unused, mergeable when equal): every relax op except those
  below: the tensor ops, ``shape_of``, ``call_tir`` of a pure kernel,
  ``call_dps_library`` (TVM's ``call_dps_packed`` contract: outputs are fresh results,
  nothing else is touched) and ``call`` of a pure graph function;
* effects: ``assert``, ``check_indices`` and ``match_cast`` (they can raise at run time; a match_cast also
  binds symbols), ``state_read``/``state_write`` (session state: they keep their order),
  ``alloc_storage``/``alloc_tensor`` and any op with ``dests`` (memory
  planned by relax-plan-memory: the call writes into storage another op may reuse),
  ``call_tir`` of a kernel that is not pure, ``call`` of a graph function with an
  effect (or a recursive one), and every op that is not a relax op.

A kernel is pure when it is a defined function whose ops all work on values (tensors,
scalars, vectors), in the structured dialects (linalg, tensor, arith, math, scf, affine,
index, complex, vector): no memref operand or result (a write or read of memory), no
call, nothing unknown.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from .graph import CALL_OPS, body_ops, functions_by_name, is_graph_function

#: relax ops that are never removed nor merged.
EFFECT_OPS = {"relax.assert", "relax.check_indices", "relax.match_cast", "relax.alloc_storage", "relax.alloc_tensor",
              "relax.state_read", "relax.state_write"}
#: Dialects whose ops, on values only, have no effect inside a kernel.
_PURE_DIALECTS = ("linalg.", "tensor.", "arith.", "math.", "scf.", "affine.", "index.", "complex.",
                  "vector.")
_PURE_KERNEL_OPS = {"func.return", "bufferization.alloc_tensor"}


def _walk(op: ir.Operation):
    for r in op.regions:
        for b in r.blocks:
            for o in b.operations:
                o = o.operation
                yield o
                yield from _walk(o)


def _touches_memory(op: ir.Operation) -> bool:
    return any(isinstance(v.type, (ir.MemRefType, ir.UnrankedMemRefType)) for v in list(op.operands) + list(op.results))


def kernel_is_pure(fn: ir.Operation) -> bool:
    """A loop-level kernel computes its results from its arguments and nothing else."""
    if not fn.regions or not fn.regions[0].blocks:
        return False  # a declaration: unknown body
    for o in _walk(fn):
        if not (o.name in _PURE_KERNEL_OPS or o.name.startswith(_PURE_DIALECTS)) or _touches_memory(o):
            return False
    return True


class Effects:
    """Purity of the ops of one module (kernels and graph functions are looked at once)."""

    def __init__(self, module: ir.Operation):
        self.functions = functions_by_name(module)
        self._kernels: dict[str, bool] = {}
        self._graphs: dict[str, Optional[bool]] = {}   # None: being looked at (recursion)

    def _kernel_pure(self, name: str) -> bool:
        if name not in self._kernels:
            fn = self.functions.get(name)
            self._kernels[name] = fn is not None and not is_graph_function(fn) and kernel_is_pure(fn)
        return self._kernels[name]

    def _graph_pure(self, name: str) -> bool:
        if name in self._graphs:
            return bool(self._graphs[name])   # a recursive call counts as an effect
        fn = self.functions.get(name)
        if fn is None or not is_graph_function(fn):
            return False
        self._graphs[name] = None
        pure = all(o.name == "func.return" or self.is_pure(o) for o in body_ops(fn))
        self._graphs[name] = pure
        return pure

    def is_pure(self, op: ir.Operation) -> bool:
        """``op`` (a graph-level op) may be removed when unused and merged with its equal."""
        name = op.name
        if not name.startswith("relax.") or name in EFFECT_OPS or "dests" in op.attributes:
            return False
        if op.regions and any(r.blocks for r in op.regions):
            return False
        if name in ("relax.call_tir",) + CALL_OPS:
            callee = op.attributes["callee"]
            if not isinstance(callee, ir.FlatSymbolRefAttr):
                return False
            return self._kernel_pure(callee.value) if name == "relax.call_tir" else self._graph_pure(callee.value)
        return True
