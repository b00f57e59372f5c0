"""relax-spirv-float-controls: kernels keep IEEE infinities, NaNs and signed zeros.

Vulkan lets a shader ignore Inf, NaN and the sign of zero unless its entry point declares
the ``SignedZeroInfNanPreserve`` execution mode (SPV_KHR_float_controls); lavapipe then
compiles with LLVM's no-NaNs/no-infs assumptions, so ``x - x`` of an infinity is 0, not
NaN, and a product through it loses the NaN (vulkan-program fuzz seed 34). numpy and the
cpu target keep IEEE semantics, so every entry point of every ``spirv.module`` gets the
mode for each float width (16, 32, 64) its module uses. Runs after
``spirv-lower-abi-attrs`` (which creates the entry points), before ``spirv-update-vce``
(which adds the capability and extension the mode requires).
"""

from __future__ import annotations

from mlir import ir

from ...transforms.registry import register_pass
from .nest_spirv import spirv_modules

MODE = "SignedZeroInfNanPreserve"


def _width(t: ir.Type):
    if isinstance(t, ir.ShapedType):     # vectors of floats
        t = ir.ShapedType(t).element_type
    return ir.FloatType(t).width if isinstance(t, ir.FloatType) else None


def _float_widths(spirv_module: ir.Operation) -> list[int]:
    """The widths of the float values the module computes with (op results and block
    arguments: a buffer's element is used through a load). From the types, not the text: a
    kernel named ``..._bf16`` (its data i16 by then) declares no 16-bit float mode."""
    widths: set[int] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.arguments]
        widths.update(w for w in (_width(v.type) for v in values) if w is not None)
        return ir.WalkResult.ADVANCE

    spirv_module.walk(visit)
    return sorted(widths)


@register_pass("relax-spirv-float-controls",
               "Declare the SignedZeroInfNanPreserve execution mode (per float width used) on every "
               "SPIR-V entry point: IEEE Inf/NaN/-0 semantics on Vulkan (run after spirv-lower-abi-attrs).")
def relax_spirv_float_controls(module: ir.Operation, opts) -> None:
    i32 = ir.IntegerType.get_signless(32)
    mode = ir.Attribute.parse(f"#spirv.execution_mode<{MODE}>")
    for sm in spirv_modules(module):
        widths = _float_widths(sm)
        body = sm.regions[0].blocks[0]
        ops = [o.operation for o in body.operations]
        declared = {(ir.FlatSymbolRefAttr(o.attributes["fn"]).value, ir.IntegerAttr(ir.ArrayAttr(o.attributes["values"])[0]).value)
                    for o in ops if o.name == "spirv.ExecutionMode" and str(o.attributes["execution_mode"]) == str(mode)}
        for ep in ops:
            if ep.name != "spirv.EntryPoint":
                continue
            fn = ir.FlatSymbolRefAttr(ep.attributes["fn"]).value
            for w in widths:
                if (fn, w) in declared:
                    continue
                ir.Operation.create("spirv.ExecutionMode", attributes={
                    "execution_mode": mode, "fn": ir.FlatSymbolRefAttr.get(fn),
                    "values": ir.ArrayAttr.get([ir.IntegerAttr.get(i32, w)])}, ip=ir.InsertionPoint(body))
