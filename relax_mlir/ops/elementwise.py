"""Elementwise unary ops and astype: the result has the operand's shape."""

from __future__ import annotations

import math

from ..shapes import TensorSig
from .common import elementwise_unary, tensor_input
from .registry import Attr, InferCall, op

# name -> (summary, float only?)
UNARY = {
    "exp": ("e**x", True),
    "log": ("natural logarithm", True),
    "sqrt": ("square root", True),
    "rsqrt": ("1 / sqrt(x)", True),
    "tanh": ("hyperbolic tangent", True),
    "sigmoid": ("1 / (1 + exp(-x))", True),
    "negative": ("-x", False),
    "abs": ("|x|", False),
    "relu": ("max(x, 0)", False),
    "silu": ("x * sigmoid(x)", True),
    "gelu": ("x * Phi(x) (erf form)", True),
    "gelu_tanh": ("GELU, tanh approximation", True),
    "sin": ("sine", True),
    "cos": ("cosine", True),
    "erf": ("error function", True),
    "floor": ("round toward -inf", True),
    "ceil": ("round toward +inf", True),
    "round": ("round half to even", True),
}


def _declare_unary(name: str, summary: str, float_only: bool) -> None:
    def rule(call: InferCall) -> TensorSig:
        sig = elementwise_unary(call, float_only)
        if name == "negative" and sig.dtype == "i1":   # numpy: TypeError, use logical_not
            raise call.error("is not defined on i1 (bool) tensors; use relax.equal with false")
        return sig

    rule.__name__ = f"_{name}_shape"
    op(name, operands=["x"], summary=f"elementwise {summary}", family="elementwise")(rule)


for _name, (_summary, _float_only) in UNARY.items():
    _declare_unary(_name, _summary, _float_only)


@op("astype", operands=["x"], attrs=[Attr("dtype", "dtype")], summary="elementwise cast to `dtype`")
def _astype(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    return TensorSig(x.shape, call["dtype"])


# -- legalization -------------------------------------------------------------------------

from mlir import ir  # noqa: E402
from mlir.dialects import arith  # noqa: E402
from mlir.dialects import math as math_d  # noqa: E402
from .kernels import KernelBuilder, LegalizeCall, compute_type, elementwise, is_float, is_unsigned  # noqa: E402
from .registry import legalization  # noqa: E402

_MATH = {"exp": math_d.ExpOp, "log": math_d.LogOp, "sqrt": math_d.SqrtOp, "rsqrt": math_d.RsqrtOp,
         "tanh": math_d.TanhOp, "sin": math_d.SinOp, "cos": math_d.CosOp, "erf": math_d.ErfOp,
         "floor": math_d.FloorOp, "ceil": math_d.CeilOp, "round": math_d.RoundEvenOp}


def unary_scalar(kb: KernelBuilder, name: str, x: ir.Value) -> ir.Value:
    """The element of ``name(x)`` (half types computed in f32)."""
    dtype = kb.types[x]
    if not is_float(dtype):
        zero = kb.const(0, dtype)
        if name == "negative":      # wraps (INT_MIN stays INT_MIN, ui8 1 -> 255), as numpy
            return kb.bin(arith.SubIOp, zero, x)
        if is_unsigned(dtype) and name in ("abs", "relu"):
            return x
        if name == "abs":           # abs(INT_MIN) wraps to INT_MIN, as numpy
            return kb.un(math_d.AbsIOp, x)
        if name == "relu":
            return kb.bin(arith.MaxSIOp, x, zero)
        raise ValueError(name)
    if name == "negative":
        return kb.un(arith.NegFOp, x)
    if name == "abs":
        return kb.un(math_d.AbsFOp, x)
    if name == "relu":
        return kb.bin(arith.MaximumFOp, x, kb.const(0.0, dtype))
    ct = compute_type(dtype)
    v = kb.cast(x, ct)
    one, half = kb.const(1.0, ct), kb.const(0.5, ct)
    if name in _MATH:
        r = kb.un(_MATH[name], v)
    elif name in ("sigmoid", "silu"):
        e = kb.un(math_d.ExpOp, kb.un(arith.NegFOp, v))
        r = kb.bin(arith.DivFOp, one, kb.bin(arith.AddFOp, one, e))
        if name == "silu":
            r = kb.bin(arith.MulFOp, v, r)
    elif name == "gelu":
        t = kb.un(math_d.ErfOp, kb.bin(arith.MulFOp, v, kb.const(1 / math.sqrt(2.0), ct)))
        r = kb.bin(arith.MulFOp, kb.bin(arith.MulFOp, half, v), kb.bin(arith.AddFOp, one, t))
    elif name == "gelu_tanh":
        cube = kb.bin(arith.MulFOp, kb.bin(arith.MulFOp, v, v), v)
        inner = kb.bin(arith.AddFOp, v, kb.bin(arith.MulFOp, kb.const(0.044715, ct), cube))
        t = kb.un(math_d.TanhOp, kb.bin(arith.MulFOp, kb.const(math.sqrt(2.0 / math.pi), ct), inner))
        r = kb.bin(arith.MulFOp, kb.bin(arith.MulFOp, half, v), kb.bin(arith.AddFOp, one, t))
    else:
        raise ValueError(name)
    return kb.cast(r, dtype)


@legalization(*UNARY)
def _legalize_unary(call: LegalizeCall):
    kb = call.builder()
    return kb.finish([elementwise(kb, kb.ins, lambda x: unary_scalar(kb, call.name, x))])


@legalization("astype")
def _legalize_astype(call: LegalizeCall):
    to = call.out_types[0].dtype
    kb = call.builder(f"to_{to}")
    return kb.finish([elementwise(kb, kb.ins, lambda x: kb.cast(x, to))])
