// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-cuda-dispatch-library{policy=fast})' --verify-diagnostics

// expected-error @+1 {{policy must be one of auto, on, off, got 'fast'}}
module {
  func.func @f(%x: tensor<64x256xf32>, %w: tensor<256x128xf32>) -> tensor<64x128xf32> attributes {relax.function} {
    %y = "relax.matmul"(%x, %w) : (tensor<64x256xf32>, tensor<256x128xf32>) -> tensor<64x128xf32>
    return %y : tensor<64x128xf32>
  }
}
