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
        if rest.is_static and rest.value == 0:
            raise call.error("cannot infer the -1 dim: the other target dims hold no elements")
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
    if len(set(axes)) != len(axes):
        raise call.error(f"axes {list(call['axes'])} repeat an axis")
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


#: ``relax.take``'s ``mode``: ``check`` (the default): an index outside ``[-d, d)`` is a
#: run-time IndexError (relax.check_indices, on the cpu target); ``clip``: clamped into the dim
TAKE_MODES = ("check", "clip")


@op("take", operands=["x", "indices"], attrs=[Attr("axis", "int", 0), Attr("mode", "str", "check")],
    summary="gather entries of `x` along `axis` at integer `indices`; an index outside [-d, d) "
            "is a run-time error (mode \"check\") or clamped (mode \"clip\")")
def _take(call: InferCall) -> TensorSig:
    x, idx = tensor_input(call, 0), tensor_input(call, 1)
    if not (is_int(idx.dtype) or idx.dtype.startswith("ui")) or idx.dtype == "i1":
        raise call.error(f"indices must be an integer tensor, got {idx.dtype}")
    if call["mode"] not in TAKE_MODES:
        raise call.error(f"mode must be one of {', '.join(TAKE_MODES)}, got '{call['mode']}'")
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



# -- legalization -------------------------------------------------------------------------

from mlir.dialects import arith  # noqa: E402
from .kernels import KType, LegalizeCall, attr_tag, elementwise, identity_map  # noqa: E402
from .registry import legalization  # noqa: E402


def _static_empty(t: KType) -> bool:
    """A kernel type with a static 0 dim: nothing to copy. (Slices of it cannot be written
    either: upstream's verifier rejects a static offset 0 into a dim of size 0.)"""
    return any(d == 0 for d in t.dims)


@legalization("reshape", "flatten", "expand_dims", "squeeze")
def _legalize_reshape(call: LegalizeCall):
    """tensor.reshape to the output's dims (read from the output argument), copied into
    the output (kernels write their destination; a later pass may fold the copy).
    tensor.reshape rather than collapse+expand: expand_shape allows one dynamic dim per
    group only once lowered to memrefs."""
    out = call.out_types[0]
    kb = call.builder("to_" + out.tag)
    v = kb.reshape(kb.ins[0], [kb.dim(kb.outs[0], i) for i in range(out.rank)], out)
    return kb.finish([kb.copy(v, kb.outs[0])])


@legalization("permute_dims")
def _legalize_permute(call: LegalizeCall):
    x = call.in_types[0]
    axes = call["axes"]
    axes = list(range(x.rank))[::-1] if axes is None else [a + x.rank if a < 0 else a for a in axes]
    kb = call.builder(attr_tag(axes=axes))
    return kb.finish([kb.transpose(kb.ins[0], kb.outs[0], axes)])


@legalization("broadcast_to")
def _legalize_broadcast_to(call: LegalizeCall):
    kb = call.builder("to_" + call.out_types[0].tag)
    return kb.finish([elementwise(kb, kb.ins, lambda v: v)])


@legalization("concat")
def _legalize_concat(call: LegalizeCall):
    """insert_slice of each operand into the output at the running offset along the axis."""
    out = call.out_types[0]
    axis = call["axis"] + out.rank if call["axis"] < 0 else call["axis"]
    kb = call.builder(attr_tag(axis=axis))
    r = kb.outs[0]
    if _static_empty(out):
        return kb.finish([r])
    off = kb.index(0)
    for v in kb.ins:
        t: KType = kb.types[v]
        if t.dims[axis] == 0:
            continue
        offs = [off if i == axis else 0 for i in range(out.rank)]
        sizes = [d if d is not None else kb.dim(v, i) for i, d in enumerate(t.dims)]
        # extract the destination slice, linalg.copy into it, insert it back: bufferizes
        # in place to a subview and a loop copy (no memref.copy runtime call).
        dst = kb.extract_slice(r, t, offs, sizes)
        r = kb.insert_slice(kb.copy(v, dst), r, offs, sizes)
        off = kb.bin(arith.AddIOp, off, kb.dim(v, axis), "index")
    return kb.finish([r])


@legalization("split")
def _legalize_split(call: LegalizeCall):
    """Each output is the slice of the input at the running offset (the outputs' sizes)."""
    x = call.in_types[0]
    axis = call["axis"] + x.rank if call["axis"] < 0 else call["axis"]
    kb = call.builder(attr_tag(axis=axis, n=len(call.out_types)))
    off = kb.index(0)
    res = []
    for o in kb.outs:
        t: KType = kb.types[o]
        if _static_empty(t):
            res.append(o)
            continue
        offs = [off if i == axis else 0 for i in range(x.rank)]
        sizes = [d if d is not None else kb.dim(o, i) for i, d in enumerate(t.dims)]
        s = kb.extract_slice(kb.ins[0], t, offs, sizes)
        res.append(kb.copy(s, o))
        off = kb.bin(arith.AddIOp, off, kb.dim(o, axis), "index")
    return kb.finish(res)


@legalization("strided_slice")
def _legalize_strided_slice(call: LegalizeCall):
    """extract_slice with the clamp rule applied in the kernel to static begins (negative
    ones count from the dim read at run time); symbolic begins arrive as tir_vars.
    The slice length is the output's dim, so `end` never enters the kernel."""
    x, out = call.in_types[0], call.out_types[0]
    axes = [a + x.rank if a < 0 else a for a in call["axes"]]
    begins = list(call["begin"])
    strides = [s.value for s in call["strides"]] if call["strides"] is not None else [1] * len(axes)
    sym = [b for b in begins if not b.is_static]
    tag = attr_tag(axes=axes, b=["S" if not b.is_static else b.value for b in begins], s=strides)
    kb = call.builder(tag, n_vars=len(sym))
    if _static_empty(out):
        return kb.finish([kb.outs[0]], tir_vars=sym)
    offs, steps = [0] * x.rank, [1] * x.rank
    it = iter(kb.vars)
    for a, b, s in zip(axes, begins, strides):
        steps[a] = s
        if not b.is_static:
            offs[a] = next(it)
            continue
        d = kb.dim(kb.ins[0], a)
        v = b.value
        if v >= END:
            offs[a] = d
            continue
        val = kb.index(v) if v >= 0 else kb.bin(arith.AddIOp, d, kb.index(v), "index")
        val = kb.bin(arith.MinSIOp, kb.bin(arith.MaxSIOp, val, kb.index(0), "index"), d, "index")
        offs[a] = val
    sizes = [d if d is not None else kb.dim(kb.outs[0], i) for i, d in enumerate(out.dims)]
    s = kb.extract_slice(kb.ins[0], out, offs, sizes, steps)
    return kb.finish([kb.copy(s, kb.outs[0])], tir_vars=sym)


@legalization("take")
def _legalize_take(call: LegalizeCall):
    """Gather: loops over the output; negative indices count from the end, and indices
    are clamped into the dim (the kernel never reads out of bounds, in either mode). In
    mode ``check`` a ``relax.check_indices`` before the call makes an index outside
    ``[-d, d)`` a run-time IndexError, as numpy's (the kernel does not run). Taking from
    an empty axis reads nothing: the result (empty unless the other dims and the indices
    are not) is filled with zeros."""
    x, idx = call.in_types
    out = call.out_types[0]
    axis = call["axis"] + x.rank if call["axis"] < 0 else call["axis"]
    if call["mode"] == "check":
        call.check_indices(1, call.inputs[0].shape[axis], f"relax.take axis {axis}")
    kb = call.builder(attr_tag(axis=axis))
    d = kb.dim(kb.ins[0], axis)
    imap = [f"d{axis + j}" for j in range(idx.rank)]

    def body(i, o):
        t = kb.types[i]
        if t in ("i64", "ui64"):
            # clamp in 64 bits first: ``index`` may be narrower (32 bits on SPIR-V), where the
            # cast would wrap 2**32 + 1 to 1 before the clamp (vulkan-program fuzz seed 4000151)
            d64 = kb.cast(d, t)
            last = kb.bin(arith.SubIOp, d64, kb.const(1, t), t)
            if t == "i64":
                i = kb.select(kb.cmp("cmpi", "slt", i, kb.const(0, t)), kb.bin(arith.AddIOp, i, d64, t), i)
                i = kb.bin(arith.MinSIOp, kb.bin(arith.MaxSIOp, i, kb.const(0, t), t), last, t)
            else:
                i = kb.bin(arith.MinUIOp, i, last, t)
        i = kb.cast(i, "index")
        i = kb.select(kb.cmp("cmpi", "slt", i, kb.index(0)), kb.bin(arith.AddIOp, i, d, "index"), i)
        i = kb.bin(arith.MinSIOp, kb.bin(arith.MaxSIOp, i, kb.index(0), "index"),
                   kb.bin(arith.SubIOp, d, kb.index(1), "index"), "index")
        pos = [kb.linalg_index(j) for j in range(axis)] + [i] + \
              [kb.linalg_index(axis + idx.rank + j) for j in range(x.rank - axis - 1)]
        return [kb.extract(kb.ins[0], pos)]

    if x.dims[axis] is not None and x.dims[axis] > 0:
        (r,) = kb.generic([(kb.ins[1], imap)], [(kb.outs[0], identity_map(out.rank))],
                          ["parallel"] * out.rank, body)
        return kb.finish([r])
    zero = 0.0 if x.dtype.startswith(("f", "bf")) else 0
    if x.dims[axis] == 0:
        return kb.finish([kb.fill(zero, kb.outs[0])])
    empty = kb.cmp("cmpi", "eq", d, kb.index(0))
    (r,) = kb.if_(empty, [out], lambda: [kb.fill(zero, kb.outs[0])],
                  lambda: kb.generic([(kb.ins[1], imap)], [(kb.outs[0], identity_map(out.rank))],
                                     ["parallel"] * out.rank, body))
    return kb.finish([r])


@legalization("tril", "triu")
def _legalize_tri(call: LegalizeCall):
    x = call.in_types[0]
    kb = call.builder(attr_tag(k=call["k"]))
    r0, r1 = x.rank - 2, x.rank - 1
    zero = kb.const(0.0 if x.dtype.startswith(("f", "bf")) else 0, x.dtype)

    def body(v, o):
        i, j = kb.linalg_index(r0), kb.linalg_index(r1)
        diff = kb.bin(arith.SubIOp, j, i, "index")
        keep = kb.cmp("cmpi", "sle" if call.name == "tril" else "sge", diff, kb.index(call["k"]))
        return [kb.select(keep, v, zero)]

    (r,) = kb.generic([(kb.ins[0], identity_map(x.rank))], [(kb.outs[0], identity_map(x.rank))],
                      ["parallel"] * x.rank, body)
    return kb.finish([r])
