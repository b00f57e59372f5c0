"""relax-cse: one op for each set of equal pure graph-level ops (``exp(x) + exp(x)``
computes ``exp`` once).

Two ops are equal when they have the same name, the same operands (the same SSA values,
in order), the same attributes and the same result types (symbolic shapes included).
The later op's results are replaced by the earlier op's and the later op is erased.
Only pure ops take part (:mod:`.effects`): a ``match_cast`` or ``assert`` stays where it
is, a ``call_tir`` of a pure kernel merges with its twin. Graph function bodies are one
block, so the earlier op always dominates the later one. Upstream ``cse`` cannot do it:
IRDL ops carry no side-effect information.
"""

from __future__ import annotations

from mlir import ir

from .effects import Effects
from .graph import body_ops, graph_functions
from .registry import register_pass


def _key(op: ir.Operation) -> tuple:
    attrs = tuple(sorted((name, str(op.attributes[name])) for name in op.attributes))
    return (op.name, tuple(op.operands), attrs, tuple(str(r.type) for r in op.results))


def eliminate_common_ops(f: ir.Operation, effects: Effects) -> int:
    """Merge equal pure ops of graph function ``f``; returns how many were erased."""
    seen: dict[tuple, ir.Operation] = {}
    n = 0
    for op in body_ops(f):
        if op.name == "func.return" or not op.results or not effects.is_pure(op):
            continue
        key = _key(op)
        first = seen.get(key)
        if first is None:
            seen[key] = op
            continue
        for old, rep in zip(op.results, first.results):
            old.replace_all_uses_with(rep)
        op.erase()
        n += 1
    return n


@register_pass("relax-cse",
               "Merge equal pure graph-level ops (same op, operands, attributes, result types).")
def relax_cse(module: ir.Operation, opts) -> None:
    effects = Effects(module)
    for f in graph_functions(module):
        eliminate_common_ops(f, effects)
