"""relax-verify: what the op table and the symbolic-shape rules demand of a module.

Checks, reporting each problem at its location:
* every tensor type in a graph function carries a well-formed ``#relax.shape``
  whose rank and static dims agree with the type; ``#relax.shape`` appears on
  ranked tensors only (on a memref it would be read as a memory space);
* every symbol is bound before use: parameter shapes bind symbols (a dim that is
  a plain symbol, or linear in one symbol like ``2*k``), ``relax.match_cast``
  binds the new symbols of its pattern; any other use is an error;
* relax ops carry their declared attributes with the right kinds and no
  undeclared ones (dialect-prefixed discardable attributes like ``relax.x`` aside),
  and live in a graph function (``func.func`` marked ``relax.function``);
* graph functions have a body and a name the runtime does not reserve;
* ``relax.upper_bounds`` names bound symbols with positive integer bounds;
* ``relax.call`` targets a graph function, ``relax.call_tir`` a ``func.func`` whose
  arity fits destination-passing style (``dests`` from relax-plan-memory counted);
* a ``relax.assert`` that provably always fails is reported at compile time.

:func:`precheck` (the structural part, no proofs) runs before every pipeline
(:func:`relax_mlir.transforms.pipeline.run_pipeline`) so that IR upstream passes
would crash on never reaches them.
"""

from __future__ import annotations

import difflib

from mlir import ir

from ..ops.registry import RelaxError, read_attrs
from ..shapes import UNKNOWN, ShapeSyntaxError, Truth, is_tensor, prove_equal, prove_le, read_tensor_type
from ..shapes.match import match_shapes
from .graph import (bound_by_params, body_ops, entry_block, func_name, function_type, functions_by_name,
                    graph_functions, is_graph_function, relax_opdef, top_ops)
from .registry import emit_error, register_pass
from ..dialects._core import value_name
from ..dialects.relax import UPPER_BOUNDS_ATTR

#: Symbols the generated code and the runtime define or call: a graph function (whose
#: name becomes a C symbol) with one of these names would clash at link or load time.
RESERVED_NAMES = frozenset({
    "malloc", "free", "calloc", "realloc", "aligned_alloc", "posix_memalign", "memcpy", "memmove",
    "memset", "memrefCopy", "abort", "exit", "printf", "puts", "relax_mlir_metadata",
    "relax_mlir_metadata_size", "exp", "expf", "log", "logf", "sqrt", "sqrtf", "tanh", "tanhf",
    "erf", "erff", "pow", "powf", "sin", "sinf", "cos", "cosf", "fabs", "fabsf", "floor", "floorf",
    "ceil", "ceilf", "round", "roundf", "fmod", "fmodf", "atan2", "atan2f", "log1p", "log1pf",
    "expm1", "expm1f", "tan", "tanf", "atan", "atanf", "cbrt", "cbrtf", "rsqrt", "rsqrtf",
})
RESERVED_PREFIXES = ("_mlir_", "__relax", "relax_blas_", "relax_mlir_", "llvm.")

#: Attributes every op with a variadic group carries (see dialects/_core.py).
_SEGMENT_ATTRS = ("operandSegmentSizes", "resultSegmentSizes")


def _sig(where_op, t: ir.Type, what: str):
    try:
        return read_tensor_type(t) if is_tensor(t) else None
    except ShapeSyntaxError as e:
        emit_error(where_op, f"{what}: {e}")
        return None


def _walk(op: ir.Operation):
    for region in op.regions:
        for block in region.blocks:
            yield block
            for child in block.operations:
                yield child.operation
                yield from _walk(child.operation)


def _foreign_shape(t: ir.Type) -> bool:
    """``#relax.shape`` on anything but a ranked tensor's encoding."""
    if is_tensor(t):
        return "#relax.shape" in str(ir.RankedTensorType(t).element_type)
    return "#relax.shape" in str(t)


def _check_types(where, types, what: str) -> None:
    for i, t in enumerate(types):
        if _foreign_shape(t):
            emit_error(where, f"{what} #{i}: #relax.shape is the encoding of a ranked tensor type and "
                              f"cannot appear in {t}")


def precheck(module: ir.Operation) -> None:
    """Structural checks that need no proofs; each problem is an error at its location."""
    for f in top_ops(module):
        if f.name == "func.func":
            ft = function_type(f)
            _check_types(f, ft.inputs, f"@{func_name(f)} parameter")
            _check_types(f, ft.results, f"@{func_name(f)} result")
        if is_graph_function(f):
            name = func_name(f)
            if len(f.regions[0].blocks) == 0:
                emit_error(f, f"graph function @{name} has no body: a relax.function must be defined, "
                              "not declared")
            if name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES):
                emit_error(f, f"graph function @{name}: the name is reserved by the runtime or the C "
                              "library; rename the function")
        outside = (f.name == "func.func" and not is_graph_function(f) and "relax.lowered" not in f.attributes)
        for item in _walk(f):
            if isinstance(item, ir.Block):
                if item.owner.operation.name != "func.func":  # a function's arguments: its type, above
                    _check_types(item.owner, [a.type for a in item.arguments], "block argument")
                continue
            _check_types(item, [r.type for r in item.results], f"'{item.name}' result")
            if outside and item.name.startswith("relax.") and relax_opdef(item) is not None:
                emit_error(item, f"'{item.name}' is outside a graph function: mark @{func_name(f)} with the "
                                 "relax.function attribute")


def _check_attr_names(op: ir.Operation, opdef) -> None:
    declared = {a.name for a in opdef.attrs}
    if any(g.variadic for g in opdef.operands):
        declared.add("operandSegmentSizes")
    if any(g.variadic for g in opdef.results):
        declared.add("resultSegmentSizes")
    for na in op.attributes:
        name = na.name if hasattr(na, "name") else na
        if name in declared or "." in name:  # dialect-prefixed attributes are discardable
            continue
        close = difflib.get_close_matches(name, sorted(declared), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        known = ", ".join(a.name for a in opdef.attrs) or "none"
        emit_error(op, f"'{op.name}' has no attribute '{name}'{hint}; its attributes: {known}")


def _check_assert(op: ir.Operation, attrs: dict) -> None:
    dims = attrs["dims"]
    if dims.rank != 2 or dims.has_unknown:
        return
    a, b = dims.dims
    pred = attrs.get("predicate", "eq")
    truth = prove_equal(a, b) if pred == "eq" else prove_le(a, b) if pred == "le" else Truth.UNKNOWN
    if truth is Truth.FALSE:
        rel = "!=" if pred == "eq" else ">"
        emit_error(op, f"'relax.assert' always fails: {a} {rel} {b} for every size "
                       f"(message: \"{attrs.get('message', '')}\")")


def _bound_by_params(sigs) -> tuple[set[str], set[str]]:
    """:func:`bound_by_params`, without the prover when every dim is static or a plain symbol
    (the common case: each symbol is then bound by the dim that names it)."""
    shapes = [s.shape for s in sigs if s is not None]
    if all(d is UNKNOWN or d.is_static or d.expr.is_Symbol for sh in shapes for d in sh):
        return set().union(*(sh.symbols for sh in shapes)) if shapes else set(), set()
    return bound_by_params(sigs)


def verify_function(f: ir.Operation, funcs: dict[str, ir.Operation]) -> None:
    name = func_name(f)
    if len(f.regions[0].blocks) == 0:
        return  # reported by precheck
    block = entry_block(f)
    sigs = []
    for i, arg in enumerate(block.arguments):
        pname = value_name(arg)
        sigs.append(_sig(f, arg.type, f"@{name} parameter #{i}" + (f" '{pname}'" if pname else "")))
    bound, unbound = _bound_by_params(sigs)
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
        if opdef is None:
            if op.name.startswith("relax."):
                continue  # unknown relax ops do not parse; nothing to add
        else:
            _check_attr_names(op, opdef)
            try:
                attrs = read_attrs(opdef, op)
            except (RelaxError, ShapeSyntaxError) as e:
                emit_error(op, str(e))
                continue
            for a in opdef.attrs:
                v = attrs.get(a.name)
                if a.kind in ("shape", "dim") and v is not None:
                    syms = v.symbols if hasattr(v, "symbols") else frozenset()  # an int default
                    if opdef.name == "match_cast":
                        new_syms = set(syms - bound)
                        continue
                    free = sorted(syms - bound)
                    if free:
                        emit_error(op, f"'{op.name}' attribute '{a.name}' uses unbound symbol(s) {', '.join(free)}")
            if opdef.name == "assert":
                _check_assert(op, attrs)
            if opdef.name in ("call", "repeat", "call_tir"):
                callee = attrs["callee"]
                target = funcs.get(callee)
                if target is None:
                    emit_error(op, f"'{op.name}' callee @{callee} does not exist")
                elif opdef.name in ("call", "repeat") and not is_graph_function(target):
                    emit_error(op, f"'relax.{opdef.name}' callee @{callee} is not a graph function (add the relax.function attribute, or use call_tir)")
                elif opdef.name == "call_tir":
                    n_in = len(function_type(target).inputs)
                    tir_vars = attrs.get("tir_vars")
                    n_dests = len(attrs.get("dests") or [])
                    n_ops = len(op.operands) - n_dests
                    want = n_ops + len(op.results) + (tir_vars.rank if tir_vars is not None else 0)
                    if n_in != want:
                        emit_error(op, f"'relax.call_tir' callee @{callee} takes {n_in} argument(s); "
                                       f"destination-passing style needs {want} ({n_ops} inputs + "
                                       f"{len(op.results)} outputs + tir_vars)")
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


@register_pass("relax-verify", "Check shape encodings, symbol scoping and op attributes of graph functions.",
               nestable=True)
def relax_verify(op: ir.Operation, opts) -> None:
    if op.name == "func.func":  # nested: func.func(relax-verify)
        module = op.parent
        if is_graph_function(op):
            _verify_one(op, functions_by_name(module) if module is not None else {})
        return
    precheck(op)
    funcs = functions_by_name(op)
    for f in graph_functions(op):
        _verify_one(f, funcs)


def _verify_one(f: ir.Operation, funcs: dict[str, ir.Operation]) -> None:
    for i, t in enumerate(function_type(f).results):
        _sig(f, t, f"@{func_name(f)} result #{i}")
    try:
        verify_function(f, funcs)
    except (RecursionError, MemoryError):
        emit_error(f, f"@{func_name(f)}: a shape expression is too large or too deeply nested to check")


def check_library_callees(module: ir.Operation, libraries) -> None:
    """Refuse, at compile time, ``relax.call_dps_library`` callees that no given library (nor
    the process, nor a runtime library the module names) defines as ``_mlir_ciface_<callee>``.

    Raises :class:`relax_mlir.CompileError` with one diagnostic per unknown callee at its op
    (otherwise the JIT fails later naming an unrelated symbol)."""
    import ctypes

    from ..dialects.diagnostics import Diagnostic, SourceError

    calls = []
    for f in graph_functions(module):
        if len(f.regions[0].blocks) == 0:
            continue
        calls += [op for op in body_ops(f) if op.name == "relax.call_dps_library"]
    if not calls:
        return
    libs = [ctypes.CDLL(None)]
    for path in libraries:
        try:
            libs.append(ctypes.CDLL(str(path)))
        except OSError:
            pass  # reported by whoever links the libraries
    missing = []
    for op in calls:
        callee = ir.StringAttr(op.attributes["callee"]).value
        if callee.startswith(("relax_blas_", "relax_cublas_")):
            continue  # provided by the relax_blas runtime library that relax-dispatch-library names
        if not any(hasattr(lib, "_mlir_ciface_" + callee) for lib in libs):
            where = ", ".join(str(p) for p in libraries) or "none given"
            missing.append(Diagnostic(op.location, f"'relax.call_dps_library' callee \"{callee}\": no library "
                                                   f"defines _mlir_ciface_{callee} (libraries: {where})"))
    if missing:
        raise SourceError("unknown library callee", missing)
