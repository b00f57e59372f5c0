"""The ``cuda`` pipeline: the same GPU kernels through NVVM to PTX (compile only).

``relax-opt --pass-pipeline='builtin.module(cuda)'`` runs the vulkan target's graph,
host and kernel stages (:mod:`relax_mlir.pipelines.gpu`), then lowers each outlined
``gpu.module`` with ``convert-gpu-to-nvvm`` and serializes it in-process with the
wheel's NVPTX back end (``gpu-module-to-binary{format=isa}``: PTX text in a
``gpu.binary``); the host code goes to the LLVM dialect with ``gpu-to-llvm`` (launches
through MLIR's CUDA runtime wrappers, ``libmlir_cuda_runtime.so``; cuBLAS-free).

Not built yet: a cuda runtime. Host buffers would have to live in device (or managed)
memory, as the vulkan runtime does with its allocation hooks, and nothing here was run
on an NVIDIA GPU: ``relax_mlir.compile(..., target="cuda")`` is not registered.
"""

from __future__ import annotations

from ..transforms.registry import Option, register_pipeline
from .cpu import FUSION_DEFAULT, _graph_and_host, to_llvm
from .gpu import WORKGROUP_SIZE, bufferize_stage, kernel_stage

#: sm_80 (A100) PTX runs on every later GPU through the driver's JIT
CHIP = "sm_80"


def nvvm_stage(chip: str = CHIP) -> list[str]:
    return [
        f"nvvm-attach-target{{chip={chip} O=3}}",
        "gpu.module(convert-scf-to-cf, convert-gpu-to-nvvm)",
        "reconcile-unrealized-casts",
        "gpu-module-to-binary{format=isa}",
    ]


def host_stage() -> list[str]:
    return to_llvm(before_casts=("gpu-to-llvm",))


def stages(fusion=None, workgroup_size: int = WORKGROUP_SIZE, chip: str = CHIP) -> list[tuple[str, list[str]]]:
    graph, host = _graph_and_host(fusion, False, False, None, "cpu", "cpu")
    return [("graph", graph), ("host", host),
            ("codegen", bufferize_stage() + kernel_stage(workgroup_size) + nvvm_stage(chip) + host_stage())]


@register_pipeline("cuda", "relax IR to host LLVM code + PTX kernels (NVVM): the vulkan target's GPU kernels "
                           "for CUDA (compile only, no runtime yet).",
                   options=[Option("fusion", bool, FUSION_DEFAULT,
                                   "fuse call_tir kernels (relax-fuse-ops, relax-fuse-kernels)"),
                            Option("workgroup-size", int, WORKGROUP_SIZE,
                                   "threads per block (tile of the first parallel dimension)"),
                            Option("chip", str, CHIP, "the PTX target (nvvm-attach-target chip)")])
def cuda(opts) -> str:
    return ", ".join(name for _, passes in stages(opts.fusion, opts.workgroup_size, opts.chip) for name in passes)
