"""Elementwise unary ops and astype: the result has the operand's shape."""

from __future__ import annotations

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
        return elementwise_unary(call, float_only)

    rule.__name__ = f"_{name}_shape"
    op(name, operands=["x"], summary=f"elementwise {summary}", family="elementwise")(rule)


for _name, (_summary, _float_only) in UNARY.items():
    _declare_unary(_name, _summary, _float_only)


@op("astype", operands=["x"], attrs=[Attr("dtype", "dtype")], summary="elementwise cast to `dtype`")
def _astype(call: InferCall) -> TensorSig:
    x = tensor_input(call, 0)
    return TensorSig(x.shape, call["dtype"])
