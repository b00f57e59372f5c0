// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-spirv-float-controls)' | FileCheck %s
// Without the SignedZeroInfNanPreserve execution mode a Vulkan driver may assume no Inf or NaN
// (lavapipe folded inf - inf to 0, and a product through it lost the NaN: vulkan-program fuzz
// seed 34). Every entry point gets the mode for each float width its module uses, once.

// CHECK-LABEL: spirv.module @__spv__a
// CHECK: spirv.EntryPoint "GLCompute" @a
// CHECK-NEXT: spirv.ExecutionMode @a "LocalSize", 64, 1, 1
// CHECK-NEXT: spirv.ExecutionMode @a "SignedZeroInfNanPreserve", 32
// CHECK-NEXT: spirv.ExecutionMode @a "SignedZeroInfNanPreserve", 64
// CHECK-NEXT: }
// CHECK-LABEL: spirv.module @__spv__b
// CHECK: spirv.ExecutionMode @b "SignedZeroInfNanPreserve", 16
// CHECK-NOT: spirv.ExecutionMode
// CHECK: }
gpu.module @a {
  spirv.module @__spv__a Logical GLSL450 requires #spirv.vce<v1.3, [Shader, Float64], []> {
    spirv.func @a(%x: f32, %y: f64) "None" {
      spirv.Return
    }
    spirv.EntryPoint "GLCompute" @a
    spirv.ExecutionMode @a "LocalSize", 64, 1, 1
    spirv.ExecutionMode @a "SignedZeroInfNanPreserve", 32
  }
}
gpu.module @b {
  spirv.module @__spv__b Logical GLSL450 requires #spirv.vce<v1.3, [Shader, Float16], []> {
    spirv.func @b(%x: f16) "None" {
      spirv.Return
    }
    spirv.EntryPoint "GLCompute" @b
  }
}
