"""Cross-level and shape ops: match_cast, call_tir, call_dps_library, call, shape_of, assert."""

from __future__ import annotations

from ..shapes import UNKNOWN, Dim, Shape, TensorSig, symbol
from ..shapes.match import match_shapes
from .common import is_int, tensor_input
from .manipulate import _check_scope
from .registry import Attr, InferCall, op


def _opaque(shape: Shape) -> Shape:
    """Name each '?' dim by a private placeholder symbol so it can be matched."""
    return Shape(Dim(symbol(f"?{i}")) if d is UNKNOWN else d for i, d in enumerate(shape))


@op("match_cast", operands=["x"], attrs=[Attr("shape", "shape")],
    summary="refine `x` to the pattern `shape`, binding its new symbols; checked at run time")
def _match_cast(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    pattern: Shape = call["shape"]
    if pattern.has_unknown:
        raise call.error("pattern may not contain '?': name every dim")
    bound = call.scope.bound if call.scope is not None else set()
    new = pattern.symbols - bound
    m = match_shapes([pattern], [_opaque(x.shape)], new, names=["value"])
    if m.error:
        raise call.error(f"can never match: {m.error}")
    if m.unresolved:
        raise call.error(f"cannot bind symbol(s) {', '.join(sorted(m.unresolved))}: each new symbol "
                         "must be a dim of the pattern or appear linearly in one (like 2*k)")
    if call.scope is not None:
        call.scope.bound |= new
    return TensorSig(pattern, x.dtype)


def _declared(call: InferCall) -> list[TensorSig]:
    if any(d is None for d in call.declared):
        raise call.error("results must be ranked tensors")
    for i, d in enumerate(call.declared):
        _check_scope(call, d.shape, f"result #{i} shape")
        if d.shape.has_unknown:
            raise call.error(f"result #{i} shape has an unknown dim '?': output shapes must be stated")
    return list(call.declared)


@op("call_tir", operands=["*args"], results=["*results"],
    attrs=[Attr("callee", "symbol"), Attr("tir_vars", "shape", None), Attr("dests", "ints", None)],
    summary="call a loop-level kernel in destination-passing style (inputs, outputs, then "
            "`tir_vars` as index arguments); result types state the output shapes; `dests` "
            "(from relax-plan-memory) lists the results whose destination tensors are the "
            "last operands, in that order")
def _call_tir(call: InferCall) -> list[TensorSig]:
    for i in range(len(call.inputs)):
        tensor_input(call, i)
    if call["tir_vars"] is not None:
        _check_scope(call, call["tir_vars"], "tir_vars")
    out = _declared(call)
    dests = call["dests"] or []
    if len(dests) > len(call.inputs) or any(not 0 <= i < len(out) for i in dests):
        raise call.error(f"dests {list(dests)} must name results, each with a trailing destination operand")
    for k, i in enumerate(dests):
        d = call.inputs[len(call.inputs) - len(dests) + k]
        if d != out[i]:
            raise call.error(f"destination of result #{i} has type {d.shape} x {d.dtype}, "
                             f"the result {out[i].shape} x {out[i].dtype}")
    return out


@op("call_dps_library", operands=["*args"], results=["*results"],
    attrs=[Attr("callee", "str"), Attr("dests", "ints", None)],
    summary="call an external library function (C symbol) in destination-passing style; "
            "`dests` as for relax.call_tir")
def _call_dps_library(call: InferCall) -> list[TensorSig]:
    for i in range(len(call.inputs)):
        tensor_input(call, i)
    return _declared(call)


@op("call", operands=["*args"], results=["*results"], attrs=[Attr("callee", "symbol")],
    summary="call another graph function; shapes flow through its parameter patterns")
def _call(call: InferCall) -> list[TensorSig]:
    if call.scope is None or call.scope.lookup is None:
        if call.declared:
            return _declared(call)
        raise call.error("needs the callee's signature (build with explicit result_types)")
    callee = call.attrs["callee"]
    sig = call.scope.lookup(callee)
    if sig is None:
        raise call.error(f"callee @{callee} is not a graph function (func.func with relax.function)")
    params, results = sig
    args = [tensor_input(call, i) for i in range(len(call.inputs))]
    if len(args) != len(params):
        raise call.error(f"@{callee} takes {len(params)} argument(s), got {len(args)}")
    return _match_call(call, callee, (params, results), args)


def _match_call(call: InferCall, callee: str, sig, args: list[TensorSig]) -> list[TensorSig]:
    """The callee's result types with its parameter symbols bound from ``args``."""
    params, results = sig
    for i, (a, p) in enumerate(zip(args, params)):
        if a.dtype != p.dtype:
            raise call.error(f"argument #{i} has element type {a.dtype}, @{callee} expects {p.dtype}")
    callee_syms = set().union(*(p.shape.symbols for p in params), *(r.shape.symbols for r in results))
    m = match_shapes([p.shape for p in params], [_opaque(a.shape) for a in args], callee_syms,
                     names=[f"argument #{i}" for i in range(len(args))])
    if m.error:
        raise call.error(f"arguments do not match @{callee}'s parameters: {m.error}")
    for lhs, rhs, where in m.checks:
        if rhs is UNKNOWN or any(s.startswith("?") for s in lhs.symbols | rhs.symbols):
            raise call.error(f"{where}: an unknown dim '?' cannot be checked; name it with relax.match_cast")
        call.require_equal(lhs, rhs, f"@{callee} {where}")
    # Callee symbols are sizes (>= 0): a pattern like `p + 1` against `n` binds
    # p = n - 1, which needs n >= 1. Bindings to '?' dims are left unresolved.
    for s in sorted(m.bindings):
        v = m.bindings[s]
        if v is UNKNOWN or any(x.startswith("?") for x in v.symbols):
            continue
        call.require_le(0, v, f"@{callee} symbol {s} = {v} is a size")
    out = []
    for r in results:
        dims = []
        for d in r.shape:
            if d is UNKNOWN or (d.symbols & m.unresolved):
                dims.append(UNKNOWN)
            else:
                s = d.subs(m.bindings)
                dims.append(UNKNOWN if any(x.startswith("?") for x in s.symbols) else s)
        out.append(TensorSig(Shape(dims), r.dtype))
    return out


def _repeat_iter(sig: TensorSig) -> bool:
    """Whether ``sig`` is an iteration parameter: a zero-byte ``(i, 0) i8`` tensor."""
    return sig.dtype == "i8" and sig.rank == 2 and sig.shape[1] == Dim.of(0) and not sig.shape[0].is_static \
        and len(sig.shape[0].symbols) == 1 and str(sig.shape[0]) in sig.shape[0].symbols


@op("repeat", operands=["*args"], results=["*results"],
    attrs=[Attr("callee", "symbol"), Attr("count", "int"), Attr("carried", "int")],
    summary="call graph function `callee` `count` (>= 1) times in a loop: its parameters are the "
            "iteration number as a zero-byte (i, 0) i8 tensor, then the `carried` first operands, "
            "each replaced by the previous call's results, then the other operands, the same at "
            "every call; the results are the last call's. A layer stack is one repeat of its layer")
def _repeat(call: InferCall) -> list[TensorSig]:
    if call.scope is None or call.scope.lookup is None:
        if call.declared:
            return _declared(call)
        raise call.error("needs the callee's signature (build with explicit result_types)")
    callee, count, carried = call.attrs["callee"], call["count"], call["carried"]
    if count < 1:
        raise call.error(f"count must be at least 1, got {count}")
    sig = call.scope.lookup(callee)
    if sig is None:
        raise call.error(f"callee @{callee} is not a graph function (func.func with relax.function)")
    params, results = sig
    args = [tensor_input(call, i) for i in range(len(call.inputs))]
    if not 0 <= carried <= len(args):
        raise call.error(f"carried must lie in [0, {len(args)}], got {carried}")
    if len(params) != len(args) + 1:
        raise call.error(f"@{callee} takes {len(params)} parameter(s): the iteration and {len(params) - 1} "
                         f"operand(s), got {len(args)}")
    if not _repeat_iter(params[0]):
        raise call.error(f"@{callee}'s first parameter must be the iteration, a zero-byte (i, 0) i8 tensor, "
                         f"got {params[0].shape} x {params[0].dtype}")
    if len(results) != carried:
        raise call.error(f"@{callee} returns {len(results)} value(s), the repeat carries {carried}")
    it = str(params[0].shape[0])
    for k in range(carried):
        p, r = params[1 + k], results[k]
        if it in p.shape.symbols or it in r.shape.symbols or p.shape != r.shape or p.dtype != r.dtype:
            raise call.error(f"@{callee} result #{k} ({r.shape} x {r.dtype}) must have the type of the carried "
                             f"parameter #{1 + k} ({p.shape} x {p.dtype}), independent of the iteration '{it}'")
    # the operands bind the callee's symbols as a relax.call would (the iteration: count - 1 at most)
    iter_sig = TensorSig(Shape([Dim.of(count - 1), 0]), "i8")
    return _match_call(call, callee, sig, [iter_sig] + args)


@op("shape_of", operands=["x"], summary="the run-time shape of `x` as a 1-D i64 tensor")
def _shape_of(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    return TensorSig(Shape([x.rank]), "i64")


@op("check_indices", operands=["indices"], results=[], attrs=[Attr("size", "dim"), Attr("message", "str", "")],
    summary="run-time check that every element of `indices` lies in [-size, size) (size in scope); "
            "fails with an IndexError naming `message` and the location")
def _check_indices(call: InferCall) -> list:
    idx = tensor_input(call, 0)
    if not (is_int(idx.dtype) or idx.dtype.startswith("ui")) or idx.dtype == "i1":
        raise call.error(f"indices must be an integer tensor, got {idx.dtype}")
    size = call["size"]
    if size is UNKNOWN:
        raise call.error("size must be a known dim")
    _check_scope(call, Shape([size]), "check_indices")
    return []


@op("assert", results=[], attrs=[Attr("dims", "shape"), Attr("message", "str"), Attr("predicate", "str", "eq")],
    summary="run-time check dims[0] == dims[1] (predicate eq) or dims[0] <= dims[1] (le) "
            "on symbolic dims; fails with `message`")
def _assert(call: InferCall) -> list:
    dims: Shape = call["dims"]
    if dims.rank != 2 or dims.has_unknown:
        raise call.error("dims must hold exactly two known dims")
    if call["predicate"] not in ("eq", "le"):
        raise call.error(f"predicate must be 'eq' or 'le', got '{call['predicate']}'")
    _check_scope(call, dims, "assert")
    return []
