"""relax-fold-batch-norm: fold an inference BatchNorm (a per-channel scale and shift) into the
convolution before it.

The torch importer (and any frontend) writes an inference BatchNorm as
``y * scale + shift`` with ``scale``, ``shift`` of shape ``[C, 1, 1]`` (or ``[1, C, 1, 1]``),
computed from the BatchNorm's parameters. After a ``relax.conv2d`` (optionally followed by
its per-channel bias add) the scale moves into the weight's output channels and the bias
absorbs the rest::

    (conv2d(x, W) [+ b]) * s [+ t]   ->   conv2d(x, W * s[:, None, None, None]) + (b * s + t)

so the per-element epilogue after the conv shrinks to one add (a multiply less per output
element; with a conv bias, the bias chain ``b * s + t`` is per channel and, with the weights
declared, lifted out of the call by relax-lift-params). The weight-side ops
(``W * s``, ``b * s + t``) depend only on the weights, yet the weights are function
arguments: they run on every call, costing the weight's size, so the fold applies only when
the weight (``O * I/g * kh * kw``) is no larger than one image's output (``O * Ho * Wo``;
symbolic sizes by their upper bounds, unbounded ones assumed large), unless the function
declares its weights (``relax.num_input``, set by the torch importer) and the weight and the
scale depend on weights only: relax-lift-params then moves ``W * s`` into
``<f>_transform_params``, which ``bind_params`` runs once, so the fold is free. A BatchNorm that stays (no
conv before it, or an unprofitable fold) is the per-channel scale and shift it was imported
as, which relax-fuse-ops fuses with its elementwise neighbours.

Only single-user chains are rewritten (the conv's intermediate results must not be needed
elsewhere); operand order of the multiply and adds does not matter.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ..dialects._core import create
from ..dialects import relax as R
from ..shapes import read_tensor_type
from .graph import body_ops, graph_functions, single_user, upper_bounds
from .lift_params import weight_values
from .registry import register_pass


def _per_channel(v: ir.Value, channels: int, dtype: str) -> bool:
    """``v`` is a ``[C, 1, 1]`` or ``[1, C, 1, 1]`` tensor of ``dtype`` (broadcast over N, H, W)."""
    try:
        sig = read_tensor_type(v.type)
    except Exception:
        return False
    if sig.dtype != dtype:
        return False
    dims = [d.value if d.is_static else None for d in sig.shape]
    return dims in ([channels, 1, 1], [1, channels, 1, 1])


def _other(op: ir.Operation, v: ir.Value) -> Optional[ir.Value]:
    """The operand of binary ``op`` that is not ``v`` (None when both are ``v``)."""
    a, b = op.operands[0], op.operands[1]
    if a == v and b != v:
        return b
    if b == v and a != v:
        return a
    return None


def _step(v: ir.Value, near: ir.Operation, name: str, channels: int, dtype: str):
    """(op, per-channel operand) when ``v``'s only user is ``relax.<name>`` with a per-channel
    other operand and a result of ``v``'s type; else (None, None)."""
    u = single_user(v, near)
    if u is None or u.name != f"relax.{name}" or u.results[0].type != v.type:
        return None, None
    other = _other(u, v)
    if other is None or not _per_channel(other, channels, dtype):
        return None, None
    return u, other


def _bound(d, bounds: dict[str, int]) -> Optional[int]:
    """A static dim's value, else its upper bound from the function's bounds (None: unknown)."""
    if d.is_static:
        return d.value
    if not d.symbols <= set(bounds):
        return None
    return max(1, d.evaluate(bounds))   # output sizes grow with the input sizes


def _profitable(conv: ir.Operation, bounds: dict[str, int]) -> bool:
    w = read_tensor_type(conv.operands[1].type)
    y = read_tensor_type(conv.results[0].type)
    if not all(d.is_static for d in w.shape):
        return False
    weight = 1
    for d in w.shape:
        weight *= d.value
    per_image = y.shape[1].value
    for d in y.shape[2:]:
        b = _bound(d, bounds)
        if b is None:
            return True   # an unbounded image size: assume images are large
        per_image *= b
    return weight <= per_image


def fold_function(f: ir.Operation) -> int:
    """Fold every conv2d [+ bias] * scale [+ shift] chain of graph function ``f``; returns how many."""
    bounds = upper_bounds(f)
    free = weight_values(f)   # with relax.num_input: computed once, at bind_params (relax-lift-params)
    n = 0
    for conv in body_ops(f):
        if conv.name != "relax.conv2d":
            continue
        if "data_layout" in conv.attributes and ir.StringAttr(conv.attributes["data_layout"]).value != "NCHW":
            continue   # the per-channel (C, 1, 1) scale and shift are NCHW's
        ysig = read_tensor_type(conv.results[0].type)
        if not ysig.shape[1].is_static:
            continue
        c, dt = ysig.shape[1].value, ysig.dtype
        chain, v = [conv], conv.results[0]
        bias_op, bias = _step(v, conv, "add", c, dt)
        if bias_op is not None:
            chain.append(bias_op)
            v = bias_op.results[0]
        mul, scale = _step(v, conv, "multiply", c, dt)
        if mul is None or not ((conv.operands[1] in free and scale in free) or _profitable(conv, bounds)):
            continue
        chain.append(mul)
        v = mul.results[0]
        shift_op, shift = _step(v, conv, "add", c, dt)
        if shift_op is not None:
            chain.append(shift_op)
        last = chain[-1]
        with ir.InsertionPoint(last), last.location:
            w2 = R.multiply(conv.operands[1], R.reshape(scale, shape=[c, 1, 1, 1]))
            attrs = {k: conv.attributes[k] for k in conv.attributes}
            y = create("conv2d", [conv.operands[0], w2], [conv.results[0].type], attrs).results[0]
            b = None
            if bias is not None:
                s3 = scale if read_tensor_type(scale.type).rank == 3 else R.reshape(scale, shape=[c, 1, 1])
                b = R.multiply(bias, s3)
            if shift is not None:
                b = shift if b is None else R.add(b, shift)
            if b is not None:
                y = R.add(y, b)
        last.results[0].replace_all_uses_with(y)
        for op in reversed(chain):
            op.erase()
        n += 1
    return n


@register_pass("relax-fold-batch-norm",
               "Fold a per-channel scale and shift (inference BatchNorm) after conv2d into its weight and bias.",
               nestable=True)
def relax_fold_batch_norm(op: ir.Operation, opts) -> None:
    fns = [op] if op.name == "func.func" else graph_functions(op)
    for f in fns:
        if op.name != "func.func" or "relax.function" in f.attributes:
            fold_function(f)
