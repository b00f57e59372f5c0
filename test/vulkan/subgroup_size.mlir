// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-spirv-subgroup-size)' | FileCheck %s
// The module's target (relax.target, recorded by compile() from the device) says the
// subgroup size; each gpu.module's SPIR-V target environment gets it as its resource limit
// (convert-gpu-to-spirv then lowers a gpu.shuffle of that width). Other limits stay.

// CHECK: gpu.module @k [#spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniformShuffle], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<subgroup_size = 8>>]
// CHECK: gpu.module @l [#spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniformShuffle], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<max_compute_workgroup_invocations = 64, subgroup_size = 8>>]
module attributes {gpu.container_module, relax.target = {kind = "vulkan", subgroup_size = 8 : i64}} {
  gpu.module @k [#spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniformShuffle], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<>>] {
  }
  gpu.module @l [#spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniformShuffle], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<max_compute_workgroup_invocations = 64, subgroup_size = 32>>] {
  }
}

// -----

// Without a known subgroup size nothing changes.
// CHECK: gpu.module @k [#spirv.target_env<#spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<>>]
module attributes {gpu.container_module, relax.target = {kind = "vulkan"}} {
  gpu.module @k [#spirv.target_env<#spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<>>] {
  }
}
