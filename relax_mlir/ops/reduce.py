"""Reductions (sum mean max min prod argmax argmin), softmax, log_softmax, layer_norm, rms_norm."""

from __future__ import annotations

import math

from ..shapes import UNKNOWN, Shape, TensorSig
from .common import is_float, norm_axes, norm_axis, tensor_input
from .registry import Attr, InferCall, op

REDUCE = {
    "sum": "sum",
    "mean": "arithmetic mean",
    "max": "maximum",
    "min": "minimum",
    "prod": "product",
}


def reduced_shape(call: InferCall, shape: Shape, axes, keepdims: bool) -> Shape:
    ax = norm_axes(call, axes, shape.rank)
    if keepdims:
        return Shape(1 if i in ax else d for i, d in enumerate(shape))
    return Shape(d for i, d in enumerate(shape) if i not in ax)


def _declare(name: str, summary: str) -> None:
    def rule(call: InferCall) -> TensorSig:
        x = tensor_input(call, 0)
        if name == "mean" and not is_float(x.dtype):
            raise call.error(f"expects a floating-point tensor, got {x.dtype}")
        if name in ("sum", "prod") and x.dtype == "i1":
            # numpy counts (bool sum is int64); relax keeps the operand dtype, where i1
            # arithmetic would wrap, so the count has to be asked for explicitly.
            raise call.error("over i1 (bool) is not defined: the result keeps the operand dtype; "
                             "astype to an integer type first (numpy's bool sum counts in int64)")
        return TensorSig(reduced_shape(call, x.shape, call["axes"], call["keepdims"]), x.dtype)

    rule.__name__ = f"_{name}_shape"
    op(name, operands=["x"], attrs=[Attr("axes", "ints", None), Attr("keepdims", "bool", False)],
       summary=f"{summary} over `axes` (default all)", family="reduce")(rule)


for _n, _s in REDUCE.items():
    _declare(_n, _s)


def _arg(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    axis = call["axis"]
    axes = list(range(x.rank)) if axis is None else [norm_axis(call, axis, x.rank)]
    if any(x.shape[a] is not UNKNOWN and x.shape[a].is_static and x.shape[a].value == 0 for a in axes):
        raise call.error("of an empty sequence: the reduced axis has size 0")
    # numpy raises on an empty sequence (there is no index to give): a symbolic size is
    # checked at run time (a ShapeError), an unnamed '?' dim cannot be
    dims = [x.shape[a] for a in axes]
    if dims and all(d is not UNKNOWN for d in dims):
        size = dims[0]
        for d in dims[1:]:
            size = size * d
        what = "attempt to get " + call.opdef.name + " of an empty sequence: " + (
            "the reduced size" if axis is None else f"the length of axis {axes[0]}")
        call.require_le(1, size, what)
    axes = None if axis is None else axes
    return TensorSig(reduced_shape(call, x.shape, axes, call["keepdims"]), "i64")


for _n in ("argmax", "argmin"):
    op(_n, operands=["x"], attrs=[Attr("axis", "int", None), Attr("keepdims", "bool", False)],
       summary=f"index of the {_n[3:]}imum along `axis` (default: flattened), i64 result",
       family="reduce")(_arg)


def _softmax(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    if not is_float(x.dtype):
        raise call.error(f"expects a floating-point tensor, got {x.dtype}")
    norm_axis(call, call["axis"], x.rank)
    return x


op("softmax", operands=["x"], attrs=[Attr("axis", "int", -1)],
   summary="softmax along `axis`", family="reduce")(_softmax)
op("log_softmax", operands=["x"], attrs=[Attr("axis", "int", -1)],
   summary="log of softmax along `axis`", family="reduce")(_softmax)


def _norm_params(call: InferCall, x: TensorSig, first_param: int) -> None:
    """gamma/beta/weight must broadcast to the normalized trailing dims of x."""
    axes = norm_axes(call, call["axes"], x.rank)
    norm_shape = Shape(x.shape[a] for a in axes)
    for i in range(first_param, len(call.inputs)):
        p = tensor_input(call, i)
        if p.dtype != x.dtype:
            raise call.error(f"operand #{i} has element type {p.dtype}, expected {x.dtype}")
        if p.rank != norm_shape.rank:
            raise call.error(f"operand #{i} must have rank {norm_shape.rank} (the normalized axes), got {p.rank}")
        for j, (pd, xd) in enumerate(zip(p.shape, norm_shape)):
            call.require_equal(pd, xd, f"operand #{i} dim {j} vs normalized dim")


def _normalization(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    if not is_float(x.dtype):
        raise call.error(f"expects a floating-point tensor, got {x.dtype}")
    _norm_params(call, x, 1)
    return x


op("layer_norm", operands=["x", "gamma", "beta"], attrs=[Attr("axes", "ints", [-1]), Attr("epsilon", "float", 1e-5)],
   summary="(x - mean) / sqrt(var + epsilon) * gamma + beta over `axes`", family="reduce")(_normalization)
op("rms_norm", operands=["x", "weight"], attrs=[Attr("axes", "ints", [-1]), Attr("epsilon", "float", 1e-5)],
   summary="x / sqrt(mean(x**2) + epsilon) * weight over `axes`", family="reduce")(_normalization)




# -- legalization -------------------------------------------------------------------------

from mlir import ir  # noqa: E402
from mlir.dialects import arith  # noqa: E402
from mlir.dialects import math as math_d  # noqa: E402
from .kernels import (KernelBuilder, LegalizeCall, attr_tag, combiner, compute_type,  # noqa: E402
                      is_float as _kfloat, is_unsigned, lowest, highest, norm_axes as _kaxes, reduced_empty)
from .registry import legalization  # noqa: E402


def _out_map(rank: int, axes, keepdims: bool) -> list[str]:
    if keepdims:
        return ["0" if i in axes else f"d{i}" for i in range(rank)]
    return [f"d{i}" for i in range(rank) if i not in axes]


def _count(kb: KernelBuilder, src: ir.Value, axes, dtype: str) -> ir.Value:
    """The number of reduced elements (product of the reduced dims) as a ``dtype`` scalar."""
    n = kb.index(1)
    for a in axes:
        n = kb.bin(arith.MulIOp, n, kb.dim(src, a))
    return kb.cast(n, dtype)


@legalization(*REDUCE)
def _legalize_reduce(call: LegalizeCall):
    x, out = call.in_types[0], call.out_types[0]
    axes = _kaxes(call["axes"], x.rank)
    kb = call.builder(attr_tag(axes=axes, keep=call["keepdims"]))
    if call.name == "mean" and any(x.dims[a] == 0 for a in axes):
        # no element to average: 0 / 0 everywhere, written as NaN (a division by a constant 0
        # is folded to 0 by lavapipe's compiler: vulkan-program fuzz seed 1000400)
        return kb.finish([kb.fill(math.nan, kb.outs[0])])
    kind = "sum" if call.name == "mean" else call.name
    acc_dt = compute_type(x.dtype)
    make, ident = combiner(kind, acc_dt)
    acc = kb.outs[0] if acc_dt == out.dtype else kb.empty(out.with_dtype(acc_dt), kb.outs[0])
    acc = kb.fill(ident, acc)
    omap = _out_map(x.rank, axes, call["keepdims"])
    its = ["reduction" if i in axes else "parallel" for i in range(x.rank)]
    comb = make(kb)
    (r,) = kb.generic([(kb.ins[0], [f"d{i}" for i in range(x.rank)])], [(acc, omap)], its,
                      lambda v, o: [comb(kb.cast(v, acc_dt), o)])
    if call.name == "mean" or acc_dt != out.dtype:
        cnt = _count(kb, kb.ins[0], axes, acc_dt) if call.name == "mean" else None
        ident_map = [f"d{i}" for i in range(out.rank)]

        def fin(v, o):
            if cnt is not None:
                v = kb.bin(arith.DivFOp, v, cnt)
            return [kb.cast(v, out.dtype)]

        (r,) = kb.generic([(r, ident_map)], [(kb.outs[0], ident_map)], ["parallel"] * out.rank, fin)
    return kb.finish([r])


@legalization("argmax", "argmin")
def _legalize_arg(call: LegalizeCall):
    """Value and index reduced together, numpy's result in any visiting order: the
    first NaN wins (NaN beats any number, and ties keep the smallest index), so tiled
    or reordered loops give the same index. An empty reduction is a run-time ShapeError
    (relax-infer-shapes asserts the reduced size is >= 1)."""
    x, out = call.in_types[0], call.out_types[0]
    axes = list(range(x.rank)) if call["axis"] is None else _kaxes([call["axis"]], x.rank)
    kb = call.builder(attr_tag(axis=call["axis"], keep=call["keepdims"]))
    fl = _kfloat(x.dtype)
    if fl:
        better = "ogt" if call.name == "argmax" else "olt"
    else:
        better = ("gt" if call.name == "argmax" else "lt")
        better = ("u" if is_unsigned(x.dtype) else "s") + better
    kind = "cmpf" if fl else "cmpi"
    vals = kb.fill(lowest(x.dtype) if call.name == "argmax" else highest(x.dtype),
                   kb.empty(out.with_dtype(x.dtype), kb.outs[0]))
    idx = kb.fill(0, kb.outs[0])
    omap = _out_map(x.rank, axes, call["keepdims"])
    its = ["reduction" if i in axes else "parallel" for i in range(x.rank)]
    sizes = [kb.dim(kb.ins[0], a) for a in axes]

    def body(v, best, bi):
        lin = None
        for a, size in zip(axes, sizes):
            i = kb.linalg_index(a)
            lin = i if lin is None else kb.bin(arith.AddIOp, kb.bin(arith.MulIOp, lin, size), i)
        lin = kb.cast(lin if lin is not None else kb.index(0), "i64")
        gt = kb.cmp(kind, better, v, best)
        eq = kb.cmp(kind, "oeq" if fl else "eq", v, best)
        if fl:      # NaN beats numbers; two NaNs tie
            vnan, bnan = kb.cmp("cmpf", "uno", v, v), kb.cmp("cmpf", "uno", best, best)
            gt = kb.bin(arith.OrIOp, gt, kb.bin(arith.AndIOp, vnan,
                                                 kb.cmp("cmpi", "eq", bnan, kb.const(False, "i1")), "i1"), "i1")
            eq = kb.bin(arith.OrIOp, eq, kb.bin(arith.AndIOp, vnan, bnan, "i1"), "i1")
        first = kb.bin(arith.AndIOp, eq, kb.cmp("cmpi", "slt", lin, bi), "i1")
        take = kb.bin(arith.OrIOp, gt, first, "i1")
        return [kb.select(take, v, best), kb.select(take, lin, bi)]

    _, r = kb.generic([(kb.ins[0], [f"d{i}" for i in range(x.rank)])], [(vals, omap), (idx, omap)], its, body)
    return kb.finish([r])


def _stat(kb: KernelBuilder, src: ir.Value, axes, rank: int, ct: str, pre=None, extra=()) -> ir.Value:
    """sum over ``axes`` of ``pre(x, *extra)`` in type ``ct``, into a tensor of the kept dims."""
    acc = kb.fill(0.0, reduced_empty(kb, src, axes, ct))
    its = ["reduction" if i in axes else "parallel" for i in range(rank)]
    kept = [f"d{i}" for i in range(rank) if i not in axes]
    ins = [(src, [f"d{i}" for i in range(rank)])] + list(extra)

    def body(*a):
        v = pre(*a[:-1]) if pre else kb.cast(a[0], ct)
        return [kb.bin(arith.AddFOp, v, a[-1])]

    (r,) = kb.generic(ins, [(acc, kept)], its, body)
    return r


@legalization("softmax", "log_softmax")
def _legalize_softmax(call: LegalizeCall):
    """Numerically stable: m = max(x), s = sum(exp(x - m)); exp(x - m) / s or x - m - log(s)."""
    x = call.in_types[0]
    axis = _kaxes([call["axis"]], x.rank)
    kb = call.builder(attr_tag(axis=axis))
    ct = compute_type(x.dtype)
    src = kb.ins[0]
    full = [f"d{i}" for i in range(x.rank)]
    kept = [f"d{i}" for i in range(x.rank) if i not in axis]
    its = ["reduction" if i in axis else "parallel" for i in range(x.rank)]
    mx = kb.fill(-math.inf, reduced_empty(kb, src, axis, ct))
    (mx,) = kb.generic([(src, full)], [(mx, kept)], its,
                       lambda v, o: [kb.bin(arith.MaximumFOp, kb.cast(v, ct), o)])
    s = _stat(kb, src, axis, x.rank, ct, pre=lambda v, m: kb.un(math_d.ExpOp, kb.bin(arith.SubFOp, kb.cast(v, ct), m)),
              extra=[(mx, kept)])

    def fin(v, m, t, o):
        d = kb.bin(arith.SubFOp, kb.cast(v, ct), m)
        if call.name == "softmax":
            r = kb.bin(arith.DivFOp, kb.un(math_d.ExpOp, d), t)
        else:
            r = kb.bin(arith.SubFOp, d, kb.un(math_d.LogOp, t))
        return [kb.cast(r, x.dtype)]

    (r,) = kb.generic([(src, full), (mx, kept), (s, kept)], [(kb.outs[0], full)], ["parallel"] * x.rank, fin)
    return kb.finish([r])


@legalization("layer_norm", "rms_norm")
def _legalize_norm(call: LegalizeCall):
    """PyTorch semantics: biased variance (two passes), statistics in f32 for half types."""
    x = call.in_types[0]
    axes = _kaxes(call["axes"], x.rank)
    kb = call.builder(attr_tag(axes=axes, eps=call["epsilon"]))
    ct = compute_type(x.dtype)
    src = kb.ins[0]
    full = [f"d{i}" for i in range(x.rank)]
    kept = [f"d{i}" for i in range(x.rank) if i not in axes]
    pmap = [f"d{a}" for a in axes]
    cnt = _count(kb, src, axes, ct)
    eps = kb.const(call["epsilon"], ct)
    if call.name == "layer_norm":
        s = _stat(kb, src, axes, x.rank, ct)
        # The mean is s / cnt, divided inside the consumers rather than in a pass of its own.
        sq = _stat(kb, src, axes, x.rank, ct, extra=[(s, kept)],
                   pre=lambda v, t: _sq(kb, kb.bin(arith.SubFOp, kb.cast(v, ct), kb.bin(arith.DivFOp, t, cnt))))

        def fin(v, t, q, g, b, o):
            mu = kb.bin(arith.DivFOp, t, cnt)
            inv = kb.un(math_d.RsqrtOp, kb.bin(arith.AddFOp, kb.bin(arith.DivFOp, q, cnt), eps))
            y = kb.bin(arith.MulFOp, kb.bin(arith.SubFOp, kb.cast(v, ct), mu), inv)
            y = kb.bin(arith.AddFOp, kb.bin(arith.MulFOp, y, kb.cast(g, ct)), kb.cast(b, ct))
            return [kb.cast(y, x.dtype)]

        ins = [(src, full), (s, kept), (sq, kept), (kb.ins[1], pmap), (kb.ins[2], pmap)]
    else:
        sq = _stat(kb, src, axes, x.rank, ct, pre=lambda v: _sq(kb, kb.cast(v, ct)))

        def fin(v, q, w, o):
            inv = kb.un(math_d.RsqrtOp, kb.bin(arith.AddFOp, kb.bin(arith.DivFOp, q, cnt), eps))
            y = kb.bin(arith.MulFOp, kb.bin(arith.MulFOp, kb.cast(v, ct), inv), kb.cast(w, ct))
            return [kb.cast(y, x.dtype)]

        ins = [(src, full), (sq, kept), (kb.ins[1], pmap)]
    (r,) = kb.generic(ins, [(kb.outs[0], full)], ["parallel"] * x.rank, fin)
    return kb.finish([r])


def _sq(kb: KernelBuilder, v: ir.Value) -> ir.Value:
    return kb.bin(arith.MulFOp, v, v)
