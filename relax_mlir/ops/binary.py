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


# -- legalization -------------------------------------------------------------------------

from .kernels import KernelBuilder, LegalizeCall, compute_type, elementwise, is_float  # noqa: E402
from .registry import legalization  # noqa: E402

_FLOAT_OPS = {"add": "arith.addf", "subtract": "arith.subf", "multiply": "arith.mulf",
              "divide": "arith.divf", "maximum": "arith.maximumf", "minimum": "arith.minimumf"}
_INT_OPS = {"add": "arith.addi", "subtract": "arith.subi", "multiply": "arith.muli",
            "divide": "arith.divsi", "maximum": "arith.maxsi", "minimum": "arith.minsi"}
_CMPF = {"equal": "oeq", "not_equal": "une", "less": "olt", "less_equal": "ole",
         "greater": "ogt", "greater_equal": "oge"}
_CMPI = {"equal": "eq", "not_equal": "ne", "less": "slt", "less_equal": "sle",
         "greater": "sgt", "greater_equal": "sge"}


def binary_scalar(kb: KernelBuilder, name: str, a: str, b: str) -> str:
    """The element of ``name(a, b)``: numpy semantics (floor_divide floors, int divide
    truncates like C, int power through f64)."""
    dtype = kb.types[a]
    if name in _CMPF:
        return kb.cmp("cmpf", _CMPF[name], a, b) if is_float(dtype) else kb.cmp("cmpi", _CMPI[name], a, b)
    if is_float(dtype):
        if name in _FLOAT_OPS:
            return kb.bin(_FLOAT_OPS[name], a, b)
        ct = compute_type(dtype)
        x, y = kb.cast(a, ct), kb.cast(b, ct)
        if name == "power":
            r = kb.bin("math.powf", x, y)
        else:  # floor_divide
            r = kb.un("math.floor", kb.bin("arith.divf", x, y))
        return kb.cast(r, dtype)
    if name in _INT_OPS:
        return kb.bin(_INT_OPS[name], a, b)
    if name == "floor_divide":
        # q = a / b truncated; step down when the remainder is nonzero and signs differ.
        zero, one = kb.const(0, dtype), kb.const(1, dtype)
        q, r = kb.bin("arith.divsi", a, b), kb.bin("arith.remsi", a, b)
        nz = kb.cmp("cmpi", "ne", r, zero)
        neg = kb.bin("arith.xori", kb.cmp("cmpi", "slt", r, zero), kb.cmp("cmpi", "slt", b, zero), "i1")
        return kb.select(kb.bin("arith.andi", nz, neg, "i1"), kb.bin("arith.subi", q, one), q)
    if name == "power":
        r = kb.bin("math.powf", kb.cast(a, "f64"), kb.cast(b, "f64"))
        return kb.cast(r, dtype)
    raise ValueError(name)


@legalization(*ARITH, *COMPARE)
def _legalize_binary(call: LegalizeCall):
    kb = call.builder()
    return kb.finish([elementwise(kb, kb.ins, lambda a, b: binary_scalar(kb, call.name, a, b))])


@legalization("where")
def _legalize_where(call: LegalizeCall):
    kb = call.builder()
    return kb.finish([elementwise(kb, kb.ins, lambda c, x, y: kb.select(c, x, y))])
