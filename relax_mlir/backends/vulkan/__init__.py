"""The vulkan backend: SPIR-V kernels (the GPU schedule rules of :mod:`..gpu`), host code
JIT-compiled like the cpu's, a Vulkan device (lavapipe on a CPU) at run time
(:mod:`relax_mlir.runtime.vulkan`). Stages: :mod:`relax_mlir.pipelines.vulkan`."""

from __future__ import annotations

from .. import Backend, Stage, register_backend


def _stages(opts, backend: Backend) -> list[Stage]:
    from ...pipelines.vulkan import stages
    from ...transforms.registry import CompileOptionsError
    device = getattr(opts, "target", None)
    cap = device.max_threads_per_block if device is not None else None
    if cap is not None and not 1 <= opts.workgroup_size <= cap:
        raise CompileOptionsError(f"option 'workgroup-size' of target 'vulkan': 1 to {cap} invocations per "
                                  f"workgroup on {device.chip or 'this device'}, got {opts.workgroup_size}")
    return stages(opts.fusion, opts.workgroup_size, opts.schedule_config, opts.emulate_tensor_cores)


def _target(popts, options):
    """The compile's Target; the ``emulate-tensor-cores`` option recorded on it (the matmul rule
    then offers the cuda tensor-core routes, relax-emulate-mma runs them)."""
    from dataclasses import replace

    from ...target import Target
    t = Target.from_options(options)
    return replace(t, emulate_mma=True) if popts.emulate_tensor_cores else t


def _runtime(module, metadata: dict, libraries: list[str], options):
    from ...runtime.vulkan import vulkan_runtime
    return vulkan_runtime(module, metadata, libraries, options)


BACKEND = register_backend(Backend("vulkan", "a Vulkan device (SPIR-V kernels, host code JIT-compiled; lavapipe on a CPU)",
                                   "vulkan", _stages, _runtime, legalize_target="cpu", host_hooks="cpu",
                                   make_target=_target))
