"""relax-infer-shapes: forward symbolic shape deduction over every graph function.

Parameter shapes bind the symbols; each relax op's shape rule (declared with the
op) computes its result shapes, which are written back into the result types in
canonical form, and the function's result types follow. For every relation a
rule needs: provably false is an error at the op naming both expressions,
provably true is silent, unknown becomes a ``relax.assert`` placed before the op
(lowered later into a run-time check). Graph functions are processed callees
first so ``relax.call`` sees its callee's deduced signature.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ..dialects.relax import infer_result_sigs, refresh_segments
from ..ops.registry import RelaxError, Scope, python_to_attr, read_attrs
from ..shapes import UNKNOWN, Shape, ShapeSyntaxError, TensorSig, Truth, prove_equal, tensor_type
from .graph import (CALL_OPS, body_ops, bound_by_params, func_name, function_type, graph_functions,
                    param_sigs, relax_opdef, result_sigs, set_function_type, sig_or_none)
from .registry import emit_error, register_pass


def _call_order(funcs: list[ir.Operation]) -> tuple[list[ir.Operation], Optional[str]]:
    """Callees before callers; returns (order, name of a function on a cycle or None)."""
    by_name = {func_name(f): f for f in funcs}
    deps = {n: [ir.FlatSymbolRefAttr(o.attributes["callee"]).value
                for o in body_ops(f) if o.name in CALL_OPS] for n, f in by_name.items()}
    order, state = [], {}

    def visit(n: str) -> Optional[str]:
        if state.get(n) == 2:
            return None
        if state.get(n) == 1:
            return n
        state[n] = 1
        for d in deps.get(n, []):
            if d in by_name:
                cyc = visit(d)
                if cyc:
                    return cyc
        state[n] = 2
        order.append(by_name[n])
        return None

    for n in by_name:
        cyc = visit(n)
        if cyc:
            return [], cyc
    return order, None


def _merge(op: ir.Operation, i: int, declared: Optional[TensorSig], deduced: TensorSig) -> TensorSig:
    """Reconcile a result type the author wrote with the deduced one."""
    if declared is None:
        return deduced
    if declared.dtype != deduced.dtype:
        raise RelaxError(f"'{op.name}' result #{i} is declared {declared.dtype} but the op produces {deduced.dtype}")
    if declared.rank != deduced.rank:
        raise RelaxError(f"'{op.name}' result #{i} is declared with rank {declared.rank} "
                         f"but the deduced shape {deduced.shape} has rank {deduced.rank}")
    dims = []
    for j, (a, b) in enumerate(zip(declared.shape, deduced.shape)):
        if a is UNKNOWN:
            dims.append(b)
        elif b is UNKNOWN:
            raise RelaxError(f"'{op.name}' result #{i} dim {j} is declared {a} but cannot be deduced; "
                             "state it with relax.match_cast")
        else:
            t = prove_equal(a, b)
            if t is Truth.FALSE:
                raise RelaxError(f"'{op.name}' result #{i} dim {j} is declared {a} but deduced {b}")
            if t is Truth.UNKNOWN:
                raise RelaxError(f"'{op.name}' result #{i} dim {j} is declared {a} but deduced {b}, "
                                 "which is not provably equal; state it with relax.match_cast")
            dims.append(b)
    return TensorSig(Shape(dims), deduced.dtype)


def _assert_key(dims: Shape, predicate: str) -> tuple:
    return (str(dims[0]), str(dims[1]), predicate)


def infer_function(f: ir.Operation, signatures: dict[str, tuple]) -> bool:
    """Deduce every shape in ``f``; returns False when an error was reported."""
    ok = True
    bound, _ = bound_by_params(param_sigs(f))
    scope = Scope(bound, lookup=signatures.get)
    asserted: set[tuple] = set()
    for op in body_ops(f):
        opdef = relax_opdef(op)
        if op.name == "func.return":
            ft = function_type(f)
            try:
                for i, (t, v) in enumerate(zip(ft.results, op.operands)):
                    d, s = sig_or_none(t), sig_or_none(v.type)
                    if d is not None and s is not None:
                        _merge(op, i, d, s)
            except (RelaxError, ShapeSyntaxError) as e:
                emit_error(op, f"@{func_name(f)} {e}".replace("'func.return' ", ""))
                ok = False
                continue
            set_function_type(f, ft.inputs, [v.type for v in op.operands])
            continue
        if opdef is None:
            continue
        try:
            attrs = read_attrs(opdef, op)
            if opdef.name == "assert":
                asserted.add(_assert_key(attrs["dims"], attrs["predicate"]))
            declared = [sig_or_none(r.type) for r in op.results]
            sigs, call = infer_result_sigs(opdef, list(op.operands), attrs, operation=op,
                                           declared=declared, scope=scope)
            if len(sigs) != len(op.results):
                raise RelaxError(f"'{op.name}' has {len(op.results)} result(s) but its shape rule gives {len(sigs)}")
            merged = [_merge(op, i, d, s) for i, (d, s) in enumerate(zip(declared, sigs))]
        except (RelaxError, ShapeSyntaxError) as e:
            emit_error(op, str(e))
            ok = False
            continue
        for chk in call.checks:
            dims = Shape([chk.lhs, chk.rhs])
            key = _assert_key(dims, chk.predicate)
            if key in asserted:
                continue
            asserted.add(key)
            ir.Operation.create("relax.assert", results=[], operands=[], loc=op.location,
                                ip=ir.InsertionPoint(op),
                                attributes={"dims": dims.to_attr(), "message": python_to_attr("str", chk.message),
                                            "predicate": python_to_attr("str", chk.predicate)})
        for r, s in zip(op.results, merged):
            r.set_type(tensor_type(s.shape, s.dtype))
        refresh_segments(op)
    return ok


@register_pass("relax-infer-shapes",
               "Deduce symbolic shapes forward through every graph function; check or assert every relation.")
def relax_infer_shapes(module: ir.Operation, opts) -> None:
    funcs = graph_functions(module)
    order, cycle = _call_order(funcs)
    if cycle:
        f = next(g for g in funcs if func_name(g) == cycle)
        emit_error(f, f"@{cycle} is part of a recursive cycle of relax.call; shape deduction needs an acyclic call graph")
        return
    signatures: dict[str, tuple] = {}
    for f in order:
        if infer_function(f, signatures):
            signatures[func_name(f)] = (param_sigs(f), result_sigs(f))
