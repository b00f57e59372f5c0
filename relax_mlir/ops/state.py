"""Executable-owned state: named buffers that live in a session across calls (an LLM's KV cache).

A module declares its state buffers in the module attribute ``relax.state`` (name ->
tensor type) with the upper bound of each capacity symbol in the module's
``relax.upper_bounds``::

    module attributes {relax.state = {k0 = tensor<?x4x64xf32, #relax.shape<["cap", 4, 64]>>},
                       relax.upper_bounds = {cap = 2048 : i64}} { ... }

Axis 0 of a state is its *capacity* in rows (static, or one symbol with an upper bound:
the session allocates the bound, or less when asked); the other dims are static: a state
is a sequence of fixed-shape rows. Graph functions read a row range of a state as a
tensor WITHOUT a copy (``relax.state_read``: a view of the session's buffer) and write
rows in place (``relax.state_write``: only the written rows move). State ops run in
program order; a write beyond the capacity is a run-time ShapeError (the capacity is the
session's, so it is checked when the call runs). A state may hold several equal caches (a
layer stack's: one per layer) as equal blocks of its rows: the ops' ``block`` / ``blocks``
address rows inside block ``block`` (symbolic, e.g. a loop's iteration), checked against the
block's capacity. relax-lower-host passes every state
buffer to every graph function after the workspace (see
:mod:`relax_mlir.transforms.lower_host`); the runtime session owns them
(:class:`relax_mlir.runtime.executable.Session`).
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import builtin

from ..shapes import UNKNOWN, Dim, Shape, ShapeSyntaxError, TensorSig, read_tensor_type
from .common import tensor_input
from .manipulate import _check_scope
from .match import isa
from .registry import Attr, InferCall, RelaxError, op

#: Module attribute: state name -> tensor type (``#relax.shape`` for a symbolic capacity).
STATE_ATTR = "relax.state"
#: Module attribute: upper bound of each capacity symbol (the graph functions' attribute name).
MODULE_BOUNDS_ATTR = "relax.upper_bounds"


#: module_states by (state attribute, bounds attribute) text: a model's state ops each ask for
#: the declaration (2 per layer, 2 states per layer: parsing it every time was O(layers**2))
_DECLARED: dict[tuple[str, str], dict[str, TensorSig]] = {}


def module_states(module: ir.Operation) -> dict[str, TensorSig]:
    """The declared state buffers of a module, by name (sorted: the argument order).
    Raises RelaxError when a declaration is malformed."""
    if STATE_ATTR not in module.attributes:
        return {}
    key = (str(module.attributes[STATE_ATTR]),
           str(module.attributes[MODULE_BOUNDS_ATTR]) if MODULE_BOUNDS_ATTR in module.attributes else "")
    if key not in _DECLARED:
        if len(_DECLARED) > 64:
            _DECLARED.clear()
        _DECLARED[key] = _parse_states(module)
    return dict(_DECLARED[key])


def _parse_states(module: ir.Operation) -> dict[str, TensorSig]:
    a = module.attributes[STATE_ATTR]
    if not isinstance(a, ir.DictAttr):
        raise RelaxError(f"'{STATE_ATTR}' must be a dictionary of state name -> tensor type")
    bounds = module_bounds(module)
    out = {}
    for k in range(len(a)):
        entry = a[k]
        name = entry.name
        if not isinstance(entry.attr, ir.TypeAttr) or not isinstance(entry.attr.value, ir.RankedTensorType):
            raise RelaxError(f"state '{name}' must be declared with a ranked tensor type, got {entry.attr}")
        try:
            sig = read_tensor_type(entry.attr.value)
        except ShapeSyntaxError as e:
            raise RelaxError(f"state '{name}': {e}") from None
        if sig.rank < 1:
            raise RelaxError(f"state '{name}' needs at least one dim (axis 0: its capacity in rows)")
        if sig.shape.has_unknown:
            raise RelaxError(f"state '{name}': every dim must be known (name the capacity with #relax.shape)")
        cap = sig.shape[0]
        if not cap.is_static:
            if len(cap.symbols) != 1 or str(cap) not in cap.symbols:
                raise RelaxError(f"state '{name}': the capacity (axis 0) must be static or one symbol, got {cap}")
            if str(cap) not in bounds:
                raise RelaxError(f"state '{name}': capacity symbol '{cap}' needs an upper bound in the "
                                 f"module's '{MODULE_BOUNDS_ATTR}'")
        for j, d in enumerate(list(sig.shape)[1:], 1):
            if not d.is_static:
                raise RelaxError(f"state '{name}': dim {j} must be static (only axis 0, the capacity, "
                                 f"may be symbolic), got {d}")
        out[name] = sig
    return dict(sorted(out.items()))


def module_bounds(module: ir.Operation) -> dict[str, int]:
    if MODULE_BOUNDS_ATTR not in module.attributes:
        return {}
    d = ir.DictAttr(module.attributes[MODULE_BOUNDS_ATTR])
    return {d[i].name: ir.IntegerAttr(d[i].attr).value for i in range(len(d))}


def capacity_bound(sig: TensorSig, bounds: dict[str, int]) -> int:
    """Rows a session allocates by default: the static capacity or its symbol's upper bound."""
    cap = sig.shape[0]
    return cap.value if cap.is_static else bounds[str(cap)]


def _module_of(call: InferCall) -> Optional[ir.Operation]:
    op = call.operation
    if op is not None:
        while op is not None and not isa(op, builtin.ModuleOp):
            op = op.parent
        return op
    return getattr(call.scope, "module", None) if call.scope is not None else None


def _state(call: InferCall) -> TensorSig:
    name = call["state"]
    module = _module_of(call)
    if module is None:
        raise call.error(f"state '{name}': the op must be inside a module declaring '{STATE_ATTR}'")
    try:
        states = module_states(module)
    except RelaxError as e:
        raise call.error(str(e)) from None
    if name not in states:
        known = ", ".join(states) or "none declared"
        raise call.error(f"unknown state '{name}' (module states: {known})")
    return states[name]


def row_shape(sig: TensorSig) -> list[Dim]:
    return list(sig.shape)[1:]


def _check_block(call: InferCall) -> None:
    """``block`` of ``blocks``: the state's rows split into ``blocks`` equal blocks (a layer
    stack's cache in one buffer: block = layer); row numbers count from the block's first."""
    blocks, block = call["blocks"], Dim.of(call["block"])
    if blocks < 1:
        raise call.error(f"blocks must be at least 1, got {blocks}")
    _check_scope(call, Shape([block]), "block")
    call.require_le(0, block, "block")
    if block.is_static and block.value >= blocks:
        raise call.error(f"block {block.value} of {blocks} blocks")


BLOCK_ATTRS = [Attr("block", "dim", 0), Attr("blocks", "int", 1)]


@op("state_read", operands=[], attrs=[Attr("state", "str"), Attr("begin", "dim", 0), Attr("end", "dim")] + BLOCK_ATTRS,
    summary="rows [begin, end) of the session's state buffer `state` (of its block `block` when its "
            "rows are split into `blocks` equal blocks) as a tensor, without a copy (a view: valid "
            "until a relax.state_write to those rows); end beyond the capacity (the block's) or a "
            "block beyond `blocks` is a run-time ShapeError")
def _state_read(call: InferCall) -> TensorSig:
    st = _state(call)
    _check_block(call)
    begin, end = Dim.of(call["begin"]), Dim.of(call["end"])
    _check_scope(call, Shape([begin, end]), "row range")
    call.require_le(0, begin, "begin")
    call.require_le(begin, end, "row range [begin, end)")
    return TensorSig(Shape([end - begin] + row_shape(st)), st.dtype)


@op("state_write", operands=["value"], results=[], attrs=[Attr("state", "str"), Attr("offset", "dim", 0)] + BLOCK_ATTRS,
    summary="write `value` into rows [offset, offset + rows) of the session's state buffer `state` "
            "(of its block `block` of `blocks`, as relax.state_read), in place (only those rows move); "
            "its other dims and dtype must be the state's; a write beyond the capacity is a run-time "
            "ShapeError")
def _state_write(call: InferCall) -> list:
    st = _state(call)
    _check_block(call)
    x = tensor_input(call, 0)
    off = Dim.of(call["offset"])
    _check_scope(call, Shape([off]), "offset")
    if x.dtype != st.dtype:
        raise call.error(f"value has element type {x.dtype}, state '{call['state']}' holds {st.dtype}")
    if x.rank != st.rank:
        raise call.error(f"value has rank {x.rank}, state '{call['state']}' has rank {st.rank} "
                         f"(rows of shape {Shape(row_shape(st))})")
    for j, (a, b) in enumerate(zip(list(x.shape)[1:], row_shape(st)), 1):
        call.require_equal(a, b, f"value dim {j} against state '{call['state']}'")
    call.require_le(0, off, "offset")
    return []


def declare_states(module, states: dict, upper_bounds: Optional[dict[str, int]] = None) -> None:
    """Declare state buffers on ``module`` (an ``ir.Module`` or its operation):
    ``states``: name -> (shape, dtype), e.g. ``{"k0": (["cap", 4, 64], "f32")}``;
    ``upper_bounds``: capacity symbol -> bound (merged into the module's ``relax.upper_bounds``).
    Existing declarations are kept (a name declared again is replaced)."""
    from ..shapes import tensor_type

    op = module.operation if hasattr(module, "operation") else module
    entries = {}
    if STATE_ATTR in op.attributes:
        old = ir.DictAttr(op.attributes[STATE_ATTR])
        entries = {old[k].name: old[k].attr for k in range(len(old))}
    for name, (shape, dtype) in states.items():
        entries[name] = ir.TypeAttr.get(tensor_type(Shape.of(shape), dtype))
    op.attributes[STATE_ATTR] = ir.DictAttr.get(entries)
    if upper_bounds:
        bounds = {**module_bounds(op), **upper_bounds}
        i64 = ir.IntegerType.get_signless(64)
        op.attributes[MODULE_BOUNDS_ATTR] = ir.DictAttr.get({k: ir.IntegerAttr.get(i64, int(v))
                                                             for k, v in bounds.items()})
    module_states(op)   # refuse a malformed declaration now
