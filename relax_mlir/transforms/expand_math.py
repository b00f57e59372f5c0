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

``math.erf`` of f32 (the erf form of GELU, libm ``erff`` per element otherwise) becomes
the Abramowitz-Stegun rational form around one exp for |x| >= 0.5 and its Taylor series
below (absolute error <= 1.5e-7 overall, relative ~3e-8 near 0).
"""

from __future__ import annotations

import math

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


#: erf for |x| >= 0.5: Abramowitz & Stegun 7.1.26, 1 - t*P(t)*exp(-x^2) with t = 1/(1 + p|x|)
#: (absolute error <= 1.5e-7); below 0.5 its Taylor series (relative error ~3e-8), where the
#: formula would cancel.
_ERF_P = 0.3275911
_ERF_A = [1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592]
_ERF_TAYLOR = [2 / math.sqrt(math.pi) * c for c in (1.0, -1 / 3, 1 / 10, -1 / 42, 1 / 216, -1 / 1320)]


def _expand_erf(op: ir.Operation) -> None:
    """f32 ``math.erf`` -> arithmetic and one ``math.exp`` (expanded in turn); built with
    the typed builders. erf(+-inf) = +-1, erf(nan) = nan."""
    f32 = ir.F32Type.get()
    with ir.InsertionPoint(op), op.location:
        def c(v: float) -> ir.Value:
            return arith.ConstantOp(f32, v).result

        def add(a, b): return arith.AddFOp(a, b).result
        def mul(a, b): return arith.MulFOp(a, b).result

        x = op.operands[0]
        ax = mathd.AbsFOp(x).result
        t = arith.DivFOp(c(1.0), add(c(1.0), mul(c(_ERF_P), ax))).result
        poly = c(_ERF_A[0])
        for a in _ERF_A[1:]:
            poly = add(mul(poly, t), c(a))
        poly = mul(poly, t)
        e = mathd.ExpOp(arith.NegFOp(mul(ax, ax)).result).result
        far = arith.SubFOp(c(1.0), mul(poly, e)).result
        x2 = mul(x, x)
        series = c(_ERF_TAYLOR[-1])
        for a in reversed(_ERF_TAYLOR[:-1]):
            series = add(mul(series, x2), c(a))
        near = mul(series, x)
        small = arith.CmpFOp(arith.CmpFPredicate.OLT, ax, c(0.5)).result
        out = arith.SelectOp(small, near, mathd.CopySignOp(far, x).result).result
    op.results[0].replace_all_uses_with(out)
    op.erase()


@register_pass("relax-expand-math",
               "Expand f32 math.exp and math.erf into inline, vectorizable arithmetic (instead of libm calls).",
               options=[Option("enable", bool, True, "expand (false: keep math.exp for libm)")], nestable=True)
def relax_expand_math(module: ir.Operation, opts) -> None:
    if not opts.enable:
        return
    found: list[ir.Operation] = []

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name in ("math.exp", "math.erf") and str(op.results[0].type) == "f32":
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in [o for o in found if o.name == "math.erf"]:   # erf first: it makes an exp
        _expand_erf(op)
    found = []
    module.walk(visit)
    for op in found:
        _expand_exp(op)
