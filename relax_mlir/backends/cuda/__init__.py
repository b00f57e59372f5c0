"""The cuda backend: PTX kernels through NVVM (the GPU schedule rules of :mod:`..gpu`), host
code JIT-compiled, an NVIDIA GPU through the driver API at run time
(:mod:`relax_mlir.runtime.cuda`). Stages: :mod:`relax_mlir.pipelines.cuda`."""

from __future__ import annotations

from .. import Backend, Stage, register_backend


def _stages(opts, backend: Backend) -> list[Stage]:
    from ...pipelines.cuda import stages
    device = getattr(opts, "target", None)
    return stages(opts.fusion, opts.workgroup_size, device.arch if device is not None else opts.chip, opts.format,
                  device.max_threads_per_block if device is not None else None, opts.schedule_config,
                  getattr(opts, "cublas", ""))


def _runtime(module, metadata: dict, libraries: list[str], options):
    from ...runtime.cuda import cuda_runtime
    return cuda_runtime(module, metadata, libraries, options)


BACKEND = register_backend(Backend("cuda", "an NVIDIA GPU (PTX kernels through NVVM, host code JIT-compiled, device memory, CUDA graphs)",
                                   "cuda", _stages, _runtime, legalize_target="cpu", host_hooks="cpu"))
