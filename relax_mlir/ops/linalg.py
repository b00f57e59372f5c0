"""Contractions: matmul with numpy semantics."""

from __future__ import annotations

from ..shapes import Shape, TensorSig
from .common import broadcast_shapes, same_dtype, tensor_input
from .registry import Attr, InferCall, op


@op("matmul", operands=["lhs", "rhs"], attrs=[Attr("out_dtype", "dtype", None)],
    summary="matrix product, numpy semantics (1-D operands, broadcast batch dims)")
def _matmul(call: InferCall) -> TensorSig:
    a, b = tensor_input(call, 0), tensor_input(call, 1)
    dtype = same_dtype(call, [a, b])
    if a.rank == 0 or b.rank == 0:
        raise call.error("operands must have rank >= 1")
    ad, bd = list(a.shape), list(b.shape)
    a_vec, b_vec = a.rank == 1, b.rank == 1
    if a_vec:
        ad = [1] + ad
    if b_vec:
        bd = bd + [1]
    call.require_equal(ad[-1], bd[-2], "reduction dim K (lhs dim -1 vs rhs dim -2)")
    batch = broadcast_shapes(call, [Shape(ad[:-2]), Shape(bd[:-2])])
    out = list(batch) + ([] if a_vec else [ad[-2]]) + ([] if b_vec else [bd[-1]])
    return TensorSig(Shape(out), call["out_dtype"] or dtype)


# -- legalization -------------------------------------------------------------------------

from mlir.dialects import arith  # noqa: E402
from .kernels import KType, LegalizeCall, attr_tag, is_float  # noqa: E402
from .registry import legalization  # noqa: E402


@legalization("matmul")
def _legalize_matmul(call: LegalizeCall):
    """linalg.matmul / batch_matmul when no operand broadcasts, else one linalg.generic
    (batch dims broadcast with numpy rules); half inputs accumulate in f32."""
    a, b = call.in_types
    out = call.out_types[0]
    kb = call.builder(attr_tag(out=call["out_dtype"]))
    acc_dt = "f32" if out.dtype in ("f16", "bf16") else out.dtype
    acc = kb.outs[0] if acc_dt == out.dtype else kb.empty(out.with_dtype(acc_dt), kb.outs[0])
    acc = kb.fill(0.0 if is_float(acc_dt) else 0, acc)
    # the named ops add with arith.addi, which on i1 is xor: bool matmul (or of ands, as
    # numpy) and unsigned widening (extui) take the generic form
    same = (a.dtype == b.dtype == kb.types[acc].dtype or is_float(a.dtype)) and a.dtype != "i1" \
        and not a.dtype.startswith("ui")
    if a.rank == b.rank == 2 and same:
        r = kb.matmul(kb.ins[0], kb.ins[1], acc)
    elif a.rank == b.rank == 3 and same and (a.dims[0] == 1) == (b.dims[0] == 1):
        r = kb.matmul(kb.ins[0], kb.ins[1], acc, batch=True)
    else:
        # Loops: output dims (batch..., [m], [n]) then k (reduction).
        nb = out.rank - (a.rank > 1) - (b.rank > 1)
        m = [f"d{nb}"] if a.rank > 1 else []
        n = [f"d{nb + len(m)}"] if b.rank > 1 else []
        k = f"d{out.rank}"
        batch = KType(out.dims[:nb], out.dtype)

        def bmap(t: KType) -> list[str]:
            tb = KType(t.dims[:max(t.rank - 2, 0)], t.dtype)
            off = nb - tb.rank
            return ["0" if (d == 1 and batch.dims[off + i] != 1) else f"d{off + i}" for i, d in enumerate(tb.dims)]

        amap = bmap(a) + m + [k]
        bmap_ = bmap(b) + [k] + n
        omap = [f"d{i}" for i in range(out.rank)]

        def body(x, y, o):
            ct = kb.types[o]
            x, y = kb.cast(x, ct), kb.cast(y, ct)
            if is_float(ct):
                return [kb.bin(arith.AddFOp, o, kb.bin(arith.MulFOp, x, y))]
            if ct == "i1":
                return [kb.bin(arith.OrIOp, o, kb.bin(arith.AndIOp, x, y))]
            return [kb.bin(arith.AddIOp, o, kb.bin(arith.MulIOp, x, y))]

        (r,) = kb.generic([(kb.ins[0], amap), (kb.ins[1], bmap_)], [(acc, omap)],
                          ["parallel"] * out.rank + ["reduction"], body)
    if acc_dt != out.dtype:
        (r,) = kb.generic([(r, [f"d{i}" for i in range(out.rank)])], [(kb.outs[0], [f"d{i}" for i in range(out.rank)])],
                          ["parallel"] * out.rank, lambda x, o: [kb.cast(x, out.dtype)])
    return kb.finish([r])
