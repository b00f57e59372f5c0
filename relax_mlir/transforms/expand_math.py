"""relax-expand-math: f32 ``math.exp`` as inline arithmetic (range reduction + polynomial).

``convert-math-to-llvm`` turns ``math.exp`` into a libm call per element, which LLVM
cannot vectorize: softmax, sigmoid and SiLU then spend nearly all their time in
``expf``. Upstream's polynomial approximations are not exposed as a pass in the MLIR
Python wheels, so this pass expands exp itself (the classic Cephes ``expf`` scheme):

    x = clamp(x, -86.5, 88.72283);  n = floor(x * log2(e) + 1/2)
    r = x - n * C1 - n * C2              (C1 + C2 = ln 2, split for accuracy)
    exp(x) = (1 + r + r^2 * P(r)) * 2^n  (P of degree 5; 2^n built from the exponent bits)

Relative error stays within 2 ulp on the range; for x < -86.5 the result is 0 (exp would
be below 2.7e-38, near subnormals, which costs ~100x per operation on x86, e.g. in softmax
over a -1e9 causal mask) and NaN propagates. Runs after bufferization, before loops
are lowered to LLVM, on every ``math.exp`` of f32 (scalars, as in linalg bodies).
"""

from __future__ import annotations

from mlir import ir

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
    x = bin_("arith.minimumf", bin_("arith.maximumf", x0, c(_LOW)), c(_HIGH))
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
    op.results[0].replace_all_uses_with(out)
    op.erase()


@register_pass("relax-expand-math",
               "Expand f32 math.exp into inline, vectorizable arithmetic (instead of libm calls).",
               options=[Option("enable", bool, True, "expand (false: keep math.exp for libm)")], nestable=True)
def relax_expand_math(module: ir.Operation, opts) -> None:
    if not opts.enable:
        return
    found: list[ir.Operation] = []

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name == "math.exp" and str(op.results[0].type) == "f32":
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in found:
        _expand_exp(op)
