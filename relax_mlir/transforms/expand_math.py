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
``x P(x^2) / Q(x^2)`` (erf: for |x| <= 2, and 1 - a polynomial for erfc above): a dozen
or two fused multiply-adds and one division, no exp and no branch (see :func:`_expand_erf`,
:func:`_expand_tanh`). The A&S erf this replaced (a division, an exp, a Taylor series)
took 1.3x the time of a bias add over memory, and several times that where its exp
produced subnormals (|x| > 6); tanh went to libm ``tanhf``, scalar, 40x.
"""

from __future__ import annotations


from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mathd

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
#: fitted for the least maximum RELATIVE error by relax_mlir/transforms/fit_rational.py
#: (``python -m relax_mlir.transforms.fit_rational erf 2 4 3`` / ``tanh 9.1 4 4``).
#: erf: the rational on |x| <= 2 (float64 relative error 1.1e-8), and 1 - erfc(|x|) above,
#: erfc a degree-10 polynomial in |x| - 2.9625 on [2, 3.925] (absolute error 1e-8;
#: ``fit_rational erfc 2 3.925 10``): there erf is within 5e-3 of +-1, and the rational's
#: few-ulp rounding errors relative to 1 would reach GELU's output scaled by x (2 ulp at
#: x = 5), while erfc's are relative to erfc. erfc(3.925) < 2^-25: beyond, erf is +-1.
#: tanh: the rational on [-9.1, 9.1] (float64 relative error 2.3e-8; 1 - tanh(9.1) < 2^-25).
_ERF_SPLIT = 2.0
_ERF_BOUND = 3.925
_ERF_P = [1.128379225730896, 0.10255759954452515, 0.03473430126905441, -0.00028080097399652004,
          2.5182827812386677e-05]
_ERF_Q = [1.0, 0.4242230951786041, 0.07218711823225021, 0.005208734422922134]
_ERFC_MID = 2.9625
_ERFC_T = [2.7943715394940227e-05, -0.00017406728875357658, 0.0005158922867849469, -0.000962538062594831,
           0.0012515576090663671, -0.0011843240354210138, 0.0008443610277026892, -0.00045721273636445403,
           0.00014254814595915377, 2.134349415428005e-05, -2.554261482146103e-05]
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


def _expand_erf(op: ir.Operation) -> None:
    """f32 ``math.erf`` -> the rational for |x| <= 2, ``copysign(1 - erfc(min(|x|, bound)), x)``
    above: straight-line arithmetic, one division, no exp, no branch (both sides are computed
    and selected). NaN takes the rational side and propagates; +-inf the erfc side: +-1."""
    with ir.InsertionPoint(op), op.location:
        b = _Build()
        x = op.operands[0]
        ax = mathd.AbsFOp(x).result
        near = b.odd_rational(x, _ERF_P, _ERF_Q)
        t = arith.SubFOp(b.min(ax, _ERF_BOUND), b.c(_ERFC_MID)).result
        far = mathd.CopySignOp(arith.SubFOp(b.c(1.0), b.horner(_ERFC_T, t)).result, x).result
        tail = arith.CmpFOp(arith.CmpFPredicate.OGT, ax, b.c(_ERF_SPLIT)).result
        out = arith.SelectOp(tail, far, near).result
    op.results[0].replace_all_uses_with(out)
    op.erase()


def _expand_tanh(op: ir.Operation) -> None:
    """f32 ``math.tanh`` -> ``x P(x^2) / Q(x^2)`` with x clamped to [-9.1, 9.1] and the result
    to [-1, 1]: one division, no exp, no branch. NaN propagates (see :meth:`_Build.min`);
    +-inf clamp to the bound, whose value rounds to +-1."""
    with ir.InsertionPoint(op), op.location:
        b = _Build()
        x = b.max(b.min(op.operands[0], _TANH_BOUND), -_TANH_BOUND)
        out = b.max(b.min(b.odd_rational(x, _TANH_P, _TANH_Q), 1.0), -1.0)
    op.results[0].replace_all_uses_with(out)
    op.erase()


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
