"""The ``vulkan`` pipeline: relax IR -> host LLVM dialect + SPIR-V kernels.

Stages (``relax_mlir.compile(src, target="vulkan")``; ``relax-opt
--pass-pipeline='builtin.module(vulkan)'`` prints the result: ``gpu.binary`` ops carrying
the SPIR-V, ``vulkan.launches`` listing the launch sites, host code calling
``relax_vk_launch_<id>``):

* ``graph``/``host``: the cpu target's graph passes (bf16 matmuls / conv2ds as f32 ones between
  casts: relax-widen-bf16-matmul) and relax-lower-host, with library dispatch (BLAS runs on
  the host, not the device) and memory planning (its arena is host memory) off;
* ``codegen``: :func:`relax_mlir.pipelines.gpu.bufferize_stage`, the GPU kernel stage,
  relax-spirv-entry-abi, bf16 computed in f32 and stored as i16 (:data:`BF16_STAGE`), SPIR-V
  for the Vulkan client API
  (``spirv-attach-target{... client_api=Vulkan}``, ``convert-gpu-to-spirv``,
  relax-spirv-vector-buffers, the ABI lowering, relax-spirv-coherent-buffers), serialization in-process (``gpu-module-to-binary``), relax-vulkan-host
  (launches and copies -> runtime calls) and the host code to LLVM.
"""

from __future__ import annotations

from ..transforms.registry import Option, register_pipeline
from .cpu import FUSION_DEFAULT, _cpu_graph, _graph_and_host
from .gpu import (SCHEDULE_CONFIG_HELP, graph_stage, WORKGROUP_SIZE, bufferize_stage, check_schedule_config, host_llvm_stage,
                  kernel_stage)

#: SPIR-V up to 1.3 for Vulkan (spirv-update-vce lowers each module's version to what it
#: uses: 1.0 unless it shuffles); the capabilities the conversion MAY use (spirv-update-vce
#: keeps only those a kernel needs): 8/16/64-bit scalars and 8/16-bit storage buffers, for
#: i1 (stored as i8), f16, i64 and f64 tensors, and subgroup shuffles (the GEMV's
#: reduction: Vulkan 1.1, which the runtime's instance asks for). The runtime enables the
#: matching device features (lavapipe has them all).
CAPS = ["Shader", "Int8", "Int16", "Int64", "Float16", "Float64", "StorageBuffer8BitAccess",
        "StorageBuffer16BitAccess", "GroupNonUniformShuffle", "SignedZeroInfNanPreserve"]
EXTS = ["SPV_KHR_storage_buffer_storage_class", "SPV_KHR_8bit_storage", "SPV_KHR_16bit_storage",
        "SPV_KHR_float_controls"]
SPIRV_TARGET = f"spirv-attach-target{{ver=v1.3 caps={','.join(CAPS)} exts={','.join(EXTS)} client_api=Vulkan}}"


#: bf16 in kernels: computed in f32 (math and arith ops widened by upstream passes), converted
#: by integer ops (relax-bf16-casts: round to nearest even, the cpu target's bits), stored as i16
BF16_STAGE = ["gpu.module(math-extend-to-supported-types{extra-types=f16 target-type=f32})",
              "gpu.module(arith-emulate-unsupported-floats{source-types=bf16 target-type=f32})",
              "relax-bf16-casts{f64=true}",
              "relax-spirv-bf16-storage"]

#: the vulkan pipeline's ``emulate-tensor-cores`` default: a testing aid (relax-emulate-mma)
EMULATE_TENSOR_CORES_DEFAULT = False


def spirv_stage(emulate_tensor_cores: bool = EMULATE_TENSOR_CORES_DEFAULT) -> list[str]:
    return [
        # the cuda tensor-core routes' nvgpu ops as workgroup-memory exchanges (Target's
        # emulate_tensor_cores lets the matmul rule build them)
        *(["relax-emulate-mma"] if emulate_tensor_cores else []),
        *BF16_STAGE,
        SPIRV_TARGET,
        "relax-spirv-subgroup-size",   # gpu.shuffle lowers only at the env's subgroup size
        "relax-spirv-entry-abi",
        "relax-spirv-workgroup-memory",
        "relax-spirv-arith",   # remsi, powf, sign-extended compares: exact on SPIR-V
        "relax-spirv-f64-math",   # f64 exp/log/tanh/erf/sin/cos/pow: GLSL.std.450 has 16/32-bit only
        "gpu.module(convert-math-to-spirv)",   # convert-gpu-to-spirv leaves math ops alone
        "convert-gpu-to-spirv",
        "relax-spirv-vector-buffers",   # vector loads: buffers of vectors, not pointer bitcasts
        "relax-spirv-nest-modules",
        "gpu.module(spirv.module(spirv-lower-abi-attrs))",
        "relax-spirv-float-controls",   # IEEE Inf/NaN/-0 (Vulkan may drop them otherwise)
        "relax-spirv-coherent-buffers",   # buffers workgroups hand over (one-launch attention split)
        "gpu.module(spirv.module(spirv-update-vce))",
        "gpu-module-to-binary{format=bin}",
        "relax-vulkan-host",
    ]


def codegen_stage(workgroup_size: int = WORKGROUP_SIZE, schedule_config: str = "",
                  emulate_tensor_cores: bool = EMULATE_TENSOR_CORES_DEFAULT) -> list[str]:
    return (bufferize_stage() + kernel_stage(workgroup_size, "vulkan", schedule_config, emulate_tensor_cores)
            + spirv_stage(emulate_tensor_cores) + host_llvm_stage())


def stages(fusion=None, workgroup_size: int = WORKGROUP_SIZE, schedule_config: str = "",
           emulate_tensor_cores: bool = EMULATE_TENSOR_CORES_DEFAULT) -> list[tuple[str, list[str]]]:
    check_schedule_config(schedule_config, "vulkan")
    graph, host = _graph_and_host(fusion, False, False, None, "cpu", "cpu")
    # bf16 matmuls / conv2ds as f32 ones between casts (the f32 matmul rule takes them); the
    # quantized kernels read a bf16 x as stored
    graph = _cpu_graph(graph, "relax-widen-bf16-matmul{quantized=false}")
    return [("graph", graph_stage(graph, "vulkan")), ("host", host),
            ("codegen", codegen_stage(workgroup_size, schedule_config, emulate_tensor_cores))]


@register_pipeline("vulkan", "relax IR to host LLVM code + SPIR-V kernels for Vulkan: shapes, legalize, "
                             "fusion, host lowering, GPU kernels, SPIR-V, runtime calls.",
                   options=[Option("fusion", bool, FUSION_DEFAULT,
                                   "fuse call_tir kernels (relax-fuse-ops, relax-fuse-kernels)"),
                            Option("workgroup-size", int, WORKGROUP_SIZE,
                                   "threads per workgroup (tile of the first parallel dimension)"),
                            Option("schedule-config", str, "", SCHEDULE_CONFIG_HELP),
                            Option("emulate-tensor-cores", bool, EMULATE_TENSOR_CORES_DEFAULT,
                                   "testing aid: the cuda tensor-core routes (f16_gemm=2) built for vulkan, their "
                                   "nvgpu matrix ops emulated through workgroup memory (relax-emulate-mma; slow: "
                                   "checks numerics, not speed)")])
def vulkan(opts) -> str:
    return ", ".join(name for _, passes in stages(opts.fusion, opts.workgroup_size, opts.schedule_config,
                                                   opts.emulate_tensor_cores)
                     for name in passes)
