// RUN: relax-opt %s --pass-pipeline='builtin.module(vulkan)' | FileCheck %s
// The vulkan pipeline: host code in the LLVM dialect calling the runtime, each kernel a
// SPIR-V blob (Vulkan client API) in a gpu.binary, the launch table on the module.

// The add kernel has two launches (relax-gpu-vector-elementwise): id 0 the vector kernel
// (4 elements per thread; its host half picks it when n % 4 == 0 and the buffers are
// 16-byte aligned), id 1 one thread per element, for every other n.

// CHECK: module attributes {vulkan.launches = [{args = ["buffer", "buffer", "buffer", "index"], binary = "relax_add_f32_r1_r1_kernel", entry = "relax_add_f32_r1_r1_kernel", id = 0 : i64}, {args = ["index", "buffer", "buffer", "buffer"], binary = "relax_add_f32_r1_r1_kernel_0", entry = "relax_add_f32_r1_r1_kernel", id = 1 : i64}]}
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @relax_vk_launch_0(i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: llvm.func @relax_vk_launch_1(i64, i64, i64, i64, i64, i64, i64)
// CHECK: llvm.func @_mlir_ciface_main(
// CHECK: llvm.call @relax_add_f32_r1_r1(
// CHECK: llvm.func @relax_add_f32_r1_r1(
// CHECK: llvm.urem %{{.*}}, %{{.*}} : i64
// CHECK: llvm.cond_br
// CHECK: llvm.udiv %{{.*}}, %{{.*}} : i64
// CHECK: llvm.call @relax_vk_launch_0(
// CHECK: llvm.sdiv %{{.*}}, %{{.*}} : i64
// CHECK: llvm.call @relax_vk_launch_1(
// CHECK: gpu.binary @relax_add_f32_r1_r1_kernel  [#gpu.object<#spirv.target_env<#spirv.vce<v1.3, [Shader, Int8, Int16, Int64, Float16, Float64, StorageBuffer8BitAccess, StorageBuffer16BitAccess, GroupNonUniformShuffle, SignedZeroInfNanPreserve], [SPV_KHR_storage_buffer_storage_class, SPV_KHR_8bit_storage, SPV_KHR_16bit_storage, SPV_KHR_float_controls]>, api=Vulkan, #spirv.resource_limits<>>, bin = "\03\02#\07
// CHECK: gpu.binary @relax_add_f32_r1_r1_kernel_0  [#gpu.object<#spirv.target_env<
// CHECK-NOT: gpu.module
func.func @main(%x: tensor<?xf32, #relax.shape<["n"]>>, %y: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
    attributes {relax.function} {
  %z = "relax.add"(%x, %y) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %z : tensor<?xf32, #relax.shape<["n"]>>
}
