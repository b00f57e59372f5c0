// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-spirv-nest-modules)' | FileCheck %s
// convert-gpu-to-spirv's spirv.module @__spv__k moves into gpu.module @k, first.

// CHECK: gpu.module @k {
// CHECK-NEXT: spirv.module @__spv__k Logical GLSL450 {
// CHECK: gpu.func @k() kernel
// CHECK-NOT: spirv.module
module attributes {gpu.container_module} {
  spirv.module @__spv__k Logical GLSL450 {
  }
  gpu.module @k {
    gpu.func @k() kernel {
      gpu.return
    }
  }
}
