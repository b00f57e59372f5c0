// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-spirv-bf16-storage)'

// bf16 arithmetic left in a kernel (the vulkan pipeline widens it to f32 first): refused,
// naming the op, and nothing is retyped (the host launch keeps its bf16 buffer).
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%b: memref<?xbf16>) kernel {
      %c0 = arith.constant 0 : index
      %l = memref.load %b[%c0] : memref<?xbf16>
      // expected-error@+1 {{'arith.addf' on bf16 is not supported on the vulkan target (bf16 is storage there, computed in f32)}}
      %s = arith.addf %l, %l : bf16
      // expected-error@+1 {{'math.exp' on bf16 is not supported on the vulkan target}}
      %e = math.exp %s : bf16
      memref.store %e, %b[%c0] : memref<?xbf16>
      gpu.return
    }
  }
}
