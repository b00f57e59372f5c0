// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-library-variants)' -o /dev/null

// The pass works on buffers: a library variant still on tensors is reported at the kernel.
// expected-error @+1 {{relax-library-variants: run after bufferization (the variant takes tensors)}}
func.func private @mm__lib(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {callee = "relax_blas_matmul_22_f32", generated_m = [[4, 64]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %1 : tensor<?x2048xf32>
}

// -----

// A malformed mark (hand-written or mutated IR) is reported at the kernel, not raised.
// expected-error @+1 {{relax.library_variant: each generated_m range must be [lo, hi], got [4]}}
func.func private @mm__lib(%a: memref<?x512xf32>, %b: memref<512x2048xf32>, %c: memref<?x2048xf32>)
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {callee = "relax_blas_matmul_22_f32", generated_m = [[4]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%c : memref<?x2048xf32>)
  linalg.matmul ins(%a, %b : memref<?x512xf32>, memref<512x2048xf32>) outs(%c : memref<?x2048xf32>)
  return
}

// -----

// expected-error @+1 {{relax.library_variant: callee must be a string, got 3 : i64}}
func.func private @mm__lib(%a: memref<?x512xf32>, %b: memref<512x2048xf32>, %c: memref<?x2048xf32>)
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {callee = 3, generated_m = [[4, 64]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%c : memref<?x2048xf32>)
  linalg.matmul ins(%a, %b : memref<?x512xf32>, memref<512x2048xf32>) outs(%c : memref<?x2048xf32>)
  return
}
