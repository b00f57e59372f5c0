"""relax-expand-math: f32 ``math.exp`` as inline arithmetic (range reduction + polynomial).

``convert-math-to-llvm`` turns ``math.exp`` into a libm call per element, which LLVM
cannot vectorize: softmax, sigmoid and SiLU then spend nearly all their time in
``expf``. Upstream's polynomial approximations are not exposed as a pass in the MLIR
Python wheels, so this pass expands exp itself (the classic Cephes ``expf`` scheme):

    x = clamp(x, -86.5, 88.72283) (NaN -> a bound);  n = floor(x * log2(e) + 1/2)
    r = x - n * C1 - n * C2              (C1 + C2 = ln 2, split for accuracy)
    exp(x) = (1 + r + r^2 * P(r)) * 2^n  (P of degree 5; 2^n built from the exponent bits)

Relative error stays within 2 ulp on the range; for x < -86.5 the result is 0 (exp would
be below 2.7e-38, near subnormals, which costs ~100x per operation on x86, e.g. in softmax
over a -1e9 causal mask) and NaN propagates (selected, never through the integer
exponent, whose conversion of NaN is poison). Runs after bufferization, before loops
are lowered to LLVM, on every ``math.exp`` of f32 (scalars, as in linalg bodies).

``math.erf`` and ``math.tanh`` of f32 (GELU's erf and tanh forms, libm ``erff`` / ``tanhf``
per element otherwise, which scalarizes a vectorized kernel) become an odd rational
``x P(x^2) / Q(x^2)`` on a clamped range: ten fused multiply-adds, four compare-selects
and one division, no exp and no branch (see :func:`_clamped_rational`). The A&S erf this replaced (a division, an exp, a Taylor series)
took 1.3x the time of a bias add over memory, and several times that where its exp
produced subnormals (|x| > 6); tanh went to libm ``tanhf``, scalar, 40x.
"""

from __future__ import annotations


from mlir import ir
from mlir.dialects import arith

from .registry import Option, register_pass

_HIGH = 88.72283  # log(FLT_MAX); above it exp is +inf
_LOW = -86.5  # exp(-86.5) ~ 2.7e-38; below it we return 0 (2^(n-1) stays a normal float)
_P = [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1]


def _expand_exp(op: ir.Operation) -> None:
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)
    ip, loc = ir.InsertionPoint(op), op.location

    def mk(name, operands, attrs=None, rtype=f32):
        return ir.Operation.create(name, results=[rtype], operands=operands, attributes=attrs or {},
                                   ip=ip, loc=loc).result

    def c(v: float):
        return mk("arith.constant", [], {"value": ir.FloatAttr.get(f32, v)})

    def bin_(name, a, b):
        return mk(name, [a, b])

    x0 = op.operands[0]
    # maxnumf/minnumf return the number when one side is NaN: x stays finite, so the fptosi
    # below never sees NaN (its result would be poison, which LLVM may fold into any value
    # when the NaN is a constant, e.g. max over an empty axis, -inf / -inf); NaN is
    # selected back at the end.
    x = bin_("arith.minnumf", bin_("arith.maxnumf", x0, c(_LOW)), c(_HIGH))
    n = mk("math.floor", [bin_("arith.addf", bin_("arith.mulf", x, c(1.44269504088896341)), c(0.5))])
    r = bin_("arith.subf", x, bin_("arith.mulf", n, c(0.693359375)))
    r = bin_("arith.subf", r, bin_("arith.mulf", n, c(-2.12194440e-4)))
    p = c(_P[0])
    for coef in _P[1:]:
        p = bin_("arith.addf", bin_("arith.mulf", p, r), c(coef))
    y = bin_("arith.addf", bin_("arith.addf", bin_("arith.mulf", bin_("arith.mulf", p, r), r), r), c(1.0))
    ni = mk("arith.fptosi", [n], rtype=i32)
    # 2^n as 2^(n-1) * 2: n reaches 128 just below the overflow threshold (2^128 is inf).
    bits = mk("arith.shli", [mk("arith.addi", [ni, mk("arith.constant", [], {"value": ir.IntegerAttr.get(i32, 126)}, i32)], rtype=i32),
                             mk("arith.constant", [], {"value": ir.IntegerAttr.get(i32, 23)}, i32)], rtype=i32)
    scale = mk("arith.bitcast", [bits])
    out = bin_("arith.mulf", bin_("arith.mulf", y, c(2.0)), scale)
    # Below the range the result is 0: a subnormal result would cost ~100x per operation.
    low = mk("arith.cmpf", [x0, c(_LOW)], {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 4)},
             rtype=ir.IntegerType.get_signless(1))  # 4 = olt
    out = mk("arith.select", [low, c(0.0), out])
    high = mk("arith.cmpf", [x0, c(_HIGH)], {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 2)},
              rtype=ir.IntegerType.get_signless(1))  # 2 = ogt: overflow is +inf
    out = mk("arith.select", [high, c(float("inf")), out])
    nan = mk("arith.cmpf", [x0, x0], {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 14)},
             rtype=ir.IntegerType.get_signless(1))  # 14 = uno: x0 is NaN
    out = mk("arith.select", [nan, x0, out])
    op.results[0].replace_all_uses_with(out)
    op.erase()


#: Odd rationals ``x P(x^2) / Q(x^2)`` (float32 coefficients, powers of x^2 lowest first)
#: fitted for the least maximum RELATIVE error by relax_mlir/tools/fit_rational.py
#: (``python -m relax_mlir.tools.fit_rational erf 3.925 6 4`` / ``tanh 9.1 4 4``) on
#: [-bound, bound]; beyond it the function is +-1 in float32 (erfc(3.925), 1 - tanh(9.1) <
#: 2^-25). Float64 relative error 5.2e-8 (erf), 2.3e-8 (tanh); in float32 about 3.2e-7
#: absolute near +-1 (rounding: a few ulp of 1) and 2.4e-7 relative near 0. GELU's
#: 0.5 x (1 + erf) inherits the erf error times x / 2: within 1e-6 (2 ulp of the output at
#: x = 5). The more accurate split form of commit eba071d (this rational for |x| <= 2,
#: 1 - a polynomial for erfc above: erf 2.1e-7, GELU 4.6e-7 = 1 ulp) took 15 % more time
#: in bias + GELU at 4096 x 1536, one thread (6.4-6.6 ms against 5.6, torch 5.5).
_ERF_BOUND = 3.925
_ERF_P = [1.1283791065216064, 0.20036698877811432, 0.05063145235180855, 0.0037192502059042454,
          0.00014217209536582232, -1.956571622940828e-06, 1.9869078826673103e-08]
_ERF_Q = [1.0, 0.5109022259712219, 0.11518073827028275, 0.01439017802476883, 0.0009599816985428333]
_TANH_BOUND = 9.1
_TANH_P = [1.0, 0.1337447315454483, 0.00348780769854784, 2.048112582997419e-05, 1.3177428037636219e-08]
_TANH_Q = [1.0, 0.4670778512954712, 0.02584737539291382, 0.00032729143276810646, 7.704009590270289e-07]


class _Build:
    """Typed builders for scalar f32 arithmetic at an insertion point."""

    def __init__(self) -> None:
        self.f32 = ir.F32Type.get()

    def c(self, v: float) -> ir.Value:
        return arith.ConstantOp(self.f32, v).result

    def min(self, v: ir.Value, hi: float) -> ir.Value:
        """min(v, hi) as ``select(v > hi, hi, v)``: false for NaN, so NaN propagates (x86
        ``vminps`` has exactly this operand order; ``minnumf`` would turn NaN into hi)."""
        k = self.c(hi)
        return arith.SelectOp(arith.CmpFOp(arith.CmpFPredicate.OGT, v, k).result, k, v).result

    def max(self, v: ir.Value, lo: float) -> ir.Value:
        k = self.c(lo)
        return arith.SelectOp(arith.CmpFOp(arith.CmpFPredicate.OLT, v, k).result, k, v).result

    def horner(self, coefs: list[float], u: ir.Value) -> ir.Value:
        acc = self.c(coefs[-1])
        for a in reversed(coefs[:-1]):
            acc = arith.AddFOp(arith.MulFOp(acc, u).result, self.c(a)).result
        return acc

    def odd_rational(self, x: ir.Value, p: list[float], q: list[float]) -> ir.Value:
        u = arith.MulFOp(x, x).result
        return arith.DivFOp(arith.MulFOp(x, self.horner(p, u)).result, self.horner(q, u)).result


def _clamped_rational(bound: float, p: list[float], q: list[float]):
    """An expander of f32 ``op`` (erf, tanh) -> ``x P(x^2) / Q(x^2)`` with x clamped to
    [-bound, bound] and the result to [-1, 1]: straight-line arithmetic, one division, no
    exp, no branch. NaN propagates (see :meth:`_Build.min`); +-inf clamp to the bound, whose
    value rounds to +-1."""
    def expand(op: ir.Operation) -> None:
        with ir.InsertionPoint(op), op.location:
            b = _Build()
            x = b.max(b.min(op.operands[0], bound), -bound)
            out = b.max(b.min(b.odd_rational(x, p, q), 1.0), -1.0)
        op.results[0].replace_all_uses_with(out)
        op.erase()
    return expand


_expand_erf = _clamped_rational(_ERF_BOUND, _ERF_P, _ERF_Q)
_expand_tanh = _clamped_rational(_TANH_BOUND, _TANH_P, _TANH_Q)


_EXPAND = {"math.exp": _expand_exp, "math.erf": _expand_erf, "math.tanh": _expand_tanh}


@register_pass("relax-expand-math",
               "Expand f32 math.exp, math.erf and math.tanh into inline, vectorizable arithmetic (instead of libm calls).",
               options=[Option("enable", bool, True, "expand (false: keep math.exp for libm)")], nestable=True)
def relax_expand_math(module: ir.Operation, opts) -> None:
    if not opts.enable:
        return
    found: list[ir.Operation] = []

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name in _EXPAND and str(op.results[0].type) == "f32":
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in found:
        _EXPAND[op.name](op)
