"""relax-gpu-schedule: every GPU kernel scheduled by the rule :func:`.rules.select` picks.

Runs on bufferized kernels, before the generic fallback (relax-gpu-prepare-kernels and the
parallel-loop route of :mod:`relax_mlir.pipelines.gpu`), which takes what no rule rewrote.
The target is the module's (``relax.target``, recorded by compile()); a module without one
gets the GPU defaults of the ``kind`` option. An invalid tuned config on a kernel
(``relax.schedule_config``) is an error at the kernel.
"""

from __future__ import annotations

from dataclasses import replace

from mlir import ir

from ...target import Target
from ...transforms.gpu.launch_builder import kernels
from ...transforms.registry import Option, emit_error, register_pass
from .rules import RULES, Elementwise, select


@register_pass("relax-gpu-schedule",
               "GPU kernels: each kernel scheduled by the rule selected for its kind, element type and the "
               "module's target (GEMM tiles / GEMV / row reductions / vector elementwise); the rest keeps "
               "the naive parallel-loop route.",
               options=[Option("kind", str, "vulkan", "the target kind when the module records none "
                                                      "(cuda, vulkan)"),
                        Option("workgroup-size", int, 64, "threads per workgroup of the elementwise rule's "
                                                          "default (the pipeline's workgroup size)"),
                        Option("vector", bool, True, "the elementwise rule (4 elements per thread)"),
                        Option("subgroup-ops", bool, True, "rules may use subgroup operations (false: as on "
                                                           "a target without a known subgroup size: no GEMV)")])
def relax_gpu_schedule(module: ir.Operation, opts) -> None:
    if opts.kind not in ("cuda", "vulkan"):
        raise ValueError(f"relax-gpu-schedule: kind must be cuda or vulkan, got '{opts.kind}'")
    target = Target.for_module(module, opts.kind)
    if not opts.subgroup_ops:
        target = replace(target, subgroup_size=None)
    rules = tuple(r for r in RULES if opts.vector or not isinstance(r, Elementwise))
    for fn in kernels(module):
        try:
            chosen = select(fn, target, rules=rules, workgroup_size=opts.workgroup_size)
        except ValueError as e:
            emit_error(fn, f"relax-gpu-schedule: {e}")
            return
        for s in chosen:
            s.rule.apply(fn, target, s.config, s.dtype)
