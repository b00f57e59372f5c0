"""The GPU kernel pipeline shared by the GPU targets (``vulkan``; ``cuda`` lowers the same
``gpu.module``s through NVVM).

Graph-level code stays host code (shape computation and run-time checks exactly as on
the cpu target: relax-lower-host with the cpu hooks); each kernel (``relax.kernel``)
keeps a host half, which computes the launch grid from the run-time sizes, and gets a
device half:

1. :func:`bufferize_stage`: host tensor constants copied into allocations
   (``relax-gpu-device-constants``), then the cpu target's bufferization and deallocation;
2. :func:`kernel_stage`: first ``relax-gpu-schedule`` (:func:`schedule_stage`): each kernel
   scheduled by the rule selected for its kind and element type on the module's target
   (:mod:`relax_mlir.backends.gpu.rules`: matmul as GEMM tiles / a subgroup-shuffle GEMV /
   a thread per element of C behind run-time size guards; row kernels as a workgroup or a
   thread per row; 32-bit elementwise ops with 4-wide vector accesses behind an alignment
   guard; docs/gpu.md), each a ``gpu.launch`` built directly from the kernel's linalg ops;

   then the naive route for every other kernel: ``relax-gpu-prepare-kernels`` (no memory
   access outside a parallel loop), ``convert-linalg-to-parallel-loops``,
   ``scf-parallel-loop-tiling`` with the workgroup size (``no-min-max-bounds``: a bounds
   check inside instead of ``affine.min`` bounds, which ``convert-parallel-loops-to-gpu``
   needs), ``gpu-map-parallel-loops`` (outer loops -> workgroups, tiles -> threads),
   ``convert-parallel-loops-to-gpu``; for all launches ``relax-gpu-flatten-launches``
   (1-D buffers and scalar sizes only; constants sunk) and ``gpu-kernel-outlining``.
   Dynamic sizes stay dynamic: one kernel serves every shape. Workgroup memory is
   declared as launch workgroup attributions (shared memory for NVVM; the vulkan
   pipeline turns them into Workgroup-class variables, relax-spirv-workgroup-memory).

On the naive route the workgroup size is :data:`WORKGROUP_SIZE` threads along the first
parallel dimension of each loop nest (each thread computes one output element;
reductions run serially in their thread).
"""

from __future__ import annotations

from typing import Optional

from ..backends import gpu as _gpu_rules  # noqa: F401  (registers relax-gpu-schedule)
from .cpu import _llvm_stage, to_llvm

WORKGROUP_SIZE = 64


#: relax-gpu-decode-attention in the graph stage (bench/bench_gpu.py --attention compares the
#: fused decode attention with the three kernels it replaces, in one process)
DECODE_ATTENTION_DEFAULT = True


#: relax-gpu-decode-attention also fuses the prefill attention chain (bench/bench_gpu.py
#: --prefill-attention compares it with the kernels it replaces, in one process)
PREFILL_ATTENTION_DEFAULT = True


#: relax-fuse-ops{quant-epilogue=true}: a quantized matmul's kernel takes its elementwise
#: epilogue (the residual add), which the quantized GEMV applies at the store
QUANT_EPILOGUE_DEFAULT = True


#: relax-fuse-kernels{multi-use=true}: an elementwise consumer merges into a producer whose
#: result has other uses too (the f16 KV cache's conversions of the new keys and values in a
#: prefill: one loop nest, one launch, writes both)
MULTI_USE_FUSION_DEFAULT = True
#: relax-fuse-kernels{siblings=true}: independent loop nests of one kernel over equal domains
#: merge into one (rope's q, k and v; the rope tables' cos and sin)
SIBLING_FUSION_DEFAULT = True
#: relax-fuse-kernels{unit-reshapes=true}: a reshape adding unit dims folds into its reader's
#: indexing map, so the producer fuses (the rope tables' and the mask's aranges)
UNIT_RESHAPE_FUSION_DEFAULT = True


def graph_stage(graph: list[str], kind: str) -> list[str]:
    """The cpu target's graph passes with the GPU graph rewrites before relax-legalize:
    relax-gpu-decode-attention (the cached attention chain as one decode_attention kernel,
    where the schedules with subgroup operations will take it); relax-fuse-ops with
    ``quant-epilogue`` (a quantized matmul takes its epilogue, as the quantized GEMV of those
    schedules applies it at the store); relax-fuse-kernels with ``multi-use`` and ``siblings``
    (each loop nest of a kernel no rule takes is a launch: a consumer joins a producer used
    elsewhere too, independent loop nests over equal domains join)."""
    fuse = " ".join(o for o, on in (("multi-use=true", MULTI_USE_FUSION_DEFAULT),
                                     ("siblings=true", SIBLING_FUSION_DEFAULT),
                                     ("unit-reshapes=true", UNIT_RESHAPE_FUSION_DEFAULT)) if on)
    if fuse:
        graph = [f"{p}{{{fuse}}}" if p == "relax-fuse-kernels" else p for p in graph]
    if not (SCHEDULES_DEFAULT and SUBGROUP_OPS_DEFAULT):
        return graph
    if QUANT_EPILOGUE_DEFAULT:
        graph = [f"{p}{{quant-epilogue=true}}" if p == "relax-fuse-ops" else p for p in graph]
    if not DECODE_ATTENTION_DEFAULT:
        return graph
    at = next((i for i, p in enumerate(graph) if p.startswith("relax-legalize")), len(graph))
    prefill = "" if PREFILL_ATTENTION_DEFAULT else " prefill=false"
    return graph[:at] + [f"relax-gpu-decode-attention{{kind={kind}{prefill}}}"] + graph[at:]


#: relax-gpu-fold-tensor-copies before bufferization (bench/bench_gpu.py --without-fold compares)
FOLD_TENSOR_COPIES_DEFAULT = True


def bufferize_stage() -> list[str]:
    """One-shot bufferization and deallocation, as on the cpu target, after host tensor
    constants get copies in fresh allocations (relax-gpu-device-constants: a kernel cannot
    read a host global) and the kernels' reshapes and fresh copies became views
    (relax-gpu-fold-tensor-copies: each copy would be a launch)."""
    stage = _llvm_stage()
    fold = ["relax-gpu-fold-tensor-copies"] if FOLD_TENSOR_COPIES_DEFAULT else []
    return ["relax-gpu-device-constants", *fold, *stage[:stage.index("relax-kernel-noalias")]]


#: Hand-scheduled matmul and row kernels (:func:`schedule_stage`); False gives every kernel
#: the naive parallel-loop route (bench/bench_gpu.py compares the two in one process).
SCHEDULES_DEFAULT = True
#: relax-gpu-vector-elementwise among the schedules (bench/bench_gpu.py --without-vector
#: compares kernels with and without it in one process)
VECTOR_ELEMENTWISE_DEFAULT = True
#: rules may use subgroup operations (the GEMV's shuffles); False: matmuls with few rows take
#: the small route (bench/bench_gpu.py --decode compares the two in one process)
SUBGROUP_OPS_DEFAULT = True


SCHEDULE_CONFIG_HELP = ("GPU rule knobs for every kernel whose rule has them, knob=value:knob=value "
                        "(docs/gpu.md; e.g. gemv_lanes=4:gemv_k_subgroups=8)")


def check_schedule_config(text: str, target: str) -> None:
    """PipelineError for a malformed ``schedule-config`` (values are checked per kernel by the
    rules' spaces)."""
    from ..backends.gpu.rules import parse_overrides
    from ..transforms.registry import PipelineError
    try:
        parse_overrides(text)
    except ValueError as e:
        raise PipelineError(f"option 'schedule-config' of pass '{target}': {e}") from None


def schedule_stage(schedules: Optional[bool] = None, workgroup_size: int = WORKGROUP_SIZE,
                   kind: str = "vulkan", schedule_config: str = "", emulate_mma: bool = False) -> list[str]:
    """The scheduled kernel kinds (relax-gpu-schedule: the rule of each kernel's kind and
    element type for the module's target, :mod:`relax_mlir.backends.gpu.rules`); every other
    kernel keeps the parallel-loop route. ``emulate_mma``: the cuda tensor-core routes offered
    on vulkan (its ``emulate-tensor-cores`` option)."""
    if not (SCHEDULES_DEFAULT if schedules is None else schedules):
        return []
    vector = "true" if VECTOR_ELEMENTWISE_DEFAULT else "false"
    subgroup = "true" if SUBGROUP_OPS_DEFAULT else "false"
    overrides = f" overrides={schedule_config}" if schedule_config else ""
    emulate = " emulate-mma=true" if emulate_mma else ""
    return [f"relax-gpu-schedule{{kind={kind} workgroup-size={int(workgroup_size)} vector={vector} "
            f"subgroup-ops={subgroup}{emulate}{overrides}}}"]


#: relax-kernel-fastmath{reassoc=false} before the schedules: fastmath<contract> on the kernels'
#: float arithmetic, which the launch builders clone with the linalg bodies (FMAs on NVPTX, which
#: writes unfusable mul.rn + add.rn without it), and after them on what the builders wrote; no reassoc: the row kernels fix their reduction
#: order themselves, the same on every route (bench/bench_gpu.py --without-contract compares)
KERNEL_CONTRACT_DEFAULT = True


def kernel_stage(workgroup_size: int = WORKGROUP_SIZE, kind: str = "vulkan", schedule_config: str = "",
                 emulate_mma: bool = False) -> list[str]:
    """Bufferized kernels -> host halves with gpu.launch_func + outlined gpu.modules."""
    return [
        "relax-expand-math",
        *(["relax-kernel-fastmath{reassoc=false}"] if KERNEL_CONTRACT_DEFAULT else []),
        "relax-gpu-signless",
        "relax-gpu-forward-copies",
        *schedule_stage(workgroup_size=workgroup_size, kind=kind, schedule_config=schedule_config,
                        emulate_mma=emulate_mma),
        # again: the launches the rules built themselves (online-softmax rescaling, stagers)
        *(["relax-kernel-fastmath{reassoc=false}"] if KERNEL_CONTRACT_DEFAULT else []),
        "relax-gpu-prepare-kernels",
        "func.func(convert-linalg-to-parallel-loops)",
        "relax-widen-bool-memrefs",   # booleans stored as bytes (host and device alike)
        "relax-gpu-sequential-inner-loops",
        "relax-gpu-register-accumulators",
        f"func.func(scf-parallel-loop-tiling{{parallel-loop-tile-sizes={int(workgroup_size)} no-min-max-bounds=true}})",
        "func.func(gpu-map-parallel-loops)",
        "convert-parallel-loops-to-gpu",
        "canonicalize",
        "relax-gpu-flatten-launches",
        "gpu-kernel-outlining",
        "lower-affine",
        "canonicalize",
        "cse",
    ]


def host_llvm_stage() -> list[str]:
    """The host code to the LLVM dialect; allocations through the generic functions
    ``_mlir_memref_to_llvm_alloc`` / ``_free`` that the device runtime provides."""
    return to_llvm("finalize-memref-to-llvm{use-generic-functions=true}")
