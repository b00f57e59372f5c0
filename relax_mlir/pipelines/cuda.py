"""The ``cuda`` pipeline: the GPU kernels through NVVM to PTX; the host code to LLVM.

Stages (``relax_mlir.compile(src, target="cuda")``, run by :mod:`relax_mlir.runtime.cuda`;
``relax-opt --pass-pipeline='builtin.module(cuda)'`` prints the result):

* ``graph``/``host``: the cpu target's graph passes and relax-lower-host, with library
  dispatch and memory planning off (as for vulkan: the arena would be host memory);
* ``codegen``: the vulkan target's bufferization and GPU kernel stage
  (:mod:`relax_mlir.pipelines.gpu`), then each outlined ``gpu.module`` through
  ``convert-gpu-to-nvvm`` and serialized in-process with the wheel's NVPTX back end
  (``gpu-module-to-binary{format=isa}``: PTX text in a ``gpu.binary``, JIT-compiled by
  the driver when the executable is built; ``format=bin``: cubins, where a CUDA
  toolkit's ``ptxas`` is on PATH, since the wheel has none). The
  host code first gets ``relax-cuda-host`` (its own bookkeeping buffers on the stack, copies
  as device-to-device copies, host constants read from their device copies), then goes to
  the LLVM dialect with ``gpu-to-llvm`` (each launch through the ``mgpu*`` entry points,
  which the runtime defines in the host module: relax_mlir/runtime/cuda_launch.py) and
  allocations through the generic functions ``_mlir_memref_to_llvm_alloc`` / ``_free``
  (``finalize-memref-to-llvm{use-generic-functions=true}``), which the runtime also
  defines (a bump of the session's device arena). Memory planning is on: the
  workspace is a device buffer of each session.
"""

from __future__ import annotations

import re
from typing import Optional

from ..transforms.registry import Option, PipelineError, register_pipeline
from .cpu import FUSION_DEFAULT, _graph_and_host, to_llvm
from .gpu import graph_stage, SCHEDULE_CONFIG_HELP, WORKGROUP_SIZE, bufferize_stage, check_schedule_config, kernel_stage

#: sm_80 (A100) PTX runs on every later GPU through the driver's JIT
CHIP = "sm_80"
#: threads per block on every CUDA GPU
MAX_THREADS = 1024


#: what gpu-module-to-binary emits: PTX text (JIT-compiled by the driver: any driver that
#: knows the chip) or a cubin (``ptxas`` must be on PATH at compile time, and the driver
#: must accept that toolkit's cubins)
FORMATS = ("isa", "bin")


def nvvm_stage(chip: str = CHIP, fmt: str = "isa") -> list[str]:
    return [
        f"nvvm-attach-target{{chip={chip} O=3}}",
        # convert-gpu-to-nvvm maps float math to libdevice; what it leaves (math.absi)
        # has plain LLVM intrinsics that NVPTX selects
        # 16-byte aligned shared memory (128-bit st.shared, ldmatrix rows: the tensor-core GEMM)
        "relax-cuda-align-workgroup-memory",
        "gpu.module(convert-scf-to-cf, convert-nvgpu-to-nvvm, convert-gpu-to-nvvm, convert-math-to-llvm)",
        "reconcile-unrealized-casts",
        f"gpu-module-to-binary{{format={fmt}}}",
    ]


def host_stage() -> list[str]:
    """Host code to LLVM: launches via ``gpu-to-llvm``, allocations via the runtime."""
    return to_llvm("finalize-memref-to-llvm{use-generic-functions=true}", before_casts=("gpu-to-llvm",))


def check_options(workgroup_size: int, chip: str, fmt: str = "isa", max_threads: Optional[int] = None) -> None:
    """Refuse what would only fail later: LLVM accepts an unknown chip with a warning and
    the driver would then reject the PTX; a block has 1 to ``max_threads`` threads (the
    target's ``max_threads_per_block``; default :data:`MAX_THREADS`, every CUDA GPU's)."""
    max_threads = max_threads or MAX_THREADS
    if not re.fullmatch(r"sm_\d{2,3}[af]?", chip):
        raise PipelineError(f"option 'chip' of pass 'cuda': expected an NVIDIA architecture like sm_80 or sm_90a, "
                            f"got '{chip}'")
    if fmt not in FORMATS:
        raise PipelineError(f"option 'format' of pass 'cuda': one of {', '.join(FORMATS)}, got '{fmt}'")
    if not 1 <= workgroup_size <= max_threads:
        raise PipelineError(f"option 'workgroup-size' of pass 'cuda': 1 to {max_threads} threads per block, "
                            f"got {workgroup_size}")


def cublas_stages(cublas: str = "") -> tuple[list[str], list[str]]:
    """The cuBLAS passes for the graph stage (relax-cuda-dispatch-library) and after
    bufferization (relax-cuda-split-library); none when the policy (``cublas`` option, else
    ``$RELAX_MLIR_CUBLAS``) is off, or is auto and no cuBLAS library is found."""
    from ..runtime.cuda.cublas import policy
    try:
        p = policy(cublas)
    except ValueError as e:
        raise PipelineError(f"option 'cublas' of pass 'cuda': {e}") from None
    if p == "off":
        return [], []
    return [f"relax-cuda-dispatch-library{{policy={p}}}"], ["relax-cuda-split-library"]


def stages(fusion=None, workgroup_size: int = WORKGROUP_SIZE, chip: str = CHIP,
           fmt: str = "isa", max_threads: Optional[int] = None,
           schedule_config: str = "", cublas: str = "") -> list[tuple[str, list[str]]]:
    check_options(workgroup_size, chip, fmt, max_threads)
    check_schedule_config(schedule_config, "cuda")
    # memory planning on: the workspace is a device buffer of the session (intermediates at
    # their upper bounds, allocated once); host BLAS dispatch off; cuBLAS by its policy
    graph, host = _graph_and_host(fusion, True, False, None, "cpu", "cpu")
    lib_graph, lib_split = cublas_stages(cublas)
    at = next((i for i, p in enumerate(graph) if p.startswith("relax-legalize")), len(graph))
    graph = graph[:at] + lib_graph + graph[at:]
    return [("graph", graph_stage(graph, "cuda")), ("host", host),
            ("codegen", bufferize_stage() + lib_split + kernel_stage(workgroup_size, "cuda", schedule_config)
             + ["relax-cuda-host"] + nvvm_stage(chip, fmt) + host_stage())]


@register_pipeline("cuda", "relax IR to host LLVM code + PTX kernels (NVVM): the vulkan target's GPU kernels "
                           "for CUDA, host code calling MLIR's CUDA runtime.",
                   options=[Option("fusion", bool, FUSION_DEFAULT,
                                   "fuse call_tir kernels (relax-fuse-ops, relax-fuse-kernels)"),
                            Option("workgroup-size", int, WORKGROUP_SIZE,
                                   "threads per block (tile of the first parallel dimension)"),
                            Option("chip", str, CHIP, "the PTX target (nvvm-attach-target chip)"),
                            Option("format", str, "isa", "kernels as PTX (isa, JIT-compiled by the driver) or "
                                                         "cubins (bin, needs ptxas on PATH)"),
                            Option("schedule-config", str, "", SCHEDULE_CONFIG_HELP),
                            Option("cublas", str, "", "matmuls to cuBLAS: auto (a provisional rule, where a cuBLAS "
                                                      "library is found; a symbolic M split per call with the "
                                                      "GEMV), on (every supported one), off; default "
                                                      "$RELAX_MLIR_CUBLAS, else auto (docs/gpu.md)")])
def cuda(opts) -> str:
    return ", ".join(name for _, passes in stages(opts.fusion, opts.workgroup_size, opts.chip, opts.format,
                                                   schedule_config=opts.schedule_config, cublas=opts.cublas)
                     for name in passes)
