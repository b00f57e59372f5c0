"""relax-spirv-f64-math: f64 exp, log, tanh, erf, sin, cos and pow as f64 arithmetic.

GLSL.std.450 defines Exp, Log, Tanh, Sin, Cos and Pow for 16- and 32-bit floats only, and
``convert-math-to-spirv`` has no lowering of ``math.erf``: an f64 ``math.exp`` became an
invalid ``spirv.GL.Exp`` (an internal error; vulkan-program fuzz seeds 11, 25, 48, 58). A
device with Float64 has f64 add, multiply, divide, fma, floor and the integer view of the
bits, so this pass expands those ops of f64 in the ``gpu.module``s into them, in f64
(computing in f32 would give 1e-7 where the user asked for 1e-16). Every coefficient is an
exact series coefficient (1/k!, 1/(2k+1), ...) evaluated to double precision:

* exp: ``x = n ln2 + r`` (ln2 split in two so ``n ln2_hi`` is exact), Taylor of degree 13
  on ``|r| <= ln2/2``, ``2^n`` as two exponent-bit scales (subnormal results too);
* log: ``x = m 2^e`` (subnormals scaled first), ``m`` in ``[sqrt(1/2), sqrt(2))``,
  ``log m = 2 atanh((m-1)/(m+1))`` by its odd series to degree 23;
* tanh: ``expm1(2|x|) / (expm1(2|x|) + 2)`` with a Taylor expm1 below 1/2 (no cancellation
  near 0), the sign of x back;
* erf: ``2/sqrt(pi) e^{-x^2} sum 2^n x^{2n+1}/(2n+1)!!`` (positive terms) below 2.5, else
  ``1 - erfc`` by erfc's continued fraction (40 levels); ``e^{-x^2}`` from an exact
  ``x^2 = hi + lo`` (fma);
* sin, cos: ``x = k pi/2 + r`` (pi/2 in three parts, exact products for ``|k| < 2^32``),
  Taylor polynomials on ``|r| <= pi/4``, the quadrant from ``k mod 4``; the reduction
  loses accuracy beyond ``|x| ~ 1e9`` (no Payne-Hanek);
* pow (after relax-spirv-arith took the IEEE cases out: the base is positive here):
  ``exp(y log x)``, relative error about ``|y log x| * 2^-53``.

Errors are a few ulps elsewhere (pytest against numpy in test/test_vulkan.py); infinities,
NaN and signed zeros as numpy's.
"""

from __future__ import annotations

import math as _m
from decimal import Decimal, getcontext
from fractions import Fraction
from typing import Optional

from mlir import ir
from mlir.dialects import arith, math

from ...transforms.registry import register_pass

getcontext().prec = 110
_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798")
_LN2 = Decimal("0.693147180559945309417232121458176568075500134360255254120680")


def _head(v: Decimal, clear_bits: int) -> float:
    """``v`` rounded to a double, then its low ``clear_bits`` mantissa bits cleared."""
    import struct
    bits = struct.unpack("<Q", struct.pack("<d", float(v)))[0] & ~((1 << clear_bits) - 1)
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


_LN2_HI = _head(_LN2, 32)
_LN2_LO = float(_LN2 - Decimal(_LN2_HI))
_PIO2 = _PI / 2
_PIO2_1 = _head(_PIO2, 32)
_PIO2_2 = _head(_PIO2 - Decimal(_PIO2_1), 32)
_PIO2_3 = float(_PIO2 - Decimal(_PIO2_1) - Decimal(_PIO2_2))
_EXP_TAYLOR = [float(Fraction(1, _m.factorial(k))) for k in range(14)]      # 1/k!, k = 0..13
_ATANH = [float(Fraction(2, 2 * k + 1)) for k in range(12)]                  # 2/(2k+1)
_SIN = [float(Fraction((-1) ** k, _m.factorial(2 * k + 1))) for k in range(11)]
_COS = [float(Fraction((-1) ** k, _m.factorial(2 * k))) for k in range(12)]
_EXP_HIGH = 709.782712893384      # above: exp overflows
_EXP_LOW = -745.2                 # below: exp is below half the smallest subnormal
_ERF_SPLIT, _ERF_TERMS, _ERFC_LEVELS = 2.5, 40, 40
_TWO_OVER_SQRT_PI = float(2 / _PI.sqrt())
_ONE_OVER_SQRT_PI = float(1 / _PI.sqrt())


class _B:
    """f64 / i64 arithmetic at one insertion point."""

    def __init__(self, op: ir.Operation, lanes: Optional[int] = None):
        self.ip, self.loc = ir.InsertionPoint(op), op.location
        self.fe, self.ie = ir.F64Type.get(), ir.IntegerType.get_signless(64)
        self.lanes = lanes
        self.f = self.fe if lanes is None else ir.VectorType.get([lanes], self.fe)
        self.i = self.ie if lanes is None else ir.VectorType.get([lanes], self.ie)

    def _const(self, t, attr):
        if self.lanes is not None:
            attr = ir.DenseElementsAttr.get_splat(t, attr)
        return arith.ConstantOp(t, attr, ip=self.ip, loc=self.loc).result

    def c(self, v: float):
        return self._const(self.f, ir.FloatAttr.get(self.fe, v))

    def ci(self, v: int):
        return self._const(self.i, ir.IntegerAttr.get(self.ie, v))

    def _bin(self, cls, a, b):
        return cls(a, b, ip=self.ip, loc=self.loc).result

    def add(self, a, b): return self._bin(arith.AddFOp, a, b)
    def sub(self, a, b): return self._bin(arith.SubFOp, a, b)
    def mul(self, a, b): return self._bin(arith.MulFOp, a, b)
    def div(self, a, b): return self._bin(arith.DivFOp, a, b)
    def iadd(self, a, b): return self._bin(arith.AddIOp, a, b)
    def isub(self, a, b): return self._bin(arith.SubIOp, a, b)
    def iand(self, a, b): return self._bin(arith.AndIOp, a, b)
    def ior(self, a, b): return self._bin(arith.OrIOp, a, b)
    def shl(self, a, b): return self._bin(arith.ShLIOp, a, b)
    def shr(self, a, b): return self._bin(arith.ShRSIOp, a, b)

    def fma(self, a, b, c):
        return math.FmaOp(a, b, c, ip=self.ip, loc=self.loc).result

    def floor(self, a):
        return math.FloorOp(a, ip=self.ip, loc=self.loc).result

    def abs(self, a):
        return math.AbsFOp(a, ip=self.ip, loc=self.loc).result

    def cmp(self, p: str, a, b):
        return arith.CmpFOp(getattr(arith.CmpFPredicate, p), a, b, ip=self.ip, loc=self.loc).result

    def icmp(self, p: str, a, b):
        return arith.CmpIOp(getattr(arith.CmpIPredicate, p), a, b, ip=self.ip, loc=self.loc).result

    def sel(self, cond, a, b):
        return arith.SelectOp(cond, a, b, ip=self.ip, loc=self.loc).result

    def to_int(self, a):
        return arith.FPToSIOp(self.i, a, ip=self.ip, loc=self.loc).result

    def to_float(self, a):
        return arith.SIToFPOp(self.f, a, ip=self.ip, loc=self.loc).result

    def bits(self, a):
        return arith.BitcastOp(self.i, a, ip=self.ip, loc=self.loc).result

    def from_bits(self, a):
        return arith.BitcastOp(self.f, a, ip=self.ip, loc=self.loc).result

    def horner(self, z, coeffs):
        """coeffs[0] + z coeffs[1] + z^2 coeffs[2] + ..."""
        acc = self.c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            acc = self.fma(acc, z, self.c(k))
        return acc

    def sign_of(self, x):
        """x's sign bit is set (-0 too)."""
        return self.icmp("slt", self.bits(x), self.ci(0))

    def neg_if(self, cond, v):
        return self.sel(cond, arith.NegFOp(v, ip=self.ip, loc=self.loc).result, v)

    def is_nan(self, x):
        return self.cmp("UNO", x, x)

    def pow2(self, n):
        """2^n (i64 n in [-1076, 1024]) as the product of two normal scales."""
        h = self.shr(n, self.ci(1))
        def scale(e):
            return self.from_bits(self.shl(self.iadd(e, self.ci(1023)), self.ci(52)))
        return scale(h), scale(self.isub(n, h))


def _exp(b: _B, x):
    xc = b.sel(b.is_nan(x), b.c(0.0), x)
    xc = b.sel(b.cmp("OGT", xc, b.c(_EXP_HIGH + 1)), b.c(_EXP_HIGH + 1), xc)
    xc = b.sel(b.cmp("OLT", xc, b.c(_EXP_LOW - 1)), b.c(_EXP_LOW - 1), xc)
    n = b.floor(b.fma(xc, b.c(1 / _m.log(2)), b.c(0.5)))
    r = b.fma(n, b.c(-_LN2_LO), b.fma(n, b.c(-_LN2_HI), xc))
    p = b.horner(r, _EXP_TAYLOR)
    s1, s2 = b.pow2(b.to_int(n))
    y = b.mul(b.mul(p, s1), s2)
    y = b.sel(b.cmp("OGT", x, b.c(_EXP_HIGH)), b.c(float("inf")), y)
    y = b.sel(b.cmp("OLT", x, b.c(_EXP_LOW)), b.c(0.0), y)
    return b.sel(b.is_nan(x), x, y)


def _expm1(b: _B, x):
    small = b.mul(x, b.horner(x, _EXP_TAYLOR[1:] + [float(Fraction(1, _m.factorial(k))) for k in range(14, 17)]))
    big = b.sub(_exp(b, x), b.c(1.0))
    return b.sel(b.cmp("OLT", b.abs(x), b.c(0.5)), small, big)


def _log(b: _B, x):
    tiny = b.cmp("OLT", x, b.c(2.0 ** -1022))
    xs = b.sel(tiny, b.mul(x, b.c(2.0 ** 54)), x)
    bits = b.bits(xs)
    e = b.isub(b.iand(b.shr(bits, b.ci(52)), b.ci(0x7FF)), b.ci(1023))
    e = b.sel(tiny, b.isub(e, b.ci(54)), e)
    m = b.from_bits(b.ior(b.iand(bits, b.ci((1 << 52) - 1)), b.ci(0x3FF << 52)))
    big = b.cmp("OGT", m, b.c(_m.sqrt(2.0)))
    m = b.sel(big, b.mul(m, b.c(0.5)), m)
    ef = b.to_float(b.sel(big, b.iadd(e, b.ci(1)), e))
    s = b.div(b.sub(m, b.c(1.0)), b.add(m, b.c(1.0)))
    log_m = b.mul(s, b.horner(b.mul(s, s), _ATANH))
    y = b.fma(ef, b.c(_LN2_HI), b.fma(ef, b.c(_LN2_LO), log_m))
    y = b.sel(b.cmp("OEQ", x, b.c(float("inf"))), x, y)
    y = b.sel(b.cmp("OEQ", x, b.c(0.0)), b.c(float("-inf")), y)
    y = b.sel(b.cmp("OLT", x, b.c(0.0)), b.c(float("nan")), y)
    return b.sel(b.is_nan(x), x, y)


def _tanh(b: _B, x):
    a = b.abs(x)
    em = _expm1(b, b.sel(b.cmp("OGT", a, b.c(22.0)), b.c(44.0), b.add(a, a)))
    t = b.div(em, b.add(em, b.c(2.0)))
    t = b.sel(b.cmp("OGT", a, b.c(22.0)), b.c(1.0), t)
    return b.sel(b.is_nan(x), x, b.neg_if(b.sign_of(x), t))


def _exp_neg_square(b: _B, a):
    """e^{-a^2}, with a^2 = hi + lo exactly: e^{-hi} (1 - lo)."""
    hi = b.mul(a, a)
    lo = b.fma(a, a, arith.NegFOp(hi, ip=b.ip, loc=b.loc).result)
    return b.mul(_exp(b, arith.NegFOp(hi, ip=b.ip, loc=b.loc).result), b.sub(b.c(1.0), lo))


def _erf(b: _B, x):
    a = b.abs(x)
    g = _exp_neg_square(b, a)
    # series: sum_n t_n, t_0 = a, t_{n+1} = t_n 2a^2 / (2n + 3)
    a2 = b.mul(b.mul(a, a), b.c(2.0))
    t, s = a, a
    for n in range(_ERF_TERMS):
        t = b.mul(t, b.mul(a2, b.c(1.0 / (2 * n + 3))))
        s = b.add(s, t)
    small = b.mul(b.mul(s, g), b.c(_TWO_OVER_SQRT_PI))
    # continued fraction: erfc(a) = e^{-a^2} / (sqrt(pi) (a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))))
    ac = b.sel(b.cmp("OLT", a, b.c(_ERF_SPLIT)), b.c(_ERF_SPLIT), a)
    f = ac
    for k in range(_ERFC_LEVELS, 0, -1):
        f = b.add(ac, b.div(b.c(k / 2), f))
    gc = _exp_neg_square(b, ac)
    large = b.sub(b.c(1.0), b.div(b.mul(gc, b.c(_ONE_OVER_SQRT_PI)), f))
    y = b.sel(b.cmp("OLT", a, b.c(_ERF_SPLIT)), small, large)
    y = b.sel(b.cmp("OGE", a, b.c(6.0)), b.c(1.0), y)
    return b.sel(b.is_nan(x), x, b.neg_if(b.sign_of(x), y))


def _sincos(b: _B, x, cos: bool):
    finite = b.cmp("OLT", b.abs(x), b.c(float("inf")))
    xf = b.sel(finite, x, b.c(0.0))
    k = b.floor(b.fma(xf, b.c(2 / _m.pi), b.c(0.5)))
    r = b.fma(k, b.c(-_PIO2_1), xf)
    r = b.fma(k, b.c(-_PIO2_2), r)
    r = b.fma(k, b.c(-_PIO2_3), r)
    # beyond |k| ~ 2^32 the reduction is not exact: r stays in range (a finite, inaccurate
    # value, as numbers that large hold no information about their fraction of 2 pi anyway)
    r = b.sel(b.cmp("OGT", b.abs(r), b.c(0.8)), b.c(0.0), r)
    z = b.mul(r, r)
    s = b.mul(r, b.horner(z, _SIN))
    c = b.horner(z, _COS)
    q = b.to_int(b.sub(k, b.mul(b.floor(b.mul(k, b.c(0.25))), b.c(4.0))))   # k mod 4, any k
    if cos:
        q = b.iand(b.iadd(q, b.ci(1)), b.ci(3))
    # sin: q = 0 s, 1 c, 2 -s, 3 -c
    odd = b.icmp("ne", b.iand(q, b.ci(1)), b.ci(0))
    v = b.sel(odd, c, s)
    v = b.neg_if(b.icmp("ne", b.iand(q, b.ci(2)), b.ci(0)), v)
    return b.sel(finite, v, b.c(float("nan")))


#: 2/pi in 24-bit chunks: 2/pi = sum_j _TWO_OVER_PI_24[j], chunk j holding bits 24j+1 .. 24j+24;
#: a float of at most 24 significant bits times a chunk is exact in f64
_TWO_OVER_PI_24 = [float(Decimal(int((2 / _PI) * (1 << (24 * (j + 1)))) % (1 << 24)) / Decimal(1 << (24 * (j + 1))))
                   for j in range(9)]


def _sincos_narrow(b: _B, x, cos: bool):
    """sin / cos of an f16 / f32 value ``x`` (given as f64) for any magnitude: ``x 2/pi`` modulo 4
    exactly (Payne-Hanek without a table: x times each 24-bit chunk of 2/pi is exact, each taken
    modulo 4 exactly, summed in double-double), then the f64 polynomials."""
    hi, lo = b.c(0.0), b.c(0.0)
    for cj in reversed(_TWO_OVER_PI_24):
        t = b.mul(x, b.c(cj))                                               # exact
        u = b.sub(t, b.mul(b.floor(b.mul(t, b.c(0.25))), b.c(4.0)))          # t mod 4, exact
        s = b.add(hi, u)                                                    # two-sum
        bb = b.sub(s, hi)
        lo = b.add(lo, b.add(b.sub(hi, b.sub(s, bb)), b.sub(u, bb)))
        hi = s
    k = b.floor(b.add(hi, b.c(0.5)))
    f = b.add(b.sub(hi, k), lo)
    r = b.mul(f, b.c(float(_PIO2)))
    z = b.mul(r, r)
    sv, cv = b.mul(r, b.horner(z, _SIN)), b.horner(z, _COS)
    q = b.iand(b.to_int(k), b.ci(3))
    if cos:
        q = b.iand(b.iadd(q, b.ci(1)), b.ci(3))
    v = b.sel(b.icmp("ne", b.iand(q, b.ci(1)), b.ci(0)), cv, sv)
    v = b.neg_if(b.icmp("ne", b.iand(q, b.ci(2)), b.ci(0)), v)
    finite = b.cmp("OLT", b.abs(x), b.c(float("inf")))
    return b.sel(finite, v, b.c(float("nan")))


def _narrow_trig(op: ir.Operation) -> None:
    """math.sin / cos of f16 / f32: GL.Sin / GL.Cos where |x| <= pi (Vulkan bounds their error only
    there), else the exact reduction in f64 (an scf.if for a scalar, a select for a vector)."""
    from mlir.dialects import scf
    x = op.operands[0]
    t = x.type
    lanes = ir.VectorType(t).shape[0] if isinstance(t, ir.VectorType) else None
    cos = op.name == "math.cos"
    ip, loc = ir.InsertionPoint(op), op.location
    ft = ir.F64Type.get() if lanes is None else ir.VectorType.get([lanes], ir.F64Type.get())
    et = t if lanes is None else ir.VectorType(t).element_type
    pi = arith.ConstantOp(t, ir.FloatAttr.get(et, 3.140625) if lanes is None else
                          ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(et, 3.140625)), ip=ip, loc=loc).result
    inside = arith.CmpFOp(arith.CmpFPredicate.OLE, math.AbsFOp(x, ip=ip, loc=loc).result, pi, ip=ip, loc=loc).result
    fast_cls = math.CosOp if cos else math.SinOp

    def slow(at):
        b = _B(at, lanes)
        xd = arith.ExtFOp(ft, x, ip=b.ip, loc=b.loc).result
        return arith.TruncFOp(t, _sincos_narrow(b, xd, cos), ip=b.ip, loc=b.loc).result

    if lanes is None:
        if_op = scf.IfOp(inside, [t], has_else=True, ip=ip, loc=loc)
        with ir.InsertionPoint(if_op.then_block):
            scf.YieldOp([fast_cls(x, loc=loc).result], loc=loc)
        with ir.InsertionPoint(if_op.else_block):
            y = scf.YieldOp([x], loc=loc)
            v = slow(y.operation)
            y.operation.operands[0] = v
        r = if_op.results[0]
    else:
        r = arith.SelectOp(inside, fast_cls(x, ip=ip, loc=loc).result, slow(op), ip=ip, loc=loc).result
    op.results[0].replace_all_uses_with(r)
    op.erase()


def _pow(b: _B, x, y):
    return _exp(b, b.mul(y, _log(b, x)))


_UNARY = {"math.exp": _exp, "math.log": _log, "math.tanh": _tanh, "math.erf": _erf,
          "math.sin": lambda b, x: _sincos(b, x, False), "math.cos": lambda b, x: _sincos(b, x, True)}


@register_pass("relax-spirv-f64-math",
               "In gpu.modules: f64 math.exp/log/tanh/erf/sin/cos/powf expanded into f64 arithmetic "
               "(GLSL.std.450 has them for 16/32-bit floats only).")
def relax_spirv_f64_math(module: ir.Operation, opts) -> None:
    found: list[ir.Operation] = []
    trig: list[ir.Operation] = []
    f64 = ir.F64Type.get()
    narrow = (ir.F32Type.get(), ir.F16Type.get())

    def visit(op):
        o = op.operation
        if (o.name in _UNARY or o.name == "math.powf") and len(o.results) == 1 and o.results[0].type == f64:
            found.append(o)
        elif o.name in ("math.sin", "math.cos"):
            t = o.results[0].type
            if (ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t) in narrow:
                trig.append(o)
        return ir.WalkResult.ADVANCE

    for top in module.regions[0].blocks[0].operations:
        if top.operation.name == "gpu.module":
            top.operation.walk(visit)
    for o in found:
        b = _B(o)
        if o.name == "math.powf":
            r = _pow(b, o.operands[0], o.operands[1])
        else:
            r = _UNARY[o.name](b, o.operands[0])
        o.results[0].replace_all_uses_with(r)
        o.erase()
    for o in trig:
        _narrow_trig(o)
