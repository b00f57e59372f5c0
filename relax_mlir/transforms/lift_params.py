"""relax-lift-params: move the work that depends only on the weights into ``<f>_transform_params``.

A graph function ``f`` with ``relax.num_input = k`` takes k inputs, then the model's
weights. Every binding whose operands are weights, constants or results of such bindings
(BatchNorm folded into a conv's weight, relax-conv-gemm's channel-block packing, a weight
transpose) computes the same value on every call. This pass (Apache TVM Relax's
LiftTransformParams, written anew) moves them into a new graph function::

    @f_transform_params(weights...) -> (transformed...)     # the lifted bindings
    @f(inputs..., kept weights..., transformed...)          # the rest

*kept weights* are those ``f`` still reads itself, and every weight with a symbolic dim
(so that ``f`` still binds each symbol from a parameter of its own). The module records
what was done for the runtime: ``relax.lifted_params = {f = {transform = "f_transform_params",
num_input = k, num_weights = W, kept = array<i64: ...>}}`` (indices into the weights);
``bind_params(*weights)`` runs the transform once and binds its results, a plain call runs
the transform, then ``f`` (relax_mlir.runtime.session.LiftedFunction).

A binding stays in ``f`` when it has an effect (``assert``, ``match_cast``, state, planned
memory: :mod:`.effects`), when it reads an input, when it calls a graph function, or when a
symbol of its result type (or of a shape attribute) is not bound by the weights' shapes
(a data-dependent size). Bindings that read only constants (``relax.full``) are not lifted
on their own; a lifted binding that uses one gets a copy in the transform function.
Functions without ``relax.num_input``, or with nothing to lift, are left as they are
(``relax.num_input`` is then kept; after a lift it is dropped: ``f``'s parameters changed).
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import func

from ..dialects.relax import FUNCTION_ATTR, UPPER_BOUNDS_ATTR
from ..shapes import Shape, is_tensor, read_tensor_type
from .effects import Effects
from .graph import CALL_OPS, bound_by_params, body_ops, entry_block, func_name, function_type, graph_functions, \
    sig_or_none, top_ops
from .registry import emit_error, register_pass

#: the function attribute naming how many leading parameters are inputs (the rest: weights)
NUM_INPUT_ATTR = "relax.num_input"
#: the module attribute recording each lifted function (read by the runtime's metadata)
LIFTED_ATTR = "relax.lifted_params"
#: the transform function's name is ``<f>`` + this
SUFFIX = "_transform_params"


def _num_input(f: ir.Operation) -> Optional[int]:
    """``relax.num_input`` of ``f`` (None: absent); an error diagnostic when malformed."""
    if NUM_INPUT_ATTR not in f.attributes:
        return None
    a = f.attributes[NUM_INPUT_ATTR]
    nparams = len(function_type(f).inputs)
    if not isinstance(a, ir.IntegerAttr) or isinstance(a, ir.BoolAttr):
        emit_error(f, f"{NUM_INPUT_ATTR} must be an integer attribute, got {a}")
        return None
    k = a.value
    if not 0 <= k <= nparams:
        emit_error(f, f"{NUM_INPUT_ATTR} = {k} is out of range: @{func_name(f)} has {nparams} parameter(s)")
        return None
    return k


def _attr_symbols(op: ir.Operation) -> frozenset[str]:
    """Symbols named by the ``#relax.shape`` attributes of ``op`` (a reshape's shape, tir_vars)."""
    out: set[str] = set()
    for named in op.attributes:
        name = named if isinstance(named, str) else named.name
        text = str(op.attributes[name])
        if text.startswith("#relax.shape<"):
            out |= Shape.from_attr(op.attributes[name]).symbols
    return frozenset(out)


def _type_symbols(t: ir.Type) -> Optional[frozenset[str]]:
    """Symbols of a tensor type's shape (None: not a readable tensor type, or an unknown dim)."""
    if not is_tensor(t):
        return None
    try:
        s = read_tensor_type(t).shape
    except Exception:   # noqa: BLE001  an unreadable type: the binding stays
        return None
    return None if s.has_unknown else s.symbols


def _classify(f: ir.Operation, k: int, effects: Effects, bound: set[str]) -> tuple[dict, list, list]:
    """(value -> "W" weight-derived / "C" constant-only, the liftable bindings, the
    constant-only bindings) of graph function ``f`` whose first ``k`` parameters are inputs;
    ``bound``: the symbols the weights' shapes bind."""
    kind: dict = {a: "W" for a in list(entry_block(f).arguments)[k:]}
    lifted: list[ir.Operation] = []
    consts: list[ir.Operation] = []
    for op in body_ops(f):
        if op.name == "func.return" or not effects.is_pure(op) or op.name in CALL_OPS:
            continue
        ks = [kind.get(v) for v in op.operands]
        if any(x is None for x in ks):
            continue
        types = [_type_symbols(r.type) for r in op.results]
        if any(t is None for t in types):
            continue
        if not frozenset().union(*types, _attr_symbols(op)) <= bound:
            continue
        tag = "W" if "W" in ks else "C"
        for r in op.results:
            kind[r] = tag
        (lifted if tag == "W" else consts).append(op)
    return kind, lifted, consts


def weight_values(f: ir.Operation) -> set:
    """The values of graph function ``f`` that relax-lift-params would compute from weights
    and constants only (its weight parameters included); empty without a well-formed
    ``relax.num_input``. relax-fold-batch-norm folds into such weights at no per-call cost."""
    if NUM_INPUT_ATTR not in f.attributes:
        return set()
    a = f.attributes[NUM_INPUT_ATTR]
    nparams = len(function_type(f).inputs)
    if not isinstance(a, ir.IntegerAttr) or isinstance(a, ir.BoolAttr) or not 0 <= a.value <= nparams:
        return set()
    wsigs = [sig_or_none(t) for t in list(function_type(f).inputs)[a.value:]]
    if any(s is None for s in wsigs):
        return set()
    bound, _ = bound_by_params(wsigs)
    kind, _, _ = _classify(f, a.value, Effects(f.parent), bound)
    return set(kind)


def lift_function(f: ir.Operation, k: int, effects: Effects, taken: set[str]) -> Optional[dict]:
    """Lift the weight-only bindings of graph function ``f`` (first ``k`` parameters are
    inputs); returns the record for :data:`LIFTED_ATTR`, or None when nothing is lifted."""
    block = entry_block(f)
    args = list(block.arguments)
    weights = args[k:]
    wsigs = [sig_or_none(a.type) for a in weights]
    if any(s is None for s in wsigs):
        return None   # a non-tensor weight: leave the function alone
    bound, _ = bound_by_params(wsigs)
    _, lifted, consts = _classify(f, k, effects, bound)
    if not lifted:
        return None
    lifted_set = set(lifted)

    # the values f still needs: lifted results with a user outside the lifted ops
    outputs: list[ir.Value] = []
    for op in lifted:
        for r in op.results:
            if any(u not in lifted_set for u in _users(r)):
                outputs.append(r)
    kept = [i for i, (w, s) in enumerate(zip(weights, wsigs))
            if s.shape.symbols or any(u not in lifted_set for u in _users(w))]

    name = func_name(f) + SUFFIX
    if name in taken:
        emit_error(f, f"cannot lift the weights of @{func_name(f)}: a function @{name} exists already")
        return None
    taken.add(name)

    # the transform function, right after f
    out_types = [v.type for v in outputs]
    with f.location:
        tf = func.FuncOp(name, ([w.type for w in weights], out_types), ip=ir.InsertionPoint.after(f))
    tf.attributes[FUNCTION_ATTR] = ir.UnitAttr.get()
    if UPPER_BOUNDS_ATTR in f.attributes:
        d = ir.DictAttr(f.attributes[UPPER_BOUNDS_ATTR])
        keep = {d[i].name: d[i].attr for i in range(len(d)) if d[i].name in bound}
        if keep:
            tf.attributes[UPPER_BOUNDS_ATTR] = ir.DictAttr.get(keep)
    tblock = tf.add_entry_block()
    mapping: dict = {w: tblock.arguments[i] for i, w in enumerate(weights)}
    with ir.InsertionPoint(tblock):
        ret = func.ReturnOp([])   # operands set below
    ret = ret.operation

    # constants some lifted op reads: copied in body order (f keeps its own while it uses them)
    needed = {v for op in lifted for v in op.operands}
    copy = []
    for op in reversed(consts):
        if any(r in needed for r in op.results):
            copy.append(op)
            needed |= set(op.operands)
    for op in reversed(copy):
        c = op.clone(ir.InsertionPoint(ret))
        for i, v in enumerate(c.operands):
            c.operands[i] = mapping[v]
        for old, new in zip(op.results, c.results):
            mapping[old] = new

    # move the lifted ops, in order, their operands pointing at the transform's values
    for op in lifted:
        op.move_before(ret)
        for i, v in enumerate(op.operands):
            if v in mapping:
                op.operands[i] = mapping[v]
    _set_return(tblock, ret, outputs)

    # f's new parameters: the transformed values, in place of their uses left in f
    for v in outputs:
        a = block.add_argument(v.type, f.location)
        for user in {u for u in _users(v) if u.parent != tf.operation}:
            user.replace_uses_of_with(v, a)

    # drop the weights f no longer reads (from the back, so indices stay valid)
    for i in reversed(range(len(weights))):
        if i not in kept:
            block.erase_argument(k + i)
    ftype = function_type(f)
    new_inputs = [a.type for a in block.arguments]
    f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_inputs, list(ftype.results)))
    if "arg_attrs" in f.attributes:
        del f.attributes["arg_attrs"]
    del f.attributes[NUM_INPUT_ATTR]
    return {"transform": name, "num_input": k, "num_weights": len(weights), "kept": kept}


def _users(v: ir.Value) -> list[ir.Operation]:
    return [u.owner.operation if hasattr(u.owner, "operation") else u.owner for u in v.uses]


def _set_return(block: ir.Block, ret: ir.Operation, values: list) -> None:
    """Replace the empty ``func.return`` ``ret`` of ``block`` by one returning ``values``."""
    with ir.InsertionPoint(ret), ret.location:
        func.ReturnOp(values)
    ret.erase()


@register_pass("relax-lift-params",
               "Move bindings that depend only on weights (after relax.num_input inputs) into <f>_transform_params.")
def relax_lift_params(module: ir.Operation, opts) -> None:
    effects = Effects(module)
    taken = {ir.StringAttr(o.attributes["sym_name"]).value for o in top_ops(module) if "sym_name" in o.attributes}
    records = {}
    for f in graph_functions(module):
        if not f.regions[0].blocks:
            continue
        k = _num_input(f)
        if k is None:
            continue
        rec = lift_function(f, k, effects, taken)
        if rec is not None:
            records[func_name(f)] = rec
    if not records:
        return
    old = {}
    if LIFTED_ATTR in module.attributes:
        d = ir.DictAttr(module.attributes[LIFTED_ATTR])
        old = {d[i].name: d[i].attr for i in range(len(d))}
    i64 = ir.IntegerType.get_signless(64)
    for fname, rec in records.items():
        old[fname] = ir.DictAttr.get({
            "transform": ir.StringAttr.get(rec["transform"]),
            "num_input": ir.IntegerAttr.get(i64, rec["num_input"]),
            "num_weights": ir.IntegerAttr.get(i64, rec["num_weights"]),
            "kept": ir.DenseI64ArrayAttr.get(rec["kept"]),
        })
    module.attributes[LIFTED_ATTR] = ir.DictAttr.get(old)


def lifted_records(module: ir.Operation) -> dict[str, dict]:
    """:data:`LIFTED_ATTR` of ``module`` as plain JSON (function -> its record); {} when absent."""
    if LIFTED_ATTR not in module.attributes:
        return {}
    d = ir.DictAttr(module.attributes[LIFTED_ATTR])
    out = {}
    for i in range(len(d)):
        r = ir.DictAttr(d[i].attr)
        out[d[i].name] = {"transform": ir.StringAttr(r["transform"]).value,
                          "num_input": ir.IntegerAttr(r["num_input"]).value,
                          "num_weights": ir.IntegerAttr(r["num_weights"]).value,
                          "kept": list(ir.DenseI64ArrayAttr(r["kept"]))}
    return out
