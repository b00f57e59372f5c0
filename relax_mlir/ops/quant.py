"""Block-quantized weights, stored as GGUF stores them (docs/quantization.md).

A quantized matrix of N rows (output features) by K columns (input features) is ONE relax
value: an ``i8`` tensor ``(N, RB)`` holding the raw GGUF rows, ``RB = K / block * bytes``
(:data:`FORMATS`); the op using it names the format. So a decode step reads the bytes of
the file, dequantized in registers by the kernel.

* ``relax.quantized_matmul(x (..., K) f32|f16|bf16, w (N, RB) i8) {format}`` -> ``(..., N)``
  in x's dtype: ``x @ dequantize(w)^T`` with f32 accumulation (half x widened where read,
  the sum rounded once); ``activations = "q8"`` lets the kernel quantize ``x`` to 8 bits per
  block (llama.cpp's int8 dot products: faster, not exact).
* ``relax.quantized_take(table (V, RB) i8, ids) {format}`` -> ``ids.shape + (K,)`` f32: the
  dequantized rows (an embedding lookup); ids are clamped into [0, V) as ``take`` does.

On the cpu target relax-dispatch-library calls the relax_blas kernels
(``relax_qmatmul_<format>[_q8]``, ``relax_qtake_<format>``); elsewhere (GPU targets, or
dispatch off) they legalize to a generic kernel that dequantizes each element where it is
read: correct on every target, not fast. The library kernels take f32 x only: the cpu
pipeline's relax-widen-bf16-matmul puts casts around a half-x product first.
"""

from __future__ import annotations

from ..shapes import UNKNOWN, Dim, Shape, TensorSig
from .common import tensor_input
from .registry import Attr, InferCall, op

#: format -> (elements per block, bytes per block)
FORMATS = {
    "f16": (1, 2), "bf16": (1, 2),
    "q8_0": (32, 34), "q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24),
    "q4_k": (256, 144), "q5_k": (256, 176), "q6_k": (256, 210),
}
#: formats the generic (any target) kernel dequantizes
GENERIC_FORMATS = ("f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k")
ACTIVATIONS = ("f32", "q8")
#: element types of x (and the result): f16 / bf16 are widened to f32 where read
X_DTYPES = ("f32", "f16", "bf16")
#: formats the cpu target's library kernels compute on (relax-dispatch-library; the kernels:
#: relax_mlir/runtime/quant_kernels.c, docs/quantization.md)
LIBRARY_FORMATS = ("f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k")


def supported_formats(target: str) -> tuple:
    """The formats a model compiled for ``target`` keeps weights in."""
    return tuple(dict.fromkeys(GENERIC_FORMATS + (LIBRARY_FORMATS if target == "cpu" else ())))


def row_bytes(fmt: str, k: int) -> int:
    """Bytes of one row of ``k`` elements in format ``fmt`` (``k`` a multiple of its block)."""
    block, nbytes = FORMATS[fmt]
    if k % block:
        raise ValueError(f"{fmt}: a row of {k} elements is not a whole number of {block}-element blocks")
    return k // block * nbytes


def _format(call: InferCall) -> str:
    fmt = call["format"]
    if fmt not in FORMATS:
        raise call.error(f"unknown format '{fmt}' (formats: {', '.join(FORMATS)})")
    return fmt


def _weight(call: InferCall, i: int, what: str) -> tuple[Dim, int]:
    """(rows, K) of the quantized operand ``i``: an i8 (rows, RB) tensor, RB static."""
    fmt = _format(call)
    w = tensor_input(call, i)
    if w.dtype != "i8" or w.rank != 2:
        raise call.error(f"{what} must be a 2-D i8 tensor of {fmt} rows, got {w.rank}-D {w.dtype}")
    rb = w.shape[1]
    if rb is UNKNOWN or not rb.is_static:
        raise call.error(f"{what}: its row bytes (dim 1) must be static, got {rb}")
    block, nbytes = FORMATS[fmt]
    if rb.value % nbytes:
        raise call.error(f"{what}: {rb.value} row bytes is not a whole number of {fmt} blocks ({nbytes} bytes)")
    return w.shape[0], rb.value // nbytes * block


@op("quantized_matmul", operands=["x", "w"], attrs=[Attr("format", "str"), Attr("activations", "str", "f32")],
    summary="x @ dequantize(w)^T: w an i8 (N, RB) tensor of raw GGUF rows in `format`; x f32, f16 "
            "or bf16 (the result in x's dtype), f32 accumulation; activations = \"q8\": x quantized to 8 bits per block (int8 dot products)",
    family="quant")
def _quantized_matmul(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    n, k = _weight(call, 1, "w")
    if x.dtype not in X_DTYPES or x.rank < 1:
        raise call.error(f"x must be an f32, f16 or bf16 tensor of rank >= 1, got {x.rank}-D {x.dtype}")
    if call["activations"] not in ACTIVATIONS:
        raise call.error(f"activations must be one of {', '.join(ACTIVATIONS)}, got '{call['activations']}'")
    call.require_equal(x.shape[-1], k, f"x dim -1 vs the K of w ({call['format']} rows)")
    return TensorSig(Shape(list(x.shape[:-1]) + [n]), x.dtype)


@op("quantized_take", operands=["table", "indices"], attrs=[Attr("format", "str")],
    summary="dequantized rows of an i8 (V, RB) table of raw GGUF rows in `format` at integer "
            "`indices` (clamped into [0, V))", family="quant")
def _quantized_take(call: InferCall) -> TensorSig:
    _, k = _weight(call, 0, "table")
    idx = tensor_input(call, 1)
    if not idx.dtype.startswith(("i", "ui")) or idx.dtype == "i1":
        raise call.error(f"indices must be an integer tensor, got {idx.dtype}")
    return TensorSig(Shape(list(idx.shape) + [k]), "f32")


# -- legalization: the generic kernel (any target) -----------------------------------------

from mlir.dialects import arith  # noqa: E402
from .kernels import LegalizeCall, attr_tag, identity_map  # noqa: E402
from .registry import legalization  # noqa: E402


def _dequantizer(kb, fmt: str, w: str):
    """A function (row, k: index values) -> the f32 element of ``w`` (raw rows) at (row, k),
    emitted with ``kb`` inside a region: the byte arithmetic of ggml's dequantize_row_*
    (docs/quantization.md's table) on the element's own bytes."""
    block, nbytes = FORMATS[fmt]

    def ix(v):                  # an index value: v itself or the constant v
        return kb.index(v) if isinstance(v, int) else v

    def add(a, b):
        return kb.bin(arith.AddIOp, ix(a), ix(b), "index")

    def mul(a, b):
        return kb.bin(arith.MulIOp, ix(a), ix(b), "index")

    def div(a, b):
        return kb.bin(arith.DivUIOp, ix(a), ix(b), "index")

    def rem(a, b):
        return kb.bin(arith.RemUIOp, ix(a), ix(b), "index")

    def i32(v):                 # an i32 value: v itself, the constant v, or an index cast
        if isinstance(v, int):
            return kb.const(v, "i32")
        return kb.cast(v, "i32") if kb.types[v] == "index" else v

    def bits(x, shift, mask):   # (x >> shift) & mask on i32
        return kb.bin(arith.AndIOp, kb.bin(arith.ShRUIOp, x, i32(shift), "i32"), i32(mask), "i32")

    def byte(row, off):         # the unsigned byte at (row, off) as i32
        b = kb.extract(w, [row, off])
        return kb.conv(arith.ExtUIOp, b, "i32")

    def half_bits(row, off):    # the little-endian 16-bit word at (row, off) as i32
        lo, hi = byte(row, off), byte(row, add(off, 1))
        return kb.bin(arith.OrIOp, lo, kb.bin(arith.ShLIOp, hi, kb.const(8, "i32"), "i32"), "i32")

    def f16_at(row, off):
        h = kb.conv(arith.TruncIOp, half_bits(row, off), "i16")
        return kb.conv(arith.ExtFOp, kb.conv(arith.BitcastOp, h, "f16"), "f32")

    def f32(v):                 # i32 -> f32
        return kb.conv(arith.SIToFPOp, v, "f32")

    def fmul(a, b):
        return kb.bin(arith.MulFOp, a, b, "f32")

    def at(row, k):
        if fmt == "f16":
            return f16_at(row, mul(k, 2))
        if fmt == "bf16":
            b = kb.bin(arith.ShLIOp, half_bits(row, mul(k, 2)), kb.const(16, "i32"), "i32")
            return kb.conv(arith.BitcastOp, b, "f32")
        base = mul(div(k, block), nbytes)
        j = rem(k, block)
        at_ = lambda off: add(base, off)   # noqa: E731 (an offset inside the block)
        if fmt == "q8_0":
            q = kb.extract(w, [row, add(at_(2), j)])
            return fmul(kb.conv(arith.SIToFPOp, q, "f32"), f16_at(row, base))
        if fmt in ("q4_0", "q4_1", "q5_0", "q5_1"):
            # after the header (f16 d, [f16 m], [u32 qh]) 16 bytes of nibbles: element j < 16
            # is the low nibble of byte j, j >= 16 the high nibble of byte j - 16; q5: plus
            # bit j of qh times 16
            head = {"q4_0": 2, "q4_1": 4, "q5_0": 6, "q5_1": 8}[fmt]
            d = f16_at(row, base)
            q = bits(byte(row, add(at_(head), rem(j, 16))), mul(div(j, 16), 4), 15)
            if fmt in ("q5_0", "q5_1"):
                qh = byte(row, add(at_(head - 4), div(j, 8)))
                q = kb.bin(arith.OrIOp, q, kb.bin(arith.ShLIOp, bits(qh, rem(j, 8), 1), i32(4), "i32"), "i32")
            if fmt in ("q4_0", "q5_0"):
                q = kb.bin(arith.SubIOp, q, i32(8 if fmt == "q4_0" else 16), "i32")
            v = fmul(f32(q), d)
            if fmt in ("q4_1", "q5_1"):
                v = kb.bin(arith.AddFOp, v, f16_at(row, at_(2)), "f32")
            return v
        if fmt in ("q4_k", "q5_k"):
            # f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) for the 8 sub-blocks of 32, [32
            # bytes qh], 128 bytes of nibbles: 64-weight chunk c = j / 64 in bytes 32c..32c+31,
            # low nibbles first; q5_k: bit (j / 32) of qh[j % 32] times 16
            sb, qs = div(j, 32), 16 if fmt == "q4_k" else 48
            q = bits(byte(row, add(at_(qs), add(mul(div(j, 64), 32), rem(j, 32)))), mul(rem(sb, 2), 4), 15)
            if fmt == "q5_k":
                q = kb.bin(arith.OrIOp, q, kb.bin(arith.ShLIOp, bits(byte(row, add(at_(16), rem(j, 32))), sb, 1),
                                                  i32(4), "i32"), "i32")
            sa, sb4, sc4 = (byte(row, add(at_(4), o)) for o in (sb, add(sb, 4), rem(sb, 4)))
            lo = kb.cmp("cmpi", "ult", sb, kb.index(4))   # sub-blocks 0-3: 6 low bits of bytes sb, sb + 4
            hi6 = lambda b: kb.bin(arith.ShLIOp, bits(b, 6, 3), i32(4), "i32")  # noqa: E731
            scale = kb.select(lo, bits(sa, 0, 63), kb.bin(arith.OrIOp, bits(sb4, 0, 15), hi6(sc4), "i32"))
            mn = kb.select(lo, bits(sb4, 0, 63), kb.bin(arith.OrIOp, bits(sb4, 4, 15), hi6(sa), "i32"))
            v = fmul(fmul(f16_at(row, base), f32(scale)), f32(q))
            return kb.bin(arith.SubFOp, v, fmul(f16_at(row, at_(2)), f32(mn)), "f32")
        if fmt == "q6_k":
            # 128 bytes ql, 64 bytes qh, 16 i8 scales (one per 16 weights), f16 d; half
            # n = j / 128, group g = (j % 128) / 32, l = j % 32: low 4 bits from ql[64n + 32(g % 2)
            # + l] (nibble g / 2), high 2 bits from qh[32n + l] (bits 2g, 2g + 1); minus 32
            n, g, l_ = div(j, 128), div(rem(j, 128), 32), rem(j, 32)
            lo4 = bits(byte(row, add(at_(0), add(add(mul(n, 64), mul(rem(g, 2), 32)), l_))), mul(div(g, 2), 4), 15)
            hi2 = bits(byte(row, add(at_(128), add(mul(n, 32), l_))), mul(g, 2), 3)
            q = kb.bin(arith.SubIOp, kb.bin(arith.OrIOp, lo4, kb.bin(arith.ShLIOp, hi2, i32(4), "i32"), "i32"),
                       i32(32), "i32")
            sc = kb.extract(w, [row, add(at_(192), div(j, 16))])
            scf = kb.conv(arith.SIToFPOp, sc, "f32")
            return fmul(fmul(f16_at(row, at_(208)), scf), f32(q))
        raise AssertionError(fmt)

    return at


def _generic_format(call: LegalizeCall) -> str:
    fmt = call["format"]
    if fmt not in GENERIC_FORMATS:
        raise call.error(f"format '{fmt}' has no generic kernel (formats: {', '.join(GENERIC_FORMATS)}); "
                         "it runs on the cpu target through relax-dispatch-library's quantized kernels")
    return fmt


@legalization("quantized_matmul")
def _legalize_quantized_matmul(call: LegalizeCall):
    """out[..., n] = sum_k x[..., k] * dequantize(w)[n, k]: a reduction generic whose body
    reads the weight's bytes (slow; the cpu target dispatches to a library kernel). A half
    x is widened in the body and summed into an f32 buffer, which an elementwise generic
    rounds to x's dtype (as the f16 matmul's legalization: the GPU rules take it as the
    product's epilogue)."""
    fmt = _generic_format(call)
    x, _ = call.in_types
    out = call.out_types[0]
    kb = call.builder(attr_tag(format=fmt))
    lead = [f"d{i}" for i in range(x.rank - 1)]
    nd, kd = f"d{x.rank - 1}", f"d{x.rank}"
    at = _dequantizer(kb, fmt, kb.ins[1])

    def body(xv, acc):
        wv = at(kb.linalg_index(x.rank - 1), kb.linalg_index(x.rank))
        return [kb.bin(arith.AddFOp, acc, kb.bin(arith.MulFOp, kb.cast(xv, "f32"), wv, "f32"), "f32")]

    half = out.dtype != "f32"
    zero = kb.fill(0.0, kb.empty(out.with_dtype("f32"), kb.outs[0]) if half else kb.outs[0])
    (r,) = kb.generic([(kb.ins[0], lead + [kd])], [(zero, lead + [nd])],
                      ["parallel"] * x.rank + ["reduction"], body)
    if half:
        (r,) = kb.generic([(r, identity_map(out.rank))], [(kb.outs[0], identity_map(out.rank))],
                          ["parallel"] * out.rank, lambda v, _: [kb.cast(v, out.dtype)])
    return kb.finish([r])


@legalization("quantized_take")
def _legalize_quantized_take(call: LegalizeCall):
    """out[i..., k] = dequantize(table)[clamp(ids[i...]), k]."""
    fmt = _generic_format(call)
    _, idx = call.in_types
    out = call.out_types[0]
    kb = call.builder(attr_tag(format=fmt))
    rows = kb.dim(kb.ins[0], 0)
    at = _dequantizer(kb, fmt, kb.ins[0])

    def body(i, o):
        i = kb.cast(i, "index")
        i = kb.bin(arith.MinSIOp, kb.bin(arith.MaxSIOp, i, kb.index(0), "index"),
                   kb.bin(arith.SubIOp, rows, kb.index(1), "index"), "index")
        return [at(i, kb.linalg_index(idx.rank))]

    (r,) = kb.generic([(kb.ins[1], [f"d{j}" for j in range(idx.rank)])], [(kb.outs[0], identity_map(out.rank))],
                      ["parallel"] * out.rank, body)
    return kb.finish([r])
