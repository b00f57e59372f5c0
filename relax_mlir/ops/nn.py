"""Convolution and pooling: conv2d, max_pool2d, avg_pool2d.

Layouts follow PyTorch (and TVM Relax's defaults): data NCHW, weight OIHW with
``I = C / groups``. ``data_layout = "NHWC"`` (docs/conv.md, "Layouts") takes channels-last
data and, for conv2d, an HWIO weight (``(KH, KW, C / groups, O)``: upstream linalg's
``conv_2d_nhwc_hwcf`` filter), as relax-convert-layout produces them. ``padding`` is 2 ints (top/bottom, left/right) or 4 ints (top, left,
bottom, right). The spatial output size is the symbolic
``(h + pad_lo + pad_hi - dilation * (k - 1) - 1) // stride + 1`` (floor: PyTorch's
``ceil_mode=False``); the padded input must cover the dilated window, checked at run time
when the symbols leave it unproven.
"""

from __future__ import annotations

from ..shapes import Dim, Shape, TensorSig
from .common import is_float, is_int, same_dtype, tensor_input
from .registry import Attr, InferCall, op


def _pair(call: InferCall, name: str, n: int = 2, allow_four: bool = False, minimum: int = 1) -> list[int]:
    v = list(call[name])
    if allow_four and len(v) == 2:
        v = v + v
    want = "2 or 4" if allow_four else str(n)
    if len(v) != (4 if allow_four else n):
        raise call.error(f"`{name}` must have {want} values, got {len(call[name])}")
    if any(x < minimum for x in v):
        raise call.error(f"`{name}` values must be >= {minimum}, got {list(call[name])}")
    return v


def window_out(call: InferCall, size: Dim, k: Dim, stride: int, lo: int, hi: int, dil: int, what: str) -> Dim:
    """Output length of a sliding window (floor mode); needs the padded input to cover it."""
    span = dil * (Dim.of(k) - 1) + 1
    call.require_le(span, size + lo + hi, f"{what}: the padded input must cover the dilated window")
    return (size + lo + hi - span) // stride + 1


#: data_layout -> (channel axis, height axis, width axis)
LAYOUTS = {"NCHW": (1, 2, 3), "NHWC": (3, 1, 2)}


def _layout(call: InferCall) -> tuple[int, int, int]:
    """The (channel, height, width) axes of the op's ``data_layout``; an error for others."""
    lay = call["data_layout"]
    if lay not in LAYOUTS:
        raise call.error(f"`data_layout` must be one of {sorted(LAYOUTS)}, got '{lay}'")
    return LAYOUTS[lay]


def _spatial(call: InferCall, x: TensorSig, kh: Dim, kw: Dim, axes: tuple[int, int] = (2, 3)) -> list[Dim]:
    s = _pair(call, "strides")
    p = _pair(call, "padding", allow_four=True, minimum=0)
    d = _pair(call, "dilation") if call.opdef.attr("dilation") else [1, 1]
    return [window_out(call, x.shape[axes[0]], kh, s[0], p[0], p[2], d[0], "height"),
            window_out(call, x.shape[axes[1]], kw, s[1], p[1], p[3], d[1], "width")]


@op("conv2d", operands=["x", "weight"],
    attrs=[Attr("strides", "ints", [1, 1]), Attr("padding", "ints", [0, 0]), Attr("dilation", "ints", [1, 1]),
           Attr("groups", "int", 1), Attr("data_layout", "str", "NCHW")],
    summary="2-D convolution, zero padding; data NCHW with weight OIHW (I = C / groups), or "
            "data_layout = \"NHWC\" with weight HWIO")
def _conv2d(call: InferCall) -> TensorSig:
    x, w = tensor_input(call, 0), tensor_input(call, 1)
    dtype = same_dtype(call, [x, w])
    if not is_float(dtype):
        raise call.error(f"expects floating-point tensors, got {dtype}")
    ca, ha, wa = _layout(call)
    lay = call["data_layout"]
    wlay = "OIHW" if lay == "NCHW" else "HWIO"
    if x.rank != 4 or w.rank != 4:
        raise call.error(f"expects a rank-4 input ({lay}) and a rank-4 weight ({wlay}), got ranks {x.rank} and {w.rank}")
    g = call["groups"]
    if g < 1:
        raise call.error(f"`groups` must be >= 1, got {g}")
    # weight axes: (O, I, KH, KW) for OIHW, (KH, KW, I, O) for HWIO
    wo, wi, wkh, wkw = (0, 1, 2, 3) if lay == "NCHW" else (3, 2, 0, 1)
    call.require_equal(x.shape[ca], w.shape[wi] * g, f"input channels vs weight dim {wi} * groups")
    if g > 1:
        call.require_equal(w.shape[wo] % g, 0, f"output channels divisible by groups ({g})")
    sp = _spatial(call, x, w.shape[wkh], w.shape[wkw], (ha, wa))
    dims = [x.shape[0], w.shape[wo]] + sp if lay == "NCHW" else [x.shape[0]] + sp + [w.shape[wo]]
    return TensorSig(Shape(dims), dtype)


def _pool(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    ca, ha, wa = _layout(call)
    if x.rank != 4:
        raise call.error(f"expects a rank-4 input ({call['data_layout']}), got rank {x.rank}")
    if call.name == "relax.avg_pool2d" and not is_float(x.dtype):
        raise call.error(f"expects a floating-point tensor, got {x.dtype}")
    if not (is_float(x.dtype) or is_int(x.dtype)) or x.dtype == "i1":
        raise call.error(f"expects a floating-point or integer tensor, got {x.dtype}")
    if call["ceil_mode"]:
        raise call.error("ceil_mode=true is not supported (floor mode only)")
    k = _pair(call, "pool_size")
    p = _pair(call, "padding", allow_four=True, minimum=0)
    if any(2 * pi > k[i % 2] for i, pi in enumerate(p)):
        raise call.error(f"padding {list(call['padding'])} must be at most half the window {k}")
    sp = _spatial(call, x, Dim.of(k[0]), Dim.of(k[1]), (ha, wa))
    dims = list(x.shape[:2]) + sp if ca == 1 else [x.shape[0]] + sp + [x.shape[3]]
    return TensorSig(Shape(dims), x.dtype)


op("max_pool2d", operands=["x"],
   attrs=[Attr("pool_size", "ints"), Attr("strides", "ints", [1, 1]), Attr("padding", "ints", [0, 0]),
          Attr("dilation", "ints", [1, 1]), Attr("ceil_mode", "bool", False), Attr("data_layout", "str", "NCHW")],
   summary="2-D max pooling (NCHW, or NHWC by `data_layout`); padding never wins (it acts as -inf)",
   family="nn")(_pool)
op("avg_pool2d", operands=["x"],
   attrs=[Attr("pool_size", "ints"), Attr("strides", "ints", [1, 1]), Attr("padding", "ints", [0, 0]),
          Attr("ceil_mode", "bool", False), Attr("count_include_pad", "bool", True),
          Attr("data_layout", "str", "NCHW")],
   summary="2-D average pooling (NCHW, or NHWC by `data_layout`); the divisor counts the padding unless "
           "`count_include_pad` is false",
   family="nn")(_pool)


# -- legalization -------------------------------------------------------------------------

import numpy as np  # noqa: E402
from mlir import ir  # noqa: E402
from mlir.dialects import linalg  # noqa: E402

from .kernels import KType, KernelBuilder, LegalizeCall, attr_tag, compute_type, identity_map, lowest  # noqa: E402
from .registry import legalization  # noqa: E402


def _pads(call: LegalizeCall) -> list[int]:
    p = list(call["padding"])
    return p + p if len(p) == 2 else p


def _pad(kb: KernelBuilder, src: str, pads: list[int], value) -> str:
    """``tensor.pad`` of the two spatial dims (top, left, bottom, right) with ``value``."""
    if not any(pads):
        return src
    t: KType = kb.types[src]
    dims = list(t.dims)
    for i, (lo, hi) in ((2, (pads[0], pads[2])), (3, (pads[1], pads[3]))):
        dims[i] = None if dims[i] is None else dims[i] + lo + hi
    pt = KType(tuple(dims), t.dtype)
    return kb.pad(src, [0, 0, pads[0], pads[1]], [0, 0, pads[2], pads[3]], kb.const(value, t.dtype), pt)


def _pad_copy(kb: KernelBuilder, src: str, pads: list[int], value=0.0) -> str:
    """Padding with ``value`` as fill + ``linalg.copy`` into the interior slice (convolutions,
    pooling): the copy bufferizes to plain loops over unit-stride rows. ``tensor.pad``
    bufferizes to a ``memref.copy`` of a strided view, which runs as the runtime's
    element-by-element ``memrefCopy`` (measured: half of a depthwise conv's time)."""
    if not any(pads):
        return src
    t: KType = kb.types[src]
    sizes = kb.dims(src)
    psizes = sizes[:2] + [kb.bin("arith.addi", sizes[2], kb.index(pads[0] + pads[2]), "index"),
                          kb.bin("arith.addi", sizes[3], kb.index(pads[1] + pads[3]), "index")]
    dims = list(t.dims)
    for i, (lo, hi) in ((2, (pads[0], pads[2])), (3, (pads[1], pads[3]))):
        dims[i] = None if dims[i] is None else dims[i] + lo + hi
    pt = KType(tuple(dims), t.dtype)
    full = kb.fill(value, kb.empty_dims(pt, psizes))
    where = ([0, 0, pads[0], pads[1]], [d if d is not None else v for d, v in zip(t.dims, sizes)])
    inner = kb.extract_slice(full, t, *where)
    return kb.insert_slice(kb.copy(src, inner), full, *where)


def _phase_split(kb: KernelBuilder, src: str, pads: list[int], strides) -> str:
    """The zero-padded input of a strided direct convolution with rows and columns split by
    phase: (N, C, sh, sw, Hs, Ws), ``Hs = ceil(Hp / sh)``, with ``xs[n, c, p, q, i, j] =
    xpad[n, c, sh*i + p, sw*j + q]``. A strided window's taps then read unit-stride runs of
    one phase (row ``sh*oh + kh`` is phase ``kh % sh``, row ``oh + kh // sh`` in it; columns
    likewise), which the cpu schedule vectorizes like a stride-1 conv. Written as a
    ``tensor.pad`` to (N, C, sh*Hs, sw*Ws) (the rows and columns past Hp, Wp zeros no tap
    reads), its ``expand_shape`` to (N, C, Hs, sh, Ws, sw) and a ``linalg.transpose`` to the
    phases: all three tile by (image, channel) plane, so the cpu schedule splits each plane
    inside the conv's task, in cache (a named transpose, not a generic: elementwise fusion
    would fold a generic into the conv and bring the strided map back)."""
    t: KType = kb.types[src]
    n, c, *sizes = kb.dims(src)
    split, padded, high = [], [], []
    for d, (lo, hi, s) in enumerate(((pads[0], pads[2], strides[0]), (pads[1], pads[3], strides[1]))):
        static = t.dims[2 + d]
        if static is None:   # Hs = (H + lo + hi + s - 1) // s; the pad's high side s * Hs - H - lo
            hs = kb.bin("arith.divui", kb.bin("arith.addi", sizes[d], kb.index(lo + hi + s - 1), "index"),
                        kb.index(s), "index")
            hp = kb.bin("arith.muli", hs, kb.index(s), "index")
            high.append(kb.bin("arith.subi", hp, kb.bin("arith.addi", sizes[d], kb.index(lo), "index"), "index"))
            split.append((None, hs))
            padded.append(None)
        else:
            hs = (static + lo + hi + s - 1) // s
            high.append(s * hs - static - lo)
            split.append((hs, hs))
            padded.append(s * hs)
    lead = [d if d is not None else v for d, v in zip(t.dims[:2], (n, c))]
    xp = kb.pad(src, [0, 0, pads[0], pads[1]], [0, 0] + high, kb.const(0.0, t.dtype),
                KType(t.dims[:2] + tuple(padded), t.dtype))
    (hs, hv), (ws, wv) = split
    sh, sw = strides
    xe = kb.expand_shape(xp, [[0], [1], [2, 3], [4, 5]], KType(t.dims[:2] + (hs, sh, ws, sw), t.dtype),
                         lead + [hv, sh, wv, sw])
    dest = kb.empty_dims(KType(t.dims[:2] + (sh, sw, hs, ws), t.dtype), [n, c, kb.index(sh), kb.index(sw), hv, wv])
    return kb.transpose(xe, dest, [0, 1, 3, 5, 2, 4])


def _accumulator(kb: KernelBuilder, out: KType) -> str:
    """A zero-filled accumulator of ``out``'s shape in the compute type (f32 for halves)."""
    ct = compute_type(out.dtype)
    acc = kb.outs[0] if ct == out.dtype else kb.empty(out.with_dtype(ct), kb.outs[0])
    return kb.fill(0.0, acc)


def _to_out(kb: KernelBuilder, r: str, out: KType) -> str:
    if kb.types[r].dtype == out.dtype:
        return r
    (r,) = kb.generic([(r, identity_map(4))], [(kb.outs[0], identity_map(4))], ["parallel"] * 4,
                      lambda v, o: [kb.cast(v, out.dtype)])
    return r


def _direct(kb: KernelBuilder, xp: str, w: str, acc: str, strides, dilation, g: int) -> str:
    """The convolution as ONE ``linalg.generic`` whose loop order puts the output width
    innermost, below the reduction over (input channel, kh, kw): plain loops then stream
    a row of the output against a row of the input with one scalar weight, a loop LLVM's
    vectorizer turns into FMAs over the width (stride 1; interleaved loads for stride 2).
    Depthwise (one output channel per group) indexes the input channel with the group's
    loop; loops of extent 1 are left out. Weight dims must be static; other grouped
    convolutions take the upstream named op (their output channel ``g * O/g + o`` is no
    projected permutation, which linalg needs to invert its loop bounds)."""
    o_, cg, kh, kw = kb.types[w].dims
    og = o_ // g
    dims = []   # (name, kind) in loop order
    names = {}

    def loop(key: str, kind: str, extent: int = 0) -> None:
        if extent == 1:
            names[key] = "0"
            return
        names[key] = f"d{len(dims)}"
        dims.append(kind)

    loop("n", "parallel")
    loop("g", "parallel", g)
    loop("o", "parallel", og)
    loop("oh", "parallel")
    loop("c", "reduction", cg)
    loop("kh", "reduction", kh)
    loop("kw", "reduction", kw)
    loop("ow", "parallel")

    def lin(*terms) -> str:
        parts = []
        for coef, key in terms:
            v = names[key]
            if v == "0" or coef == 0:
                continue
            parts.append(v if coef == 1 else f"{v} * {coef}")
        return " + ".join(parts) or "0"

    xmap = [names["n"], lin((cg, "g"), (1, "c")), lin((strides[0], "oh"), (dilation[0], "kh"))]
    if kb.types[xp].rank == 6:   # phase-split rows and columns (:func:`_phase_split`)
        xmap = xmap[:2]
        axes = (("oh", "kh", strides[0], dilation[0]), ("ow", "kw", strides[1], dilation[1]))
        xmap += [f"({lin((d, k))}) % {s}" for _, k, s, d in axes]
        xmap += [f"{names[o]} + ({lin((d, k))}) // {s}" for o, k, s, d in axes]
    else:
        xmap.append(lin((strides[1], "ow"), (dilation[1], "kw")))
    wmap = [lin((og, "g"), (1, "o")), names["c"], names["kh"], names["kw"]]
    omap = [names["n"], lin((og, "g"), (1, "o")), names["oh"], names["ow"]]
    ct = kb.types[acc].dtype

    def body(x, wv, o):
        return [kb.bin("arith.addf", o, kb.bin("arith.mulf", kb.cast(x, ct), kb.cast(wv, ct)))]

    (r,) = kb.generic([(xp, xmap), (w, wmap)], [(acc, omap)], dims, body)
    return r


@legalization("conv2d")
def _legalize_conv2d(call: LegalizeCall):
    """Zero padding, then one generic with the output width innermost (groups 1 and depthwise,
    static weight: :func:`_direct`; groups 1 pad by fill + copy, depthwise by tensor.pad, or
    strided by :func:`_phase_split`: ops the cpu schedule fuses into its plane tasks); else
    tensor.pad, then linalg.conv_2d_nchw_fchw (grouped: linalg.conv_2d_ngchw_gfchw).

    On the cpu target relax-conv-gemm rewrites f32 groups-1 convolutions into im2col + GEMM
    before this; what reaches here is scheduled by relax_mlir/schedules/conv.py. Other grouped
    convolutions expand the channel dims to (groups, C / groups) with tensor.expand_shape;
    half types accumulate in f32."""
    if call["data_layout"] == "NHWC":
        return _legalize_conv2d_nhwc(call)
    x, w = call.in_types
    out = call.out_types[0]
    pads, g = _pads(call), call["groups"]
    kb = call.builder(attr_tag(s=call["strides"], p=pads, d=call["dilation"], g=g if g > 1 else None))
    if all(d is not None for d in w.dims) and (g == 1 or w.dims[0] == g):
        if g > 1 and w.dims[1] == 1 and max(call["strides"]) > 1:   # depthwise, strided
            xp = _phase_split(kb, kb.ins[0], pads, call["strides"])
        elif g > 1 and w.dims[1] == 1:   # depthwise, stride 1: tensor.pad
            xp = _pad(kb, kb.ins[0], pads, 0.0)
        else:
            xp = _pad_copy(kb, kb.ins[0], pads)
        acc = _accumulator(kb, out)
        return kb.finish([_to_out(kb, _direct(kb, xp, kb.ins[1], acc, call["strides"], call["dilation"], g), out)])
    xp = _pad(kb, kb.ins[0], pads, 0.0)
    acc = _accumulator(kb, out)
    at = kb.types[acc]
    if g == 1:
        r = kb.conv2d(xp, kb.ins[1], acc, call["strides"], call["dilation"])
        return kb.finish([_to_out(kb, r, out)])

    def split(t: KType, v: str, i: int, sizes: list[str]) -> tuple[str, KType]:
        """Dim ``i`` of ``v`` (whose dims are ``sizes``) expanded to (g, dim / g)."""
        d = t.dims[i]
        per = kb.bin("arith.divui", sizes[i], kb.index(g), "index") if d is None else kb.index(d // g)
        dims = list(t.dims[:i]) + [g, None if d is None else d // g] + list(t.dims[i + 1:])
        sz = sizes[:i] + [kb.index(g), per] + sizes[i + 1:]
        et = KType(tuple(dims), t.dtype)
        assoc = [[j] for j in range(i)] + [[i, i + 1]] + [[j + 1] for j in range(i + 1, t.rank)]
        return kb.expand_shape(v, assoc, et, sz), et

    xs = kb.dims(kb.ins[0])
    xs = xs[:2] + [kb.bin("arith.addi", xs[2], kb.index(pads[0] + pads[2]), "index"),
                   kb.bin("arith.addi", xs[3], kb.index(pads[1] + pads[3]), "index")]
    xe, xet = split(kb.types[xp], xp, 1, xs)
    we, wet = split(w, kb.ins[1], 0, kb.dims(kb.ins[1]))
    acc5, _ = split(at, acc, 1, kb.dims(kb.outs[0]))
    r5 = kb.conv2d(xe, we, acc5, call["strides"], call["dilation"], grouped=True)
    r = kb.collapse_shape(r5, [[0], [1, 2], [3], [4]], at)
    if at.dtype == out.dtype:
        r = kb.copy(r, kb.outs[0])
    return kb.finish([_to_out(kb, r, out)])


def _slice(kb: KernelBuilder, src: str, offsets: list[int], sizes: list[str], dims: tuple, strides: list[int],
           dtype: str) -> str:
    """``tensor.extract_slice`` of ``src`` (rank 4) at static ``offsets`` with ``strides``; the
    result's dims are ``dims`` (None: dynamic, size from ``sizes``)."""
    sz = [d if d is not None else v for d, v in zip(dims, sizes)]
    return kb.extract_slice(src, KType(tuple(dims), dtype), offsets, sz, strides)


def _window_reduce(kb: KernelBuilder, slices: list[str], dest: str, big: bool, dtype: str) -> str:
    """An all-parallel generic combining ``slices`` (max or sum) into ``dest`` (same shape)."""
    full = identity_map(4)
    if len(slices) == 1 and kb.types[slices[0]].dtype == kb.types[dest].dtype:
        return kb.copy(slices[0], dest)
    if big:
        opname = "arith.maximumf" if is_float(dtype) else "arith.maxsi"
    else:
        opname = "arith.addf"

    def body(*args):
        vals = [kb.cast(a, kb.types[dest].dtype) if not big else a for a in args[:-1]]
        r = vals[0]
        for v in vals[1:]:
            r = kb.bin(opname, r, v)
        return [r]

    (r,) = kb.generic([(v, full) for v in slices], [(dest, full)], ["parallel"] * 4, body)
    return r


@legalization("max_pool2d", "avg_pool2d")
def _legalize_pool(call: LegalizeCall):
    """tensor.pad, then the window reduced separably: the rows first (``kh`` slices of the
    padded input strided along H: contiguous along W, so they vectorize), then the columns
    (``kw`` slices of that strided along W), each an all-parallel generic (max, or a sum).

    ``kh + kw`` operations per output instead of ``kh * kw`` (a 3x3 window: 6 against 9),
    and no reduction loops: the kernel is a chain of elementwise ops over strided views.
    Max pads with the lowest value; avg pads with 0 and divides by the window size or,
    without ``count_include_pad``, by the number of unpadded elements in each window."""
    if call["data_layout"] == "NHWC":
        return _legalize_pool_nhwc(call)
    x, out = call.in_types[0], call.out_types[0]
    pads, k, s = _pads(call), list(call["pool_size"]), list(call["strides"])
    big = call.name == "max_pool2d"
    d = list(call["dilation"]) if big else [1, 1]
    cip = None if big else call["count_include_pad"]
    kb = call.builder(attr_tag(k=k, s=s, p=pads, d=d if big else None, cip=cip))
    xp = _pad_copy(kb, kb.ins[0], pads, lowest(x.dtype) if big else 0.0)
    ct = x.dtype if big else compute_type(x.dtype)
    osz = kb.dims(kb.outs[0])
    pt = kb.types[xp]
    # rows: V[n, c, i, w] = reduce_a xp[n, c, i*s0 + a*d0, w]
    vdims = (out.dims[0], out.dims[1], out.dims[2], pt.dims[3])
    wp = kb.bin("arith.addi", kb.dim(kb.ins[0], 3), kb.index(pads[1] + pads[3]), "index") if pt.dims[3] is None \
        else kb.index(pt.dims[3])   # (a tensor.dim of the pad would precede it)
    vsz = osz[:3] + [wp]
    rows = [_slice(kb, xp, [0, 0, a * d[0], 0], vsz, vdims, [1, 1, s[0], 1], x.dtype) for a in range(k[0])]
    v = _window_reduce(kb, rows, kb.empty_dims(KType(vdims, ct), vsz), big, x.dtype)
    # columns: R[n, c, i, j] = reduce_b V[n, c, i, j*s1 + b*d1]
    cols = [_slice(kb, v, [0, 0, 0, b * d[1]], osz, out.dims, [1, 1, 1, s[1]], ct) for b in range(k[1])]
    dest = kb.outs[0] if ct == out.dtype else kb.empty_dims(out.with_dtype(ct), osz)
    r = _window_reduce(kb, cols, dest, big, ct)
    if big:
        return kb.finish([r])
    return kb.finish([_avg_divide(kb, r, out.dtype, ct, (2, 3), k, s, pads, cip)])


def _avg_divide(kb, r: str, dtype: str, ct: str, axes: tuple[int, int], k: list[int], s: list[int],
                pads: list[int], cip: bool) -> str:
    """Average pooling's division of the window sums ``r`` into the output: by the window
    size, or (``cip`` false) by the unpadded input elements of each window, counted from the
    output position along the spatial ``axes`` (NCHW: 2, 3; NHWC: 1, 2)."""
    full = identity_map(4)
    if cip:
        n = kb.const(float(k[0] * k[1]), ct)
        (r,) = kb.generic([(r, full)], [(kb.outs[0], full)], ["parallel"] * 4,
                          lambda v, o: [kb.cast(kb.bin("arith.divf", v, n), dtype)])
        return r
    sizes = [kb.dim(kb.ins[0], a) for a in axes]

    def count(i: int) -> str:
        """Input elements of the window at this output position along spatial dim ``i``."""
        start = kb.bin("arith.subi", kb.bin("arith.muli", kb.linalg_index(axes[i]), kb.index(s[i]), "index"),
                       kb.index(pads[i]), "index")
        end = kb.bin("arith.minsi", kb.bin("arith.addi", start, kb.index(k[i]), "index"), sizes[i], "index")
        start = kb.bin("arith.maxsi", start, kb.index(0), "index")
        return kb.bin("arith.subi", end, start, "index")

    def body(v, o):
        n = kb.cast(kb.bin("arith.muli", count(0), count(1), "index"), ct)
        return [kb.cast(kb.bin("arith.divf", v, n), dtype)]

    (r,) = kb.generic([(r, full)], [(kb.outs[0], full)], ["parallel"] * 4, body)
    return r


def im2col_kernel(x: TensorSig, col: TensorSig, kernel: list[int], strides: list[int], pads: list[int],
                  dilation: list[int]):
    """The im2col kernel of relax-conv-gemm: ``x`` (N, C, H, W) -> ``col`` (N, C*KH*KW, OH, OW),
    ``col[n, (c, kh, kw), oh, ow] = pad(x)[n, c, oh*sh + kh*dh, ow*sw + kw*dw]``: per image the
    (C*KH*KW, OH*OW) matrix of the convolution's GEMM.

    The destination's channel dim is expanded to (C, KH, KW) and written by one generic whose
    innermost loop runs along the output width (contiguous stores; contiguous loads at
    stride 1), then collapsed back: both reshapes bufferize in place. C must be static."""
    xt, ct = KType.of(x), KType.of(col)
    kh, kw = kernel
    c = xt.dims[1]
    tag = attr_tag(k=kernel, s=strides, p=pads, d=dilation)
    kb = KernelBuilder(f"relax_im2col_{tag}_{xt.dtype}_{xt.tag}", [xt], [ct])
    xp = _pad_copy(kb, kb.ins[0], pads)
    et = KType((ct.dims[0], c, kh, kw) + ct.dims[2:], ct.dtype)
    sizes = [kb.dim(kb.outs[0], i) for i in (0, 2, 3)]
    e = kb.expand_shape(kb.outs[0], [[0], [1, 2, 3], [4], [5]], et, [sizes[0], c, kh, kw] + sizes[1:])
    xmap = ["d0", "d1", f"d4 * {strides[0]} + d2 * {dilation[0]}", f"d5 * {strides[1]} + d3 * {dilation[1]}"]
    (g,) = kb.generic([(xp, xmap)], [(e, [f"d{i}" for i in range(6)])], ["parallel"] * 6, lambda v, o: [v])
    r = kb.collapse_shape(g, [[0], [1, 2, 3], [4], [5]], ct)
    return kb.finish([r])


def im2col_cnhw_kernel(x: TensorSig, col: TensorSig, kernel: list[int], strides: list[int], pads: list[int],
                       dilation: list[int]):
    """relax-conv-gemm's im2col for the generated GEMM: ``x`` (N, C, H, W) -> ``col``
    (C*KH*KW, N, OH, OW), ``col[(c, kh, kw), n, oh, ow] = pad(x)[n, c, oh*sh + kh*dh,
    ow*sw + kw*dw]``: the (K, N*OH*OW) right-hand matrix of ONE GEMM for the whole batch.
    One generic over (c, kh, kw, n, oh, ow), the output column innermost; C must be static."""
    xt, ct = KType.of(x), KType.of(col)
    kh, kw = kernel
    c = xt.dims[1]
    tag = attr_tag(k=kernel, s=strides, p=pads, d=dilation)
    kb = KernelBuilder(f"relax_im2col_t_{tag}_{xt.dtype}_{xt.tag}", [xt], [ct])
    xp = _pad_copy(kb, kb.ins[0], pads)
    et = KType((c, kh, kw) + ct.dims[1:], ct.dtype)
    sizes = [kb.dim(kb.outs[0], i) for i in (1, 2, 3)]
    e = kb.expand_shape(kb.outs[0], [[0, 1, 2], [3], [4], [5]], et, [c, kh, kw] + sizes)
    xmap = ["d3", "d0", f"d4 * {strides[0]} + d1 * {dilation[0]}", f"d5 * {strides[1]} + d2 * {dilation[1]}"]
    (g,) = kb.generic([(xp, xmap)], [(e, [f"d{i}" for i in range(6)])], ["parallel"] * 6, lambda v, o: [v])
    r = kb.collapse_shape(g, [[0, 1, 2], [3], [4], [5]], ct)
    return kb.finish([r])


def conv_gemm_kernel(w: TensorSig, col: TensorSig, out: TensorSig):
    """relax-conv-gemm's generated GEMM: ``w`` (O, C, KH, KW) and ``col`` (K, N, OH, OW) viewed
    as the (O, K) and (K, N*OH*OW) matrices (collapse_shape: views), one ``linalg.matmul``
    into ``out`` (O, N, OH, OW) viewed as (O, N*OH*OW) -- the matmul schedule's fill +
    matmul, with M = O and K static, N symbolic."""
    wt, ct, ot = KType.of(w), KType.of(col), KType.of(out)
    kb = KernelBuilder(f"relax_conv_gemm_{wt.dtype}_{wt.tag}_{ct.tag}", [wt, ct], [ot])
    k = ct.dims[0]
    w2 = KType((wt.dims[0], k), wt.dtype)
    n = None if any(d is None for d in ct.dims[1:]) else ct.dims[1] * ct.dims[2] * ct.dims[3]
    c2, o2 = KType((k, n), ct.dtype), KType((ot.dims[0], n), ot.dtype)
    a = kb.collapse_shape(kb.ins[0], [[0], [1, 2, 3]], w2)
    b = kb.collapse_shape(kb.ins[1], [[0], [1, 2, 3]], c2)
    sizes = [kb.dim(kb.outs[0], i) for i in range(4)]
    acc = kb.fill(0.0, kb.collapse_shape(kb.outs[0], [[0], [1, 2, 3]], o2))
    return kb.finish([kb.reshape(kb.matmul(a, b, acc), sizes, ot)])


def conv1x1_kernel(x: TensorSig, w: TensorSig, out: TensorSig):
    """relax-conv-gemm's pointwise convolution (1x1, stride 1, no padding, groups 1): per
    image ``out[n]`` (O, H*W) = ``w`` (O, C) @ ``x[n]`` (C, H*W), every operand read as the
    matrix it is in memory (collapse_shape views): ONE ``linalg.batch_matmul`` whose A is
    the weight for every image (indexing map ``(n, o, p, c) -> (o, c)``), no im2col, no
    weight packing, no permute; the output NCHW. Scheduled by the matmul schedule (M = O,
    K = C static, the pixels N symbolic; :func:`..backends.cpu.schedules` ``conv1x1``)."""
    xt, wt, ot = KType.of(x), KType.of(w), KType.of(out)
    o, c = wt.dims[:2]
    kb = KernelBuilder(f"relax_conv1x1_{xt.dtype}_{xt.tag}_{wt.tag}", [xt, wt], [ot])

    def pixels(t: KType):
        return None if t.dims[2] is None or t.dims[3] is None else t.dims[2] * t.dims[3]

    # tensor.reshape, not collapse/expand_shape: relax-fuse-kernels' elementwise fusion folds
    # static collapses into the matmul (generalized to a 5-loop generic no schedule takes),
    # and an expand_shape takes one dynamic size per group at most
    xs, ys = kb.dims(kb.ins[0]), kb.dims(kb.outs[0])
    a = kb.reshape(kb.ins[1], [kb.index(o), kb.index(c)], KType((o, c), wt.dtype))
    b = kb.reshape(kb.ins[0], [xs[0], kb.index(c), kb.bin("arith.muli", xs[2], xs[3], "index")],
                   KType((xt.dims[0], c, pixels(xt)), xt.dtype))
    y3 = KType((ot.dims[0], o, pixels(ot)), ot.dtype)
    acc = kb.fill(0.0, kb.reshape(kb.outs[0], [ys[0], kb.index(o), kb.bin("arith.muli", ys[2], ys[3], "index")],
                                  y3))
    r = kb.matmul(a, b, acc, batch=True, broadcast_a=True)
    return kb.finish([kb.reshape(r, ys, ot)])


#: Window taps above which the direct kernel loops over the kernel rows (see
#: :func:`conv_direct_kernel`): with all 49 taps of a 7x7 window in one body, LLVM hoists
#: the 98 weight-vector loads of a tile and spills them to the stack.
DIRECT_MAX_TAPS = 9


def conv_direct_kernel(x: TensorSig, wp: TensorSig, out: TensorSig, strides: list[int], pads: list[int],
                       dilation: list[int]):
    """relax-conv-gemm's direct convolution (groups 1, no im2col): ``x`` (N, C, H, W) NCHW,
    ``wp`` the weight packed in channel blocks (O/B, C, KH, KW, B) so a block's weights
    are one contiguous run, ``out`` NCHW.

    The input is padded (``tensor.pad``: the schedule writes it plane by plane on the
    threads), then viewed once per window tap (kh, kw) as the strided slice
    ``xp[:, :, kh*dh :: sh, kw*dw :: sw]`` of the output's size, the weight as its
    (O/B, C, B) slice per tap; ONE generic over (n, oh, ow, ob, oi | c), every map a
    projected permutation, sums the KH*KW products per input channel into an
    (N, O/B, OH, OW, B) accumulator, which a second generic copies to the output viewed
    (N, O/B, B, OH, OW) (``expand_shape``; reading ``acc[n, ob, oh, ow, oi]``, a projected
    permutation the vectorizer takes as a register transpose; the schedule fuses the conv
    into that copy's tasks and merges a fused epilogue into the copy).
    With the taps as operands (no window loops, no strides in the maps) a register tile of
    output pixels x a channel block vectorizes as broadcasts of input pixels times weight
    vectors (``schedules/conv.py``: ``conv_direct``). Windows of more than
    :data:`DIRECT_MAX_TAPS` taps (the 7x7 stem) keep the kernel rows as a reduction loop
    (n, oh, ow, ob, oi | c, kh) with one operand per kernel column (rows of the padded input
    indexed ``oh*sh + kh*dh``; the schedule tiles oh and kh by 1, which leaves projected
    permutations again). C, KH, KW, O must be static."""
    xt, wt, ot = KType.of(x), KType.of(wp), KType.of(out)
    nb, c, kh, kw, b = wt.dims
    tag = attr_tag(s=strides, p=pads, d=dilation)
    kb = KernelBuilder(f"relax_conv_direct_{tag}_{xt.dtype}_{xt.tag}_{wt.tag}", [xt, wt], [ot])
    xp = _pad(kb, kb.ins[0], pads, 0.0)
    osz = kb.dims(kb.outs[0])
    rows = kh * kw > DIRECT_MAX_TAPS
    ins = []
    if rows:   # one operand per kernel column, the kernel rows a loop (d6)
        vdims = (ot.dims[0], c, kb.types[xp].dims[2], ot.dims[3])
        hp = kb.types[xp].dims[2]   # the padded height (tensor.dim of the pad would precede it)
        hp = kb.index(hp) if hp is not None else kb.bin("arith.addi", kb.dim(kb.ins[0], 2),
                                                         kb.index(pads[0] + pads[2]), "index")
        vsz = [osz[0], kb.index(c), hp, osz[3]]
        for j in range(kw):
            v = _slice(kb, xp, [0, 0, 0, j * dilation[1]], vsz, vdims, [1, 1, 1, strides[1]], xt.dtype)
            wv = kb.extract_slice(kb.ins[1], KType((nb, c, kh, b), wt.dtype), [0, 0, 0, j, 0], [nb, c, kh, 1, b])
            ins += [(v, ["d0", "d5", f"d1 * {strides[0]} + d6 * {dilation[0]}", "d2"]), (wv, ["d3", "d5", "d6", "d4"])]
    else:
        vdims = (ot.dims[0], c, ot.dims[2], ot.dims[3])
        vsz = [osz[0], kb.index(c), osz[2], osz[3]]
        for i in range(kh):
            for j in range(kw):
                v = _slice(kb, xp, [0, 0, i * dilation[0], j * dilation[1]], vsz, vdims,
                           [1, 1, strides[0], strides[1]], xt.dtype)
                wv = kb.extract_slice(kb.ins[1], KType((nb, c, b), wt.dtype), [0, 0, i, j, 0], [nb, c, 1, 1, b])
                ins += [(v, ["d0", "d5", "d1", "d2"]), (wv, ["d3", "d5", "d4"])]
    # the accumulator (N, O/B, OH, OW, B): a register tile (pixels x channel block) is
    # contiguous in it; a second generic moves it to NCHW (per task, while it is in cache)
    tt = KType((ot.dims[0], nb, ot.dims[2], ot.dims[3], b), ot.dtype)
    acc = kb.fill(0.0, kb.empty_dims(tt, [osz[0], kb.index(nb), osz[2], osz[3], kb.index(b)]))

    def body(*args):
        r = args[-1]
        for a, w in zip(args[0:-1:2], args[1:-1:2]):
            r = kb.bin("arith.addf", r, kb.bin("arith.mulf", a, w))
        return [r]

    (r,) = kb.generic(ins, [(acc, ["d0", "d3", "d1", "d2", "d4"])],
                      ["parallel"] * 5 + ["reduction"] * (2 if rows else 1), body)
    # the copy to NCHW on the output viewed (N, O/B, B, OH, OW): both maps projected
    # permutations (a (W, B) -> (B, W) transpose per row), which the vectorizer takes
    et = KType((ot.dims[0], nb, b, ot.dims[2], ot.dims[3]), ot.dtype)
    o5 = kb.expand_shape(kb.outs[0], [[0], [1, 2], [3], [4]], et, [osz[0], nb, b, osz[2], osz[3]])
    (y,) = kb.generic([(r, ["d0", "d1", "d3", "d4", "d2"])], [(o5, identity_map(5))],
                      ["parallel"] * 5, lambda v, o_: [v])
    return kb.finish([kb.collapse_shape(y, [[0], [1, 2], [3], [4]], ot)])


def conv_pack_weight_kernel(w: TensorSig, block: int):
    """relax-conv-gemm's weight packing for the direct convolution: ``w`` (O, C, KH, KW) ->
    (O/B, C, KH, KW, B), ``wp[ob, c, i, j, oi] = w[ob*B + oi, c, i, j]``: per channel block a
    transpose of the (B, K = C*KH*KW) rows into a (K, B) panel, written on the collapsed
    views (O, K) -> (O/B, K, B) by one generic over (ob, oi, k) (``schedules/conv.py``:
    ``conv_pack`` cuts k into runs of 16, so each input row is read a cache line at a time
    while the 16 panel rows it writes stay in L1). The weight is a function argument, so
    this runs on every call."""
    wt = KType.of(w)
    o, c, kh, kw = wt.dims
    k = c * kh * kw
    pt = KType((o // block, c, kh, kw, block), wt.dtype)
    kb = KernelBuilder(f"relax_conv_pack_b{block}_{wt.dtype}_{wt.tag}", [wt], [pt])
    src = kb.collapse_shape(kb.ins[0], [[0], [1, 2, 3]], KType((o, k), wt.dtype))
    dst = kb.collapse_shape(kb.outs[0], [[0], [1, 2, 3], [4]], KType((o // block, k, block), wt.dtype))
    (r,) = kb.generic([(src, [f"d0 * {block} + d1", "d2"])], [(dst, ["d0", "d2", "d1"])], ["parallel"] * 3,
                      lambda v, o_: [v])
    return kb.finish([kb.expand_shape(r, [[0], [1, 2, 3], [4]], pt, [o // block, c, kh, kw, block])])


# -- channels-last (data_layout = "NHWC") ------------------------------------------------

def _pad_copy_nhwc(kb: KernelBuilder, src: str, pads: list[int], value=0.0) -> str:
    """:func:`_pad_copy` for NHWC data: the spatial dims are 1 and 2."""
    if not any(pads):
        return src
    t: KType = kb.types[src]
    sizes = kb.dims(src)
    psizes = [sizes[0], kb.bin("arith.addi", sizes[1], kb.index(pads[0] + pads[2]), "index"),
              kb.bin("arith.addi", sizes[2], kb.index(pads[1] + pads[3]), "index"), sizes[3]]
    dims = list(t.dims)
    for i, (lo, hi) in ((1, (pads[0], pads[2])), (2, (pads[1], pads[3]))):
        dims[i] = None if dims[i] is None else dims[i] + lo + hi
    full = kb.fill(value, kb.empty_dims(KType(tuple(dims), t.dtype), psizes))
    where = ([0, pads[0], pads[1], 0], [d if d is not None else v for d, v in zip(t.dims, sizes)])
    inner = kb.extract_slice(full, t, *where)
    return kb.insert_slice(kb.copy(src, inner), full, *where)


def _i64x2(v) -> ir.Attribute:
    return ir.DenseElementsAttr.get(np.asarray(v, dtype=np.int64),
                                    type=ir.RankedTensorType.get([2], ir.IntegerType.get_signless(64)))


def _legalize_conv2d_nhwc(call: LegalizeCall):
    """NHWC data, HWIO weight: zero padding (fill + copy), then upstream's
    ``linalg.conv_2d_nhwc_hwcf`` (groups 1; HWIO is its HWCF filter) or
    ``linalg.depthwise_conv_2d_nhwc_hwc`` (one channel per group: the (KH, KW, 1, C) weight
    collapsed to (KH, KW, C)); other grouped convolutions one generic over the channels
    expanded to (groups, C / groups); f32 1x1 stride-1 unpadded groups-1 convs a matmul
    (:func:`_pointwise_nhwc`). Half types accumulate in f32. The cpu schedules:
    ``conv_nhwc`` (``schedules/conv_nhwc.py``) and the matmul's."""
    x, w = call.in_types
    out = call.out_types[0]
    pads, g, st, dl = _pads(call), call["groups"], list(call["strides"]), list(call["dilation"])
    kb = call.builder(attr_tag(l="nhwc", s=st, p=pads, d=dl, g=g if g > 1 else None))
    xp = _pad_copy_nhwc(kb, kb.ins[0], pads)
    acc = _accumulator(kb, out)
    at = kb.types[acc]
    kh, kw, wi, wo = w.dims
    if g == 1 and kh == kw == 1 and st == [1, 1] and not any(pads) and wi is not None and wo is not None \
            and out.dtype == "f32":
        return _pointwise_nhwc(kb, x, out, wi, wo)
    if g == 1:
        r = kb._named(linalg.Conv2DNhwcHwcfOp, at, [xp, kb.ins[1]], [acc], strides=_i64x2(st), dilations=_i64x2(dl))
        return kb.finish([_to_out(kb, r, out)])
    if wi == 1 and wo == g:   # depthwise
        w3 = kb.collapse_shape(kb.ins[1], [[0], [1], [2, 3]], KType((kh, kw, wo), w.dtype))
        r = kb._named(linalg.DepthwiseConv2DNhwcHwcOp, at, [xp, w3], [acc], strides=_i64x2(st),
                      dilations=_i64x2(dl))
        return kb.finish([_to_out(kb, r, out)])

    def split(v: str, i: int, sizes: list) -> str:
        """Dim ``i`` of ``v`` (whose sizes are ``sizes``) expanded to (g, dim / g)."""
        t: KType = kb.types[v]
        d = t.dims[i]
        per = kb.bin("arith.divui", sizes[i], kb.index(g), "index") if d is None else kb.index(d // g)
        dims = list(t.dims[:i]) + [g, None if d is None else d // g] + list(t.dims[i + 1:])
        assoc = [[j] for j in range(i)] + [[i, i + 1]] + [[j + 1] for j in range(i + 1, t.rank)]
        return kb.expand_shape(v, assoc, KType(tuple(dims), t.dtype), sizes[:i] + [kb.index(g), per] + sizes[i + 1:])

    xs = kb.dims(kb.ins[0])
    xs = [xs[0], kb.bin("arith.addi", xs[1], kb.index(pads[0] + pads[2]), "index"),
          kb.bin("arith.addi", xs[2], kb.index(pads[1] + pads[3]), "index"), xs[3]]
    xe, we, ae = split(xp, 3, xs), split(kb.ins[1], 3, kb.dims(kb.ins[1])), split(acc, 3, kb.dims(kb.outs[0]))
    ct = at.dtype
    # loops (n, oh, ow, g, o | c, kh, kw)
    xmap = ["d0", f"d1 * {st[0]} + d6 * {dl[0]}", f"d2 * {st[1]} + d7 * {dl[1]}", "d3", "d5"]

    def body(xv, wv, o):
        return [kb.bin("arith.addf", o, kb.bin("arith.mulf", kb.cast(xv, ct), kb.cast(wv, ct)))]

    (r5,) = kb.generic([(xe, xmap), (we, ["d6", "d7", "d5", "d3", "d4"])], [(ae, ["d0", "d1", "d2", "d3", "d4"])],
                       ["parallel"] * 5 + ["reduction"] * 3, body)
    r = kb.collapse_shape(r5, [[0], [1], [2], [3, 4]], at)
    return kb.finish([_to_out(kb, r, out)])


def _pointwise_nhwc(kb: KernelBuilder, x: KType, out: KType, c: int, o: int):
    """A 1x1 stride-1 unpadded groups-1 NHWC conv is a matrix product: ``x`` viewed as the
    (N*H*W, C) matrix it is in memory times the (C, O) weight, into the output viewed
    (N*H*W, O): fill + ``linalg.matmul`` on ``tensor.reshape`` views (no copies), which
    the cpu matmul schedule takes (M symbolic, K and N static; its fused epilogue by output
    rows, as relax-conv-gemm's NCHW pointwise kernels: ``schedules/pointwise.py``)."""
    def rows(t: KType, sizes: list):
        static = None if any(d is None for d in t.dims[:3]) else t.dims[0] * t.dims[1] * t.dims[2]
        m = kb.bin("arith.muli", kb.bin("arith.muli", sizes[0], sizes[1], "index"), sizes[2], "index")
        return m, static

    xm, xs = rows(x, kb.dims(kb.ins[0]))
    ys = kb.dims(kb.outs[0])
    ym, ysz = rows(out, ys)
    a = kb.reshape(kb.ins[0], [xm, kb.index(c)], KType((xs, c), x.dtype))
    b = kb.reshape(kb.ins[1], [kb.index(c), kb.index(o)], KType((c, o), x.dtype))
    acc = kb.fill(0.0, kb.reshape(kb.outs[0], [ym, kb.index(o)], KType((ysz, o), out.dtype)))
    return kb.finish([kb.reshape(kb.matmul(a, b, acc), ys, out)])


def _legalize_pool_nhwc(call: LegalizeCall):
    """NHWC pooling: the padded input (fill + copy; the lowest value for max, 0 for avg),
    then one generic over (n, oh, ow, c | kh, kw) (a ``tensor.empty`` of the window's shape
    gives the window loops their extent, as linalg's pooling ops do); avg divides by the
    window size or, without ``count_include_pad``, by the unpadded elements of each window."""
    x, out = call.in_types[0], call.out_types[0]
    pads, k, s = _pads(call), list(call["pool_size"]), list(call["strides"])
    big = call.name == "max_pool2d"
    d = list(call["dilation"]) if big else [1, 1]
    cip = None if big else call["count_include_pad"]
    kb = call.builder(attr_tag(l="nhwc", k=k, s=s, p=pads, d=d if big else None, cip=cip))
    xp = _pad_copy_nhwc(kb, kb.ins[0], pads, lowest(x.dtype) if big else 0.0)
    ct = x.dtype if big else compute_type(x.dtype)
    osz = kb.dims(kb.outs[0])
    dest = kb.outs[0] if ct == out.dtype else kb.empty_dims(out.with_dtype(ct), osz)
    acc = kb.fill(lowest(x.dtype) if big else 0.0, dest)
    window = kb.empty_dims(KType((k[0], k[1]), x.dtype), [k[0], k[1]])
    if not big:
        opname = "arith.addf"
    elif is_float(x.dtype):
        opname = "arith.maximumf"
    else:
        opname = "arith.maxui" if x.dtype.startswith("ui") else "arith.maxsi"
    xmap = ["d0", f"d1 * {s[0]} + d4 * {d[0]}", f"d2 * {s[1]} + d5 * {d[1]}", "d3"]
    (r,) = kb.generic([(xp, xmap), (window, ["d4", "d5"])], [(acc, ["d0", "d1", "d2", "d3"])],
                      ["parallel"] * 4 + ["reduction"] * 2,
                      lambda v, _w, o: [kb.bin(opname, o, v if big else kb.cast(v, ct))])
    if big:
        return kb.finish([r])
    return kb.finish([_avg_divide(kb, r, out.dtype, ct, (1, 2), k, s, pads, cip)])
