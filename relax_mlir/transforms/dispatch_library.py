"""relax-dispatch-library: offload graph-level subgraphs to a library (BLAS) before legalization.

Each chain of relax ops matching a pattern of :mod:`.dispatch_patterns` (by default
``relax.matmul`` and ``relax.matmul`` + bias ``relax.add`` on f32/f64, 2-D, batched 3-D
with equal or broadcast batch, 3-D x 2-D, 2-D x 3-D) becomes one
``relax.call_dps_library`` of the pattern's symbol with the chain's result type::

    %0 = relax.matmul(%x, %w) ; %1 = relax.add(%0, %b)
      ->  %1 = "relax.call_dps_library"(%x, %w, %b) {callee = "relax_blas_matmul_bias_22_f32"}

and the module records the runtime library defining it in ``relax.libraries``
(:func:`relax_mlir.compile` links it). An epilogue after the chain (relu, silu...)
stays a relax op, legalized into a generated kernel as usual.

Policy (``min-flops``, default 4096): the work estimate (batch*M*N*K) of a match is a
symbolic expression. Static: dispatch when it is >= min-flops. Symbolic: substitute the
function's ``relax.upper_bounds``; when every symbol is bounded and the bound is below
min-flops the op stays generated code, otherwise it is dispatched and the size is
decided at run time inside the library (the relax_blas shim uses gemv for M == 1 or
N == 1 and a plain loop below ``RELAX_BLAS_SMALL_FLOPS``), so one executable serves
every size. ``min-flops=0`` dispatches every match. Run after relax-infer-shapes.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ..dialects._core import create
from ..ops.registry import RelaxError, read_attrs
from ..runtime.libraries import request
from ..shapes import Dim, is_tensor, read_tensor_type
from .dispatch_patterns import DispatchPattern, Match, ordered_patterns
from .graph import body_ops, graph_functions, relax_opdef, upper_bounds
from .registry import Option, register_pass


def _single_user(op: ir.Operation) -> Optional[ir.Operation]:
    if len(op.results) != 1:
        return None
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    owner = uses[0].owner
    owner = owner.operation if hasattr(owner, "operation") else owner
    return owner if owner.parent == op.parent else None


def match_chain(root: ir.Operation, p: DispatchPattern) -> Optional[Match]:
    """``p`` at ``root``: the chain of ops, the call inputs and their signatures, or None."""
    if root.name != "relax." + p.ops[0]:
        return None
    ops = [root]
    values = list(root.operands)
    for name in p.ops[1:]:
        nxt = _single_user(ops[-1])
        if nxt is None or nxt.name != "relax." + name:
            return None
        chained = ops[-1].results[0]
        others = [v for v in nxt.operands if v != chained]
        if len(others) != len(nxt.operands) - 1:   # the chained value used twice
            return None
        values += others
        ops.append(nxt)
    if len(ops[-1].results) != 1 or not all(is_tensor(v.type) for v in values):
        return None
    try:
        attrs = [read_attrs(relax_opdef(o), o) for o in ops]
        m = Match(ops, values, [read_tensor_type(v.type) for v in values],
                  read_tensor_type(ops[-1].results[0].type), attrs)
    except (RelaxError, ValueError):
        return None
    return m if p.predicate(m) else None


def worth_it(flops: Optional[Dim], bounds: dict[str, int], min_flops: int) -> bool:
    """The ``min-flops`` policy (see the module docstring)."""
    if flops is None or min_flops <= 0:
        return True
    if flops.is_static:
        return flops.value >= min_flops
    if not flops.symbols <= set(bounds):
        return True                     # unbounded: decided at run time by the library
    return flops.evaluate(bounds) >= min_flops


@register_pass("relax-dispatch-library",
               "Offload matched graph-level subgraphs (matmul, matmul + bias) to library "
               "calls (relax.call_dps_library) by a user-extensible pattern table.",
               options=[Option("min-flops", int, 4096,
                               "dispatch when batch*M*N*K (static, or at the upper bounds) is at "
                               "least this; symbolic unbounded sizes are decided at run time"),
                        Option("patterns", str, "",
                               "comma-separated pattern names to use (default: all registered)")])
def dispatch_library(module: ir.Operation, opts) -> None:
    only = {s.strip() for s in opts.patterns.split(",") if s.strip()}
    patterns = [p for p in ordered_patterns() if not only or p.name in only]
    for f in graph_functions(module):
        bounds = upper_bounds(f)
        ops = body_ops(f)
        dead: set[int] = set()
        for i, op in enumerate(ops):
            if i in dead or not op.name.startswith("relax."):
                continue
            for p in patterns:
                m = match_chain(op, p)
                if m is None:
                    continue
                if not worth_it(p.flops(m) if p.flops else None, bounds, opts.min_flops):
                    break
                last = m.ops[-1]
                call = create("call_dps_library", m.values, [last.results[0].type],
                              {"callee": ir.StringAttr.get(p.symbol_for(m))},
                              loc=last.location, ip=ir.InsertionPoint(last))
                last.results[0].replace_all_uses_with(call.results[0])
                dead |= {j for j in range(i, len(ops)) if any(ops[j] == o for o in m.ops)}
                for o in reversed(m.ops):
                    o.erase()
                request(module, p.library)
                break
