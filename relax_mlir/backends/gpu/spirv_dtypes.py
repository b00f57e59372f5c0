"""relax-spirv-check-dtypes: refuse, at the program's own locations, element types the pinned
SPIR-V target cannot compute on.

The vulkan pipeline targets SPIR-V 1.3 with the capabilities of
:data:`relax_mlir.pipelines.vulkan.CAPS`, which have no bfloat16 type (``SPV_KHR_bfloat16``'s
``BFloat16TypeKHR`` is not among them). Without this check a bf16 program still compiled and
returned garbage (a bf16 matmul on lavapipe gave values like 1.9e37 for O(1) results): a
silently wrong answer. The check runs first in
the vulkan graph stage and reports where bf16 enters each graph function: a parameter
(at its location: its name), or an op whose result is bf16 while none of its operands
is (``relax.astype``, a constant; nested regions included), never every op downstream.
"""

from __future__ import annotations

from mlir import ir

from ...transforms.graph import entry_block, func_name, graph_functions
from ...transforms.registry import emit_error, register_pass

#: element type -> why the SPIR-V target refuses it
UNSUPPORTED = {"bf16": "bf16 tensors are not supported on the vulkan target (the pinned SPIR-V target has no "
                       "bfloat16 type): compute in f32 or f16 (relax.astype), or compile for cpu or cuda"}


def _refused(t: ir.Type):
    if isinstance(t, ir.ShapedType):
        return UNSUPPORTED.get(str(ir.ShapedType(t).element_type))
    return UNSUPPORTED.get(str(t))


@register_pass("relax-spirv-check-dtypes",
               "Refuse element types the SPIR-V target has no type for (bf16), where they enter the program.")
def relax_spirv_check_dtypes(module: ir.Operation, opts) -> None:
    for f in graph_functions(module):
        name = func_name(f)
        for i, a in enumerate(entry_block(f).arguments):
            why = _refused(a.type)
            if why:
                emit_error(a.location, f"@{name} parameter #{i}: {why}")
        _check_ops(f)


def _check_ops(parent: ir.Operation) -> None:
    for region in parent.regions:
        for block in region.blocks:
            for op in block.operations:
                op = op.operation
                why = next((w for w in map(_refused, (r.type for r in op.results)) if w), None)
                if why and not any(_refused(v.type) for v in op.operands):
                    emit_error(op, f"'{op.name}' result: {why}")
                _check_ops(op)
