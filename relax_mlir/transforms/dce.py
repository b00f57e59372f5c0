"""relax-dce: remove graph-level ops whose results nobody uses and that have no effect.

Upstream ``canonicalize`` cannot do this: the relax ops come from IRDL, without
side-effect information, so MLIR must assume each one has unknown effects. Purity is
decided by :mod:`.effects` (``assert`` and ``match_cast`` stay: they can raise; a
``call_tir`` goes when its kernel is pure). The body of each graph function is walked
backwards, so a whole dead chain goes in one run. Kernels (``relax.kernel``, private)
that only the removed ops called are erased too.

Run it after relax-infer-shapes: the run-time checks a dead op needs are then already
separate ``relax.assert`` ops, which stay (a program that would fail its checks still
fails).
"""

from __future__ import annotations

from mlir import ir

from ..ops.kernels import KERNEL_ATTR
from .effects import Effects
from .graph import body_ops, functions_by_name, graph_functions, top_ops
from .registry import register_pass


def _symbol_uses(module: ir.Operation) -> set[str]:
    """Every flat symbol referenced by an op attribute below the module's functions."""
    out: set[str] = set()

    def walk(op: ir.Operation):
        for name in op.attributes:
            attr = op.attributes[name]
            if isinstance(attr, ir.FlatSymbolRefAttr):
                out.add(attr.value)
        for r in op.regions:
            for b in r.blocks:
                for x in b.operations:
                    walk(x.operation)

    for top in top_ops(module):
        for r in top.regions:
            for b in r.blocks:
                for x in b.operations:
                    walk(x.operation)
    return out


def eliminate_dead_ops(f: ir.Operation, effects: Effects) -> list[str]:
    """Erase the dead pure ops of graph function ``f``; returns the callees they named."""
    callees: list[str] = []
    for op in reversed(body_ops(f)):
        if op.name == "func.return" or not effects.is_pure(op):
            continue
        if any(True for r in op.results for _ in r.uses):
            continue
        if "callee" in op.attributes and isinstance(op.attributes["callee"], ir.FlatSymbolRefAttr):
            callees.append(op.attributes["callee"].value)
        op.erase()
    return callees


@register_pass("relax-dce",
               "Remove unused graph-level ops without effects (assert and match_cast stay) and the "
               "kernels only they called.")
def relax_dce(module: ir.Operation, opts) -> None:
    effects = Effects(module)
    callees: set[str] = set()
    for f in graph_functions(module):
        callees.update(eliminate_dead_ops(f, effects))
    if not callees:
        return
    used = _symbol_uses(module)
    functions = functions_by_name(module)
    for name in sorted(callees - used):
        fn = functions.get(name)
        if fn is not None and KERNEL_ATTR in fn.attributes and "sym_visibility" in fn.attributes \
                and ir.StringAttr(fn.attributes["sym_visibility"]).value == "private":
            fn.erase()
