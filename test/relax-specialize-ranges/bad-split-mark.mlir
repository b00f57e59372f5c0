// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-specialize-ranges{gemv-max=3})' -o /dev/null

// A malformed relax.dispatch_split mark (hand-written or mutated IR) is reported at the
// kernel, where the pass used to raise "Cannot cast attribute to ArrayAttr".
// expected-error @+1 {{relax.dispatch_split: generated_m must be an array, got 5 : i64}}
func.func private @mm(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable",
                relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = 5, library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  %f = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%f : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %r : tensor<?x2048xf32>
}

// -----

// expected-error @+1 {{relax.dispatch_split: the mark has no 'callee'}}
func.func private @mm(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable",
                relax.dispatch_split = {generated_m = [[4, 64]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  %f = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%f : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %r : tensor<?x2048xf32>
}

// -----

// expected-error @+1 {{relax.dispatch_split: the mark must be a dictionary {callee, generated_m[, bias_callee]}, got "relax_blas"}}
func.func private @mm(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.dispatch_split = "relax_blas"} {
  %cst = arith.constant 0.000000e+00 : f32
  %f = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%f : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %r : tensor<?x2048xf32>
}
