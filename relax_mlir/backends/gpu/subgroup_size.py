"""relax-spirv-subgroup-size: the Vulkan device's subgroup size in each kernel module's
SPIR-V target environment.

``convert-gpu-to-spirv`` lowers ``gpu.shuffle`` (the GEMV's reduction) to
``spirv.GroupNonUniformShuffleXor`` only when the shuffle's width equals the target
environment's ``subgroup_size`` resource limit, which ``spirv-attach-target`` leaves at its
default (32) with no option to set it. This pass writes the size recorded on the module's
target (``relax.target``'s ``subgroup_size``, probed from the device by compile();
lavapipe: 8) into every ``#spirv.target_env`` of a ``gpu.module``'s targets. Without a
known size it changes nothing (the GPU rules then build no shuffles). Run right after
``spirv-attach-target``.
"""

from __future__ import annotations

import re

from mlir import ir

from ...target import Target
from ...transforms.registry import register_pass

_LIMITS = re.compile(r"#spirv\.resource_limits<(.*?)>")


def with_subgroup_size(env: str, size: int) -> str:
    """``#spirv.target_env<...>`` text with its resource limits' subgroup size set."""
    m = _LIMITS.search(env)
    if m is None:
        return env.rstrip(">") + f", #spirv.resource_limits<subgroup_size = {size}>>"
    fields = [f.strip() for f in m.group(1).split(",") if f.strip() and not f.strip().startswith("subgroup_size")]
    fields.append(f"subgroup_size = {size}")
    return env[:m.start()] + f"#spirv.resource_limits<{', '.join(fields)}>" + env[m.end():]


@register_pass("relax-spirv-subgroup-size",
               "SPIR-V kernels: the target's subgroup size (relax.target) in each gpu.module's "
               "#spirv.target_env (gpu.shuffle lowers only at that width).")
def relax_spirv_subgroup_size(module: ir.Operation, opts) -> None:
    size = Target.for_module(module, "vulkan").subgroup_size
    if size is None:
        return
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name != "gpu.module" or "targets" not in op.attributes:
            continue
        targets = ir.ArrayAttr(op.attributes["targets"])
        new = [ir.Attribute.parse(with_subgroup_size(str(t), size)) if str(t).startswith("#spirv.target_env")
               else t for t in targets]
        op.attributes["targets"] = ir.ArrayAttr.get(new)
