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
    "mod": "a - trunc(a / b) * b (C fmod, numpy's fmod; sign of a)",
    "floor_mod": "a - floor(a / b) * b (numpy's %; sign of b)",
}
COMPARE = {
    "equal": "a == b",
    "not_equal": "a != b",
    "less": "a < b",
    "less_equal": "a <= b",
    "greater": "a > b",
    "greater_equal": "a >= b",
}


#: numpy refuses these on bool (subtract, negative) or leaves bool (divide gives
#: floats, // and ** give int8); relax keeps the operand dtype, so they are refused.
BOOL_REFUSED = ("subtract", "divide", "floor_divide", "power", "mod", "floor_mod")


def _declare(name: str, summary: str, result_dtype) -> None:
    def rule(call: InferCall) -> TensorSig:
        sig = binary(call, result_dtype)
        if name in BOOL_REFUSED and call.inputs[0].dtype == "i1":
            raise call.error("is not defined on i1 (bool) tensors; astype to an integer type first")
        return sig

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

from mlir import ir  # noqa: E402
from mlir.dialects import arith  # noqa: E402
from mlir.dialects import math as math_d  # noqa: E402
from .kernels import (KernelBuilder, LegalizeCall, compute_type, elementwise, is_float,  # noqa: E402
                      is_unsigned, lowest)
from .registry import legalization  # noqa: E402

_FLOAT_OPS = {"add": arith.AddFOp, "subtract": arith.SubFOp, "multiply": arith.MulFOp,
              "divide": arith.DivFOp, "maximum": arith.MaximumFOp, "minimum": arith.MinimumFOp}
_INT_OPS = {"add": arith.AddIOp, "subtract": arith.SubIOp, "multiply": arith.MulIOp}
_MINMAX = {("maximum", False): arith.MaxSIOp, ("minimum", False): arith.MinSIOp,
           ("maximum", True): arith.MaxUIOp, ("minimum", True): arith.MinUIOp}
#: numpy's bool arithmetic: + is or, * is and (max/min agree).
_BOOL_OPS = {"add": arith.OrIOp, "multiply": arith.AndIOp, "maximum": arith.OrIOp, "minimum": arith.AndIOp}
_CMPF = {"equal": "oeq", "not_equal": "une", "less": "olt", "less_equal": "ole",
         "greater": "ogt", "greater_equal": "oge"}
_CMPI = {"equal": "eq", "not_equal": "ne", "less": "slt", "less_equal": "sle",
         "greater": "sgt", "greater_equal": "sge"}
_CMPU = {"equal": "eq", "not_equal": "ne", "less": "ult", "less_equal": "ule",
         "greater": "ugt", "greater_equal": "uge"}


def binary_scalar(kb: KernelBuilder, name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    """The element of ``name(a, b)`` with numpy's result for every input: floor_divide
    floors, int divide truncates like C, int power is exact with wrap-around; integer
    division never traps (x // 0 and x % 0 are 0 as in numpy, INT_MIN // -1 wraps to
    INT_MIN); ui and bool compare unsigned."""
    dtype = kb.types[a]
    uns = is_unsigned(dtype)
    if name in _CMPF:
        if is_float(dtype):
            return kb.cmp("cmpf", _CMPF[name], a, b)
        return kb.cmp("cmpi", (_CMPU if uns else _CMPI)[name], a, b)
    if is_float(dtype):
        if name in _FLOAT_OPS:
            return kb.bin(_FLOAT_OPS[name], a, b)
        ct = compute_type(dtype)
        x, y = kb.cast(a, ct), kb.cast(b, ct)
        if name == "power":
            r = kb.bin(math_d.PowFOp, x, y)
        elif name == "floor_divide":
            r = _float_floor_divide(kb, x, y)
        else:
            r = _float_mod(kb, x, y, floor=name == "floor_mod")
        return kb.cast(r, dtype)
    if dtype == "i1":
        if name in _BOOL_OPS:
            return kb.bin(_BOOL_OPS[name], a, b)
        raise ValueError(f"relax.{name} on i1 is refused by its shape rule")
    if name in _INT_OPS:
        return kb.bin(_INT_OPS[name], a, b)
    if name in ("maximum", "minimum"):
        return kb.bin(_MINMAX[name, uns], a, b)
    if name in ("divide", "floor_divide"):
        return int_divide(kb, a, b, floor=name == "floor_divide")
    if name in ("mod", "floor_mod"):
        return int_mod(kb, a, b, floor=name == "floor_mod")
    if name == "power":
        return int_power(kb, a, b)
    raise ValueError(name)


def _safe_divisor(kb: KernelBuilder, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """(0, 1, b == 0, a divisor that cannot trap): b, or 1 where b is 0 or (signed) where
    a is INT_MIN and b is -1."""
    dtype = kb.types[a]
    zero, one = kb.const(0, dtype), kb.const(1, dtype)
    bzero = kb.cmp("cmpi", "eq", b, zero)
    bad = bzero
    if not is_unsigned(dtype):
        overflow = kb.bin(arith.AndIOp, kb.cmp("cmpi", "eq", a, kb.const(lowest(dtype), dtype)),
                          kb.cmp("cmpi", "eq", b, kb.const(-1, dtype)), "i1")
        bad = kb.bin(arith.OrIOp, bzero, overflow, "i1")
    return zero, one, bzero, kb.select(bad, one, b)


def int_divide(kb: KernelBuilder, a: ir.Value, b: ir.Value, floor: bool) -> ir.Value:
    """Integer division that cannot trap: the divisor is replaced by 1 where it is 0 (the
    result is then 0) or where a is INT_MIN and b is -1 (the result is then a, the
    wrapped quotient). Truncating, or flooring when ``floor`` (like numpy's //)."""
    zero, one, bzero, bs = _safe_divisor(kb, a, b)
    if is_unsigned(kb.types[a]):
        return kb.select(bzero, zero, kb.bin(arith.DivUIOp, a, bs))
    q = kb.bin(arith.DivSIOp, a, bs)
    if floor:
        # step down when the remainder is nonzero and its sign differs from the divisor's
        r = kb.bin(arith.RemSIOp, a, bs)
        nz = kb.cmp("cmpi", "ne", r, zero)
        neg = kb.bin(arith.XOrIOp, kb.cmp("cmpi", "slt", r, zero), kb.cmp("cmpi", "slt", bs, zero), "i1")
        q = kb.select(kb.bin(arith.AndIOp, nz, neg, "i1"), kb.bin(arith.SubIOp, q, one), q)
    return kb.select(bzero, zero, q)


def int_mod(kb: KernelBuilder, a: ir.Value, b: ir.Value, floor: bool) -> ir.Value:
    """Integer remainder that cannot trap: x % 0 is 0 (numpy's result) and INT_MIN % -1
    is 0 (the divisor is replaced by 1 there). Sign of a (mod), or of b (floor_mod)."""
    zero, one, bzero, bs = _safe_divisor(kb, a, b)
    if is_unsigned(kb.types[a]):
        return kb.select(bzero, zero, kb.bin(arith.RemUIOp, a, bs))
    r = kb.bin(arith.RemSIOp, a, bs)
    if floor:   # a nonzero remainder whose sign differs from the divisor's moves by b
        nz = kb.cmp("cmpi", "ne", r, zero)
        neg = kb.bin(arith.XOrIOp, kb.cmp("cmpi", "slt", r, zero), kb.cmp("cmpi", "slt", bs, zero), "i1")
        r = kb.select(kb.bin(arith.AndIOp, nz, neg, "i1"), kb.bin(arith.AddIOp, r, bs), r)
    return kb.select(bzero, zero, r)


def _float_mod(kb: KernelBuilder, a: ir.Value, b: ir.Value, floor: bool) -> ir.Value:
    """C fmod (arith.remf), or numpy's % (npy_divmod): fmod moved by b when the signs
    differ, a zero result takes b's sign; x % 0.0 is NaN either way."""
    m = kb.bin(arith.RemFOp, a, b)
    if not floor:
        return m
    t = kb.types[a]
    zero = kb.const(0.0, t)
    fix = kb.bin(arith.AndIOp, kb.cmp("cmpf", "une", m, zero),
                 kb.bin(arith.XOrIOp, kb.cmp("cmpf", "olt", b, zero), kb.cmp("cmpf", "olt", m, zero), "i1"), "i1")
    m2 = kb.select(fix, kb.bin(arith.AddFOp, m, b), m)
    return kb.select(kb.cmp("cmpf", "oeq", m, zero), kb.bin(math_d.CopySignOp, zero, b), m2)


def int_power(kb: KernelBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """a ** b by square-and-multiply over the bits of b: exact modulo 2**width, as
    numpy. A loop while bits remain (scf.while, at most ``width`` trips): an unrolled
    chain made LLVM's optimizer run for minutes on a loop-invariant base (fuzz program
    7000029). numpy refuses negative exponents; here they give the truncated real
    result: 1 for a == 1, +-1 for a == -1, else 0 (0 ** -k too)."""
    dtype = kb.types[a]
    one, zero = kb.const(1, dtype), kb.const(0, dtype)
    neg = None if is_unsigned(dtype) else kb.cmp("cmpi", "slt", b, zero)
    e0 = b if neg is None else kb.select(neg, zero, b)

    def step(acc, base, e):
        odd = kb.cmp("cmpi", "ne", kb.bin(arith.AndIOp, e, one), zero)
        r = kb.select(odd, kb.bin(arith.MulIOp, acc, base), acc)
        return [r, kb.bin(arith.MulIOp, base, base), kb.bin(arith.ShRUIOp, e, one)]

    r = kb.while_([one, a, e0], lambda acc, base, e: (kb.cmp("cmpi", "ne", e, zero), [acc, base, e]), step)[0]
    if neg is None:
        return r
    m1 = kb.const(-1, dtype)
    odd_b = kb.cmp("cmpi", "ne", kb.bin(arith.AndIOp, b, one), zero)
    neg_r = kb.select(kb.cmp("cmpi", "eq", a, one), one,
                      kb.select(kb.cmp("cmpi", "eq", a, m1), kb.select(odd_b, m1, one), zero))
    return kb.select(neg, neg_r, r)


def _float_floor_divide(kb: KernelBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """numpy's float floor_divide (npy_divmod): from fmod, so 1 // 0.1 is 9 like
    divmod; x // 0 is a / b (inf or nan)."""
    t = kb.types[a]
    zero, one, half = kb.const(0.0, t), kb.const(1.0, t), kb.const(0.5, t)
    mod = kb.bin(arith.RemFOp, a, b)
    div = kb.bin(arith.DivFOp, kb.bin(arith.SubFOp, a, mod), b)
    fix = kb.bin(arith.AndIOp, kb.cmp("cmpf", "une", mod, zero),
                 kb.bin(arith.XOrIOp, kb.cmp("cmpf", "olt", b, zero), kb.cmp("cmpf", "olt", mod, zero), "i1"), "i1")
    div = kb.select(fix, kb.bin(arith.SubFOp, div, one), div)
    fl = kb.un(math_d.FloorOp, div)
    fl = kb.select(kb.cmp("cmpf", "ogt", kb.bin(arith.SubFOp, div, fl), half), kb.bin(arith.AddFOp, fl, one), fl)
    q = kb.bin(arith.DivFOp, a, b)
    fl = kb.select(kb.cmp("cmpf", "oeq", div, zero), kb.bin(math_d.CopySignOp, zero, q), fl)
    return kb.select(kb.cmp("cmpf", "oeq", b, zero), q, fl)


@legalization(*ARITH, *COMPARE)
def _legalize_binary(call: LegalizeCall):
    kb = call.builder()
    return kb.finish([elementwise(kb, kb.ins, lambda a, b: binary_scalar(kb, call.name, a, b))])


@legalization("where")
def _legalize_where(call: LegalizeCall):
    kb = call.builder()
    return kb.finish([elementwise(kb, kb.ins, lambda c, x, y: kb.select(c, x, y))])
