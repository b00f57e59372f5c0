"""relax-gpu-signless: unsigned element types become signless (bit patterns unchanged).

Kernels on ``ui8`` / ``ui32`` tensors compute on signless integers between
``builtin.unrealized_conversion_cast``s (arith takes signless types); on the CPU the
casts vanish in the LLVM dialect, but the SPIR-V conversion keeps unsigned types and
cannot legalize the casts. The memory layout does not depend on signedness, so after
bufferization this pass retypes every value, block argument and function type of the
module from ``ui<N>`` / ``si<N>`` (scalars and memref elements) to ``i<N>`` and removes
the casts that became identities.

It also rewrites ``arith.maxui`` / ``minui`` / ``maxsi`` / ``minsi`` on ``i1`` (a bool
max/min reduction) into ``arith.ori`` / ``andi``: SPIR-V's ``GL.UMax`` and friends take
8- to 64-bit integers only, and the result on one bit is a logical or / and (signed, true
is -1: max is and, min is or).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ...transforms.registry import register_pass


def _signless(t: ir.Type) -> ir.Type:
    if isinstance(t, ir.IntegerType) and not t.is_signless:
        return ir.IntegerType.get_signless(t.width)
    if isinstance(t, ir.MemRefType):
        e = _signless(t.element_type)
        if e != t.element_type:
            return ir.MemRefType.get(list(t.shape), e, t.layout, t.memory_space)
    return t


def _retype_values(values) -> None:
    for v in values:
        n = _signless(v.type)
        if n != v.type:
            v.set_type(n)


#: max/min on one bit -> the logical op it is (signed i1: true is -1)
_BOOL_MINMAX = {"arith.maxui": arith.OrIOp, "arith.minui": arith.AndIOp, "arith.maxsi": arith.AndIOp,
                "arith.minsi": arith.OrIOp}


def _is_bool(t: ir.Type) -> bool:
    if isinstance(t, (ir.VectorType, ir.ShapedType)) and not isinstance(t, ir.IntegerType):
        t = ir.ShapedType(t).element_type
    return isinstance(t, ir.IntegerType) and t.width == 1


@register_pass("relax-gpu-signless",
               "Retype ui<N>/si<N> scalars and memref elements to i<N> module-wide (after "
               "bufferization) and drop the identity unrealized casts left; max/min on i1 become "
               "ori/andi (SPIR-V has no 1-bit GL.UMax).")
def relax_gpu_signless(module: ir.Operation, opts) -> None:
    casts: list[ir.Operation] = []
    minmax: list[ir.Operation] = []

    def visit(op):
        o = op.operation
        for region in o.regions:
            for block in region.blocks:
                _retype_values(block.arguments)
        _retype_values(o.results)
        if "function_type" in o.attributes:
            ft = ir.FunctionType(ir.TypeAttr(o.attributes["function_type"]).value)
            new = ir.FunctionType.get([_signless(t) for t in ft.inputs], [_signless(t) for t in ft.results])
            if new != ft:
                o.attributes["function_type"] = ir.TypeAttr.get(new)
        if o.name == "builtin.unrealized_conversion_cast":
            casts.append(o)
        if o.name in _BOOL_MINMAX and _is_bool(o.results[0].type):
            minmax.append(o)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for c in casts:
        if len(c.operands) == 1 and len(c.results) == 1 and c.operands[0].type == c.results[0].type:
            c.results[0].replace_all_uses_with(c.operands[0])
            c.erase()
    for o in minmax:
        new = _BOOL_MINMAX[o.name](o.operands[0], o.operands[1], ip=ir.InsertionPoint(o), loc=o.location)
        o.results[0].replace_all_uses_with(new.result)
        o.erase()
