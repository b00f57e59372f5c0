// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-spirv-entry-abi)' | FileCheck %s
// The launch's constant block size becomes the kernel's SPIR-V workgroup size; the
// module's SPIR-V target is copied to spirv.target_env for single-dialect conversions.

// CHECK: gpu.module @k [#spirv.target_env<[[ENV:.*]]>] attributes {spirv.target_env = #spirv.target_env<[[ENV]]>}
// CHECK: gpu.func @k(%{{.*}}: memref<?xf32>, %{{.*}}: index) kernel attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>}
module attributes {gpu.container_module} {
  gpu.module @k [#spirv.target_env<#spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<>>] {
    gpu.func @k(%a: memref<?xf32>, %n: index) kernel {
      gpu.return
    }
  }
  func.func @host(%a: memref<?xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @k::@k blocks in (%n, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<?xf32>, %n : index)
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @host(%a: memref<?xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{kernel @k::@k needs one constant block size for SPIR-V}}
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) args(%a : memref<?xf32>)
    return
  }
}
