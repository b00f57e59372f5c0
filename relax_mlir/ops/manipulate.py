"""Shape manipulation: reshape, permute_dims, expand_dims, squeeze, flatten, broadcast_to,
concat, split, strided_slice, take, tril/triu.

Slicing clamp rule (strided_slice, split at indices): static negative begin/end
count from the end of the dim (``-1`` is ``d - 1``); static values are clamped
into ``[0, d]`` when ``d`` is static; an end ``>= 2**31`` means "to the end" (d).
Symbolic begin/end are taken as written and ``0 <= begin <= end <= d`` becomes a
run-time check where it cannot be proven. Strides are positive integers.
"""

from __future__ import annotations

from ..shapes import UNKNOWN, Dim, Shape, TensorSig, Truth, prove_equal
from .common import all_equal, norm_axes, norm_axis, same_dtype, tensor_input, is_int
from .registry import Attr, InferCall, op

END = 2 ** 31


def _numel(call: InferCall, shape: Shape, what: str) -> Dim:
    n = shape.numel()
    if n is None:
        raise call.error(f"{what} has an unknown dimension '?'; name it with relax.match_cast")
    return n


def _check_scope(call: InferCall, shape: Shape, what: str) -> None:
    if call.scope is None or call.scope.lookup is not None and not call.scope.bound and call.operation is None:
        return  # a Python builder: scoping is checked by relax-verify
    free = sorted(shape.symbols - call.scope.bound)
    if free:
        raise call.error(f"{what} uses symbol(s) {', '.join(free)} not bound in this function")


@op("reshape", operands=["x"], attrs=[Attr("shape", "shape")],
    summary="reshape to `shape` (symbols in scope, at most one -1); element counts must agree")
def _reshape(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    target: Shape = call["shape"]
    _check_scope(call, target, "target shape")
    total = _numel(call, x.shape, "input")
    holes = [i for i, d in enumerate(target) if d is not UNKNOWN and d.is_static and d.value == -1]
    if target.has_unknown:
        raise call.error("target shape may not contain '?' (use -1 for one inferred dim)")
    if len(holes) > 1:
        raise call.error("target shape may contain at most one -1")
    for d in target:
        if d.is_static and d.value < -1:
            raise call.error(f"target dim {d} is negative")
    if holes:
        rest = Dim.of(1)
        for i, d in enumerate(target):
            if i != holes[0]:
                rest = rest * d
        call.require_equal(total % rest, 0, f"element count {total} divisible by {rest}")
        dims = list(target)
        dims[holes[0]] = total // rest
        return TensorSig(Shape(dims), x.dtype)
    count = _numel(call, target, "target")
    if _proportional_not_equal(total, count):
        raise call.error(f"element count: {total} != {count} (equal only for an empty tensor)")
    call.require_equal(total, count, "element count")
    return TensorSig(target, x.dtype)


def _proportional_not_equal(a: Dim, b: Dim) -> bool:
    """``a`` is a constant multiple (not 1) of ``b``, like ``4*n`` and ``5*n``.

    Such counts agree only when both are 0. The prover leaves that UNKNOWN (sizes
    may be 0), but a reshape that only holds for empty tensors is a program bug,
    so reshape reports it instead of deferring it to a run-time check.
    """
    ones = {s: 1 for s in a.symbols | b.symbols}
    if not ones:
        return False
    ca, cb = a.evaluate(ones), b.evaluate(ones)
    return ca != cb and ca != 0 and cb != 0 and prove_equal(a * cb, b * ca) is Truth.TRUE


@op("permute_dims", operands=["x"], attrs=[Attr("axes", "ints", None)],
    summary="transpose by `axes` (default: reverse)")
def _permute_dims(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    axes = call["axes"]
    if axes is None:
        axes = list(range(x.rank))[::-1]
    norm = [norm_axis(call, a, x.rank) for a in axes]
    if sorted(norm) != list(range(x.rank)):
        raise call.error(f"axes {list(axes)} are not a permutation of rank {x.rank}")
    return TensorSig(Shape(x.shape[a] for a in norm), x.dtype)


@op("expand_dims", operands=["x"], attrs=[Attr("axis", "ints")],
    summary="insert unit dims at `axis` (positions in the result)")
def _expand_dims(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    out_rank = x.rank + len(call["axis"])
    axes = norm_axes(call, call["axis"], out_rank)
    it = iter(x.shape)
    return TensorSig(Shape(1 if i in axes else next(it) for i in range(out_rank)), x.dtype)


@op("squeeze", operands=["x"], attrs=[Attr("axis", "ints", None)],
    summary="drop unit dims at `axis` (default: every static 1)")
def _squeeze(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    if call["axis"] is None:
        keep = [d for d in x.shape if not (d is not UNKNOWN and d.is_static and d.value == 1)]
        return TensorSig(Shape(keep), x.dtype)
    axes = norm_axes(call, call["axis"], x.rank)
    for a in axes:
        call.require_equal(x.shape[a], 1, f"squeezed dim {a}")
    return TensorSig(Shape(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


@op("flatten", operands=["x"], summary="flatten to one dimension")
def _flatten(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    return TensorSig(Shape([_numel(call, x.shape, "input")]), x.dtype)


@op("broadcast_to", operands=["x"], attrs=[Attr("shape", "shape")],
    summary="broadcast to `shape` with numpy rules")
def _broadcast_to(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    target: Shape = call["shape"]
    _check_scope(call, target, "target shape")
    if target.rank < x.rank:
        raise call.error(f"cannot broadcast rank {x.rank} to rank {target.rank}")
    off = target.rank - x.rank
    for i, d in enumerate(x.shape):
        if d is not UNKNOWN and d.is_static and d.value == 1:
            continue
        call.require_equal(d, target[off + i], f"broadcast dim {i}")
    return TensorSig(target, x.dtype)


@op("concat", operands=["*tensors"], attrs=[Attr("axis", "int", 0)],
    summary="concatenate along `axis`; other dims must agree")
def _concat(call: InferCall) -> TensorSig:
    sigs = [tensor_input(call, i) for i in range(len(call.inputs))]
    if not sigs:
        raise call.error("needs at least one operand")
    dtype = same_dtype(call, sigs)
    rank = sigs[0].rank
    for s in sigs:
        if s.rank != rank:
            raise call.error(f"operands must have the same rank, got {rank} and {s.rank}")
    axis = norm_axis(call, call["axis"], rank)
    out = []
    for i in range(rank):
        col = [s.shape[i] for s in sigs]
        if i == axis:
            if any(d is UNKNOWN for d in col):
                raise call.error("concat axis has an unknown dimension '?'")
            total = Dim.of(0)
            for d in col:
                total = total + d
            out.append(total)
        else:
            out.append(all_equal(call, col, f"non-concat dim {i}"))
    return TensorSig(Shape(out), dtype)


def _clamp_static(call: InferCall, v: Dim, d, what: str) -> Dim:
    """Apply the clamp rule to one begin/end value against dim ``d``."""
    if v.is_static:
        iv = v.value
        if iv >= END:
            return d
        if iv < 0:
            v = d + iv if d is not UNKNOWN else v
        if d is not UNKNOWN and d.is_static:
            return Dim.of(min(max(v.value, 0), d.value)) if v.is_static else v
        if v.is_static and v.value < 0:
            raise call.error(f"{what} {iv} is out of range for dim {d}")
    return v


@op("split", operands=["x"], results=["*results"],
    attrs=[Attr("sections", "int", None), Attr("indices", "ints", None), Attr("axis", "int", 0)],
    summary="split along `axis` into `sections` equal parts or at `indices`")
def _split(call: InferCall):
    x = tensor_input(call, 0)
    axis = norm_axis(call, call["axis"], x.rank)
    d = x.shape[axis]
    if d is UNKNOWN:
        raise call.error("split axis has an unknown dimension '?'")
    sections, indices = call["sections"], call["indices"]
    if (sections is None) == (indices is None):
        raise call.error("needs exactly one of 'sections' and 'indices'")
    if sections is not None:
        if sections <= 0:
            raise call.error(f"sections must be positive, got {sections}")
        call.require_equal(d % sections, 0, f"{sections} sections dividing dim {d}")
        lengths = [d // sections] * sections
    else:
        bounds = [Dim.of(0)] + [_clamp_static(call, Dim.of(i), d, "index") for i in indices] + [d]
        for lo, hi in zip(bounds, bounds[1:]):
            call.require_le(lo, hi, "split indices ascending and within the dim")
        lengths = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
    outs = []
    for n in lengths:
        dims = list(x.shape)
        dims[axis] = n
        outs.append(TensorSig(Shape(dims), x.dtype))
    return outs


@op("strided_slice", operands=["x"],
    attrs=[Attr("axes", "ints"), Attr("begin", "shape"), Attr("end", "shape"), Attr("strides", "shape", None)],
    summary="slice `axes` from `begin` to `end` by `strides` (symbolic allowed; see clamp rule)")
def _strided_slice(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    axes = [norm_axis(call, a, x.rank) for a in call["axes"]]
    begin, end = call["begin"], call["end"]
    strides = call["strides"] or Shape([1] * len(axes))
    if not (len(axes) == len(begin) == len(end) == len(strides)):
        raise call.error("axes, begin, end and strides must have the same length")
    for s in (begin, end, strides):
        _check_scope(call, s, "slice bound")
    dims = list(x.shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        d = x.shape[a]
        if d is UNKNOWN:
            raise call.error(f"sliced dim {a} is unknown '?'; name it with relax.match_cast")
        if not (s.is_static and s.value > 0):
            raise call.error(f"stride {s} must be a positive integer")
        b2 = _clamp_static(call, b, d, "begin")
        e2 = _clamp_static(call, e, d, "end")
        call.require_le(0, b2, f"slice begin of dim {a}")
        call.require_le(b2, e2, f"slice begin <= end of dim {a}")
        call.require_le(e2, d, f"slice end within dim {a}")
        length = e2 - b2 if s.value == 1 else (e2 - b2 + s.value - 1) // s.value
        if length.is_static:
            length = Dim.of(max(length.value, 0))
        dims[a] = length
    return TensorSig(Shape(dims), x.dtype)


@op("take", operands=["x", "indices"], attrs=[Attr("axis", "int", 0)],
    summary="gather entries of `x` along `axis` at integer `indices`")
def _take(call: InferCall) -> TensorSig:
    x, idx = tensor_input(call, 0), tensor_input(call, 1)
    if not is_int(idx.dtype) or idx.dtype == "i1":
        raise call.error(f"indices must be an integer tensor, got {idx.dtype}")
    axis = norm_axis(call, call["axis"], x.rank)
    return TensorSig(Shape(list(x.shape[:axis]) + list(idx.shape) + list(x.shape[axis + 1:])), x.dtype)


def _tri(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    if x.rank < 2:
        raise call.error(f"needs rank >= 2, got {x.rank}")
    return x


op("tril", operands=["x"], attrs=[Attr("k", "int", 0)],
   summary="zero the entries above the k-th diagonal", family="manipulate")(_tri)
op("triu", operands=["x"], attrs=[Attr("k", "int", 0)],
   summary="zero the entries below the k-th diagonal", family="manipulate")(_tri)

