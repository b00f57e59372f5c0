// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-cuda-split-library)' --verify-diagnostics

module {
  // expected-error @+1 {{relax-cuda-split-library: run after bufferization (the kernel takes tensors)}}
  func.func private @tensors(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>, %c: tensor<?x32xf32>) -> tensor<?x32xf32> attributes {relax.kernel, relax.dispatch_split = {callee = "relax_cublas_matmul_22_f32", generated_m = [[1, 4]], library = "relax_cublas"}} {
    %0 = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x32xf32>) outs(%c : tensor<?x32xf32>) -> tensor<?x32xf32>
    return %0 : tensor<?x32xf32>
  }
}
