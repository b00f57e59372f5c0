"""relax-convert-layout: run NCHW convolutions and pooling channels-last (NHWC), converting
only at the edges of a chain (docs/conv.md, "Layouts").

Each NCHW ``relax.conv2d`` becomes ``permute_dims(conv2d(permute_dims(x, [0, 2, 3, 1]),
permute_dims(w, [2, 3, 1, 0]), data_layout = "NHWC"), [0, 3, 1, 2])`` (its weight OIHW ->
HWIO: weight-only, so relax-lift-params moves it into ``<f>_transform_params``), and each
``max_pool2d`` / ``avg_pool2d`` likewise without a weight. Then, walking the function in
order, a value ``T(a)`` (``a`` NHWC, ``T`` the permute back to NCHW) is pushed through
what follows it:

* elementwise unary ops (ReLU, casts ...): ``op(T(a)) -> T(op(a))``;
* binary elementwise ops whose result has ``T(a)``'s shape: the other operand ``T(c)``
  (a residual add) gives ``T(op(a, c))``; a scalar stays; a per-channel broadcast (rank <=
  4, its N, H, W dims 1 once padded to rank 4: a bias ``(C, 1, 1)``, a ReLU6 bound) is
  re-laid out as ``(C,)`` or permuted; a full NCHW tensor whose NHWC transpose the function
  already computes (a residual block's input) takes that; any other full NCHW tensor
  stops the push;
* reductions with ``keepdims`` (the global average pool's ``mean`` over H, W): axes remapped;
* ``permute_dims(T(a), [0, 2, 3, 1])`` (the next conv's input) is ``a``: the inverse
  pair cancels.

So a chain of convs keeps transposes only at its ends. Transposes left without users are
erased. Off by default (the cpu pipeline's ``layout`` option turns it on); run after
relax-infer-shapes (and relax-fold-batch-norm, whose scales are NCHW's).
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ..dialects._core import build
from ..ops.registry import attr_to_python
from ..shapes import Dim, read_tensor_type
from .graph import body_ops, graph_functions, relax_opdef
from .registry import Option, emit_error, register_pass

TO_NHWC = [0, 2, 3, 1]
TO_NCHW = [0, 3, 1, 2]
OIHW_TO_HWIO = [2, 3, 1, 0]
_POOLS = ("relax.max_pool2d", "relax.avg_pool2d")


def _axes(op: ir.Operation) -> Optional[list[int]]:
    return list(ir.DenseI64ArrayAttr(op.attributes["axes"])) if "axes" in op.attributes else None


def _nhwc_source(v: ir.Value) -> Optional[ir.Value]:
    """``a`` when ``v`` is ``permute_dims(a, [0, 3, 1, 2])`` (NHWC back to NCHW), else None."""
    if not isinstance(v, ir.OpResult) or v.owner.name != "relax.permute_dims":
        return None
    return v.owner.operands[0] if _axes(v.owner) == TO_NCHW else None


def _layout(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["data_layout"]).value if "data_layout" in op.attributes else "NCHW"


def _rank(v: ir.Value) -> Optional[int]:
    try:
        return read_tensor_type(v.type).rank
    except (ValueError, TypeError):
        return None


def _attrs(op: ir.Operation) -> dict:
    """The op's declared attributes that it sets (as Python values), for a builder call."""
    opdef = relax_opdef(op)
    return {a.name: attr_to_python(a.kind, op.attributes[a.name]) for a in opdef.attrs if a.name in op.attributes}


def _replace(op: ir.Operation, value: ir.Value) -> None:
    op.results[0].replace_all_uses_with(value)
    op.erase()


def _to_nhwc_layout(op: ir.Operation) -> None:
    """Rewrite an NCHW conv2d / pooling op into its NHWC form between two transposes."""
    with ir.InsertionPoint(op), op.location:
        x = build("permute_dims", op.operands[0], axes=TO_NHWC)
        ins = [x]
        if op.name == "relax.conv2d":
            ins.append(build("permute_dims", op.operands[1], axes=OIHW_TO_HWIO))
        attrs = _attrs(op)
        attrs["data_layout"] = "NHWC"
        y = build(op.name[len("relax."):], *ins, **attrs)
        _replace(op, build("permute_dims", y, axes=TO_NCHW))


def _channel_operand(v: ir.Value, out_rank: int) -> Optional[ir.Value]:
    """``v`` (an NCHW-broadcast operand of an op whose other operand is NHWC-bound) in the
    NHWC layout, or None when it is not a per-channel broadcast (built at the insertion point)."""
    sig = read_tensor_type(v.type)
    if sig.rank == 0:
        return v
    if sig.rank > out_rank or sig.shape.has_unknown:
        return None
    dims = [Dim.of(1)] * (4 - sig.rank) + list(sig.shape)
    one = [d.is_static and d.value == 1 for d in dims]
    if not (one[2] and one[3]):   # varies over H or W: a full activation, not a broadcast
        return None
    if one[0]:   # (1, C, 1, 1) ~ (C,) under numpy broadcasting against (N, H, W, C)
        return v if sig.rank == 1 else build("reshape", v, shape=[dims[1]])
    v4 = v if sig.rank == 4 else build("reshape", v, shape=dims)
    return build("permute_dims", v4, axes=TO_NHWC)


def _existing_nhwc(v: ir.Value, user: ir.Operation) -> Optional[ir.Value]:
    """``permute_dims(v, [0, 2, 3, 1])`` when the function already computes it before ``user``
    (a residual add's block input, whose first conv converted it): no new transpose."""
    for use in v.uses:
        p = use.owner
        if p.name == "relax.permute_dims" and _axes(p) == TO_NHWC and p.parent == user.parent \
                and p.is_before_in_block(user):
            return p.results[0]
    return None


def _push(op: ir.Operation) -> bool:
    """Push an NHWC -> NCHW transpose below ``op`` (see the module docstring); True if rewritten."""
    opdef = relax_opdef(op)
    if opdef is None or len(op.results) != 1:
        return False
    name = opdef.name
    if name == "permute_dims":
        a = _nhwc_source(op.operands[0])
        if a is not None and _axes(op) == TO_NHWC:
            _replace(op, a)
            return True
        return False
    if opdef.family == "elementwise" or name == "astype":
        a = _nhwc_source(op.operands[0])
        if a is None:
            return False
        with ir.InsertionPoint(op), op.location:
            _replace(op, build("permute_dims", build(name, a, **_attrs(op)), axes=TO_NCHW))
        return True
    if opdef.family == "binary":
        srcs = [_nhwc_source(v) for v in op.operands]
        if all(s is None for s in srcs):
            return False
        k = 0 if srcs[0] is not None else 1
        if read_tensor_type(op.results[0].type).shape != read_tensor_type(op.operands[k].type).shape:
            return False   # the NHWC operand is broadcast up: leave it
        with ir.InsertionPoint(op), op.location:
            other = srcs[1 - k]
            if other is None:
                other = _channel_operand(op.operands[1 - k], 4) or _existing_nhwc(op.operands[1 - k], op)
                if other is None:
                    return False
            ins = [srcs[k], other] if k == 0 else [other, srcs[k]]
            _replace(op, build("permute_dims", build(name, *ins, **_attrs(op)), axes=TO_NCHW))
        return True
    if opdef.family == "reduce":
        a = _nhwc_source(op.operands[0])
        axes = _axes(op)
        keep = "keepdims" in op.attributes and bool(ir.BoolAttr(op.attributes["keepdims"]).value)
        if a is None or axes is None or not keep:
            return False
        nhwc_axis = {0: 0, 1: 3, 2: 1, 3: 2}
        attrs = _attrs(op)
        attrs["axes"] = sorted(nhwc_axis[x % 4] for x in axes)
        with ir.InsertionPoint(op), op.location:
            _replace(op, build("permute_dims", build(name, a, **attrs), axes=TO_NCHW))
        return True
    return False


def _erase_dead_transposes(f: ir.Operation) -> None:
    """Transposes and reshapes this pass made that nothing uses any more (the dead chain too)."""
    for op in reversed(body_ops(f)):
        if op.name in ("relax.permute_dims", "relax.reshape") and not any(True for r in op.results for _ in r.uses):
            op.erase()


def convert_function(f: ir.Operation, layout: str) -> int:
    """Convert ``f``'s NCHW convs and pools to ``layout``; returns how many."""
    n = 0
    for op in body_ops(f):
        if (op.name == "relax.conv2d" or op.name in _POOLS) and _layout(op) == "NCHW" \
                and _rank(op.operands[0]) == 4:
            _to_nhwc_layout(op)
            n += 1
    if n:
        for op in body_ops(f):
            _push(op)
        _erase_dead_transposes(f)
    return n


@register_pass("relax-convert-layout",
               "Run NCHW conv2d / pooling channels-last (NHWC, HWIO weights) and cancel the transposes "
               "between them through elementwise ops, bias and residual adds, so a chain converts "
               "only at its ends.",
               options=[Option("layout", str, "NHWC", "the layout to convert to (NHWC)")])
def relax_convert_layout(module: ir.Operation, opts) -> None:
    if opts.layout != "NHWC":
        emit_error(module, f"layout must be 'NHWC', got '{opts.layout}'")
        return
    for f in graph_functions(module):
        convert_function(f, opts.layout)


