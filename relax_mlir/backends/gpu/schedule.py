"""relax-gpu-schedule: every GPU kernel scheduled by the rule :func:`.rules.select` picks.

Runs on bufferized kernels, before the generic fallback (relax-gpu-prepare-kernels and the
parallel-loop route of :mod:`relax_mlir.pipelines.gpu`), which takes what no rule rewrote.
The target is the module's (``relax.target``, recorded by compile()); a module without one
gets the GPU defaults of the ``kind`` option. Knob values, later ones winning: the rule's
defaults; ``overrides`` (a compile's ``schedule_config``: ``gemv_lanes=4:gemv_k_subgroups=8``,
for every kernel whose rule has the knob); then either the kernel's ``relax.schedule_config``
(an invalid one is an error at the kernel) or, without it, the record of the ``tuning-db``
database (the CPU schedules' SQLite file, ``compile(..., tuning_db=)``: keyed by the kernel's
structural hash here, :func:`.rules.target_key` and the module's size bucket; a record the
rule rejects is ignored).
"""

from __future__ import annotations

from dataclasses import replace

from mlir import ir

from ...target import Target
from .launch_builder import kernels
from ...transforms.registry import Option, emit_error, register_pass
from .rules import CONFIG_ATTR, RULES, Elementwise, parse_overrides, select, target_key


def _tuned_configs(module: ir.Operation, fns: list[ir.Operation], path: str, target: Target) -> list:
    """Per kernel, the config recorded in the tuning database at ``path`` (None without a
    record, or without the file)."""
    import os

    from ...transforms.kernel_hash import structural_hash
    from ...tuning.database import Database, module_bucket

    if not os.path.exists(path):
        return [None] * len(fns)
    key, bucket = target_key(target), module_bucket(module)
    with Database(path) as db:
        recs = [db.lookup(structural_hash(fn, ignore=(CONFIG_ATTR,)), key, bucket) for fn in fns]
    return [r.config if r is not None else None for r in recs]


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
                                                           "a target without a known subgroup size: no GEMV)"),
                        Option("emulate-mma", bool, False, "the target's emulate_mma (vulkan: the cuda tensor-core "
                                                           "routes offered, for relax-emulate-mma to run)"),
                        Option("tuning-db", str, "", "a tuning database: kernels recorded there get their "
                                                     "tuned knob values"),
                        Option("overrides", str, "", "knob=value:knob=value applied to every kernel whose "
                                                     "rule has the knob (a compile's schedule_config)")])
def relax_gpu_schedule(module: ir.Operation, opts) -> None:
    if opts.kind not in ("cuda", "vulkan"):
        raise ValueError(f"relax-gpu-schedule: kind must be cuda or vulkan, got '{opts.kind}'")
    target = Target.for_module(module, opts.kind)
    if not opts.subgroup_ops:
        target = replace(target, subgroup_size=None)
    if opts.emulate_mma:
        target = replace(target, emulate_mma=True)
    rules = tuple(r for r in RULES if opts.vector or not isinstance(r, Elementwise))
    try:
        overrides = parse_overrides(opts.overrides)
    except ValueError as e:
        emit_error(module, f"relax-gpu-schedule: {e}")
        return
    fns = kernels(module)
    tuned = _tuned_configs(module, fns, opts.tuning_db, target) if opts.tuning_db else [None] * len(fns)
    for fn, config in zip(fns, tuned):
        chosen = None
        if config is not None and CONFIG_ATTR not in fn.attributes:
            try:
                chosen = select(fn, target, config=config, rules=rules, overrides=overrides,
                                workgroup_size=opts.workgroup_size)
            except ValueError:
                chosen = None   # a record for another rule or target limit: the defaults
        try:
            if chosen is None:
                chosen = select(fn, target, rules=rules, overrides=overrides, workgroup_size=opts.workgroup_size)
        except ValueError as e:
            emit_error(fn, f"relax-gpu-schedule: {e}")
            return
        for s in chosen:
            s.rule.apply(fn, target, s.config, s.dtype)
