"""Binary elementwise ops with numpy broadcasting, comparisons (i1 results), where."""

from __future__ import annotations

from ..shapes import TensorSig
from .common import binary, broadcast_shapes, same_dtype, tensor_input
from .registry import InferCall, op

ARITH = {
    "add": "a + b",
    "subtract": "a - b",
    "multiply": "a * b",
    "divide": "a / b (true division for floats, C division for ints)",
    "power": "a ** b",
    "maximum": "max(a, b)",
    "minimum": "min(a, b)",
    "floor_divide": "floor(a / b)",
}
COMPARE = {
    "equal": "a == b",
    "not_equal": "a != b",
    "less": "a < b",
    "less_equal": "a <= b",
    "greater": "a > b",
    "greater_equal": "a >= b",
}


def _declare(name: str, summary: str, result_dtype) -> None:
    def rule(call: InferCall) -> TensorSig:
        return binary(call, result_dtype)

    rule.__name__ = f"_{name}_shape"
    op(name, operands=["lhs", "rhs"], summary=f"elementwise {summary}, numpy broadcasting",
       family="binary")(rule)


for _n, _s in ARITH.items():
    _declare(_n, _s, None)
for _n, _s in COMPARE.items():
    _declare(_n, _s + " (i1 result)", "i1")


@op("where", operands=["cond", "x", "y"], summary="cond ? x : y elementwise, three-way broadcasting")
def _where(call: InferCall) -> TensorSig:
    c, x, y = (tensor_input(call, i) for i in range(3))
    if c.dtype != "i1":
        raise call.error(f"condition must be an i1 tensor, got {c.dtype}")
    dtype = same_dtype(call, [x, y])
    return TensorSig(broadcast_shapes(call, [c.shape, x.shape, y.shape]), dtype)
