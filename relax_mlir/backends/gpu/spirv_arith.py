"""relax-spirv-arith: arith / math ops whose SPIR-V lowering would not keep their semantics.

Runs on the ``gpu.module``s right before ``convert-math-to-spirv`` / ``convert-gpu-to-spirv``
and rewrites, in arith and math, three things those conversions get wrong for us:

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


def _exact_remsi(op: ir.Operation) -> None:
    a, b = op.operands[0], op.operands[1]
    t = a.type
    if not isinstance(t, ir.IntegerType):
        return
    ip, loc = ir.InsertionPoint(op), op.location
    zero = arith.ConstantOp(t, ir.IntegerAttr.get(t, 0), ip=ip, loc=loc).result
    pslt = arith.CmpIPredicate.slt

    def magnitude(v):
        neg = arith.CmpIOp(pslt, v, zero, ip=ip, loc=loc).result
        return neg, arith.SelectOp(neg, arith.SubIOp(zero, v, ip=ip, loc=loc).result, v, ip=ip, loc=loc).result

    neg_a, ua = magnitude(a)
    _, ub = magnitude(b)
    ur = arith.RemUIOp(ua, ub, ip=ip, loc=loc).result
    r = arith.SelectOp(neg_a, arith.SubIOp(zero, ur, ip=ip, loc=loc).result, ur, ip=ip, loc=loc).result
    op.results[0].replace_all_uses_with(r)
    op.erase()


def _ieee_powf(op: ir.Operation) -> None:
    x, y = op.operands[0], op.operands[1]
    t = x.type
    if not isinstance(t, ir.FloatType):
        return
    ip, loc = ir.InsertionPoint(op), op.location

    def c(v: float):
        return arith.ConstantOp(t, ir.FloatAttr.get(t, v), ip=ip, loc=loc).result

    def cmp(p: str, a, b):
        return arith.CmpFOp(getattr(arith.CmpFPredicate, p), a, b, ip=ip, loc=loc).result

    def sel(cond, a, b):
        return arith.SelectOp(cond, a, b, ip=ip, loc=loc).result

    def or_(a, b):
        return arith.OrIOp(a, b, ip=ip, loc=loc).result

    def and_(a, b):
        return arith.AndIOp(a, b, ip=ip, loc=loc).result

    zero, one, inf, nan = c(0.0), c(1.0), c(float("inf")), c(float("nan"))
    ax = math.AbsFOp(x, ip=ip, loc=loc).result
    ay = math.AbsFOp(y, ip=ip, loc=loc).result
    p = math.PowFOp(sel(cmp("OGT", ax, zero), ax, one), y, ip=ip, loc=loc).result   # GL.Pow on |x| > 0 only
    y_int = cmp("OEQ", math.FloorOp(y, ip=ip, loc=loc).result, y)                  # +-inf too; not NaN
    half = arith.MulFOp(y, c(0.5), ip=ip, loc=loc).result
    y_odd = and_(y_int, cmp("UNE", math.FloorOp(half, ip=ip, loc=loc).result, half))
    r = sel(cmp("OEQ", x, zero), sel(cmp("OLT", y, zero), inf, zero), p)
    r = sel(and_(cmp("OLT", x, zero), cmp("OLT", ax, inf)), sel(y_int, r, nan), r)   # (-inf) ** 0.5 is inf
    it = ir.IntegerType.get_signless(ir.FloatType(t).width)   # the sign bit of x (-0 too)
    x_bits = arith.BitcastOp(it, x, ip=ip, loc=loc).result
    x_sign = arith.CmpIOp(arith.CmpIPredicate.slt, x_bits, arith.ConstantOp(it, 0, ip=ip, loc=loc).result,
                          ip=ip, loc=loc).result
    r = sel(and_(y_odd, x_sign), arith.NegFOp(r, ip=ip, loc=loc).result, r)
    r = sel(cmp("UNO", x, y), nan, r)
    r = sel(and_(cmp("OEQ", ax, one), cmp("OEQ", ay, inf)), one, r)
    r = sel(or_(cmp("OEQ", y, zero), cmp("OEQ", x, one)), one, r)
    op.results[0].replace_all_uses_with(r)
    op.erase()


_REWRITES = {"arith.cmpi": _narrow_cmpi, "arith.remsi": _exact_remsi, "math.powf": _ieee_powf}


@register_pass("relax-spirv-arith",
               "In gpu.modules, before the SPIR-V conversions: arith.remsi exact for INT_MIN, math.powf with "
               "IEEE semantics around GL.Pow, and compares of sign-extended values narrowed (a lavapipe "
               "miscompile).")
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
