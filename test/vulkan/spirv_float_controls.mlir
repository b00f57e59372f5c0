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
// The widths come from the values' types, not the text: a kernel named after bf16 whose data
// is i16 by then computes in f32 only; a vector of f16 counts as f16.
// CHECK-LABEL: spirv.module @__spv__k_bf16
// CHECK: spirv.ExecutionMode @k_bf16 "SignedZeroInfNanPreserve", 32
// CHECK-NOT: spirv.ExecutionMode
// CHECK: }
// CHECK-LABEL: spirv.module @__spv__v
// CHECK: spirv.ExecutionMode @v "SignedZeroInfNanPreserve", 16
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
gpu.module @k_bf16 {
  spirv.module @__spv__k_bf16 Logical GLSL450 requires #spirv.vce<v1.3, [Shader, Int16], []> {
    spirv.func @k_bf16(%x: i16) "None" {
      %w = spirv.UConvert %x : i16 to i32
      %f = spirv.Bitcast %w : i32 to f32
      spirv.Return
    }
    spirv.EntryPoint "GLCompute" @k_bf16
  }
}
gpu.module @v {
  spirv.module @__spv__v Logical GLSL450 requires #spirv.vce<v1.3, [Shader, Float16], []> {
    spirv.func @v(%x: vector<4xf16>) "None" {
      spirv.Return
    }
    spirv.EntryPoint "GLCompute" @v
  }
}
