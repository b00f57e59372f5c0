"""relax-spirv-nest-modules: each ``spirv.module`` into the ``gpu.module`` it came from.

``convert-gpu-to-spirv`` emits ``spirv.module @__spv__<name>`` beside ``gpu.module
@<name>``; ``gpu-module-to-binary`` serializes the SPIR-V module found INSIDE a
``gpu.module`` with a SPIR-V target. This pass moves it there (the ``gpu.func`` stays:
``gpu.launch_func`` still names it until the binary replaces the module).
"""

from __future__ import annotations

from mlir import ir

from ...transforms.registry import emit_error, register_pass

PREFIX = "__spv__"


def spirv_modules(module: ir.Operation) -> list[ir.Operation]:
    """Every ``spirv.module`` under ``module`` (nested in its gpu.module or not), outermost
    first, not looking inside one: the SPIR-V passes' unit of work."""
    found: list[ir.Operation] = []

    def visit(op):
        if op.operation.name == "spirv.module":
            found.append(op.operation)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


@register_pass("relax-spirv-nest-modules",
               "Move each spirv.module @__spv__X (from convert-gpu-to-spirv) into gpu.module @X "
               "(where gpu-module-to-binary serializes it).")
def relax_spirv_nest_modules(module: ir.Operation, opts) -> None:
    tops = [op.operation for op in module.regions[0].blocks[0].operations]
    gpu_modules = {ir.StringAttr(o.attributes["sym_name"]).value: o for o in tops if o.name == "gpu.module"}
    for o in tops:
        if o.name != "spirv.module" or "sym_name" not in o.attributes:
            continue
        name = ir.StringAttr(o.attributes["sym_name"]).value
        target = gpu_modules.get(name[len(PREFIX):]) if name.startswith(PREFIX) else None
        if target is None:
            emit_error(o, f"spirv.module @{name} has no gpu.module @{name[len(PREFIX):]}")
            return
        body = target.regions[0].blocks[0]
        o.move_before(body.operations[0])
