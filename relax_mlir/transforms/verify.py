"""relax-verify: shape encodings and symbol scoping of every graph function.

Checks, reporting each problem at its location:
* every tensor type in a graph function carries a well-formed ``#relax.shape``
  whose rank and static dims agree with the type;
* every symbol is bound before use: parameter shapes bind symbols (a dim that is
  a plain symbol, or linear in one symbol like ``2*k``), ``relax.match_cast``
  binds the new symbols of its pattern; any other use is an error;
* relax ops carry their declared attributes with the right kinds;
* ``relax.upper_bounds`` names bound symbols with positive integer bounds;
* ``relax.call`` targets a graph function, ``relax.call_tir`` a ``func.func``.
"""

from __future__ import annotations

from mlir import ir

from ..ops.registry import RelaxError, read_attrs
from ..shapes import ShapeSyntaxError, is_tensor, read_tensor_type
from ..shapes.match import match_shapes
from .graph import (bound_by_params, body_ops, entry_block, func_name, function_type, functions_by_name,
                    graph_functions, is_graph_function, relax_opdef)
from .registry import emit_error, register_pass
from ..dialects.relax import UPPER_BOUNDS_ATTR


def _sig(where_op, t: ir.Type, what: str):
    try:
        return read_tensor_type(t) if is_tensor(t) else None
    except ShapeSyntaxError as e:
        emit_error(where_op, f"{what}: {e}")
        return None


def verify_function(f: ir.Operation, funcs: dict[str, ir.Operation]) -> None:
    name = func_name(f)
    block = entry_block(f)
    sigs = []
    for i, arg in enumerate(block.arguments):
        sigs.append(_sig(f, arg.type, f"@{name} parameter #{i}"))
    bound, unbound = bound_by_params(sigs)
    if unbound:
        emit_error(f, f"@{name}: symbol(s) {', '.join(sorted(unbound))} in the parameter shapes are not bound: "
                      "a symbol must be a dim of a parameter or appear linearly in one (like 2*k)")
        bound |= unbound  # report once
    if UPPER_BOUNDS_ATTR in f.attributes:
        attr = f.attributes[UPPER_BOUNDS_ATTR]
        if not isinstance(attr, ir.DictAttr):
            emit_error(f, f"@{name}: {UPPER_BOUNDS_ATTR} must be a dictionary {{symbol = bound : i64}}")
        else:
            d = ir.DictAttr(attr)
            for i in range(len(d)):
                na = d[i]
                if not isinstance(na.attr, ir.IntegerAttr) or ir.IntegerAttr(na.attr).value <= 0:
                    emit_error(f, f"@{name}: upper bound of '{na.name}' must be a positive integer")
                if na.name not in bound:
                    emit_error(f, f"@{name}: upper bound names '{na.name}', which is not a symbol of its parameters")
    for op in body_ops(f):
        opdef = relax_opdef(op)
        new_syms: set[str] = set()
        if opdef is not None:
            try:
                attrs = read_attrs(opdef, op)
            except (RelaxError, ShapeSyntaxError) as e:
                emit_error(op, str(e))
                continue
            for a in opdef.attrs:
                v = attrs.get(a.name)
                if a.kind in ("shape", "dim") and v is not None:
                    syms = v.symbols
                    if opdef.name == "match_cast":
                        new_syms = set(syms - bound)
                        continue
                    free = sorted(syms - bound)
                    if free:
                        emit_error(op, f"'{op.name}' attribute '{a.name}' uses unbound symbol(s) {', '.join(free)}")
            if opdef.name in ("call", "call_tir"):
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                target = funcs.get(callee)
                if target is None:
                    emit_error(op, f"'{op.name}' callee @{callee} does not exist")
                elif opdef.name == "call" and not is_graph_function(target):
                    emit_error(op, f"'relax.call' callee @{callee} is not a graph function (add the relax.function attribute, or use call_tir)")
                elif opdef.name == "call_tir":
                    n_in = len(function_type(target).inputs)
                    tir_vars = read_attrs(opdef, op).get("tir_vars")
                    want = len(op.operands) + len(op.results) + (tir_vars.rank if tir_vars is not None else 0)
                    if n_in != want:
                        emit_error(op, f"'relax.call_tir' callee @{callee} takes {n_in} argument(s); "
                                       f"destination-passing style needs {want} ({len(op.operands)} inputs + {len(op.results)} outputs + tir_vars)")
        if new_syms:
            pattern = read_attrs(opdef, op)["shape"]
            m = match_shapes([pattern], [pattern], new_syms)
            if m.unresolved:
                emit_error(op, f"'relax.match_cast' cannot bind symbol(s) {', '.join(sorted(m.unresolved))}")
            bound |= new_syms
        for i, r in enumerate(op.results):
            s = _sig(op, r.type, f"'{op.name}' result #{i}")
            if s is not None:
                free = sorted(s.shape.symbols - bound)
                if free:
                    emit_error(op, f"'{op.name}' result #{i} type uses unbound symbol(s) {', '.join(free)}")


@register_pass("relax-verify", "Check shape encodings and symbol scoping of every graph function.")
def relax_verify(module: ir.Operation, opts) -> None:
    funcs = functions_by_name(module)
    for f in graph_functions(module):
        for i, t in enumerate(ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value).results):
            _sig(f, t, f"@{func_name(f)} result #{i}")
        verify_function(f, funcs)
