"""ATen op -> relax conversions, one per op or op family (see :mod:`.importer`).

Each converter gets the importer, the FX node and the node's arguments with FX values
replaced by relax values (tensors), :class:`Dim` (SymInts) or Python numbers. Element
types follow torch: arithmetic is computed in the node's result type (torch's type
promotion, read from ``node.meta["val"]``), comparisons in the promoted operand type.
Ops the dialect lacks are composed from its ops (gather/index as ``take`` on a
linearized index, cumsum as a triangular matmul, scaled_dot_product_attention as
matmul + softmax); the importer then checks every result against torch's shape.
"""

from __future__ import annotations

import math
from typing import Optional

import ml_dtypes
import numpy as np
from mlir import ir

from ...dialects import relax
from ...shapes import Dim, Shape
from .importer import NP_DTYPES, Importer, converter, dtype_of

END = 2 ** 31  # strided_slice: an end at or beyond this means "to the end"


# -- helpers ------------------------------------------------------------------------------

def _out(node) -> str:
    """The element type torch gives the node's (first) result."""
    val = node.meta["val"]
    if isinstance(val, (tuple, list)):
        val = val[0]
    return dtype_of(val.dtype)


def _out_shape(im: Importer, node) -> Shape:
    val = node.meta["val"]
    if isinstance(val, (tuple, list)):
        val = val[0]
    return im.shape_of_val(val)


def _meta(a):
    import torch.fx

    return a.meta.get("val") if isinstance(a, torch.fx.Node) else a


def _promoted(node, *args) -> str:
    """torch.result_type of the operands (tensors, 0-d tensors, SymInts, numbers)."""
    import torch

    reps = []
    for a in args:
        v = _meta(a)
        if isinstance(v, torch.Tensor):
            reps.append(torch.empty(() if v.dim() == 0 else (1,), dtype=v.dtype))
        elif isinstance(v, (bool,)):
            reps.append(bool(v))
        elif isinstance(v, (int, torch.SymInt)):
            reps.append(1)
        elif isinstance(v, (float, torch.SymFloat)):
            reps.append(1.0)
        else:
            reps.append(v)
    r = reps[0]
    for b in reps[1:]:
        if isinstance(r, torch.Tensor) or isinstance(b, torch.Tensor):
            zero_d = all(not isinstance(t, torch.Tensor) or t.dim() == 0 for t in (r, b))
            r = torch.empty(() if zero_d else (1,), dtype=torch.result_type(r, b))
        else:
            r = r + b
    return dtype_of(r.dtype if isinstance(r, torch.Tensor) else torch.tensor(r).dtype)


def _rank(im: Importer, x: ir.Value) -> int:
    return im.sig(x).rank


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("f", "bf"))


def _finfo_min(dtype: str) -> float:
    return float(ml_dtypes.finfo(NP_DTYPES[dtype] if dtype in ("f16", "bf16", "f32", "f64") else np.float32).min)


# -- elementwise arithmetic -----------------------------------------------------------------

def _scaled(im, v, alpha, dt):
    if alpha is None or alpha == 1:
        return v
    return relax.multiply(v, im.tensor(alpha, dt))


@converter("aten.add.Tensor", "aten.add.Scalar")
def _add(im, node, a, b, alpha=None):
    dt = _out(node)
    return relax.add(im.tensor(a, dt), _scaled(im, im.tensor(b, dt), alpha, dt))


@converter("aten.sub.Tensor", "aten.sub.Scalar")
def _sub(im, node, a, b, alpha=None):
    dt = _out(node)
    if dt == "i1":
        raise im.error("subtraction of bool tensors is not defined (torch rejects it too)")
    return relax.subtract(im.tensor(a, dt), _scaled(im, im.tensor(b, dt), alpha, dt))


@converter("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(im, node, a, b, alpha=None):
    dt = _out(node)
    return relax.subtract(im.tensor(b, dt), _scaled(im, im.tensor(a, dt), alpha, dt))


@converter("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(im, node, a, b):
    dt = _out(node)
    return relax.multiply(im.tensor(a, dt), im.tensor(b, dt))


@converter("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div(im, node, a, b, rounding_mode=None):
    dt = _out(node)
    x, y = im.tensor(a, dt), im.tensor(b, dt)
    if rounding_mode is None:
        return relax.divide(x, y)
    if rounding_mode == "floor":
        return relax.floor_divide(x, y)
    if rounding_mode == "trunc":
        if not _is_float(dt):
            return relax.divide(x, y)  # integer divide truncates (C semantics)
        q = relax.divide(x, y)
        return relax.where(relax.less(q, im.const(0.0, dt)), relax.ceil(q), relax.floor(q))
    raise im.error(f"rounding_mode={rounding_mode!r}")


@converter("aten.floor_divide.default", "aten.floor_divide.Scalar")
def _floordiv(im, node, a, b):
    dt = _out(node)
    return relax.floor_divide(im.tensor(a, dt), im.tensor(b, dt))


@converter("aten.remainder.Tensor", "aten.remainder.Scalar")
def _remainder(im, node, a, b):
    dt = _out(node)
    x, y = im.tensor(a, dt), im.tensor(b, dt)
    return relax.subtract(x, relax.multiply(relax.floor_divide(x, y), y))


@converter("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar")
def _pow(im, node, a, b):
    dt = _out(node)
    x = im.tensor(a, dt)
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        if b == 2:
            return relax.multiply(x, x)
        if b == 1:
            return x
        if b == 0.5 and _is_float(dt):
            return relax.sqrt(x)
        if b == -0.5 and _is_float(dt):
            return relax.rsqrt(x)
    return relax.power(x, im.tensor(b, dt))


@converter("aten.maximum.default", "aten.minimum.default", "aten.max.other", "aten.min.other",
           "aten.fmax.default", "aten.fmin.default")
def _maxmin(im, node, a, b):
    """Elementwise max / min (``torch.max(a, b)`` is ``aten.max.other``); fmax/fmin only for
    non-float types, where NaN cannot occur."""
    dt = _out(node)
    name = str(node.target)
    if "fm" in name and _is_float(dt):
        raise im.error("fmax/fmin of floats (NaN-ignoring) is not supported; torch.maximum/minimum are")
    f = relax.maximum if ("max" in name.split(".")[1]) else relax.minimum
    return f(im.tensor(a, dt), im.tensor(b, dt))


@converter("aten.clamp.default", "aten.clamp.Tensor", "aten.clamp_min.default", "aten.clamp_max.default",
           "aten.clamp_min.Tensor", "aten.clamp_max.Tensor")
def _clamp(im, node, x, lo=None, hi=None, **kw):
    dt = _out(node)
    name = str(node.target)
    if "clamp_max" in name:
        lo, hi = None, lo
    lo = kw.get("min", lo)
    hi = kw.get("max", hi)
    v = im.tensor(x, dt)
    if lo is not None:
        v = relax.maximum(v, im.tensor(lo, dt))
    if hi is not None:
        v = relax.minimum(v, im.tensor(hi, dt))
    return v


# -- comparisons and logic -----------------------------------------------------------------

_CMP = {"eq": relax.equal, "ne": relax.not_equal, "lt": relax.less, "le": relax.less_equal,
        "gt": relax.greater, "ge": relax.greater_equal}


def _cmp_conv(name):
    def conv(im, node, a, b):
        ct = _promoted(node, node.args[0], node.args[1])
        return _CMP[name](im.tensor(a, ct), im.tensor(b, ct))

    return conv


for _n in _CMP:
    converter(f"aten.{_n}.Tensor", f"aten.{_n}.Scalar")(_cmp_conv(_n))


def _bool(im, x):
    return im.tensor(x, "i1")


@converter("aten.logical_not.default")
def _lnot(im, node, x):
    return relax.equal(_bool(im, x), im.const(0, "i1"))


def _logic(kind):
    def conv(im, node, a, b):
        dt = _out(node)
        if dt != "i1" and "logical" not in str(node.target):
            raise im.error(f"bitwise operations on {dt} tensors are not supported (only on bool)")
        x, y = _bool(im, a), _bool(im, b)
        if kind == "and":
            return relax.multiply(x, y)
        if kind == "xor":
            return relax.not_equal(x, y)
        return relax.where(x, im.const(1, "i1"), y)

    return conv


converter("aten.logical_and.default", "aten.bitwise_and.Tensor", "aten.__and__.Tensor",
          "aten.bitwise_and.Scalar")(_logic("and"))
converter("aten.logical_or.default", "aten.bitwise_or.Tensor", "aten.__or__.Tensor",
          "aten.bitwise_or.Scalar")(_logic("or"))
converter("aten.logical_xor.default", "aten.bitwise_xor.Tensor", "aten.__xor__.Tensor")(_logic("xor"))


@converter("aten.bitwise_not.default")
def _bnot(im, node, x):
    if _out(node) != "i1":
        raise im.error("bitwise_not on integer tensors is not supported (only on bool)")
    return relax.equal(x, im.const(0, "i1"))


@converter("aten.where.self", "aten.where.ScalarOther", "aten.where.ScalarSelf", "aten.where.Scalar")
def _where(im, node, c, a, b):
    dt = _out(node)
    return relax.where(_bool(im, c), im.tensor(a, dt), im.tensor(b, dt))


@converter("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(im, node, x, mask, value):
    dt = _out(node)
    return relax.where(_bool(im, mask), im.tensor(value, dt), im.tensor(x, dt))


# -- unary ------------------------------------------------------------------------------

_UNARY = {"exp": relax.exp, "log": relax.log, "sqrt": relax.sqrt, "rsqrt": relax.rsqrt,
          "tanh": relax.tanh, "sigmoid": relax.sigmoid, "neg": relax.negative, "abs": relax.abs,
          "relu": relax.relu, "silu": relax.silu, "sin": relax.sin, "cos": relax.cos,
          "erf": relax.erf, "floor": relax.floor, "ceil": relax.ceil, "round": relax.round}


def _unary_conv(name):
    def conv(im, node, x):
        dt = _out(node)
        if name in ("floor", "ceil", "round") and not _is_float(dt):
            return im.tensor(x, dt)
        return _UNARY[name](im.tensor(x, dt))

    return conv


for _n in _UNARY:
    converter(f"aten.{_n}.default")(_unary_conv(_n))


@converter("aten.gelu.default")
def _gelu(im, node, x, approximate="none"):
    if approximate == "tanh":
        return relax.gelu_tanh(x)
    if approximate != "none":
        raise im.error(f"approximate={approximate!r}")
    return relax.gelu(x)


@converter("aten.reciprocal.default")
def _reciprocal(im, node, x):
    dt = _out(node)
    return relax.divide(im.const(1.0, dt), im.tensor(x, dt))


@converter("aten.square.default")
def _square(im, node, x):
    v = im.tensor(x, _out(node))
    return relax.multiply(v, v)


@converter("aten.log1p.default")
def _log1p(im, node, x):
    dt = _out(node)
    return relax.log(relax.add(im.tensor(x, dt), im.const(1.0, dt)))


@converter("aten.leaky_relu.default")
def _leaky_relu(im, node, x, negative_slope=0.01):
    dt = _out(node)
    return relax.where(relax.greater(x, im.const(0.0, dt)), x, relax.multiply(x, im.const(negative_slope, dt)))


@converter("aten.hardtanh.default")
def _hardtanh(im, node, x, lo=-1.0, hi=1.0):
    dt = _out(node)
    return relax.minimum(relax.maximum(x, im.const(lo, dt)), im.const(hi, dt))


@converter("aten.relu6.default")
def _relu6(im, node, x):
    """``F.relu6`` (MobileNetV2): newer torch keeps it whole instead of a hardtanh."""
    return _hardtanh(im, node, x, 0.0, 6.0)


def _relu6_of_x_plus_3_over_6(im, dt, x):
    return relax.divide(relax.minimum(relax.maximum(relax.add(x, im.const(3.0, dt)), im.const(0.0, dt)),
                                      im.const(6.0, dt)), im.const(6.0, dt))


@converter("aten.hardsigmoid.default")
def _hardsigmoid(im, node, x):
    """relu6(x + 3) / 6 (MobileNetV3's squeeze-excitation gate)."""
    return _relu6_of_x_plus_3_over_6(im, _out(node), x)


@converter("aten.hardswish.default")
def _hardswish(im, node, x):
    """x * relu6(x + 3) / 6 (MobileNetV3)."""
    return relax.multiply(x, _relu6_of_x_plus_3_over_6(im, _out(node), x))


# -- casts and copies ------------------------------------------------------------------------

@converter("aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout", "aten.to.device",
           "aten.type_as.default", "aten.to.other")
def _to(im, node, x, *args, **kwargs):
    if kwargs.get("memory_format") not in (None,) and "channels_last" in str(kwargs.get("memory_format")):
        raise im.error("channels_last memory format is not supported")
    return im.tensor(x, _out(node))


@converter("aten.clone.default", "aten.contiguous.default", "aten.alias.default", "aten.detach.default",
           "aten.lift_fresh_copy.default", "aten.copy.default")
def _identity(im, node, x, *args, **kwargs):
    if str(node.target) == "aten.copy.default":
        return im.tensor(args[0], _out(node))  # copy(self, src): the values of src
    return x


@converter("aten.dropout.default", "aten.feature_dropout.default", "aten.alpha_dropout.default")
def _dropout(im, node, x, p=0.5, train=False):
    if train and p > 0:
        raise im.error("dropout in training mode (call model.eval() before exporting)")
    return x


@converter("aten.native_dropout.default")
def _native_dropout(im, node, x, p, train):
    if train and p > 0:
        raise im.error("dropout in training mode (call model.eval() before exporting)")
    return (x, None)


@converter("aten._assert_tensor_metadata.default")
def _assert_meta(im, node, x, size=None, stride=None, dtype=None, **kw):
    if dtype is not None and im.sig(x).dtype != dtype_of(dtype):
        raise im.error(f"tensor has element type {im.sig(x).dtype}, the program asserts {dtype}")
    return None


@converter("aten._assert_scalar.default")
def _assert_scalar(im, node, cond, msg=""):
    """A guard torch could not discharge at export: becomes a relax.assert when it relates sizes."""
    import sympy

    from .importer import _sym_expr

    e = _sym_expr(cond)
    if e is None:
        if cond is True:
            return None
        raise im.error(f"assertion on a non-size value ({cond!r})")
    if e is sympy.true:
        return None
    rels = {sympy.Eq: "eq", sympy.Le: "le", sympy.Ge: "ge", sympy.Lt: "lt", sympy.Gt: "gt"}
    kind = next((v for k, v in rels.items() if isinstance(e, k)), None)
    if kind is None:
        raise im.error(f"guard {e} is not a size relation relax can check")
    lhs, rhs = im._from_sympy(e.lhs), im._from_sympy(e.rhs)
    if kind in ("ge", "gt"):
        lhs, rhs, kind = rhs, lhs, "le" if kind == "ge" else "lt"
    if kind == "lt":
        lhs, kind = lhs + 1, "le"
    relax.build("assert", dims=[lhs, rhs], predicate=kind, message=f"torch guard {e}")
    return None


@converter("aten.sym_constrain_range_for_size.default", "aten.sym_constrain_range.default")
def _constrain(im, node, *args, **kwargs):
    return None


@converter("aten.sym_size.int")
def _sym_size(im, node, x, dim):
    return im.sig(x).shape[_axis(dim, _rank(im, x))]


@converter("aten.sym_numel.default")
def _sym_numel(im, node, x):
    return im.sig(x).shape.numel()


# -- creation ------------------------------------------------------------------------------

def _dims(im, sizes):
    return [im.dim(s) for s in sizes]


def _fill(im, node, shape, value):
    dt = _out(node)
    if dt == "i1" and not isinstance(value, (ir.Value, Dim)):
        # i1 fill kernels do not parse (arith.constant true : i1): fill i8 and cast
        return relax.astype(_fill_dtype(shape, int(bool(value)), "i8"), dtype="i1")
    if isinstance(value, ir.Value) or isinstance(value, Dim):
        return relax.broadcast_to(im.tensor(value, dt), shape=shape)
    return _fill_dtype(shape, value, dt)


def _fill_dtype(shape, value, dt):
    if value == 0:
        return relax.zeros(shape=shape, dtype=dt)
    if value == 1:
        return relax.ones(shape=shape, dtype=dt)
    return relax.full(shape=shape, value=float(value), dtype=dt)


@converter("aten.full.default")
def _full(im, node, size, value, **kw):
    return _fill(im, node, _dims(im, size), value)


@converter("aten.zeros.default", "aten.empty.memory_format", "aten.new_zeros.default", "aten.new_empty.default")
def _zeros(im, node, *args, **kw):
    size = args[-1] if str(node.target).startswith("aten.new_") else args[0]
    return _fill(im, node, _dims(im, size), 0)


@converter("aten.ones.default", "aten.new_ones.default")
def _ones(im, node, *args, **kw):
    size = args[-1] if str(node.target).startswith("aten.new_") else args[0]
    return _fill(im, node, _dims(im, size), 1)


@converter("aten.new_full.default")
def _new_full(im, node, x, size, value, **kw):
    return _fill(im, node, _dims(im, size), value)


@converter("aten.full_like.default", "aten.zeros_like.default", "aten.ones_like.default", "aten.empty_like.default")
def _like(im, node, x, *args, **kw):
    name = str(node.target)
    value = args[0] if "full_like" in name else (1 if "ones" in name else 0)
    return _fill(im, node, list(im.sig(x).shape), value)


@converter("aten.scalar_tensor.default")
def _scalar_tensor(im, node, value, **kw):
    return im.tensor(value, _out(node))


@converter("aten.fill.Scalar", "aten.fill.Tensor")
def _fill_like(im, node, x, value):
    return _fill(im, node, list(im.sig(x).shape), value)


@converter("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(im, node, *args, **kw):
    name = str(node.target)
    if name.endswith("default"):
        start, end, step = 0, args[0], 1
    else:
        start, end = args[0], args[1]
        step = args[2] if len(args) > 2 else kw.get("step", 1)
    for v in (start, end, step):
        if isinstance(v, float) and not v.is_integer():
            raise im.error("arange with non-integer bounds is not supported")
    start, end, step = (im.dim(int(v) if isinstance(v, float) else v) for v in (start, end, step))
    if step.is_static and step.value < 0:
        raise im.error("arange with a negative step is not supported")
    dt = _out(node)
    r = relax.arange(start=start, end=end, step=step, dtype="i64")
    return r if dt == "i64" else relax.astype(r, dtype=dt)


# -- shapes ------------------------------------------------------------------------------

@converter("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.view_copy.default",
           "aten.flatten.using_ints", "aten.unflatten.int", "aten._reshape_alias.default")
def _reshape(im, node, x, *args, **kw):
    shape = _out_shape(im, node)
    if im.sig(x).shape == shape:
        return x
    return relax.reshape(x, shape=list(shape))


def _pretransposed(im, node) -> bool:
    """The operand is a weight the importer passes transposed (see importer._only_linear_weight)."""
    return getattr(node.args[0], "name", None) in im.transposed


@converter("aten.permute.default", "aten.permute_copy.default")
def _permute(im, node, x, dims):
    if _pretransposed(im, node):
        return x
    r = _rank(im, x)
    dims = [_axis(d, r) for d in dims]
    if dims == list(range(r)):
        return x
    return relax.permute_dims(x, axes=dims)


@converter("aten.transpose.int", "aten.t.default", "aten.numpy_T.default")
def _transpose(im, node, x, d0=0, d1=1):
    if _pretransposed(im, node):
        return x
    r = _rank(im, x)
    if r < 2:
        return x
    if not str(node.target).startswith("aten.transpose"):
        axes = list(range(r))[::-1]
    else:
        axes = list(range(r))
        a, b = _axis(d0, r), _axis(d1, r)
        axes[a], axes[b] = axes[b], axes[a]
    if axes == list(range(r)):
        return x
    return relax.permute_dims(x, axes=axes)


@converter("aten.expand.default", "aten.expand_copy.default", "aten.broadcast_to.default")
def _expand(im, node, x, sizes, **kw):
    shape = _out_shape(im, node)
    if im.sig(x).shape == shape:
        return x
    return relax.broadcast_to(x, shape=list(shape))


@converter("aten.unsqueeze.default", "aten.unsqueeze_copy.default")
def _unsqueeze(im, node, x, dim):
    return relax.expand_dims(x, axis=[_axis(dim, _rank(im, x) + 1)])


@converter("aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default", "aten.squeeze_copy.dim")
def _squeeze(im, node, x, dims=None):
    sig = im.sig(x)
    if dims is None:
        axes = [i for i, d in enumerate(sig.shape) if isinstance(d, Dim) and d.is_static and d.value == 1]
    else:
        dims = [dims] if isinstance(dims, int) else list(dims)
        # torch leaves a dim that is not 1 alone
        axes = [_axis(d, sig.rank) for d in dims
                if isinstance(sig.shape[_axis(d, sig.rank)], Dim) and sig.shape[_axis(d, sig.rank)] == 1]
    if not axes:
        return x
    return relax.squeeze(x, axis=axes)


def _slice(im, x, axis, start, end, step=1):
    r = _rank(im, x)
    axis = _axis(axis, r)
    start = 0 if start is None else start
    end = END if end is None else end
    if isinstance(end, int) and end >= END:
        end = END
    if isinstance(start, int) and isinstance(end, int) and start == 0 and end == END and step == 1:
        return x
    return relax.strided_slice(x, axes=[axis], begin=[im.dim(start)], end=[im.dim(end)], strides=[im.dim(step)])


@converter("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice_conv(im, node, x, dim=0, start=None, end=None, step=1):
    return _slice(im, x, dim, start, end, step)


@converter("aten.slice_scatter.default")
def _slice_scatter(im, node, x, src, dim=0, start=None, end=None, step=1):
    """``x`` with ``x[start:start + len(src)]`` along ``dim`` replaced by ``src`` (step 1):
    the concat of the part before, ``src`` and the part after (empty parts left out)."""
    from ...shapes import Truth, prove_equal

    if step != 1:
        raise im.error(f"slice_scatter with step {step} is not supported (step 1 is)")
    r = _rank(im, x)
    axis = _axis(dim, r)
    n = im.sig(x).shape[axis]
    start = Dim.of(0) if start is None else im.dim(start)
    if start.is_static and start.value < 0:
        start = start + n
    stop = start + im.sig(src).shape[axis]
    dt = im.sig(x).dtype
    parts = []
    if not (start.is_static and start.value == 0):
        parts.append(relax.strided_slice(x, axes=[axis], begin=[0], end=[start]))
    parts.append(im.tensor(src, dt))
    if prove_equal(stop, n) is not Truth.TRUE:
        parts.append(relax.strided_slice(x, axes=[axis], begin=[stop], end=[n]))
    return parts[0] if len(parts) == 1 else relax.concat(parts, axis=axis)


@converter("aten.narrow.default")
def _narrow(im, node, x, dim, start, length):
    return _slice(im, x, dim, start, im.dim(start) + im.dim(length))


@converter("aten.select.int", "aten.select_copy.int")
def _select(im, node, x, dim, index):
    r = _rank(im, x)
    axis = _axis(dim, r)
    if isinstance(index, int) and index < 0:
        end = END if index == -1 else index + 1
    else:
        end = im.dim(index) + 1
    s = relax.strided_slice(x, axes=[axis], begin=[im.dim(index)], end=[im.dim(end)])
    return relax.squeeze(s, axis=[axis])


@converter("aten.cat.default", "aten.concat.default")
def _cat(im, node, tensors, dim=0):
    dt = _out(node)
    ts = [im.tensor(t, dt) for t in tensors if not (im.sig(t).rank == 1 and im.sig(t).shape[0] == 0)]
    if len(ts) == 1:
        return ts[0]
    return relax.concat(ts, axis=_axis(dim, _rank(im, ts[0])))


@converter("aten.stack.default")
def _stack(im, node, tensors, dim=0):
    dt = _out(node)
    r = _rank(im, tensors[0]) + 1
    ts = [relax.expand_dims(im.tensor(t, dt), axis=[_axis(dim, r)]) for t in tensors]
    return ts[0] if len(ts) == 1 else relax.concat(ts, axis=_axis(dim, r))


@converter("aten.split.Tensor", "aten.split_with_sizes.default", "aten.chunk.default",
           "aten.unbind.int")
def _split(im, node, x, arg=None, dim=0):
    r = _rank(im, x)
    name = str(node.target)
    if name.startswith("aten.unbind"):
        dim = 0 if arg is None else arg
    axis = _axis(dim, r)
    outs = []
    start = Dim.of(0)
    for val in node.meta["val"]:
        n = im.dim(val.shape[axis]) if not name.startswith("aten.unbind") else Dim.of(1)
        s = relax.strided_slice(x, axes=[axis], begin=[start], end=[start + n])
        outs.append(relax.squeeze(s, axis=[axis]) if name.startswith("aten.unbind") else s)
        start = start + n
    return tuple(outs)


@converter("aten.repeat.default")
def _repeat(im, node, x, repeats):
    """tile: (d0, ...) -> broadcast to (r0, d0, r1, d1, ...) -> reshape (r0*d0, ...)."""
    sig = im.sig(x)
    reps = [im.dim(r) for r in repeats]
    lead = len(reps) - sig.rank
    dims = [Dim.of(1)] * lead + list(sig.shape)
    v = relax.reshape(x, shape=[e for d in dims for e in (1, d)])
    v = relax.broadcast_to(v, shape=[e for r, d in zip(reps, dims) for e in (r, d)])
    return relax.reshape(v, shape=[r * d for r, d in zip(reps, dims)])


@converter("aten.roll.default")
def _roll(im, node, x, shifts, dims=()):
    """torch.roll: per dim, the last ``k = shift mod n`` elements moved to the front, as the
    concat of two slices (``k`` symbolic when ``n`` is); no dims: the flattened tensor."""
    shifts = [shifts] if isinstance(shifts, (int, Dim)) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    sig = im.sig(x)
    v = x
    if not dims:
        if len(shifts) != 1:
            raise im.error("roll without dims takes one shift")
        v = relax.flatten(x)
        dims = [0]
    if len(shifts) != len(dims):
        raise im.error(f"roll with {len(shifts)} shifts for {len(dims)} dims")
    for shift, dim in zip(shifts, dims):
        axis = _axis(dim, _rank(im, v))
        n = im.sig(v).shape[axis]
        k = im.dim(shift) % n
        if k.is_static and k.value == 0:
            continue
        cut = n - k
        v = relax.concat([relax.strided_slice(v, axes=[axis], begin=[cut], end=[n]),
                          relax.strided_slice(v, axes=[axis], begin=[0], end=[cut])], axis=axis)
    return relax.reshape(v, shape=list(sig.shape)) if im.sig(v).rank != sig.rank else v


_PAD_MODES = {"constant_pad_nd": "constant", "reflection_pad": "reflect", "replication_pad": "replicate",
              "_pad_circular": "circular"}


@converter("aten.pad.default", "aten.constant_pad_nd.default", "aten.reflection_pad1d.default",
           "aten.reflection_pad2d.default", "aten.replication_pad1d.default", "aten.replication_pad2d.default",
           "aten._pad_circular.default")
def _pad(im, node, x, pad, mode="constant", value=None):
    """F.pad and the padding modes of nn.Conv2d, per padded axis one ``take`` at a source
    index computed at run time from the (symbolic) length n: output position p reads
    ``p - lo`` reflected (reflect), clamped (replicate) or modulo n (circular); constant
    padding reads a clamped index and puts ``value`` outside (negative pads crop)."""
    name = str(node.target).split(".")[1]
    if name == "constant_pad_nd" and not isinstance(mode, str):
        value = mode                                       # constant_pad_nd(x, pad, value)
    mode = next((m for k, m in _PAD_MODES.items() if name.startswith(k)), None) or mode
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise im.error(f"padding mode {mode!r}")
    dt = im.sig(x).dtype
    rank = _rank(im, x)
    pad = [im.dim(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise im.error(f"pad {[str(p) for p in pad]} must be pairs for at most {rank} dims")
    v = x
    for k in range(len(pad) // 2):
        lo, hi = pad[2 * k], pad[2 * k + 1]
        if not (lo.is_static and hi.is_static):
            raise im.error("symbolic padding amounts are not supported")
        lo, hi = lo.value, hi.value
        if lo == 0 and hi == 0:
            continue
        axis = rank - 1 - k
        n = im.sig(v).shape[axis]
        if mode != "constant" and (lo < 0 or hi < 0):
            raise im.error(f"negative padding in {mode} mode")
        if mode == "reflect":
            relax.build("assert", dims=[max(lo, hi) + 1, n], predicate="le",
                        message=f"reflect padding by {max(lo, hi)} needs a size of at least {max(lo, hi) + 1}")
        elif mode == "circular":
            relax.build("assert", dims=[max(lo, hi), n], predicate="le",
                        message=f"circular padding by {max(lo, hi)} needs a size of at least {max(lo, hi)}")
        length = n + lo + hi
        src = relax.subtract(relax.arange(end=length, dtype="i64"), im.const(lo, "i64"))
        size, zero = im.size_tensor(n), im.const(0, "i64")
        last = relax.subtract(size, im.const(1, "i64"))
        clamped = relax.minimum(relax.maximum(src, zero), last)
        if mode == "reflect":
            idx = relax.subtract(last, relax.abs(relax.subtract(last, relax.abs(src))))
        elif mode == "circular":
            idx = relax.subtract(relax.add(src, size), relax.multiply(relax.floor_divide(relax.add(src, size), size),
                                                                       size))
        else:
            idx = clamped
        taken = relax.take(v, idx, axis=axis)
        if mode == "constant":
            inside = relax.equal(src, clamped)
            inside = relax.reshape(inside, shape=[length] + [1] * (rank - 1 - axis))
            fill = 0.0 if value is None else value
            v = relax.where(inside, taken, im.const(fill if _is_float(dt) else int(fill), dt))
        else:
            v = taken
    return v


@converter("aten.tril.default", "aten.triu.default")
def _tri(im, node, x, diagonal=0):
    f = relax.tril if "tril" in str(node.target) else relax.triu
    return f(x, k=diagonal)


# -- gathers ------------------------------------------------------------------------------

def _nonneg_index(im, idx, size: Dim):
    """torch index semantics: a negative index counts from the end of the dim."""
    idx = im.tensor(idx, "i64")
    return relax.where(relax.less(idx, im.const(0, "i64")), relax.add(idx, im.size_tensor(size)), idx)


@converter("aten.embedding.default")
def _embedding(im, node, weight, indices, *args, **kw):
    return relax.take(weight, im.tensor(indices, "i64"), axis=0)


@converter("aten.index_select.default")
def _index_select(im, node, x, dim, index):
    r = _rank(im, x)
    return relax.take(x, im.tensor(index, "i64"), axis=_axis(dim, r))


@converter("aten.index.Tensor")
def _index(im, node, x, indices):
    """x[..., i1, ..., ik, ...] with k consecutive integer index tensors (broadcast
    together) after leading full slices: take on the linearized index."""
    sig = im.sig(x)
    lead = 0
    while lead < len(indices) and indices[lead] is None:
        lead += 1
    idx = list(indices[lead:])
    while idx and idx[-1] is None:
        idx.pop()
    if not idx or any(i is None for i in idx):
        raise im.error("advanced indexing with index tensors separated by slices is not supported")
    for i in idx:
        if im.sig(i).dtype == "i1":
            raise im.error("boolean mask indexing (x[mask]) has a data-dependent output length, which relax "
                           "cannot bind at run time (no op turns a value into a shape symbol); use "
                           "torch.where(mask, x, fill) or index with mask.nonzero() computed outside the model")
    dims = list(sig.shape[lead:lead + len(idx)])
    lin = None
    for i, d in zip(idx, dims):
        i = _nonneg_index(im, i, d)
        lin = i if lin is None else relax.add(relax.multiply(lin, im.size_tensor(d)), i)
    src = x
    if len(idx) > 1:
        flat = Dim.of(1)
        for d in dims:
            flat = flat * d
        src = relax.reshape(x, shape=list(sig.shape[:lead]) + [flat] + list(sig.shape[lead + len(idx):]))
    return relax.take(src, lin, axis=lead)


@converter("aten.gather.default")
def _gather(im, node, x, dim, index, sparse_grad=False):
    """out[p] = x[p with p[dim] = index[p]]: take on the flattened x at a linearized index."""
    sig, isig = im.sig(x), im.sig(index)
    r = sig.rank
    axis = _axis(dim, r)
    lin = None
    for j in range(r):
        if j == axis:
            c = _nonneg_index(im, index, sig.shape[j])
        else:
            shape = [1] * r
            shape[j] = isig.shape[j]
            c = relax.reshape(relax.arange(end=isig.shape[j], dtype="i64"), shape=shape)
        lin = c if lin is None else relax.add(relax.multiply(lin, im.size_tensor(sig.shape[j])), c)
    return relax.take(relax.flatten(x), relax.broadcast_to(lin, shape=list(isig.shape)), axis=0)


# -- scans ------------------------------------------------------------------------------------

@converter("aten.cumsum.default")
def _cumsum(im, node, x, dim, dtype=None):
    """A triangular matmul: y[..., j] = sum_{i <= j} x[..., i] (relax has no scan op)."""
    dt = _out(node)
    v = im.tensor(x, dt)
    r = _rank(im, v)
    axis = _axis(dim, r)
    if r == 0:
        return v
    perm = list(range(r))
    if axis != r - 1:
        perm[axis], perm[-1] = perm[-1], perm[axis]
        v = relax.permute_dims(v, axes=perm)
    n = im.sig(v).shape[-1]
    tri = relax.triu(relax.ones(shape=[n, n], dtype=dt), k=0)
    y = relax.matmul(v, tri)
    return relax.permute_dims(y, axes=perm) if axis != r - 1 else y


@converter("aten.diff.default")
def _diff(im, node, x, n=1, dim=-1, prepend=None, append=None):
    r = _rank(im, x)
    axis = _axis(dim, r)
    parts = [t for t in (prepend, x, append) if t is not None]
    v = relax.concat(parts, axis=axis) if len(parts) > 1 else x
    for _ in range(n):
        hi = relax.strided_slice(v, axes=[axis], begin=[1], end=[END])
        d = im.sig(v).shape[axis]
        lo = relax.strided_slice(v, axes=[axis], begin=[0], end=[d - 1])
        v = relax.not_equal(hi, lo) if im.sig(v).dtype == "i1" else relax.subtract(hi, lo)
    return v


# -- reductions ------------------------------------------------------------------------------

def _axes(dims, r):
    if dims is None or dims == []:
        return None
    dims = [dims] if isinstance(dims, int) else dims
    return [_axis(d, r) for d in dims]


@converter("aten.sum.dim_IntList", "aten.sum.default", "aten.mean.dim", "aten.mean.default",
           "aten.prod.dim_int", "aten.prod.default", "aten.amax.default", "aten.amin.default")
def _reduce(im, node, x, dims=None, keepdim=False, dtype=None, **kw):
    name = str(node.target).split(".")[1]
    dt = _out(node)
    if isinstance(dims, bool):  # prod.dim_int(x, dim, keepdim)
        dims, keepdim = None, dims
    v = im.tensor(x, dt)
    if dt == "i1" and name in ("amax", "amin"):
        v = relax.astype(v, dtype="i32")
    f = {"sum": relax.sum, "mean": relax.mean, "prod": relax.prod, "amax": relax.max, "amin": relax.min}[name]
    out = f(v, axes=_axes(dims, _rank(im, v)), keepdims=bool(keepdim))
    return relax.astype(out, dtype="i1") if dt == "i1" and name in ("amax", "amin") else out


@converter("aten.any.dim", "aten.any.dims", "aten.any.default", "aten.all.dim", "aten.all.dims", "aten.all.default")
def _anyall(im, node, x, dims=None, keepdim=False):
    v = relax.astype(_bool(im, x), dtype="i32")
    f = relax.max if "any" in str(node.target) else relax.min
    return relax.astype(f(v, axes=_axes(dims, _rank(im, v)), keepdims=bool(keepdim)), dtype="i1")


@converter("aten.max.default", "aten.min.default")
def _maxmin_all(im, node, x):
    """``torch.max(x)``: the maximum of every element, a 0-d tensor."""
    dt = im.sig(x).dtype
    v = relax.astype(x, dtype="i32") if dt == "i1" else x
    out = (relax.max if "max" in str(node.target) else relax.min)(v, axes=None, keepdims=False)
    return relax.astype(out, dtype="i1") if dt == "i1" else out


@converter("aten.max.dim", "aten.min.dim")
def _maxmin_dim(im, node, x, dim, keepdim=False):
    big = "max" in str(node.target)
    axes = [_axis(dim, _rank(im, x))]
    vals = (relax.max if big else relax.min)(x, axes=axes, keepdims=bool(keepdim))
    idx = (relax.argmax if big else relax.argmin)(x, axis=axes[0], keepdims=bool(keepdim))
    return (vals, idx)


@converter("aten.argmax.default", "aten.argmin.default")
def _arg(im, node, x, dim=None, keepdim=False):
    f = relax.argmax if "argmax" in str(node.target) else relax.argmin
    return f(x, axis=None if dim is None else _axis(dim, _rank(im, x)), keepdims=bool(keepdim))


@converter("aten.softmax.int", "aten._softmax.default", "aten.log_softmax.int", "aten._log_softmax.default",
           "aten._safe_softmax.default")
def _softmax(im, node, x, dim, arg=None):
    dt = _out(node)
    v = im.tensor(x, dt)
    f = relax.log_softmax if "log_softmax" in str(node.target) else relax.softmax
    axis = _axis(dim, _rank(im, v))
    p = f(v, axis=axis)
    if "_safe_softmax" in str(node.target):
        p = _zero_dead_rows(im, v, p, dt, axis)
    return p


def _zero_dead_rows(im, scores, p, dt, axis=-1):
    """0 where every entry of the row is -inf (torch's _safe_softmax), p elsewhere."""
    rowmax = relax.max(scores, axes=[axis], keepdims=True)
    return relax.where(relax.equal(rowmax, im.const(-math.inf, dt)), im.const(0.0, dt), p)


# -- normalization --------------------------------------------------------------------------

def _norm_params(im, x, k, weight, bias):
    sig = im.sig(x)
    shape = list(sig.shape[sig.rank - k:])
    w = weight if weight is not None else relax.ones(shape=shape, dtype=sig.dtype)
    b = bias if bias is not None else relax.zeros(shape=shape, dtype=sig.dtype)
    return w, b, list(range(-k, 0))


@converter("aten.layer_norm.default")
def _layer_norm(im, node, x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=False):
    w, b, axes = _norm_params(im, x, len(normalized_shape), weight, bias)
    return relax.layer_norm(x, w, b, axes=axes, epsilon=float(eps))


@converter("aten.native_layer_norm.default")
def _native_layer_norm(im, node, x, normalized_shape, weight, bias, eps):
    return (_layer_norm(im, node, x, normalized_shape, weight, bias, eps), None, None)


@converter("aten.rms_norm.default")
def _rms_norm(im, node, x, normalized_shape, weight=None, eps=None):
    dt = im.sig(x).dtype
    if eps is None:
        eps = float(np.finfo(np.float32 if dt == "f32" else np.float64).eps)
    w, _, axes = _norm_params(im, x, len(normalized_shape), weight, None)
    return relax.rms_norm(x, w, axes=axes, epsilon=float(eps))


# -- contractions ------------------------------------------------------------------------------

def _weight_t(im, node, w):
    """W^T for linear: the parameter itself when the importer passes it pre-transposed."""
    wn = node.args[1]
    if getattr(wn, "name", None) in im.transposed:
        return w
    r = _rank(im, w)
    return relax.permute_dims(w, axes=[1, 0]) if r == 2 else w


@converter("aten.linear.default")
def _linear(im, node, x, w, b=None):
    y = relax.matmul(x, _weight_t(im, node, w))
    return relax.add(y, b) if b is not None else y


@converter("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _matmul(im, node, a, b):
    return relax.matmul(a, b)


@converter("aten.addmm.default", "aten.baddbmm.default")
def _addmm(im, node, bias, a, b, beta=1, alpha=1):
    dt = _out(node)
    y = relax.matmul(a, b)
    if alpha != 1:
        y = relax.multiply(y, im.const(alpha, dt))
    if beta == 0:
        return y
    bias = bias if beta == 1 else relax.multiply(bias, im.const(beta, dt))
    return relax.add(y, bias)


def _batched_3d(im, t: ir.Value, batch: list, nb: Dim) -> ir.Value:
    """``t`` (broadcastable to ``batch + [x, y]``) as an operand of the flattened (nb, x, y)
    attention tensors: (x, y) when its batch dims are all 1 (broadcast by the op), else
    (nb, x, y), broadcast over the batch dims it lacks (e.g. a (b, 1, L, S) mask over heads)."""
    sig = im.sig(t)
    x, y = sig.shape[-2], sig.shape[-1]
    lead = [Dim.of(1)] * (len(batch) + 2 - sig.rank) + list(sig.shape[:-2])
    if all(d.is_static and d.value == 1 for d in lead):
        return relax.reshape(t, shape=[x, y]) if sig.rank != 2 else t
    if Shape(lead) != Shape(batch):
        t = relax.broadcast_to(t, shape=list(batch) + [x, y])
    return relax.reshape(t, shape=[nb, x, y])


def _attention_masks(im, node, attn_mask, is_causal: bool, batch: list, nb: Dim, L: Dim, S: Dim, dt: str):
    """(bias, live) for the flattened scores (nb, L, S): ``bias`` is added to the scores
    (a boolean or causal mask as 0 where kept and the dtype's min where masked, as
    transformers' eager attention does), ``live`` (None, or 1/0 per query row, shape
    broadcastable to (nb, L, 1)) zeroes the output of a row whose every key is masked
    (torch's safe softmax). Both are computed once per mask and reused by every layer."""
    mask_node = node.kwargs.get("attn_mask", node.args[3] if len(node.args) > 3 else None)
    key = ("attention_masks", getattr(mask_node, "name", None), bool(is_causal), dt, str(Shape(batch)), str(L),
           str(S))
    if key in im.memo:
        return im.memo[key]
    keep = None
    if is_causal:
        keep = relax.astype(relax.tril(relax.ones(shape=[L, S], dtype="i8"), k=0), dtype="i1")
    bias = live = None
    bool_mask = attn_mask is not None and im.sig(attn_mask).dtype == "i1"
    if bool_mask:
        keep = attn_mask if keep is None else relax.multiply(attn_mask, keep)  # i1 multiply: and
    elif attn_mask is not None:
        bias = _batched_3d(im, im.tensor(attn_mask, dt), batch, nb)
    if keep is not None:
        low = im.const(_finfo_min(dt), dt)
        bias = _batched_3d(im, relax.where(keep, im.const(0.0, dt), low), batch, nb)
        # The bias ends with a max over a unit axis (exact: a copy) so that it is a kernel of
        # its own, run once: relax-fuse-ops never merges a reduction into its consumers, while
        # an elementwise/injective producer would join the first layer's add + softmax as an
        # extra output (a multi-output kernel, which no schedule takes).
        bias = relax.max(relax.expand_dims(bias, axis=[im.sig(bias).rank]), axes=[-1])
        if bool_mask:   # a row is live when some key is kept (read from the mask, before the broadcast)
            rows = relax.max(relax.astype(keep, dtype="i32"), axes=[-1], keepdims=True)
            live = _batched_3d(im, relax.astype(rows, dtype=dt), batch, nb)
    im.memo[key] = (bias, live)
    return bias, live


@converter("aten.scaled_dot_product_attention.default")
def _sdpa(im, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """softmax(q k^T * scale + mask) v, batch dims flattened so the products are batched
    3-D matmuls (BLAS) and the softmax runs on their (nb, L, S) result in place: no reshape
    between them and a mask that is one f32 bias added to the scores, so that the add and
    the softmax are one row kernel (the rows schedule takes f32 generics only). A boolean or
    causal mask keeps scores where True (masked: the dtype's min, as transformers' eager
    attention does; the sum is clamped at that min so it stays finite); a query row whose
    every key is masked gives 0 like torch's safe softmax, applied to the (nb, L, Ev) output
    (a row of p times 0) rather than to the scores."""
    if dropout_p:
        raise im.error("attention dropout (dropout_p > 0) is not supported in inference")
    qs, ks, vs = im.sig(q), im.sig(k), im.sig(v)
    dt = qs.dtype
    L, E = qs.shape[-2], qs.shape[-1]
    S, Ev = ks.shape[-2], vs.shape[-1]
    batch = list(qs.shape[:-2])
    if enable_gqa and qs.rank >= 3 and ks.shape[-3] != qs.shape[-3]:
        hq, hk = qs.shape[-3], ks.shape[-3]
        if not (hq.is_static and hk.is_static and hq.value % hk.value == 0):
            raise im.error(f"grouped-query attention needs static head counts dividing each other ({hq}, {hk})")
        rep = hq.value // hk.value

        def repeat(t, sig):
            pre = list(sig.shape[:-3])
            e = relax.expand_dims(t, axis=[sig.rank - 2])
            e = relax.broadcast_to(e, shape=pre + [hk, rep] + list(sig.shape[-2:]))
            return relax.reshape(e, shape=pre + [hq] + list(sig.shape[-2:]))

        k, v = repeat(k, ks), repeat(v, vs)
        ks, vs = im.sig(k), im.sig(v)
    if Shape(ks.shape[:-2]) != Shape(batch) or Shape(vs.shape[:-2]) != Shape(batch):
        raise im.error("attention with broadcast batch dims between q, k and v is not supported")
    nb = Dim.of(1)
    for d in batch:
        nb = nb * d
    if scale is None:
        if not E.is_static:
            raise im.error("attention with a symbolic head dim needs an explicit scale")
        scale = 1.0 / math.sqrt(E.value)
    # The scale multiplies the scores (it joins the softmax's row kernel), not q: q stays the
    # plain head split of its projection, which relax-dispatch-library's head views read in
    # place (no copy of q, k or v).
    q3 = relax.reshape(q, shape=[nb, L, E]) if batch else q
    k3 = relax.reshape(k, shape=[nb, S, E]) if batch else k
    v3 = relax.reshape(v, shape=[nb, S, Ev]) if batch else v
    scores = relax.matmul(q3, relax.permute_dims(k3, axes=[0, 2, 1] if batch else [1, 0]))
    scores = relax.multiply(scores, im.const(scale, dt))
    live = None
    if attn_mask is not None or is_causal:
        bias, live = _attention_masks(im, node, attn_mask, is_causal, batch if batch else [], nb, L, S, dt)
        scores = relax.add(scores, bias)
        if live is not None or is_causal:   # 0 / min bias: never -inf (a masked score + min could round to it)
            scores = relax.maximum(scores, im.const(_finfo_min(dt), dt))
    p = relax.softmax(scores, axis=-1)
    if attn_mask is not None and im.sig(attn_mask).dtype != "i1":
        p = _zero_dead_rows(im, scores, p, dt)
    out = relax.matmul(p, v3)
    if live is not None:
        out = relax.multiply(out, live)
    return relax.reshape(out, shape=batch + [L, Ev]) if batch else out


# -- pooling (CNN heads) ----------------------------------------------------------------------

@converter("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default",
           "aten.adaptive_avg_pool1d.default", "aten.adaptive_max_pool2d.default",
           "aten.adaptive_max_pool1d.default")
def _adaptive_pool(im, node, x, output_size):
    """Global pooling (output size 1) as a reduction; an output size dividing a static
    input size as the equal windows of max_pool2d / avg_pool2d (torch's windows then);
    average pooling of any other (symbolic) size as one averaging matmul per axis, max
    pooling as one masked max per axis (a max over a rectangle is separable)."""
    big = "max" in str(node.target)
    k = len(output_size)
    sizes = list(im.sig(x).shape[-k:])
    if all(int(o) == 1 for o in output_size):
        y = (relax.max if big else relax.mean)(x, axes=list(range(-k, 0)), keepdims=True)
    elif all(d.is_static and d.value % int(o) == 0 for d, o in zip(sizes, output_size)):
        win = [d.value // int(o) for d, o in zip(sizes, output_size)]
        v, back = _to_nchw(im, x, k)
        win = [1] * (2 - k) + win
        pool = relax.max_pool2d if big else relax.avg_pool2d
        y = back(pool(v, pool_size=win, strides=win))
    else:
        y = x
        for axis, (n, o) in enumerate(zip(sizes, output_size), start=_rank(im, x) - k):
            y = (_adaptive_max_axis if big else _adaptive_avg_axis)(im, y, axis, n, int(o))
    return (y, None) if big else y


def _adaptive_windows(im, n: Dim, o: int):
    """torch's adaptive windows of an axis of (possibly symbolic) length ``n`` to ``o``:
    ``[i*n // o, ceil((i + 1)*n / o))``, as (start, end) of shape (o, 1) and the (o, n)
    mask of the positions inside, computed at run time from the size."""
    i = relax.reshape(relax.arange(end=o, dtype="i64"), shape=[o, 1])
    j = relax.reshape(relax.arange(end=n, dtype="i64"), shape=[1, n])
    size, oc = im.size_tensor(n), im.const(o, "i64")
    start = relax.floor_divide(relax.multiply(i, size), oc)
    end = relax.floor_divide(relax.add(relax.multiply(relax.add(i, im.const(1, "i64")), size), im.const(o - 1, "i64")),
                             oc)
    return start, end, relax.multiply(relax.greater_equal(j, start), relax.less(j, end))


def _adaptive_max_axis(im, x, axis: int, n: Dim, o: int):
    """Adaptive max pooling of one axis of symbolic length ``n`` to ``o``: the axis moved
    last, broadcast to (..., o, n), positions outside window i set to the dtype's lowest
    value, and the max over n (every window holds at least one position)."""
    from ...ops.kernels import lowest

    dt = im.sig(x).dtype
    rank = _rank(im, x)
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    v = relax.permute_dims(x, axes=perm) if axis != rank - 1 else x
    _, _, inside = _adaptive_windows(im, n, o)
    masked = relax.where(inside, relax.expand_dims(v, axis=[rank - 1]), im.const(float(lowest(dt)), dt))
    y = relax.max(masked, axes=[-1])
    return relax.permute_dims(y, axes=perm) if axis != rank - 1 else y


def _adaptive_avg_axis(im, x, axis: int, n: Dim, o: int):
    """Adaptive average pooling of one axis of (possibly symbolic) length ``n`` to ``o``:
    torch's windows ``[i*n // o, ceil((i + 1)*n / o))`` as an (o, n) averaging matrix built
    at run time from the size, applied by a matmul (the windows of H and W are separable)."""
    dt = im.sig(x).dtype
    rank = _rank(im, x)
    start, end, inside = _adaptive_windows(im, n, o)
    weight = relax.divide(im.const(1.0, dt), relax.astype(relax.subtract(end, start), dtype=dt))
    mat = relax.where(inside, relax.broadcast_to(weight, shape=[o, n]), im.const(0.0, dt))   # (o, n)
    if axis == rank - 1:
        return relax.matmul(x, relax.permute_dims(mat, axes=[1, 0]))
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    y = relax.matmul(relax.permute_dims(x, axes=perm), relax.permute_dims(mat, axes=[1, 0]))
    return relax.permute_dims(y, axes=perm)


@converter("aten.linalg_vector_norm.default")
def _vector_norm(im, node, x, ord=2, dim=None, keepdim=False, dtype=None):
    dt = _out(node)
    v = im.tensor(x, dt)
    axes = _axes(dim, _rank(im, v))
    keep = bool(keepdim)
    if ord == 2:
        return relax.sqrt(relax.sum(relax.multiply(v, v), axes=axes, keepdims=keep))
    if ord == 1:
        return relax.sum(relax.abs(v), axes=axes, keepdims=keep)
    if ord == math.inf:
        return relax.max(relax.abs(v), axes=axes, keepdims=keep)
    if isinstance(ord, (int, float)) and ord > 0:
        s = relax.sum(relax.power(relax.abs(v), im.const(ord, dt)), axes=axes, keepdims=keep)
        return relax.power(s, im.const(1.0 / ord, dt))
    raise im.error(f"vector norm of order {ord} is not supported")


@converter("aten.outer.default", "aten.ger.default")
def _outer(im, node, a, b):
    dt = _out(node)
    return relax.multiply(relax.expand_dims(im.tensor(a, dt), axis=[1]), relax.expand_dims(im.tensor(b, dt), axis=[0]))


# -- convolution, pooling, batch norm (CNNs) ---------------------------------------------------

def _ints(v, n: int, what: str, im) -> list[int]:
    """torch's int-or-list argument (``stride=2``, ``padding=[1]``) as ``n`` ints."""
    v = [v] if isinstance(v, int) else list(v)
    if len(v) == 1:
        v = v * n
    if len(v) != n or not all(isinstance(x, int) for x in v):
        raise im.error(f"{what} {v} must be {n} integers")
    return v


def _to_nchw(im, x, spatial: int):
    """``x`` with ``spatial`` (1 or 2) trailing spatial dims, batched or not, as NCHW; and
    the inverse for the result."""
    r = _rank(im, x)
    batched = r == spatial + 2
    if not batched and r != spatial + 1:
        raise im.error(f"expected a rank-{spatial + 2} (or unbatched rank-{spatial + 1}) input, got rank {r}")
    if not batched:
        x = relax.expand_dims(x, axis=[0])
    if spatial == 1:
        x = relax.expand_dims(x, axis=[2])

    def back(y):
        if spatial == 1:
            y = relax.squeeze(y, axis=[2])
        return y if batched else relax.squeeze(y, axis=[0])

    return x, back


def _same_padding(im, weight, dilation, stride, spatial):
    """padding='same': torch pads d*(k-1) in total per dim, the extra one at the end."""
    if any(s != 1 for s in stride):
        raise im.error("padding='same' needs stride 1 (as in torch)")
    ks = list(im.sig(weight).shape[2:])
    lo, hi = [], []
    for k, d in zip(ks, dilation):
        if not k.is_static:
            raise im.error("padding='same' with a symbolic kernel size")
        total = d * (k.value - 1)
        lo.append(total // 2)
        hi.append(total - total // 2)
    return lo, hi


def _convolution(im, node, x, weight, bias, stride, padding, dilation, groups, spatial=None):
    spatial = spatial if spatial is not None else _rank(im, weight) - 2
    if spatial not in (1, 2):
        raise im.error(f"{spatial}-D convolution is not supported (1-D and 2-D are)")
    stride, dilation = _ints(stride, spatial, "stride", im), _ints(dilation, spatial, "dilation", im)
    if isinstance(padding, str):
        if padding == "valid":
            lo = hi = [0] * spatial
        elif padding == "same":
            lo, hi = _same_padding(im, weight, dilation, stride, spatial)
        else:
            raise im.error(f"padding={padding!r}")
    else:
        lo = hi = _ints(padding, spatial, "padding", im)
    v, back = _to_nchw(im, x, spatial)
    w = weight
    if spatial == 1:
        w = relax.expand_dims(w, axis=[2])
        stride, dilation, lo, hi = [1] + stride, [1] + dilation, [0] + lo, [0] + hi
    y = relax.conv2d(v, w, strides=stride, padding=[lo[0], lo[1], hi[0], hi[1]], dilation=dilation,
                     groups=int(groups))
    if bias is not None:
        y = relax.add(y, relax.reshape(bias, shape=[im.sig(bias).shape[0], 1, 1]))
    return back(y)


@converter("aten.convolution.default")
def _conv_default(im, node, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        raise im.error("transposed convolution is not supported")
    return _convolution(im, node, x, weight, bias, stride, padding, dilation, groups)


@converter("aten.conv2d.default", "aten.conv2d.padding", "aten.conv1d.default", "aten.conv1d.padding")
def _conv_nd(im, node, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    spatial = 1 if "conv1d" in str(node.target) else 2
    return _convolution(im, node, x, weight, bias, stride, padding, dilation, groups, spatial)


def _pool_args(im, kernel_size, stride, padding, ceil_mode):
    k = _ints(kernel_size, 2, "kernel_size", im)
    s = _ints(stride, 2, "stride", im) if stride not in (None, []) else k   # torch: stride defaults to the window
    p = _ints(padding, 2, "padding", im)
    if ceil_mode:
        raise im.error("ceil_mode=True is not supported (floor mode only)")
    return k, s, p


def _ceil_extension(im, v, s, value: float):
    """ceil_mode: the (NCHW) input extended at the bottom/right by ``s - 1`` of ``value``
    (the lowest value for max pooling, 0 for average pooling's sums), so floor mode gives
    torch's ``ceil((n + 2p - d*(k-1) - 1) / s) + 1`` windows."""
    for axis, ss in enumerate(s, start=2):
        if ss == 1:
            continue
        sig = im.sig(v)
        shape = list(sig.shape)
        shape[axis] = Dim.of(ss - 1)
        v = relax.concat([v, relax.full(shape=shape, value=value, dtype=sig.dtype)], axis=axis)
    return v


def _ceil_drop(im, y, n, k, s, p, d):
    """torch drops a last ceil-mode window that would start in the bottom/right padding:
    the output length is ``min(ceil((n + 2p - d*(k-1) - 1) / s) + 1, ceil((n + p) / s))``.
    With ``p + s <= d*(k-1) + 1`` (3x3 stride 2, pad 0 or 1: every usual case) the first
    is never larger; otherwise the (NCHW) result is sliced to the minimum."""
    from ...shapes.expr import dim_min

    for axis, (nn, kk, ss, pp, dd) in enumerate(zip(n, k, s, p, d), start=2):
        if pp + ss <= dd * (kk - 1) + 1:
            continue
        o = dim_min(im.sig(y).shape[axis], (nn + pp + ss - 1) // ss)
        y = relax.strided_slice(y, axes=[axis], begin=[0], end=[o])
    return y


def _ceil_counts(im, n, k, s, p, o, count_include_pad: bool, dt: str):
    """Average pooling in ceil mode: torch's divisor per window of one axis, (o,) as ``dt``:
    the window ``[i*s - p, i*s - p + k)`` cut at ``n + p`` (count_include_pad) or to the
    input ``[0, n)``."""
    i = relax.arange(end=o, dtype="i64")
    start = relax.subtract(relax.multiply(i, im.const(s, "i64")), im.const(p, "i64"))
    size = im.size_tensor(n)
    end = relax.minimum(relax.add(start, im.const(k, "i64")), relax.add(size, im.const(p, "i64")))
    if not count_include_pad:
        start = relax.maximum(start, im.const(0, "i64"))
        end = relax.minimum(end, size)
    return relax.astype(relax.subtract(end, start), dtype=dt)


@converter("aten.max_pool2d.default", "aten.max_pool2d_with_indices.default")
def _max_pool2d(im, node, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    k, s, p = _pool_args(im, kernel_size, stride, padding, False)
    d = _ints(dilation, 2, "dilation", im)
    v, back = _to_nchw(im, x, 2)
    n = list(im.sig(v).shape[2:])
    if ceil_mode:
        from ...ops.kernels import lowest
        v = _ceil_extension(im, v, s, float(lowest(im.sig(v).dtype)))
    y = relax.max_pool2d(v, pool_size=k, strides=s, padding=p, dilation=d)
    y = back(_ceil_drop(im, y, n, k, s, p, d) if ceil_mode else y)
    if "with_indices" in str(node.target):
        return (y, None)  # the indices (training's backward) are not produced
    return y


@converter("aten.max_pool1d.default")
def _max_pool1d(im, node, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    k = _ints(kernel_size, 1, "kernel_size", im)
    s = _ints(stride, 1, "stride", im) if stride not in (None, []) else k
    if ceil_mode:
        raise im.error("ceil_mode=True is not supported (floor mode only)")
    v, back = _to_nchw(im, x, 1)
    return back(relax.max_pool2d(v, pool_size=[1] + k, strides=[1] + s, padding=[0] + _ints(padding, 1, "padding", im),
                                 dilation=[1] + _ints(dilation, 1, "dilation", im)))


@converter("aten.avg_pool1d.default")
def _avg_pool1d(im, node, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    k = _ints(kernel_size, 1, "kernel_size", im)
    s = _ints(stride, 1, "stride", im) if stride not in (None, []) else k
    if ceil_mode:
        raise im.error("ceil_mode=True is not supported (floor mode only)")
    v, back = _to_nchw(im, x, 1)
    return back(relax.avg_pool2d(v, pool_size=[1] + k, strides=[1] + s, padding=[0] + _ints(padding, 1, "padding", im),
                                 count_include_pad=bool(count_include_pad)))


@converter("aten.avg_pool2d.default")
def _avg_pool2d(im, node, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    k, s, p = _pool_args(im, kernel_size, stride, padding, False)
    v, back = _to_nchw(im, x, 2)
    if ceil_mode:     # the sums over zero-extended windows, divided by torch's own counts
        dt = im.sig(v).dtype
        n = list(im.sig(v).shape[2:])
        y = relax.avg_pool2d(_ceil_extension(im, v, s, 0.0), pool_size=k, strides=s, padding=p,
                             count_include_pad=True)
        y = _ceil_drop(im, y, n, k, s, p, [1, 1])
        oh, ow = im.sig(y).shape[2:]
        if divisor_override is not None:
            scale = im.const(k[0] * k[1] / float(divisor_override), dt)
        else:
            ch = _ceil_counts(im, n[0], k[0], s[0], p[0], oh, bool(count_include_pad), dt)
            cw = _ceil_counts(im, n[1], k[1], s[1], p[1], ow, bool(count_include_pad), dt)
            scale = relax.divide(im.const(float(k[0] * k[1]), dt),
                                 relax.multiply(relax.reshape(ch, shape=[oh, 1]), relax.reshape(cw, shape=[1, ow])))
        return back(relax.multiply(y, scale))
    y = relax.avg_pool2d(v, pool_size=k, strides=s, padding=p,
                         count_include_pad=bool(count_include_pad) or divisor_override is not None)
    if divisor_override is not None:
        y = relax.multiply(y, im.const(k[0] * k[1] / float(divisor_override), im.sig(y).dtype))
    return back(y)


def _batch_norm(im, x, weight, bias, mean, var, eps):
    """Inference batch norm as one scale and shift per channel (dim 1):
    y = x * (w / sqrt(var + eps)) + (b - mean * w / sqrt(var + eps))."""
    sig = im.sig(x)
    dt = sig.dtype
    c = sig.shape[1]
    scale = relax.rsqrt(relax.add(im.tensor(var, dt), im.const(float(eps), dt)))
    if weight is not None:
        scale = relax.multiply(scale, weight)
    shift = relax.negative(relax.multiply(im.tensor(mean, dt), scale))
    if bias is not None:
        shift = relax.add(shift, bias)
    per_channel = [c] + [1] * (sig.rank - 2)
    return relax.add(relax.multiply(x, relax.reshape(scale, shape=per_channel)),
                     relax.reshape(shift, shape=per_channel))


@converter("aten.batch_norm.default")
def _batch_norm_conv(im, node, x, weight, bias, mean, var, training, momentum, eps, cudnn_enabled=False):
    if training or mean is None:
        raise im.error("batch norm in training mode (call model.eval() before exporting)")
    return _batch_norm(im, x, weight, bias, mean, var, eps)


@converter("aten._native_batch_norm_legit_no_training.default")
def _batch_norm_legit(im, node, x, weight, bias, mean, var, momentum, eps):
    return (_batch_norm(im, x, weight, bias, mean, var, eps), None, None)


@converter("aten.native_batch_norm.default")
def _native_batch_norm(im, node, x, weight, bias, mean, var, training, momentum, eps):
    if training or mean is None:
        raise im.error("batch norm in training mode (call model.eval() before exporting)")
    return (_batch_norm(im, x, weight, bias, mean, var, eps), None, None)


# -- sorting ------------------------------------------------------------------------------------

def _used_outputs(node) -> set:
    """Which outputs of a multi-output node the program reads (getitem indices)."""
    import operator

    used = set()
    for u in node.users:
        if u.target is operator.getitem:
            used.add(u.args[1])
        else:
            used.update((0, 1))
    return used


@converter("aten.sort.default", "aten.sort.stable")
def _sort(im, node, x, *args, **kw):
    """Values and indices, each built only when read (relax.sort / relax.argsort); equal
    values keep their order (torch's stable sort)."""
    if str(node.target).endswith("stable"):
        dim, descending = kw.get("dim", -1), kw.get("descending", False)
    else:
        dim = args[0] if len(args) > 0 else kw.get("dim", -1)
        descending = args[1] if len(args) > 1 else kw.get("descending", False)
    axis = _axis(dim, _rank(im, x))
    used = _used_outputs(node)
    vals = relax.sort(x, axis=axis, descending=bool(descending)) if 0 in used else None
    idx = relax.argsort(x, axis=axis, descending=bool(descending)) if 1 in used else None
    return (vals, idx)


@converter("aten.argsort.default", "aten.argsort.stable")
def _argsort(im, node, x, *args, **kw):
    if str(node.target).endswith("stable"):
        dim, descending = kw.get("dim", -1), kw.get("descending", False)
    else:
        dim = args[0] if len(args) > 0 else kw.get("dim", -1)
        descending = args[1] if len(args) > 1 else kw.get("descending", False)
    return relax.argsort(x, axis=_axis(dim, _rank(im, x)), descending=bool(descending))


@converter("aten.topk.default")
def _topk(im, node, x, k, dim=-1, largest=True, sorted=True):
    if not isinstance(k, int):
        raise im.error(f"topk with a symbolic k ({k}) is not supported (k must be a constant)")
    vals, idx = relax.topk(x, k=k, axis=_axis(dim, _rank(im, x)), largest=bool(largest))
    return (vals, idx)
