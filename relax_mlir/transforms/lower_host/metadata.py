"""The lowered module read back as the typed runtime contract (:mod:`relax_mlir.runtime.abi`).

:func:`host_metadata` collects each lowered function's signature, checks and workspace, and
the module's state buffers (``relax.state``, in the order the functions take them);
:func:`signature_plan` compiles its parameter patterns (and the values failure messages
show) into Python expressions over the actual dims, through the one dimension-expression
interpreter (:class:`relax_mlir.shapes.emit.PythonEmitter`), so calling needs no sympy.
"""

from __future__ import annotations

from mlir import ir

from ...ops.state import capacity_bound, module_bounds, module_states
from ...runtime.abi import (ArgCheck, Binding, Check, ExecutableMetadata, FunctionSig, SignaturePlan, StateSpec,
                            TensorSpec)
from ...shapes import Dim, Shape, ShapeSyntaxError, Truth, parse_dim, prove_le, read_tensor_type, symbol
from ...shapes.emit import python_expr
from ...shapes.match import match_shapes
from ..graph import func_name, top_ops
from ..lift_params import lifted_records
from .common import CHECKS_ATTR, DETAIL_SLOTS_ATTR, DETAIL_SYMBOLS_ATTR, GRAPH_TYPE_ATTR, LOWERED_ATTR, WORKSPACE_ATTR


def _attr_json(a: ir.Attribute):
    if isinstance(a, ir.BoolAttr):
        return a.value
    if isinstance(a, ir.IntegerAttr):
        return a.value
    if isinstance(a, ir.StringAttr):
        return a.value
    if isinstance(a, ir.ArrayAttr):
        return [_attr_json(x) for x in a]
    if isinstance(a, ir.DictAttr):
        return {a[k].name: _attr_json(a[k].attr) for k in range(len(a))}
    return str(a)


def _spec(t: ir.Type) -> TensorSpec:
    s = read_tensor_type(t)
    return TensorSpec(tuple(str(d) for d in s.shape), s.dtype)


def host_metadata(module, target: str = "cpu") -> ExecutableMetadata:
    """The runtime's view of a module after relax-lower-host (typed; ``.to_json()`` for JSON)."""
    op = module.operation if hasattr(module, "operation") else module
    D = ir.IntegerAttr(op.attributes[DETAIL_SLOTS_ATTR]).value if DETAIL_SLOTS_ATTR in op.attributes else 0
    functions = {}
    for f in top_ops(op):
        if f.name != "func.func" or LOWERED_ATTR not in f.attributes:
            continue
        gt = ir.FunctionType(ir.TypeAttr(f.attributes[GRAPH_TYPE_ATTR]).value)
        params = tuple(_spec(t) for t in gt.inputs)
        syms = tuple(_attr_json(f.attributes[DETAIL_SYMBOLS_ATTR]))
        checks = tuple(Check.from_json(c) for c in _attr_json(f.attributes[CHECKS_ATTR]))
        ws = ir.IntegerAttr(f.attributes[WORKSPACE_ATTR]).value if WORKSPACE_ATTR in f.attributes else 0
        functions[func_name(f)] = FunctionSig(params, tuple(_spec(t) for t in gt.results), syms, checks,
                                              signature_plan(params, checks, syms), ws)
    bounds = module_bounds(op)
    states = tuple(StateSpec(n, tuple(str(d) for d in s.shape), s.dtype, capacity_bound(s, bounds))
                   for n, s in module_states(op).items())
    lifted = {f: r for f, r in lifted_records(op).items() if f in functions and r["transform"] in functions}
    return ExecutableMetadata(D, functions, target, extra={"lifted": lifted} if lifted else {}, states=states)


def signature_plan(params: tuple[TensorSpec, ...], checks: tuple[Check, ...] = (),
                   detail_symbols: tuple[str, ...] = ()) -> SignaturePlan:
    """Parameter patterns and failure values as Python expressions (``a[i][j]``: dim j of
    argument i; ``v["n"]``: the value of symbol n reported by a failed check)."""
    shapes = [Shape([parse_dim(d) if d != "?" else "?" for d in p.shape]) for p in params]
    names: dict[str, str] = {}
    arg_of: dict[str, int] = {}
    readable: dict[str, str] = {}
    placeholders = []
    for k, s in enumerate(shapes):
        dims = []
        for j in range(s.rank):
            ph = f"?a{k}_{j}"
            names[ph], arg_of[ph], readable[ph] = f"a[{k}][{j}]", k, f"argument #{k} dim {j}"
            dims.append(Dim(symbol(ph)))
        placeholders.append(Shape(dims))
    syms = set().union(*(s.symbols for s in shapes)) if shapes else set()
    known = [k for k, s in enumerate(shapes) if not s.has_unknown]
    m = match_shapes([shapes[k] for k in known], [placeholders[k] for k in known], syms,
                     names=[f"argument #{k}" for k in known])
    plain = {f"argument #{k} dim {j}" for k in known for j in range(shapes[k].rank)}
    bindings, out_checks = [], []
    for s, d in m.bindings.items():
        args = tuple(sorted({arg_of[x] for x in d.symbols}))
        bindings.append(Binding(s, python_expr(d, names), args))
        if prove_le(0, d) is not Truth.TRUE:
            out_checks.append(ArgCheck(max(args), "0", python_expr(d, names), "le", f"{s} >= 0"))
    for lhs, rhs, where in m.checks:
        k = next((k for k in known if where.startswith(f"argument #{k} dim ")), known[0] if known else 0)
        detail = ""
        if where not in plain:
            detail = where
            for ph, text in readable.items():
                detail = detail.replace(ph, text)
        out_checks.append(ArgCheck(k, python_expr(lhs, names), python_expr(rhs, names), "eq", detail))
    out_checks.sort(key=lambda c: c.arg)
    failure_values = {}
    allowed = set(detail_symbols)
    for c in checks:
        texts = [c.lhs, c.rhs] if c.kind == "assert" else [c.expr] if c.expr else []
        try:
            dims = [parse_dim(t) for t in texts]
        except ShapeSyntaxError:
            continue  # an expression over actual dims: no value to show
        if dims and all(d.symbols <= allowed for d in dims):
            vn = {x: f"v[{x!r}]" for d in dims for x in d.symbols}
            failure_values[c.id] = tuple(python_expr(d, vn) for d in dims)
    return SignaturePlan(tuple(str(s) for s in shapes), tuple(tuple(sorted(s.symbols)) for s in shapes),
                         tuple(bindings), tuple(out_checks), failure_values)
