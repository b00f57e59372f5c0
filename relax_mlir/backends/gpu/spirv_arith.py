"""relax-spirv-arith: arith / math ops whose SPIR-V lowering would not keep their semantics.

Runs on the ``gpu.module``s right before ``convert-math-to-spirv`` / ``convert-gpu-to-spirv``
and rewrites, in arith and math, the things those conversions get wrong for us:

* ``arith.remsi``: upstream emulates it as ``UMod(|a|, |b|)`` negated where ``a != |a|``;
  ``|INT_MIN|`` is ``INT_MIN``, so the remainder of the dividend INT_MIN kept a positive
  sign (``INT32_MIN % 7`` gave 2, not -2; vulkan-program fuzz seeds 1000110, 1000161).
  Here the sign test is ``a < 0`` and the magnitudes are unsigned (``0 - INT_MIN`` read
  unsigned is ``2^(N-1)``): exact for every input.
* ``math.powf``: ``GL.Pow`` is undefined for ``x < 0`` and for ``x = 0, y <= 0`` (lavapipe
  gives 0 for ``(-2) ** 3`` and ``0 ** 0``; seed 0). It now runs on ``|x| > 0`` only and the
  IEEE ``pow`` cases around it are selects: a finite negative base gives ``±|x| ** y`` for an
  integral ``y`` (the sign of an odd one) and NaN otherwise, ``±0 ** y`` is ``±0`` / ``±inf``,
  ``x ** 0`` and ``1 ** y`` are 1 (also for NaN), ``(-1) ** ±inf`` is 1, NaN otherwise
  propagates.
* ``arith.remf``: ``FRem`` is ``x - y trunc(x/y)`` on the device: rounded where the quotient
  is large (``fmod(3e38, 3)`` gave 0, numpy's 2; ``1.0 // 0.1`` 10, numpy's 9), NaN for
  ``x rem inf`` (fmod's x; vulkan-program fuzz seed 97000218). f16 / f32 fmod is computed
  exactly in f64 (a scaled long division, 12 exact steps for f32's exponent range); f64 keeps
  FRem with the infinite and zero cases selected as fmod's.
* ``arith.cmpi`` of a sign-extended value and a constant: canonicalization turns
  ``cmpf ogt (sitofp (extsi i)), 88.7`` (exp's overflow test, a float-to-int clamp) into
  ``cmpi sgt (extsi i : i32 to i64), 88``, and lavapipe (Mesa 22.3, LLVM 15) miscompiles
  a signed compare of an ``OpSConvert``-ed value with a 64-bit constant: it is true for every
  ``i`` (``sgt``, ``sge``) or false (``slt``, ``sle``), while ``eq`` / ``ne`` and compares of
  ``OpUConvert``-ed or loaded 64-bit values are right (exp of a fused ``arange`` was inf, its
  astype to i8 127; seeds 61000455, 5000256). The compare is done in the narrow type
  instead (the same result for every input: the constant fits it; one that does not decides
  the compare, which becomes a constant).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math

from ...transforms.registry import register_pass

#: cmpi predicates (arith.CmpIPredicate values)
_EQ, _NE, _SLT, _SLE, _SGT, _SGE, _ULT, _ULE, _UGT, _UGE = range(10)


#: ``index`` on SPIR-V (convert-gpu-to-spirv's default): index_cast to i64 is a sign extension
INDEX_BITS = 32


def _int_const(v: ir.Value):
    o = v.owner
    if isinstance(o, ir.Block) or o.name != "arith.constant" or not isinstance(v.type, ir.IntegerType):
        return None
    return ir.IntegerAttr(o.attributes["value"]).value


def _narrow_cmpi(op: ir.Operation) -> None:
    """cmpi P (extsi x : iN to iM), C (either side; also index_cast of an index, 32 bits on
    SPIR-V) -> cmpi P x, C : iN, or the constant result
    when C is outside iN's range. Signed predicates and eq / ne only."""
    pred = ir.IntegerAttr(op.attributes["predicate"]).value
    if pred > _SGE or not isinstance(op.operands[0].type, ir.IntegerType):
        return
    lhs, rhs = op.operands[0], op.operands[1]
    for ext_side, ext, const in ((0, lhs, rhs), (1, rhs, lhs)):
        c = _int_const(const)
        o = ext.owner
        if c is None or isinstance(o, ir.Block) or o.name not in ("arith.extsi", "arith.index_cast"):
            continue
        x = o.operands[0]
        if isinstance(x.type, ir.IndexType):
            n = INDEX_BITS
        elif isinstance(x.type, ir.IntegerType) and o.name == "arith.extsi":
            n = ir.IntegerType(x.type).width
        else:
            continue
        if n < 8:
            continue
        lo, hi = -(1 << (n - 1)), (1 << (n - 1)) - 1
        ip, loc = ir.InsertionPoint(op), op.location
        if lo <= c <= hi:
            k = arith.ConstantOp(x.type, ir.IntegerAttr.get(x.type, c), ip=ip, loc=loc).result
            a, b = (x, k) if ext_side == 0 else (k, x)
            new = arith.CmpIOp(op.attributes["predicate"], a, b, ip=ip, loc=loc).result
        else:
            # every x is below a constant above the range (and above one below it)
            x_less = c > hi if ext_side == 0 else c < lo
            value = {_EQ: False, _NE: True, _SLT: x_less, _SLE: x_less, _SGT: not x_less, _SGE: not x_less}[pred]
            i1 = ir.IntegerType.get_signless(1)
            new = arith.ConstantOp(i1, ir.IntegerAttr.get(i1, int(value)), ip=ip, loc=loc).result
        op.results[0].replace_all_uses_with(new)
        op.erase()
        return


class _Ops:
    """Builders at ``op`` for values of type ``t``: a scalar or a vector (the 4-wide elementwise
    kernels), constants splat; ``bool_t`` / ``int_t``: i1 and the same-width integer, shaped alike."""

    def __init__(self, op: ir.Operation, t: ir.Type):
        self.ip, self.loc, self.t = ir.InsertionPoint(op), op.location, t
        self.elem = ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
        shape = ir.VectorType(t).shape if isinstance(t, ir.VectorType) else None
        width = self.elem.width if isinstance(self.elem, ir.IntegerType) else ir.FloatType(self.elem).width
        ie, i1 = ir.IntegerType.get_signless(width), ir.IntegerType.get_signless(1)
        self.int_t = ir.VectorType.get(shape, ie) if shape else ie
        self.bool_t = ir.VectorType.get(shape, i1) if shape else i1

    def const(self, v, t=None):
        t = t or self.t
        e = ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
        attr = ir.IntegerAttr.get(e, v) if isinstance(e, ir.IntegerType) else ir.FloatAttr.get(e, v)
        if isinstance(t, ir.VectorType):
            attr = ir.DenseElementsAttr.get_splat(t, attr)
        return arith.ConstantOp(t, attr, ip=self.ip, loc=self.loc).result

    def __call__(self, cls, *args):
        return cls(*args, ip=self.ip, loc=self.loc).result

    def cmpf(self, p: str, a, b):
        return self(arith.CmpFOp, getattr(arith.CmpFPredicate, p), a, b)

    def sel(self, cond, a, b):
        return self(arith.SelectOp, cond, a, b)

    def sign_bit(self, x):
        """x's sign bit is set (-0 too)."""
        return self(arith.CmpIOp, arith.CmpIPredicate.slt, self(arith.BitcastOp, self.int_t, x),
                    self.const(0, self.int_t))


def _is_kind(t: ir.Type, kind) -> bool:
    e = ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
    return isinstance(e, kind)


def _exact_remsi(op: ir.Operation) -> None:
    a, b = op.operands[0], op.operands[1]
    if not _is_kind(a.type, ir.IntegerType):
        return
    o = _Ops(op, a.type)
    zero = o.const(0)

    def magnitude(v):
        neg = o(arith.CmpIOp, arith.CmpIPredicate.slt, v, zero)
        return neg, o.sel(neg, o(arith.SubIOp, zero, v), v)

    neg_a, ua = magnitude(a)
    _, ub = magnitude(b)
    ur = o(arith.RemUIOp, ua, ub)
    r = o.sel(neg_a, o(arith.SubIOp, zero, ur), ur)
    op.results[0].replace_all_uses_with(r)
    op.erase()


def _ieee_powf(op: ir.Operation) -> None:
    x, y = op.operands[0], op.operands[1]
    if not _is_kind(x.type, ir.FloatType):
        return
    o = _Ops(op, x.type)
    zero, one, inf, nan = o.const(0.0), o.const(1.0), o.const(float("inf")), o.const(float("nan"))
    cmp, sel = o.cmpf, o.sel

    def and_(a, b):
        return o(arith.AndIOp, a, b)

    ax, ay = o(math.AbsFOp, x), o(math.AbsFOp, y)
    p = o(math.PowFOp, sel(cmp("OGT", ax, zero), ax, one), y)                 # GL.Pow on |x| > 0 only
    y_int = cmp("OEQ", o(math.FloorOp, y), y)                                  # +-inf too; not NaN
    half = o(arith.MulFOp, y, o.const(0.5))
    y_odd = and_(y_int, cmp("UNE", o(math.FloorOp, half), half))
    r = sel(cmp("OEQ", x, zero), sel(cmp("OLT", y, zero), inf, zero), p)
    r = sel(and_(cmp("OLT", x, zero), cmp("OLT", ax, inf)), sel(y_int, r, nan), r)   # (-inf) ** 0.5 is inf
    r = sel(and_(y_odd, o.sign_bit(x)), o(arith.NegFOp, r), r)
    r = sel(cmp("UNO", x, y), nan, r)
    r = sel(and_(cmp("OEQ", ax, one), cmp("OEQ", ay, inf)), one, r)
    r = sel(o(arith.OrIOp, cmp("OEQ", y, zero), cmp("OEQ", x, one)), one, r)
    op.results[0].replace_all_uses_with(r)
    op.erase()


def _exact_fmod_narrow(op: ir.Operation, x, y):
    """fmod of f16 / f32 ``x``, ``y`` exactly, in f64: each step subtracts ``q * |y| * 2^k`` with
    ``k`` leaving a quotient ``q < 2^27`` (so ``q |y| 2^k`` and the difference are exact); 12
    steps cover f32's exponent range. Finite x and y != 0 only (the caller selects the rest)."""
    from .spirv_f64_math import _B
    t = x.type
    lanes = ir.VectorType(t).shape[0] if isinstance(t, ir.VectorType) else None
    b = _B(op, lanes)
    ax = b.abs(arith.ExtFOp(b.f, x, ip=b.ip, loc=b.loc).result)
    ay = b.abs(arith.ExtFOp(b.f, y, ip=b.ip, loc=b.loc).result)
    ay = b.sel(b.cmp("OGT", ay, b.c(0.0)), ay, b.c(1.0))
    elem = ir.VectorType(t).element_type if lanes else t
    steps = 12 if ir.FloatType(elem).width > 16 else 3
    r = ax
    for _ in range(steps):
        ratio = b.div(r, ay)
        e = b.isub(b.iand(b.shr(b.bits(ratio), b.ci(52)), b.ci(0x7FF)), b.ci(1023))
        k = b.isub(e, b.ci(26))
        k = b.sel(b.icmp("sgt", k, b.ci(0)), k, b.ci(0))
        ys = b.mul(ay, b.from_bits(b.shl(b.iadd(k, b.ci(1023)), b.ci(52))))
        q = b.floor(b.div(r, ys))
        r = b.sub(r, b.mul(q, ys))
        r = b.sel(b.cmp("OLT", r, b.c(0.0)), b.add(r, ys), r)
    return arith.TruncFOp(t, r, ip=b.ip, loc=b.loc).result


def _ieee_remf(op: ir.Operation) -> None:
    """FRem is ``x - y trunc(x / y)`` on the device: rounded for large quotients (fmod(3e38, 3)
    was 0, not 2), NaN for ``x rem inf`` (fmod: x), +0 for a zero remainder of a negative x.
    f16 / f32: fmod exactly (in f64); f64 keeps FRem with the infinite and zero cases fixed."""
    x, y = op.operands[0], op.operands[1]
    if not _is_kind(x.type, ir.FloatType):
        return
    o = _Ops(op, x.type)
    inf, nan = o.const(float("inf")), o.const(float("nan"))
    narrow = ir.FloatType(o.elem).width < 64
    m = _exact_fmod_narrow(op, x, y) if narrow else o(arith.RemFOp, x, y)
    x_finite = o.cmpf("OLT", o(math.AbsFOp, x), inf)
    if narrow:
        m = o.sel(o.sign_bit(x), o(arith.NegFOp, m), m)
    m = o.sel(o(arith.AndIOp, x_finite, o.cmpf("OEQ", o(math.AbsFOp, y), inf)), x, m)
    if narrow:
        bad = o(arith.OrIOp, o(arith.OrIOp, o.cmpf("UNO", x, y), o.cmpf("OEQ", y, o.const(0.0))),
                o(arith.XOrIOp, x_finite, o.const(1, o.bool_t)))
        m = o.sel(bad, nan, m)
    else:
        signed_zero = o.sel(o.sign_bit(x), o.const(-0.0), o.const(0.0))      # (x * 0 folds to +0 on lavapipe)
        m = o.sel(o.cmpf("OEQ", m, o.const(0.0)), signed_zero, m)
    op.results[0].replace_all_uses_with(m)
    op.erase()


_REWRITES = {"arith.cmpi": _narrow_cmpi, "arith.remsi": _exact_remsi, "math.powf": _ieee_powf,
             "arith.remf": _ieee_remf}


@register_pass("relax-spirv-arith",
               "In gpu.modules, before the SPIR-V conversions: arith.remsi exact for INT_MIN, math.powf with "
               "IEEE semantics around GL.Pow, arith.remf's inf / signed-zero cases as fmod's (scalars and "
               "vectors), and compares of sign-extended values narrowed (a lavapipe miscompile).")
def relax_spirv_arith(module: ir.Operation, opts) -> None:
    found: list[ir.Operation] = []

    def visit(op):
        o = op.operation
        if o.name in _REWRITES:
            found.append(o)
        return ir.WalkResult.ADVANCE

    for top in module.regions[0].blocks[0].operations:
        if top.operation.name == "gpu.module":
            top.operation.walk(visit)
    for o in found:
        _REWRITES[o.name](o)
